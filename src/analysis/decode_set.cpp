// SPDX-License-Identifier: MIT
#include "analysis/decode_set.hpp"

#include <cassert>

namespace optadvisor {

void CappedContextSum::join(uint32_t id, const DecodeMember& s, int64_t clock) {
  if (!enabled()) return;
  if (s.base + clock >= cap_) {
    ++at_cap_;
    return;
  }
  ++below_;
  below_base_sum_ += s.base;
  crossing_.push({cap_ - s.base, id, s.epoch});
}

void CappedContextSum::leave(const DecodeMember& s, int64_t clock) {
  if (!enabled()) return;
  if (s.base + clock >= cap_) {
    --at_cap_;
  } else {
    --below_;
    below_base_sum_ -= s.base;
  }
}

void CappedContextSum::advance(int64_t clock, const std::vector<DecodeMember>& members) {
  while (!crossing_.empty() && crossing_.top().at <= clock) {
    const Crossing c = crossing_.top();
    crossing_.pop();
    const DecodeMember& s = members[c.id];
    if (!s.live || s.epoch != c.epoch) continue;  // left before reaching the cap
    --below_;
    below_base_sum_ -= s.base;
    ++at_cap_;
  }
}

DecodeSet::DecodeSet(std::vector<DecodeMember>* members, const StepModel& m)
    : members_(members),
      sparse_(m.sparse_topk > 0),
      window_(m.window_tokens),
      topk_(m.sparse_topk),
      compressed_(m.compressed_cap_tokens) {}

void DecodeSet::join(uint32_t id, uint64_t position, uint64_t generated, uint64_t gen_tokens) {
  DecodeMember& s = (*members_)[id];
  assert(!s.live);
  s.base = static_cast<int64_t>(position) - clock_;
  s.gen_base = static_cast<int64_t>(generated) - clock_;
  ++s.epoch;
  s.live = true;
  ++live_;
  base_sum_ += s.base;
  window_.join(id, s, clock_);
  topk_.join(id, s, clock_);
  compressed_.join(id, s, clock_);
  finishing_.push({static_cast<int64_t>(gen_tokens) - s.gen_base, joins_++, id, s.epoch});
  order_.push_back({id, s.epoch});
}

DecodeSet::Where DecodeSet::where(uint32_t id) const {
  const DecodeMember& s = (*members_)[id];
  return {static_cast<uint64_t>(s.base + clock_), static_cast<uint64_t>(s.gen_base + clock_)};
}

void DecodeSet::drop(uint32_t id) {
  DecodeMember& s = (*members_)[id];
  assert(s.live);
  s.live = false;
  --live_;
  base_sum_ -= s.base;
  window_.leave(s, clock_);
  topk_.leave(s, clock_);
  compressed_.leave(s, clock_);
}

DecodeSet::Where DecodeSet::leave(uint32_t id) {
  const Where w = where(id);
  drop(id);
  return w;
}

bool DecodeSet::is_live(const Joined& j) const {
  const DecodeMember& s = (*members_)[j.id];
  return s.live && s.epoch == j.epoch;
}

uint32_t DecodeSet::newest() {
  while (!is_live(order_.back())) order_.pop_back();
  return order_.back().id;
}

void DecodeSet::add_to(StepMix& mix) const {
  const auto n = static_cast<double>(live_);
  const double full = static_cast<double>(base_sum_ + static_cast<int64_t>(live_) * clock_);
  mix.decode_sequences += n;
  mix.decode_context_full += full;
  mix.decode_context_sliding += window_.enabled() ? window_.sum(clock_) : full;
  if (sparse_) mix.decode_context_sparse += topk_.sum(clock_);
  if (compressed_.enabled()) mix.decode_context_compressed += compressed_.sum(clock_);
}

void DecodeSet::advance(std::vector<uint32_t>& finished) {
  ++clock_;
  const std::vector<DecodeMember>& members = *members_;
  window_.advance(clock_, members);
  topk_.advance(clock_, members);
  compressed_.advance(clock_, members);
  while (!finishing_.empty() && finishing_.top().at <= clock_) {
    const Finish f = finishing_.top();
    finishing_.pop();
    if (!is_live({f.id, f.epoch})) continue;  // preempted since
    drop(f.id);
    finished.push_back(f.id);
  }
  // Entries of members that left stay in order_ until they outnumber the members.
  if (order_.size() > 2 * live_ + 64) {
    std::size_t kept = 0;
    for (const Joined& j : order_)
      if (is_live(j)) order_[kept++] = j;
    order_.resize(kept);
  }
}

}  // namespace optadvisor
