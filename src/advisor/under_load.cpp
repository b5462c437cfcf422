// SPDX-License-Identifier: MIT
#include "optadvisor/advisor/under_load.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "optadvisor/analysis/serving_setup.hpp"
#include "optadvisor/base/error.hpp"

namespace optadvisor {
namespace {

/// The comparisons rules may name, each a function of the scenario's own layout and load.
constexpr std::array<std::string_view, 2> kComparisons = {"disaggregate", "chunked-prefill"};

/// One worker of the scenario's tp x pp layout under a closed loop of `clients`, at the
/// scenario's prompt, generation and prefix-cache hit.
ServeRequest one_pool(const ScenarioRequest& request, const Workload& w, uint32_t workers, uint64_t clients) {
  ServeRequest r;
  r.scenario = request;
  r.scenario.batch.reset();
  r.scenario.replicas = 1;
  ServingLayout layout;
  layout.tp = w.tp;
  layout.pp = w.pp;
  layout.ep = w.ep;
  layout.dp_attention = w.dp_attention;
  r.aggregated = {workers, layout, 0};
  r.load.concurrency = std::max<uint64_t>(clients, 1);
  r.load.prompt_tokens = w.prompt_tokens;
  r.load.gen_tokens = std::max<uint64_t>(w.gen_tokens, 1);
  r.load.prefix_hit = w.prefix_cached_fraction;
  return r;
}

std::string per_worker(const ServingLayout& l) {
  std::string out = l.tp > 1 || l.pp > 1 || l.dp_attention > 1 ? fmt::format(" x tp {} pp {}", l.tp, l.pp) : std::string();
  if (l.dp_attention > 1) out += fmt::format(" dp-attention {}", l.dp_attention);
  if (l.ep > 1) out += fmt::format(" ep {}", l.ep);
  return out;
}

std::string setting_of(uint32_t gpus, const ServeRequest& r) {
  return fmt::format("{} GPU{}, a closed loop of {} clients, prompt {} + gen {} tokens", gpus, gpus == 1 ? "" : "s", r.load.concurrency,
                     r.load.prompt_tokens, r.load.gen_tokens);
}

/// Disaggregation: the same two workers of the scenario's layout, serving together or as one
/// prefill and one decode worker, under a closed loop of the two workers' batches.
LoadComparison disaggregate(const Catalog& catalog, const ScenarioRequest& request, const Workload& w, uint64_t batch) {
  ServeRequest agg = one_pool(request, w, 2, 2 * batch);
  ServeRequest dis = agg;
  dis.disaggregated = true;
  dis.prefill = {1, agg.aggregated.layout, 0};
  dis.decode = {1, agg.aggregated.layout, 0};
  LoadComparison out;
  out.base = simulate_serving(prepare_serving(catalog, agg).setup, agg.load);
  out.alt = simulate_serving(prepare_serving(catalog, dis).setup, dis.load);
  out.setting = setting_of(2 * agg.aggregated.layout.gpus(), agg);
  out.base_label = "aggregated: 2 workers" + per_worker(agg.aggregated.layout);
  out.alt_label = "disaggregated: 1 prefill + 1 decode worker" + per_worker(agg.aggregated.layout);
  return out;
}

/// Chunked prefill: one worker of the scenario's layout, its steps formed as prefill-only
/// batches that pause decoding (SGLang's default) or as decode steps topped up with prompt
/// chunks under the token budget (vLLM's and TensorRT-LLM's), under a closed loop of its batch.
LoadComparison chunked_prefill(const Catalog& catalog, const ScenarioRequest& request, const Workload& w, uint64_t batch,
                               ServingScheduler engine_default) {
  const ServeRequest r = one_pool(request, w, 1, batch);
  const ServingSetup setup = prepare_serving(catalog, r).setup;
  auto with = [&](ServingScheduler scheduler) {
    ServingSetup s = setup;
    for (ServingPool& pool : s.pools) pool.step.scheduler = scheduler;
    return simulate_serving(s, r.load);
  };
  LoadComparison out;
  out.base = with(ServingScheduler::kPrefillFirst);
  out.alt = with(ServingScheduler::kMixed);
  out.setting = setting_of(r.aggregated.layout.gpus(), r);
  const auto mark = [&](ServingScheduler s) { return s == engine_default ? std::string(" (the engine's default)") : std::string(); };
  out.base_label = "prefill-only steps, decode paused" + mark(ServingScheduler::kPrefillFirst);
  out.alt_label = "prompt chunks mixed into decode steps" + mark(ServingScheduler::kMixed);
  return out;
}

}  // namespace

bool is_load_comparison(const std::string& kind) {
  return std::find(kComparisons.begin(), kComparisons.end(), kind) != kComparisons.end();
}

std::string load_comparison_names() {
  std::string out;
  for (std::string_view k : kComparisons) out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
}

std::optional<LoadComparison> compare_under_load(const std::string& kind, const Catalog& catalog, const ScenarioRequest& request,
                                                 const PreparedScenario& prepared, const Analysis& analysis, std::string& why) {
  const Scenario& s = prepared.scenario;
  if (!is_load_comparison(kind)) {
    why = fmt::format("no load comparison '{}'", kind);
    return std::nullopt;
  }
  const EngineProfile& engine = *s.engine.engine;
  if (!engine.serving.enabled()) {
    why = fmt::format("{} has no serving model", engine.id);
    return std::nullopt;
  }
  const Workload& w = s.workload;
  const uint64_t batch = std::max<uint64_t>(analysis.batch, 1);
  try {
    LoadComparison out = kind == "disaggregate" ? disaggregate(catalog, request, w, batch)
                                                : chunked_prefill(catalog, request, w, batch, engine.serving.scheduler);
    out.kind = kind;
    return out;
  } catch (const Error& e) {
    why = fmt::format("the serving simulation does not run this layout: {}", e.what());
    return std::nullopt;
  }
}

}  // namespace optadvisor
