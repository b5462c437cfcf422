// SPDX-License-Identifier: MIT
// The advisor: diagnoses what binds a scenario for a goal, applies every rule
// that fits (each a transform of the scenario, run through the same model),
// ranks the recommendations by their computed gain on the goal's metric and
// stacks the best of them into a plan. Pure: no I/O, no logging.
#pragma once

#include <map>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/advisor/rules.hpp"
#include "optadvisor/advisor/under_load.hpp"
#include "optadvisor/analysis/training.hpp"

namespace optadvisor {

/// What the user asked the advisor.
struct AdviceRequest {
  Goal goal = Goal::kLatency;
  /// What the user gave; no model: the device class's default model (data/rules/defaults);
  /// an unset batch, prompt, gen or context: the goal's default workload.
  ScenarioRequest scenario;
  /// Goal training: the training options (--seq, --micro-batch, ...); device,
  /// model, engine, format and parallelism come from `scenario`.
  TrainingRequest training;
  std::map<std::string, double> assumptions;  ///< --assume overrides
};

/// An inference scenario run through the model.
struct InferenceRun {
  ScenarioRequest request;
  PreparedScenario prepared;
  Analysis analysis;
};

/// A training step (goal training) run through the training model.
struct TrainingRun {
  TrainingRequest request;
  PreparedTraining prepared;
  TrainingAnalysis analysis;
};

/// One scenario run through the model, with what the rules read from it:
/// an inference scenario or a training step, never both.
struct Evaluation {
  std::variant<InferenceRun, TrainingRun> run;
  bool is_training() const { return std::holds_alternative<TrainingRun>(run); }
  /// The run of that kind; std::bad_variant_access for the other.
  const InferenceRun& inference() const { return std::get<InferenceRun>(run); }
  const TrainingRun& training() const { return std::get<TrainingRun>(run); }
  Facts facts;
  bool runs = false;           ///< fits, or llama.cpp offloads layers to host memory
  double metric = 0;           ///< the goal's metric
  double memory_bytes = 0;     ///< needed per device
  double bytes_per_token = 0;  ///< decode traffic per generated token of one sequence (0 for training)
};

/// Every fact of fact_catalog() for an inference scenario (all but training.*).
Facts inference_facts(const PreparedScenario& prepared, const Analysis& analysis, Goal goal);
/// The facts of a training step: goal, hardware.*, model.*, memory.* and training.*.
Facts training_facts(const PreparedTraining& prepared, const TrainingAnalysis& analysis);

/// Fills "{fact}", "{fact:%}", "{fact:gb}", "{fact:s}", "{fact:x}", "{fact:int}" and "{@assumption}".
std::string fill_template(const std::string& text, const Facts& facts, const std::map<std::string, double>& assumptions);

/// A transform's parameters with each "@id" replaced by assumption `id`'s value in `values` (also
/// inside per-engine objects).
nlohmann::json resolve_params(const nlohmann::json& params, const std::map<std::string, double>& values);

struct UsedAssumption {
  std::string id;
  double value = 0;
  bool overridden = false;
};

/// `rule` points into the RuleBook, `after` into the Catalog; both must outlive it.
struct Recommendation {
  const Rule* rule = nullptr;
  int rank = 0;
  std::vector<std::string> why;            ///< the triggers that hold, filled in
  std::vector<std::string> prerequisites;  ///< what it needs (all met here)
  std::vector<std::string> notes;          ///< what the transform chose
  std::vector<UsedAssumption> assumptions;
  std::string how_engine;  ///< the engine the how-to is for
  std::string how;
  Evaluation after;
  double gain = 1;  ///< improvement factor (> 1 is better): see gain_basis
  /// "metric": the goal's metric before over after; "runs": it makes a scenario that does not fit
  /// run (gain infinite); "memory": neither fits, and this is the memory needed before over after.
  std::string gain_basis = "metric";
};

/// A rule that applies but whose effect the model does not compute.
/// `rule` points into the RuleBook; the RuleBook must outlive it.
struct Unquantified {
  const Rule* rule = nullptr;
  std::vector<std::string> why;
  std::string how_engine;
  std::string how;
  std::optional<LoadComparison> under_load;  ///< the rule's serving simulation, when it has one and it runs here
  std::string under_load_note;               ///< why it does not run here, when the rule has one
};

/// A rule left out, and why.
/// `rule` points into the RuleBook; the RuleBook must outlive it.
struct NotApplicable {
  const Rule* rule = nullptr;
  std::string stage;  ///< "goal", "prerequisite", "trigger", "transform", "does not fit", "no gain"
  std::string reason;
};

/// `rule` points into the RuleBook, `result` into the Catalog; both must outlive it.
struct PlanStep {
  const Rule* rule = nullptr;
  Evaluation result;
  double step_gain = 1;
  double cumulative_gain = 1;         ///< over the baseline (infinite when the baseline does not run)
  double gain_over_first = 1;         ///< over the first step that runs (the baseline's gain when the baseline runs)
  int first_running_step = 0;         ///< 1-based step that made a baseline that does not fit run; 0 when the baseline runs
  std::string gain_basis = "metric";  ///< of step_gain, as Recommendation::gain_basis
  std::vector<std::string> notes;
};

/// `rule` points into the RuleBook; the RuleBook must outlive it.
struct PlanSkip {
  const Rule* rule = nullptr;
  std::string reason;
};

struct Diagnosis {
  std::string phase;                                  ///< "decode", "prefill", "memory"
  std::string bound;                                  ///< compute, memory-bandwidth, memory-capacity, overhead, interconnect, none
  std::string explanation;                            ///< the analysis's sentence for that phase
  bool thermal = false;                               ///< the device throttles under sustained load (phones)
  nlohmann::json figures = nlohmann::json::object();  ///< numbers in base units
};

/// Where a candidate stands in the ranking (docs/advisor.md, Ranking): what
/// the ranking compares, so the utility is one function with its own tests.
struct Standing {
  int feasibility = 2;  ///< 0 runs on the device, 1 runs with layers in host memory, 2 does not run
  int quality = 0;      ///< Rule::quality_class(); a plan's: its lossiest step
  /// Higher is better: log of the goal metric after the change (its inverse where lower is
  /// better) less quality x log(margin); while it does not run, minus log of the memory needed.
  double score = 0;
  int effort = 0;  ///< 0 low, 1 medium, 2 high
  int risk = 0;
  std::string id;  ///< last resort, for a stable order
  /// GPUs the changed deployment uses (workload.gpus): the memory goal takes the change that needs
  /// no more hardware first among changes of one quality class (no added GPU to buy or book).
  double devices = 1;
};

/// True when `a` ranks above `b`: feasibility first; then, for the memory goal
/// (`quality_first`), the less lossy change, then the one on fewer GPUs; then the score; then
/// lower effort, then lower risk, then the id.
bool ranks_above(const Standing& a, const Standing& b, bool quality_first);

struct Advice {
  Goal goal = Goal::kLatency;
  MetricInfo metric;
  Evaluation base;
  Diagnosis diagnosis;
  std::vector<Recommendation> recommendations;  ///< ranked, best first
  /// Changes of model (Rule::switches_model()): ranked among themselves with the same utility,
  /// never among the techniques and never in the plan.
  std::vector<Recommendation> alternatives;
  std::vector<Unquantified> unquantified;
  std::vector<NotApplicable> not_applicable;
  std::vector<PlanStep> plan;
  std::vector<PlanSkip> plan_skipped;
  std::vector<std::string> notes;                   ///< defaults the advisor chose
  std::map<std::string, double> assumption_values;  ///< every assumption, overrides applied
};

/// Runs the advisor. Throws bad_input for bad requests (unknown names,
/// contradictions, unknown or out-of-range --assume values).
Advice advise(const Catalog& catalog, const RuleBook& book, const AdviceRequest& request);

}  // namespace optadvisor
