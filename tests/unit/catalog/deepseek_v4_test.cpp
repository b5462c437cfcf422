// SPDX-License-Identifier: MIT
// DeepSeek-V4 (model_type deepseek_v4): the tensor inventory, the published checkpoint totals with
// the routed experts packed two FP4 values per stored element, the active weights, and the
// compressed KV cache. Figures worked by hand in the comments.
#include <catch2/catch.hpp>

#include <string>

#include "optadvisor/catalog/model.hpp"
#include "fixtures.hpp"

using namespace optadvisor;

using fixtures::checkpoint_term;
using fixtures::find_tensor;
using fixtures::spec;

TEST_CASE("DeepSeek-V4 layer tensors follow compress_ratios and the hash layers", "[model][deepseek_v4]") {
  const ModelSpec& m = spec("deepseek-v4-flash");
  const std::vector<Tensor> all = model_tensors(m);
  // Layer 0 (ratio 0, a hash layer): window attention only, the token-id routing table, no bias.
  CHECK(find_tensor(all, "blk.0.attn_compressor_wkv.weight") == nullptr);
  REQUIRE(find_tensor(all, "blk.0.ffn_gate_tid2eid.weight") != nullptr);
  CHECK(find_tensor(all, "blk.0.ffn_gate_tid2eid.weight")->elements() == 129280ULL * 6);
  CHECK(find_tensor(all, "blk.0.exp_probs_b.bias") == nullptr);
  // Layer 2 (ratio 4): overlapping compressor 2 x 512 wide, the indexer with its own 2 x 128 compressor.
  REQUIRE(find_tensor(all, "blk.2.attn_compressor_wkv.weight") != nullptr);
  CHECK(find_tensor(all, "blk.2.attn_compressor_wkv.weight")->rows == 1024);
  CHECK(find_tensor(all, "blk.2.attn_compressor_ape.weight")->elements() == 4 * 1024);
  CHECK(find_tensor(all, "blk.2.indexer.compressor_ape.weight")->elements() == 4 * 256);
  CHECK(find_tensor(all, "blk.2.indexer.attn_q_b.weight")->elements() == 1024ULL * 64 * 128);
  // Layer 3 (ratio 128): one 512-wide compressor, no indexer; a score bias instead of the table.
  CHECK(find_tensor(all, "blk.3.attn_compressor_ape.weight")->elements() == 128 * 512);
  CHECK(find_tensor(all, "blk.3.indexer.proj.weight") == nullptr);
  CHECK(find_tensor(all, "blk.3.exp_probs_b.bias") != nullptr);
  // Grouped output: 8 groups of 64 x 512 / 8 = 4096 -> 1024, then 8192 -> 4096.
  CHECK(find_tensor(all, "blk.5.attn_output_a.weight")->row_elements == 4096);
  CHECK(find_tensor(all, "blk.5.attn_output_a.weight")->rows == 8192);
  // Hyper-connections: (2 + 4) x 4 = 24 mixes over 4 x 4096 streams; the model's head 4 x 16384.
  CHECK(find_tensor(all, "blk.5.hc_ffn_fn.weight")->elements() == 24ULL * 16384);
  CHECK(find_tensor(all, "hc_head_fn.weight")->elements() == 4ULL * 16384);
}

TEST_CASE("DeepSeek-V4 reproduces the published totals with FP4-packed experts", "[model][deepseek_v4]") {
  // Flash: GGUF weights 284,334,567,511 + MTP layer 6,610,048,891 (a window-only block, e_proj and
  // h_proj 2 x 4096^2, three norms, its hc head 4 x 16384 + 4 + 1) + scales 8,858,737,664 (FP8
  // 128 x 128 blocks 367,616; one per 32 expert weights 283,467,841,536 / 32 = 8,858,370,048)
  // - half the expert weights, 141,733,920,768 = 158,069,433,298.
  const ModelSpec& flash = spec("deepseek-v4-flash");
  CHECK(parameter_count(flash) == 284334567511ULL);
  CHECK(checkpoint_term(flash, "mtp_layers_shared_embedding") == 6610048891ULL);
  CHECK(checkpoint_term(flash, "quantization_scales") == 367616ULL + 8858370048ULL);
  CHECK(packed_expert_elements(flash) == 141733920768ULL);
  CHECK(checkpoint_parameter_count(flash) == 158069433298ULL);
  CHECK(checkpoint_parameter_count(flash) == flash.params_exact);
  // Pro: 1,572,999,528,803 + 25,840,145,979 + 1,414,144 + 49,148,854,272 - 786,381,668,352.
  const ModelSpec& pro = spec("deepseek-v4-pro");
  CHECK(parameter_count(pro) == 1572999528803ULL);
  CHECK(checkpoint_term(pro, "mtp_layers_shared_embedding") == 25840145979ULL);
  CHECK(checkpoint_term(pro, "quantization_scales") == 1414144ULL + 49148854272ULL);
  CHECK(packed_expert_elements(pro) == 786381668352ULL);
  CHECK(checkpoint_parameter_count(pro) == 861608274846ULL);
  // Unpacked, with the MTP layer: the audit table's 290,944,616,402 and 1,598,839,674,782.
  CHECK(parameter_count(flash) + checkpoint_term(flash, "mtp_layers_shared_embedding") == 290944616402ULL);
  CHECK(parameter_count(pro) + checkpoint_term(pro, "mtp_layers_shared_embedding") == 1598839674782ULL);
}

