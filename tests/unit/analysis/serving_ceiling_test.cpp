// SPDX-License-Identifier: MIT
// The analytic ceiling on a serving worker's rate (serving_ceiling.hpp): worked by hand on a
// round-number rank, and checked against the simulation it screens for (a rate past the
// planner's margin over the ceiling never meets the SLOs).
#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "optadvisor/analysis/serving_ceiling.hpp"
#include "optadvisor/analysis/serving_setup.hpp"

using namespace optadvisor;

namespace {

/// fixtures::round_rank() as a worker of `role`: 1 GB of weights at 1 TB/s, 1 B params at
/// 1 PFLOP/s, 100 kB of KV per token, 1e5 attention FLOPs per pair at 100 TFLOP/s, 1 ms per step.
ServingPool round_pool(ServingRole role) {
  ServingPool p;
  p.role = role;
  p.step = fixtures::round_rank();
  return p;
}

ServingLoad lengths(uint64_t prompt, uint64_t gen) {
  ServingLoad l;
  l.prompt_tokens = prompt;
  l.gen_tokens = gen;
  return l;
}

/// The planner's allowance over the ceiling (capacity.cpp, kCeilingMargin).
constexpr double kMargin = 1.25;

}  // namespace

TEST_CASE("ceiling: a prefill worker is bound by its prompts' GEMM and attention math") {
  const ServingPool pool = round_pool(ServingRole::kPrefill);
  const CeilingLoad load = ceiling_load(pool, lengths(1000, 1), 0, 0, 0);
  CHECK(load.prompt_tokens == 1000);
  CHECK(load.decode_steps == 0);
  // Per prompt: 1000 x 2e9 / 1e15 = 2 ms of GEMMs + 1000^2 / 2 x 1e5 / 1e14 = 0.5 ms of
  // attention; 2.5 ms a prompt is 400 prompts per second.
  CHECK(serving_rate_ceiling(pool, load) == Approx(400).epsilon(1e-3));
  // Alone, the prompt's one step takes 1 ms + 2 ms + 0.5 ms = 3.5 ms: a 3 ms TTFT SLO is never met,
  // and neither is a 4 ms one with 1 ms of API server time per request.
  CHECK(serving_rate_ceiling(pool, ceiling_load(pool, lengths(1000, 1), 3e-3, 0, 0)) == 0);
  CHECK(serving_rate_ceiling(pool, ceiling_load(pool, lengths(1000, 1), 4e-3, 0, 1e-3)) == 0);
  CHECK(serving_rate_ceiling(pool, ceiling_load(pool, lengths(1000, 1), 4e-3, 0, 0)) > 0);
}

TEST_CASE("ceiling: a decode worker runs its largest batch, capped by the sequence cap and the TPOT SLO") {
  const ServingPool pool = round_pool(ServingRole::kDecode);
  // 10-token prompts, 101 generated tokens: 100 decode steps a request, no prefill here.
  const CeilingLoad load = ceiling_load(pool, lengths(10, 101), 0, 0, 0);
  CHECK(load.prompt_tokens == 0);
  CHECK(load.decode_steps == 100);
  // No TPOT SLO: the sequence cap, 1024 (the pool holds 1e12 / (11 x 1e5) = 909,090). A step of
  // 1024 sequences at 10 tokens: 1 ms + max(1 ms weights, 1024 x 2e9 / 1e15 = 2.048 ms GEMMs) +
  // max(1024 x 10 x 1e5 / 1e12 = 1.024 ms KV, 1024 x 10 x 1e5 / 1e14 = 0.01 ms attention)
  // = 4.072 ms; 1024 sequences x (1 / 4.072 ms) steps/s / 100 steps a request = 2514.7 requests/s.
  CHECK(serving_rate_ceiling(pool, load) == Approx(1024 / (100 * 4.072e-3)).epsilon(1e-3));
  // A 3 ms TPOT SLO: a step of b > 500 sequences is 1 ms + 2e-6 b + 1e-6 b, within 3 ms up to
  // b = 666.7; at a mean step of 3 ms that batch is 666.7 / (100 x 3 ms) = 2222.2 requests/s.
  CHECK(serving_rate_ceiling(pool, ceiling_load(pool, lengths(10, 101), 0, 3e-3, 0)) == Approx(2222.2).epsilon(1e-3));
  // One sequence alone steps in 1 + 1 + 0.001 ms: a 2 ms SLO is never met.
  CHECK(serving_rate_ceiling(pool, ceiling_load(pool, lengths(10, 101), 0, 2e-3, 0)) == 0);
}

