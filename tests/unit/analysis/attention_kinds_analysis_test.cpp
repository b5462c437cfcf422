// SPDX-License-Identifier: MIT
// The analysis follows each layer's attention kind: linear-attention layers hold a fixed state and
// cost context-free FLOPs, DSA layers attend to their top-k tokens and read only those latents.
// Figures worked by hand in the comments.
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

TEST_CASE("hybrid linear-attention model: KV for the full layers plus a fixed state", "[analysis][kv]") {
  const auto hw = fixtures::round_device(1e12, 1e15, 200e9);
  const PlainEngine e(1.0, 1.0);
  Scenario s = plain_scenario(hw, "qwen3.5-397b-a17b", e);
  // 15 full layers x 2 x 2 KV heads x 256 x 2 bytes = 30,720 bytes per token; the 45 Gated DeltaNet
  // layers hold 4,268,032 bytes each (float32 64 x 128 x 128 state + 16-bit conv) = 192,061,440 per sequence.
  CHECK(kv_bytes_per_sequence(s, 1000) == Approx(30720000.0 + 192061440.0));
  CHECK(kv_bytes_per_sequence(s, 2000) - kv_bytes_per_sequence(s, 1000) == Approx(30720000.0));
  // TP 2 splits the 2 KV heads and the 64 value heads of the state.
  s.workload.tp = 2;
  CHECK(kv_bytes_per_sequence(s, 1000) == Approx((30720000.0 + 192061440.0) / 2));
}

TEST_CASE("linear-attention layers cost context-free FLOPs in prefill", "[analysis][prefill]") {
  // 100 TFLOP/s at 50% = 50 TFLOP/s; bandwidth so high that weight reads vanish.
  const auto hw = fixtures::round_device(1e18, 100e12, 200e9);
  const PlainEngine e(1.0, 0.5);
  const Scenario s = plain_scenario(hw, "qwen3.5-27b", e, HandWeights{2e9, 1e9, 1e9}, 1000, 0);
  // Linear layers (weights): 2 x 1e9 x 1000 = 2e12 FLOP. Causal attention in the 16 full layers:
  // 16 x 2 x 24 heads x (256 + 256) x 1000^2 / 2 = 1.96608e11. Gated DeltaNet state work in the
  // 48 linear layers: 48 x 7 x 48 value heads x 128 x 128 x 1000 = 2.64241152e11 (a dense layer
  // would instead cost 16 x more attention at this length). Total 2.460849152e12 / 5e13 = 49.217 ms.
  CHECK(analyze(s).prefill.time_s == Approx(0.049217).epsilon(0.001));
}

TEST_CASE("DSA decode reads every indexer key but only the top-k latents", "[analysis][decode]") {
  const auto hw = fixtures::round_device(1e12, 1e18, 200e9);
  const PlainEngine e(1.0, 1.0);
  const Scenario s = plain_scenario(hw, "deepseek-v3.2", e, HandWeights{1e9, 1e9, 1e9}, 100000, 1);
  // Cache: 61 layers x (576 latent + 128 indexer key) x 2 bytes = 85,888 bytes per token.
  CHECK(kv_bytes_per_sequence(s, 1) == Approx(85888));
  // One step at 100,000 tokens reads 61 x 2 x (128 x 100,000 + 576 x 2,048) = 1,705,517,056 bytes of
  // cache, not the 8,588,800,000 it holds: (1e9 + 1.705517056e9) / 1e12 = 2.7055 ms.
  CHECK(analyze(s).decode.time_s == Approx(0.0027055).epsilon(0.001));
}

TEST_CASE("DeepSeek-V4 attends to its window and to its compressed entries", "[analysis][prefill]") {
  // 1 PFLOP/s at 100%; weight reads and the weights' own FLOPs are left out of the check.
  const auto hw = fixtures::round_device(1e18, 1e15, 400e9);
  const PlainEngine e(1.0, 1.0);
  const Scenario s = plain_scenario(hw, "deepseek-v4-flash", e, HandWeights{1e9, 1e9, 1e9}, 8192, 0);
  // Per attended entry 2 x 64 heads x (512 + 512) = 131,072 FLOP; 8,192 causal positions.
  //  window, all 43 layers: 128^2 / 2 + (8,192 - 128) x 128 = 1,040,384 entries each;
  //  20 ratio-128 layers: every entry, (20 / 128) x 8,192^2 / 2 = 5,242,880;
  //  21 ratio-4 layers: top-512 of i / 4 entries, 4 x 512^2 / 2 + (8,192 - 2,048) x 512 = 3,670,016 each,
  //  plus the indexer scoring all of them: 2 x 64 x 128 x 8,192^2 / 8 = 137,438,953,472 FLOP each.
  // 131,072 x (43 x 1,040,384 + 5,242,880 + 21 x 3,670,016) + 21 x 137,438,953,472 = 1.9538880e13 FLOP: 19.539 ms.
  CHECK(analyze(s).prefill.attention_compute_time_s == Approx(0.019538880).epsilon(0.001));
}
