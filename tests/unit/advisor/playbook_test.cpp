// SPDX-License-Identifier: MIT
// The advisor: the serving techniques' physics in analyze(), prerequisites,
// ranking, the stacked plan, and that every shipped rule fires somewhere.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/advisor/playbook.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/advisor/rules.hpp"
#include "advisor/plan_conflict.hpp"
#include "fixtures.hpp"

using namespace optadvisor;

namespace {

using fixtures::catalog;

const RuleBook& book() { return fixtures::rule_book(); }

using fixtures::round_device;

/// An engine with no overheads, full efficiencies and room for a million batched tokens.
fixtures::PlainEngine plain_engine(uint64_t kv_block_tokens = 0) { return {1.0, 1.0, 1u << 20, kv_block_tokens}; }

/// Llama-3.1-8B with 16 GB of 16-bit weights on `hw` under `e`, each sequence prefilling `prompt` tokens and generating `gen`.
Scenario llama8b(const HardwareProfile& hw, const fixtures::PlainEngine& e, uint64_t prompt, uint64_t gen) {
  return fixtures::plain_scenario(hw, "llama-3.1-8b", e, {16e9, 8e9, 8e9}, prompt, gen);
}

AdviceRequest request(const std::string& hw, Goal goal, const std::string& model = "", const std::string& engine = "") {
  AdviceRequest r;
  r.goal = goal;
  r.scenario.hardware = hw;
  r.scenario.engine = engine;
  r.scenario.model.preset = model;
  return r;
}

const NotApplicable* left_out(const Advice& a, const std::string& id) {
  for (const auto& n : a.not_applicable)
    if (n.rule->id == id) return &n;
  return nullptr;
}

const Recommendation* recommended(const Advice& a, const std::string& id) {
  for (const auto& r : a.recommendations)
    if (r.rule->id == id) return &r;
  return nullptr;
}

/// "h100-sxm latency", for messages.
std::string where(const Advice& a) {
  const HardwareProfile* hw =
      a.base.is_training() ? a.base.training().prepared.scenario.hardware : a.base.inference().prepared.scenario.hardware;
  return hw->id + " " + std::string(to_string(a.goal));
}

/// The reason a rule is left out, "" when it is not.
std::string why_not(const Advice& a, const std::string& id, const std::string& stage) {
  const NotApplicable* n = left_out(a, id);
  if (!n) return "";
  return n->stage == stage ? n->reason : "[" + n->stage + "] " + n->reason;
}

}  // namespace

TEST_CASE("speculative decoding: one verify step plus drafting, over the accepted tokens", "[analysis][speculative]") {
  // Bandwidth-bound: 1 TB/s, compute so fast it never binds, so verifying 5 tokens costs what 1 does.
  const auto hw = round_device(1e12, 1e18, 80e9);
  const auto e = plain_engine();
  Scenario s = llama8b(hw, e, 0, 1);
  const double plain = analyze(s).decode.time_s;
  // 16e9 bytes (tied embeddings not skipped here) / 1e12 B/s = 16 ms, plus a negligible KV read.
  CHECK(plain == Approx(0.016).epsilon(0.001));
  s.workload.speculation.method = "eagle";
  s.workload.speculation.draft_tokens = 4;
  s.workload.speculation.accepted_tokens = 3.0;
  s.workload.speculation.draft_overhead = 0.5;
  // (verify 5 tokens = 16 ms) + 0.5 x 16 ms drafting = 24 ms per step, over 3 tokens = 8 ms per token.
  const Analysis a = analyze(s);
  CHECK(a.decode.time_s == Approx(0.008).epsilon(0.001));
  CHECK(a.decode.bytes == Approx(1.5 * 16e9 / 3).epsilon(0.001));
  // The drafter's weights are held next to the target's.
  s.workload.speculation.draft_memory_bytes = 1e9;
  CHECK(analyze(s).memory.weights_bytes == Approx(17e9));
}

TEST_CASE("speculative decoding turns compute-bound at large batch", "[analysis][speculative]") {
  // 2 TB/s and 200 TFLOP/s: at batch 64 a 9-token verify step is 576 tokens x 16 GFLOP = 9.2 TFLOP = 46 ms,
  // far above the 8 ms weight read, so speculation stops paying.
  const auto hw = round_device(2e12, 200e12, 200e9);
  const auto e = plain_engine();
  Scenario s = llama8b(hw, e, 0, 1);
  s.workload.batch = 64;
  const double plain = analyze(s).decode.time_s;
  s.workload.speculation = {"eagle", 5.71, 8, 0.89, 0};
  CHECK(analyze(s).decode.time_s > plain);
  s.workload.batch = 1;
  const double plain1 = [&] {
    Scenario t = s;
    t.workload.speculation = {};
    return analyze(t).decode.time_s;
  }();
  CHECK(analyze(s).decode.time_s < plain1 / 2.5);
}

