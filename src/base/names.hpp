// SPDX-License-Identifier: MIT
// Name lookup shared by every catalog: "RTX 5090", "rtx-5090" and "rtx5090"
// are the same name, and a miss suggests the closest ids.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace optadvisor {

/// Lowercases and drops everything but ASCII letters and digits.
std::string normalize_name(std::string_view name);

/// Edit distance (insertions, deletions, substitutions, adjacent transpositions).
std::size_t edit_distance(std::string_view a, std::string_view b);

/// Up to `limit` candidates closest to `query` (compared normalized), best first.
/// A candidate qualifies when it contains the query, or is within an edit
/// distance of about a third of the query's length.
std::vector<std::string> closest_names(std::string_view query, const std::vector<std::string>& candidates, std::size_t limit = 3);

}  // namespace optadvisor
