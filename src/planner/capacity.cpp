// SPDX-License-Identifier: MIT
#include "optadvisor/planner/capacity.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "optadvisor/base/error.hpp"

namespace optadvisor {
namespace {

/// Prefill workers beside one decode worker while its ceiling is measured (enough that prefill never binds).
constexpr uint32_t kMaxDisaggregatedFeeders = 64;
/// Sized prefill + decode pairs simulated whole per engine and format, fewest GPUs first.
constexpr std::size_t kVerifiedPairs = 3;

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

/// Bisects the open-loop rate below `ceiling` (8 simulations at most) for the highest at which
/// `at(rate)` meets the SLOs; tries the ceiling itself first.
template <class RunAt>
ReplicaRate bisect_rate(double ceiling, const CapacityRequest& q, CapacityPlan& plan, RunAt at) {
  double lo = 0, hi = ceiling;
  ServingResult best;
  for (int step = 0; step < 8; ++step) {
    const double mid = step == 0 ? hi : (lo + hi) / 2;
    const ServingResult r = at(mid);
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

ServingLoad open_loop(const ServingLoad& base, double rate) {
  ServingLoad load = base;
  load.concurrency = 0;
  load.rate_per_s = rate;
  return load;
}

/// The replica's ceiling is its throughput with many clients; the rate that meets the SLOs is below it.
ReplicaRate replica_rate(const ServingSetup& setup, const ServingLoad& base_load, const CapacityRequest& q, CapacityPlan& plan) {
  ServingLoad saturate = base_load;
  saturate.concurrency = 256;
  const ServingResult top = simulate_serving(setup, saturate);
  ++plan.simulations;
  if (!top.fits || !(top.requests_per_s > 0)) return {};
  return bisect_rate(top.requests_per_s, q, plan, [&](double rate) { return simulate_serving(setup, open_loop(base_load, rate)); });
}

/// The cost of `c.gpus` GPUs for an hour, and per million output tokens at the requested rate.
void price(CapacityCandidate& c, const CapacityRequest& q, double gpu_hour_usd) {
  if (!(gpu_hour_usd > 0)) return;
  c.cost_per_hour_usd = gpu_hour_usd * c.gpus;
  const double tokens_per_hour = q.rate_per_s * static_cast<double>(q.gen_tokens) * 3600.0;
  c.cost_per_million_output_tokens_usd = c.cost_per_hour_usd / tokens_per_hour * 1e6;
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
  price(c, q, gpu_hour_usd);
  return c;
}

// --- disaggregated deployments --------------------------------------------

/// One layout's capacity in each pool of a disaggregated deployment (0 where it cannot serve).
struct PoolCapacity {
  Option option;
  double prefill_rate_per_s = 0;
  double decode_rate_per_s = 0;
  double prefill_rate_per_gpu() const { return prefill_rate_per_s / option.layout.layout.gpus(); }
};

/// A prefill worker only reads prompts: it serves requests of one generated token, whose TTFT
/// (queueing and prefill) must meet the SLO. The KV transfer to the decode pool (about a
/// millisecond over the GPU link) is left to the check of the whole deployment.
double prefill_rate(const Catalog& catalog, const CapacityRequest& q, const Option& o, CapacityPlan& plan) {
  CapacityRequest prompts = q;
  prompts.gen_tokens = 1;
  const ServeRequest sr = serve_request(prompts, o);
  const PreparedServing prepared = prepare_serving(catalog, sr);
  ++plan.layouts_evaluated;
  return replica_rate(prepared.setup, sr.load, q, plan).rate_per_s;
}

/// Prefill workers of `feeder` for `rate` with half again as much capacity, so they never bind.
uint32_t feeding_workers(const PoolCapacity& feeder, double rate) {
  const double n = std::ceil(1.5 * rate / feeder.prefill_rate_per_s);
  return static_cast<uint32_t>(std::clamp(n, 1.0, static_cast<double>(kMaxServeWorkers)));
}

/// A decode worker of `o`'s layout fed by prefill workers of `feeder` that never bind: the most it
/// serves with the deployment's TTFT (prefill, transfer, waiting for a decode slot) and TPOT within the SLOs.
double decode_rate(const Catalog& catalog, const CapacityRequest& q, const Option& o, const PoolCapacity& feeder,
                   CapacityPlan& plan) {
  ServeRequest sr = serve_request(q, o);
  sr.disaggregated = true;
  sr.prefill = {1, feeder.option.layout.layout, 0};
  sr.decode = {1, o.layout.layout, 0};
  ServingSetup setup = prepare_serving(catalog, sr).setup;
  ++plan.layouts_evaluated;
  ServingLoad saturate = sr.load;
  saturate.concurrency = 256;
  setup.pools.front().workers = kMaxDisaggregatedFeeders;
  const ServingResult top = simulate_serving(setup, saturate);
  ++plan.simulations;
  if (!top.fits || !(top.requests_per_s > 0)) return 0;
  return bisect_rate(top.requests_per_s, q, plan, [&](double rate) {
           setup.pools.front().workers = feeding_workers(feeder, rate);
           return simulate_serving(setup, open_loop(sr.load, rate));
         }).rate_per_s;
}

/// N prefill workers of one layout and M decode workers of another, sized for the whole rate.
struct Pairing {
  const PoolCapacity* prefill = nullptr;
  const PoolCapacity* decode = nullptr;
  uint32_t prefill_workers = 0, decode_workers = 0, gpus = 0;
};

/// Workers of `per_worker` requests/s each for `rate`, capped one past the most a pool may have.
uint32_t workers_for(double rate, double per_worker) {
  const double n = std::ceil(rate / per_worker - 1e-9);
  return static_cast<uint32_t>(std::min(n, static_cast<double>(kMaxServeWorkers) + 1));
}

/// Every pair of layouts with both rates, sized; within max_gpus, fewest GPUs first.
std::vector<Pairing> pairings(const std::vector<PoolCapacity>& pools, const CapacityRequest& q) {
  std::vector<Pairing> out;
  for (const auto& p : pools) {
    if (!(p.prefill_rate_per_s > 0)) continue;
    for (const auto& d : pools) {
      if (!(d.decode_rate_per_s > 0)) continue;
      Pairing x{&p, &d, workers_for(q.rate_per_s, p.prefill_rate_per_s), workers_for(q.rate_per_s, d.decode_rate_per_s), 0};
      const uint64_t gpus = static_cast<uint64_t>(x.prefill_workers) * p.option.layout.layout.gpus() +
                            static_cast<uint64_t>(x.decode_workers) * d.option.layout.layout.gpus();
      if (gpus > q.max_gpus || x.prefill_workers > kMaxServeWorkers || x.decode_workers > kMaxServeWorkers) continue;
      x.gpus = static_cast<uint32_t>(gpus);
      out.push_back(x);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Pairing& a, const Pairing& b) { return a.gpus < b.gpus; });
  return out;
}

/// Simulates the sized deployment whole at the requested rate; where it misses, the pool whose
/// SLO it misses gets one more worker (twice at most). Nothing when it still misses or outgrows max_gpus.
std::optional<CapacityCandidate> verified(const Catalog& catalog, const CapacityRequest& q, double gpu_hour_usd, Pairing x,
                                          CapacityPlan& plan) {
  ServeRequest sr = serve_request(q, x.decode->option);
  sr.disaggregated = true;
  sr.prefill = {1, x.prefill->option.layout.layout, 0};
  sr.decode = {1, x.decode->option.layout.layout, 0};
  const PreparedServing prepared = prepare_serving(catalog, sr);
  ServingSetup setup = prepared.setup;
  const uint32_t gp = x.prefill->option.layout.layout.gpus(), gd = x.decode->option.layout.layout.gpus();
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (x.prefill_workers * gp + x.decode_workers * gd > q.max_gpus) return std::nullopt;
    setup.pools[0].workers = x.prefill_workers;
    setup.pools[1].workers = x.decode_workers;
    const ServingResult r = simulate_serving(setup, open_loop(sr.load, q.rate_per_s));
    ++plan.simulations;
    if (meets(r, q, q.rate_per_s)) {
      CapacityCandidate c;
      c.engine = x.decode->option.engine;
      c.quant = prepared.base.scenario.weights.quant_id;
      c.layout = {x.decode_workers, x.decode->option.layout.layout, 0};
      c.disaggregated = DisaggregatedSizing{{x.prefill_workers, x.prefill->option.layout.layout, 0},
                                            c.layout,
                                            x.prefill->prefill_rate_per_s,
                                            x.decode->decode_rate_per_s};
      c.replicas = 1;
      c.gpus = x.prefill_workers * gp + x.decode_workers * gd;
      c.replica_rate_per_s = std::min(x.prefill_workers * x.prefill->prefill_rate_per_s, x.decode_workers * x.decode->decode_rate_per_s);
      c.at_load = r;
      price(c, q, gpu_hour_usd);
      return c;
    }
    (r.tpot_s.p90 > q.slo_tpot_s ? x.decode_workers : x.prefill_workers) += 1;
  }
  return std::nullopt;
}

/// The disaggregated candidates of one engine and format: each layout's prefill and decode
/// capacity, then the best sized pairs simulated whole.
void plan_disaggregated(const Catalog& catalog, const CapacityRequest& q, const std::vector<Option>& group, CapacityPlan& plan) {
  std::vector<PoolCapacity> pools;
  for (const Option& o : group) {
    try {
      pools.push_back({o, prefill_rate(catalog, q, o, plan), 0});
    } catch (const Error&) {  // a layout the model, device or engine cannot run
    }
  }
  const auto feeder = std::max_element(pools.begin(), pools.end(), [](const PoolCapacity& a, const PoolCapacity& b) {
    return a.prefill_rate_per_gpu() < b.prefill_rate_per_gpu();
  });
  if (feeder == pools.end() || !(feeder->prefill_rate_per_s > 0)) return;
  for (PoolCapacity& d : pools) {
    try {
      d.decode_rate_per_s = decode_rate(catalog, q, d.option, *feeder, plan);
    } catch (const Error&) {  // a decode layout the simulation refuses
    }
  }
  const std::vector<Pairing> pairs = pairings(pools, q);
  plan.disaggregated_pairs += pairs.size();
  std::size_t kept = 0;
  for (const Pairing& x : pairs) {
    if (kept == kVerifiedPairs) break;
    try {
      if (auto c = verified(catalog, q, plan.gpu_hour_usd, x, plan)) {
        plan.candidates.push_back(*c);
        ++kept;
      }
    } catch (const Error&) {  // a pairing the simulation refuses
    }
  }
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

  // Options come grouped by engine and format (options_to_try); each group is also sized disaggregated.
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
    if (replica.rate_per_s > 0)
      if (auto c = candidate_of(q, plan.gpu_hour_usd, o, prepared, replica)) plan.candidates.push_back(*c);
    const bool group_ends = i + 1 == options.size() || options[i + 1].engine != o.engine || options[i + 1].quant != o.quant;
    if (group_ends && q.disaggregated) {
      std::size_t first = i;
      while (first > 0 && options[first - 1].engine == o.engine && options[first - 1].quant == o.quant) --first;
      plan_disaggregated(catalog, q, std::vector<Option>(options.begin() + static_cast<std::ptrdiff_t>(first), options.begin() + static_cast<std::ptrdiff_t>(i) + 1), plan);
    }
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
  if (q.disaggregated)
    plan.notes.push_back(
        "disaggregated: each layout's rate as a prefill worker (TTFT SLO) and as a decode worker (both SLOs, prefill never binding) "
        "sizes both pools for every pair of layouts; the best pairs are simulated whole, prefill and decode on one node's GPU link");
  else
    plan.notes.push_back("aggregated layouts only (--aggregated-only)");
  return plan;
}

}  // namespace optadvisor
