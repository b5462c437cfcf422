// SPDX-License-Identifier: MIT
// Speculative decoding by its mechanism: expected tokens per step from an
// acceptance rate, the drafter's computed cost, the number of drafts that
// decodes fastest at this batch, the draft/target pairing, and the how-to
// printing the number the gain was computed with.
#include <catch2/catch.hpp>

#include <string>

#include "optadvisor/advisor/playbook.hpp"
#include "optadvisor/advisor/rules.hpp"
#include "optadvisor/advisor/transforms.hpp"
#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "fixtures.hpp"

using namespace optadvisor;
using fixtures::catalog;

namespace {

const RuleBook& book() {
  static const RuleBook b = RuleBook::load(catalog());
  return b;
}

double assumption(const std::string& id) { return book().assumptions().at(id).value; }

/// The rule's single speculative_decoding step applied to `r`, with its "@" parameters resolved.
TransformResult speculate(const std::string& rule_id, const ScenarioRequest& r) {
  const Rule& rule = book().resolve(rule_id);
  TransformStep step = rule.transform.back();
  for (auto& [key, v] : step.params.items()) {
    if (v.is_string() && v.get<std::string>().rfind('@', 0) == 0) v = assumption(v.get<std::string>().substr(1));
    if (v.is_object())
      for (auto& [engine, x] : v.items())
        if (x.is_string()) x = assumption(x.get<std::string>().substr(1));
  }
  const PreparedScenario p = prepare_scenario(catalog(), r);
  const Analysis a = analyze(p.scenario);
  return apply_transform(step, TransformInput{catalog(), r, p, a});
}

ScenarioRequest request(const std::string& hw, const std::string& model, const std::string& engine, const std::string& batch) {
  ScenarioRequest r = fixtures::request(hw, model, "", engine);
  r.batch = batch;
  r.prompt_tokens = 128;
  r.gen_tokens = 256;
  return r;
}

}  // namespace

TEST_CASE("expected tokens per step: 1 + a + ... + a^k", "[advisor][speculative]") {
  // a = 0.5, k = 3: 1 + 0.5 + 0.25 + 0.125 = 1.875.
  CHECK(expected_accepted_tokens(0.5, 3) == Approx(1.875));
  // Every draft accepted: k + 1.
  CHECK(expected_accepted_tokens(1.0, 7) == Approx(8.0));
  // No draft accepted: the target's own token only.
  CHECK(expected_accepted_tokens(0.0, 7) == Approx(1.0));
  // The data's derivations: vLLM's 3.53 tokens at 7 drafts for a = 0.743; Spec-Bench's Medusa 2.39 at 4 heads for 0.62.
  CHECK(expected_accepted_tokens(assumption("spec_rate_eagle_chain"), 7) == Approx(3.53).epsilon(0.01));
  CHECK(expected_accepted_tokens(assumption("spec_rate_medusa"), 4) == Approx(2.39).epsilon(0.01));
}

TEST_CASE("the number of drafts is the one that decodes fastest at this batch", "[advisor][speculative]") {
  const ScenarioRequest one = request("h100-sxm", "llama-3.1-8b", "vllm", "1");
  const TransformResult t = speculate("speculative-eagle", one);
  REQUIRE(t.request);
  const Speculation& s = t.request->speculation;
  REQUIRE(s.draft_tokens >= 1);
  CHECK(s.accepted_tokens == Approx(expected_accepted_tokens(assumption("spec_rate_eagle_chain"), s.draft_tokens)));
  // Its neighbours decode no faster.
  auto decode_time = [&](uint32_t k) {
    ScenarioRequest r = *t.request;
    r.speculation.draft_tokens = k;
    r.speculation.accepted_tokens = expected_accepted_tokens(assumption("spec_rate_eagle_chain"), k);
    r.speculation.draft_overhead = s.draft_overhead / s.draft_tokens * k;  // one-layer drafter: linear in k
    return analyze(prepare_scenario(catalog(), r).scenario).decode.time_s;
  };
  const double best = decode_time(s.draft_tokens);
  if (s.draft_tokens > 1) CHECK(decode_time(s.draft_tokens - 1) >= best);
  if (s.draft_tokens < assumption("spec_max_drafts")) CHECK(decode_time(s.draft_tokens + 1) >= best);
  // At batch 256 verification is compute-bound, so fewer drafts pay.
  const TransformResult big = speculate("speculative-eagle", request("h100-sxm", "llama-3.1-8b", "vllm", "256"));
  REQUIRE(big.request);
  CHECK(big.request->speculation.draft_tokens < s.draft_tokens);
}

