// SPDX-License-Identifier: MIT
// Accuracy benchmark: runs every published measurement in
// bench/data/speed_scenarios.csv that the model can express and reports the
// absolute percentage error per engine and device class (median, p90, worst
// rows). --fit refits the engine efficiencies on the data, reports
// leave-one-device-out errors, and with --write stores them in data/engines/.
// --fit-with CSV adds that file's dense-model rows to the fit of the backends
// the main data holds (the stored values take bench/data/moe_scenarios.csv).
//
// --fit-moe (with --data bench/data/moe_scenarios.csv) fits only the grouped
// expert-GEMM parameter per backend on the MoE models' prefill rows, holding
// the dense efficiencies fixed; a backend fitted on another file of bench/data
// (its entry's `data`: Metal on metal_moe_sweeps.csv) is refitted only with it.
//
// --record-accuracy stores, per backend, device class and kind of model, the errors of the main
// file's dense models and the MoE file's MoE models in data/engines/ (what estimate prints); --check
// also fails when those records no longer match the rows.
//
//   optadvisor_accuracy [--data bench/data/speed_scenarios.csv] [--fit [--fit-with CSV] | --fit-moe [--write]]
//                       [--record-accuracy] [--check bench/accuracy_baseline.json] [--json out.json]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_common.hpp"
#include "csv.hpp"
#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/analysis/prepare.hpp"

using namespace optadvisor;
using optadvisor::bench::CsvRow;
using optadvisor::bench::quantile;

