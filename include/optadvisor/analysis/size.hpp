// SPDX-License-Identifier: MIT
// `optadvisor size`: exact weight bytes of a model in one or every format,
// and the KV cache for a context, per tensor and with the arithmetic shown.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "optadvisor/readers/model_source.hpp"
#include "optadvisor/catalog/quant.hpp"

namespace optadvisor {

struct KvRequest {
  uint64_t context_tokens = 0;  ///< 0: no KV figures
  uint64_t batch = 1;
  std::string kv_dtype = "f16";
  double bytes_per_element = 2.0;
  bool cap_sliding_window = true;
};

struct KvFigures {
  uint64_t elements = 0;            ///< whole cache
  double bytes = 0;                 ///< whole cache
  double bytes_per_token_full = 0;  ///< one token, every layer, no window
  KvShape shape;
};

/// One model in one format.
struct SizeRow {
  const QuantFormat* format = nullptr;
  WeightsBreakdown weights;
  std::optional<KvFigures> kv;
  double total_bytes = 0;  ///< weights + KV
};

struct SizeResult {
  ResolvedModel model;
  uint64_t params = 0;
  uint64_t active_params = 0;
  std::vector<SizeRow> rows;  ///< one, or every format sorted by size
  KvRequest kv_request;
};

KvFigures kv_figures(const ModelSpec& spec, const KvRequest& request);


}  // namespace optadvisor