TEST_CASE("prefix caching recomputes only the uncached part of the prompt", "[analysis][prefix]") {
  // Compute-bound prefill: the cached half is exactly a prefill of 500 tokens that is not run.
  const auto hw = round_device(1e18, 100e12, 80e9);
  const auto e = plain_engine();
  Scenario s = llama8b(hw, e, 1000, 0);
  const double full = analyze(s).prefill.flops;
  s.workload.prompt_tokens = 500;
  const double first_half = analyze(s).prefill.flops;
  s.workload.prompt_tokens = 1000;
  s.workload.prefix_cached_fraction = 0.5;
  const Analysis cached = analyze(s);
  CHECK(cached.prefill.flops == Approx(full - first_half).epsilon(1e-9));
  // Linear 2 x 8e9 x 500 = 8e12 FLOP; attention of tokens 500..999 over their prefixes:
  // 32 layers x 2 x 32 heads x 256 x (1000^2 - 500^2) / 2 = 1.96608e11. Total 8.196608e12 / 1e14 = 81.97 ms.
  CHECK(cached.prefill.time_s == Approx(0.08196608).epsilon(0.001));
}

TEST_CASE("a paged engine stores a shared prefix once for the whole batch", "[analysis][prefix]") {
  const auto hw = round_device(1e12, 1e15, 80e9);
  const auto paged = plain_engine(16);
  Scenario s = llama8b(hw, paged, 1000, 0);
  s.workload.batch = 4;
  // 131,072 bytes per token: 4 x 1000 tokens = 524,288,000 bytes.
  CHECK(analyze(s).memory.kv_cache_bytes == Approx(524288000.0));
  s.workload.prefix_cached_fraction = 0.5;
  // The 500-token prefix once plus 4 x 500 own tokens = 2,500 tokens = 327,680,000 bytes.
  CHECK(analyze(s).memory.kv_cache_bytes == Approx(327680000.0));
  // An engine without paging (llama.cpp's slots) keeps a copy per sequence.
  const auto contiguous = plain_engine();
  s.engine = contiguous.choice();
  CHECK(analyze(s).memory.kv_cache_bytes == Approx(524288000.0));
}

TEST_CASE("faster attention kernels speed up the attention part only", "[analysis][attention]") {
  const auto hw = round_device(1e18, 100e12, 80e9);
  const auto e = plain_engine();
  Scenario s = llama8b(hw, e, 1000, 0);
  const Analysis base = analyze(s);
  // Attention: 2.62144e11 FLOP / 1e14 = 2.62 ms of the 162.6 ms.
  CHECK(base.prefill.attention_compute_time_s == Approx(2.62144e-3).epsilon(0.001));
  s.workload.attention_speedup = 2.0;
  const Analysis fast = analyze(s);
  CHECK(fast.prefill.attention_compute_time_s == Approx(1.31072e-3).epsilon(0.001));
  CHECK(base.prefill.time_s - fast.prefill.time_s == Approx(1.31072e-3).epsilon(0.001));
}

TEST_CASE("memory limits: a raised wired limit, the iOS entitlement, mapped weights", "[analysis][memory]") {
  ScenarioRequest r;
  r.hardware = "m4-max-40c";  // "128 GB" (128 GiB), 75% usable by default
  r.model.preset = "llama-3.1-8b";
  CHECK(analyze(prepare_scenario(catalog(), r).scenario).memory.capacity_bytes == Approx(96.0 * 1073741824));  // 103.08e9
  r.usable_memory_fraction = 0.8;
  CHECK(analyze(prepare_scenario(catalog(), r).scenario).memory.capacity_bytes == Approx(102.4 * 1073741824));  // 0.8 x 128 GiB

  ScenarioRequest phone;
  phone.hardware = "a18-pro";  // 3 GB app limit, 6 GB with the entitlement, 8 GB x 0.75 physical share
  phone.model.preset = "llama-3.2-3b";
  const Analysis plain = analyze(prepare_scenario(catalog(), phone).scenario);
  CHECK(plain.memory.capacity_bytes == Approx(3e9));
  CHECK(plain.memory.limit_bytes == Approx(3e9));
  phone.entitled_memory_limit = true;
  CHECK(analyze(prepare_scenario(catalog(), phone).scenario).memory.limit_bytes == Approx(6e9));
  phone.entitled_memory_limit = false;
  phone.weights_mmap = true;
  const Analysis mapped = analyze(prepare_scenario(catalog(), phone).scenario);
  // Mapped weights leave the 3 GB footprint limit but still need physical memory: min(3 GB + weights, 6 GB).
  CHECK(mapped.memory.limit_bytes == Approx(std::min(3e9 + mapped.memory.weights_bytes, 6e9)));
  CHECK(mapped.memory.limit_bytes > plain.memory.limit_bytes);
}