TEST_CASE("SGLang verifies its drafted tree whole: the depth stays below the tree's size", "[advisor][speculative]") {
  // SGLang's how-to sets --speculative-num-draft-tokens 8: each step verifies 8 tokens per sequence,
  // so the depth searched is 1-7 (a depth of 8 plus the target's own token would not fit the tree).
  const TransformResult t = speculate("speculative-eagle", request("h100-sxm", "llama-3.1-8b", "sglang", "1"));
  REQUIRE(t.request);
  const Speculation& s = t.request->speculation;
  CHECK(s.verify_tokens == 8);
  CHECK(s.verified_tokens() == 8.0);
  REQUIRE(s.draft_tokens >= 1);
  CHECK(s.draft_tokens <= 7);
  // At batch 1 the deepest tree pays: 1 + 0.91 + ... + 0.91^7 = 5.89 tokens per step.
  CHECK(s.draft_tokens == 7);
  CHECK(s.accepted_tokens == Approx(5.89).epsilon(0.005));
  // A chain (vLLM) verifies its drafts plus one.
  const TransformResult chain = speculate("speculative-eagle", request("h100-sxm", "llama-3.1-8b", "vllm", "1"));
  REQUIRE(chain.request);
  CHECK(chain.request->speculation.verify_tokens == 0);
  CHECK(chain.request->speculation.verified_tokens() == chain.request->speculation.draft_tokens + 1.0);
  // A tree too small for its drafts is refused as bad input.
  ScenarioRequest bad = *t.request;
  bad.speculation.verify_tokens = bad.speculation.draft_tokens;
  CHECK_THAT(fixtures::bad_input_message([&] { prepare_scenario(catalog(), bad); }),
             Catch::Matchers::Contains("a tree of 7 verified tokens cannot hold 7 drafts"));
}

TEST_CASE("the EAGLE drafter costs one layer and its output layer per drafted token", "[advisor][speculative]") {
  const ScenarioRequest r = request("h100-sxm", "llama-3.1-8b", "vllm", "1");
  const TransformResult t = speculate("speculative-eagle", r);
  REQUIRE(t.request);
  // Llama-3.1-8B: (8.03e9 - 2 x 128256 x 4096 embeddings) / 32 layers = 218e6 per layer, plus 4096 x 32000 = 131e6
  // for the head: 349e6 parameters, 0.698 GB in 16-bit.
  CHECK(t.request->speculation.draft_memory_bytes == Approx(0.698e9).epsilon(0.01));
  CHECK(t.request->speculation.draft_overhead > 0);
}

TEST_CASE("draft-model acceptance depends on the pairing", "[advisor][speculative]") {
  // Llama-3.1-70B drafts with Llama-3.2-1B, its own family; Llama-2-13B with TinyLlama, another family.
  const TransformResult same = speculate("speculative-draft-model", request("h100-sxm", "llama-3.1-70b", "vllm", "1"));
  ScenarioRequest other_request = request("a100-sxm-80gb", "llama-2-13b", "vllm", "1");
  other_request.quant = "hf-f16";
  const TransformResult other = speculate("speculative-draft-model", other_request);
  REQUIRE(same.request);
  REQUIRE(other.request);
  const Speculation& a = same.request->speculation;
  const Speculation& b = other.request->speculation;
  CHECK(a.accepted_tokens == Approx(expected_accepted_tokens(assumption("spec_rate_draft_model_same_family"), a.draft_tokens)));
  CHECK(b.accepted_tokens == Approx(expected_accepted_tokens(assumption("spec_rate_draft_model"), b.draft_tokens)));
  CHECK(a.accepted_tokens > b.accepted_tokens);
}

TEST_CASE("the how-to prints the number of drafts the gain was computed with", "[advisor][speculative]") {
  AdviceRequest r;
  r.goal = Goal::kLatency;
  r.scenario = request("h100-sxm", "llama-3.1-8b", "vllm", "1");
  const Advice a = advise(catalog(), book(), r);
  const Recommendation* eagle = nullptr;
  for (const auto& rec : a.recommendations)
    if (rec.rule->id == "speculative-eagle") eagle = &rec;
  REQUIRE(eagle);
  const uint32_t k = eagle->after.inference().request.speculation.draft_tokens;
  CHECK(eagle->how.find("\"num_speculative_tokens\": " + std::to_string(k) + "}") != std::string::npos);
}

TEST_CASE("MTP drafts with the checkpoint's own layers, one token per MTP layer", "[advisor][speculative]") {
  ScenarioRequest r = request("h100-sxm", "glm-4.5-air", "vllm", "1");
  r.quant = "fp8";
  r.tp = 2;
  const TransformResult t = speculate("speculative-mtp", r);
  REQUIRE(t.request);
  // GLM-4.5-Air ships one MTP layer: one draft per step, 1 + 0.875 tokens.
  CHECK(t.request->speculation.draft_tokens == 1);
  CHECK(t.request->speculation.accepted_tokens == Approx(1 + assumption("spec_rate_mtp")));
  // Its weights are in the checkpoint already.
  CHECK(t.request->speculation.draft_memory_bytes == 0);
  // A model without MTP layers: the transform says so.
  const TransformResult none = speculate("speculative-mtp", request("h100-sxm", "llama-3.1-8b", "vllm", "1"));
  CHECK_FALSE(none.request);
  CHECK(none.not_applicable == "Llama-3.1-8B ships no multi-token-prediction layers");
}
