// SPDX-License-Identifier: MIT
// The training model: model states by convention and sharding, activations by
// recompute mode, time and throughput invariants, and bad input.
#include <catch2/catch.hpp>

#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/analysis/training.hpp"
#include "fixtures.hpp"

using namespace optadvisor;

namespace {

using fixtures::catalog;

const TrainingData& data() {
  static const TrainingData d = training_data(catalog());
  return d;
}

const TrainingEngineProfile& engine(const char* id) {
  const TrainingEngineProfile* e = data().find_engine(id);
  REQUIRE(e != nullptr);
  return *e;
}

/// A bare model of `params` parameters in one block, for model-state arithmetic.
TrainingScenario states_scenario(const char* engine_id, double params, uint32_t dp, const std::string& sharding) {
  TrainingScenario s;
  s.hardware = &catalog().resolve_hardware("a100-sxm-80gb");
  s.engine = &engine(engine_id);
  s.system = &data().system;
  s.model.layers = 1;
  s.model.hidden = 4096;
  s.model.heads = 32;
  s.model.layer_params = params;
  s.model.largest_layer_params = params;
  s.model.params = params;
  s.workload.gpus = dp;
  s.workload.dp = dp;
  const int stage = sharding == "zero1" ? 1 : sharding == "zero2" ? 2 : (sharding == "zero3" || sharding == "fsdp") ? 3 : 0;
  s.workload.sharding = {sharding, stage};
  return s;
}

double states_gb(const char* engine_id, double params, uint32_t dp, const std::string& sharding) {
  return analyze_training(states_scenario(engine_id, params, dp, sharding)).memory.model_state_bytes() / 1e9;
}

/// GPT-3-style layer shapes from Korthikanti et al. 2022 (s = 2048, b = 1).
TrainingModel gpt(uint64_t hidden, uint64_t heads, uint64_t layers = 1) {
  GptShape g;
  g.id = "gpt";
  g.hidden = hidden;
  g.heads = heads;
  g.layers = layers;
  g.vocab = 51200;
  g.positions = 2048;
  return training_model(g);
}

double layer_bytes(const TrainingModel& m, const TrainingWorkload& w, const std::vector<std::string>& drop = {}) {
  double per_token = 0;
  for (const auto& [group, bytes] : activation_bytes_per_token_by_group(m, w, false))
    if (std::find(drop.begin(), drop.end(), group) == drop.end()) per_token += bytes;
  return per_token * static_cast<double>(w.seq * w.micro_batch);
}

TrainingRequest request(const std::string& hw, const std::string& model) {
  TrainingRequest r;
  r.hardware = hw;
  r.model.preset = model;
  return r;
}

/// Llama-3.1-70B under Megatron on `gpus` H100s, tensor parallel `tp`, sequences of `seq` tokens.
TrainingRequest megatron_70b(int64_t gpus, int64_t tp, int64_t seq) {
  TrainingRequest r = request("h100", "llama-3.1-70b");
  r.engine = "megatron";
  r.gpus = gpus;
  r.tp = tp;
  r.seq = seq;
  return r;
}

TrainingAnalysis run(const TrainingRequest& r) { return analyze_training(prepare_training(catalog(), r).scenario); }

std::string bad_input_message(const TrainingRequest& r) {
  const std::string message = fixtures::bad_input_message([&] { (void)prepare_training(catalog(), r); });
  return message.empty() ? "no error" : message;
}

}  // namespace

TEST_CASE("training data: three engines and the system document load", "[training][data]") {
  CHECK(data().find_engine("pytorch") == data().find_engine("pytorch-fsdp2"));
  CHECK(data().find_engine("Megatron-LM")->id == "megatron");
  CHECK(data().find_engine("deepspeed")->id == "deepspeed");
  CHECK(data().find_engine("jax") == nullptr);
  CHECK(data().system.gpus_per_node == 8);
  for (const auto& e : data().engines) {
    CHECK(e.gemm_efficiency.count("bf16") == 1);
    CHECK(!e.sources.empty());
  }
  // The two engines with published runs say which runs their efficiencies were fitted on.
  CHECK(!engine("pytorch-fsdp2").calibrated_on.empty());
  CHECK(!engine("megatron").calibrated_on.empty());
}

