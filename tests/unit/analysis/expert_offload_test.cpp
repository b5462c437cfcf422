// SPDX-License-Identifier: MIT
// Expert offload (llama.cpp --n-cpu-moe N / --cpu-moe): the routed experts of the first N layers
// stay in host memory and run on the host CPU; the device holds and runs everything else.
#include <catch2/catch.hpp>

#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/analysis_json.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/catalog/catalog.hpp"
#include "fixtures.hpp"

using namespace optadvisor;

namespace {

using fixtures::catalog;
using fixtures::request;

/// Qwen3-30B-A3B Q4_K_M on an RTX 4090 with llama.cpp, the host a Ryzen 9 9950X.
ScenarioRequest qwen3_on_4090() {
  ScenarioRequest r = request("rtx4090", "qwen3-30b-a3b", "q4_k_m", "llama.cpp:cuda");
  r.host = "ryzen-9-9950x";
  return r;
}

std::string bad_input_message(const ScenarioRequest& r) {
  return fixtures::bad_input_message([&] { (void)prepare_scenario(catalog(), r); });
}

}  // namespace

TEST_CASE("n-cpu-moe: the experts of the first N layers are in host memory and cost a host roofline per step",
          "[analysis][offload][moe]") {
  ScenarioRequest r = qwen3_on_4090();
  const PreparedScenario all_on_device = prepare_scenario(catalog(), r);
  r.n_cpu_moe = 20;
  const PreparedScenario ps = prepare_scenario(catalog(), r);
  const Workload& w = ps.scenario.workload;
  const WeightsSummary& ws = ps.scenario.weights;

  // Qwen3-30B-A3B: 48 MoE layers of 128 experts, 8 per token, each expert 3 x 2048 x 768 weights:
  // routed active params = 48 x 8 x 3 x 2048 x 768 = 1,811,939,328.
  REQUIRE(ws.routed_active_params == Approx(1811939328.0));
  // All 128 x 48 experts in the q4_k_m mix (q4_K gate/up, q6_K for some down projections): 17.553 GB.
  REQUIRE(ws.routed_expert_bytes == Approx(17553162240.0).epsilon(1e-6));

  // Host figures: the Ryzen 9 9950X's 2 x 5600e6 x 8 = 89.6e9 B/s x 0.6 (llama.cpp host efficiency)
  // = 53.76e9 B/s; its int8 peak 16 x 4.3e9 x 256 = 17.6128e12 x 0.3 (llama.cpp:cpu efficiency) = 5.28384e12.
  CHECK(*w.host_bandwidth_bytes_per_s == Approx(53.76e9));
  CHECK(*w.host_compute_flops_per_s == Approx(5.28384e12));
  CHECK(w.cpu_moe_layers == 20);

  const Analysis base = analyze(all_on_device.scenario);
  const Analysis a = analyze(ps.scenario);

  // Memory: 20 of the 48 MoE layers' experts = 20/48 x 17,553,162,240 = 7,313,817,600 B on the host;
  // the device holds the rest.
  CHECK(a.memory.host_expert_layers == 20);
  CHECK(a.memory.host_expert_bytes == Approx(7313817600.0).epsilon(1e-6));
  CHECK(base.memory.weights_bytes - a.memory.weights_bytes == Approx(7313817600.0).epsilon(1e-6));
  CHECK(a.memory.offloaded_layers == 0);  // no whole layers leave the device (-ngl stays 99)

  // Decode step, one token: it touches 8 of 128 experts per layer, 1/16 of those bytes, read at
  // the CPU backend's expert_read_share (0.64) of the host bandwidth: 53.76e9 x 0.64 = 34.4064e9 B/s:
  //   host bytes  7,313,817,600 / 16 = 457,113,600 B at 34.4064e9 B/s = 13.2857 ms
  //   host FLOPs  2 x 1,811,939,328 x 20/48 = 1,509,949,440 at 5.28384e12 = 0.2858 ms
  // so the host part is bandwidth bound: 13.2857 ms per step.
  const double host_step = 457113600.0 / 34.4064e9;
  CHECK(host_step == Approx(13.2857e-3).epsilon(1e-4));
  CHECK(a.decode.offload_time_s == Approx(host_step).epsilon(1e-6));
  // The device no longer reads those bytes: 457,113,600 B at its 1008e9 x 0.84 = 846.72e9 B/s
  // = 0.5399 ms saved (decode on the GPU is bound by weight reads; CUDA reads experts at the full
  // rate). The step grows by 13.2857 - 0.5399 = 12.7458 ms.
  const double device_saved = 457113600.0 / 846.72e9;
  CHECK(a.decode.time_s - base.decode.time_s == Approx(host_step - device_saved).epsilon(1e-3));
  CHECK(a.decode.time_s - base.decode.time_s == Approx(12.7458e-3).epsilon(1e-3));

  // Text and JSON say where the experts are and which host figures were used.
  bool said = false;
  for (const auto& n : a.assumptions) said = said || n.find("routed experts of 20 of 48 layers") != std::string::npos;
  CHECK(said);
  const nlohmann::json j = estimate_json(ps, a);
  CHECK(j["scenario"]["expert_offload"]["layers"] == 20);
  CHECK(j["scenario"]["expert_offload"]["host_id"] == "ryzen-9-9950x");
  CHECK(j["scenario"]["expert_offload"]["compute_flops_per_s"].get<double>() == Approx(5.28384e12));
}

