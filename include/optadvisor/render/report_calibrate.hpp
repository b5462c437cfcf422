// SPDX-License-Identifier: MIT
// `calibrate`: the fit of a user's measurements, as text, Markdown and JSON.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "optadvisor/calibrate/calibrate.hpp"
#include "optadvisor/render/format.hpp"

namespace optadvisor {

/// `calibrate` output: the before/after table, factors, skipped rows, the overlay.
/// `path` is where the overlay went (`written`) or would go (--dry-run).
nlohmann::json calibration_report_json(const CalibrationFit& fit, const std::string& path, bool written);
std::string render_calibration(const CalibrationFit& fit, const std::string& path, bool written, OutputFormat format, const Style& style);

}  // namespace optadvisor
