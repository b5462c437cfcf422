// SPDX-License-Identifier: MIT
#include "optadvisor/planner/capacity.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "optadvisor/analysis/serving_ceiling.hpp"
#include "optadvisor/base/error.hpp"
#include "planner/side_by_side.hpp"

namespace optadvisor {
namespace {

/// Prefill workers beside one decode worker while its ceiling is measured (enough that prefill never binds).
constexpr uint32_t kMaxDisaggregatedFeeders = 64;
/// Sized prefill + decode pairs simulated whole per engine and format, fewest GPUs first.
constexpr std::size_t kVerifiedPairs = 3;

/// Prepares the serving setups of one model: resolved once, its per-tensor weights computed once
/// per engine and format (the plan prepares each option several times). Safe to call from the
/// threads that simulate side by side.
class Preparer {
 public:
  Preparer(const Catalog& catalog, ResolvedModel model) : catalog_(catalog), model_(std::move(model)) {}
  PreparedServing operator()(const ServeRequest& sr) {
    const std::string key = sr.scenario.engine + '/' + sr.scenario.quant;
    std::optional<ResolvedModel> known;
    {
      const std::lock_guard lock(mutex_);
      if (const auto it = formats_.find(key); it != formats_.end()) known = it->second;
    }
    PreparedServing p = prepare_serving(catalog_, sr, known ? *known : model_);
    if (!known) {
      const std::lock_guard lock(mutex_);
      formats_.emplace(key, p.base.model);
    }
    return p;
  }

