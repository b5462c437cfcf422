// SPDX-License-Identifier: MIT
// The serving simulation beside a rule whose effect shows only under load (disaggregated-prefill).
#include <catch2/catch.hpp>

#include "optadvisor/advisor/playbook.hpp"
#include "optadvisor/advisor/under_load.hpp"
#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "fixtures.hpp"

using namespace optadvisor;
using fixtures::catalog;
using fixtures::request;

namespace {

std::optional<LoadComparison> compare(const ScenarioRequest& r, std::string& why) {
  const PreparedScenario p = prepare_scenario(catalog(), r);
  const Analysis a = analyze(p.scenario);
  return compare_under_load("disaggregate", catalog(), r, p, a, why);
}

}  // namespace

TEST_CASE("disaggregation under load: long prompts stop stalling the token streams", "[advisor][under_load]") {
  ScenarioRequest r = request("h100", "llama-3.1-8b", "", "vllm");
  r.batch = "16";
  r.prompt_tokens = 8192;
  std::string why;
  const auto c = compare(r, why);
  REQUIRE(c);
  CHECK(why.empty());
  // Two workers either way, a closed loop of both workers' batches (2 x 16 clients).
  CHECK(c->setting == "2 GPUs, a closed loop of 32 clients, prompt 8192 + gen 128 tokens");
  CHECK(c->base.gpus == c->alt.gpus);
  // Aggregated, every 8192-token prompt runs inside the decode steps; a decode worker of its own
  // only decodes, so its time per token is far lower (and prefill queues on the one prefill worker).
  CHECK(c->alt.tpot_s.p90 < 0.5 * c->base.tpot_s.p90);
  CHECK(c->alt.ttft_s.p90 > c->base.ttft_s.p90);
}

TEST_CASE("disaggregation under load is not simulated for an engine without a serving model", "[advisor][under_load]") {
  ScenarioRequest r = request("h100", "llama-3.1-8b", "", "llama.cpp");
  std::string why;
  CHECK_FALSE(compare(r, why));
  CHECK(why == "llama.cpp has no serving model");
  CHECK_FALSE(is_load_comparison("chunk"));
}

TEST_CASE("the advisor shows the simulation beside disaggregated-prefill", "[advisor][under_load]") {
  AdviceRequest q;
  q.scenario.hardware = "h100";
  q.scenario.model.preset = "llama-3.1-8b";
  q.goal = Goal::kThroughput;
  const Advice a = advise(catalog(), fixtures::rule_book(), q);
  const Unquantified* u = nullptr;
  for (const auto& x : a.unquantified)
    if (x.rule->id == "disaggregated-prefill") u = &x;
  REQUIRE(u);
  REQUIRE(u->under_load);
  CHECK(u->under_load->kind == "disaggregate");
  CHECK(u->under_load->base.output_tokens_per_s > 0);
  CHECK(u->under_load->alt.output_tokens_per_s > 0);
}