TEST_CASE("ZeRO paper: 7.5B on 64 GPUs, model states per GPU", "[training][memory][zero]") {
  // Rajbhandari et al. 2020, Fig. 1: (2 + 2 + K) x 7.5e9 with K = 12.
  //   DP:     16 x 7.5e9                  = 120 GB
  //   ZeRO-1: (2 + 2) x 7.5e9 + 12 x 7.5e9 / 64 = 30 + 1.40625 = 31.4 GB
  //   ZeRO-2: 2 x 7.5e9 + 14 x 7.5e9 / 64       = 15 + 1.640625 = 16.6 GB
  //   ZeRO-3: 16 x 7.5e9 / 64                   = 1.875 GB
  CHECK(states_gb("deepspeed", 7.5e9, 64, "ddp") == Approx(120.0).epsilon(1e-9));
  CHECK(states_gb("deepspeed", 7.5e9, 64, "zero1") == Approx(31.40625).epsilon(1e-9));
  CHECK(states_gb("deepspeed", 7.5e9, 64, "zero2") == Approx(16.640625).epsilon(1e-9));
  CHECK(states_gb("deepspeed", 7.5e9, 64, "zero3") == Approx(1.875).epsilon(1e-9));
}

TEST_CASE("framework conventions: Megatron 18 and 6 + 12/d, FSDP2 16/d", "[training][memory]") {
  // Megatron dist_optimizer.md: bf16 params + fp32 main grads + fp32 master + Adam = 18 B/param;
  // with the distributed optimizer 6 + 12/d (d = 8: 7.5 B/param).
  CHECK(states_gb("megatron", 1e9, 8, "ddp") == Approx(18.0).epsilon(1e-9));
  CHECK(states_gb("megatron", 1e9, 8, "zero1") == Approx(7.5).epsilon(1e-9));
  // FSDP2 FULL_SHARD: fp32 params, fp32 grads, Adam moments sharded (16/d); the bf16 copies exist
  // only for gathered layers. reshard_after_forward=False (zero2) keeps the bf16 copies: 2 + 16/d.
  CHECK(states_gb("pytorch-fsdp2", 1e9, 8, "fsdp") == Approx(2.0).epsilon(1e-9));
  CHECK(states_gb("pytorch-fsdp2", 1e9, 8, "zero2") == Approx(4.0).epsilon(1e-9));
  CHECK(states_gb("pytorch-fsdp2", 1e9, 8, "ddp") == Approx(18.0).epsilon(1e-9));
}

TEST_CASE("8-bit Adam moments: one byte per state plus a fp32 scale per 2048", "[training][memory]") {
  const OptimizerSpec& o = data().system.optimizers.at("adamw-8bit");
  CHECK(o.bytes_per_param() == Approx(2 * (1 + 4.0 / 2048)).epsilon(1e-12));
  CHECK(data().system.optimizers.at("adamw").bytes_per_param() == Approx(8.0));
  TrainingScenario s = states_scenario("pytorch-fsdp2", 1e9, 1, "ddp");
  const double adam = analyze_training(s).memory.optimizer_bytes;
  s.workload.optimizer = "adamw-8bit";
  CHECK(analyze_training(s).memory.optimizer_bytes == Approx(adam * o.bytes_per_param() / 8));
}

