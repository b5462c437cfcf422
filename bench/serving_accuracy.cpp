// SPDX-License-Identifier: MIT
// Serving accuracy: measured serving runs under load (bench/data/serving.csv,
// aiconfigurator's measured sample) against `optadvisor serve`'s simulation.
//   optadvisor_serving_accuracy                 the tables (docs/serving.md)
//   optadvisor_serving_accuracy --check         CI gate on the medians (serving_baseline.json)
//   optadvisor_serving_accuracy --fit ENGINE    refits ENGINE's era on its rows, prints the factors
//   optadvisor_serving_accuracy --lodo          fits on H100 and predicts B200, and the reverse
//   optadvisor_serving_accuracy --lomo          fits on the other models and predicts each model in turn
//   optadvisor_serving_accuracy --rows          every row with its prediction
//   optadvisor_serving_accuracy --accuracy      each era's errors, pooled and by device, as data/engines records them
//   optadvisor_serving_accuracy --estimate[-rows] `estimate`'s decode time per token against the TPOT of the
//                                               aggregated runs at few clients and short prompts (a decode step
//                                               of the batch, little prefill between): its own table and gate
//   optadvisor_serving_accuracy --open-loop [--check]  the open loop's default measurement (a warm start) against
//                                               a long warm-up, at 60% and 90% of six layouts' closed-loop
//                                               ceilings; --check gates it (serving_baseline.json)
//   ... --steady                                (last) every row as a steady state, the protocol assumption off
// Error of a row: exp(|ln(predicted / measured)|) - 1.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_common.hpp"
#include "csv.hpp"
#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/analysis/serving_setup.hpp"
#include "optadvisor/base/error.hpp"
#include "optadvisor/catalog/catalog.hpp"

using namespace optadvisor;
using optadvisor::bench::CsvRow;
using optadvisor::bench::median;

namespace {

struct Row {
  CsvRow raw;
  std::string engine, device, mode;
  ScenarioRequest scenario;  ///< the aggregated pool's scenario, for `estimate` (--estimate)
  PreparedServing prepared;
  ServingLoad load;
  double ttft_s = 0, tpot_s = 0;
  double pred_ttft_s = 0, pred_tpot_s = 0;
};

uint32_t num(const CsvRow& r, const std::string& key, uint32_t fallback = 1) {
  auto it = r.find(key);
  if (it == r.end() || it->second.empty()) return fallback;
  return static_cast<uint32_t>(std::stoul(it->second));
}

/// The catalog shape of each measured model name.
const std::map<std::string, std::string>& known_models() {
  static const std::map<std::string, std::string> known = {{"meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"},
                                                           {"meta-llama/Llama-3.1-70B", "llama-3.1-70b"},
                                                           {"Qwen/Qwen3-32B", "qwen3-32b"},
                                                           {"nvidia/Qwen3-32B-NVFP4", "qwen3-32b"},
                                                           {"Qwen/Qwen3-235B-A22B-FP8", "qwen3-235b-a22b"},
                                                           {"deepseek-ai/DeepSeek-R1", "deepseek-v3"},
                                                           {"deepseek-ai/DeepSeek-V3", "deepseek-v3"},
                                                           {"nvidia/DeepSeek-R1-NVFP4", "deepseek-v3"},
                                                           {"nvidia/DeepSeek-V3.1-NVFP4", "deepseek-v3"},
                                                           {"openai/gpt-oss-120b", "gpt-oss-120b"},
                                                           {"MiniMaxAI/MiniMax-M2.5", "minimax-m2.5"},
                                                           {"Qwen/Qwen3.5-397B-A17B", "qwen3.5-397b-a17b"},
                                                           {"moonshotai/Kimi-K2.5", "kimi-k2"} /* the language model is Kimi-K2 shaped */,
                                                           {"zhipuai/GLM-5", "glm-5"}};
  return known;
}

/// The catalog id of a measured model, "" when the catalog lacks it.
std::string model_id(const Catalog& catalog, const std::string& hf) {
  const auto& known = known_models();
  auto it = known.find(hf);
  if (it == known.end()) return {};
  if (hf == "moonshotai/Kimi-K2.5" && catalog.find_model("kimi-k2.5")) return "kimi-k2.5";
  return catalog.find_model(it->second) ? it->second : std::string{};
}

std::string quant_for(const CsvRow& r) {
  const std::string& p = r.at("precision");
  const std::string& g = r.at("gemm_quant");
  const std::string& moe = r.at("moe_quant");
  if (p == "bf16") return "hf-bf16";
  // gpt-oss's "fp4" rows are its own checkpoint (MXFP4 experts, BF16 attention), which the sample
  // labels nvfp4 on H100 too, where no NVFP4 kernel runs: the model's native format.
  if ((g == "nvfp4" || moe == "nvfp4") && r.at("model") == "openai/gpt-oss-120b") return {};
  if (g == "nvfp4" || moe == "nvfp4") return "nvfp4";
  if (g == "fp8_block" || moe == "fp8_block") return "fp8-block";
  if (p == "fp8") return "fp8";
  if (g == "int4_wo") return "int4-wo";
  return {};
}

/// How the benchmark counted a run (the rows do not record it; docs/serving.md, "Benchmark
/// protocol"): runs measured from November 2025 on are taken as aiperf's defaults, no warm-up
/// requests (`--warmup-request-count 0`), so the first burst of C prompts is in the mean, over
/// three requests per client (`--request-count 3C`, as Dynamo's aiperf examples run); older runs
/// as a steady state after one cycle of the clients, the simulator's default.
constexpr uint64_t kRequestsPerClient = 3;

bool counts_from_start(const CsvRow& raw) {
  const std::string& when = raw.at("measured");
  return !when.empty() && when >= "2025-11";
}

std::string engine_for(const std::string& backend) {
  if (backend == "trtllm") return "tensorrt-llm";
  return backend;
}

ServePoolRequest pool(const CsvRow& r, const std::string& prefix) {
  ServePoolRequest p;
  p.workers = num(r, prefix + (prefix.empty() ? "" : "workers"), 1);
  if (prefix.empty()) p.workers = 1;
  p.layout.tp = num(r, prefix + "tp");
  p.layout.pp = num(r, prefix + "pp");
  p.layout.dp_attention = num(r, prefix + "attention_dp");
  p.layout.ep = num(r, prefix + "moe_ep");
  // The measured run's batch limit (aiconfigurator's prefill_batch / decode_batch) is per attention
  // rank, as max_batch is: workers x dp_attention x decode_batch equals the concurrency in every
  // row that records them (1920 clients on 5 workers of dp-attention 8 at decode_batch 48).
  if (!prefix.empty()) p.max_batch = num(r, prefix + "batch", 0);
  return p;
}

double err(double pred, double meas) { return pred > 0 && meas > 0 ? std::exp(std::fabs(std::log(pred / meas))) - 1 : 9.99; }

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5))];
}

