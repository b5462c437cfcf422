// SPDX-License-Identifier: MIT
// Request lengths that vary: the ranges and draws of the two spreads, and what
// the serving simulation does with them (each request its own prompt and
// generated length, the KV pool checked against the longest, the clients of a
// closed loop no longer in step).
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <string>

#include "fixtures.hpp"
#include "optadvisor/analysis/request_lengths.hpp"
#include "optadvisor/analysis/serving.hpp"

using namespace optadvisor;
using fixtures::one_pool;
using fixtures::round_rank;

namespace {

LengthSpread uniform(double r) {
  LengthSpread s;
  s.kind = LengthSpread::Kind::kUniform;
  s.range_ratio = r;
  return s;
}

LengthSpread normal(double stddev) {
  LengthSpread s;
  s.kind = LengthSpread::Kind::kNormal;
  s.stddev_tokens = stddev;
  return s;
}

struct Moments {
  double mean = 0, stddev = 0;
  uint64_t min = UINT64_MAX, max = 0;
};

Moments draws(uint64_t mean, const LengthSpread& spread, int n, uint64_t seed = 3) {
  std::mt19937_64 rng(seed);
  Moments m;
  double sum = 0, sum2 = 0;
  for (int i = 0; i < n; ++i) {
    const uint64_t x = draw_length(mean, spread, rng);
    sum += static_cast<double>(x), sum2 += static_cast<double>(x) * static_cast<double>(x);
    m.min = std::min(m.min, x), m.max = std::max(m.max, x);
  }
  m.mean = sum / n;
  m.stddev = std::sqrt(sum2 / n - m.mean * m.mean);
  return m;
}

ServingLoad closed(uint64_t c, uint64_t prompt, uint64_t gen) { return fixtures::closed_loop(c, prompt, gen); }

}  // namespace

TEST_CASE("a range ratio spreads lengths uniformly over int(L (1 - r)) .. int(L (1 + r)), as vllm bench serve does", "[serving][lengths]") {
  // 1024 x 0.5 = 512 and 1024 x 1.5 = 1536; 100 x 0.75 = 75, 100 x 1.25 = 125.
  CHECK(length_range(1024, uniform(0.5)).min == 512);
  CHECK(length_range(1024, uniform(0.5)).max == 1536);
  CHECK(length_range(100, uniform(0.25)).min == 75);
  CHECK(length_range(100, uniform(0.25)).max == 125);
  // A one-token mean stays one token: int(0.1) = 0 is raised to 1, int(1.9) = 1.
  CHECK(length_range(1, uniform(0.9)).min == 1);
  CHECK(length_range(1, uniform(0.9)).max == 1);
  // Uniform over 1025 integers: mean 1024, deviation sqrt((1025^2 - 1) / 12) = 295.9; the mean of
  // 20,000 draws is within 2 tokens of it (its own deviation 2.1) and both ends are drawn.
  const Moments m = draws(1024, uniform(0.5), 20000);
  CHECK(m.mean == Approx(1024).margin(6));
  CHECK(m.stddev == Approx(295.9).epsilon(0.02));
  CHECK(m.min == 512);
  CHECK(m.max == 1536);
}

TEST_CASE("a deviation spreads lengths normally, truncated at zero, rounded up and capped at four deviations", "[serving][lengths]") {
  // 1024 + 4 x 256 = 2048.
  CHECK(length_range(1024, normal(256)).min == 1);
  CHECK(length_range(1024, normal(256)).max == 2048);
  // Four deviations from zero the truncation is nil: mean 1024 + 0.5 (rounding up), deviation 256.
  const Moments m = draws(1024, normal(256), 20000);
  CHECK(m.mean == Approx(1024.5).margin(6));
  CHECK(m.stddev == Approx(256).epsilon(0.02));
  CHECK(m.max <= 2048);
  // One deviation from zero the truncation shows: a normal of mean 100 and deviation 100 cut at 0
  // has the mean 100 + 100 x phi(1) / Phi(1) = 100 + 100 x 0.2420 / 0.8413 = 128.8, + 0.5 rounding up.
  const Moments cut = draws(100, normal(100), 40000);
  CHECK(cut.mean == Approx(129.3).margin(2));
  CHECK(cut.min >= 1);
  CHECK(cut.max <= 500);
  // A deviation of zero is the fixed length.
  CHECK(length_range(1024, normal(0)).min == 1024);
  CHECK(draws(1024, normal(0), 10).max == 1024);
}

TEST_CASE("length draws are the seed's and a fixed length draws nothing", "[serving][lengths]") {
  CHECK(draws(1024, normal(256), 100, 9).mean == draws(1024, normal(256), 100, 9).mean);
  CHECK(draws(1024, normal(256), 100, 9).mean != draws(1024, normal(256), 100, 10).mean);
  std::mt19937_64 a(5), b(5);
  CHECK(draw_length(1024, LengthSpread{}, a) == 1024);
  CHECK(a() == b());  // the fixed length took nothing from the stream
}

