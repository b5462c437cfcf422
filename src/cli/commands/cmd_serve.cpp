// SPDX-License-Identifier: MIT
// `optadvisor serve`: serving under load. A closed loop of --concurrency
// clients or an open-loop --rate, on one aggregated layout or disaggregated
// prefill and decode pools; --sweep runs a range of loads.
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "cli/common.hpp"
#include "cli/detect_tools.hpp"
#include "cli/length_options.hpp"
#include "cli/scenario_options.hpp"
#include "optadvisor/advisor/speculation.hpp"
#include "optadvisor/analysis/serving_json.hpp"
#include "optadvisor/base/version.hpp"
#include "optadvisor/render/html/report_html.hpp"
#include "optadvisor/render/report_serve.hpp"

namespace optadvisor::cli {
namespace {

struct ServeOptions {
  ServeRequest request;
  std::string engine;  ///< E or E@VERSION
  uint64_t concurrency = 0;
  double rate = 0;
  uint64_t prompt = 1024, gen = 1024;
  uint64_t requests = 0, warmup = 0;
  CLI::Option* warmup_option = nullptr;
  bool sweep = false;
  std::string speculative;  ///< a method of the rule book's speculative-* rules ("" = off)
  uint32_t draft_tokens = 0;
  double acceptance_rate = 0;
  CLI::Option* draft_option = nullptr;
  CLI::Option* acceptance_option = nullptr;
  FormatOption format;
  RequireOption require;
  std::vector<CLI::Option*> aggregated_only, disaggregated_only;
};

void add_pool_options(CLI::App* cmd, ServePoolRequest& p, const std::string& prefix, const std::string& what,
                      std::vector<CLI::Option*>& group) {
  if (!prefix.empty()) group.push_back(cmd->add_option("--" + prefix + "workers", p.workers, what + " workers")->capture_default_str());
  group.push_back(cmd->add_option("--" + prefix + "tp", p.layout.tp, what + " tensor-parallel degree")->capture_default_str());
  if (prefix.empty()) group.push_back(cmd->add_option("--pp", p.layout.pp, "Pipeline-parallel degree")->capture_default_str());
  group.push_back(cmd->add_option("--" + prefix + "ep", p.layout.ep, what + " expert-parallel degree (MoE)")->capture_default_str());
  group.push_back(cmd->add_option("--" + prefix + "dp-attention", p.layout.dp_attention, what + " data-parallel attention ranks (MoE)")
                      ->capture_default_str());
  group.push_back(cmd->add_option("--" + prefix + "max-batch", p.max_batch,
                                  what + " running sequences per attention rank (default: the engine's max_num_seqs / max_batch_size)"));
  group.push_back(cmd->add_option("--" + prefix + "max-batched-tokens", p.max_batched_tokens,
                                  what + " tokens per iteration of an attention rank, prompt chunks and decode tokens together (vLLM "
                                         "--max-num-batched-tokens, SGLang --chunked-prefill-size, TensorRT-LLM max_num_tokens; "
                                         "default: the engine's)"));
}

/// The loads of --sweep: concurrency 1, 2, 4, ... up to C (and C), or 1/8 to 1 of the rate.
std::vector<ServeRequest> sweep_points(const ServeRequest& base) {
  std::vector<ServeRequest> out;
  if (base.load.concurrency) {
    for (uint64_t c = 1; c < base.load.concurrency; c *= 2) {
      ServeRequest r = base;
      r.load.concurrency = c;
      out.push_back(r);
    }
    out.push_back(base);
    return out;
  }
  for (double f : {0.125, 0.25, 0.5, 0.75, 1.0}) {
    ServeRequest r = base;
    r.load.rate_per_s = base.load.rate_per_s * f;
    out.push_back(r);
  }
  return out;
}

std::string layout_label(const ServeRequest& r) {
  if (r.disaggregated) return "disaggregated: prefill " + pool_text(r.prefill, false) + ", decode " + pool_text(r.decode, false);
  return "aggregated " + pool_text(r.aggregated, false);
}

std::string load_label(const ServeRequest& r) {
  return r.load.concurrency ? fmt::format("{}", r.load.concurrency) : fmt::format("{:.3g}/s", r.load.rate_per_s);
}

/// The sweep as a series of the chart.
ServingSeries series_of(const ServeRequest& request, const std::vector<ServeRequest>& points, const std::vector<ServingResult>& results) {
  ServingSeries s;
  s.label = layout_label(request);
  for (const auto& p : points) s.loads.push_back(load_label(p));
  s.points = results;
  s.knee = serving_knee(results, request.slo_ttft_s > 0 || request.slo_tpot_s > 0);
  return s;
}

/// The layout the chart sets beside the user's: twice the tensor parallelism
/// (aggregated), or one aggregated worker of the decode layout (disaggregated).
std::optional<ServeRequest> second_layout(const ServeRequest& r) {
  ServeRequest alt = r;
  if (r.disaggregated) {
    alt.disaggregated = false;
    alt.aggregated = r.decode;
  } else {
    alt.aggregated.layout.tp *= 2;
  }
  return alt;
}

ServeRequest finish(const ServeOptions& o, const Catalog& catalog) {
  ServeRequest r = o.request;
  r.scenario.hardware = resolve_hw_auto(r.scenario.hardware, catalog, &r.scenario.hardware_detected);
  std::tie(r.scenario.engine, r.engine_version) = split_engine_version(o.engine);
  r.load.concurrency = o.concurrency;
  r.load.rate_per_s = o.rate;
  r.load.prompt_tokens = o.prompt;
  r.load.gen_tokens = o.gen;
  r.load.requests = o.requests;
  if (o.warmup_option->count()) r.load.warmup_requests = o.warmup;
  const uint64_t asked = o.requests + (o.warmup_option->count() ? o.warmup : 0);
  if (asked * o.gen > kMaxServeMeasuredTokens)
    throw bad_input(fmt::format("--requests/--warmup: {} requests x --gen {} is {} generated tokens to simulate, above the bound of {}",
                                asked, o.gen, asked * o.gen, kMaxServeMeasuredTokens),
                    "simulate fewer requests; a few cycles of the clients reach the steady state");
  for (const CLI::Option* opt : r.disaggregated ? o.aggregated_only : o.disaggregated_only) {
    if (opt->count() == 0) continue;
    throw bad_input(fmt::format("--{} applies to {} serving", opt->get_lnames().front(), r.disaggregated ? "aggregated" : "disaggregated"),
                    r.disaggregated ? "give each pool its layout: --prefill-tp, --decode-tp, ..." : "add --disaggregated");
  }
  if (r.disaggregated) {
    bool prefill = false, decode = false;
    for (const CLI::Option* opt : o.disaggregated_only) {
      const std::string name = opt->get_lnames().front();
      if (opt->count() && name.rfind("prefill-", 0) == 0) prefill = true;
      if (opt->count() && name.rfind("decode-", 0) == 0) decode = true;
    }
    if (!prefill || !decode)
      throw bad_input(fmt::format("--disaggregated needs both pools; {} missing", !prefill ? "the prefill pool is" : "the decode pool is"),
                      "give --prefill-workers N --prefill-tp T and --decode-workers M --decode-tp T");
  }
  return r;
}

/// Speculative decoding as --speculative asks (choose_serving_speculation), or none.
std::optional<SpeculationChoice> speculation_for(const ServeOptions& o, const Catalog& catalog, const ServeRequest& r) {
  if (o.speculative.empty()) {
    for (const CLI::Option* opt : {o.draft_option, o.acceptance_option})
      if (opt->count()) throw bad_input(fmt::format("--{} sets up --speculative", opt->get_lnames().front()), "add --speculative METHOD");
    return std::nullopt;
  }
  if (o.acceptance_option->count() && !(o.acceptance_rate >= 0.01 && o.acceptance_rate <= 0.99))  // CLI11's range lets NaN through
    throw bad_input(fmt::format("--acceptance-rate {} is out of range", o.acceptance_rate), "use 0.01 to 0.99");
  return choose_serving_speculation(catalog, RuleBook::load(catalog), r, o.speculative,
                                    o.draft_option->count() ? std::optional<uint32_t>(o.draft_tokens) : std::nullopt,
                                    o.acceptance_option->count() ? std::optional<double>(o.acceptance_rate) : std::nullopt);
}

/// Every option of `serve`, bound to the fields of `o`.
void add_serve_options(CLI::App* cmd, ServeOptions& o) {
  auto& s = o.request.scenario;
  cmd->add_option("--hw", s.hardware, "Device id or name (optadvisor hw list)")->required();
  add_device_options(cmd, s);
  add_engine_memory_option(cmd, s);
  add_host_option(cmd, s);
  add_model_options(cmd, s.model);
  cmd->add_option("--quant,-q", s.quant, "Weight format (default: the engine's)");
  cmd->add_option("--engine,-e", o.engine, "vllm, sglang or tensorrt-llm, optionally @VERSION (vllm@0.19.0); default: the device's");
  cmd->add_option("--kv-dtype", s.kv_dtype, "KV-cache dtype (default: f16/bf16)");
  add_pool_options(cmd, o.request.aggregated, "", "Aggregated worker:", o.aggregated_only);
  auto* conc = cmd->add_option("--concurrency", o.concurrency, "Closed loop: clients that each send a request when the last completes")
                   ->check(CLI::Range(uint64_t{1}, kMaxServeConcurrency));
  auto* rate = cmd->add_option("--rate", o.rate, "Open loop: Poisson arrivals, requests per second")->check(CLI::Range(1e-6, 1e6));
  conc->excludes(rate);
  cmd->add_option("--prompt", o.prompt, "Prompt tokens per request")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 22))
      ->capture_default_str();
  cmd->add_option("--gen", o.gen, "Generated tokens per request")->check(CLI::Range(uint64_t{1}, uint64_t{1} << 22))->capture_default_str();
  add_length_spread_options(cmd, o.request.load.prompt_spread, o.request.load.gen_spread);
  cmd->add_option("--requests", o.requests,
                  "Requests to measure, as aiperf --request-count (default: two cycles of the clients, at least 64; 1000 where lengths vary)")
      ->check(CLI::Range(uint64_t{1}, kMaxServeRequests));
  o.warmup_option = cmd->add_option("--warmup", o.warmup,
                                    "Requests before the measured ones, as aiperf --warmup-request-count; 0 counts the first burst "
                                    "(default: one cycle of the clients)")
                        ->check(CLI::Range(uint64_t{0}, kMaxServeRequests));
  cmd->add_option("--prefix-hit", o.request.load.prefix_hit, "Share of each prompt already in the prefix cache (0-1)")
      ->check(CLI::Range(0.0, 0.99));
  cmd->add_flag("--disaggregated", o.request.disaggregated, "Prefill and decode on separate worker pools");
  add_pool_options(cmd, o.request.prefill, "prefill-", "Prefill", o.disaggregated_only);
  add_pool_options(cmd, o.request.decode, "decode-", "Decode", o.disaggregated_only);
  cmd->add_option("--slo-ttft", o.request.slo_ttft_s, "Time-to-first-token SLO, seconds (goodput)")->check(CLI::Range(1e-6, 3600.0));
  cmd->add_option("--slo-tpot", o.request.slo_tpot_s, "Time-per-output-token SLO, seconds (goodput)")->check(CLI::Range(1e-6, 60.0));
  cmd->add_option("--speculative", o.speculative,
                  "Speculative decoding on the decoding workers: eagle, mtp, medusa, draft-model or ngram (the advisor's drafters)");
  o.draft_option = cmd->add_option("--draft-tokens", o.draft_tokens,
                                   "Drafted tokens per step (default: the count that decodes fastest at the load's batch)")
                       ->check(CLI::Range(1u, 16u));
  o.acceptance_option = cmd->add_option("--acceptance-rate", o.acceptance_rate,
                                        "Probability a drafted token is accepted when the ones before it were (default: the method's)")
                            ->check(CLI::Range(0.01, 0.99));
  cmd->add_flag("--sweep", o.sweep, "Run concurrency 1, 2, 4, ... up to --concurrency (or 1/8 to 1 of --rate) and print the table");
  o.format.attach(cmd, true, true);
  o.require.attach(cmd);
}

