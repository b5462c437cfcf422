// SPDX-License-Identifier: MIT
// Renderers for `compare`: an aligned table (text), a Markdown table and a
// JSON document. They format an already-computed Comparison and never compute.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "optadvisor/planner/compare.hpp"
#include "optadvisor/render/format.hpp"

namespace optadvisor {

/// The comparison as JSON (data/schema/output/compare.schema.json).
nlohmann::json compare_json(const Comparison& comparison);
std::string render_compare(const Comparison& comparison, OutputFormat format, const Style& style);

}  // namespace optadvisor
