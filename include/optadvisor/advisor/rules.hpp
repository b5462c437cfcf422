// SPDX-License-Identifier: MIT
// Playbook rules as data (data/rules/*.json): when a technique applies
// (conditions over named facts of a scenario and its analysis), what it
// needs, which transform it applies, and how to do it per engine. The rule
// book also holds the world numbers rules use (assumptions, each with its
// source) and the advisor's defaults. Loading checks every rule and reports
// every problem with file and JSON pointer.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "optadvisor/analysis/goals.hpp"
#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/base/error.hpp"

namespace optadvisor {

/// What the user wants to improve.

/// The type of a fact's value.
enum class FactType { kBool, kNumber, kString, kStringList };
std::string_view to_string(FactType t);

/// A named fact a condition may read.
struct FactInfo {
  std::string name;  ///< "decode.bound", "hardware.capabilities.fp8", ...
  FactType type = FactType::kBool;
  std::string description;
};

/// Every fact conditions may name; facts() (playbook.hpp) fills each of them.
const std::vector<FactInfo>& fact_catalog();
const FactInfo* find_fact(std::string_view name);
/// Whether a fact is filled for training steps (goal, hardware.*, model.*,
/// memory.{fits,runs,total_bytes,limit_bytes,use_fraction,headroom_bytes},
/// training.*) or for inference scenarios (everything but training.*).
bool fact_for_training(std::string_view name);
bool fact_for_inference(std::string_view name);

/// Fact values of one evaluated scenario, by name.
using Facts = std::map<std::string, nlohmann::json>;

/// A comparison of one fact with a value, or `any` of several conditions.
struct Condition {
  std::string fact;
  std::string op;  ///< equals, not_equals, in, not_in, contains, not_contains, gt, ge, lt, le
  nlohmann::json value;
  std::vector<Condition> any;  ///< non-empty: holds when one of these holds
  std::string text;            ///< the requirement as a statement ("FP8 tensor cores")
  std::string reason;          ///< why not, when it does not hold (a template: "{hardware.name} has none")
  std::string because;         ///< why the rule applies, when it holds (a template)

  /// Evaluates against `facts`; a fact missing from the map never holds.
  bool holds(const Facts& facts) const;
};

/// A number about the world a rule uses (an acceptance length, a speed-up),
/// with its source; the user may override it (--assume id=value).
struct Assumption {
  std::string id;
  double value = 0;
  double min = 0;
  double max = 0;
  std::string unit;
  std::string description;
  std::string derivation;                            ///< how the value follows from the sources
  std::vector<std::string> effects;                  ///< rows of bench/data/effects.csv
  nlohmann::json sources = nlohmann::json::array();  ///< [{title, url, read}]
  std::string origin;                                ///< file it came from
};

/// One step of a rule's transform: a named function (transforms.hpp) and its
/// parameters; a string parameter "@id" stands for assumption `id`.
struct TransformStep {
  std::string name;
  nlohmann::json params = nlohmann::json::object();
};

struct Rule {
  std::string id;
  std::string title;
  std::string summary;  ///< one paragraph: what the technique does
  std::vector<Goal> goals;
  std::vector<Condition> when;           ///< triggers: the facts that make it worth doing here
  std::vector<Condition> requires_;      ///< prerequisites: hardware, engine, model
  std::vector<Condition> after;          ///< what the changed scenario must show for the rule to be what it says
  std::vector<TransformStep> transform;  ///< empty: the effect is not quantified
  std::string not_quantified;            ///< why the model does not compute its effect
  std::string under_load;                ///< a serving simulation shown beside it (advisor/under_load.hpp); "" = none
  std::string effort;                    ///< "low", "medium", "high"
  /// What the change does to the output: "lossless", "near-lossless", "lossy",
  /// "different-model" (another model) or "different-run" (training something other than
  /// asked: LoRA adapters for every weight); the last two are alternatives, never ranked.
  std::string quality;
  std::string risk_level;  ///< "low", "medium", "high"
  std::string risk;
  std::map<std::string, std::string> how;  ///< by engine id ("vllm", "llama.cpp", ...) or "*"
  /// The how-to where the changed scenario's weights are the publisher's own checkpoint
  /// (fact quant.official_checkpoint), by engine id or "*"; `how` elsewhere.
  std::map<std::string, std::string> how_official;
  nlohmann::json sources = nlohmann::json::array();
  std::vector<std::string> effects;      ///< rows of bench/data/effects.csv
  std::vector<std::string> assumptions;  ///< assumption ids the transform uses
  std::string origin;                    ///< "data/rules/latency.json"
  std::string pointer;                   ///< "/rules/3"

  bool quantified() const { return !transform.empty(); }
  /// 0 lossless, 1 near-lossless, 2 lossy, 3 different-model or different-run.
  int quality_class() const;
  /// An alternative to the asked-for job rather than a technique for it.
  bool switches_model() const { return quality == "different-model" || quality == "different-run"; }
  bool serves(Goal g) const;
  /// The how-to for an engine id: its own entry, else "*", else "". `official`: the weights the
  /// rule leads to are an official checkpoint, so how_official's entry comes first.
  std::string how_for(const std::string& engine_id, bool official = false) const;
};

/// Product defaults the advisor uses when the user leaves something out.
struct AdvisorDefaults {
  std::map<std::string, std::string> models;        ///< device class -> model preset
  std::map<std::string, nlohmann::json> workloads;  ///< goal -> {batch, prompt_tokens, gen_tokens, context_tokens}
  int plan_steps = 4;                               ///< recommendations the stacked plan tries
  double min_gain = 1.01;                           ///< below this a change is "no gain"
};

class RuleBook {
 public:
  /// Parses the catalog's rule documents; throws bad_input naming the first
  /// problem and how many more there are.
  static RuleBook load(const Catalog& catalog);
  /// Parses and checks every rule document; returns every problem found.
  static RuleBook parse(const std::vector<std::pair<std::string, nlohmann::json>>& documents, const Catalog& catalog,
                        std::vector<Problem>& problems);

  const std::vector<Rule>& rules() const { return rules_; }
  const Rule* find(std::string_view id) const;
  /// As find, but an unknown id throws bad_input with the closest ids.
  const Rule& resolve(std::string_view id) const;
  const std::map<std::string, Assumption>& assumptions() const { return assumptions_; }
  const AdvisorDefaults& defaults() const { return defaults_; }

 private:
  std::vector<Rule> rules_;
  std::map<std::string, Assumption> assumptions_;
  AdvisorDefaults defaults_;
};

/// True when the text between braces is a template placeholder: a fact or
/// "@assumption" name with an optional ":format" ("{decode.bound}",
/// "{memory.kv_share:%}"); other braces (JSON in a how-to) are left alone.
bool is_placeholder(std::string_view inner);

/// Parses "name=value" (--assume); throws bad_input for anything else.
std::pair<std::string, double> parse_assumption_override(const std::string& text);

/// Checks overrides against the rule book: known ids, values in range.
void check_assumption_overrides(const RuleBook& book, const std::map<std::string, double>& overrides);

}  // namespace optadvisor
