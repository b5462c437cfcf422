// SPDX-License-Identifier: MIT
// What many unit tests share: the shipped catalog, loaded once per test binary, a preset
// resolved as --model would resolve it, and scenarios set up for figures worked by hand.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <catch2/catch.hpp>

#include "optadvisor/advisor/rules.hpp"
#include "optadvisor/advisor/transforms.hpp"
#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/analysis/serving.hpp"
#include "optadvisor/analysis/serving_setup.hpp"
#include "optadvisor/analysis/serving_step.hpp"
#include "optadvisor/base/error.hpp"
#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/catalog/model.hpp"
#include "optadvisor/readers/model_source.hpp"

namespace optadvisor::fixtures {

/// The embedded data, no overlays. Lives for the whole test run.
const Catalog& catalog();

/// The preset `id` of catalog(), resolved as `--model id` is.
ResolvedModel model(const std::string& id);

/// The preset `id` of catalog() as the catalog stores it (aliases resolved).
const ModelSpec& spec(const std::string& id);

/// The tensor named `name` among `all`; null when there is none.
const Tensor* find_tensor(const std::vector<Tensor>& all, const std::string& name);

/// The elements of the checkpoint term `what` of `s` (checkpoint_extra_terms); fails the test when it has none.
uint64_t checkpoint_term(const ModelSpec& s, const std::string& what);

/// The JSON pointer of the first problem model_from_json reports for the preset document `doc`,
/// "" when it accepts it.
std::string first_problem_pointer(const nlohmann::json& doc);

/// The config.json fixture tests/data/hf/`file`, parsed; fails the test when it cannot be read.
nlohmann::json hf_config(const std::string& file);

/// A datacenter-class device with round numbers (fp16 = bf16 = `flops_per_s`), for
/// figures worked by hand.
HardwareProfile round_device(double bandwidth_bytes_per_s, double flops_per_s, double capacity_bytes);

/// A serving rank with round numbers, for figures worked by hand: 1 GB of weights at 1 TB/s,
/// 1 B params at 1 PFLOP/s, 100 kB of KV per token, 1e5 attention FLOPs per (query, context)
/// pair at 100 TFLOP/s, 1 ms per step, 10 layers, a 1 TB KV pool.
StepModel round_rank();

/// One aggregated pool of one worker whose ranks step as `m` says.
ServingSetup one_pool(const StepModel& m);

/// A closed loop of `clients` sending requests of `prompt` + `gen` tokens.
ServingLoad closed_loop(uint64_t clients, uint64_t prompt, uint64_t gen);

/// The shipped rule book of catalog(), loaded once.
const RuleBook& rule_book();

/// The shipped rule `rule_id`'s (single) transform applied to the scenario `r` prepares to, as the
/// advisor applies it.
TransformResult apply_rule(const std::string& rule_id, const ScenarioRequest& r);

/// An engine with no overheads and stated efficiencies, for figures worked by hand.
struct PlainEngine {
  EngineProfile engine;
  PlainEngine(double bw_eff, double compute_eff, uint64_t max_batched_tokens = 8192, uint64_t kv_block_tokens = 0);
  EngineChoice choice() const {
    EngineChoice c;
    c.engine = &engine;
    c.backend = &engine.backends.at("default");
    return c;
  }
};

/// Preset `model` of catalog() on `hw` under `e`, with a 16-bit KV cache; the weights are left to the test.
Scenario plain_scenario(const HardwareProfile& hw, const std::string& model, const PlainEngine& e);

/// The weights of a figure worked by hand: bytes as stored, parameters, parameters touched per token.
struct HandWeights {
  double total_bytes = 0;
  double params = 0;
  double active_params = 0;
};

/// plain_scenario() with weights `w`, each sequence prefilling `prompt` tokens and generating `gen`.
Scenario plain_scenario(const HardwareProfile& hw, const std::string& model, const PlainEngine& e, const HandWeights& w, uint64_t prompt,
                        uint64_t gen);

/// A request for preset `model` on `hardware`; "" leaves the quant or the engine to the defaults.
ScenarioRequest request(const std::string& hardware, const std::string& model, const std::string& quant = "",
                        const std::string& engine = "");

/// `serve` of that request over one aggregated worker of tensor parallelism `tp`, one client.
ServeRequest serve_request(const std::string& hardware, const std::string& model, const std::string& quant, const std::string& engine,
                           uint32_t tp);

/// The analysis of the scenario `r` prepares to (catalog()).
Analysis analyze_request(const ScenarioRequest& r);

/// Whether any of `lines` (notes, warnings) contains `text`.
bool any_contains(const std::vector<std::string>& lines, const std::string& text);

/// The message of the bad_input error `f` throws, checking that it is one (exit 2); "" when it throws none.
template <typename F>
std::string bad_input_message(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::kBadInput);
    return e.what();
  }
  return {};
}

}  // namespace optadvisor::fixtures
