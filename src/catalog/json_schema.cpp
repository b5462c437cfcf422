// SPDX-License-Identifier: MIT
// The JSON Schema keywords data/schema/ uses, checked as draft-07 defines them, with messages a
// user can act on. A schema that uses any other keyword is refused (unsupported_schema_keywords).
#include "catalog/json_schema.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace optadvisor {
namespace {

using nlohmann::json;

std::string escape_pointer_token(const std::string& token) {
  std::string out;
  for (char c : token) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

bool is_one_of(const std::string& s, std::initializer_list<const char*> names) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return s == n; });
}

bool known_type(const std::string& t) { return is_one_of(t, {"null", "boolean", "object", "array", "number", "integer", "string"}); }

/// Integers are JSON numbers written without a fraction or exponent, as the data files write them.
bool has_type(const json& doc, const std::string& type) {
  if (type == "null") return doc.is_null();
  if (type == "boolean") return doc.is_boolean();
  if (type == "object") return doc.is_object();
  if (type == "array") return doc.is_array();
  if (type == "number") return doc.is_number();
  if (type == "integer") return doc.is_number_integer();
  if (type == "string") return doc.is_string();
  return false;
}

bool type_matches(const json& schema, const json& doc) {
  if (!schema.is_object() || !schema.contains("type")) return true;
  const json& type = schema["type"];
  if (type.is_string()) return has_type(doc, type.get<std::string>());
  return std::any_of(type.begin(), type.end(), [&](const json& t) { return has_type(doc, t.get<std::string>()); });
}

std::string type_in_words(const std::string& type, const json& schema) {
  const bool positive = schema.contains("exclusiveMinimum") && schema["exclusiveMinimum"] == 0;
  const bool non_negative = schema.contains("minimum") && schema["minimum"] == 0;
  if (type == "number") return positive ? "a positive number" : non_negative ? "a non-negative number" : "a number";
  if (type == "integer") return positive ? "a positive integer" : non_negative ? "a non-negative integer" : "an integer";
  if (type == "string") return "a string";
  if (type == "boolean") return "true or false";
  if (type == "array") return "an array";
  if (type == "object") return "an object";
  return type;  // "null"
}

/// What a (resolved) schema wants, in words: "a positive number", "a string or null", "one of ...".
std::string expected_in_words(const json& schema) {
  if (!schema.is_object()) return "";
  if (schema.contains("enum")) {
    std::string values;
    for (const auto& v : schema["enum"]) values += (values.empty() ? "" : ", ") + v.dump();
    return "one of " + values;
  }
  if (schema.contains("const")) return schema["const"].dump();
  if (!schema.contains("type")) return "";
  const json& type = schema["type"];
  if (type.is_string()) return type_in_words(type.get<std::string>(), schema);
  std::string words;
  for (const auto& t : type) words += (words.empty() ? "" : " or ") + type_in_words(t.get<std::string>(), schema);
  return words;
}

