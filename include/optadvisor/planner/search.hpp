// SPDX-License-Identifier: MIT
// `search`: a capacity planner. Enumerates device x GPU count x weight format
// x engine x batch for one model and goal, runs each through the same model
// as `estimate`, keeps what fits (and meets every --require), and ranks the
// survivors into Pareto fronts of (goal metric, hardware cost) and (goal
// metric, energy per token). Pure: no I/O; progress goes to a callback.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/analysis_json.hpp"
#include "optadvisor/planner/compare.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/planner/require.hpp"
#include "optadvisor/analysis/goals.hpp"

namespace optadvisor {

/// Weight formats searched when none are named: the 4-bit and wider formats
/// in common use (a plan does not pick sub-4-bit formats unasked, since the
/// model does not weigh their quality loss). Each engine takes those it runs.
const std::vector<std::string>& default_search_quants();

/// What to enumerate.
struct SearchSpace {
  std::vector<std::string> hardware;        ///< device names; empty: every profile (of device_class, when set)
  std::optional<DeviceClass> device_class;  ///< only devices of this class
  std::vector<std::string> quants;          ///< format names; empty: default_search_quants()
  bool all_quants = false;                  ///< every format each engine runs (overrides quants)
  std::vector<std::string> engines;         ///< engine names (optionally engine:backend); empty: every inference engine on each device
  uint32_t max_gpus = 8;                    ///< GPU counts 1, 2, 4, ... up to this
};

struct SearchRequest {
  Goal goal = Goal::kLatency;  ///< latency, throughput or memory
  /// The model request and the workload (prompt, gen, context, KV dtype, ...).
  /// Its hardware, quant, engine, gpus, tp and pp are what the search varies and are ignored.
  /// A workload.batch that is set is used as given; unset, latency and memory run batch 1 and
  /// throughput tries 1, 2, 4, ... up to the largest batch that fits, and that largest.
  ScenarioRequest workload;
  SearchSpace space;
  std::optional<double> budget_usd;       ///< drop configurations whose known price x GPUs is above this
  std::vector<Requirement> requirements;  ///< each checked against the candidate's `estimate --json` document
};

/// One configuration that fits, within budget, meeting every requirement.
/// `hardware` points into the Catalog; the Catalog must outlive it.
struct SearchCandidate {
  const HardwareProfile* hardware = nullptr;
  std::string quant;   ///< resolved format id
  std::string engine;  ///< engine with its backend, "llama.cpp:cuda"
  uint32_t gpus = 1;
  uint32_t tp = 1;
  uint32_t pp = 1;
  /// Copies of the gpus-GPU layout serving side by side: the throughput goal also weighs each layout
  /// replicated over the whole --max-gpus budget (metric and price for all the copies).
  uint32_t replicas = 1;
  uint64_t batch = 1;      ///< sequences run (resolved when the batch was "max"), per copy
  std::string batch_text;  ///< as the estimate command line takes it: "8" or "max"
  uint32_t expert_offload_layers = 0;  ///< layers whose routed experts stay in host memory (--n-cpu-moe); 0 = none
  double metric = 0;       ///< the goal's metric (metric_for(goal))
  double ttft_s = 0;
  double decode_tokens_per_s_per_sequence = 0;
  double decode_tokens_per_s = 0;
  double serving_tokens_per_s = 0;  ///< batch x gen / (TTFT + gen x time per token)
  double memory_bytes = 0;          ///< per device
  double memory_limit_bytes = 0;    ///< what the engine may use, per device
  Bound prefill_bound = Bound::kNone;
  Bound decode_bound = Bound::kNone;
  Efficiency efficiency;
  /// Pareto front (1 = not dominated) over (metric, price x GPUs), among candidates with a price.
  std::optional<uint32_t> cost_front;
  /// Pareto front over (metric, joules per token), among candidates with a board power.
  std::optional<uint32_t> energy_front;
  /// The better of the two fronts; 0 when the profile has neither price nor power.
  uint32_t rank = 0;