/// The HTML report of a sweep: the user's layout and, where it runs, the second layout over its own sweep.
void print_serve_html(const Catalog& catalog, const ServeRequest& request, const PreparedServing& prepared,
                      const std::vector<ServeRequest>& points, const std::vector<ServingResult>& results) {
  std::vector<ServingSeries> series = {series_of(request, points, results)};
  if (auto alt = second_layout(request)) {
    try {
      const PreparedServing other = prepare_serving(catalog, *alt);
      std::vector<ServeRequest> alt_points = sweep_points(*alt);
      std::vector<ServingResult> alt_results;
      for (const auto& p : alt_points) alt_results.push_back(simulate_serving(other.setup, p.load));
      series.push_back(series_of(*alt, alt_points, alt_results));
    } catch (const Error&) {
      // The second layout does not run for this model or device: the chart shows one line.
    }
  }
  const Scenario& sc = prepared.base.scenario;
  const std::string title =
      fmt::format("{} ({}) on {} with {}", sc.model.name, sc.weights.quant_id, sc.hardware->name, sc.engine.engine->name);
  std::vector<std::pair<std::string, std::string>> facts = {
      {"layout", layout_label(request)},
      {"load", fmt::format("{} + {} tokens per request, {}", length_text(request.load.prompt_tokens, request.load.prompt_spread),
                           length_text(request.load.gen_tokens, request.load.gen_spread),
                           request.load.concurrency ? "closed loop" : "Poisson arrivals")},
      {"KV cache", sc.workload.kv_dtype},
      {"calibration era", prepared.era ? sc.engine.engine->serving.era_versions(*prepared.era) : std::string{"-"}}};
  if (const Speculation& spec = sc.workload.speculation; spec.enabled())
    facts.emplace_back("speculative decoding", fmt::format("{}, {} drafted tokens a step, {:.2f} accepted on average", spec.method,
                                                           spec.draft_tokens, spec.accepted_tokens));
  fmt::print("{}", render_serve_html(title, facts, series, request.slo_ttft_s, request.slo_tpot_s, prepared.notes,
                                     HtmlReportInfo{program_version(), data_version(), {}}));
}

}  // namespace