TEST_CASE("prerequisites: techniques the hardware or engine cannot run are left out with the reason", "[advisor][prerequisites]") {
  // On each device of `hws`, Llama-3.1-8B under vLLM for latency leaves rule `id` out for a prerequisite, saying `why` first.
  auto left_out_on = [](const std::vector<std::string>& hws, const std::string& id, const std::string& why) {
    for (const std::string& hw : hws) {
      const Advice a = advise(catalog(), book(), request(hw, Goal::kLatency, "llama-3.1-8b", "vllm"));
      INFO(hw);
      CHECK_THAT(why_not(a, id, "prerequisite"), Catch::StartsWith(why));
    }
  };
  SECTION("no FP8 on RTX 3090 or A100") {
    left_out_on({"rtx3090", "a100-sxm-80gb"}, "fp8-weights", "no FP8 on NVIDIA");
    CHECK(recommended(advise(catalog(), book(), request("h100", Goal::kLatency)), "fp8-weights"));
  }
  SECTION("no NVFP4 before Blackwell") {
    left_out_on({"h100", "a100-sxm-80gb", "rtx4090"}, "nvfp4-weights", "no NVFP4 before Blackwell");
    CHECK(recommended(advise(catalog(), book(), request("b200", Goal::kLatency)), "nvfp4-weights"));
  }
  SECTION("no FlashAttention-3 off Hopper") {
    for (const std::string hw : {"rtx5090", "a100-sxm-80gb", "b200"}) {
      AdviceRequest r = request(hw, Goal::kThroughput, "llama-3.1-8b", "vllm");
      r.scenario.prompt_tokens = 8192;
      INFO(hw);
      CHECK_THAT(why_not(advise(catalog(), book(), r), "flash-attention-3", "prerequisite"),
                 Catch::StartsWith("no FlashAttention-3 off Hopper"));
    }
    AdviceRequest r = request("h100", Goal::kThroughput);
    r.scenario.prompt_tokens = 8192;
    CHECK(recommended(advise(catalog(), book(), r), "flash-attention-3"));
  }
  SECTION("no CUDA graphs on Apple Silicon") {
    AdviceRequest r = request("m4max", Goal::kLatency);
    r.scenario.graphs = false;
    CHECK_THAT(why_not(advise(catalog(), book(), r), "cuda-graphs", "prerequisite"), Catch::StartsWith("no CUDA graphs on Apple M4 Max"));
    AdviceRequest cuda = request("rtx5090", Goal::kLatency);
    cuda.scenario.graphs = false;
    CHECK(recommended(advise(catalog(), book(), cuda), "cuda-graphs"));
  }
  SECTION("no NVLink-dependent advice on consumer cards") {
    // The RTX 3090 has an NVLink bridge, but it is a consumer card; the RTX 4090 has no link at all.
    CHECK_THAT(why_not(advise(catalog(), book(), request("rtx3090", Goal::kLatency, "llama-3.1-8b", "vllm")), "tensor-parallel-nvlink",
                       "prerequisite"),
               Catch::StartsWith("no NVLink-dependent advice on consumer cards"));
    CHECK_THAT(why_not(advise(catalog(), book(), request("rtx4090", Goal::kLatency, "llama-3.1-8b", "vllm")), "tensor-parallel-nvlink",
                       "prerequisite"),
               Catch::Contains("has no GPU-to-GPU link"));
    CHECK(recommended(advise(catalog(), book(), request("h100", Goal::kLatency)), "tensor-parallel-nvlink"));
  }
  SECTION("nothing that does not fit the device's memory") {
    // Medusa's four heads each carry a 128k-vocabulary output layer (4.3 GB in 16-bit): too much on a 24 GB L4.
    const Advice a = advise(catalog(), book(), request("l4", Goal::kLatency));
    CHECK_THAT(why_not(a, "speculative-medusa", "does not fit"), Catch::StartsWith("would not fit: needs"));
    for (const auto& r : a.recommendations) CHECK(r.after.runs);
  }
}

