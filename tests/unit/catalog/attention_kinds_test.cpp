// SPDX-License-Identifier: MIT
// Per-layer attention kinds: Gated DeltaNet linear layers (a fixed state, no growing cache), DSA
// sparse attention (an indexer key beside the MLA latent), per-layer q/k norms, and the checkpoint
// terms these families publish. Figures worked by hand in the comments.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "optadvisor/analysis/size.hpp"
#include "optadvisor/catalog/model.hpp"
#include "fixtures.hpp"

using namespace optadvisor;

namespace {

const Tensor& tensor(const std::vector<Tensor>& all, const std::string& name) {
  for (const Tensor& t : all)
    if (t.name == name) return t;
  FAIL("no tensor " + name);
  return all.front();
}

}  // namespace

TEST_CASE("hybrid Gated DeltaNet model: KV only in the full-attention layers, a fixed state in the rest", "[model][kv]") {
  const ModelSpec& m = fixtures::spec("qwen3.5-397b-a17b");
  // full_attention_interval 4 over 60 layers: layers 3, 7, ..., 59 attend (15), 45 are linear.
  CHECK_FALSE(is_linear_layer(m, 3));
  CHECK(is_linear_layer(m, 0));
  CHECK(is_linear_layer(m, 58));
  CHECK_FALSE(is_linear_layer(m, 60));  // the MTP block is full attention
  const KvShape k = kv_shape(m);
  CHECK(k.full_layers == 15);
  CHECK(k.linear_layers == 45);
  CHECK(k.sliding_layers == 0);
  // Full layers: 2 (K, V) x 2 KV heads x 256 = 1,024 elements per token each.
  CHECK(k.elements_per_token_per_layer == 1024);
  CHECK(kv_cache_elements_per_token_full(m) == 15 * 1024);
  // 131,072 tokens: 15 x 1,024 x 131,072 = 2,013,265,920 elements (4,026,531,840 bytes at f16).
  CHECK(kv_cache_elements(m, 131072, 1) == 2013265920ULL);
  // State per linear layer: recurrent 64 value heads x 128 x 128 = 1,048,576 float32 (4,194,304 bytes)
  // + conv (q 2,048 + k 2,048 + v 8,192 = 12,288 channels) x (kernel 4 - 1) = 36,864 at 16 bits (73,728 bytes).
  CHECK(k.state_elements_per_layer == 1048576 + 36864);
  CHECK(k.state_bytes_per_layer == Approx(4194304.0 + 73728.0));
  // 45 layers x 4,268,032 = 192,061,440 bytes per sequence, whatever the context; 4 sequences 768,245,760.
  CHECK(recurrent_state_bytes(k, 1) == Approx(192061440.0));
  CHECK(recurrent_state_bytes(k, 4) == Approx(768245760.0));

  // `size` adds the state to the cache it reports: 4,026,531,840 + 192,061,440 = 4,218,593,280 bytes.
  KvRequest req;
  req.context_tokens = 131072;
  req.bytes_per_element = 2.0;
  const KvFigures f = kv_figures(m, req);
  CHECK(f.state_bytes == Approx(192061440.0));
  CHECK(f.state_bytes_per_sequence == Approx(192061440.0));
  CHECK(f.bytes == Approx(4218593280.0));
  // Doubling the context doubles the KV part only.
  req.context_tokens = 262144;
  CHECK(kv_figures(m, req).bytes == Approx(2 * 4026531840.0 + 192061440.0));
}

