// SPDX-License-Identifier: MIT
// What `optadvisor serve` asks, checked and turned into a ServingSetup: the
// scenario (device, model, format, engine at a version), one aggregated pool
// or a prefill and a decode pool with their layouts, the load and the SLOs.
#pragma once

#include <string>
#include <vector>

#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/analysis/serving.hpp"

namespace optadvisor {

struct ServePoolRequest {
  uint32_t workers = 1;
  ServingLayout layout;
  uint64_t max_batch = 0;  ///< running sequences per attention rank; 0 = the engine's default (max_num_seqs, max_batch_size)
  /// Tokens one iteration of an attention rank takes (vLLM max_num_batched_tokens, SGLang
  /// chunked_prefill_size, TensorRT-LLM max_num_tokens); 0 = the engine's default.
  uint64_t max_batched_tokens = 0;
};

struct ServeRequest {
  ScenarioRequest scenario;    ///< hardware, model, quant, engine id, kv dtype (tp/pp come from the pools)
  std::string engine_version;  ///< "" = the newest era
  ServePoolRequest aggregated;
  bool disaggregated = false;
  ServePoolRequest prefill, decode;
  ServingLoad load;
  double slo_ttft_s = 0;
  double slo_tpot_s = 0;
};

struct PreparedServing {
  PreparedScenario base;  ///< the scenario at the (decode or aggregated) pool's tp
  ServingSetup setup;
  const ServingEra* era = nullptr;
  std::vector<std::string> notes;
};

/// Checks the load's lengths: at least one token each, the spreads within their bounds, and the
/// longest request the load draws within the model's context (bad_input).
void check_serving_lengths(const ModelSpec& model, const ServingLoad& load);

/// Checks the request (one clear bad_input on a layout the model, device or
/// engine cannot run) and builds the pools' step models.
PreparedServing prepare_serving(const Catalog& catalog, const ServeRequest& request);
/// The same for a model already resolved (request.scenario.model is not read): its per-tensor
/// weights are reused where they were computed in the format the scenario picks.
PreparedServing prepare_serving(const Catalog& catalog, const ServeRequest& request, const ResolvedModel& model);

/// Upper bounds on what serve accepts, so every input is bounded before use.
constexpr uint64_t kMaxServeConcurrency = 65536;
/// The most tokens per iteration `--max-batched-tokens` takes (a million: 128 prompts of 8k at once).
constexpr uint64_t kMaxServeBatchedTokens = 1u << 20;
/// Bounds on a serving point's size a user can ask for (`--requests`, `--warmup`): the
/// simulation's work grows with the generated tokens it must run.
constexpr uint64_t kMaxServeRequests = 1'000'000;
constexpr uint64_t kMaxServeMeasuredTokens = 64'000'000;
constexpr uint32_t kMaxServeWorkers = 1024;
constexpr uint32_t kMaxServeDegree = 1024;

}  // namespace optadvisor