namespace {

/// Scenarios spanning the device classes and goals; together they fire every shipped rule.
std::vector<AdviceRequest> coverage_scenarios() {
  std::vector<AdviceRequest> out;
  for (Goal g : {Goal::kLatency, Goal::kThroughput, Goal::kMemory}) {
    out.push_back(request("rtx5090", g));
    out.push_back(request("h100", g));
    out.push_back(request("b200", g));
    out.push_back(request("a18-pro", g));
    out.push_back(request("snapdragon-8-elite", g));
    out.push_back(request("m4max", g));
    out.push_back(request("m4max", g, "llama-3.3-70b"));
    out.push_back(request("h100", g, "llama-3.1-70b"));
    out.push_back(request("rtx4090", g, "llama-3.1-70b", "vllm"));
    out.push_back(request("rtx4090", g, "gpt-oss-120b"));  // an MoE past the GPU: expert offload
    out.push_back(request("a100-sxm-80gb", g, "", "vllm"));
    out.push_back(request("h100", g, "llama-3.1-70b", "tensorrt-llm"));  // W4A8 on FP8 tensor cores
    AdviceRequest mtp = request("h100", g, "glm-4.5-air", "vllm");
    mtp.scenario.quant = "fp8";
    mtp.scenario.tp = 2;
    out.push_back(mtp);
    out.push_back(request("h100", g, "", "llama.cpp"));
    out.push_back(request("m4max", g, "", "mlx"));
    AdviceRequest fa = request("rtx5090", g);
    fa.scenario.flash_attention = false;
    fa.scenario.context_tokens = 32768;
    out.push_back(fa);
    AdviceRequest graphs = request("rtx5090", g);
    graphs.scenario.graphs = false;
    out.push_back(graphs);
    AdviceRequest strix = request("ryzen-ai-max-395", g, "ministral-3-14b", "llama.cpp:vulkan");  // BF16 on AMD's Vulkan path
    strix.scenario.quant = "bf16";
    out.push_back(strix);
    AdviceRequest mac = request("m1", g);
    mac.scenario.quant = "q8_0";
    out.push_back(mac);
    AdviceRequest mlx = request("m4max", g, "", "mlx");
    mlx.scenario.quant = "hf-bf16";
    out.push_back(mlx);
    AdviceRequest rag = request("h100", g);
    rag.scenario.prompt_tokens = 8192;
    out.push_back(rag);
    AdviceRequest long_prompt = request("h100", g, "llama-3.1-70b");
    long_prompt.scenario.prompt_tokens = 16384;
    long_prompt.scenario.context_tokens = 32768;
    out.push_back(long_prompt);
    // An 8B model over eight H100s in tensor parallel, filling memory: copies serve more.
    AdviceRequest tp8 = request("h100", g);
    tp8.scenario.tp = 8;
    tp8.scenario.batch = "max";
    out.push_back(tp8);
    // An MoE model in tensor parallel 8 with a latent cache every GPU copies: expert parallelism.
    AdviceRequest moe = request("h200", g, "deepseek-v3", "vllm");
    moe.scenario.tp = moe.scenario.gpus = 8;
    moe.scenario.batch = "256";
    moe.scenario.prompt_tokens = 2000;
    out.push_back(moe);
    // Qwen3-32B BF16 at a 40,960-token maximum length: 1% over vLLM's 0.9 share of an H100.
    AdviceRequest tight = request("h100", g, "qwen3-32b", "vllm");
    tight.scenario.context_tokens = 40960;
    out.push_back(tight);
  }
  // Training steps: one node of H100s, a consumer card, long sequences, the other frameworks.
  auto train = [&](const std::string& hw, int64_t gpus, const std::string& model = "", const std::string& engine = "") {
    AdviceRequest r = request(hw, Goal::kTraining, model, engine);
    r.scenario.gpus = gpus;
    return r;
  };
  out.push_back(train("h100", 8));
  out.push_back(train("rtx4090", 1));
  out.push_back(train("a100-sxm-80gb", 8));
  AdviceRequest ddp = train("h100", 8);
  ddp.training.sharding = "ddp";
  out.push_back(ddp);
  AdviceRequest big_micro = train("h100", 8);
  big_micro.training.micro_batch = 8;
  out.push_back(big_micro);
  AdviceRequest long_seq = train("h100", 8);
  long_seq.training.seq = 32768;
  out.push_back(long_seq);
  AdviceRequest megatron = train("h100", 8, "llama-3.1-70b", "megatron");
  megatron.scenario.tp = 2;
  megatron.training.sequence_parallel = false;
  out.push_back(megatron);
  out.push_back(train("h100", 8, "llama-3.1-70b", "deepspeed"));
  AdviceRequest eager = train("h100", 8);  // torch.compile left off
  eager.training.compile = false;
  out.push_back(eager);
  // Host offload: a full fine-tune past one GeForce card (ZeRO-Offload), long sequences under Megatron.
  out.push_back(train("rtx4090", 1, "llama-3.2-3b", "deepspeed"));
  AdviceRequest megatron_long = train("h100", 8, "llama-3.1-8b", "megatron");
  megatron_long.training.seq = 8192;
  megatron_long.training.micro_batch = 4;
  out.push_back(megatron_long);
  return out;
}

/// The ranking's first key, as docs/advisor.md states it: 0 runs on the device (training: on the
/// GPUs asked for), 1 runs with layers in host memory or, training, only on more GPUs, 2 does not run.
int feasibility(const Advice& a, const Evaluation& e) {
  if (e.is_training())
    return !e.runs ? 2 : e.training().prepared.scenario.workload.gpus > a.base.training().prepared.scenario.workload.gpus ? 1 : 0;
  return e.inference().analysis.memory.fits ? 0 : e.runs ? 1 : 2;
}

const std::vector<Advice>& coverage_advice() {
  static const std::vector<Advice> all = [] {
    std::vector<Advice> out;
    for (const auto& r : coverage_scenarios()) out.push_back(advise(catalog(), book(), r));
    return out;
  }();
  return all;
}

}  // namespace

