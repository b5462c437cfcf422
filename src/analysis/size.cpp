// SPDX-License-Identifier: MIT
#include "optadvisor/analysis/size.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/base/error.hpp"

namespace optadvisor {

KvFigures kv_figures(const ModelSpec& spec, const KvRequest& request) {
  KvFigures k;
  k.shape = kv_shape(spec);
  const auto policy = request.cap_sliding_window ? KvWindowPolicy::kCapSlidingLayers : KvWindowPolicy::kFullContext;
  k.elements = kv_cache_elements(spec, request.context_tokens, request.batch, policy);
  k.state_bytes = recurrent_state_bytes(k.shape, request.batch);
  k.state_bytes_per_sequence = recurrent_state_bytes(k.shape, 1);
  k.bytes = static_cast<double>(k.elements) * request.bytes_per_element + k.state_bytes;
  k.bytes_per_token_full = static_cast<double>(kv_cache_elements_per_token_full(spec)) * request.bytes_per_element;
  return k;
}

SizeResult size_model(const Catalog& catalog, ResolvedModel model, const SizeRequest& request) {
  if (request.context_tokens < 0) throw bad_input(fmt::format("--context must be zero or more (got {})", request.context_tokens));
  if (request.batch < 1) throw bad_input(fmt::format("--batch must be at least 1 (got {})", request.batch));
  if (request.context_tokens > (int64_t{1} << 24)) throw bad_input("--context above 16,777,216 tokens is beyond any model");
  if (request.batch > (int64_t{1} << 20)) throw bad_input("--batch above 1,048,576 is beyond any device");
  SizeResult r;
  r.model = std::move(model);
  r.kv_request.context_tokens = static_cast<uint64_t>(request.context_tokens);
  r.kv_request.batch = static_cast<uint64_t>(request.batch);
  r.kv_request.kv_dtype = request.kv_dtype;
  r.kv_request.bytes_per_element = catalog.quant().kv_bytes_per_element(request.kv_dtype);
  r.params = parameter_count(r.model.spec);
  r.active_params = active_parameter_count(r.model.spec);
  std::string quant = request.quant;
  if (quant.empty()) {
    // A GGUF file's own type, else the checkpoint's native format (gpt-oss: mxfp4).
    quant = r.model.gguf_quant_id.empty() ? r.model.spec.native_format : r.model.gguf_quant_id;
    if (quant.empty()) throw bad_input("no format given", "pass --quant ID (e.g. q4_k_m, awq-int4, fp8) or --quant all");
  }
  std::vector<const QuantFormat*> formats;
  if (quant == "all") {
    for (const auto& f : catalog.quant().formats()) formats.push_back(&f);
  } else {
    formats.push_back(&catalog.quant().resolve(quant));
  }
  for (const auto* f : formats) {
    SizeRow row;
    row.format = f;
    row.weights = model_weights(catalog, r.model, *f);
    row.total_bytes = static_cast<double>(row.weights.weights_bytes);
    if (r.kv_request.context_tokens) {
      row.kv = kv_figures(r.model.spec, r.kv_request);
      row.total_bytes += row.kv->bytes;
    }
    r.rows.push_back(std::move(row));
  }
  if (r.model.gguf_weights) r.params = r.model.gguf_weights->params;
  std::stable_sort(r.rows.begin(), r.rows.end(),
                   [](const SizeRow& a, const SizeRow& b) { return a.weights.weights_bytes < b.weights.weights_bytes; });
  return r;
}

std::vector<ModelSummary> model_summaries(const Catalog& catalog, const std::string& kv_dtype) {
  const double bytes_per_element = catalog.quant().kv_bytes_per_element(kv_dtype);
  std::vector<ModelSummary> out;
  out.reserve(catalog.models().size());
  for (const auto& m : catalog.models())
    out.push_back({&m, parameter_count(m), active_parameter_count(m),
                   static_cast<double>(kv_cache_elements_per_token_full(m)) * bytes_per_element, kv_dtype});
  return out;
}

}  // namespace optadvisor
