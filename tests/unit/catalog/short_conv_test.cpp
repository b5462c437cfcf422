// SPDX-License-Identifier: MIT
// LFM2 gated short-convolution layers (lfm2_moe): their tensors, their fixed per-sequence state
// beside the attention layers' KV cache, the lfm2-8b-a1b preset's published total and the
// config.json import. Figures worked by hand in the comments.
#include <catch2/catch.hpp>

#include <string>

#include "optadvisor/analysis/size.hpp"
#include "optadvisor/catalog/model.hpp"
#include "fixtures.hpp"

using namespace optadvisor;

TEST_CASE("lfm2-8b-a1b reproduces its published total from the short-convolution layout", "[model]") {
  const ModelSpec& m = fixtures::spec("lfm2-8b-a1b");
  // Embeddings 65,536 x 2,048 = 134,217,728 (tied) + embedding_norm 2,048.
  // Norms: 24 layers x 2 x 2,048 = 98,304.
  // 18 conv layers x (in_proj 2,048 x 6,144 + conv 3 x 2,048 + out_proj 2,048^2 = 16,783,360) = 302,100,480.
  // 6 attention layers x (q 2,048^2 + k, v 2 x 2,048 x 512 + o 2,048^2 + q/k norms 2 x 64 = 10,485,888) = 62,915,328.
  // 2 dense FFNs x 3 x 2,048 x 7,168 = 88,080,384.
  // 22 MoE FFNs x (router 2,048 x 32 + 32 x 3 x 2,048 x 1,792 = 352,387,072) = 7,752,515,584.
  // Sum: 8,339,929,856, the published BF16 total (the 704 F32 expert_bias elements are not in it).
  CHECK(parameter_count(m) == 134217728ULL + 2048 + 98304 + 302100480 + 62915328 + 88080384 + 7752515584ULL);
  CHECK(parameter_count(m) == 8339929856ULL);
  CHECK(checkpoint_parameter_count(m) == m.params_exact);
  // Active: each MoE layer uses 4 of 32 experts, so 28 x 11,010,048 = 308,281,344 idle per layer, x 22 = 6,782,189,568.
  CHECK(active_parameter_count(m) == 8339929856ULL - 6782189568ULL);

  const std::vector<Tensor> t = model_tensors(m);
  const Tensor* in_proj = fixtures::find_tensor(t, "blk.0.shortconv.in_proj.weight");
  const Tensor* conv = fixtures::find_tensor(t, "blk.0.shortconv.conv.weight");
  REQUIRE(in_proj != nullptr);
  REQUIRE(conv != nullptr);
  CHECK(in_proj->row_elements == 2048);
  CHECK(in_proj->rows == 6144);
  CHECK(conv->row_elements == 3);  // ggml order: the taps first, one row per hidden channel
  CHECK(conv->rows == 2048);
  CHECK(fixtures::find_tensor(t, "blk.0.attn_q.weight") == nullptr);  // a conv layer has no attention
  CHECK(fixtures::find_tensor(t, "blk.2.shortconv.in_proj.weight") == nullptr);
  CHECK(fixtures::find_tensor(t, "blk.2.attn_k_norm.weight")->elements() == 64);
  CHECK(fixtures::find_tensor(t, "blk.1.ffn_gate.weight")->rows == 7168);  // dense: num_dense_layers 2
  CHECK(fixtures::find_tensor(t, "blk.2.ffn_gate_exps.weight")->slices == 32);
  CHECK(fixtures::find_tensor(t, "blk.2.exp_probs_b.bias") == nullptr);
  CHECK(fixtures::find_tensor(t, "token_embd_norm.weight") != nullptr);
  CHECK(fixtures::find_tensor(t, "output.weight") == nullptr);
}

