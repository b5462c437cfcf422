// SPDX-License-Identifier: MIT
// Renderers for `search`: the ranked configurations as text, Markdown or JSON,
// each with the `optadvisor estimate` command that reproduces it. They format
// an already-computed SearchResult and never compute.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "optadvisor/render/format.hpp"
#include "optadvisor/planner/search.hpp"

namespace optadvisor {

/// The first `top` candidates as JSON (data/schema/output/search.schema.json).
nlohmann::json search_json(const SearchResult& result, std::size_t top);
std::string render_search(const SearchResult& result, std::size_t top, OutputFormat format, const Style& style);

/// "searched N configurations (M fit, K meet the requirements)".
std::string search_summary(const SearchStats& stats);

}  // namespace optadvisor
