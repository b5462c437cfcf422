// SPDX-License-Identifier: MIT
// Appending one GGUF-named weight tensor to a tensor list (shared by the architecture files).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "optadvisor/catalog/model.hpp"

namespace optadvisor::catalog_detail {

/// "blk.N.<kind>.weight", or "blk.N.<kind>" for a ".bias" kind; no "blk.N." prefix when layer < 0.
inline std::string weight_name(int layer, const std::string& kind) {
  const bool is_bias = kind.ends_with(".bias");
  std::string name;
  name.reserve(kind.size() + 20);  // "blk." + up to 5 digits + "." + kind + ".weight": one allocation
  if (layer >= 0) {
    name += "blk.";
    name += std::to_string(layer);
    name += '.';
  }
  name += kind;
  if (!is_bias) name += ".weight";
  return name;
}

/// Appends tensor `kind` of layer `layer` (-1 outside the blocks) with ggml shape ne0 x ne1 x ne2.
inline void add(std::vector<Tensor>& out, int layer, const std::string& kind, uint64_t ne0, uint64_t ne1 = 1, uint64_t ne2 = 1) {
  Tensor t;
  t.name = weight_name(layer, kind);
  t.kind = kind;
  t.layer = layer;
  t.row_elements = ne0;
  t.rows = ne1;
  t.slices = ne2;
  out.push_back(std::move(t));
}

}  // namespace optadvisor::catalog_detail
