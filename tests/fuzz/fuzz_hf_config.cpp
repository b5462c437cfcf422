// SPDX-License-Identifier: MIT
// libFuzzer target: Hugging Face config.json import, then everything a model feeds.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "optadvisor/catalog/model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto json = nlohmann::json::parse(std::string_view(reinterpret_cast<const char*>(data), size), nullptr, false);
  if (json.is_discarded()) return 0;
  try {
    const optadvisor::ModelSpec spec = optadvisor::model_from_hf_config(json, "fuzz-config.json");
    (void)optadvisor::parameter_count(spec);
    (void)optadvisor::active_parameter_count(spec);
    (void)optadvisor::kv_cache_elements(spec, 4096, 2);
  } catch (const optadvisor::Error&) {}
  return 0;
}
