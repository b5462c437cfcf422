// SPDX-License-Identifier: MIT
// The serving simulation beside a rule whose effect shows only under load (disaggregated-prefill,
// chunked-prefill).
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

namespace {

std::optional<LoadComparison> compare_kind(const std::string& kind, const ScenarioRequest& r, std::string& why) {
  const PreparedScenario p = prepare_scenario(catalog(), r);
  const Analysis a = analyze(p.scenario);
  return compare_under_load(kind, catalog(), r, p, a, why);
}

}  // namespace

TEST_CASE("chunked prefill under load: mixing prompt chunks into decode steps breaks the prefill convoy", "[advisor][under_load]") {
  // SGLang's default scheduler runs a waiting prompt as a prefill-only step and pauses decoding;
  // 16 clients of 8192-token prompts then finish and resubmit together, each prompt queueing behind
  // the others' prefills (about 0.2 s each on an H100), so TTFT grows to seconds. Mixed steps
  // decode while prompts are read, and the requests stay spread out.
  ScenarioRequest r = request("h100", "llama-3.1-8b", "", "sglang");
  r.batch = "16";
  r.prompt_tokens = 8192;
  std::string why;
  const auto c = compare_kind("chunked-prefill", r, why);
  REQUIRE(c);
  CHECK(c->kind == "chunked-prefill");
  CHECK(c->setting == "1 GPU, a closed loop of 16 clients, prompt 8192 + gen 128 tokens");
  CHECK(c->base_label == "prefill-only steps, decode paused (the engine's default)");
  CHECK(c->alt_label == "prompt chunks mixed into decode steps");
  CHECK(c->alt.ttft_s.p90 < 0.5 * c->base.ttft_s.p90);
  // On vLLM, mixing is the default, and the label says so on the other side.
  const auto v = compare_kind("chunked-prefill", request("h100", "llama-3.1-8b", "", "vllm"), why);
  REQUIRE(v);
  CHECK(v->alt_label == "prompt chunks mixed into decode steps (the engine's default)");
}

TEST_CASE("the load comparisons a rule may name", "[advisor][under_load]") {
  CHECK(is_load_comparison("disaggregate"));
  CHECK(is_load_comparison("chunked-prefill"));
  CHECK_FALSE(is_load_comparison("expert-parallel"));  // computed by the one-batch estimate (expert_layout_test.cpp)
  CHECK(load_comparison_names() == "disaggregate, chunked-prefill");
}


TEST_CASE("the serving simulation keeps the scenario's expert-parallel layout", "[advisor][under_load]") {
  // Eight attention ranks with the experts sharded eight ways: each simulated worker is that
  // layout (8 GPUs), not one GPU of tensor parallel 1.
  ScenarioRequest r = request("h200", "deepseek-v3", "", "vllm");
  r.gpus = 8;
  r.dp_attention = 8;
  r.ep = 8;
  r.batch = "64";
  std::string why;
  const auto c = compare_kind("disaggregate", r, why);
  REQUIRE(c);
  CHECK(why.empty());
  CHECK(c->setting == "16 GPUs, a closed loop of 128 clients, prompt 512 + gen 128 tokens");
  CHECK(c->base_label == "aggregated: 2 workers x tp 1 pp 1 dp-attention 8 ep 8");
}
