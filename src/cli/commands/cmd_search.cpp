// SPDX-License-Identifier: MIT
// `optadvisor search`: a capacity planner over device x GPU count x weight
// format x engine x batch for one model and goal, ranked into Pareto fronts.
#include <chrono>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "cli/common.hpp"
#include "cli/detect_tools.hpp"
#include "cli/scenario_options.hpp"
#include "optadvisor/render/report_search.hpp"
#include "optadvisor/planner/search.hpp"

namespace optadvisor::cli {
namespace {

struct SearchOptions {
  std::string goal;
  ScenarioRequest request;
  std::string hardware;
  std::string device_class;
  std::string quant;
  std::string engine;
  std::string budget_usd;
  int64_t max_gpus = 8;
  int64_t top = 10;
  std::string flash_attention;  ///< "", "on", "off"
  std::string host_bandwidth;
  RequireOption require;
  FormatOption format;
};

std::optional<double> parse_budget(const std::string& text) {
  if (text.empty()) return std::nullopt;
  const std::optional<double> v = parse_number(text);
  if (!v || !std::isfinite(*v) || !(*v > 0))
    throw bad_input(fmt::format("--budget-usd '{}' is not a positive amount of US dollars", text), "e.g. --budget-usd 5000");
  return v;
}

SearchRequest build_request(const SearchOptions& o) {
  SearchRequest r;
  r.goal = *goal_from_string(o.goal);
  r.workload = o.request;
  if (!o.flash_attention.empty()) r.workload.flash_attention = o.flash_attention == "on";
  r.workload.host_bandwidth_bytes_per_s = parse_host_bandwidth(o.host_bandwidth);
  r.space.hardware = split_list(o.hardware, "--hw");
  if ((!o.request.memory.empty() || !o.request.link.empty()) && r.space.hardware.size() != 1)
    throw bad_input(
        fmt::format("{} describes one device; give exactly one --hw with it", o.request.memory.empty() ? "--link" : "--memory"));
  if (!o.device_class.empty()) {
    r.space.device_class = device_class_from_string(o.device_class);
    if (!r.space.device_class) {
      std::string classes;
      for (DeviceClass c : all_device_classes()) classes += (classes.empty() ? "" : ", ") + std::string(to_string(c));
      throw bad_input(fmt::format("unknown device class '{}'", o.device_class), "classes: " + classes);
    }
  }
  if (o.quant == "all")
    r.space.all_quants = true;
  else
    r.space.quants = split_list(o.quant, "--quant");
  r.space.engines = split_list(o.engine, "--engine");
  if (o.max_gpus < 1 || o.max_gpus > 1024) throw bad_input(fmt::format("--max-gpus must be between 1 and 1024 (got {})", o.max_gpus));
  r.space.max_gpus = static_cast<uint32_t>(o.max_gpus);
  r.budget_usd = parse_budget(o.budget_usd);
  if (o.top < 1) throw bad_input(fmt::format("--top must be at least 1 (got {})", o.top));
  r.requirements = o.require.parse();
  return r;
}

/// A one-line progress bar on stderr: only on a terminal, only once the search
/// has run for a second, at most ten redraws a second; cleared at the end.
class ProgressBar {
 public:
  using Clock = std::chrono::steady_clock;
  ProgressBar() : enabled_(isatty(STDERR_FILENO) != 0), start_(Clock::now()) {}
  ~ProgressBar() { clear(); }

  void operator()(uint64_t done, uint64_t total) {
    if (!enabled_) return;
    const auto now = Clock::now();
    if (now - start_ < std::chrono::seconds(1) || (drawn_ && now - last_ < std::chrono::milliseconds(100))) return;
    last_ = now;
    drawn_ = true;
    constexpr int kWidth = 30;
    const double share = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
    const int filled = static_cast<int>(share * kWidth);
    fmt::print(stderr, "\r[{}{}] {}/{} combinations of device, GPUs, format and engine", std::string(static_cast<std::size_t>(filled), '#'),
               std::string(static_cast<std::size_t>(kWidth - filled), ' '), done, total);
    std::fflush(stderr);
  }

  void clear() {
    if (!drawn_) return;
    fmt::print(stderr, "\r\033[K");
    std::fflush(stderr);
    drawn_ = false;
  }

 private:
  bool enabled_;
  bool drawn_ = false;
  Clock::time_point start_;
  Clock::time_point last_;
};

}  // namespace

void register_search(CLI::App& app, const GlobalOptions& global) {
  auto o = std::make_shared<SearchOptions>();
  auto* cmd = app.add_subcommand("search",
                                 "Capacity planner: every device, GPU count, weight format, engine and batch that fits, "
                                 "ranked by the goal against cost and energy");
  add_model_options(cmd, o->request.model);
  cmd->add_option("--goal", o->goal, "What to optimize: latency, throughput or memory")
      ->check(CLI::IsMember({"latency", "throughput", "memory"}))
      ->required();
  auto* hw = cmd->add_option("--hw", o->hardware, "Devices to consider, comma-separated (default: every profile)");
  auto* cls = cmd->add_option("--class", o->device_class, "Only devices of this class: datacenter-gpu, consumer-gpu, apple-silicon, ...");
  hw->excludes(cls);
  cmd->add_option("--budget-usd", o->budget_usd,
                  "Drop configurations whose list price x GPUs is above this (USD); those without a price stay");
  cmd->add_option("--max-gpus", o->max_gpus, "GPU counts tried: 1, 2, 4, ... up to this")->capture_default_str();
  cmd->add_option("--quant,-q", o->quant, "Weight formats, comma-separated, or 'all' (default: the common 4-bit and wider formats)");
  cmd->add_option("--engine,-e", o->engine, "Engines, comma-separated, optionally with a backend (default: every engine on each device)");
  add_workload_options(cmd, o->request, o->host_bandwidth);
  add_device_options(cmd, o->request);
  cmd->add_option("--flash-attention", o->flash_attention, "on or off (default: the engine's)")->check(CLI::IsMember({"on", "off"}));
  cmd->add_option("--require", o->require.expressions,
                  "Keep only configurations whose 'estimate --json' output meets this, e.g. 'decode.tokens_per_s>=30' (repeatable)")
      ->type_name("EXPR");
  cmd->add_option("--top", o->top, "Rows to show in each table (with a list price, price unknown)")->capture_default_str();
  o->format.attach(cmd);
  cmd->footer(
      "Without --batch, latency and memory run batch 1; throughput tries 1, 2, 4, ... up to the largest batch that fits.\n"
      "Example: optadvisor search --model llama-3.1-70b --goal throughput --class datacenter-gpu --max-gpus 4");
  cmd->callback([o, &global] {
    SearchRequest request = build_request(*o);
    const Catalog& catalog = load_catalog(global);
    request.space.hardware = resolve_hw_auto(request.space.hardware, catalog);
    const ResolvedModel model = resolve_model(catalog, request.workload.model);
    const auto start = std::chrono::steady_clock::now();
    SearchResult result;
    {
      ProgressBar bar;
      result = search(catalog, model, request, [&bar](uint64_t done, uint64_t total) { bar(done, total); });
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    spdlog::info("{} in {:.0f} ms", search_summary(result.stats), ms);
    fmt::print("{}", render_search(result, static_cast<std::size_t>(o->top), o->format.get(), stdout_style(global)));
    if (result.candidates.empty())
      throw Error(ExitCode::kCheckFailed, request.requirements.empty() || result.stats.fit == 0
                                              ? "no configuration fits"
                                              : "no configuration that fits meets every --require");
  });
}

}  // namespace optadvisor::cli
