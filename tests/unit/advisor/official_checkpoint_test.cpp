// SPDX-License-Identifier: MIT
// Official checkpoints: a preset's releases in other weight formats (Qwen/Qwen3-32B-FP8 beside the
// BF16 release), the names they belong to, and the FP8 rule taking them before a self-made FP8.
#include <catch2/catch.hpp>

#include <algorithm>

#include "optadvisor/advisor/playbook.hpp"
#include "optadvisor/advisor/rules.hpp"
#include "optadvisor/advisor/transforms.hpp"
#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/catalog/model.hpp"
#include "fixtures.hpp"

using namespace optadvisor;
using fixtures::catalog;
using nlohmann::json;

namespace {

/// quantize_weights(quant fp8) on `model` in BF16 on one H100 SXM under vLLM.
TransformResult fp8_of(const std::string& model) {
  const ScenarioRequest r = fixtures::request("h100-sxm", model, "", "vllm");
  const PreparedScenario p = prepare_scenario(catalog(), r);
  const Analysis a = analyze(p.scenario);
  return apply_transform(TransformStep{"quantize_weights", {{"quant", "fp8"}}}, TransformInput{catalog(), r, p, a});
}

/// The problems model_from_json() reports for qwen3-32b's preset with `releases`.
std::vector<Problem> release_problems(const json& releases) {
  json j = to_json(catalog().resolve_model("qwen3-32b"));
  j["aliases"] = {"qwen3-32b-base"};
  j["releases"] = releases;
  std::vector<Problem> problems;
  model_from_json(j, problems);
  return problems;
}

bool has_problem(const std::vector<Problem>& problems, const std::string& pointer, const std::string& text) {
  return std::any_of(problems.begin(), problems.end(),
                     [&](const Problem& p) { return p.pointer == pointer && p.message.find(text) != std::string::npos; });
}

}  // namespace

TEST_CASE("official releases: the one of the name asked for", "[model][advisor]") {
  const ModelSpec& qwen35 = catalog().resolve_model("qwen3.5-27b");
  REQUIRE(official_release(qwen35, "fp8-block", "qwen3.5-27b"));
  CHECK(official_release(qwen35, "fp8-block", "qwen3.5-27b")->repo == "Qwen/Qwen3.5-27B-FP8");
  CHECK(official_release(qwen35, "fp8-block", "Qwen3.6-27B")->repo == "Qwen/Qwen3.6-27B-FP8");  // the alias, any case
  CHECK_FALSE(official_release(qwen35, "fp8", "qwen3.5-27b"));                                     // no per-channel release
  const ModelSpec& qwen8 = catalog().resolve_model("qwen3-8b");
  CHECK(official_release(qwen8, "fp8-block", "qwen3-8b"));
  CHECK_FALSE(official_release(qwen8, "fp8-block", "qwen3-8b-base"));  // Qwen ships no FP8 base model
  const ModelSpec& qwen32 = catalog().resolve_model("qwen3-32b");
  CHECK(official_release(qwen32, "fp8-block", "")->repo == "Qwen/Qwen3-32B-FP8");  // a release for every name
}

TEST_CASE("every official release names a weight format the catalog has", "[model]") {
  std::size_t releases = 0;
  for (const ModelSpec& m : catalog().models()) {
    for (const OfficialRelease& r : m.releases) {
      INFO(m.id << " " << r.repo);
      CHECK(catalog().quant().find(r.format) != nullptr);
      ++releases;
    }
  }
  CHECK(releases >= 25);  // 23 presets: Qwen3, Qwen3.5 (and 3.6), GLM-4.5 to GLM-5
}

