// SPDX-License-Identifier: MIT
// libFuzzer target: --require expressions, parsed and then evaluated against
// a document shaped like `estimate --json` (paths, indexes, unit suffixes).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "optadvisor/base/error.hpp"
#include "optadvisor/planner/require.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const nlohmann::json document = nlohmann::json::parse(R"({
    "decode": {"tokens_per_s": 206.9, "bound": "memory-bandwidth"},
    "memory": {"fits": true, "total_bytes": 5340000000, "max_batch": 344},
    "scenario": {"engine": {"id": "llama.cpp:cuda"}},
    "plan": {"steps": [{"gain": 1.8}, {"gain": null}]},
    "notes": []
  })");
  try {
    const auto requirement = optadvisor::parse_requirement(std::string_view(reinterpret_cast<const char*>(data), size));
    (void)optadvisor::check_requirements({requirement}, document);
    (void)optadvisor::path_to_string(requirement.path);
  } catch (const optadvisor::Error& e) {
    if (e.code() != optadvisor::ExitCode::kBadInput) __builtin_trap();  // only bad input is expected
  }
  return 0;
}
