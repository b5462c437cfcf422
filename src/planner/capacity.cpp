// SPDX-License-Identifier: MIT
#include "optadvisor/planner/capacity.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "optadvisor/base/error.hpp"

namespace optadvisor {
namespace {

struct Option {
  std::string engine, quant;
  ServePoolRequest layout;
};

/// Layouts to try on a device: tensor parallel 1..8 and, for MoE models,
/// expert parallel over the same GPUs with tensor or data-parallel attention.
std::vector<ServePoolRequest> layouts(const ModelSpec& model, uint32_t max_gpus) {
  std::vector<ServePoolRequest> out;
  for (uint32_t g : {1u, 2u, 4u, 8u}) {
    if (g > max_gpus) break;
    ServePoolRequest tp;
    tp.layout.tp = g;
    out.push_back(tp);
    if (model.num_experts == 0 || g == 1 || model.num_experts % g != 0) continue;
    ServePoolRequest ep = tp;
    ep.layout.ep = g;
    out.push_back(ep);
    ServePoolRequest dp;
    dp.layout.dp_attention = g;
    dp.layout.ep = g;
    out.push_back(dp);
  }
  return out;
}

bool meets(const ServingResult& r, const CapacityRequest& q, double rate) {
  return r.fits && r.slo_attained >= q.slo_attainment && r.requests_per_s >= 0.95 * rate;
}

/// Every engine, weight format and layout to try: the named ones, or the serving engines and the
/// device's native low-precision formats beside the default.
std::vector<Option> options_to_try(const Catalog& catalog, const CapacityRequest& q, const PreparedScenario& base) {
  std::vector<std::string> engines;
  if (!q.scenario.engine.empty())
    engines.push_back(q.scenario.engine);
  else
    for (const auto& e : catalog.engines())
      if (e.serving.enabled()) engines.push_back(e.id);
  std::vector<std::string> quants = {q.scenario.quant};
  if (q.scenario.quant.empty()) {
    const Capabilities& caps = base.scenario.hardware->capabilities;
    if (caps.fp8) quants.push_back("fp8");
    if (caps.nvfp4) quants.push_back("nvfp4");
  }
  std::vector<Option> options;
  for (const auto& e : engines)
    for (const auto& qt : quants)
      for (const auto& l : layouts(base.scenario.model, q.max_gpus)) options.push_back({e, qt, l});
  return options;
}

ServeRequest serve_request(const CapacityRequest& q, const Option& o) {
  ServeRequest sr;
  sr.scenario = q.scenario;
  sr.scenario.engine = o.engine;
  sr.scenario.quant = o.quant;
  sr.aggregated = o.layout;
  sr.load.prompt_tokens = q.prompt_tokens;
  sr.load.gen_tokens = q.gen_tokens;
  sr.load.prefix_hit = q.prefix_hit;
  sr.load.concurrency = 1;
  sr.slo_ttft_s = q.slo_ttft_s;
  sr.slo_tpot_s = q.slo_tpot_s;
  return sr;
}

/// The highest open-loop rate one replica serves within the SLOs (0 when none) and its result there.
struct ReplicaRate {
  double rate_per_s = 0;
  ServingResult at_load;
};

ReplicaRate replica_rate(const ServingSetup& setup, const ServingLoad& base_load, const CapacityRequest& q, CapacityPlan& plan) {
  // The replica's ceiling: its throughput with many clients; then bisect the open-loop rate that meets the SLOs.
  ServingLoad saturate = base_load;
  saturate.concurrency = 256;
  const ServingResult top = simulate_serving(setup, saturate);
  ++plan.simulations;
  if (!top.fits || !(top.requests_per_s > 0)) return {};
  double lo = 0, hi = top.requests_per_s;
  ServingResult best;
  for (int step = 0; step < 8; ++step) {
    const double mid = step == 0 ? hi : (lo + hi) / 2;
    ServingLoad load = base_load;
    load.concurrency = 0;
    load.rate_per_s = mid;
    const ServingResult r = simulate_serving(setup, load);
    ++plan.simulations;
    if (meets(r, q, mid)) {
      lo = mid, best = r;
      if (step == 0) break;
    } else {
      hi = mid;
    }
  }
  return {lo, best};
}

/// The replicas of option `o` that carry the whole rate; nothing when they need more GPUs than allowed.
std::optional<CapacityCandidate> candidate_of(const CapacityRequest& q, double gpu_hour_usd, const Option& o,
                                              const PreparedServing& prepared, const ReplicaRate& replica) {
  CapacityCandidate c;
  c.engine = o.engine;
  c.quant = prepared.base.scenario.weights.quant_id;
  c.layout = o.layout;
  c.replica_rate_per_s = replica.rate_per_s;
  c.replicas = static_cast<uint32_t>(std::ceil(q.rate_per_s / replica.rate_per_s - 1e-9));
  c.gpus = c.replicas * o.layout.layout.gpus();
  if (c.gpus > q.max_gpus) return std::nullopt;
  c.at_load = replica.at_load;
  if (gpu_hour_usd > 0) {
    c.cost_per_hour_usd = gpu_hour_usd * c.gpus;
    const double tokens_per_hour = q.rate_per_s * static_cast<double>(q.gen_tokens) * 3600.0;
    c.cost_per_million_output_tokens_usd = c.cost_per_hour_usd / tokens_per_hour * 1e6;
  }
  return c;
}

}  // namespace

CapacityPlan plan_capacity(const Catalog& catalog, const CapacityRequest& q,
                           const std::function<void(std::size_t, std::size_t)>& progress) {
  if (!(q.slo_ttft_s > 0) || !(q.slo_tpot_s > 0))
    throw bad_input("capacity planning needs both SLOs", "pass --slo-ttft S and --slo-tpot S (seconds)");
  if (!(q.rate_per_s > 0)) throw bad_input("capacity planning needs --rate R (requests per second)");
  CapacityPlan plan;
  // Resolve the device and model once (and refuse a bad name before enumerating).
  ScenarioRequest probe = q.scenario;
  const PreparedScenario base = prepare_scenario(catalog, probe);
  if (!q.scenario.engine.empty() && !base.scenario.engine.engine->serving.enabled())
    throw bad_input(fmt::format("engine '{}' has no serving model", base.scenario.engine.engine->id),
                    "optadvisor plan sizes vllm, sglang and tensorrt-llm deployments");
  const std::vector<Option> options = options_to_try(catalog, q, base);
  // The price: the user's, else the device's on-demand list price where its profile has one.
  const HardwareProfile& hw = *base.scenario.hardware;
  if (q.gpu_hour_usd > 0) {
    plan.gpu_hour_usd = q.gpu_hour_usd;
    plan.gpu_hour_from = "--gpu-hour-usd";
  } else if (hw.gpu_hour_usd) {
    plan.gpu_hour_usd = *hw.gpu_hour_usd;
    plan.gpu_hour_from = hw.gpu_hour_source;
    plan.notes.push_back(fmt::format("costs at ${:.2f} per GPU-hour, an on-demand list price ({}); clouds differ by about 2.5x: "
                                     "--gpu-hour-usd sets yours",
                                     *hw.gpu_hour_usd, hw.gpu_hour_source));
  }

  for (std::size_t i = 0; i < options.size(); ++i) {
    const Option& o = options[i];
    if (progress) progress(i, options.size());
    const ServeRequest sr = serve_request(q, o);
    PreparedServing prepared;
    try {
      prepared = prepare_serving(catalog, sr);
    } catch (const Error&) {
      continue;  // a layout the model, device or engine cannot run
    }
    ++plan.layouts_evaluated;
    const ReplicaRate replica = replica_rate(prepared.setup, sr.load, q, plan);
    if (!(replica.rate_per_s > 0)) continue;
    if (auto c = candidate_of(q, plan.gpu_hour_usd, o, prepared, replica)) plan.candidates.push_back(*c);
  }
  if (progress) progress(options.size(), options.size());
  // Fewest GPUs first, then the most headroom per GPU (replica capacity x replicas over GPUs), then the option order.
  std::stable_sort(plan.candidates.begin(), plan.candidates.end(), [](const CapacityCandidate& a, const CapacityCandidate& b) {
    if (a.gpus != b.gpus) return a.gpus < b.gpus;
    return a.replica_rate_per_s * a.replicas > b.replica_rate_per_s * b.replicas;
  });
  plan.notes.push_back(
      fmt::format("a layout meets the SLOs when {:.0f}% of requests have TTFT <= {:.3g} s and TPOT <= {:.3g} s at its share "
                  "of the rate (open-loop Poisson arrivals), and it keeps up with the rate",
                  100 * q.slo_attainment, q.slo_ttft_s, q.slo_tpot_s));
  plan.notes.push_back("aggregated layouts only; disaggregated prefill/decode pools are evaluated by `serve --disaggregated`");
  return plan;
}

}  // namespace optadvisor
