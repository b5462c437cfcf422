// SPDX-License-Identifier: MIT
// `optadvisor plan`: the capacity plan as text, Markdown or JSON (data/schema/output/plan.schema.json).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "optadvisor/planner/capacity.hpp"
#include "optadvisor/render/format.hpp"

namespace optadvisor {

nlohmann::json capacity_json(const CapacityRequest& request, const CapacityPlan& plan);
std::string render_capacity(const CapacityRequest& request, const CapacityPlan& plan, OutputFormat format, const Style& style);

}  // namespace optadvisor
