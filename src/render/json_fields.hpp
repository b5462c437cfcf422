// SPDX-License-Identifier: MIT
// Internal: JSON fields the compare and search documents share.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace optadvisor {

/// The number, or null when there is none.
inline nlohmann::json optional_number(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

/// --batch as a number; null for "max" (workload.batch_max says so, and each scenario has the batch it ran).
inline nlohmann::json batch_json(const std::string& batch) {
  const bool digits = !batch.empty() && batch.size() < 10 && batch.find_first_not_of("0123456789") == std::string::npos;
  return digits ? nlohmann::json(std::stoull(batch)) : nlohmann::json(nullptr);
}

}  // namespace optadvisor
