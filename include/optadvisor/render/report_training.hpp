// SPDX-License-Identifier: MIT
// Renderers for --goal training: they format an already-computed
// TrainingAnalysis (and fit suggestions) and never compute.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "optadvisor/render/format.hpp"
#include "optadvisor/analysis/training.hpp"

namespace optadvisor {

/// `estimate --goal training`: step time, throughput, MFU, memory per GPU and
/// what binds the step, with the breakdowns and the factors used.
/// `deepspeed` is DeepSpeed's own model-state estimate, when one applies.
nlohmann::json training_estimate_json(const PreparedTraining& prepared, const TrainingAnalysis& analysis,
                                      const std::optional<DeepSpeedEstimate>& deepspeed = std::nullopt);
std::string render_training_estimate(const PreparedTraining& prepared, const TrainingAnalysis& analysis, OutputFormat format,
                                     const Style& style, const std::optional<DeepSpeedEstimate>& deepspeed = std::nullopt);

/// `fit --goal training`: memory per GPU against capacity and, when it does
/// not fit, the smallest changes that make it fit.
nlohmann::json training_fit_json(const PreparedTraining& prepared, const TrainingAnalysis& analysis,
                                 const std::vector<TrainingChange>& changes);
std::string render_training_fit(const PreparedTraining& prepared, const TrainingAnalysis& analysis,
                                const std::vector<TrainingChange>& changes, OutputFormat format, const Style& style);

}  // namespace optadvisor
