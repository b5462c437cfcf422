// SPDX-License-Identifier: MIT
// Model presets: reading and writing the preset document, the GGUF tensor list
// an architecture implies, parameter and KV-cache counts, and the bare
// Llama-like shape used when only a parameter count is known.
#include "optadvisor/catalog/model.hpp"
#include "base/strings.hpp"
#include "base/json_fields.hpp"
#include "catalog/deepseek_v4.hpp"
#include "catalog/gemma3n.hpp"
#include "catalog/tensor_add.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>
#include <string_view>

namespace optadvisor {

const OfficialRelease* official_release(const ModelSpec& model, const std::string& format_id, const std::string& asked) {
  for (const OfficialRelease& r : model.releases) {
    if (r.format != format_id) continue;
    if (r.names.empty() || std::any_of(r.names.begin(), r.names.end(), [&](const std::string& n) { return iequals(n, asked); })) return &r;
  }
  return nullptr;
}

namespace {

using nlohmann::json;

/// Official releases a preset may list (FP8, FP4, INT4 twins and a few more).
constexpr std::size_t kMaxReleases = 8;

/// A Hugging Face repository id: "Org/Name", each part of letters, digits, '-', '_' and '.'.
bool is_repo_id(const std::string& s) {
  const std::size_t slash = s.find('/');
  if (s.size() > 200 || slash == std::string::npos || slash == 0 || slash + 1 == s.size() || s.find('/', slash + 1) != std::string::npos)
    return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '/'; });
}

constexpr std::string_view kSliding = "sliding_attention";
constexpr std::string_view kFull = "full_attention";
constexpr std::string_view kLinear = "linear_attention";
constexpr std::string_view kMamba = "mamba";
constexpr std::string_view kShortConv = "conv";
/// MXFP4 (OCP Microscaling Formats v1.0): one E8M0 scale per block of 32 E2M1 weights.
constexpr uint64_t kMxfp4BlockWeights = 32;

/// Architecture traits that follow from model_type; a preset may override each.
struct Traits {
  bool tie_word_embeddings = false;
  bool attention_bias = false;
  bool qkv_bias = false;
  bool mlp_bias = false;
  bool router_bias = false;
  bool router_score_correction_bias = false;
  bool qk_norm = false;
  bool sandwich_norm = false;
  bool attention_sinks = false;
  bool attn_output_gate = false;
  bool shared_expert_gate = false;
};

Traits traits_for(const std::string& model_type) {
  Traits t;
  if (model_type == "qwen2") {
    t.qkv_bias = true;  // Qwen2Attention: q/k/v Linear(bias=True), o_proj without bias
  } else if (model_type == "qwen3" || model_type == "qwen3_moe") {
    t.qk_norm = true;
  } else if (model_type == "gemma2") {
    t.tie_word_embeddings = true;  // Gemma2Config default
    t.sandwich_norm = true;
  } else if (model_type == "gemma3_text" || model_type == "gemma3n_text" || model_type == "gemma4_text") {
    t.tie_word_embeddings = true;  // Gemma3TextConfig / Gemma3nTextConfig / Gemma4TextConfig default
    t.sandwich_norm = true;
    t.qk_norm = true;
  } else if (model_type == "deepseek_v3") {
    t.router_score_correction_bias = true;
  } else if (model_type == "minimax_m2") {
    t.router_score_correction_bias = true;  // use_routing_bias: e_score_correction_bias
    t.qk_norm = true;                       // use_qk_norm (qk_norm_type per_layer in the released configs)
  } else if (model_type == "qwen3_next" || model_type == "qwen3_5_text" || model_type == "qwen3_5_moe_text") {
    t.qk_norm = true;
    t.attn_output_gate = true;
    t.shared_expert_gate = model_type != "qwen3_5_text";
  } else if (model_type == "lfm2_moe") {
    t.tie_word_embeddings = true;  // Lfm2MoeConfig default
    t.qk_norm = true;              // q_layernorm / k_layernorm on every attention layer
  } else if (model_type == "gpt_oss") {
    t.attention_bias = true;
    t.mlp_bias = true;
    t.router_bias = true;
    t.attention_sinks = true;
  }
  return t;
}

const std::set<std::string>& known_fields() {
  static const std::set<std::string> fields = {"$schema",
                                               "id",
                                               "name",
                                               "aliases",
                                               "model_type",
                                               "hidden_size",
                                               "num_hidden_layers",
                                               "num_attention_heads",
                                               "num_key_value_heads",
                                               "head_dim",
                                               "intermediate_size",
                                               "vocab_size",
                                               "tie_word_embeddings",
                                               "max_position_embeddings",
                                               "rope_theta",
                                               "attention_bias",
                                               "qkv_bias",
                                               "mlp_bias",
                                               "router_bias",
                                               "router_score_correction_bias",
                                               "qk_norm",
                                               "sandwich_norm",
                                               "attention_sinks",
                                               "qk_norm_type",
                                               "attn_output_gate",
                                               "shared_expert_gate",
                                               "index_n_heads",
                                               "index_head_dim",
                                               "index_topk",
                                               "full_attention_interval",
                                               "linear_num_key_heads",
                                               "linear_key_head_dim",
                                               "linear_num_value_heads",
                                               "linear_value_head_dim",
                                               "linear_conv_kernel_dim",
                                               "mamba_ssm_dtype",
                                               "params_unexplained",
                                               "mamba_n_heads",
                                               "mamba_d_head",
                                               "mamba_n_groups",
                                               "mamba_d_state",
                                               "mamba_d_conv",
                                               "mamba_conv_bias", "conv_L_cache", "conv_bias",
                                               "hybrid_override_pattern",
                                               "mtp_hybrid_override_pattern",
                                               "num_experts",
                                               "num_experts_per_tok",
                                               "moe_intermediate_size",
                                               "shared_expert_intermediate_size",
                                               "moe_latent_size",
                                               "first_k_dense_replace",
                                               "mlp_only_layers",
                                               "q_lora_rank",
                                               "kv_lora_rank",
                                               "qk_rope_head_dim",
                                               "qk_nope_head_dim",
                                               "v_head_dim",
                                               "sliding_window",
                                               "sliding_window_pattern",
                                               "layer_types",
                                               "global_head_dim",
                                               "num_global_key_value_heads",
                                               "attention_k_eq_v",
                                               "enable_moe_block",
                                               "hidden_size_per_layer_input", "vocab_size_per_layer_input", "altup_num_inputs",
                                               "laurel_rank", "num_kv_shared_layers", "encoder_tower_params",
                                               "num_nextn_predict_layers",
                                               "compress_ratios", "o_lora_rank", "o_groups", "hc_mult", "num_hash_layers", "expert_dtype",
                                               "vision_config",
                                               "quantization_config",
                                               "native_format",
                                               "releases",
                                               "checkpoint_includes",
                                               "params_exact",
                                               "params_source",
                                               "sources",
                                               "notes"};
  return fields;
}

const std::vector<std::string>& checkpoint_include_names() {
  static const std::vector<std::string> names = {"rotary_inv_freq_buffers",     "untied_output_copy",  "vision_tower",  "mtp_layers",
                                                 "mtp_layers_shared_embedding", "quantization_scales", "encoder_towers"};
  return names;
}

/// Reads typed fields of one JSON object, recording a Problem per bad field.
class FieldReader {
 public:
  FieldReader(const json& j, std::string base, std::vector<Problem>& problems) : j_(j), base_(std::move(base)), problems_(problems) {}

  std::string pointer(const std::string& key) const { return base_ + "/" + key; }

  void problem(const std::string& ptr, std::string message) {
    problems_.push_back(Problem{"", ptr, std::move(message)});
    ok_ = false;
  }

  bool ok() const { return ok_; }
  bool has(const char* key) const { return json_field::find(j_, key) != nullptr; }

  std::optional<uint64_t> uint(const char* key, bool required = false) {
    if (!has(key)) {
      if (required) problem(pointer(key), std::string("missing required field '") + key + "'");
      return std::nullopt;
    }
    if (auto v = json_field::as_uint(j_.at(key))) return v;
    problem(pointer(key), "expected a non-negative integer");
    return std::nullopt;
  }

  std::optional<bool> boolean(const char* key) {
    if (!has(key)) return std::nullopt;
    if (auto v = json_field::as_bool(j_.at(key))) return v;
    problem(pointer(key), "expected true or false");
    return std::nullopt;
  }

  std::optional<double> number(const char* key) {
    if (!has(key)) return std::nullopt;
    if (auto v = json_field::as_number(j_.at(key))) return v;
    problem(pointer(key), "expected a number");
    return std::nullopt;
  }

  std::optional<std::string> string(const char* key, bool required = false) {
    if (!has(key)) {
      if (required) problem(pointer(key), std::string("missing required field '") + key + "'");
      return std::nullopt;
    }
    if (auto v = json_field::as_string(j_.at(key)); v && !v->empty()) return v;
    problem(pointer(key), "expected a non-empty string");
    return std::nullopt;
  }

  /// The object at `key`, or nullptr (and the problem "expected an object" when it is something else).
  const json* object(const char* key) {
    if (!has(key)) return nullptr;
    const json& v = j_.at(key);
    if (v.is_object()) return &v;
    problem(pointer(key), "expected an object");
    return nullptr;
  }

  std::vector<std::string> strings(const char* key) {
    std::vector<std::string> out;
    if (!has(key)) return out;
    const json& v = j_.at(key);
    if (!v.is_array()) {
      problem(pointer(key), "expected an array of strings");
      return out;
    }
    for (size_t i = 0; i < v.size(); ++i) {
      if (auto item = json_field::as_string(v[i])) {
        out.push_back(*item);
      } else {
        problem(pointer(key) + "/" + std::to_string(i), "expected a string");
      }
    }
    return out;
  }

  std::vector<uint64_t> uints(const char* key) {
    std::vector<uint64_t> out;
    if (!has(key)) return out;
    const json& v = j_.at(key);
    if (!v.is_array()) {
      problem(pointer(key), "expected an array of non-negative integers");
      return out;
    }
    for (size_t i = 0; i < v.size(); ++i) {
      if (auto item = json_field::as_uint(v[i])) {
        out.push_back(*item);
      } else {
        problem(pointer(key) + "/" + std::to_string(i), "expected a non-negative integer");
      }
    }
    return out;
  }

 private:
  const json& j_;
  std::string base_;
  std::vector<Problem>& problems_;
  bool ok_ = true;
};

using catalog_detail::add;
using catalog_detail::is_deepseek_v4;
using catalog_detail::is_gemma3n;
using catalog_detail::is_kv_shared_layer;

bool is_mla(const ModelSpec& s) { return s.kv_lora_rank > 0; }

/// Gated DeltaNet widths: q and k (key heads x key dim each), v and the output gate z (value heads x value dim each).
uint64_t linear_key_width(const ModelSpec& s) { return s.linear_num_key_heads * s.linear_key_head_dim; }
uint64_t linear_value_width(const ModelSpec& s) { return s.linear_num_value_heads * s.linear_value_head_dim; }
uint64_t linear_conv_width(const ModelSpec& s) { return 2 * linear_key_width(s) + linear_value_width(s); }

/// A Gated DeltaNet mixer (HF linear_attn; llama.cpp qwen3next names): fused q/k/v/z input
/// projection, fused beta/alpha gates, the causal conv1d over q, k and v, dt_bias, A_log, the gated
/// RMSNorm over one value head, and the output projection. Qwen3.5 stores in_proj_qkv, in_proj_z,
/// in_proj_b and in_proj_a apart (llama.cpp qwen35: attn_qkv, attn_gate, ssm_beta, ssm_alpha): the same elements.
void add_linear_attention(const ModelSpec& s, int i, std::vector<Tensor>& out) {
  const uint64_t h = s.hidden_size;
  add(out, i, "ssm_in", h, linear_conv_width(s) + linear_value_width(s));
  add(out, i, "ssm_beta_alpha", h, 2 * s.linear_num_value_heads);
  add(out, i, "ssm_conv1d", s.linear_conv_kernel_dim, linear_conv_width(s));
  add(out, i, "ssm_dt.bias", s.linear_num_value_heads);
  add(out, i, "ssm_a", s.linear_num_value_heads);
  add(out, i, "ssm_norm", s.linear_value_head_dim);
  add(out, i, "ssm_out", linear_value_width(s), h);
}

/// Mamba-2 widths: the inner width (heads x d_head) and the conv1d channels (x, B and C).
uint64_t mamba_inner(const ModelSpec& s) { return s.mamba_n_heads * s.mamba_d_head; }
uint64_t mamba_conv_width(const ModelSpec& s) { return mamba_inner(s) + 2 * s.mamba_n_groups * s.mamba_d_state; }

/// A Mamba-2 mixer (HF mamba / mixer; llama.cpp mamba2 names).
void add_mamba(const ModelSpec& s, int i, std::vector<Tensor>& out) {
  const uint64_t h = s.hidden_size;
  add(out, i, "ssm_in", h, mamba_inner(s) + mamba_conv_width(s) + s.mamba_n_heads);  // z, x B C, dt
  add(out, i, "ssm_conv1d", s.mamba_d_conv, mamba_conv_width(s));
  if (s.mamba_conv_bias) add(out, i, "ssm_conv1d.bias", mamba_conv_width(s));
  add(out, i, "ssm_dt.bias", s.mamba_n_heads);
  add(out, i, "ssm_a", s.mamba_n_heads);
  add(out, i, "ssm_d", s.mamba_n_heads);
  add(out, i, "ssm_norm", mamba_inner(s));
  add(out, i, "ssm_out", mamba_inner(s), h);
}

/// A Nemotron-H MoE mixer: the router (no score-correction bias unless stated), the ungated
/// routed experts and the shared expert. With moe_latent_size the experts work in the latent:
/// fc1_latent_proj (hidden -> latent) before them, fc2_latent_proj (latent -> hidden) after them
/// (llama.cpp ffn_latent_down / ffn_latent_up); the router and shared expert read the hidden width.
void add_nemotron_moe(const ModelSpec& s, int i, std::vector<Tensor>& out) {
  const uint64_t h = s.hidden_size;
  const uint64_t expert_width = s.moe_latent_size > 0 ? s.moe_latent_size : h;
  add(out, i, "ffn_gate_inp", h, s.num_experts);
  if (s.router_score_correction_bias) add(out, i, "exp_probs_b.bias", s.num_experts);
  if (s.moe_latent_size > 0) {
    add(out, i, "ffn_latent_down", h, s.moe_latent_size);
    add(out, i, "ffn_latent_up", s.moe_latent_size, h);
  }
  add(out, i, "ffn_up_exps", expert_width, s.moe_intermediate_size, s.num_experts);
  add(out, i, "ffn_down_exps", s.moe_intermediate_size, expert_width, s.num_experts);
  if (s.shared_expert_intermediate_size > 0) {
    add(out, i, "ffn_up_shexp", h, s.shared_expert_intermediate_size);
    add(out, i, "ffn_down_shexp", s.shared_expert_intermediate_size, h);
  }
}

