// SPDX-License-Identifier: MIT
// Internal: typed reads of one JSON field, the one place the type rules live (what counts
// as absent, as a non-negative integer, a number, a flag, a string). Each reader (catalog
// data, config.json, benchmark files) words its own errors around these.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace optadvisor::json_field {

/// The field `key` of object `j`, or nullptr when `j` is no object, or the field is absent or JSON null.
inline const nlohmann::json* find(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

/// A non-negative integer (unsigned or signed JSON integer); nullopt for anything else.
inline std::optional<uint64_t> as_uint(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  return std::nullopt;
}

/// Any JSON number as a double; nullopt for anything else.
inline std::optional<double> as_number(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  return std::nullopt;
}

/// true or false; nullopt for anything else (no 0/1 or "yes").
inline std::optional<bool> as_bool(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>();
  return std::nullopt;
}

/// A JSON string; nullopt for anything else.
inline std::optional<std::string> as_string(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  return std::nullopt;
}

}  // namespace optadvisor::json_field
