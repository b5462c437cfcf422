// SPDX-License-Identifier: MIT
// `serve` as text and Markdown: one load point, or the sweep table. Its JSON is serving_json.hpp's.
#pragma once

#include <string>
#include <vector>

#include "optadvisor/analysis/serving_setup.hpp"
#include "optadvisor/render/format.hpp"

namespace optadvisor {

std::string render_serve(const PreparedServing& prepared, const ServeRequest& request, const std::vector<ServeRequest>& points,
                         const std::vector<ServingResult>& results, bool sweep, OutputFormat format, const Style& style);

}  // namespace optadvisor
