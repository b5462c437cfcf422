// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "fixtures.hpp"

using namespace optadvisor;

namespace {

using fixtures::analyze_request;
using fixtures::catalog;
using fixtures::request;

/// A device with round numbers, so expected times can be worked by hand.
using fixtures::round_device;

using fixtures::HandWeights;
using fixtures::plain_scenario;
using fixtures::PlainEngine;

}  // namespace

TEST_CASE("KV bytes per token for GQA, MLA and sliding windows", "[analysis][kv]") {
  const auto hw = round_device(1e12, 1e15, 80e9);
  const PlainEngine e(1.0, 1.0);
  // Llama-3.1-8B: 2 (K,V) x 32 layers x 8 KV heads x 128 dims x 2 bytes = 131,072 bytes per token.
  Scenario llama = plain_scenario(hw, "llama-3.1-8b", e);
  CHECK(kv_bytes_per_sequence(llama, 1) == Approx(131072));
  CHECK(kv_bytes_per_sequence(llama, 1000) == Approx(131072000));
  // Tensor parallel 2 splits the 8 KV heads: half per device.
  llama.workload.tp = 2;
  CHECK(kv_bytes_per_sequence(llama, 1000) == Approx(65536000));
  // DeepSeek-V3 MLA caches the 512-wide latent plus the 64-wide rotary key, shared by all heads:
  // 61 layers x 576 x 2 bytes = 70,272 bytes per token, and TP does not split it.
  Scenario deepseek = plain_scenario(hw, "deepseek-v3", e);
  CHECK(kv_bytes_per_sequence(deepseek, 1) == Approx(70272));
  deepseek.workload.tp = 8;
  CHECK(kv_bytes_per_sequence(deepseek, 1) == Approx(70272));
  // Gemma-2-9B: 42 layers, 8 KV heads x 256 dims; every other layer slides over 4,096 tokens.
  // At 8,192 tokens: 21 x 8192 + 21 x 4096 = 258,048 token-layers x 2 x 8 x 256 x 2 bytes = 2,113,929,216 bytes.
  Scenario gemma = plain_scenario(hw, "gemma-2-9b", e);
  CHECK(kv_bytes_per_sequence(gemma, 8192) == Approx(2113929216.0));
  // FP8 KV halves it.
  gemma.workload.kv_bytes_per_element = 1.0;
  CHECK(kv_bytes_per_sequence(gemma, 8192) == Approx(1056964608.0));
}

TEST_CASE("a bandwidth-bound decode step worked by hand", "[analysis][decode]") {
  // 1 TB/s at 50% efficiency = 500 GB/s achievable; compute so fast it never binds.
  const auto hw = round_device(1e12, 1e18, 80e9);
  const PlainEngine e(0.5, 1.0);
  Scenario s = plain_scenario(hw, "llama-3.1-8b", e, HandWeights{16e9, 8e9, 8e9}, 0, 1);
  s.weights.token_embedding_bytes = 1e9;  // untied: decode reads only its rows
  const Analysis a = analyze(s);
  // Streamed per token: 16e9 - 1e9 = 15e9 bytes / 5e11 B/s = 30 ms; the KV cache at half a token of
  // context is 65,536 bytes, 0.13 us. So 33.3 tokens/s.
  CHECK(a.decode.time_s == Approx(0.030).epsilon(0.001));
  CHECK(a.decode.tokens_per_s == Approx(33.33).epsilon(0.001));
  CHECK(a.decode.bound == Bound::kMemoryBandwidth);
  INFO(a.decode.explanation());
  CHECK(a.decode.explanation().find("memory reads 100% of the time (weights 100%") != std::string::npos);
  // 2 FLOP per parameter per token over 15e9 bytes: intensity ~1.07 FLOP/byte; ridge 1e18/5e11 = 2e6.
  CHECK(a.decode.arithmetic_intensity == Approx(16e9 / 15e9).epsilon(0.001));
  CHECK(a.decode.ridge_point == Approx(2e6));
}