/// A Nemotron-H block of `kind` (a hybrid_override_pattern character): one norm and one mixer.
void add_nemotron_block(const ModelSpec& s, uint64_t layer_index, char kind, std::vector<Tensor>& out) {
  const int i = static_cast<int>(layer_index);
  const uint64_t h = s.hidden_size;
  add(out, i, "attn_norm", h);
  if (kind == 'M') {
    add_mamba(s, i, out);
  } else if (kind == '-') {
    add(out, i, "ffn_up", h, s.intermediate_size);  // squared ReLU, no gate
    add(out, i, "ffn_down", s.intermediate_size, h);
  } else if (kind == 'E') {
    add_nemotron_moe(s, i, out);
  } else {
    const uint64_t q_width = s.num_attention_heads * s.head_dim;
    const uint64_t kv_width = s.num_key_value_heads * s.head_dim;
    add(out, i, "attn_q", h, q_width);
    add(out, i, "attn_k", h, kv_width);
    add(out, i, "attn_v", h, kv_width);
    add(out, i, "attn_output", q_width, h);
  }
}

/// An LFM2 short-convolution mixer (HF conv.in_proj, conv.conv, conv.out_proj; llama.cpp
/// shortconv.* names). The checkpoint's conv weight is hidden x 1 x conv_L_cache; GGUF squeezes it.
void add_short_conv(const ModelSpec& s, int i, std::vector<Tensor>& out) {
  const uint64_t h = s.hidden_size;
  add(out, i, "shortconv.in_proj", h, 3 * h);  // B, C and x
  add(out, i, "shortconv.conv", s.conv_L_cache, h);
  add(out, i, "shortconv.out_proj", h, h);
  if (s.conv_bias) {
    add(out, i, "shortconv.in_proj.bias", 3 * h);
    add(out, i, "shortconv.conv.bias", h);
    add(out, i, "shortconv.out_proj.bias", h);
  }
}

/// The DSA lightning indexer of one layer (DeepSeek-V3.2 wq_b, wk, k_norm with bias, weights_proj;
/// llama.cpp indexer.* names): queries from the MLA q latent, one shared key per token.
void add_indexer(const ModelSpec& s, int i, std::vector<Tensor>& out) {
  add(out, i, "indexer.attn_q_b", s.q_lora_rank, s.index_n_heads * s.index_head_dim);
  add(out, i, "indexer.attn_k", s.hidden_size, s.index_head_dim);
  add(out, i, "indexer.k_norm", s.index_head_dim);
  add(out, i, "indexer.k_norm.bias", s.index_head_dim);
  add(out, i, "indexer.proj", s.hidden_size, s.index_n_heads);
}

/// DeepSeek-V2/V3 MLA (llama.cpp arch deepseek2). kv_b_proj is written as
/// attn_k_b (transposed, per head) and attn_v_b for the absorbed matmuls.
void add_mla_attention(const ModelSpec& s, int i, std::vector<Tensor>& out) {
  const uint64_t h = s.hidden_size;
  const uint64_t nh = s.num_attention_heads;
  const uint64_t qk_head = s.qk_nope_head_dim + s.qk_rope_head_dim;
  if (s.q_lora_rank > 0) {
    add(out, i, "attn_q_a", h, s.q_lora_rank);
    add(out, i, "attn_q_a_norm", s.q_lora_rank);
    add(out, i, "attn_q_b", s.q_lora_rank, nh * qk_head);
  } else {
    add(out, i, "attn_q", h, nh * qk_head);
  }
  add(out, i, "attn_kv_a_mqa", h, s.kv_lora_rank + s.qk_rope_head_dim);
  add(out, i, "attn_kv_a_norm", s.kv_lora_rank);
  add(out, i, "attn_k_b", s.qk_nope_head_dim, s.kv_lora_rank, nh);
  add(out, i, "attn_v_b", s.kv_lora_rank, s.v_head_dim, nh);
  add(out, i, "attn_output", nh * s.v_head_dim, h);
  if (s.attention_bias) add(out, i, "attn_output.bias", h);
  if (s.index_n_heads > 0) add_indexer(s, i, out);
}

/// Grouped-query attention: q/k/v (fused for Phi-3), their biases, the output and the q/k norms.
/// Each layer at its kind's head width and KV heads; no v on a Gemma 4 K = V layer.
void add_gqa_attention(const ModelSpec& s, int i, std::vector<Tensor>& out) {
  const uint64_t h = s.hidden_size;
  const auto layer = static_cast<uint64_t>(i);
  const uint64_t head_dim = layer_head_dim(s, layer);
  const uint64_t q_width = s.num_attention_heads * head_dim;
  const uint64_t q_out = s.attn_output_gate ? 2 * q_width : q_width;  // query and its output gate
  const uint64_t kv_width = layer_kv_heads(s, layer) * head_dim;
  const bool shared_value = s.attention_k_eq_v && !is_sliding_layer(s, layer);
  if (s.model_type == "phi3") {
    // Phi-3 checkpoints store qkv_proj fused; llama.cpp keeps it as attn_qkv.
    add(out, i, "attn_qkv", h, q_width + 2 * kv_width);
    if (s.attention_bias || s.qkv_bias) add(out, i, "attn_qkv.bias", q_width + 2 * kv_width);
  } else {
    add(out, i, "attn_q", h, q_out);
    add(out, i, "attn_k", h, kv_width);
    if (!shared_value) add(out, i, "attn_v", h, kv_width);
    if (s.attention_bias || s.qkv_bias) {
      add(out, i, "attn_q.bias", q_width);
      add(out, i, "attn_k.bias", kv_width);
      if (!shared_value) add(out, i, "attn_v.bias", kv_width);
    }
  }
  add(out, i, "attn_output", q_width, h);
  if (s.attention_bias) add(out, i, "attn_output.bias", h);
  if (s.qk_norm) {
    const bool per_layer = s.qk_norm_type == "per_layer";
    add(out, i, "attn_q_norm", per_layer ? q_width : head_dim);
    add(out, i, "attn_k_norm", per_layer ? kv_width : head_dim);
  }
}

/// A routed-expert FFN: the router, the stacked experts and the shared expert.
void add_moe_ffn(const ModelSpec& s, int i, std::vector<Tensor>& out) {
  const uint64_t h = s.hidden_size;
  const uint64_t e = s.num_experts;
  const uint64_t f = s.moe_intermediate_size;
  add(out, i, "ffn_gate_inp", h, e);
  if (s.router_bias) add(out, i, "ffn_gate_inp.bias", e);
  if (s.router_score_correction_bias) add(out, i, "exp_probs_b.bias", e);
  add(out, i, "ffn_gate_exps", h, f, e);
  add(out, i, "ffn_up_exps", h, f, e);
  add(out, i, "ffn_down_exps", f, h, e);
  if (s.mlp_bias) {
    add(out, i, "ffn_gate_exps.bias", f, e);
    add(out, i, "ffn_up_exps.bias", f, e);
    add(out, i, "ffn_down_exps.bias", h, e);
  }
  if (s.shared_expert_intermediate_size > 0) {
    const uint64_t fs = s.shared_expert_intermediate_size;
    add(out, i, "ffn_gate_shexp", h, fs);
    add(out, i, "ffn_up_shexp", h, fs);
    add(out, i, "ffn_down_shexp", fs, h);
    if (s.shared_expert_gate) add(out, i, "ffn_gate_inp_shexp", h);
  }
}

/// A dense gated FFN (fused gate and up for Phi-3).
void add_dense_ffn(const ModelSpec& s, int i, std::vector<Tensor>& out) {
  const uint64_t h = s.hidden_size;
  const uint64_t f = s.intermediate_size;
  if (s.model_type == "phi3") {
    // Phi-3's gate_up_proj stays fused: ffn_up is 2 x intermediate wide.
    add(out, i, "ffn_up", h, 2 * f);
    add(out, i, "ffn_down", f, h);
  } else {
    add(out, i, "ffn_gate", h, f);
    add(out, i, "ffn_up", h, f);
    add(out, i, "ffn_down", f, h);
    if (s.mlp_bias) {
      add(out, i, "ffn_gate.bias", f);
      add(out, i, "ffn_up.bias", f);
      add(out, i, "ffn_down.bias", h);
    }
  }
}

/// Gemma 4's routed-expert block beside the dense MLP (enable_moe_block): the experts and router of
/// add_moe_ffn plus the router's input scale (HF router.scale, hidden wide), its per-expert output
/// scale (router.per_expert_scale) and three norms (pre_feedforward_layernorm_2 before the experts,
/// post_feedforward_layernorm_1 after the MLP, post_feedforward_layernorm_2 after the experts).
/// llama.cpp's gemma4 names were not read: these kinds follow its Gemma norm names.
void add_gemma4_moe_block(const ModelSpec& s, int i, std::vector<Tensor>& out) {
  const uint64_t h = s.hidden_size;
  add_moe_ffn(s, i, out);
  add(out, i, "ffn_gate_inp_scale", h);
  add(out, i, "ffn_exps_scale", s.num_experts);
  add(out, i, "pre_ffw_norm_2", h);
  add(out, i, "post_ffw_norm_1", h);
  add(out, i, "post_ffw_norm_2", h);
}

/// Tensors of decoder block `layer`, exactly as convert_hf_to_gguf.py names
/// and shapes them (ggml order: ne0 is the input dimension of a Linear).
void add_block(const ModelSpec& s, uint64_t layer_index, std::vector<Tensor>& out) {
  if (!s.hybrid_override_pattern.empty()) {
    const char kind = layer_index < s.hybrid_override_pattern.size() ? s.hybrid_override_pattern[layer_index] : '*';
    add_nemotron_block(s, layer_index, kind, out);
    return;
  }
  if (is_deepseek_v4(s)) {
    catalog_detail::add_deepseek_v4_block(s, layer_index, out);
    return;
  }
  const int i = static_cast<int>(layer_index);
  const uint64_t h = s.hidden_size;

  add(out, i, "attn_norm", h);
  if (is_linear_layer(s, layer_index)) {
    add_linear_attention(s, i, out);
  } else if (is_mamba_layer(s, layer_index)) {
    add_mamba(s, i, out);
  } else if (is_short_conv_layer(s, layer_index)) {
    add_short_conv(s, i, out);
  } else if (is_mla(s)) {
    add_mla_attention(s, i, out);
  } else {
    add_gqa_attention(s, i, out);
  }
  if (s.attention_sinks) add(out, i, "attn_sinks", s.num_attention_heads);
  if (s.sandwich_norm) add(out, i, "post_attention_norm", h);
  // gpt-oss's pre-FFN norm (HF post_attention_layernorm) keeps the
  // ATTN_POST_NORM name in llama.cpp; everyone else calls it ffn_norm.
  add(out, i, s.model_type == "gpt_oss" ? "post_attention_norm" : "ffn_norm", h);

  if (s.enable_moe_block && is_moe_layer(s, layer_index)) {
    add_dense_ffn(s, i, out);
    add_gemma4_moe_block(s, i, out);
  } else if (is_moe_layer(s, layer_index)) {
    add_moe_ffn(s, i, out);
  } else {
    add_dense_ffn(s, i, out);
  }
  if (s.sandwich_norm) add(out, i, "post_ffw_norm", h);
  if (is_gemma3n(s)) catalog_detail::add_gemma3n_layer_extras(s, i, out);
}

uint64_t sum_elements(const std::vector<Tensor>& tensors) {
  uint64_t n = 0;
  for (const Tensor& t : tensors) n += t.elements();
  return n;
}

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_expert_kind(const std::string& kind) { return kind == "ffn_gate_exps" || kind == "ffn_up_exps" || kind == "ffn_down_exps"; }

/// FP8 block scales the HF checkpoint stores for `block`'s Linear weights:
/// ceil(out/rows) x ceil(in/cols) per matrix. Routers, norms and biases stay
/// BF16/F32. attn_k_b + attn_v_b are one kv_b_proj in the checkpoint.
/// per_tensor > 0 (weight_block_size null): that many scalars per matrix instead
/// (weight_scale, plus activation_scale under the static scheme).
uint64_t fp8_scale_elements(const ModelSpec& s, const std::vector<Tensor>& block, uint64_t block_rows, uint64_t block_cols,
                            uint64_t per_tensor = 0) {
  uint64_t n = 0;
  for (const Tensor& t : block) {
    // The DSA indexer's weights_proj stays BF16 (DeepSeek-V3.2, GLM-5-FP8 modules_to_not_convert).
    if (t.is_vector() || ends_with(t.kind, ".bias") || t.kind == "ffn_gate_inp" || t.kind == "indexer.proj") continue;
    if (t.kind == "attn_v_b") continue;  // counted with attn_k_b
    if (catalog_detail::is_unscaled_deepseek_v4_kind(t.kind)) continue;
    if (s.expert_dtype == "fp4" && is_expert_kind(t.kind)) {
      n += t.elements() / kMxfp4BlockWeights;  // FP4 experts: one E8M0 scale per 32 weights instead of FP8 blocks
      continue;
    }
    if (per_tensor > 0) {
      n += t.slices * per_tensor;
      continue;
    }
    if (t.kind == "attn_k_b") {
      const uint64_t out_rows = s.num_attention_heads * (s.qk_nope_head_dim + s.v_head_dim);
      n += ceil_div(out_rows, block_rows) * ceil_div(s.kv_lora_rank, block_cols);
      continue;
    }
    n += t.slices * ceil_div(t.rows, block_rows) * ceil_div(t.row_elements, block_cols);
  }
  return n;
}

}  // namespace

