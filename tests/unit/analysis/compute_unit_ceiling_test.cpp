// SPDX-License-Identifier: MIT
// Engine data that changes which hardware limit binds: llama.cpp CUDA's per-SM read ceiling (HBM
// GPUs reach less of their peak bandwidth than GeForce cards), vLLM's and SGLang's on Hopper (the
// H20's 78 SMs), the Vulkan backend's vector-only devices (Intel Xe1, where its kernels leave the
// XMX engines idle), llama.cpp CUDA's DP4A path on Pascal (no tensor cores), its cuBLAS FP16 path
// for quantized weights on Volta (FP16 tensor cores, no int8 ones) and its MMQ kernels on Turing
// (int8 tensor cores without Ampere's m16n8k32 MMA).
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

TEST_CASE("vLLM and SGLang read at most 24 GB/s per Hopper SM, which binds on an H20 and an H200, not an H100", "[analysis][bandwidth]") {
  // data/engines/sglang.json: the Hopper device path's 24e9 B/s per SM. H20: 78 x 24e9 = 1.872e12
  // B/s, below 4.0e12 x 0.82 = 3.28e12; its share of peak 1.872 / 4.0 = 0.468.
  const Factors h20 = factors_of("h20", "sglang");
  CHECK(h20.compute_unit_bandwidth_ceiling_bytes_per_s == Approx(1.872e12));
  CHECK(h20.achievable_bandwidth_bytes_per_s == Approx(1.872e12));
  CHECK(h20.decode_bandwidth_efficiency == Approx(0.468));
  // H200 SXM: 132 x 24e9 = 3.168e12 B/s, below 4.8e12 x 0.80 = 3.84e12 (vLLM).
  CHECK(factors_of("h200-sxm", "vllm").achievable_bandwidth_bytes_per_s == Approx(3.168e12));
  // H100 SXM: 3.168e12 is above 3.35e12 x 0.82 = 2.747e12, so peak x efficiency stands.
  const Factors h100 = factors_of("h100-sxm", "sglang");
  CHECK(h100.compute_unit_bandwidth_ceiling_bytes_per_s == 0);
  CHECK(h100.achievable_bandwidth_bytes_per_s == Approx(3.35e12 * 0.82));
  // The path is Hopper's: a B200 (Blackwell, 148 SMs; 148 x 24e9 = 3.55e12 would bind) has none.
  CHECK(factors_of("b200", "sglang").compute_unit_bandwidth_ceiling_bytes_per_s == 0);
  // The backend has no ceiling of its own: bytes_per_s_per_compute_unit_on falls back to 0 off Hopper.
  const BackendProfile& b = *prepare_scenario(catalog(), request("h20", "llama-3.1-8b", "f16", "sglang")).scenario.engine.backend;
  CHECK(b.bytes_per_s_per_compute_unit_on("nvidia", "Hopper (GH100, sm_90)") == Approx(24e9));
  CHECK(b.bytes_per_s_per_compute_unit_on("nvidia", "Ampere (GA100, sm_80)") == 0);
  CHECK(b.bytes_per_s_per_compute_unit_on("amd", "Hopper") == 0);  // the vendor must match too
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

TEST_CASE("llama.cpp CUDA runs a Pascal card's quantized GEMMs on DP4A at their own efficiency", "[analysis][compute]") {
  auto quantized = [](const char* hw) {
    return analyze(prepare_scenario(catalog(), request(hw, "llama-3.1-8b", "q4_0", "llama.cpp:cuda")).scenario).factors;
  };
  // Tesla P40 (sm_61): the int8 (DP4A) peak 47 TOP/s x the sm_61 path's 0.32 (x 1.0 for Q4_0) = 15.04 TOP/s.
  const Factors p40 = quantized("tesla-p40");
  CHECK(p40.compute_dtype == "int8");
  CHECK(p40.prefill_compute_efficiency == Approx(0.32));
  CHECK(p40.achievable_compute_flops_per_s == Approx(15.04e12));
  // GTX 1080 Ti: 3,584 cores x 2 x 1.582 GHz = 11.339776 TFLOP/s FP32, DP4A 4x = 45.359104 TOP/s; x 0.32 = 14.5149 TOP/s.
  CHECK(quantized("gtx1080ti").achievable_compute_flops_per_s == Approx(45.359104e12 * 0.32));
  // Turing has int8 tensor cores: its own path (below), not DP4A.
  CHECK(quantized("rtx2080").prefill_compute_efficiency != Approx(0.32));
}

TEST_CASE("llama.cpp CUDA runs a Turing card's quantized GEMMs at a smaller share of the int8 peak, 16-bit weights and old builds keep theirs",
          "[analysis][compute]") {
  auto on = [](const char* hw, const char* quant, const char* engine) {
    return analyze(prepare_scenario(catalog(), request(hw, "llama-3.1-8b", quant, engine)).scenario).factors;
  };
  // RTX 2080 (sm_75), Q4_0: the int8 tensor peak 161.09568 TOP/s x the sm_75 path's 0.175 (x 1.0
  // for Q4_0) = 28.19 TOP/s, where Ampere and newer take the backend's 0.23.
  const Factors q = on("rtx2080", "q4_0", "llama.cpp:cuda");
  CHECK(q.compute_dtype == "int8");
  CHECK(q.prefill_compute_efficiency == Approx(0.175));
  CHECK(q.achievable_compute_flops_per_s == Approx(161.09568e12 * 0.175));
  CHECK(on("rtx3090", "q4_0", "llama.cpp:cuda").prefill_compute_efficiency == Approx(0.23));
  // F16 on an RTX 2080 Ti: FP16 cuBLAS as everywhere, the backend's 0.23 x the f16 multiplier 2.04 of
  // the 107.58144 TFLOP/s FP16-accumulate tensor peak = 50.48 TFLOP/s.
  const Factors f = on("rtx2080ti", "f16", "llama.cpp:cuda");
  CHECK(f.prefill_compute_efficiency == Approx(0.23 * 2.04));
  CHECK(f.achievable_compute_flops_per_s == Approx(107.58144e12 * 0.23 * 2.04));
  // Q4_0 in b3000, before b3216's int8 MMQ kernels: that build dequantizes for FP16 cuBLAS at its
  // 0.37, 107.58144 x 0.37 = 39.81 TFLOP/s; the Turing path (0.175 of the same FP16 peak would be
  // 18.83) describes the newest kernels only.
  const Factors old = on("rtx2080ti", "q4_0", "llama.cpp:cuda@b3000");
  CHECK(old.compute_dtype == "fp16 (FP16 accumulate)");
  CHECK(old.prefill_compute_efficiency == Approx(0.37));
  CHECK(old.achievable_compute_flops_per_s == Approx(107.58144e12 * 0.37));
}

TEST_CASE("llama.cpp CUDA dequantizes a Volta card's quantized weights for FP16 cuBLAS, 16-bit weights keep the backend's figure",
          "[analysis][compute]") {
  auto on_titan_v = [](const char* quant) {
    return analyze(prepare_scenario(catalog(), request("titan-v", "llama-3.1-8b", quant, "llama.cpp:cuda")).scenario).factors;
  };
  // Q4_0: the sm_70 path's 0.37 (the pre-b3216 dequantize + cuBLAS figure) x 1.0 of the 110 TFLOP/s
  // FP16 tensor peak = 40.7 TFLOP/s, not 0.23 of it.
  const Factors q = on_titan_v("q4_0");
  CHECK(q.compute_dtype == "fp16");
  CHECK(q.prefill_compute_efficiency == Approx(0.37));
  CHECK(q.achievable_compute_flops_per_s == Approx(40.7e12));
  // F16: the backend's 0.23 x the f16 multiplier 2.04 = 0.4692 of the same peak.
  const Factors f = on_titan_v("f16");
  CHECK(f.prefill_compute_efficiency == Approx(0.23 * 2.04));
  CHECK(f.achievable_compute_flops_per_s == Approx(110e12 * 0.23 * 2.04));
}