TEST_CASE("activations per layer: Korthikanti et al. Table 2", "[training][activations]") {
  // GPT-3 175B layer: h = 12288, a = 96, s = 2048, b = 1; 5as/h = 80.
  const TrainingModel m = gpt(12288, 96);
  TrainingWorkload w;
  w.seq = 2048;
  w.micro_batch = 1;
  w.flash_attention = false;
  const double sbh = 2048.0 * 12288;
  // No parallelism: sbh (34 + 5as/h).
  CHECK(layer_bytes(m, w) == Approx(sbh * (34 + 80)).epsilon(1e-12));
  // Tensor parallel t = 8 without SP: sbh (10 + 24/t + 5as/(ht)).
  w.tp = 8;
  CHECK(layer_bytes(m, w) == Approx(sbh * (10 + 24.0 / 8 + 80.0 / 8)).epsilon(1e-12));
  // With sequence parallelism: sbh/t (34 + 5as/h).
  w.sequence_parallel = true;
  CHECK(layer_bytes(m, w) == Approx(sbh / 8 * (34 + 80)).epsilon(1e-12));
  // TP + SP + selective recompute (attention core dropped): 34 sbh / t.
  CHECK(layer_bytes(m, w, {"attention_scores"}) == Approx(sbh * 34 / 8).epsilon(1e-12));
  // Selective recompute saves 80 / 114 = 70% of GPT-3's activations (the paper: 70%).
  CHECK(1 - layer_bytes(m, w, {"attention_scores"}) / layer_bytes(m, w) == Approx(0.70).margin(0.005));
  // FlashAttention removes the quadratic term; it keeps a fp32 log-sum-exp per head (4a bytes per token).
  w.flash_attention = true;
  CHECK(layer_bytes(m, w) == Approx(sbh / 8 * 34 + 2048.0 * 4 * 96 / 8).epsilon(1e-12));
}

TEST_CASE("activations in the analysis by recompute mode", "[training][activations]") {
  // One microbatch, one GPU, a GPT layer without FlashAttention: none keeps sbh(34 + 5as/h) per layer,
  // full keeps the layer input 2sbh, selective (Megatron) drops the attention core.
  TrainingScenario s;
  s.hardware = &catalog().resolve_hardware("a100-sxm-80gb");
  s.engine = &engine("megatron");
  s.system = &data().system;
  s.model = gpt(6144, 64, 4);  // 22B's layer shape, 4 layers
  s.workload.seq = 2048;
  s.workload.flash_attention = false;
  const double sbh = 2048.0 * 6144;
  const double quadratic = 5.0 * 64 * 2048 / 6144;
  s.workload.recompute = Recompute::kNone;
  const auto none = analyze_training(s);
  CHECK(none.memory.activation_bytes == Approx(4 * sbh * (34 + quadratic)).epsilon(1e-9));
  s.workload.recompute = Recompute::kSelective;
  const auto selective = analyze_training(s);
  CHECK(selective.memory.activation_bytes == Approx(4 * sbh * 34).epsilon(1e-9));
  s.workload.recompute = Recompute::kFull;
  const auto full = analyze_training(s);
  CHECK(full.memory.activation_bytes == Approx(4 * 2 * sbh).epsilon(1e-9));
  // Full recompute costs time and saves memory; selective sits between.
  CHECK(full.memory.total_bytes < selective.memory.total_bytes);
  CHECK(selective.memory.total_bytes < none.memory.total_bytes);
  CHECK(full.time.step_time_s > selective.time.step_time_s);
  CHECK(selective.time.step_time_s > none.time.step_time_s);
  CHECK(full.hfu > full.mfu);
  // Full recompute reruns the layers' forward (not the output head): HFU/MFU just under 4/3 (llm-foundry's 4/3).
  const double ratio = full.hardware_flops_per_token / full.model_flops_per_token;
  CHECK(ratio < 4.0 / 3);
  CHECK(ratio > 1.25);
}

