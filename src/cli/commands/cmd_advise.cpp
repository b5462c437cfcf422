// SPDX-License-Identifier: MIT
// `optadvisor advise` and the main command's `optadvisor --hw H --goal G`:
// the diagnosis, the ranked playbook and the stacked plan.
#include <fmt/format.h>

#include "cli/common.hpp"
#include "cli/detect_tools.hpp"
#include "cli/scenario_options.hpp"
#include "optadvisor/advisor/playbook.hpp"
#include "optadvisor/render/report_advice.hpp"
#include "optadvisor/render/html/report_html.hpp"
#include "optadvisor/advisor/rules.hpp"
#include "optadvisor/analysis/training.hpp"
#include "optadvisor/base/version.hpp"

namespace optadvisor::cli {

struct AdviseOptions {
  ScenarioRequest request;
  std::string goal;
  std::string flash_attention;  ///< "", "on", "off"
  std::string cuda_graphs;      ///< "", "on", "off"
  std::string host_bandwidth;
  std::vector<std::string> assume;
  bool all = false;
  std::string why_not;
  FormatOption format;
  RequireOption require;
  // --goal training
  TrainingOptions training;
  std::vector<CLI::Option*> inference_only;
  std::vector<CLI::Option*> training_only;
  std::vector<CLI::Option*> options;  ///< every option added, to tell whether any was given
  CLI::Option* batch = nullptr;
  CLI::Option* prompt = nullptr;
  CLI::Option* gen = nullptr;
  CLI::Option* context = nullptr;
};

std::shared_ptr<AdviseOptions> add_advise_options(CLI::App* cmd, bool html_report) {
  auto o = std::make_shared<AdviseOptions>();
  auto& r = o->request;
  auto add = [&](CLI::Option* opt) {
    o->options.push_back(opt);
    return opt;
  };
  add(cmd->add_option("--hw", r.hardware, "Device id or name (optadvisor hw list)"));
  add(cmd->add_option("--goal", o->goal, "What to improve: latency, throughput, memory or training (default latency)")
          ->check(CLI::IsMember({"latency", "throughput", "memory", "training"})));
  add(cmd->add_option("--model,-m", r.model.preset, "Model preset id (default: a typical model for the device class)"));
  add(cmd->add_option("--model-config", r.model.config_path, "A Hugging Face config.json")->type_name("FILE"));
  add(cmd->add_option("--gguf", r.model.gguf_path, "A GGUF file (only its header is read)")->type_name("FILE"));
  add(cmd->add_option("--params", r.model.params, "A bare dense model of this size: 70B, 7e9"));
  add(cmd->add_option("--quant,-q", r.quant, "Weight format (default: the engine's)"));
  CLI::Option* weights_size = add(add_weights_size_option(cmd, r));
  add(cmd->add_option("--engine,-e", r.engine, "Engine, optionally with a backend (default: per device class)"));
  o->batch = add(cmd->add_option("--batch,-b", r.batch, "Concurrent sequences, or 'max' (default 1; 16 for throughput)"));
  o->prompt = add(cmd->add_option("--prompt,-p", r.prompt_tokens,
                                  fmt::format("Prompt tokens per sequence (default {})", ScenarioRequest::kDefaultPromptTokens)));
  o->gen = add(cmd->add_option("--gen,-n", r.gen_tokens,
                               fmt::format("Generated tokens per sequence (default {})", ScenarioRequest::kDefaultGenTokens)));
  o->context =
      add(cmd->add_option("--context,-c", r.context_tokens, "KV reservation per sequence; on vLLM, SGLang and TensorRT-LLM the maximum length (sequences hold prompt + gen) (default prompt + gen; 8192 for memory)"));
  o->inference_only = {
      o->batch,
      o->prompt,
      o->gen,
      o->context,
      add(cmd->add_option("--ubatch", r.ubatch_tokens, "Prompt tokens per forward pass (llama.cpp -ub)")),
      add(cmd->add_option("--kv-dtype", r.kv_dtype, "KV-cache element type: f16, bf16, fp8, q8_0, q4_0")),
      add(cmd->add_option("--cuda-graphs", o->cuda_graphs, "on or off (default: the backend's)")->check(CLI::IsMember({"on", "off"}))),
      add(cmd->add_option("--host-bandwidth", o->host_bandwidth, "Host memory bandwidth in bytes/s for offloaded layers (e.g. 60e9)"))};
  // Both goals: inference offloads layers there, training its optimizer states and activations.
  add(cmd->add_option("--host", r.host, "The CPU whose memory holds offloaded layers or training states (optadvisor hw list --class cpu)"));
  for (CLI::Option* opt : add_device_options(cmd, r)) o->inference_only.push_back(add(opt));
  o->inference_only.push_back(add(add_engine_memory_option(cmd, r)));
  o->inference_only.push_back(weights_size);
  add(add_gpus_option(cmd, r.gpus, "GPU count (default tp x pp; training: tp x pp x cp)"));
  add(cmd->add_option("--tp", r.tp, "Tensor-parallel degree"));
  add(cmd->add_option("--pp", r.pp, "Pipeline / layer-split degree"));
  for (CLI::Option* opt : add_expert_layout_options(cmd, r)) o->inference_only.push_back(add(opt));
  o->inference_only.push_back(add(cmd->add_option("--replicas", r.replicas, "Copies of the tp x pp layout serving side by side, each on its own GPUs (serving throughput adds up)")));
  add(cmd->add_option("--flash-attention", o->flash_attention, "on or off (default: the engine's)")->check(CLI::IsMember({"on", "off"})));
  o->training_only = add_training_options(cmd, o->training);
  for (CLI::Option* opt : o->training_only) add(opt);
  add(cmd->add_option("--assume", o->assume, "Override an assumption: NAME=VALUE (repeatable; optadvisor rules list)")
          ->type_name("NAME=VALUE"));
  add(cmd->add_flag("--all", o->all, "Also list every rule that does not apply, with the reason"));
  add(cmd->add_option("--why-not", o->why_not, "Say whether one rule applies here, and why (not)")->type_name("RULE"));
  if (html_report)
    o->format.format = "html";
  else
    o->format.attach(cmd, true, true);
  o->require.attach(cmd);
  for (const char* name : {"--format", "--json", "--require"})
    if (auto* opt = cmd->get_option_no_throw(name)) o->options.push_back(opt);
  return o;
}

bool advise_options_given(const AdviseOptions& o) {
  for (const auto* opt : o.options)
    if (opt->count() > 0) return true;
  return false;
}

void run_advise(const AdviseOptions& o, const GlobalOptions& global, const std::string& out_path) {
  if (o.request.hardware.empty())
    throw bad_input("no hardware given", "pass --hw NAME, e.g. optadvisor --hw rtx5090 --goal latency (optadvisor hw list)");
  const std::vector<Requirement> requirements = o.require.parse();
  if (!requirements.empty() && !o.why_not.empty()) throw bad_input("--require does not apply to --why-not", "drop one of them");
  const bool html = o.format.get() == OutputFormat::kHtml;
  if (html && !o.why_not.empty())
    throw bad_input("--why-not has no html output", "drop --format html (text, json or markdown), or drop --why-not");
  const Catalog& catalog = load_catalog(global);
  const RuleBook book = RuleBook::load(catalog);
  AdviceRequest request;
  request.scenario = o.request;
  if (!request.scenario.hardware.empty())
    request.scenario.hardware = resolve_hw_auto(request.scenario.hardware, catalog, &request.scenario.hardware_detected);
  fill_detected_host(o.request.hardware, request.scenario, catalog);
  request.goal = o.goal.empty() ? Goal::kLatency : *goal_from_string(o.goal);
  if (!o.flash_attention.empty()) request.scenario.flash_attention = o.flash_attention == "on";
  if (!o.cuda_graphs.empty()) request.scenario.graphs = o.cuda_graphs == "on";
  request.scenario.host_bandwidth_bytes_per_s = parse_host_bandwidth(o.host_bandwidth);
  const bool training = request.goal == Goal::kTraining;
  for (const CLI::Option* opt : training ? o.inference_only : o.training_only) {
    if (opt->count() == 0) continue;
    const std::string name = "--" + opt->get_lnames().front();
    throw bad_input(
        fmt::format("{} applies to {}", name, training ? "the inference goals (latency, throughput, memory)" : "--goal training"),
        training ? "training takes --seq, --micro-batch, --global-batch, --precision, --recompute, --sharding, --cp"
                 : "add --goal training");
  }
  request.training = training_request(o.training);
  request.training.host = o.request.host;
  for (const auto& a : o.assume) {
    auto [name, value] = parse_assumption_override(a);
    request.assumptions[name] = value;
  }
  const Rule* why_not = o.why_not.empty() ? nullptr : &book.resolve(o.why_not);
  const Advice advice = advise(catalog, book, request);
  if (o.goal.empty() && !why_not && o.format.get() != OutputFormat::kJson && !html)
    fmt::print("(no --goal given: advising on latency; --goal throughput|memory|training for the others)\n");
  if (why_not) {
    fmt::print("{}", render_why_not(advice, *why_not, o.format.get()));
    return;
  }
  AdviceView view;
  view.all = o.all;
  HtmlReportInfo info{program_version(), data_version(), {}};
  if (o.goal.empty()) info.notes.push_back("no --goal given: advising on latency; --goal throughput|memory|training for the others");
  const std::string output =
      html ? render_advice_html(advice, book, view, info) : render_advice(advice, book, view, o.format.get(), stdout_style(global));
  if (requirements.empty()) {
    write_result(output, out_path);
    return;
  }
  const nlohmann::json document = advice_json(advice, book);
  RequireOption::check_paths(requirements, document);
  write_result(output, out_path);
  RequireOption::enforce(requirements, document);
}

void register_advise(CLI::App& app, const GlobalOptions& global) {
  auto* cmd = app.add_subcommand("advise",
                                 "What limits the model for a goal, and a ranked, quantified playbook (also: optadvisor --hw H --goal G)");
  auto options = add_advise_options(cmd);
  cmd->callback([options, &global] { run_advise(*options, global); });
}

}  // namespace optadvisor::cli
