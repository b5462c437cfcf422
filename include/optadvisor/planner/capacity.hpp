// SPDX-License-Identifier: MIT
// Capacity planning: the fewest GPUs (then the lowest cost) that serve a
// request rate at given lengths within TTFT and TPOT SLOs. Enumerates engine
// x weight format x layout (tensor parallel; for MoE models expert parallel
// and data-parallel attention) and bounds each layout's rate analytically
// (serving_rate_ceiling); then, fewest GPUs at the ceiling first, finds each
// layout's capacity per replica with the serving simulation and sizes the
// replicas, until no layout left can rank among the best found. Disaggregated,
// each layout's capacity as a prefill worker and as a decode worker sizes both
// pools for pairs of layouts, and the best pairs are simulated whole.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "optadvisor/analysis/serving_setup.hpp"

namespace optadvisor {

/// Candidates a plan ranks as an exhaustive search would (the rows its text table shows); past
/// them, a layout whose analytic ceiling needs more GPUs than the last is not simulated.
constexpr std::size_t kPlanRankedCandidates = 10;

struct CapacityRequest {
  ScenarioRequest scenario;  ///< hardware and model; quant and engine "" = try every one that runs
  double rate_per_s = 1;     ///< requests per second to serve
  uint64_t prompt_tokens = 1024;  ///< each request's, or the mean of prompt_spread
  uint64_t gen_tokens = 256;      ///< each request's, or the mean of gen_spread
  LengthSpread prompt_spread, gen_spread;  ///< fixed lengths unless set (request_lengths.hpp)
  double prefix_hit = 0;
  double slo_ttft_s = 0;        ///< required (> 0)
  double slo_tpot_s = 0;        ///< required (> 0)
  double slo_attainment = 0.9;  ///< share of requests that must meet both SLOs
  uint32_t max_gpus = 64;
  double gpu_hour_usd = 0;      ///< 0 = no cost
  bool disaggregated = true;  ///< also size prefill + decode pools (off with --aggregated-only)
  bool exhaustive = false;    ///< simulate every layout, not only those whose ceiling lets them rank (--exhaustive)
  uint64_t max_batched_tokens = 0;  ///< tokens per iteration of every pool (--max-batched-tokens); 0 = each engine's default
};

/// A disaggregated deployment: prefill workers of one layout, decode workers of another.
struct DisaggregatedSizing {
  ServePoolRequest prefill, decode;  ///< each pool's layout and worker count
  double prefill_rate_per_s = 0;     ///< the most one prefill worker serves within the TTFT SLO
  double decode_rate_per_s = 0;      ///< the most one decode worker serves within both SLOs
};

struct CapacityCandidate {
  std::string engine;
  std::string quant;
  ServePoolRequest layout;        ///< one replica (disaggregated: the decode pool's layout)
  std::optional<DisaggregatedSizing> disaggregated;  ///< set for a prefill + decode deployment (replicas 1)
  double replica_rate_per_s = 0;  ///< the most one replica serves within the SLOs (disaggregated: the sized pools')
  uint32_t replicas = 0;
  uint32_t gpus = 0;
  ServingResult at_load;  ///< one replica at its share of the rate
  double cost_per_hour_usd = 0;
  double cost_per_million_output_tokens_usd = 0;
  uint64_t order = 0;  ///< in the enumeration (aggregated layouts first, then each group's pairs): the last tie-break
};

struct CapacityPlan {
  std::vector<CapacityCandidate> candidates;  ///< meeting the SLOs within max_gpus, best first
  std::size_t layouts_screened = 0;         ///< options prepared and bounded analytically (serving_rate_ceiling)
  std::size_t layouts_evaluated = 0;        ///< aggregated replicas, prefill workers and decode workers simulated
  std::size_t disaggregated_pairs = 0;      ///< prefill x decode layout pairs sized
  /// What the search covers: every aggregated layout screened and every prefill x decode pair of
  /// one engine and format's layouts (bounded by their ceilings, or sized); the planner's speed is
  /// counted in these.
  std::size_t deployments_searched = 0;
  std::size_t simulations = 0;
  double gpu_hour_usd = 0;     ///< the price costs use: --gpu-hour-usd, else the device's list price (0 = none)
  std::string gpu_hour_from;   ///< "--gpu-hour-usd", or the title of the profile's price source
  std::vector<std::string> notes;
};

/// progress(done, total) is called after each layout (for a progress bar); may be empty.
CapacityPlan plan_capacity(const Catalog& catalog, const CapacityRequest& request,
                           const std::function<void(std::size_t, std::size_t)>& progress = {});

}  // namespace optadvisor