TEST_CASE("pipeline: the first 1F1B stage holds L layers' worth, the bubble is (p-1)/m", "[training][pipeline]") {
  TrainingRequest r = request("h100", "llama-3.1-8b");
  r.engine = "megatron";
  r.seq = 4096;
  r.recompute = "full";
  r.gpus = 4;
  r.pp = 4;
  r.pp_schedule = "1f1b";
  r.global_batch = 16;  // 16 microbatches of 1
  const PreparedTraining p = prepare_training(catalog(), r);
  const TrainingAnalysis a = analyze_training(p.scenario);
  if (a.memory.peak_stage == "first") {
    CHECK(a.memory.in_flight_microbatches == Approx(4));
    // 8 layers x 4 microbatches = 32 layers' worth: the whole model (Korthikanti Eq. 5).
    CHECK(a.memory.activation_bytes == Approx(32 * a.memory.activation_bytes_per_layer));
  }
  CHECK(a.time.pp_bubble_s == Approx(3 * a.time.microbatch_time_s));
  CHECK(a.time.pp_bubble_s / a.time.step_time_s == Approx(3.0 / 19).margin(0.02));
  // Interleaving with v virtual stages divides the bubble by v.
  r.pp_schedule = "interleaved";
  r.virtual_stages = 2;
  const TrainingAnalysis b = run(r);
  CHECK(b.time.pp_bubble_s == Approx(1.5 * b.time.microbatch_time_s));
  CHECK(b.tokens_per_s > a.tokens_per_s);
}

TEST_CASE("invariants: more sharding never raises per-GPU memory", "[training][invariants]") {
  for (const char* model : {"llama-3.1-8b", "qwen2.5-14b", "mixtral-8x7b"}) {
    for (const auto& e : data().engines) {
      double previous = 1e300;
      int previous_stage = -1;
      for (const char* sh : {"ddp", "zero1", "zero2", "zero3", "fsdp"}) {
        if (std::find(e.shardings.begin(), e.shardings.end(), sh) == e.shardings.end()) continue;
        TrainingRequest r = request("h100", model);
        r.engine = e.id;
        r.gpus = 16;
        r.seq = 2048;
        r.sharding = sh;
        const TrainingAnalysis a = run(r);
        const int stage = prepare_training(catalog(), r).scenario.workload.sharding.stage;
        INFO(model << " " << e.id << " " << sh);
        if (stage > previous_stage) CHECK(a.memory.total_bytes <= previous * (1 + 1e-12));
        previous = a.memory.total_bytes;
        previous_stage = stage;
      }
    }
  }
}

TEST_CASE("invariants: parallelism splits memory, more GPUs never slow a sharded run per token", "[training][invariants]") {
  TrainingRequest r = megatron_70b(8, 1, 4096);
  const double tp1 = run(r).memory.total_bytes;
  r.tp = 8;
  const double tp8 = run(r).memory.total_bytes;
  // tp 1 x dp 8 shards the optimizer (6 + 12/8 B/param); tp 8 x dp 1 splits all 18 B/param by 8.
  CHECK(tp8 < tp1 / 3);
  // Context parallelism divides the activations.
  TrainingRequest c = request("h100", "llama-3.1-8b");
  c.seq = 65536;
  c.gpus = 8;
  c.recompute = "full";
  const TrainingAnalysis cp1 = run(c);
  c.cp = 8;
  const TrainingAnalysis cp8 = run(c);
  CHECK(cp8.memory.activation_bytes == Approx(cp1.memory.activation_bytes / 8).epsilon(1e-9));
}

TEST_CASE("LoRA and QLoRA: a frozen base, small trainable adapters", "[training][lora]") {
  TrainingRequest r = request("rtx4090", "llama-3.1-8b");
  r.seq = 2048;
  r.recompute = "full";
  const TrainingAnalysis full = run(r);
  r.lora_rank = 16;
  const TrainingAnalysis lora = run(r);
  r.quant = "nf4";
  const TrainingAnalysis qlora = run(r);
  CHECK(lora.memory.total_bytes < full.memory.total_bytes / 5);
  CHECK(qlora.memory.weights_bytes < lora.memory.weights_bytes / 2.5);  // embeddings and head stay 16-bit
  CHECK(lora.memory.gradients_bytes == 0);
  CHECK(lora.memory.optimizer_bytes == 0);
  // Rank 16 on every linear layer of Llama-3.1-8B: 16 x per-layer (in + out) sums x 32 layers = 41.9M adapters.
  //   per layer: q 4096+4096, k 4096+1024, v 4096+1024, o 4096+4096, gate/up 2 x (4096+14336), down 14336+4096
  //   = 8192 + 5120 + 5120 + 8192 + 36864 + 18432 = 81920; x 16 x 32 = 41,943,040.
  CHECK(lora.trainable_params == Approx(41943040.0));
  CHECK(lora.memory.adapter_bytes == Approx(41943040.0 * 16));  // fp32 weights + grads + Adam moments
  // The frozen base has no weight gradients: 4 x params per token, not 6.
  CHECK(lora.model_flops_per_token < full.model_flops_per_token);
  CHECK(qlora.time.dequant_s > 0);
}

