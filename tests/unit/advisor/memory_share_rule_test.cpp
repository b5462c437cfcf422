// SPDX-License-Identifier: MIT
// The memory-share rule: vLLM's gpu_memory_utilization (SGLang's mem_fraction_static) raised to
// what a scenario just over the engine's share needs, leaving the assumed bytes outside it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "optadvisor/advisor/playbook.hpp"
#include "optadvisor/advisor/rules.hpp"
#include "optadvisor/advisor/transforms.hpp"
#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "fixtures.hpp"

using namespace optadvisor;
using fixtures::catalog;

namespace {

/// raise_memory_share with `free_bytes` left outside the share.
TransformResult raise(const ScenarioRequest& r, double free_bytes) {
  const PreparedScenario p = prepare_scenario(catalog(), r);
  const Analysis a = analyze(p.scenario);
  TransformStep step{"raise_memory_share", {{"free_bytes", free_bytes}}};
  return apply_transform(step, TransformInput{catalog(), r, p, a});
}

/// Qwen3-32B BF16 on one H100 SXM under vLLM with a 40,960-token maximum length.
ScenarioRequest qwen_on_h100(const std::string& engine) {
  ScenarioRequest r = fixtures::request("h100-sxm", "qwen3-32b", "", engine);
  r.context_tokens = 40960;
  return r;
}

}  // namespace

TEST_CASE("raise-memory-share: the next hundredth of the share the scenario needs", "[advisor][memory]") {
  const ScenarioRequest r = qwen_on_h100("vllm");
  const Analysis before = fixtures::analyze_request(r);
  // Usable 79.65 GiB = 85.52 GB; vLLM claims 0.9 of it, 76.97 GB. The scenario needs 65.52 GB of
  // weights + 10.74 GB of KV (one 40,960-token sequence: 64 layers x 8 KV heads x 128 x 2 x 2 bytes
  // = 262,144 B/token) + 1.13 GB of activations + 0.38 GB runtime = 77.77 GB: a share of
  // 77.77 / 85.52 = 0.909, raised to 0.91. The cap with 4 GB left outside: 1 - 4 / 85.52 = 0.953.
  REQUIRE_FALSE(before.memory.fits);
  const double room = before.memory.limit_bytes / 0.9;
  CHECK(room == Approx(85.52e9).epsilon(1e-3));
  CHECK(before.memory.total_bytes / room == Approx(0.9094).epsilon(1e-3));
  const TransformResult t = raise(r, 4e9);
  REQUIRE(t.request);
  REQUIRE(t.request->engine_memory_share);
  CHECK(*t.request->engine_memory_share == Approx(0.91));
  REQUIRE(t.notes.size() == 1);
  CHECK(t.notes.front() == "vllm memory share: 0.90 -> 0.91 of each device's 85.5 GB");
  const Analysis after = fixtures::analyze_request(*t.request);
  CHECK(after.memory.fits);
  CHECK(after.memory.limit_bytes == Approx(0.91 * room));
  CHECK(after.memory.total_bytes == Approx(before.memory.total_bytes));  // the scenario itself is unchanged

  SECTION("SGLang's share starts lower, at 0.88") {
    const TransformResult s = raise(qwen_on_h100("sglang"), 4e9);
    REQUIRE(s.request);
    CHECK(s.notes.front().rfind("sglang memory share: 0.88 -> 0.91", 0) == 0);
  }
  SECTION("not above the share that leaves the assumed bytes free") {
    // 8 GB outside: at most 1 - 8 / 85.52 = 0.906, under the 0.91 needed.
    const TransformResult t8 = raise(r, 8e9);
    CHECK_FALSE(t8.request);
    CHECK(t8.not_applicable == "it needs 0.91 of each device's 85.5 GB, above the 0.906 that leaves 8.00 GB outside the engine");
  }
  SECTION("not where it fits in the share, nor for engines that claim no share") {
    CHECK(raise(fixtures::request("h100-sxm", "qwen3-32b", "", "vllm"), 4e9).not_applicable ==
          "it fits in the engine's share already (0.90)");
    CHECK(raise(qwen_on_h100("tensorrt-llm"), 4e9).not_applicable == "tensorrt-llm does not claim a share of memory up front");
  }
}

TEST_CASE("a memory share given (--gpu-memory-utilization) sizes the engine's share and its KV pool", "[analysis][memory]") {
  ScenarioRequest r = qwen_on_h100("vllm");
  const Analysis at_default = fixtures::analyze_request(r);
  r.engine_memory_share = 0.95;
  const Analysis raised = fixtures::analyze_request(r);
  // The share is of the same 85.52 GB: 0.95 / 0.9 of the limit.
  CHECK(raised.memory.limit_bytes == Approx(at_default.memory.limit_bytes * 0.95 / 0.9));
  CHECK(raised.memory.fits);
  CHECK_FALSE(at_default.memory.fits);
  // The KV pool gains the 5% (4.28 GB): at the default 640 tokens a sequence (167.8 MB at
  // 262,144 B/token), 4.28e9 / 167.8e6 = 25.5 sequences more.
  ScenarioRequest short_context = fixtures::request("h100-sxm", "qwen3-32b", "", "vllm");
  const auto before = static_cast<double>(fixtures::analyze_request(short_context).memory.max_batch);
  short_context.engine_memory_share = 0.95;
  const auto after = static_cast<double>(fixtures::analyze_request(short_context).memory.max_batch);
  CHECK(after - before == Approx(0.05 * 85.52e9 / (640 * 262144.0)).margin(1.0));
}

TEST_CASE("memory goal: the share raised before a second GPU for tensor parallel", "[advisor][memory][ranking]") {
  // Qwen3-32B BF16 needs 77.8 GB of vLLM's 77.0 GB on one H100 (101%). Both changes are lossless;
  // tensor parallel over 2 GPUs leaves more headroom (51%) but needs a second GPU, so the share
  // (0.90 -> 0.91, 100%) ranks first. Without the GPU count in the ranking TP would lead.
  AdviceRequest req;
  req.scenario = qwen_on_h100("vllm");
  req.goal = Goal::kMemory;
  const Advice advice = advise(catalog(), fixtures::rule_book(), req);
  std::vector<std::string> order;
  for (const Recommendation& r : advice.recommendations) order.push_back(r.rule->id);
  const auto at = [&](const std::string& id) { return std::find(order.begin(), order.end(), id) - order.begin(); };
  REQUIRE(at("raise-memory-share") < static_cast<long>(order.size()));
  REQUIRE(at("tensor-parallel-nvlink") < static_cast<long>(order.size()));
  CHECK(order.front() == "raise-memory-share");
  CHECK(at("raise-memory-share") < at("tensor-parallel-nvlink"));
  CHECK(at("tensor-parallel-nvlink") < at("fp8-weights"));  // quality class before GPUs: lossless first
}
