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
  uint64_t elements = 0;                ///< whole cache
  double bytes = 0;                     ///< whole cache, with the linear-attention state
  double state_bytes = 0;               ///< of which the fixed per-sequence state of linear-attention layers (at its own dtype)
  double state_bytes_per_sequence = 0;  ///< that state for one sequence
  double bytes_per_token_full = 0;      ///< one token, every layer, no window
  KvShape shape;
};

/// One model in one format.
/// `format` points into the Catalog; the Catalog must outlive it.
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

/// What `size` is asked: a format id, "all", or "" for a GGUF file's own type;
/// the KV cache of `batch` sequences of `context_tokens` (0: weights only).
struct SizeRequest {
  std::string quant;
  int64_t context_tokens = 0;
  int64_t batch = 1;
  std::string kv_dtype = "f16";
};

/// The model's bytes in the requested format(s), sorted by weight bytes (a
/// stable sort: formats of equal size keep the catalog's order). Bad input
/// (a negative or absurd context or batch, no format for a non-GGUF model,
/// an unknown format or KV dtype) throws Error(kBadInput) naming the option.
SizeResult size_model(const Catalog& catalog, ResolvedModel model, const SizeRequest& request);

/// One preset as `optadvisor models` lists it. Points into the catalog (valid while it lives).
/// `spec` points into the Catalog; the Catalog must outlive it.
struct ModelSummary {
  const ModelSpec* spec = nullptr;
  uint64_t params = 0;
  uint64_t active_params = 0;
  double kv_bytes_per_token = 0;  ///< every layer, no window, at `kv_dtype`
  std::string kv_dtype;
};

/// Every preset of the catalog, in its order, with its KV cache per token at `kv_dtype`.
std::vector<ModelSummary> model_summaries(const Catalog& catalog, const std::string& kv_dtype = "f16");
}  // namespace optadvisor
