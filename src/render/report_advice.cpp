// SPDX-License-Identifier: MIT
// Renders the advisor's result and the rule book. Text fits 100 columns.
#include "optadvisor/render/report_advice.hpp"

#include <cmath>

#include <fmt/format.h>

#include "base/table.hpp"
#include "optadvisor/analysis/analysis_json.hpp"
#include "optadvisor/advisor/transforms.hpp"
#include "optadvisor/render/report_estimate.hpp"
#include "base/units.hpp"
#include "base/strings.hpp"

namespace optadvisor {
namespace {

/// What the KV cache holds: "8192 tokens x batch 1", or on a server "batch 16 x 640 tokens, or one
/// sequence of 8192" (sequences hold prompt + gen; the pool holds at least one of the maximum length).
std::string kv_cache_text(const MemoryBreakdown& m, const Workload& w, uint64_t batch) {
  if (m.kv_tokens_per_sequence >= w.context()) return fmt::format("{} tokens x batch {}", w.context(), batch);
  return fmt::format("batch {} x {} tokens, or one sequence of {}", batch, m.kv_tokens_per_sequence, w.context());
}


constexpr std::size_t kWidth = 100;

/// Word-wraps `text` to kWidth columns; the first line starts after `first`
/// (already printed, `first_width` wide), later lines after `indent` spaces.
std::string wrap(const std::string& text, std::size_t indent, std::size_t first_width) {
  std::string out;
  std::size_t column = first_width;
  std::size_t pos = 0;
  bool line_start = true;
  while (pos < text.size()) {
    std::size_t end = text.find(' ', pos);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(pos, end - pos);
    pos = end + 1;
    if (word.empty()) continue;
    const std::size_t w = display_width(word);
    if (!line_start && column + 1 + w > kWidth) {
      out += "\n" + std::string(indent, ' ');
      column = indent;
      line_start = true;
    }
    if (!line_start) {
      out += ' ';
      ++column;
    }
    out += word;
    column += w;
    line_start = false;
  }
  return out + "\n";
}

/// "  label    text", wrapped under the text.
std::string field(const std::string& label, const std::string& text) {
  const std::string head = fmt::format("   {:<9}", label);
  return head + wrap(text, head.size(), head.size());
}

std::string metric_text(Goal goal, const Evaluation& e) {
  switch (goal) {
    case Goal::kLatency: return format_seconds(e.metric);
    case Goal::kThroughput: return e.metric >= 100 ? fmt::format("{:.0f} tok/s", e.metric) : format_sig3(e.metric) + " tok/s";
    case Goal::kMemory: return fmt::format("{:.0f}%", e.metric * 100);
    case Goal::kTraining: return e.metric >= 100 ? fmt::format("{:.0f} tok/s", e.metric) : format_sig3(e.metric) + " tok/s";
  }
  return format_sig3(e.metric);
}

std::string gain_text(double gain, const std::string& basis = "metric") {
  if (std::isinf(gain)) return "runs";
  return fmt::format("{:.2f}x{}", gain, basis == "memory" ? " mem" : "");
}

std::string gb_pair(double before, double after) {
  return fmt::format("{} -> {} GB", format_sig3(before / kBytesPerGB), format_sig3(after / kBytesPerGB));
}

nlohmann::json gain_json(double gain) { return std::isinf(gain) ? nlohmann::json(nullptr) : nlohmann::json(gain); }

nlohmann::json pair_json(double before, double after) { return {{"before", before}, {"after", after}}; }

std::string title_line(const Advice& a) {
  if (a.base.is_training()) {
    const TrainingScenario& t = a.base.training().prepared.scenario;
    return fmt::format("{} training on {} x {} with {}", a.base.training().prepared.model.spec.name, t.workload.gpus, t.hardware->name,
                       t.engine->id);
  }
  const Scenario& s = a.base.inference().prepared.scenario;
  return fmt::format("{} ({}, {}) on {} with {}", s.model.name, a.base.inference().prepared.quant->id, format_gb(s.weights.total_bytes),
                     s.hardware->name, s.engine.id());
}

std::string goal_line(const Advice& a) {
  switch (a.goal) {
    case Goal::kLatency:
      return fmt::format("goal: latency (request latency = time to first token + {} tokens x time per token)",
                         a.base.inference().prepared.scenario.workload.gen_tokens);
    case Goal::kThroughput: return "goal: throughput (serving output tokens/s = batch x generated tokens / (prefill + decode time))";
    case Goal::kMemory: return "goal: memory (needed / usable memory per device; fit the model and its context)";
    case Goal::kTraining: return "goal: training (tokens/s per GPU of the whole job, one optimizer step after another)";
  }
  return {};
}

std::string workload_line(const Evaluation& e) {
  if (e.is_training()) {
    const TrainingWorkload& t = e.training().prepared.scenario.workload;
    std::string lora =
        t.lora_rank ? fmt::format(", LoRA rank {}{}", t.lora_rank, t.lora_base_quant.empty() ? "" : " on " + t.lora_base_quant) : "";
    return fmt::format(
        "workload: {} GPU{} (dp {}, tp {}, pp {}, cp {}), sequence {}, micro-batch {}, global batch {}, {}, recompute {}, {}, {}{}", t.gpus,
        t.gpus == 1 ? "" : "s", t.dp, t.tp, t.pp, t.cp, t.seq, t.micro_batch, t.global_batch, to_string(t.precision),
        to_string(t.recompute), t.sharding.name, t.optimizer, lora);
  }
  const Workload& w = e.inference().prepared.scenario.workload;
  return fmt::format("workload: batch {}, prompt {}, generate {}, context {}, KV cache {}{}",
                     w.batch_max ? fmt::format("max ({})", e.inference().analysis.batch) : std::to_string(w.batch), w.prompt_tokens,
                     w.gen_tokens, w.context(), w.kv_dtype, gpus_text(w));
}

std::vector<std::string> training_diagnosis_lines(const Advice& a) {
  const TrainingAnalysis& t = a.base.training().analysis;
  const TrainingMemory& m = t.memory;
  return {"bound: " + a.diagnosis.explanation,
          fmt::format("step {}: {} tokens/s ({} per GPU), MFU {:.0f}%; compute {}, exposed communication {}, pipeline bubble {}",
                      format_seconds(t.time.step_time_s), format_sig3(t.tokens_per_s), format_sig3(t.tokens_per_s_per_gpu), t.mfu * 100,
                      format_seconds(t.time.compute_s()), format_seconds(t.time.communication_s()), format_seconds(t.time.pp_bubble_s)),
          fmt::format("memory per GPU: {} of {} ({:.0f}%){}; model states {}, activations {}", format_gb(m.total_bytes),
                      format_gb(m.capacity_bytes), m.capacity_bytes > 0 ? 100 * m.total_bytes / m.capacity_bytes : 0.0,
                      m.fits ? "" : ", does not fit", format_gb(m.model_state_bytes()), format_gb(m.activation_bytes))};
}

std::vector<std::string> diagnosis_lines(const Advice& a) {
  if (a.base.is_training()) return training_diagnosis_lines(a);
  std::vector<std::string> lines;
  const Analysis& an = a.base.inference().analysis;
  const auto& f = a.diagnosis.figures;
  const auto& m = an.memory;
  switch (a.goal) {
    case Goal::kLatency:
    case Goal::kThroughput: {
      const double decode_share = f.value("decode_share", 0.0);
      const Workload& w = a.base.inference().prepared.scenario.workload;
      if (!a.base.runs) {
        lines.push_back("bound: memory-capacity: " + a.diagnosis.explanation + "; nothing below runs until it fits");
        lines.push_back(fmt::format("if it fit: {} {} (time to first token {}, {} per token)", a.metric.label, metric_text(a.goal, a.base),
                                    format_seconds(an.prefill.time_s), format_seconds(an.decode.time_s)));
        break;
      }
      if (a.diagnosis.phase == "decode")
        lines.push_back(fmt::format("decode dominates: {:.0f}% of a request ({} tokens x {}; time to first token {})", decode_share * 100,
                                    w.gen_tokens, format_seconds(an.decode.time_s), format_seconds(an.prefill.time_s)));
      else
        lines.push_back(fmt::format("prefill dominates: {:.0f}% of a request (time to first token {}; {} tokens x {})",
                                    (1 - decode_share) * 100, format_seconds(an.prefill.time_s), w.gen_tokens,
                                    format_seconds(an.decode.time_s)));
      lines.push_back("bound: " + a.diagnosis.explanation);
      if (a.goal == Goal::kLatency)
        lines.push_back(fmt::format("request latency {}; decode {:.1f} tokens/s per sequence", metric_text(a.goal, a.base),
                                    an.decode.tokens_per_s_per_sequence));
      else
        lines.push_back(
            fmt::format("serving {} at batch {} ({} sequences of {} tokens fit)", metric_text(a.goal, a.base), an.batch, m.max_batch,
                        m.kv_tokens_per_sequence));
      lines.push_back(fmt::format("memory: {} of {} usable per device ({:.0f}%){}", format_gb(m.total_bytes), format_gb(m.limit_bytes),
                                  m.limit_bytes > 0 ? 100 * m.total_bytes / m.limit_bytes : 0.0, m.fits ? "" : ", does not fit"));
      break;
    }
    case Goal::kMemory:
      lines.push_back(a.diagnosis.bound == "none" ? "bound: none (it fits)" : "bound: memory-capacity");
      lines.push_back(a.diagnosis.explanation);
      lines.push_back(fmt::format("weights {}, KV cache {} ({}), activations {}, runtime {}", format_gb(m.weights_bytes),
                                  format_gb(m.kv_cache_bytes), kv_cache_text(m, a.base.inference().prepared.scenario.workload, an.batch),
                                  format_gb(m.activation_bytes), format_gb(m.overhead_bytes)));
      lines.push_back(m.kv_tokens_per_sequence < a.base.inference().prepared.scenario.workload.context()
                          ? fmt::format("longest sequence the KV pool holds: {} tokens", m.max_context)
                          : fmt::format("largest context at this batch: {} tokens", m.max_context));
      break;
    case Goal::kTraining: break;
  }
  if (a.diagnosis.thermal)
    lines.push_back(fmt::format("thermal: after minutes of load the device keeps about {:.0f}% of these speeds ({:.1f} tokens/s decode)",
                                f.value("sustained_fraction", 1.0) * 100, f.value("sustained_decode_tokens_per_s", 0.0)));
  return lines;
}

std::string source_text(const nlohmann::json& s) {
  return fmt::format("{} <{}> (read {})", s.value("title", ""), s.value("url", ""), s.value("read", ""));
}
std::string source_short(const nlohmann::json& s) { return fmt::format("{} <{}>", s.value("title", ""), s.value("url", "")); }

std::string number_text(double x) { return x == std::round(x) && std::fabs(x) < 1e15 ? fmt::format("{:.0f}", x) : format_sig3(x); }

std::string assumption_text(const UsedAssumption& u, const RuleBook& book) {
  const Assumption& a = book.assumptions().at(u.id);
  return fmt::format("{} = {} {}{}", u.id, number_text(u.value), a.unit, u.overridden ? " (your --assume)" : "");
}

std::string stage_label(const std::string& stage) {
  if (stage == "prerequisite") return "prerequisite";
  if (stage == "trigger") return "not triggered";
  if (stage == "transform") return "cannot apply";
  if (stage == "after") return "not what it says here";
  return stage;
}

/// "(engine) " when the how-to is specific to an engine, "" for the generic one.
std::string how_label(const Rule& rule, const std::string& engine) { return rule.how.count(engine) ? "(" + engine + ") " : ""; }

nlohmann::json impact_json(const Recommendation& r, const Advice& a) {
  nlohmann::json impact = {{"metric", a.metric.id},
                           {"unit", a.metric.unit},
                           {"before", a.base.metric},
                           {"after", r.after.metric},
                           {"gain", gain_json(r.gain)},
                           {"gain_basis", r.gain_basis},
                           {"makes_it_run", std::isinf(r.gain)},
                           {"memory_bytes", pair_json(a.base.memory_bytes, r.after.memory_bytes)},
                           {"fits", {{"before", a.base.runs}, {"after", r.after.runs}}}};
  if (a.base.is_training()) {
    impact["step_time_s"] = pair_json(a.base.training().analysis.time.step_time_s, r.after.training().analysis.time.step_time_s);
    impact["mfu"] = pair_json(a.base.training().analysis.mfu, r.after.training().analysis.mfu);
    return impact;
  }
  const Analysis& before = a.base.inference().analysis;
  const Analysis& after = r.after.inference().analysis;
  impact["bytes_per_token"] = pair_json(a.base.bytes_per_token, r.after.bytes_per_token);
  impact["ttft_s"] = pair_json(before.prefill.time_s, after.prefill.time_s);
  impact["time_per_token_s"] = pair_json(before.decode.time_s, after.decode.time_s);
  return impact;
}

nlohmann::json recommendation_json(const Recommendation& r, const Advice& a, const RuleBook& book) {
  nlohmann::json assumptions = nlohmann::json::array();
  for (const auto& u : r.assumptions) {
    const Assumption& as = book.assumptions().at(u.id);
    assumptions.push_back(
        {{"id", u.id}, {"value", u.value}, {"unit", as.unit}, {"overridden", u.overridden}, {"description", as.description}});
  }
  nlohmann::json how_all = nlohmann::json::object();
  for (const auto& [engine, text] : r.rule->how) how_all[engine] = text;
  return {{"id", r.rule->id},
          {"title", r.rule->title},
          {"rank", r.rank},
          {"why", r.why},
          {"impact", impact_json(r, a)},
          {"changes", r.notes},
          {"prerequisites", r.prerequisites},
          {"how", {{"engine", r.how_engine}, {"text", r.how}}},
          {"how_by_engine", how_all},
          {"effort", r.rule->effort},
          {"quality", r.rule->quality},
          {"risk", {{"level", r.rule->risk_level}, {"text", fill_template(r.rule->risk, a.base.facts, a.assumption_values)}}},
          {"assumptions", assumptions},
          {"effects", r.rule->effects},
          {"sources", r.rule->sources}};
}

}  // namespace

namespace {

/// One side of a load comparison in JSON.
nlohmann::json load_side_json(const std::string& label, const ServingResult& r) {
  return {{"layout", label},
          {"fits", r.fits},
          {"ttft_p90_s", r.ttft_s.p90},
          {"tpot_p90_s", r.tpot_s.p90},
          {"ttft_mean_s", r.ttft_s.mean},
          {"tpot_mean_s", r.tpot_s.mean},
          {"output_tokens_per_s", r.output_tokens_per_s}};
}

/// A rule whose effect is not computed, with its serving comparison when it has one.
nlohmann::json unquantified_json(const Unquantified& u) {
  return {{"id", u.rule->id},
          {"title", u.rule->title},
          {"why", u.why},
          {"not_quantified", u.rule->not_quantified},
          {"under_load", u.under_load ? nlohmann::json{{"kind", u.under_load->kind},
                                                       {"setting", u.under_load->setting},
                                                       {"as_is", load_side_json(u.under_load->base_label, u.under_load->base)},
                                                       {"changed", load_side_json(u.under_load->alt_label, u.under_load->alt)}}
                                      : nlohmann::json(nullptr)},
          {"how", {{"engine", u.how_engine}, {"text", u.how}}},
          {"sources", u.rule->sources}};
}

/// The stacked plan: its steps, the rules left out and the result against the scenario as given.
nlohmann::json plan_json(const Advice& a) {
  nlohmann::json steps = nlohmann::json::array();
  for (std::size_t i = 0; i < a.plan.size(); ++i) {
    const PlanStep& s = a.plan[i];
    nlohmann::json step = {{"step", i + 1},
                           {"id", s.rule->id},
                           {"metric", s.result.metric},
                           {"step_gain", gain_json(s.step_gain)},
                           {"gain_basis", s.gain_basis},
                           {"cumulative_gain", gain_json(s.cumulative_gain)},
                           {"gain_over_first_step", gain_json(s.gain_over_first)},
                           {"memory_bytes", s.result.memory_bytes},
                           {"changes", s.notes}};
    if (!s.result.is_training()) step["bytes_per_token"] = s.result.bytes_per_token;
    steps.push_back(step);
  }
  nlohmann::json skipped = nlohmann::json::array();
  for (const auto& s : a.plan_skipped) skipped.push_back({{"id", s.rule->id}, {"reason", s.reason}});
  const Evaluation& last = a.plan.empty() ? a.base : a.plan.back().result;
  return {{"steps", steps},
          {"skipped", skipped},
          {"result",
           {{"before", a.base.metric},
            {"after", last.metric},
            {"gain", gain_json(a.plan.empty() ? 1.0 : a.plan.back().cumulative_gain)},
            {"memory_bytes", pair_json(a.base.memory_bytes, last.memory_bytes)}}}};
}

/// The training scenario the advice is about: hardware, model, engine and the parallel layout.
nlohmann::json training_scenario_json(const TrainingRun& run) {
  const TrainingScenario& t = run.prepared.scenario;
  const TrainingWorkload& w = t.workload;
  return {{"hardware", {{"id", t.hardware->id}, {"name", t.hardware->name}, {"class", std::string(to_string(t.hardware->device_class))}}},
          {"model", {{"id", run.prepared.model.spec.id}, {"name", run.prepared.model.spec.name}, {"params", t.model.params}}},
          {"engine", {{"id", t.engine->id}}},
          {"workload",
           {{"gpus", w.gpus},
            {"dp", w.dp},
            {"tp", w.tp},
            {"pp", w.pp},
            {"cp", w.cp},
            {"seq", w.seq},
            {"micro_batch", w.micro_batch},
            {"global_batch", w.global_batch},
            {"precision", std::string(to_string(w.precision))},
            {"recompute", std::string(to_string(w.recompute))},
            {"sharding", w.sharding.name},
            {"optimizer", w.optimizer},
            {"lora_rank", w.lora_rank}}}};
}

}  // namespace

nlohmann::json advice_json(const Advice& a, const RuleBook& book) {
  nlohmann::json recs = nlohmann::json::array();
  for (const auto& r : a.recommendations) recs.push_back(recommendation_json(r, a, book));
  nlohmann::json alternatives = nlohmann::json::array();
  for (const auto& r : a.alternatives) alternatives.push_back(recommendation_json(r, a, book));
  nlohmann::json unq = nlohmann::json::array();
  for (const auto& u : a.unquantified) unq.push_back(unquantified_json(u));
  nlohmann::json na = nlohmann::json::array();
  for (const auto& n : a.not_applicable)
    if (n.stage != "goal") na.push_back({{"id", n.rule->id}, {"stage", n.stage}, {"reason", n.reason}});
  nlohmann::json assumptions = nlohmann::json::object();
  for (const auto& [id, v] : a.assumption_values) assumptions[id] = v;
  const nlohmann::json scenario = a.base.is_training() ? training_scenario_json(a.base.training())
                                                       : scenario_json(a.base.inference().prepared, a.base.inference().analysis);
  return {{"schema_version", kSchemaVersion},
          {"scenario", scenario},
          {"goal", std::string(to_string(a.goal))},
          {"metric",
           {{"id", a.metric.id},
            {"label", a.metric.label},
            {"unit", a.metric.unit},
            {"lower_is_better", a.metric.lower_is_better},
            {"value", a.base.metric}}},
          {"notes", a.notes},
          {"diagnosis",
           {{"goal", std::string(to_string(a.goal))},
            {"phase", a.diagnosis.phase},
            {"bound", a.diagnosis.bound},
            {"explanation", a.diagnosis.explanation},
            {"thermal", a.diagnosis.thermal},
            {"figures", a.diagnosis.figures}}},
          {"recommendations", recs},
          {"alternatives", alternatives},
          {"unquantified", unq},
          {"not_applicable", na},
          {"plan", plan_json(a)},
          {"assumptions", assumptions}};
}

/// How the advice's text sections are written: Markdown or terminal text.
struct AdviceWriter {
  bool md = false;
  const Style& style;
  std::string heading(const std::string& h) const { return md ? "\n## " + h + "\n\n" : "\n" + style.bold(h) + "\n"; }
  std::string line(const std::string& text) const { return md ? "- " + text + "\n" : "  " + wrap(text, 4, 2); }
  std::string plain(const std::string& text) const { return md ? text + "  \n" : wrap(text, 2, 0); }
};

/// Every line of a text table indented by two spaces.
std::string indent_table(const std::string& table) {
  std::string indented;
  std::size_t start = 0;
  while (start < table.size()) {
    const std::size_t nl = table.find('\n', start);
    indented += "  " + table.substr(start, nl - start + 1);
    start = nl + 1;
  }
  return indented;
}

/// One recommendation's impact: the goal's metric before and after, and the figures behind it.
std::string recommendation_impact(const Advice& a, const Recommendation& r) {
  std::string impact = fmt::format("{} {} -> {} ({})", a.metric.label, metric_text(a.goal, a.base), metric_text(a.goal, r.after),
                                   std::isinf(r.gain)         ? "now it runs"
                                   : r.gain_basis == "memory" ? fmt::format("still does not fit; {:.2f}x less memory", r.gain)
                                                              : gain_text(r.gain));
  if (a.base.is_training()) {
    const TrainingAnalysis& tb = a.base.training().analysis;
    const TrainingAnalysis& ta = r.after.training().analysis;
    impact += fmt::format("; step {} -> {}; MFU {:.0f}% -> {:.0f}%; memory per GPU {}{}", format_seconds(tb.time.step_time_s),
                          format_seconds(ta.time.step_time_s), tb.mfu * 100, ta.mfu * 100,
                          gb_pair(a.base.memory_bytes, r.after.memory_bytes), ta.memory.fits ? "" : " (does not fit)");
  } else {
    const Analysis& before = a.base.inference().analysis;
    const Analysis& after = r.after.inference().analysis;
    if (a.goal != Goal::kMemory)
      impact +=
          fmt::format("; time to first token {} -> {}; per token {} -> {}", format_seconds(before.prefill.time_s),
                      format_seconds(after.prefill.time_s), format_seconds(before.decode.time_s), format_seconds(after.decode.time_s));
    impact +=
        fmt::format("; memory {}{}; bytes per token {}", gb_pair(a.base.memory_bytes, r.after.memory_bytes),
                    after.memory.fits ? "" : " (does not fit; layers offloaded)", gb_pair(a.base.bytes_per_token, r.after.bytes_per_token));
  }
  return impact;
}

/// One recommendation: why, impact, changes, needs, how, risk, assumptions and sources.
std::string recommendation_text(const Advice& a, const Recommendation& r, const RuleBook& book, const AdviceWriter& w) {
  std::string out;
  const std::string impact = recommendation_impact(a, r);
  std::vector<std::string> assumptions;
  for (const auto& u : r.assumptions) assumptions.push_back(assumption_text(u, book));
  std::vector<std::string> sources;
  for (const auto& s : r.rule->sources) sources.push_back(source_short(s));
  const std::string risk = fmt::format("{}: {}", r.rule->risk_level, fill_template(r.rule->risk, a.base.facts, a.assumption_values));
  const std::string how_text = r.how.empty() ? "see the sources" : fill_template(r.how, a.base.facts, a.assumption_values);
  const std::string how = how_label(*r.rule, r.how_engine) + how_text;
  if (w.md) {
    out += fmt::format("\n### {}. {} (`{}`)\n\n", r.rank, r.rule->title, r.rule->id);
    out += "- **why**: " + join(r.why, "; ") + "\n";
    out += "- **impact**: " + impact + "\n";
    if (!r.notes.empty()) out += "- **changes**: " + join(r.notes, "; ") + "\n";
    if (!r.prerequisites.empty()) out += "- **needs**: " + join(r.prerequisites, "; ") + "\n";
    out += "- **how**" + (r.rule->how.count(r.how_engine) ? " (" + r.how_engine + ")" : std::string()) + ": `" + how_text + "`\n";
    out += "- **risk**: " + risk + "\n";
    if (!assumptions.empty()) out += "- **assumes**: " + join(assumptions, "; ") + " (override with `--assume NAME=VALUE`)\n";
    out += "- **sources**: " + join(sources, "; ") + "\n";
  } else {
    out += "\n" + w.style.bold(fmt::format("{}. {}", r.rank, r.rule->title)) + fmt::format("  [{}]\n", r.rule->id);
    out += field("why", join(r.why, "; "));
    out += field("impact", impact);
    if (!r.notes.empty()) out += field("changes", join(r.notes, "; "));
    if (!r.prerequisites.empty()) out += field("needs", join(r.prerequisites, "; "));
    out += field("how", how);
    out += field("risk", risk);
    if (!assumptions.empty()) out += field("assumes", join(assumptions, "; ") + " (override with --assume NAME=VALUE)");
    out += field("sources", join(sources, "; "));
  }
  return out;
}

/// The ranked playbook: the table, then each recommendation.
std::string playbook_text(const Advice& a, const RuleBook& book, const AdviceWriter& w, const std::string& metric_header) {
  using A = Table::Align;
  std::string out;
  if (a.recommendations.empty()) {
    out += w.heading("Playbook");
    out += w.md ? "No recommendation improves this scenario's " + a.metric.label + ".\n"
                : "  no recommendation improves this scenario's " + a.metric.label + "\n";
  } else {
    // The order of ranks_above(): the memory goal compares quality and GPUs before its metric.
    out += w.heading(a.goal == Goal::kMemory
                         ? fmt::format("Playbook (ranked by quality, then GPUs used, then {} after the change, effort and risk)", a.metric.label)
                         : fmt::format("Playbook (ranked by {} after the change, then quality, effort and risk)", a.metric.label));
    Table t({"#", w.md ? "rule" : "RULE", metric_header, w.md ? "gain" : "GAIN", w.md ? "memory per device" : "MEMORY/DEVICE",
             w.md ? "effort" : "EFFORT", w.md ? "risk" : "RISK"},
            {A::kRight, A::kLeft, A::kLeft, A::kRight, A::kLeft, A::kLeft, A::kLeft});
    for (const auto& r : a.recommendations)
      t.add_row({std::to_string(r.rank), r.rule->id, metric_text(a.goal, a.base) + " -> " + metric_text(a.goal, r.after),
                 gain_text(r.gain, r.gain_basis), gb_pair(a.base.memory_bytes, r.after.memory_bytes), r.rule->effort, r.rule->risk_level});
    out += w.md ? t.to_markdown() : indent_table(t.to_text());
    for (const auto& r : a.recommendations) out += recommendation_text(a, r, book, w);
  }
  return out;
}

/// The stacked plan: its table, the result and what was not stacked.
std::string plan_text(const Advice& a, const AdviceWriter& w, const std::string& metric_header) {
  using A = Table::Align;
  std::string out;
  if (!a.plan.empty()) {
    out += w.heading("Stacked plan (the best combination of the top recommendations, each re-checked; gains do not simply multiply)");
    Table t({w.md ? "step" : "STEP", w.md ? "apply" : "APPLY", metric_header, w.md ? "step gain" : "STEP GAIN",
             w.md ? "total gain" : "TOTAL GAIN", w.md ? "memory per device" : "MEMORY/DEVICE"},
            {A::kRight, A::kLeft, A::kLeft, A::kRight, A::kRight, A::kLeft});
    t.add_row({"0", "baseline", metric_text(a.goal, a.base), "", "", format_gb(a.base.memory_bytes)});
    for (std::size_t i = 0; i < a.plan.size(); ++i) {
      const PlanStep& s = a.plan[i];
      // When the baseline does not run, later steps are compared with the first (which makes it run).
      // When the baseline does not fit: memory progress, then "runs", then the gain since the step that made it run.
      std::string total = gain_text(s.cumulative_gain);
      if (!a.base.runs && !s.result.runs)
        total = gain_text(s.cumulative_gain, "memory");
      else if (!a.base.runs && s.first_running_step != static_cast<int>(i + 1))
        total = fmt::format("{:.2f}x vs {}", s.gain_over_first, s.first_running_step);
      t.add_row({std::to_string(i + 1), "+ " + s.rule->id, metric_text(a.goal, s.result), gain_text(s.step_gain, s.gain_basis), total,
                 format_gb(s.result.memory_bytes)});
    }
    out += w.md ? t.to_markdown() + "\n" : indent_table(t.to_text());
    const Evaluation& last = a.plan.back().result;
    out += w.line(last.is_training()
                      ? "result: " + workload_line(last)
                      : fmt::format("result: {}; {}", workload_line(last),
                                    last.inference().prepared.scenario.engine.id() + " with " + last.inference().prepared.quant->id));
    for (const auto& s : a.plan_skipped) out += w.line(fmt::format("not stacked: {}: {}", s.rule->id, s.reason));
  }
  return out;
}

/// Changes of model, apart from the techniques.
std::string alternatives_text(const Advice& a, const AdviceWriter& w) {
  std::string out;
  if (!a.alternatives.empty()) {
    out += w.heading("Alternatives (a different model or run; not ranked among the techniques)");
    for (const auto& r : a.alternatives) {
      const std::string impact = fmt::format(
          "{} {} -> {} ({}); memory {}", a.metric.label, metric_text(a.goal, a.base), metric_text(a.goal, r.after),
          std::isinf(r.gain) ? "now it runs" : gain_text(r.gain, r.gain_basis), gb_pair(a.base.memory_bytes, r.after.memory_bytes));
      const std::string risk = fmt::format("{}: {}", r.rule->risk_level, fill_template(r.rule->risk, a.base.facts, a.assumption_values));
      if (w.md) {
        out += fmt::format("- **{}** (`{}`): {}; {}. Changes: {}. Risk: {}\n", r.rule->title, r.rule->id, join(r.why, "; "), impact,
                           join(r.notes, "; "), risk);
      } else {
        out += "\n" + w.style.bold(r.rule->title) + fmt::format("  [{}]\n", r.rule->id);
        out += field("why", join(r.why, "; "));
        out += field("impact", impact);
        if (!r.notes.empty()) out += field("changes", join(r.notes, "; "));
        out += field("risk", risk);
      }
    }
  }
  return out;
}

/// One side of a load comparison: "aggregated: 2 workers: TTFT p90 210 ms, TPOT p90 9.1 ms, 3210 tok/s".
std::string load_side_text(const std::string& label, const ServingResult& r) {
  if (!r.fits) return label + ": does not fit (the weights leave no room for a sequence's KV cache)";
  return fmt::format("{}: TTFT p90 {}, TPOT p90 {}, {:.0f} output tok/s", label, format_seconds(r.ttft_s.p90), format_seconds(r.tpot_s.p90),
                     r.output_tokens_per_s);
}

/// The change from one side to the other, where both fit: "changed / as is: 1.38x output tok/s, TTFT p90 3.67x, TPOT p90 0.66x".
std::string load_change_text(const ServingResult& base, const ServingResult& alt) {
  const auto ratio = [](double b, double a) { return b > 0 ? fmt::format("{:.2f}x", a / b) : std::string("-"); };
  return fmt::format("changed / as is: {} output tok/s, TTFT p90 {}, TPOT p90 {}", ratio(base.output_tokens_per_s, alt.output_tokens_per_s),
                     ratio(base.ttft_s.p90, alt.ttft_s.p90), ratio(base.tpot_s.p90, alt.tpot_s.p90));
}

/// The serving simulation beside an unquantified rule, or why it does not run here ("" when the rule has none).
std::vector<std::string> under_load_lines(const Unquantified& u) {
  if (u.under_load) {
    std::vector<std::string> lines = {"simulated on " + u.under_load->setting, load_side_text(u.under_load->base_label, u.under_load->base),
                                      load_side_text(u.under_load->alt_label, u.under_load->alt)};
    if (u.under_load->base.fits && u.under_load->alt.fits) lines.push_back(load_change_text(u.under_load->base, u.under_load->alt));
    return lines;
  }
  if (!u.under_load_note.empty()) return {"not simulated: " + u.under_load_note};
  return {};
}

/// Rules that apply but whose effect the model does not compute.
std::string unquantified_text(const Advice& a, const AdviceWriter& w) {
  std::string out;
  if (!a.unquantified.empty()) {
    out += w.heading("Also worth considering (effect not computed)");
    for (const auto& u : a.unquantified) {
      if (w.md) {
        out += fmt::format("- **{}** (`{}`): {}; not computed: {}. How{}: `{}`\n", u.rule->title, u.rule->id, join(u.why, "; "),
                           u.rule->not_quantified, u.rule->how.count(u.how_engine) ? " (" + u.how_engine + ")" : std::string(),
                           fill_template(u.how, a.base.facts, a.assumption_values));
        const auto load = under_load_lines(u);
        if (!load.empty()) out += "  - under load: " + join(load, "; ") + "\n";
      } else {
        out += "\n" + w.style.bold(u.rule->title) + fmt::format("  [{}]\n", u.rule->id);
        out += field("why", join(u.why, "; "));
        out += field("effect", "not computed: " + u.rule->not_quantified);
        const auto load = under_load_lines(u);
        for (std::size_t i = 0; i < load.size(); ++i) out += field(i == 0 ? "load" : "", load[i]);
        if (!u.how.empty()) out += field("how", how_label(*u.rule, u.how_engine) + fill_template(u.how, a.base.facts, a.assumption_values));
      }
    }
  }
  return out;
}

/// The rules left out: each with why under --all, else a count.
std::string left_out_text(const Advice& a, const AdviceView& view, const AdviceWriter& w) {
  std::string out;
  std::size_t left_out = 0;
  for (const auto& n : a.not_applicable)
    if (n.stage != "goal") ++left_out;
  if (view.all) {
    out += w.heading(fmt::format("Left out ({} rules)", left_out));
    for (const auto& n : a.not_applicable) {
      if (n.stage == "goal") continue;
      if (w.md)
        out += fmt::format("- `{}` ({}): {}\n", n.rule->id, stage_label(n.stage), n.reason);
      else {
        const std::string head = fmt::format("  {} ({}): ", n.rule->id, stage_label(n.stage));
        out += head + wrap(n.reason, 6, head.size());
      }
    }
  } else if (left_out > 0) {
    out += "\n" +
           wrap(fmt::format("{} more rule(s) do not apply here; --all lists them with the reason, --why-not RULE explains one.", left_out),
                0, 0);
  }
  return out;
}

std::string render_advice(const Advice& a, const RuleBook& book, const AdviceView& view, OutputFormat format, const Style& style) {
  if (format == OutputFormat::kJson) return advice_json(a, book).dump(2) + "\n";
  const AdviceWriter w{format == OutputFormat::kMarkdown, style};
  std::string out;
  const std::string title = title_line(a);
  out += w.md ? "# " + title + "\n\n" : style.bold(title) + "\n";
  out += w.plain(goal_line(a));
  for (const auto& n : a.notes) out += w.plain(n);
  for (const auto& n : a.base.is_training() ? a.base.training().prepared.notes : a.base.inference().prepared.notes) out += w.plain(n);
  out += w.plain(workload_line(a.base));

  out += w.heading("Diagnosis");
  for (const auto& l : diagnosis_lines(a)) out += w.line(l);

  const std::string metric_header = w.md ? a.metric.label : [&] {
    std::string h = a.metric.label;
    for (auto& c : h) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return h;
  }();
  out += playbook_text(a, book, w, metric_header);
  out += plan_text(a, w, metric_header);
  out += alternatives_text(a, w);
  out += unquantified_text(a, w);
  out += left_out_text(a, view, w);
  return out;
}

nlohmann::json why_not_json(const Advice& a, const Rule& rule) {
  nlohmann::json out = {{"schema_version", kSchemaVersion}, {"id", rule.id}, {"goal", std::string(to_string(a.goal))}};
  for (const auto& r : a.recommendations)
    if (r.rule == &rule) {
      out["applies"] = true;
      out["rank"] = r.rank;
      out["gain"] = gain_json(r.gain);
      out["why"] = r.why;
      return out;
    }
  for (const auto& r : a.alternatives)
    if (r.rule == &rule) {
      out["applies"] = true;
      out["alternative"] = true;
      out["gain"] = gain_json(r.gain);
      out["why"] = r.why;
      return out;
    }
  for (const auto& u : a.unquantified)
    if (u.rule == &rule) {
      out["applies"] = true;
      out["quantified"] = false;
      out["why"] = u.why;
      out["reason"] = rule.not_quantified;
      return out;
    }
  for (const auto& n : a.not_applicable)
    if (n.rule == &rule) {
      out["applies"] = false;
      out["stage"] = n.stage;
      out["reason"] = n.reason;
      return out;
    }
  out["applies"] = false;
  return out;
}

std::string render_why_not(const Advice& a, const Rule& rule, OutputFormat format) {
  const nlohmann::json j = why_not_json(a, rule);
  if (format == OutputFormat::kJson) return j.dump(2) + "\n";
  const std::string where =
      a.base.is_training() ? fmt::format("{} on {} ({}, training goal)", a.base.training().prepared.model.spec.id,
                                         a.base.training().prepared.scenario.hardware->id, a.base.training().prepared.scenario.engine->id)
                           : fmt::format("{} on {} ({}, {} goal)", a.base.inference().prepared.scenario.model.id,
                                         a.base.inference().prepared.scenario.hardware->id,
                                         a.base.inference().prepared.scenario.engine.id(), to_string(a.goal));
  std::string text;
  if (j.value("applies", false) && j.contains("rank"))
    text =
        fmt::format("{} applies to {}: ranked #{} of {}, gain {}; because {}", rule.id, where, j.at("rank").get<int>(),
                    a.recommendations.size(), j.at("gain").is_null() ? "now it runs" : fmt::format("{:.2f}x", j.at("gain").get<double>()),
                    join(j.at("why").get<std::vector<std::string>>(), "; "));
  else if (j.value("alternative", false))
    text = fmt::format("{} applies to {} as an alternative (a different model, not ranked among the techniques): gain {}; because {}",
                       rule.id, where, j.at("gain").is_null() ? "now it runs" : fmt::format("{:.2f}x", j.at("gain").get<double>()),
                       join(j.at("why").get<std::vector<std::string>>(), "; "));
  else if (j.value("applies", false))
    text = fmt::format("{} applies to {} but its effect is not computed: {}", rule.id, where, rule.not_quantified);
  else
    text = fmt::format("{} does not apply to {} ({}): {}", rule.id, where, stage_label(j.value("stage", "")), j.value("reason", ""));
  return format == OutputFormat::kMarkdown ? text + "\n" : wrap(text, 2, 0);
}

nlohmann::json rules_list_json(const RuleBook& book, std::optional<Goal> goal) {
  nlohmann::json rules = nlohmann::json::array();
  for (const auto& r : book.rules()) {
    if (goal && !r.serves(*goal)) continue;
    std::vector<std::string> goals, transforms;
    for (Goal g : r.goals) goals.push_back(std::string(to_string(g)));
    for (const auto& t : r.transform) transforms.push_back(t.name);
    rules.push_back({{"id", r.id},
                     {"title", r.title},
                     {"goals", goals},
                     {"transform", transforms},
                     {"quantified", r.quantified()},
                     {"effort", r.effort},
                     {"risk", r.risk_level},
                     {"file", r.origin}});
  }
  nlohmann::json assumptions = nlohmann::json::array();
  for (const auto& [id, a] : book.assumptions())
    assumptions.push_back({{"id", id},
                           {"value", a.value},
                           {"min", a.min},
                           {"max", a.max},
                           {"unit", a.unit},
                           {"description", a.description},
                           {"derivation", a.derivation},
                           {"effects", a.effects},
                           {"sources", a.sources}});
  return {{"schema_version", kSchemaVersion}, {"rules", rules}, {"assumptions", assumptions}};
}

std::string render_rules_list(const RuleBook& book, std::optional<Goal> goal, OutputFormat format) {
  if (format == OutputFormat::kJson) return rules_list_json(book, goal).dump(2) + "\n";
  const bool md = format == OutputFormat::kMarkdown;
  Table t({"ID", "GOALS", "TITLE"});
  std::size_t n = 0;
  for (const auto& r : book.rules()) {
    if (goal && !r.serves(*goal)) continue;
    std::vector<std::string> goals;
    for (Goal g : r.goals) goals.push_back(std::string(to_string(g)).substr(0, 3));
    t.add_row({r.id, join(goals, ","), r.title + (r.quantified() ? "" : " *")});
    ++n;
  }
  std::string out = md ? t.to_markdown() : t.to_text();
  out += "\n" + wrap(fmt::format("{} rules. Goals: lat = latency, thr = throughput, mem = memory, tra = training. * = effect not "
                                 "computed (listed, never ranked). optadvisor explain RULE shows one in full.",
                                 n),
                     0, 0);
  out += md ? "\n## Assumptions\n\n"
            : "\n" + wrap(
                         "Assumptions: numbers about the world the rules use, each with its source; override one with "
                         "--assume NAME=VALUE.",
                         0, 0);
  for (const auto& [id, a] : book.assumptions()) {
    const std::string text = fmt::format("{} = {} {}: {}", id, number_text(a.value), a.unit, a.description);
    out += md ? "- " + text + "\n" : "  " + wrap(text, 4, 2);
  }
  return out;
}

nlohmann::json rule_json(const Rule& r, const RuleBook& book) {
  auto conditions = [](const std::vector<Condition>& list) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& c : list) {
      nlohmann::json j;
      if (!c.any.empty()) {
        nlohmann::json any = nlohmann::json::array();
        for (const auto& sub : c.any) any.push_back({{"fact", sub.fact}, {sub.op, sub.value}});
        j["any"] = any;
      } else {
        j = {{"fact", c.fact}, {c.op, c.value}};
      }
      if (!c.text.empty()) j["text"] = c.text;
      if (!c.because.empty()) j["because"] = c.because;
      if (!c.reason.empty()) j["reason"] = c.reason;
      out.push_back(j);
    }
    return out;
  };
  std::vector<std::string> goals;
  for (Goal g : r.goals) goals.push_back(std::string(to_string(g)));
  nlohmann::json transform = nlohmann::json::array();
  for (const auto& s : r.transform) transform.push_back({{"name", s.name}, {"params", s.params}});
  nlohmann::json assumptions = nlohmann::json::array();
  for (const auto& id : r.assumptions) {
    const Assumption& a = book.assumptions().at(id);
    assumptions.push_back({{"id", id},
                           {"value", a.value},
                           {"unit", a.unit},
                           {"description", a.description},
                           {"derivation", a.derivation},
                           {"effects", a.effects},
                           {"sources", a.sources}});
  }
  nlohmann::json how = nlohmann::json::object();
  for (const auto& [k, v] : r.how) how[k] = v;
  nlohmann::json out = {{"schema_version", kSchemaVersion},
                        {"id", r.id},
                        {"title", r.title},
                        {"summary", r.summary},
                        {"goals", goals},
                        {"when", conditions(r.when)},
                        {"requires", conditions(r.requires_)},
                        {"transform", transform},
                        {"effort", r.effort},
                        {"risk", {{"level", r.risk_level}, {"text", r.risk}}},
                        {"how", how},
                        {"assumptions", assumptions},
                        {"effects", r.effects},
                        {"sources", r.sources},
                        {"file", r.origin}};
  if (!r.after.empty()) out["after"] = conditions(r.after);
  if (!r.how_official.empty()) out["how_official"] = r.how_official;
  if (!r.quantified()) out["not_quantified"] = r.not_quantified;
  return out;
}

