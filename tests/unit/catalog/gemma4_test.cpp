// SPDX-License-Identifier: MIT
// Gemma 4 (gemma4_text): each layer kind at its own head width and KV heads, K = V full layers
// without v_proj, the dense MLP beside the routed-expert block, the gemma4_vision tower, and the
// config.json import. Figures worked by hand in the comments.
#include <catch2/catch.hpp>

#include <string>

#include "optadvisor/catalog/model.hpp"
#include "fixtures.hpp"

using namespace optadvisor;

TEST_CASE("Gemma 4 31B: per-kind attention shapes and the published total term by term", "[model][gemma4]") {
  const ModelSpec& m = fixtures::spec("gemma-4-31b");
  const std::vector<Tensor> t = model_tensors(m);
  // Layer 0 slides (16 KV heads x 256), layer 5 is full (4 KV heads x 512, K = V: no attn_v).
  REQUIRE(fixtures::find_tensor(t, "blk.0.attn_k.weight") != nullptr);
  CHECK(fixtures::find_tensor(t, "blk.0.attn_k.weight")->rows == 4096);
  CHECK(fixtures::find_tensor(t, "blk.0.attn_v.weight") != nullptr);
  REQUIRE(fixtures::find_tensor(t, "blk.5.attn_k.weight") != nullptr);
  CHECK(fixtures::find_tensor(t, "blk.5.attn_k.weight")->rows == 2048);
  CHECK(fixtures::find_tensor(t, "blk.5.attn_q.weight")->rows == 32 * 512);
  CHECK(fixtures::find_tensor(t, "blk.5.attn_q_norm.weight")->elements() == 512);
  CHECK(fixtures::find_tensor(t, "blk.5.attn_v.weight") == nullptr);
  // Sliding layer: q 5376 x 8192 + k, v 5376 x 4096 each + o 8192 x 5376 + norms 2 x 256 + MLP 3 x 5376 x 21504
  // + 4 x 5376 = 478,959,104; full layer: q 5376 x 16384 + k 5376 x 2048 + o 16384 x 5376 + 2 x 512 + MLP + 4 x 5376
  // = 534,009,856. 50 x 478,959,104 + 10 x 534,009,856 + embedding 1,409,286,144 + final norm 5,376.
  CHECK(parameter_count(m) == 50ULL * 478959104 + 10ULL * 534009856 + 1409286144ULL + 5376);
  CHECK(parameter_count(m) == 30697345280ULL);
  CHECK(fixtures::checkpoint_term(m, "untied_output_copy") == 1409286144ULL);
  // Tower: 27 x (4 x 1152^2 + 3 x 1152 x 4304 + 4 x 1152 + 2 x 72) + 2 x 10,240 x 1152 + 768 x 1152 + 1152 x 5376.
  CHECK(fixtures::checkpoint_term(m, "vision_tower") == 27ULL * 20187792 + 23592960 + 884736 + 6193152);
  CHECK(checkpoint_parameter_count(m) == 32682372656ULL);
  CHECK(active_parameter_count(m) == parameter_count(m));
}

TEST_CASE("Gemma 4 26B-A4B: the dense MLP and the routed-expert block in every layer", "[model][gemma4]") {
  const ModelSpec& m = fixtures::spec("gemma-4-26b-a4b");
  const std::vector<Tensor> t = model_tensors(m);
  REQUIRE(fixtures::find_tensor(t, "blk.29.ffn_up.weight") != nullptr);
  CHECK(fixtures::find_tensor(t, "blk.29.ffn_up.weight")->rows == 2112);
  REQUIRE(fixtures::find_tensor(t, "blk.29.ffn_up_exps.weight") != nullptr);
  CHECK(fixtures::find_tensor(t, "blk.29.ffn_up_exps.weight")->slices == 128);
  CHECK(fixtures::find_tensor(t, "blk.29.ffn_exps_scale.weight")->elements() == 128);
  // Text 25,232,800,000 (worked in data/models/PENDING.md) + the block's scales and norms 30 x (4 x 2816 + 128).
  CHECK(parameter_count(m) == 25232800000ULL + 30ULL * 11392);
  CHECK(fixtures::checkpoint_term(m, "untied_output_copy") == 738197504ULL);
  CHECK(fixtures::checkpoint_term(m, "vision_tower") == 27ULL * 20187792 + 23592960 + 884736 + 1152ULL * 2816);
  CHECK(checkpoint_parameter_count(m) == 26544131376ULL);
  // Experts 30 x 128 x 3 x 2816 x 704 = 22,837,985,280, of which a token uses 8 / 128 = 1,427,374,080; the
  // dense MLP, attention, router and embedding always: 25,233,141,760 - 22,837,985,280 + 1,427,374,080.
  CHECK(active_parameter_count(m) == 3822530560ULL);
}

