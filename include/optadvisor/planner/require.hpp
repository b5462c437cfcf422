// SPDX-License-Identifier: MIT
// --require expressions: simple comparisons over paths into a command's JSON
// output, for gating CI on an estimate.
//
//   decode.tokens_per_s>=30        a number compared with a number
//   memory.fits                    a boolean that must be true
//   !memory.fits                   ... or false
//   scenario.engine.id==vllm       strings compare with == and != (quotes optional)
//   plan.steps[0].gain>=1.5        array elements by index
//   memory.total_bytes<=24GiB      numbers take k/M/G/T (10^3..) and Ki/Mi/Gi/Ti (2^10..) suffixes
//
// Operators: >= <= > < == !=. Paths are dot-separated object keys with
// optional [index] parts. A malformed expression throws bad_input naming the
// 1-based column of the problem.
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace optadvisor {

struct PathPart {
  std::string key;       ///< object key; empty for an index part
  long long index = -1;  ///< array index when key is empty
};

enum class CompareOp { kTruthy, kFalsy, kGe, kLe, kGt, kLt, kEq, kNe };

struct Requirement {
  std::string text;  ///< as the user wrote it
  std::vector<PathPart> path;
  CompareOp op = CompareOp::kTruthy;
  std::variant<std::monostate, double, bool, std::string> value;  ///< right-hand side
};

/// Parses one expression; throws bad_input("--require 'x': ... at column N").
Requirement parse_requirement(std::string_view text);

struct RequirementResult {
  std::string text;  ///< the expression
  bool passed = false;
  std::string actual;    ///< the value found, as JSON text ("missing" when the path is absent)
  bool missing = false;  ///< the path is not in the document: a mistake in the expression, not a failed check
  std::string reason;    ///< why it failed, empty when it passed
};

/// Evaluates every requirement against a JSON document (a command's --json output).
/// A path that is absent, or a value of the wrong type, fails with a reason.
std::vector<RequirementResult> check_requirements(const std::vector<Requirement>& requirements, const nlohmann::json& document);

/// "path.to[0].value" as written back from parsed parts.
std::string path_to_string(const std::vector<PathPart>& path);

}  // namespace optadvisor