namespace {

enum class Kind { kPrefill, kDecode, kThroughput };

struct Case {
  CsvRow row;
  Kind kind = Kind::kDecode;
  std::string metric;
  double measured = 0;
  PreparedScenario ps;
  std::string engine_key;  ///< "llama.cpp:metal"
  std::string device;      ///< hardware id
  std::string device_class;
  bool uncertain = false;
};

double predict(const Case& c) {
  const Analysis a = analyze(c.ps.scenario);
  if (c.metric == "prefill_tokens_per_s") return a.prefill.tokens_per_s;
  if (c.metric == "ttft_s") return a.prefill.time_s;
  if (c.metric == "decode_tokens_per_s") return a.decode.tokens_per_s_per_sequence;
  if (c.metric == "itl_s") return a.decode.time_s;
  if (c.metric == "output_tokens_per_s") return a.has_throughput ? a.output_tokens_per_s : a.decode.tokens_per_s;
  // One request timed end to end (llmfit bench): its completion tokens over prompt time plus their decode.
  if (c.metric == "request_tokens_per_s") {
    const double gen = static_cast<double>(c.ps.scenario.workload.gen_tokens);
    return gen / (a.prefill.time_s + gen * a.decode.time_s);
  }
  return 0;
}

double ape(const Case& c) {
  const double p = predict(c);
  return std::fabs(p - c.measured) / c.measured;
}

double abs_log_error(const Case& c) {
  const double p = std::max(predict(c), 1e-12);
  return std::fabs(std::log(p / c.measured));
}

int64_t to_int(const std::string& s, int64_t fallback) {
  if (s.empty()) return fallback;
  try {
    return std::stoll(s);
  } catch (const std::exception&) {
    return fallback;
  }
}

/// Every engine profile as a mutable copy, so fitting can change efficiencies.
struct Engines {
  std::map<std::string, EngineProfile> by_id;
};

void point_at(Case& c, Engines& engines) {
  EngineChoice& choice = c.ps.scenario.engine;
  auto& e = engines.by_id.at(choice.engine->id);
  auto& backend = e.backends.at(choice.backend->name);
  if (choice.build) choice.build = &backend.earlier_builds.at(static_cast<std::size_t>(choice.build - choice.backend->earlier_builds.data()));
  choice.engine = &e;
  choice.backend = &backend;
}

struct Summary {
  std::size_t n = 0;
  double median = NAN, p90 = NAN;
};

Summary summarize(const std::vector<const Case*>& cases) {
  std::vector<double> errors;
  for (const auto* c : cases) errors.push_back(ape(*c));
  return {errors.size(), quantile(errors, 0.5), quantile(errors, 0.9)};
}

/// Coordinate descent on a sum of absolute log errors over a grid per parameter.
struct Param {
  double* value;
  double lo, hi, step;
  std::string name;
};

double objective(const std::vector<const Case*>& cases) {
  double sum = 0;
  for (const auto* c : cases) sum += abs_log_error(*c);
  return sum;
}

void fit(std::vector<Param>& params, const std::vector<const Case*>& cases) {
  if (cases.empty()) return;
  for (int round = 0; round < 3; ++round) {
    for (auto& p : params) {
      double best = *p.value, best_cost = objective(cases);
      for (double v = p.lo; v <= p.hi + 1e-12; v += p.step) {
        *p.value = v;
        const double cost = objective(cases);
        if (cost < best_cost - 1e-12) best_cost = cost, best = v;
      }
      *p.value = best;
    }
  }
}

/// The prefill efficiency that governs a case: its earlier build's quantized path, else the
/// backend's (BackendProfile::prefill_path), with its name in the fit report.
std::pair<double*, std::string> prefill_parameter(BackendProfile& b, const Case& c) {
  if (c.ps.scenario.weights.quantized) {
    // point_at made the case's build an entry of b.earlier_builds: take it as mutable from there.
    const BackendBuild* chosen = c.ps.scenario.engine.build;
    if (chosen && chosen->quantized_prefill_compute_efficiency > 0) {
      BackendBuild& build = b.earlier_builds.at(static_cast<std::size_t>(chosen - b.earlier_builds.data()));
      return {&build.quantized_prefill_compute_efficiency, fmt::format("quantized_prefill_compute_efficiency_before_b{}", build.until_build)};
    }
  }
  return {&b.prefill_compute_efficiency, "prefill_compute_efficiency"};
}

/// The parameters of one engine backend that its rows constrain.
std::vector<Param> backend_params(BackendProfile& b, const std::vector<const Case*>& rows) {
  std::vector<Param> p;
  if (std::any_of(rows.begin(), rows.end(), [](const Case* c) { return c->kind != Kind::kPrefill; })) {
    p.push_back({&b.decode_bandwidth_efficiency, 0.2, 1.0, 0.01, "decode_bandwidth_efficiency"});
    p.push_back({&b.layer_overhead_s, 0.0, 150e-6, 1e-6, "layer_overhead_s"});
  }
  for (const auto* c : rows) {
    if (c->kind == Kind::kDecode) continue;
    const std::pair<double*, std::string> parameter = prefill_parameter(b, *c);
    double* value = parameter.first;
    if (std::none_of(p.begin(), p.end(), [value](const Param& q) { return q.value == value; }))
      p.push_back({value, 0.03, 1.0, 0.01, parameter.second});
  }
  return p;
}

/// The key of backend `backend_name` of engine `engine_id` in the fit report: the engine id alone for its default backend.
std::string backend_key(const std::string& engine_id, const std::string& backend_name) {
  return backend_name == "default" ? engine_id : engine_id + ":" + backend_name;
}

/// Calls `write(name, backend, its fit-report entry)` for each backend of engine `id` that the fit report
/// holds; returns whether there was one.
template <typename Write>
bool for_each_fitted_backend(const std::string& id, const EngineProfile& engine, const nlohmann::json& fit_report, Write write) {
  bool changed = false;
  for (const auto& [bname, b] : engine.backends) {
    const std::string key = backend_key(id, bname);
    if (!fit_report.contains(key)) continue;
    changed = true;
    write(bname, b, fit_report.at(key));
  }
  return changed;
}

/// The shipped data file of engine `id`.
std::string engine_file(const std::string& id) { return std::string(OPTADVISOR_SOURCE_DIR) + "/data/engines/" + id + ".json"; }

/// Rewrites each engine file in data/engines whose document `edit` changes (edit returns whether it did).
template <typename Edit>
void rewrite_engine_files(const Engines& engines, Edit edit) {
  for (const auto& [id, engine] : engines.by_id) {
    const std::string path = engine_file(id);
    std::ifstream in(path);
    if (!in) continue;
    nlohmann::ordered_json doc = nlohmann::ordered_json::parse(in);
    if (!edit(id, engine, doc)) continue;
    std::ofstream out(path);
    out << doc.dump(2) << "\n";
    fmt::print("wrote {}\n", path);
  }
}

/// The command line.
struct Options {
  std::string data = std::string(OPTADVISOR_SOURCE_DIR) + "/bench/data/speed_scenarios.csv";
  std::string fit_with;  ///< --fit-with: a second file whose dense-model rows join the fit
  std::string check_path, json_path;
  bool do_fit = false, do_fit_moe = false, do_write = false, do_record = false, verbose = false;
};

/// The scenario request a CSV row describes.
ScenarioRequest request_of(const CsvRow& row, const std::string& metric) {
  ScenarioRequest r;
  r.hardware = row.at("hw");
  r.model.preset = row.at("model");
  r.quant = row.at("quant");
  r.engine = row.at("engine");
  // A throughput row without a batch is a max-throughput run: as many sequences as fit.
  r.batch = row.at("batch").empty() ? (metric == "output_tokens_per_s" ? "max" : "1") : row.at("batch");
  r.prompt_tokens = to_int(row.at("prompt"), 0);
  r.gen_tokens = to_int(row.at("gen"), 0);
  r.ubatch_tokens = to_int(row.count("ubatch") ? row.at("ubatch") : "", 0);
  if (row.count("kv_dtype") && !row.at("kv_dtype").empty()) r.kv_dtype = row.at("kv_dtype");
  r.tp = to_int(row.at("tp"), 1);
  r.pp = to_int(row.at("pp"), 1);
  r.gpus = to_int(row.at("gpus"), 0);
  // Expert offload (llama.cpp --n-cpu-moe N / --cpu-moe) on the named host CPU, where the CSV has the columns.
  if (row.count("host")) r.host = row.at("host");
  if (row.count("cpu_moe") && row.at("cpu_moe") == "all") r.cpu_moe = true;
  if (row.count("cpu_moe") && !row.at("cpu_moe").empty() && row.at("cpu_moe") != "all") r.n_cpu_moe = to_int(row.at("cpu_moe"), 0);
  if (row.count("ngl") && !row.at("ngl").empty()) r.n_gpu_layers = to_int(row.at("ngl"), 0);
  if (row.at("flash_attn") == "on") r.flash_attention = true;
  if (row.at("flash_attn") == "off") r.flash_attention = false;
  // The memory size of a part sold in several (--memory), where the row names it.
  if (row.count("memory") && !row.at("memory").empty()) r.memory = row.at("memory");
  // The weights' size llama-bench printed, where the file mixes tensor types its format's name does not say (--weights-size).
  if (row.count("weights_size") && !row.at("weights_size").empty()) r.weights_size = row.at("weights_size");
  // llama-bench style rows: decode-only rows without a length are tg128.
  if (metric == "decode_tokens_per_s" && r.gen_tokens == 0) r.gen_tokens = 128;
  return r;
}

/// Every mappable row of `data` the model can express; the others counted by reason in `skipped`.
std::vector<Case> build_cases(const Catalog& catalog, const std::string& data, std::map<std::string, int>& skipped) {
  std::vector<Case> cases;
  for (const auto& row : optadvisor::bench::read_csv(data)) {
    if (row.at("mappable") != "yes") continue;
    const std::string metric = row.at("metric");
    Case c;
    if (metric == "prefill_tokens_per_s" || metric == "ttft_s")
      c.kind = Kind::kPrefill;
    else if (metric == "decode_tokens_per_s" || metric == "itl_s" || metric == "request_tokens_per_s")
      c.kind = Kind::kDecode;
    else if (metric == "output_tokens_per_s")
      c.kind = Kind::kThroughput;
    else {
      ++skipped["metric " + metric + " is not modelled"];
      continue;
    }
    c.row = row;
    c.metric = metric;
    c.measured = std::stod(row.at("value"));
    c.uncertain = row.at("uncertain") == "yes";
    const ScenarioRequest r = request_of(row, metric);
    try {
      c.ps = prepare_scenario(catalog, r);
    } catch (const Error& e) {
      ++skipped[std::string("not expressible: ") + e.what()];
      continue;
    }
    c.engine_key = c.ps.scenario.engine.id();
    c.device = c.ps.scenario.hardware->id;
    c.device_class = std::string(to_string(c.ps.scenario.hardware->device_class));
    cases.push_back(std::move(c));
  }
  return cases;
}

std::vector<const Case*> select(const std::vector<Case>& cases, const std::function<bool(const Case&)>& keep) {
  std::vector<const Case*> out;
  for (const auto& c : cases)
    if (keep(c)) out.push_back(&c);
  return out;
}

/// The mutable backend a case's scenario points at.
BackendProfile& backend_of(Engines& engines, const Case& c) {
  auto& engine = engines.by_id.at(c.ps.scenario.engine.engine->id);
  return engine.backends.at(c.ps.scenario.engine.backend->name);
}

// --- fit -----------------------------------------------------------------

/// The efficiencies of one engine backend (`key`) fitted on its rows, with leave-one-device-out errors.
void fit_backend(const std::vector<Case>& cases, Engines& engines, const std::string& key, nlohmann::json& fit_report) {
  // Rows marked uncertain are left out, unless a phase has no other evidence.
  auto rows = select(cases, [&](const Case& c) { return c.engine_key == key && !c.uncertain; });
  for (Kind kind : {Kind::kPrefill, Kind::kDecode, Kind::kThroughput}) {
    const bool covered = std::any_of(rows.begin(), rows.end(), [&](const Case* c) { return c->kind == kind; });
    if (!covered)
      for (const auto& c : cases)
        if (c.engine_key == key && c.kind == kind) rows.push_back(&c);
  }
  if (rows.empty()) return;
  auto& backend = backend_of(engines, *rows.front());
  auto params = backend_params(backend, rows);
  // Leave one device out: fit without it, predict it.
  std::set<std::string> devices;
  for (const auto* c : rows) devices.insert(c->device);
  std::vector<double> lodo_prefill, lodo_decode;
  if (devices.size() > 2) {
    const BackendProfile saved = backend;
    for (const auto& held : devices) {
      std::vector<const Case*> train;
      for (const auto* c : rows)
        if (c->device != held) train.push_back(c);
      fit(params, train);
      for (const auto* c : rows)
        if (c->device == held) (c->kind == Kind::kPrefill ? lodo_prefill : lodo_decode).push_back(ape(*c));
      backend = saved;
    }
  }
  fit(params, rows);
  nlohmann::json values;
  for (const auto& p : params) values[p.name] = *p.value;
  std::vector<std::string> ids;
  nlohmann::json earlier_build_rows = nlohmann::json::object();
  for (const auto* c : rows) {
    ids.push_back(c->row.at("id"));
    if (const BackendBuild* build = c->ps.scenario.engine.build; build && c->kind != Kind::kDecode && c->ps.scenario.weights.quantized)
      earlier_build_rows[std::to_string(build->until_build)].push_back(c->row.at("id"));
  }
  fit_report[key] = {{"rows", rows.size()},
                     {"earlier_build_rows", earlier_build_rows},
                     {"devices", devices.size()},
                     {"values", values},
                     {"row_ids", ids},
                     {"lodo_prefill_median", quantile(lodo_prefill, 0.5)},
                     {"lodo_decode_median", quantile(lodo_decode, 0.5)}};
  fmt::print("fit {:<18} rows {:>3} devices {:>2}  {}  leave-one-device-out median APE: prefill {:.1f}% decode {:.1f}%\n", key, rows.size(),
             devices.size(), values.dump(), 100 * quantile(lodo_prefill, 0.5), 100 * quantile(lodo_decode, 0.5));
}

/// Dequantization costs differ by weight format: fit a decode and a prefill multiplier per
/// engine and format, relative to the engine's most common format. Prefill multipliers compare
/// only formats whose prefill runs on the same kernel path (prefill_parameter): a format alone on
/// its path has its path's efficiency, not a multiplier.
void fit_quant_efficiency(const std::vector<Case>& cases, Engines& engines, nlohmann::json& fit_report) {
  // (engine key, the phase's parameter) -> format -> rows
  std::map<std::pair<std::string, std::string>, std::map<std::string, std::vector<const Case*>>> groups;
  for (const auto& c : cases) {
    if (c.uncertain) continue;
    const std::string path = c.kind == Kind::kDecode ? "decode" : prefill_parameter(backend_of(engines, c), c).second;
    groups[{c.engine_key, path}][c.ps.scenario.weights.quant_id].push_back(&c);
  }
  for (auto& [key, quants] : groups) {
    const auto& [engine_key, path] = key;
    if (quants.size() < 2) continue;
    auto& backend = backend_of(engines, *quants.begin()->second.front());
    // The reference is the format with the most rows; where quantized weights have their own
    // kernels (quantized_compute_dtype) the efficiency refers to them, so a quantized format.
    const bool quantized_reference = !backend.quantized_compute_dtype.empty() && path != "decode";
    std::string reference;
    for (const auto& [q, rows] : quants) {
      if (quantized_reference && !rows.front()->ps.scenario.weights.quantized) continue;
      if (reference.empty() || rows.size() > quants[reference].size()) reference = q;
    }
    if (reference.empty()) continue;
    for (auto& [q, rows] : quants) {
      if (q == reference || rows.size() < 8) continue;
      auto& qe = backend.quant_efficiency[q];
      const bool decode = path == "decode";
      std::vector<Param> params = {decode ? Param{&qe.decode, 0.4, 1.3, 0.01, "decode"} : Param{&qe.prefill, 0.3, 2.0, 0.01, "prefill"}};
      fit(params, rows);
      fit_report["quant:" + engine_key + ":" + q][decode ? "decode" : "prefill"] = *params.front().value;
      fit_report["quant:" + engine_key + ":" + q]["relative_to"] = reference;
      fmt::print("fit {:<18} {:<8} rows {:>3}  {} x{:.2f} (relative to {} on {})\n", engine_key, q, rows.size(), params.front().name,
                 *params.front().value, reference, path);
    }
  }
}

/// Stores the fitted efficiencies and format multipliers in data/engines/.
void write_dense_fit(const Engines& engines, const nlohmann::json& fit_report) {
  rewrite_engine_files(engines, [&](const std::string& id, const EngineProfile& engine, nlohmann::ordered_json& doc) {
    bool changed =
        for_each_fitted_backend(id, engine, fit_report, [&](const std::string& bname, const BackendProfile& b, const nlohmann::json& r) {
          auto& jb = doc["backends"][bname];
          auto round_to = [](double v, double step) { return std::round(v / step) * step; };
          jb["decode_bandwidth_efficiency"] = round_to(b.decode_bandwidth_efficiency, 0.01);
          jb["prefill_compute_efficiency"] = round_to(b.prefill_compute_efficiency, 0.01);
          jb["layer_overhead_s"] = round_to(b.layer_overhead_s, 1e-7);
          for (std::size_t i = 0; i < b.earlier_builds.size(); ++i) {
            const BackendBuild& build = b.earlier_builds[i];
            auto& jbuild = jb["earlier_builds"][i];
            if (build.quantized_prefill_compute_efficiency > 0)
              jbuild["quantized_prefill_compute_efficiency"] = round_to(build.quantized_prefill_compute_efficiency, 0.01);
            const std::string until = std::to_string(build.until_build);
            if (r.contains("earlier_build_rows") && r.at("earlier_build_rows").contains(until))
              jbuild["calibrated_on"] = r.at("earlier_build_rows").at(until);
          }
          std::set<std::string> ids;
          for (const auto& rid : r.at("row_ids")) ids.insert(rid.get<std::string>());
          jb["calibrated_on"] = std::vector<std::string>(ids.begin(), ids.end());
        });
    for (const auto& [bname, b] : engine.backends) {
      const std::string key = backend_key(id, bname);
      for (const auto& [q, qe] : b.quant_efficiency) {
        if (!fit_report.contains("quant:" + key + ":" + q)) continue;
        auto round_to = [](double v) { return std::round(v * 100) / 100; };
        doc["backends"][bname]["quant_efficiency"][q] = {{"decode", round_to(qe.decode)}, {"prefill", round_to(qe.prefill)}};
        changed = true;
      }
    }
    return changed;
  });
}

/// The cases of a dense fit: `cases` and, from `fit_with` (when given), the rows of dense models on
/// backends that `cases` holds. The dense efficiencies and per-layer costs describe every model's
/// non-expert GEMMs and weight reads, so a dense model measured in the MoE data (on a device the
/// dense data lacks) is as much evidence for them as one in the dense data.
std::vector<Case> with_lent_rows(const std::vector<Case>& cases, const Catalog& catalog, const std::string& fit_with, Engines& engines) {
  std::vector<Case> out = cases;
  if (fit_with.empty()) return out;
  std::set<std::string> keys;
  for (const auto& c : cases) keys.insert(c.engine_key);
  std::map<std::string, int> skipped;
  for (auto& c : build_cases(catalog, fit_with, skipped)) {
    if (c.ps.scenario.model.num_experts > 0 || !keys.count(c.engine_key)) continue;
    point_at(c, engines);
    out.push_back(std::move(c));
  }
  return out;
}

/// --fit: every backend's efficiencies and the format multipliers; with --write stored in data/engines/.
void fit_dense(const std::vector<Case>& cases, Engines& engines, bool write, nlohmann::json& fit_report) {
  std::set<std::string> keys;
  for (const auto& c : cases) keys.insert(c.engine_key);
  for (const auto& key : keys) fit_backend(cases, engines, key, fit_report);
  fit_quant_efficiency(cases, engines, fit_report);
  if (write) write_dense_fit(engines, fit_report);
}

// --- fit the grouped expert GEMM (MoE prefill) ------------------------------

/// The MoE section's data, where a backend's grouped expert GEMM is fitted unless its entry names another file.
constexpr const char* kMoeData = "bench/data/moe_scenarios.csv";

/// `path` as the project names its data files: bench/data/NAME.
std::string data_file_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return "bench/data/" + (slash == std::string::npos ? path : path.substr(slash + 1));
}

