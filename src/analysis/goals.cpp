// SPDX-License-Identifier: MIT
#include "optadvisor/analysis/goals.hpp"

#include <algorithm>

namespace optadvisor {

std::string_view to_string(Goal g) {
  switch (g) {
    case Goal::kLatency: return "latency";
    case Goal::kThroughput: return "throughput";
    case Goal::kMemory: return "memory";
    case Goal::kTraining: return "training";
  }
  return "latency";
}

const std::vector<Goal>& all_goals() {
  static const std::vector<Goal> goals = {Goal::kLatency, Goal::kThroughput, Goal::kMemory, Goal::kTraining};
  return goals;
}

std::optional<Goal> goal_from_string(std::string_view s) {
  for (Goal g : all_goals())
    if (to_string(g) == s) return g;
  return std::nullopt;
}

const MetricInfo& metric_for(Goal goal) {
  static const MetricInfo latency{"request_latency_s", "request latency", "s", true};
  static const MetricInfo throughput{"output_tokens_per_s", "serving throughput", "tokens/s", false};
  static const MetricInfo memory{"memory_use_fraction", "memory needed / usable", "fraction", true};
  static const MetricInfo training{"training_tokens_per_s_per_gpu", "training throughput per GPU", "tokens/s per GPU", false};
  switch (goal) {
    case Goal::kLatency: return latency;
    case Goal::kThroughput: return throughput;
    case Goal::kMemory: return memory;
    case Goal::kTraining: return training;
  }
  return latency;
}

double goal_metric(Goal goal, const Analysis& a) {
  switch (goal) {
    case Goal::kLatency: return a.request_latency_s;
    case Goal::kThroughput: return a.serving_tokens_per_s;
    case Goal::kMemory: return a.memory.limit_bytes > 0 ? a.memory.total_bytes / a.memory.limit_bytes : 0.0;
    case Goal::kTraining: return 0;  // training steps use TrainingAnalysis::tokens_per_s
  }
  return 0;
}

}  // namespace optadvisor
