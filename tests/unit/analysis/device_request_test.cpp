// SPDX-License-Identifier: MIT
// --memory and --link: prepare_scenario turns them into the device the analysis sees.
#include <catch2/catch.hpp>

#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/catalog/catalog.hpp"
#include "fixtures.hpp"

using namespace optadvisor;

namespace {

using fixtures::analyze_request;
using fixtures::catalog;
using fixtures::request;

std::string all_notes(const PreparedScenario& p) {
  std::string out;
  for (const auto& n : p.notes) out += n + "\n";
  return out;
}

std::string bad_input_message(const ScenarioRequest& r) {
  return fixtures::bad_input_message([&] { (void)prepare_scenario(catalog(), r); });
}

}  // namespace

TEST_CASE("a --memory size the part is sold in sets the capacity, the usable share follows", "[analysis][memory]") {
  ScenarioRequest r = request("m4-max-40c", "llama-3.1-8b");
  const PreparedScenario full = prepare_scenario(catalog(), r);
  CHECK(full.scenario.hardware->memory_capacity_bytes == Approx(128e9));
  CHECK(all_notes(full).find("memory: 128 GB (m4-max-40c is sold with 48, 64 or 128 GB; give yours with --memory)") != std::string::npos);

  r.memory = "64GB";
  const PreparedScenario p = prepare_scenario(catalog(), r);
  CHECK(p.scenario.hardware->memory_capacity_bytes == Approx(64e9));
  CHECK(all_notes(p).find("memory: 64 GB (--memory; m4-max-40c is sold with 48, 64 or 128 GB)") != std::string::npos);
  // The catalog's profile is untouched; the scenario owns the variant.
  CHECK(catalog().resolve_hardware("m4-max-40c").memory_capacity_bytes == Approx(128e9));
  const Analysis a = analyze(p.scenario);
  // macOS's wired limit is a share of hw.memsize: a "64GB" Mac has 64 GiB, so 48 GiB usable.
  CHECK(a.memory.capacity_bytes == Approx(48.0 * 1073741824));                       // 51.5e9
  CHECK(analyze(full.scenario).memory.capacity_bytes == Approx(96.0 * 1073741824));  // 128 GiB x 0.75 = 103.08e9
  // A copy of the scenario keeps the variant alive.
  Scenario copy = p.scenario;
  CHECK(copy.hardware->memory_capacity_bytes == Approx(64e9));

  r.memory = "64GiB";  // Apple's "64GB" is 64 GiB of DRAM; it names the same option
  CHECK(prepare_scenario(catalog(), r).scenario.hardware->memory_capacity_bytes == Approx(64e9));
  r.memory = "0.5TB";
  r.hardware = "m3-ultra-80c";
  CHECK(prepare_scenario(catalog(), r).scenario.hardware->memory_capacity_bytes == Approx(512e9));
}

TEST_CASE("a memory size the part is not sold in is bad input naming the sizes", "[analysis][memory]") {
  ScenarioRequest r = request("m4-max-40c", "llama-3.1-8b");
  r.memory = "100GB";
  CHECK(bad_input_message(r) == "--memory 100GB: m4-max-40c is sold with 48, 64 or 128 GB");
  r.memory = "lots";
  CHECK(bad_input_message(r) == "--memory 'lots' is not a memory size");
  r.hardware = "rtx4090";
  r.memory = "48GB";
  CHECK(bad_input_message(r) == "--memory 48GB: rtx4090 is sold with 24 GB only");
}

TEST_CASE("two RTX 3090s talk over PCIe unless --link nvlink says the bridge is fitted", "[analysis][link]") {
  ScenarioRequest r = request("rtx3090", "llama-3.1-8b", "", "vllm");
  r.tp = 2;
  const PreparedScenario pcie = prepare_scenario(catalog(), r);
  CHECK(analyze(pcie.scenario).factors.link_bandwidth_bytes_per_s == Approx(32e9));  // PCIe 4.0 x16, per direction
  CHECK(all_notes(pcie).find("link: pcie4 x16 (the NVLink 3 bridge (2 GPUs) is sold separately") != std::string::npos);
  r.link = "nvlink";
  const Analysis bridged = analyze_request(r);
  CHECK(bridged.factors.link_bandwidth_bytes_per_s == Approx(56.25e9));  // 112.5 GB/s bidirectional / 2
  CHECK(bridged.decode.interconnect_time_s < analyze(pcie.scenario).decode.interconnect_time_s);
  r.link = "pcie";
  r.hardware = "h100-sxm";
  CHECK(analyze_request(r).factors.link_bandwidth_bytes_per_s ==
        Approx(catalog().resolve_hardware("h100-sxm").pcie->per_direction_bytes_per_s()));
  r.link = "nvlink";
  r.hardware = "rtx4090";
  CHECK(bad_input_message(r) == "--link nvlink: rtx4090 has no NVLink connector");
}

TEST_CASE("a --memory naming the only size a part is sold in is accepted, and says so", "[analysis][memory]") {
  ScenarioRequest r = fixtures::request("rtx4090", "llama-3.1-8b", "q4_k_m");
  r.memory = "24GB";
  const PreparedScenario p = prepare_scenario(catalog(), r);
  CHECK(p.scenario.hardware->memory_capacity_bytes == catalog().resolve_hardware("rtx4090").memory_capacity_bytes);
  CHECK(all_notes(p).find("memory: 24 GB (--memory; rtx4090 is sold with that size only)") != std::string::npos);
  // 8% either way still names it (24 GiB = 25.8 GB is 7.4% over); 26GB (8.3%) does not.
  r.memory = "24GiB";
  CHECK_NOTHROW(prepare_scenario(catalog(), r));
  r.memory = "26GB";
  CHECK(bad_input_message(r) == "--memory 26GB: rtx4090 is sold with 24 GB only");
}
