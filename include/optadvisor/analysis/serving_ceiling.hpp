// SPDX-License-Identifier: MIT
// An upper bound on what one serving worker completes within its SLOs, from
// the step model alone (no simulation): capacity planning screens layouts
// with it and simulates only those that can rank.
#pragma once

#include "optadvisor/analysis/serving.hpp"

namespace optadvisor {

/// The work one request brings to a worker of a given role.
struct CeilingLoad {
  double prompt_tokens = 1024;  ///< prefilled by this worker (0 for a decode worker: the KV arrives)
  double decode_steps = 1023;   ///< tokens decoded by this worker after the first (0 for a prefill worker)
  double context_tokens = 1024;  ///< the context a decoding sequence holds at least (its prompt)
  double slo_ttft_s = 0;         ///< 0 = none
  double slo_tpot_s = 0;         ///< 0 = none
  double request_overhead_s = 0;  ///< per request outside the iterations (API server), in TTFT
};

/// The work of `load` for one worker of `pool`'s role: a prefill worker serves prompts of one
/// generated token, a decode worker decodes what a prefill worker sent, a mixed worker does both.
CeilingLoad ceiling_load(const ServingPool& pool, const ServingLoad& load, double slo_ttft_s, double slo_tpot_s,
                         double request_overhead_s);

/// Requests per second one worker of `pool` cannot exceed while meeting the SLOs; 0 when a request
/// alone misses one (a prompt prefilled alone past the TTFT SLO, one sequence decoded alone past the
/// TPOT SLO). The least of three bounds, each from step_cost()'s terms, which only grow with the mix:
///   compute:  each request's tokens cost at least their weight-GEMM math at the era's rate (and a
///             prompt its causal attention math), whatever else a step does;
///   decode:   each request takes decode_steps decode steps; a rank's step carries at most B
///             sequences (its KV pool, its sequence cap, and the TPOT SLO: a batch whose step alone
///             exceeds the SLO), and a step of b sequences costs at least step_cost(b) (b per step
///             is most efficient at b = B: the fixed costs spread, the rest grows with b);
///   latency:  the two SLO checks above.
/// The TPOT-SLO batch is the one approximation (a request may spend part of its life in smaller
/// batches); the planner allows a margin for it. A unit test checks the bound against simulations.
double serving_rate_ceiling(const ServingPool& pool, const CeilingLoad& load);

}  // namespace optadvisor