const std::vector<std::string>& supported_model_types() {
  static const std::vector<std::string> types = {"llama",      "mistral",          "mixtral",     "qwen2",        "qwen3",
                                                 "qwen3_moe",  "gemma2",           "gemma3_text", "phi3",         "deepseek_v3",
                                                 "gpt_oss",    "minimax_m2",       "qwen3_next",  "qwen3_5_text", "qwen3_5_moe_text",
                                                 "nemotron_h", "granitemoehybrid", "llama4_text", "gemma4_text",
                                                 "lfm2_moe",   "deepseek_v4",      "gemma3n_text"};
  return types;
}

bool is_sliding_layer(const ModelSpec& spec, uint64_t layer) {
  if (spec.sliding_window == 0) return false;
  if (!spec.layer_types.empty()) return layer < spec.layer_types.size() && spec.layer_types[layer] == kSliding;
  if (spec.sliding_window_pattern > 0) return (layer + 1) % spec.sliding_window_pattern != 0;
  return true;  // a single sliding_window with no pattern applies to every layer
}

bool is_linear_layer(const ModelSpec& spec, uint64_t layer) {
  if (layer >= spec.num_hidden_layers) return false;
  if (!spec.layer_types.empty()) return layer < spec.layer_types.size() && spec.layer_types[layer] == kLinear;
  if (spec.full_attention_interval > 0) return (layer + 1) % spec.full_attention_interval != 0;
  return false;
}

bool is_mamba_layer(const ModelSpec& spec, uint64_t layer) {
  if (layer >= spec.num_hidden_layers) return false;
  if (!spec.hybrid_override_pattern.empty())
    return layer < spec.hybrid_override_pattern.size() && spec.hybrid_override_pattern[layer] == 'M';
  return layer < spec.layer_types.size() && spec.layer_types[layer] == kMamba;
}

bool is_short_conv_layer(const ModelSpec& spec, uint64_t layer) {
  return layer < spec.num_hidden_layers && layer < spec.layer_types.size() && spec.layer_types[layer] == kShortConv;
}

bool is_moe_layer(const ModelSpec& spec, uint64_t layer) {
  if (!spec.hybrid_override_pattern.empty())
    return layer < spec.hybrid_override_pattern.size() && spec.hybrid_override_pattern[layer] == 'E';
  if (spec.num_experts == 0 || layer < spec.first_k_dense_replace) return false;
  return std::find(spec.mlp_only_layers.begin(), spec.mlp_only_layers.end(), layer) == spec.mlp_only_layers.end();
}

uint64_t layer_head_dim(const ModelSpec& spec, uint64_t layer) {
  return spec.global_head_dim > 0 && !is_sliding_layer(spec, layer) ? spec.global_head_dim : spec.head_dim;
}

uint64_t layer_kv_heads(const ModelSpec& spec, uint64_t layer) {
  return spec.num_global_key_value_heads > 0 && !is_sliding_layer(spec, layer) ? spec.num_global_key_value_heads
                                                                                : spec.num_key_value_heads;
}

AttentionWidths attention_widths(const ModelSpec& spec) {
  AttentionWidths w;
  if (spec.kv_lora_rank > 0) {
    w.full = spec.num_attention_heads * (spec.qk_nope_head_dim + spec.qk_rope_head_dim + spec.v_head_dim);
    w.sliding = w.full;
    return w;
  }
  w.sliding = spec.num_attention_heads * 2 * spec.head_dim;
  w.full = spec.num_attention_heads * 2 * (spec.global_head_dim > 0 ? spec.global_head_dim : spec.head_dim);
  return w;
}

namespace {

/// Why the dimensions give more than kMaxModelParameters parameters, or nullopt. Counted in double
/// (exact enough for a bound, and it cannot wrap); precondition: every dimension within its range,
/// so the tensor list is at most kMaxModelLayers blocks long.
std::optional<std::string> parameter_overflow(const ModelSpec& s) {
  const auto limit = static_cast<double>(kMaxModelParameters);
  double total = 0;
  const Tensor* largest = nullptr;
  double largest_elements = 0;
  const std::vector<Tensor> tensors = model_tensors(s);
  for (const Tensor& t : tensors) {
    const double n = static_cast<double>(t.row_elements) * static_cast<double>(t.rows) * static_cast<double>(t.slices);
    total += n;
    if (n > largest_elements) {
      largest_elements = n;
      largest = &t;
    }
  }
  const double h = static_cast<double>(s.hidden_size);
  const double embedding = static_cast<double>(s.vocab_size) * h;
  // MTP blocks (each at most the largest layer's tensors again) with their embedding and head copies.
  const double layers = static_cast<double>(std::max<uint64_t>(s.num_hidden_layers, 1));
  const auto blocks_per_module = static_cast<double>(std::max<size_t>(s.mtp_hybrid_override_pattern.size(), 1));
  total += static_cast<double>(s.num_nextn_predict_layers) * (blocks_per_module * total / layers + 2 * h * h + 2 * embedding);
  if (s.vision_config) {
    const VisionTowerSpec& v = *s.vision_config;
    const double hv = static_cast<double>(v.hidden_size);
    const double side = static_cast<double>(v.image_size) / static_cast<double>(std::max<uint64_t>(v.patch_size, 1));
    total += static_cast<double>(v.num_hidden_layers) * (4 * hv * hv + 2 * hv * static_cast<double>(v.intermediate_size) + 8 * hv) +
             static_cast<double>(v.num_channels) * static_cast<double>(v.patch_size) * static_cast<double>(v.patch_size) * hv +
             side * side * hv + 2 * static_cast<double>(v.num_position_embeddings) * hv + hv * h;
  }
  if (total <= limit) return std::nullopt;
  std::string shape;
  if (largest != nullptr)
    shape = fmt::format(" (the largest tensor, {} [{} x {} x {}], has {:.3g})", largest->name, largest->row_elements, largest->rows,
                        largest->slices, largest_elements);
  return fmt::format("these dimensions give {:.3g} parameters, beyond the limit of {:.3g} for any model{}", total, limit, shape);
}

}  // namespace