TEST_CASE("Gated DeltaNet tensors and the Qwen3.5 checkpoint terms", "[model]") {
  const ModelSpec& m = fixtures::spec("qwen3.5-27b");
  const std::vector<Tensor> t = model_tensors(m);
  // Linear layer 0: in_proj (q 2,048 + k 2,048 + v 6,144 + z 6,144 = 16,384 wide), beta/alpha 2 x 48,
  // conv1d 4 x 10,240, out_proj 6,144 -> 5,120.
  CHECK(tensor(t, "blk.0.ssm_in.weight").rows == 16384);
  CHECK(tensor(t, "blk.0.ssm_beta_alpha.weight").rows == 96);
  CHECK(tensor(t, "blk.0.ssm_conv1d.weight").elements() == 4 * 10240);
  CHECK(tensor(t, "blk.0.ssm_out.weight").row_elements == 6144);
  // Full layer 3: q_proj with its output gate, 2 x 24 heads x 256 = 12,288 wide; per-head q/k norms of 256.
  CHECK(tensor(t, "blk.3.attn_q.weight").rows == 12288);
  CHECK(tensor(t, "blk.3.attn_q_norm.weight").elements() == 256);
  // Qwen3.5 vision tower: 27 blocks x 15,239,504 + patch conv 3 x 2 x 16 x 16 x 1,152 + 1,152 = 1,770,624
  // + 2,304 positions x 1,152 = 2,654,208 + merger (2,304 + 4,608^2 + 4,608 + 4,608 x 5,120 + 5,120 = 44,838,656).
  CHECK(fixtures::checkpoint_term(m, "vision_tower") == 27ULL * 15239504 + 1770624 + 2654208 + 44838656);
  CHECK(fixtures::checkpoint_term(m, "vision_tower") == 460730096);
  // MTP: fc 2 x 5,120^2 + 3 norms + a full-attention dense block, no embedding copy: 424,699,392.
  CHECK(fixtures::checkpoint_term(m, "mtp_layers_shared_embedding") == 424699392);
  CHECK(parameter_count(m) == 26895998464ULL);

  // MoE variant: the shared expert has a 1-wide sigmoid gate.
  const std::vector<Tensor> moe = model_tensors(fixtures::spec("qwen3.5-35b-a3b"));
  CHECK(tensor(moe, "blk.0.ffn_gate_inp_shexp.weight").elements() == 2048);
}

TEST_CASE("DSA sparse attention: indexer tensors, its key in the cache, its FP8 scales", "[model][kv]") {
  const ModelSpec& m = fixtures::spec("deepseek-v3.2");
  const std::vector<Tensor> t = model_tensors(m);
  CHECK(tensor(t, "blk.0.indexer.attn_q_b.weight").elements() == 1536ULL * 64 * 128);
  CHECK(tensor(t, "blk.0.indexer.attn_k.weight").elements() == 7168ULL * 128);
  CHECK(tensor(t, "blk.0.indexer.proj.weight").elements() == 7168ULL * 64);
  // Per layer 12,582,912 + 917,504 + 2 x 128 + 458,752 = 13,959,424 over DeepSeek-V3's 61 layers.
  CHECK(parameter_count(m) == parameter_count(fixtures::spec("deepseek-v3")) + 61ULL * 13959424);
  // Scales: wq_b 64 x 12 + wk 1 x 56 = 824 more per layer (weights_proj stays BF16), 62 layers with MTP.
  CHECK(fixtures::checkpoint_term(m, "quantization_scales") == fixtures::checkpoint_term(fixtures::spec("deepseek-v3"), "quantization_scales") + 62ULL * 824);
  const KvShape k = kv_shape(m);
  // Cache per token per layer: latent 512 + rope key 64 + indexer key 128 = 704; 61 layers.
  CHECK(k.elements_per_token_per_layer == 704);
  CHECK(k.indexer_elements_per_token_per_layer == 128);
  CHECK(k.sparse_topk == 2048);
  CHECK(kv_cache_elements(m, 100000, 1) == 61ULL * 704 * 100000);

  // GLM-5: the same indexer (32 x 128) on a 78-layer MLA model; its MTP layer stores no embedding copies.
  const ModelSpec& g = fixtures::spec("glm-5");
  CHECK(parameter_count(g) == 743911218432ULL);
  CHECK(fixtures::checkpoint_term(g, "mtp_layers_shared_embedding") == 9952920576ULL);
}