bool moe_prefill(const Case& c) { return c.kind == Kind::kPrefill && c.ps.scenario.model.num_experts > 0; }

/// The MoE prefill rows' log error, less the median log error of dense models' prefill on the same device and backend.
struct MoeObjective {
  // The parameter describes the expert GEMMs relative to the dense ones: where the data holds
  // dense models' prefill on the same device and backend, their median log error is taken out
  // of the MoE rows' (a dense calibration error is not the experts' to absorb).
  std::map<std::pair<std::string, std::string>, std::vector<double>> dense_errors;

  explicit MoeObjective(const std::vector<Case>& cases) {
    for (const auto& c : cases)
      if (c.kind == Kind::kPrefill && c.ps.scenario.model.num_experts == 0 && !c.uncertain)
        dense_errors[{c.engine_key, c.device}].push_back(std::log(std::max(predict(c), 1e-12) / c.measured));
  }
  double dense_offset(const Case& c) const {
    auto it = dense_errors.find({c.engine_key, c.device});
    return it == dense_errors.end() ? 0.0 : quantile(it->second, 0.5);
  }
  double relative_error(const Case& c) const { return std::fabs(std::log(std::max(predict(c), 1e-12) / c.measured) - dense_offset(c)); }
  /// `half` on a grid of whole tokens; with `share` (not null) also the peak share, on a grid of 0.01.
  void fit_half(double& half, double* share, const std::vector<const Case*>& train) const {
    double best = half, best_share = share ? *share : 1.0, best_cost = INFINITY;
    for (double c = share ? 0.2 : 1.0; c <= 1.0 + 1e-9; c += 0.01) {
      if (share) *share = c;
      for (double v = 0; v <= 1000; v += 1) {
        half = v;
        double cost = 0;
        for (const auto* row : train) cost += relative_error(*row);
        if (cost < best_cost - 1e-12) best_cost = cost, best = v, best_share = c;
      }
    }
    half = best;
    if (share) *share = best_share;
  }
};

