// SPDX-License-Identifier: MIT
#include "optadvisor/advisor/under_load.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "optadvisor/analysis/serving_setup.hpp"
#include "optadvisor/base/error.hpp"

namespace optadvisor {

bool is_load_comparison(const std::string& kind) { return kind == "disaggregate"; }

std::optional<LoadComparison> compare_under_load(const std::string& kind, const Catalog& catalog, const ScenarioRequest& request,
                                                 const PreparedScenario& prepared, const Analysis& analysis, std::string& why) {
  const Scenario& s = prepared.scenario;
  if (!is_load_comparison(kind)) {
    why = fmt::format("no load comparison '{}'", kind);
    return std::nullopt;
  }
  if (!s.engine.engine->serving.enabled()) {
    why = fmt::format("{} has no serving model", s.engine.engine->id);
    return std::nullopt;
  }
  // Disaggregation: the same two workers of the scenario's layout, serving together or as one
  // prefill and one decode worker, under a closed loop of the two workers' batches.
  const Workload& w = s.workload;
  ServingLayout layout;
  layout.tp = w.tp;
  layout.pp = w.pp;
  ServeRequest agg;
  agg.scenario = request;
  agg.scenario.batch.reset();
  agg.scenario.replicas = 1;
  agg.aggregated = {2, layout, 0};
  agg.load.concurrency = 2 * std::max<uint64_t>(analysis.batch, 1);
  agg.load.prompt_tokens = w.prompt_tokens;
  agg.load.gen_tokens = std::max<uint64_t>(w.gen_tokens, 1);
  agg.load.prefix_hit = w.prefix_cached_fraction;
  ServeRequest dis = agg;
  dis.disaggregated = true;
  dis.prefill = {1, layout, 0};
  dis.decode = {1, layout, 0};
  LoadComparison out;
  out.kind = kind;
  try {
    out.base = simulate_serving(prepare_serving(catalog, agg).setup, agg.load);
    out.alt = simulate_serving(prepare_serving(catalog, dis).setup, dis.load);
  } catch (const Error& e) {
    why = fmt::format("the serving simulation does not run this layout: {}", e.what());
    return std::nullopt;
  }
  const std::string per_worker = layout.tp > 1 || layout.pp > 1 ? fmt::format(" x tp {} pp {}", layout.tp, layout.pp) : std::string();
  out.setting = fmt::format("{} GPUs, a closed loop of {} clients, prompt {} + gen {} tokens", 2 * layout.gpus(), agg.load.concurrency,
                            agg.load.prompt_tokens, agg.load.gen_tokens);
  out.base_label = "aggregated: 2 workers" + per_worker;
  out.alt_label = "disaggregated: 1 prefill + 1 decode worker" + per_worker;
  return out;
}

}  // namespace optadvisor
