// SPDX-License-Identifier: MIT
// The serving simulation's decode set against the same sequences kept one by one.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "analysis/decode_set.hpp"

using namespace optadvisor;

namespace {

struct Plain {
  uint32_t id;
  uint64_t position, generated, gen;
};

StepModel capped_model() {
  StepModel m;
  m.window_tokens = 40;
  m.sparse_topk = 25;
  m.compressed_cap_tokens = 60;
  return m;
}

StepMix one_by_one(const StepModel& m, const std::vector<Plain>& seqs) {
  StepMix mix;
  for (const Plain& p : seqs) add_decode(mix, m, static_cast<double>(p.position));
  return mix;
}

void require_same(const StepMix& a, const StepMix& b) {
  REQUIRE(a.decode_sequences == b.decode_sequences);
  REQUIRE(a.decode_context_full == b.decode_context_full);
  REQUIRE(a.decode_context_sliding == b.decode_context_sliding);
  REQUIRE(a.decode_context_sparse == b.decode_context_sparse);
  REQUIRE(a.decode_context_compressed == b.decode_context_compressed);
}

}  // namespace

TEST_CASE("decode set: sums worked by hand at the caps", "[serving][decode_set]") {
  const StepModel m = capped_model();
  std::vector<DecodeMember> members(3);
  DecodeSet set(&members, m);
  set.join(0, 10, 1, 100);
  set.join(1, 39, 1, 100);
  set.join(2, 70, 1, 100);
  std::vector<uint32_t> finished;
  set.advance(finished);  // positions 11, 40, 71
  StepMix mix;
  set.add_to(mix);
  // full 11 + 40 + 71 = 122; window 40: 11 + 40 + 40 = 91; top-k 25: 11 + 25 + 25 = 61;
  // compressed cap 60: 11 + 40 + 60 = 111.
  CHECK(mix.decode_sequences == 3);
  CHECK(mix.decode_context_full == 122);
  CHECK(mix.decode_context_sliding == 91);
  CHECK(mix.decode_context_sparse == 61);
  CHECK(mix.decode_context_compressed == 111);
  // Only the sequence at 11 is below the window: its next token still adds sliding KV.
  CHECK(set.below_window() == 1);
  CHECK(set.where(1).position == 40);
  CHECK(set.where(1).generated == 2);
}

TEST_CASE("decode set: finishes in join order at each member's gen_tokens", "[serving][decode_set]") {
  const StepModel m = capped_model();
  std::vector<DecodeMember> members(3);
  DecodeSet set(&members, m);
  set.join(2, 100, 1, 4);  // finishes after 3 iterations
  set.join(0, 5, 2, 4);    // after 2
  set.join(1, 7, 3, 6);    // after 3 (its own target: 6 - 3), joined after 2
  std::vector<uint32_t> finished;
  set.advance(finished);
  CHECK(finished.empty());
  set.advance(finished);
  CHECK(finished == std::vector<uint32_t>{0});
  set.advance(finished);
  CHECK(finished == std::vector<uint32_t>{0, 2, 1});
  CHECK(set.empty());
  // A request that left keeps where it got to: 7 + 3 iterations.
  CHECK(set.where(1).position == 10);
}

TEST_CASE("decode set: equals the sequences kept one by one through joins, preemptions and finishes", "[serving][decode_set]") {
  const StepModel m = capped_model();
  std::mt19937_64 rng(7);
  std::vector<DecodeMember> members;
  DecodeSet set(&members, m);
  std::vector<Plain> plain;  // in join order
  uint32_t next_id = 0;
  for (int step = 0; step < 2000; ++step) {
    const int what = static_cast<int>(rng() % 10);
    if (what < 3) {  // join at a position around the caps
      members.emplace_back();
      const uint64_t gen = 2 + rng() % 40;  // each member its own target
      const uint64_t pos = rng() % 90, generated = 1 + rng() % (gen - 1);
      set.join(next_id, pos, generated, gen);
      plain.push_back({next_id++, pos, generated, gen});
    } else if (what == 3 && !plain.empty()) {  // preempt the newest
      const uint32_t id = set.newest();
      REQUIRE(id == plain.back().id);
      const DecodeSet::Where w = set.leave(id);
      REQUIRE(w.position == plain.back().position);
      REQUIRE(w.generated == plain.back().generated);
      plain.pop_back();
    } else {  // a decode iteration
      uint64_t below = 0;
      for (const Plain& p : plain) below += p.position < m.window_tokens;
      REQUIRE(set.below_window() == below);
      std::vector<uint32_t> finished, expected;
      set.advance(finished);
      std::vector<Plain> kept;
      for (Plain p : plain) {
        p.position += 1, p.generated += 1;
        if (p.generated >= p.gen)
          expected.push_back(p.id);
        else
          kept.push_back(p);
      }
      plain = kept;
      REQUIRE(finished == expected);
    }
    REQUIRE(set.size() == plain.size());
    StepMix mix;
    set.add_to(mix);
    require_same(mix, one_by_one(m, plain));
  }
}

TEST_CASE("decode set: without caps every context counts whole", "[serving][decode_set]") {
  const StepModel m;  // no window, dense attention, no compression
  std::vector<DecodeMember> members(2);
  DecodeSet set(&members, m);
  set.join(0, 5000, 1, 1000);
  set.join(1, 100, 1, 1000);
  StepMix mix;
  set.add_to(mix);
  CHECK(mix.decode_context_full == 5100);
  CHECK(mix.decode_context_sliding == 5100);  // no window: the sliding sum is the full one
  CHECK(mix.decode_context_sparse == 0);
  CHECK(mix.decode_context_compressed == 0);
  CHECK(set.below_window() == 2);
}