TEST_CASE("the FP8 rule takes the publisher's FP8 checkpoint where there is one", "[advisor]") {
  SECTION("Qwen3-32B: block-scaled FP8, the official repository named") {
    const TransformResult t = fp8_of("qwen3-32b");
    REQUIRE(t.request);
    CHECK(t.request->quant == "fp8-block");
    REQUIRE(t.notes.size() == 1);
    CHECK(t.notes.front() == "weights: hf-bf16 -> fp8-block (the official checkpoint Qwen/Qwen3-32B-FP8)");
  }
  SECTION("Qwen3.6-27B, asked for by its alias of Qwen3.5-27B's shape: its own repository") {
    const TransformResult t = fp8_of("qwen3.6-27b");
    REQUIRE(t.request);
    CHECK(t.notes.front() == "weights: hf-bf16 -> fp8-block (the official checkpoint Qwen/Qwen3.6-27B-FP8)");
  }
  SECTION("GLM-4.5-Air: zai-org's compressed-tensors FP8, per-channel scales") {
    const TransformResult t = fp8_of("glm-4.5-air");
    REQUIRE(t.request);
    CHECK(t.request->quant == "fp8");
    CHECK(t.notes.front() == "weights: hf-bf16 -> fp8 (the official checkpoint zai-org/GLM-4.5-Air-FP8)");
  }
  SECTION("no official FP8 release: the rule's own per-channel FP8") {
    for (const char* model : {"llama-3.1-8b", "qwen3-8b-base"}) {
      const TransformResult t = fp8_of(model);
      REQUIRE(t.request);
      CHECK(t.request->quant == "fp8");
      CHECK(t.notes.front() == "weights: hf-bf16 -> fp8");
    }
  }
}

TEST_CASE("the FP8 recommendation's how-to serves the official checkpoint", "[advisor]") {
  const auto how_for = [](const std::string& model) {
    AdviceRequest req;
    req.scenario = fixtures::request("h100-sxm", model, "", "vllm");
    req.goal = Goal::kLatency;
    const Advice advice = advise(catalog(), fixtures::rule_book(), req);
    for (const Recommendation& r : advice.recommendations)
      if (r.rule->id == "fp8-weights") return r.how;
    return std::string("(no fp8-weights recommendation)");
  };
  CHECK(how_for("qwen3-32b").rfind("vllm serve Qwen/Qwen3-32B-FP8 (the publisher's FP8 checkpoint", 0) == 0);
  CHECK(how_for("llama-3.1-8b").rfind("vllm serve MODEL --quantization fp8", 0) == 0);
}

TEST_CASE("official releases: bad entries are named", "[model]") {
  CHECK(release_problems(json::array({{{"format", "fp8-block"}, {"repo", "Qwen/Qwen3-32B-FP8"}, {"names", {"qwen3-32b"}}}})).empty());
  CHECK(has_problem(release_problems(json::array({{{"format", "fp8-block"}, {"repo", "Qwen3-32B-FP8"}}})), "/releases/0",
                    "\"repo\": \"Org/Name\""));
  CHECK(has_problem(release_problems(json::array({{{"format", "fp8-block"}, {"repo", "a/b/c"}}})), "/releases/0", "\"repo\""));
  CHECK(has_problem(release_problems(json::array({{{"format", "fp8-block"}, {"repo", "Qwen/X"}, {"names", {"qwen3-33b"}}}})),
                    "/releases/0/names/0", "the preset's id or one of its aliases"));
  CHECK(has_problem(release_problems(json::array({{{"format", "fp8-block"}, {"repo", "Qwen/X"}, {"names", {"qwen3-32b"}}},
                                                  {{"format", "fp8-block"}, {"repo", "Qwen/Y"}}})),
                    "/releases/1", "a name with a second release in 'fp8-block'"));
  CHECK(has_problem(release_problems(json::object()), "/releases", "expected an array"));
}

TEST_CASE("an estimate says where its weights are the publisher's checkpoint, or could be", "[analysis]") {
  const auto notes_of = [](const std::string& model, const std::string& quant) {
    ScenarioRequest r = fixtures::request("h100-sxm", model, quant, "vllm");
    const std::vector<std::string> notes = prepare_scenario(catalog(), r).notes;
    std::vector<std::string> official;
    for (const auto& n : notes)
      if (n.find("official checkpoint") != std::string::npos || n.find("publisher ships") != std::string::npos) official.push_back(n);
    return official;
  };
  CHECK(notes_of("qwen3-32b", "fp8-block") == std::vector<std::string>{"weights: the official checkpoint Qwen/Qwen3-32B-FP8"});
  CHECK(notes_of("qwen3-32b", "fp8") ==
        std::vector<std::string>{"weights: the publisher ships this model as Qwen/Qwen3-32B-FP8 in fp8-block (--quant fp8-block sizes that checkpoint)"});
  CHECK(notes_of("qwen3-32b", "hf-bf16").empty());     // BF16 is the main release
  CHECK(notes_of("qwen3-8b-base", "fp8").empty());     // no FP8 base model
  CHECK(notes_of("llama-3.1-8b", "fp8").empty());      // Meta ships no FP8 Llama-3.1-8B
}
