// SPDX-License-Identifier: MIT
// Capacity planning with disaggregated prefill and decode pools: each layout's capacity as a
// prefill worker and as a decode worker sizes both pools; the best pairs are simulated whole.
#include <catch2/catch.hpp>

#include <cmath>

#include "optadvisor/planner/capacity.hpp"
#include "fixtures.hpp"

using namespace optadvisor;
using fixtures::catalog;

namespace {

/// Llama-3.1-8B FP8 on vLLM, H100s: 4 requests/s of 8192-token prompts and 256 generated tokens,
/// TTFT within 2 s and TPOT within 12 ms. Aggregated, every long prompt that rides in a decode
/// step pushes the running sequences' time per token past 12 ms unless the batch stays small.
CapacityRequest long_prompts(bool disaggregated) {
  CapacityRequest q;
  q.scenario.hardware = "h100";
  q.scenario.model.preset = "llama-3.1-8b";
  q.scenario.engine = "vllm";
  q.scenario.quant = "fp8";
  q.rate_per_s = 4;
  q.prompt_tokens = 8192;
  q.gen_tokens = 256;
  q.slo_ttft_s = 2;
  q.slo_tpot_s = 0.012;
  q.max_gpus = 8;
  q.disaggregated = disaggregated;
  return q;
}

}  // namespace

TEST_CASE("disaggregated plan: long prompts under a tight TPOT need fewer GPUs in separate pools", "[planner][capacity]") {
  const CapacityPlan aggregated = plan_capacity(catalog(), long_prompts(false));
  const CapacityPlan both = plan_capacity(catalog(), long_prompts(true));
  REQUIRE_FALSE(aggregated.candidates.empty());
  REQUIRE_FALSE(both.candidates.empty());
  CHECK(aggregated.disaggregated_pairs == 0);
  for (const auto& c : aggregated.candidates) CHECK_FALSE(c.disaggregated);
  const CapacityCandidate& best = both.candidates.front();
  REQUIRE(best.disaggregated);
  CHECK(best.gpus < aggregated.candidates.front().gpus);
  CHECK(both.disaggregated_pairs > 0);

  // The sizing: N prefill workers carry the rate at one prefill worker's capacity, M decode
  // workers at one decode worker's (one more where the whole deployment missed an SLO), and
  // the GPUs are N x (prefill GPUs each) + M x (decode GPUs each).
  const DisaggregatedSizing& d = *best.disaggregated;
  CHECK(d.prefill.workers >= static_cast<uint32_t>(std::ceil(4.0 / d.prefill_rate_per_s - 1e-9)));
  CHECK(d.decode.workers >= static_cast<uint32_t>(std::ceil(4.0 / d.decode_rate_per_s - 1e-9)));
  CHECK(best.gpus == d.prefill.workers * d.prefill.layout.gpus() + d.decode.workers * d.decode.layout.gpus());
  CHECK(best.replicas == 1);
  CHECK(best.replica_rate_per_s ==
        Approx(std::min(d.prefill.workers * d.prefill_rate_per_s, d.decode.workers * d.decode_rate_per_s)));
  // What was simulated whole meets both SLOs for 90% of the requests at the full rate.
  CHECK(best.at_load.slo_attained >= 0.9);
  CHECK(best.at_load.tpot_s.p90 <= 0.012);
  CHECK(best.at_load.requests_per_s >= 0.95 * 4);
  // A prefill worker serves only prompts, a decode worker only tokens, each pool sized by its own
  // worker's rate: the pool whose worker serves fewer requests a second has at least as many workers.
  CHECK(d.prefill_rate_per_s > 0);
  CHECK(d.decode_rate_per_s > 0);
  if (d.decode_rate_per_s < d.prefill_rate_per_s)
    CHECK(d.decode.workers >= d.prefill.workers);
  else
    CHECK(d.prefill.workers >= d.decode.workers);
}

TEST_CASE("disaggregated plan: candidates stay within --max-gpus", "[planner][capacity]") {
  CapacityRequest q = long_prompts(true);
  q.max_gpus = 2;
  const CapacityPlan plan = plan_capacity(catalog(), q);
  for (const auto& c : plan.candidates) CHECK(c.gpus <= 2);
}

TEST_CASE("plan: screening by the analytic ceiling ranks the best candidates as an exhaustive search does", "[planner][capacity]") {
  CapacityRequest seventy;  // the README's plan: Llama-3.1-70B on H100s, every engine and format
  seventy.scenario.hardware = "h100-sxm";
  seventy.scenario.model.preset = "llama-3.1-70b";
  seventy.rate_per_s = 10;
  seventy.prompt_tokens = 1024;
  seventy.gen_tokens = 256;
  seventy.slo_ttft_s = 1;
  seventy.slo_tpot_s = 0.05;
  for (const CapacityRequest& base : {seventy, long_prompts(true)}) {
    CapacityRequest all = base;
    all.exhaustive = true;
    const CapacityPlan screened = plan_capacity(catalog(), base);
    const CapacityPlan exhaustive = plan_capacity(catalog(), all);
    INFO(base.scenario.model.preset);
    REQUIRE(screened.candidates.size() >= std::min<std::size_t>(kPlanRankedCandidates, exhaustive.candidates.size()));
    CHECK(screened.layouts_screened == exhaustive.layouts_screened);
    CHECK(screened.simulations <= exhaustive.simulations);
    for (std::size_t i = 0; i < std::min<std::size_t>(kPlanRankedCandidates, exhaustive.candidates.size()); ++i) {
      const CapacityCandidate &a = screened.candidates[i], &b = exhaustive.candidates[i];
      INFO("rank " << i + 1);
      CHECK(a.gpus == b.gpus);
      CHECK(a.engine == b.engine);
      CHECK(a.quant == b.quant);
      CHECK(a.layout.layout.tp == b.layout.layout.tp);
      CHECK(a.disaggregated.has_value() == b.disaggregated.has_value());
      CHECK(a.replica_rate_per_s == Approx(b.replica_rate_per_s));
    }
  }
}

TEST_CASE("a plan's token budget reaches every pool it sizes and simulates", "[planner][capacity]") {
  CapacityRequest q = long_prompts(true);
  q.max_batched_tokens = 2048;
  const CapacityPlan budget = plan_capacity(catalog(), q);
  const CapacityPlan defaults = plan_capacity(catalog(), long_prompts(true));
  REQUIRE_FALSE(budget.candidates.empty());
  bool disaggregated = false;
  for (const CapacityCandidate& c : budget.candidates) {
    CHECK(c.layout.max_batched_tokens == 2048);
    if (!c.disaggregated) continue;
    disaggregated = true;
    CHECK(c.disaggregated->prefill.max_batched_tokens == 2048);
    CHECK(c.disaggregated->decode.max_batched_tokens == 2048);
  }
  CHECK(disaggregated);
  for (const CapacityCandidate& c : defaults.candidates) CHECK(c.layout.max_batched_tokens == 0);
  // 8192-token prompts run in four chunks of 2048 instead of one step: the decode steps they
  // interrupt are shorter, so the replicas' simulated rates differ from the default budget's.
  CHECK(budget.candidates.front().replica_rate_per_s != defaults.candidates.front().replica_rate_per_s);
  bool noted = false;
  for (const std::string& n : budget.notes) noted = noted || n.find("2048 tokens per iteration") != std::string::npos;
  CHECK(noted);
}
