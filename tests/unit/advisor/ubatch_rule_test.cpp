// SPDX-License-Identifier: MIT
// The larger-ubatch rule: llama.cpp prefills a prompt in passes of -ub tokens; the rule tries the
// powers of two above today's and keeps the one that makes a request fastest within memory.
#include <catch2/catch.hpp>

#include "optadvisor/advisor/playbook.hpp"
#include "optadvisor/advisor/rules.hpp"
#include "optadvisor/advisor/transforms.hpp"
#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "fixtures.hpp"

using namespace optadvisor;
using fixtures::catalog;

namespace {

ScenarioRequest long_prompt(const std::string& hw, const std::string& model, const std::string& quant, int64_t prompt) {
  ScenarioRequest r = fixtures::request(hw, model, quant);
  r.prompt_tokens = prompt;
  return r;
}

double prefill_s(ScenarioRequest r, int64_t ubatch) {
  r.ubatch_tokens = ubatch;
  return analyze(prepare_scenario(catalog(), r).scenario).prefill.time_s;
}

}  // namespace

TEST_CASE("larger-ubatch: the fastest power of two up to the rule's limit", "[advisor][ubatch]") {
  auto apply = [](const ScenarioRequest& r) { return fixtures::apply_rule("larger-ubatch", r); };

  SECTION("Qwen3-30B-A3B, an 8,192-token prompt on an RTX 4090: 16 passes of 512 become 2 of 4096") {
    const ScenarioRequest r = long_prompt("rtx4090", "qwen3-30b-a3b", "q4_k_m", 8192);
    const Analysis before = analyze(prepare_scenario(catalog(), r).scenario);
    CHECK(before.prefill.passes == 16);  // ceil(8192 / 512)
    const TransformResult t = apply(r);
    REQUIRE(t.request);
    CHECK(t.request->ubatch_tokens == 4096);
    // It is the fastest of the ones tried, and faster than today's.
    const double chosen = prefill_s(r, 4096);
    CHECK(chosen < prefill_s(r, 2048));
    CHECK(chosen < prefill_s(r, 1024));
    CHECK(chosen < before.prefill.time_s);
    const Analysis after = analyze(prepare_scenario(catalog(), *t.request).scenario);
    CHECK(after.prefill.passes == 2);  // ceil(8192 / 4096)
    CHECK(after.memory.activation_bytes > before.memory.activation_bytes);  // the compute buffer grows with the pass
    REQUIRE(t.notes.size() == 1);
    CHECK(t.notes.front() == "prompt microbatch 512 -> 4096 tokens (llama.cpp -ub)");
  }
  SECTION("a microbatch beyond the prompt changes nothing: 1,500 tokens -> 2048, the smaller on a tie") {
    const TransformResult t = apply(long_prompt("rtx4090", "qwen3-30b-a3b", "q4_k_m", 1500));
    REQUIRE(t.request);
    CHECK(t.request->ubatch_tokens == 2048);
  }
  SECTION("where layers spill to host memory, the microbatch that makes the request fastest, not the prefill") {
    // Gemma-3-12B Q8_0 on a 12 GB RTX 4070 Ti, 8,192 + 1,024 tokens: at -ub 4096 the compute buffer
    // spills a fifth layer to host memory; its prefill is the fastest, but every decode step slows.
    ScenarioRequest r = long_prompt("rtx4070ti", "gemma-3-12b", "q8_0", 8192);
    r.gen_tokens = 1024;
    ScenarioRequest at2048 = r, at4096 = r;
    at2048.ubatch_tokens = 2048;
    at4096.ubatch_tokens = 4096;
    const Analysis a2048 = analyze(prepare_scenario(catalog(), at2048).scenario);
    const Analysis a4096 = analyze(prepare_scenario(catalog(), at4096).scenario);
    REQUIRE(a4096.memory.offloaded_layers > a2048.memory.offloaded_layers);
    REQUIRE(a4096.prefill.time_s < a2048.prefill.time_s);
    REQUIRE(a4096.request_latency_s > a2048.request_latency_s);
    const TransformResult t = apply(r);
    REQUIRE(t.request);
    CHECK(t.request->ubatch_tokens == 2048);
  }
  SECTION("not for a prompt that runs in one pass, nor for an engine that sizes its own prefill steps") {
    CHECK(apply(long_prompt("rtx4090", "qwen3-30b-a3b", "q4_k_m", 512)).not_applicable ==
          "the prompt already runs in one pass of up to 512 tokens");
    CHECK(apply(long_prompt("h100-sxm", "llama-3.1-8b", "fp8", 8192)).not_applicable.find("sizes its prefill steps itself") !=
          std::string::npos);
  }
}

TEST_CASE("the advisor offers larger microbatches for a long prompt on llama.cpp, with the -ub it computed", "[advisor][ubatch]") {
  AdviceRequest q;
  q.scenario = long_prompt("rtx4090", "qwen3-30b-a3b", "q4_k_m", 8192);
  q.goal = Goal::kLatency;
  const Advice a = advise(catalog(), fixtures::rule_book(), q);
  const Recommendation* found = nullptr;
  for (const auto& rec : a.recommendations)
    if (rec.rule->id == "larger-ubatch") found = &rec;
  REQUIRE(found);
  CHECK(a.base.facts.at("prefill.passes").get<double>() == 16);
  CHECK(a.base.facts.at("workload.ubatch_tokens").get<uint64_t>() == 512);
  CHECK(found->after.facts.at("workload.ubatch_tokens").get<uint64_t>() == 4096);
  CHECK(found->how.find("-ub 4096 -b 4096") != std::string::npos);
  CHECK(found->after.inference().analysis.prefill.time_s < a.base.inference().analysis.prefill.time_s);
}
