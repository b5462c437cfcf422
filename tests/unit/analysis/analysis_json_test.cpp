// SPDX-License-Identifier: MIT
// The JSON contract of `estimate --json`: every section in every document, numbers as
// numbers (the batch the estimate ran, also for --batch max), null only where a value
// does not apply.
#include "optadvisor/analysis/analysis_json.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/catalog/catalog.hpp"
#include "fixtures.hpp"

using namespace optadvisor;

namespace {

using fixtures::catalog;

struct Estimate {
  PreparedScenario prepared;
  Analysis analysis;
  nlohmann::json json;
};

Estimate estimate(const std::string& hw, const std::string& batch, int64_t gen) {
  ScenarioRequest r;
  r.hardware = hw;
  r.model.preset = "llama-3.1-8b";
  r.batch = batch;
  r.gen_tokens = gen;
  Estimate e{prepare_scenario(catalog(), r), {}, {}};
  e.analysis = analyze(e.prepared.scenario);
  e.json = estimate_json(e.prepared, e.analysis);
  return e;
}

}  // namespace

TEST_CASE("estimate --json: throughput at batch 1, with the request latency", "[analysis][json]") {
  const Estimate e = estimate("rtx4090", "1", 128);
  const nlohmann::json& t = e.json.at("throughput");
  CHECK(t.at("batch") == 1);
  // One request: TTFT + 128 x time per output token; its output rate is 128 tokens over that.
  const double latency = e.analysis.prefill.time_s + 128 * e.analysis.decode.time_s;
  CHECK(t.at("request_latency_s").get<double>() == Approx(latency));
  CHECK(t.at("output_tokens_per_s").get<double>() == Approx(128 / latency));
  CHECK(e.json.at("scenario").at("workload").at("batch") == 1);
  CHECK(e.json.at("scenario").at("workload").at("batch_max") == false);
  // The sections --require reads are the same values.
  const nlohmann::json part = estimate_sections_json(e.prepared, e.analysis, {"throughput"});
  CHECK(part.at("throughput") == t);
}

TEST_CASE("estimate --json: --batch max is the number of sequences it ran", "[analysis][json]") {
  const Estimate e = estimate("h100", "max", 128);
  const nlohmann::json& w = e.json.at("scenario").at("workload");
  REQUIRE(w.at("batch").is_number_unsigned());
  CHECK(w.at("batch_max") == true);
  CHECK(w.at("batch").get<uint64_t>() == e.analysis.batch);
  // The command that would measure it sends that many prompts (vLLM's template: --num-prompts {batch}).
  REQUIRE(e.analysis.batch > 256);  // an 8B model on an 80 GB H100 holds hundreds of 640-token sequences
  const std::string cmd = e.json.at("measure_command").get<std::string>();
  CHECK(cmd.find(fmt::format("--num-prompts {} ", e.analysis.batch)) != std::string::npos);
  CHECK(e.analysis.batch > 1);
  CHECK(e.json.at("throughput").at("batch") == w.at("batch"));
  // The batch that ran is the most that fit, within the engine's limit.
  CHECK(e.analysis.batch <= e.json.at("memory").at("max_batch").get<uint64_t>());
  // fit --json says the same.
  CHECK(fit_json(e.prepared, e.analysis).at("scenario").at("workload") == w);
}

TEST_CASE("estimate --json: no output rate when nothing is generated", "[analysis][json]") {
  const Estimate e = estimate("rtx4090", "1", 0);
  const nlohmann::json& t = e.json.at("throughput");
  CHECK(t.at("output_tokens_per_s").is_null());
  // The request is its prefill alone.
  CHECK(t.at("request_latency_s").get<double>() == Approx(e.analysis.prefill.time_s));
  CHECK(t.at("batch") == 1);
}

TEST_CASE("estimate --json: factors carry MLX's per-MoE-layer dispatch for a MoE model only", "[analysis][json][moe]") {
  const auto factors = [](const std::string& model) {
    ScenarioRequest r;
    r.hardware = "m4-max-40c";
    r.model.preset = model;
    r.engine = "mlx";
    const PreparedScenario ps = prepare_scenario(catalog(), r);
    return estimate_json(ps, analyze(ps.scenario)).at("factors");
  };
  // data/engines/mlx.json moe_layer_overhead: 124 us a pass and MoE layer.
  CHECK(factors("gpt-oss-20b").at("moe_layer_overhead_s").get<double>() == Approx(124e-6));
  CHECK_FALSE(factors("llama-3.1-8b").contains("moe_layer_overhead_s"));
}