/// Backend `key`'s grouped_expert_gemm entry as stored in data/engines/ (an empty object when it has none).
nlohmann::json grouped_entry(const Engines& engines, const std::string& key) {
  for (const auto& [id, engine] : engines.by_id)
    for (const auto& [bname, b] : engine.backends) {
      if (backend_key(id, bname) != key) continue;
      std::ifstream in(engine_file(id));
      if (!in) return nlohmann::json::object();
      return nlohmann::json::parse(in).at("backends").at(bname).value("grouped_expert_gemm", nlohmann::json::object());
    }
  return nlohmann::json::object();
}

/// One set of grouped expert-GEMM terms fitted on `rows`, with leave-one-device-out errors; `half`
/// and `share` (null: not fitted) point at the terms the rows run at.
nlohmann::json fit_moe_terms(const MoeObjective& objective, const std::vector<const Case*>& rows, double& half, double* share) {
  std::set<std::string> devices;
  for (const auto* c : rows) devices.insert(c->device);
  std::vector<double> lodo;
  if (devices.size() > 1) {
    const double saved = half, saved_share = share ? *share : 1.0;
    for (const auto& held : devices) {
      std::vector<const Case*> train;
      for (const auto* c : rows)
        if (c->device != held) train.push_back(c);
      objective.fit_half(half, share, train);
      for (const auto* c : rows)
        if (c->device == held) lodo.push_back(ape(*c));
      half = saved;
      if (share) *share = saved_share;
    }
  }
  objective.fit_half(half, share, rows);
  std::vector<std::string> ids;
  for (const auto* c : rows) ids.push_back(c->row.at("id"));
  std::sort(ids.begin(), ids.end());
  return {{"rows", rows.size()},
          {"devices", devices.size()},
          {"half_tokens", half},
          {"peak_share", share ? nlohmann::json(*share) : nlohmann::json()},
          {"row_ids", ids},
          {"lodo_prefill_median", quantile(lodo, 0.5)},
          {"lodo_prefill_p90", quantile(lodo, 0.9)},
          {"lodo_rows", lodo.size()}};
}

