// SPDX-License-Identifier: MIT
// The expert-offload rule: for an MoE model past the GPU, llama.cpp's --n-cpu-moe N with the
// fewest layers whose experts leave the GPU, in place of whole-layer offload.
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

bool fits(ScenarioRequest r, int64_t n_cpu_moe) {
  r.n_cpu_moe = n_cpu_moe;
  return analyze(prepare_scenario(catalog(), r).scenario).memory.fits;
}

}  // namespace

TEST_CASE("expert-offload: the fewest layers whose experts move to host memory so that the rest fits", "[advisor][offload]") {
  auto apply = [](const ScenarioRequest& r) { return fixtures::apply_rule("expert-offload", r); };

  SECTION("gpt-oss-120b (63.4 GB, 36 layers) on a 24 GB RTX 4090: N fits and N - 1 does not") {
    const ScenarioRequest r = fixtures::request("rtx4090", "gpt-oss-120b", "");
    const Analysis before = analyze(prepare_scenario(catalog(), r).scenario);
    REQUIRE(before.memory.offloaded_layers > 0);  // llama.cpp's -ngl spills whole layers
    const TransformResult t = apply(r);
    REQUIRE(t.request);
    REQUIRE(t.request->n_cpu_moe);
    const int64_t n = *t.request->n_cpu_moe;
    CHECK(n > 1);
    CHECK(n < 36);
    CHECK(fits(r, n));
    CHECK_FALSE(fits(r, n - 1));
    // Every layer's attention on the GPU, only the experts a token picks read from the host:
    // decode is faster than with the whole layers on the host.
    const Analysis after = analyze(prepare_scenario(catalog(), *t.request).scenario);
    CHECK(after.memory.offloaded_layers == 0);
    CHECK(after.decode.time_s < before.decode.time_s);
    REQUIRE(t.notes.size() == 1);
    CHECK(t.notes.front().find("(--n-cpu-moe " + std::to_string(n) + ")") != std::string::npos);
  }
  SECTION("not for a dense model, a model that fits, or unified memory") {
    CHECK(apply(fixtures::request("rtx4090", "llama-3.1-70b", "q4_k_m")).not_applicable == "Llama-3.1-70B has no routed experts");
    CHECK(apply(fixtures::request("rtx4090", "qwen3-30b-a3b", "q4_k_m")).not_applicable == "it fits on the GPU already");
    CHECK(apply(fixtures::request("m4-max-40c", "gpt-oss-120b", "")).not_applicable.find("keeps no experts in host memory") !=
          std::string::npos);
  }
}

TEST_CASE("the advisor ranks expert offload first for an MoE model past a GeForce card", "[advisor][offload]") {
  AdviceRequest q;
  q.scenario = fixtures::request("rtx4090", "gpt-oss-120b", "");
  q.goal = Goal::kLatency;
  const Advice a = advise(catalog(), fixtures::rule_book(), q);
  REQUIRE_FALSE(a.recommendations.empty());
  CHECK(a.recommendations.front().rule->id == "expert-offload");
  // The how-to carries the computed layer count.
  const Recommendation& first = a.recommendations.front();
  const auto layers = first.after.facts.at("workload.expert_offload_layers").get<int64_t>();
  CHECK(layers > 0);
  CHECK(first.how.find("--n-cpu-moe " + std::to_string(layers)) != std::string::npos);
}
