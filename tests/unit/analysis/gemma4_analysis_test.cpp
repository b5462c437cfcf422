// SPDX-License-Identifier: MIT
// Gemma 4 in the analysis: the cache and the attention FLOPs follow each layer kind (sliding layers
// of 256-wide heads capped at the 1,024-token window, full layers of 512-wide heads over the whole
// context), and tensor parallelism splits each kind's KV heads by its own count. Worked by hand.
#include <catch2/catch.hpp>

#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/catalog/catalog.hpp"
#include "fixtures.hpp"

using namespace optadvisor;

namespace {

using fixtures::HandWeights;
using fixtures::plain_scenario;
using fixtures::PlainEngine;

}  // namespace

TEST_CASE("Gemma 4: KV bytes per layer kind, each kind's KV heads split over tensor parallelism", "[analysis][kv][gemma4]") {
  const auto hw = fixtures::round_device(1e12, 1e15, 200e9);
  const PlainEngine e(1.0, 1.0);
  Scenario s = plain_scenario(hw, "gemma-4-26b-a4b", e);
  // 512 tokens (inside the window): (25 x 2 x 8 x 256 + 5 x 2 x 2 x 512) x 512 x 2 bytes = 115,343,360.
  CHECK(kv_bytes_per_sequence(s, 512) == Approx(115343360.0));
  // 8,192 tokens: sliding 102,400 x 1,024 x 2 = 209,715,200; full 10,240 x 8,192 x 2 = 167,772,160.
  CHECK(kv_bytes_per_sequence(s, 8192) == Approx(377487360.0));
  // TP 4: the sliding layers' 8 KV heads split 4 ways (52,428,800), the full layers' 2 only 2 ways, each
  // rank keeping one (83,886,080).
  s.workload.tp = 4;
  CHECK(kv_bytes_per_sequence(s, 8192) == Approx(136314880.0));
}

TEST_CASE("Gemma 4: prefill attention at each layer kind's head width and window", "[analysis][prefill][gemma4]") {
  // 100 TFLOP/s at 50% = 50 TFLOP/s; bandwidth so high that weight reads vanish.
  const auto hw = fixtures::round_device(1e18, 100e12, 200e9);
  const PlainEngine e(1.0, 0.5);
  const Scenario s = plain_scenario(hw, "gemma-4-31b", e, HandWeights{2e9, 1e9, 1e9}, 2048, 0);
  // Weights: 2 x 1e9 x 2,048 = 4.096e12. Full layers: 10 x 2 x 32 heads x (512 + 512) x 2,048^2 / 2
  // = 1.37438953472e12. Sliding layers, window 1,024: 50 x 2 x 32 x (256 + 256) x (1,024^2 / 2 + 1,024 x 1,024)
  // = 2.5769803776e12. Total 8.04736991232e12 / 5e13 = 160.947 ms (with 256-wide heads everywhere the full
  // layers would cost half as much).
  CHECK(analyze(s).prefill.time_s == Approx(0.160947).epsilon(0.001));
}