struct Loaded {
  std::vector<Row> rows;
  std::map<std::string, int> unmapped;  ///< reason -> rows
  std::size_t total = 0;
};

/// The columns that say where a run ran: its layout, or its two pools' layouts and batch limits.
constexpr const char* kLayoutColumns[] = {
    "tp",         "pp",         "attention_dp",         "moe_tp",         "moe_ep",         "prefill_workers", "prefill_batch",
    "prefill_tp", "prefill_pp", "prefill_attention_dp", "prefill_moe_tp", "prefill_moe_ep", "decode_workers",  "decode_batch",
    "decode_tp",  "decode_pp",  "decode_attention_dp",  "decode_moe_tp",  "decode_moe_ep"};

/// The columns that say what was run, apart from where and which model name (the model's shape is part
/// of the workload, its name is not: the sample lists some DeepSeek-R1 runs under DeepSeek-V3 too).
constexpr const char* kWorkloadColumns[] = {
    "hardware", "backend", "backend_version", "precision", "gemm_quant", "moe_quant", "mode", "isl", "osl", "concurrency"};

bool same_columns(const CsvRow& a, const CsvRow& b, const auto& columns) {
  return std::all_of(std::begin(columns), std::end(columns), [&](const char* c) { return a.at(c) == b.at(c); });
}

/// The workload a row ran (kWorkloadColumns), as one key.
std::string workload_key(const CsvRow& r) {
  const auto shape = known_models().find(r.at("model"));
  std::string key = (shape == known_models().end() ? r.at("model") : shape->second) + '|';
  for (const char* c : kWorkloadColumns) key += r.at(c) + '|';
  return key;
}

/// Two rows of one workload hold one measurement when they record the same TTFT and TPOT to within
/// 0.1% (the sample rounds some copies to two decimals): two separate runs never agree that closely on both.
bool same_values(const CsvRow& a, const CsvRow& b) {
  const auto close = [&](const char* c) {
    const double x = std::stod(a.at(c)), y = std::stod(b.at(c));
    return std::fabs(x - y) <= 1e-3 * std::max(x, y);
  };
  return close("ttft_ms") && close("tpot_ms");
}

/// An aggregated run's layout class: engine, tp, pp, attention-DP, MoE-TP and MoE-EP.
std::string layout_class(const CsvRow& r) {
  return fmt::format("{} tp{} pp{} dp{} moe-tp{} ep{}", r.at("backend"), r.at("tp"), r.at("pp"), r.at("attention_dp"), r.at("moe_tp"),
                     r.at("moe_ep"));
}

uint32_t gpus_of(const CsvRow& r) { return num(r, "tp", 1) * num(r, "pp", 1) * num(r, "attention_dp", 1); }

