// SPDX-License-Identifier: MIT
// `serve` as text and Markdown: one load point, or the sweep table. Its JSON is serving_json.hpp's.
#pragma once

#include <string>
#include <vector>

#include "optadvisor/analysis/serving_setup.hpp"
#include "optadvisor/render/format.hpp"

namespace optadvisor {

/// One serving worker's parallel layout in words, "tp 2", "tp 1 dp-attention 8 ep 8", "tp 4 pp 2":
/// every degree above 1 after tp (written once for serve, plan and the chart's series names).
std::string layout_text(const ServingLayout& layout);

/// A pool, "2 workers x tp 4" (with `gpus_each`, "... (4 GPUs each)").
std::string pool_text(const ServePoolRequest& pool, bool gpus_each);

std::string render_serve(const PreparedServing& prepared, const ServeRequest& request, const std::vector<ServeRequest>& points,
                         const std::vector<ServingResult>& results, bool sweep, OutputFormat format, const Style& style);

}  // namespace optadvisor
