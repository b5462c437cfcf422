// SPDX-License-Identifier: MIT
// The steady state an open loop starts from, worked by hand on the round-number rank.
#include <catch2/catch.hpp>

#include "analysis/open_loop_start.hpp"
#include "fixtures.hpp"

using namespace optadvisor;
using fixtures::round_rank;

namespace {

ServingPool pool_of(const StepModel& m) {
  ServingPool p;
  p.step = m;
  return p;
}

ServingLoad open_loop(double rate, uint64_t prompt, uint64_t gen) {
  ServingLoad l;
  l.rate_per_s = rate;
  l.prompt_tokens = prompt;
  l.gen_tokens = gen;
  return l;
}

}  // namespace

TEST_CASE("an open loop's steady batch follows Little's law at the step it makes") {
  // 40 requests/s of 10 + 4000 tokens, KV 1 kB a token read at 1 TB/s. A decode step: 1 ms of
  // weights + 1 ms of overhead + each sequence's context read, on average 10 + 3999 / 2 = 2009.5
  // tokens: 2.0095 us (its attention at 1e14 FLOP/s takes as long; the prompts' 10 tokens add
  // about 0.4 us a step). N = 40 x 3999 x (2 ms + 2.0095 us x N) = 319.92 + 0.32144 N, so
  // N = 319.92 / 0.67856 = 471.5, a step 2 ms + 0.947 ms = 2.947 ms, a lifetime 3999 of them.
  StepModel m = round_rank();
  m.kv_bytes_per_token_full = m.kv_read_bytes_per_token_full = 1e3;
  const OpenLoopStart s = open_loop_start(pool_of(m), open_loop(40, 10, 4000), 40, true);
  CHECK_FALSE(s.at_capacity);
  CHECK(s.sequences_per_rank == Approx(471.5).epsilon(0.002));
  CHECK(s.step_s == Approx(2.947e-3).epsilon(0.002));
  CHECK(s.lifetime_s == Approx(3999 * s.step_s));
}

TEST_CASE("past capacity an open loop starts from the largest batch, stepping at its decode") {
  // 40 requests/s of 100 + 1000 tokens, KV 100 kB a token: no batch keeps up (about 16 requests/s
  // at most), so the rank holds its sequence cap, 1024. That batch's step: 1024 x 2 GFLOP at
  // 1 PFLOP/s = 2.05 ms of GEMMs (above the 1 ms of weight reads), 1024 contexts of on average
  // 100 + 999 / 2 = 599.5 tokens x 100 kB = 6.14e10 B at 1 TB/s = 61.4 ms of KV reads, and 1 ms
  // of overhead: 64.4 ms; the queueing prompts are not in it.
  const OpenLoopStart s = open_loop_start(pool_of(round_rank()), open_loop(40, 100, 1000), 40, true);
  CHECK(s.at_capacity);
  CHECK(s.sequences_per_rank == 1024);
  CHECK(s.step_s == Approx(2.048e-3 + 61.39e-3 + 1e-3).epsilon(0.001));
}

TEST_CASE("a prompt lengthens the steps it runs in, not every step by its share") {
  // A mixture of experts: 10 GB of routed experts, each token picking 1/32 of them. One prompt of
  // 1000 tokens a second beside a batch decoding 1000-token answers. A decode step of N sequences:
  // 1 ms of dense weights, 1 - (31/32)^N of the experts' 10 ms, each sequence's context of about
  // 1500 tokens x 100 kB (0.15 ms) and 1 ms of overhead; at N = 3.69, 1 + 1.11 + 0.55 + 1 = 3.66 ms.
  // The step with the prompt touches all the experts (11 ms of reads, its 2 TFLOP hidden under
  // them): about 9.6 ms more, once a second, +1%: 3.69 ms, and N = 999 x 3.69 ms = 3.69. Spread
  // over every step instead (3.7 of its tokens a step), each step would touch 1 - (31/32)^7.4 =
  // 21% of the experts: about 1 ms more a step, and a batch of about 4.7.
  StepModel m = round_rank();
  m.expert_weight_bytes = 1e10;
  m.expert_pick = 1.0 / 32;
  const OpenLoopStart s = open_loop_start(pool_of(m), open_loop(1, 1000, 1000), 1, true);
  CHECK(s.sequences_per_rank == Approx(3.69).epsilon(0.01));
  CHECK(s.step_s == Approx(3.69e-3).epsilon(0.01));
  // Gen of one token: nothing decodes, no batch.
  CHECK(open_loop_start(pool_of(m), open_loop(1, 1000, 1), 1, true).sequences_per_rank == 0);
}
