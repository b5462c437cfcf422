// SPDX-License-Identifier: MIT
#include "scenario_options.hpp"

#include <fmt/format.h>

#include "optadvisor/base/error.hpp"

namespace optadvisor::cli {

CLI::Option* add_gpus_option(CLI::App* cmd, int64_t& gpus, const std::string& description) {
  const CLI::Validator at_least_one(
      [](std::string& value) -> std::string {
        int64_t n = 0;
        // A non-number is left to the conversion, which names it.
        if (CLI::detail::lexical_cast(value, n) && n < 1) return "need at least one GPU, got " + value + " (leave --gpus out for tp x pp)";
        return {};
      },
      "");
  return cmd->add_option("--gpus", gpus, description)->check(at_least_one);
}

CLI::Option* add_host_option(CLI::App* cmd, ScenarioRequest& r) {
  return cmd->add_option("--host", r.host, "The CPU whose memory holds offloaded layers (optadvisor hw list --class cpu)");
}

std::vector<CLI::Option*> add_workload_options(CLI::App* cmd, ScenarioRequest& r, std::string& host_bandwidth) {
  return {cmd->add_option("--batch,-b", r.batch, "Concurrent sequences, or 'max' for as many as fit")
              ->default_str(ScenarioRequest::kDefaultBatch),
          cmd->add_option("--prompt,-p", r.prompt_tokens, "Prompt tokens per sequence")
              ->default_str(std::to_string(ScenarioRequest::kDefaultPromptTokens)),
          cmd->add_option("--gen,-n", r.gen_tokens, "Generated tokens per sequence")
              ->default_str(std::to_string(ScenarioRequest::kDefaultGenTokens)),
          cmd->add_option("--context,-c", r.context_tokens, "KV reservation per sequence; on vLLM, SGLang and TensorRT-LLM the maximum length (sequences hold prompt + gen) (default prompt + gen)"),
          cmd->add_option("--ubatch", r.ubatch_tokens, "Prompt tokens per forward pass (llama.cpp -ub; default: the engine's)"),
          cmd->add_option("--kv-dtype", r.kv_dtype, "KV-cache element type: f16, bf16, fp8, q8_0, q4_0"),
          cmd->add_option("--host-bandwidth", host_bandwidth, "Host memory bandwidth in bytes/s for offloaded layers (e.g. 60e9)"),
          add_host_option(cmd, r),
          cmd->add_option("--n-cpu-moe", r.n_cpu_moe, "Keep the routed experts of the first N layers in host memory, run on the CPU (llama.cpp)"),
          cmd->add_flag("--cpu-moe", r.cpu_moe, "Keep every layer's routed experts in host memory, run on the CPU (llama.cpp)"),
          cmd->add_option("--n-gpu-layers", r.n_gpu_layers,
                          "Layers on the GPU, the rest in host memory run by the CPU (llama.cpp -ngl; default: as many as fit)")};
}

std::vector<CLI::Option*> add_expert_layout_options(CLI::App* cmd, ScenarioRequest& r) {
  return {cmd->add_option("--ep", r.ep, "Expert-parallel degree (MoE): routed experts sharded over the GPUs, exchanged by all-to-all"),
          cmd->add_option("--dp-attention", r.dp_attention,
                          "Data-parallel attention ranks (MoE, with --ep): each runs attention for its own sequences")};
}

CLI::Option* add_engine_memory_option(CLI::App* cmd, ScenarioRequest& r) {
  return cmd->add_option("--gpu-memory-utilization", r.engine_memory_share,
                         "Share of each device's memory the engine claims up front: vLLM --gpu-memory-utilization, SGLang "
                         "--mem-fraction-static (default: the engine's)");
}

CLI::Option* add_weights_size_option(CLI::App* cmd, ScenarioRequest& r) {
  return cmd->add_option("--weights-size", r.weights_size,
                         "The weights' total as llama-bench's size column says (13.40GiB), for a file whose tensor mix the format does "
                         "not describe (Unsloth UD-*_XL): the format's tensors scaled to it");
}

std::vector<CLI::Option*> add_device_options(CLI::App* cmd, ScenarioRequest& r) {
  return {cmd->add_option("--memory", r.memory, "The memory size of your device, for parts sold in several (64GB, 64GiB, 0.5TB)"),
          cmd->add_option("--link", r.link, "Multi-GPU link: pcie, or nvlink with a bridge fitted (default: the device's own link)")
              ->check(CLI::IsMember({"pcie", "nvlink"}))};
}

std::vector<std::string> split_list(const std::string& text, const std::string& option) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const auto first = item.find_first_not_of(" \t");
    item = first == std::string::npos ? std::string() : item.substr(first, item.find_last_not_of(" \t") - first + 1);
    if (item.empty())
      throw bad_input(fmt::format("{} '{}' has an empty element", option, text), "separate the values with single commas: a,b,c");
    out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::optional<double> parse_number(const std::string& text) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != text.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_host_bandwidth(const std::string& text) {
  if (text.empty()) return std::nullopt;
  const std::optional<double> v = parse_number(text);
  if (!v || !(*v > 0) || *v > 1e14)
    throw bad_input(fmt::format("--host-bandwidth '{}' is not a bandwidth in bytes/s", text), "e.g. 60e9 for 60 GB/s");
  return v;
}

std::vector<CLI::Option*> add_training_options(CLI::App* cmd, TrainingOptions& o) {
  TrainingRequest& t = o.request;
  return {
      cmd->add_option("--cp", t.cp, "Training: context-parallel degree")->capture_default_str(),
      cmd->add_option("--seq", t.seq, "Training: tokens per sequence (default 4096, or the model's context if shorter)"),
      cmd->add_option("--micro-batch", t.micro_batch, "Training: sequences per microbatch per data-parallel rank")->capture_default_str(),
      cmd->add_option("--global-batch", t.global_batch, "Training: sequences per optimizer step (default micro-batch x data-parallel)"),
      cmd->add_option("--precision", t.precision, "Training: bf16, bf16-pure (no fp32 master copy) or fp8 (default bf16)")
          ->check(CLI::IsMember({"bf16", "bf16-pure", "fp8"})),
      cmd->add_option("--recompute", t.recompute, "Training: activation recomputation none, selective or full (default: the engine's)")
          ->check(CLI::IsMember({"none", "selective", "full"})),
      cmd->add_option("--sharding", t.sharding, "Training: ddp, zero1, zero2, zero3 or fsdp (default: the engine's)")
          ->check(CLI::IsMember({"ddp", "zero1", "zero2", "zero3", "fsdp"})),
      cmd->add_option("--optimizer", t.optimizer, "Training: adamw or adamw-8bit (default adamw)"),
      cmd->add_option("--lora-rank", t.lora_rank, "Training: LoRA rank (0 = train every weight)"),
      cmd->add_option("--sequence-parallel", o.sequence_parallel, "Training: on or off with --tp > 1 (default: the engine's)")
          ->check(CLI::IsMember({"on", "off"})),
      cmd->add_option("--compile", o.compile, "Training: on or off: torch.compile the blocks (PyTorch FSDP2; default: the engine's)")
          ->check(CLI::IsMember({"on", "off"})),
      cmd->add_option("--fused-loss", o.fused_loss, "Training: on or off: a fused cross-entropy kernel (no fp32 copy of the logits)")
          ->check(CLI::IsMember({"on", "off"})),
      cmd->add_option("--pp-schedule", t.pp_schedule, "Training: 1f1b or interleaved (default: the engine's)")
          ->check(CLI::IsMember({"1f1b", "interleaved"})),
      cmd->add_option("--vp", t.virtual_stages, "Training: virtual stages per GPU for --pp-schedule interleaved"),
      cmd->add_option("--optimizer-offload", o.optimizer_offload,
                      "Training: on or off: master weights and moments in host memory, the step on the CPU (ZeRO-Offload)")
          ->check(CLI::IsMember({"on", "off"})),
      cmd->add_option("--activation-offload", o.activation_offload, "Training: on or off: saved activations in host memory until the backward")
          ->check(CLI::IsMember({"on", "off"}))};
}

TrainingRequest training_request(const TrainingOptions& o) {
  TrainingRequest t = o.request;
  if (!o.sequence_parallel.empty()) t.sequence_parallel = o.sequence_parallel == "on";
  if (!o.fused_loss.empty()) t.fused_loss = o.fused_loss == "on";
  if (!o.compile.empty()) t.compile = o.compile == "on";
  if (!o.optimizer_offload.empty()) t.optimizer_offload = o.optimizer_offload == "on";
  if (!o.activation_offload.empty()) t.activation_offload = o.activation_offload == "on";
  return t;
}

}  // namespace optadvisor::cli
