// SPDX-License-Identifier: MIT
// The internal JSON Schema checker: each keyword with a good and a bad document, the messages
// and pointers, and the guard that no embedded data schema uses a keyword it does not implement.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "catalog/embedded.hpp"
#include "catalog/json_schema.hpp"

using namespace optadvisor;
using nlohmann::json;

namespace {

/// "pointer: message" for each problem, in order.
std::vector<std::string> problems_of(const json& schema, const json& doc) {
  std::vector<Problem> problems;
  JsonSchema(schema).check(doc, "x.json", problems);
  std::vector<std::string> out;
  for (const auto& p : problems) {
    CHECK(p.file == "x.json");
    out.push_back(p.pointer + ": " + p.message);
  }
  return out;
}

using Lines = std::vector<std::string>;

}  // namespace

TEST_CASE("no embedded data schema uses a keyword the checker does not implement", "[schema]") {
  int schemas = 0;
  for (const auto& file : embedded_files()) {
    const std::string path(file.path);
    // The data schemas, the ones check_against_schema loads; data/schema/output/ is the published
    // contract of the JSON output, checked with python3-jsonschema (ctest schemas).
    if (path.rfind("schema/", 0) != 0 || path.rfind("schema/output/", 0) == 0) continue;
    ++schemas;
    const json schema = json::parse(file.content);
    for (const auto& k : unsupported_schema_keywords(schema)) FAIL_CHECK(path << ": " << k);
    CHECK_NOTHROW(JsonSchema(schema));
  }
  CHECK(schemas == 8);  // calibration engine hardware model quant rule shape training
}

TEST_CASE("a schema keyword the checker does not implement is refused, not ignored", "[schema]") {
  const json schema = {{"type", "object"}, {"properties", {{"x", {{"multipleOf", 2}}}}}};
  CHECK(unsupported_schema_keywords(schema) == Lines{"/properties/x/multipleOf: multipleOf"});
  CHECK_THROWS_WITH(JsonSchema(schema), Catch::Contains("multipleOf"));
  CHECK(unsupported_schema_keywords({{"items", json::array({json::object()})}}) == Lines{"/items: items (the array form)"});
  CHECK(unsupported_schema_keywords({{"$ref", "other.json#/x"}}).size() == 1);
  CHECK(unsupported_schema_keywords({{"$ref", "#/definitions/missing"}}).size() == 1);
  CHECK(unsupported_schema_keywords({{"type", "float"}}) == Lines{"/type: type \"float\""});
  CHECK(unsupported_schema_keywords({{"anyOf", {{{"if", true}}}}}) == Lines{"/anyOf/0/if: if"});
  // Annotations are accepted.
  CHECK(unsupported_schema_keywords({{"$schema", "x"}, {"$id", "y"}, {"title", "t"}, {"description", "d"}}).empty());
}

TEST_CASE("type: one type or a list of types, integers are written without a fraction", "[schema]") {
  CHECK(problems_of({{"type", "number"}}, 3).empty());
  CHECK(problems_of({{"type", "number"}}, 3.5).empty());
  CHECK(problems_of({{"type", "number"}}, "3") == Lines{": expected a number"});
  CHECK(problems_of({{"type", "number"}}, true) == Lines{": expected a number"});
  CHECK(problems_of({{"type", "integer"}}, 3).empty());
  CHECK(problems_of({{"type", "integer"}}, 3.5) == Lines{": expected an integer"});
  CHECK(problems_of({{"type", "integer"}}, 3.0) == Lines{": expected an integer"});
  CHECK(problems_of({{"type", "string"}}, 1) == Lines{": expected a string"});
  CHECK(problems_of({{"type", "boolean"}}, 0) == Lines{": expected true or false"});
  CHECK(problems_of({{"type", "array"}}, json::object()) == Lines{": expected an array"});
  CHECK(problems_of({{"type", "object"}}, json::array()) == Lines{": expected an object"});
  CHECK(problems_of({{"type", "null"}}, nullptr).empty());
  CHECK(problems_of({{"type", {"null", "number"}}}, nullptr).empty());
  CHECK(problems_of({{"type", {"null", "number"}}}, 2).empty());
  CHECK(problems_of({{"type", {"null", "number"}}}, "2") == Lines{": expected null or a number"});
  // The words name the bound when there is one.
  CHECK(problems_of({{"type", "number"}, {"exclusiveMinimum", 0}}, "5 GB") == Lines{": expected a positive number"});
  CHECK(problems_of({{"type", "integer"}, {"minimum", 0}}, "5") == Lines{": expected a non-negative integer"});
  // A value of the wrong type gets one problem, not one per constraint.
  CHECK(problems_of({{"type", "string"}, {"enum", {"a", "b"}}}, 1) == Lines{": expected one of \"a\", \"b\""});
}

