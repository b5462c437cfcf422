// SPDX-License-Identifier: MIT
// The advisor: facts, conditions, transforms, ranking and the stacked plan.
// Every impact is analyze() on a transformed scenario; nothing here states an
// effect as a number.
#include "optadvisor/advisor/playbook.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "optadvisor/advisor/transforms.hpp"
#include "advisor/plan_conflict.hpp"
#include "base/units.hpp"

namespace optadvisor {

std::string plan_conflict(const Rule& rule, const std::vector<PlanStep>& steps) {
  for (const auto& s : steps)
    for (const auto& a : s.rule->transform)
      for (const auto& b : rule.transform)
        if (a.name == b.name) return s.rule->id;
  return {};
}

namespace {

double share(double part, double whole) { return whole > 0 ? part / whole : 0.0; }

std::string format_value(const nlohmann::json& v, const std::string& format) {
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    std::string out;
    for (const auto& x : v) out += (out.empty() ? "" : ", ") + format_value(x, "");
    return out;
  }
  if (!v.is_number()) return v.dump();
  const double x = v.get<double>();
  if (format.empty() && x == std::round(x) && std::fabs(x) < 1e15) return fmt::format("{:.0f}", x);
  if (format == "%") return fmt::format("{:.0f}%", x * 100);
  if (format == "gb") return format_gb(x);
  if (format == "s") return format_seconds(x);
  if (format == "x") return fmt::format("{:.2f}x", x);
  if (format == "int") return fmt::format("{:.0f}", x);
  return format_sig3(x);
}

bool same_model(const ModelRequest& a, const ModelRequest& b) {
  return a.preset == b.preset && a.config_path == b.config_path && a.gguf_path == b.gguf_path && a.params == b.params;
}

int level(const std::string& s) { return s == "low" ? 0 : s == "medium" ? 1 : 2; }

/// Why a condition fails, for the user.
std::string failure(const Condition& c, const Facts& facts, const std::map<std::string, double>& values) {
  if (!c.reason.empty()) return fill_template(c.reason, facts, values);
  if (!c.any.empty()) {
    std::string out;
    for (const auto& sub : c.any) out += (out.empty() ? "" : "; and ") + failure(sub, facts, values);
    return out;
  }
  auto it = facts.find(c.fact);
  const std::string actual = it == facts.end() ? "unknown" : format_value(it->second, "");
  return fmt::format("{} is {} (needs {} {})", c.fact, actual, c.op, format_value(c.value, ""));
}

class Advisor {
 public:
  Advisor(const Catalog& catalog, const RuleBook& book, const AdviceRequest& request) : catalog_(catalog), book_(book), request_(request) {}

  Advice run() {
    check_assumption_overrides(book_, request_.assumptions);
    Advice out;
    out.goal = request_.goal;
    out.metric = metric_for(request_.goal);
    for (const auto& [id, a] : book_.assumptions()) values_[id] = a.value;
    for (const auto& [id, v] : request_.assumptions) values_[id] = v;
    out.assumption_values = values_;
    const double min_gain = book_.defaults().min_gain;

    out.base = request_.goal == Goal::kTraining ? evaluate_training(training_request(with_defaults(out.notes)), nullptr)
                                                : evaluate(with_defaults(out.notes), nullptr);
    const Evaluation& base = out.base;
    if (base.is_training()) base_gpus_ = base.training().prepared.scenario.workload.gpus;
    out.diagnosis = diagnose(base);

    for (const Rule& rule : book_.rules()) {
      if (!rule.serves(request_.goal)) {
        std::string goals;
        for (Goal g : rule.goals) goals += (goals.empty() ? "" : ", ") + std::string(to_string(g));
        out.not_applicable.push_back({&rule, "goal", fmt::format("serves the {} goal(s), not {}", goals, to_string(request_.goal))});
        continue;
      }
      std::string reason;
      std::string stage = gate(rule, base.facts, reason);
      if (!stage.empty()) {
        out.not_applicable.push_back({&rule, stage, reason});
        continue;
      }
      if (!rule.quantified()) {
        Unquantified u{&rule, why(rule, base.facts), engine_id(base), rule.how_for(engine_id(base)), std::nullopt, {}};
        if (!rule.under_load.empty() && !base.is_training())
          u.under_load = compare_under_load(rule.under_load, catalog_, base.inference().request, base.inference().prepared,
                                            base.inference().analysis, u.under_load_note);
        out.unquantified.push_back(std::move(u));
        continue;
      }
      std::vector<std::string> notes;
      auto after = apply(rule, base, notes, reason);
      if (!after) {
        out.not_applicable.push_back({&rule, "transform", reason});
        continue;
      }
      if (const Condition* failed = first_failing(rule.after, after->facts)) {
        out.not_applicable.push_back({&rule, "after", failure(*failed, after->facts, values_)});
        continue;
      }
      const double gain = gain_of(base, *after);
      if (base.runs && !after->runs) {
        out.not_applicable.push_back(
            {&rule, "does not fit",
             fmt::format("would not fit: needs {} per device, {} usable", format_gb(after->memory_bytes), format_gb(limit_bytes(*after)))});
        continue;
      }
      if (!base.is_training() && feasibility(base) == 0 && feasibility(*after) == 1) {
        out.not_applicable.push_back(
            {&rule, "does not fit",
             fmt::format("would keep {} of {} layers in host memory; the device holds them all now",
                         after->inference().analysis.memory.offloaded_layers, after->inference().analysis.memory.total_layers)});
        continue;
      }
      if (!(gain >= min_gain)) {
        const bool progress = !base.runs && !after->runs && request_.goal != Goal::kMemory;
        out.not_applicable.push_back(
            {&rule, "no gain",
             progress ? fmt::format("still does not fit and needs no less memory: {} -> {}", format_gb(base.memory_bytes),
                                    format_gb(after->memory_bytes))
                      : fmt::format("no computed gain on {}: {} -> {}", out.metric.label, metric_text(base), metric_text(*after))});
        continue;
      }
      Recommendation r;
      r.rule = &rule;
      r.why = why(rule, base.facts);
      for (const auto& c : rule.requires_) r.prerequisites.push_back(fill_template(c.text, base.facts, values_));
      r.notes = std::move(notes);
      for (const auto& id : rule.assumptions) r.assumptions.push_back({id, values_.at(id), request_.assumptions.count(id) > 0});
      r.how_engine = engine_id(*after);
      const auto official = after->facts.find("quant.official_checkpoint");
      r.how = rule.how_for(r.how_engine, official != after->facts.end() && official->second != "");
      if (r.how.empty()) {
        r.how_engine = engine_id(base);
        r.how = rule.how_for(r.how_engine);
      }
      // The how-to states what the transform chose (the number of drafts), from the changed scenario.
      r.how = fill_template(r.how, after->facts, values_);
      r.gain_basis = basis_of(base, *after);
      r.after = std::move(*after);
      r.gain = gain;
      (rule.switches_model() ? out.alternatives : out.recommendations).push_back(std::move(r));
    }
    rank(out.recommendations);
    rank(out.alternatives);
    stack(out, min_gain);
    demote_offload(out);
    return out;
  }

