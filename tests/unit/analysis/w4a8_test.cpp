// SPDX-License-Identifier: MIT
// W4A8: INT4 weights read as W4A16 reads them, GEMMs on the FP8 tensor cores where the device has
// them, and a weight-only fallback that says so where it does not.
#include <catch2/catch.hpp>

#include <algorithm>

#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/catalog/catalog.hpp"
#include "fixtures.hpp"

using namespace optadvisor;
using fixtures::catalog;

TEST_CASE("W4A8 on TensorRT-LLM: W4A16's bytes, FP8 GEMMs", "[analysis][quant][w4a8]") {
  ScenarioRequest r = fixtures::request("h100", "llama-3.1-8b", "w4a8");
  r.engine = "tensorrt-llm";
  const PreparedScenario p = prepare_scenario(catalog(), r);
  // Llama-3.1-8B's block linears: 32 x (2 x 4096^2 + 2 x 4096 x 1024 + 3 x 4096 x 14336) = 6.98e9
  // weights at 4 + 8/128 bits, 32 bits per output channel (32 x 43,008 rows), and the bf16
  // embedding and lm_head (2 x 128,256 x 4096 x 2 B) with the norms:
  // 6,979,321,856 x 4.0625 / 8 + 32 x 43,008 x 4 + 2,101,346,304 + norms = 5.6516 GB.
  CHECK(static_cast<double>(p.weights.weights_bytes) == Approx(5.6516e9).epsilon(1e-4));
  const Analysis a = analyze(p.scenario);
  CHECK(a.factors.compute_dtype == "fp8");
  // awq-int4 has the same 4-bit bytes but BF16 GEMMs: W4A8 prefills faster at the same decode rate.
  r.quant = "awq-int4";
  const Analysis awq = analyze(prepare_scenario(catalog(), r).scenario);
  CHECK(awq.factors.compute_dtype == "bf16");
  CHECK(a.prefill.time_s < awq.prefill.time_s);
  CHECK(a.decode.time_s == Approx(awq.decode.time_s).epsilon(0.03));
}

TEST_CASE("a format needing tensor cores the device lacks is computed weight-only and says so", "[analysis][quant][w4a8]") {
  ScenarioRequest r = fixtures::request("a100-sxm-80gb", "llama-3.1-8b", "w4a8");
  r.engine = "tensorrt-llm";
  const PreparedScenario p = prepare_scenario(catalog(), r);
  CHECK(analyze(p.scenario).factors.compute_dtype == "bf16");
  CHECK(std::find(p.notes.begin(), p.notes.end(),
                  "NVIDIA A100 80GB SXM4 has no fp8 tensor cores: w4a8 is computed weight-only (its bytes, 16-bit GEMMs)") != p.notes.end());
  // vLLM's W4A8 is Hopper-only CUTLASS: not among its formats, so it is refused with the ones it runs.
  r.hardware = "h100";
  r.engine = "vllm";
  CHECK(fixtures::bad_input_message([&] { (void)prepare_scenario(catalog(), r); }) == "engine 'vllm' does not run w4a8 weights");
}