TEST_CASE("a compute-bound prefill worked by hand", "[analysis][prefill]") {
  // 100 TFLOP/s at 50% = 50 TFLOP/s; bandwidth so high that weight reads vanish.
  const auto hw = round_device(1e18, 100e12, 80e9);
  const PlainEngine e(1.0, 0.5);
  const Scenario s = plain_scenario(hw, "llama-3.1-8b", e, HandWeights{16e9, 8e9, 8e9}, 1000, 0);
  const Analysis a = analyze(s);
  // Linear layers: 2 x 8e9 x 1000 = 1.6e13 FLOP. Causal attention: 32 layers x 2 x 32 heads x (128 + 128)
  // x 1000^2 / 2 = 2.62144e11 FLOP. Total 1.6262144e13 / 5e13 = 0.32524 s.
  CHECK(a.prefill.time_s == Approx(0.32524).epsilon(0.001));
  CHECK(a.prefill.tokens_per_s == Approx(1000 / 0.32524).epsilon(0.001));
  CHECK(a.prefill.bound == Bound::kCompute);
}

TEST_CASE("MoE decode reads only the experts a batch touches", "[analysis][moe]") {
  const auto hw = round_device(1e12, 1e18, 200e9);
  const PlainEngine e(1.0, 1.0);
  Scenario s = plain_scenario(hw, "mixtral-8x7b", e, HandWeights{90e9, 45e9, 13e9}, 0, 1);
  s.weights.routed_expert_bytes = 80e9;
  // One token picks 2 of 8 experts: 1 - (1 - 2/8)^1 = 25% of 80 GB + 10 GB dense = 30 GB -> 30 ms.
  CHECK(analyze(s).decode.time_s == Approx(0.030).epsilon(0.001));
  // Eight sequences touch 1 - 0.75^8 = 89.99% of the experts: 10 + 71.99 GB = 81.99 GB -> 82 ms per step.
  s.workload.batch = 8;
  CHECK(analyze(s).decode.time_s == Approx(0.08199).epsilon(0.001));
}

TEST_CASE("the model is monotonic where physics says it must be", "[analysis][properties]") {
  ScenarioRequest r = request("rtx4090", "llama-3.1-8b", "q4_k_m");
  auto run = [](const ScenarioRequest& req) { return analyze(prepare_scenario(catalog(), req).scenario); };
  const Analysis base = run(r);

  SECTION("more bandwidth is never slower") {
    PreparedScenario p = prepare_scenario(catalog(), r);
    HardwareProfile faster = *p.scenario.hardware;
    faster.memory_bandwidth_bytes_per_s *= 2;
    p.scenario.hardware = &faster;
    const Analysis a = analyze(p.scenario);
    CHECK(a.decode.tokens_per_s > base.decode.tokens_per_s);
    CHECK(a.prefill.time_s <= base.prefill.time_s);
  }
  SECTION("a larger batch never lowers aggregate throughput before capacity") {
    double previous = 0;
    for (int batch : {1, 2, 4, 8, 16, 32}) {
      ScenarioRequest b = r;
      b.batch = std::to_string(batch);
      const Analysis a = run(b);
      REQUIRE(a.memory.fits);
      CHECK(a.decode.tokens_per_s >= previous);
      previous = a.decode.tokens_per_s;
    }
  }
  SECTION("longer context never speeds decode") {
    double previous = 1e30;
    for (int prompt : {0, 512, 4096, 16384, 65536}) {
      ScenarioRequest c = r;
      c.prompt_tokens = prompt;
      const Analysis a = run(c);
      CHECK(a.decode.tokens_per_s <= previous);
      previous = a.decode.tokens_per_s;
    }
  }
  SECTION("results stay finite") {
    CHECK(std::isfinite(base.decode.tokens_per_s));
    CHECK(std::isfinite(base.prefill.tokens_per_s));
    CHECK(base.memory.fits);
  }
}

