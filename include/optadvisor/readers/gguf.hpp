// SPDX-License-Identifier: MIT
// GGUF header reader (--gguf): the metadata and the tensor table of a llama.cpp
// model file, never its tensor data, turned into a ModelSpec and the exact
// per-tensor weight bytes. Format: ggml-org/ggml docs/gguf.md, versions 2 and 3.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "optadvisor/catalog/model.hpp"
#include "optadvisor/catalog/quant.hpp"

namespace optadvisor {

/// What a GGUF header says about its model.
struct GgufModel {
  /// Architecture from the metadata, id "gguf:<general.name or file stem>".
  /// KV-cache fields (KV heads, head_dim, MLA ranks, sliding window and
  /// pattern) follow what llama.cpp does with the file.
  ModelSpec spec;
  /// Exact bytes of every tensor from its ggml type and shape; file_bytes is
  /// the real file size, header_bytes the data-section offset (header,
  /// metadata, tensor table and alignment padding).
  WeightsBreakdown weights;
  std::string quant_id;  ///< general.file_type mapped to a quant id ("q4_k_m"), "" if unknown or absent
  uint32_t version = 0;  ///< GGUF version, 2 or 3
  uint64_t tensor_count = 0;
  uint64_t metadata_count = 0;     ///< key/value pairs
  std::vector<std::string> notes;  ///< what was assumed or missing
};

/// Reads the metadata and the tensor table of the GGUF file at `path`, in
/// chunks and never past the tensor table, so a 40 GB file answers in
/// milliseconds; at most 128 MiB of header is read. Throws bad_input
/// "<path>: <what is wrong>" for a missing, unreadable or directory path, bad
/// magic, an unsupported version, truncation (including tensor data that runs
/// past the end of the file), absurd counts or lengths, unknown tensor types
/// and rows that do not hold whole quantization blocks.
GgufModel read_gguf_model(const std::string& path, const QuantDb& db);

/// As read_gguf_model, from the whole file already in memory (tests,
/// fuzzing); `name` stands for the path in messages and gives the file stem.
GgufModel parse_gguf_model(std::string_view bytes, const std::string& name, const QuantDb& db);

}  // namespace optadvisor