TEST_CASE("properties, required and additionalProperties", "[schema]") {
  const json schema = {{"type", "object"},
                       {"required", {"id", "size"}},
                       {"additionalProperties", false},
                       {"properties", {{"id", {{"type", "string"}}}, {"size", {{"type", "number"}}}}}};
  CHECK(problems_of(schema, {{"id", "a"}, {"size", 1}}).empty());
  CHECK(problems_of(schema, {{"id", 1}, {"size", 1}}) == Lines{"/id: expected a string"});
  CHECK(problems_of(schema, {{"id", "a"}}) == Lines{": missing required field 'size'"});
  CHECK(problems_of(schema, {{"id", "a"}, {"size", 1}, {"colour", "red"}}) == Lines{"/colour: unknown field (not in the schema)"});
  // Properties in key order, then the missing fields in the schema's order.
  CHECK(problems_of(schema, {{"zz", 1}, {"aa", 1}}) == Lines{"/aa: unknown field (not in the schema)",
                                                             "/zz: unknown field (not in the schema)", ": missing required field 'id'",
                                                             ": missing required field 'size'"});
  // Pointer tokens are escaped (RFC 6901).
  CHECK(problems_of(schema, {{"id", "a"}, {"size", 1}, {"a/b~c", 0}}) == Lines{"/a~1b~0c: unknown field (not in the schema)"});
  // additionalProperties as a schema: every other field must match it.
  const json map = {{"type", "object"}, {"additionalProperties", {{"type", "number"}}}};
  CHECK(problems_of(map, {{"fp8", 1}, {"bf16", 2}}).empty());
  CHECK(problems_of(map, {{"fp8", "1"}}) == Lines{"/fp8: expected a number"});
}

TEST_CASE("items, minItems, maxItems, uniqueItems", "[schema]") {
  const json schema = {{"type", "array"}, {"items", {{"type", "string"}}}, {"minItems", 1}, {"maxItems", 3}, {"uniqueItems", true}};
  CHECK(problems_of(schema, {"a", "b"}).empty());
  CHECK(problems_of(schema, {"a", 2}) == Lines{"/1: expected a string"});
  CHECK(problems_of(schema, json::array()) == Lines{": expected a non-empty array"});
  CHECK(problems_of(schema, {"a", "b", "c", "d"}) == Lines{": expected at most 3 items"});
  CHECK(problems_of(schema, {"a", "b", "a"}) == Lines{"/2: repeats item 0 (items must be unique)"});
  CHECK(problems_of({{"minItems", 2}}, {1}) == Lines{": expected at least 2 items"});
  // Unique compares values, not text: 1 and 1.0 are the same number.
  CHECK(problems_of({{"uniqueItems", true}}, {1, 1.0}) == Lines{"/1: repeats item 0 (items must be unique)"});
  CHECK(problems_of({{"uniqueItems", true}}, {json{{"a", 1}}, json{{"a", 2}}}).empty());
}

TEST_CASE("enum and const", "[schema]") {
  CHECK(problems_of({{"enum", {"low", "high", nullptr}}}, "low").empty());
  CHECK(problems_of({{"enum", {"low", "high", nullptr}}}, nullptr).empty());
  CHECK(problems_of({{"enum", {"low", "high"}}}, "medium") == Lines{": not one of the allowed values"});
  CHECK(problems_of({{"const", "engine"}}, "engine").empty());
  CHECK(problems_of({{"const", "engine"}}, "engines") == Lines{": expected \"engine\""});
  CHECK(problems_of({{"const", 1}}, 2) == Lines{": expected 1"});
}

TEST_CASE("minimum, exclusiveMinimum, maximum", "[schema]") {
  const json positive = {{"type", "number"}, {"exclusiveMinimum", 0}};
  CHECK(problems_of(positive, 0.5).empty());
  CHECK(problems_of(positive, 0) == Lines{": expected a positive number"});
  CHECK(problems_of(positive, -5) == Lines{": expected a positive number"});
  const json fraction = {{"type", "number"}, {"minimum", 0}, {"maximum", 1}};
  CHECK(problems_of(fraction, 0).empty());
  CHECK(problems_of(fraction, 1).empty());
  CHECK(problems_of(fraction, -0.1) == Lines{": expected a non-negative number"});
  CHECK(problems_of(fraction, 1.5) == Lines{": expected a number less than or equal to 1"});
  const json year = {{"type", "integer"}, {"minimum", 2015}};
  CHECK(problems_of(year, 2024).empty());
  CHECK(problems_of(year, 2014) == Lines{": expected an integer greater than or equal to 2015"});
  CHECK(problems_of({{"exclusiveMinimum", 1}}, 1) == Lines{": expected a number greater than 1"});
  // Bounds apply to numbers only.
  CHECK(problems_of({{"minimum", 0}}, "x").empty());
}

