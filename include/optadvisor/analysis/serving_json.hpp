// SPDX-License-Identifier: MIT
// The JSON form of `optadvisor serve` (data/schema/output/serve.schema.json):
// one point, or a sweep of points over the load.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "optadvisor/analysis/serving_setup.hpp"

namespace optadvisor {

/// One load point: latencies (mean, p50, p90, p99 in seconds), throughput, goodput, the KV pool and the bound.
/// A length spread and the range it draws from (kind, range_ratio or stddev_tokens, min, max).
nlohmann::json length_spread_json(uint64_t mean, const LengthSpread& spread);

nlohmann::json serving_point_json(const ServeRequest& request, const ServingResult& result);

/// `serve --json`: the scenario, the layout, the load and one point (or `sweep`: several).
nlohmann::json serve_json(const PreparedServing& prepared, const ServeRequest& request, const std::vector<ServeRequest>& points,
                          const std::vector<ServingResult>& results, bool sweep);

}  // namespace optadvisor
