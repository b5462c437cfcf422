// SPDX-License-Identifier: MIT
// Renderers: they format already-computed results and never compute.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/catalog/hardware.hpp"

namespace optadvisor {

/// Version of every JSON document the CLI prints; bumped on breaking changes.
constexpr int kSchemaVersion = 1;

enum class OutputFormat { kText, kJson, kMarkdown, kHtml };

/// Text styling; enabled only on a terminal and never with NO_COLOR.
struct Style {
  bool color = false;
  std::string bold(const std::string& s) const;
  std::string dim(const std::string& s) const;
};

/// `hw list`: one row per device.
std::string render_hardware_list(const std::vector<const HardwareProfile*>& devices, OutputFormat format);
nlohmann::json hardware_list_json(const std::vector<const HardwareProfile*>& devices);

/// `hw show`: the whole profile with sources.
std::string render_hardware_show(const HardwareProfile& hw, const Resolution& how, const std::string& origin,
                                 OutputFormat format, const Style& style);

}  // namespace optadvisor

#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/prepare.hpp"

namespace optadvisor {

/// `estimate`: the full analysis with its inputs and efficiency factors.
nlohmann::json estimate_json(const PreparedScenario& prepared, const Analysis& analysis);
std::string render_estimate(const PreparedScenario& prepared, const Analysis& analysis, OutputFormat format, const Style& style);

/// `fit`: memory breakdown, headroom, and the largest context and batch that fit.
nlohmann::json fit_json(const PreparedScenario& prepared, const Analysis& analysis);
std::string render_fit(const PreparedScenario& prepared, const Analysis& analysis, OutputFormat format, const Style& style);

/// A command that would measure this scenario on real hardware.
std::string measure_command(const PreparedScenario& prepared);

/// The inputs of a scenario (device, model, format, engine, workload) as the JSON documents print them.
nlohmann::json scenario_json(const PreparedScenario& prepared);

/// {source, rows, date} of the user's calibration the scenario runs with, or null.
nlohmann::json calibration_json(const PreparedScenario& prepared);

}  // namespace optadvisor
