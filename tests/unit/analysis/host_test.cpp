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
  REQUIRE(efficiency == Approx(0.7));  // data/engines/llama.cpp.json host_bandwidth_efficiency
  ScenarioRequest r = rtx4090_70b();
  const PreparedScenario base = prepare_scenario(catalog(), r);
  // The default: dual-channel DDR5-5600, 89.6e9 x 0.7 = 62.72e9 B/s.
  CHECK(*base.scenario.workload.host_bandwidth_bytes_per_s == Approx(62.72e9));

  r.host = "epyc-9654";
  const PreparedScenario with_host = prepare_scenario(catalog(), r);
  // 12 x 4800e6 x 8 = 460.8e9 B/s peak x 0.7 = 322.56e9 B/s.
  CHECK(*with_host.scenario.workload.host_bandwidth_bytes_per_s == Approx(322.56e9));
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