TEST_CASE("per-layer q/k norms span every head (MiniMax-M2)", "[model]") {
  const ModelSpec& m = fixtures::spec("minimax-m2.5");
  CHECK(m.qk_norm_type == "per_layer");
  const std::vector<Tensor> t = model_tensors(m);
  CHECK(tensor(t, "blk.0.attn_q_norm.weight").elements() == 48 * 128);
  CHECK(tensor(t, "blk.0.attn_k_norm.weight").elements() == 8 * 128);
  // Weights 228,689,764,864 + FP8 block scales 13,880,064 = the published 228,703,644,928.
  CHECK(parameter_count(m) == 228689764864ULL);
  CHECK(fixtures::checkpoint_term(m, "quantization_scales") == 13880064);
}

TEST_CASE("a documented residue is the only gap between a preset and its published total", "[model]") {
  const ModelSpec& k = fixtures::spec("kimi-k2");
  // 61 layers x 56 elements that the DeepSeek-V3 layout does not have (see the preset's notes).
  CHECK(k.params_unexplained == 61 * 56);
  CHECK(checkpoint_parameter_count(k) == 1026470727640ULL);
  CHECK(checkpoint_parameter_count(k) + k.params_unexplained == k.params_exact);

  // A residue above one millionth of the total is refused.
  nlohmann::json doc = to_json(k);
  doc["params_unexplained"] = k.params_exact / 100000;
  std::vector<Problem> problems;
  CHECK_FALSE(model_from_json(doc, problems));
  REQUIRE_FALSE(problems.empty());
  CHECK(problems.front().pointer == "/params_unexplained");
}

TEST_CASE("linear-attention fields are checked together", "[model]") {
  nlohmann::json doc = to_json(fixtures::spec("qwen3-next-80b-a3b"));
  doc.erase("linear_conv_kernel_dim");
  std::vector<Problem> problems;
  CHECK_FALSE(model_from_json(doc, problems));
  REQUIRE_FALSE(problems.empty());
  CHECK(problems.front().pointer == "/linear_num_key_heads");

  doc = to_json(fixtures::spec("qwen3-next-80b-a3b"));
  doc["layer_types"] = std::vector<std::string>(48, "linear_attention");
  problems.clear();
  CHECK_FALSE(model_from_json(doc, problems));  // both layer_types and full_attention_interval
  REQUIRE_FALSE(problems.empty());
  CHECK(problems.front().pointer == "/full_attention_interval");

  doc.erase("full_attention_interval");
  problems.clear();
  const auto all_linear = model_from_json(doc, problems);
  REQUIRE(all_linear);
  CHECK(kv_shape(*all_linear).linear_layers == 48);
  CHECK(kv_cache_elements(*all_linear, 4096, 1) == 0);
}