namespace {

/// The identity fields and model_type (checked against the supported list).
void read_identity(FieldReader& r, ModelSpec& s) {
  s.id = r.string("id", true).value_or("");
  s.name = r.string("name", true).value_or("");
  s.aliases = r.strings("aliases");
  s.model_type = r.string("model_type", true).value_or("");
  const auto& types = supported_model_types();
  if (!s.model_type.empty() && std::find(types.begin(), types.end(), s.model_type) == types.end()) {
    r.problem("/model_type", "unsupported model_type '" + s.model_type + "' (supported: " + join(types) + ")");
  }
}

/// The transformer's shape and its per-architecture switches (biases, norms, gates), the
/// model_type's traits where a switch is absent.
void read_shape(FieldReader& r, const Traits& t, ModelSpec& s) {
  s.hidden_size = r.uint("hidden_size", true).value_or(0);
  s.num_hidden_layers = r.uint("num_hidden_layers", true).value_or(0);
  s.num_attention_heads = r.uint("num_attention_heads", true).value_or(0);
  s.vocab_size = r.uint("vocab_size", true).value_or(0);
  s.num_key_value_heads = r.uint("num_key_value_heads").value_or(s.num_attention_heads);
  s.intermediate_size = r.uint("intermediate_size").value_or(0);
  s.tie_word_embeddings = r.boolean("tie_word_embeddings").value_or(t.tie_word_embeddings);
  s.max_position_embeddings = r.uint("max_position_embeddings").value_or(0);
  s.rope_theta = r.number("rope_theta").value_or(0.0);

  s.attention_bias = r.boolean("attention_bias").value_or(t.attention_bias);
  s.qkv_bias = r.boolean("qkv_bias").value_or(t.qkv_bias);
  s.mlp_bias = r.boolean("mlp_bias").value_or(t.mlp_bias);
  s.router_bias = r.boolean("router_bias").value_or(t.router_bias);
  s.router_score_correction_bias = r.boolean("router_score_correction_bias").value_or(t.router_score_correction_bias);
  s.qk_norm = r.boolean("qk_norm").value_or(t.qk_norm);
  s.sandwich_norm = r.boolean("sandwich_norm").value_or(t.sandwich_norm);
  s.attention_sinks = r.boolean("attention_sinks").value_or(t.attention_sinks);
  s.qk_norm_type = r.string("qk_norm_type").value_or("per_head");
  s.attn_output_gate = r.boolean("attn_output_gate").value_or(t.attn_output_gate);
  s.shared_expert_gate = r.boolean("shared_expert_gate").value_or(t.shared_expert_gate);
}

/// The non-softmax blocks: the DSA indexer, linear attention, Mamba-2 and the hybrid pattern.
void read_hybrid_fields(FieldReader& r, ModelSpec& s) {
  s.index_n_heads = r.uint("index_n_heads").value_or(0);
  s.index_head_dim = r.uint("index_head_dim").value_or(0);
  s.index_topk = r.uint("index_topk").value_or(0);
  s.full_attention_interval = r.uint("full_attention_interval").value_or(0);
  s.linear_num_key_heads = r.uint("linear_num_key_heads").value_or(0);
  s.linear_key_head_dim = r.uint("linear_key_head_dim").value_or(0);
  s.linear_num_value_heads = r.uint("linear_num_value_heads").value_or(0);
  s.linear_value_head_dim = r.uint("linear_value_head_dim").value_or(0);
  s.linear_conv_kernel_dim = r.uint("linear_conv_kernel_dim").value_or(0);
  s.mamba_ssm_dtype = r.string("mamba_ssm_dtype").value_or("bfloat16");
  s.mamba_n_heads = r.uint("mamba_n_heads").value_or(0);
  s.mamba_d_head = r.uint("mamba_d_head").value_or(0);
  s.mamba_n_groups = r.uint("mamba_n_groups").value_or(0);
  s.mamba_d_state = r.uint("mamba_d_state").value_or(0);
  s.mamba_d_conv = r.uint("mamba_d_conv").value_or(0);
  s.mamba_conv_bias = r.boolean("mamba_conv_bias").value_or(true);
  s.hybrid_override_pattern = r.string("hybrid_override_pattern").value_or("");
  s.mtp_hybrid_override_pattern = r.string("mtp_hybrid_override_pattern").value_or("");
  s.conv_L_cache = r.uint("conv_L_cache").value_or(0);
  s.conv_bias = r.boolean("conv_bias").value_or(false);
}

/// The experts, MLA's ranks, head_dim (derived when absent), the layer pattern and MTP layers.
void read_experts_and_layers(FieldReader& r, ModelSpec& s) {
  s.num_experts = r.uint("num_experts").value_or(0);
  s.num_experts_per_tok = r.uint("num_experts_per_tok").value_or(0);
  s.moe_intermediate_size = r.uint("moe_intermediate_size").value_or(0);
  s.shared_expert_intermediate_size = r.uint("shared_expert_intermediate_size").value_or(0);
  s.moe_latent_size = r.uint("moe_latent_size").value_or(0);
  s.first_k_dense_replace = r.uint("first_k_dense_replace").value_or(0);
  s.mlp_only_layers = r.uints("mlp_only_layers");

  s.q_lora_rank = r.uint("q_lora_rank").value_or(0);
  s.kv_lora_rank = r.uint("kv_lora_rank").value_or(0);
  s.qk_rope_head_dim = r.uint("qk_rope_head_dim").value_or(0);
  s.qk_nope_head_dim = r.uint("qk_nope_head_dim").value_or(0);
  s.v_head_dim = r.uint("v_head_dim").value_or(0);

  const uint64_t default_head_dim = s.kv_lora_rank > 0 ? s.qk_nope_head_dim + s.qk_rope_head_dim
                                                       : (s.num_attention_heads > 0 ? s.hidden_size / s.num_attention_heads : 0);
  s.head_dim = r.uint("head_dim").value_or(default_head_dim);

  s.sliding_window = r.uint("sliding_window").value_or(0);
  s.sliding_window_pattern = r.uint("sliding_window_pattern").value_or(0);
  s.layer_types = r.strings("layer_types");
  s.global_head_dim = r.uint("global_head_dim").value_or(0);
  s.num_global_key_value_heads = r.uint("num_global_key_value_heads").value_or(0);
  s.attention_k_eq_v = r.boolean("attention_k_eq_v").value_or(false);
  s.enable_moe_block = r.boolean("enable_moe_block").value_or(false);
  s.hidden_size_per_layer_input = r.uint("hidden_size_per_layer_input").value_or(0);
  s.vocab_size_per_layer_input = r.uint("vocab_size_per_layer_input").value_or(0);
  s.altup_num_inputs = r.uint("altup_num_inputs").value_or(0);
  s.laurel_rank = r.uint("laurel_rank").value_or(0);
  s.num_kv_shared_layers = r.uint("num_kv_shared_layers").value_or(0);
  s.num_nextn_predict_layers = r.uint("num_nextn_predict_layers").value_or(0);
  s.compress_ratios = r.uints("compress_ratios");
  s.o_lora_rank = r.uint("o_lora_rank").value_or(0);
  s.o_groups = r.uint("o_groups").value_or(0);
  s.hc_mult = r.uint("hc_mult").value_or(0);
  s.num_hash_layers = r.uint("num_hash_layers").value_or(0);
  s.expert_dtype = r.string("expert_dtype").value_or("");
}

/// vision_config: the image tower of a multimodal preset (pixtral, moonvit3d, Qwen's merge
/// tower, Llama 4's projector, or a plain ViT told apart by its fields).
VisionTowerSpec read_vision_config(const json& v, FieldReader& r, std::vector<Problem>& problems) {
  FieldReader vr(v, "/vision_config", problems);
  VisionTowerSpec vt;
  vt.hidden_size = vr.uint("hidden_size", true).value_or(0);
  vt.num_hidden_layers = vr.uint("num_hidden_layers", true).value_or(0);
  vt.intermediate_size = vr.uint("intermediate_size", true).value_or(0);
  vt.patch_size = vr.uint("patch_size", true).value_or(0);
  vt.num_position_embeddings = vr.uint("num_position_embeddings").value_or(0);
  vt.temporal_patch_size = vr.uint("temporal_patch_size").value_or(1);
  vt.spatial_merge_size = vr.uint("spatial_merge_size").value_or(0);
  vt.head_dim = vr.uint("head_dim").value_or(0);
  vt.model_type = vr.string("model_type").value_or("");
  const bool moonvit = vt.model_type == "moonvit3d";
  const bool gemma4 = vt.model_type == "gemma4_vision";
  if (!vt.model_type.empty() && vt.model_type != "pixtral" && !moonvit && !gemma4)
    vr.problem("/vision_config/model_type",
               "expected 'pixtral', 'moonvit3d' or 'gemma4_vision' (other towers are told apart by their fields)");
  if (gemma4 && (vt.num_position_embeddings == 0 || vt.head_dim == 0))
    vr.problem("/vision_config/num_position_embeddings", "a gemma4_vision tower needs num_position_embeddings and head_dim");
  if (!gemma4 && vt.head_dim > 0) vr.problem("/vision_config/head_dim", "head_dim applies to the gemma4_vision tower only");
  if (vt.model_type == "pixtral" && vt.spatial_merge_size == 0)
    vr.problem("/vision_config/spatial_merge_size", "a pixtral tower needs the projector's spatial_merge_size");
  vt.projector_input_dim = vr.uint("projector_input_dim").value_or(0);
  vt.projector_output_dim = vr.uint("projector_output_dim").value_or(0);
  vt.pixel_shuffle_ratio = vr.number("pixel_shuffle_ratio").value_or(0);
  if (vt.projector_input_dim > 0 && (vt.projector_output_dim == 0 || !(vt.pixel_shuffle_ratio > 0 && vt.pixel_shuffle_ratio <= 1)))
    vr.problem("/vision_config/projector_input_dim", "a Llama 4 tower needs projector_output_dim and a pixel_shuffle_ratio in (0, 1]");
  const bool qwen_tower = vt.spatial_merge_size > 0 && vt.model_type.empty();
  vt.image_size = vr.uint("image_size", !qwen_tower && !moonvit && !gemma4).value_or(0);
  vt.num_channels = vr.uint("num_channels").value_or(3);
  if (qwen_tower && vt.num_position_embeddings == 0)
    vr.problem("/vision_config/num_position_embeddings", "a spatial_merge_size tower needs num_position_embeddings");
  if (moonvit && (vt.num_position_embeddings == 0 || vt.spatial_merge_size == 0))
    vr.problem("/vision_config/num_position_embeddings", "a moonvit3d tower needs num_position_embeddings and spatial_merge_size");
  for (const auto& item : v.items()) {
    static const std::set<std::string> vkeys = {
        "hidden_size",          "num_hidden_layers",       "intermediate_size",   "patch_size",         "image_size",
        "num_channels",         "num_position_embeddings", "temporal_patch_size", "spatial_merge_size", "projector_input_dim",
        "projector_output_dim", "pixel_shuffle_ratio",     "model_type",          "head_dim"};
    if (vkeys.count(item.key()) == 0) vr.problem("/vision_config/" + item.key(), "unknown field '" + item.key() + "'");
  }
  if (vt.patch_size == 0 || (!qwen_tower && !moonvit && !gemma4 && vt.image_size % std::max<uint64_t>(vt.patch_size, 1) != 0)) {
    vr.problem("/vision_config/patch_size", "expected a positive divisor of image_size");
  }
  if (!vr.ok()) r.problem("/vision_config", "invalid vision_config");
  return vt;
}

/// quantization_config: the checkpoint's own scale layout (block-scaled FP8, MXFP4,
/// compressed-tensors' 4-bit packs).
CheckpointQuantization read_quantization_config(const json& q, FieldReader& r, std::vector<Problem>& problems) {
  FieldReader qr(q, "/quantization_config", problems);
  CheckpointQuantization cq;
  cq.quant_method = qr.string("quant_method", true).value_or("");
  cq.weight_block_size = qr.uints("weight_block_size");
  cq.activation_scheme = qr.string("activation_scheme").value_or("");
  cq.num_bits = qr.uint("num_bits").value_or(0);
  cq.group_size = qr.uint("group_size").value_or(0);
  const bool compressed = cq.quant_method == "compressed-tensors";
  const bool per_tensor = cq.activation_scheme == "static" || cq.activation_scheme == "dynamic";
  if (!cq.activation_scheme.empty() && (!per_tensor || cq.quant_method != "fp8" || !cq.weight_block_size.empty())) {
    qr.problem("/quantization_config/activation_scheme", "'static' or 'dynamic', for per-tensor fp8 (no weight_block_size) only");
  } else if (cq.quant_method == "fp8" && !per_tensor &&
             (cq.weight_block_size.size() != 2 || cq.weight_block_size[0] == 0 || cq.weight_block_size[1] == 0)) {
    qr.problem("/quantization_config/weight_block_size",
               "fp8 needs [rows, columns] of one scale block, or activation_scheme for per-tensor scales");
  } else if (!cq.quant_method.empty() && cq.quant_method != "fp8" && cq.quant_method != "mxfp4" && !compressed) {
    qr.problem("/quantization_config/quant_method", "expected 'fp8', 'mxfp4' or 'compressed-tensors'");
  } else if (compressed && cq.num_bits != 4) {
    qr.problem("/quantization_config/num_bits", "compressed-tensors is modelled for 4-bit pack-quantized weights only");
  } else if (compressed && cq.group_size == 0) {
    qr.problem("/quantization_config/group_size", "compressed-tensors needs the weights' group_size");
  } else if (!compressed && (cq.num_bits > 0 || cq.group_size > 0)) {
    qr.problem("/quantization_config/num_bits", "num_bits and group_size apply to compressed-tensors only");
  }
  if (!qr.ok()) r.problem("/quantization_config", "invalid quantization_config");
  return cq;
}

/// "releases": [{"format": quant id, "repo": "Org/Name", "names": [the preset's id or aliases]}],
/// no name with two releases in one format.
std::vector<OfficialRelease> read_releases(const json& j, FieldReader& r, const std::string& id, const std::vector<std::string>& aliases) {
  std::vector<OfficialRelease> out;
  if (!r.has("releases")) return out;
  const json& v = j.at("releases");
  if (!v.is_array() || v.size() > kMaxReleases) {
    r.problem("/releases", fmt::format("expected an array of at most {} {{\"format\", \"repo\"}} objects", kMaxReleases));
    return out;
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string at = "/releases/" + std::to_string(i);
    const auto format = v[i].is_object() ? json_field::as_string(v[i].value("format", json())) : std::nullopt;
    const auto repo = v[i].is_object() ? json_field::as_string(v[i].value("repo", json())) : std::nullopt;
    if (!format || format->empty() || !repo || !is_repo_id(*repo)) {
      r.problem(at, "expected {\"format\": a weight format id, \"repo\": \"Org/Name\"}");
      continue;
    }
    OfficialRelease release{*format, *repo, {}};
    const json names = v[i].value("names", json::array());
    for (std::size_t k = 0; names.is_array() && k < names.size() && k <= aliases.size(); ++k) {
      const auto name = json_field::as_string(names[k]);
      if (name && (*name == id || std::find(aliases.begin(), aliases.end(), *name) != aliases.end()))
        release.names.push_back(*name);
      else
        r.problem(fmt::format("{}/names/{}", at, k), "expected the preset's id or one of its aliases");
    }
    if (!names.is_array() || names.size() > aliases.size() + 1) r.problem(at + "/names", "expected a list of the preset's id and aliases");
    const auto overlaps = [&](const OfficialRelease& o) {
      if (o.format != release.format) return false;
      if (o.names.empty() || release.names.empty()) return true;
      return std::any_of(o.names.begin(), o.names.end(),
                         [&](const std::string& n) { return std::find(release.names.begin(), release.names.end(), n) != release.names.end(); });
    };
    if (std::any_of(out.begin(), out.end(), overlaps)) {
      r.problem(at, fmt::format("a name with a second release in '{}'", *format));
      continue;
    }
    out.push_back(std::move(release));
  }
  return out;
}

/// The checkpoint's provenance: its native format, what it stores beyond the layers, the
/// published parameter total, sources and notes.
void read_provenance(const json& j, FieldReader& r, ModelSpec& s) {
  s.native_format = r.string("native_format").value_or("");
  s.releases = read_releases(j, r, s.id, s.aliases);
  s.checkpoint_includes = r.strings("checkpoint_includes");
  s.params_exact = r.uint("params_exact").value_or(0);
  s.params_unexplained = r.uint("params_unexplained").value_or(0);
  s.params_source = r.string("params_source").value_or("");
  if (const json* towers = r.object("encoder_tower_params")) {
    for (const auto& [name, value] : towers->items()) {
      const std::optional<uint64_t> n = json_field::as_uint(value);
      if (n && *n > 0 && *n <= kMaxModelParameters)
        s.encoder_tower_params[name] = *n;
      else
        r.problem("/encoder_tower_params/" + name, fmt::format("expected a positive element count of at most {}", kMaxModelParameters));
    }
  }
  if (r.has("sources")) {
    if (j.at("sources").is_array()) {
      s.sources = j.at("sources");
    } else {
      r.problem("/sources", "expected an array");
    }
  }
  s.notes = r.strings("notes");
}

void at_most(FieldReader& reader, const char* key, uint64_t value, uint64_t limit) {
  if (value > limit) reader.problem(reader.pointer(key), fmt::format("{} is beyond the limit of {} for any model", value, limit));
}

/// Every width, count and context within the limits any model stays under. Checked first:
/// the per-layer loops, the tensor list and every count rely on them.
void check_ranges(const json& j, const ModelSpec& s, FieldReader& r, std::vector<Problem>& problems) {
  for (const auto& [key, value] : {std::pair<const char*, uint64_t>{"hidden_size", s.hidden_size},
                                   {"intermediate_size", s.intermediate_size},
                                   {"vocab_size", s.vocab_size},
                                   {"head_dim", s.head_dim},
                                   {"global_head_dim", s.global_head_dim},
                                   {"moe_intermediate_size", s.moe_intermediate_size},
                                   {"shared_expert_intermediate_size", s.shared_expert_intermediate_size},
                                   {"moe_latent_size", s.moe_latent_size},
                                   {"q_lora_rank", s.q_lora_rank},
                                   {"kv_lora_rank", s.kv_lora_rank},
                                   {"qk_rope_head_dim", s.qk_rope_head_dim},
                                   {"qk_nope_head_dim", s.qk_nope_head_dim},
                                   {"v_head_dim", s.v_head_dim},
                                   {"index_head_dim", s.index_head_dim},
                                   {"linear_key_head_dim", s.linear_key_head_dim},
                                   {"linear_value_head_dim", s.linear_value_head_dim},
                                   {"linear_conv_kernel_dim", s.linear_conv_kernel_dim},
                                   {"mamba_d_head", s.mamba_d_head},
                                   {"mamba_d_state", s.mamba_d_state},
                                   {"mamba_d_conv", s.mamba_d_conv}, {"conv_L_cache", s.conv_L_cache},
                                   {"o_lora_rank", s.o_lora_rank},
                                   {"hidden_size_per_layer_input", s.hidden_size_per_layer_input},
                                   {"vocab_size_per_layer_input", s.vocab_size_per_layer_input},
                                   {"laurel_rank", s.laurel_rank}})
    at_most(r, key, value, kMaxModelWidth);
  at_most(r, "altup_num_inputs", s.altup_num_inputs, kMaxModelHeads);
  at_most(r, "num_kv_shared_layers", s.num_kv_shared_layers, kMaxModelLayers);
  at_most(r, "num_hidden_layers", s.num_hidden_layers, kMaxModelLayers);
  at_most(r, "num_nextn_predict_layers", s.num_nextn_predict_layers, kMaxModelLayers);
  at_most(r, "mtp_hybrid_override_pattern", s.mtp_hybrid_override_pattern.size(), kMaxModelLayers);
  at_most(r, "sliding_window_pattern", s.sliding_window_pattern, kMaxModelLayers);
  at_most(r, "num_attention_heads", s.num_attention_heads, kMaxModelHeads);
  at_most(r, "num_key_value_heads", s.num_key_value_heads, kMaxModelHeads);
  at_most(r, "num_global_key_value_heads", s.num_global_key_value_heads, kMaxModelHeads);
  at_most(r, "index_n_heads", s.index_n_heads, kMaxModelHeads);
  at_most(r, "linear_num_key_heads", s.linear_num_key_heads, kMaxModelHeads);
  at_most(r, "linear_num_value_heads", s.linear_num_value_heads, kMaxModelHeads);
  at_most(r, "full_attention_interval", s.full_attention_interval, kMaxModelLayers);
  at_most(r, "mamba_n_heads", s.mamba_n_heads, kMaxModelHeads);
  at_most(r, "mamba_n_groups", s.mamba_n_groups, kMaxModelHeads);
  at_most(r, "index_topk", s.index_topk, kMaxModelContext);
  at_most(r, "num_experts", s.num_experts, kMaxModelExperts);
  at_most(r, "num_experts_per_tok", s.num_experts_per_tok, kMaxModelExperts);
  at_most(r, "max_position_embeddings", s.max_position_embeddings, kMaxModelContext);
  at_most(r, "sliding_window", s.sliding_window, kMaxModelContext);
  at_most(r, "o_groups", s.o_groups, kMaxModelHeads);
  at_most(r, "hc_mult", s.hc_mult, kMaxModelHeads);
  at_most(r, "num_hash_layers", s.num_hash_layers, kMaxModelLayers);
  at_most(r, "compress_ratios", s.compress_ratios.size(), kMaxModelLayers);
  if (s.vision_config) {
    FieldReader vr(j.at("vision_config"), "/vision_config", problems);
    const VisionTowerSpec& v = *s.vision_config;
    at_most(vr, "hidden_size", v.hidden_size, kMaxModelWidth);
    at_most(vr, "intermediate_size", v.intermediate_size, kMaxModelWidth);
    at_most(vr, "num_hidden_layers", v.num_hidden_layers, kMaxModelLayers);
    at_most(vr, "patch_size", v.patch_size, kMaxModelWidth);
    at_most(vr, "image_size", v.image_size, kMaxModelWidth);
    at_most(vr, "num_channels", v.num_channels, kMaxModelWidth);
    at_most(vr, "num_position_embeddings", v.num_position_embeddings, kMaxModelContext);
    at_most(vr, "temporal_patch_size", v.temporal_patch_size, kMaxModelWidth);
    at_most(vr, "spatial_merge_size", v.spatial_merge_size, kMaxModelWidth);
    at_most(vr, "projector_input_dim", v.projector_input_dim, kMaxModelWidth);
    at_most(vr, "projector_output_dim", v.projector_output_dim, kMaxModelWidth);
    at_most(vr, "head_dim", v.head_dim, kMaxModelWidth);
    if (!vr.ok()) r.problem("/vision_config", "invalid vision_config");
  }
}

/// The sizes given must be positive; MLA's ranks together (or none); GQA's head ratio; the
/// qk-norm kind; the DSA indexer on MLA with its three fields together.
void check_attention(const json& j, const ModelSpec& s, FieldReader& r) {
  auto positive = [&](const char* key, uint64_t v) {
    if (j.contains(key) && v == 0) r.problem(std::string("/") + key, "must be positive");
  };
  positive("hidden_size", s.hidden_size);
  positive("num_hidden_layers", s.num_hidden_layers);
  positive("num_attention_heads", s.num_attention_heads);
  positive("vocab_size", s.vocab_size);
  positive("num_key_value_heads", s.num_key_value_heads);
  positive("head_dim", s.head_dim);

  if (is_mla(s)) {
    if (s.qk_rope_head_dim == 0 || s.qk_nope_head_dim == 0 || s.v_head_dim == 0) {
      r.problem("/kv_lora_rank", "MLA needs qk_rope_head_dim, qk_nope_head_dim and v_head_dim as well");
    }
    if (s.checkpoint_includes.end() != std::find(s.checkpoint_includes.begin(), s.checkpoint_includes.end(), "rotary_inv_freq_buffers")) {
      r.problem("/checkpoint_includes", "rotary_inv_freq_buffers is modelled for non-MLA attention only");
    }
  } else {
    const bool v4_fields = is_deepseek_v4(s) && s.qk_nope_head_dim == 0 && s.v_head_dim == 0;  // V4: q_lora_rank, qk_rope_head_dim
    if (!v4_fields && (s.q_lora_rank > 0 || s.qk_rope_head_dim > 0 || s.qk_nope_head_dim > 0 || s.v_head_dim > 0)) {
      r.problem("/kv_lora_rank", "MLA fields given without kv_lora_rank");
    }
    if (s.num_key_value_heads > 0 && s.num_attention_heads % s.num_key_value_heads != 0) {
      r.problem("/num_key_value_heads", "num_attention_heads (" + std::to_string(s.num_attention_heads) +
                                            ") must be a multiple of num_key_value_heads (" + std::to_string(s.num_key_value_heads) + ")");
    }
    if (s.num_key_value_heads > s.num_attention_heads) {
      r.problem("/num_key_value_heads", "more KV heads than attention heads");
    }
  }

  if (s.qk_norm_type != "per_head" && s.qk_norm_type != "per_layer") {
    r.problem("/qk_norm_type", "expected 'per_head' or 'per_layer'");
  }
  if (s.index_n_heads > 0 || s.index_head_dim > 0 || s.index_topk > 0) {
    if ((!is_mla(s) && !is_deepseek_v4(s)) || s.q_lora_rank == 0)
      r.problem("/index_n_heads", "the DSA indexer is modelled on MLA (or DeepSeek-V4) with q_lora_rank only");
    if (s.index_n_heads == 0 || s.index_head_dim == 0 || s.index_topk == 0)
      r.problem("/index_n_heads", "the DSA indexer needs index_n_heads, index_head_dim and index_topk together");
  }
}

/// Gemma 4's per-kind attention (global_head_dim, num_global_key_value_heads, attention_k_eq_v) on
/// GQA layers with separate projections; its MoE block beside a dense MLP.
void check_gemma4_fields(const json& j, const ModelSpec& s, FieldReader& r) {
  for (const char* key : {"global_head_dim", "num_global_key_value_heads"})
    if (j.contains(key) && json_field::as_uint(j.at(key)).value_or(1) == 0) r.problem(std::string("/") + key, "must be positive");
  const bool per_kind = s.global_head_dim > 0 || s.num_global_key_value_heads > 0 || s.attention_k_eq_v;
  if (per_kind && (is_mla(s) || s.model_type == "phi3" || !s.hybrid_override_pattern.empty()))
    r.problem("/global_head_dim", "per-kind attention shapes (global_head_dim, num_global_key_value_heads, attention_k_eq_v) are "
                                  "modelled on GQA layers with separate q/k/v projections only");
  const uint64_t global_kv = s.num_global_key_value_heads;
  if (global_kv > 0 && (s.num_attention_heads % global_kv != 0 || global_kv > s.num_attention_heads))
    r.problem("/num_global_key_value_heads", "num_attention_heads (" + std::to_string(s.num_attention_heads) +
                                                 ") must be a multiple of num_global_key_value_heads (" + std::to_string(global_kv) + ")");
  if (s.enable_moe_block) {
    if (s.num_experts == 0) r.problem("/enable_moe_block", "enable_moe_block needs num_experts");
    if (s.intermediate_size == 0) r.problem("/enable_moe_block", "enable_moe_block runs the dense MLP too: it needs intermediate_size");
    if (!s.hybrid_override_pattern.empty()) r.problem("/enable_moe_block", "enable_moe_block does not apply to hybrid_override_pattern blocks");
  }
}

/// Linear-attention and Mamba-2 layers with all their widths, beside GQA only; the hybrid
/// pattern's length and letters; the SSM state's dtype; params_unexplained kept small.
void check_hybrid_layers(const ModelSpec& s, FieldReader& r) {
  const bool any_linear_field = s.linear_num_key_heads > 0 || s.linear_key_head_dim > 0 || s.linear_num_value_heads > 0 ||
                                s.linear_value_head_dim > 0 || s.linear_conv_kernel_dim > 0;
  bool any_linear_layer = s.full_attention_interval > 0;
  for (const std::string& type : s.layer_types) any_linear_layer = any_linear_layer || type == kLinear;
  if (any_linear_layer || any_linear_field) {
    if (s.linear_num_key_heads == 0 || s.linear_key_head_dim == 0 || s.linear_num_value_heads == 0 || s.linear_value_head_dim == 0 ||
        s.linear_conv_kernel_dim == 0) {
      r.problem("/linear_num_key_heads",
                "linear-attention layers need linear_num_key_heads, linear_key_head_dim, linear_num_value_heads, "
                "linear_value_head_dim and linear_conv_kernel_dim");
    } else if (s.linear_num_value_heads % s.linear_num_key_heads != 0) {
      r.problem("/linear_num_value_heads", "must be a multiple of linear_num_key_heads");
    }
    if (!any_linear_layer) r.problem("/full_attention_interval", "linear-attention widths given but no layer is linear");
    if (is_mla(s)) r.problem("/full_attention_interval", "linear-attention layers are modelled beside GQA attention only");
  }
  const bool any_mamba_layer = s.hybrid_override_pattern.find('M') != std::string::npos ||
                               std::find(s.layer_types.begin(), s.layer_types.end(), kMamba) != s.layer_types.end();
  if (any_mamba_layer || s.mamba_n_heads > 0) {
    if (s.mamba_n_heads == 0 || s.mamba_d_head == 0 || s.mamba_n_groups == 0 || s.mamba_d_state == 0 || s.mamba_d_conv == 0) {
      r.problem("/mamba_n_heads", "Mamba-2 layers need mamba_n_heads, mamba_d_head, mamba_n_groups, mamba_d_state and mamba_d_conv");
    } else if (s.mamba_n_heads % s.mamba_n_groups != 0) {
      r.problem("/mamba_n_groups", "mamba_n_heads must be a multiple of mamba_n_groups");
    }
    if (!any_mamba_layer) r.problem("/mamba_n_heads", "Mamba-2 widths given but no layer is a Mamba-2 layer");
    if (s.linear_num_key_heads > 0 || is_mla(s)) r.problem("/mamba_n_heads", "Mamba-2 layers are modelled beside GQA attention only");
  }
  if (!s.hybrid_override_pattern.empty()) {
    if (s.hybrid_override_pattern.size() != s.num_hidden_layers)
      r.problem("/hybrid_override_pattern", "has " + std::to_string(s.hybrid_override_pattern.size()) + " blocks for " +
                                                std::to_string(s.num_hidden_layers) + " layers");
    if (s.hybrid_override_pattern.find_first_not_of("M*-E") != std::string::npos)
      r.problem("/hybrid_override_pattern", "expected only 'M', '*', '-' and 'E'");
    if (!s.layer_types.empty() || s.full_attention_interval > 0 || s.sliding_window > 0)
      r.problem("/hybrid_override_pattern", "give hybrid_override_pattern without layer_types, full_attention_interval or sliding_window");
    if (s.hybrid_override_pattern.find('E') != std::string::npos && s.num_experts == 0)
      r.problem("/hybrid_override_pattern", "'E' blocks need num_experts");
  }
  if (s.mamba_ssm_dtype != "float32" && s.mamba_ssm_dtype != "bfloat16" && s.mamba_ssm_dtype != "float16") {
    r.problem("/mamba_ssm_dtype", "expected 'float32', 'bfloat16' or 'float16'");
  }
  if (s.params_unexplained > 0 && (s.params_exact == 0 || s.params_unexplained * 1000000 > s.params_exact)) {
    r.problem("/params_unexplained", "must be a small part (at most one millionth) of params_exact");
  }
}

/// The latent MoE (moe_latent_size: Nemotron-H 'E' blocks, narrower than hidden_size) and the
/// Nemotron-H MTP module pattern (its letters, with a hybrid pattern and MTP layers).
void check_latent_moe_and_mtp_pattern(const json& j, const ModelSpec& s, FieldReader& r) {
  if (j.contains("moe_latent_size") && s.moe_latent_size == 0) r.problem("/moe_latent_size", "must be positive");
  if (s.moe_latent_size > 0) {
    if (s.num_experts == 0) r.problem("/moe_latent_size", "a latent MoE needs num_experts");
    if (s.hybrid_override_pattern.empty())
      r.problem("/moe_latent_size", "the latent MoE is modelled for hybrid_override_pattern 'E' blocks only");
    if (s.moe_latent_size >= s.hidden_size) r.problem("/moe_latent_size", "must be narrower than hidden_size");
  }
  const std::string& mtp = s.mtp_hybrid_override_pattern;
  if (!mtp.empty()) {
    if (mtp.find_first_not_of("M*-E") != std::string::npos)
      r.problem("/mtp_hybrid_override_pattern", "expected only 'M', '*', '-' and 'E'");
    if (s.hybrid_override_pattern.empty()) r.problem("/mtp_hybrid_override_pattern", "needs hybrid_override_pattern");
    if (s.num_nextn_predict_layers == 0) r.problem("/mtp_hybrid_override_pattern", "needs num_nextn_predict_layers");
    if (mtp.find('E') != std::string::npos && s.num_experts == 0)
      r.problem("/mtp_hybrid_override_pattern", "'E' blocks need num_experts");
  } else if (!s.hybrid_override_pattern.empty() && s.num_nextn_predict_layers > 0) {
    r.problem("/num_nextn_predict_layers", "Nemotron-H MTP layers need mtp_hybrid_override_pattern");
  }
}

/// Short-convolution layers with their kernel, beside GQA attention only.
void check_short_conv_layers(const ModelSpec& s, FieldReader& r) {
  const bool any_conv_layer = std::find(s.layer_types.begin(), s.layer_types.end(), kShortConv) != s.layer_types.end();
  if (any_conv_layer && s.conv_L_cache < 2) r.problem("/conv_L_cache", "short-convolution layers need conv_L_cache of at least 2");
  if (!any_conv_layer && s.conv_L_cache > 0) r.problem("/conv_L_cache", "conv_L_cache given but no layer is a short-convolution layer");
  if (any_conv_layer && (s.linear_num_key_heads > 0 || s.mamba_n_heads > 0 || is_mla(s)))
    r.problem("/conv_L_cache", "short-convolution layers are modelled beside GQA attention only");
}

/// MoE fields together, and the per-layer lists (dense layers, layer types, sliding windows) in range.
void check_experts_and_layers(const ModelSpec& s, FieldReader& r) {
  if (s.num_experts > 0) {
    if (s.num_experts_per_tok == 0) r.problem("/num_experts_per_tok", "MoE model needs num_experts_per_tok");
    if (s.num_experts_per_tok > s.num_experts) {
      r.problem("/num_experts_per_tok", "num_experts_per_tok (" + std::to_string(s.num_experts_per_tok) + ") exceeds num_experts (" +
                                            std::to_string(s.num_experts) + ")");
    }
    if (s.moe_intermediate_size == 0) r.problem("/moe_intermediate_size", "MoE model needs moe_intermediate_size");
  } else if (s.num_experts_per_tok > 0 || s.moe_intermediate_size > 0 || s.shared_expert_intermediate_size > 0 ||
             s.first_k_dense_replace > 0 || !s.mlp_only_layers.empty()) {
    r.problem("/num_experts", "MoE fields given without num_experts");
  }
  if (s.num_hidden_layers > 0) {
    if (s.first_k_dense_replace > s.num_hidden_layers) {
      r.problem("/first_k_dense_replace", "exceeds num_hidden_layers");
    }
    for (size_t i = 0; i < s.mlp_only_layers.size(); ++i) {
      if (s.mlp_only_layers[i] >= s.num_hidden_layers) {
        r.problem("/mlp_only_layers/" + std::to_string(i), "layer index out of range");
      }
    }
    bool needs_dense = s.num_experts == 0;
    for (uint64_t i = 0; i < s.num_hidden_layers && !needs_dense; ++i) needs_dense = !is_moe_layer(s, i);
    if (needs_dense && s.intermediate_size == 0) {
      r.problem("/intermediate_size", "dense FFN layers need a positive intermediate_size");
    }
  }

  if (!s.layer_types.empty()) {
    if (s.layer_types.size() != s.num_hidden_layers) {
      r.problem("/layer_types",
                "has " + std::to_string(s.layer_types.size()) + " entries for " + std::to_string(s.num_hidden_layers) + " layers");
    }
    for (size_t i = 0; i < s.layer_types.size(); ++i) {
      if (s.layer_types[i] != kSliding && s.layer_types[i] != kFull && s.layer_types[i] != kLinear && s.layer_types[i] != kMamba &&
          s.layer_types[i] != kShortConv) {
        r.problem("/layer_types/" + std::to_string(i),
                  "expected 'sliding_attention', 'full_attention', 'linear_attention', 'mamba' or 'conv'");
      }
    }
    if (s.sliding_window_pattern > 0) {
      r.problem("/sliding_window_pattern", "give either layer_types or sliding_window_pattern, not both");
    }
    if (s.full_attention_interval > 0) {
      r.problem("/full_attention_interval", "give either layer_types or full_attention_interval, not both");
    }
  }
  const bool any_sliding_type = std::find(s.layer_types.begin(), s.layer_types.end(), kSliding) != s.layer_types.end();
  if ((s.sliding_window_pattern > 0 || any_sliding_type) && s.sliding_window == 0) {
    r.problem("/sliding_window", "a sliding-layer pattern needs sliding_window");
  }
}

/// checkpoint_includes: known entries, each with the fields it needs.
void check_checkpoint_includes(const ModelSpec& s, FieldReader& r) {
  const auto includes = [&](const char* what) {
    return std::find(s.checkpoint_includes.begin(), s.checkpoint_includes.end(), what) != s.checkpoint_includes.end();
  };
  const auto& names = checkpoint_include_names();
  for (size_t i = 0; i < s.checkpoint_includes.size(); ++i) {
    if (std::find(names.begin(), names.end(), s.checkpoint_includes[i]) == names.end()) {
      r.problem("/checkpoint_includes/" + std::to_string(i),
                "unknown entry '" + s.checkpoint_includes[i] + "' (expected one of: " + join(names) + ")");
    }
  }
  if (includes("encoder_towers") && s.encoder_tower_params.empty()) r.problem("/checkpoint_includes", "encoder_towers needs encoder_tower_params");
  if (includes("vision_tower") && !s.vision_config) {
    r.problem("/checkpoint_includes", "vision_tower needs vision_config");
  }
  const bool mtp = includes("mtp_layers") || includes("mtp_layers_shared_embedding");
  if (includes("mtp_layers") && includes("mtp_layers_shared_embedding")) {
    r.problem("/checkpoint_includes", "give either mtp_layers or mtp_layers_shared_embedding, not both");
  }
  if (mtp && s.num_nextn_predict_layers == 0) {
    r.problem("/checkpoint_includes", "mtp_layers needs num_nextn_predict_layers");
  }
  if (includes("mtp_layers") && s.num_experts == 0) {
    r.problem("/checkpoint_includes", "mtp_layers is modelled for DeepSeek-style MoE blocks only");
  }
  if (includes("quantization_scales") && !s.quantization_config) {
    r.problem("/checkpoint_includes", "quantization_scales needs quantization_config");
  }
  if (includes("untied_output_copy") && !s.tie_word_embeddings) {
    r.problem("/checkpoint_includes", "untied_output_copy applies to tied models only");
  }
}

}  // namespace

