// SPDX-License-Identifier: MIT
#include "optadvisor/planner/require.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <type_traits>

#include <fmt/format.h>

#include "base/names.hpp"
#include "optadvisor/base/error.hpp"

namespace optadvisor {
namespace {

constexpr std::string_view kSyntaxHint = "e.g. --require 'decode.tokens_per_s>=30', --require memory.fits, --require '!memory.fits'";

/// A hand-written scanner over one expression; every failure names a 1-based column.
class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Requirement parse() {
    Requirement r;
    r.text = std::string(text_);
    skip_space();
    if (at_end()) fail("empty expression");
    bool negated = false;
    if (peek() == '!' && !(pos_ + 1 < text_.size() && text_[pos_ + 1] == '=')) {
      negated = true;
      ++pos_;
      skip_space();
    }
    r.path = parse_path();
    skip_space();
    if (at_end()) {
      r.op = negated ? CompareOp::kFalsy : CompareOp::kTruthy;
      return r;
    }
    if (negated) fail("'!' negates a bare path; it cannot be combined with a comparison");
    r.op = parse_op();
    skip_space();
    if (at_end()) fail("expected a value after the operator");
    r.value = parse_value(r.op);
    skip_space();
    if (!at_end()) fail(fmt::format("unexpected '{}' after the value", text_.substr(pos_)));
    return r;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw bad_input(fmt::format("--require '{}': {} at column {}", text_, what, pos_ + 1), std::string(kSyntaxHint));
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }
  void skip_space() {
    while (!at_end() && std::isspace(static_cast<unsigned char>(peek()))) ++pos_;
  }
  static bool is_key_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; }

