// SPDX-License-Identifier: MIT
// libFuzzer target: data files (hardware, model, engine profiles) through the
// schema check and the typed loaders, as an overlay file would go.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/catalog/engine.hpp"
#include "optadvisor/catalog/hardware.hpp"
#include "optadvisor/catalog/model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto json = nlohmann::json::parse(std::string_view(reinterpret_cast<const char*>(data), size), nullptr, false);
  if (json.is_discarded()) return 0;
  std::vector<optadvisor::Problem> problems;
  try {
    for (const char* schema : {"hardware", "model", "engine", "quant"}) {
      problems.clear();
      optadvisor::check_against_schema(schema, json, "fuzz.json", problems);
      if (!problems.empty()) continue;
      if (std::string_view(schema) == "hardware") (void)optadvisor::hardware_from_json(json, problems);
      if (std::string_view(schema) == "model") {
        if (auto spec = optadvisor::model_from_json(json, problems)) {
          (void)optadvisor::parameter_count(*spec);
          (void)optadvisor::kv_cache_elements(*spec, 1024, 1);
        }
      }
      if (std::string_view(schema) == "engine") (void)optadvisor::engine_from_json(json, problems);
    }
  } catch (const optadvisor::Error&) {}
  return 0;
}
