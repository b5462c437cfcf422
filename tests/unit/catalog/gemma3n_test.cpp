// SPDX-License-Identifier: MIT
// Gemma 3n (gemma3n_text): per-layer embeddings, AltUp, LAuReL and the KV-shared layers. The
// published checkpoint totals term by term, the cache by layer kind, the lookup table left out of
// a step's reads and FLOPs, the config.json import and the checks. Figures worked by hand.
#include <catch2/catch.hpp>

#include <string>

#include "fixtures.hpp"
#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/catalog/model.hpp"

using namespace optadvisor;

TEST_CASE("Gemma 3n E4B and E2B: the published checkpoint totals term by term", "[model][gemma3n]") {
  const ModelSpec& e4b = fixtures::spec("gemma-3n-e4b");
  const std::vector<Tensor> t = model_tensors(e4b);
  REQUIRE(fixtures::find_tensor(t, "per_layer_token_embd.weight") != nullptr);
  CHECK(fixtures::find_tensor(t, "per_layer_token_embd.weight")->row_elements == 35 * 256);
  CHECK(fixtures::find_tensor(t, "per_layer_token_embd.weight")->rows == 262144);
  CHECK(fixtures::find_tensor(t, "altup_proj.weight")->slices == 3);
  CHECK(fixtures::find_tensor(t, "blk.34.laurel_l.weight")->rows == 64);
  CHECK(fixtures::find_tensor(t, "blk.34.altup_predict_coef.weight")->elements() == 64);
  // The shared layers keep their k and v projections in the checkpoint.
  CHECK(fixtures::find_tensor(t, "blk.34.attn_v.weight") != nullptr);
  // Per layer: attention 2048 x (2048 + 512 + 512) + 2048 x 2048 + q/k norms 2 x 256 = 10,486,272; MLP
  // 3 x 2048 x 16384 = 100,663,296; four norms 8,192; per-layer input 2 x 2048 x 256 + 2048 = 1,050,624; AltUp
  // 4 x 4 + 2048 + 4 x 16 + 2048 x 4 + 2048 = 12,368; LAuReL 2 x 2048 x 64 + 2048 = 264,192: 112,484,944.
  // Globals: token_embd 262,400 x 2048 = 537,395,200; per-layer table 262,144 x 8960 = 2,348,810,240; its
  // projection 2048 x 8960 = 18,350,080; its norm 256; AltUp 2 x 3 x 2048^2 = 25,165,824; final norm 2048.
  CHECK(parameter_count(e4b) == 35ULL * 112484944 + 537395200 + 2348810240 + 18350080 + 256 + 25165824 + 2048);
  CHECK(parameter_count(e4b) == 6866696688ULL);
  // Towers: USM audio 681,348,640 + MobileNet-V5 294,126,912 + the two embedders 3,345,408 + 4,460,544.
  CHECK(fixtures::checkpoint_term(e4b, "audio_tower") == 681348640ULL);
  CHECK(checkpoint_parameter_count(e4b) == 6866696688ULL + 983281504ULL);
  CHECK(checkpoint_parameter_count(e4b) == e4b.params_exact);
  CHECK(e4b.params_exact == 7849978192ULL);
  // Active: the per-layer table is a lookup of one row per token, never multiplied.
  CHECK(active_parameter_count(e4b) == 6866696688ULL - 2348810240ULL);

  const ModelSpec& e2b = fixtures::spec("gemma-3n-e2b");
  // Per layer as E4B with an MLP of 3 x 2048 x 8192 = 50,331,648: 62,153,296. Globals: the per-layer table
  // 262,144 x 7680 = 2,013,265,920 and its projection 2048 x 7680 = 15,728,640, the rest as E4B.
  CHECK(parameter_count(e2b) == 30ULL * 62153296 + 537395200 + 2013265920 + 15728640 + 256 + 25165824 + 2048);
  CHECK(checkpoint_parameter_count(e2b) == 5439438272ULL);
  CHECK(checkpoint_parameter_count(e2b) == e2b.params_exact);
}

TEST_CASE("Gemma 3n KV cache: only the first 20 layers cache, the shared ones read theirs", "[model][gemma3n][kv]") {
  const ModelSpec& m = fixtures::spec("gemma-3n-e4b");
  const KvShape k = kv_shape(m);
  // Full attention where (i + 1) mod 5 == 0: layers 4, 9, 14, 19 cache; 24, 29, 34 share. Sliding: 16 cache, 12 share.
  CHECK(k.full_layers == 4);
  CHECK(k.sliding_layers == 16);
  CHECK(k.shared_full_layers == 3);
  CHECK(k.shared_sliding_layers == 12);
  CHECK(k.window_tokens == 512);
  // 2 x 2 KV heads x 256 = 1024 elements per token per layer; 32,768 tokens: 4 x 32,768 + 16 x 512 = 139,264
  // tokens held, 142,606,336 elements (285,212,672 bytes at f16).
  CHECK(kv_cache_elements_per_token_full(m) == 20 * 1024);
  CHECK(kv_cache_elements(m, 32768, 1) == 1024ULL * 139264);
  const KvShape read = attention_reads(k);
  CHECK(read.full_layers == 7);
  CHECK(read.sliding_layers == 28);
  CHECK(read.shared_full_layers + read.shared_sliding_layers == 0);
}

