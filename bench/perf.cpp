// SPDX-License-Identifier: MIT
// In-process speed figures (Google Benchmark): analyze() over a sweep of every
// device x model x batch size (plus every weight format on one device per
// class), scenario preparation, catalog loading and a whole advisor run.
// bench/perf.py runs this together with whole-process timings; see
// docs/performance.md.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/base/error.hpp"
#include "optadvisor/advisor/playbook.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/analysis/serving_setup.hpp"
#include "optadvisor/planner/capacity.hpp"
#include "optadvisor/advisor/rules.hpp"
#include "optadvisor/planner/search.hpp"

namespace {

using namespace optadvisor;

const Catalog& catalog() {
  static const Catalog c = Catalog::load(LoadOptions{});
  return c;
}

/// Requests for every device x model with the device class defaults, and
/// every weight format on the first device of each class.
std::vector<ScenarioRequest> sweep_requests() {
  std::vector<ScenarioRequest> requests;
  std::vector<DeviceClass> classes_seen;
  for (const auto& hw : catalog().hardware()) {
    bool first_of_class = true;
    for (const auto& c : classes_seen) first_of_class = first_of_class && c != hw.device_class;
    if (first_of_class) classes_seen.push_back(hw.device_class);
    for (const auto& model : catalog().models()) {
      ScenarioRequest r;
      r.hardware = hw.id;
      r.model.preset = model.id;
      requests.push_back(r);
      if (!first_of_class) continue;
      for (const char* quant : {"q4_k_m", "q8_0", "f16", "fp8", "awq-int4", "nvfp4", "mlx-4bit"}) {
        r.quant = quant;
        requests.push_back(r);
      }
    }
  }
  return requests;
}

/// Every request that prepares (formats an engine lacks are skipped), at
/// batch 1, 8, 64 and 512.
const std::vector<Scenario>& sweep() {
  static const std::vector<Scenario> scenarios = [] {
    std::vector<Scenario> out;
    for (const auto& r : sweep_requests()) {
      try {
        Scenario s = prepare_scenario(catalog(), r).scenario;
        for (uint64_t batch : {1, 8, 64, 512}) {
          s.workload.batch = batch;
          out.push_back(s);
        }
      } catch (const Error&) {
        // An engine/format/device combination that does not exist.
      }
    }
    return out;
  }();
  return scenarios;
}

void BM_Analyze(benchmark::State& state) {
  const auto& scenarios = sweep();
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(analyze(scenarios[i]));
    if (++i == scenarios.size()) i = 0;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.counters["scenarios"] = static_cast<double>(scenarios.size());
}
BENCHMARK(BM_Analyze);

/// analyze() and then both phases' explanation texts written out (what `estimate` shows).
void BM_AnalyzeExplained(benchmark::State& state) {
  const auto& scenarios = sweep();
  std::size_t i = 0;
  for (auto _ : state) {
    const Analysis a = analyze(scenarios[i]);
    benchmark::DoNotOptimize(a.prefill.explanation());
    benchmark::DoNotOptimize(a.decode.explanation());
    if (++i == scenarios.size()) i = 0;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_AnalyzeExplained);

/// The same without the explanation and warning texts (search's and the advisor's candidates).
void BM_AnalyzeNumbers(benchmark::State& state) {
  const auto& scenarios = sweep();
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(analyze(scenarios[i], Detail::kNumbers));
    if (++i == scenarios.size()) i = 0;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_AnalyzeNumbers);

void BM_PrepareScenario(benchmark::State& state) {
  const auto requests = sweep_requests();
  std::size_t i = 0;
  for (auto _ : state) {
    try {
      benchmark::DoNotOptimize(prepare_scenario(catalog(), requests[i]));
    } catch (const Error&) {}
    if (++i == requests.size()) i = 0;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_PrepareScenario);

void BM_CatalogLoad(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(Catalog::load(LoadOptions{}));
}
BENCHMARK(BM_CatalogLoad)->Unit(benchmark::kMillisecond);

void BM_AdviseLatencyRtx5090(benchmark::State& state) {
  const RuleBook book = RuleBook::load(catalog());
  AdviceRequest request;
  request.scenario.hardware = "rtx5090";
  request.goal = Goal::kLatency;
  for (auto _ : state) benchmark::DoNotOptimize(advise(catalog(), book, request));
}
BENCHMARK(BM_AdviseLatencyRtx5090)->Unit(benchmark::kMillisecond);

/// The capacity planner: every device x GPU count x format x engine x batch for
/// llama-3.1-8b at the throughput goal (about 28,000 configurations).
void BM_SearchThroughput8B(benchmark::State& state) {
  SearchRequest request;
  request.goal = Goal::kThroughput;
  request.workload.model.preset = "llama-3.1-8b";
  const ResolvedModel model = resolve_model(catalog(), request.workload.model);
  uint64_t searched = 0;
  for (auto _ : state) {
    const SearchResult result = search(catalog(), model, request);
    searched = result.stats.searched;
    benchmark::DoNotOptimize(result);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * searched));
  state.counters["scenarios"] = static_cast<double>(searched);
}
BENCHMARK(BM_SearchThroughput8B)->Unit(benchmark::kMillisecond);

/// One serving point at steady state: DeepSeek-V3 NVFP4 on 8 B200s (data-parallel
/// attention 8, expert parallel 8), 256 clients of 1024 + 1024 tokens.
ServeRequest serve_request(const std::string& hw, const std::string& model, uint64_t concurrency) {
  ServeRequest r;
  r.scenario.hardware = hw;
  r.scenario.model.preset = model;
  r.load.concurrency = concurrency;
  return r;
}

void BM_ServePointDeepSeekEP(benchmark::State& state) {
  ServeRequest r = serve_request("b200", "deepseek-v3", 256);
  r.scenario.quant = "nvfp4";
  r.scenario.engine = "sglang";
  r.aggregated.layout.dp_attention = 8;
  r.aggregated.layout.ep = 8;
  const PreparedServing p = prepare_serving(catalog(), r);
  for (auto _ : state) benchmark::DoNotOptimize(simulate_serving(p.setup, r.load));
}
BENCHMARK(BM_ServePointDeepSeekEP)->Unit(benchmark::kMillisecond);

/// A 64-point concurrency sweep (8, 16, ..., 512 clients) of Llama-3.1-70B FP8 on 4 H100s.
void BM_ServeSweep64(benchmark::State& state) {
  ServeRequest r = serve_request("h100-sxm", "llama-3.1-70b", 1);
  r.scenario.quant = "fp8";
  r.aggregated.layout.tp = 4;
  const PreparedServing p = prepare_serving(catalog(), r);
  for (auto _ : state) {
    for (uint64_t c = 8; c <= 512; c += 8) {
      ServingLoad load = r.load;
      load.concurrency = c;
      benchmark::DoNotOptimize(simulate_serving(p.setup, load));
    }
  }
}
BENCHMARK(BM_ServeSweep64)->Unit(benchmark::kMillisecond);

/// `optadvisor plan` for Llama-3.1-70B on H100s: every serving engine x format x layout.
/// A plan's speed in the deployments its search covers (CapacityPlan::deployments_searched: the
/// aggregated layouts screened and the prefill x decode pairs of each engine and format).
void run_plan(benchmark::State& state, const CapacityRequest& q) {
  CapacityPlan plan;
  for (auto _ : state) {
    plan = plan_capacity(catalog(), q);
    benchmark::DoNotOptimize(plan);
  }
  state.counters["deployments"] = static_cast<double>(plan.deployments_searched);
  state.counters["layouts"] = static_cast<double>(plan.layouts_evaluated);
  state.counters["simulations"] = static_cast<double>(plan.simulations);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * plan.deployments_searched));
}