 private:
  const Catalog& catalog_;
  const RuleBook& book_;
  const AdviceRequest& request_;
  std::map<std::string, double> values_;
  uint32_t base_gpus_ = 0;  ///< training: the GPUs the user asked for (a change that needs more is a class below)

  /// The user's request with the advisor's defaults for what was left out.
  ScenarioRequest with_defaults(std::vector<std::string>& notes) const {
    ScenarioRequest r = request_.scenario;
    if (r.hardware.empty()) throw bad_input("no hardware given", "pass --hw NAME (optadvisor hw list)");
    const HardwareProfile& hw = catalog_.resolve_hardware(r.hardware);
    const std::string cls(to_string(hw.device_class));
    if (!r.model.any()) {
      auto it = book_.defaults().models.find(cls);
      if (it == book_.defaults().models.end())
        throw bad_input(fmt::format("no default model for {} devices", cls), "pass --model M (optadvisor models)");
      r.model.preset = it->second;
      notes.push_back(fmt::format("model: {} (typical for {} devices; pick yours with --model)", it->second, cls));
    }
    auto w = book_.defaults().workloads.find(std::string(to_string(request_.goal)));
    if (w != book_.defaults().workloads.end()) {
      const nlohmann::json& d = w->second;
      std::vector<std::string> set;
      if (!r.batch && d.contains("batch")) {
        r.batch = d.at("batch").is_string() ? d.at("batch").get<std::string>() : std::to_string(d.at("batch").get<int64_t>());
        set.push_back("batch " + *r.batch);
      }
      if (!r.prompt_tokens && d.contains("prompt_tokens")) {
        r.prompt_tokens = d.at("prompt_tokens").get<int64_t>();
        set.push_back(fmt::format("prompt {}", *r.prompt_tokens));
      }
      if (!r.gen_tokens && d.contains("gen_tokens")) {
        r.gen_tokens = d.at("gen_tokens").get<int64_t>();
        set.push_back(fmt::format("generate {}", *r.gen_tokens));
      }
      if (!r.context_tokens && d.contains("context_tokens")) {
        const int64_t prompt_plus_gen = r.prompt_or_default() + r.gen_or_default();
        int64_t context = std::max<int64_t>(d.at("context_tokens").get<int64_t>(), prompt_plus_gen);
        // A preset shorter than the goal's default context gets its own maximum.
        if (!r.model.preset.empty() && catalog_.find_model(r.model.preset)) {
          const auto max_context = static_cast<int64_t>(catalog_.resolve_model(r.model.preset).max_position_embeddings);
          if (max_context > 0) context = std::min(context, std::max<int64_t>(max_context, prompt_plus_gen));
        }
        r.context_tokens = context;
        set.push_back(fmt::format("context {}", context));
      }
      if (!set.empty()) {
        std::string list;
        for (const auto& s : set) list += (list.empty() ? "" : ", ") + s;
        notes.push_back(
            fmt::format("{}: the {} goal's default (change with --batch, --prompt, --gen, --context)", list, to_string(request_.goal)));
      }
    }
    return r;
  }

  static std::string engine_id(const Evaluation& e) {
    return e.is_training() ? e.training().prepared.scenario.engine->id : e.inference().prepared.scenario.engine.engine->id;
  }
  static double limit_bytes(const Evaluation& e) {
    return e.is_training() ? e.training().analysis.memory.capacity_bytes : e.inference().analysis.memory.limit_bytes;
  }

  /// The training request: the training options plus what the scenario options say.
  TrainingRequest training_request(const ScenarioRequest& s) const {
    TrainingRequest t = request_.training;
    t.hardware = s.hardware;
    t.model = s.model;
    t.engine = s.engine;
    t.quant = s.quant;
    t.gpus = s.gpus;
    t.tp = s.tp;
    t.pp = s.pp;
    t.flash_attention = s.flash_attention;
    return t;
  }

