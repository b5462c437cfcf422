// SPDX-License-Identifier: MIT
// check_layout and the other device-dependent decisions of prepare_scenario,
// one check each.
#include <catch2/catch.hpp>

#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/catalog/catalog.hpp"
#include "fixtures.hpp"

using namespace optadvisor;

namespace {

using fixtures::catalog;
using fixtures::request;

/// 24 attention heads over 8 KV heads (GQA 3:1), 40 layers: tp 12 divides
/// the heads (24 / 12 = 2) but neither divides 8 nor is a multiple of it.
ModelSpec gqa_model() {
  ModelSpec m;
  m.num_attention_heads = 24;
  m.num_key_value_heads = 8;
  m.num_hidden_layers = 40;
  return m;
}

Workload layout(uint32_t tp, uint32_t pp, uint32_t gpus = 0) {
  Workload w;
  w.tp = tp;
  w.pp = pp;
  w.gpus = gpus ? gpus : tp * pp;
  return w;
}

std::string refusal(const ModelSpec& m, const std::string& hw, const std::string& engine, const Workload& w) {
  try {
    check_layout(m, catalog().resolve_hardware(hw), catalog().resolve_engine(engine), w);
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::kBadInput);
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("check_layout: tp x pp must be the GPU count", "[analysis][layout]") {
  CHECK(refusal(gqa_model(), "h100", "vllm", layout(2, 2, 4)).empty());
  CHECK(refusal(gqa_model(), "h100", "vllm", layout(2, 2, 8)) == "--tp 2 x --pp 2 = 4 does not match --gpus 8");
}

TEST_CASE("check_layout: tp must divide the attention heads", "[analysis][layout]") {
  // 24 / 2 = 12 heads a rank; 24 / 5 is not whole.
  CHECK(refusal(gqa_model(), "h100", "vllm", layout(2, 1)).empty());
  CHECK(refusal(gqa_model(), "h100", "vllm", layout(5, 1)) == "--tp 5 does not divide the model's 24 attention heads");
}

TEST_CASE("check_layout: KV heads are sharded, or replicated when tp is a multiple of them", "[analysis][layout]") {
  const ModelSpec m = gqa_model();
  // tp 4 divides the 8 KV heads: 2 a rank.
  CHECK(refusal(m, "h100", "vllm", layout(4, 1)).empty());
  // tp 24 is a multiple of 8: each KV head replicated on 3 ranks (and 24 / 24 = 1 query head a rank).
  CHECK(refusal(m, "h100", "vllm", layout(24, 1)).empty());
  // tp 12: 8 % 12 = 8 and 12 % 8 = 4, neither whole.
  CHECK(refusal(m, "h100", "vllm", layout(12, 1)) == "--tp 12 neither divides the model's 8 key-value heads nor is a multiple of them");
  CHECK(refusal(m, "h100", "vllm", layout(3, 1)) == "--tp 3 neither divides the model's 8 key-value heads nor is a multiple of them");
  // MLA caches one latent per token, not per head: no KV-head constraint.
  ModelSpec mla = m;
  mla.kv_lora_rank = 512;
  CHECK(refusal(mla, "h100", "vllm", layout(12, 1)).empty());
}

TEST_CASE("check_layout: pp at most the layers", "[analysis][layout]") {
  CHECK(refusal(gqa_model(), "h100", "vllm", layout(1, 40)).empty());
  CHECK(refusal(gqa_model(), "h100", "vllm", layout(1, 41)) == "--pp 41 exceeds the model's 40 layers");
}

TEST_CASE("check_layout: several GPUs only on a device that has them", "[analysis][layout]") {
  CHECK(refusal(gqa_model(), "m4-pro-20c", "llama.cpp", layout(1, 1)).empty());
  CHECK(refusal(gqa_model(), "m4-pro-20c", "llama.cpp", layout(1, 2)) ==
        "m4-pro-20c is a single-chip device; multi-GPU options do not apply");
  // A unified-memory workstation (DGX Spark) may be clustered.
  CHECK(refusal(gqa_model(), "dgx-spark", "vllm", layout(2, 1)).empty());
}

TEST_CASE("check_layout: the engine must split a model over devices the way asked", "[analysis][layout]") {
  // MLX and ExecuTorch run on one device (checked on a device that has several, to isolate the rule).
  CHECK(refusal(gqa_model(), "h100", "vllm", layout(1, 2)).empty());
  CHECK(refusal(gqa_model(), "h100", "mlx", layout(1, 1)).empty());
  CHECK(refusal(gqa_model(), "h100", "mlx", layout(1, 2)) == "engine 'mlx' runs on one device; multi-GPU options do not apply");
  CHECK(refusal(gqa_model(), "h100", "executorch", layout(1, 2)) ==
        "engine 'executorch' runs on one device; multi-GPU options do not apply");
  // llama.cpp splits layers (pp), not heads (tp).
  CHECK(refusal(gqa_model(), "h100", "llama.cpp", layout(1, 4)).empty());
  CHECK(refusal(gqa_model(), "h100", "llama.cpp", layout(2, 1)) ==
        "llama.cpp splits layers across GPUs; use --pp N (its default -sm layer) instead of --tp");
}

TEST_CASE("host_bandwidth_for: offloaded layers read host memory on discrete GPUs", "[analysis][layout]") {
  const EngineProfile& llama = catalog().resolve_engine("llama.cpp");
  const EngineProfile& vllm = catalog().resolve_engine("vllm");
  const HardwareProfile& rtx = catalog().resolve_hardware("rtx4090");
  const HardwareProfile& mac = catalog().resolve_hardware("m4-pro-20c");
  // llama.cpp's figure: 89.6 GB/s (dual-channel DDR5-5600) x its host efficiency.
  REQUIRE(llama.host_bandwidth_bytes_per_s > 0);
  CHECK(host_bandwidth_for(rtx, llama, std::nullopt) == llama.host_bandwidth_bytes_per_s);
  CHECK(host_bandwidth_for(rtx, llama, 50e9) == 50e9);        // the user's figure wins
  CHECK_FALSE(host_bandwidth_for(mac, llama, std::nullopt));  // unified memory: no host link
  CHECK_FALSE(host_bandwidth_for(rtx, vllm, std::nullopt));   // vLLM keeps every layer on the GPU
  CHECK(host_bandwidth_for(rtx, vllm, 50e9) == 50e9);
}

TEST_CASE("kv_dtype_notes: fp8 KV without native FP8 converts on read", "[analysis][layout]") {
  const HardwareProfile& a100 = catalog().resolve_hardware("a100-sxm-80gb");
  const HardwareProfile& h100 = catalog().resolve_hardware("h100");
  REQUIRE_FALSE(a100.capabilities.fp8);
  REQUIRE(h100.capabilities.fp8);
  CHECK(kv_dtype_notes(a100, "fp8") ==
        std::vector<std::string>{"fp8 KV cache without native FP8: the engine stores fp8 and converts on read"});
  CHECK(kv_dtype_notes(h100, "fp8").empty());
  CHECK(kv_dtype_notes(a100, "f16").empty());
}

TEST_CASE("estimate refuses a tp that neither divides nor is a multiple of the KV heads", "[analysis][layout]") {
  // Qwen2.5-7B: 28 attention heads, 4 KV heads. tp 14 divides 28 but 4 % 14 = 4, 14 % 4 = 2.
  ScenarioRequest r = request("h100", "qwen2.5-7b", "", "vllm");
  r.tp = 14;
  CHECK_THROWS_WITH(prepare_scenario(catalog(), r),
                    Catch::Contains("--tp 14 neither divides the model's 4 key-value heads nor is a multiple of them"));
  // tp 28: each of the 4 KV heads replicated on 7 ranks.
  r.tp = 28;
  CHECK(prepare_scenario(catalog(), r).scenario.workload.tp == 28);
}

TEST_CASE("a prepared model's weight table is reused for its format only", "[prepare]") {
  // prepare_scenario keeps the per-tensor table it computed on the model it returns; preparing from
  // that model again reuses it in the same format and computes afresh in another.
  ScenarioRequest r;
  r.hardware = "rtx4090";
  r.engine = "llama.cpp";
  r.quant = "q4_k_m";
  const PreparedScenario first = prepare_scenario(catalog(), r, fixtures::model("llama-3.1-8b"));
  REQUIRE(first.model.computed_weights);
  CHECK(first.model.computed_weights->format_id == "q4_k_m");
  const PreparedScenario same = prepare_scenario(catalog(), r, first.model);
  CHECK(same.model.computed_weights == first.model.computed_weights);  // the shared table, not a recomputation
  CHECK(same.weights.weights_bytes == first.weights.weights_bytes);

  r.quant = "q8_0";
  const PreparedScenario other = prepare_scenario(catalog(), r, first.model);
  const PreparedScenario fresh = prepare_scenario(catalog(), r, fixtures::model("llama-3.1-8b"));
  CHECK(other.weights.format_id == "q8_0");
  CHECK(other.weights.weights_bytes == fresh.weights.weights_bytes);
  CHECK(other.weights.weights_bytes > first.weights.weights_bytes);  // 8.5 vs ~4.9 bits per weight
  CHECK(other.model.computed_weights != first.model.computed_weights);
}