TEST_CASE("a length reads with its spread in the outputs", "[serving][lengths]") {
  CHECK(length_text(1024, LengthSpread{}) == "1024");
  CHECK(length_text(1024, uniform(0.5)) == "1024 (uniform 512-1536)");
  CHECK(length_text(1024, normal(256)) == "1024 (normal, stddev 256, 1-2048)");
}

TEST_CASE("a range ratio of zero simulates exactly the fixed lengths", "[serving][lengths]") {
  ServingLoad fixed = closed(8, 1000, 50);
  fixed.requests = 200;
  ServingLoad spread = fixed;
  spread.gen_spread = uniform(0);
  spread.prompt_spread = uniform(0);
  const ServingResult a = simulate_serving(one_pool(round_rank()), fixed);
  const ServingResult b = simulate_serving(one_pool(round_rank()), spread);
  CHECK(a.ttft_s.mean == b.ttft_s.mean);
  CHECK(a.tpot_s.p90 == b.tpot_s.p90);
  CHECK(a.requests_per_s == b.requests_per_s);
  // Unless the count is given, a spread's percentiles measure 1,000 requests at least (fixed: 64).
  spread.requests = fixed.requests = 0;
  CHECK(simulate_serving(one_pool(round_rank()), fixed).measured_requests == 64);
  CHECK(simulate_serving(one_pool(round_rank()), spread).measured_requests == 1000);
}

TEST_CASE("each request generates its own length: tokens per completed request are the mean", "[serving][lengths]") {
  ServingLoad load = closed(16, 500, 200);
  load.gen_spread = uniform(0.5);  // 100 .. 300 tokens
  load.requests = 4000;
  const ServingResult r = simulate_serving(one_pool(round_rank()), load);
  // Over 4,000 requests the mean generated length is 200 within 1% (its deviation 57.7 / sqrt(4000) = 0.9).
  CHECK(r.output_tokens_per_s / r.requests_per_s == Approx(200).epsilon(0.03));
  // Longer requests take longer: end to end follows the decode steps, 100 to 300 (p50 about 200,
  // p90 280, p99 298: 1.4x and 1.49x the median), where fixed lengths all take the same.
  CHECK(r.e2e_s.p90 > 1.25 * r.e2e_s.p50);
  CHECK(r.e2e_s.p99 > 1.35 * r.e2e_s.p50);
}

TEST_CASE("clients whose lengths vary fall out of step: prompts no longer queue behind a whole cohort's", "[serving][lengths]") {
  // 32 clients in step send their 1000-token prompts together: 32,000 tokens in four iterations of
  // the 8,192-token budget, so a prompt waits for two or three of them on average. Clients whose
  // generations differ complete apart, and each prompt shares its iteration with few others.
  const ServingResult fixed = simulate_serving(one_pool(round_rank()), closed(32, 1000, 100));
  ServingLoad load = closed(32, 1000, 100);
  load.gen_spread = uniform(0.5);
  const ServingResult spread = simulate_serving(one_pool(round_rank()), load);
  CHECK(spread.ttft_s.mean < 0.5 * fixed.ttft_s.mean);
}

TEST_CASE("a pool that holds the mean request but not the longest does not fit", "[serving][lengths]") {
  StepModel m = round_rank();
  m.kv_pool_bytes = 1e5 * 240;  // 240 tokens: 100 + 100 fits, 100 + 150 does not
  ServingLoad load = closed(2, 100, 100);
  CHECK(simulate_serving(one_pool(m), load).fits);
  load.gen_spread = uniform(0.5);  // the longest: 100 + 150 tokens
  const ServingResult r = simulate_serving(one_pool(m), load);
  CHECK_FALSE(r.fits);
  REQUIRE(r.notes.size() == 1);
  CHECK(r.notes.front().find("longest request the load draws (250 tokens") != std::string::npos);
}

TEST_CASE("a request found decoding is drawn in proportion to its decode steps", "[serving][lengths]") {
  // Uniform 100..300 weighted by (x - 1): mean E[x (x - 1)] / E[x - 1] = (E[x^2] - E[x]) / (E[x] - 1)
  // with E[x] = 200 and E[x^2] = 200^2 + (201^2 - 1) / 12 = 43,366.7: (43,366.7 - 200) / 199 = 216.9.
  std::mt19937_64 rng(11);
  double sum = 0;
  const int n = 40000;
  for (int i = 0; i < n; ++i) sum += static_cast<double>(draw_decoding_length(200, uniform(0.5), rng));
  CHECK(sum / n == Approx(216.9).margin(1.5));
  // A fixed length is itself; a spread that reaches one token never draws it (no decode steps).
  CHECK(draw_decoding_length(200, LengthSpread{}, rng) == 200);
  for (int i = 0; i < 1000; ++i) CHECK(draw_decoding_length(2, uniform(0.9), rng) >= 2);
}
