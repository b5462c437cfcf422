// SPDX-License-Identifier: MIT
#include "optadvisor/render/report_capacity.hpp"

#include <fmt/format.h>

#include "base/table.hpp"
#include "optadvisor/analysis/serving_json.hpp"
#include "optadvisor/base/version.hpp"
#include "optadvisor/render/report_serve.hpp"

namespace optadvisor {
namespace {

constexpr std::size_t kShown = kPlanRankedCandidates;  // the rows ranked as an exhaustive search ranks them

nlohmann::json pool_json(const ServePoolRequest& p, double rate_per_worker) {
  return {{"workers", p.workers},
          {"layout", {{"tp", p.layout.tp}, {"ep", p.layout.ep}, {"dp_attention", p.layout.dp_attention}, {"gpus_per_worker", p.layout.gpus()}}},
          {"rate_per_worker_per_s", rate_per_worker}};
}

nlohmann::json disaggregated_json(const DisaggregatedSizing& d) {
  return {{"prefill", pool_json(d.prefill, d.prefill_rate_per_s)}, {"decode", pool_json(d.decode, d.decode_rate_per_s)}};
}

/// "tp 2", or "prefill 2 x tp 1 + decode 1 x tp 4" for a disaggregated deployment.
std::string candidate_layout_text(const CapacityCandidate& c) {
  if (!c.disaggregated) return layout_text(c.layout.layout);
  return fmt::format("prefill {} x {} + decode {} x {}", c.disaggregated->prefill.workers, layout_text(c.disaggregated->prefill.layout),
                     c.disaggregated->decode.workers, layout_text(c.disaggregated->decode.layout));
}

}  // namespace

nlohmann::json capacity_json(const CapacityRequest& q, const CapacityPlan& plan) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& c : plan.candidates) {
    nlohmann::json j = {{"engine", c.engine},
                        {"quant", c.quant},
                        {"layout",
                         {{"tp", c.layout.layout.tp},
                          {"ep", c.layout.layout.ep},
                          {"dp_attention", c.layout.layout.dp_attention},
                          {"gpus_per_replica", c.layout.layout.gpus()}}},
                        {"mode", c.disaggregated ? "disaggregated" : "aggregated"},
                        {"disaggregated", c.disaggregated ? disaggregated_json(*c.disaggregated) : nlohmann::json(nullptr)},
                        {"replica_rate_per_s", c.replica_rate_per_s},
                        {"replicas", c.replicas},
                        {"gpus", c.gpus},
                        {"ttft_s", {{"mean", c.at_load.ttft_s.mean}, {"p90", c.at_load.ttft_s.p90}, {"p99", c.at_load.ttft_s.p99}}},
                        {"tpot_s", {{"mean", c.at_load.tpot_s.mean}, {"p90", c.at_load.tpot_s.p90}, {"p99", c.at_load.tpot_s.p99}}},
                        {"slo_attained", c.at_load.slo_attained},
                        {"bound", std::string(to_string(c.at_load.bound))}};
    if (plan.gpu_hour_usd > 0) {
      j["cost_per_hour_usd"] = c.cost_per_hour_usd;
      j["cost_per_million_output_tokens_usd"] = c.cost_per_million_output_tokens_usd;
    }
    list.push_back(j);
  }
  nlohmann::json request = {{"hardware", q.scenario.hardware},
            {"model", q.scenario.model.preset},
            {"rate_per_s", q.rate_per_s},
            {"prompt_tokens", q.prompt_tokens},
            {"gen_tokens", q.gen_tokens},
            {"slo_ttft_s", q.slo_ttft_s},
            {"slo_tpot_s", q.slo_tpot_s},
            {"slo_attainment", q.slo_attainment},
            {"max_gpus", q.max_gpus},
            {"gpu_hour_usd", plan.gpu_hour_usd > 0 ? nlohmann::json(plan.gpu_hour_usd) : nlohmann::json(nullptr)},
            {"gpu_hour_from", plan.gpu_hour_usd > 0 ? nlohmann::json(plan.gpu_hour_from) : nlohmann::json(nullptr)}};
  // The spreads only where the lengths vary, as serve writes them.
  if (!q.prompt_spread.fixed()) request["prompt_spread"] = length_spread_json(q.prompt_tokens, q.prompt_spread);
  if (!q.gen_spread.fixed()) request["gen_spread"] = length_spread_json(q.gen_tokens, q.gen_spread);
  return {{"schema_version", kSchemaVersion},
          {"request", request},
          {"best", plan.candidates.empty() ? nlohmann::json(nullptr) : list.front()},
          {"candidates", list},
          {"layouts_screened", plan.layouts_screened},
          {"layouts_evaluated", plan.layouts_evaluated},
          {"disaggregated_pairs", plan.disaggregated_pairs},
          {"deployments_searched", plan.deployments_searched},
          {"simulations", plan.simulations},
          {"notes", plan.notes}};
}