TEST_CASE("short-convolution layers keep a fixed state, only the attention layers cache per token", "[model][kv]") {
  const ModelSpec& m = fixtures::spec("lfm2-8b-a1b");
  CHECK(is_short_conv_layer(m, 0));
  CHECK_FALSE(is_short_conv_layer(m, 2));
  CHECK(is_short_conv_layer(m, 23));
  CHECK_FALSE(is_short_conv_layer(m, 24));
  const KvShape k = kv_shape(m);
  CHECK(k.full_layers == 6);
  CHECK(k.linear_layers == 18);
  // Attention layers: 2 (K, V) x 8 KV heads x 64 = 1,024 elements per token each; 6 layers: 6,144.
  CHECK(kv_cache_elements_per_token_full(m) == 6144);
  // 32,768 tokens: 6,144 x 32,768 = 201,326,592 elements, 402,653,184 bytes at 16 bits.
  CHECK(kv_cache_elements(m, 32768, 1) == 201326592ULL);
  // Each conv layer keeps the last conv_L_cache - 1 = 2 inputs (B * x) of its 2,048 channels:
  // 4,096 elements, 8,192 bytes at 16 bits; 18 layers: 147,456 bytes per sequence at any context.
  CHECK(k.state_elements_per_layer == 4096);
  CHECK(k.state_bytes_per_layer == Approx(8192.0));
  CHECK(recurrent_state_bytes(k, 1) == Approx(147456.0));
  CHECK(recurrent_state_bytes(k, 8) == Approx(8 * 147456.0));

  KvRequest req;
  req.context_tokens = 32768;
  req.bytes_per_element = 2.0;
  const KvFigures f = kv_figures(m, req);
  CHECK(f.state_bytes_per_sequence == Approx(147456.0));
  CHECK(f.bytes == Approx(402653184.0 + 147456.0));
  req.context_tokens = 65536;  // the cache doubles, the state does not
  CHECK(kv_figures(m, req).bytes == Approx(2 * 402653184.0 + 147456.0));
}

TEST_CASE("short-convolution fields are checked together", "[model]") {
  nlohmann::json doc = to_json(fixtures::spec("lfm2-8b-a1b"));
  std::vector<Problem> problems;
  REQUIRE(model_from_json(doc, problems));

  doc.erase("conv_L_cache");
  CHECK_FALSE(model_from_json(doc, problems));
  REQUIRE_FALSE(problems.empty());
  CHECK(problems.front().pointer == "/conv_L_cache");

  doc["conv_L_cache"] = 3;
  doc["layer_types"] = std::vector<std::string>(24, "full_attention");
  problems.clear();
  CHECK_FALSE(model_from_json(doc, problems));  // taps given, no conv layer
  REQUIRE_FALSE(problems.empty());
  CHECK(problems.front().pointer == "/conv_L_cache");
}

TEST_CASE("an lfm2_moe config.json imports to the lfm2-8b-a1b count", "[model][hf]") {
  const ModelSpec& p = fixtures::spec("lfm2-8b-a1b");
  nlohmann::json cfg = fixtures::hf_config("lfm2-8b-a1b.json");
  const ModelSpec imported = model_from_hf_config(cfg, "lfm2-8b-a1b.json");
  CHECK(imported.model_type == "lfm2_moe");
  CHECK(imported.tie_word_embeddings);
  CHECK(imported.conv_L_cache == 3);
  CHECK(imported.first_k_dense_replace == 2);
  CHECK(parameter_count(imported) == 8339929856ULL);
  CHECK(checkpoint_parameter_count(imported) == p.params_exact);
  CHECK(active_parameter_count(imported) == active_parameter_count(p));
  CHECK(kv_cache_elements(imported, 32768, 1) == kv_cache_elements(p, 32768, 1));
  CHECK(recurrent_state_bytes(kv_shape(imported), 1) == Approx(recurrent_state_bytes(kv_shape(p), 1)));

  // Older LFM2 configs list the attention layers in full_attn_idxs instead of layer_types.
  cfg.erase("layer_types");
  cfg["full_attn_idxs"] = {2, 6, 10, 14, 18, 21};
  const ModelSpec by_index = model_from_hf_config(cfg, "lfm2-8b-a1b.json");
  CHECK(by_index.layer_types == p.layer_types);
  CHECK(parameter_count(by_index) == 8339929856ULL);
}
