// SPDX-License-Identifier: MIT
// `size`: a model's bytes per format (weights, KV cache), as text, Markdown and JSON.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "optadvisor/analysis/size.hpp"
#include "optadvisor/render/format.hpp"

namespace optadvisor {

std::string render_size(const SizeResult& result, OutputFormat format, bool verbose, const Style& style);
nlohmann::json size_json(const SizeResult& result, bool verbose);

}  // namespace optadvisor