std::string render_capacity(const CapacityRequest& q, const CapacityPlan& plan, OutputFormat format, const Style& style) {
  if (format == OutputFormat::kJson) return capacity_json(q, plan).dump(2) + "\n";
  const bool markdown = format == OutputFormat::kMarkdown;
  std::string out =
      style.bold(fmt::format("plan: {} requests/s of {} + {} tokens on {}, TTFT <= {:.0f} ms and TPOT <= {:.0f} ms for {:.0f}% of requests",
                             q.rate_per_s, length_text(q.prompt_tokens, q.prompt_spread), length_text(q.gen_tokens, q.gen_spread),
                             q.scenario.hardware, q.slo_ttft_s * 1e3, q.slo_tpot_s * 1e3,
                             100 * q.slo_attainment)) +
      "\n\n";
  if (plan.candidates.empty()) {
    out += fmt::format("no layout of at most {} GPUs meets the SLOs ({} layouts evaluated)\n", q.max_gpus, plan.layouts_evaluated);
  } else {
    std::vector<std::string> head = {"#",           "GPUs",        "replicas", "layout", "engine", "format", "req/s per replica",
                                     "TTFT p90 ms", "TPOT p90 ms", "bound"};
    if (plan.gpu_hour_usd > 0) head.push_back("USD per M tokens");
    std::vector<Table::Align> align(head.size(), Table::Align::kRight);
    align[3] = align[4] = align[5] = align[9] = Table::Align::kLeft;
    Table t(head, align);
    for (std::size_t i = 0; i < plan.candidates.size() && i < kShown; ++i) {
      const auto& c = plan.candidates[i];
      std::vector<std::string> row = {std::to_string(i + 1),
                                      std::to_string(c.gpus),
                                      c.disaggregated ? std::string("-") : std::to_string(c.replicas),
                                      candidate_layout_text(c),
                                      c.engine,
                                      c.quant,
                                      fmt::format("{:.3g}", c.replica_rate_per_s),
                                      fmt::format("{:.1f}", c.at_load.ttft_s.p90 * 1e3),
                                      fmt::format("{:.1f}", c.at_load.tpot_s.p90 * 1e3),
                                      std::string(to_string(c.at_load.bound))};
      if (plan.gpu_hour_usd > 0) row.push_back(fmt::format("{:.3f}", c.cost_per_million_output_tokens_usd));
      t.add_row(row);
    }
    out += markdown ? t.to_markdown() : t.to_text();
    if (plan.candidates.size() > kShown) out += fmt::format("... {} more in --json\n", plan.candidates.size() - kShown);
  }
  out += fmt::format("\n{} deployments searched: {} layouts screened, {} simulated, {} prefill x decode pairs sized, {} simulations\n",
                     plan.deployments_searched, plan.layouts_screened, plan.layouts_evaluated, plan.disaggregated_pairs, plan.simulations);
  for (const auto& n : plan.notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace optadvisor
