// SPDX-License-Identifier: MIT
// Latent MoE and the Nemotron-H MTP module (Nemotron-3-Super-120B-A12B): the routed experts at the
// latent width between the block's latent projections, the MTP blocks of mtp_hybrid_override_pattern,
// the published total term by term, the active count, the config.json import and the refusals.
// Figures worked by hand in the comments.
#include <catch2/catch.hpp>

#include <string>

#include "fixtures.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/catalog/model.hpp"

using namespace optadvisor;

namespace {

/// The first problem model_from_json reports for `doc`, or "" when it accepts it.
std::string refusal(const nlohmann::json& doc) {
  std::vector<Problem> problems;
  if (model_from_json(doc, problems)) return "";
  REQUIRE_FALSE(problems.empty());
  return problems.front().pointer + ": " + problems.front().message;
}

}  // namespace

TEST_CASE("Nemotron-3-Super: latent-MoE tensors and the published total term by term", "[model][latent-moe]") {
  const ModelSpec& m = fixtures::spec("nemotron-3-super-120b-a12b");
  const std::vector<Tensor> t = model_tensors(m);
  // Block 1 'E': router and shared expert at the hidden width, experts at the latent width.
  REQUIRE(fixtures::find_tensor(t, "blk.1.ffn_latent_down.weight") != nullptr);
  CHECK(fixtures::find_tensor(t, "blk.1.ffn_latent_down.weight")->row_elements == 4096);
  CHECK(fixtures::find_tensor(t, "blk.1.ffn_latent_down.weight")->rows == 1024);
  CHECK(fixtures::find_tensor(t, "blk.1.ffn_latent_up.weight")->row_elements == 1024);
  CHECK(fixtures::find_tensor(t, "blk.1.ffn_latent_up.weight")->rows == 4096);
  CHECK(fixtures::find_tensor(t, "blk.1.ffn_up_exps.weight")->elements() == 1024ULL * 2688 * 512);
  CHECK(fixtures::find_tensor(t, "blk.1.ffn_down_exps.weight")->rows == 1024);
  CHECK(fixtures::find_tensor(t, "blk.1.ffn_gate_inp.weight")->row_elements == 4096);
  CHECK(fixtures::find_tensor(t, "blk.1.ffn_up_shexp.weight")->row_elements == 4096);
  CHECK(fixtures::find_tensor(t, "blk.1.exp_probs_b.bias") == nullptr);
  // The MTP blocks are not in the decoder's tensors.
  CHECK(fixtures::find_tensor(t, "blk.88.attn_norm.weight") == nullptr);

  // 'M' block: norm 4,096 + in_proj 4,096 x (8,192 + 10,240 + 128) + conv 10,240 x (4 + bias 1)
  // + A_log, D, dt_bias 3 x 128 + gated norm 8,192 + out_proj 8,192 x 4,096 = 109,640,064.
  // '*' block: norm + q 4,096 x 4,096 + k, v 4,096 x 256 each + o 4,096 x 4,096 = 35,655,680.
  // 'E' block: norm + router 4,096 x 512 + latent 2 x 4,096 x 1,024 + shared 2 x 4,096 x 5,376
  // = 54,530,048 dense, + experts 512 x 2 x 1,024 x 2,688 = 2,818,572,288 routed.
  // 40 M + 8 * + 40 E + embedding and lm_head 2 x 131,072 x 4,096 + final norm 4,096.
  CHECK(parameter_count(m) ==
        40ULL * 109640064 + 8ULL * 35655680 + 40ULL * (54530048 + 2818572288ULL) + 2ULL * 536870912 + 4096);
  CHECK(parameter_count(m) == 120668687360ULL);
  // MTP '*E': the attention block, the MoE block, enorm + hnorm + final norm 3 x 4,096 and
  // eh_proj 8,192 x 4,096; embedding and head shared.
  CHECK(fixtures::checkpoint_term(m, "mtp_layers_shared_embedding") == 35655680ULL + 54530048 + 2818572288ULL + 3 * 4096 + 2ULL * 4096 * 4096);
  CHECK(fixtures::checkpoint_term(m, "mtp_layers_shared_embedding") == 2942324736ULL);
  // 120,668,687,360 + 2,942,324,736 = the published 123,611,012,096, no residue.
  CHECK(m.params_unexplained == 0);
  CHECK(checkpoint_parameter_count(m) == 123611012096ULL);
  CHECK(checkpoint_parameter_count(m) == m.params_exact);
}