/// Which rows the comparison leaves out, and why. The first listing of a measurement counts; a copy
/// under the same layout counts once. One measurement listed under two layouts counts under neither,
/// since which layout ran is unknown (aiconfigurator's sample has 68 such runs, the larger layout of
/// each pair the square of the smaller: tp 16 beside tp 4, attention-DP 64 beside 8); and the larger
/// layout's class is then in doubt as a whole: every run listed under it is left out too.
std::vector<std::string> left_out(const std::vector<CsvRow>& all) {
  std::vector<std::string> why(all.size());
  std::set<std::string> doubted;
  std::map<std::string, std::vector<std::size_t>> by_workload;  // each workload's rows, in file order
  for (std::size_t i = 0; i < all.size(); ++i) by_workload[workload_key(all[i])].push_back(i);
  const auto compare = [&](std::size_t i, std::size_t j) {  // i listed before j
    if (!same_values(all[i], all[j])) return;
    if (same_columns(all[i], all[j], kLayoutColumns)) {
      if (!why[j].empty()) return;
      why[j] = all[i].at("model") == all[j].at("model")
                   ? "a copy of an earlier row (the same measurement and layout; counted once)"
                   : "a copy of an earlier row under another name of the same model (DeepSeek-R1 for -V3; counted once)";
      return;
    }
    why[i] = why[j] = "one measurement listed under two different layouts (which one ran is unknown)";
    if (all[i].at("mode") == "agg") doubted.insert(layout_class(gpus_of(all[i]) > gpus_of(all[j]) ? all[i] : all[j]));
  };
  for (const auto& [key, rows] : by_workload)
    for (std::size_t a = 0; a < rows.size(); ++a)
      for (std::size_t b = a + 1; b < rows.size(); ++b) compare(rows[a], rows[b]);
  for (std::size_t i = 0; i < all.size(); ++i)
    if (why[i].empty() && all[i].at("mode") == "agg" && doubted.count(layout_class(all[i])))
      why[i] = "a layout the sample also writes for runs of a smaller one (tp 16 for tp 4, attention-DP 64 for 8): in doubt";
  return why;
}

Loaded load_rows(const Catalog& catalog, const std::string& path, bool all_steady) {
  Loaded out;
  const std::vector<CsvRow> all = bench::read_csv(path);
  const std::vector<std::string> why = left_out(all);
  for (std::size_t i = 0; i < all.size(); ++i) {
    const CsvRow& raw = all[i];
    ++out.total;
    if (!why[i].empty()) {
      ++out.unmapped[why[i]];
      continue;
    }
    const std::string model = model_id(catalog, raw.at("model"));
    if (model.empty()) {
      ++out.unmapped["model not in the catalog: " + raw.at("model")];
      continue;
    }
    Row row;
    row.raw = raw;
    row.engine = engine_for(raw.at("backend"));
    row.device = raw.at("hardware");
    row.mode = raw.at("mode");
    ServeRequest req;
    req.scenario.hardware = row.device;
    req.scenario.model.preset = model;
    req.scenario.quant = quant_for(raw);
    req.scenario.engine = row.engine;
    req.scenario.kv_dtype = raw.at("precision") == "bf16" ? "bf16" : "fp8";
    req.engine_version = raw.at("backend_version");
    req.load.concurrency = num(raw, "concurrency");
    req.load.prompt_tokens = num(raw, "isl");
    req.load.gen_tokens = num(raw, "osl");
    if (row.mode == "disagg" && (raw.at("prefill_workers").empty() || raw.at("decode_workers").empty())) {
      // How many prefill and decode workers served the load decides the whole result (1,600 clients
      // on one prefill worker queue for minutes); a run that does not record them cannot be compared.
      ++out.unmapped["disaggregated run without its prefill and decode worker counts"];
      continue;
    }
    if (row.mode == "disagg") {
      req.disaggregated = true;
      req.prefill = pool(raw, "prefill_");
      req.decode = pool(raw, "decode_");
    } else {
      req.aggregated = pool(raw, "");
    }
    row.scenario = req.scenario;
    row.scenario.tp = req.aggregated.layout.tp;
    row.scenario.pp = req.aggregated.layout.pp;
    row.scenario.ep = req.aggregated.layout.ep;
    row.scenario.dp_attention = req.aggregated.layout.dp_attention;
    try {
      row.prepared = prepare_serving(catalog, req);
    } catch (const Error& e) {
      ++out.unmapped[std::string("refused: ") + e.what()];
      continue;
    }
    ServingLoad one;  // a lone client of one request: does a request fit at all
    one.concurrency = 1, one.prompt_tokens = req.load.prompt_tokens, one.gen_tokens = req.load.gen_tokens, one.requests = 1;
    if (!simulate_serving(row.prepared.setup, one).fits) {
      ++out.unmapped["does not fit with the engine's default memory settings (the run set its own)"];
      continue;
    }
    row.load = req.load;
    if (!all_steady && counts_from_start(raw)) {
      row.load.warmup_requests = 0;
      row.load.requests = kRequestsPerClient * std::max<uint64_t>(row.load.concurrency, 1);
    }
    row.ttft_s = std::stod(raw.at("ttft_ms")) / 1e3;
    row.tpot_s = std::stod(raw.at("tpot_ms")) / 1e3;
    out.rows.push_back(std::move(row));
  }
  return out;
}

void predict(Row& row, const ServingEra* era, bool quick) {
  if (era) apply_era(row.prepared.setup, *era);
  ServingLoad load = row.load;
  if (quick && !load.warmup_requests) load.requests = std::max<uint64_t>(std::min<uint64_t>(load.concurrency, 256), 32);
  const ServingResult r = simulate_serving(row.prepared.setup, load);
  row.pred_ttft_s = r.ttft_s.mean;
  row.pred_tpot_s = r.tpot_s.mean;
}

