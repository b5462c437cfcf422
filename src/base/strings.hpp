// SPDX-License-Identifier: MIT
// Small text helpers shared by every area.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace optadvisor {

/// "a, b, c" (or with another separator); "" for no items.
inline std::string join(const std::vector<std::string>& items, std::string_view sep = ", ") {
  return fmt::format("{}", fmt::join(items, sep));
}

}  // namespace optadvisor
