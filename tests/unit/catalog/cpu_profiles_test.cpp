// SPDX-License-Identifier: MIT
// The cpu class: a few shipped CPU figures worked by hand, so a unit slip fails here.
#include <catch2/catch.hpp>

#include "optadvisor/catalog/catalog.hpp"
#include "fixtures.hpp"

using namespace optadvisor;

namespace {

const Catalog& shipped() { return fixtures::catalog(); }

double cpu_rate(const std::string& id, const std::string& dtype) {
  const auto& rates = shipped().resolve_hardware(id).cpu_flops_per_s;
  auto it = rates.find(dtype);
  return it == rates.end() ? -1 : it->second;
}

}  // namespace

TEST_CASE("cpu profiles: peak bandwidth is channels x MT/s x 8 bytes", "[hardware][cpu]") {
  // EPYC 9654: 12 x 4800e6 x 8 = 460.8e9 B/s.
  CHECK(shipped().resolve_hardware("epyc-9654").memory_bandwidth_bytes_per_s == Approx(460.8e9).epsilon(1e-9));
  // Xeon Platinum 8480+: 8 x 4800e6 x 8 = 307.2e9 B/s.
  CHECK(shipped().resolve_hardware("xeon-8480").memory_bandwidth_bytes_per_s == Approx(307.2e9).epsilon(1e-9));
  // Ryzen 9 9950X: 2 x 5600e6 x 8 = 89.6e9 B/s.
  CHECK(shipped().resolve_hardware("ryzen-9-9950x").memory_bandwidth_bytes_per_s == Approx(89.6e9).epsilon(1e-9));
  // Threadripper PRO 5975WX: 8 x 3200e6 x 8 = 204.8e9 B/s (DDR4).
  CHECK(shipped().resolve_hardware("threadripper-pro-5975wx").memory_bandwidth_bytes_per_s == Approx(204.8e9).epsilon(1e-9));
}

TEST_CASE("cpu profiles: matrix rates are cores x clock x FLOP per cycle", "[hardware][cpu]") {
  // EPYC 9654 (Zen 4, 2 x 256-bit FMA): 96 x 2.4e9 x 32 = 7.3728e12 FP32; VNNI 128/cycle: 29.4912e12 INT8.
  CHECK(cpu_rate("epyc-9654", "fp32") == Approx(7.3728e12).epsilon(1e-6));
  CHECK(cpu_rate("epyc-9654", "int8") == Approx(29.4912e12).epsilon(1e-6));
  // EPYC 9755 (Zen 5, 2 x 512-bit FMA): 128 x 2.7e9 x 64 = 22.1184e12 FP32.
  CHECK(cpu_rate("epyc-9755", "fp32") == Approx(22.1184e12).epsilon(1e-6));
  // Core Ultra 9 285K: 8 x 3.7e9 x 32 + 16 x 3.2e9 x 32 = 0.9472e12 + 1.6384e12 = 2.5856e12 FP32.
  CHECK(cpu_rate("core-ultra-9-285k", "fp32") == Approx(2.5856e12).epsilon(1e-6));
  // AmpereOne A192: 192 x 3.2e9 x 16 = 9.8304e12 FP32; native FP16 twice that.
  CHECK(cpu_rate("ampereone-a192", "fp16") == Approx(19.6608e12).epsilon(1e-6));
}

TEST_CASE("cpu profiles: one socket's memory and cores, llama.cpp:cpu listed first", "[hardware][cpu]") {
  const HardwareProfile& epyc = shipped().resolve_hardware("epyc-9654");
  CHECK(epyc.device_class == DeviceClass::kCpu);
  CHECK(epyc.compute_units.value_or(0) == 96);
  CHECK(epyc.memory_capacity_bytes == 768.0 * 1024 * 1024 * 1024);  // 12 x 64 GiB RDIMMs
  CHECK(epyc.unified_memory);                                       // the CPU computes in its own memory: nothing is offloaded
  REQUIRE_FALSE(epyc.engines.empty());
  CHECK(epyc.engines.front() == "llama.cpp:cpu");
}
