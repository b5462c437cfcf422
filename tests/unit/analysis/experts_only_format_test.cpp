// SPDX-License-Identifier: MIT
// A weight-only format stored only in the routed experts (int4-wo, Kimi-K2.5): its kernels' share of
// the bandwidth covers the experts' bytes, not the 16-bit attention and shared weights, in estimate
// and in the serving step alike.
#include <catch2/catch.hpp>

#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/analysis/serving.hpp"
#include "optadvisor/analysis/serving_setup.hpp"
#include "optadvisor/analysis/serving_step.hpp"
#include "optadvisor/catalog/catalog.hpp"
#include "fixtures.hpp"

using namespace optadvisor;
using fixtures::catalog;

namespace {

WeightsSummary weights_of(const std::string& hardware, const std::string& model, const std::string& quant, const std::string& engine) {
  return prepare_scenario(catalog(), fixtures::request(hardware, model, quant, engine)).scenario.weights;
}

}  // namespace

TEST_CASE("a format is experts-only where nothing but the routed experts is stored below 16 bits", "[analysis][quant][moe]") {
  // Kimi-K2.5's int4-wo keeps attention, shared experts, embeddings and norms in bf16;
  // gpt-oss ships MXFP4 experts beside bf16 attention.
  CHECK(weights_of("b200", "kimi-k2.5", "int4-wo", "vllm").experts_only_quantized);
  CHECK(weights_of("h100", "gpt-oss-120b", "mxfp4", "vllm").experts_only_quantized);
  // AWQ quantizes every block linear, attention too; a dense model has no experts.
  CHECK_FALSE(weights_of("h100", "qwen3-30b-a3b", "awq-int4", "vllm").experts_only_quantized);
  CHECK_FALSE(weights_of("h100", "llama-3.1-8b", "awq-int4", "vllm").experts_only_quantized);
  CHECK_FALSE(weights_of("h100", "llama-3.1-8b", "", "vllm").experts_only_quantized);
}

TEST_CASE("estimate reads an experts-only format's bytes at its kernels' share and the rest at the engine's", "[analysis][quant][moe]") {
  ScenarioRequest r = fixtures::request("b200", "kimi-k2.5", "int4-wo", "vllm");
  r.tp = 8;
  const PreparedScenario p = prepare_scenario(catalog(), r);
  const Analysis a = analyze(p.scenario);
  // vLLM's int4-wo decode share is 0.3 (data/engines/vllm.json quant_efficiency), on the experts only:
  // the engine's own 0.8 stays on the bf16 weights and the KV cache.
  CHECK(a.factors.expert_format_decode_efficiency == Approx(0.3));
  CHECK(a.factors.decode_bandwidth_efficiency == Approx(p.scenario.engine.backend->decode_bandwidth_efficiency));
  // AWQ on every linear keeps the whole-model share (0.85 x the engine's), no separate expert share.
  ScenarioRequest awq = fixtures::request("h100", "qwen3-30b-a3b", "awq-int4", "vllm");
  const PreparedScenario q = prepare_scenario(catalog(), awq);
  const Analysis b = analyze(q.scenario);
  CHECK(b.factors.expert_format_decode_efficiency == 1.0);
  CHECK(b.factors.decode_bandwidth_efficiency == Approx(q.scenario.engine.backend->decode_bandwidth_efficiency * 0.85));
}

TEST_CASE("a serving step reads an experts-only format's experts at its share and the dense weights at the era's",
          "[serving][quant][moe]") {
  const PreparedServing p = prepare_serving(catalog(), fixtures::serve_request("b200", "kimi-k2.5", "int4-wo", "vllm", 8));
  const StepModel& m = p.setup.pools.front().step;
  CHECK(m.experts_only_format);
  CHECK(m.weight_bandwidth_bytes_per_s == Approx(7.7e12 * p.era->bandwidth_efficiency));
  CHECK(m.expert_weight_bandwidth_bytes_per_s == Approx(7.7e12 * p.era->bandwidth_efficiency * 0.3));
  // Worked by hand: 1 GB of dense weights at 1e12 B/s (1 ms), 3 GB of experts all touched (every
  // token picks every expert) at 0.3e12 B/s (10 ms), 4,000 tokens of context x 100 kB at 1e12 (0.4 ms).
  StepModel split = fixtures::round_rank();
  split.expert_weight_bytes = 3e9;
  split.expert_pick = 1.0;
  split.expert_weight_bandwidth_bytes_per_s = 0.3e12;
  split.experts_only_format = true;
  StepMix mix;
  add_decode(mix, split, 4000);
  CHECK(step_cost(split, mix).bandwidth_s == Approx(1e-3 + 10e-3 + 0.4e-3));
}