  Evaluation evaluate_training(TrainingRequest request, const Evaluation* base) const {
    TrainingRun t;
    t.request = std::move(request);
    if (base && base->is_training() && same_model(base->training().request.model, t.request.model))
      t.prepared = prepare_training(catalog_, t.request, base->training().prepared.model);
    else
      t.prepared = prepare_training(catalog_, t.request);
    t.analysis = analyze_training(t.prepared.scenario);
    Evaluation e;
    e.facts = training_facts(t.prepared, t.analysis);
    e.runs = t.analysis.memory.fits;
    // Per GPU: a change that adds GPUs is judged by what each GPU then does, not by the job's scale.
    e.metric = t.analysis.tokens_per_s_per_gpu;
    e.memory_bytes = t.analysis.memory.total_bytes;
    e.run = std::move(t);
    return e;
  }

  Evaluation evaluate(ScenarioRequest request, const Evaluation* base) const {
    InferenceRun i;
    i.request = std::move(request);
    if (base && !base->is_training() && same_model(base->inference().request.model, i.request.model))
      i.prepared = prepare_scenario(catalog_, i.request, base->inference().prepared.model);
    else
      i.prepared = prepare_scenario(catalog_, i.request);
    i.analysis = analyze(i.prepared.scenario);
    Evaluation e;
    e.facts = inference_facts(i.prepared, i.analysis, request_.goal);
    e.runs = i.analysis.memory.fits || i.analysis.memory.offloaded_layers > 0;
    e.metric = goal_metric(request_.goal, i.analysis);
    e.memory_bytes = i.analysis.memory.total_bytes;
    e.bytes_per_token = i.analysis.decode.bytes / static_cast<double>(std::max<uint64_t>(i.analysis.batch, 1));
    e.run = std::move(i);
    return e;
  }

  /// "" when the rule's prerequisites and triggers hold, else the stage that failed and why.
  std::string gate(const Rule& rule, const Facts& facts, std::string& reason) const {
    for (const auto& [list, stage] : {std::pair{&rule.requires_, "prerequisite"}, {&rule.when, "trigger"}})
      if (const Condition* failed = first_failing(*list, facts)) {
        reason = failure(*failed, facts, values_);
        return stage;
      }
    return {};
  }

  static const Condition* first_failing(const std::vector<Condition>& list, const Facts& facts) {
    for (const auto& c : list)
      if (!c.holds(facts)) return &c;
    return nullptr;
  }

  std::vector<std::string> why(const Rule& rule, const Facts& facts) const {
    std::vector<std::string> out;
    for (const auto& c : rule.when) out.push_back(fill_template(c.because, facts, values_));
    return out;
  }

  /// Applies every transform step of a rule to `from`; empty with a reason when one does not apply.
  std::optional<Evaluation> apply(const Rule& rule, const Evaluation& from, std::vector<std::string>& notes, std::string& reason) const {
    Evaluation current = from;
    for (const auto& step : rule.transform) {
      const TransformStep resolved{step.name, resolve_params(step.params, values_)};
      // A training step gives the transforms empty inference members (TransformInput).
      static const InferenceRun kNoInference;
      const InferenceRun& inference = current.is_training() ? kNoInference : current.inference();
      TransformInput input{catalog_, inference.request, inference.prepared, inference.analysis};
      if (current.is_training()) {
        const TrainingRun& t = current.training();
        input.training_request = &t.request;
        input.training = &t.prepared;
        input.training_analysis = &t.analysis;
      }
      const TransformResult result = apply_transform(resolved, input);
      if (!result.request && !result.training_request) {
        reason = result.not_applicable;
        return std::nullopt;
      }
      notes.insert(notes.end(), result.notes.begin(), result.notes.end());
      try {
        current = result.training_request ? evaluate_training(*result.training_request, &from) : evaluate(*result.request, &from);
      } catch (const Error& e) {
        reason = e.what();
        return std::nullopt;
      }
    }
    return current;
  }

  double gain_of(const Evaluation& before, const Evaluation& after) const {
    const MetricInfo& m = metric_for(request_.goal);
    // Running at all comes first: making it run is an unbounded gain, and
    // breaking a scenario that runs is none. While neither runs, progress is
    // the memory it no longer needs (the memory goal's metric already is).
    if (before.runs != after.runs) return after.runs ? std::numeric_limits<double>::infinity() : 0.0;
    if (!after.runs && request_.goal != Goal::kMemory) return after.memory_bytes > 0 ? before.memory_bytes / after.memory_bytes : 0.0;
    if (m.lower_is_better) return after.metric > 0 ? before.metric / after.metric : std::numeric_limits<double>::infinity();
    return before.metric > 0 ? after.metric / before.metric : std::numeric_limits<double>::infinity();
  }

  std::string basis_of(const Evaluation& before, const Evaluation& after) const {
    if (before.runs != after.runs) return "runs";
    return !after.runs && request_.goal != Goal::kMemory ? "memory" : "metric";
  }

  std::string metric_text(const Evaluation& e) const {
    switch (request_.goal) {
      case Goal::kLatency: return format_seconds(e.metric);
      case Goal::kThroughput: return fmt::format("{} tokens/s", format_sig3(e.metric));
      case Goal::kMemory: return fmt::format("{:.0f}% of usable memory", e.metric * 100);
      case Goal::kTraining: return fmt::format("{} tokens/s per GPU", format_sig3(e.metric));
    }
    return format_sig3(e.metric);
  }