TEST_CASE("fit and no-fit boundaries", "[analysis][memory]") {
  const PlainEngine e(1.0, 1.0);
  // 10 GB of weights, no runtime overhead; KV 131,072 bytes/token at 1,000 tokens = 131.072 MB.
  // Activations: 8,192 batched tokens x 4,096 hidden x 0 bytes = 0.
  auto at_capacity = [&](double capacity) {
    const auto hw = round_device(1e12, 1e15, capacity);
    return analyze(plain_scenario(hw, "llama-3.1-8b", e, HandWeights{10e9, 8e9, 0}, 900, 100)).memory;
  };
  CHECK(at_capacity(10.131072e9 + 1).fits);
  CHECK_FALSE(at_capacity(10.131072e9 - 1e3).fits);
  const auto m = at_capacity(20e9);
  CHECK(m.total_bytes == Approx(10.131072e9));
  // Largest batch at 1,000 tokens: (20e9 - 10e9) / 131.072e6 = 76.29 -> 76.
  CHECK(m.max_batch == 76);
  // Largest context at batch 1: 10e9 / 131,072 = 76,293 tokens, capped by the model's 131,072 maximum.
  CHECK(m.max_context == 76293);
}

TEST_CASE("vLLM claims 90% of memory and gives the KV cache what is left", "[analysis][memory]") {
  ScenarioRequest r = request("h100-sxm", "llama-3.1-8b", "", "vllm");
  r.batch = "max";
  const PreparedScenario p = prepare_scenario(catalog(), r);
  const Analysis a = analyze(p.scenario);
  const auto& m = a.memory;
  // KV budget = 0.9 x capacity - weights - activations - runtime overhead; each sequence of 640 tokens
  // needs 640 x 131,072 bytes.
  const double budget = 0.9 * m.capacity_bytes - m.weights_bytes - m.activation_bytes - m.overhead_bytes;
  CHECK(m.max_batch == static_cast<uint64_t>(budget / (640.0 * 131072.0)));
  CHECK(a.throughput_batch == std::min<uint64_t>(m.max_batch, 1024));
  CHECK(a.has_throughput);
  CHECK(m.reserved_bytes == Approx(0.9 * m.capacity_bytes));
}

TEST_CASE("tensor parallelism splits weights and adds all-reduces", "[analysis][multi-gpu]") {
  ScenarioRequest r = request("h100-sxm", "llama-3.1-70b", "fp8", "vllm");
  const Analysis one = analyze_request(r);
  r.tp = 2;
  const Analysis two = analyze_request(r);
  CHECK(two.memory.weights_bytes == Approx(one.memory.weights_bytes / 2));
  CHECK(two.decode.interconnect_time_s > 0);
  CHECK(one.decode.interconnect_time_s == 0);
  CHECK(two.decode.tokens_per_s > one.decode.tokens_per_s);
  CHECK(two.factors.link_bandwidth_bytes_per_s == Approx(450e9));  // NVLink4 900 GB/s bidirectional
}

TEST_CASE("llama.cpp offloads layers that do not fit to host memory", "[analysis][offload]") {
  ScenarioRequest r = request("rtx4090", "llama-3.1-70b", "q4_k_m");
  const Analysis a = analyze_request(r);
  CHECK_FALSE(a.memory.fits);
  CHECK(a.memory.offloaded_layers > 0);
  CHECK(a.memory.offloaded_layers < 80);
  CHECK(a.decode.offload_time_s > a.decode.weights_time_s);  // host RAM is ~15x slower than GDDR6X
  CHECK_FALSE(a.warnings.empty());
}

TEST_CASE("phones report a thermal derating and the app memory limit", "[analysis][mobile]") {
  ScenarioRequest r = request("a18-pro", "llama-3.2-3b");
  const PreparedScenario p = prepare_scenario(catalog(), r);
  const Analysis a = analyze(p.scenario);
  CHECK(a.sustained_factor < 1.0);
  CHECK(a.memory.capacity_bytes == Approx(*p.scenario.hardware->app_limit_bytes));
}

