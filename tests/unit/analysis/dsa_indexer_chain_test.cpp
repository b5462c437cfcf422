// SPDX-License-Identifier: MIT
// A lightning indexer (DSA: DeepSeek-V3.2, GLM-5; DeepSeek-V4's sparse compressed layers) runs a
// chain of small kernels in each layer that has one, every pass: the engine's dsa_indexer_layer
// (data/engines/sglang.json, vllm.json) costs its time per such layer, in estimate and in the
// serving step alike. Models without an indexer and engines without the term pay nothing.
#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/analysis_json.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/analysis/serving_setup.hpp"
#include "optadvisor/analysis/serving_step.hpp"
#include "optadvisor/catalog/catalog.hpp"

using namespace optadvisor;
using fixtures::catalog;

namespace {

uint64_t indexer_layers(const std::string& model) { return indexer_layer_count(kv_shape(catalog().resolve_model(model))); }

/// `model` on eight B200s (tp 8) under `engine`.
PreparedScenario prepared(const std::string& model, const std::string& quant, const std::string& engine) {
  ScenarioRequest r = fixtures::request("b200", model, quant, engine);
  r.tp = 8;
  return prepare_scenario(catalog(), r);
}

Scenario scenario(const std::string& model, const std::string& quant, const std::string& engine) {
  return prepared(model, quant, engine).scenario;
}

}  // namespace

TEST_CASE("the layers that run a lightning indexer", "[catalog][dsa]") {
  // Every DSA layer: GLM-5's 78, DeepSeek-V3.2's 61 (the MTP layer is not a pass of the main model).
  CHECK(indexer_layers("glm-5") == 78);
  CHECK(indexer_layers("deepseek-v3.2") == 61);
  // DeepSeek-V4-Flash: the 21 layers of compress ratio 4 have an indexer; the 20 of ratio 128 and
  // the 3 sliding-only layers do not.
  CHECK(indexer_layers("deepseek-v4-flash") == 21);
  // No indexer: DeepSeek-V3 (dense MLA), a GQA model.
  CHECK(indexer_layers("deepseek-v3") == 0);
  CHECK(indexer_layers("llama-3.1-8b") == 0);
}

TEST_CASE("estimate charges the indexer chain once per pass and indexer layer", "[analysis][dsa]") {
  Scenario s = scenario("glm-5", "fp8", "sglang");
  REQUIRE(s.engine.engine->dsa_indexer_layer_s == Approx(50e-6));
  const Analysis with = analyze(s);
  CHECK(with.factors.dsa_indexer_layer_s == Approx(50e-6));
  EngineProfile none = *s.engine.engine;
  none.dsa_indexer_layer_s = 0;
  s.engine.engine = &none;
  const Analysis without = analyze(s);
  // 78 layers x 50 us = 3.9 ms a decode step; the prefill of the default 512-token prompt is one pass.
  CHECK(with.decode.overhead_time_s - without.decode.overhead_time_s == Approx(78 * 50e-6).epsilon(1e-9));
  CHECK(with.prefill.overhead_time_s - without.prefill.overhead_time_s == Approx(78 * 50e-6).epsilon(1e-9));
  // DeepSeek-V3 has no indexer; TensorRT-LLM states no chain.
  CHECK(analyze(scenario("deepseek-v3", "fp8", "sglang")).factors.dsa_indexer_layer_s == 0);
  CHECK(analyze(scenario("glm-5", "fp8", "tensorrt-llm")).factors.dsa_indexer_layer_s == 0);
}

TEST_CASE("the estimate's JSON names the indexer term for an indexer model only", "[analysis][dsa][json]") {
  const PreparedScenario glm = prepared("glm-5", "fp8", "vllm");
  CHECK(estimate_json(glm, analyze(glm.scenario)).at("factors").at("dsa_indexer_layer_s").get<double>() == Approx(50e-6));
  const PreparedScenario ds = prepared("deepseek-v3", "fp8", "vllm");
  CHECK_FALSE(estimate_json(ds, analyze(ds.scenario)).at("factors").contains("dsa_indexer_layer_s"));
}

TEST_CASE("a serving step pays the indexer chain once per pass", "[serving][dsa]") {
  const PreparedServing p = prepare_serving(catalog(), fixtures::serve_request("b200", "glm-5", "fp8", "sglang", 8));
  // 78 indexer layers x 50 us.
  CHECK(p.setup.pools.front().step.indexer_chain_s == Approx(3.9e-3));
  // Worked by hand on the fixture rank: the chain adds its 3.9 ms to the step's overhead and time,
  // whatever the step holds (a decode of 4,000 tokens of context here, or a prompt chunk).
  StepModel m = fixtures::round_rank();
  StepMix mix;
  add_decode(mix, m, 4000);
  const StepCost plain = step_cost(m, mix);
  m.indexer_chain_s = 3.9e-3;
  const StepCost with = step_cost(m, mix);
  CHECK(with.overhead_s - plain.overhead_s == Approx(3.9e-3));
  CHECK(with.time_s - plain.time_s == Approx(3.9e-3));
  StepMix prompt;
  add_prefill_chunk(prompt, m, 0, 512);
  m.indexer_chain_s = 0;
  const double chunk = step_cost(m, prompt).time_s;
  m.indexer_chain_s = 3.9e-3;
  CHECK(step_cost(m, prompt).time_s - chunk == Approx(3.9e-3));
}

TEST_CASE("a DSA prompt attends to its top-k tokens after its indexer scored its whole context", "[serving][dsa]") {
  StepModel m = fixtures::round_rank();
  m.sparse_topk = 2048;
  m.indexer_flops_per_pair = 1e4;
  StepMix mix;
  add_prefill_chunk(mix, m, 0, 8192);
  // Causal pairs: 8192^2 / 2 = 33,554,432 scored; capped at 2,048: 2048^2 / 2 + (8192 - 2048) x 2048
  // = 2,097,152 + 12,582,912 = 14,680,064 attended.
  CHECK(mix.prefill_attention_full == Approx(33554432.0));
  CHECK(mix.prefill_attention_sparse == Approx(14680064.0));
  // Attention: 1e5 FLOPs x 14,680,064 + 1e4 x 33,554,432 = 1.80355e12 at 1e14/s = 18.04 ms, over
  // the 0.82 ms of cache writes (8,192 x 100 kB at 1e12 B/s); the GEMMs 8,192 x 2e9 at 1e15/s =
  // 16.38 ms, over the 1 ms of weights. Compute 34.42 ms.
  CHECK(step_cost(m, mix).compute_s == Approx(16.384e-3 + 18.0355072e-3));
  // A second chunk 8192..8292 adds its own pairs only: 100 x 2,048 attended.
  StepMix next;
  add_prefill_chunk(next, m, 8192, 8292);
  CHECK(next.prefill_attention_sparse == Approx(100.0 * 2048));
  // Without the top-k every pair is attended: 1e5 x 33,554,432 at 1e14/s = 33.55 ms.
  m.sparse_topk = 0;
  StepMix dense;
  add_prefill_chunk(dense, m, 0, 8192);
  CHECK(dense.prefill_attention_sparse == 0);
  CHECK(step_cost(m, dense).compute_s == Approx(16.384e-3 + 33.554432e-3));
}
