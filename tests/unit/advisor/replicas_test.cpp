// SPDX-License-Identifier: MIT
// Replicas: copies of a tp x pp layout serving side by side, in the analysis (their rates add,
// a request's latency is one copy's) and in the advisor's replicas-over-tp rule.
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

ScenarioRequest h100_8b(int64_t tp, const std::string& batch) {
  ScenarioRequest r;
  r.hardware = "h100";
  r.model.preset = "llama-3.1-8b";
  r.tp = tp;
  r.batch = batch;
  return r;
}

}  // namespace

TEST_CASE("replicas add their serving rates and keep one copy's latency and memory", "[analysis][replicas]") {
  ScenarioRequest one = h100_8b(1, "16");
  ScenarioRequest four = one;
  four.replicas = 4;
  const Analysis a1 = analyze(prepare_scenario(catalog(), one).scenario);
  const PreparedScenario p4 = prepare_scenario(catalog(), four);
  const Analysis a4 = analyze(p4.scenario);
  CHECK(p4.scenario.workload.total_gpus() == 4);
  // 4 copies x 16 sequences x 128 tokens over one copy's request latency = 4 x one copy's rate.
  CHECK(a4.serving_tokens_per_s == Approx(4 * a1.serving_tokens_per_s));
  CHECK(a4.request_latency_s == a1.request_latency_s);
  CHECK(a4.memory.total_bytes == a1.memory.total_bytes);
  CHECK(a4.has_throughput);
  // At batch 1 the deployment still has a throughput to report once there are copies.
  ScenarioRequest single = h100_8b(1, "1");
  single.replicas = 2;
  CHECK(analyze(prepare_scenario(catalog(), single).scenario).has_throughput);
}

TEST_CASE("replicas-over-tp: the same GPUs as copies of the smallest layout that serves fastest", "[advisor][replicas]") {
  auto apply = [](const ScenarioRequest& r) { return fixtures::apply_rule("replicas-over-tp", r); };
  SECTION("tensor parallel 8 at --batch max: eight single-GPU copies, each filling its memory") {
    const ScenarioRequest r = h100_8b(8, "max");
    const TransformResult t = apply(r);
    REQUIRE(t.request);
    CHECK(t.request->tp == 1);
    CHECK(t.request->gpus == 1);
    CHECK(t.request->replicas == 8);
    CHECK(t.request->batch_or_default() == "max");
    // The copies out-serve the tensor-parallel layout (no all-reduces, each its own batch).
    const Analysis before = analyze(prepare_scenario(catalog(), r).scenario);
    const Analysis after = analyze(prepare_scenario(catalog(), *t.request).scenario);
    CHECK(after.serving_tokens_per_s > before.serving_tokens_per_s);
  }
  SECTION("a fixed batch is shared over the copies: 16 over 8 copies is 2 each") {
    const TransformResult t = apply(h100_8b(8, "16"));
    REQUIRE(t.request);
    const int64_t copies = t.request->replicas;
    CHECK(copies * t.request->tp == 8);
    CHECK(std::stoll(t.request->batch_or_default()) * copies >= 16);
    CHECK(std::stoll(t.request->batch_or_default()) * copies < 16 + copies);  // rounded up, never more than one extra each
  }
  SECTION("not on one GPU, and not where no smaller layout holds the model") {
    CHECK_FALSE(apply(h100_8b(1, "16")).request);
    ScenarioRequest big = h100_8b(2, "1");
    big.model.preset = "llama-3.1-70b";  // 141 GB of BF16 weights: one 80 GB H100 cannot hold them
    const TransformResult t = apply(big);
    CHECK_FALSE(t.request);
    CHECK(t.not_applicable.find("no smaller tensor-parallel degree") != std::string::npos);
  }
}