  /// 0 runs on the device, 1 runs with layers in host memory (llama.cpp offload) or, training,
  /// only on more GPUs than asked for, 2 does not run.
  int feasibility(const Evaluation& e) const {
    if (e.is_training()) return !e.runs ? 2 : e.training().prepared.scenario.workload.gpus > base_gpus_ ? 1 : 0;
    return e.inference().analysis.memory.fits ? 0 : e.runs ? 1 : 2;
  }

  /// The ranking's utility of a scenario reached by changes of the given quality class, effort and risk.
  Standing standing(const Evaluation& e, int quality, int effort, int risk, std::string id) const {
    Standing s;
    s.feasibility = feasibility(e);
    s.quality = quality;
    s.effort = effort;
    s.risk = risk;
    s.id = std::move(id);
    if (const auto gpus = e.facts.find("workload.gpus"); gpus != e.facts.end() && gpus->second.is_number())
      s.devices = gpus->second.get<double>();
    const bool lower = metric_for(request_.goal).lower_is_better;
    const double margin = values_.at("quality_step_margin");
    if (s.feasibility == 2 && request_.goal != Goal::kMemory)
      s.score = e.memory_bytes > 0 ? -std::log(e.memory_bytes) : 0.0;
    else if (e.metric > 0)
      s.score = lower ? -std::log(e.metric) : std::log(e.metric);
    else
      s.score = lower ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
    // The memory goal compares quality first; the speed goals ask a lossier change for a margin per class step.
    if (request_.goal != Goal::kMemory) s.score -= quality * std::log(margin);
    return s;
  }

  Standing standing(const Recommendation& r) const {
    return standing(r.after, r.rule->quality_class(), level(r.rule->effort), level(r.rule->risk_level), r.rule->id);
  }

  void rank(std::vector<Recommendation>& list) const {
    const bool quality_first = request_.goal == Goal::kMemory;
    std::vector<std::pair<Standing, Recommendation>> keyed;
    for (auto& r : list) keyed.emplace_back(standing(r), std::move(r));
    std::stable_sort(keyed.begin(), keyed.end(),
                     [&](const auto& a, const auto& b) { return ranks_above(a.first, b.first, quality_first); });
    list.clear();
    for (auto& [key, r] : keyed) list.push_back(std::move(r));
    for (std::size_t i = 0; i < list.size(); ++i) list[i].rank = static_cast<int>(i + 1);
  }

  /// When device-side changes together make the scenario fit (the plan), a
  /// host-offload rescue ranks below every device-side change: it runs now,
  /// but slower than the plan the playbook's device-side steps add up to.
  void demote_offload(Advice& out) const {
    if (out.plan.empty() || feasibility(out.plan.back().result) != 0 || feasibility(out.base) == 0) return;
    std::stable_partition(out.recommendations.begin(), out.recommendations.end(),
                          [&](const Recommendation& r) { return feasibility(r.after) != 1; });
    for (std::size_t i = 0; i < out.recommendations.size(); ++i) out.recommendations[i].rank = static_cast<int>(i + 1);
  }

  /// One candidate plan while searching: its steps, in rank order, and where they leave the scenario.
  struct Path {
    std::vector<PlanStep> steps;
    std::vector<std::size_t> picked;  ///< indices into the candidates
    Evaluation current;
  };

  Standing standing(const Path& p) const {
    int quality = 0, effort = 0, risk = 0;
    std::string id;
    for (const auto& s : p.steps) {
      quality = std::max(quality, s.rule->quality_class());
      effort = std::max(effort, level(s.rule->effort));
      risk = std::max(risk, level(s.rule->risk_level));
      id += s.rule->id + "+";
    }
    return standing(p.current, quality, effort, risk, id);
  }

  /// The step `rule` makes from `current`, or why it does not: its gate re-checked on that
  /// scenario, the transform applied, the model run again, and at least the smallest gain.
  std::optional<PlanStep> step(const Rule& rule, const Evaluation& current, double min_gain, std::string& reason) const {
    if (!gate(rule, current.facts, reason).empty()) {
      reason = "after the steps above: " + reason;
      return std::nullopt;
    }
    std::vector<std::string> notes;
    auto after = apply(rule, current, notes, reason);
    if (!after) {
      reason = "after the steps above: " + reason;
      return std::nullopt;
    }
    const double step_gain = gain_of(current, *after);
    if (feasibility(*after) > feasibility(current) || !(step_gain >= min_gain)) {
      reason = feasibility(*after) > feasibility(current) ? (current.is_training() && after->runs ? "the steps above run on the GPUs asked for"
                                                                                                  : "it would no longer fit after the steps above")
                                                          : "no further gain after the steps above";
      return std::nullopt;
    }
    PlanStep s;
    s.rule = &rule;
    s.step_gain = step_gain;
    s.gain_basis = basis_of(current, *after);
    s.notes = std::move(notes);
    s.result = std::move(*after);
    return s;
  }