 private:
  const Catalog& catalog_;
  const ResolvedModel model_;
  std::mutex mutex_;
  std::map<std::string, ResolvedModel> formats_;
};

struct Option {
  std::string engine, quant;
  ServePoolRequest layout;
};

/// Layouts to try on a device: tensor parallel 1..8 and, for MoE models,
/// expert parallel over the same GPUs with tensor or data-parallel attention; where the device
/// records its node and network, MoE models also spread data-parallel attention and experts
/// over 16 to 64 GPUs (wide expert parallelism, as DeepSeek is served): across nodes of 8, or
/// within one NVLink domain of 72.
std::vector<ServePoolRequest> layouts(const ModelSpec& model, const HardwareProfile& hw, uint32_t max_gpus) {
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
  if (model.num_experts == 0 || !hw.scale_out || hw.node_gpus == 0) return out;
  for (uint32_t g : {16u, 32u, 64u}) {
    if (g > max_gpus) continue;
    if (model.num_experts % g != 0) continue;
    ServePoolRequest wide;
    wide.layout.dp_attention = g;
    wide.layout.ep = g;
    out.push_back(wide);
  }
  return out;
}

/// Enough requests meet both SLOs, and completions keep pace with arrivals.
bool meets(const ServingResult& r, const CapacityRequest& q) {
  return r.fits && r.slo_attained >= q.slo_attainment && r.keeps_up;
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
      for (ServePoolRequest l : layouts(base.scenario.model, *base.scenario.hardware, q.max_gpus)) {
        l.max_batched_tokens = q.max_batched_tokens;
        options.push_back({e, qt, l});
      }
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
  sr.load.prompt_spread = q.prompt_spread;
  sr.load.gen_spread = q.gen_spread;
  sr.load.prefix_hit = q.prefix_hit;
  sr.load.concurrency = 1;
  sr.slo_ttft_s = q.slo_ttft_s;
  sr.slo_tpot_s = q.slo_tpot_s;
  return sr;
}

/// The highest open-loop rate one replica serves within the SLOs (0 when none), its result there
/// and the simulations it took.
struct ReplicaRate {
  double rate_per_s = 0;
  ServingResult at_load;
  std::size_t simulations = 0;
};

/// How far a result is from the SLOs, to choose the next rate to try: a log, negative within them.
/// The larger of its p90 TTFT and TPOT over their SLOs, and of its arrivals over its completions
/// against the share a server that keeps up completes (an overloaded server completes at its
/// capacity, so that term is about the log of the rate over the capacity).
double slo_margin(const ServingResult& r, const CapacityRequest& q) {
  constexpr double kTiny = 1e-12;
  const double latency = std::max({r.ttft_s.p90 / q.slo_ttft_s, r.tpot_s.p90 / q.slo_tpot_s, kTiny});
  const double behind = kServingKeepUpShare * r.arrivals_per_s / std::max(r.requests_per_s, kTiny);
  return std::log(std::max(latency, behind));
}

/// Simulations one rate search makes at most, and the bracket (a share of its first failing
/// rate) it stops at.
constexpr int kRateProbes = 8;
/// Rates a search tries at the ceiling and above it (each twice the last) while they meet the SLOs.
constexpr int kRateExpansions = 3;
constexpr double kRateResolution = 1.0 / 128;

/// The highest open-loop rate at which `at(rate)` meets the SLOs, in kRateProbes simulations at
/// most. The ceiling (a closed loop's throughput) first: where it meets them, the clients that
/// set it did not fill the layout (a wide data-parallel layout holds more sequences than they
/// were), so twice the rate, and twice again, up to kRateExpansions tries in all. Then the bracket
/// between the highest rate that met them (0 if none) and the first that did not, narrowed to
/// within kRateResolution of that one by regula falsi on slo_margin (the Illinois variant), each
/// try at least a tenth of the bracket from its ends; bisection while no rate below has met them.
/// The bracket's ends are decided by meets() alone: a misleading margin costs tries, never a wrong answer.
template <class RunAt>
ReplicaRate search_rate(double ceiling, const CapacityRequest& q, RunAt at) {
  constexpr double kLeast = 1e-3;  // the margin an end keeps on its side of zero
  ReplicaRate out;
  double lo = 0, hi = ceiling, lo_margin = 0, hi_margin = 0;
  for (;;) {
    const ServingResult r = at(hi);
    ++out.simulations;
    if (!meets(r, q)) {
      hi_margin = std::max(slo_margin(r, q), kLeast);
      break;
    }
    lo = hi, lo_margin = std::min(slo_margin(r, q), -kLeast), out.rate_per_s = hi, out.at_load = r;
    if (out.simulations >= kRateExpansions) return out;
    hi *= 2;
  }
  const double scale = hi;
  int last_moved = 0;  // -1 the low end moved last, +1 the high end
  while (out.simulations < kRateProbes && hi - lo > kRateResolution * scale) {
    double next = (lo + hi) / 2;
    if (lo > 0) next = std::clamp(lo + (hi - lo) * -lo_margin / (hi_margin - lo_margin), lo + 0.1 * (hi - lo), hi - 0.1 * (hi - lo));
    const ServingResult r = at(next);
    ++out.simulations;
    if (meets(r, q)) {
      lo = next, lo_margin = std::min(slo_margin(r, q), -kLeast), out.rate_per_s = next, out.at_load = r;
      if (last_moved == -1) hi_margin /= 2;
      last_moved = -1;
    } else {
      hi = next, hi_margin = std::max(slo_margin(r, q), kLeast);
      if (last_moved == 1) lo_margin /= 2;
      last_moved = 1;
    }
  }
  return out;
}

ServingLoad open_loop(const ServingLoad& base, double rate) {
  ServingLoad load = base;
  load.concurrency = 0;
  load.rate_per_s = rate;
  return load;
}

/// The replica's ceiling is its throughput with many clients; the rate that meets the SLOs is below it.
ReplicaRate replica_rate(const ServingSetup& setup, const ServingLoad& base_load, const CapacityRequest& q) {
  ServingLoad saturate = base_load;
  saturate.concurrency = 256;
  const ServingResult top = simulate_serving(setup, saturate);
  if (!top.fits || !(top.requests_per_s > 0)) return {0, {}, 1};
  ReplicaRate out = search_rate(top.requests_per_s, q, [&](double rate) { return simulate_serving(setup, open_loop(base_load, rate)); });
  out.simulations += 1;
  return out;
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

// --- screening: each layout's analytic ceiling --------------------------------

/// Allowance over the analytic ceiling before a layout is screened out: the ceiling's TPOT-SLO
/// batch is an approximation (serving_ceiling.hpp); a unit test checks simulations stay below it.
constexpr double kCeilingMargin = 1.25;

/// Workers of `per_worker` requests/s each for `rate`, capped one past the most a pool may have.
uint32_t workers_for(double rate, double per_worker) {
  const double n = std::ceil(rate / per_worker - 1e-9);
  return static_cast<uint32_t>(std::min(n, static_cast<double>(kMaxServeWorkers) + 1));
}

/// One option prepared once, with its ceilings as a replica, a prefill worker and a decode worker
/// (the margin included) and, once simulated, its rates as a prefill and a decode worker.
struct Screened {
  std::size_t order = 0;  ///< in the enumeration
  Option option;
  ServeRequest request;
  PreparedServing prepared;
  double replica_ceiling = 0, prefill_ceiling = 0, decode_ceiling = 0;
  uint32_t gpus_at_least = 0;  ///< replicas at the ceiling x GPUs per replica
  std::optional<double> prefill_rate, decode_rate;
  uint32_t gpus() const { return option.layout.layout.gpus(); }
};

double ceiling_as(const PreparedServing& p, ServingRole role, const ServingLoad& load, double slo_ttft_s, double slo_tpot_s) {
  ServingPool pool = p.setup.pools.front();
  pool.role = role;
  // A lone request's time outside the iterations: the API server's latency and its serial work.
  const double outside_s = p.setup.request_overhead_s + p.setup.frontend_request_s;
  return kCeilingMargin * serving_rate_ceiling(pool, ceiling_load(pool, load, slo_ttft_s, slo_tpot_s, outside_s));
}

/// Option `i` prepared and its rates bounded; nothing when the model, device or engine cannot run it.
std::optional<Screened> screen_one(Preparer& prepare, const CapacityRequest& q, const std::vector<Option>& options, std::size_t i) {
  Screened s;
  s.order = i;
  s.option = options[i];
  s.request = serve_request(q, options[i]);
  try {
    s.prepared = prepare(s.request);
  } catch (const Error&) {
    return std::nullopt;
  }
  ServingLoad prompts = s.request.load;
  prompts.gen_tokens = 1;
  prompts.gen_spread = {};
  s.replica_ceiling = ceiling_as(s.prepared, ServingRole::kMixed, s.request.load, q.slo_ttft_s, q.slo_tpot_s);
  s.prefill_ceiling = ceiling_as(s.prepared, ServingRole::kMixed, prompts, q.slo_ttft_s, 0);
  s.decode_ceiling = ceiling_as(s.prepared, ServingRole::kDecode, s.request.load, 0, q.slo_tpot_s);
  s.gpus_at_least = s.replica_ceiling > 0 ? workers_for(q.rate_per_s, s.replica_ceiling) * s.gpus() : UINT32_MAX;
  return s;
}

/// Prepares every option the model, device and engine can run and bounds its rates, side by side.
std::vector<Screened> screen(Preparer& prepare, const CapacityRequest& q, const std::vector<Option>& options) {
  const auto one = [&](std::size_t i) { return screen_one(prepare, q, options, i); };
  RunAhead<std::optional<Screened>> prepared(options.size(), one, options.size());
  std::vector<Screened> out;
  for (std::size_t i = 0; i < options.size(); ++i)
    if (std::optional<Screened>& s = prepared.at(i).get()) out.push_back(std::move(*s));
  return out;
}

// --- disaggregated deployments --------------------------------------------

/// A prefill worker only reads prompts: it serves requests of one generated token, whose TTFT
/// (queueing and prefill) must meet the SLO. The KV transfer to the decode pool (about a
/// millisecond over the GPU link) is left to the check of the whole deployment.
ServeRequest prefill_worker_request(const CapacityRequest& q, const Screened& s) {
  CapacityRequest prompts = q;
  prompts.gen_tokens = 1;
  prompts.gen_spread = {};
  return serve_request(prompts, s.option);
}

/// Prefill workers of `feeder` for `rate` with half again as much capacity, so they never bind.
uint32_t feeding_workers(double feeder_rate_per_s, double rate) {
  const double n = std::ceil(1.5 * rate / feeder_rate_per_s);
  return static_cast<uint32_t>(std::clamp(n, 1.0, static_cast<double>(kMaxServeWorkers)));
}

/// A decode worker of `s`'s layout fed by prefill workers of `feeder` that never bind: the most it
/// serves with the deployment's TTFT (prefill, transfer, waiting for a decode slot) and TPOT within the SLOs.
ServeRequest decode_worker_request(const CapacityRequest& q, const Screened& s, const Screened& feeder) {
  ServeRequest sr = serve_request(q, s.option);
  sr.disaggregated = true;
  sr.prefill = {1, feeder.option.layout.layout, 0, q.max_batched_tokens};
  sr.decode = {1, s.option.layout.layout, 0, q.max_batched_tokens};
  return sr;
}

/// That decode worker's rate: its throughput with 256 clients and kMaxDisaggregatedFeeders prefill
/// workers is the ceiling; each rate below it is tried with the feeders it needs.
ReplicaRate decode_worker_rate(ServingSetup setup, const ServingLoad& load, const CapacityRequest& q, double feeder_rate_per_s) {
  ServingLoad saturate = load;
  saturate.concurrency = 256;
  setup.pools.front().workers = kMaxDisaggregatedFeeders;
  const ServingResult top = simulate_serving(setup, saturate);
  if (!top.fits || !(top.requests_per_s > 0)) return {0, {}, 1};
  ReplicaRate out = search_rate(top.requests_per_s, q, [&](double rate) {
    setup.pools.front().workers = feeding_workers(feeder_rate_per_s, rate);
    return simulate_serving(setup, open_loop(load, rate));
  });
  out.simulations += 1;
  return out;
}

/// A rate the disaggregated search asks for: layout `s` as a prefill worker, or as a decode worker.
struct RateNeed {
  Screened* s = nullptr;
  bool decode = false;
  std::optional<double>& rate() const { return decode ? s->decode_rate : s->prefill_rate; }
  bool operator==(const RateNeed& o) const { return s == o.s && decode == o.decode; }
};

/// Simulates the rate `need` asks for (the feeder's prefill rate known where it is a decode worker's).
/// Throws what preparing the layout throws.
ReplicaRate simulate_rate(Preparer& prepare, const CapacityRequest& q, const RateNeed& need, const Screened* feeder) {
  const ServeRequest sr = need.decode ? decode_worker_request(q, *need.s, *feeder) : prefill_worker_request(q, *need.s);
  const PreparedServing prepared = prepare(sr);
  return need.decode ? decode_worker_rate(prepared.setup, sr.load, q, *feeder->prefill_rate) : replica_rate(prepared.setup, sr.load, q);
}

/// The rate `need` asks for from its outcome, counted as the search takes it; rethrows what preparing it threw.
double take_rate(const RateNeed& need, Outcome<ReplicaRate>& outcome, CapacityPlan& plan) {
  if (need.rate()) return *need.rate();
  const ReplicaRate& r = outcome.get();
  ++plan.layouts_evaluated;
  plan.simulations += r.simulations;
  need.rate() = r.rate_per_s;
  return r.rate_per_s;
}

/// N prefill workers of one layout and M decode workers of another, sized for the whole rate.
struct Pairing {
  Screened* prefill = nullptr;
  Screened* decode = nullptr;
  uint32_t prefill_workers = 0, decode_workers = 0, gpus = 0;
  std::size_t order = 0;  ///< prefill layout outer, decode layout inner, in the enumeration
};

/// The pair sized at rates of `prefill_per_s` and `decode_per_s` per worker; gpus 0 when past max_gpus or the worker limit.
Pairing sized(Pairing x, const CapacityRequest& q, double prefill_per_s, double decode_per_s) {
  x.prefill_workers = workers_for(q.rate_per_s, prefill_per_s);
  x.decode_workers = workers_for(q.rate_per_s, decode_per_s);
  const uint64_t gpus = static_cast<uint64_t>(x.prefill_workers) * x.prefill->gpus() + static_cast<uint64_t>(x.decode_workers) * x.decode->gpus();
  const bool within = gpus <= q.max_gpus && x.prefill_workers <= kMaxServeWorkers && x.decode_workers <= kMaxServeWorkers;
  x.gpus = within ? static_cast<uint32_t>(gpus) : 0;
  return x;
}

/// Every pair of layouts whose ceilings leave it within max_gpus, sized at the ceilings: the
/// fewest GPUs each pair could need, fewest first.
std::vector<Pairing> pairs_at_ceilings(std::vector<Screened*>& group, const CapacityRequest& q) {
  std::vector<Pairing> out;
  for (std::size_t i = 0; i < group.size(); ++i)
    for (std::size_t j = 0; j < group.size(); ++j) {
      if (!(group[i]->prefill_ceiling > 0) || !(group[j]->decode_ceiling > 0)) continue;
      const Pairing x = sized({group[i], group[j], 0, 0, 0, i * group.size() + j}, q, group[i]->prefill_ceiling, group[j]->decode_ceiling);
      if (x.gpus) out.push_back(x);
    }
  std::stable_sort(out.begin(), out.end(), [](const Pairing& a, const Pairing& b) { return a.gpus < b.gpus; });
  return out;
}

/// A sized pair simulated whole: the candidate when it met the SLOs, and the simulations it took.
struct Verification {
  std::optional<CapacityCandidate> candidate;
  std::size_t simulations = 0;
};

/// Simulates the sized deployment whole at the requested rate; where it misses, the pool whose
/// SLO it misses gets one more worker (twice at most). No candidate when it still misses or
/// outgrows max_gpus. Throws what preparing the deployment throws.
Verification verified(Preparer& prepare, const CapacityRequest& q, double gpu_hour_usd, Pairing x) {
  ServeRequest sr = serve_request(q, x.decode->option);
  sr.disaggregated = true;
  sr.prefill = {1, x.prefill->option.layout.layout, 0, q.max_batched_tokens};
  sr.decode = {1, x.decode->option.layout.layout, 0, q.max_batched_tokens};
  const PreparedServing prepared = prepare(sr);
  ServingSetup setup = prepared.setup;
  const uint32_t gp = x.prefill->gpus(), gd = x.decode->gpus();
  Verification out;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (x.prefill_workers * gp + x.decode_workers * gd > q.max_gpus) return out;
    setup.pools[0].workers = x.prefill_workers;
    setup.pools[1].workers = x.decode_workers;
    const ServingResult r = simulate_serving(setup, open_loop(sr.load, q.rate_per_s));
    ++out.simulations;
    if (meets(r, q)) {
      CapacityCandidate c;
      c.engine = x.decode->option.engine;
      c.quant = prepared.base.scenario.weights.quant_id;
      c.layout = {x.decode_workers, x.decode->option.layout.layout, 0, q.max_batched_tokens};
      c.disaggregated = DisaggregatedSizing{{x.prefill_workers, x.prefill->option.layout.layout, 0, q.max_batched_tokens},
                                            c.layout,
                                            *x.prefill->prefill_rate,
                                            *x.decode->decode_rate};
      c.replicas = 1;
      c.gpus = x.prefill_workers * gp + x.decode_workers * gd;
      c.replica_rate_per_s = std::min(x.prefill_workers * *x.prefill->prefill_rate, x.decode_workers * *x.decode->decode_rate);
      c.at_load = r;
      c.order = x.order;
      price(c, q, gpu_hour_usd);
      out.candidate = c;
      return out;
    }
    (r.tpot_s.p90 > q.slo_tpot_s ? x.decode_workers : x.prefill_workers) += 1;
  }
  return out;
}

/// The disaggregated candidates of one engine and format. The feeder of every decode worker is the
/// layout with the highest prefill ceiling per GPU. Pairs are taken fewest GPUs (at their ceilings)
/// first; each is sized at its layouts' simulated rates, and a sized pair is simulated whole once
/// no pair left could need fewer GPUs, fewest first, until kVerifiedPairs meet the SLOs. Rates and
/// whole deployments are simulated side by side ahead of the search's asking (side_by_side.hpp)
/// and taken, and counted, in its order, on `threads` threads.
void plan_disaggregated(Preparer& prepare, const CapacityRequest& q, std::vector<Screened*> group, CapacityPlan& plan,
                        std::size_t threads) {
  const auto feeder = std::max_element(group.begin(), group.end(), [](const Screened* a, const Screened* b) {
    return a->prefill_ceiling / a->gpus() < b->prefill_ceiling / b->gpus();
  });
  if (feeder == group.end() || !((*feeder)->prefill_ceiling > 0)) return;
  try {
    Outcome<ReplicaRate> first;
    try {
      first.value = simulate_rate(prepare, q, {*feeder, false}, nullptr);
    } catch (const Error&) {
      first.error = std::current_exception();
    }
    if (!(take_rate({*feeder, false}, first, plan) > 0)) return;
  } catch (const Error&) {  // a layout the simulation refuses
    return;
  }
  const std::vector<Pairing> bounds = pairs_at_ceilings(group, q);
  // Every rate the pairs ask for, once, in the order they first ask.
  std::vector<RateNeed> needs;
  for (const Pairing& b : bounds)
    for (const RateNeed n : {RateNeed{b.prefill, false}, RateNeed{b.decode, true}})
      if (!n.rate() && std::find(needs.begin(), needs.end(), n) == needs.end()) needs.push_back(n);
  const auto rate_task = [&](std::size_t k) { return simulate_rate(prepare, q, needs[k], *feeder); };
  RunAhead<ReplicaRate> rates(needs.size(), rate_task, threads - 1, threads);
  const auto rate_of = [&](const RateNeed& n) {
    if (n.rate()) return *n.rate();
    return take_rate(n, rates.at(static_cast<std::size_t>(std::find(needs.begin(), needs.end(), n) - needs.begin())), plan);
  };
  std::vector<Pairing> waiting;  // sized at simulated rates, not yet simulated whole
  std::size_t kept = 0;
  const auto verify_below = [&](uint64_t gpus) {
    std::stable_sort(waiting.begin(), waiting.end(), [](const Pairing& a, const Pairing& b) { return std::tie(a.gpus, a.order) < std::tie(b.gpus, b.order); });
    std::size_t n = 0, taken = 0;
    while (n < waiting.size() && waiting[n].gpus < gpus) ++n;
    {
      const auto check = [&](std::size_t k) { return verified(prepare, q, plan.gpu_hour_usd, waiting[k]); };
      RunAhead<Verification> checks(n, check, threads - 1, threads);
      for (; taken < n && kept < kVerifiedPairs; ++taken) {
        try {
          const Verification& v = checks.at(taken).get();
          plan.simulations += v.simulations;
          if (v.candidate) plan.candidates.push_back(*v.candidate), ++kept;
        } catch (const Error&) {  // a pairing the simulation refuses
        }
      }
    }  // the helpers stop (their tasks read `waiting`) before it changes
    waiting.erase(waiting.begin(), waiting.begin() + static_cast<std::ptrdiff_t>(taken));
  };
  for (const Pairing& bound : bounds) {
    if (!q.exhaustive) verify_below(bound.gpus);
    if (kept == kVerifiedPairs) return;
    try {
      const double p = rate_of({bound.prefill, false}), d = rate_of({bound.decode, true});
      if (!(p > 0) || !(d > 0)) continue;
      const Pairing x = sized(bound, q, p, d);
      ++plan.disaggregated_pairs;
      if (x.gpus) waiting.push_back(x);
    } catch (const Error&) {  // a layout the simulation refuses
    }
  }
  verify_below(UINT64_MAX);
}

bool same_group(const Option& a, const Option& b) { return a.engine == b.engine && a.quant == b.quant; }

/// [first, end) of each engine and format's options in `screened` (options_to_try lists them grouped).
using Spans = std::vector<std::pair<std::size_t, std::size_t>>;
Spans group_spans(const std::vector<Screened>& screened) {
  Spans spans;
  for (std::size_t first = 0; first < screened.size();) {
    std::size_t end = first;
    while (end < screened.size() && same_group(screened[end].option, screened[first].option)) ++end;
    spans.emplace_back(first, end);
    first = end;
  }
  return spans;
}

/// Every engine and format's disaggregated candidates. Options come grouped by engine and format
/// (options_to_try); each group is sized disaggregated, the groups side by side (one thread each
/// where there are more groups than cores), their findings taken, and counted, in order.
void plan_disaggregated_groups(Preparer& prepare, const CapacityRequest& q, std::vector<Screened>& screened, const Spans& spans,
                               CapacityPlan& plan, const std::function<void()>& tick) {
  const std::size_t threads = std::min(side_by_side_threads(), spans.size());
  const auto group_task = [&](std::size_t g) {
    std::vector<Screened*> group;
    for (std::size_t i = spans[g].first; i < spans[g].second; ++i) group.push_back(&screened[i]);
    CapacityPlan found;
    found.gpu_hour_usd = plan.gpu_hour_usd;
    plan_disaggregated(prepare, q, group, found, std::max<std::size_t>(1, side_by_side_threads() / threads));
    return found;
  };
  RunAhead<CapacityPlan> sized(spans.size(), group_task, spans.size(), threads);
  for (std::size_t g = 0; g < spans.size(); ++g) {
    const CapacityPlan& found = sized.at(g).get();
    const std::size_t n = spans[g].second - spans[g].first;
    plan.deployments_searched += n * n;
    plan.layouts_evaluated += found.layouts_evaluated;
    plan.simulations += found.simulations;
    plan.disaggregated_pairs += found.disaggregated_pairs;
    for (CapacityCandidate c : found.candidates) {
      c.order += (spans[g].first + 1) * screened.size() * screened.size();
      plan.candidates.push_back(std::move(c));
    }
    tick();
  }
}

/// The plan's order: fewest GPUs, then the most headroom (replica capacity x replicas), then the enumeration.
bool ranks_before(const CapacityCandidate& a, const CapacityCandidate& b) {
  if (a.gpus != b.gpus) return a.gpus < b.gpus;
  const double ha = a.replica_rate_per_s * a.replicas, hb = b.replica_rate_per_s * b.replicas;
  if (ha != hb) return ha > hb;
  return a.order < b.order;
}

/// A layout's simulations cost about its attention ranks' iterations: the widest first keeps every
/// core busy to the end of a group of layouts run side by side.
std::vector<std::size_t> widest_first(const std::vector<Screened*>& layouts) {
  std::vector<std::size_t> out(layouts.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = i;
  std::stable_sort(out.begin(), out.end(), [&](std::size_t a, std::size_t b) {
    return layouts[a]->option.layout.layout.dp_attention > layouts[b]->option.layout.layout.dp_attention;
  });
  return out;
}

/// Replicas of each layout, fewest GPUs at the ceiling first. Past the kPlanRankedCandidates best found,
/// a layout whose ceiling already needs more GPUs than the last of them is not simulated (it
/// cannot rank among them); --exhaustive simulates every one. Layouts whose ceilings need the same
/// GPUs are decided together: a candidate needs at least its layout's GPUs at the ceiling, so the
/// ones a group finds never bar the rest of it, and the group's layouts are simulated side by side
/// (widest first) and taken, and counted, in order.
void plan_aggregated(const CapacityRequest& q, std::vector<Screened>& screened, CapacityPlan& plan, const std::function<void()>& tick) {
  std::vector<Screened*> order;
  for (Screened& s : screened)
    if (s.gpus_at_least <= q.max_gpus) order.push_back(&s);
  std::stable_sort(order.begin(), order.end(), [](const Screened* a, const Screened* b) { return a->gpus_at_least < b->gpus_at_least; });
  std::vector<uint32_t> found;  // GPUs of the candidates so far, fewest first
  const auto may_rank = [&](const Screened* s) {
    return q.exhaustive || found.size() < kPlanRankedCandidates || s->gpus_at_least <= found[kPlanRankedCandidates - 1];
  };
  for (std::size_t first = 0; first < order.size();) {
    std::size_t end = first;
    while (end < order.size() && order[end]->gpus_at_least == order[first]->gpus_at_least) ++end;
    if (!may_rank(order[first])) break;
    const auto at = [&](std::size_t i) { return order.begin() + static_cast<std::ptrdiff_t>(i); };
    const std::vector<Screened*> group(at(first), at(end));
    const std::vector<std::size_t> started = widest_first(group);
    std::vector<std::size_t> slot(group.size());  // where each layout of the group is in `started`
    for (std::size_t k = 0; k < started.size(); ++k) slot[started[k]] = k;
    RunAhead<ReplicaRate> rates(
        group.size(), [&](std::size_t k) { return replica_rate(group[started[k]]->prepared.setup, group[started[k]]->request.load, q); },
        group.size());
    for (std::size_t k = 0; k < group.size(); ++k) {
      const Screened* s = group[k];
      tick();
      ++plan.layouts_evaluated;
      const ReplicaRate& replica = rates.at(slot[k]).get();
      plan.simulations += replica.simulations;
      if (!(replica.rate_per_s > 0)) continue;
      if (auto c = candidate_of(q, plan.gpu_hour_usd, s->option, s->prepared, replica)) {
        c->order = s->order;
        found.insert(std::upper_bound(found.begin(), found.end(), c->gpus), c->gpus);
        plan.candidates.push_back(*c);
      }
    }
    first = end;
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
  check_serving_lengths(base.scenario.model, serve_request(q, {}).load);
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

  Preparer prepare(catalog, base.model);
  std::vector<Screened> screened = screen(prepare, q, options);
  plan.layouts_screened = plan.deployments_searched = screened.size();
  const Spans groups = q.disaggregated ? group_spans(screened) : Spans{};
  const std::size_t steps = screened.size() + groups.size();
  std::size_t done = 0;
  const auto tick = [&] {
    if (progress) progress(done++, steps);
  };
  plan_aggregated(q, screened, plan, tick);
  if (q.disaggregated) plan_disaggregated_groups(prepare, q, screened, groups, plan, tick);
  if (progress) progress(steps, steps);
  // Fewest GPUs first, then the most headroom per GPU (replica capacity x replicas over GPUs), then the enumeration order.
  std::sort(plan.candidates.begin(), plan.candidates.end(), ranks_before);
  plan.notes.push_back(
      fmt::format("a layout meets the SLOs when {:.0f}% of requests have TTFT <= {:.3g} s and TPOT <= {:.3g} s at its share "
                  "of the rate (open-loop Poisson arrivals), and it keeps up with the rate",
                  100 * q.slo_attainment, q.slo_ttft_s, q.slo_tpot_s));
  if (q.disaggregated)
    plan.notes.push_back(
        "disaggregated: each layout's rate as a prefill worker (TTFT SLO) and as a decode worker (both SLOs, prefill never binding) "
        "sizes both pools for pairs of layouts, fewest GPUs first; the best pairs are simulated whole, the KV moving over the GPU "
        "link where a prefill and a decode worker fit in one node, else over the network");
  else
    plan.notes.push_back("aggregated layouts only (--aggregated-only)");
  if (q.max_batched_tokens)
    plan.notes.push_back(fmt::format("every worker takes {} tokens per iteration (--max-batched-tokens)", q.max_batched_tokens));
  if (!q.exhaustive)
    plan.notes.push_back(fmt::format("each option's rate is bounded analytically first; options that cannot rank among the {} best "
                                     "are not simulated (--exhaustive simulates every one)",
                                     kPlanRankedCandidates));
  return plan;
}

}  // namespace optadvisor
