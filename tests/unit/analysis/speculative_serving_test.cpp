// SPDX-License-Identifier: MIT
// Speculative decoding under load: an iteration of the serving simulation moves each decoding
// sequence one token on, so it costs 1 / accepted_tokens of a verification step's decode part and
// drafting, plus what its prompt chunks add to such a step. Worked by hand on the round-number rank
// (weights 1e9 B at 1e12 B/s, 2e9 FLOPs a token at 1e15, KV 1e5 B a token, 1 ms a step).
#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "optadvisor/analysis/serving_setup.hpp"

using namespace optadvisor;
using fixtures::round_rank;

namespace {

/// The round-number rank checking `verify` tokens a step, yielding `accepted`, drafting at `draft` of a plain step.
StepModel speculating(double verify, double accepted, double draft) {
  StepModel m = round_rank();
  m.verify_tokens = verify;
  m.accepted_tokens = accepted;
  m.draft_overhead = draft;
  return m;
}

StepMix four_at_1000() {
  StepMix mix;
  mix.decode_sequences = 4;
  mix.decode_context_full = 4000;
  return mix;
}

}  // namespace

TEST_CASE("a speculative iteration is a verification step and its drafting over the tokens each yields") {
  // Plain: weights 1 ms + KV 4000 x 1e5 / 1e12 = 0.4 ms + 1 ms = 2.4 ms. Verifying 4 tokens each
  // (16 tokens: 32 us of math under the 1 ms of weights; attention 4 x 4e8 / 1e14 = 16 us under
  // the KV's 0.4 ms) costs the same 2.4 ms; drafting 0.5 x 2.4 = 1.2 ms; two tokens a step:
  // (2.4 + 1.2) / 2 = 1.8 ms an iteration.
  const StepCost c = step_cost(speculating(4, 2, 0.5), four_at_1000());
  CHECK(c.time_s == Approx(1.8e-3));
  CHECK(c.overhead_s == Approx(0.75e-3));  // (1 ms + 0.5 x 1 ms) / 2
  CHECK(c.bandwidth_s == Approx((1.4e-3 + 0.5 * 1.4e-3) / 2));
  // Off (1 verified, 1 accepted, no drafting): the plain step.
  CHECK(step_cost(speculating(1, 1, 0), four_at_1000()).time_s == Approx(2.4e-3));
}

TEST_CASE("past the ridge, verification's math makes a speculative iteration slower than plain decoding") {
  StepMix mix;
  mix.decode_sequences = 1000;
  mix.decode_context_full = 1000;  // one token each
  // Plain: math 1000 x 2e9 / 1e15 = 2 ms over 1 ms of weights, KV 1e8 / 1e12 = 0.1 ms, 1 ms: 3.1 ms.
  CHECK(step_cost(round_rank(), mix).time_s == Approx(3.1e-3));
  // Verifying 4 each: 8 ms of math + 0.1 + 1 = 9.1 ms; (9.1 + 0.5 x 3.1) / 2 = 5.325 ms.
  CHECK(step_cost(speculating(4, 2, 0.5), mix).time_s == Approx(5.325e-3));
}

TEST_CASE("a prompt chunk costs a speculative iteration what it adds to a verification step") {
  StepMix mix = four_at_1000();
  add_prefill_chunk(mix, round_rank(), 0, 1000);
  // The verification step with the chunk: 16 + 1000 tokens, 2.032 ms of math over 1 ms of
  // weights; KV 5000 x 1e5 / 1e12 = 0.5 ms under attention 1e5 x (4 x 4000 + 1000^2 / 2) / 1e14
  // = 0.516 ms; 1 ms: 3.548 ms, 1.148 ms above the step without it. 1.8 ms + 1.148 ms = 2.948 ms.
  CHECK(step_cost(speculating(4, 2, 0.5), mix).time_s == Approx(2.948e-3));
}

TEST_CASE("one client speculating: TPOT is the verification step over the tokens it yields") {
  // Ten decode steps at contexts 1000..1009 as in serving_test's one-client case (each 1 ms of
  // weights + ctx x 1e5 / 1e12 of KV + 1 ms; attention over 2 tokens stays hidden), each yielding
  // 2 tokens: TPOT = 2.10045 ms / 2. The prompt's step decodes nothing: TTFT as without.
  const ServingResult r = simulate_serving(fixtures::one_pool(speculating(2, 2, 0)), fixtures::closed_loop(1, 1000, 11));
  CHECK(r.tpot_s.mean == Approx(2.10045e-3 / 2));
  CHECK(r.ttft_s.mean == Approx(3.5e-3));
}

TEST_CASE("serve holds a speculative drafter's weights beside the model's, out of the KV pool") {
  ServeRequest r;
  r.scenario.hardware = "h100-sxm";
  r.scenario.model.preset = "llama-3.1-8b";
  r.scenario.engine = "vllm";
  r.load = fixtures::closed_loop(8, 1024, 128);
  const double plain = prepare_serving(fixtures::catalog(), r).setup.pools.front().step.kv_pool_bytes;
  r.scenario.speculation.method = "eagle";
  r.scenario.speculation.draft_tokens = 3;
  r.scenario.speculation.accepted_tokens = 2.5;
  r.scenario.speculation.draft_overhead = 0.1;
  r.scenario.speculation.draft_memory_bytes = 1e9;
  const StepModel m = prepare_serving(fixtures::catalog(), r).setup.pools.front().step;
  CHECK(plain - m.kv_pool_bytes == Approx(1e9));
  CHECK(m.verify_tokens == 4);  // a chain of 3 drafts and the target's own token
  CHECK(m.accepted_tokens == 2.5);
  CHECK(m.draft_overhead == 0.1);
}