TEST_CASE("fp8 runs the layer GEMMs on FP8 tensor cores and states its peak", "[training][fp8]") {
  TrainingRequest r = request("h100", "llama-3.1-8b");
  r.gpus = 8;
  r.seq = 4096;
  const TrainingAnalysis bf16 = run(r);
  r.precision = "fp8";
  const TrainingAnalysis fp8 = run(r);
  CHECK(fp8.tokens_per_s > bf16.tokens_per_s);
  CHECK(fp8.tokens_per_s < 2 * bf16.tokens_per_s);  // attention, elementwise and casts stay
  CHECK(fp8.factors.compute_dtype == "fp8");
  CHECK(fp8.factors.peak_flops_per_s == Approx(1979e12));
  CHECK(bf16.factors.peak_flops_per_s == Approx(989e12));
}

TEST_CASE("MFU and throughput agree with the FLOP count", "[training][mfu]") {
  TrainingRequest r = request("a100-sxm-80gb", "llama-3.1-8b");
  r.gpus = 8;
  r.seq = 2048;
  r.micro_batch = 2;
  r.global_batch = 64;
  const TrainingAnalysis a = run(r);
  CHECK(a.mfu == Approx(a.model_flops_per_token * a.tokens_per_s_per_gpu / 312e12).epsilon(1e-9));
  CHECK(a.tokens_per_s == Approx(64.0 * 2048 / a.time.step_time_s).epsilon(1e-9));
  CHECK(a.tokens_per_s_per_gpu == Approx(a.tokens_per_s / 8).epsilon(1e-12));
  CHECK(a.mfu > 0.2);
  CHECK(a.mfu < 0.8);
  // GPT MFU convention: 6 x matmul params + 12 x layers x hidden x seq per token.
  const TrainingModel g = gpt(4096, 32, 32);
  TrainingScenario s;
  s.hardware = &catalog().resolve_hardware("h100");
  s.engine = &engine("megatron");
  s.system = &data().system;
  s.model = g;
  s.workload.seq = 2048;
  const TrainingAnalysis b = analyze_training(s);
  CHECK(b.model_flops_per_token == Approx(6 * (32 * g.layer_active_params + g.head_params) + 12.0 * 32 * 4096 * 2048).epsilon(1e-12));
}

TEST_CASE("logits: large vocabularies cost memory, a fused loss saves most of it", "[training][memory]") {
  TrainingRequest r = request("h100", "llama-3.1-8b");
  r.gpus = 8;
  r.seq = 8192;
  r.micro_batch = 2;
  const TrainingAnalysis plain = run(r);
  // 16384 tokens x 128256 entries x 10 bytes (bf16 logits, fp32 copy, fp32 log-softmax).
  CHECK(plain.memory.logits_bytes == Approx(16384.0 * 128256 * 10));
  r.fused_loss = true;
  const TrainingAnalysis fused = run(r);
  CHECK(fused.memory.logits_bytes == Approx(16384.0 * 128256 * 4));
}

