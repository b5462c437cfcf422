// SPDX-License-Identifier: MIT
// libFuzzer target: the GGUF header reader on arbitrary bytes must either
// return a model or throw optadvisor::Error; never crash, hang or over-allocate.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/readers/gguf.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const optadvisor::Catalog catalog = optadvisor::Catalog::load({});
  try {
    (void)optadvisor::parse_gguf_model(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.gguf", catalog.quant());
  } catch (const optadvisor::Error&) {}
  return 0;
}