TEST_CASE("config.json of each new family imports to its preset's count", "[model][hf]") {
  // Fixtures: the published config.json files as copied in ai-dynamo/aiconfigurator @095f58a
  // (aic-core/src/aiconfigurator_core/model_configs/<org>--<model>_config.json), read 2026-12-01.
  const auto import = [](const std::string& file) { return model_from_hf_config(fixtures::hf_config(file), file); };
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"minimax-m2.5.json", "minimax-m2.5"},
      {"kimi-k2-instruct.json", "kimi-k2"},
      {"deepseek-v3.2.json", "deepseek-v3.2"},
      {"glm-5.json", "glm-5"},
      {"qwen3.5-397b-a17b.json", "qwen3.5-397b-a17b"},
      {"qwen3.5-27b.json", "qwen3.5-27b"},
      {"nemotron-3-nano-30b-a3b.json", "nemotron-3-nano-30b-a3b"},
      // Trimmed configs (the HF keys that shape the model) from debaditc/kvfit @bd4ccab models.json.
      {"granite-4.0-h-small.json", "granite-4.0-h-small"},
      {"nemotron-nano-9b-v2.json", "nemotron-nano-9b-v2"},
      // moonshotai/Kimi-K2.5, the aiconfigurator copy unchanged (kimi_k25 wrapper, INT4 experts).
      {"kimi-k2.5.json", "kimi-k2.5"},
      // No config.json copy of Qwen/Qwen3-Coder-Next was available: the fixture states the model
      // card's widths (nerdpudding/llama_cpp @2a76e8e README_modelcard_qwen3_coder_next.md, read
      // 2026-12-01) under the Qwen3NextConfig key names, with Qwen3-Next's vocab and conv kernel.
      {"qwen3-coder-next.json", "qwen3-coder-next"}};
  for (const auto& [file, id] : pairs) {
    INFO(file);
    const ModelSpec imported = import(file);
    const ModelSpec& p = fixtures::spec(id);
    CHECK(imported.model_type == p.model_type);
    CHECK(parameter_count(imported) == parameter_count(p));
    CHECK(active_parameter_count(imported) == active_parameter_count(p));
    // The published total, less only the documented residue (Kimi-K2's 3,416).
    CHECK(checkpoint_parameter_count(imported) + p.params_unexplained == p.params_exact);
    CHECK(kv_cache_elements(imported, 65536, 1) == kv_cache_elements(p, 65536, 1));
    CHECK(recurrent_state_bytes(kv_shape(imported), 1) == Approx(recurrent_state_bytes(kv_shape(p), 1)));
    CHECK(imported.native_format == p.native_format);
  }
  // Qwen3.5 states layer_types (3 linear : 1 full); the preset says full_attention_interval 4.
  const ModelSpec q = import("qwen3.5-397b-a17b.json");
  CHECK(q.layer_types.size() == 60);
  CHECK(kv_shape(q).linear_layers == 45);
  CHECK(q.mamba_ssm_dtype == "float32");
  CHECK(import("minimax-m2.5.json").qk_norm_type == "per_layer");
  CHECK(import("glm-5.json").index_topk == 2048);
}