std::string render_rule(const Rule& r, const RuleBook& book, OutputFormat format, const Style& style) {
  if (format == OutputFormat::kJson) return rule_json(r, book).dump(2) + "\n";
  const bool md = format == OutputFormat::kMarkdown;
  auto heading = [&](const std::string& h) { return md ? "\n## " + h + "\n\n" : "\n" + style.bold(h) + "\n"; };
  auto item = [&](const std::string& text) { return md ? "- " + text + "\n" : "  " + wrap(text, 4, 2); };
  auto describe = [](const Condition& c) {
    auto one = [](const Condition& x) { return fmt::format("{} {} {}", x.fact, x.op, x.value.dump()); };
    if (c.any.empty()) return one(c);
    std::vector<std::string> parts;
    for (const auto& sub : c.any) parts.push_back(one(sub));
    return "any of (" + join(parts, "; ") + ")";
  };
  std::string out;
  const std::string title = fmt::format("{}  [{}]", r.title, r.id);
  out += md ? "# " + title + "\n\n" : style.bold(title) + "\n";
  std::vector<std::string> goals;
  for (Goal g : r.goals) goals.push_back(std::string(to_string(g)));
  out += wrap(r.summary, 0, 0);
  out += wrap(fmt::format("goals: {}; effort: {}; risk: {}; defined in {}", join(goals, ", "), r.effort, r.risk_level, r.origin), 0, 0);
  out += heading("When it applies (triggers)");
  for (const auto& c : r.when) out += item(fmt::format("{}  (shown as: \"{}\")", describe(c), c.because));
  if (!r.requires_.empty()) {
    out += heading("Prerequisites");
    for (const auto& c : r.requires_) out += item(fmt::format("{}: {}  (otherwise: \"{}\")", c.text, describe(c), c.reason));
  }
  out += heading("What it changes");
  if (r.quantified()) {
    for (const auto& s : r.transform) {
      const TransformInfo* info = find_transform(s.name);
      std::vector<std::string> params;
      for (const auto& [k, v] : s.params.items()) params.push_back(k + "=" + (v.is_string() ? v.get<std::string>() : v.dump()));
      out += item(fmt::format("{}({}): {}", s.name, join(params, ", "), info ? info->description : ""));
    }
    out += item("the impact is computed: the changed scenario runs through the same model as the baseline");
    for (const auto& c : r.after) out += item(fmt::format("once changed: {}  (otherwise left out: \"{}\")", describe(c), c.reason));
  } else {
    out += item("not computed: " + r.not_quantified);
  }
  out += heading("Risk");
  out += item(r.risk);
  out += heading("How");
  for (const auto& [engine, text] : r.how) out += item(fmt::format("{}: {}", engine == "*" ? "any engine" : engine, text));
  for (const auto& [engine, text] : r.how_official)
    out += item(fmt::format("{}, where the model's publisher ships the checkpoint: {}", engine == "*" ? "any engine" : engine, text));
  if (!r.assumptions.empty()) {
    out += heading("Assumptions (override with --assume NAME=VALUE)");
    for (const auto& id : r.assumptions) {
      const Assumption& a = book.assumptions().at(id);
      out += item(fmt::format("{} = {} {}: {}. {}", id, number_text(a.value), a.unit, a.description, a.derivation));
      for (const auto& s : a.sources) out += md ? "  - " + source_text(s) + "\n" : "      " + wrap(source_text(s), 8, 6);
    }
  }
  out += heading("Sources");
  for (const auto& s : r.sources) out += item(source_text(s) + (s.contains("covers") ? ": " + s.at("covers").get<std::string>() : ""));
  if (!r.effects.empty()) out += item("measured effects: bench/data/effects.csv rows " + join(r.effects, ", "));
  return out;
}

std::string render_facts(OutputFormat format) {
  if (format == OutputFormat::kJson) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& f : fact_catalog())
      list.push_back({{"name", f.name}, {"type", std::string(to_string(f.type))}, {"description", f.description}});
    return nlohmann::json{{"schema_version", kSchemaVersion}, {"facts", list}}.dump(2) + "\n";
  }
  Table t({"FACT", "TYPE", "WHAT"});
  for (const auto& f : fact_catalog()) t.add_row({f.name, std::string(to_string(f.type)), f.description});
  return format == OutputFormat::kMarkdown ? t.to_markdown() : t.to_text();
}

}  // namespace optadvisor
