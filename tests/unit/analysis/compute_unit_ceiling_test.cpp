// SPDX-License-Identifier: MIT
// Engine data that changes which hardware limit binds: llama.cpp CUDA's per-SM read ceiling (HBM
// GPUs reach less of their peak bandwidth than GeForce cards) and the Vulkan backend's vector-only
// devices (Intel Xe1, where its kernels leave the XMX engines idle).
#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/prepare.hpp"

using namespace optadvisor;
using fixtures::catalog;
using fixtures::request;

namespace {

Factors factors_of(const char* hw, const char* engine) {
  const PreparedScenario ps = prepare_scenario(catalog(), request(hw, "llama-3.1-8b", "f16", engine));
  return analyze(ps.scenario).factors;
}

}  // namespace

TEST_CASE("llama.cpp CUDA reads at most 9 GB/s per SM, which binds on an A100 but not an RTX 4090", "[analysis][bandwidth]") {
  // A100 SXM 80GB: 108 SMs x 9e9 B/s = 972 GB/s, below 2039 GB/s x 0.84 x 1.07 (the f16 decode
  // multiplier) = 1832.7 GB/s; its share of peak 972 / 2039.
  const Factors a100 = factors_of("a100-sxm-80gb", "llama.cpp:cuda");
  CHECK(a100.compute_unit_bandwidth_ceiling_bytes_per_s == Approx(972e9));
  CHECK(a100.achievable_bandwidth_bytes_per_s == Approx(972e9));
  CHECK(a100.decode_bandwidth_efficiency == Approx(972.0 / 2039.0).epsilon(1e-3));
  // RTX 4090: 128 x 9e9 = 1152 GB/s is above 1008 GB/s x 0.84 x 1.07 = 906.0 GB/s, so peak x efficiency stands.
  const Factors rtx = factors_of("rtx4090", "llama.cpp:cuda");
  CHECK(rtx.compute_unit_bandwidth_ceiling_bytes_per_s == 0);
  CHECK(rtx.achievable_bandwidth_bytes_per_s == Approx(1008e9 * 0.84 * 1.07));
  // Another engine on the A100 has no such ceiling.
  CHECK(factors_of("a100-sxm-80gb", "vllm").compute_unit_bandwidth_ceiling_bytes_per_s == 0);
}

TEST_CASE("Vulkan runs an Arc A770's GEMMs on its vector ALUs, an Arc B580's on its XMX engines", "[analysis][compute]") {
  // Xe-HPG (Xe1): the fp32 vector peak, 17.2 TFLOP/s, not the 138 TFLOP/s XMX fp16 rate.
  const Factors a770 = factors_of("arc-a770", "llama.cpp:vulkan");
  CHECK(a770.compute_dtype == "fp32");
  CHECK(a770.peak_compute_flops_per_s == Approx(17.2e12));
  // Xe2-HPG: llama.cpp enables cooperative matrices there, so the fp16 matrix peak.
  const Factors b580 = factors_of("arc-b580", "llama.cpp:vulkan");
  CHECK(b580.compute_dtype == "fp16");
  CHECK(b580.peak_compute_flops_per_s == Approx(109e12));
}