TEST_CASE("DeepSpeed's estimator, reproduced exactly", "[training][deepspeed]") {
  // memory.rst samples: t5-3b, 2851M params, largest layer 32M, 1 node x 8 GPUs (GiB).
  const double gib = 1073741824.0;
  DeepSpeedEstimatorInput in;
  in.params = 2851e6;
  in.largest_layer_params = 32e6;
  in.gpus_per_node = 8;
  in.stage = 2;
  in.offload_optimizer = true;
  CHECK(deepspeed_estimate(in).gpu_bytes / gib == Approx(5.31).margin(0.005));
  CHECK(deepspeed_estimate(in).cpu_bytes / gib == Approx(127.45).margin(0.01));
  in.offload_optimizer = false;
  // Current code: 2P + 18P/N = 11.28 GiB; the docs' 15.93 comes from the older 4P + 16P/N.
  CHECK(deepspeed_estimate(in).gpu_bytes / gib == Approx(11.28).margin(0.005));
  in.legacy_zero2 = true;
  CHECK(deepspeed_estimate(in).gpu_bytes / gib == Approx(15.93).margin(0.005));
  in.legacy_zero2 = false;
  in.stage = 3;
  CHECK(deepspeed_estimate(in).gpu_bytes / gib == Approx(6.09).margin(0.005));
  CHECK(deepspeed_estimate(in).cpu_bytes / gib == Approx(1.43).margin(0.005));
  in.offload_optimizer = true;
  CHECK(deepspeed_estimate(in).gpu_bytes / gib == Approx(0.78).margin(0.005));
  CHECK(deepspeed_estimate(in).cpu_bytes / gib == Approx(63.72).margin(0.01));
  in.offload_params = true;
  CHECK(deepspeed_estimate(in).gpu_bytes / gib == Approx(0.12).margin(0.005));
  CHECK(deepspeed_estimate(in).cpu_bytes / gib == Approx(71.69).margin(0.01));
}

TEST_CASE("defaults are chosen and said", "[training][prepare]") {
  const PreparedTraining p = prepare_training(catalog(), request("h100", "llama-3.1-8b"));
  const TrainingWorkload& w = p.scenario.workload;
  CHECK(p.scenario.engine->id == "pytorch-fsdp2");
  CHECK(w.gpus == 1);
  CHECK(w.seq == 4096);
  CHECK(w.global_batch == 1);
  CHECK(w.sharding.name == "ddp");  // one rank: nothing to shard
  REQUIRE(!p.notes.empty());
  CHECK(p.notes.front().find("defaults:") == 0);
  // A model with a short context defaults to it.
  CHECK(prepare_training(catalog(), request("h100", "llama-2-7b")).scenario.workload.seq == 4096);
  CHECK(prepare_training(catalog(), request("h100", "phi-3-mini")).scenario.workload.seq == 4096);
}

TEST_CASE("bad input gives one clear message", "[training][prepare][errors]") {
  // The message of a request for `model` on `hw` with `change` made to it.
  auto message = [](const std::string& hw, const std::string& model, auto change) {
    TrainingRequest r = request(hw, model);
    change(r);
    return bad_input_message(r);
  };
  CHECK_THAT(message("h100", "llama-3.1-8b", [](auto& r) { r.gpus = 12, r.tp = 8; }),
             Catch::Contains("--gpus 12 is not a multiple of --tp 8 x --pp 1 x --cp 1 = 8"));
  CHECK_THAT(message("h100", "llama-3.1-8b", [](auto& r) { r.gpus = 8, r.micro_batch = 2, r.global_batch = 20; }),
             Catch::Contains("--global-batch 20 is not divisible by --micro-batch 2 x 8 data-parallel ranks = 16"));
  CHECK_THAT(message("a100-sxm-80gb", "llama-3.1-8b", [](auto& r) { r.precision = "fp8"; }),
             Catch::Contains("fp8 training needs FP8 tensor cores"));
  CHECK_THAT(message("h100", "llama-3.1-8b", [](auto& r) { r.engine = "megatron", r.sharding = "zero2"; }),
             Catch::Contains("megatron has no --sharding zero2"));
  CHECK_THAT(message("h100", "llama-3.1-8b", [](auto& r) { r.quant = "nf4"; }), Catch::Contains("--quant sets the frozen base of QLoRA"));
  CHECK_THAT(message("h100", "llama-3.1-8b", [](auto& r) { r.lora_rank = 16, r.quant = "q4_k_m"; }),
             Catch::Contains("cannot train LoRA on a q4_k_m base"));
  CHECK_THAT(message("h100", "llama-3.1-8b", [](auto& r) { r.cp = 2, r.flash_attention = false; }),
             Catch::Contains("context parallelism needs FlashAttention"));
  CHECK_THAT(message("rtx4090", "llama-3.1-8b", [](auto& r) { r.engine = "megatron"; }),
             Catch::Contains("training engine 'megatron' does not run on rtx4090"));
  CHECK_THAT(message("h100", "llama-3.1-8b", [](auto& r) { r.engine = "jax"; }), Catch::Contains("unknown training engine 'jax'"));
  CHECK_THAT(message("h100", "llama-3.1-8b", [](auto& r) { r.tp = 3; }),
             Catch::Contains("--tp 3 does not divide the model's 32 attention heads"));
  CHECK_THAT(message("h100", "llama-3.1-8b", [](auto& r) { r.seq = 4097, r.cp = 2, r.gpus = 2; }),
             Catch::Contains("--seq 4097 is not divisible by --cp 2"));
  CHECK_THAT(message("m4-max-40c", "llama-3.2-1b", [](auto& r) { r.gpus = 2; }), Catch::Contains("single-chip device"));
}