std::optional<ModelSpec> model_from_json(const nlohmann::json& j, std::vector<Problem>& problems) {
  if (!j.is_object()) {
    problems.push_back(Problem{"", "", "expected a JSON object"});
    return std::nullopt;
  }
  FieldReader r(j, "", problems);
  for (const auto& item : j.items()) {
    if (known_fields().count(item.key()) == 0) r.problem("/" + item.key(), "unknown field '" + item.key() + "'");
  }

  ModelSpec s;
  read_identity(r, s);
  read_shape(r, traits_for(s.model_type), s);
  read_hybrid_fields(r, s);
  read_experts_and_layers(r, s);
  if (const json* v = r.object("vision_config")) s.vision_config = read_vision_config(*v, r, problems);
  if (const json* q = r.object("quantization_config")) s.quantization_config = read_quantization_config(*q, r, problems);
  read_provenance(j, r, s);

  check_ranges(j, s, r, problems);
  if (!r.ok()) return std::nullopt;
  if (auto too_many = parameter_overflow(s)) {
    r.problem("", *too_many);
    return std::nullopt;
  }

  // Semantic checks beyond the schema.
  check_attention(j, s, r);
  check_gemma4_fields(j, s, r);
  check_hybrid_layers(s, r);
  check_latent_moe_and_mtp_pattern(j, s, r);
  check_short_conv_layers(s, r);
  check_experts_and_layers(s, r);
  check_checkpoint_includes(s, r);
  for (const auto& [pointer, message] : catalog_detail::deepseek_v4_problems(s)) r.problem(pointer, message);
  for (const auto& [pointer, message] : catalog_detail::gemma3n_problems(s)) r.problem(pointer, message);
  if (!r.ok()) return std::nullopt;
  return s;
}

