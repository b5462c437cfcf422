// SPDX-License-Identifier: MIT
// serve --speculative: the rule book's speculative-METHOD drafter set up by name on a scenario.
#include <algorithm>

#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "optadvisor/advisor/speculation.hpp"
#include "optadvisor/base/error.hpp"

using namespace optadvisor;

namespace {

ScenarioRequest llama_8b(const std::string& engine, const std::string& batch) {
  ScenarioRequest r;
  r.hardware = "h100-sxm";
  r.model.preset = "llama-3.1-8b";
  r.engine = engine;
  r.batch = batch;
  r.prompt_tokens = 1024;
  r.gen_tokens = 256;
  return r;
}

}  // namespace

TEST_CASE("speculation by name takes the rule's drafter and the draft count that decodes fastest at the batch") {
  const SpeculationChoice c = choose_speculation(fixtures::catalog(), fixtures::rule_book(), llama_8b("sglang", "1"), "eagle", {}, {});
  CHECK(c.speculation.method == "eagle");
  // SGLang verifies a tree of 8 tokens (the rule's verify_tokens), so at most 7 drafts; at batch 1 the most pays.
  CHECK(c.speculation.verified_tokens() == 8);
  CHECK(c.speculation.draft_tokens == 7);
  CHECK(c.speculation.draft_memory_bytes > 0);
  CHECK_FALSE(c.notes.empty());
}

TEST_CASE("speculation by name at a given draft count and acceptance") {
  const SpeculationChoice c = choose_speculation(fixtures::catalog(), fixtures::rule_book(), llama_8b("vllm", "8"), "eagle", 3u, 0.5);
  CHECK(c.speculation.draft_tokens == 3);
  // 1 + 0.5 + 0.25 + 0.125 = 1.875 tokens a step.
  CHECK(c.speculation.accepted_tokens == Approx(1.875));
}

TEST_CASE("speculation by name refuses what cannot run: an unknown method, a model without MTP layers, too many drafts") {
  const Catalog& catalog = fixtures::catalog();
  const RuleBook& book = fixtures::rule_book();
  CHECK_THROWS_WITH(choose_speculation(catalog, book, llama_8b("vllm", "1"), "lookahead", {}, {}),
                    Catch::Contains("unknown method 'lookahead'"));
  CHECK_THROWS_WITH(choose_speculation(catalog, book, llama_8b("vllm", "1"), "mtp", {}, {}),
                    Catch::Contains("ships no multi-token-prediction layers"));
  ScenarioRequest deepseek = llama_8b("sglang", "1");
  deepseek.hardware = "b200";
  deepseek.model.preset = "deepseek-v3";
  deepseek.quant = "nvfp4";
  deepseek.tp = 8;
  CHECK_THROWS_WITH(choose_speculation(catalog, book, deepseek, "mtp", 3u, {}), Catch::Contains("mtp drafts at most 1 here"));
}

TEST_CASE("speculation by name says when, at the batch, it decodes slower than none") {
  // 7 drafts accepted at 5% each: 1.05 tokens a step for verifying 8 tokens a sequence, at 256
  // sequences well past the ridge: slower. At batch 1 with the rule's rate it is not.
  const auto slower = [](const SpeculationChoice& c) {
    return std::any_of(c.notes.begin(), c.notes.end(), [](const std::string& n) { return n.find("slower than none") != std::string::npos; });
  };
  CHECK(slower(choose_speculation(fixtures::catalog(), fixtures::rule_book(), llama_8b("vllm", "256"), "eagle", 7u, 0.05)));
  CHECK_FALSE(slower(choose_speculation(fixtures::catalog(), fixtures::rule_book(), llama_8b("vllm", "1"), "eagle", {}, {})));
}
