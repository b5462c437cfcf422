// SPDX-License-Identifier: MIT
#include "optadvisor/render/report_search.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "optadvisor/advisor/playbook.hpp"
#include "base/table.hpp"
#include "base/units.hpp"
#include "render/json_fields.hpp"

namespace optadvisor {
namespace {

nlohmann::json optional_front(const std::optional<uint32_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

std::string metric_text(Goal goal, double value) {
  switch (goal) {
    case Goal::kLatency: return format_seconds(value);
    case Goal::kThroughput: return format_sig3(value) + " tok/s";
    case Goal::kMemory: return fmt::format("{:.0f}%", value * 100);
    case Goal::kTraining: break;
  }
  return format_sig3(value);
}

std::string metric_header(Goal goal) {
  switch (goal) {
    case Goal::kLatency: return "LATENCY";
    case Goal::kThroughput: return "SERVING";
    case Goal::kMemory: return "MEMORY USE";
    case Goal::kTraining: break;
  }
  return "METRIC";
}

std::string metric_definition(Goal goal) {
  switch (goal) {
    case Goal::kLatency: return "request latency = TTFT + gen x time per token, lower is better";
    case Goal::kThroughput: return "serving throughput = batch x gen / (TTFT + gen x time per token), higher is better";
    case Goal::kMemory: return "memory needed / what the engine may use, per device, lower is better";
    case Goal::kTraining: break;
  }
  return "";
}

std::string gpus_text(const SearchCandidate& c) {
  const std::string layout = c.gpus == 1 ? std::string("1") : c.tp > 1 ? fmt::format("tp {}", c.tp) : fmt::format("pp {}", c.pp);
  if (c.replicas > 1) return fmt::format("{} ({} x {})", c.gpus * c.replicas, c.replicas, layout);
  if (c.gpus == 1) return "1";
  return fmt::format("{} ({})", c.gpus, layout);
}

std::string workload_text(const SearchRequest& r) {
  const ScenarioRequest& w = r.workload;
  std::string batch = w.batch ? *w.batch : r.goal == Goal::kThroughput ? std::string("1 to the largest that fits") : std::string("1");
  std::string out = fmt::format("batch {}, prompt {} tokens, generate {} tokens, context {}", batch, w.prompt_or_default(),
                                w.gen_or_default(), w.context_or_prompt_plus_gen());
  if (!w.kv_dtype.empty()) out += ", KV cache " + w.kv_dtype;
  return out;
}

nlohmann::json candidate_json(const SearchResult& result, const SearchCandidate& c, std::size_t position) {
  const Efficiency& e = c.efficiency;
  return {{"position", position},
          {"rank", c.rank ? nlohmann::json(c.rank) : nlohmann::json(nullptr)},
          {"cost_front", optional_front(c.cost_front)},
          {"energy_front", optional_front(c.energy_front)},
          {"hardware", {{"id", c.hardware->id}, {"name", c.hardware->name}, {"class", std::string(to_string(c.hardware->device_class))}}},
          {"gpus", c.gpus},
          {"tp", c.tp},
          {"pp", c.pp},
          {"replicas", c.replicas},
          {"quant", c.quant},
          {"engine", c.engine},
          {"batch", c.batch},
          {"metric", c.metric},
          {"ttft_s", c.ttft_s},
          {"decode_tokens_per_s_per_sequence", c.decode_tokens_per_s_per_sequence},
          {"decode_tokens_per_s", c.decode_tokens_per_s},
          {"serving_tokens_per_s", c.serving_tokens_per_s},
          {"memory",
           {{"total_bytes", c.memory_bytes},
            {"limit_bytes", c.memory_limit_bytes},
            {"headroom_bytes", c.headroom_bytes()},
            {"per_device", true}}},
          {"bound", {{"prefill", std::string(to_string(c.prefill_bound))}, {"decode", std::string(to_string(c.decode_bound))}}},
          {"cost",
           {{"price_usd", optional_number(e.price_usd)},
            {"price_known", e.price_usd.has_value()},
            {"tokens_per_s_per_kusd", optional_number(e.tokens_per_s_per_kusd)}}},
          {"energy", {{"power_watts", optional_number(e.power_watts)}, {"tokens_per_joule", optional_number(e.tokens_per_joule)}}},
          {"command", estimate_command(candidate_request(result.request, c))}};
}

/// The rows shown: the first `top` candidates with a price, then the first
/// `top` without one (the candidates are ordered that way).
std::vector<std::size_t> shown_rows(const SearchResult& result, std::size_t top) {
  std::vector<std::size_t> out;
  std::size_t priced = 0, unpriced = 0;
  for (std::size_t i = 0; i < result.candidates.size(); ++i) {
    std::size_t& n = result.candidates[i].efficiency.price_usd ? priced : unpriced;
    if (n < top) out.push_back(i);
    ++n;
  }
  return out;
}

}  // namespace

std::string search_summary(const SearchStats& s) {
  return fmt::format("searched {} configurations ({} fit, {} meet the requirements)", s.searched, s.fit, s.meet_requirements);
}

nlohmann::json search_json(const SearchResult& result, std::size_t top) {
  const SearchRequest& r = result.request;
  const MetricInfo& metric = metric_for(result.goal);
  nlohmann::json space = {
      {"hardware", r.space.hardware},
      {"device_class", r.space.device_class ? nlohmann::json(std::string(to_string(*r.space.device_class))) : nlohmann::json(nullptr)},
      {"quants", r.space.all_quants       ? nlohmann::json("all")
                 : r.space.quants.empty() ? nlohmann::json(default_search_quants())
                                          : nlohmann::json(r.space.quants)},
      {"engines", r.space.engines},
      {"max_gpus", r.space.max_gpus}};
  nlohmann::json requirements = nlohmann::json::array();
  for (const auto& q : r.requirements) requirements.push_back(q.text);
  nlohmann::json results = nlohmann::json::array();
  const auto rows = shown_rows(result, top);
  for (std::size_t k = 0; k < rows.size(); ++k) results.push_back(candidate_json(result, result.candidates[rows[k]], k + 1));
  const ScenarioRequest& w = r.workload;
  return {{"schema_version", kSchemaVersion},
          {"goal", std::string(to_string(result.goal))},
          {"metric", {{"id", metric.id}, {"label", metric.label}, {"unit", metric.unit}, {"lower_is_better", metric.lower_is_better}}},
          {"model", {{"id", result.model.spec.id}, {"name", result.model.spec.name}, {"source", result.model.origin}}},
          {"workload",
           {{"batch", w.batch ? batch_json(*w.batch) : nlohmann::json(nullptr)},
            {"batch_max", w.batch == "max"},
            {"prompt_tokens", w.prompt_or_default()},
            {"gen_tokens", w.gen_or_default()},
            {"context_tokens", w.context_or_prompt_plus_gen()},
            {"kv_dtype", w.kv_dtype.empty() ? nlohmann::json(nullptr) : nlohmann::json(w.kv_dtype)}}},
          {"space", space},
          {"budget_usd", optional_number(r.budget_usd)},
          {"requirements", requirements},
          {"stats",
           {{"combinations", result.stats.combinations},
            {"over_budget", result.stats.over_budget},
            {"searched", result.stats.searched},
            {"fit", result.stats.fit},
            {"meet_requirements", result.stats.meet_requirements}}},
          {"skipped", result.skipped},
          {"candidates", result.candidates.size()},
          {"results", results}};
}

std::string render_search(const SearchResult& result, std::size_t top, OutputFormat format, const Style& style) {
  if (format == OutputFormat::kJson) return search_json(result, top).dump(2) + "\n";
  const bool md = format == OutputFormat::kMarkdown;
  const SearchRequest& r = result.request;
  std::string out;
  const std::string title = fmt::format("{}: the configurations for {}", result.model.spec.name, to_string(result.goal));
  out += md ? "# " + title + "\n\n" : style.bold(title) + "\n";
  out += fmt::format("goal: {}\n", metric_definition(result.goal));
  out += "workload: " + workload_text(r) + "\n";
  std::string summary = search_summary(result.stats);
  if (r.budget_usd)
    summary += fmt::format("; {} more combinations of device, GPUs, format and engine cost over the budget of {} USD",
                           result.stats.over_budget, *r.budget_usd);
  out += summary + "\n";
  for (const auto& q : r.requirements) out += "requires: " + q.text + "\n";
  const auto rows = shown_rows(result, top);
  if (rows.empty()) {
    out += "\nno configuration fits" + std::string(r.requirements.empty() ? "" : " and meets the requirements") + "\n";
  } else {
    using A = Table::Align;
    auto table = [&](bool priced) {
      Table t({"#", "RANK", "HARDWARE", "GPUS", "QUANT", "ENGINE", "BATCH", metric_header(result.goal), "COST", "TOK/J", "HEADROOM"},
              {A::kRight, A::kRight, A::kLeft, A::kLeft, A::kLeft, A::kLeft, A::kRight, A::kRight, A::kRight, A::kRight, A::kRight});
      std::size_t total = 0;
      for (const auto& c : result.candidates) total += c.efficiency.price_usd.has_value() == priced ? 1 : 0;
      for (std::size_t k = 0; k < rows.size(); ++k) {
        const SearchCandidate& c = result.candidates[rows[k]];
        if (c.efficiency.price_usd.has_value() != priced) continue;
        const Efficiency& e = c.efficiency;
        t.add_row({std::to_string(k + 1), c.rank ? std::to_string(c.rank) : "-", c.hardware->id, gpus_text(c), c.quant, c.engine,
                   std::to_string(c.batch), metric_text(result.goal, c.metric),
                   e.price_usd ? fmt::format("${:.0f}", *e.price_usd) : "price unknown",
                   e.tokens_per_joule ? format_sig3(*e.tokens_per_joule) : "-", format_gb(c.headroom_bytes())});
      }
      if (t.rows() == 0) return;
      const std::string heading = priced ? "With a list price" : "Price unknown";
      out += md ? "\n## " + heading + "\n\n" : "\n" + style.bold(heading) + "\n";
      out += md ? t.to_markdown() : t.to_text();
      if (t.rows() < total) out += fmt::format("{} of {} shown (--top N for more)\n", t.rows(), total);
    };
    table(true);
    table(false);
    out += md ? "\n## Reproduce a row\n\n" : "\nreproduce a row:\n";
    for (std::size_t k = 0; k < rows.size(); ++k) {
      const std::string cmd = estimate_command(candidate_request(r, result.candidates[rows[k]]));
      out += md ? fmt::format("{}. `{}`\n", k + 1, cmd) : fmt::format("{:>4}  {}\n", k + 1, cmd);
    }
  }
  if (!result.skipped.empty()) {
    out += md ? "\n## Not searched\n\n" : "\nnot searched:\n";
    for (const auto& s : result.skipped) out += (md ? "- " : "  ") + s + "\n";
  }
  const std::string legend[] = {
      fmt::format("RANK: the better of the row's Pareto fronts over ({0}, price x GPUs) and ({0}, energy per token); 1 = no other "
                  "configuration is better in both.",
                  metric_for(result.goal).label),
      "Ranked separately: configurations with a list price, then those without; '-' where the profile has neither price nor power.",
      "COST: list price x GPUs. TOK/J: serving tokens/s / (board power x GPUs). HEADROOM: per device. GB = 10^9 bytes."};
  out += "\n";
  for (const auto& line : legend) out += (md ? "- " : "") + line + "\n";
  return out;
}

}  // namespace optadvisor