struct Summary {
  std::size_t n = 0;
  double ttft_median = 0, tpot_median = 0, ttft_p90 = 0, tpot_p90 = 0;
};

Summary summarize(const std::vector<const Row*>& rows) {
  std::vector<double> a, b;
  for (const Row* r : rows) a.push_back(err(r->pred_ttft_s, r->ttft_s)), b.push_back(err(r->pred_tpot_s, r->tpot_s));
  return {rows.size(), median(a), median(b), quantile(a, 0.9), quantile(b, 0.9)};
}

/// The fit's objective: mean absolute log error (each row's capped at 2), TPOT
/// weighted four times TTFT: TTFT depends on how the benchmark's clients fall
/// into cohorts, which the model knows least well (docs/serving.md). Absolute,
/// not squared: the accuracy reported is the median error, which an absolute
/// loss estimates, and a few rows the model cannot express do not pull the rest.
double objective(std::vector<Row*>& rows, const ServingEra& era) {
  double sum = 0;
  for (Row* r : rows) {
    predict(*r, &era, true);
    const double a = r->pred_ttft_s > 0 ? std::log(r->pred_ttft_s / r->ttft_s) : 5.0;
    const double b = r->pred_tpot_s > 0 ? std::log(r->pred_tpot_s / r->tpot_s) : 5.0;
    sum += 0.5 * std::min(std::fabs(a), 2.0) + 2.0 * std::min(std::fabs(b), 2.0);
  }
  return rows.empty() ? 0 : sum / static_cast<double>(rows.size());
}

/// Coordinate descent in log space on the eleven physical factors, each within its physical range.
ServingEra fit(std::vector<Row*>& rows, ServingEra era, double collective_latency_start) {
  struct Knob {
    double ServingEra::*field;
    double lo, hi;
  };
  // Physical ranges: no kernel class reaches its peak; a fit that ends on a bound is a model gap (docs/serving.md).
  const Knob knobs[] = {{&ServingEra::bandwidth_efficiency, 0.5, 0.95},      {&ServingEra::gemm_efficiency, 0.3, 0.85},
                        {&ServingEra::attention_efficiency, 0.2, 0.8},       {&ServingEra::step_overhead_s, 1e-4, 0.02},
                        {&ServingEra::layer_overhead_s, 1e-7, 1e-4},         {&ServingEra::communication_efficiency, 0.2, 0.9},
                        {&ServingEra::expert_gemm_half_tokens, 1.0, 1024.0}, {&ServingEra::request_overhead_s, 1e-3, 0.2},
                        {&ServingEra::collective_latency_s, 1e-6, 5e-5},     {&ServingEra::frontend_request_s, 1e-4, 0.05},
                        {&ServingEra::sequence_overhead_s, 1e-7, 2e-4}};
  // The grouped-GEMM term starts where llama.cpp's backends fitted it (38-96 tokens) when the era has none.
  if (era.expert_gemm_half_tokens <= 0) era.expert_gemm_half_tokens = 32;
  if (era.request_overhead_s <= 0) era.request_overhead_s = 0.01;
  if (era.collective_latency_s <= 0) era.collective_latency_s = collective_latency_start;
  if (era.frontend_request_s <= 0) era.frontend_request_s = 1e-3;
  if (era.sequence_overhead_s <= 0) era.sequence_overhead_s = 1e-6;
  double best = objective(rows, era);
  // Rounds until no knob improves, at each step size (at most 10: a bound on the work, never reached in practice).
  for (double step : {1.6, 1.25, 1.08, 1.03}) {
    for (int round = 0; round < 10; ++round) {
      bool improved = false;
      for (const Knob& k : knobs) {
        for (double f : {step, 1.0 / step}) {
          ServingEra trial = era;
          double& v = trial.*(k.field);
          v = std::clamp(std::max(v, k.lo) * f, k.lo, k.hi);
          const double o = objective(rows, trial);
          if (o < best - 1e-6) best = o, era = trial, improved = true;
        }
      }
      if (!improved) break;
    }
  }
  return era;
}

void print_era(const std::string& engine, const ServingEra& e, const std::vector<Row*>& rows) {
  std::set<std::string> devices;
  for (const Row* r : rows) devices.insert(r->device);
  std::string on;
  for (const auto& d : devices) on += (on.empty() ? "" : ", ") + d;
  fmt::print(
      "{}: bandwidth_efficiency {:.3f}, gemm_efficiency {:.3f}, attention_efficiency {:.3f}, step_overhead_s {:.6f}, "
      "layer_overhead_s {:.3g}, communication_efficiency {:.3f}, expert_gemm_half_tokens {:.1f}, request_overhead_s {:.4f}, "
      "collective_latency_s {:.3g}, frontend_request_s {:.4g}, sequence_overhead_s {:.3g} ({} rows on {})\n",
      engine, e.bandwidth_efficiency, e.gemm_efficiency, e.attention_efficiency, e.step_overhead_s, e.layer_overhead_s,
      e.communication_efficiency, e.expert_gemm_half_tokens, e.request_overhead_s, e.collective_latency_s, e.frontend_request_s,
      e.sequence_overhead_s,
      rows.size(), on);
}

