// SPDX-License-Identifier: MIT
// Effects benchmark: every measured technique effect of bench/data/effects.csv
// that the model can express (bench/data/effects_scenarios.csv maps each to a
// baseline scenario and the changed one), the predicted ratio changed/baseline
// of the row's metric against the measured ratio. The changed scenario is the
// advisor's own rule transform where a rule exists (rule=ID), so the benchmark
// measures what the advisor computes. Error of a row: exp(|ln(pred/meas)|) - 1.
//
//   optadvisor_effects [--data CSV] [--check BASELINE] [--markdown] [-v]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_common.hpp"
#include "csv.hpp"
#include "training_rows.hpp"
#include "optadvisor/advisor/rules.hpp"
#include "optadvisor/advisor/transforms.hpp"
#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/analysis/training.hpp"
#include "optadvisor/catalog/catalog.hpp"

using namespace optadvisor;
using optadvisor::bench::CsvRow;
using optadvisor::bench::quantile;

namespace {

using Options = std::map<std::string, std::string>;

/// "key=value key=value" (values without spaces).
Options parse_options(const std::string& text) {
  Options o;
  std::istringstream in(text);
  std::string item;
  while (in >> item) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) throw std::runtime_error("option without '=': " + item);
    o[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return o;
}

std::string get(const Options& o, const std::string& key, const std::string& fallback = "") {
  auto it = o.find(key);
  return it == o.end() ? fallback : it->second;
}

std::optional<bool> on_off(const Options& o, const std::string& key) {
  const std::string v = get(o, key);
  if (v == "on") return true;
  if (v == "off") return false;
  return std::nullopt;
}

ScenarioRequest inference_request(const Options& o) {
  ScenarioRequest r;
  r.hardware = get(o, "hw");
  r.model.preset = get(o, "model");
  r.quant = get(o, "quant");
  r.engine = get(o, "engine");
  r.batch = get(o, "batch", "1");
  r.prompt_tokens = std::stoll(get(o, "prompt", "128"));
  r.gen_tokens = std::stoll(get(o, "gen", "128"));
  r.context_tokens = std::stoll(get(o, "context", "0"));
  r.kv_dtype = get(o, "kv");
  r.tp = std::stoll(get(o, "tp", "1"));
  r.pp = std::stoll(get(o, "pp", "1"));
  r.gpus = std::stoll(get(o, "gpus", "0"));
  r.ubatch_tokens = std::stoll(get(o, "ubatch", "0"));
  if (o.count("ncmoe")) r.n_cpu_moe = std::stoll(o.at("ncmoe"));
  r.flash_attention = on_off(o, "fa");
  r.graphs = on_off(o, "graphs");
  return r;
}

/// A rule's parameters with every "@id" replaced by the assumption's value.
nlohmann::json resolved(const nlohmann::json& p, const RuleBook& book) {
  if (p.is_string()) {
    const std::string s = p.get<std::string>();
    if (!s.empty() && s[0] == '@') return book.assumptions().at(s.substr(1)).value;
    return p;
  }
  if (p.is_object() || p.is_array()) {
    nlohmann::json out = p;
    for (auto it = out.begin(); it != out.end(); ++it) *it = resolved(*it, book);
    return out;
  }
  return p;
}

double inference_metric(const std::string& metric, const Analysis& a) {
  if (metric == "tpot") return a.decode.time_s;
  if (metric == "prefill_tps") return a.prefill.tokens_per_s;
  if (metric == "decode_tps") return a.decode.tokens_per_s_per_sequence;
  if (metric == "throughput") return a.has_throughput ? a.output_tokens_per_s : a.decode.tokens_per_s;
  if (metric == "latency") return a.request_latency_s;
  if (metric == "compute_buffer") return a.memory.activation_bytes;
  if (metric == "kv_per_token") return a.memory.kv_bytes_per_token;
  throw std::runtime_error("unknown inference metric " + metric);
}

double training_metric(const std::string& metric, const TrainingAnalysis& a) {
  if (metric == "tps_per_gpu") return a.tokens_per_s_per_gpu;
  if (metric == "step_time") return a.time.step_time_s;
  if (metric == "model_states") return a.memory.model_state_bytes();
  if (metric == "activation_per_layer") return a.memory.activation_bytes_per_layer;
  if (metric == "memory") return a.memory.total_bytes;
  throw std::runtime_error("unknown training metric " + metric);
}

struct Context {
  const Catalog& catalog;
  const RuleBook& book;
  std::map<std::string, CsvRow> training_rows;
};

/// Applies a rule's transform steps to an inference request, each step on the result of the one before.
ScenarioRequest apply_rule(const Context& cx, const Rule& rule, ScenarioRequest r, std::vector<std::string>& notes) {
  for (const auto& step : rule.transform) {
    const PreparedScenario p = prepare_scenario(cx.catalog, r);
    const Analysis a = analyze(p.scenario);
    TransformStep s = step;
    s.params = resolved(step.params, cx.book);
    TransformResult t = apply_transform(s, TransformInput{cx.catalog, r, p, a});
    if (!t.request) throw std::runtime_error(fmt::format("rule {} does not apply: {}", rule.id, t.not_applicable));
    notes.insert(notes.end(), t.notes.begin(), t.notes.end());
    r = *t.request;
  }
  return r;
}

double predict_inference(const Context& cx, const std::string& metric, const Options& base, const Options& opt,
                         std::vector<std::string>& notes) {
  Options merged = base;
  for (const auto& [k, v] : opt)
    if (k != "rule") merged[k] = v;
  const ScenarioRequest before = inference_request(base);
  ScenarioRequest after = inference_request(merged);
  if (opt.count("rule")) after = apply_rule(cx, cx.book.resolve(opt.at("rule")), after, notes);
  const double b = inference_metric(metric, analyze(prepare_scenario(cx.catalog, before).scenario));
  const double a = inference_metric(metric, analyze(prepare_scenario(cx.catalog, after).scenario));
  return a / b;
}

/// A training row of training_runs.csv with some of its columns changed.
CsvRow training_row(const Context& cx, const Options& o) {
  auto it = cx.training_rows.find(get(o, "row"));
  if (it == cx.training_rows.end()) throw std::runtime_error("no training row " + get(o, "row"));
  CsvRow row = it->second;
  for (const auto& [k, v] : o)
    if (k != "row" && k != "rule") row[k] = v;
  return row;
}

double predict_training(const Context& cx, const std::string& metric, const Options& base, const Options& opt,
                        std::vector<std::string>& notes) {
  Options merged = base;
  for (const auto& [k, v] : opt) merged[k] = v;
  const CsvRow before_row = training_row(cx, base);
  const CsvRow after_row = training_row(cx, merged);
  const PreparedTraining before = bench::prepare_row(cx.catalog, before_row);
  const TrainingAnalysis ba = analyze_training(before.scenario);
  TrainingRequest request = bench::request_from(after_row);
  if (opt.count("rule")) {
    const Rule& rule = cx.book.resolve(opt.at("rule"));
    for (const auto& step : rule.transform) {
      const PreparedTraining p = bench::prepare_request(cx.catalog, after_row, request);
      const TrainingAnalysis a = analyze_training(p.scenario);
      TransformStep s = step;
      s.params = resolved(step.params, cx.book);
      const ScenarioRequest none;
      const PreparedScenario none_prepared;
      const Analysis none_analysis;
      TransformResult t = apply_transform(s, TransformInput{cx.catalog, none, none_prepared, none_analysis, &request, &p, &a});
      if (!t.training_request) throw std::runtime_error(fmt::format("rule {} does not apply: {}", rule.id, t.not_applicable));
      notes.insert(notes.end(), t.notes.begin(), t.notes.end());
      request = *t.training_request;
    }
  }
  const TrainingAnalysis aa = analyze_training(bench::prepare_request(cx.catalog, after_row, request).scenario);
  return training_metric(metric, aa) / training_metric(metric, ba);
}

struct Result {
  std::string id, family, metric, note;
  double predicted = 0, measured = 0, error = 0;
  std::vector<std::string> notes;
};

double ratio_error(double predicted, double measured) { return std::exp(std::fabs(std::log(predicted / measured))) - 1; }

struct Stats {
  std::size_t n = 0;
  double median = NAN, p90 = NAN;
};

Stats stats(const std::vector<const Result*>& rs) {
  std::vector<double> e;
  for (const auto* r : rs) e.push_back(r->error);
  return {e.size(), quantile(e, 0.5), quantile(e, 0.9)};
}

/// The command line.
struct Args {
  std::string data = std::string(OPTADVISOR_SOURCE_DIR) + "/bench/data/effects_scenarios.csv";
  std::string check_path;
  bool markdown = false, verbose = false;
};

/// The rows of `data` evaluated, and the effects it leaves unexpressed with the reason.
struct Evaluated {
  std::vector<Result> results;
  std::vector<std::string> skipped;
};

/// Every row of `data` predicted; false (with the row and the reason on stderr) when a row is not of
/// effects.csv or cannot be predicted.
bool evaluate(const Context& cx, const std::map<std::string, CsvRow>& effects, const std::string& data, Evaluated& out) {
  for (const auto& row : bench::read_csv(data)) {
    const std::string id = row.at("id");
    if (!effects.count(id)) {
      fmt::print(stderr, "{}: not a row of effects.csv\n", id);
      return false;
    }
    if (row.at("expressed") != "yes") {
      out.skipped.push_back(fmt::format("{} ({}): {}", id, effects.at(id).at("technique"), row.at("note")));
      continue;
    }
    Result r;
    r.id = id;
    r.family = row.at("family");
    r.metric = row.at("metric");
    r.note = row.at("note");
    r.measured = std::stod(row.at("measured_opt")) / std::stod(row.at("measured_base"));
    try {
      const Options base = parse_options(row.at("base")), opt = parse_options(row.at("opt"));
      r.predicted = row.at("kind") == "training" ? predict_training(cx, r.metric, base, opt, r.notes)
                                                 : predict_inference(cx, r.metric, base, opt, r.notes);
    } catch (const std::exception& e) {
      fmt::print(stderr, "{}: {}\n", id, e.what());
      return false;
    }
    r.error = ratio_error(r.predicted, r.measured);
    out.results.push_back(std::move(r));
  }
  return true;
}

using ByFamily = std::map<std::string, std::vector<const Result*>>;

void print_markdown(const std::vector<Result>& results, const std::map<std::string, CsvRow>& effects, const ByFamily& by_family,
                    const Stats& total) {
  fmt::print("| row | family | technique | metric | measured | predicted | error |\n|---|---|---|---|---:|---:|---:|\n");
  for (const auto& r : results)
    fmt::print("| {} | {} | {} | {} | {:.3f} | {:.3f} | {:.1f}% |\n", r.id, r.family, effects.at(r.id).at("technique"), r.metric,
               r.measured, r.predicted, 100 * r.error);
  fmt::print("\n| family | rows | median | p90 |\n|---|---:|---:|---:|\n");
  for (const auto& [f, rs] : by_family) {
    const Stats s = stats(rs);
    fmt::print("| {} | {} | {:.1f}% | {:.1f}% |\n", f, s.n, 100 * s.median, 100 * s.p90);
  }
  fmt::print("| all | {} | {:.1f}% | {:.1f}% |\n", total.n, 100 * total.median, 100 * total.p90);
}

void print_text(const Evaluated& ev, const ByFamily& by_family, const std::vector<const Result*>& all, std::size_t rows_total,
                bool verbose) {
  const Stats total = stats(all);
  fmt::print("Technique effects: predicted vs measured ratio (changed / baseline), error = exp(|ln(pred/meas)|) - 1\n\n");
  fmt::print("  {:<5} {:<22} {:<14} {:>9} {:>9} {:>7}\n", "row", "family", "metric", "measured", "predicted", "error");
  for (const auto& r : ev.results) {
    fmt::print("  {:<5} {:<22} {:<14} {:>9.3f} {:>9.3f} {:>6.1f}%\n", r.id, r.family, r.metric, r.measured, r.predicted, 100 * r.error);
    if (verbose)
      for (const auto& n : r.notes) fmt::print("          {}\n", n);
  }
  fmt::print("\n  {:<22} {:>4} {:>8} {:>8}\n", "family", "rows", "median", "p90");
  for (const auto& [f, rs] : by_family) {
    const Stats s = stats(rs);
    fmt::print("  {:<22} {:>4} {:>7.1f}% {:>7.1f}%\n", f, s.n, 100 * s.median, 100 * s.p90);
  }
  fmt::print("  {:<22} {:>4} {:>7.1f}% {:>7.1f}%   ({} of {} rows of effects.csv expressed)\n", "all", total.n, 100 * total.median,
             100 * total.p90, total.n, rows_total);
  std::vector<const Result*> worst = all;
  std::sort(worst.begin(), worst.end(), [](const Result* a, const Result* b) { return a->error > b->error; });
  fmt::print("\nWorst rows:\n");
  for (std::size_t i = 0; i < std::min<std::size_t>(worst.size(), 8); ++i)
    fmt::print("  {} {:.1f}%: {}\n", worst[i]->id, 100 * worst[i]->error, worst[i]->note);
  if (verbose) {
    fmt::print("\nNot expressed ({}):\n", ev.skipped.size());
    for (const auto& s : ev.skipped) fmt::print("  {}\n", s);
  }
}

/// The exit status of --check: 0 when each family's median is within the baseline's, 1 when one is not, 2 without a baseline.
int check_baseline(const std::string& check_path, const Stats& total, const ByFamily& by_family) {
  std::ifstream in(check_path);
  if (!in) {
    fmt::print(stderr, "cannot read {}\n", check_path);
    return 2;
  }
  const nlohmann::json baseline = nlohmann::json::parse(in);
  const double slack = baseline.value("slack", 0.01);
  int failures = 0;
  auto gate = [&](const std::string& what, const Stats& s, const nlohmann::json& want) {
    if (s.n < want.at("n").get<std::size_t>()) {
      fmt::print("FAIL {}: {} rows expressed, the baseline has {}\n", what, s.n, want.at("n").get<std::size_t>());
      ++failures;
    }
    if (s.median > want.at("median").get<double>() + slack) {
      fmt::print("FAIL {}: median {:.1f}% > baseline {:.1f}% + {:.0f} points\n", what, 100 * s.median,
                 100 * want.at("median").get<double>(), 100 * slack);
      ++failures;
    }
  };
  gate("all", total, baseline.at("all"));
  for (const auto& [f, want] : baseline.at("families").items())
    if (by_family.count(f))
      gate(f, stats(by_family.at(f)), want);
    else
      fmt::print("FAIL {}: no rows\n", f), ++failures;
  if (failures) return 1;
  fmt::print("\ncheck: medians within {:.0f} points of {}\n", 100 * slack, check_path);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = std::string(OPTADVISOR_SOURCE_DIR) + "/bench/data/";
  Args o;
  if (!bench::parse_args(argc, argv, {{"--markdown", &o.markdown}, {"-v", &o.verbose}}, {{"--data", &o.data}, {"--check", &o.check_path}},
                         "usage: optadvisor_effects [--data CSV] [--check BASELINE] [--markdown] [-v]"))
    return 2;
  const Catalog catalog = Catalog::load({});
  const RuleBook book = RuleBook::load(catalog);
  Context cx{catalog, book, {}};
  for (auto& row : bench::read_csv(dir + "training_runs.csv")) cx.training_rows[row.at("id")] = row;
  std::map<std::string, CsvRow> effects;
  for (auto& row : bench::read_csv(dir + "effects.csv")) effects[row.at("id")] = row;

  Evaluated ev;
  if (!evaluate(cx, effects, o.data, ev)) return 1;
  ByFamily by_family;
  std::vector<const Result*> all;
  for (const auto& r : ev.results) by_family[r.family].push_back(&r), all.push_back(&r);
  const Stats total = stats(all);

  if (o.markdown) {
    print_markdown(ev.results, effects, by_family, total);
    return 0;
  }
  print_text(ev, by_family, all, effects.size(), o.verbose);
  if (!o.check_path.empty()) return check_baseline(o.check_path, total, by_family);
  return 0;
}
