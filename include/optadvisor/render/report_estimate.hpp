// SPDX-License-Identifier: MIT
// `estimate` and `fit` as text and Markdown; their JSON is analysis_json.hpp's.
#pragma once

#include <string>

#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/analysis_json.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/render/format.hpp"

namespace optadvisor {

/// The GPUs of a workload for its summary line: "" on one GPU, ", 2 GPUs (tp 2, pp 1)",
/// ", 4 replicas x 2 GPUs (tp 2, pp 1)", ", 8 replicas x 1 GPU".
std::string gpus_text(const Workload& w);

/// `estimate`: the full analysis with its inputs and efficiency factors (JSON: estimate_json).
std::string render_estimate(const PreparedScenario& prepared, const Analysis& analysis, OutputFormat format, const Style& style);

/// `fit`: memory breakdown, headroom, and the largest context and batch that fit (JSON: fit_json).
std::string render_fit(const PreparedScenario& prepared, const Analysis& analysis, OutputFormat format, const Style& style);

}  // namespace optadvisor
