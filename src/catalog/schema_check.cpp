// SPDX-License-Identifier: MIT
// Data files checked against the embedded JSON Schemas (data/schema/*.schema.json).
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include "optadvisor/catalog/catalog.hpp"
#include "catalog/embedded.hpp"
#include "catalog/json_schema.hpp"

namespace optadvisor {
namespace {

const JsonSchema& compiled(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<JsonSchema>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = cache[name];
  if (!slot) {
    const std::string path = "schema/" + name + ".schema.json";
    const auto& files = embedded_files();
    auto it = std::find_if(files.begin(), files.end(), [&](const EmbeddedFile& f) { return f.path == path; });
    if (it == files.end()) throw Error(ExitCode::kRuntime, "no embedded schema " + path);
    slot = std::make_unique<JsonSchema>(nlohmann::json::parse(it->content));
  }
  return *slot;
}

}  // namespace

void check_against_schema(const std::string& schema_name, const nlohmann::json& doc, const std::string& display,
                          std::vector<Problem>& problems) {
  compiled(schema_name).check(doc, display, problems);
}

}  // namespace optadvisor
