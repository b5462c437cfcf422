// SPDX-License-Identifier: MIT
// Gemma 3n's tensors and checks. Shapes as llama.cpp's gemma3n loader creates them (ggml order:
// ne0 is a Linear's input width) and as transformers' modeling_gemma3n.py stores them; the tensor
// names are llama.cpp's (LLM_TENSOR_PER_LAYER_*, LLM_TENSOR_ALTUP_*, LLM_TENSOR_LAUREL_*).
#include "catalog/gemma3n.hpp"

#include <algorithm>

#include "catalog/tensor_add.hpp"

namespace optadvisor::catalog_detail {

bool is_gemma3n(const ModelSpec& s) { return s.hidden_size_per_layer_input > 0; }

void add_gemma3n_globals(const ModelSpec& s, std::vector<Tensor>& out) {
  const uint64_t h = s.hidden_size;
  const uint64_t per_layer = s.num_hidden_layers * s.hidden_size_per_layer_input;
  // embed_tokens_per_layer: one row of every layer's input per token (a lookup, never multiplied).
  add(out, -1, "per_layer_token_embd", per_layer, s.vocab_size_per_layer_input);
  add(out, -1, "per_layer_model_proj", h, per_layer);
  add(out, -1, "per_layer_proj_norm", s.hidden_size_per_layer_input);
  // altup_projections and altup_unembed_projections: one square matrix per extra stream.
  const uint64_t extra_streams = std::max<uint64_t>(s.altup_num_inputs, 1) - 1;
  add(out, -1, "altup_proj", h, h, extra_streams);
  add(out, -1, "altup_unembd_proj", h, h, extra_streams);
}

void add_gemma3n_layer_extras(const ModelSpec& s, int layer, std::vector<Tensor>& out) {
  const uint64_t h = s.hidden_size;
  const uint64_t n = s.altup_num_inputs;
  const uint64_t p = s.hidden_size_per_layer_input;
  add(out, layer, "inp_gate", h, p);
  add(out, layer, "proj", p, h);
  add(out, layer, "post_norm", h);
  add(out, layer, "altup_correct_coef", n, n);
  add(out, layer, "altup_correct_scale", h);
  add(out, layer, "altup_predict_coef", n, n * n);
  add(out, layer, "altup_router", h, n);
  add(out, layer, "altup_router_norm", h);
  add(out, layer, "laurel_l", h, s.laurel_rank);
  add(out, layer, "laurel_r", s.laurel_rank, h);
  add(out, layer, "laurel_post_norm", h);
}

bool is_kv_shared_layer(const ModelSpec& s, uint64_t layer) {
  return s.num_kv_shared_layers > 0 && layer < s.num_hidden_layers && layer >= s.num_hidden_layers - s.num_kv_shared_layers;
}

std::vector<std::pair<std::string, std::string>> gemma3n_problems(const ModelSpec& s) {
  std::vector<std::pair<std::string, std::string>> out;
  const bool any = s.hidden_size_per_layer_input > 0 || s.vocab_size_per_layer_input > 0 || s.altup_num_inputs > 0 || s.laurel_rank > 0;
  if (any) {
    if (s.model_type != "gemma3n_text")
      out.emplace_back("/hidden_size_per_layer_input", "per-layer inputs, AltUp and LAuReL are modelled for model_type gemma3n_text only");
    if (s.hidden_size_per_layer_input == 0 || s.vocab_size_per_layer_input == 0 || s.laurel_rank == 0)
      out.emplace_back("/hidden_size_per_layer_input",
                       "gemma3n_text needs hidden_size_per_layer_input, vocab_size_per_layer_input and laurel_rank, all positive");
    if (s.altup_num_inputs < 2) out.emplace_back("/altup_num_inputs", "gemma3n_text needs altup_num_inputs of 2 or more");
  }
  if (s.num_kv_shared_layers > 0) {
    if (s.model_type != "gemma3n_text") out.emplace_back("/num_kv_shared_layers", "KV sharing is modelled for model_type gemma3n_text only");
    // Each shared layer reads the last layer of its kind before the shared block: both kinds must have one there.
    const uint64_t first_shared = s.num_kv_shared_layers < s.num_hidden_layers ? s.num_hidden_layers - s.num_kv_shared_layers : 0;
    bool full = false, sliding = false;
    for (uint64_t i = 0; i < first_shared; ++i) (is_sliding_layer(s, i) ? sliding : full) = true;
    if (first_shared == 0 || !full || (!sliding && s.sliding_window > 0))
      out.emplace_back("/num_kv_shared_layers", "num_kv_shared_layers (" + std::to_string(s.num_kv_shared_layers) +
                                                    ") must leave a full and a sliding layer before the shared ones to read from");
  }
  return out;
}

void write_gemma3n(nlohmann::json& j, const ModelSpec& s) {
  if (s.hidden_size_per_layer_input > 0) {
    j["hidden_size_per_layer_input"] = s.hidden_size_per_layer_input;
    j["vocab_size_per_layer_input"] = s.vocab_size_per_layer_input;
    j["altup_num_inputs"] = s.altup_num_inputs;
    j["laurel_rank"] = s.laurel_rank;
  }
  if (s.num_kv_shared_layers > 0) j["num_kv_shared_layers"] = s.num_kv_shared_layers;
}

}  // namespace optadvisor::catalog_detail
