// SPDX-License-Identifier: MIT
// Where an open loop settles, estimated before it runs, so that its simulation
// starts from a server already holding its steady batch instead of an empty one
// that fills over a lifetime of arrivals while each fuller batch steps slower.
#pragma once

#include "optadvisor/analysis/serving.hpp"

namespace optadvisor {

struct OpenLoopStart {
  double sequences_per_rank = 0;  ///< decoding sequences one rank holds
  double step_s = 0;              ///< a step's time at that batch
  double lifetime_s = 0;          ///< a request's decode steps at step_s
  bool at_capacity = false;       ///< no batch the KV pool or the sequence cap allows keeps up (step_s: that batch decoding alone)
};

/// The batch N a rank of `pool` holds under Poisson arrivals of `rate_per_rank`: Little's law
/// N = rate x (gen - 1) steps x step(N), where a step decodes N sequences whose generated tokens
/// spread evenly over 1 .. gen - 1 and, on a pool that also prefills (`prefills`), computes the
/// prompt tokens that arrive in a step's time. The step grows with N (KV reads, attention, per
/// sequence work), so N is found by bisection; where even the largest batch the pool admits
/// falls short, that batch, `at_capacity`. Gen of one token: no decode batch.
OpenLoopStart open_loop_start(const ServingPool& pool, const ServingLoad& load, double rate_per_rank, bool prefills);

}  // namespace optadvisor
