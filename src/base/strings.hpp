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

/// "a", "a and b", "a, b and c": a list as a sentence names it; "" for no items.
inline std::string join_with_and(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) out += (i == 0 ? "" : (i + 1 == items.size() ? " and " : ", ")) + items[i];
  return out;
}

/// ASCII case-insensitive equality ("BF16" and "bf16"), without building a lowered copy.
inline bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

}  // namespace optadvisor