  double headroom_bytes() const { return memory_limit_bytes - memory_bytes; }
};

/// How many scenarios each stage kept.
struct SearchStats {
  uint64_t combinations = 0;  ///< device x GPU count x format x engine prepared (each runs at one or more batches)
  uint64_t over_budget = 0;   ///< combinations dropped by budget_usd before they ran
  uint64_t searched = 0;      ///< configurations analyzed: combinations x their batches
  uint64_t fit = 0;           ///< of those, that fit in device memory
  uint64_t meet_requirements = 0;
};

struct SearchResult {
  Goal goal = Goal::kLatency;
  ResolvedModel model;  ///< without its per-tensor table
  SearchRequest request;
  /// Ordered for display: candidates with a price first, by rank then by
  /// metric; then those without a price, by energy front then metric.
  std::vector<SearchCandidate> candidates;
  SearchStats stats;
  /// Engines or formats that could not be set up for the workload, with why
  /// ("vllm: engine 'vllm' has no q8_0 KV cache").
  std::vector<std::string> skipped;
};

/// Called after each combination of device, GPU count, format and engine: (done, total).
using SearchProgress = std::function<void(uint64_t done, uint64_t total)>;

/// Runs the search. Throws bad_input for unknown names, an empty space, or a
/// workload no configuration accepts (the first reason).
SearchResult search(const Catalog& catalog, const ResolvedModel& model, const SearchRequest& request, const SearchProgress& progress = {});

/// Non-dominated sorting of points whose two coordinates are both minimized:
/// front 1 holds the points no other point dominates (no worse in both, better
/// in one), front 2 those dominated only by front 1, and so on. Equal points
/// share a front. O(n log n).
std::vector<uint32_t> pareto_fronts(const std::vector<std::pair<double, double>>& points);

/// The request `optadvisor estimate` takes to reproduce a candidate.
ScenarioRequest candidate_request(const SearchRequest& request, const SearchCandidate& candidate);
/// "optadvisor estimate --hw ... --model ... --quant ... --engine ..." for a request
/// (options at their defaults are left out; arguments quoted for a POSIX shell when needed).
std::string estimate_command(const ScenarioRequest& request);

/// Prepares the scenarios of a search without repeating the expensive parts:
/// what depends only on (engine, format) — the per-tensor quantization and
/// every workload check — is prepared once by prepare_scenario, and the
/// backend choice once per (device, engine). prepare() gives what
/// prepare_scenario gives for the same request, except that the per-tensor
/// tables (PreparedScenario::weights, model.gguf_weights) are left empty.
class ScenarioCache {
 public:
  /// `base` is the workload; prepare() varies only device, engine, format and parallelism.
  ScenarioCache(const Catalog& catalog, const ResolvedModel& model, ScenarioRequest base);

  /// Engine and quant must be named (empty ones fall back to prepare_scenario).
  /// Throws what prepare_scenario would.
  PreparedScenario prepare(const HardwareProfile& hardware, const std::string& engine, const std::string& quant, uint32_t gpus, uint32_t tp,
                           uint32_t pp);
  /// The request prepare() answers, for prepare_scenario and for command lines.
  ScenarioRequest request(const HardwareProfile& hardware, const std::string& engine, const std::string& quant, uint32_t gpus, uint32_t tp,
                          uint32_t pp) const;

 private:
  /// A cached result of prepare_scenario or choose_engine, or the error it threw.
  template <typename T>
  struct Cached {
    std::optional<T> value;
    std::optional<Error> error;
    const T& get() const {
      if (error) throw *error;
      return *value;
    }
  };
  const PreparedScenario& template_for(const HardwareProfile& hardware, const std::string& engine, const std::string& quant);
  const EngineChoice& engine_on(const HardwareProfile& hardware, const std::string& engine);

  const Catalog& catalog_;
  ResolvedModel model_;
  ScenarioRequest base_;
  std::map<std::pair<std::string, std::string>, Cached<PreparedScenario>> templates_;  ///< by (engine, quant) as requested
  std::map<std::pair<std::string, std::string>, Cached<EngineChoice>> engines_;        ///< by (device id, engine)
};

}  // namespace optadvisor