TEST_CASE("every shipped rule fires in at least one scenario", "[advisor][coverage]") {
  std::set<std::string> fired;
  for (const auto& a : coverage_advice()) {
    for (const auto& r : a.recommendations) fired.insert(r.rule->id);
    for (const auto& r : a.alternatives) fired.insert(r.rule->id);
    for (const auto& u : a.unquantified) fired.insert(u.rule->id);
  }
  for (const auto& r : book().rules()) {
    INFO(r.id);
    CHECK(fired.count(r.id) == 1);
  }
}

TEST_CASE("ranking follows the computed gain", "[advisor][ranking]") {
  for (const auto& a : coverage_advice()) {
    for (std::size_t i = 0; i < a.recommendations.size(); ++i) {
      const Recommendation& r = a.recommendations[i];
      INFO(where(a) << " #" << r.rank << " " << r.rule->id);
      CHECK(r.rank == static_cast<int>(i + 1));
      CHECK(r.gain >= book().defaults().min_gain);
      // The gain is the metric's ratio, computed from the two evaluations.
      if (r.gain_basis == "metric") {
        const double ratio = a.metric.lower_is_better ? a.base.metric / r.after.metric : r.after.metric / a.base.metric;
        CHECK(r.gain == Approx(ratio));
      } else if (r.gain_basis == "memory") {
        // Neither fits: progress is the memory no longer needed.
        CHECK_FALSE(a.base.runs);
        CHECK_FALSE(r.after.runs);
        CHECK(r.gain == Approx(a.base.memory_bytes / r.after.memory_bytes));
      } else {
        CHECK(r.gain_basis == "runs");
        CHECK(std::isinf(r.gain));
        CHECK_FALSE(a.base.runs);
        CHECK(r.after.runs);
      }
      if (i > 0) {
        // Feasibility first (on the device, then with host offload, then not at all); the memory
        // goal then takes the less lossy change, then the one on fewer GPUs; then the metric after the change, a lossier
        // change needing quality_step_margin per class step on the speed goals.
        const Recommendation& prev = a.recommendations[i - 1];
        auto feasible = [&](const Recommendation& x) { return feasibility(a, x.after); };
        // A host-offload rescue (training: one that adds GPUs) goes below the device-side changes
        // when together they fit (the plan).
        const bool plan_fits = !a.plan.empty() && feasibility(a, a.plan.back().result) == 0;
        if (plan_fits && (feasible(prev) == 1 || feasible(r) == 1)) {
          CHECK(feasible(r) == 1);
          continue;
        }
        CHECK(feasible(prev) <= feasible(r));
        if (feasible(prev) != feasible(r)) continue;
        if (a.goal == Goal::kMemory) {
          // Quality class, then the GPUs the change uses, then the memory needed / usable.
          CHECK(prev.rule->quality_class() <= r.rule->quality_class());
          if (prev.rule->quality_class() != r.rule->quality_class()) continue;
          const double prev_gpus = prev.after.facts.at("workload.gpus").get<double>(), gpus = r.after.facts.at("workload.gpus").get<double>();
          CHECK(prev_gpus <= gpus);
          if (prev_gpus == gpus) CHECK(prev.after.metric <= r.after.metric);
          continue;
        }
        const double margin = book().assumptions().at("quality_step_margin").value;
        auto value = [&](const Recommendation& x) {
          const double m = x.after.runs ? (a.metric.lower_is_better ? 1 / x.after.metric : x.after.metric) : 1 / x.after.memory_bytes;
          return m / std::pow(margin, x.rule->quality_class());
        };
        CHECK(value(prev) >= value(r) * (1 - 1e-12));
      }
    }
  }
}

TEST_CASE("the stacked plan is never worse than its first step", "[advisor][plan]") {
  std::size_t plans = 0;
  for (const auto& a : coverage_advice()) {
    if (a.recommendations.empty()) {
      CHECK(a.plan.empty());
      continue;
    }
    REQUIRE(!a.plan.empty());
    ++plans;
    INFO(where(a));
    // Every step is a recommendation the playbook shows, no model switch.
    for (const auto& s : a.plan) CHECK(recommended(a, s.rule->id) != nullptr);
    // The plan ranks no lower than its top recommendation alone: as feasible, and on the memory
    // goal no lossier; on the speed goals its metric, net of the quality margin, is no worse.
    const Recommendation& top = a.recommendations.front();
    const Evaluation& result = a.plan.back().result;
    int quality = 0;
    for (const auto& s : a.plan) quality = std::max(quality, s.rule->quality_class());
    auto feasible = [&](const Evaluation& e) { return feasibility(a, e); };
    CHECK(feasible(result) <= feasible(top.after));
    if (feasible(result) == feasible(top.after) && result.runs) {
      if (a.goal == Goal::kMemory)
        CHECK(quality <= top.rule->quality_class());
      else {
        const double margin = std::pow(book().assumptions().at("quality_step_margin").value, quality - top.rule->quality_class());
        if (a.metric.lower_is_better)
          CHECK(result.metric * margin <= top.after.metric * (1 + 1e-9));
        else
          CHECK(result.metric / margin >= top.after.metric * (1 - 1e-9));
      }
    }
    for (std::size_t i = 1; i < a.plan.size(); ++i) {
      CHECK(a.plan[i].step_gain >= book().defaults().min_gain);
      const Evaluation& before = a.plan[i - 1].result;
      const Evaluation& after = a.plan[i].result;
      CHECK((after.runs || !before.runs));  // a step never breaks a scenario that runs
      if (after.runs && before.runs) {
        if (a.metric.lower_is_better)
          CHECK(after.metric < before.metric);
        else
          CHECK(after.metric > before.metric);
      } else if (!after.runs && !before.runs && a.goal != Goal::kMemory) {
        CHECK(after.memory_bytes < before.memory_bytes);
      }
    }
  }
  CHECK(plans > 20);
}