TEST_CASE("bad scenarios are bad input with a clear message", "[analysis][errors]") {
  auto message_of = [](ScenarioRequest r) -> std::string {
    try {
      (void)prepare_scenario(catalog(), r);
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::kBadInput);
      return e.what();
    }
    return "no error";
  };
  ScenarioRequest ok = request("h100", "llama-3.1-8b", "", "vllm");
  CHECK(message_of(ok) == "no error");
  auto with = [&](auto change) {
    ScenarioRequest r = ok;
    change(r);
    return message_of(r);
  };
  CHECK(with([](auto& r) { r.batch = "0"; }) == "--batch must be at least 1 (got 0)");
  CHECK(with([](auto& r) { r.batch = "-3"; }) == "--batch must be at least 1 (got -3)");
  CHECK(with([](auto& r) { r.batch = "lots"; }) == "--batch 'lots' is not a number or 'max'");
  CHECK(with([](auto& r) { r.prompt_tokens = -1; }) == "--prompt must be zero or more (got -1)");
  CHECK(with([](auto& r) { r.prompt_tokens = 0, r.gen_tokens = 0; }) == "--prompt and --gen are both 0: nothing to estimate");
  CHECK(with([](auto& r) { r.tp = 3; }).find("--tp 3 does not divide the model's 32 attention heads") == 0);
  CHECK(with([](auto& r) { r.tp = 2, r.gpus = 4; }).find("--tp 2 x --pp 1 = 2 does not match --gpus 4") == 0);
  CHECK(with([](auto& r) { r.context_tokens = 100; }).find("--context 100 is shorter than") == 0);
  CHECK(with([](auto& r) { r.engine = "mlx"; }) == "engine 'mlx' does not run on h100-sxm");
  CHECK(with([](auto& r) { r.engine = "llama.cpp:metal"; }) == "engine 'llama.cpp:metal' does not run on h100-sxm");
  CHECK(with([](auto& r) { r.engine = "nosuch"; }) == "unknown engine 'nosuch'");
  CHECK(with([](auto& r) { r.quant = "mlx-4bit"; }) == "engine 'vllm' does not run mlx-4bit weights");
  CHECK(with([](auto& r) { r.kv_dtype = "q4_0"; }) == "engine 'vllm' has no q4_0 KV cache");
  CHECK(with([](auto& r) { r.hardware = "h100sxm5"; }) == "no error");  // an alias
  CHECK(with([](auto& r) { r.hardware = "h1000"; }) == "unknown hardware 'h1000'");
  CHECK(with([](auto& r) { r.model.preset = ""; }).find("no model given") == 0);
  CHECK(with([](auto& r) { r.model.params = "7B"; }).find("give one of") == 0);
}

TEST_CASE("a context beyond the model's maximum is bad input", "[analysis][errors]") {
  ScenarioRequest r = request("h200", "llama-2-7b", "", "vllm");
  r.prompt_tokens = 8000;  // 8000 + 128 generated = 8128 > Llama-2's 4096
  try {
    (void)prepare_scenario(catalog(), r);
    FAIL("expected bad input");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::kBadInput);
    CHECK_THAT(e.what(), Catch::Contains("--prompt + --gen 8128 is beyond Llama-2-7B's maximum context of 4096 tokens"));
  }
  // A Scenario built directly (not through prepare) still gets the warning.
  r.prompt_tokens = 512;
  Scenario s = prepare_scenario(catalog(), r).scenario;
  s.workload.prompt_tokens = 8000;
  const Analysis a = analyze(s);
  REQUIRE_FALSE(a.warnings.empty());
  CHECK(a.warnings.back().find("exceeds the model's maximum of 4096 tokens") != std::string::npos);
}