  /// The plan: the best combination, under the ranking's utility, of the top
  /// ranked recommendations (at most `kSearched`, at most plan_steps of them,
  /// no two changing the same thing), each applied in rank order and re-checked
  /// on the scenario the earlier steps left. The single top recommendation is one
  /// of the combinations, so the plan never ranks below it.
  void stack(Advice& out, double min_gain) const {
    constexpr std::size_t kSearched = 6;
    const bool quality_first = request_.goal == Goal::kMemory;
    // The searched set: the top kSearched recommendations, where an alternative to a higher-ranked
    // one (the same transform: EAGLE, Medusa, a draft model) rides along without taking a place, so
    // a run of alternatives cannot crowd out the changes that combine with them (at most twice as many).
    std::vector<std::size_t> searched;
    for (std::size_t i = 0, places = 0; i < out.recommendations.size() && searched.size() < 2 * kSearched; ++i) {
      const Rule& rule = *out.recommendations[i].rule;
      const bool alternative = std::any_of(searched.begin(), searched.end(), [&](std::size_t j) {
        for (const auto& a : out.recommendations[j].rule->transform)
          for (const auto& b : rule.transform)
            if (a.name == b.name) return true;
        return false;
      });
      if (!alternative && places == kSearched) continue;
      if (!alternative) ++places;
      searched.push_back(i);
    }
    const std::size_t n = searched.size();
    const auto max_steps = static_cast<std::size_t>(book_.defaults().plan_steps);
    std::optional<Path> best;
    std::optional<Standing> best_standing;
    std::function<void(const Path&, std::size_t)> search = [&](const Path& path, std::size_t from) {
      if (!path.steps.empty()) {
        const Standing st = standing(path);
        // Ties go to the shorter plan (it was found first).
        if (!best_standing || ranks_above(st, *best_standing, quality_first)) {
          best = path;
          best_standing = st;
        }
      }
      if (path.steps.size() >= max_steps) return;
      for (std::size_t k = from; k < n; ++k) {
        const std::size_t i = searched[k];
        const Rule& rule = *out.recommendations[i].rule;
        if (!plan_conflict(rule, path.steps).empty()) continue;
        std::string reason;
        auto s = step(rule, path.current, min_gain, reason);
        if (!s) continue;
        Path next = path;
        next.current = s->result;
        next.steps.push_back(std::move(*s));
        next.picked.push_back(i);
        search(next, k + 1);
      }
    };
    search(Path{{}, {}, out.base}, 0);
    if (!best) return;
    out.plan = std::move(best->steps);
    for (std::size_t k = 0; k < out.plan.size(); ++k) {
      PlanStep& s = out.plan[k];
      s.cumulative_gain = gain_of(out.base, s.result);
      // When the baseline does not fit, later gains are counted from the step that made it run.
      const PlanStep* running = nullptr;
      for (std::size_t e = 0; e < k; ++e)
        if (out.plan[e].result.runs && !running) running = &out.plan[e];
      s.first_running_step = out.base.runs   ? 0
                             : running       ? static_cast<int>(running - out.plan.data()) + 1
                             : s.result.runs ? static_cast<int>(k) + 1
                                             : 0;
      s.gain_over_first = out.base.runs ? s.cumulative_gain : running ? gain_of(running->result, s.result) : 1.0;
    }
    // Why each searched recommendation is not in the plan.
    const Evaluation& last = out.plan.back().result;
    for (std::size_t i = 0; i < out.recommendations.size(); ++i) {
      const Rule& rule = *out.recommendations[i].rule;
      if (std::any_of(out.plan.begin(), out.plan.end(), [&](const PlanStep& s) { return s.rule == &rule; })) continue;
      if (std::find(searched.begin(), searched.end(), i) == searched.end()) {
        out.plan_skipped.push_back({&rule, fmt::format("not among the top {} recommendations the plan combines", kSearched)});
        continue;
      }
      if (const std::string c = plan_conflict(rule, out.plan); !c.empty()) {
        out.plan_skipped.push_back({&rule, fmt::format("changes what {} already changed", c)});
        continue;
      }
      std::string reason;
      if (out.plan.size() >= max_steps)
        reason = fmt::format("the plan has its {} steps", max_steps);
      else if (step(rule, last, min_gain, reason))
        reason = request_.goal == Goal::kMemory ? "a less lossy plan fits without it" : "its gain does not pay for its quality class";
      out.plan_skipped.push_back({&rule, reason});
    }
  }

  Diagnosis diagnose_training(const Evaluation& e) const {
    Diagnosis d;
    const TrainingAnalysis& a = e.training().analysis;
    const TrainingMemory& m = a.memory;
    d.phase = "training step";
    d.bound = std::string(to_string(a.bound));
    d.explanation = a.explanation;
    nlohmann::json& f = d.figures;
    f["step_time_s"] = a.time.step_time_s;
    f["tokens_per_s"] = a.tokens_per_s;
    f["tokens_per_s_per_gpu"] = a.tokens_per_s_per_gpu;
    f["mfu"] = a.mfu;
    f["memory_total_bytes"] = m.total_bytes;
    f["memory_limit_bytes"] = m.capacity_bytes;
    f["memory_fits"] = m.fits;
    f["model_state_bytes"] = m.model_state_bytes();
    f["activation_bytes"] = m.activation_bytes;
    f["compute_s"] = a.time.compute_s();
    f["communication_s"] = a.time.communication_s();
    f["pipeline_bubble_s"] = a.time.pp_bubble_s;
    return d;
  }

