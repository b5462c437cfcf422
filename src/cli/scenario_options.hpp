// SPDX-License-Identifier: MIT
// The inference workload options that estimate, fit, compare and search share,
// so that one scenario is spelled the same way on every command.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/analysis/training.hpp"

namespace optadvisor::cli {

/// --batch, --prompt, --gen, --context, --ubatch, --kv-dtype, --host-bandwidth, --host, --n-cpu-moe and --cpu-moe
/// (the text kept in `host_bandwidth` until parse_host_bandwidth); returns the options in that order.
std::vector<CLI::Option*> add_workload_options(CLI::App* cmd, ScenarioRequest& request, std::string& host_bandwidth);

/// The training options (--goal training) of estimate, fit and the advisor, declared once.
/// The on/off switches stay text until training_request() ("" = the engine's default).
struct TrainingOptions {
  TrainingRequest request;
  std::string sequence_parallel;  ///< "", "on", "off"
  std::string fused_loss;         ///< "", "on", "off"
  std::string compile;            ///< "", "on", "off"
  std::string optimizer_offload;  ///< "", "on", "off"
  std::string activation_offload;  ///< "", "on", "off"
};
/// Adds --cp, --seq, --micro-batch, --global-batch, --precision, --recompute, --sharding,
/// --optimizer, --lora-rank, --sequence-parallel, --fused-loss, --compile, --pp-schedule, --vp,
/// --optimizer-offload and --activation-offload.
std::vector<CLI::Option*> add_training_options(CLI::App* cmd, TrainingOptions& options);
/// The request with the switches applied (device, model and layout are the caller's to fill).
TrainingRequest training_request(const TrainingOptions& options);

/// --gpus N: an explicit count must be at least 1 (left out, the count is tp x pp).
CLI::Option* add_gpus_option(CLI::App* cmd, int64_t& gpus, const std::string& description);
/// --host: the cpu-class profile whose memory and compute offloaded layers use. Serving engines keep
/// every layer on the GPU, so serve and plan take it only to say the host is not used.
CLI::Option* add_host_option(CLI::App* cmd, ScenarioRequest& request);
/// --ep and --dp-attention: expert parallelism with data-parallel attention (inference).
std::vector<CLI::Option*> add_expert_layout_options(CLI::App* cmd, ScenarioRequest& r);
/// --memory (a size the device is sold in: 64GB, 64GiB, 0.5TB) and --link (pcie, or nvlink where the
/// part has the connector); prepare_scenario checks them against the device. Returns both options.
std::vector<CLI::Option*> add_device_options(CLI::App* cmd, ScenarioRequest& request);

/// --gpu-memory-utilization: the share of memory vLLM or SGLang claims (inference only; prepare_scenario
/// refuses it for engines that size their memory otherwise).
CLI::Option* add_engine_memory_option(CLI::App* cmd, ScenarioRequest& request);

/// --weights-size: the weights' total of a file whose tensor mix its format does not describe (inference only).
CLI::Option* add_weights_size_option(CLI::App* cmd, ScenarioRequest& request);

/// "a,b,c" -> {"a", "b", "c"} (spaces around names dropped); "" -> {}. An empty
/// element ("a,,b", "a,") is bad_input naming `option`.
std::vector<std::string> split_list(const std::string& text, const std::string& option);

/// The whole of `text` as a number (std::stod's syntax: "60e9", "inf", "nan"); nullopt when any of it is not.
std::optional<double> parse_number(const std::string& text);

/// "60e9" -> 6e10 bytes/s; "" -> nullopt; anything else (or above 100 TB/s) is bad_input.
std::optional<double> parse_host_bandwidth(const std::string& text);

}  // namespace optadvisor::cli