TEST_CASE("the plan never stacks two rules that change the same thing", "[advisor][plan]") {
  SECTION("the conflict check: a shared transform name, whatever its parameters") {
    Rule fp8, q4, kv;
    fp8.id = "fp8-weights";
    fp8.transform = {{"set_quant", {{"quant", "fp8"}}}};
    q4.id = "int4-weights";
    q4.transform = {{"set_quant", {{"quant", "q4_k_m"}}}};
    kv.id = "fp8-kv";
    kv.transform = {{"set_kv_dtype", {{"kv_dtype", "fp8"}}}, {"set_quant", {{"quant", "fp8"}}}};
    PlanStep first;
    first.rule = &fp8;
    CHECK(plan_conflict(q4, {first}) == "fp8-weights");
    CHECK(plan_conflict(kv, {first}) == "fp8-weights");  // any one of its steps is enough
    Rule other;
    other.id = "cuda-graphs";
    other.transform = {{"set_graphs", {}}};
    CHECK(plan_conflict(other, {first}).empty());
    CHECK(plan_conflict(q4, {}).empty());
  }
  SECTION("every shipped plan: no transform twice, and a conflicting recommendation is skipped with why") {
    std::size_t skipped_for_conflict = 0;
    for (const auto& a : coverage_advice()) {
      INFO(where(a));
      std::set<std::string> changed;
      for (const auto& s : a.plan)
        for (const auto& t : s.rule->transform) CHECK(changed.insert(t.name).second);
      for (const auto& skip : a.plan_skipped)
        if (skip.reason.rfind("changes what ", 0) == 0) ++skipped_for_conflict;
    }
    CHECK(skipped_for_conflict > 0);
  }
}

TEST_CASE("defaults: a typical model per device class, stated", "[advisor]") {
  const Advice gpu = advise(catalog(), book(), request("rtx5090", Goal::kLatency));
  CHECK(gpu.base.inference().prepared.scenario.model.id == "llama-3.1-8b");
  CHECK_THAT(gpu.notes.at(0), Catch::StartsWith("model: llama-3.1-8b (typical for consumer-gpu devices"));
  const Advice phone = advise(catalog(), book(), request("a18-pro", Goal::kLatency));
  CHECK(phone.base.inference().prepared.scenario.model.id == "llama-3.2-3b");
  const Advice serving = advise(catalog(), book(), request("h100", Goal::kThroughput));
  CHECK(serving.base.inference().analysis.batch == 16);
}

TEST_CASE("assumptions are the user's to override", "[advisor][assumptions]") {
  AdviceRequest r = request("h100", Goal::kLatency);
  const double default_gain = recommended(advise(catalog(), book(), r), "speculative-eagle")->gain;
  r.assumptions["spec_rate_eagle_chain"] = 0.5;
  const Advice lower = advise(catalog(), book(), r);
  const Recommendation* eagle = recommended(lower, "speculative-eagle");
  REQUIRE(eagle);
  CHECK(eagle->gain < default_gain);
  const auto used = std::find_if(eagle->assumptions.begin(), eagle->assumptions.end(),
                                 [](const UsedAssumption& u) { return u.id == "spec_rate_eagle_chain"; });
  REQUIRE(used != eagle->assumptions.end());
  CHECK(used->overridden);
  r.assumptions["spec_rate_eagle_chain"] = 1.5;
  CHECK_THROWS_WITH(advise(catalog(), book(), r), "--assume spec_rate_eagle_chain=1.5 is outside the allowed range [0.05, 0.99]");
}