  Diagnosis diagnose(const Evaluation& e) const {
    if (e.is_training()) return diagnose_training(e);
    Diagnosis d;
    const Analysis& a = e.inference().analysis;
    const Workload& w = e.inference().prepared.scenario.workload;
    const auto& m = a.memory;
    const double gen = static_cast<double>(w.gen_tokens);
    const double decode_total = gen * a.decode.time_s;
    nlohmann::json& f = d.figures;
    f["memory_total_bytes"] = m.total_bytes;
    f["memory_limit_bytes"] = m.limit_bytes;
    f["memory_fits"] = m.fits;
    const double sustained = e.inference().prepared.scenario.hardware->sustained_fraction.value_or(1.0);
    if (sustained < 1.0) {
      d.thermal = true;
      f["sustained_fraction"] = sustained;
      f["sustained_decode_tokens_per_s"] = a.decode.tokens_per_s * sustained;
    }
    auto phase = [&](bool decode) {
      const PhaseEstimate& p = decode ? a.decode : a.prefill;
      d.phase = decode ? "decode" : "prefill";
      d.bound = std::string(to_string(p.bound));
      // The analysis says "decode: memory-bandwidth bound, ..."; the phase is reported separately.
      const std::string prefix = d.phase + ": ";
      const std::string text = p.explanation();
      d.explanation = text.rfind(prefix, 0) == 0 ? text.substr(prefix.size()) : text;
    };
    switch (request_.goal) {
      case Goal::kLatency:
      case Goal::kThroughput:
        phase(decode_total >= a.prefill.time_s);
        f["ttft_s"] = a.prefill.time_s;
        f["time_per_token_s"] = a.decode.time_s;
        f["decode_tokens_per_s"] = a.decode.tokens_per_s_per_sequence;
        f["request_latency_s"] = a.request_latency_s;
        f["decode_share"] = share(decode_total, a.request_latency_s);
        f["batch"] = a.batch;
        f["max_batch"] = m.max_batch;
        f["output_tokens_per_s"] = goal_metric(Goal::kThroughput, a);
        f["decode_bytes_per_token"] = e.bytes_per_token;
        f["arithmetic_intensity"] = d.phase == "decode" ? a.decode.arithmetic_intensity : a.prefill.arithmetic_intensity;
        f["ridge_point"] = a.decode.ridge_point;
        if (!e.runs) {
          d.bound = "memory-capacity";
          d.explanation = fmt::format("does not fit: needs {} per device, {} usable", format_gb(m.total_bytes), format_gb(m.limit_bytes));
        }
        break;
      case Goal::kMemory: {
        d.phase = "memory";
        d.bound = m.fits ? "none" : "memory-capacity";
        struct Part {
          const char* name;
          double bytes;
        };
        const Part parts[] = {{"weights", m.weights_bytes},
                              {"KV cache", m.kv_cache_bytes},
                              {"activations", m.activation_bytes},
                              {"runtime overhead", m.overhead_bytes}};
        const Part* top = &parts[0];
        for (const auto& p : parts)
          if (p.bytes > top->bytes) top = &p;
        d.explanation = fmt::format("{}: needs {} per device, {} usable ({:.0f}%); {} are {:.0f}% of it", m.fits ? "fits" : "does not fit",
                                    format_gb(m.total_bytes), format_gb(m.limit_bytes), share(m.total_bytes, m.limit_bytes) * 100,
                                    top->name, share(top->bytes, m.total_bytes) * 100);
        if (m.offloaded_layers > 0)
          d.explanation += fmt::format("; llama.cpp keeps {} of {} layers in host memory", m.offloaded_layers, m.total_layers);
        f["weights_bytes"] = m.weights_bytes;
        f["kv_cache_bytes"] = m.kv_cache_bytes;
        f["activation_bytes"] = m.activation_bytes;
        f["overhead_bytes"] = m.overhead_bytes;
        f["headroom_bytes"] = m.limit_bytes - m.total_bytes;
        f["max_context_tokens"] = m.max_context;
        f["max_batch"] = m.max_batch;
        f["offloaded_layers"] = m.offloaded_layers;
        f["use_fraction"] = share(m.total_bytes, m.limit_bytes);
        break;
      }
      case Goal::kTraining: break;
    }
    return d;
  }
};

}  // namespace

nlohmann::json resolve_params(const nlohmann::json& params, const std::map<std::string, double>& values) {
  nlohmann::json out = params;
  for (auto& [key, v] : out.items()) {
    if (v.is_string() && !v.get<std::string>().empty() && v.get<std::string>()[0] == '@')
      v = values.at(v.get<std::string>().substr(1));
    else if (v.is_object())
      v = resolve_params(v, values);
  }
  return out;
}

