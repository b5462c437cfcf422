// SPDX-License-Identifier: MIT
// Reading files users hand us: only regular files, at most kMaxInputFileBytes, and
// JSON no deeper than kMaxJsonDepth. Every file reader goes through these two.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace optadvisor {

/// Largest text input accepted (config.json, benchmark results, overlays): 64 MiB.
constexpr std::uintmax_t kMaxInputFileBytes = std::uintmax_t{64} << 20;
/// Deepest nesting of arrays and objects accepted in a JSON input.
constexpr int kMaxJsonDepth = 256;

/// The whole of a regular file of at most kMaxInputFileBytes. On failure returns nullopt and sets
/// `why` to a phrase that follows the file's name: "does not exist", "is a directory, not a file",
/// "is not a regular file", "is larger than the 64 MiB limit", "cannot be read".
std::optional<std::string> read_input_file(const std::string& path, std::string& why);

/// Parses one JSON document nested at most kMaxJsonDepth deep. On failure returns nullopt and sets
/// `why` to the reason ("parse error at line 1, column 2: ...", "number overflow parsing '1e999'",
/// "nested deeper than 256 levels").
std::optional<nlohmann::json> parse_json_input(std::string_view text, std::string& why);

/// `text` made safe for a one-line message: control characters escaped (\n, \x1b), cut to
/// `max_chars` with "..." appended.
std::string printable(std::string_view text, std::size_t max_chars = 200);

}  // namespace optadvisor
