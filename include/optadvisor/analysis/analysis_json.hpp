// SPDX-License-Identifier: MIT
// The JSON form of an inference Analysis: one serializer, used by `estimate --json`,
// `fit --json`, the sections search builds for --require, compare and the advisor.
// Each section's keys are listed once (analysis_json.cpp); a full section and a
// partial one are built from the same list.
#pragma once

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/prepare.hpp"

namespace optadvisor {

/// The inputs of a scenario (device, model, format, engine, workload) as the JSON documents print them.
/// workload.batch is the number of sequences the analysis ran (the resolved `--batch max` too);
/// workload.batch_max says whether it was asked for as "as many as fit".
nlohmann::json scenario_json(const PreparedScenario& prepared, const Analysis& analysis);

/// {source, rows, date} of the user's calibration the scenario runs with, or null.
nlohmann::json calibration_json(const PreparedScenario& prepared);

/// A command that would measure this scenario on real hardware (the engine's
/// measure_command template filled in with the batch that ran: under --batch max the one the
/// analysis resolved), or "" when the engine has none.
std::string measure_command(const PreparedScenario& prepared, const Analysis& analysis);

/// `estimate --json`: the full analysis with its inputs and efficiency factors.
nlohmann::json estimate_json(const PreparedScenario& prepared, const Analysis& analysis);

/// `fit --json`: memory breakdown, headroom, and the largest context and batch that fit.
nlohmann::json fit_json(const PreparedScenario& prepared, const Analysis& analysis);

/// The top-level sections of estimate_json that estimate_sections_json builds:
/// schema_version, scenario, memory, prefill, decode and throughput.
const std::set<std::string>& estimate_sections_modeled();

/// The parts of estimate_json that `wanted` names — a whole modeled section
/// ("memory") or one key of it ("decode.tokens_per_s") — with the same values,
/// without building the rest: a --require costs about a microsecond per candidate.
nlohmann::json estimate_sections_json(const PreparedScenario& prepared, const Analysis& analysis, const std::set<std::string>& wanted);

}  // namespace optadvisor