void print_moe_fit(const std::string& label, const nlohmann::json& r) {
  const std::string share =
      r.at("peak_share").is_null() ? std::string() : fmt::format("  peak_share {:.2f}", r.at("peak_share").get<double>());
  // One device leaves nothing to hold out.
  const std::string lodo = r.at("lodo_rows").get<std::size_t>() == 0
                               ? std::string("- (one device)")
                               : fmt::format("median {:.1f}% p90 {:.1f}% ({} rows)", 100 * r.at("lodo_prefill_median").get<double>(),
                                             100 * r.at("lodo_prefill_p90").get<double>(), r.at("lodo_rows").get<std::size_t>());
  fmt::print("fit-moe {:<18} rows {:>3} devices {:>2}  half_tokens {:.0f}{}  leave-one-device-out prefill {}\n", label,
             r.at("rows").get<std::size_t>(), r.at("devices").get<std::size_t>(), r.at("half_tokens").get<double>(), share, lodo);
}

/// The grouped expert-GEMM parameters of one backend (`key`) fitted on its MoE prefill rows, with
/// leave-one-device-out errors: each format of grouped_expert_gemm.by_quant on its own rows, the
/// backend's terms on the rest.
void fit_moe_backend(const std::vector<Case>& cases, Engines& engines, const MoeObjective& objective, const std::string& key,
                     nlohmann::json& fit_report) {
  auto rows = select(cases, [&](const Case& c) { return c.engine_key == key && moe_prefill(c) && !c.uncertain; });
  if (rows.empty()) rows = select(cases, [&](const Case& c) { return c.engine_key == key && moe_prefill(c); });
  auto& backend = backend_of(engines, *rows.front());
  std::map<std::string, std::vector<const Case*>> by_quant;
  std::vector<const Case*> rest;
  for (const auto* c : rows) {
    const std::string& quant = c->ps.scenario.weights.quant_id;
    (expert_gemm_terms_in(backend, c->ps.scenario.engine.build, quant).format_own ? by_quant[quant] : rest).push_back(c);
  }
  // The peak share is fitted with half_tokens where the entry carries one (rows over a range of
  // tokens per expert tell the two apart; one ubatch size cannot).
  double* share = grouped_entry(engines, key).contains("peak_share") ? &backend.expert_gemm_peak_share : nullptr;
  nlohmann::json report = fit_moe_terms(objective, rest, backend.expert_gemm_half_tokens, share);
  print_moe_fit(key, report);
  report["by_quant"] = nlohmann::json::object();
  for (const auto& [quant, quant_rows] : by_quant) {
    auto& terms = backend.expert_gemm_by_quant.at(quant);
    report["by_quant"][quant] = fit_moe_terms(objective, quant_rows, terms.half_tokens, &terms.peak_share);
    print_moe_fit(key + " " + quant, report["by_quant"][quant]);
  }
  fit_report[key] = std::move(report);
}

