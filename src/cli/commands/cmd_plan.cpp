// SPDX-License-Identifier: MIT
// `optadvisor plan`: the fewest GPUs (then the lowest cost) that serve --rate
// requests per second within --slo-ttft and --slo-tpot. Exit 3 when no layout
// within --max-gpus meets them.
#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

#include "cli/common.hpp"
#include "cli/detect_tools.hpp"
#include "cli/length_options.hpp"
#include "cli/scenario_options.hpp"
#include "optadvisor/render/report_capacity.hpp"

namespace optadvisor::cli {

void register_plan(CLI::App& app, const GlobalOptions& global) {
  auto q = std::make_shared<CapacityRequest>();
  auto format = std::make_shared<FormatOption>();
  auto* cmd = app.add_subcommand(
      "plan", "Capacity planning: the fewest GPUs and the cheapest layout that serve a request rate within TTFT/TPOT SLOs");
  cmd->add_option("--hw", q->scenario.hardware, "Device id or name (optadvisor hw list)")->required();
  add_device_options(cmd, q->scenario);
  add_host_option(cmd, q->scenario);
  add_model_options(cmd, q->scenario.model);
  cmd->add_option("--quant,-q", q->scenario.quant, "Weight format (default: try the engine's, fp8 and nvfp4 where the device runs them)");
  cmd->add_option("--engine,-e", q->scenario.engine, "Engine (default: try vllm, sglang and tensorrt-llm)");
  cmd->add_option("--rate", q->rate_per_s, "Requests per second to serve")->required()->check(CLI::Range(1e-6, 1e6));
  cmd->add_option("--prompt", q->prompt_tokens, "Prompt tokens per request")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 22))
      ->capture_default_str();
  cmd->add_option("--gen", q->gen_tokens, "Generated tokens per request")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 22))
      ->capture_default_str();
  add_length_spread_options(cmd, q->prompt_spread, q->gen_spread);
  cmd->add_option("--prefix-hit", q->prefix_hit, "Share of each prompt already in the prefix cache (0-1)")->check(CLI::Range(0.0, 0.99));
  cmd->add_option("--slo-ttft", q->slo_ttft_s, "Time-to-first-token SLO, seconds")->required()->check(CLI::Range(1e-6, 3600.0));
  cmd->add_option("--slo-tpot", q->slo_tpot_s, "Time-per-output-token SLO, seconds")->required()->check(CLI::Range(1e-6, 60.0));
  cmd->add_option("--slo-attainment", q->slo_attainment, "Share of requests that must meet both SLOs")
      ->check(CLI::Range(0.5, 1.0))
      ->capture_default_str();
  cmd->add_option("--max-gpus", q->max_gpus, "Most GPUs a plan may use")->check(CLI::Range(1u, 4096u))->capture_default_str();
  cmd->add_option("--gpu-hour-usd", q->gpu_hour_usd, "Price of one GPU-hour, for cost per million output tokens")
      ->check(CLI::Range(0.0, 1000.0));
  cmd->add_option("--max-batched-tokens", q->max_batched_tokens,
                  "Tokens per iteration of every worker (vLLM --max-num-batched-tokens, SGLang --chunked-prefill-size, "
                  "TensorRT-LLM max_num_tokens; default: each engine's)")
      ->check(CLI::Range(uint64_t{1}, kMaxServeBatchedTokens));
  auto aggregated_only = std::make_shared<bool>(false);
  cmd->add_flag("--aggregated-only", *aggregated_only, "Size replicas of one pool only, not disaggregated prefill + decode pools");
  cmd->add_flag("--exhaustive", q->exhaustive,
                "Simulate every layout, not only those whose analytic ceiling lets them rank among the 10 best (all candidates in --json)");
  format->attach(cmd, true, false);
  cmd->callback([q, format, aggregated_only, &global] {
    const Catalog& catalog = load_catalog(global);
    CapacityRequest request = *q;
    request.disaggregated = !*aggregated_only;
    request.scenario.hardware = resolve_hw_auto(request.scenario.hardware, catalog, &request.scenario.hardware_detected);
    const bool bar = isatty(STDERR_FILENO) != 0;
    const CapacityPlan plan = plan_capacity(catalog, request, [bar](std::size_t done, std::size_t total) {
      if (!bar || total == 0) return;
      const std::size_t width = 30, filled = width * done / total;
      fmt::print(stderr, "\r[{}{}] {}/{} layouts", std::string(filled, '#'), std::string(width - filled, '.'), done, total);
      if (done == total) fmt::print(stderr, "\r{}\r", std::string(width + 24, ' '));
    });
    fmt::print("{}", render_capacity(request, plan, format->get(), stdout_style(global)));
    if (plan.candidates.empty())
      throw Error(ExitCode::kCheckFailed, "no layout meets the SLOs",
                  "relax --slo-ttft / --slo-tpot, allow more --max-gpus, or try a smaller --quant");
  });
}

}  // namespace optadvisor::cli