TEST_CASE("training: the same machinery over the training model", "[advisor][training]") {
  AdviceRequest r = request("h100", Goal::kTraining);
  r.scenario.gpus = 8;
  const Advice a = advise(catalog(), book(), r);
  REQUIRE(a.base.is_training());
  CHECK(a.metric.id == "training_tokens_per_s_per_gpu");
  CHECK(a.base.metric == Approx(a.base.training().analysis.tokens_per_s_per_gpu));
  CHECK(a.diagnosis.phase == "training step");
  CHECK(a.diagnosis.bound == "compute");
  const Recommendation* fp8 = recommended(a, "train-fp8");
  REQUIRE(fp8);
  CHECK(fp8->after.training().request.precision == "fp8");
  CHECK(fp8->gain == Approx(fp8->after.training().analysis.tokens_per_s / a.base.training().analysis.tokens_per_s));
  // Inference rules never apply to training, and the other way round.
  CHECK(left_out(a, "fp8-weights")->stage == "goal");

  SECTION("no FP8 training on an A100") {
    AdviceRequest ampere = request("a100-sxm-80gb", Goal::kTraining);
    ampere.scenario.gpus = 8;
    CHECK_THAT(why_not(advise(catalog(), book(), ampere), "train-fp8", "prerequisite"),
               Catch::StartsWith("no FP8 training on NVIDIA A100"));
  }
  SECTION("a full fine-tune that does not fit one consumer card: memory first; LoRA is another run, an alternative") {
    const Advice consumer = advise(catalog(), book(), request("rtx4090", Goal::kTraining));
    CHECK_FALSE(consumer.base.runs);
    REQUIRE(!consumer.recommendations.empty());
    // 8.03e9 parameters at 16 + 2 B plus 22 GB of activations: no full fine-tune technique
    // alone or stacked fits 25.8 GB; the least memory comes first (DeepSpeed ZeRO-Offload keeps
    // the 16-bit weights, a gradient bucket and the activations: 191 -> 50.3 GB).
    CHECK(consumer.recommendations.front().rule->id == "zero-offload-deepspeed");
    CHECK(consumer.recommendations.front().gain_basis == "memory");
    REQUIRE(!consumer.plan.empty());
    CHECK_FALSE(consumer.plan.back().result.runs);
    for (const auto& rec : consumer.recommendations) CHECK(rec.rule->id.find("lora") == std::string::npos);
    const auto qlora = std::find_if(consumer.alternatives.begin(), consumer.alternatives.end(),
                                    [](const Recommendation& alt) { return alt.rule->id == "qlora"; });
    REQUIRE(qlora != consumer.alternatives.end());
    CHECK(qlora->gain_basis == "memory");  // 191 -> 38.6 GB: closer, still over 25.8 GB
    // Activations and logits alone (27 GB) exceed the card: no number of GPUs makes it fit.
    CHECK_THAT(why_not(consumer, "scale-out", "transform"), Catch::StartsWith("even 512 GPUs"));
    // One GPU: nothing to shard over, no sequence to split.
    CHECK_THAT(why_not(consumer, "fsdp-full-shard", "prerequisite"), Catch::StartsWith("one data-parallel rank"));
  }
}

TEST_CASE("ranking utility: feasibility, quality, devices, score, then effort and risk", "[advisor][ranking]") {
  Standing fast{0, 0, 1.0, 0, 0, "a"};
  Standing offload = fast;
  offload.feasibility = 1;
  offload.score = 5.0;  // faster, but with layers in host memory
  CHECK(ranks_above(fast, offload, false));
  CHECK_FALSE(ranks_above(offload, fast, false));
  // The memory goal takes the less lossy change first, whatever its score.
  Standing lossy = fast;
  lossy.quality = 2;
  lossy.score = 3.0;
  CHECK(ranks_above(fast, lossy, true));
  CHECK(ranks_above(lossy, fast, false));  // speed goals: the score (already net of the quality margin)
  // The memory goal, within a quality class: the change on fewer GPUs first, whatever its score
  // (tensor parallel over 2 GPUs halves the memory per device but needs a second GPU).
  Standing two_gpus = fast;
  two_gpus.devices = 2;
  two_gpus.score = 4.0;
  CHECK(ranks_above(fast, two_gpus, true));
  CHECK(ranks_above(two_gpus, fast, false));  // speed goals: the score
  CHECK(ranks_above(two_gpus, lossy, true));  // quality before devices
  // Equal standing but for effort: lower effort first; then lower risk. Reversing either fails here.
  Standing easy = fast, hard = fast;
  hard.effort = 1;
  hard.id = "0";  // an id that would win the last tie-break
  CHECK(ranks_above(easy, hard, false));
  CHECK_FALSE(ranks_above(hard, easy, false));
  Standing safe = fast, risky = fast;
  risky.risk = 2;
  risky.id = "0";
  CHECK(ranks_above(safe, risky, false));
  CHECK_FALSE(ranks_above(risky, safe, false));
  // Effort outranks risk.
  Standing low_effort_high_risk = fast, high_effort_low_risk = fast;
  low_effort_high_risk.risk = 2;
  high_effort_low_risk.effort = 2;
  CHECK(ranks_above(low_effort_high_risk, high_effort_low_risk, false));
}

namespace {

AdviceRequest workload(AdviceRequest r, int64_t context, const std::string& batch = "") {
  r.scenario.context_tokens = context;
  if (!batch.empty()) r.scenario.batch = batch;
  return r;
}

std::size_t position(const Advice& a, const std::string& id) {
  for (std::size_t i = 0; i < a.recommendations.size(); ++i)
    if (a.recommendations[i].rule->id == id) return i;
  return a.recommendations.size();
}

bool in_plan(const Advice& a, const std::string& id) {
  return std::any_of(a.plan.begin(), a.plan.end(), [&](const PlanStep& s) { return s.rule->id == id; });
}

}  // namespace