TEST_CASE("Gemma 3n estimate: sharing saves cache memory, not reads, the per-layer table is not read per step",
          "[analysis][gemma3n]") {
  const PreparedScenario ps = prepare_scenario(fixtures::catalog(), fixtures::request("rtx4090", "gemma-3n-e4b", "bf16", "llama.cpp"));
  // The per-layer table in BF16: 2,348,810,240 x 2 bytes.
  CHECK(ps.scenario.weights.lookup_table_bytes == Approx(4697620480.0));
  CHECK(ps.scenario.weights.bytes_looked_up() == Approx(4697620480.0));  // tied: token_embd is the head, read in full
  const Analysis shared = analyze(ps.scenario);

  // The same model with every layer caching: the reads and the attention math are the same (every
  // layer attends to a cache of the same size), the cache memory 35 / 20 times larger at any context
  // (both kinds scale alike: 7 / 4 full and 28 / 16 sliding layers).
  Scenario own = ps.scenario;
  own.model.num_kv_shared_layers = 0;
  const Analysis unshared = analyze(own);
  CHECK(shared.decode.bytes == Approx(unshared.decode.bytes));
  CHECK(shared.decode.flops == Approx(unshared.decode.flops));
  CHECK(shared.prefill.flops == Approx(unshared.prefill.flops));
  CHECK(unshared.memory.kv_cache_bytes == Approx(shared.memory.kv_cache_bytes * 35.0 / 20.0));

  // A step reads every weight but the lookup table: counting the table as read adds exactly its bytes.
  Scenario read_all = ps.scenario;
  read_all.weights.lookup_table_bytes = 0;
  CHECK(analyze(read_all).decode.bytes - shared.decode.bytes == Approx(4697620480.0));
}

TEST_CASE("Gemma 3n config.json import gives the preset's text model", "[model][gemma3n][hf]") {
  const nlohmann::json cfg = fixtures::hf_config("gemma-3n-e4b-it.json");
  const ModelSpec imported = model_from_hf_config(cfg, "gemma-3n-e4b-it.json");
  CHECK(imported.model_type == "gemma3n_text");
  CHECK(imported.intermediate_size == 16384);  // a per-layer list of equal widths
  CHECK(imported.num_kv_shared_layers == 15);
  CHECK(parameter_count(imported) == parameter_count(fixtures::spec("gemma-3n-e4b")));
  CHECK(kv_shape(imported).full_layers == 4);
  // The towers are not described by the config: the import counts the text model and says so.
  CHECK(checkpoint_parameter_count(imported) == parameter_count(imported));

  // E2B's shape through the class defaults it differs from.
  nlohmann::json e2b = cfg;
  e2b["text_config"]["num_hidden_layers"] = 30;
  e2b["text_config"]["intermediate_size"] = 8192;
  e2b["text_config"]["num_kv_shared_layers"] = 10;
  e2b["text_config"].erase("layer_types");
  CHECK(parameter_count(model_from_hf_config(e2b, "e2b.json")) == parameter_count(fixtures::spec("gemma-3n-e2b")));

  nlohmann::json mixed = cfg;
  mixed["text_config"]["intermediate_size"][3] = 8192;
  CHECK_THROWS_WITH(model_from_hf_config(mixed, "mixed.json"),
                    Catch::Contains("mixed.json: text_config.intermediate_size: per-layer FFN widths that differ"));
}

TEST_CASE("Gemma 3n preset fields are checked", "[model][gemma3n]") {
  const nlohmann::json good = to_json(fixtures::spec("gemma-3n-e2b"));
  const auto problem_at = fixtures::first_problem_pointer;
  CHECK(problem_at(good).empty());
  nlohmann::json bad = good;
  bad["altup_num_inputs"] = 1;
  CHECK(problem_at(bad) == "/altup_num_inputs");
  bad = good;
  bad["num_kv_shared_layers"] = 27;  // layers 0-2 are all sliding: no full layer to read from
  CHECK(problem_at(bad) == "/num_kv_shared_layers");
  bad = good;
  bad["num_kv_shared_layers"] = 31;
  CHECK(problem_at(bad) == "/num_kv_shared_layers");
  bad = good;
  bad["model_type"] = "gemma3_text";
  CHECK(problem_at(bad) == "/hidden_size_per_layer_input");
  bad = good;
  bad.erase("encoder_tower_params");
  CHECK(problem_at(bad) == "/checkpoint_includes");
  bad = good;
  bad["encoder_tower_params"]["audio_tower"] = 0;
  CHECK(problem_at(bad) == "/encoder_tower_params/audio_tower");
  bad = good;
  bad["laurel_rank"] = (1ULL << 25);
  CHECK(problem_at(bad) == "/laurel_rank");
}