TEST_CASE("analyze with Detail::kNumbers gives the same numbers without the texts", "[analysis]") {
  ScenarioRequest r;
  r.hardware = "rtx4090";
  r.model.preset = "llama-3.1-70b";  // offloads: a warning in the full analysis
  const Scenario s = prepare_scenario(catalog(), r).scenario;
  const Analysis full = analyze(s);
  const Analysis numbers = analyze(s, Detail::kNumbers);
  CHECK_FALSE(full.warnings.empty());
  CHECK(numbers.warnings.empty());
  // A phase's explanation is written from its numbers when asked for: the same either way.
  CHECK_FALSE(full.decode.explanation().empty());
  CHECK(numbers.decode.explanation() == full.decode.explanation());
  CHECK(numbers.decode.tokens_per_s == full.decode.tokens_per_s);
  CHECK(numbers.prefill.time_s == full.prefill.time_s);
  CHECK(numbers.memory.total_bytes == full.memory.total_bytes);
  CHECK(numbers.memory.max_context == full.memory.max_context);
  CHECK(numbers.decode.bound == full.decode.bound);
}

TEST_CASE("a two-trillion-parameter MoE at 1M context and batch 4096 stays finite", "[analysis][robustness]") {
  const auto hw = round_device(8e12, 5e15, 288e9);
  const PlainEngine e(0.8, 0.6);
  Scenario s = plain_scenario(hw, "deepseek-v3", e, HandWeights{2e12, 2e12, 1e11}, 1 << 20, 1024);
  s.weights.routed_expert_bytes = 1.9e12;
  s.workload.batch = 4096;
  const Analysis a = analyze(s);
  CHECK(std::isfinite(a.prefill.time_s));
  CHECK(std::isfinite(a.decode.tokens_per_s));
  CHECK(std::isfinite(a.memory.total_bytes));
  CHECK_FALSE(a.memory.fits);
}

TEST_CASE("offload, attention kernels and activations follow the engine's data, not its name", "[analysis][engine-data]") {
  // Llama-3.1-70B q4_k_m (~40 GB) on a 24 GB RTX 4090 under llama.cpp: layers go to host memory.
  ScenarioRequest r = request("rtx4090", "llama-3.1-70b", "q4_k_m");
  PreparedScenario ps = prepare_scenario(catalog(), r);
  EngineProfile renamed = *ps.scenario.engine.engine;
  renamed.id = "renamed";
  ps.scenario.engine.engine = &renamed;
  const Analysis offloaded = analyze(ps.scenario);
  CHECK(offloaded.memory.offloaded_layers > 0);  // the same under another id
  renamed.offloads_to_host = false;
  const Analysis kept = analyze(ps.scenario);
  CHECK(kept.memory.offloaded_layers == 0);
  CHECK_FALSE(kept.memory.fits);
  // ggml's compute buffer holds f32 logits: at least vocab x 4 bytes = 128256 x 4 = 513,024.
  CHECK(offloaded.memory.activation_bytes >= 128256.0 * 4);
  renamed.memory.activation_model = ActivationModel::kBatchedTokens;
  // The forward-pass model: max_batched_tokens x hidden x bytes per token and hidden unit, no logits term.
  CHECK(analyze(ps.scenario).memory.activation_bytes ==
        Approx(static_cast<double>(renamed.memory.max_batched_tokens) * 8192.0 * renamed.memory.activation_bytes_per_token));

  // Flash attention on a device without FlashAttention-2: only with the engine's own kernels.
  const HardwareProfile hw = round_device(1e12, 100e12, 80e9);
  PlainEngine e(0.8, 0.5);
  Scenario s = plain_scenario(hw, "llama-3.1-8b", e, HandWeights{16e9, 8e9, 8e9}, 512, 128);
  s.workload.batch = 1;
  REQUIRE_FALSE(hw.capabilities.flash_attention_2);
  CHECK_FALSE(analyze(s).factors.flash_attention);
  e.engine.own_flash_attention = true;
  CHECK(analyze(s).factors.flash_attention);
}
