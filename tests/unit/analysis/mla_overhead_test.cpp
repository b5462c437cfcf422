// SPDX-License-Identifier: MIT
// llama.cpp's multi-head latent attention path costs a time per layer and pass beyond a GQA
// layer's (mla_layer_overhead in data/engines/llama.cpp.json), on every backend, for models with
// kv_lora_rank only; the estimate names it in its JSON (and text: the golden estimate_m2ultra_mla_model).
#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/analysis_json.hpp"
#include "optadvisor/analysis/prepare.hpp"

using namespace optadvisor;
using fixtures::catalog;
using fixtures::request;

namespace {

/// `model` under `engine` on `hw`, and the same scenario with the engine's MLA term removed.
struct WithAndWithout {
  Analysis with, without;
  double mla_s = 0;
};

WithAndWithout both(const std::string& hw, const std::string& model, const std::string& quant, const std::string& engine,
                    int64_t prompt, int64_t ubatch) {
  ScenarioRequest r = request(hw, model, quant, engine);
  r.prompt_tokens = prompt;
  r.gen_tokens = 16;
  r.ubatch_tokens = ubatch;
  Scenario s = prepare_scenario(catalog(), r).scenario;
  WithAndWithout out;
  out.mla_s = s.engine.engine->mla_layer_overhead_s;
  out.with = analyze(s);
  EngineProfile none = *s.engine.engine;
  none.mla_layer_overhead_s = 0;
  s.engine.engine = &none;
  out.without = analyze(s);
  return out;
}

}  // namespace

TEST_CASE("llama.cpp's MLA layers cost their time once per pass and layer", "[analysis][mla]") {
  // GLM-4.7-Flash: 47 layers, all MLA. A decode step costs 47 x 81 us = 3.807 ms more; so does a
  // one-token prompt (one pass).
  const WithAndWithout glm = both("m2-ultra-76c", "glm-4.7-flash", "q8_0", "llama.cpp:metal", 1, 0);
  REQUIRE(glm.mla_s == Approx(81e-6));
  CHECK(glm.with.factors.mla_layer_overhead_s == Approx(81e-6));
  CHECK(glm.with.decode.overhead_time_s - glm.without.decode.overhead_time_s == Approx(47 * 81e-6).epsilon(1e-9));
  CHECK(glm.with.prefill.overhead_time_s - glm.without.prefill.overhead_time_s == Approx(47 * 81e-6).epsilon(1e-9));
  // DeepSeek-V2-Lite on CUDA, 27 layers: a 64-token prompt in 16-token passes pays 4 x 27 x 81 us = 8.748 ms.
  const WithAndWithout lite = both("rtx3090", "deepseek-v2-lite", "q4_0", "llama.cpp:cuda", 64, 16);
  CHECK(lite.with.prefill.overhead_time_s - lite.without.prefill.overhead_time_s == Approx(4 * 27 * 81e-6).epsilon(1e-9));
  // A GQA model pays nothing, and neither do engines without the term (vLLM).
  const WithAndWithout gqa = both("rtx3090", "qwen3-30b-a3b", "q4_k_m", "llama.cpp:cuda", 1, 0);
  CHECK(gqa.with.factors.mla_layer_overhead_s == 0);
  CHECK(gqa.with.decode.overhead_time_s == gqa.without.decode.overhead_time_s);
  const PreparedScenario vllm = prepare_scenario(catalog(), request("h100-sxm", "deepseek-v2-lite", "bf16", "vllm"));
  CHECK(analyze(vllm.scenario).factors.mla_layer_overhead_s == 0);
}

TEST_CASE("the estimate's JSON names the MLA term for an MLA model only", "[analysis][mla][json]") {
  // The text names it too ("+ 81.0 us per MLA layer (latent attention)"): the golden estimate_m2ultra_mla_model.
  const PreparedScenario glm = prepare_scenario(catalog(), request("m2-ultra-76c", "glm-4.7-flash", "q8_0", "llama.cpp:metal"));
  const Analysis a = analyze(glm.scenario);
  CHECK(estimate_json(glm, a).at("factors").at("mla_layer_overhead_s").get<double>() == Approx(81e-6));
  const PreparedScenario gqa = prepare_scenario(catalog(), request("m2-ultra-76c", "qwen3-30b-a3b", "q4_k_m", "llama.cpp:metal"));
  const Analysis b = analyze(gqa.scenario);
  CHECK_FALSE(estimate_json(gqa, b).at("factors").contains("mla_layer_overhead_s"));
}