TEST_CASE("a host-offload path never ranks above a faster device-side one (datacenter GPUs)", "[advisor][ranking]") {
  // L4 serving an 8B model at 8k context, batch 16; H100 with gpt-oss-120b; H100 with a 70B BF16 model.
  const Advice l4 = advise(catalog(), book(), workload(request("l4", Goal::kThroughput, "llama-3.1-8b"), 8192, "16"));
  const Advice oss = advise(catalog(), book(), request("h100", Goal::kLatency, "gpt-oss-120b"));
  const Advice big = advise(catalog(), book(), request("h100", Goal::kLatency, "llama-3.3-70b"));
  for (const Advice* a : {&l4, &oss, &big}) {
    INFO(where(*a));
    REQUIRE(!a->recommendations.empty());
    CHECK(a->recommendations.front().rule->id != "cpu-offload");
    const std::size_t offload = position(*a, "cpu-offload");
    for (std::size_t i = offload + 1; i < a->recommendations.size(); ++i) {
      const Recommendation& r = a->recommendations[i];
      INFO(r.rule->id);
      // Nothing below the offload path runs entirely on the device.
      CHECK_FALSE(r.after.inference().analysis.memory.fits);
    }
  }
  CHECK(position(big, "fp8-weights") < position(big, "cpu-offload"));
}

TEST_CASE("the offload rule is left out where the switch offloads nothing (an after-condition)", "[advisor][ranking]") {
  // GLM-5 BF16 on 8 B200 under SGLang: 1,488 GB / 8 = 186 GB per device, over SGLang's 169 GB share
  // (mem_fraction_static 0.88). llama.cpp with f16 would claim 186 of the 192 GB usable (97%) and
  // keep every layer on the devices: a change of engine and of its reservation, not an offload.
  AdviceRequest r = request("b200", Goal::kMemory, "glm-5", "sglang");
  r.scenario.tp = r.scenario.gpus = 8;
  const Advice a = advise(catalog(), book(), r);
  INFO(where(a));
  CHECK(recommended(a, "cpu-offload") == nullptr);
  CHECK(why_not(a, "cpu-offload", "after").find("llama.cpp would hold every layer on the device (97% of usable memory)") == 0);
  REQUIRE(!a.recommendations.empty());
  CHECK(a.recommendations.front().rule->id == "fp8-weights");
  // Where llama.cpp does keep layers in host memory (a 70B BF16 model on one H100) the rule stays.
  const Advice big = advise(catalog(), book(), request("h100", Goal::kLatency, "llama-3.3-70b"));
  CHECK(recommended(big, "cpu-offload") != nullptr);
}

TEST_CASE("model switches are alternatives, never techniques", "[advisor][ranking]") {
  const Advice rtx_memory = advise(catalog(), book(), workload(request("rtx4090", Goal::kMemory, "qwen2.5-32b"), 32768));
  const Advice rtx_latency = advise(catalog(), book(), workload(request("rtx4090", Goal::kLatency, "qwen2.5-32b"), 32768));
  const Advice phone = advise(catalog(), book(), request("a18-pro", Goal::kLatency));
  const Advice phone_memory = advise(catalog(), book(), request("a18-pro", Goal::kMemory));
  for (const Advice* a : {&rtx_memory, &rtx_latency, &phone, &phone_memory}) {
    INFO(where(*a));
    for (const auto& r : a->recommendations) CHECK_FALSE(r.rule->switches_model());
    for (const auto& r : a->alternatives) CHECK(r.rule->switches_model());
    for (const auto& s : a->plan) CHECK_FALSE(s.rule->switches_model());
  }
  // The 4090 at 32k: an 8-bit KV cache fits, low risk, near-lossless: it leads the memory playbook.
  REQUIRE(!rtx_memory.recommendations.empty());
  CHECK(rtx_memory.recommendations.front().rule->quality_class() <= 1);
}

TEST_CASE("the memory goal takes the least lossy change that fits", "[advisor][ranking][plan]") {
  // A 64 GB Mac with a 70B model: q8_0 KV and a raised wired limit, not 3-bit weights and a 4-bit KV.
  AdviceRequest r = request("m4-max-40c", Goal::kMemory, "llama-3.3-70b");
  r.scenario.memory = "64GB";
  const Advice a = advise(catalog(), book(), r);
  INFO(where(a));
  REQUIRE(!a.plan.empty());
  CHECK(a.plan.back().result.inference().analysis.memory.fits);
  CHECK_FALSE(in_plan(a, "gguf-q3-k-m"));
  CHECK_FALSE(in_plan(a, "kv-cache-q4"));
  for (const auto& s : a.plan) CHECK(s.rule->quality_class() <= 1);
}
