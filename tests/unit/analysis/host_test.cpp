// SPDX-License-Identifier: MIT
// The cpu class in prepare_scenario: llama.cpp:cpu by default, and --host for offloaded layers.
#include <catch2/catch.hpp>

#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/catalog/catalog.hpp"
#include "fixtures.hpp"

using namespace optadvisor;

namespace {

using fixtures::catalog;
using fixtures::request;

ScenarioRequest rtx4090_70b() {
  ScenarioRequest r = request("rtx4090", "llama-3.1-70b", "q4_k_m");
  return r;
}

std::string bad_input_message(const ScenarioRequest& r) {
  return fixtures::bad_input_message([&] { (void)prepare_scenario(catalog(), r); });
}

}  // namespace

TEST_CASE("a cpu-class device runs llama.cpp's CPU backend by default", "[analysis][cpu]") {
  const EngineChoice choice = choose_engine(catalog(), catalog().resolve_hardware("epyc-9654"), "");
  CHECK(choice.engine->id == "llama.cpp");
  CHECK(choice.backend->name == "cpu");
  CHECK(choice.defaulted);
  // Decode on the CPU reads its own memory: 460.8e9 B/s x the cpu backend's efficiency, no offload.
  ScenarioRequest r = request("epyc-9654", "llama-3.1-8b", "q4_k_m");
  const PreparedScenario p = prepare_scenario(catalog(), r);
  CHECK_FALSE(p.scenario.workload.host_bandwidth_bytes_per_s);
  CHECK(p.scenario.workload.host_id.empty());
}

TEST_CASE("a host CPU (--host) gives offloaded layers the host CPU's bandwidth", "[analysis][cpu]") {
  const double efficiency = catalog().resolve_engine("llama.cpp").host_bandwidth_efficiency;
  REQUIRE(efficiency == Approx(0.6));  // data/engines/llama.cpp.json host_bandwidth_efficiency
  ScenarioRequest r = rtx4090_70b();
  const PreparedScenario base = prepare_scenario(catalog(), r);
  // The default: dual-channel DDR5-5600, 89.6e9 x 0.6 = 53.76e9 B/s.
  CHECK(*base.scenario.workload.host_bandwidth_bytes_per_s == Approx(53.76e9));

  r.host = "epyc-9654";
  const PreparedScenario with_host = prepare_scenario(catalog(), r);
  // 12 x 4800e6 x 8 = 460.8e9 B/s peak x 0.6 = 276.48e9 B/s.
  CHECK(*with_host.scenario.workload.host_bandwidth_bytes_per_s == Approx(276.48e9));
  CHECK(with_host.scenario.workload.host_id == "epyc-9654");
  bool named = false;
  for (const auto& n : with_host.notes) named = named || n.find("host epyc-9654") != std::string::npos;
  CHECK(named);

  // The faster host makes the partially offloaded decode faster.
  const Analysis a0 = analyze(base.scenario);
  const Analysis a1 = analyze(with_host.scenario);
  REQUIRE(a0.memory.offloaded_layers > 0);
  CHECK(a1.memory.offloaded_layers == a0.memory.offloaded_layers);
  CHECK(a1.decode.tokens_per_s > 1.5 * a0.decode.tokens_per_s);

  // --host-bandwidth still overrides; the host is still named.
  r.host_bandwidth_bytes_per_s = 100e9;
  const PreparedScenario overridden = prepare_scenario(catalog(), r);
  CHECK(*overridden.scenario.workload.host_bandwidth_bytes_per_s == 100e9);
  CHECK(overridden.scenario.workload.host_id == "epyc-9654");
}

TEST_CASE("the host (--host) must be a CPU profile", "[analysis][cpu]") {
  ScenarioRequest r = rtx4090_70b();
  r.host = "rtx3090";
  CHECK(bad_input_message(r) == "--host 'rtx3090' is a consumer-gpu profile, not a CPU");
}

TEST_CASE("host-resident layers stream to the GPU over PCIe for prompt batches and run on the host CPU below 32 tokens",
          "[analysis][cpu][offload]") {
  const EngineProfile& engine = catalog().resolve_engine("llama.cpp");
  REQUIRE(engine.host_weights_streamed_min_tokens == 32);     // ggml-cuda offload_op: min_batch_size = 32
  REQUIRE(engine.host_to_device_fraction == Approx(0.889));  // 256-byte PCIe payloads, 8/9 of the link
  ScenarioRequest r = rtx4090_70b();
  r.host = "epyc-9654";
  r.prompt_tokens = 512;
  const PreparedScenario p = prepare_scenario(catalog(), r);
  // The host's matrix rate: epyc-9654 int8 29.4912e12 x the CPU backend's 0.3 = 8.84736e12 FLOP/s.
  CHECK(*p.scenario.workload.host_compute_flops_per_s == Approx(8.84736e12));
  const Analysis a = analyze(p.scenario);
  REQUIRE(a.memory.offloaded_layers == 33);
  const double host_bytes = a.memory.offloaded_bytes;
  // RTX 4090: PCIe 4.0 x16, 32e9 B/s per direction x 0.889 = 28.448e9 B/s.
  CHECK(a.factors.host_to_device_bytes_per_s == Approx(28.448e9));

  // Prefill: one 512-token ubatch (>= 32), so the 33 host layers are copied to the GPU once.
  CHECK(a.prefill.host_weights_streamed);
  CHECK(a.prefill.offload_time_s == Approx(host_bytes / 28.448e9));
  CHECK(a.prefill.bound == Bound::kInterconnect);

  // Decode, one token a step: the host reads its layers at 460.8e9 x 0.6 = 276.48e9 B/s, which
  // takes longer than their math (2 x 70.6e9 x 33/80 = 58 GFLOP at 8.85 TFLOP/s = 6.6 ms vs 63 ms).
  CHECK_FALSE(a.decode.host_weights_streamed);
  CHECK(a.decode.offload_time_s == Approx(host_bytes / 276.48e9));

  // A 16-token prompt stays under the threshold, so the host multiplies it: its share of
  // 2 x (the blocks' params x 16 + the output layer's x 1, the last token's logits) FLOPs at
  // 8.84736e12 FLOP/s, longer than reading the bytes. Llama-3.1-70B's embedding and output layer
  // are 128256 x 8192 = 1.0507e9 parameters each, left out of the per-token count.
  r.prompt_tokens = 16;
  const PreparedScenario small = prepare_scenario(catalog(), r);
  const Analysis b = analyze(small.scenario);
  const WeightsSummary& w = small.scenario.weights;
  REQUIRE(w.output_head_params == Approx(128256.0 * 8192));
  REQUIRE(w.embedding_lookup_params == Approx(128256.0 * 8192));
  REQUIRE(w.per_token_dense_params() == Approx(w.active_params - 2 * 128256.0 * 8192));
  const double host_flops = 2.0 * (w.per_token_dense_params() * 16 + w.output_head_params) * (host_bytes / w.total_bytes);
  REQUIRE(host_flops / 8.84736e12 > host_bytes / 276.48e9);
  CHECK_FALSE(b.prefill.host_weights_streamed);
  CHECK(b.prefill.offload_time_s == Approx(host_flops / 8.84736e12));
}