namespace {

void hardware_facts(Facts& f, const HardwareProfile& hw) {
  const Capabilities& c = hw.capabilities;
  f["hardware.id"] = hw.id;
  f["hardware.name"] = hw.name;
  f["hardware.class"] = std::string(to_string(hw.device_class));
  f["hardware.vendor"] = hw.vendor;
  f["hardware.capabilities.fp8"] = c.fp8;
  f["hardware.capabilities.nvfp4"] = c.nvfp4;
  f["hardware.capabilities.mxfp4"] = c.mxfp4;
  f["hardware.capabilities.int4"] = c.int4;
  f["hardware.capabilities.int8"] = c.int8;
  f["hardware.capabilities.flash_attention_2"] = c.flash_attention_2;
  f["hardware.capabilities.flash_attention_3"] = c.flash_attention_3;
  f["hardware.capabilities.cuda_graphs"] = c.cuda_graphs;
  f["hardware.capabilities.unified_memory"] = c.unified_memory;
  f["hardware.capabilities.npu"] = c.npu;
  f["hardware.capabilities.multi_gpu_link"] = c.multi_gpu_link;
  std::vector<std::string> engines;
  for (const auto& e : hw.engines) {
    const std::string base = e.substr(0, e.find(':'));
    if (std::find(engines.begin(), engines.end(), base) == engines.end()) engines.push_back(base);
  }
  f["hardware.engines"] = engines;
  f["hardware.memory_bytes"] = hw.memory_capacity_bytes;
  f["hardware.usable_fraction"] = hw.memory_usable_fraction.value_or(1.0);
  f["hardware.app_memory_limit"] = hw.app_limit_bytes.has_value();
  f["hardware.entitled_memory_limit"] = hw.app_limit_entitled_bytes.has_value();
  f["hardware.sustained_fraction"] = hw.sustained_fraction.value_or(1.0);
}

void model_facts(Facts& f, const ModelSpec& m, double params, double active_params) {
  f["model.id"] = m.id;
  f["model.name"] = m.name;
  f["model.params"] = params;
  f["model.active_params"] = active_params;
  f["model.moe"] = m.num_experts > 0;
  f["model.mtp_layers"] = m.num_nextn_predict_layers;
  f["model.sliding_window"] = kv_shape(m).sliding_layers > 0;
  f["model.mla"] = m.kv_lora_rank > 0;
  f["model.layers"] = m.num_hidden_layers;
  f["model.attention_heads"] = m.num_attention_heads;
  f["model.kv_heads"] = m.num_key_value_heads;
  f["model.max_context"] = m.max_position_embeddings;
}

}  // namespace

Facts inference_facts(const PreparedScenario& ps, const Analysis& a, Goal goal) {
  const Scenario& s = ps.scenario;
  const Workload& w = s.workload;
  const EngineProfile& engine = *s.engine.engine;
  const MemoryBreakdown& mem = a.memory;
  Facts f;
  f["goal"] = std::string(to_string(goal));
  hardware_facts(f, *s.hardware);
  model_facts(f, s.model, s.weights.params, s.weights.active_params);
  f["engine.id"] = engine.id;
  f["engine.backend"] = s.engine.backend->name;
  f["engine.kv_dtypes"] = engine.kv_dtypes;
  f["engine.quants"] = engine.quants;
  f["engine.paged_kv"] = engine.memory.kv_block_tokens > 0;
  f["engine.memory_share"] = engine_memory_share(s).value_or(0.0);
  f["quant.id"] = ps.quant->id;
  const OfficialRelease* release = official_release(s.model, ps.quant->id, ps.model.asked());
  f["quant.official_checkpoint"] = release ? release->repo : std::string();
  f["quant.container"] = std::string(to_string(ps.quant->container));
  f["quant.bits_per_weight"] = s.weights.bits_per_weight;
  f["quant.quantized"] = s.weights.quantized;
  f["workload.batch"] = a.batch;
  f["workload.batch_max"] = w.batch_max;
  f["workload.prompt_tokens"] = w.prompt_tokens;
  f["workload.gen_tokens"] = w.gen_tokens;
  f["workload.ubatch_tokens"] = s.prefill_chunk_tokens();
  f["workload.context_tokens"] = w.context();
  f["workload.kv_dtype"] = w.kv_dtype;
  f["workload.kv_bits"] = w.kv_bytes_per_element * 8.0;
  f["workload.gpus"] = w.gpus;
  f["workload.tp"] = w.tp;
  f["workload.replicas"] = w.replicas;
  f["workload.ep"] = w.ep;
  f["workload.dp_attention"] = w.dp_attention;
  f["workload.expert_offload_layers"] = w.cpu_moe_layers;
  f["workload.pp"] = w.pp;
  f["workload.flash_attention"] = a.factors.flash_attention;
  f["workload.attention_kernel"] = w.attention_kernel;
  f["workload.graphs"] = a.factors.graphs;
  f["workload.speculative"] = w.speculation.enabled();
  f["workload.draft_tokens"] = w.speculation.draft_tokens;
  f["workload.accepted_tokens"] = w.speculation.enabled() ? w.speculation.accepted_tokens : 1.0;
  f["workload.prefix_cached_fraction"] = w.prefix_cached_fraction;
  f["workload.weights_mmap"] = w.weights_mmap;
  f["workload.memory_limit_raised"] = w.usable_memory_fraction.has_value() || w.entitled_memory_limit;
  f["memory.fits"] = mem.fits;
  f["memory.runs"] = mem.fits || mem.offloaded_layers > 0;
  f["memory.total_bytes"] = mem.total_bytes;
  f["memory.limit_bytes"] = mem.limit_bytes;
  f["memory.use_fraction"] = share(mem.total_bytes, mem.limit_bytes);
  f["memory.headroom_bytes"] = mem.limit_bytes - mem.total_bytes;
  f["memory.weights_share"] = share(mem.weights_bytes, mem.total_bytes);
  f["memory.kv_share"] = share(mem.kv_cache_bytes, mem.total_bytes);
  f["memory.max_batch"] = mem.max_batch;
  f["memory.kv_tokens_per_sequence"] = mem.kv_tokens_per_sequence;
  f["memory.max_context"] = mem.max_context;
  f["memory.offloaded_layers"] = mem.offloaded_layers;
  f["prefill.bound"] = std::string(to_string(a.prefill.bound));
  f["prefill.time_s"] = a.prefill.time_s;
  f["prefill.passes"] = a.prefill.passes;
  f["prefill.attention_share"] = share(a.prefill.attention_compute_time_s, a.prefill.time_s);
  const PhaseEstimate& d = a.decode;
  f["decode.bound"] = std::string(to_string(d.bound));
  f["decode.time_s"] = d.time_s;
  // Shares of the step's time (the exposed parts, which sum to it).
  f["decode.weights_share"] = share(d.exposed_weights_s + d.exposed_offload_s, d.time_s);
  f["decode.kv_share"] = share(d.exposed_kv_s, d.time_s);
  f["decode.compute_share"] = share(d.exposed_compute_s, d.time_s);
  f["decode.overhead_share"] = share(d.overhead_time_s, d.time_s);
  f["decode.interconnect_share"] = share(d.interconnect_time_s, d.time_s);
  const double decode_total = static_cast<double>(w.gen_tokens) * d.time_s;
  f["request.decode_share"] = share(decode_total, a.request_latency_s);
  f["throughput.tokens_per_s"] = goal_metric(Goal::kThroughput, a);
  return f;
}