/// Today as YYYY-MM-DD, for what --write and --record-accuracy store.
std::string today_iso() {
  const auto today = std::chrono::floor<std::chrono::days>(std::chrono::system_clock::now());
  const std::chrono::year_month_day ymd{today};
  return fmt::format("{:04}-{:02}-{:02}", static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()));
}

/// Stores the fitted grouped expert-GEMM parameters in data/engines/, dated today.
void write_moe_fit(const Engines& engines, const nlohmann::json& fit_report, const std::string& data_file) {
  const std::string date = today_iso();
  rewrite_engine_files(engines, [&](const std::string& id, const EngineProfile& engine, nlohmann::ordered_json& doc) {
    return for_each_fitted_backend(id, engine, fit_report, [&](const std::string& bname, const BackendProfile& b, const nlohmann::json& r) {
      auto& entry = doc["backends"][bname]["grouped_expert_gemm"];
      // A caveat outlives the refit (a value set by hand on purpose is never fitted: fit_moe).
      const nlohmann::ordered_json caveat = entry.is_object() && entry.contains("caveat") ? entry["caveat"] : nlohmann::ordered_json();
      nlohmann::ordered_json by_quant = entry.is_object() && entry.contains("by_quant") ? entry["by_quant"] : nlohmann::ordered_json();
      entry = {{"half_tokens", std::round(b.expert_gemm_half_tokens)}};
      if (!r.at("peak_share").is_null()) entry["peak_share"] = std::round(b.expert_gemm_peak_share * 100) / 100;
      entry["note"] = fmt::format(
          "fitted {} (optadvisor_accuracy --fit-moe) on {} published MoE prefill rows of {} device(s) in {} (each row names its source), "
          "holding the dense efficiencies fixed and taking out the median error of dense models' prefill on the same device and backend "
          "where the data has them",
          date, r.at("rows").get<std::size_t>(), r.at("devices").get<std::size_t>(), data_file);
      if (!caveat.is_null()) entry["caveat"] = caveat;
      if (data_file != kMoeData) entry["data"] = data_file;
      entry["calibrated_on"] = r.at("row_ids");
      // A format's own terms keep their why; the values and rows are the refit's.
      for (auto& q : by_quant) {
        const auto& fitted = r.at("by_quant").find(q.at("quant").get<std::string>());
        if (fitted == r.at("by_quant").end()) continue;
        q["half_tokens"] = std::round(fitted->at("half_tokens").get<double>());
        q["peak_share"] = std::round(fitted->at("peak_share").get<double>() * 100) / 100;
        q["calibrated_on"] = fitted->at("row_ids");
      }
      if (!by_quant.is_null()) entry["by_quant"] = by_quant;
    });
  });
}

/// Why backend `key`'s grouped expert GEMM in data/engines/ is not refitted on `data_file`: set by
/// hand on purpose (its note begins "not fitted"), or fitted on another file of bench/data (its
/// `data`, moe_scenarios.csv when absent); "" when it is refitted.
std::string kept_reason(const Engines& engines, const std::string& key, const std::string& data_file) {
  const nlohmann::json entry = grouped_entry(engines, key);
  std::string note = entry.value("note", "");
  if (note.starts_with("not fitted")) return note;
  const std::string fitted_on = entry.value("data", std::string(kMoeData));
  return fitted_on == data_file ? "" : "fitted on " + fitted_on + ", refitted only with that file";
}

/// --fit-moe: every backend's grouped expert-GEMM parameters, except those set by hand on purpose and
/// those fitted on another file of bench/data; with --write stored in data/engines/.
void fit_moe(const std::vector<Case>& cases, Engines& engines, bool write, const std::string& data_file, nlohmann::json& fit_report) {
  const MoeObjective objective(cases);
  for (const auto& [k, errors] : objective.dense_errors)
    fmt::print("dense prefill on {} {}: median log error {:+.2f} ({} rows)\n", k.first, k.second, quantile(errors, 0.5), errors.size());
  std::set<std::string> keys;
  for (const auto& c : cases)
    if (moe_prefill(c)) keys.insert(c.engine_key);
  for (const auto& key : keys) {
    if (const std::string why = kept_reason(engines, key, data_file); !why.empty()) {
      fmt::print("fit-moe {:<18} kept as set: {}\n", key, why);
      continue;
    }
    fit_moe_backend(cases, engines, objective, key, fit_report);
  }
  if (write) write_moe_fit(engines, fit_report, data_file);
}

// --- the errors data/engines records (what estimate prints) ----------------

/// The validation sets whose errors each backend records: the dense models of the main file and the
/// mixture-of-experts models of the MoE section's file. Held-out files are not recorded.
struct RecordedSet {
  const char* data;
  bool moe;
};
constexpr RecordedSet kRecordedSets[] = {{"bench/data/speed_scenarios.csv", false}, {kMoeData, true}};

