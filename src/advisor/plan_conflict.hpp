// SPDX-License-Identifier: MIT
// Internal: the plan's conflict check (two steps never change the same thing),
// out of the playbook so a test can hold it to its contract.
#pragma once

#include <string>
#include <vector>

#include "optadvisor/advisor/playbook.hpp"

namespace optadvisor {

/// The id of the first plan step whose rule applies a transform `rule` also applies
/// (both would change the same setting); "" when `rule` conflicts with none of them.
std::string plan_conflict(const Rule& rule, const std::vector<PlanStep>& steps);

}  // namespace optadvisor
