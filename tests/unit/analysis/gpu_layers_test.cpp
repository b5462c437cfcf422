// SPDX-License-Identifier: MIT
// --n-gpu-layers (llama.cpp -ngl): the layers kept on the GPU, the others and the output layer in host memory.
#include <catch2/catch.hpp>

#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/analysis_json.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/catalog/catalog.hpp"
#include "fixtures.hpp"

using namespace optadvisor;

namespace {

using fixtures::any_contains;
using fixtures::catalog;
using fixtures::request;

std::string bad_input_message(const ScenarioRequest& r) {
  return fixtures::bad_input_message([&] { (void)prepare_scenario(catalog(), r); });
}

}  // namespace

TEST_CASE("n-gpu-layers keeps the first layers and the output layer in host memory", "[analysis][offload]") {
  ScenarioRequest r = request("rtx4090", "llama-3.1-70b", "q4_k_m");
  r.n_gpu_layers = 40;
  const PreparedScenario p = prepare_scenario(catalog(), r);
  const WeightsSummary& w = p.scenario.weights;
  REQUIRE(p.scenario.workload.gpu_layers == 40u);
  // Llama-3.1-70B's output layer is 128256 x 8192 = 1,050,673,152 weights, Q6_K in a Q4_K_M file
  // (210 bytes per 256 weights): 861,880,320 B; its token_embd, Q4_K (144 per 256), 591,003,648 B.
  CHECK(w.output_head_bytes == Approx(861880320.0));
  CHECK(w.token_embedding_bytes == Approx(591003648.0));
  const Analysis a = analyze(p.scenario);
  // 40 of 80 blocks on the host, each (weights - output - token_embd) / 80, plus the output layer.
  const double block = (w.total_bytes - 861880320.0 - 591003648.0) / 80.0;
  CHECK(a.memory.offloaded_layers == 40);
  CHECK(a.memory.offloaded_bytes == Approx(40.0 * block + 861880320.0));
  // Decode reads them on the default host: 89.6e9 x 0.6 = 53.76e9 B/s.
  CHECK(a.decode.offload_time_s == Approx(a.memory.offloaded_bytes / 53.76e9).epsilon(1e-6));
  // Asking for more host layers than memory needs (the automatic count is 33) is slower.
  r.n_gpu_layers.reset();
  const Analysis automatic = analyze(prepare_scenario(catalog(), r).scenario);
  REQUIRE(automatic.memory.offloaded_layers == 33);
  CHECK(a.decode.time_s > automatic.decode.time_s);
}

TEST_CASE("n-gpu-layers above the layer count is every layer, 0 is none", "[analysis][offload]") {
  ScenarioRequest r = request("rtx4090", "llama-3.1-8b", "q4_k_m");
  r.n_gpu_layers = 999;
  const PreparedScenario all = prepare_scenario(catalog(), r);
  CHECK(all.scenario.workload.gpu_layers == 33u);  // 32 blocks + the output layer
  const Analysis on_gpu = analyze(all.scenario);
  CHECK(on_gpu.memory.offloaded_layers == 0);
  CHECK(on_gpu.memory.offloaded_bytes == 0.0);
  CHECK(measure_command(all, on_gpu).find("-ngl 33 ") != std::string::npos);

  // -ngl 0: every block and the output layer on the host; only token_embd (always on the CPU in
  // llama.cpp, and only looked up) is not read.
  r.n_gpu_layers = 0;
  const PreparedScenario none = prepare_scenario(catalog(), r);
  const Analysis host = analyze(none.scenario);
  CHECK(host.memory.offloaded_layers == 32);
  CHECK(host.memory.offloaded_bytes == Approx(none.scenario.weights.total_bytes - none.scenario.weights.token_embedding_bytes));
  CHECK(host.decode.tokens_per_s < 0.25 * on_gpu.decode.tokens_per_s);
}

TEST_CASE("n-gpu-layers that do not fit: the layers that fit, and a warning", "[analysis][offload]") {
  ScenarioRequest r = request("rtx4090", "llama-3.1-70b", "q4_k_m");
  r.n_gpu_layers = 70;
  const Analysis a = analyze(prepare_scenario(catalog(), r).scenario);
  CHECK(a.memory.offloaded_layers == 33);
  CHECK(any_contains(a.warnings, "--n-gpu-layers 70 does not fit"));
  CHECK(any_contains(a.warnings, "at most 47 layers fit"));
}

TEST_CASE("n-gpu-layers: bad input is refused with one clear line", "[analysis][offload]") {
  ScenarioRequest r = request("rtx4090", "llama-3.1-8b", "q4_k_m");
  r.n_gpu_layers = -1;
  CHECK(bad_input_message(r) == "--n-gpu-layers -1 is outside 0..100000");
  r.n_gpu_layers = 100001;
  CHECK(bad_input_message(r) == "--n-gpu-layers 100001 is outside 0..100000");
  r.n_gpu_layers = 20;
  r.pp = 2;
  CHECK(bad_input_message(r) == "--n-gpu-layers is modelled on one GPU; leave out --tp, --pp and --dp-attention");
  ScenarioRequest vllm = request("rtx4090", "llama-3.1-8b", "");
  vllm.engine = "vllm";
  vllm.n_gpu_layers = 20;
  CHECK(bad_input_message(vllm) == "--n-gpu-layers: vLLM keeps no layers in host memory on rtx4090");
  ScenarioRequest mac = request("m3-max", "llama-3.1-8b", "q4_k_m");
  mac.n_gpu_layers = 20;
  CHECK(bad_input_message(mac).find("keeps no layers in host memory on m3-max") != std::string::npos);
}

TEST_CASE("n-gpu-layers: the experts of MoE layers in host memory are read at the CPU's expert share", "[analysis][offload][moe]") {
  ScenarioRequest r = request("rtx4090", "qwen3-30b-a3b", "q4_k_m");
  r.n_gpu_layers = 24;
  const PreparedScenario p = prepare_scenario(catalog(), r);
  const WeightsSummary& w = p.scenario.weights;
  const Analysis a = analyze(p.scenario);
  REQUIRE(a.memory.offloaded_layers == 24);
  // The host layers' share of the routed experts: offloaded bytes x routed / all weights; a decode
  // step touches 8 of 128 experts (1/16) of them. The default host reads 89.6e9 x 0.6 = 53.76e9 B/s,
  // the touched experts at 0.64 of that (the CPU backend's expert_read_share), the rest at the full rate.
  const double host = a.memory.offloaded_bytes;
  const double experts = host * w.routed_expert_bytes / w.total_bytes;
  const double dense = host - experts;
  const double expected = dense / 53.76e9 + experts / 16.0 / (53.76e9 * 0.64);
  CHECK(a.decode.offload_time_s == Approx(expected).epsilon(1e-6));
}
