// SPDX-License-Identifier: MIT
// libFuzzer target: benchmark-result import for `calibrate` (llama-bench JSON
// and JSONL, vLLM serve and latency results), then the translation of each
// row into a measurement with its workload.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "optadvisor/readers/bench_import.hpp"
#include "optadvisor/base/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto file = optadvisor::parse_bench_results(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
    (void)optadvisor::measurements_from(file);
    for (const auto& row : file.llama_bench) {
      (void)optadvisor::llama_ftype_from_desc(row.model_type);
      (void)optadvisor::llama_cpp_backend(row.backends, row.gpu_info);
    }
  } catch (const optadvisor::Error& e) {
    if (e.code() != optadvisor::ExitCode::kBadInput) __builtin_trap();  // a foreign or broken file is bad input
  }
  return 0;
}
