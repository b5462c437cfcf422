// SPDX-License-Identifier: MIT
// Capacity planning over more than a node: MoE models may spread data-parallel attention and
// experts over 16 to 64 GPUs where the device records its node and its network.
#include <catch2/catch.hpp>

#include "optadvisor/planner/capacity.hpp"
#include "fixtures.hpp"

using namespace optadvisor;
using fixtures::catalog;

namespace {

/// DeepSeek-V3 in its FP8 checkpoint on SGLang: 3 requests/s of 1024 + 256 tokens within a TTFT of
/// 2 s and a TPOT of 100 ms, on up to 64 GPUs, replicas of one layout each.
CapacityRequest deepseek_on(const std::string& hardware) {
  CapacityRequest q;
  q.scenario.hardware = hardware;
  q.scenario.model.preset = "deepseek-v3";
  q.scenario.engine = "sglang";
  q.scenario.quant = "fp8-block";
  q.rate_per_s = 3;
  q.prompt_tokens = 1024;
  q.gen_tokens = 256;
  q.slo_ttft_s = 2;
  q.slo_tpot_s = 0.1;
  q.max_gpus = 64;
  q.disaggregated = false;
  return q;
}

}  // namespace

TEST_CASE("plan: an MoE model on H100s may spread its experts over two nodes", "[planner][capacity]") {
  const CapacityPlan plan = plan_capacity(catalog(), deepseek_on("h100-sxm"));
  // Tensor parallel 1, 2, 4, 8, expert parallel and data-parallel
  // attention over 2, 4 and 8 GPUs, and over 16, 32 and 64 (H100 SXM: 8 GPUs a node, a 400 Gb/s
  // NIC each): 4 + 2 x 3 + 3 = 13 options.
  CHECK(plan.layouts_screened == 13);
  REQUIRE_FALSE(plan.candidates.empty());
  // Eight GPUs hold the FP8 weights with no room for SGLang's KV pool; sixteen GPUs of
  // data-parallel attention, each with a sixteenth of the experts, hold enough KV for the whole
  // rate (one such replica serves about 3.9 requests/s within the SLOs, a margin of 30% over the
  // rate, wider than the simulations' noise near the SLO): 16 GPUs, where 32 or 64 of wider
  // layouts would do it too.
  const CapacityCandidate& best = plan.candidates.front();
  CHECK(best.gpus == 16);
  CHECK(best.layout.layout.dp_attention == 16);
  CHECK(best.layout.layout.ep == 16);
  CHECK(best.replicas == 1);
}

TEST_CASE("plan: no layout spans nodes on a device whose network is not recorded", "[planner][capacity]") {
  // MI300X records its Infinity Fabric link but no scale-out network: every replica stays within
  // the 8 GPUs of a node, whatever --max-gpus allows.
  const CapacityPlan plan = plan_capacity(catalog(), deepseek_on("mi300x"));
  REQUIRE_FALSE(plan.candidates.empty());
  for (const CapacityCandidate& c : plan.candidates) CHECK(c.layout.layout.gpus() <= 8);
}