void register_serve(CLI::App& app, const GlobalOptions& global) {
  auto o = std::make_shared<ServeOptions>();
  auto* cmd =
      app.add_subcommand("serve", "Serving under load: TTFT, TPOT and end-to-end latency percentiles, throughput and goodput under SLOs");
  add_serve_options(cmd, *o);
  cmd->callback([o, &global] {
    const std::vector<Requirement> requirements = o->require.parse();
    if (o->sweep && !requirements.empty())
      throw bad_input("--require checks one load point, not a --sweep", "drop --sweep to gate on a point");
    const Catalog& catalog = load_catalog(global);
    ServeRequest request = finish(*o, catalog);
    const std::optional<SpeculationChoice> speculation = speculation_for(*o, catalog, request);
    if (speculation) request.scenario.speculation = speculation->speculation;
    PreparedServing prepared = prepare_serving(catalog, request);
    if (speculation) prepared.notes.insert(prepared.notes.end(), speculation->notes.begin(), speculation->notes.end());
    const std::vector<ServeRequest> points = o->sweep ? sweep_points(request) : std::vector<ServeRequest>{request};
    std::vector<ServingResult> results;
    for (const auto& p : points) results.push_back(simulate_serving(prepared.setup, p.load));
    const OutputFormat format = o->format.get();
    if (format == OutputFormat::kHtml) {
      if (!o->sweep) throw bad_input("--format html draws a load sweep", "add --sweep");
      print_serve_html(catalog, request, prepared, points, results);
      return;
    }
    auto document = [&] { return serve_json(prepared, request, points, results, o->sweep); };
    const std::string text = format == OutputFormat::kJson
                                 ? document().dump(2) + "\n"
                                 : render_serve(prepared, request, points, results, o->sweep, format, stdout_style(global));
    if (!requirements.empty()) {
      const nlohmann::json doc = document();
      RequireOption::check_paths(requirements, doc);
      fmt::print("{}", text);
      RequireOption::enforce(requirements, doc);
      return;
    }
    fmt::print("{}", text);
    if (!o->sweep && !results.front().fits)
      throw Error(ExitCode::kCheckFailed, "does not fit",
                  "the weights leave no KV pool for one request; add GPUs (--tp) or a smaller --quant");
  });
}

}  // namespace optadvisor::cli
