// SPDX-License-Identifier: MIT
#include "optadvisor/analysis/size.hpp"

namespace optadvisor {

KvFigures kv_figures(const ModelSpec& spec, const KvRequest& request) {
  KvFigures k;
  k.shape = kv_shape(spec);
  const auto policy = request.cap_sliding_window ? KvWindowPolicy::kCapSlidingLayers : KvWindowPolicy::kFullContext;
  k.elements = kv_cache_elements(spec, request.context_tokens, request.batch, policy);
  k.bytes = static_cast<double>(k.elements) * request.bytes_per_element;
  k.bytes_per_token_full = static_cast<double>(kv_cache_elements_per_token_full(spec)) * request.bytes_per_element;
  return k;
}

}  // namespace optadvisor