namespace {

/// The routed experts (num_experts > 0).
void write_experts(json& j, const ModelSpec& s) {
  j["num_experts"] = s.num_experts;
  j["num_experts_per_tok"] = s.num_experts_per_tok;
  j["moe_intermediate_size"] = s.moe_intermediate_size;
  if (s.shared_expert_intermediate_size > 0) j["shared_expert_intermediate_size"] = s.shared_expert_intermediate_size;
  if (s.moe_latent_size > 0) j["moe_latent_size"] = s.moe_latent_size;
  if (s.first_k_dense_replace > 0) j["first_k_dense_replace"] = s.first_k_dense_replace;
  if (!s.mlp_only_layers.empty()) j["mlp_only_layers"] = s.mlp_only_layers;
}

/// Multi-head latent attention: the LoRA ranks, the head widths and the DSA indexer.
void write_mla(json& j, const ModelSpec& s) {
  if (s.q_lora_rank > 0) j["q_lora_rank"] = s.q_lora_rank;
  j["kv_lora_rank"] = s.kv_lora_rank;
  j["qk_rope_head_dim"] = s.qk_rope_head_dim;
  j["qk_nope_head_dim"] = s.qk_nope_head_dim;
  j["v_head_dim"] = s.v_head_dim;
  if (s.index_n_heads > 0) {
    j["index_n_heads"] = s.index_n_heads;
    j["index_head_dim"] = s.index_head_dim;
    j["index_topk"] = s.index_topk;
  }
}

/// The sliding window, the layer pattern and the Mamba-2 mixer.
void write_layer_mix(json& j, const ModelSpec& s) {
  if (s.sliding_window > 0) {
    j["sliding_window"] = s.sliding_window;
    if (s.sliding_window_pattern > 0) j["sliding_window_pattern"] = s.sliding_window_pattern;
  }
  if (!s.layer_types.empty()) j["layer_types"] = s.layer_types;
  if (s.global_head_dim > 0) j["global_head_dim"] = s.global_head_dim;
  if (s.num_global_key_value_heads > 0) j["num_global_key_value_heads"] = s.num_global_key_value_heads;
  if (s.attention_k_eq_v) j["attention_k_eq_v"] = true;
  if (s.enable_moe_block) j["enable_moe_block"] = true;
  if (!s.hybrid_override_pattern.empty()) j["hybrid_override_pattern"] = s.hybrid_override_pattern;
  if (!s.mtp_hybrid_override_pattern.empty()) j["mtp_hybrid_override_pattern"] = s.mtp_hybrid_override_pattern;
  if (s.mamba_n_heads > 0) {
    j["mamba_n_heads"] = s.mamba_n_heads;
    j["mamba_d_head"] = s.mamba_d_head;
    j["mamba_n_groups"] = s.mamba_n_groups;
    j["mamba_d_state"] = s.mamba_d_state;
    j["mamba_d_conv"] = s.mamba_d_conv;
    j["mamba_conv_bias"] = s.mamba_conv_bias;
    j["mamba_ssm_dtype"] = s.mamba_ssm_dtype;
  }
  if (s.conv_L_cache > 0) {
    j["conv_L_cache"] = s.conv_L_cache;
    j["conv_bias"] = s.conv_bias;
  }
}

/// "vision_config": the fields each tower family reads back.
void write_vision_config(json& j, const VisionTowerSpec& v) {
  j["vision_config"] = {{"hidden_size", v.hidden_size},
                        {"num_hidden_layers", v.num_hidden_layers},
                        {"intermediate_size", v.intermediate_size},
                        {"patch_size", v.patch_size},
                        {"num_channels", v.num_channels}};
  if (v.image_size > 0) j["vision_config"]["image_size"] = v.image_size;
  if (!v.model_type.empty()) j["vision_config"]["model_type"] = v.model_type;
  if (v.model_type == "moonvit3d") {
    j["vision_config"]["num_position_embeddings"] = v.num_position_embeddings;
    j["vision_config"]["spatial_merge_size"] = v.spatial_merge_size;
  } else if (v.model_type == "gemma4_vision") {
    j["vision_config"]["num_position_embeddings"] = v.num_position_embeddings;
    j["vision_config"]["head_dim"] = v.head_dim;
  } else if (v.spatial_merge_size > 0 && !v.model_type.empty()) {
    j["vision_config"]["spatial_merge_size"] = v.spatial_merge_size;
  } else if (v.spatial_merge_size > 0) {
    j["vision_config"]["num_position_embeddings"] = v.num_position_embeddings;
    j["vision_config"]["temporal_patch_size"] = v.temporal_patch_size;
    j["vision_config"]["spatial_merge_size"] = v.spatial_merge_size;
  }
  if (v.projector_input_dim > 0) {
    j["vision_config"]["projector_input_dim"] = v.projector_input_dim;
    j["vision_config"]["projector_output_dim"] = v.projector_output_dim;
    j["vision_config"]["pixel_shuffle_ratio"] = v.pixel_shuffle_ratio;
  }
}

/// "quantization_config": the method and, where set, the block, bits and group.
json quantization_config_json(const CheckpointQuantization& quantization) {
  json q = {{"quant_method", quantization.quant_method}};
  if (!quantization.weight_block_size.empty()) {
    q["weight_block_size"] = quantization.weight_block_size;
  }
  if (!quantization.activation_scheme.empty()) q["activation_scheme"] = quantization.activation_scheme;
  if (quantization.num_bits > 0) q["num_bits"] = quantization.num_bits;
  if (quantization.group_size > 0) q["group_size"] = quantization.group_size;
  return q;
}

}  // namespace

nlohmann::json to_json(const ModelSpec& s) {
  json j;
  j["id"] = s.id;
  j["name"] = s.name;
  if (!s.aliases.empty()) j["aliases"] = s.aliases;
  j["model_type"] = s.model_type;
  j["hidden_size"] = s.hidden_size;
  j["num_hidden_layers"] = s.num_hidden_layers;
  j["num_attention_heads"] = s.num_attention_heads;
  j["num_key_value_heads"] = s.num_key_value_heads;
  if (!is_mla(s)) j["head_dim"] = s.head_dim;
  if (s.intermediate_size > 0) j["intermediate_size"] = s.intermediate_size;
  j["vocab_size"] = s.vocab_size;
  j["tie_word_embeddings"] = s.tie_word_embeddings;
  if (s.max_position_embeddings > 0) j["max_position_embeddings"] = s.max_position_embeddings;
  if (s.rope_theta > 0) j["rope_theta"] = s.rope_theta;
  j["attention_bias"] = s.attention_bias;
  j["qkv_bias"] = s.qkv_bias;
  j["mlp_bias"] = s.mlp_bias;
  j["router_bias"] = s.router_bias;
  j["router_score_correction_bias"] = s.router_score_correction_bias;
  j["qk_norm"] = s.qk_norm;
  j["sandwich_norm"] = s.sandwich_norm;
  j["attention_sinks"] = s.attention_sinks;
  if (s.qk_norm_type != "per_head") j["qk_norm_type"] = s.qk_norm_type;
  const Traits defaults = traits_for(s.model_type);  // written where set or where the family sets it
  if (s.attn_output_gate || defaults.attn_output_gate) j["attn_output_gate"] = s.attn_output_gate;
  if (s.shared_expert_gate || defaults.shared_expert_gate) j["shared_expert_gate"] = s.shared_expert_gate;
  if (s.num_experts > 0) write_experts(j, s);
  if (is_mla(s)) write_mla(j, s);
  if (is_deepseek_v4(s)) catalog_detail::write_deepseek_v4(j, s);
  catalog_detail::write_gemma3n(j, s);
  write_layer_mix(j, s);
  if (s.linear_num_key_heads > 0) {
    if (s.full_attention_interval > 0) j["full_attention_interval"] = s.full_attention_interval;
    j["linear_num_key_heads"] = s.linear_num_key_heads;
    j["linear_key_head_dim"] = s.linear_key_head_dim;
    j["linear_num_value_heads"] = s.linear_num_value_heads;
    j["linear_value_head_dim"] = s.linear_value_head_dim;
    j["linear_conv_kernel_dim"] = s.linear_conv_kernel_dim;
    j["mamba_ssm_dtype"] = s.mamba_ssm_dtype;
  }
  if (s.num_nextn_predict_layers > 0) j["num_nextn_predict_layers"] = s.num_nextn_predict_layers;
  if (s.vision_config) write_vision_config(j, *s.vision_config);
  if (s.quantization_config) j["quantization_config"] = quantization_config_json(*s.quantization_config);
  if (!s.native_format.empty()) j["native_format"] = s.native_format;
  for (const OfficialRelease& release : s.releases) {
    json entry = {{"format", release.format}, {"repo", release.repo}};
    if (!release.names.empty()) entry["names"] = release.names;
    j["releases"].push_back(std::move(entry));
  }
  if (!s.expert_dtype.empty()) j["expert_dtype"] = s.expert_dtype;
  if (!s.checkpoint_includes.empty()) j["checkpoint_includes"] = s.checkpoint_includes;
  if (!s.encoder_tower_params.empty()) j["encoder_tower_params"] = s.encoder_tower_params;
  if (s.params_exact > 0) j["params_exact"] = s.params_exact;
  if (s.params_unexplained > 0) j["params_unexplained"] = s.params_unexplained;
  if (!s.params_source.empty()) j["params_source"] = s.params_source;
  j["sources"] = s.sources.is_array() ? s.sources : json::array();
  if (!s.notes.empty()) j["notes"] = s.notes;
  return j;
}

std::vector<Tensor> model_tensors(const ModelSpec& spec) {
  std::vector<Tensor> out;
  out.reserve(spec.num_hidden_layers * 24 + 3);
  add(out, -1, "token_embd", spec.hidden_size, spec.vocab_size);
  if (is_gemma3n(spec)) catalog_detail::add_gemma3n_globals(spec, out);
  for (uint64_t i = 0; i < spec.num_hidden_layers; ++i) add_block(spec, i, out);
  // LFM2's final norm (HF embedding_norm) is GGUF token_embd_norm.
  add(out, -1, spec.model_type == "lfm2_moe" ? "token_embd_norm" : "output_norm", spec.hidden_size);
  if (!spec.tie_word_embeddings) add(out, -1, "output", spec.hidden_size, spec.vocab_size);
  if (is_deepseek_v4(spec)) catalog_detail::add_deepseek_v4_head(spec, out);
  return out;
}

