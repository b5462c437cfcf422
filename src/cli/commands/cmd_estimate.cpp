// SPDX-License-Identifier: MIT
// `optadvisor estimate` and `optadvisor fit`: the same scenario options, the
// full analysis or just the memory verdict (exit 3 when it does not fit).
// --goal inference (the default) models serving; --goal training models a
// training step and takes the training options.
#include <fmt/format.h>

#include "cli/common.hpp"
#include "cli/detect_tools.hpp"
#include "cli/scenario_options.hpp"
#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/render/html/report_html.hpp"
#include "optadvisor/render/report_training.hpp"
#include "optadvisor/analysis/training.hpp"
#include "optadvisor/base/version.hpp"

namespace optadvisor::cli {
namespace {

struct EstimateOptions {
  std::string goal = "inference";
  ScenarioRequest request;
  std::string flash_attention;  ///< "", "on", "off"
  std::string host_bandwidth;   ///< bytes/s, "60e9" or "60GB/s"
  FormatOption format;
  RequireOption require;
  // --goal training
  TrainingOptions training;
  std::vector<CLI::Option*> inference_only;
  std::vector<CLI::Option*> training_only;
};

void add_scenario_options(CLI::App* cmd, EstimateOptions& o, bool allow_html = false) {
  auto& r = o.request;
  cmd->add_option("--goal", o.goal, "inference (serving) or training (a training step)")
      ->check(CLI::IsMember({"inference", "training"}))
      ->capture_default_str();
  cmd->add_option("--hw", r.hardware, "Device id or name (optadvisor hw list)")->required();
  add_model_options(cmd, r.model);
  cmd->add_option("--quant,-q", r.quant, "Weight format (default: the engine's); training: the frozen 4-bit base of QLoRA");
  CLI::Option* weights_size = add_weights_size_option(cmd, r);
  cmd->add_option(
      "--engine,-e", r.engine,
      "Engine, optionally with a backend and a build: vllm, llama.cpp:metal, llama.cpp:cuda@b2850 (default: per device class, the newest "
      "build); training: pytorch, megatron, deepspeed");
  o.inference_only = add_workload_options(cmd, r, o.host_bandwidth);
  // --host serves both goals: inference offloads layers there, training its optimizer states and activations.
  std::erase_if(o.inference_only, [](const CLI::Option* opt) { return opt->check_lname("host"); });
  for (CLI::Option* opt : add_device_options(cmd, r)) o.inference_only.push_back(opt);
  o.inference_only.push_back(add_engine_memory_option(cmd, r));
  o.inference_only.push_back(weights_size);
  add_gpus_option(cmd, r.gpus, "GPU count (inference: default tp x pp; training: default tp x pp x cp)");
  cmd->add_option("--tp", r.tp, "Tensor-parallel degree")->capture_default_str();
  cmd->add_option("--pp", r.pp, "Pipeline / layer-split degree")->capture_default_str();
  for (CLI::Option* opt : add_expert_layout_options(cmd, r)) o.inference_only.push_back(opt->capture_default_str());
  o.inference_only.push_back(cmd->add_option("--replicas", r.replicas, "Copies of the tp x pp layout serving side by side, each on its own GPUs (serving throughput adds up)")->capture_default_str());
  cmd->add_option("--flash-attention", o.flash_attention, "on or off (default: the engine's; training: on)")
      ->check(CLI::IsMember({"on", "off"}));
  o.training_only = add_training_options(cmd, o.training);
  o.format.attach(cmd, true, allow_html);
  o.require.attach(cmd);
}

/// Prints a command's output, then checks --require against its JSON document
/// (the same document `--json` prints). A path that is not in the document is bad
/// input and stops before anything is printed.
template <typename Render, typename Document>
void print_and_enforce(const EstimateOptions& o, const std::vector<Requirement>& requirements, Render render, Document document,
                       const GlobalOptions& global) {
  const std::string output = render(o.format.get(), stdout_style(global));
  if (requirements.empty()) {
    fmt::print("{}", output);
    return;
  }
  const nlohmann::json doc = document();
  RequireOption::check_paths(requirements, doc);
  fmt::print("{}", output);
  RequireOption::enforce(requirements, doc);
}

ScenarioRequest finish(const EstimateOptions& o, const Catalog& catalog) {
  ScenarioRequest r = o.request;
  r.hardware = resolve_hw_auto(r.hardware, catalog, &r.hardware_detected);
  fill_detected_host(o.request.hardware, r, catalog);
  if (!o.flash_attention.empty()) r.flash_attention = o.flash_attention == "on";
  if (!o.host_bandwidth.empty()) r.host_bandwidth_bytes_per_s = parse_host_bandwidth(o.host_bandwidth);
  return r;
}

/// Options of the other goal are an error, not silently ignored.
void reject_other_goal(const EstimateOptions& o) {
  const bool training = o.goal == "training";
  for (const CLI::Option* opt : training ? o.inference_only : o.training_only) {
    if (opt->count() == 0) continue;
    const auto& longs = opt->get_lnames();
    const std::string name = longs.empty() ? opt->get_name() : "--" + longs.front();
    std::string hint = "add --goal training";
    if (training) {
      hint = "training takes --seq, --micro-batch, --global-batch, --precision, --recompute, --sharding";
      if (name == "--batch") hint = "training takes --micro-batch and --global-batch";
      if (name == "--prompt" || name == "--gen" || name == "--context") hint = "training takes --seq (tokens per sequence)";
    }
    throw bad_input(fmt::format("{} applies to --goal {}", name, training ? "inference" : "training"), hint);
  }
}

/// What `fit` suggests when the scenario does not fit: where the engine claims a share of memory
/// up front, the share it would need as well.
std::string does_not_fit_hint(const Scenario& s, const MemoryBreakdown& mem) {
  std::string hint = "see the breakdown above; try a smaller --quant, --context or --batch";
  const std::optional<double> needed = memory_share_to_fit(mem);
  if (needed && *needed < 1.0)
    hint += fmt::format(", or let {} claim {:.2f} of the memory (--gpu-memory-utilization; the rest must hold its CUDA graphs and context)",
                        s.engine.engine->id, *needed);
  return hint;
}

TrainingRequest training_request(const EstimateOptions& o) {
  TrainingRequest t = optadvisor::cli::training_request(o.training);
  t.hardware = o.request.hardware;
  t.model = o.request.model;
  t.engine = o.request.engine;
  t.quant = o.request.quant;
  t.gpus = o.request.gpus;
  t.tp = o.request.tp;
  t.pp = o.request.pp;
  t.host = o.request.host;
  if (!o.flash_attention.empty()) t.flash_attention = o.flash_attention == "on";
  return t;
}

}  // namespace

void register_estimate(CLI::App& app, const GlobalOptions& global) {
  auto est = std::make_shared<EstimateOptions>();
  auto* estimate = app.add_subcommand(
      "estimate",
      "Memory, time to first token, decode speed and throughput (--goal training: step time, tokens/s, MFU), with what binds each");
  add_scenario_options(estimate, *est, /*allow_html=*/true);
  estimate->callback([est, &global] {
    reject_other_goal(*est);
    if (est->goal == "training" && est->format.get() == OutputFormat::kHtml)
      throw bad_input("--format html covers inference estimates, not --goal training",
                      "use text, json or markdown here, or 'optadvisor report --goal training' for an HTML page");
    const std::vector<Requirement> requirements = est->require.parse();
    const Catalog& catalog = load_catalog(global);
    if (est->goal == "training") {
      TrainingRequest request = training_request(*est);
      request.hardware = resolve_hw_auto(request.hardware, catalog);
      const PreparedTraining prepared = prepare_training(catalog, request);
      const TrainingAnalysis analysis = analyze_training(prepared.scenario);
      const auto deepspeed = deepspeed_estimate_for(prepared.scenario);
      print_and_enforce(
          *est, requirements, [&](OutputFormat f, const Style& s) { return render_training_estimate(prepared, analysis, f, s, deepspeed); },
          [&] { return training_estimate_json(prepared, analysis, deepspeed); }, global);
      return;
    }
    const PreparedScenario prepared = prepare_scenario(catalog, finish(*est, catalog));
    const Analysis analysis = analyze(prepared.scenario);
    print_and_enforce(
        *est, requirements,
        [&](OutputFormat f, const Style& s) {
          return f == OutputFormat::kHtml ? render_estimate_html(prepared, analysis, HtmlReportInfo{program_version(), data_version(), {}})
                                          : render_estimate(prepared, analysis, f, s);
        },
        [&] { return estimate_json(prepared, analysis); }, global);
  });

  auto fit_options = std::make_shared<EstimateOptions>();
  auto* fit = app.add_subcommand("fit", "Does it fit? Memory breakdown, headroom, largest batch and context (exit 3 if not)");
  add_scenario_options(fit, *fit_options);
  fit->callback([fit_options, &global] {
    reject_other_goal(*fit_options);
    const std::vector<Requirement> requirements = fit_options->require.parse();
    const Catalog& catalog = load_catalog(global);
    if (fit_options->goal == "training") {
      TrainingRequest request = training_request(*fit_options);
      request.hardware = resolve_hw_auto(request.hardware, catalog);
      const PreparedTraining prepared = prepare_training(catalog, request);
      const TrainingAnalysis analysis = analyze_training(prepared.scenario);
      std::vector<TrainingChange> changes;
      if (!analysis.memory.fits) changes = suggest_training_fixes(catalog, prepared, request);
      print_and_enforce(
          *fit_options, requirements,
          [&](OutputFormat f, const Style& s) { return render_training_fit(prepared, analysis, changes, f, s); },
          [&] { return training_fit_json(prepared, analysis, changes); }, global);
      if (!analysis.memory.fits)
        throw Error(ExitCode::kCheckFailed, "does not fit",
                    changes.empty() || !changes.front().fits ? "see the breakdown above"
                                                             : "smallest change that fits: " + changes.front().description);
      return;
    }
    const PreparedScenario prepared = prepare_scenario(catalog, finish(*fit_options, catalog));
    const Analysis analysis = analyze(prepared.scenario);
    print_and_enforce(
        *fit_options, requirements, [&](OutputFormat f, const Style& s) { return render_fit(prepared, analysis, f, s); },
        [&] { return fit_json(prepared, analysis); }, global);
    if (!analysis.memory.fits) throw Error(ExitCode::kCheckFailed, "does not fit", does_not_fit_hint(prepared.scenario, analysis.memory));
  });
}

}  // namespace optadvisor::cli
