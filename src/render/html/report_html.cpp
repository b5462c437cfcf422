// SPDX-License-Identifier: MIT
// The HTML report. One page, nothing fetched: CSS in a <style> element, charts
// as inline SVG, no scripts. Every string from data or the user is escaped.
#include "optadvisor/render/html/report_html.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "base/units.hpp"
#include "base/strings.hpp"
#include "optadvisor/render/report_advice.hpp"

namespace optadvisor {
namespace {

std::string h(std::string_view text) { return escape_markup(text); }

/// Data types in the order a reader expects them, widest first.
int dtype_order(const std::string& dtype) {
  static const std::vector<std::string> kOrder = {"fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp6", "fp4", "int4"};
  const auto it = std::find(kOrder.begin(), kOrder.end(), dtype);
  return it == kOrder.end() ? static_cast<int>(kOrder.size()) : static_cast<int>(it - kOrder.begin());
}

/// Links only to web pages; anything else (a relative path, a script URL) stays text.
bool is_web_url(const std::string& url) { return url.rfind("https://", 0) == 0 || url.rfind("http://", 0) == 0; }

std::string source_html(const nlohmann::json& s) {
  const std::string title = s.value("title", "");
  const std::string url = s.value("url", "");
  const std::string read = s.value("read", "");
  std::string out = is_web_url(url) ? fmt::format(R"(<a href="{}">{}</a>)", h(url), h(title.empty() ? url : title))
                                    : h(title) + (url.empty() ? "" : " (" + h(url) + ")");
  if (!read.empty()) out += fmt::format(R"( <span class="small">(read {})</span>)", h(read));
  return out;
}

std::string sources_html(const nlohmann::json& sources) {
  if (!sources.is_array() || sources.empty()) return "";
  std::string out = "<ul class=\"sources\">";
  for (const auto& s : sources)
    if (s.is_object()) out += "<li>" + source_html(s) + "</li>";
  return out + "</ul>";
}

std::string percent(double fraction) { return fmt::format("{:.0f}%", fraction * 100); }

std::string flop_per_byte_text(double v) { return v >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}", v); }

std::string metric_value(Goal goal, double v) {
  switch (goal) {
    case Goal::kLatency: return format_seconds(v);
    case Goal::kThroughput:
    case Goal::kTraining: return (v >= 100 ? fmt::format("{:.0f}", v) : format_sig3(v)) + " tokens/s";
    case Goal::kMemory: return percent(v) + " of usable memory";
  }
  return format_sig3(v);
}

std::string gain_value(double gain, const std::string& basis) {
  if (std::isinf(gain)) return "makes it run";
  if (basis == "memory") return fmt::format("{:.2f}x less memory (still does not fit)", gain);
  return fmt::format("{:.2f}x", gain);
}

std::string workload_text(const Evaluation& e) {
  if (e.is_training()) {
    const TrainingWorkload& t = e.training().prepared.scenario.workload;
    return fmt::format(
        "{} GPU{} (data parallel {}, tensor {}, pipeline {}, context {}); sequence {} tokens, micro-batch {}, global batch {}; {}, "
        "recompute {}, {}, {}{}",
        t.gpus, t.gpus == 1 ? "" : "s", t.dp, t.tp, t.pp, t.cp, t.seq, t.micro_batch, t.global_batch, to_string(t.precision),
        to_string(t.recompute), t.sharding.name, t.optimizer,
        t.lora_rank ? fmt::format(", LoRA rank {}{}", t.lora_rank, t.lora_base_quant.empty() ? "" : " on " + t.lora_base_quant) : "");
  }
  const Workload& w = e.inference().prepared.scenario.workload;
  return fmt::format("batch {}, prompt {} tokens, generate {} tokens, context {} tokens, KV cache {}{}",
                     w.batch_max ? fmt::format("max ({})", e.inference().analysis.batch) : std::to_string(w.batch), w.prompt_tokens,
                     w.gen_tokens, w.context(), w.kv_dtype,
                     w.gpus > 1 ? fmt::format(", {} GPUs (tensor parallel {}, pipeline {})", w.gpus, w.tp, w.pp) : "");
}

std::string goal_text(Goal goal, const Evaluation& base) {
  switch (goal) {
    case Goal::kLatency:
      return fmt::format("latency: request latency = time to first token + {} tokens x time per token",
                         base.inference().prepared.scenario.workload.gen_tokens);
    case Goal::kThroughput: return "throughput: serving output tokens/s = batch x generated tokens / (prefill + decode time)";
    case Goal::kMemory: return "memory: needed / usable memory per device; fit the model and its context";
    case Goal::kTraining: return "training: tokens/s per GPU of the whole job, one optimizer step after another";
  }
  return {};
}

constexpr const char* kCss = R"(:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; background: #ffffff; color: #0f172a; line-height: 1.45; font-size: 15px;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Noto Sans", "Liberation Sans", sans-serif; }
main { max-width: 1120px; margin: 0 auto; padding: 28px 32px 48px; }
h1 { font-size: 1.55rem; margin: 0 0 4px; }
h2 { font-size: 1.2rem; margin: 34px 0 10px; padding-bottom: 4px; border-bottom: 1px solid #e2e8f0; }
h3 { font-size: 1rem; margin: 20px 0 6px; }
p { margin: 6px 0; }
a { color: #1d4ed8; }
.lead { color: #475569; margin: 0 0 16px; }
.small { color: #475569; font-size: 0.85em; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 3px 18px; margin: 0; }
dl.facts dt { color: #64748b; }
dl.facts dd { margin: 0; }
dl.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(190px, 1fr)); gap: 8px 10px; margin: 10px 0; }
dl.figures div { background: #f8fafc; border: 1px solid #e2e8f0; border-radius: 6px; padding: 5px 10px; }
dl.figures dt { color: #64748b; font-size: 0.8rem; }
dl.figures dd { margin: 0; font-weight: 600; font-variant-numeric: tabular-nums; }
.verdict { font-size: 1.05rem; margin: 8px 0 12px; padding: 10px 14px; background: #f8fafc; border-left: 4px solid #c2410c; }
.verdict.fits { border-left-color: #15803d; }
table { border-collapse: collapse; width: 100%; font-size: 0.9rem; margin: 6px 0 10px; }
th, td { text-align: left; vertical-align: top; padding: 6px 8px; border-bottom: 1px solid #e2e8f0; }
thead th { background: #f1f5f9; font-weight: 600; border-bottom: 1px solid #cbd5e1; }
td.num, th.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
tr.rec td { border-bottom: none; padding-bottom: 2px; }
tr.detail td { padding-top: 0; color: #334155; font-size: 0.85rem; }
tr.detail p { margin: 2px 0; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: 0.85em;
  background: #f1f5f9; padding: 1px 4px; border-radius: 3px; overflow-wrap: anywhere; }
ul { margin: 4px 0; padding-left: 20px; }
ul.sources { margin: 0; padding-left: 16px; }
.badge { display: inline-block; padding: 0 7px; border-radius: 9px; font-size: 0.8em; background: #e2e8f0; white-space: nowrap; }
.badge.low { background: #dcfce7; }
.badge.medium { background: #fef9c3; }
.badge.high { background: #fee2e2; }
figure { margin: 8px 0; }
svg { max-width: 100%; height: auto; font-family: inherit; }
figcaption { color: #475569; font-size: 0.88rem; margin-top: 6px; }
footer { margin-top: 40px; padding-top: 10px; border-top: 1px solid #e2e8f0; color: #64748b; font-size: 0.85rem; }
@media print {
  body { font-size: 10.5pt; }
  main { max-width: none; padding: 0; }
  h2 { break-after: avoid; }
  tr, figure, .verdict { break-inside: avoid; }
  thead { display: table-header-group; }
  a { color: inherit; }
  a[href^="http"]::after { content: " <" attr(href) ">"; font-size: 0.8em; overflow-wrap: anywhere; }
}
)";

std::string page_start(const std::string& title) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<meta name=\"generator\" content=\"optadvisor\">\n<title>{}</title>\n<style>\n{}</style>\n</head>\n<body>\n<main>\n",
      h(title), kCss);
}

std::string page_end(const HtmlReportInfo& info) {
  return fmt::format(
      "<footer>Made by optadvisor {} (data {}). Every figure is an estimate from an analytic model: per-operator rooflines with "
      "efficiencies fitted on published measurements. Check the numbers that matter on the real "
      "system.</footer>\n</main>\n</body>\n</html>\n",
      h(info.program_version), h(info.data_version));
}

/// <dl> of label -> already escaped HTML.
std::string facts_list(const std::vector<std::pair<std::string, std::string>>& rows) {
  std::string out = "<dl class=\"facts\">\n";
  for (const auto& [k, v] : rows) out += fmt::format("<dt>{}</dt><dd>{}</dd>\n", h(k), v);
  return out + "</dl>\n";
}

std::vector<std::pair<std::string, std::string>> inference_facts(const PreparedScenario& ps) {
  const Scenario& s = ps.scenario;
  const HardwareProfile& hw = *s.hardware;
  const std::string gpus = s.workload.gpus > 1 ? fmt::format("{} x ", s.workload.gpus) : "";
  return {{"device", fmt::format("{}{} <span class=\"small\">({}, {}; {} {}, {})</span>", h(gpus), h(hw.name), h(hw.id),
                                 h(to_string(hw.device_class)), h(format_gb(hw.memory_capacity_bytes)), h(hw.memory_type),
                                 h(format_bandwidth(hw.memory_bandwidth_bytes_per_s)))},
          {"model",
           fmt::format(
               "{} <span class=\"small\">({}; {} parameters{})</span>", h(s.model.name), h(s.model.id), h(si_label(s.weights.params, "")),
               s.weights.active_params < s.weights.params * 0.99 ? ", " + h(si_label(s.weights.active_params, "")) + " active" : "")},
          {"quant", fmt::format("{} <span class=\"small\">({}; {:.2f} bits per weight, weights {})</span>", h(ps.quant->id),
                                h(ps.quant->name), s.weights.bits_per_weight, h(format_bytes(s.weights.total_bytes)))},
          {"engine", h(s.engine.id()) + (s.engine.defaulted ? " <span class=\"small\">(the device class's default)</span>" : "")}};
}

std::vector<std::pair<std::string, std::string>> advice_facts(const Advice& a, const HtmlReportInfo& info) {
  std::vector<std::pair<std::string, std::string>> rows;
  if (a.base.is_training()) {
    const TrainingScenario& t = a.base.training().prepared.scenario;
    rows = {{"device", fmt::format("{} x {} <span class=\"small\">({}, {})</span>", t.workload.gpus, h(t.hardware->name), h(t.hardware->id),
                                   h(to_string(t.hardware->device_class)))},
            {"model", fmt::format("{} <span class=\"small\">({})</span>", h(a.base.training().prepared.model.spec.name),
                                  h(a.base.training().prepared.model.spec.id))},
            {"quant", h(t.workload.lora_base_quant.empty() ? std::string(to_string(t.workload.precision)) + " training"
                                                           : "frozen base in " + t.workload.lora_base_quant)},
            {"engine", h(t.engine->id)}};
  } else {
    rows = inference_facts(a.base.inference().prepared);
  }
  rows.push_back({"workload", h(workload_text(a.base))});
  rows.push_back({"goal", h(goal_text(a.goal, a.base))});
  rows.push_back({"versions", fmt::format("optadvisor {}, data {}", h(info.program_version), h(info.data_version))});
  return rows;
}

/// A figure from the diagnosis, formatted by its key's unit suffix.
std::string figure_value(const std::string& key, const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (!v.is_number()) return v.dump();
  const double x = v.get<double>();
  auto ends = [&](std::string_view suffix) {
    return key.size() >= suffix.size() && key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends("_bytes") || key.find("bytes_per") != std::string::npos) return format_bytes(x);
  if (ends("_s") && !ends("per_s")) return format_seconds(x);
  if (ends("tokens_per_s") || ends("tokens_per_s_per_gpu")) return format_sig3(x) + " tokens/s";
  if (ends("_share") || ends("_fraction") || key == "mfu") return percent(x);
  if (key == "arithmetic_intensity" || key == "ridge_point") return flop_per_byte_text(x) + " FLOP/byte";
  if (v.is_number_integer() || x == std::round(x)) return fmt::format("{:.0f}", x);
  return format_sig3(x);
}

/// What a diagnosis figure is, in words (its key's unit suffix is shown by the value).
std::string figure_label(std::string key) {
  static const std::map<std::string, std::string> kLabels = {{"ttft_s", "time to first token"},
                                                             {"time_per_token_s", "time per token"},
                                                             {"decode_tokens_per_s", "decode per sequence"},
                                                             {"request_latency_s", "request latency"},
                                                             {"decode_share", "decode share of a request"},
                                                             {"max_batch", "largest batch that fits"},
                                                             {"output_tokens_per_s", "serving output"},
                                                             {"decode_bytes_per_token", "decode traffic per token"},
                                                             {"arithmetic_intensity", "arithmetic intensity (dominant phase)"},
                                                             {"ridge_point", "ridge point (reachable rates)"},
                                                             {"memory_total_bytes", "memory needed"},
                                                             {"memory_limit_bytes", "memory it may use"},
                                                             {"memory_fits", "fits"},
                                                             {"sustained_fraction", "sustained under heat"},
                                                             {"sustained_decode_tokens_per_s", "sustained decode"},
                                                             {"step_time_s", "step time"},
                                                             {"tokens_per_s_per_gpu", "tokens/s per GPU"},
                                                             {"tokens_per_s", "tokens/s of the job"},
                                                             {"mfu", "MFU"},
                                                             {"model_state_bytes", "model states"},
                                                             {"activation_bytes", "activations"},
                                                             {"compute_s", "compute per step"},
                                                             {"communication_s", "exposed communication"},
                                                             {"pipeline_bubble_s", "pipeline bubble"}};
  const auto it = kLabels.find(key);
  if (it != kLabels.end()) return it->second;
  for (std::string_view suffix : {"_bytes", "_s"})
    if (key.size() > suffix.size() && key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0)
      key.resize(key.size() - suffix.size());
  std::replace(key.begin(), key.end(), '_', ' ');
  return key;
}

std::string figures_grid(const nlohmann::json& figures) {
  if (!figures.is_object() || figures.empty()) return "";
  std::string out = "<dl class=\"figures\">\n";
  for (const auto& [k, v] : figures.items())
    out += fmt::format("<div><dt>{}</dt><dd>{}</dd></div>\n", h(figure_label(k)), h(figure_value(k, v)));
  return out + "</dl>\n";
}

std::string phases_table(const Analysis& a) {
  std::string out =
      "<table class=\"phases\">\n<thead><tr><th>phase</th><th class=\"num\">time</th><th class=\"num\">tokens/s</th><th "
      "class=\"num\">FLOPs</th>"
      "<th class=\"num\">bytes moved</th><th class=\"num\">FLOP/byte</th><th class=\"num\">achieved FLOP/s</th><th class=\"num\">ridge</th>"
      "<th>bound</th></tr></thead>\n<tbody>\n";
  auto row = [&](const char* name, const char* time_label, const PhaseEstimate& p) {
    if (!(p.time_s > 0)) return;
    out += fmt::format(
        "<tr><td>{} <span class=\"small\">({})</span></td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>\n",
        name, time_label, h(format_seconds(p.time_s)), h(format_sig3(p.tokens_per_s)), h(si_label(p.flops, "FLOP")),
        h(format_bytes(p.bytes)), h(flop_per_byte_text(p.arithmetic_intensity)), h(si_label(p.achieved_flops_per_s(), "FLOP/s")),
        h(flop_per_byte_text(p.ridge_point)), h(p.explanation()));
  };
  row("prefill", "time to first token", a.prefill);
  row("decode", "per step", a.decode);
  return out + "</tbody>\n</table>\n";
}

std::string roofline_section(const RooflineChart& chart, const Analysis& base, const Scenario& s, bool runs) {
  std::string out = "<section id=\"roofline\">\n<h2>Roofline</h2>\n<figure>\n" + render_roofline_svg(chart);
  const Factors& f = base.factors;
  out += fmt::format(
      "<figcaption>How to read it: both axes are logarithmic. A kernel moving B bytes and doing F FLOPs has arithmetic intensity F/B "
      "(x axis). The sloped line is what memory bandwidth allows ({} x intensity); each horizontal roof is the device's dense peak for "
      "some "
      "data types. A phase under the slope is memory-bandwidth bound, a phase under a roof to the right of its ridge point is compute "
      "bound; "
      "a point far below both spends its time on something else (kernel launches, synchronisation, interconnect). The dashed line is "
      "what this estimate can reach: {} of the {} peak and {} of the memory bandwidth (the engine's fitted efficiencies). Points are "
      "FLOPs of a phase over its modelled time on one device{}.{}</figcaption>\n</figure>\n",
      h(format_bandwidth(s.hardware->memory_bandwidth_bytes_per_s)), percent(f.prefill_compute_efficiency), h(f.compute_dtype),
      percent(f.decode_bandwidth_efficiency), s.workload.tp > 1 ? fmt::format(" (tensor parallel {})", s.workload.tp) : "",
      runs ? "" : " As given it does not fit: its points show the times it would have if it did.");
  // The same points as numbers, for readers who want to check them.
  out +=
      "<table class=\"points\">\n<thead><tr><th>point</th><th class=\"num\">FLOP/byte</th><th class=\"num\">achieved FLOP/s</th>"
      "<th class=\"num\">of the peak roofline there</th></tr></thead>\n<tbody>\n";
  for (const auto& p : chart.points) {
    const double roof = attainable_flops_per_s(p.flop_per_byte, p.peak_flops_per_s, s.hardware->memory_bandwidth_bytes_per_s);
    out +=
        fmt::format("<tr class=\"point-row\"><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
                    h(p.title.substr(0, p.title.find(':'))), h(flop_per_byte_text(p.flop_per_byte)), h(si_label(p.flops_per_s, "FLOP/s")),
                    roof > 0 ? percent(p.flops_per_s / roof) : "-");
  }
  return out + "</tbody>\n</table>\n</section>\n";
}

std::string bytes_pair(double before, double after) {
  return h(format_sig3(before / kBytesPerGB)) + " &rarr; " + h(format_sig3(after / kBytesPerGB)) + " GB";
}

std::string memory_table(const std::vector<MemoryBar>& bars) {
  std::vector<std::string> names;
  for (const auto& b : bars)
    for (const auto& [name, bytes] : b.segments)
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  std::string out = "<table class=\"memory\">\n<thead><tr><th>per device</th>";
  for (const auto& b : bars) out += "<th class=\"num\">" + h(b.label) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  auto row = [&](const std::string& name, auto value) {
    out += "<tr><td>" + h(name) + "</td>";
    for (const auto& b : bars) out += "<td class=\"num\">" + h(value(b)) + "</td>";
    out += "</tr>\n";
  };
  for (const auto& n : names)
    row(n, [&](const MemoryBar& b) {
      for (const auto& [name, bytes] : b.segments)
        if (name == n) return format_bytes(bytes);
      return format_bytes(0);
    });
  row("needed", [](const MemoryBar& b) { return format_bytes(b.total_bytes); });
  row("usable capacity", [](const MemoryBar& b) { return format_bytes(b.capacity_bytes); });
  bool engine_limit = false;
  for (const auto& b : bars) engine_limit = engine_limit || b.limit_bytes < b.capacity_bytes * 0.999;
  if (engine_limit) row("the engine may use", [](const MemoryBar& b) { return format_bytes(b.limit_bytes); });
  row("fits", [](const MemoryBar& b) { return std::string(b.fits ? "yes" : "no") + (b.note.empty() ? "" : " (" + b.note + ")"); });
  return out + "</tbody>\n</table>\n";
}

std::string memory_section(const std::vector<MemoryBar>& bars) {
  return "<section id=\"memory\">\n<h2>Memory per device</h2>\n<figure>\n" + render_memory_bars_svg(bars) +
         "<figcaption>GB = 10<sup>9</sup> bytes, GiB = 2<sup>30</sup> bytes; both are given for every size. The dashed line is "
         "what a program may allocate on this device (driver-visible memory, the macOS wired-memory limit or a phone's per-app limit); "
         "a second line marks the engine's share where it claims less.</figcaption>\n</figure>\n" +
         memory_table(bars) + "</section>\n";
}

std::string list_html(const std::vector<std::string>& items) {
  if (items.empty()) return "";
  std::string out = "<ul>\n";
  for (const auto& i : items) out += "<li>" + h(i) + "</li>\n";
  return out + "</ul>\n";
}

std::string risk_badge(const std::string& level) {
  const std::string cls = level == "low" || level == "medium" || level == "high" ? " " + level : "";
  return fmt::format("<span class=\"badge{}\">{}</span>", cls, h(level));
}

/// One ranked recommendation as a table row: the metric before and after, memory and the training or decode effects.
std::string recommendation_row(const Advice& a, const Recommendation& r) {
  const std::string effects = a.base.is_training()
                                  ? fmt::format("{} &rarr; {}<br><span class=\"small\">MFU {} &rarr; {}</span>",
                                                h(format_seconds(a.base.training().analysis.time.step_time_s)),
                                                h(format_seconds(r.after.training().analysis.time.step_time_s)),
                                                percent(a.base.training().analysis.mfu), percent(r.after.training().analysis.mfu))
                                  : bytes_pair(a.base.bytes_per_token, r.after.bytes_per_token);
  std::string phases;
  if (!a.base.is_training() && a.goal != Goal::kMemory)
    phases = fmt::format(
        "<br><span class=\"small\">first token {} &rarr; {}; per token {} &rarr; {}</span>",
        h(format_seconds(a.base.inference().analysis.prefill.time_s)), h(format_seconds(r.after.inference().analysis.prefill.time_s)),
        h(format_seconds(a.base.inference().analysis.decode.time_s)), h(format_seconds(r.after.inference().analysis.decode.time_s)));
  const bool fits_after = r.after.is_training() ? r.after.training().analysis.memory.fits : r.after.inference().analysis.memory.fits;
  return fmt::format(
      "<tr class=\"rec\" data-rule=\"{}\"><td class=\"num\">{}</td><td><strong>{}</strong><br><code>{}</code></td><td>{} &rarr; {}{}</td>"
      "<td class=\"num\">{}</td><td>{}{}</td><td>{}</td><td>effort {}<br>risk {}</td></tr>\n",
      h(r.rule->id), r.rank, h(r.rule->title), h(r.rule->id), h(metric_value(a.goal, a.base.metric)),
      h(metric_value(a.goal, r.after.metric)), phases, h(gain_value(r.gain, r.gain_basis)),
      bytes_pair(a.base.memory_bytes, r.after.memory_bytes), fits_after ? "" : " <span class=\"small\">(does not fit)</span>", effects,
      risk_badge(r.rule->effort), risk_badge(r.rule->risk_level));
}

/// The detail row under a recommendation: why, changes, needs, how, risk, assumptions and sources.
std::string recommendation_detail(const Advice& a, const Recommendation& r, const RuleBook& book) {
  std::string detail;
  if (!r.why.empty()) detail += "<p><strong>why:</strong> " + h(join(r.why, "; ")) + "</p>";
  if (!r.notes.empty()) detail += "<p><strong>changes:</strong> " + h(join(r.notes, "; ")) + "</p>";
  if (!r.prerequisites.empty()) detail += "<p><strong>needs:</strong> " + h(join(r.prerequisites, "; ")) + "</p>";
  const std::string how = r.how.empty() ? "" : fill_template(r.how, a.base.facts, a.assumption_values);
  detail += fmt::format("<p><strong>how{}:</strong> {}</p>", r.rule->how.count(r.how_engine) ? " (" + h(r.how_engine) + ")" : "",
                        how.empty() ? "see the sources" : "<code>" + h(how) + "</code>");
  detail += "<p><strong>risk:</strong> " + h(fill_template(r.rule->risk, a.base.facts, a.assumption_values)) + "</p>";
  if (!r.assumptions.empty()) {
    std::vector<std::string> used;
    for (const auto& u : r.assumptions) {
      const auto it = book.assumptions().find(u.id);
      const std::string unit = it == book.assumptions().end() ? "" : " " + it->second.unit;
      used.push_back(fmt::format("{} = {}{}{}", u.id, format_sig3(u.value), unit, u.overridden ? " (your --assume)" : ""));
    }
    detail +=
        "<p><strong>assumes:</strong> " + h(join(used, "; ")) + " <span class=\"small\">(override with --assume NAME=VALUE)</span></p>";
  }
  if (r.rule->sources.is_array() && !r.rule->sources.empty()) detail += "<p><strong>sources:</strong></p>" + sources_html(r.rule->sources);
  return "<tr class=\"detail\"><td></td><td colspan=\"6\">" + detail + "</td></tr>\n";
}

/// The stacked plan: one row per step from "as given", the result, and the rules left out of the stack.
std::string stacked_plan_html(const Advice& a) {
  std::string out;
  out +=
      "<h3>Stacked plan <span class=\"small\">(the best combination of the top recommendations, each re-checked; gains do not simply "
      "multiply)</span></h3>\n";
  out += fmt::format(
      "<table class=\"plan\">\n<thead><tr><th class=\"num\">step</th><th>apply</th><th>{}</th><th class=\"num\">step gain</th>"
      "<th class=\"num\">total gain</th><th>memory per device</th></tr></thead>\n<tbody>\n",
      h(a.metric.label));
  out += fmt::format("<tr class=\"plan-step\"><td class=\"num\">0</td><td>as given</td><td>{}</td><td></td><td></td><td>{}</td></tr>\n",
                     h(metric_value(a.goal, a.base.metric)), h(format_bytes(a.base.memory_bytes)));
  for (std::size_t i = 0; i < a.plan.size(); ++i) {
    const PlanStep& s = a.plan[i];
    std::string total = gain_value(s.cumulative_gain, "metric");
    if (!a.base.runs && !s.result.runs)
      total = gain_value(s.cumulative_gain, "memory");
    else if (!a.base.runs && s.first_running_step != static_cast<int>(i + 1))
      total = fmt::format("{:.2f}x over step {}", s.gain_over_first, s.first_running_step);
    out += fmt::format(
        "<tr class=\"plan-step\"><td class=\"num\">{}</td><td>+ <code>{}</code>{}</td><td>{}</td><td class=\"num\">{}</td><td "
        "class=\"num\">{}</td>"
        "<td>{}</td></tr>\n",
        i + 1, h(s.rule->id), s.notes.empty() ? "" : "<br><span class=\"small\">" + h(join(s.notes, "; ")) + "</span>",
        h(metric_value(a.goal, s.result.metric)), h(gain_value(s.step_gain, s.gain_basis)), h(total),
        h(format_bytes(s.result.memory_bytes)));
  }
  out += "</tbody>\n</table>\n";
  const Evaluation& last = a.plan.back().result;
  out +=
      "<p>result: " + h(workload_text(last)) +
      (last.is_training() ? ""
                          : "; " + h(last.inference().prepared.scenario.engine.id()) + " with " + h(last.inference().prepared.quant->id)) +
      "</p>\n";
  for (const auto& s : a.plan_skipped)
    out += "<p class=\"small\">not stacked: <code>" + h(s.rule->id) + "</code>: " + h(s.reason) + "</p>\n";
  return out;
}

/// A different model or run instead of a technique: listed, not ranked.
std::string alternatives_html(const Advice& a) {
  std::string out =
      "<h3>Alternatives <span class=\"small\">(a different model or run; not ranked among the techniques)</span></h3>\n<ul "
      "class=\"alternatives\">\n";
  for (const auto& r : a.alternatives)
    out += fmt::format("<li><strong>{}</strong> <code>{}</code>: {}; {} {} -&gt; {} ({}){}</li>\n", h(r.rule->title), h(r.rule->id),
                       h(join(r.why, "; ")), h(a.metric.label), h(metric_value(a.goal, a.base.metric)),
                       h(metric_value(a.goal, r.after.metric)), h(gain_value(r.gain, r.gain_basis)),
                       r.notes.empty() ? "" : "; " + h(join(r.notes, "; ")));
  return out + "</ul>\n";
}

/// Rules whose effect is not computed, with what they would change under load and how to apply them.
std::string unquantified_html(const Advice& a) {
  std::string out = "<h3>Also worth considering <span class=\"small\">(effect not computed)</span></h3>\n<ul class=\"unquantified\">\n";
  for (const auto& u : a.unquantified) {
    const std::string how = fill_template(u.how, a.base.facts, a.assumption_values);
    const auto load = under_load_lines(u);
    out += fmt::format("<li><strong>{}</strong> <code>{}</code>: {}; not computed: {}.{}{}</li>\n", h(u.rule->title), h(u.rule->id),
                       h(join(u.why, "; ")), h(u.rule->not_quantified), load.empty() ? "" : " Under load: " + h(join(load, "; ")) + ".",
                       how.empty() ? "" : " How: <code>" + h(how) + "</code>");
  }
  return out + "</ul>\n";
}

std::string playbook_section(const Advice& a, const RuleBook& book) {
  std::string out = "<section id=\"playbook\">\n";
  out += fmt::format("<h2>Playbook <span class=\"small\">(ranked by {} after the change, then quality, effort and risk)</span></h2>\n",
                     h(a.metric.label));
  if (a.recommendations.empty()) return out + "<p>No recommendation improves this scenario's " + h(a.metric.label) + ".</p>\n</section>\n";
  out += fmt::format(
      "<table class=\"playbook\">\n<thead><tr><th class=\"num\">#</th><th>technique</th><th>{} before &rarr; after</th><th "
      "class=\"num\">gain</th>"
      "<th>memory per device</th><th>{}</th><th>effort / risk</th></tr></thead>\n<tbody>\n",
      h(a.metric.label), a.base.is_training() ? "step time / MFU" : "decode traffic per token");
  for (const auto& r : a.recommendations) out += recommendation_row(a, r) + recommendation_detail(a, r, book);
  out += "</tbody>\n</table>\n";

  if (!a.plan.empty()) out += stacked_plan_html(a);
  if (!a.alternatives.empty()) out += alternatives_html(a);
  if (!a.unquantified.empty()) out += unquantified_html(a);
  return out + "</section>\n";
}

std::string verdict_html(const Advice& a) {
  if (a.base.is_training()) {
    const std::string& e = a.diagnosis.explanation;
    return fmt::format("<p class=\"verdict{}\">{}</p>\n", a.base.runs ? " fits" : "",
                       h(e.rfind(a.diagnosis.bound, 0) == 0 ? e : a.diagnosis.bound + " bound: " + e));
  }
  const Analysis& an = a.base.inference().analysis;
  const Workload& w = a.base.inference().prepared.scenario.workload;
  const double decode_share = a.diagnosis.figures.value("decode_share", 0.0);
  std::string text;
  if (a.goal == Goal::kMemory) {
    text = (a.diagnosis.bound == "none" ? "It fits. " : "Memory-capacity bound. ") + a.diagnosis.explanation;
  } else if (!a.base.runs) {
    text = "Memory-capacity bound: " + a.diagnosis.explanation + "; nothing else matters until it fits.";
  } else if (a.diagnosis.phase == "decode") {
    text = fmt::format("Decode dominates: {} of a request ({} tokens x {} per token; first token after {}). Decode is {}: {}",
                       percent(decode_share), w.gen_tokens, format_seconds(an.decode.time_s), format_seconds(an.prefill.time_s),
                       a.diagnosis.bound, a.diagnosis.explanation);
  } else {
    text = fmt::format("Prefill dominates: {} of a request (first token after {}; then {} tokens x {}). Prefill is {}: {}",
                       percent(1 - decode_share), format_seconds(an.prefill.time_s), w.gen_tokens, format_seconds(an.decode.time_s),
                       a.diagnosis.bound, a.diagnosis.explanation);
  }
  std::string out = fmt::format("<p class=\"verdict{}\">{}</p>\n", a.base.runs ? " fits" : "", h(text));
  out += fmt::format("<p>{}: <strong>{}</strong></p>\n", h(a.metric.label), h(metric_value(a.goal, a.base.metric)));
  if (a.diagnosis.thermal)
    out += fmt::format("<p>Thermal: after minutes of load the device keeps about {} of these speeds.</p>\n",
                       percent(a.diagnosis.figures.value("sustained_fraction", 1.0)));
  return out;
}

std::string assumptions_section(const std::vector<std::string>& notes, const Analysis* analysis, const Advice* advice, const RuleBook* book,
                                const AdviceView& view) {
  std::string out = "<section id=\"assumptions\">\n<h2>Assumptions and notes</h2>\n";
  if (!notes.empty()) out += "<h3>Defaults chosen</h3>\n" + list_html(notes);
  if (analysis && !analysis->warnings.empty()) out += "<h3>Warnings</h3>\n" + list_html(analysis->warnings);
  if (analysis && !analysis->assumptions.empty()) out += "<h3>Model assumptions</h3>\n" + list_html(analysis->assumptions);
  if (advice && book) {
    // Every world number a ranked recommendation used, once, with its source.
    std::vector<std::string> ids;
    for (const auto& r : advice->recommendations)
      for (const auto& u : r.assumptions)
        if (std::find(ids.begin(), ids.end(), u.id) == ids.end()) ids.push_back(u.id);
    if (!ids.empty()) {
      out +=
          "<h3>Numbers the playbook assumes</h3>\n<table class=\"assumptions\">\n<thead><tr><th>assumption</th><th class=\"num\">value</th>"
          "<th>what it is</th><th>sources</th></tr></thead>\n<tbody>\n";
      for (const auto& id : ids) {
        const auto it = book->assumptions().find(id);
        if (it == book->assumptions().end()) continue;
        const Assumption& as = it->second;
        const auto value = advice->assumption_values.find(id);
        out += fmt::format("<tr><td><code>{}</code></td><td class=\"num\">{} {}</td><td>{}</td><td>{}</td></tr>\n", h(id),
                           h(format_sig3(value == advice->assumption_values.end() ? as.value : value->second)), h(as.unit),
                           h(as.description), sources_html(as.sources));
      }
      out += "</tbody>\n</table>\n<p class=\"small\">Override any of them with <code>--assume NAME=VALUE</code>.</p>\n";
    }
    std::size_t left_out = 0;
    for (const auto& n : advice->not_applicable)
      if (n.stage != "goal") ++left_out;
    if (view.all && left_out > 0) {
      out += fmt::format("<h3>Left out ({} rules)</h3>\n<ul class=\"left-out\">\n", left_out);
      for (const auto& n : advice->not_applicable)
        if (n.stage != "goal") out += fmt::format("<li><code>{}</code> ({}): {}</li>\n", h(n.rule->id), h(n.stage), h(n.reason));
      out += "</ul>\n";
    } else if (left_out > 0) {
      out += fmt::format(
          "<p class=\"small\">{} more rule(s) do not apply here; --all lists them with the reason, --why-not RULE explains one.</p>\n",
          left_out);
    }
  }
  return out + "</section>\n";
}

std::string segment_color(std::size_t i) {
  static const std::vector<std::string> kColors = {"#1d4ed8", "#0891b2", "#65a30d", "#a855f7", "#d97706",
                                                   "#db2777", "#92400e", "#64748b", "#111827", "#94a3b8"};
  return kColors[i % kColors.size()];
}

bool same_point(const RooflinePoint& a, const RooflinePoint& b) {
  return std::fabs(a.flop_per_byte / b.flop_per_byte - 1) < 0.01 && std::fabs(a.flops_per_s / b.flops_per_s - 1) < 0.01;
}

}  // namespace

std::vector<Roof> device_roofs(const HardwareProfile& hw, const Factors& factors) {
  std::vector<std::pair<std::string, double>> rates(hw.flops_per_s.begin(), hw.flops_per_s.end());
  std::sort(rates.begin(), rates.end(), [](const auto& a, const auto& b) {
    if (a.second != b.second) return a.second > b.second;
    if (dtype_order(a.first) != dtype_order(b.first)) return dtype_order(a.first) < dtype_order(b.first);
    return a.first < b.first;
  });
  std::vector<Roof> roofs;
  bool used_found = false;
  for (const auto& [dtype, rate] : rates) {
    if (!(rate > 0)) continue;
    const bool used = dtype == factors.compute_dtype;
    used_found = used_found || used;
    if (!roofs.empty() && roofs.back().flops_per_s == rate) {
      roofs.back().label += ", " + dtype;
      roofs.back().used = roofs.back().used || used;
    } else {
      roofs.push_back({dtype, rate, used});
    }
  }
  if (!used_found && factors.peak_compute_flops_per_s > 0) {
    // "fp16 (FP16 accumulate)" (GeForce), "npu", "cpu:fp32": a roof of its own, or a name on an equal one.
    std::string label = factors.compute_dtype;
    if (const auto at = label.find(" (FP16 accumulate)"); at != std::string::npos) label.replace(at, std::string::npos, " (FP16 acc.)");
    const auto same =
        std::find_if(roofs.begin(), roofs.end(), [&](const Roof& r) { return r.flops_per_s == factors.peak_compute_flops_per_s; });
    if (same != roofs.end()) {
      same->label += ", " + label;
      same->used = true;
    } else {
      Roof r{label, factors.peak_compute_flops_per_s, true};
      roofs.insert(
          std::upper_bound(roofs.begin(), roofs.end(), r, [](const Roof& x, const Roof& y) { return x.flops_per_s > y.flops_per_s; }), r);
    }
  }
  return roofs;
}

std::vector<RooflinePoint> phase_points(const Analysis& a, PointSeries series, const std::string& tag, const std::string& what) {
  std::vector<RooflinePoint> points;
  auto add = [&](const char* phase, const PhaseEstimate& p) {
    if (!(p.time_s > 0) || !(p.flops > 0) || !(p.arithmetic_intensity > 0)) return;
    RooflinePoint pt;
    pt.phase = phase;
    pt.series = series;
    pt.tag = tag;
    pt.flop_per_byte = p.arithmetic_intensity;
    pt.flops_per_s = p.achieved_flops_per_s();
    pt.peak_flops_per_s = a.factors.peak_compute_flops_per_s;
    pt.title = fmt::format("{} {}: {} FLOP/byte, {} ({})", phase, what, flop_per_byte_text(pt.flop_per_byte),
                           si_label(pt.flops_per_s, "FLOP/s"), to_string(p.bound));
    points.push_back(pt);
  };
  add("prefill", a.prefill);
  add("decode", a.decode);
  return points;
}

RooflineChart advice_roofline(const Advice& advice, std::size_t recommendations) {
  const Evaluation& base = advice.base;
  const Scenario& s = base.inference().prepared.scenario;
  RooflineChart c;
  c.title = fmt::format("Roofline of one {}: {} prefill and decode, as given and after the advice", s.hardware->name, s.model.name);
  c.bandwidth_bytes_per_s = s.hardware->memory_bandwidth_bytes_per_s;
  c.roofs = device_roofs(*s.hardware, base.inference().analysis.factors);
  c.achievable_flops_per_s = base.inference().analysis.factors.achievable_compute_flops_per_s;
  c.achievable_bandwidth_bytes_per_s = base.inference().analysis.factors.achievable_bandwidth_bytes_per_s;
  c.points = phase_points(base.inference().analysis, PointSeries::kBefore, "", "as given");
  const std::vector<RooflinePoint> before = c.points;
  auto connect = [&](const std::vector<RooflinePoint>& after) {
    for (const auto& q : after) {
      const auto from = std::find_if(before.begin(), before.end(), [&](const RooflinePoint& p) { return p.phase == q.phase; });
      if (from != before.end() && same_point(*from, q)) continue;  // this phase did not move
      bool duplicate = false;
      for (const auto& p : c.points) duplicate = duplicate || (p.phase == q.phase && p.series != PointSeries::kBefore && same_point(p, q));
      if (duplicate) continue;
      c.points.push_back(q);
      if (from != before.end()) c.arrows.push_back({static_cast<std::size_t>(from - before.begin()), c.points.size() - 1});
    }
  };
  if (!advice.plan.empty() && !advice.plan.back().result.is_training())
    connect(phase_points(advice.plan.back().result.inference().analysis, PointSeries::kPlan, "plan", "after the stacked plan"));
  for (const auto& r : advice.recommendations) {
    if (static_cast<std::size_t>(r.rank) > recommendations || r.after.is_training()) continue;
    connect(phase_points(r.after.inference().analysis, PointSeries::kRecommendation, fmt::format("#{}", r.rank),
                         fmt::format("after #{} {}", r.rank, r.rule->id)));
  }
  return c;
}

MemoryBar memory_bar(const std::string& label, const MemoryBreakdown& m) {
  MemoryBar b;
  b.label = label;
  b.segments = {{"weights", m.weights_bytes},
                {"KV cache", m.kv_cache_bytes},
                {"activations", m.activation_bytes},
                {"runtime overhead", m.overhead_bytes}};
  const double parts = m.weights_bytes + m.kv_cache_bytes + m.activation_bytes + m.overhead_bytes;
  if (m.total_bytes > parts * 1.005) b.segments.push_back({"other", m.total_bytes - parts});
  b.total_bytes = m.total_bytes;
  b.capacity_bytes = m.capacity_bytes;
  b.limit_bytes = m.limit_bytes > 0 ? m.limit_bytes : m.capacity_bytes;
  b.fits = m.fits;
  if (m.offloaded_layers > 0)
    b.note = fmt::format("{} of {} layers in host memory, {}", m.offloaded_layers, m.total_layers, format_gb(m.offloaded_bytes));
  return b;
}

MemoryBar memory_bar(const std::string& label, const TrainingMemory& m) {
  MemoryBar b;
  b.label = label;
  const std::vector<std::pair<std::string, double>> all = {{"weights", m.weights_bytes},
                                                           {"gradients", m.gradients_bytes},
                                                           {"master weights", m.master_weights_bytes},
                                                           {"optimizer states", m.optimizer_bytes},
                                                           {"LoRA adapters", m.adapter_bytes},
                                                           {"gathered layers", m.gathered_bytes},
                                                           {"activations", m.activation_bytes},
                                                           {"working buffers", m.working_bytes},
                                                           {"logits", m.logits_bytes},
                                                           {"runtime overhead", m.overhead_bytes}};
  for (const auto& s : all)
    if (s.second > 0) b.segments.push_back(s);
  b.total_bytes = m.total_bytes;
  b.capacity_bytes = b.limit_bytes = m.capacity_bytes;
  b.fits = m.fits;
  double parts = 0;
  for (const auto& s : b.segments) parts += s.second;
  if (std::fabs(parts - m.total_bytes) > 0.005 * m.total_bytes)
    b.note = fmt::format("peak {} is the larger of forward/backward and the optimizer step", format_gb(m.total_bytes));
  return b;
}

namespace {

/// The memory chart's layout in px: the legend entries wrapped to the bars' width, where the first bar
/// starts, and the byte scale every bar shares.
struct MemoryChart {
  static constexpr double kWidth = 1040, kLabel = 120, kBarLeft = 130, kBarRight = 1020, kRow = 62, kBarHeight = 24, kLegendRow = 18;
  std::vector<std::string> names;                    ///< every part that appears in some bar, in order
  std::vector<std::pair<double, double>> legend_at;  ///< where each name's legend entry sits
  double top = 0;                                    ///< y of the first bar, below the legend
  double scale_max = 0;                              ///< the bytes at the bars' right end

  explicit MemoryChart(const std::vector<MemoryBar>& bars);
  double x_of(double bytes) const { return kBarLeft + (scale_max > 0 ? bytes / scale_max : 0) * (kBarRight - kBarLeft); }
  static std::string px(double v) { return fmt::format("{:.1f}", v); }
  std::string open_svg(std::size_t rows) const;
  std::string legend_svg() const;
  std::string bar_svg(const MemoryBar& b, double y) const;
  std::string capacity_label_svg(const MemoryBar& first) const;
};

MemoryChart::MemoryChart(const std::vector<MemoryBar>& bars) {
  // Legend: every part that appears in some bar, in order, wrapped to the bar's width
  // (text width estimated at 6.5 px a character).
  for (const auto& b : bars)
    for (const auto& [name, bytes] : b.segments)
      if (bytes > 0 && std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  double lx = kBarLeft, ly = 18;
  for (const auto& name : names) {
    const double width = 16 + 6.5 * static_cast<double>(name.size()) + 20;
    if (lx + width > kBarRight && lx > kBarLeft) {
      lx = kBarLeft;
      ly += kLegendRow;
    }
    legend_at.push_back({lx, ly});
    lx += width;
  }
  top = ly + 32;
  for (const auto& b : bars) scale_max = std::max({scale_max, b.total_bytes, b.capacity_bytes});
  scale_max *= 1.04;
}

std::string MemoryChart::open_svg(std::size_t rows) const {
  const double height = top + kRow * static_cast<double>(rows) + 6;
  return fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" class="memory-bars" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-labelledby="mem-title" font-size="12">)"
      "\n<title id=\"mem-title\">Memory needed per device against what it may use</title>\n",
      fmt::arg("w", px(kWidth)), fmt::arg("h", px(height)));
}

std::string MemoryChart::legend_svg() const {
  std::string svg = "<g class=\"legend\">\n";
  for (std::size_t i = 0; i < names.size(); ++i)
    svg += fmt::format(R"(<rect x="{}" y="{}" width="12" height="12" fill="{}"/><text x="{}" y="{}">{}</text>)"
                       "\n",
                       px(legend_at[i].first), px(legend_at[i].second - 10), segment_color(i), px(legend_at[i].first + 16),
                       px(legend_at[i].second), h(names[i]));
  return svg + "</g>\n";
}

/// One device's bar at height y: its label, the parts in legend colours, the totals line and the capacity marks.
std::string MemoryChart::bar_svg(const MemoryBar& b, double y) const {
  std::string svg = fmt::format("<g class=\"bar\" data-label=\"{}\">\n", h(b.label));
  svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="end" font-weight="bold">{}</text>)"
                     "\n",
                     px(kLabel), px(y + 16), h(b.label));
  svg += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="#f8fafc" stroke="#e2e8f0"/>)"
                     "\n",
                     px(kBarLeft), px(y), px(kBarRight - kBarLeft), px(kBarHeight));
  double at = 0;
  for (const auto& [name, bytes] : b.segments) {
    if (!(bytes > 0)) continue;
    const std::size_t color = static_cast<std::size_t>(std::find(names.begin(), names.end(), name) - names.begin());
    const double x0 = x_of(at), x1 = x_of(at + bytes);
    svg += fmt::format(R"(<rect class="segment" data-part="{}" x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{}: {}</title></rect>)"
                       "\n",
                       h(name), px(x0), px(y), px(std::max(x1 - x0, 0.5)), px(kBarHeight), segment_color(color), h(name),
                       h(format_bytes(bytes)));
    const std::string inside = fmt::format("{} {}", name, format_gb(bytes));
    if (x1 - x0 > 6.6 * static_cast<double>(inside.size()) + 8)
      svg += fmt::format(R"(<text x="{}" y="{}" fill="#ffffff">{}</text>)"
                         "\n",
                         px(x0 + 5), px(y + 16), h(inside));
    at += bytes;
  }
  const std::string allowed =
      b.limit_bytes < b.capacity_bytes * 0.999
          ? fmt::format("the engine may use {} of {} usable", format_bytes(b.limit_bytes), format_bytes(b.capacity_bytes))
          : format_bytes(b.capacity_bytes) + " usable";
  svg += fmt::format(R"(<text class="bar-total" x="{}" y="{}">{} needed; {}: {}{}</text>)"
                     "\n",
                     px(kBarLeft), px(y + kBarHeight + 16), h(format_bytes(b.total_bytes)), h(allowed), b.fits ? "fits" : "does not fit",
                     b.note.empty() ? "" : " (" + h(b.note) + ")");
  // What the device (and the engine) allow, across this bar.
  svg += fmt::format(
      R"(<line class="capacity" x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#b91c1c" stroke-width="2" stroke-dasharray="5 3"><title>usable capacity {}</title></line>)"
      "\n",
      px(y - 5), px(y + kBarHeight + 5), h(format_bytes(b.capacity_bytes)), fmt::arg("x", px(x_of(b.capacity_bytes))));
  if (b.limit_bytes < b.capacity_bytes * 0.999)
    svg += fmt::format(
        R"(<line class="engine-limit" x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#d97706" stroke-width="2" stroke-dasharray="2 2"><title>the engine may use {}</title></line>)"
        "\n",
        px(y - 5), px(y + kBarHeight + 5), h(format_bytes(b.limit_bytes)), fmt::arg("x", px(x_of(b.limit_bytes))));
  return svg + "</g>\n";
}

/// One label for the capacity line, above the first bar.
std::string MemoryChart::capacity_label_svg(const MemoryBar& first) const {
  const double cap_x = x_of(first.capacity_bytes);
  const bool right_half = cap_x > (kBarLeft + kBarRight) / 2;
  return fmt::format(R"(<text class="capacity-label" x="{}" y="{}" text-anchor="{}" fill="#b91c1c">usable {}</text>)"
                     "\n",
                     px(cap_x + (right_half ? -4 : 4)), px(top - 10), right_half ? "end" : "start", h(format_bytes(first.capacity_bytes)));
}

}  // namespace

std::string render_memory_bars_svg(const std::vector<MemoryBar>& bars) {
  const MemoryChart chart(bars);
  std::string svg = chart.open_svg(bars.size()) + chart.legend_svg();
  if (chart.scale_max <= 0) return svg + "</svg>\n";
  for (std::size_t row = 0; row < bars.size(); ++row)
    svg += chart.bar_svg(bars[row], chart.top + MemoryChart::kRow * static_cast<double>(row));
  return svg + chart.capacity_label_svg(bars.front()) + "</svg>\n";
}

std::string render_advice_html(const Advice& a, const RuleBook& book, const AdviceView& view, const HtmlReportInfo& info) {
  std::string title;
  if (a.base.is_training())
    title = fmt::format("{} training on {} x {}", a.base.training().prepared.model.spec.name,
                        a.base.training().prepared.scenario.workload.gpus, a.base.training().prepared.scenario.hardware->name);
  else
    title = fmt::format("{} ({}) on {} with {}", a.base.inference().prepared.scenario.model.name, a.base.inference().prepared.quant->id,
                        a.base.inference().prepared.scenario.hardware->name, a.base.inference().prepared.scenario.engine.id());
  std::string out = page_start(fmt::format("optadvisor: {} ({})", title, to_string(a.goal)));
  out += "<header>\n<h1>" + h(title) + "</h1>\n";
  out +=
      fmt::format("<p class=\"lead\">What limits it for {}, and a ranked, quantified playbook.</p>\n", h(std::string(to_string(a.goal))));
  out += facts_list(advice_facts(a, info)) + "</header>\n";

  out += "<section id=\"diagnosis\">\n<h2>Diagnosis</h2>\n" + verdict_html(a);
  if (!a.base.is_training()) out += phases_table(a.base.inference().analysis);
  out += figures_grid(a.diagnosis.figures) + "</section>\n";

  std::vector<MemoryBar> bars;
  const bool has_plan = !a.plan.empty();
  if (a.base.is_training()) {
    bars.push_back(memory_bar("as given", a.base.training().analysis.memory));
    if (has_plan) bars.push_back(memory_bar("after the plan", a.plan.back().result.training().analysis.memory));
    out +=
        "<section id=\"roofline\">\n<h2>Roofline</h2>\n<p>The roofline chart covers inference phases (prefill and decode); a training "
        "step's "
        "compute, communication and bubble are in the diagnosis above.</p>\n</section>\n";
  } else {
    const RooflineChart chart = advice_roofline(a);
    out += roofline_section(chart, a.base.inference().analysis, a.base.inference().prepared.scenario, a.base.runs);
    if (!a.recommendations.empty() && chart.arrows.empty())
      out.insert(out.rfind("</section>"),
                 "<p class=\"unmoved\">Neither the stacked plan nor the top recommendations move prefill or decode "
                 "by 1% or more on this chart.</p>\n");
    bars.push_back(memory_bar("as given", a.base.inference().analysis.memory));
    if (has_plan && !a.plan.back().result.is_training())
      bars.push_back(memory_bar("after the plan", a.plan.back().result.inference().analysis.memory));
  }
  out += memory_section(bars);
  out += playbook_section(a, book);

  std::vector<std::string> notes = info.notes;
  notes.insert(notes.end(), a.notes.begin(), a.notes.end());
  const auto& prepared_notes = a.base.is_training() ? a.base.training().prepared.notes : a.base.inference().prepared.notes;
  notes.insert(notes.end(), prepared_notes.begin(), prepared_notes.end());
  if (a.base.is_training()) {
    std::string extra = assumptions_section(notes, nullptr, &a, &book, view);
    const TrainingAnalysis& t = a.base.training().analysis;
    const std::string lists = (t.warnings.empty() ? "" : "<h3>Warnings</h3>\n" + list_html(t.warnings)) +
                              (t.assumptions.empty() ? "" : "<h3>Model assumptions</h3>\n" + list_html(t.assumptions));
    extra.insert(extra.find("</h2>\n") + 6, lists);
    out += extra;
  } else {
    out += assumptions_section(notes, &a.base.inference().analysis, &a, &book, view);
  }
  return out + page_end(info);
}

std::string render_serve_html(const std::string& title, const std::vector<std::pair<std::string, std::string>>& facts,
                              const std::vector<ServingSeries>& series, double slo_ttft_s, double slo_tpot_s,
                              const std::vector<std::string>& notes, const HtmlReportInfo& info) {
  std::string out = page_start("optadvisor serve: " + title);
  out += "<header>\n<h1>" + h(title) +
         "</h1>\n<p class=\"lead\">Serving under load: latency percentiles and throughput per GPU as the load grows.</p>\n";
  std::vector<std::pair<std::string, std::string>> rows;
  for (const auto& [k, v] : facts) rows.push_back({k, h(v)});
  rows.push_back({"versions", fmt::format("optadvisor {}, data {}", h(info.program_version), h(info.data_version))});
  out += facts_list(rows) + "</header>\n";
  out +=
      "<section>\n<h2>TPOT and TTFT against throughput</h2>\n<figure>\n" + render_serving_svg(series, slo_ttft_s, slo_tpot_s) +
      "<figcaption>Each point is one load of the sweep (its label: concurrency or rate); the ring marks the knee, the dashed line the SLO."
      "</figcaption>\n</figure>\n</section>\n";
  for (const auto& s : series) {
    out += "<section>\n<h2>" + h(s.label) +
           "</h2>\n<table>\n<thead><tr><th>load</th><th>TTFT mean ms</th><th>TTFT p99 ms</th>"
           "<th>TPOT mean ms</th><th>TPOT p99 ms</th><th>tok/s</th><th>tok/s/GPU</th><th>goodput "
           "req/s</th><th>bound</th></tr></thead>\n<tbody>\n";
    for (std::size_t i = 0; i < s.points.size(); ++i) {
      const ServingResult& p = s.points[i];
      if (!p.fits) {
        out += fmt::format("<tr><td>{}</td><td colspan=\"8\">does not fit</td></tr>\n", h(s.loads[i]));
        continue;
      }
      out += fmt::format(
          "<tr><td>{}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.0f}</td><td>{:.0f}</td><td>{:.3g}</td><td>{}</"
          "td></tr>\n",
          h(s.loads[i]), p.ttft_s.mean * 1e3, p.ttft_s.p99 * 1e3, p.tpot_s.mean * 1e3, p.tpot_s.p99 * 1e3, p.output_tokens_per_s,
          p.output_tokens_per_s_per_gpu, p.goodput_requests_per_s, h(to_string(p.bound)));
    }
    out += "</tbody>\n</table>\n</section>\n";
  }
  if (!notes.empty()) {
    out += "<section>\n<h2>Notes</h2>\n<ul>\n";
    for (const auto& n : notes) out += "<li>" + h(n) + "</li>\n";
    out += "</ul>\n</section>\n";
  }
  return out + page_end(info);
}

std::string render_estimate_html(const PreparedScenario& ps, const Analysis& a, const HtmlReportInfo& info) {
  const Scenario& s = ps.scenario;
  const std::string title = fmt::format("{} ({}) on {} with {}", s.model.name, ps.quant->id, s.hardware->name, s.engine.id());
  std::string out = page_start("optadvisor estimate: " + title);
  out +=
      "<header>\n<h1>" + h(title) + "</h1>\n<p class=\"lead\">Memory, time to first token, decode speed and what binds each phase.</p>\n";
  auto rows = inference_facts(ps);
  InferenceRun run;
  run.prepared = ps;
  run.analysis = a;
  Evaluation e;
  e.run = std::move(run);
  rows.push_back({"workload", h(workload_text(e))});
  rows.push_back({"versions", fmt::format("optadvisor {}, data {}", h(info.program_version), h(info.data_version))});
  out += facts_list(rows) + "</header>\n";

  out += "<section id=\"estimate\">\n<h2>Estimate</h2>\n";
  out +=
      fmt::format("<p class=\"verdict{}\">{}</p>\n", a.memory.fits ? " fits" : "",
                  h(a.memory.fits || a.memory.offloaded_layers > 0 ? a.decode.explanation() : "does not fit: the times below assume it did"));
  out += phases_table(a);
  std::vector<std::pair<std::string, std::string>> figures = {
      {"time to first token", format_seconds(a.prefill.time_s)},
      {"decode per sequence", format_sig3(a.decode.tokens_per_s_per_sequence) + " tokens/s"}};
  if (a.has_throughput)
    figures.push_back(
        {"serving throughput", fmt::format("{} tokens/s at batch {}", format_sig3(a.output_tokens_per_s), a.throughput_batch)});
  if (a.sustained_factor < 1.0) figures.push_back({"sustained (thermal)", percent(a.sustained_factor) + " of the burst figures"});
  std::vector<std::pair<std::string, std::string>> escaped;
  for (const auto& [k, v] : figures) escaped.push_back({k, h(v)});
  out += facts_list(escaped) + "</section>\n";

  RooflineChart chart;
  chart.title = fmt::format("Roofline of one {}: {} prefill and decode", s.hardware->name, s.model.name);
  chart.bandwidth_bytes_per_s = s.hardware->memory_bandwidth_bytes_per_s;
  chart.roofs = device_roofs(*s.hardware, a.factors);
  chart.achievable_flops_per_s = a.factors.achievable_compute_flops_per_s;
  chart.achievable_bandwidth_bytes_per_s = a.factors.achievable_bandwidth_bytes_per_s;
  chart.points = phase_points(a, PointSeries::kBefore, "", "as given");
  out += roofline_section(chart, a, s, a.memory.fits || a.memory.offloaded_layers > 0);
  out += memory_section({memory_bar("as given", a.memory)});
  out += assumptions_section(ps.notes, &a, nullptr, nullptr, AdviceView{});
  return out + page_end(info);
}

}  // namespace optadvisor
