// SPDX-License-Identifier: MIT
// `optadvisor compare`: one scenario on several devices (--hw a,b,c), weight
// formats (--quant a,b) or engines (--engine a,b), side by side.
#include <fmt/format.h>

#include "cli/common.hpp"
#include "cli/detect_tools.hpp"
#include "cli/scenario_options.hpp"
#include "optadvisor/planner/compare.hpp"
#include "optadvisor/render/report_compare.hpp"

namespace optadvisor::cli {
namespace {

struct CompareOptions {
  ScenarioRequest request;
  std::string hardware;
  std::string quant;
  std::string engine;
  std::string flash_attention;  ///< "", "on", "off"
  std::string host_bandwidth;
  std::string sort = "given";
  FormatOption format;
};

CompareRequest build_request(const CompareOptions& o) {
  struct Axis {
    CompareAxis axis;
    const char* option;
    std::vector<std::string> values;
  };
  std::vector<Axis> axes = {{CompareAxis::kHardware, "--hw", split_list(o.hardware, "--hw")},
                            {CompareAxis::kQuant, "--quant", split_list(o.quant, "--quant")},
                            {CompareAxis::kEngine, "--engine", split_list(o.engine, "--engine")}};
  std::vector<const Axis*> lists;
  for (const auto& a : axes)
    if (a.values.size() > 1) lists.push_back(&a);
  if (lists.size() > 1)
    throw bad_input(
        fmt::format("compare varies one thing at a time, but {} and {} both list several values", lists[0]->option, lists[1]->option),
        "list several values for one of --hw, --quant or --engine and give the others one value each");
  CompareRequest request;
  request.base = o.request;
  if (!o.flash_attention.empty()) request.base.flash_attention = o.flash_attention == "on";
  request.base.host_bandwidth_bytes_per_s = parse_host_bandwidth(o.host_bandwidth);
  request.sort = *compare_sort_from_string(o.sort);
  const Axis& varied = lists.empty() ? axes[0] : *lists.front();
  request.axis = varied.axis;
  request.values = varied.values;
  if (request.values.empty()) throw bad_input("no hardware given", "pass --hw NAME, or several to compare: --hw rtx4090,h100");
  if (axes[0].values.size() > 1 && (!o.request.memory.empty() || !o.request.link.empty()))
    throw bad_input(
        fmt::format("{} describes one device, but --hw lists {}", o.request.memory.empty() ? "--link" : "--memory", axes[0].values.size()),
        o.request.memory.empty() ? "compare one device's weight formats or engines, or drop the option"
                                 : "give each device its size in the list: --hw m4-max-40c:64GB,m4-max-40c:128GB");
  request.base.hardware = axes[0].values.size() == 1 ? axes[0].values.front() : std::string();
  request.base.quant = axes[1].values.size() == 1 ? axes[1].values.front() : std::string();
  request.base.engine = axes[2].values.size() == 1 ? axes[2].values.front() : std::string();
  return request;
}

}  // namespace

void register_compare(CLI::App& app, const GlobalOptions& global) {
  auto o = std::make_shared<CompareOptions>();
  auto* cmd = app.add_subcommand("compare",
                                 "Several devices, weight formats or engines side by side: memory, TTFT, decode, throughput, "
                                 "tokens per joule and per dollar");
  cmd->add_option("--hw", o->hardware, "Device ids or names, comma-separated, each optionally with its memory size (m4-max-40c:64GB; optadvisor hw list)");
  add_model_options(cmd, o->request.model);
  cmd->add_option("--quant,-q", o->quant, "Weight formats, comma-separated (default: each engine's)");
  cmd->add_option("--engine,-e", o->engine, "Engines, comma-separated, optionally with a backend (default: per device class)");
  add_workload_options(cmd, o->request, o->host_bandwidth);
  add_device_options(cmd, o->request);
  add_gpus_option(cmd, o->request.gpus, "GPU count (default tp x pp)");
  cmd->add_option("--tp", o->request.tp, "Tensor-parallel degree")->capture_default_str();
  cmd->add_option("--replicas", o->request.replicas, "Copies of the tp x pp layout serving side by side, each on its own GPUs (serving throughput adds up)")->capture_default_str();
  cmd->add_option("--pp", o->request.pp, "Pipeline / layer-split degree")->capture_default_str();
  cmd->add_option("--flash-attention", o->flash_attention, "on or off (default: the engine's)")->check(CLI::IsMember({"on", "off"}));
  cmd->add_option("--sort", o->sort, "Row order: given, ttft, decode, throughput, per-joule or per-dollar")
      ->check(CLI::IsMember({"given", "ttft", "decode", "throughput", "per-joule", "per-dollar"}))
      ->capture_default_str();
  o->format.attach(cmd);
  cmd->footer(
      "Exactly one of --hw, --quant and --engine may list several values.\n"
      "TOK/J = serving tokens/s / (board power x GPUs); TOK/S/K$ = serving tokens/s per 1000 USD of list price x GPUs.\n"
      "Example: optadvisor compare --hw rtx4090,rtx5090,h100 --model llama-3.1-8b --batch 8");
  cmd->callback([o, &global] {
    CompareRequest request = build_request(*o);
    const Catalog& catalog = load_catalog(global);
    if (request.axis == CompareAxis::kHardware) request.values = resolve_hw_auto(request.values, catalog);
    if (!request.base.hardware.empty())
      request.base.hardware = resolve_hw_auto(request.base.hardware, catalog, &request.base.hardware_detected);
    fill_detected_host(o->request.hardware, request.base, catalog);
    const ResolvedModel model = resolve_model(catalog, request.base.model);
    const Comparison comparison = compare(catalog, model, request);
    fmt::print("{}", render_compare(comparison, o->format.get(), stdout_style(global)));
  });
}

}  // namespace optadvisor::cli