std::size_t code_points(const std::string& s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string count_of(std::size_t n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

void walk_keywords(const json& root, const json& schema, const std::string& at, std::vector<std::string>& out) {
  if (schema.is_boolean()) return;
  if (!schema.is_object()) {
    out.push_back(at + ": a schema must be an object or a boolean");
    return;
  }
  const auto& supported = supported_schema_keywords();
  for (const auto& [key, value] : schema.items()) {
    const std::string here = at + "/" + escape_pointer_token(key);
    if (std::find(supported.begin(), supported.end(), key) == supported.end()) {
      out.push_back(here + ": " + key);
      continue;
    }
    if (key == "properties" || key == "definitions") {
      for (const auto& [name, sub] : value.items()) walk_keywords(root, sub, here + "/" + escape_pointer_token(name), out);
    } else if (key == "items") {
      if (value.is_array())
        out.push_back(here + ": items (the array form)");
      else
        walk_keywords(root, value, here, out);
    } else if (key == "additionalProperties") {
      walk_keywords(root, value, here, out);
    } else if (key == "anyOf" || key == "oneOf") {
      for (std::size_t i = 0; i < value.size(); ++i) walk_keywords(root, value[i], here + "/" + std::to_string(i), out);
    } else if (key == "$ref") {
      const std::string ref = value.is_string() ? value.get<std::string>() : "";
      bool found = false;
      if (ref.rfind("#/", 0) == 0) {
        try {
          found = root.contains(json::json_pointer(ref.substr(1)));
        } catch (const json::exception&) {
          found = false;
        }
      }
      if (!found) out.push_back(here + ": $ref '" + ref + "' (only references within the schema, \"#/...\")");
    } else if (key == "type") {
      const bool ok = value.is_string() ? known_type(value.get<std::string>())
                                        : value.is_array() && std::all_of(value.begin(), value.end(), [](const json& t) {
                                            return t.is_string() && known_type(t.get<std::string>());
                                          });
      if (!ok) out.push_back(here + ": type " + value.dump());
    }
  }
}

void collect_patterns(const json& schema, std::map<std::string, std::regex>& patterns) {
  if (schema.is_object()) {
    auto it = schema.find("pattern");
    if (it != schema.end() && it->is_string() && !patterns.count(it->get<std::string>()))
      patterns.emplace(it->get<std::string>(), std::regex(it->get<std::string>(), std::regex::ECMAScript));
    for (const auto& [key, value] : schema.items())
      if (key != "enum" && key != "const") collect_patterns(value, patterns);
  } else if (schema.is_array()) {
    for (const auto& value : schema) collect_patterns(value, patterns);
  }
}

}  // namespace

const std::vector<std::string>& supported_schema_keywords() {
  static const std::vector<std::string> keywords = {
      // annotations
      "$schema", "$id", "title", "description",
      // structure
      "$ref", "definitions", "type", "properties", "additionalProperties", "required", "items",
      // values
      "enum", "const", "minimum", "exclusiveMinimum", "maximum", "minLength", "maxLength", "pattern", "minItems", "maxItems", "uniqueItems",
      "minProperties",
      // alternatives
      "anyOf", "oneOf"};
  return keywords;
}

std::vector<std::string> unsupported_schema_keywords(const json& schema) {
  std::vector<std::string> out;
  walk_keywords(schema, schema, "", out);
  return out;
}

JsonSchema::JsonSchema(json schema) : root_(std::move(schema)) {
  const auto unsupported = unsupported_schema_keywords(root_);
  if (!unsupported.empty()) throw Error(ExitCode::kRuntime, "the schema checker does not implement " + unsupported.front());
  collect_patterns(root_, patterns_);
}

const json& JsonSchema::resolve(const json& schema) const {
  const json* node = &schema;
  for (int hops = 0; node->is_object() && node->contains("$ref"); ++hops) {
    if (hops == 32) throw Error(ExitCode::kRuntime, "schema $ref loop at " + (*node)["$ref"].get<std::string>());
    node = &root_.at(json::json_pointer((*node)["$ref"].get<std::string>().substr(1)));
  }
  return *node;
}

void JsonSchema::check(const json& doc, const std::string& display, std::vector<Problem>& problems) const {
  std::vector<Problem> found;
  check_node(root_, doc, "", found);
  for (auto& p : found) {
    p.file = display;
    const bool duplicate = std::any_of(problems.begin(), problems.end(), [&](const Problem& q) {
      return q.file == p.file && q.pointer == p.pointer && q.message == p.message;
    });
    if (!duplicate) problems.push_back(std::move(p));
  }
}

void JsonSchema::check_alternatives(const json& branches, bool exactly_one, const json& doc, const std::string& pointer,
                                    std::vector<Problem>& out) const {
  std::vector<std::vector<Problem>> results(branches.size());
  std::size_t passed = 0;
  for (std::size_t i = 0; i < branches.size(); ++i) {
    check_node(branches[i], doc, pointer, results[i]);
    if (results[i].empty()) ++passed;
  }
  if (passed == 1 || (passed > 1 && !exactly_one)) return;
  if (passed > 1) {
    out.push_back({"", pointer, "matches more than one of the allowed forms"});
    return;
  }
  // None fits. Explain through the branches whose type fits the value; if none, list the types.
  std::vector<std::size_t> fitting;
  for (std::size_t i = 0; i < branches.size(); ++i)
    if (type_matches(resolve(branches[i]), doc)) fitting.push_back(i);
  if (fitting.empty()) {
    std::string words;
    for (const auto& b : branches) {
      const std::string w = expected_in_words(resolve(b));
      if (!w.empty() && words.find(w) == std::string::npos) words += (words.empty() ? "" : " or ") + w;
    }
    out.push_back({"", pointer, words.empty() ? "does not match any of the allowed forms" : "expected " + words});
    return;
  }
  // Several fit, each missing one field of its own ("ggml_types" or "formats"): say so at once.
  const std::string missing = "missing required field ";
  const bool all_missing_one =
      fitting.size() > 1 && std::all_of(fitting.begin(), fitting.end(), [&](std::size_t i) {
        return results[i].size() == 1 && results[i][0].pointer == pointer && results[i][0].message.rfind(missing, 0) == 0;
      });
  if (all_missing_one) {
    std::string names;
    for (std::size_t i : fitting) names += (names.empty() ? "" : " or ") + results[i][0].message.substr(missing.size());
    out.push_back({"", pointer, missing + names});
    return;
  }
  // Otherwise the branch the value comes closest to (the fewest problems, the first on a tie).
  std::size_t best = fitting.front();
  for (std::size_t i : fitting)
    if (results[i].size() < results[best].size()) best = i;
  out.insert(out.end(), results[best].begin(), results[best].end());
}

namespace {

/// Appends problems found at one place in the document.
struct ProblemsAt {
  const std::string& pointer;
  std::vector<Problem>& out;
  void operator()(std::string message) const { out.push_back({"", pointer, std::move(message)}); }
};

/// maximum, minimum and exclusiveMinimum of a number.
void check_number(const json& schema, const json& doc, const ProblemsAt& add) {
  auto has = [&](const char* key) { return schema.contains(key); };
  const double value = doc.get<double>();
  auto bound = [&](const char* key) { return schema[key].get<double>(); };
  const std::string kind = doc.is_number_integer() && schema.value("type", json()) == "integer" ? "integer" : "number";
  const std::string a_kind = (kind == "integer" ? "an " : "a ") + kind;
  if (has("maximum") && value > bound("maximum")) add("expected " + a_kind + " less than or equal to " + schema["maximum"].dump());
  if (has("minimum") && value < bound("minimum"))
    add(bound("minimum") == 0 ? "expected a non-negative " + kind
                              : "expected " + a_kind + " greater than or equal to " + schema["minimum"].dump());
  if (has("exclusiveMinimum") && !(value > bound("exclusiveMinimum")))
    add(bound("exclusiveMinimum") == 0 ? "expected a positive " + kind
                                       : "expected " + a_kind + " greater than " + schema["exclusiveMinimum"].dump());
}

/// maxItems and minItems of an array.
void check_item_count(const json& schema, const json& doc, const ProblemsAt& add) {
  if (schema.contains("maxItems") && doc.size() > schema["maxItems"].get<std::size_t>())
    add("expected at most " + count_of(schema["maxItems"].get<std::size_t>(), "item", "items"));
  if (schema.contains("minItems") && doc.size() < schema["minItems"].get<std::size_t>())
    add(schema["minItems"] == 1 ? "expected a non-empty array"
                                : "expected at least " + count_of(schema["minItems"].get<std::size_t>(), "item", "items"));
}

/// The longest string a pattern is tried on: std::regex matches by recursion, a frame or more per
/// character, so a long enough string overflows the stack. Every patterned field (ids, dates,
/// block patterns) is far shorter.
constexpr std::size_t kMaxPatternSubjectBytes = 4096;

/// maxLength, minLength (in code points) and pattern of a string.
void check_string(const json& schema, const json& doc, const std::map<std::string, std::regex>& patterns, const ProblemsAt& add) {
  auto has = [&](const char* key) { return schema.contains(key); };
  const std::size_t length = code_points(doc.get_ref<const std::string&>());
  if (has("maxLength") && length > schema["maxLength"].get<std::size_t>())
    add("expected at most " + count_of(schema["maxLength"].get<std::size_t>(), "character", "characters"));
  if (has("minLength") && length < schema["minLength"].get<std::size_t>())
    add(schema["minLength"] == 1 ? "expected a non-empty string"
                                 : "expected at least " + count_of(schema["minLength"].get<std::size_t>(), "character", "characters"));
  if (has("pattern")) {
    const std::string& pattern = schema["pattern"].get_ref<const std::string&>();
    const std::string& text = doc.get_ref<const std::string&>();
    if (text.size() > kMaxPatternSubjectBytes)
      add(fmt::format("is {} bytes long; a string of the pattern {} has at most {}", text.size(), pattern, kMaxPatternSubjectBytes));
    else if (!std::regex_search(text, patterns.at(pattern)))
      add("does not match the pattern " + pattern);
  }
}

/// uniqueItems: each item that repeats an earlier one, once.
void check_unique_items(const json& doc, const std::string& pointer, std::vector<Problem>& out) {
  for (std::size_t i = 0; i < doc.size(); ++i)
    for (std::size_t j = i + 1; j < doc.size(); ++j)
      if (doc[i] == doc[j]) {
        out.push_back({"", pointer + "/" + std::to_string(j), "repeats item " + std::to_string(i) + " (items must be unique)"});
        break;
      }
}

}  // namespace

void JsonSchema::check_node(const json& raw, const json& doc, const std::string& pointer, std::vector<Problem>& out) const {
  const json& schema = resolve(raw);
  if (schema.is_boolean()) {
    if (!schema.get<bool>()) out.push_back({"", pointer, "not allowed here"});
    return;
  }
  auto has = [&](const char* key) { return schema.contains(key); };
  const ProblemsAt add{pointer, out};

  // A value of the wrong type gets that one problem, not one per constraint it cannot meet.
  if (!type_matches(schema, doc)) {
    add("expected " + expected_in_words(schema));
    return;
  }
  if (has("anyOf")) check_alternatives(schema["anyOf"], false, doc, pointer, out);
  if (has("const") && doc != schema["const"]) add("expected " + schema["const"].dump());
  if (has("enum")) {
    const json& values = schema["enum"];
    if (std::find(values.begin(), values.end(), doc) == values.end()) add("not one of the allowed values");
  }
  if (doc.is_array() && has("items")) {
    for (std::size_t i = 0; i < doc.size(); ++i) check_node(schema["items"], doc[i], pointer + "/" + std::to_string(i), out);
  }
  if (doc.is_number()) check_number(schema, doc, add);
  if (doc.is_array()) check_item_count(schema, doc, add);
  if (doc.is_string()) check_string(schema, doc, patterns_, add);
  if (doc.is_object() && has("minProperties") && doc.size() < schema["minProperties"].get<std::size_t>())
    add(schema["minProperties"] == 1 ? "expected a non-empty object"
                                     : "expected at least " + count_of(schema["minProperties"].get<std::size_t>(), "field", "fields"));
  if (has("oneOf")) check_alternatives(schema["oneOf"], true, doc, pointer, out);
  if (doc.is_object() && (has("properties") || has("additionalProperties"))) {
    static const json kNoProperties = json::object();
    const json& properties = has("properties") ? schema["properties"] : kNoProperties;
    for (const auto& [key, value] : doc.items()) {
      const std::string at = pointer + "/" + escape_pointer_token(key);
      if (properties.contains(key))
        check_node(properties[key], value, at, out);
      else if (has("additionalProperties") && schema["additionalProperties"] == false)
        out.push_back({"", at, "unknown field (not in the schema)"});
      else if (has("additionalProperties"))
        check_node(schema["additionalProperties"], value, at, out);
    }
  }
  if (doc.is_object() && has("required")) {
    for (const auto& name : schema["required"])
      if (!doc.contains(name.get<std::string>())) add("missing required field '" + name.get<std::string>() + "'");
  }
  if (doc.is_array() && has("uniqueItems") && schema["uniqueItems"] == true) check_unique_items(doc, pointer, out);
}

}  // namespace optadvisor