Facts training_facts(const PreparedTraining& p, const TrainingAnalysis& a) {
  const TrainingScenario& sc = p.scenario;
  const TrainingWorkload& w = sc.workload;
  const TrainingMemory& m = a.memory;
  const TrainingTime& t = a.time;
  Facts f;
  f["goal"] = "training";
  hardware_facts(f, *sc.hardware);
  model_facts(f, p.model.spec, sc.model.params, static_cast<double>(active_parameter_count(p.model.spec)));
  f["memory.fits"] = m.fits;
  f["memory.runs"] = m.fits;
  f["memory.total_bytes"] = m.total_bytes;
  f["memory.limit_bytes"] = m.capacity_bytes;
  f["memory.use_fraction"] = share(m.total_bytes, m.capacity_bytes);
  f["memory.headroom_bytes"] = m.capacity_bytes - m.total_bytes;
  f["training.engine"] = sc.engine->id;
  f["training.shardings"] = sc.engine->shardings;
  f["training.engine_lora"] = sc.engine->lora;
  f["training.bound"] = std::string(to_string(a.bound));
  f["training.fits"] = m.fits;
  f["training.precision"] = std::string(to_string(w.precision));
  f["training.recompute"] = std::string(to_string(w.recompute));
  f["training.sharding_stage"] = w.sharding.stage;
  f["training.gpus"] = w.gpus;
  f["training.data_parallel"] = w.dp;
  f["training.tp"] = w.tp;
  f["training.pp"] = w.pp;
  f["training.cp"] = w.cp;
  f["training.sequence_parallel"] = w.sequence_parallel;
  f["training.compiled"] = w.compiled;
  f["training.sequence_tokens"] = w.seq;
  f["training.micro_batch"] = w.micro_batch;
  f["training.grad_accum"] = w.microbatches;
  f["training.lora"] = w.lora_rank > 0;
  f["training.qlora"] = w.lora_rank > 0 && !w.lora_base_quant.empty();
  f["training.optimizer"] = w.optimizer;
  f["training.step_time_s"] = t.step_time_s;
  f["training.mfu"] = a.mfu;
  f["training.attention_share"] = share(t.attention_s, t.step_time_s);
  f["training.recompute_share"] = share(t.recompute_s, t.step_time_s);
  f["training.comm_share"] = share(t.communication_s(), t.step_time_s);
  f["training.memory_share_activations"] = share(m.activation_bytes, m.total_bytes);
  f["training.memory_share_states"] = share(m.model_state_bytes(), m.total_bytes);
  f["training.headroom_bytes"] = m.capacity_bytes - m.total_bytes;
  f["training.optimizer_offload"] = w.optimizer_offload;
  f["training.activation_offload"] = w.activation_offload;
  f["training.host_link"] = !sc.hardware->unified_memory && sc.hardware->pcie.has_value();
  f["training.offload_share"] = share(t.offload_s(), t.step_time_s);
  return f;
}

std::string fill_template(const std::string& text, const Facts& facts, const std::map<std::string, double>& assumptions) {
  std::string out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t open = text.find('{', pos);
    if (open == std::string::npos) break;
    const std::size_t close = text.find('}', open);
    if (close == std::string::npos) break;
    out += text.substr(pos, open - pos);
    const std::string inner = text.substr(open + 1, close - open - 1);
    if (!is_placeholder(inner)) {
      out += '{';
      pos = open + 1;
      continue;
    }
    const std::size_t colon = inner.find(':');
    const std::string name = inner.substr(0, colon);
    const std::string format = colon == std::string::npos ? "" : inner.substr(colon + 1);
    if (!name.empty() && name[0] == '@') {
      auto it = assumptions.find(name.substr(1));
      out += it == assumptions.end() ? "?" : format_value(it->second, format);
    } else {
      auto it = facts.find(name);
      out += it == facts.end() ? "?" : format_value(it->second, format);
    }
    pos = close + 1;
  }
  out += text.substr(pos);
  return out;
}

bool ranks_above(const Standing& a, const Standing& b, bool quality_first) {
  if (a.feasibility != b.feasibility) return a.feasibility < b.feasibility;
  if (quality_first && a.quality != b.quality) return a.quality < b.quality;
  if (quality_first && a.devices != b.devices) return a.devices < b.devices;
  if (a.score != b.score) return a.score > b.score;
  if (a.effort != b.effort) return a.effort < b.effort;
  if (a.risk != b.risk) return a.risk < b.risk;
  return a.id < b.id;
}

Advice advise(const Catalog& catalog, const RuleBook& book, const AdviceRequest& request) { return Advisor(catalog, book, request).run(); }

}  // namespace optadvisor
