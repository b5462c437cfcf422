// SPDX-License-Identifier: MIT
// A small JSON Schema (draft-07) checker for the keywords data/schema/ uses, and no more.
#pragma once

#include <map>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "optadvisor/base/error.hpp"

namespace optadvisor {

/// The keywords JsonSchema implements. Annotations ($schema, $id, title, description) are
/// accepted and ignored; every other keyword is an assertion checked as draft-07 defines it.
const std::vector<std::string>& supported_schema_keywords();

/// Every keyword of `schema` (and of its subschemas) that JsonSchema does not implement, as
/// "<pointer into the schema>: <keyword>"; also references that are not "#/..." within the schema.
/// Empty when the whole schema can be checked.
std::vector<std::string> unsupported_schema_keywords(const nlohmann::json& schema);

/// One schema, ready to check documents against. The constructor throws Error (runtime) when the
/// schema uses a keyword it does not implement, so that no constraint is silently ignored.
class JsonSchema {
 public:
  explicit JsonSchema(nlohmann::json schema);

  /// Appends one Problem per violation (file = display, a JSON pointer, a short message).
  void check(const nlohmann::json& doc, const std::string& display, std::vector<Problem>& problems) const;

 private:
  void check_node(const nlohmann::json& schema, const nlohmann::json& doc, const std::string& pointer, std::vector<Problem>& out) const;
  void check_alternatives(const nlohmann::json& branches, bool exactly_one, const nlohmann::json& doc, const std::string& pointer,
                          std::vector<Problem>& out) const;
  const nlohmann::json& resolve(const nlohmann::json& schema) const;

  nlohmann::json root_;
  std::map<std::string, std::regex> patterns_;
};

}  // namespace optadvisor
