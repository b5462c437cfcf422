// SPDX-License-Identifier: MIT
// Gemma 3n (model_type gemma3n_text): per-layer embeddings, AltUp streams, LAuReL and KV sharing.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "optadvisor/catalog/model.hpp"

namespace optadvisor::catalog_detail {

/// True when the spec has Gemma 3n's per-layer inputs (hidden_size_per_layer_input > 0).
bool is_gemma3n(const ModelSpec& s);

/// The global tensors beside token_embd: the per-layer embedding table and its projection and
/// norm, and the AltUp projections that make and merge the extra residual streams.
void add_gemma3n_globals(const ModelSpec& s, std::vector<Tensor>& out);

/// Layer `layer`'s tensors beyond a Gemma 3 block: AltUp's coefficients, router and scale,
/// LAuReL's low-rank pair and norm, and the per-layer input's gate, projection and norm.
void add_gemma3n_layer_extras(const ModelSpec& s, int layer, std::vector<Tensor>& out);

/// True when `layer` is one of the last num_kv_shared_layers, which cache nothing.
bool is_kv_shared_layer(const ModelSpec& s, uint64_t layer);

/// What a preset's Gemma 3n fields get wrong: (JSON pointer, message) pairs.
std::vector<std::pair<std::string, std::string>> gemma3n_problems(const ModelSpec& s);

/// Writes the Gemma 3n fields of `s` into a preset document.
void write_gemma3n(nlohmann::json& j, const ModelSpec& s);

}  // namespace optadvisor::catalog_detail