TEST_CASE("Kimi-K2.5: INT4 pack-quantized experts and the MoonViT-3D tower", "[model][hf]") {
  const ModelSpec& k = fixtures::spec("kimi-k2.5");
  // The text model is Kimi-K2's layout in BF16 elements: kimi-k2's checkpoint less its FP8 scales
  // (1,026,470,727,640 - 62,495,192).
  CHECK(parameter_count(k) == 1026408232448ULL);
  CHECK(parameter_count(k) == parameter_count(fixtures::spec("kimi-k2")));
  // Experts: 60 MoE layers x 384 x 3 matrices of 7,168 x 2,048 = 1,014,686,023,680 weights; one
  // scale per 32 = 31,708,938,240; 69,120 matrices x weight_shape 2 int32 counted as 8 values each
  // = 1,105,920.
  CHECK(fixtures::checkpoint_term(k, "quantization_scales") == 31708938240ULL + 69120ULL * 16);
  // Tower: per layer 2 LayerNorms 4,608 + wqkv 1,152 x 3,456 + 3,456 + wo 1,152^2 + 1,152
  // + fc0 1,152 x 4,304 + 4,304 + fc1 4,304 x 1,152 + 1,152 = 15,239,504; 27 layers 411,466,608;
  // patch conv 3 x 14^2 x 1,152 + 1,152 = 678,528; positions 64 x 64 x 1,152 = 4,718,592; final
  // LayerNorm 2,304; projector 2,304 + (4,608^2 + 4,608) + (4,608 x 7,168 + 7,168) = 54,277,888.
  CHECK(fixtures::checkpoint_term(k, "vision_tower") == 411466608ULL + 678528 + 4718592 + 2304 + 54277888);
  CHECK(fixtures::checkpoint_term(k, "vision_tower") == 471143920ULL);
  // 1,026,408,232,448 + 31,710,044,160 + 471,143,920 = the published 1,058,589,420,528, no residue.
  CHECK(k.params_unexplained == 0);
  CHECK(checkpoint_parameter_count(k) == 1058589420528ULL);
  // Same MLA cache as Kimi-K2: 61 layers x (512 + 64) per token.
  CHECK(kv_cache_elements(k, 1000, 1) == 61ULL * 576 * 1000);
  CHECK(fixtures::catalog().resolve_model("kimi-k2.6").id == "kimi-k2.5");

  // Only 4-bit compressed-tensors with a group size is modelled.
  nlohmann::json doc = to_json(k);
  doc["quantization_config"]["num_bits"] = 8;
  std::vector<Problem> problems;
  CHECK_FALSE(model_from_json(doc, problems));
  REQUIRE_FALSE(problems.empty());
  CHECK(problems.front().pointer == "/quantization_config/num_bits");
  doc = to_json(k);
  doc["vision_config"].erase("num_position_embeddings");
  problems.clear();
  CHECK_FALSE(model_from_json(doc, problems));

  // Import: the quantization_config sits in text_config; a tower of another projector is refused.
  nlohmann::json cfg = fixtures::hf_config("kimi-k2.5.json");
  CHECK(model_from_hf_config(cfg, "k25.json").quantization_config->group_size == 32);
  cfg["text_config"].erase("quantization_config");
  CHECK(checkpoint_parameter_count(model_from_hf_config(cfg, "k25.json")) == 1026408232448ULL + 471143920ULL);
  cfg["vision_config"]["mm_projector_type"] = "mlp";
  CHECK_THROWS_WITH(model_from_hf_config(cfg, "k25.json"), Catch::Contains("patchmerger"));
}

TEST_CASE("Mamba-2 hybrids: blocks by pattern, state instead of cache", "[model][kv]") {
  const ModelSpec& n = fixtures::spec("nemotron-nano-9b-v2");
  const std::vector<Tensor> t = model_tensors(n);
  // Block 0 'M': in_proj 4,480 -> z 10,240 + x/B/C (10,240 + 2 x 8 x 128 = 12,288) + dt 128 = 22,656;
  // conv1d 4 x 12,288 with bias; A_log, D, dt_bias per head; norm over 10,240; out_proj.
  CHECK(tensor(t, "blk.0.ssm_in.weight").rows == 22656);
  CHECK(tensor(t, "blk.0.ssm_conv1d.weight").elements() == 4 * 12288);
  CHECK(tensor(t, "blk.0.ssm_conv1d.bias").elements() == 12288);
  CHECK(tensor(t, "blk.0.ssm_norm.weight").elements() == 10240);
  // Block 1 '-': an ungated MLP, up and down only.
  CHECK(tensor(t, "blk.1.ffn_up.weight").rows == 15680);
  CHECK(std::none_of(t.begin(), t.end(), [](const Tensor& x) { return x.name == "blk.1.ffn_gate.weight"; }));
  const KvShape k = kv_shape(n);
  CHECK(k.full_layers == 4);     // the '*' blocks
  CHECK(k.linear_layers == 27);  // the 'M' blocks; the 25 MLP blocks hold nothing
  // 4 layers x 2 x 8 KV heads x 128 = 8,192 elements per token.
  CHECK(kv_cache_elements_per_token_full(n) == 8192);
  // State: 128 x 80 x 128 = 1,310,720 + conv 12,288 x 3 = 36,864, at 16 bits: 2,695,168 bytes per layer,
  // 27 layers = 72,769,536 bytes per sequence.
  CHECK(k.state_elements_per_layer == 1310720 + 36864);
  CHECK(recurrent_state_bytes(k, 1) == Approx(27 * 2695168.0));

  // Nemotron-3-Nano: MoE blocks of ungated experts; float32 state (mamba_ssm_cache_dtype).
  const ModelSpec& m = fixtures::spec("nemotron-3-nano-30b-a3b");
  CHECK(tensor(model_tensors(m), "blk.1.ffn_up_exps.weight").elements() == 2688ULL * 1856 * 128);
  const KvShape mk = kv_shape(m);
  CHECK(mk.full_layers == 6);
  CHECK(mk.linear_layers == 23);
  // 64 x 64 x 128 = 524,288 float32 (2,097,152 bytes) + (4,096 + 2 x 8 x 128 = 6,144) x 3 x 2 bytes = 36,864.
  CHECK(mk.state_bytes_per_layer == Approx(2097152.0 + 36864.0));

  // Granite-4.0-H: Mamba-2 by layer_types, MoE FFN in every layer.
  const ModelSpec& g = fixtures::spec("granite-4.0-h-small");
  CHECK(is_mamba_layer(g, 0));
  CHECK_FALSE(is_mamba_layer(g, 5));
  CHECK(kv_shape(g).full_layers == 4);
  CHECK(kv_shape(g).linear_layers == 36);
}