void print_tables(std::vector<Row>& rows) {
  std::map<std::string, std::vector<const Row*>> groups;
  for (const Row& r : rows) {
    groups[r.engine + " | " + r.mode + " | " + r.device].push_back(&r);
    groups[r.engine + " | all | all"].push_back(&r);
    groups["all | " + r.mode + " | all"].push_back(&r);
    groups["all | all | all"].push_back(&r);
  }
  fmt::print(
      "| engine | mode | device | rows | TTFT median | TTFT p90 | TPOT median | TPOT p90 |\n|---|---|---|---:|---:|---:|---:|---:|\n");
  for (const auto& [key, g] : groups) {
    const Summary s = summarize(g);
    fmt::print("| {} | {} | {:.1f}% | {:.1f}% | {:.1f}% | {:.1f}% |\n", key, s.n, 100 * s.ttft_median, 100 * s.ttft_p90,
               100 * s.tpot_median, 100 * s.tpot_p90);
  }
}

/// Each era's errors on the runs it covers, pooled and by device, in the form data/engines
/// records them (serving.eras[].accuracy, without its "measured" line): what `serve` prints.
std::map<const ServingEra*, nlohmann::json> era_accuracy(const std::vector<Row>& rows) {
  std::map<const ServingEra*, std::map<std::string, std::vector<const Row*>>> groups;
  for (const Row& r : rows) {
    groups[r.prepared.era][""].push_back(&r);
    groups[r.prepared.era][r.device].push_back(&r);
  }
  auto round3 = [](double x) { return std::round(1000 * x) / 1000; };
  std::map<const ServingEra*, nlohmann::json> out;
  for (const auto& [era, by_device] : groups) {
    nlohmann::json block = {{"by_device", nlohmann::json::array()}};
    for (const auto& [device, g] : by_device) {
      const Summary s = summarize(g);
      nlohmann::json one = {{"runs", s.n},
                            {"ttft_median_error", round3(s.ttft_median)},
                            {"ttft_p90_error", round3(s.ttft_p90)},
                            {"tpot_median_error", round3(s.tpot_median)},
                            {"tpot_p90_error", round3(s.tpot_p90)}};
      if (device.empty()) {
        block["all"] = one;
      } else {
        one["device"] = device;
        block["by_device"].push_back(one);
      }
    }
    out[era] = block;
  }
  return out;
}

/// Whether every era's recorded accuracy is what the rows give now (runs exactly; errors within a
/// point for medians and three for 90th percentiles, which compilers' float differences move a
/// little): the figures `serve` prints cannot go stale. Prints what to record where they differ.
bool accuracy_recorded(const Catalog& catalog, const std::vector<Row>& rows) {
  bool ok = true;
  for (const auto& [era, block] : era_accuracy(rows)) {
    std::string engine;
    for (const Row& r : rows)
      if (r.prepared.era == era) engine = r.engine;
    const EngineProfile& profile = catalog.resolve_engine(engine);
    auto same = [&](const nlohmann::json& want, const ServingAccuracy* have) {
      return have && have->runs == want.at("runs").get<uint64_t>() &&
             std::fabs(have->ttft_median_error - want.at("ttft_median_error").get<double>()) <= 0.01 &&
             std::fabs(have->tpot_median_error - want.at("tpot_median_error").get<double>()) <= 0.01 &&
             std::fabs(have->ttft_p90_error - want.at("ttft_p90_error").get<double>()) <= 0.03 &&
             std::fabs(have->tpot_p90_error - want.at("tpot_p90_error").get<double>()) <= 0.03;
    };
    bool era_ok = same(block.at("all"), era->accuracy_pooled());
    for (const auto& d : block.at("by_device")) era_ok = era_ok && same(d, era->accuracy_on(d.at("device").get<std::string>()));
    // A device recorded that no run covers any longer is stale too.
    era_ok = era_ok && era->accuracy.size() == block.at("by_device").size() + 1;
    if (!era_ok) {
      fmt::print("accuracy of {}@{} differs from data/engines/{}.json; record (with a \"measured\" line):\n{}\n", engine,
                 era->from_version, profile.id, block.dump(2));
      ok = false;
    }
  }
  return ok;
}

/// The runs whose TPOT is a decode step of the whole batch: aggregated, one attention rank, no expert
/// parallelism, at most kLowLoadClients clients with prompts of at most kLowLoadPromptTokens, so that
/// another request's prefill adds little to a step (a 1,024-token prompt every 128 steps at 8
/// clients of 1,024 generated tokens: under 2% on the rows' devices).
constexpr uint64_t kLowLoadClients = 8;
constexpr uint64_t kLowLoadPromptTokens = 1024;

bool low_load(const Row& r) {
  return r.mode == "agg" && r.load.concurrency <= kLowLoadClients && r.load.prompt_tokens <= kLowLoadPromptTokens &&
         r.scenario.dp_attention == 1 && r.scenario.ep == 1;
}