  std::vector<PathPart> parse_path() {
    std::vector<PathPart> path;
    for (;;) {
      if (at_end() || !is_key_char(peek())) fail("expected a JSON path such as decode.tokens_per_s");
      PathPart part;
      while (!at_end() && is_key_char(peek())) part.key += text_[pos_++];
      path.push_back(std::move(part));
      while (!at_end() && peek() == '[') {
        ++pos_;
        const std::size_t start = pos_;
        while (!at_end() && std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
        if (pos_ == start) fail("expected an array index");
        if (pos_ - start > 9) {
          pos_ = start;
          fail("array index too large");
        }
        PathPart index;
        index.index = std::stoll(std::string(text_.substr(start, pos_ - start)));
        if (at_end() || peek() != ']') fail("expected ']'");
        ++pos_;
        path.push_back(index);
      }
      if (at_end() || peek() != '.') break;
      ++pos_;
    }
    return path;
  }

  CompareOp parse_op() {
    const std::string_view rest = text_.substr(pos_);
    struct Spelling {
      std::string_view text;
      CompareOp op;
    };
    // Two-character operators first, so that ">=" is not read as ">".
    static constexpr Spelling kOps[] = {{">=", CompareOp::kGe}, {"<=", CompareOp::kLe}, {"==", CompareOp::kEq},
                                        {"!=", CompareOp::kNe}, {">", CompareOp::kGt},  {"<", CompareOp::kLt}};
    for (const auto& s : kOps) {
      if (rest.substr(0, s.text.size()) == s.text) {
        pos_ += s.text.size();
        return s.op;
      }
    }
    if (!rest.empty() && rest.front() == '=') fail("'=' is not an operator; use '=='");
    fail(fmt::format("expected an operator (>=, <=, >, <, ==, !=) before '{}'", rest));
  }

  std::variant<std::monostate, double, bool, std::string> parse_value(CompareOp op) {
    const bool ordering = op == CompareOp::kGe || op == CompareOp::kLe || op == CompareOp::kGt || op == CompareOp::kLt;
    const std::size_t start = pos_;
    if (peek() == '\'' || peek() == '"') {
      const char quote = text_[pos_++];
      std::string s;
      while (!at_end() && peek() != quote) s += text_[pos_++];
      if (at_end()) {
        pos_ = start;
        fail("unterminated string");
      }
      ++pos_;
      if (ordering) {
        pos_ = start;
        fail("strings compare only with == and !=");
      }
      return s;
    }
    std::string token;
    while (!at_end() && !std::isspace(static_cast<unsigned char>(peek()))) token += text_[pos_++];
    if (token == "true" || token == "false") {
      if (ordering) {
        pos_ = start;
        fail("booleans compare only with == and !=");
      }
      return token == "true";
    }
    if (auto number = parse_number(token)) return *number;
    if (ordering) {
      pos_ = start;
      fail(fmt::format("expected a number, got '{}'", token));
    }
    if (token.empty() || !std::isalpha(static_cast<unsigned char>(token.front()))) {
      pos_ = start;
      fail(fmt::format("expected a number, true/false or a string, got '{}'", token));
    }
    return token;  // a bare word: vllm, rtx5090, llama.cpp:cuda
  }

  /// "30", "1.5e3", "24GiB", "2G", "-1"; nullopt when the token is not a number.
  static std::optional<double> parse_number(const std::string& token) {
    if (token.empty()) return std::nullopt;
    const char c = token.front();
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.')) return std::nullopt;
    char* end = nullptr;
    const double v = std::strtod(token.c_str(), &end);
    if (end == token.c_str()) return std::nullopt;
    std::string suffix(end);
    // Units are decimal (k, M, G, T) or binary (Ki, Mi, Gi, Ti); a trailing B (bytes) is optional.
    if (!suffix.empty() && suffix.back() == 'B') suffix.pop_back();
    double scale = 1;
    if (suffix.empty())
      scale = 1;
    else if (suffix == "k" || suffix == "K")
      scale = 1e3;
    else if (suffix == "M")
      scale = 1e6;
    else if (suffix == "G")
      scale = 1e9;
    else if (suffix == "T")
      scale = 1e12;
    else if (suffix == "Ki")
      scale = 1024.0;
    else if (suffix == "Mi")
      scale = 1024.0 * 1024;
    else if (suffix == "Gi")
      scale = 1024.0 * 1024 * 1024;
    else if (suffix == "Ti")
      scale = 1024.0 * 1024 * 1024 * 1024;
    else
      return std::nullopt;
    const double scaled = v * scale;
    if (!std::isfinite(scaled)) return std::nullopt;
    return scaled;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

const char* op_text(CompareOp op) {
  switch (op) {
    case CompareOp::kGe: return ">=";
    case CompareOp::kLe: return "<=";
    case CompareOp::kGt: return ">";
    case CompareOp::kLt: return "<";
    case CompareOp::kEq: return "==";
    case CompareOp::kNe: return "!=";
    case CompareOp::kTruthy:
    case CompareOp::kFalsy: break;
  }
  return "";
}

/// Follows the path; nullptr (and where it stopped) when a part is absent.
const nlohmann::json* lookup(const nlohmann::json& doc, const std::vector<PathPart>& path, std::string* missing) {
  const nlohmann::json* node = &doc;
  std::vector<PathPart> walked;
  for (const auto& part : path) {
    walked.push_back(part);
    if (part.key.empty()) {
      if (!node->is_array() || part.index < 0 || static_cast<std::size_t>(part.index) >= node->size()) {
        *missing = path_to_string(walked);
        return nullptr;
      }
      node = &(*node)[static_cast<std::size_t>(part.index)];
    } else {
      if (!node->is_object()) {
        *missing = path_to_string(walked);
        return nullptr;
      }
      auto it = node->find(part.key);
      if (it == node->end()) {
        *missing = path_to_string(walked);
        return nullptr;
      }
      node = &*it;
    }
  }
  return node;
}

/// Keys one level below where a path broke off, to suggest the right spelling.
std::string available_keys(const nlohmann::json& doc, const std::vector<PathPart>& path) {
  const nlohmann::json* node = &doc;
  std::string wanted;  // the key where the path left the document
  for (const auto& part : path) {
    const nlohmann::json* next = nullptr;
    if (part.key.empty()) {
      if (node->is_array() && part.index >= 0 && static_cast<std::size_t>(part.index) < node->size())
        next = &(*node)[static_cast<std::size_t>(part.index)];
    } else if (node->is_object()) {
      auto it = node->find(part.key);
      if (it != node->end()) next = &*it;
    }
    if (next == nullptr) {
      wanted = part.key;
      break;
    }
    node = next;
  }
  if (node->is_array()) return fmt::format("an array of {}", node->size());
  if (!node->is_object()) return "";
  // The keys nearest the one asked for first, then the others.
  std::vector<std::string> all;
  for (auto it = node->begin(); it != node->end(); ++it) all.push_back(it.key());
  std::vector<std::string> order = wanted.empty() ? std::vector<std::string>{} : closest_names(wanted, all);
  for (const auto& k : all)
    if (std::find(order.begin(), order.end(), k) == order.end()) order.push_back(k);
  std::string keys;
  for (std::size_t i = 0; i < order.size() && i < 12; ++i) keys += (keys.empty() ? "" : ", ") + order[i];
  if (order.size() > 12) keys += ", ...";
  return keys;
}

RequirementResult check_one(const Requirement& r, const nlohmann::json& doc) {
  RequirementResult result;
  result.text = r.text;
  std::string missing;
  const nlohmann::json* value = lookup(doc, r.path, &missing);
  if (value == nullptr) {
    result.actual = "missing";
    result.missing = true;
    const std::string keys = available_keys(doc, r.path);
    result.reason = fmt::format("'{}' is not in the output{}", missing, keys.empty() ? "" : " (there: " + keys + ")");
    return result;
  }
  result.actual = value->dump();
  if (r.op == CompareOp::kTruthy || r.op == CompareOp::kFalsy) {
    if (!value->is_boolean()) {
      result.reason = fmt::format("{} is {}, not a boolean; compare it with an operator", path_to_string(r.path), result.actual);
      return result;
    }
    result.passed = value->get<bool>() == (r.op == CompareOp::kTruthy);
    if (!result.passed) result.reason = fmt::format("{} is {}", path_to_string(r.path), result.actual);
    return result;
  }
  bool holds = false;
  if (const double* want = std::get_if<double>(&r.value)) {
    if (!value->is_number()) {
      result.reason = fmt::format("{} is {}, not a number", path_to_string(r.path), result.actual);
      return result;
    }
    const double got = value->get<double>();
    switch (r.op) {
      case CompareOp::kGe: holds = got >= *want; break;
      case CompareOp::kLe: holds = got <= *want; break;
      case CompareOp::kGt: holds = got > *want; break;
      case CompareOp::kLt: holds = got < *want; break;
      case CompareOp::kEq: holds = got == *want; break;
      case CompareOp::kNe: holds = got != *want; break;
      default: break;
    }
  } else if (const bool* flag = std::get_if<bool>(&r.value)) {
    if (!value->is_boolean()) {
      result.reason = fmt::format("{} is {}, not a boolean", path_to_string(r.path), result.actual);
      return result;
    }
    holds = (value->get<bool>() == *flag) == (r.op == CompareOp::kEq);
  } else if (const std::string* text = std::get_if<std::string>(&r.value)) {
    if (!value->is_string()) {
      result.reason = fmt::format("{} is {}, not a string", path_to_string(r.path), result.actual);
      return result;
    }
    holds = (value->get<std::string>() == *text) == (r.op == CompareOp::kEq);
  }
  result.passed = holds;
  if (!holds)
    result.reason = fmt::format("{} is {}, required {} {}", path_to_string(r.path), result.actual, op_text(r.op),
                                std::visit(
                                    [](const auto& v) -> std::string {
                                      using T = std::decay_t<decltype(v)>;
                                      if constexpr (std::is_same_v<T, double>)
                                        return fmt::format("{:g}", v);
                                      else if constexpr (std::is_same_v<T, bool>)
                                        return v ? "true" : "false";
                                      else if constexpr (std::is_same_v<T, std::string>)
                                        return "'" + v + "'";
                                      else
                                        return "";
                                    },
                                    r.value));
  return result;
}

}  // namespace

Requirement parse_requirement(std::string_view text) { return Parser(text).parse(); }

std::vector<RequirementResult> check_requirements(const std::vector<Requirement>& requirements, const nlohmann::json& document) {
  std::vector<RequirementResult> results;
  results.reserve(requirements.size());
  for (const auto& r : requirements) results.push_back(check_one(r, document));
  return results;
}

std::string path_to_string(const std::vector<PathPart>& path) {
  std::string out;
  for (const auto& part : path) {
    if (part.key.empty())
      out += fmt::format("[{}]", part.index);
    else
      out += (out.empty() ? "" : ".") + part.key;
  }
  return out;
}

}  // namespace optadvisor
