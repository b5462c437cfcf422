// SPDX-License-Identifier: MIT
// DeepSeek-V4: tensor shapes follow DeepSeek's inference/model.py (Attention, Compressor, Indexer,
// Gate, Block, MTPBlock) and llama.cpp's deepseek4 loader (GGUF kinds and ggml order).
#include "catalog/deepseek_v4.hpp"

#include "catalog/tensor_add.hpp"

namespace optadvisor::catalog_detail {

namespace {

constexpr uint64_t kSparseRatio = 4;   // compressed sparse attention: overlapping windows + indexer
constexpr uint64_t kHeavyRatio = 128;  // heavily compressed attention

uint64_t ratio_of(const ModelSpec& s, uint64_t layer) { return layer < s.compress_ratios.size() ? s.compress_ratios[layer] : 0; }

/// One compressor (wkv, wgate, the per-position bias ape, the entry norm) pooling `ratio` tokens into
/// one `width`-wide entry; overlapping windows (ratio 4) project twice as wide.
void add_compressor(std::vector<Tensor>& out, int i, const std::string& prefix, uint64_t h, uint64_t width, uint64_t ratio) {
  const uint64_t coff = ratio == kSparseRatio ? 2 : 1;
  add(out, i, prefix + "wkv", h, coff * width);
  add(out, i, prefix + "wgate", h, coff * width);
  add(out, i, prefix + "ape", coff * width, ratio);
  add(out, i, prefix + "norm", width);
}

/// Attention of one layer: q low-rank pair, the shared K = V projection, the grouped output pair,
/// the sinks, and the compressor (with the indexer on ratio-4 layers).
void add_attention(const ModelSpec& s, int i, uint64_t ratio, std::vector<Tensor>& out) {
  const uint64_t h = s.hidden_size;
  const uint64_t q_width = s.num_attention_heads * s.head_dim;
  add(out, i, "attn_q_a", h, s.q_lora_rank);
  add(out, i, "attn_q_a_norm", s.q_lora_rank);
  add(out, i, "attn_q_b", s.q_lora_rank, q_width);
  add(out, i, "attn_kv", h, s.head_dim);
  add(out, i, "attn_kv_a_norm", s.head_dim);
  add(out, i, "attn_output_a", q_width / s.o_groups, s.o_groups * s.o_lora_rank);
  add(out, i, "attn_output_b", s.o_groups * s.o_lora_rank, h);
  add(out, i, "attn_sinks", s.num_attention_heads);
  if (ratio == 0) return;
  add_compressor(out, i, "attn_compressor_", h, s.head_dim, ratio);
  if (ratio != kSparseRatio) return;
  add(out, i, "indexer.proj", h, s.index_n_heads);
  add(out, i, "indexer.attn_q_b", s.q_lora_rank, s.index_n_heads * s.index_head_dim);
  add_compressor(out, i, "indexer.compressor_", h, s.index_head_dim, ratio);
}

/// The two hyper-connection mixers (pre/post/comb weights from the flattened streams).
void add_hyper_connections(const ModelSpec& s, int i, std::vector<Tensor>& out) {
  const uint64_t mix = (2 + s.hc_mult) * s.hc_mult;
  for (const char* site : {"hc_attn_", "hc_ffn_"}) {
    add(out, i, std::string(site) + "fn", s.hc_mult * s.hidden_size, mix);
    add(out, i, std::string(site) + "base", mix);
    add(out, i, std::string(site) + "scale", 3);
  }
}

/// Router (a token-id table on the hash layers, a score bias on the rest), experts, shared expert.
void add_moe(const ModelSpec& s, int i, uint64_t layer, std::vector<Tensor>& out) {
  const uint64_t h = s.hidden_size;
  const uint64_t e = s.num_experts;
  const uint64_t f = s.moe_intermediate_size;
  add(out, i, "ffn_gate_inp", h, e);
  if (layer < s.num_hash_layers) {
    add(out, i, "ffn_gate_tid2eid", s.num_experts_per_tok, s.vocab_size);
  } else {
    add(out, i, "exp_probs_b.bias", e);
  }
  add(out, i, "ffn_gate_exps", h, f, e);
  add(out, i, "ffn_up_exps", h, f, e);
  add(out, i, "ffn_down_exps", f, h, e);
  const uint64_t fs = s.shared_expert_intermediate_size;
  add(out, i, "ffn_gate_shexp", h, fs);
  add(out, i, "ffn_up_shexp", h, fs);
  add(out, i, "ffn_down_shexp", fs, h);
}

}  // namespace

bool is_deepseek_v4(const ModelSpec& s) { return s.model_type == "deepseek_v4"; }

void add_deepseek_v4_block(const ModelSpec& s, uint64_t layer, std::vector<Tensor>& out) {
  const int i = static_cast<int>(layer);
  add(out, i, "attn_norm", s.hidden_size);
  add_hyper_connections(s, i, out);
  add_attention(s, i, ratio_of(s, layer), out);
  add(out, i, "ffn_norm", s.hidden_size);
  add_moe(s, i, layer, out);
}

void add_deepseek_v4_head(const ModelSpec& s, std::vector<Tensor>& out) {
  add(out, -1, "hc_head_fn", s.hc_mult * s.hidden_size, s.hc_mult);
  add(out, -1, "hc_head_base", s.hc_mult);
  add(out, -1, "hc_head_scale", 1);
}

uint64_t deepseek_v4_mtp_head_elements(const ModelSpec& s) { return s.hc_mult * s.hc_mult * s.hidden_size + s.hc_mult + 1; }

uint64_t deepseek_v4_mtp_scale_elements(const ModelSpec& s, uint64_t block_rows, uint64_t block_cols) {
  const uint64_t h = s.hidden_size;
  const uint64_t per_matrix = ((h + block_rows - 1) / block_rows) * ((h + block_cols - 1) / block_cols);
  return s.num_nextn_predict_layers * 2 * per_matrix;
}

bool is_unscaled_deepseek_v4_kind(const std::string& kind) {
  return kind.starts_with("attn_compressor_") || kind.starts_with("indexer.compressor_") || kind.starts_with("hc_") ||
         kind == "ffn_gate_tid2eid";
}

KvShape deepseek_v4_kv_shape(const ModelSpec& s) {
  KvShape k;
  k.latent = true;  // K = V: one cached vector per entry
  k.elements_per_token_per_layer = s.head_dim;
  k.sliding_elements_per_token_per_layer = s.head_dim;
  k.full_kv_heads = s.num_key_value_heads;
  k.sliding_kv_heads = s.num_key_value_heads;
  k.sliding_layers = s.num_hidden_layers;
  k.window_tokens = s.sliding_window;
  for (uint64_t i = 0; i < s.num_hidden_layers; ++i) {
    const uint64_t ratio = ratio_of(s, i);
    if (ratio == 0) continue;
    ++k.compressed_layers;
    k.compressed_elements_per_token += s.head_dim / ratio;
    if (ratio == kSparseRatio) {
      k.compressed_elements_per_token += s.index_head_dim / ratio;
      ++k.compressed_sparse_layers;
    } else {
      k.compressed_dense_entries_per_token += 1.0 / static_cast<double>(ratio);
    }
  }
  if (k.compressed_sparse_layers > 0) k.compressed_sparse_ratio = kSparseRatio, k.compressed_topk = s.index_topk;
  return k;
}

std::vector<std::pair<std::string, std::string>> deepseek_v4_problems(const ModelSpec& s) {
  std::vector<std::pair<std::string, std::string>> p;
  const bool any_field = !s.compress_ratios.empty() || s.o_lora_rank > 0 || s.o_groups > 0 || s.hc_mult > 0 || s.num_hash_layers > 0;
  if (!is_deepseek_v4(s)) {
    if (any_field)
      p.emplace_back("/compress_ratios", "compress_ratios, o_lora_rank, o_groups, hc_mult and num_hash_layers are deepseek_v4 fields");
    if (!s.expert_dtype.empty() && s.expert_dtype != "fp4") p.emplace_back("/expert_dtype", "expected 'fp4'");
    return p;
  }
  if (s.q_lora_rank == 0 || s.o_lora_rank == 0 || s.o_groups == 0 || s.hc_mult == 0 || s.sliding_window == 0 || s.num_experts == 0 ||
      s.shared_expert_intermediate_size == 0)
    p.emplace_back("",
                   "deepseek_v4 needs q_lora_rank, o_lora_rank, o_groups, hc_mult, sliding_window, num_experts and "
                   "shared_expert_intermediate_size");
  if (s.o_groups > 0 && (s.num_attention_heads * s.head_dim) % s.o_groups != 0)
    p.emplace_back("/o_groups", "must divide num_attention_heads x head_dim");
  if (s.compress_ratios.size() != s.num_hidden_layers + s.num_nextn_predict_layers)
    p.emplace_back("/compress_ratios", "needs one entry per layer, num_hidden_layers + num_nextn_predict_layers");
  bool sparse = false;
  for (size_t i = 0; i < s.compress_ratios.size(); ++i) {
    const uint64_t r = s.compress_ratios[i];
    sparse = sparse || r == kSparseRatio;
    if (r != 0 && r != kSparseRatio && r != kHeavyRatio)
      p.emplace_back("/compress_ratios/" + std::to_string(i), "expected 0, 4 or 128 (the layouts DeepSeek-V4 defines)");
  }
  if (sparse && (s.index_n_heads == 0 || s.index_head_dim == 0 || s.index_topk == 0))
    p.emplace_back("/index_n_heads", "ratio-4 layers need index_n_heads, index_head_dim and index_topk");
  if (!s.expert_dtype.empty() && s.expert_dtype != "fp4") p.emplace_back("/expert_dtype", "expected 'fp4'");
  return p;
}

void write_deepseek_v4(nlohmann::json& j, const ModelSpec& s) {
  j["q_lora_rank"] = s.q_lora_rank;
  if (s.qk_rope_head_dim > 0) j["qk_rope_head_dim"] = s.qk_rope_head_dim;
  j["o_lora_rank"] = s.o_lora_rank;
  j["o_groups"] = s.o_groups;
  j["hc_mult"] = s.hc_mult;
  if (s.num_hash_layers > 0) j["num_hash_layers"] = s.num_hash_layers;
  j["compress_ratios"] = s.compress_ratios;
  if (s.index_n_heads > 0) {
    j["index_n_heads"] = s.index_n_heads;
    j["index_head_dim"] = s.index_head_dim;
    j["index_topk"] = s.index_topk;
  }
}

}  // namespace optadvisor::catalog_detail