TEST_CASE("minLength, maxLength, pattern", "[schema]") {
  CHECK(problems_of({{"minLength", 1}}, "a").empty());
  CHECK(problems_of({{"minLength", 1}}, "") == Lines{": expected a non-empty string"});
  CHECK(problems_of({{"minLength", 3}}, "ab") == Lines{": expected at least 3 characters"});
  CHECK(problems_of({{"maxLength", 2}}, "ab").empty());
  CHECK(problems_of({{"maxLength", 2}}, "abc") == Lines{": expected at most 2 characters"});
  // Lengths count characters, not bytes: "µs" is two.
  CHECK(problems_of({{"maxLength", 2}}, "\xc2\xb5s").empty());
  const json date = {{"pattern", "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}};
  CHECK(problems_of(date, "2026-11-01").empty());
  CHECK(problems_of(date, "2026-1-1") == Lines{": does not match the pattern ^[0-9]{4}-[0-9]{2}-[0-9]{2}$"});
  // A pattern is not anchored unless it says so.
  CHECK(problems_of({{"pattern", "b"}}, "abc").empty());
  // std::regex matches by recursion: a 1 MB id once overflowed the stack (found by fuzz_rules).
  // Strings past 4096 bytes are refused before any pattern is tried; 4096 itself is still matched.
  const json id = {{"pattern", "^[a-z0-9][a-z0-9.-]*$"}};
  CHECK(problems_of(id, std::string(1 << 20, 'a')) == Lines{": is 1048576 bytes long; a string of the pattern ^[a-z0-9][a-z0-9.-]*$ has at most 4096"});
  CHECK(problems_of(id, std::string(4096, 'a')).empty());
}

TEST_CASE("minProperties", "[schema]") {
  CHECK(problems_of({{"minProperties", 1}}, {{"a", 1}}).empty());
  CHECK(problems_of({{"minProperties", 1}}, json::object()) == Lines{": expected a non-empty object"});
  CHECK(problems_of({{"minProperties", 2}}, {{"a", 1}}) == Lines{": expected at least 2 fields"});
}

TEST_CASE("$ref to definitions in the same schema", "[schema]") {
  const json schema = {
      {"definitions", {{"positive", {{"type", "number"}, {"exclusiveMinimum", 0}}}, {"alias", {{"$ref", "#/definitions/positive"}}}}},
      {"type", "object"},
      {"properties", {{"bw", {{"$ref", "#/definitions/alias"}, {"description", "bytes/s"}}}}}};
  CHECK(problems_of(schema, {{"bw", 1e12}}).empty());
  CHECK(problems_of(schema, {{"bw", -5}}) == Lines{"/bw: expected a positive number"});
  CHECK(problems_of(schema, {{"bw", "1 TB/s"}}) == Lines{"/bw: expected a positive number"});
}

TEST_CASE("anyOf and oneOf", "[schema]") {
  // The quant files: either list, or both.
  const json either = {{"type", "object"}, {"anyOf", {{{"required", {"ggml_types"}}}, {{"required", {"formats"}}}}}};
  CHECK(problems_of(either, {{"formats", 1}}).empty());
  CHECK(problems_of(either, {{"formats", 1}, {"ggml_types", 1}}).empty());
  CHECK(problems_of(either, json::object()) == Lines{": missing required field 'ggml_types' or 'formats'"});

  // The rules' transform: one step, or a list of steps.
  const json step = {{"type", "object"}, {"required", {"op"}}, {"properties", {{"op", {{"type", "string"}}}}}};
  const json transform = {{"oneOf", {step, {{"type", "array"}, {"minItems", 1}, {"items", step}}}}};
  CHECK(problems_of(transform, {{"op", "scale"}}).empty());
  CHECK(problems_of(transform, {{{"op", "scale"}}}).empty());
  // The problems are those of the form whose type fits.
  CHECK(problems_of(transform, {{"op", 1}}) == Lines{"/op: expected a string"});
  CHECK(problems_of(transform, {{{"op", 1}}}) == Lines{"/0/op: expected a string"});
  CHECK(problems_of(transform, json::array()) == Lines{": expected a non-empty array"});
  CHECK(problems_of(transform, "scale") == Lines{": expected an object or an array"});
  // Two forms that both fit: the closest one (the fewest problems) explains.
  const json kinds = {{"oneOf",
                       {{{"type", "object"}, {"required", {"kind", "a"}}, {"properties", {{"kind", {{"const", "x"}}}}}},
                        {{"type", "object"}, {"required", {"kind", "b", "c"}}, {"properties", {{"kind", {{"const", "y"}}}}}}}}};
  CHECK(problems_of(kinds, {{"kind", "x"}, {"a", 1}}).empty());
  CHECK(problems_of(kinds, {{"kind", "x"}}) == Lines{": missing required field 'a'"});
  // oneOf means exactly one.
  const json overlapping = {{"oneOf", {{{"type", "number"}}, {{"minimum", 0}}}}};
  CHECK(problems_of(overlapping, -1).empty());
  CHECK(problems_of(overlapping, 1) == Lines{": matches more than one of the allowed forms"});
}

TEST_CASE("boolean schemas", "[schema]") {
  const json schema = {{"properties", {{"any", true}, {"never", false}}}};
  CHECK(problems_of(schema, {{"any", 1}}).empty());
  CHECK(problems_of(schema, {{"never", 1}}) == Lines{"/never: not allowed here"});
}
