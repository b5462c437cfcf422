// SPDX-License-Identifier: MIT
// The serving simulation beside a rule whose effect shows only under load (disaggregated-prefill,
// chunked-prefill, expert-parallel).
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

ScenarioRequest deepseek_on_eight_h200(const char* batch) {
  ScenarioRequest r = request("h200", "deepseek-v3", "", "vllm");
  r.gpus = 8;
  r.tp = 8;
  r.batch = batch;
  return r;
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

TEST_CASE("expert parallelism under load: tensor parallel wins at low concurrency, EP with DP attention at high",
          "[advisor][under_load]") {
  // DeepSeek-V3's MLA cache has one latent per token that tensor parallelism replicates on all 8
  // GPUs; with data-parallel attention each GPU holds its own sequences' latents once, and runs
  // attention for an eighth of the batch. At 16 clients a step is bound by weight reads
  // and the all-to-all costs more than the all-reduce it replaces, so tensor parallel's time per
  // token is lower; at 256 clients attention and KV reads dominate and EP + DP attention serves more.
  std::string why;
  const auto low = compare_kind("expert-parallel", deepseek_on_eight_h200("16"), why);
  REQUIRE(low);
  CHECK(low->base_label == "tensor parallel 8");
  CHECK(low->alt_label == "data-parallel attention 8 x expert parallel 8");
  CHECK(low->setting == "8 GPUs, a closed loop of 16 clients, prompt 512 + gen 128 tokens");
  CHECK(low->base.gpus == low->alt.gpus);
  CHECK(low->alt.tpot_s.mean > low->base.tpot_s.mean);
  const auto high = compare_kind("expert-parallel", deepseek_on_eight_h200("256"), why);
  REQUIRE(high);
  CHECK(high->alt.output_tokens_per_s > 1.2 * high->base.output_tokens_per_s);
  CHECK(high->alt.tpot_s.mean < high->base.tpot_s.mean);
}

TEST_CASE("expert parallelism under load needs routed experts and more than one GPU", "[advisor][under_load]") {
  std::string why;
  ScenarioRequest dense = request("h100", "llama-3.1-70b", "fp8", "vllm");
  dense.gpus = 2;
  dense.tp = 2;
  CHECK_FALSE(compare_kind("expert-parallel", dense, why));
  CHECK(why == "Llama-3.1-70B has no routed experts");
  ScenarioRequest one = request("h200", "gpt-oss-120b", "", "vllm");
  CHECK_FALSE(compare_kind("expert-parallel", one, why));
  CHECK(why == "one GPU per worker: nothing to spread the experts over (pass --tp)");
  CHECK(is_load_comparison("chunked-prefill"));
  CHECK(is_load_comparison("expert-parallel"));
  CHECK(load_comparison_names() == "disaggregate, chunked-prefill, expert-parallel");
}

TEST_CASE("the advisor shows the expert-parallel simulation for an MoE model on tensor-parallel GPUs", "[advisor][under_load]") {
  AdviceRequest q;
  q.scenario = deepseek_on_eight_h200("256");
  q.goal = Goal::kThroughput;
  const Advice a = advise(catalog(), fixtures::rule_book(), q);
  const Unquantified* u = nullptr;
  for (const auto& x : a.unquantified)
    if (x.rule->id == "expert-parallel") u = &x;
  REQUIRE(u);
  REQUIRE(u->under_load);
  CHECK(u->under_load->kind == "expert-parallel");
  CHECK(u->how == "vllm serve MODEL --tensor-parallel-size 1 --data-parallel-size {workload.tp:int} --enable-expert-parallel");
}