void BM_PlanCapacity70B(benchmark::State& state) {
  CapacityRequest q;
  q.scenario.hardware = "h100-sxm";
  q.scenario.model.preset = "llama-3.1-70b";
  q.rate_per_s = 10;
  q.slo_ttft_s = 1;
  q.slo_tpot_s = 0.05;
  run_plan(state, q);
}
BENCHMARK(BM_PlanCapacity70B)->Unit(benchmark::kMillisecond)->UseRealTime();

/// The largest search the planner makes: an MoE model (expert parallel and data-parallel attention
/// layouts beside tensor parallel) on a device with FP8 and NVFP4, three engines.
void BM_PlanCapacityDeepSeekV3(benchmark::State& state) {
  CapacityRequest q;
  q.scenario.hardware = "b200";
  q.scenario.model.preset = "deepseek-v3";
  q.rate_per_s = 20;
  q.prompt_tokens = 1024;
  q.gen_tokens = 1024;
  q.slo_ttft_s = 2;
  q.slo_tpot_s = 0.05;
  run_plan(state, q);
}
BENCHMARK(BM_PlanCapacityDeepSeekV3)->Unit(benchmark::kMillisecond)->UseRealTime();

/// The machine's own speed, independent of this project's code: string-keyed map inserts and
/// look-ups and floating-point math, the mix analyze() and the serving simulation run. bench/perf.py
/// scales its regression check by this figure against the baseline's, so a slower machine is not
/// taken for slower code.
void BM_MachineReference(benchmark::State& state) {
  for (auto _ : state) {
    std::map<std::string, double> m;
    double acc = 0;
    for (uint32_t i = 0; i < 20000; ++i) {
      const std::string key = "key-" + std::to_string((i * 2654435761U) % 50000U);
      m[key] += std::sqrt(static_cast<double>(i) + 1.0);
      acc += std::log1p(m[key]) * std::exp(-static_cast<double>(i % 64) / 32.0);
    }
    benchmark::DoNotOptimize(acc);
    benchmark::DoNotOptimize(m.size());
  }
}
BENCHMARK(BM_MachineReference)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
