// SPDX-License-Identifier: MIT
// What the user optimizes for, and the one number each goal is judged by.
// The advisor ranks by it, compare and search sort by it; it is read off an
// Analysis (analyze() computes request latency and serving throughput once).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "optadvisor/analysis/analysis.hpp"

namespace optadvisor {

enum class Goal { kLatency, kThroughput, kMemory, kTraining };
std::string_view to_string(Goal g);
std::optional<Goal> goal_from_string(std::string_view s);
const std::vector<Goal>& all_goals();

/// The number a goal is judged by.
struct MetricInfo {
  std::string id;     ///< "request_latency_s", "output_tokens_per_s", "memory_use_fraction"
  std::string label;  ///< "request latency"
  std::string unit;   ///< "s", "tokens/s", "fraction"
  bool lower_is_better = true;
};
const MetricInfo& metric_for(Goal goal);

/// The goal's metric for an analysis: latency = Analysis::request_latency_s;
/// throughput = Analysis::serving_tokens_per_s; memory = needed / usable.
/// (Training is judged by TrainingAnalysis::tokens_per_s; this returns 0 for it.)
double goal_metric(Goal goal, const Analysis& analysis);

}  // namespace optadvisor