/// --estimate: `estimate` at batch = clients on each low-load run, its decode time per token
/// against the measured TPOT, by engine and device; returns the median error over all of them.
double estimate_tables(const Catalog& catalog, const std::vector<Row>& rows, bool print_rows) {
  std::map<std::string, std::vector<double>> groups;
  for (const Row& r : rows) {
    if (!low_load(r)) continue;
    ScenarioRequest req = r.scenario;
    req.batch = std::to_string(r.load.concurrency);
    req.prompt_tokens = static_cast<int64_t>(r.load.prompt_tokens);
    req.gen_tokens = static_cast<int64_t>(r.load.gen_tokens);
    const Analysis a = analyze(prepare_scenario(catalog, req).scenario);
    const double e = err(a.decode.time_s, r.tpot_s);  // decode.time_s: one step of the batch
    if (print_rows)
      fmt::print("{} {} {} {} {} {} c{} {}/{} tp{}: {:.2f} vs {:.2f} ms\n", r.raw.at("id"), r.engine, r.raw.at("backend_version"), r.device,
                 r.raw.at("model"), req.quant, r.load.concurrency, r.load.prompt_tokens, r.load.gen_tokens, req.tp, 1e3 * a.decode.time_s,
                 1e3 * r.tpot_s);
    groups[r.engine + " | " + r.device].push_back(e);
    groups[r.engine + " | all"].push_back(e);
    groups["all | all"].push_back(e);
  }
  fmt::print("estimate (decode time per token) against the TPOT of aggregated runs at <= {} clients and <= {} prompt tokens\n",
             kLowLoadClients, kLowLoadPromptTokens);
  fmt::print("| engine | device | rows | TPOT median | TPOT p90 |\n|---|---|---:|---:|---:|\n");
  for (const auto& [key, v] : groups) fmt::print("| {} | {} | {:.1f}% | {:.1f}% |\n", key, v.size(), 100 * median(v), 100 * quantile(v, 0.9));
  return groups.contains("all | all") ? median(groups["all | all"]) : 0.0;
}

/// --fit [ENGINE]: each era of each engine refitted on every third of the rows its versions cover
/// (the fit's cost), aggregated and disaggregated, all devices; printed with the medians over all
/// of those rows, and the engine's medians over every row with the eras fitted.
void refit(const Catalog& catalog, std::vector<Row>& rows, const std::string& only) {
  std::set<std::string> engines;
  for (const Row& r : rows) engines.insert(r.engine);
  for (const auto& engine : engines) {
    if (!only.empty() && engine != only) continue;
    const EngineProfile& profile = catalog.resolve_engine(engine);
    std::vector<const Row*> engine_rows;
    for (const ServingEra& era : profile.serving.eras) {
      std::vector<Row*> mine, covered;
      for (Row& r : rows)
        if (r.engine == engine && r.prepared.era == &era) covered.push_back(&r);
      for (std::size_t k = 0; k < covered.size(); k += 3) mine.push_back(covered[k]);
      if (mine.empty()) continue;
      const ServingEra fitted = fit(mine, era, profile.allreduce_latency_s);
      print_era(engine + "@" + era.from_version, fitted, mine);
      std::vector<const Row*> era_rows;
      for (Row* r : covered) predict(*r, &fitted, false), era_rows.push_back(r), engine_rows.push_back(r);
      const Summary s = summarize(era_rows);
      fmt::print("{}@{} with the fitted era, its {} rows: TTFT median {:.1f}%, TPOT median {:.1f}%\n", engine, era.from_version, s.n,
                 100 * s.ttft_median, 100 * s.tpot_median);
    }
    const Summary s = summarize(engine_rows);
    fmt::print("{} with the fitted eras, all {} rows: TTFT median {:.1f}%, TPOT median {:.1f}%\n", engine, s.n, 100 * s.ttft_median,
               100 * s.tpot_median);
  }
}

/// --lodo: each engine fitted on its aggregated rows of one device, predicting the other's.
void leave_one_device_out(const Catalog& catalog, std::vector<Row>& rows) {
  std::set<std::string> engines;
  for (const Row& r : rows) engines.insert(r.engine);
  for (const auto& engine : engines) {
    const EngineProfile& profile = catalog.resolve_engine(engine);
    for (const auto& [train, test] : {std::pair{"h100-sxm", "b200"}, {"b200", "h100-sxm"}}) {
      std::vector<Row*> fit_rows, test_rows;
      for (Row& r : rows)
        if (r.engine == engine && r.mode == "agg") (r.device == train ? fit_rows : test_rows).push_back(&r);
      if (fit_rows.empty() || test_rows.empty()) continue;
      const ServingEra e = fit(fit_rows, *profile.serving.era_for(""), profile.allreduce_latency_s);
      std::vector<const Row*> held;
      for (Row* r : test_rows) predict(*r, &e, false), held.push_back(r);
      const Summary s = summarize(held);
      fmt::print("{} fit on {} ({} rows) -> {} ({} rows): TTFT median {:.1f}%, TPOT median {:.1f}%\n", engine, train, fit_rows.size(), test,
                 s.n, 100 * s.ttft_median, 100 * s.tpot_median);
    }
  }
}