TEST_CASE("Llama 4: chunked layers, interleaved MoE, its vision tower", "[model][hf]") {
  const ModelSpec& scout = fixtures::spec("llama-4-scout");
  // Chunked attention (8192) on 3 of 4 layers: 36 capped, 12 global. At 32,768 tokens:
  // (12 x 32,768 + 36 x 8,192) = 688,128 token-layers x 2 x 8 x 128 = 1,409,286,144 elements.
  CHECK(kv_shape(scout).sliding_layers == 36);
  CHECK(kv_cache_elements(scout, 32768, 1) == 1409286144ULL);
  // Vision: 34 x 23,807,872 (q/k/v/o 4 x (1408^2 + 1408), fc1/fc2 with bias, 2 LayerNorms)
  // + stem (3 x 14^2 x 1408 + class 1408 + 577 positions x 1408 + 2 LayerNorms) 1,647,360
  // + adapter 5,632 x 4,096 + 4,096^2 = 39,845,888 + projector 4,096 x 5,120 = 20,971,520.
  CHECK(fixtures::checkpoint_term(scout, "vision_tower") == 34ULL * 23807872 + 1647360 + 39845888 + 20971520);
  CHECK(fixtures::checkpoint_term(scout, "vision_tower") == 871932416);
  // Maverick: the even layers are dense (16384), the odd ones MoE of 128 experts.
  const ModelSpec& mav = fixtures::spec("llama-4-maverick");
  CHECK_FALSE(is_moe_layer(mav, 0));
  CHECK(is_moe_layer(mav, 1));
  CHECK(tensor(model_tensors(mav), "blk.0.ffn_up.weight").rows == 16384);

  // Import: the published Scout config.json (aiconfigurator copy, text_config only) gives the text
  // model; with the Llama 4 vision_config (TensorRT-LLM's Maverick copy, 34 layers) the published total.
  nlohmann::json cfg = fixtures::hf_config("llama-4-scout-17b-16e-instruct.json");
  const ModelSpec text = model_from_hf_config(cfg, "scout.json");
  CHECK(text.model_type == "llama4_text");
  CHECK(parameter_count(text) == parameter_count(scout));
  CHECK(checkpoint_parameter_count(text) == 107769861120ULL);
  CHECK(kv_cache_elements(text, 32768, 1) == kv_cache_elements(scout, 32768, 1));
  // kvfit's trimmed Scout config states no_rope_layers (1 = chunked, 0 = global): the same layers.
  cfg["text_config"]["no_rope_layers"] = nlohmann::json::array();
  for (int i = 0; i < 48; ++i) cfg["text_config"]["no_rope_layers"].push_back((i + 1) % 4 == 0 ? 0 : 1);
  CHECK(kv_cache_elements(model_from_hf_config(cfg, "scout.json"), 32768, 1) == 1409286144ULL);
  cfg["vision_config"] = {{"hidden_size", 1408},      {"image_size", 336}, {"intermediate_size", 5632},  {"num_hidden_layers", 34},
                          {"patch_size", 14},         {"num_channels", 3}, {"pixel_shuffle_ratio", 0.5}, {"projector_input_dim", 4096},
                          {"vision_output_dim", 4096}};
  CHECK(checkpoint_parameter_count(model_from_hf_config(cfg, "scout.json")) == scout.params_exact);
  cfg["vision_config"].erase("pixel_shuffle_ratio");
  CHECK_THROWS_WITH(model_from_hf_config(cfg, "scout.json"), Catch::Contains("vision_config.pixel_shuffle_ratio"));
}

