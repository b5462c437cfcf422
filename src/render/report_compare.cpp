// SPDX-License-Identifier: MIT
#include "optadvisor/render/report_compare.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "base/table.hpp"
#include "optadvisor/analysis/analysis_json.hpp"
#include "base/units.hpp"
#include "render/json_fields.hpp"

namespace optadvisor {
namespace {

/// The device as asked for: "m4-max-40c", or "m4-max-40c:64GB" when a memory size was picked.
std::string device_label(const std::string& id, const ScenarioRequest& request) {
  return request.memory.empty() ? id : fmt::format("{}:{}", id, request.memory);
}

bool is_best(const CompareRow& row, CompareColumn c) { return std::find(row.best.begin(), row.best.end(), c) != row.best.end(); }

nlohmann::json row_json(const CompareRow& row) {
  nlohmann::json j = {{"value", row.value},
                      {"status", std::string(to_string(row.status))},
                      {"requested", {{"hardware", row.request.hardware}, {"quant", row.request.quant}, {"engine", row.request.engine}}}};
  if (!row.request.memory.empty()) j["requested"]["memory"] = row.request.memory;
  if (!row.reason.empty()) j["reason"] = row.reason;
  // Every row has every section; null where the row did not get that far.
  for (const char* key : {"scenario", "memory", "prefill", "decode", "serving", "energy", "cost"}) j[key] = nullptr;
  j["best"] = nlohmann::json::array();
  if (!row.prepared) return j;
  const PreparedScenario& ps = *row.prepared;
  const Analysis& a = row.analysis;
  const MemoryBreakdown& m = a.memory;
  j["scenario"] = scenario_json(ps, a);
  j["memory"] = {{"total_bytes", m.total_bytes},
                 {"capacity_bytes", m.capacity_bytes},
                 {"limit_bytes", m.limit_bytes},
                 {"headroom_bytes", m.limit_bytes - m.total_bytes},
                 {"fits", m.fits},
                 {"offloaded_layers", m.offloaded_layers},
                 {"per_device", true}};
  if (!row.runs()) return j;
  j["prefill"] = {
      {"ttft_s", a.prefill.time_s}, {"tokens_per_s", a.prefill.tokens_per_s}, {"bound", std::string(to_string(a.prefill.bound))}};
  j["decode"] = {{"time_per_token_s", a.decode.time_s},
                 {"tokens_per_s", a.decode.tokens_per_s},
                 {"tokens_per_s_per_sequence", a.decode.tokens_per_s_per_sequence},
                 {"bound", std::string(to_string(a.decode.bound))}};
  j["serving"] = {{"batch", a.batch}, {"output_tokens_per_s", row.serving_tokens_per_s}};
  const Efficiency& e = row.efficiency;
  j["energy"] = {{"power_watts", optional_number(e.power_watts)}, {"tokens_per_joule", optional_number(e.tokens_per_joule)}};
  j["cost"] = {{"price_usd", optional_number(e.price_usd)}, {"tokens_per_s_per_kusd", optional_number(e.tokens_per_s_per_kusd)}};
  nlohmann::json best = nlohmann::json::array();
  for (CompareColumn c : row.best) best.push_back(std::string(column_key(c)));
  j["best"] = best;
  return j;
}

std::string workload_text(const Comparison& c) {
  const ScenarioRequest& r = c.base;
  std::string out = fmt::format("batch {}, prompt {} tokens, generate {} tokens, context {}", r.batch_or_default(), r.prompt_or_default(),
                                r.gen_or_default(), r.context_or_prompt_plus_gen());
  if (!r.kv_dtype.empty()) out += ", KV cache " + r.kv_dtype;
  const int64_t gpus = r.gpus ? r.gpus : r.tp * r.pp;
  if (gpus > 1) out += fmt::format(", {} GPUs (tp {}, pp {})", gpus, r.tp, r.pp);
  return out;
}

/// "12.3*" (Markdown: "**12.3**") when the row holds the column's best value.
std::string cell(const CompareRow& row, CompareColumn c, const std::string& text, bool md) {
  if (!row.column(c)) return "-";
  if (md) return is_best(row, c) ? "**" + text + "**" : text;
  return is_best(row, c) ? text + "*" : text + " ";
}

std::string tokens_text(double v) { return format_sig3(v); }

std::string table(const Comparison& c, bool md) {
  using A = Table::Align;
  Table t({"HARDWARE", "QUANT", "ENGINE", "MEMORY/DEVICE", "FITS", "HEADROOM", "TTFT", "DECODE/SEQ", "DECODE", "SERVING", "TOK/J",
           "TOK/S/K$", "BOUND PREFILL/DECODE"},
          {A::kLeft, A::kLeft, A::kLeft, A::kRight, A::kLeft, A::kRight, A::kRight, A::kRight, A::kRight, A::kRight, A::kRight, A::kRight,
           A::kLeft});
  for (const auto& row : c.rows) {
    if (!row.prepared) {
      t.add_row({row.request.hardware.empty() ? "-" : device_label(row.request.hardware, row.request), row.request.quant.empty() ? "-" : row.request.quant,
                 row.request.engine.empty() ? "-" : row.request.engine, "-", "n/a", "-", "-", "-", "-", "-", "-", "-", "-"});
      continue;
    }
    const PreparedScenario& ps = *row.prepared;
    const Analysis& a = row.analysis;
    const MemoryBreakdown& m = a.memory;
    const char* fits = row.status == CandidateStatus::kFits ? "yes" : row.status == CandidateStatus::kOffloaded ? "offload" : "no";
    std::vector<std::string> cells = {
        device_label(ps.scenario.hardware->id, row.request),
        ps.quant->id,
        ps.scenario.engine.id(),
        fmt::format("{} / {} GB", format_sig3(m.total_bytes / kBytesPerGB), format_sig3(m.limit_bytes / kBytesPerGB)),
        fits,
        cell(row, CompareColumn::kHeadroom, format_gb(m.limit_bytes - m.total_bytes), md),
        cell(row, CompareColumn::kTtft, format_seconds(a.prefill.time_s), md),
        cell(row, CompareColumn::kDecodePerSequence, tokens_text(a.decode.tokens_per_s_per_sequence), md),
        cell(row, CompareColumn::kDecode, tokens_text(a.decode.tokens_per_s), md),
        cell(row, CompareColumn::kThroughput, tokens_text(row.serving_tokens_per_s), md),
        cell(row, CompareColumn::kPerJoule, row.efficiency.tokens_per_joule ? format_sig3(*row.efficiency.tokens_per_joule) : "", md),
        cell(row, CompareColumn::kPerDollar, row.efficiency.tokens_per_s_per_kusd ? format_sig3(*row.efficiency.tokens_per_s_per_kusd) : "",
             md),
        row.runs() ? fmt::format("{} / {}", to_string(a.prefill.bound), to_string(a.decode.bound)) : "memory-capacity"};
    t.add_row(std::move(cells));
  }
  return md ? t.to_markdown() : t.to_text();
}

}  // namespace

nlohmann::json compare_json(const Comparison& c) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : c.rows) rows.push_back(row_json(row));
  nlohmann::json best = nlohmann::json::object();
  for (CompareColumn col : all_compare_columns()) {
    nlohmann::json values = nlohmann::json::array();
    for (const auto& row : c.rows)
      if (is_best(row, col)) values.push_back(row.value);
    best[std::string(column_key(col))] = values;
  }
  const ScenarioRequest& r = c.base;
  return {{"schema_version", kSchemaVersion},
          {"axis", std::string(to_string(c.axis))},
          {"sort", std::string(to_string(c.sort))},
          {"model", {{"id", c.model.spec.id}, {"name", c.model.spec.name}, {"source", c.model.origin}}},
          {"workload",
           {{"batch", batch_json(r.batch_or_default())},
            {"batch_max", r.batch_or_default() == "max"},
            {"prompt_tokens", r.prompt_or_default()},
            {"gen_tokens", r.gen_or_default()},
            {"context_tokens", r.context_or_prompt_plus_gen()},
            {"gpus", r.gpus ? r.gpus : r.tp * r.pp},
            {"tp", r.tp},
            {"pp", r.pp}}},
          {"candidates", rows},
          {"best", best}};
}

