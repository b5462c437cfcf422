// SPDX-License-Identifier: MIT
// `optadvisor estimate` and `optadvisor fit`: the same scenario options, the
// full analysis or just the memory verdict (exit 3 when it does not fit).
#include <fmt/format.h>

#include "common.hpp"
#include "optadvisor/analysis.hpp"

namespace optadvisor::cli {
namespace {

struct EstimateOptions {
  ScenarioRequest request;
  std::string flash_attention;  ///< "", "on", "off"
  std::string host_bandwidth;   ///< bytes/s, "60e9" or "60GB/s"
  FormatOption format;
};

void add_scenario_options(CLI::App* cmd, EstimateOptions& o) {
  auto& r = o.request;
  cmd->add_option("--hw", r.hardware, "Device id or name (optadvisor hw list)")->required();
  add_model_options(cmd, r.model);
  cmd->add_option("--quant,-q", r.quant, "Weight format (default: the engine's)");
  cmd->add_option("--engine,-e", r.engine, "Engine, optionally with a backend: vllm, llama.cpp:metal (default: per device class)");
  cmd->add_option("--batch,-b", r.batch, "Concurrent sequences, or 'max' for as many as fit")->capture_default_str();
  cmd->add_option("--prompt,-p", r.prompt_tokens, "Prompt tokens per sequence")->capture_default_str();
  cmd->add_option("--gen,-n", r.gen_tokens, "Generated tokens per sequence")->capture_default_str();
  cmd->add_option("--context,-c", r.context_tokens, "KV reservation per sequence (default prompt + gen)");
  cmd->add_option("--ubatch", r.ubatch_tokens, "Prompt tokens per forward pass (llama.cpp -ub; default: the engine's)");
  cmd->add_option("--kv-dtype", r.kv_dtype, "KV-cache element type: f16, bf16, fp8, q8_0, q4_0");
  cmd->add_option("--gpus", r.gpus, "GPU count (default tp x pp)");
  cmd->add_option("--tp", r.tp, "Tensor-parallel degree")->capture_default_str();
  cmd->add_option("--pp", r.pp, "Pipeline / layer-split degree")->capture_default_str();
  cmd->add_option("--flash-attention", o.flash_attention, "on or off (default: the engine's)")->check(CLI::IsMember({"on", "off"}));
  cmd->add_option("--host-bandwidth", o.host_bandwidth, "Host memory bandwidth in bytes/s for offloaded layers (e.g. 60e9)");
  o.format.attach(cmd);
}

ScenarioRequest finish(const EstimateOptions& o) {
  ScenarioRequest r = o.request;
  if (!o.flash_attention.empty()) r.flash_attention = o.flash_attention == "on";
  if (!o.host_bandwidth.empty()) {
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(o.host_bandwidth, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != o.host_bandwidth.size() || !(v > 0) || v > 1e14)
      throw bad_input(fmt::format("--host-bandwidth '{}' is not a bandwidth in bytes/s", o.host_bandwidth), "e.g. 60e9 for 60 GB/s");
    r.host_bandwidth_bytes_per_s = v;
  }
  return r;
}

}  // namespace

void register_estimate(CLI::App& app, const GlobalOptions& global) {
  auto est = std::make_shared<EstimateOptions>();
  auto* estimate = app.add_subcommand("estimate", "Memory, time to first token, decode speed and throughput, with what binds each");
  add_scenario_options(estimate, *est);
  estimate->callback([est, &global] {
    const Catalog catalog = load_catalog(global);
    const PreparedScenario prepared = prepare_scenario(catalog, finish(*est));
    const Analysis analysis = analyze(prepared.scenario);
    fmt::print("{}", render_estimate(prepared, analysis, est->format.get(), stdout_style(global)));
  });

  auto fit_options = std::make_shared<EstimateOptions>();
  auto* fit = app.add_subcommand("fit", "Does it fit? Memory breakdown, headroom, largest batch and context (exit 3 if not)");
  add_scenario_options(fit, *fit_options);
  fit->callback([fit_options, &global] {
    const Catalog catalog = load_catalog(global);
    const PreparedScenario prepared = prepare_scenario(catalog, finish(*fit_options));
    const Analysis analysis = analyze(prepared.scenario);
    fmt::print("{}", render_fit(prepared, analysis, fit_options->format.get(), stdout_style(global)));
    if (!analysis.memory.fits) throw Error(ExitCode::kCheckFailed, "does not fit", "see the breakdown above; try a smaller --quant, --context or --batch");
  });
}

}  // namespace optadvisor::cli