/// (engine id, backend name) -> device class -> the entry data/engines records, for `data_file`'s
/// recorded set (empty when the file is not one).
using AccuracyEntries = std::map<std::pair<std::string, std::string>, std::map<std::string, nlohmann::ordered_json>>;
AccuracyEntries accuracy_entries(const std::vector<Case>& cases, const std::string& data_file) {
  AccuracyEntries out;
  for (const RecordedSet& set : kRecordedSets) {
    if (data_file != set.data) continue;
    std::map<std::tuple<std::string, std::string, std::string>, std::vector<const Case*>> groups;
    for (const auto& c : cases)
      if ((c.ps.scenario.model.num_experts > 0) == set.moe)
        groups[{c.ps.scenario.engine.engine->id, c.ps.scenario.engine.backend->name, c.device_class}].push_back(&c);
    for (const auto& [key, rows] : groups) {
      const auto& [engine, backend, cls] = key;
      nlohmann::ordered_json e = {{"data", set.data}, {"models", set.moe ? "moe" : "dense"}, {"device_class", cls}};
      for (const auto& [name, kind] : {std::pair{"prefill", Kind::kPrefill}, {"decode", Kind::kDecode}}) {
        std::vector<const Case*> of_kind;
        for (const Case* c : rows)
          if (c->kind == kind) of_kind.push_back(c);
        if (of_kind.empty()) continue;
        const Summary sum = summarize(of_kind);
        e[name] = {{"runs", sum.n}, {"median_error", std::round(sum.median * 1000) / 1000}, {"p90_error", std::round(sum.p90 * 1000) / 1000}};
      }
      if (e.contains("prefill") || e.contains("decode")) out[{engine, backend}][cls] = e;
    }
  }
  return out;
}

/// --record-accuracy: replaces each backend's entries for `data_file` in data/engines/ with `entries`.
void record_accuracy(const Engines& engines, const AccuracyEntries& entries, const std::string& data_file) {
  const std::string recorded = today_iso() + " by optadvisor_accuracy --record-accuracy";
  rewrite_engine_files(engines, [&](const std::string& id, const EngineProfile& engine, nlohmann::ordered_json& doc) {
    bool changed = false;
    for (const auto& [bname, b] : engine.backends) {
      auto& list = doc["backends"][bname]["accuracy"];
      nlohmann::ordered_json kept = nlohmann::ordered_json::array();
      if (list.is_array())
        for (const auto& e : list)
          if (e.at("data") != data_file) kept.push_back(e);
      const bool had = list.is_array() && kept.size() != list.size();
      const auto it = entries.find({id, bname});
      if (it != entries.end())
        for (const auto& [cls, entry] : it->second) {
          nlohmann::ordered_json e = entry;
          e["recorded"] = recorded;
          kept.push_back(std::move(e));
        }
      if (!had && it == entries.end()) {
        if (!list.is_array()) doc["backends"][bname].erase("accuracy");
        continue;
      }
      list = kept;
      changed = true;
    }
    return changed;
  });
}

/// Whether data/engines records for `data_file` exactly the groups the rows give now (runs exactly;
/// errors within a point for medians, three for 90th percentiles): estimate's accuracy line cannot
/// go stale. Prints what differs.
bool accuracy_recorded(const Catalog& catalog, const AccuracyEntries& entries, const std::string& data_file) {
  bool ok = true;
  auto near = [](const nlohmann::ordered_json& want, const EstimateAccuracy::Phase& have) {
    return have.runs == want.at("runs").get<uint64_t>() && std::fabs(have.median_error - want.at("median_error").get<double>()) <= 0.01 &&
           std::fabs(have.p90_error - want.at("p90_error").get<double>()) <= 0.03;
  };
  for (const auto& engine : catalog.engines())
    for (const auto& [bname, b] : engine.backends) {
      const auto it = entries.find({engine.id, bname});
      std::size_t recorded = 0;
      for (const auto& a : b.accuracy) recorded += a.data == data_file;
      const std::size_t wanted = it == entries.end() ? 0 : it->second.size();
      bool same = recorded == wanted;
      if (it != entries.end())
        for (const auto& [cls, e] : it->second) {
          const EstimateAccuracy* have = nullptr;
          for (const auto& a : b.accuracy)
            if (a.data == data_file && a.device_class == cls && a.moe == (e.at("models") == "moe")) have = &a;
          same = same && have && (e.contains("prefill") ? near(e.at("prefill"), have->prefill) : have->prefill.runs == 0) &&
                 (e.contains("decode") ? near(e.at("decode"), have->decode) : have->decode.runs == 0);
        }
      if (!same) {
        fmt::print(stderr, "the accuracy {}:{} records for {} is stale; run optadvisor_accuracy --data {} --record-accuracy\n", engine.id,
                   bname, data_file, data_file);
        ok = false;
      }
    }
  return ok;
}

// --- report --------------------------------------------------------------

nlohmann::json summary_json(const Summary& s) { return {{"n", s.n}, {"median", s.median}, {"p90", s.p90}}; }