uint64_t parameter_count(const ModelSpec& spec) { return sum_elements(model_tensors(spec)); }

uint64_t active_parameter_count(const ModelSpec& spec) { return parameter_counts(spec).active; }

ParameterCounts parameter_counts(const ModelSpec& spec) {
  ParameterCounts n;
  for (const Tensor& t : model_tensors(spec)) {
    const bool routed = t.kind == "ffn_gate_exps" || t.kind == "ffn_up_exps" || t.kind == "ffn_down_exps" ||
                        t.kind == "ffn_gate_exps.bias" || t.kind == "ffn_up_exps.bias" || t.kind == "ffn_down_exps.bias";
    n.total += t.elements();
    if (is_lookup_table(t.kind)) continue;  // a lookup of one row per token, never multiplied
    if (routed && spec.num_experts > 0) {
      // Expert-bias tensors hold the experts along ne1, weights along ne2.
      n.active += t.elements() / spec.num_experts * spec.num_experts_per_tok;
    } else {
      n.active += t.elements();
    }
  }
  return n;
}

namespace {

/// Pixtral tower: per layer q/k/v/o, the gated MLP (w1, w2, w3) and two RMSNorms, no biases;
/// the patch conv (no bias) and ln_pre; no position table (2-D RoPE). Mistral-3 projector:
/// RMSNorm, patch merger (merge^2 x hidden -> hidden), linear_1 (-> text hidden), linear_2.
uint64_t pixtral_tower_elements(const VisionTowerSpec& v, uint64_t h) {
  const uint64_t hv = v.hidden_size;
  const uint64_t per_layer = 4 * hv * hv + 3 * hv * v.intermediate_size + 2 * hv;
  const uint64_t stem = v.num_channels * v.patch_size * v.patch_size * hv + hv;
  const uint64_t merge = v.spatial_merge_size * v.spatial_merge_size;
  const uint64_t projector = hv + merge * hv * hv + hv * h + h * h;
  return v.num_hidden_layers * per_layer + stem + projector;
}

/// Llama 4 tower: unfolded patch Linear (no bias), class embedding, (image/patch)^2 + 1 learned
/// positions, pre and post LayerNorms; per layer q/k/v/o with bias, fc1/fc2 with bias, two
/// LayerNorms; the pixel-shuffle adapter (hidden / ratio^2 -> projector_input_dim ->
/// projector_output_dim) and the multi-modal projector to the text hidden, all without bias.
uint64_t llama4_tower_elements(const VisionTowerSpec& v, uint64_t h) {
  const uint64_t hv = v.hidden_size;
  const uint64_t per_layer =
      4 * (hv * hv + hv) + (hv * v.intermediate_size + v.intermediate_size) + (v.intermediate_size * hv + hv) + 2 * (2 * hv);
  const uint64_t side = v.image_size / v.patch_size;
  const uint64_t stem = v.num_channels * v.patch_size * v.patch_size * hv + hv + (side * side + 1) * hv + 2 * (2 * hv);
  const auto shuffled = static_cast<uint64_t>(std::llround(static_cast<double>(hv) / (v.pixel_shuffle_ratio * v.pixel_shuffle_ratio)));
  const uint64_t adapter = shuffled * v.projector_input_dim + v.projector_input_dim * v.projector_output_dim;
  return v.num_hidden_layers * per_layer + stem + adapter + v.projector_output_dim * h;
}

/// MoonViT-3D (Kimi-K2.5): per block norm0/norm1 LayerNorms (weight + bias), fused wqkv and wo
/// with bias, fc0/fc1 with bias; a 2-D patch conv with bias; the learned position table
/// (init_pos_emb_height x init_pos_emb_width rows; the temporal sin-cos table is not stored);
/// final_layernorm; the patchmerger projector: pre_norm LayerNorm over one patch, a square
/// Linear merge^2 patches wide and a Linear to the text hidden, both with bias.
uint64_t moonvit_tower_elements(const VisionTowerSpec& v, uint64_t h) {
  const uint64_t hv = v.hidden_size;
  const uint64_t per_layer = 2 * (2 * hv) + (hv * 3 * hv + 3 * hv) + (hv * hv + hv) + (hv * v.intermediate_size + v.intermediate_size) +
                             (v.intermediate_size * hv + hv);
  const uint64_t patch_conv = v.num_channels * v.patch_size * v.patch_size * hv + hv;
  const uint64_t merged = hv * v.spatial_merge_size * v.spatial_merge_size;
  const uint64_t projector = 2 * hv + (merged * merged + merged) + (merged * h + h);
  return v.num_hidden_layers * per_layer + patch_conv + v.num_position_embeddings * hv + 2 * hv + projector;
}

/// Qwen3-VL / Qwen3.5 vision tower: per block two LayerNorms (weight + bias), fused qkv and
/// proj with bias, fc1/fc2 with bias; a 3-D patch conv with bias over temporal_patch_size
/// frames; a learned table of num_position_embeddings; the patch merger: LayerNorm over one
/// patch, then fc1 (merge^2 patches wide, square, with bias) and fc2 to the text hidden (with
/// bias). deepstack_visual_indexes empty (Qwen3.5) adds no further mergers.
uint64_t qwen_vl_tower_elements(const VisionTowerSpec& v, uint64_t h) {
  const uint64_t hv = v.hidden_size;
  const uint64_t per_layer = 2 * (2 * hv) + (hv * 3 * hv + 3 * hv) + (hv * hv + hv) + (hv * v.intermediate_size + v.intermediate_size) +
                             (v.intermediate_size * hv + hv);
  const uint64_t patch_conv = v.num_channels * v.temporal_patch_size * v.patch_size * v.patch_size * hv + hv;
  const uint64_t merged = hv * v.spatial_merge_size * v.spatial_merge_size;
  const uint64_t merger = 2 * hv + (merged * merged + merged) + (merged * h + h);
  return v.num_hidden_layers * per_layer + patch_conv + v.num_position_embeddings * hv + merger;
}

/// SigLIP encoder (Gemma-3's vision_config): per layer q/k/v/o with bias,
/// fc1/fc2 with bias, two LayerNorms (weight + bias); patch conv with bias;
/// learned position table; post LayerNorm. Projector: Gemma3
/// mm_input_projection (vision x text hidden) + mm_soft_emb_norm.
uint64_t siglip_tower_elements(const VisionTowerSpec& v, uint64_t h) {
  const uint64_t hv = v.hidden_size;
  const uint64_t per_layer =
      4 * (hv * hv + hv) + (hv * v.intermediate_size + v.intermediate_size) + (v.intermediate_size * hv + hv) + 2 * (2 * hv);
  const uint64_t patches = (v.image_size / v.patch_size) * (v.image_size / v.patch_size);
  const uint64_t tower =
      v.num_hidden_layers * per_layer + (v.num_channels * v.patch_size * v.patch_size * hv + hv) + patches * hv + 2 * hv;
  const uint64_t projector = hv * h + hv;
  return tower + projector;
}

/// Gemma 4 tower (gemma4_vision): per layer q/k/v/o and a gated MLP without biases, four RMSNorms
/// (input, post-attention, pre- and post-feedforward) and q/k norms of one head (head_dim); a
/// patch Linear (channels x patch^2 -> hidden, no bias); two learned position tables (x and y) of
/// num_position_embeddings rows (HF position_embedding_size); the embed_vision projector, one
/// Linear to the text hidden after a scale-free norm.
uint64_t gemma4_tower_elements(const VisionTowerSpec& v, uint64_t h) {
  const uint64_t hv = v.hidden_size;
  const uint64_t per_layer = 4 * hv * hv + 3 * hv * v.intermediate_size + 4 * hv + 2 * v.head_dim;
  const uint64_t stem = v.num_channels * v.patch_size * v.patch_size * hv + 2 * v.num_position_embeddings * hv;
  return v.num_hidden_layers * per_layer + stem + hv * h;
}

/// The stored vision tower and projector, by tower family; `h` is the text model's hidden size.
uint64_t vision_tower_elements(const VisionTowerSpec& v, uint64_t h) {
  if (v.model_type == "gemma4_vision") return gemma4_tower_elements(v, h);
  if (v.model_type == "pixtral") return pixtral_tower_elements(v, h);
  if (v.projector_input_dim > 0) return llama4_tower_elements(v, h);
  if (v.model_type == "moonvit3d") return moonvit_tower_elements(v, h);
  if (v.spatial_merge_size > 0 && v.model_type.empty()) return qwen_vl_tower_elements(v, h);
  return siglip_tower_elements(v, h);
}

/// The scales a quantized checkpoint stores beside the weights of `blocks`.
uint64_t quantization_scale_elements(const ModelSpec& s, const CheckpointQuantization& q, const std::vector<Tensor>& blocks) {
  uint64_t scales = 0;
  if (q.quant_method == "fp8" && q.weight_block_size.size() == 2) {
    scales = fp8_scale_elements(s, blocks, q.weight_block_size[0], q.weight_block_size[1]);
  } else if (q.quant_method == "fp8" && q.weight_block_size.empty()) {
    // Per-tensor FP8 (Mistral's 2512 releases: activation_scheme static, weight_block_size null):
    // weight_scale and activation_scale, one scalar each per quantized matrix.
    scales = fp8_scale_elements(s, blocks, 1, 1, q.activation_scheme == "static" ? 2 : 1);
  } else if (q.quant_method == "mxfp4") {
    // gpt-oss: experts only (modules_to_not_convert keeps attention, router,
    // embeddings and head in BF16); one E8M0 scale per 32 weights.
    for (const Tensor& t : blocks) {
      if (is_expert_kind(t.kind)) scales += t.elements() / kMxfp4BlockWeights;
    }
  } else if (q.quant_method == "compressed-tensors" && q.group_size > 0) {
    // Kimi-K2.5 pack-quantized INT4 (ignore: lm_head, self_attn, shared_experts, the dense MLP):
    // the routed experts only. Per expert matrix: weight_packed (int32, 8 values each), one BF16
    // weight_scale per group_size weights and a 2-element int32 weight_shape. The published total
    // counts every int32 element as its 32 / num_bits packed values: weight_packed as the matrix's
    // own elements (already in the weights) and weight_shape as 2 x 8 = 16.
    const uint64_t per_int32 = 32 / q.num_bits;
    for (const Tensor& t : blocks) {
      if (is_expert_kind(t.kind)) scales += t.elements() / q.group_size + t.slices * 2 * per_int32;
    }
  }
  return scales;
}

}  // namespace

namespace {

/// The MTP modules' decoder blocks, numbered after the main layers: one block per module, or
/// (Nemotron-H) one per mtp_hybrid_override_pattern character.
void add_mtp_blocks(const ModelSpec& s, std::vector<Tensor>& out) {
  const std::string& pattern = s.mtp_hybrid_override_pattern;
  uint64_t layer = s.num_hidden_layers;
  for (uint64_t m = 0; m < s.num_nextn_predict_layers; ++m) {
    if (pattern.empty()) {
      add_block(s, layer++, out);
      continue;
    }
    for (const char kind : pattern) add_nemotron_block(s, layer++, kind, out);
  }
}

}  // namespace

std::vector<CountTerm> checkpoint_extra_terms(const ModelSpec& s) {
  std::vector<CountTerm> terms;
  const auto includes = [&](const char* what) {
    return std::find(s.checkpoint_includes.begin(), s.checkpoint_includes.end(), what) != s.checkpoint_includes.end();
  };
  const uint64_t h = s.hidden_size;
  const uint64_t embedding = s.vocab_size * h;

  if (includes("rotary_inv_freq_buffers")) {
    // transformers < 4.31 saved each layer's rotary_emb.inv_freq buffer
    // (head_dim/2 floats) into the checkpoint.
    terms.push_back({"rotary_inv_freq_buffers", s.num_hidden_layers * (s.head_dim / 2)});
  }
  if (includes("untied_output_copy")) {
    // The checkpoint stores lm_head.weight although tie_word_embeddings is true.
    terms.push_back({"untied_output_copy", embedding});
  }
  if (includes("vision_tower") && s.vision_config) terms.push_back({"vision_tower", vision_tower_elements(*s.vision_config, h)});
  if (includes("encoder_towers"))
    for (const auto& [name, elements] : s.encoder_tower_params) terms.push_back({name, elements});
  std::vector<Tensor> mtp_blocks;
  const bool shared_embedding = includes("mtp_layers_shared_embedding");
  if (includes("mtp_layers") || shared_embedding) {
    // DeepSeek-V3 MTP module i (HF model.layers.{L+i}): a full decoder
    // block, enorm + hnorm, eh_proj (2H -> H), shared_head.norm, and its own
    // stored copies of embed_tokens and shared_head.head. GLM-4.6 / GLM-5 store
    // no copies; Qwen3-Next / Qwen3.5 (mtp.fc, mtp.pre_fc_norm_embedding,
    // mtp.pre_fc_norm_hidden, mtp.norm, mtp.layers.{i} with full attention)
    // have the same elements and no copies either: mtp_layers_shared_embedding.
    // Nemotron-H: each module is the blocks of mtp_hybrid_override_pattern ("*E": mtp.layers.0 an
    // attention block with enorm, hnorm and eh_proj, mtp.layers.1 an MoE block with the final
    // norm): the same 3 norms and eh_proj per module.
    add_mtp_blocks(s, mtp_blocks);
    // DeepSeek-V4 names eh_proj's halves e_proj and h_proj and adds the module's own hc head.
    const uint64_t v4_head = is_deepseek_v4(s) ? catalog_detail::deepseek_v4_mtp_head_elements(s) : 0;
    const uint64_t per_module_extra = 3 * h + 2 * h * h + v4_head + (shared_embedding ? 0 : 2 * embedding);
    terms.push_back({shared_embedding ? "mtp_layers_shared_embedding" : "mtp_layers",
                     sum_elements(mtp_blocks) + s.num_nextn_predict_layers * per_module_extra});
  }
  if (includes("quantization_scales") && s.quantization_config) {
    std::vector<Tensor> blocks;
    for (uint64_t i = 0; i < s.num_hidden_layers; ++i) add_block(s, i, blocks);
    blocks.insert(blocks.end(), mtp_blocks.begin(), mtp_blocks.end());
    uint64_t scales = quantization_scale_elements(s, *s.quantization_config, blocks);
    const auto& block = s.quantization_config->weight_block_size;
    if (is_deepseek_v4(s) && !mtp_blocks.empty() && block.size() == 2)
      scales += catalog_detail::deepseek_v4_mtp_scale_elements(s, block[0], block[1]);  // e_proj, h_proj are FP8 too
    terms.push_back({"quantization_scales", scales});
  }
  return terms;
}