TEST_CASE("Gemma 4 KV cache by layer kind, below and above the 1,024-token window", "[model][gemma4][kv]") {
  const ModelSpec& m = fixtures::spec("gemma-4-31b");
  const KvShape k = kv_shape(m);
  CHECK(k.sliding_layers == 50);
  CHECK(k.full_layers == 10);
  CHECK(k.window_tokens == 1024);
  // Sliding: 2 (K, V) x 16 heads x 256 = 8,192 per layer per token; full: 2 x 4 x 512 = 4,096 (K and V
  // both cached although v_proj is K's: the value is normed without a scale and not rotated).
  CHECK(k.sliding_elements_per_token_per_layer == 8192);
  CHECK(k.elements_per_token_per_layer == 4096);
  CHECK(kv_cache_elements_per_token_full(m) == 50ULL * 8192 + 10ULL * 4096);  // 450,560
  // 512 tokens, under the window: every layer holds all of them: 450,560 x 512 = 230,686,720 elements,
  // 461,373,440 bytes at bf16.
  CHECK(kv_cache_elements(m, 512, 1) == 230686720ULL);
  // 8,192 tokens: sliding 50 x 8,192 x 1,024 = 419,430,400 + full 10 x 4,096 x 8,192 = 335,544,320
  // = 754,974,720 elements (1,509,949,440 bytes at bf16); one uniform 8,192-wide shape would give 838,860,800.
  CHECK(kv_cache_elements(m, 8192, 1) == 754974720ULL);
  const KvElements by_kind = kv_cache_elements_by_kind(k, 8192, 1);
  CHECK(by_kind.sliding == 419430400ULL);
  CHECK(by_kind.full == 335544320ULL);
  // An engine without a capped window holds every token in the sliding layers too: 450,560 x 8,192.
  CHECK(kv_cache_elements(m, 8192, 1, KvWindowPolicy::kFullContext) == 3690987520ULL);
  // 26B-A4B at 8,192: sliding 25 x (2 x 8 x 256) x 1,024 = 104,857,600 + full 5 x (2 x 2 x 512) x 8,192 = 83,886,080.
  CHECK(kv_cache_elements(fixtures::spec("gemma-4-26b-a4b"), 8192, 1) == 188743680ULL);
  // Attention widths (query heads x (key + value width)): 32 x 512 sliding, 32 x 1024 full.
  CHECK(attention_widths(m).sliding == 32 * 512);
  CHECK(attention_widths(m).full == 32 * 1024);
}

TEST_CASE("Gemma 4 config.json import gives the presets' counts", "[model][gemma4][hf]") {
  for (const auto& [file, id] : {std::pair<std::string, std::string>{"gemma-4-31b-it.json", "gemma-4-31b"},
                                 {"gemma-4-26b-a4b-it.json", "gemma-4-26b-a4b"}}) {
    INFO(file);
    const ModelSpec imported = model_from_hf_config(fixtures::hf_config(file), file);
    const ModelSpec& p = fixtures::spec(id);
    CHECK(imported.model_type == "gemma4_text");
    CHECK(parameter_count(imported) == parameter_count(p));
    CHECK(active_parameter_count(imported) == active_parameter_count(p));
    CHECK(checkpoint_parameter_count(imported) == p.params_exact);
    CHECK(kv_cache_elements(imported, 65536, 1) == kv_cache_elements(p, 65536, 1));
    CHECK(imported.max_position_embeddings == 262144);
    CHECK(imported.rope_theta == 1e6);  // the full layers' base from rope_parameters.full_attention
  }
  nlohmann::json cfg = fixtures::hf_config("gemma-4-31b-it.json");
  // Without attention_k_eq_v transformers uses num_key_value_heads (16) on the full layers too, with a v_proj.
  cfg["text_config"]["attention_k_eq_v"] = false;
  const ModelSpec plain = model_from_hf_config(cfg, "gemma4.json");
  CHECK(plain.num_global_key_value_heads == 0);
  CHECK(kv_shape(plain).elements_per_token_per_layer == 2 * 16 * 512);
  // Each full layer: k 12 heads (x 512) wider and a v of 16 heads: 10 x 5376 x 512 x 28 = 770,703,360 more.
  CHECK(parameter_count(plain) == 30697345280ULL + 770703360ULL);
  cfg["text_config"]["hidden_size_per_layer_input"] = 256;
  CHECK_THROWS_WITH(model_from_hf_config(cfg, "gemma4.json"), Catch::Contains("hidden_size_per_layer_input"));
  cfg["text_config"]["hidden_size_per_layer_input"] = 0;
  cfg["text_config"].erase("layer_types");
  CHECK_THROWS_WITH(model_from_hf_config(cfg, "gemma4.json"), Catch::Contains("text_config.layer_types"));
  nlohmann::json moe = fixtures::hf_config("gemma-4-26b-a4b-it.json");
  moe["text_config"].erase("top_k_experts");
  CHECK_THROWS_WITH(model_from_hf_config(moe, "gemma4.json"), Catch::Contains("text_config.top_k_experts"));
}

TEST_CASE("Gemma 4 preset fields are checked", "[model][gemma4]") {
  const nlohmann::json good = to_json(fixtures::spec("gemma-4-26b-a4b"));
  const auto problem_at = fixtures::first_problem_pointer;
  CHECK(problem_at(good).empty());
  nlohmann::json bad = good;
  bad["num_global_key_value_heads"] = 3;  // 16 query heads are not a multiple of 3
  CHECK(problem_at(bad) == "/num_global_key_value_heads");
  bad = good;
  bad.erase("intermediate_size");
  CHECK(problem_at(bad) == "/enable_moe_block");
  bad = good;
  bad["vision_config"].erase("head_dim");
  CHECK(problem_at(bad) == "/vision_config/num_position_embeddings");
  bad = good;
  bad["kv_lora_rank"] = 512;
  bad["qk_rope_head_dim"] = 64;
  bad["qk_nope_head_dim"] = 128;
  bad["v_head_dim"] = 128;
  CHECK(problem_at(bad) == "/global_head_dim");
}
