// SPDX-License-Identifier: MIT
// JSON Schema checks (draft-07 via valijson) with messages a user can act on.
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "optadvisor/catalog/catalog.hpp"
#include "catalog/embedded.hpp"

namespace optadvisor {
namespace {

std::string escape_pointer_token(const std::string& token) {
  std::string out;
  for (char c : token) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

/// valijson's context is {"<root>", "[memory]", "[0]", ...}; turn it into a JSON pointer.
std::string to_pointer(const std::vector<std::string>& context) {
  std::string pointer;
  for (const auto& part : context) {
    if (part == "<root>") continue;
    std::string token = part;
    if (token.size() >= 2 && token.front() == '[' && token.back() == ']') token = token.substr(1, token.size() - 2);
    pointer += "/" + escape_pointer_token(token);
  }
  return pointer;
}

/// Rewrites valijson's descriptions into the short forms the CLI prints.
std::string friendly(const std::string& description) {
  if (description.find("greater than 0") != std::string::npos ||
      description.find("greater than or equal to 0") != std::string::npos)
    return "expected a positive number";
  if (description.find("not permitted by 'type' constraint") != std::string::npos) return "wrong type";
  if (description.find("Missing required property") != std::string::npos) {
    auto quote = description.find('\'');
    if (quote != std::string::npos) {
      auto end = description.find('\'', quote + 1);
      return "missing required field '" + description.substr(quote + 1, end - quote - 1) + "'";
    }
  }
  if (description.find("additional properties") != std::string::npos ||
      description.find("additionalProperties") != std::string::npos)
    return "unknown field (not in the schema)";
  if (description.find("enum") != std::string::npos) return "not one of the allowed values";
  std::string out = description;
  if (!out.empty() && out.back() == '.') out.pop_back();
  if (!out.empty()) out[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(out[0])));
  return out;
}

/// Follows a "#/definitions/x" reference within the same schema.
const nlohmann::json* follow_ref(const nlohmann::json& root, const nlohmann::json* node) {
  for (int hops = 0; node != nullptr && node->is_object() && node->contains("$ref") && hops < 8; ++hops) {
    const std::string ref = (*node)["$ref"].get<std::string>();
    if (ref.rfind("#/", 0) != 0) return nullptr;
    try {
      node = &root.at(nlohmann::json::json_pointer(ref.substr(1)));
    } catch (const nlohmann::json::exception&) {
      return nullptr;
    }
  }
  return node;
}

/// The type the schema wants at a document pointer, in words ("a number"), or "".
std::string expected_type_at(const nlohmann::json& root, const std::string& pointer) {
  const nlohmann::json* node = follow_ref(root, &root);
  std::size_t pos = 0;
  while (node != nullptr && pos < pointer.size()) {
    auto next = pointer.find('/', pos + 1);
    const std::string token = pointer.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
    pos = next == std::string::npos ? pointer.size() : next;
    const bool is_index = !token.empty() && std::all_of(token.begin(), token.end(), ::isdigit);
    if (is_index && node->contains("items")) node = &(*node)["items"];
    else if (node->contains("properties") && (*node)["properties"].contains(token)) node = &(*node)["properties"][token];
    else return "";
    node = follow_ref(root, node);
  }
  if (node == nullptr || !node->is_object()) return "";
  if (node->contains("enum")) {
    std::string values;
    for (const auto& v : (*node)["enum"]) values += (values.empty() ? "" : ", ") + v.dump();
    return "one of " + values;
  }
  if (!node->contains("type") || !(*node)["type"].is_string()) return "";
  std::string type = (*node)["type"].get<std::string>();
  if (type == "number") return node->contains("exclusiveMinimum") ? "a positive number" : "a number";
  if (type == "integer") return "an integer";
  if (type == "string") return "a string";
  if (type == "boolean") return "true or false";
  if (type == "array") return "an array";
  if (type == "object") return "an object";
  return type;
}

struct CompiledSchema {
  nlohmann::json document;
  valijson::Schema schema;
};

const CompiledSchema& compiled(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<CompiledSchema>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = cache[name];
  if (!slot) {
    const std::string path = "schema/" + name + ".schema.json";
    const auto& files = embedded_files();
    auto it = std::find_if(files.begin(), files.end(), [&](const EmbeddedFile& f) { return f.path == path; });
    if (it == files.end()) throw Error(ExitCode::kRuntime, "no embedded schema " + path);
    slot = std::make_unique<CompiledSchema>();
    slot->document = nlohmann::json::parse(it->content);
    valijson::SchemaParser parser;
    valijson::adapters::NlohmannJsonAdapter adapter(slot->document);
    parser.populateSchema(adapter, slot->schema);
  }
  return *slot;
}

}  // namespace

void check_against_schema(const std::string& schema_name, const nlohmann::json& doc, const std::string& display,
                          std::vector<Problem>& problems) {
  const auto& schema = compiled(schema_name);
  valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter target(doc);
  if (validator.validate(schema.schema, target, &results)) return;

  // valijson repeats each failure at every enclosing node ("Failed to validate
  // against schema associated with property ..."); keep the ones that name
  // what is actually wrong.
  std::vector<Problem> found;
  for (const auto& e : results) {
    if (e.description.rfind("Failed to validate", 0) == 0) continue;
    const std::string pointer = to_pointer(e.context);
    std::string message = friendly(e.description);
    if (message == "wrong type") {
      const std::string expected = expected_type_at(schema.document, pointer);
      message = expected.empty() ? "wrong type" : "expected " + expected;
    }
    Problem p{display, pointer, message};
    bool duplicate = std::any_of(found.begin(), found.end(), [&](const Problem& q) {
      return q.pointer == p.pointer && q.message == p.message;
    });
    if (!duplicate) found.push_back(std::move(p));
  }
  problems.insert(problems.end(), found.begin(), found.end());
}

}  // namespace optadvisor