TEST_CASE("Pixtral vision tower of Mistral-Small-3.2", "[model]") {
  const ModelSpec& m = fixtures::spec("mistral-small-3.2-24b");
  // 24 x (4 x 1024^2 + 3 x 1024 x 4096 + 2 x 1024) = 24 x 16,779,264 = 402,702,336; patch conv
  // 3 x 14^2 x 1024 = 602,112 + ln_pre 1,024; projector 1,024 + 4 x 1024^2 + 1024 x 5120 + 5120^2 = 35,652,608.
  CHECK(fixtures::checkpoint_term(m, "vision_tower") == 402702336ULL + 602112 + 1024 + 35652608);
  CHECK(parameter_count(m) == 23572403200ULL);
  CHECK(fixtures::catalog().resolve_model("magistral-small-2509").id == "mistral-small-3.2-24b");
}

TEST_CASE("per-tensor FP8 scales of Mistral's 2512 releases", "[model]") {
  // quantization_config fp8, activation_scheme static, weight_block_size null: a scalar weight_scale and
  // activation_scale per decoder Linear (q, k, v, o, gate, up, down): 40 layers x 7 x 2 = 560.
  const ModelSpec& m14 = fixtures::spec("ministral-3-14b");
  CHECK(fixtures::checkpoint_term(m14, "quantization_scales") == 560);
  // 40 x (5120 x 6144 + 4096 x 5120 + 3 x 5120 x 16384 + 2 x 5120) + 2 x 131072 x 5120 + 5120.
  CHECK(parameter_count(m14) == 13506073600ULL);
  CHECK(fixtures::checkpoint_term(m14, "vision_tower") == fixtures::checkpoint_term(fixtures::spec("mistral-small-3.2-24b"), "vision_tower"));
  CHECK(checkpoint_parameter_count(m14) == 13945032240ULL);
  CHECK(m14.native_format == "fp8");

  // Devstral-Small-2: the Mistral-Small-3.2 shape plus the same 560 scales.
  const ModelSpec& ds2 = fixtures::spec("devstral-small-2");
  CHECK(ds2.id == "devstral-small-2-24b");
  CHECK(parameter_count(ds2) == parameter_count(fixtures::spec("mistral-small-3.2-24b")));
  CHECK(checkpoint_parameter_count(ds2) == fixtures::spec("mistral-small-3.2-24b").params_exact + 560);

  // The dynamic scheme stores the weight scale only.
  ModelSpec dynamic = m14;
  dynamic.quantization_config->activation_scheme = "dynamic";
  CHECK(fixtures::checkpoint_term(dynamic, "quantization_scales") == 280);

  // activation_scheme is for per-tensor fp8 only.
  nlohmann::json doc = to_json(m14);
  doc["quantization_config"]["weight_block_size"] = {128, 128};
  std::vector<Problem> problems;
  CHECK_FALSE(model_from_json(doc, problems));
  doc["quantization_config"].erase("weight_block_size");
  doc["quantization_config"].erase("activation_scheme");
  problems.clear();
  CHECK_FALSE(model_from_json(doc, problems));
}