TEST_CASE("cpu-moe keeps every layer's experts on the host, without --host the engine's default host", "[analysis][offload][moe]") {
  ScenarioRequest r = qwen3_on_4090();
  r.host.clear();
  r.cpu_moe = true;
  const PreparedScenario ps = prepare_scenario(catalog(), r);
  // The default host: data/engines/llama.cpp.json host_compute_flops_per_s 17.6128e12 x 0.3 (cpu backend).
  CHECK(*ps.scenario.workload.host_compute_flops_per_s == Approx(5.28384e12));
  // and its bandwidth 89.6e9 x 0.6 (llama.cpp host efficiency) = 53.76e9 B/s.
  CHECK(*ps.scenario.workload.host_bandwidth_bytes_per_s == Approx(53.76e9));
  const Analysis a = analyze(ps.scenario);
  CHECK(a.memory.host_expert_layers == 48);
  CHECK(a.memory.host_expert_bytes == Approx(ps.scenario.weights.routed_expert_bytes));
  // Decode: 17,553,162,240 / 16 = 1,097,072,640 B at 53.76e9 x 0.64 (the CPU backend's
  // expert_read_share) = 34.4064e9 B/s = 31.885 ms on the host.
  CHECK(a.decode.offload_time_s == Approx(31.885e-3).epsilon(1e-3));
}

TEST_CASE("expert offload: bad input is refused with one clear line", "[analysis][offload][moe]") {
  ScenarioRequest r = qwen3_on_4090();
  r.n_cpu_moe = 4;
  r.cpu_moe = true;
  CHECK(bad_input_message(r).find("exclusive") != std::string::npos);
  r.cpu_moe = false;
  r.n_cpu_moe = 49;
  CHECK(bad_input_message(r).find("outside 1..48") != std::string::npos);
  r.n_cpu_moe = 0;
  CHECK(bad_input_message(r).find("outside 1..48") != std::string::npos);
  r.n_cpu_moe = 4;
  r.engine = "vllm";
  r.quant = "bf16";
  CHECK(bad_input_message(r).find("keeps no experts in host memory") != std::string::npos);
  r = qwen3_on_4090();
  r.model.preset = "llama-3.1-8b";
  r.cpu_moe = true;
  CHECK(bad_input_message(r).find("has no routed experts") != std::string::npos);
}