/// The error table per engine and device class, then over all rows; returns the same as JSON.
nlohmann::json report_groups(const std::vector<Case>& cases) {
  std::set<std::pair<std::string, std::string>> groups;
  for (const auto& c : cases) groups.insert({c.engine_key, c.device_class});
  fmt::print("\n{:<18} {:<16} {:>11} {:>8} {:>8} {:>11} {:>8} {:>8} {:>11} {:>8}\n", "ENGINE", "CLASS", "PREFILL N", "MEDIAN", "P90",
             "DECODE N", "MEDIAN", "P90", "THRUPUT N", "MEDIAN");
  auto cell = [](const Summary& s) {
    return s.n ? fmt::format("{:>11} {:>7.1f}% {:>7.1f}%", s.n, 100 * s.median, 100 * s.p90)
               : fmt::format("{:>11} {:>8} {:>8}", 0, "-", "-");
  };
  auto row = [&](const std::string& engine, const std::string& cls, const std::function<bool(const Case&)>& in) {
    auto of_kind = [&](Kind kind) { return summarize(select(cases, [&](const Case& c) { return in(c) && c.kind == kind; })); };
    const Summary pre = of_kind(Kind::kPrefill), dec = of_kind(Kind::kDecode), thr = of_kind(Kind::kThroughput);
    fmt::print("{:<18} {:<16} {} {} {:>11} {:>7}\n", engine, cls, cell(pre), cell(dec), thr.n,
               thr.n ? fmt::format("{:.1f}%", 100 * thr.median) : "-");
    return nlohmann::json{{"prefill", summary_json(pre)}, {"decode", summary_json(dec)}, {"throughput", summary_json(thr)}};
  };
  nlohmann::json summary;
  for (const auto& [engine, cls] : groups)
    summary["groups"][engine + " / " + cls] =
        row(engine, cls, [&, e = engine, k = cls](const Case& c) { return c.engine_key == e && c.device_class == k; });
  summary["all"] = row("ALL", "", [](const Case&) { return true; });
  return summary;
}

/// Worst rows first (every row with -v, else 15), then what was skipped.
void report_rows(const std::vector<Case>& cases, const std::map<std::string, int>& skipped, bool verbose) {
  std::vector<const Case*> all = select(cases, [](const Case&) { return true; });
  std::sort(all.begin(), all.end(), [](const Case* a, const Case* b) { return ape(*a) > ape(*b); });
  fmt::print("\nworst rows (predicted vs measured):\n");
  for (std::size_t i = 0; i < all.size() && i < (verbose ? all.size() : 15); ++i) {
    const Case& c = *all[i];
    fmt::print("  {:<11} {:<16} {:<14} {:<8} {:<16} {:<22} {:>10.4g} vs {:>10.4g}  {:>+6.0f}%{}\n", c.row.at("id"), c.device,
               c.row.at("model"), c.row.at("quant"), c.engine_key, c.metric, predict(c), c.measured, 100 * (predict(c) / c.measured - 1),
               c.uncertain ? " (uncertain)" : "");
  }
  fmt::print("\n{} cases evaluated; skipped:\n", cases.size());
  for (const auto& [why, n] : skipped) fmt::print("  {:>4}  {}\n", n, why);
}

/// The exit status of --check: 0 when every median is within the baseline's, 1 when one regressed, 2 without a baseline.
int check_baseline(const nlohmann::json& summary, const std::string& check_path) {
  std::ifstream in(check_path);
  if (!in) {
    fmt::print(stderr, "cannot read baseline {}\n", check_path);
    return 2;
  }
  const auto baseline = nlohmann::json::parse(in);
  int failures = 0;
  for (const char* kind : {"prefill", "decode", "throughput"}) {
    if (!baseline.contains(kind) || !summary["all"][kind]["median"].is_number()) continue;
    const double now = summary["all"][kind]["median"].get<double>();
    const double then = baseline.at(kind).at("median").get<double>();
    const double slack = baseline.value("slack", 0.01);
    if (now > then + slack) {
      fmt::print(stderr, "accuracy regressed: {} median APE {:.1f}% > recorded {:.1f}% (+{:.1f} slack)\n", kind, 100 * now, 100 * then,
                 100 * slack);
      ++failures;
    }
  }
  if (failures) return 1;
  fmt::print("accuracy within the recorded baseline\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!optadvisor::bench::parse_args(
          argc, argv,
          {{"--fit", &o.do_fit}, {"--fit-moe", &o.do_fit_moe}, {"--write", &o.do_write}, {"--record-accuracy", &o.do_record}, {"-v", &o.verbose}},
          {{"--data", &o.data}, {"--fit-with", &o.fit_with}, {"--check", &o.check_path}, {"--json", &o.json_path}},
          "usage: optadvisor_accuracy [--data CSV] [--fit [--fit-with CSV] | --fit-moe [--write]] [--record-accuracy] [--check BASELINE] "
          "[--json OUT] [-v]"))
    return 2;
  const Catalog catalog = Catalog::load({});
  Engines engines;
  for (const auto& e : catalog.engines()) engines.by_id[e.id] = e;

  std::map<std::string, int> skipped;
  std::vector<Case> cases = build_cases(catalog, o.data, skipped);
  for (auto& c : cases) point_at(c, engines);

  nlohmann::json fit_report = nlohmann::json::object();
  if (o.do_fit) fit_dense(with_lent_rows(cases, catalog, o.fit_with, engines), engines, o.do_write, fit_report);
  if (o.do_fit_moe) fit_moe(cases, engines, o.do_write, data_file_name(o.data), fit_report);

  nlohmann::json summary = report_groups(cases);
  report_rows(cases, skipped, o.verbose);

  if (!o.json_path.empty()) {
    std::ofstream out(o.json_path);
    summary["fit"] = fit_report;
    out << summary.dump(2) << "\n";
  }
  const std::string data_file = data_file_name(o.data);
  const AccuracyEntries entries = accuracy_entries(cases, data_file);
  if (o.do_record) {
    if (o.do_fit || o.do_fit_moe) {
      fmt::print(stderr, "--record-accuracy records the errors of the shipped data: run it after a fit is written, not with it\n");
      return 2;
    }
    record_accuracy(engines, entries, data_file);
    return 0;
  }
  if (!o.check_path.empty()) {
    const int status = check_baseline(summary, o.check_path);
    return accuracy_recorded(catalog, entries, data_file) ? status : std::max(status, 1);
  }
  return 0;
}