/// Leave-one-model-out: for each engine and each model architecture it was measured on (DeepSeek-R1
/// and V3 are one), the era fitted on every third row of the engine's other models predicts all
/// of the held-out model's rows.
void leave_one_model_out(const Catalog& catalog, std::vector<Row>& rows) {
  std::set<std::string> engines;
  for (const Row& r : rows) engines.insert(r.engine);
  fmt::print("| engine | held-out model | rows | TTFT median | TPOT median |\n|---|---|---:|---:|---:|\n");
  for (const auto& engine : engines) {
    const EngineProfile& profile = catalog.resolve_engine(engine);
    const ServingEra start = *profile.serving.era_for("");
    std::set<std::string> models;
    for (const Row& r : rows)
      if (r.engine == engine) models.insert(r.prepared.base.scenario.model.id);
    std::vector<const Row*> pooled;
    for (const auto& model : models) {
      std::vector<Row*> fit_rows, test_rows;
      std::size_t k = 0;
      for (Row& r : rows) {
        if (r.engine != engine) continue;
        if (r.prepared.base.scenario.model.id == model)
          test_rows.push_back(&r);
        else if (k++ % 3 == 0)
          fit_rows.push_back(&r);
      }
      if (fit_rows.empty()) continue;
      const ServingEra e = fit(fit_rows, start, profile.allreduce_latency_s);
      std::vector<const Row*> held;
      for (Row* r : test_rows) predict(*r, &e, false), held.push_back(r), pooled.push_back(r);
      const Summary s = summarize(held);
      fmt::print("| {} | {} | {} | {:.1f}% | {:.1f}% |\n", engine, model, s.n, 100 * s.ttft_median, 100 * s.tpot_median);
    }
    const Summary all = summarize(pooled);
    fmt::print("| {} | every model held out in turn | {} | {:.1f}% | {:.1f}% |\n", engine, all.n, 100 * all.ttft_median,
               100 * all.tpot_median);
  }
}

/// One layout of the open-loop check.
struct OpenLoopCase {
  const char *hardware, *model, *quant, *engine;
  uint32_t tp, ep, dp_attention;
  uint64_t prompt, gen;
};

/// The open loop's default measurement (its warm start and windows) against the same rate measured
/// after a warm-up of 4,000 requests over 4,000 more: TPOT p50 and TTFT p90, and the iterations each
/// took. Not published data: the simulation's own steady state, which the default must reach.
/// Returns the median and the largest TPOT p50 error of the default against the long run.
std::pair<double, double> open_loop_check(const Catalog& catalog) {
  const OpenLoopCase cases[] = {
      {"h100-sxm", "llama-3.1-70b", "fp8", "vllm", 4, 1, 1, 1024, 256},
      {"h100-sxm", "llama-3.1-70b", "fp8", "tensorrt-llm", 4, 1, 1, 8192, 512},
      {"b200", "deepseek-v3", "fp8", "sglang", 8, 1, 1, 1024, 1024},
      {"b200", "deepseek-v3", "nvfp4", "sglang", 1, 8, 8, 1024, 1024},
      {"h100-sxm", "llama-3.1-8b", "", "sglang", 1, 1, 1, 512, 2048},
      {"h100-sxm", "gpt-oss-120b", "", "vllm", 1, 1, 1, 2048, 1024},
  };
  fmt::print("| layout | share of ceiling | TPOT p50 default / long | TTFT p90 default / long | iterations default / long |\n");
  fmt::print("|---|---:|---:|---:|---:|\n");
  std::vector<double> tpot_errors;
  for (const OpenLoopCase& c : cases) {
    ServeRequest r;
    r.scenario.hardware = c.hardware;
    r.scenario.model.preset = c.model;
    r.scenario.quant = c.quant;
    r.scenario.engine = c.engine;
    r.aggregated.layout.tp = c.tp;
    r.aggregated.layout.ep = c.ep;
    r.aggregated.layout.dp_attention = c.dp_attention;
    r.load.prompt_tokens = c.prompt;
    r.load.gen_tokens = c.gen;
    r.load.concurrency = 256;
    const PreparedServing p = prepare_serving(catalog, r);
    const double ceiling = simulate_serving(p.setup, r.load).requests_per_s;
    for (double share : {0.6, 0.9}) {
      ServingLoad load = r.load;
      load.concurrency = 0;
      load.rate_per_s = share * ceiling;
      const ServingResult fast = simulate_serving(p.setup, load);
      load.warmup_requests = 4000;
      load.requests = 4000;
      const ServingResult slow = simulate_serving(p.setup, load);
      tpot_errors.push_back(err(fast.tpot_s.p50, slow.tpot_s.p50));
      fmt::print("| {} {} {} {} tp {} ep {} dp {} {}+{} | {:.0f}% | {:.2f} / {:.2f} ms | {:.0f} / {:.0f} ms | {} / {} |\n", c.model,
                 *c.quant ? c.quant : "default", c.engine, c.hardware, c.tp, c.ep, c.dp_attention, c.prompt, c.gen, 100 * share,
                 1e3 * fast.tpot_s.p50, 1e3 * slow.tpot_s.p50, 1e3 * fast.ttft_s.p90, 1e3 * slow.ttft_s.p90, fast.iterations,
                 slow.iterations);
    }
  }
  const double mid = median(tpot_errors), largest = *std::max_element(tpot_errors.begin(), tpot_errors.end());
  fmt::print("TPOT p50, default against long: median {:.1f}%, largest {:.1f}%\n", 100 * mid, 100 * largest);
  return {mid, largest};
}