uint64_t packed_expert_elements(const ModelSpec& spec) {
  if (spec.expert_dtype != "fp4") return 0;
  std::vector<Tensor> blocks;
  for (uint64_t i = 0; i < spec.num_hidden_layers; ++i) add_block(spec, i, blocks);
  const bool with_mtp = std::find_if(spec.checkpoint_includes.begin(), spec.checkpoint_includes.end(), [](const std::string& what) {
                          return what == "mtp_layers" || what == "mtp_layers_shared_embedding";
                        }) != spec.checkpoint_includes.end();
  if (with_mtp) add_mtp_blocks(spec, blocks);
  uint64_t n = 0;
  for (const Tensor& t : blocks)
    if (is_expert_kind(t.kind)) n += t.elements() / 2;  // two E2M1 values per stored int8
  return n;
}

uint64_t checkpoint_parameter_count(const ModelSpec& spec) {
  uint64_t n = parameter_count(spec);
  for (const CountTerm& t : checkpoint_extra_terms(spec)) n += t.elements;
  return n - packed_expert_elements(spec);
}

KvShape kv_shape(const ModelSpec& spec) {
  if (is_deepseek_v4(spec)) return catalog_detail::deepseek_v4_kv_shape(spec);
  KvShape k;
  if (is_mla(spec)) {
    k.latent = true;
    k.elements_per_token_per_layer = spec.kv_lora_rank + spec.qk_rope_head_dim;
  } else {
    // Each kind at its own width (Gemma 4); a K = V layer still caches the normed, rotated key and
    // the value apart.
    const uint64_t full_head_dim = spec.global_head_dim > 0 ? spec.global_head_dim : spec.head_dim;
    k.full_kv_heads = spec.num_global_key_value_heads > 0 ? spec.num_global_key_value_heads : spec.num_key_value_heads;
    k.sliding_kv_heads = spec.num_key_value_heads;
    k.elements_per_token_per_layer = 2 * k.full_kv_heads * full_head_dim;
    k.sliding_elements_per_token_per_layer = 2 * spec.num_key_value_heads * spec.head_dim;
  }
  if (spec.index_n_heads > 0) {
    // DSA: the indexer keeps its own key per token per layer (vLLM and SGLang store it in FP8
    // with a scale; counted here at the cache's element width).
    k.indexer_elements_per_token_per_layer = spec.index_head_dim;
    k.elements_per_token_per_layer += spec.index_head_dim;
    k.sparse_topk = spec.index_topk;
  }
  if (spec.linear_num_value_heads > 0) {
    // Gated DeltaNet: S is value_heads x key_dim x value_dim; the conv state keeps the last
    // kernel-1 inputs of q, k and v.
    const uint64_t recurrent = spec.linear_num_value_heads * spec.linear_key_head_dim * spec.linear_value_head_dim;
    const uint64_t conv = linear_conv_width(spec) * (std::max<uint64_t>(spec.linear_conv_kernel_dim, 1) - 1);
    const double recurrent_bytes = spec.mamba_ssm_dtype == "float32" ? 4.0 : 2.0;
    k.state_elements_per_layer = recurrent + conv;
    k.state_bytes_per_layer = recurrent_bytes * static_cast<double>(recurrent) + 2.0 * static_cast<double>(conv);
  }
  if (spec.mamba_n_heads > 0) {
    // Mamba-2: the SSM state is heads x d_head x d_state; the conv state the last kernel-1 inputs of x, B and C.
    const uint64_t recurrent = spec.mamba_n_heads * spec.mamba_d_head * spec.mamba_d_state;
    const uint64_t conv = mamba_conv_width(spec) * (std::max<uint64_t>(spec.mamba_d_conv, 1) - 1);
    const double recurrent_bytes = spec.mamba_ssm_dtype == "float32" ? 4.0 : 2.0;
    k.state_elements_per_layer = recurrent + conv;
    k.state_bytes_per_layer = recurrent_bytes * static_cast<double>(recurrent) + 2.0 * static_cast<double>(conv);
  }
  if (spec.conv_L_cache > 0) {
    // LFM2 short convolution: no recurrent state; the conv state keeps the last conv_L_cache - 1
    // values of B * x per hidden channel (llama.cpp n_embd_r), at 16 bits.
    k.state_elements_per_layer = spec.hidden_size * (spec.conv_L_cache - 1);
    k.state_bytes_per_layer = 2.0 * static_cast<double>(k.state_elements_per_layer);
  }
  for (uint64_t i = 0; i < spec.num_hidden_layers; ++i) {
    const bool mixer_free = !spec.hybrid_override_pattern.empty() && i < spec.hybrid_override_pattern.size() &&
                            (spec.hybrid_override_pattern[i] == '-' || spec.hybrid_override_pattern[i] == 'E');
    if (mixer_free) continue;  // a Nemotron-H MLP or MoE block caches nothing
    if (is_linear_layer(spec, i) || is_mamba_layer(spec, i) || is_short_conv_layer(spec, i)) {
      ++k.linear_layers;
    } else if (is_kv_shared_layer(spec, i)) {
      ++(is_sliding_layer(spec, i) ? k.shared_sliding_layers : k.shared_full_layers);
    } else if (is_sliding_layer(spec, i)) {
      ++k.sliding_layers;
    } else {
      ++k.full_layers;
    }
  }
  k.window_tokens = k.sliding_layers + k.shared_sliding_layers > 0 ? spec.sliding_window : 0;
  if (k.latent || k.sliding_elements_per_token_per_layer == 0) k.sliding_elements_per_token_per_layer = k.elements_per_token_per_layer;
  return k;
}

KvShape attention_reads(KvShape k) {
  k.full_layers += k.shared_full_layers;
  k.sliding_layers += k.shared_sliding_layers;
  k.shared_full_layers = k.shared_sliding_layers = 0;
  return k;
}

uint64_t indexer_layer_count(const KvShape& k) { return (k.sparse_topk ? k.full_layers : 0) + k.compressed_sparse_layers; }

double recurrent_state_bytes(const KvShape& k, uint64_t batch) {
  return static_cast<double>(k.linear_layers) * k.state_bytes_per_layer * static_cast<double>(batch);
}

uint64_t kv_cache_elements_per_token_full(const ModelSpec& spec) {
  const KvShape k = kv_shape(spec);
  return k.full_layers * k.elements_per_token_per_layer + k.sliding_layers * k.sliding_elements_per_token_per_layer +
         k.compressed_elements_per_token;
}

uint64_t kv_cache_elements(const ModelSpec& spec, uint64_t context_tokens, uint64_t batch, KvWindowPolicy policy) {
  return kv_cache_elements(kv_shape(spec), context_tokens, batch, policy);
}

KvElements kv_cache_elements_by_kind(const KvShape& k, uint64_t context_tokens, uint64_t batch, KvWindowPolicy policy) {
  const uint64_t sliding_tokens = policy == KvWindowPolicy::kCapSlidingLayers ? std::min(context_tokens, k.window_tokens) : context_tokens;
  KvElements e;
  e.full = (k.elements_per_token_per_layer * k.full_layers + k.compressed_elements_per_token) * context_tokens * batch;
  e.sliding = k.sliding_elements_per_token_per_layer * k.sliding_layers * sliding_tokens * batch;
  return e;
}

uint64_t kv_cache_elements(const KvShape& k, uint64_t context_tokens, uint64_t batch, KvWindowPolicy policy) {
  return kv_cache_elements_by_kind(k, context_tokens, batch, policy).total();
}

std::optional<ParamsShape> params_shape_from_json(const nlohmann::json& j, std::vector<Problem>& problems) {
  ParamsShape p;
  try {
    p.id = j.at("id").get<std::string>();
    p.model_type = j.at("model_type").get<std::string>();
    p.vocab_size = j.at("vocab_size").get<uint64_t>();
    p.vocab_source = j.at("vocab_source").get<std::string>();
    p.head_dim = j.at("head_dim").get<uint64_t>();
    p.max_kv_heads = j.at("max_kv_heads").get<uint64_t>();
    p.ffn_ratio = j.at("ffn_ratio").get<double>();
    p.ffn_multiple = j.at("ffn_multiple").get<uint64_t>();
    p.hidden_per_layer = j.at("hidden_per_layer").get<double>();
    p.tie_embeddings_below_params = j.at("tie_embeddings_below_params").get<double>();
    p.tied_note = j.at("tied_note").get<std::string>();
    p.untied_note = j.at("untied_note").get<std::string>();
    p.max_position_embeddings = j.at("max_position_embeddings").get<uint64_t>();
    p.rope_theta = j.at("rope_theta").get<double>();
  } catch (const nlohmann::json::exception& ex) {
    problems.push_back({"", "", std::string("malformed model shape: ") + ex.what()});
    return std::nullopt;
  }
  if (p.head_dim == 0 || p.max_kv_heads == 0 || p.ffn_multiple == 0 || !(p.hidden_per_layer > 0) || !(p.ffn_ratio > 0)) {
    problems.push_back({"", "", "model shape: head_dim, max_kv_heads, ffn_multiple, hidden_per_layer and ffn_ratio must be positive"});
    return std::nullopt;
  }
  return p;
}

ModelSpec model_from_params(double params, const ParamsShape& shape) {
  if (!(params >= 1e8 && params <= 1e13)) {
    throw bad_input(fmt::format("cannot build a model shape for {:.4g} parameters", params),
                    "give a parameter count between 1e8 and 1e13 (e.g. 7e9), or a preset id or config.json");
  }
  const auto target = static_cast<uint64_t>(std::llround(params));
  const uint64_t head_dim = shape.head_dim;
  const uint64_t multiple = shape.ffn_multiple;
  const bool tied = params < shape.tie_embeddings_below_params;

  // Base shape: layers ~ hidden / hidden_per_layer with FFN ffn_ratio x hidden.
  auto build = [&](uint64_t hidden, uint64_t layers, uint64_t ffn) {
    ModelSpec s;
    s.model_type = shape.model_type;
    s.hidden_size = hidden;
    s.num_hidden_layers = layers;
    s.num_attention_heads = hidden / head_dim;
    s.num_key_value_heads = std::min<uint64_t>(shape.max_kv_heads, s.num_attention_heads);
    s.head_dim = head_dim;
    s.intermediate_size = ffn;
    s.vocab_size = shape.vocab_size;
    s.tie_word_embeddings = tied;
    return s;
  };
  uint64_t best_hidden = 4 * head_dim;
  uint64_t best_layers = 1;
  double best_gap = 1e300;
  // Widths from 4 heads to 256, in steps of one head below 8 heads and of 8
  // heads from there (so the heads divide by the KV heads).
  const uint64_t wide_step = shape.max_kv_heads * head_dim;
  for (uint64_t hidden = 4 * head_dim; hidden <= 256 * head_dim; hidden += hidden < wide_step ? head_dim : wide_step) {
    const auto base_ffn = static_cast<uint64_t>(std::llround(static_cast<double>(hidden) * shape.ffn_ratio));
    const uint64_t ffn = (base_ffn + multiple - 1) / multiple * multiple;
    const uint64_t fixed = parameter_count(build(hidden, 0, ffn));
    const uint64_t per_layer = parameter_count(build(hidden, 1, ffn)) - fixed;
    if (fixed >= target) break;
    const double layers = static_cast<double>(target - fixed) / static_cast<double>(per_layer);
    if (layers < 1.0) continue;
    const double gap = std::fabs(std::log(layers / (static_cast<double>(hidden) / shape.hidden_per_layer)));
    if (gap < best_gap) {
      best_gap = gap;
      best_hidden = hidden;
      best_layers = static_cast<uint64_t>(std::llround(layers));
    }
  }
  // Refit the FFN width (a multiple of ffn_multiple, rounded to nearest) so the total lands on the request.
  const uint64_t no_ffn = parameter_count(build(best_hidden, best_layers, 0));
  const uint64_t per_ffn_unit = 3 * best_hidden * best_layers;  // gate, up, down per unit of width
  uint64_t ffn = multiple;
  if (target > no_ffn)
    ffn = std::max<uint64_t>(multiple, (target - no_ffn + per_ffn_unit * (multiple / 2)) / (per_ffn_unit * multiple) * multiple);

  ModelSpec s = build(best_hidden, best_layers, ffn);
  char label[32];
  if (params >= 1e12) {
    std::snprintf(label, sizeof label, "%.3gt", params / 1e12);
  } else {
    std::snprintf(label, sizeof label, "%.3gb", params / 1e9);
  }
  s.id = std::string("params-") + label;
  s.name = std::string("Llama-like dense model, ~") + label + " parameters";
  s.max_position_embeddings = shape.max_position_embeddings;
  s.rope_theta = shape.rope_theta;
  s.notes = {"No architecture was given: this is a bare dense Llama-3-like decoder sized to the requested count.",
             fmt::format("Shape rule: head_dim {}, heads = hidden/{}, {} KV heads (GQA; fewer below {} wide), vocabulary {} ({}).",
                         head_dim, head_dim, shape.max_kv_heads, wide_step, shape.vocab_size, shape.vocab_source),
             fmt::format("Embeddings {}.", tied ? shape.tied_note : shape.untied_note),
             fmt::format("hidden (a multiple of {} from {} up, so heads divide by {}) is the width whose layer count is closest, by ratio, "
                         "to hidden/{} (Llama-2-7B 4096/32, Llama-3.1-405B 16384/126); the FFN width is then refitted (multiple of {}) "
                         "to land on the count.",
                         wide_step, wide_step, shape.max_kv_heads, shape.hidden_per_layer, multiple),
             "KV cache, speed and quantized sizes follow from this assumed shape, not from a real model."};
  return s;
}

}  // namespace optadvisor