TEST_CASE("Nemotron-3-Super: the routed experts run in the latent, the projections always", "[model][latent-moe]") {
  const ModelSpec& m = fixtures::spec("nemotron-3-super-120b-a12b");
  // Dense: 120,668,687,360 - 40 x 2,818,572,288 routed = 7,925,795,840 (latent projections
  // included); routed active: 40 blocks x 22 experts x 2 x 1,024 x 2,688 = 4,844,421,120.
  CHECK(active_parameter_count(m) == 7925795840ULL + 40ULL * 22 * 2 * 1024 * 2688);
  CHECK(active_parameter_count(m) == 12770216960ULL);
  // Without the latent the same experts would read 4,096-wide tokens: 4 x the routed weights.
  ModelSpec wide = m;
  wide.moe_latent_size = 0;
  CHECK(parameter_count(wide) - parameter_count(m) == 40ULL * (3 * 2818572288ULL - 2 * 4096 * 1024));

  // The analysis derives the routed FLOPs from the tensors: FP8 on an H200, the routed share is
  // the 4,844,421,120 above and the rest 7,925,795,840.
  const Scenario s = prepare_scenario(fixtures::catalog(), fixtures::request("h200", m.id, "fp8", "vllm")).scenario;
  CHECK(s.weights.routed_active_params == Approx(4844421120.0).epsilon(1e-9));
  CHECK(s.weights.active_params == Approx(12770216960.0).epsilon(1e-9));
}

TEST_CASE("Nemotron-3-Super config.json imports to the preset's count", "[model][latent-moe][hf]") {
  // tests/data/hf/nemotron-3-super-120b-a12b.json: ai-dynamo/aiconfigurator @095f58a, the FP8
  // repository's config.json (the BF16 shape), time_step_limit removed (it holds Infinity).
  const ModelSpec imported = model_from_hf_config(fixtures::hf_config("nemotron-3-super-120b-a12b.json"), "super.json");
  const ModelSpec& p = fixtures::spec("nemotron-3-super-120b-a12b");
  CHECK(imported.moe_latent_size == 1024);
  CHECK(imported.mtp_hybrid_override_pattern == "*E");
  CHECK(imported.num_nextn_predict_layers == 1);
  CHECK(parameter_count(imported) == parameter_count(p));
  CHECK(active_parameter_count(imported) == active_parameter_count(p));
  CHECK(checkpoint_parameter_count(imported) == 123611012096ULL);
  CHECK(kv_cache_elements(imported, 65536, 1) == kv_cache_elements(p, 65536, 1));
  CHECK(recurrent_state_bytes(kv_shape(imported), 1) == Approx(recurrent_state_bytes(kv_shape(p), 1)));

  // Without moe_latent_size (null, as Nemotron-3-Nano states it) the experts read the hidden width.
  nlohmann::json cfg = fixtures::hf_config("nemotron-3-super-120b-a12b.json");
  cfg["moe_latent_size"] = nullptr;
  CHECK(model_from_hf_config(cfg, "super.json").moe_latent_size == 0);
  // MTP layers without their block pattern are refused, not guessed.
  cfg = fixtures::hf_config("nemotron-3-super-120b-a12b.json");
  cfg.erase("mtp_hybrid_override_pattern");
  CHECK_THROWS_WITH(model_from_hf_config(cfg, "super.json"), Catch::Contains("mtp_hybrid_override_pattern"));
  // A latent as wide as the hidden state is no latent.
  cfg = fixtures::hf_config("nemotron-3-super-120b-a12b.json");
  cfg["moe_latent_size"] = 4096;
  CHECK_THROWS_WITH(model_from_hf_config(cfg, "super.json"), Catch::Contains("narrower than hidden_size"));
}

TEST_CASE("malformed latent-MoE and MTP-pattern fields are refused", "[model][latent-moe]") {
  const nlohmann::json good = to_json(fixtures::spec("nemotron-3-super-120b-a12b"));
  CHECK(refusal(good).empty());
  nlohmann::json doc = good;
  doc["moe_latent_size"] = 0;
  CHECK(refusal(doc) == "/moe_latent_size: must be positive");
  doc = good;
  doc["moe_latent_size"] = 8192;
  CHECK(refusal(doc) == "/moe_latent_size: must be narrower than hidden_size");
  doc = good;
  doc["mtp_hybrid_override_pattern"] = "*X";
  CHECK(refusal(doc) == "/mtp_hybrid_override_pattern: expected only 'M', '*', '-' and 'E'");
  doc = good;
  doc.erase("mtp_hybrid_override_pattern");
  CHECK(refusal(doc) == "/num_nextn_predict_layers: Nemotron-H MTP layers need mtp_hybrid_override_pattern");
  doc = good;
  doc.erase("num_nextn_predict_layers");
  doc.erase("checkpoint_includes");
  CHECK(refusal(doc) == "/mtp_hybrid_override_pattern: needs num_nextn_predict_layers");
  // The latent is modelled on Nemotron-H 'E' blocks only: not on a gated-expert MoE.
  doc = to_json(fixtures::spec("qwen3-30b-a3b"));
  doc["moe_latent_size"] = 512;
  CHECK(refusal(doc) == "/moe_latent_size: the latent MoE is modelled for hybrid_override_pattern 'E' blocks only");
  // Nor on a dense model, nor an MTP pattern without the hybrid blocks.
  doc = to_json(fixtures::spec("llama-3.1-8b"));
  doc["moe_latent_size"] = 512;
  CHECK(refusal(doc) == "/moe_latent_size: a latent MoE needs num_experts");
  doc = to_json(fixtures::spec("deepseek-v3"));
  doc["mtp_hybrid_override_pattern"] = "*E";
  CHECK(refusal(doc) == "/mtp_hybrid_override_pattern: needs hybrid_override_pattern");
}