TEST_CASE("DeepSeek-V4 active weights: the top-6 routed experts, the shared one and the rest", "[model][deepseek_v4]") {
  // Flash: 284,334,567,511 - 43 x 250 / 256 of the 6,442,450,944 per-layer experts (3 x 4096 x 2048
  // x 256), i.e. - 270,532,608,000 = 13,801,959,511, of which the input embedding is 529,530,880
  // (DeepSeek: 13B active).
  CHECK(active_parameter_count(spec("deepseek-v4-flash")) == 13801959511ULL);
  CHECK(active_parameter_count(spec("deepseek-v4-pro")) == 49781408099ULL);  // DeepSeek: 49B
}

TEST_CASE("DeepSeek-V4 KV cache: a 128-token window per layer plus the compressed entries", "[model][kv][deepseek_v4]") {
  const ModelSpec& m = spec("deepseek-v4-flash");
  const KvShape k = kv_shape(m);
  // One ratio-4 layer caches per token of context 512 / 4 = 128 (the pooled K = V entry) + 128 / 4 =
  // 32 (the indexer's key) = 160 elements, i.e. 160 bytes at FP8; one ratio-128 layer 512 / 128 = 4.
  // Flash has 21 ratio-4 and 20 ratio-128 layers: 21 x 160 + 20 x 4 = 3,440 per token.
  CHECK(k.compressed_layers == 41);
  CHECK(k.compressed_elements_per_token == 3440);
  // Every layer (the two window-only ones too) keeps 128 tokens x 512: 43 x 65,536 = 2,818,048.
  CHECK(k.sliding_layers == 43);
  CHECK(k.window_tokens == 128);
  CHECK(k.sliding_elements_per_token_per_layer == 512);
  CHECK(k.full_layers == 0);
  // At 1M tokens: 2,818,048 + 3,440 x 1,048,576 = 3,609,919,488 elements (3.61 GB at FP8).
  CHECK(kv_cache_elements(m, 1048576, 1) == 2818048ULL + 3440ULL * 1048576);
  // Per token ignoring the window: 43 x 512 + 3,440 = 25,456.
  CHECK(kv_cache_elements_per_token_full(m) == 25456);
  // Pro: 30 ratio-4 and 31 ratio-128 layers: 30 x 160 + 31 x 4 = 4,924.
  CHECK(kv_shape(spec("deepseek-v4-pro")).compressed_elements_per_token == 4924);
}

TEST_CASE("DeepSeek-V4 presets check compress_ratios", "[model][deepseek_v4]") {
  nlohmann::json j = to_json(spec("deepseek-v4-flash"));
  j["compress_ratios"].erase(j["compress_ratios"].size() - 1);  // drop the MTP layer's entry
  std::vector<Problem> problems;
  CHECK_FALSE(model_from_json(j, problems));
  REQUIRE_FALSE(problems.empty());
  CHECK(problems.front().pointer == "/compress_ratios");

  j = to_json(spec("deepseek-v4-flash"));
  j["compress_ratios"][2] = 8;
  problems.clear();
  CHECK_FALSE(model_from_json(j, problems));
}

TEST_CASE("a deepseek_v4 config.json is refused with a pointer to the presets", "[model][deepseek_v4][hf]") {
  const nlohmann::json config = {{"model_type", "deepseek_v4"}, {"hidden_size", 4096}, {"num_hidden_layers", 43}};
  try {
    (void)model_from_hf_config(config, "config.json");
    FAIL("expected a refusal");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "config.json: model_type 'deepseek_v4' cannot be imported from config.json");
    CHECK(std::string(e.hint()).find("deepseek-v4-flash") != std::string::npos);
  }
}