/// --open-loop [--check]: the table, and with --check the gate of bench/serving_baseline.json.
int open_loop_gate(const Catalog& catalog, const std::string& root, bool check) {
  const auto [mid, largest] = open_loop_check(catalog);
  if (!check) return 0;
  const auto baseline = nlohmann::json::parse(std::ifstream(root + "/bench/serving_baseline.json"));
  const bool ok =
      mid <= baseline.at("open_loop_tpot_median_max").get<double>() && largest <= baseline.at("open_loop_tpot_max").get<double>();
  fmt::print("gate: open loop TPOT p50 median {:.1f}%, largest {:.1f}%: {}\n", 100 * mid, 100 * largest, ok ? "ok" : "REGRESSED");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string root = OPTADVISOR_SOURCE_DIR;
    const Catalog catalog = Catalog::load({});
    // --steady: every row as a steady state after a warm-up cycle (the protocol assumption off).
    const bool all_steady = argc > 1 && std::string(argv[argc - 1]) == "--steady";
    if (all_steady) --argc;
    Loaded loaded = load_rows(catalog, root + "/bench/data/serving.csv", all_steady);
    std::vector<Row>& rows = loaded.rows;
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "--lomo") {
      leave_one_model_out(catalog, rows);
      return 0;
    }
    if (mode == "--fit") {
      refit(catalog, rows, argc > 2 ? argv[2] : "");
      return 0;
    }
    if (mode == "--lodo") {
      leave_one_device_out(catalog, rows);
      return 0;
    }
    if (mode == "--open-loop") return open_loop_gate(catalog, root, argc > 2 && std::string(argv[2]) == "--check");
    if (mode == "--estimate" || mode == "--estimate-rows") {
      estimate_tables(catalog, rows, mode == "--estimate-rows");
      return 0;
    }
    for (Row& r : rows) predict(r, nullptr, false);
    if (mode == "--accuracy") {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& [era, block] : era_accuracy(rows)) {
        for (const Row& r : rows)
          if (r.prepared.era == era) {
            list.push_back({{"engine", r.engine}, {"era", era->from_version}, {"accuracy", block}});
            break;
          }
      }
      fmt::print("{}\n", list.dump(2));
      return 0;
    }
    if (mode == "--rows") {
      for (const Row& r : rows)
        fmt::print("{} {} {} {} {} {} c{} {}/{} tp{} dp{} ep{}: TTFT {:.1f} vs {:.1f} ms, TPOT {:.2f} vs {:.2f} ms\n", r.raw.at("id"),
                   r.engine, r.raw.at("backend_version"), r.device, r.raw.at("model"), r.raw.at("precision"), r.load.concurrency,
                   r.load.prompt_tokens, r.load.gen_tokens, r.raw.at("tp"), r.raw.at("attention_dp"), r.raw.at("moe_ep"),
                   1e3 * r.pred_ttft_s, 1e3 * r.ttft_s, 1e3 * r.pred_tpot_s, 1e3 * r.tpot_s);
      return 0;
    }
    fmt::print("{} of {} rows mapped\n", rows.size(), loaded.total);
    for (const auto& [why, n] : loaded.unmapped) fmt::print("  not mapped ({} rows): {}\n", n, why);
    print_tables(rows);
    if (mode == "--check") {
      const auto baseline = nlohmann::json::parse(std::ifstream(root + "/bench/serving_baseline.json"));
      std::vector<const Row*> all;
      for (const Row& r : rows) all.push_back(&r);
      const Summary s = summarize(all);
      bool ok = s.n >= baseline.at("min_rows").get<std::size_t>();
      ok = ok && s.ttft_median <= baseline.at("ttft_median_max").get<double>();
      ok = ok && s.tpot_median <= baseline.at("tpot_median_max").get<double>();
      const double estimate_median = estimate_tables(catalog, rows, false);
      ok = ok && estimate_median <= baseline.at("estimate_low_load_tpot_median_max").get<double>();
      const bool recorded = accuracy_recorded(catalog, rows);
      fmt::print("gate: {} rows, TTFT median {:.1f}%, TPOT median {:.1f}%; estimate at low load {:.1f}%: {}{}\n", s.n, 100 * s.ttft_median,
                 100 * s.tpot_median, 100 * estimate_median, ok ? "ok" : "REGRESSED",
                 recorded ? "" : "; the eras' recorded accuracy is stale");
      return ok && recorded ? 0 : 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "serving_accuracy: " << e.what() << "\n";
    return 1;
  }
}