std::string render_compare(const Comparison& c, OutputFormat format, const Style& style) {
  if (format == OutputFormat::kJson) return compare_json(c).dump(2) + "\n";
  const bool md = format == OutputFormat::kMarkdown;
  std::string out;
  std::string axis = c.axis == CompareAxis::kHardware ? "device" : c.axis == CompareAxis::kQuant ? "weight format" : "engine";
  if (c.rows.size() != 1) axis += "s";
  const std::string title = fmt::format("{}: {} {} compared", c.model.spec.name, c.rows.size(), axis);
  out += md ? "# " + title + "\n\n" : style.bold(title) + "\n";
  out += "workload: " + workload_text(c) + "\n";
  if (c.sort != CompareSort::kGiven) out += fmt::format("sorted by {}\n", to_string(c.sort));
  out += "\n" + table(c, md);
  std::string reasons;
  for (const auto& row : c.rows)
    if (!row.reason.empty()) reasons += fmt::format("{}{}: {}\n", md ? "- " : "  ", row.value, row.reason);
  if (!reasons.empty()) out += "\n" + reasons;
  const std::string legend[] = {
      md ? "Bold: the best value in its column, among the rows that fit." : "*: the best value in its column, among the rows that fit.",
      "MEMORY/DEVICE: needed / what the engine may use, per device. TTFT: time to first token.",
      "DECODE/SEQ and DECODE: generated tokens/s per sequence and over the batch. SERVING: batch x gen / (TTFT + gen x time per token).",
      "TOK/J: SERVING / (board power x GPUs). TOK/S/K$: SERVING per 1000 USD of list price x GPUs. '-': the profile has no power or price.",
      "GB = 10^9 bytes."};
  out += "\n";
  for (const auto& line : legend) out += (md ? "- " : "") + line + "\n";
  return out;
}

}  // namespace optadvisor