TEST_CASE("ceiling: a mixed worker shares its time between prompts and decode steps") {
  const ServingPool pool = round_pool(ServingRole::kMixed);
  const CeilingLoad both = ceiling_load(pool, lengths(1000, 101), 0, 0, 0);
  const ServingPool decode_only = round_pool(ServingRole::kDecode);
  const ServingPool prefill_only = round_pool(ServingRole::kPrefill);
  const double mixed = serving_rate_ceiling(pool, both);
  CHECK(mixed > 0);
  CHECK(mixed < serving_rate_ceiling(decode_only, ceiling_load(decode_only, lengths(1000, 101), 0, 0, 0)));
  CHECK(mixed < serving_rate_ceiling(prefill_only, ceiling_load(prefill_only, lengths(1000, 101), 0, 0, 0)));
  // A pool that cannot hold one request of 1000 + 101 tokens (1.101e8 bytes) serves nothing.
  ServingPool small = pool;
  small.step.kv_pool_bytes = 1e8;
  CHECK(serving_rate_ceiling(small, both) == 0);
}

TEST_CASE("ceiling: no simulated worker meets its SLOs past the planner's margin over it", "[planner]") {
  struct Case {
    const char *hardware, *model, *engine, *quant;
    uint32_t tp, ep, dp;
    uint64_t prompt, gen;
    double slo_ttft_s, slo_tpot_s;
  };
  const Case cases[] = {
      {"h100-sxm", "llama-3.1-70b", "vllm", "fp8", 2, 1, 1, 1024, 256, 1, 0.05},
      {"h100-sxm", "llama-3.1-8b", "tensorrt-llm", "fp8", 1, 1, 1, 8192, 256, 2, 0.012},
      {"h100-sxm", "qwen3-30b-a3b", "sglang", "fp8", 2, 2, 1, 2048, 512, 2, 0.03},
      {"b200", "deepseek-v3", "sglang", "nvfp4", 1, 8, 8, 2048, 512, 2, 0.05},
  };
  for (const Case& c : cases) {
    for (ServingRole role : {ServingRole::kMixed, ServingRole::kPrefill}) {
      ServeRequest r;
      r.scenario.hardware = c.hardware;
      r.scenario.model.preset = c.model;
      r.scenario.engine = c.engine;
      r.scenario.quant = c.quant;
      r.aggregated.layout.tp = c.tp;
      r.aggregated.layout.ep = c.ep;
      r.aggregated.layout.dp_attention = c.dp;
      r.load = lengths(c.prompt, role == ServingRole::kPrefill ? 1 : c.gen);
      r.load.concurrency = 1;
      r.slo_ttft_s = c.slo_ttft_s;
      r.slo_tpot_s = c.slo_tpot_s;
      const PreparedServing p = prepare_serving(fixtures::catalog(), r);
      const ServingPool& pool = p.setup.pools.front();
      const double ceiling =
          serving_rate_ceiling(pool, ceiling_load(pool, r.load, c.slo_ttft_s, role == ServingRole::kPrefill ? 0 : c.slo_tpot_s,
                                                  p.setup.request_overhead_s));
      INFO(c.model << " on " << c.hardware << ", " << c.engine << ", gen " << r.load.gen_tokens << ": ceiling " << ceiling);
      REQUIRE(ceiling > 0);
      ServingLoad past = r.load;
      past.concurrency = 0;
      past.rate_per_s = kMargin * ceiling * 1.01;
      const ServingResult s = simulate_serving(p.setup, past);
      const bool meets = s.slo_attained >= 0.9 && s.keeps_up;
      CHECK_FALSE(meets);
    }
  }
}
