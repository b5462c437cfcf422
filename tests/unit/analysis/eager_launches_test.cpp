// SPDX-License-Identifier: MIT
// A decode step without CUDA graphs: kernels per step x host cost per launch,
// growing with layers and MoE layers; with a graph, the backend's per-layer figure.
#include <catch2/catch.hpp>

#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "fixtures.hpp"

using namespace optadvisor;
using fixtures::analyze_request;
using fixtures::catalog;
using fixtures::request;

namespace {

double overhead(const std::string& model, bool graphs) {
  ScenarioRequest r = request("h100-sxm", model, "", "vllm");
  r.prompt_tokens = 0;
  r.gen_tokens = 1;
  r.graphs = graphs;
  return analyze_request(r).decode.overhead_time_s;
}

}  // namespace

TEST_CASE("without graphs every kernel of every layer is launched", "[analysis][graphs]") {
  const EngineProfile& vllm = catalog().resolve_engine("vllm");
  REQUIRE(vllm.eager.launch_s > 0);
  const double step = vllm.backends.at("default").step_overhead_s;
  // Llama-3.1-8B, dense: 32 layers x kernels_per_layer launches.
  CHECK(overhead("llama-3.1-8b", false) - step == Approx(32 * vllm.eager.kernels_per_layer * vllm.eager.launch_s));
  // With a graph: 32 layers x layer_overhead_s x graph_overhead_factor.
  CHECK(overhead("llama-3.1-8b", true) - step == Approx(32 * vllm.backends.at("default").layer_overhead_s * vllm.graph_overhead_factor));
  // Qwen3-30B-A3B: 48 MoE layers, each with the fused MoE path's extra kernels, and each the MoE
  // kernels' fixed time (moe_layer_overhead, 57 us for its 16-bit experts), graphs or not.
  const double moe = 48 * vllm.backends.at("default").moe_layer_overhead_for("hf-bf16");
  REQUIRE(moe == Approx(48 * 57e-6));
  CHECK(overhead("qwen3-30b-a3b", false) - step ==
        Approx(48 * (vllm.eager.kernels_per_layer + vllm.eager.extra_kernels_per_moe_layer) * vllm.eager.launch_s + moe));
}

TEST_CASE("the exposed components sum to the phase's time", "[analysis][diagnosis]") {
  // gpt-oss-120b prefill on an H100: the weight reads (93% of the time) hide the matrix math, so
  // compute shows 0%, not the 39% it would be on its own; the shares add up to the phase.
  ScenarioRequest r = request("h100-sxm", "gpt-oss-120b", "", "vllm");
  r.batch = "16";
  for (const auto& batch : {"1", "16", "256"}) {
    r.batch = batch;
    const Analysis a = analyze_request(r);
    for (const PhaseEstimate* p : {&a.prefill, &a.decode}) {
      const double sum = p->exposed_compute_s + p->exposed_weights_s + p->exposed_kv_s + p->exposed_offload_s + p->overhead_time_s +
                         p->interconnect_time_s;
      CHECK(sum == Approx(p->time_s).epsilon(1e-9));
      CHECK(p->exposed_compute_s <= p->compute_time_s * (1 + 1e-12));
      CHECK(p->exposed_weights_s <= p->weights_time_s * (1 + 1e-12));
    }
  }
}

TEST_CASE("llama.cpp without flash attention moves the score matrix", "[analysis][flash-attention]") {
  ScenarioRequest r = request("rtx4090", "llama-3.1-8b", "q4_k_m", "llama.cpp");
  r.prompt_tokens = 4096;
  r.gen_tokens = 0;
  r.flash_attention = true;
  const Analysis on = analyze_request(r);
  r.flash_attention = false;
  const Scenario s = prepare_scenario(catalog(), r).scenario;
  const Analysis off = analyze(s);
  // 4096 prompt tokens attend to 4096 x 2048 keys on average: 8.39e6 scores x 32 heads x 32 layers
  // = 8.59e9 elements, x 16 bytes (f32 written, read and written by softmax, read) = 137 GB more.
  const double extra = 4096.0 * 2048.0 * 32 * 32 * s.engine.engine->memory.unfused_score_bytes;
  CHECK(s.engine.engine->memory.unfused_score_bytes == 16);
  CHECK(off.prefill.bytes - on.prefill.bytes == Approx(extra).epsilon(1e-6));
  CHECK(off.prefill.time_s > on.prefill.time_s);
  // The compute buffer grows by the f32 KQ of one ubatch: 4096 x 512 x 32 heads x 4 bytes = 268 MB.
  CHECK(off.memory.activation_bytes - on.memory.activation_bytes == Approx(4096.0 * 512 * 32 * 4));
}
