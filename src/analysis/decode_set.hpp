// SPDX-License-Identifier: MIT
// The decoding sequences of one attention rank in the serving simulation, kept
// as aggregates so that an iteration costs O(log n) per sequence that finishes
// or reaches a cap, not O(n) in all of them. Each decode iteration moves every
// sequence one token on, so a sequence's position is its position when it
// joined plus the iterations since (a clock the set keeps); the sums a step's
// cost needs (contexts, contexts capped at the sliding window, at the DSA top-k
// and at the compressed cap) are exact integer sums of a few counters, equal to
// adding the sequences one by one (decode_set_test checks them against that).
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include "optadvisor/analysis/serving_step.hpp"

namespace optadvisor {

/// Where a sequence stands in the set it belongs to; one per request, shared by every set of a
/// simulation (a request decodes on one rank at a time).
struct DecodeMember {
  int64_t base = 0;      ///< position - clock
  int64_t gen_base = 0;  ///< tokens generated - clock
  uint32_t epoch = 0;    ///< bumped on every join, so stale queue entries are told apart
  bool live = false;
};

/// Sum over a set of sequences of min(position, cap) as the clock advances.
class CappedContextSum {
 public:
  explicit CappedContextSum(uint64_t cap = 0) : cap_(static_cast<int64_t>(cap)) {}
  bool enabled() const { return cap_ > 0; }
  void join(uint32_t id, const DecodeMember& s, int64_t clock);
  /// Call only once every crossing up to `clock` has been taken in (advance).
  void leave(const DecodeMember& s, int64_t clock);
  /// Takes in the sequences whose position reached the cap by `clock`.
  void advance(int64_t clock, const std::vector<DecodeMember>& members);
  double sum(int64_t clock) const { return static_cast<double>(below_base_sum_ + below_ * clock + cap_ * at_cap_); }
  int64_t below() const { return below_; }  ///< sequences whose position is below the cap

 private:
  struct Crossing {
    int64_t at;  ///< the clock at which the position reaches the cap (cap - base)
    uint32_t id, epoch;
    bool operator>(const Crossing& o) const { return at > o.at; }
  };
  int64_t cap_ = 0;
  int64_t below_ = 0, below_base_sum_ = 0, at_cap_ = 0;
  std::priority_queue<Crossing, std::vector<Crossing>, std::greater<>> crossing_;
};

/// The sequences one rank decodes, in the order they joined (the newest is preempted first).
class DecodeSet {
 public:
  DecodeSet() = default;
  /// `members` is indexed by request id and must outlive the set; it may grow.
  DecodeSet(std::vector<DecodeMember>* members, const StepModel& m);

  uint64_t size() const { return live_; }
  bool empty() const { return live_ == 0; }
  /// Adds request `id` at `position` with `generated` of its `gen_tokens` so far (fewer than those).
  void join(uint32_t id, uint64_t position, uint64_t generated, uint64_t gen_tokens);
  struct Where {
    uint64_t position = 0, generated = 0;
  };
  Where where(uint32_t id) const;
  /// Removes `id` (a member) and says where it stood.
  Where leave(uint32_t id);
  /// The newest member (the set is not empty).
  uint32_t newest();
  /// Sequences whose context is below the sliding window (all of them without one): those whose
  /// next token still adds sliding-layer KV.
  uint64_t below_window() const { return window_.enabled() ? static_cast<uint64_t>(window_.below()) : live_; }
  /// A decode step of every member: add_decode() of each, summed exactly.
  void add_to(StepMix& mix) const;
  /// Every member gains a token; the ids that reach their gen_tokens leave and are appended to
  /// `finished` in the order they joined.
  void advance(std::vector<uint32_t>& finished);

 private:
  struct Finish {
    int64_t at;    ///< the clock at which the sequence has generated gen_tokens
    uint64_t seq;  ///< join order
    uint32_t id, epoch;
    bool operator>(const Finish& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  struct Joined {
    uint32_t id, epoch;
  };
  bool is_live(const Joined& j) const;
  void drop(uint32_t id);

  std::vector<DecodeMember>* members_ = nullptr;
  bool sparse_ = false;
  int64_t clock_ = 0;
  uint64_t live_ = 0, joins_ = 0;
  int64_t base_sum_ = 0;
  CappedContextSum window_, topk_, compressed_;
  std::priority_queue<Finish, std::vector<Finish>, std::greater<>> finishing_;
  std::vector<Joined> order_;  ///< join order, with entries of members that left (skipped, compacted)
};

}  // namespace optadvisor