TEST_CASE("fit suggestions: the smallest change that makes a run fit", "[training][fit]") {
  TrainingRequest r = megatron_70b(64, 8, 8192);
  r.global_batch = 64;
  r.recompute = "selective";
  const PreparedTraining p = prepare_training(catalog(), r);
  REQUIRE_FALSE(analyze_training(p.scenario).memory.fits);
  const auto changes = suggest_training_fixes(catalog(), p, r);
  REQUIRE(!changes.empty());
  CHECK(changes.front().fits);
  CHECK(changes.front().kind == "same math");
  for (std::size_t i = 1; i < changes.size(); ++i)
    if (changes[i].kind == changes.front().kind) CHECK(changes[i].tokens_per_s <= changes.front().tokens_per_s);
  // Re-running the suggested request gives what the suggestion promised.
  const TrainingAnalysis again = analyze_training(prepare_training(catalog(), changes.front().request).scenario);
  CHECK(again.memory.fits);
  CHECK(again.memory.total_bytes == Approx(changes.front().memory_per_gpu_bytes));

  // A full fine-tune of an 8B model on one 24 GB card needs a change to the run itself.
  TrainingRequest small = request("rtx4090", "llama-3.1-8b");
  small.seq = 2048;
  const PreparedTraining q = prepare_training(catalog(), small);
  const auto fixes = suggest_training_fixes(catalog(), q, small);
  REQUIRE(!fixes.empty());
  CHECK(fixes.front().fits);
}

TEST_CASE("communication: data-parallel traffic crossing nodes rides the NICs", "[training][comm]") {
  TrainingRequest r = request("h100", "llama-3.1-8b");
  r.seq = 4096;
  r.sharding = "ddp";
  r.gpus = 8;
  const TrainingAnalysis node = run(r);
  r.gpus = 16;
  const TrainingAnalysis two = run(r);
  CHECK(node.factors.dp_spans_nodes == false);
  CHECK(two.factors.dp_spans_nodes == true);
  CHECK(two.time.dp_comm_s > node.time.dp_comm_s);
  // Tensor parallelism inside a node, data parallelism across: one rank per node per ring, one NIC each.
  r.gpus = 64;
  r.tp = 8;
  const TrainingAnalysis tp8 = run(r);
  CHECK(tp8.factors.tp_spans_nodes == false);
  CHECK(tp8.factors.dp_spans_nodes == true);
}

TEST_CASE("analysis results stay finite across presets and layouts", "[training][robustness]") {
  for (const auto& m : catalog().models()) {
    TrainingRequest r = request("h100", m.id);
    r.seq = 2048;
    r.gpus = 8;
    const TrainingAnalysis a = run(r);
    INFO(m.id);
    CHECK(std::isfinite(a.time.step_time_s));
    CHECK(a.time.step_time_s > 0);
    CHECK(std::isfinite(a.memory.total_bytes));
    CHECK(a.mfu > 0);
    CHECK(a.mfu < 1);
  }
}
