// SPDX-License-Identifier: MIT
// Turns what the user typed (names, numbers) into a checked Scenario: resolves
// device, model, weight format and engine, picks defaults per device class,
// and rejects contradictions with one clear message.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/readers/model_source.hpp"
#include "optadvisor/analysis/scenario.hpp"

namespace optadvisor {

struct ScenarioRequest {
  std::string hardware;  ///< a profile id or name
  /// How the command line found `hardware` when the user said --hw auto
  /// ("detected: ..."); printed as a note. Empty when the user named the device.
  std::string hardware_detected;
  std::string memory;  ///< --memory "64GB" (GB, GiB, TB, TiB): one of the sizes the device is sold in; "" = the profile's
  std::string link;    ///< --link: "" = the device's default, "pcie", or "nvlink" (where it has the connector)
  ModelRequest model;
  std::string quant;   ///< "" = the engine's default, or the GGUF file's own type
  std::string engine;  ///< "" = the device class default
  // The workload: unset means the user left it out (the advisor then takes its goal's
  // default); the *_or_default() accessors below hold the defaults, the one place they are stated.
  std::optional<std::string> batch;       ///< a number or "max"; unset = 1
  std::optional<int64_t> prompt_tokens;   ///< unset = 512
  std::optional<int64_t> gen_tokens;      ///< unset = 128
  std::optional<int64_t> context_tokens;  ///< unset or 0 = prompt + gen
  std::string kv_dtype;                   ///< "" = f16 (or the engine's first)
  int64_t gpus = 0;                       ///< 0 = tp x pp x dp_attention
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t replicas = 1;  ///< data-parallel copies of the tp x pp layout (--replicas), each on its own GPUs with its own batch
  int64_t ep = 1;            ///< expert-parallel degree (--ep): routed experts sharded, exchanged by all-to-all
  int64_t dp_attention = 1;  ///< data-parallel attention ranks (--dp-attention), each with its own sequences
  std::optional<bool> flash_attention;
  std::optional<bool> graphs;
  std::optional<double> host_bandwidth_bytes_per_s;
  std::string host;           ///< --host: a cpu-class profile whose memory offloaded layers use; "" = the engine's default
  int64_t ubatch_tokens = 0;  ///< 0 = the engine's (llama.cpp -ub, vLLM max_num_batched_tokens)
  std::optional<int64_t> n_cpu_moe;  ///< --n-cpu-moe N: the routed experts of the first N layers stay in host memory (llama.cpp)
  bool cpu_moe = false;              ///< --cpu-moe: every layer's routed experts stay in host memory
  std::optional<int64_t> n_gpu_layers;  ///< --n-gpu-layers N (llama.cpp -ngl): layers on the GPU, the rest in host memory; unset = as many as fit
  // Serving techniques the advisor's transforms switch on (see Workload).
  Speculation speculation;
  double prefix_cached_fraction = 0;
  std::string attention_kernel;
  double attention_speedup = 1.0;
  std::optional<double> usable_memory_fraction;
  std::optional<double> engine_memory_share;  ///< --gpu-memory-utilization: vLLM's and SGLang's claimed share of memory
  bool entitled_memory_limit = false;
  bool weights_mmap = false;
  /// --weights-size "13.40GiB": the weights' total as llama-bench's size column (or the file) says,
  /// for a per-tensor mix the catalog does not know; "" = the format's own
  std::string weights_size;

  static constexpr const char* kDefaultBatch = "1";
  static constexpr int64_t kDefaultPromptTokens = 512;
  static constexpr int64_t kDefaultGenTokens = 128;
  std::string batch_or_default() const { return batch.value_or(kDefaultBatch); }
  int64_t prompt_or_default() const { return prompt_tokens.value_or(kDefaultPromptTokens); }
  int64_t gen_or_default() const { return gen_tokens.value_or(kDefaultGenTokens); }
  int64_t context_or_default() const { return context_tokens.value_or(0); }  ///< 0 = prompt + gen
  /// The KV reservation per sequence the request asks for (prompt + gen when no context is given).
  int64_t context_or_prompt_plus_gen() const {
    const int64_t c = context_or_default();
    return c ? c : prompt_or_default() + gen_or_default();
  }
};

/// A ready Scenario plus what was resolved on the way, for reports.
/// Points into the Catalog (device, engine, format, calibration); the Catalog must outlive it.
struct PreparedScenario {
  Scenario scenario;
  ResolvedModel model;
  WeightsBreakdown weights;
  const QuantFormat* quant = nullptr;
  Resolution hardware_how;
  std::vector<std::string> notes;            ///< defaults chosen and why
  const Calibration* calibration = nullptr;  ///< the user's calibration now in scenario.engine.backend, if any
};

PreparedScenario prepare_scenario(const Catalog& catalog, const ScenarioRequest& request);
/// The same with the model already resolved from request.model (no file is read again).
PreparedScenario prepare_scenario(const Catalog& catalog, const ScenarioRequest& request, const ResolvedModel& model);

/// The device as the request has it: --memory picks one of the sizes it is sold in, --link the
/// multi-GPU link (an accessory NVLink bridge only with --link nvlink). Null when nothing changes;
/// notes say which memory size and link the estimate uses. Bad input names the allowed values.
std::shared_ptr<const HardwareProfile> device_as_requested(const HardwareProfile& hw, const ScenarioRequest& request,
                                                           std::vector<std::string>& notes);

/// The form of `format` an engine takes: the format itself, its "hf-" checkpoint ("bf16" on
/// vLLM), or the first of its equivalents the engine takes ("mxfp4" on llama.cpp is the
/// mxfp4_moe GGUF). Null when the engine runs none of them.
const QuantFormat* engine_format(const Catalog& catalog, const EngineProfile& engine, const QuantFormat& format);

/// The model's native checkpoint format (ModelSpec::native_format) as the engine takes it,
/// where it runs on the device (runs_natively); null otherwise, and then the engine's default applies.
const QuantFormat* native_default_format(const Catalog& catalog, const ModelSpec& model, const EngineProfile& engine,
                                         const HardwareProfile& hw);

/// Formats to name when `requested` is refused: the model's native format, the engine's
/// default, then what the engine takes nearest in bits per weight to `requested`; at most
/// `limit`, then "...".
std::vector<std::string> formats_to_suggest(const Catalog& catalog, const EngineProfile& engine, const ModelSpec& model,
                                            const HardwareProfile& hw, const QuantFormat& requested, std::size_t limit);

/// The per-tensor weights of a model in a format (the GGUF's own table when the model came from a file).
WeightsBreakdown model_weights(const Catalog& catalog, const ResolvedModel& model, const QuantFormat& format);

/// `weights` with every tensor's bytes scaled so that they total `total_bytes`: a file of the same
/// model in a mix of tensor types the catalog does not list (Unsloth's UD-*_XL files keep some
/// tensors wider than their name's type), read as the named format in proportion. `what` names the
/// input in errors: a total outside 0.5-2x the format's is not this model in this format (exit 2).
WeightsBreakdown scaled_to_total(WeightsBreakdown weights, double total_bytes, const std::string& what);

/// What analyze() needs from the per-tensor weights.
WeightsSummary summarize_weights(const ModelSpec& spec, const WeightsBreakdown& weights);
/// The same with the spec's parameter_counts() already worked out.
WeightsSummary summarize_weights(const ModelSpec& spec, const WeightsBreakdown& weights, const ParameterCounts& preset);

/// Refuses a parallel layout (w.tp x w.pp = w.gpus, each at least 1) the
/// model, the device or the engine cannot run: tp must divide the attention
/// heads and divide or be a multiple of the KV heads, pp at most the layers,
/// several GPUs only on a device that has them and an engine that splits a
/// model over them. prepare_scenario and the search's ScenarioCache both call it.
void check_layout(const ModelSpec& model, const HardwareProfile& hw, const EngineProfile& engine, const Workload& w);

/// The host-memory bandwidth offloaded layers run at: the user's figure, else
/// the engine's own where it keeps layers in host memory on a discrete device.
std::optional<double> host_bandwidth_for(const HardwareProfile& hw, const EngineProfile& engine, const std::optional<double>& requested);

/// The host side of a scenario on this device and engine: the host-memory bandwidth offloaded
/// layers run at (host_bandwidth_for, or the --host CPU's peak x the engine's host efficiency),
/// the host named, and the host CPU's matrix rate (the --host CPU's, else the engine's default
/// host). Notes say which host was used; a --host that is not a CPU is bad input.
void set_host(const Catalog& catalog, const HardwareProfile& hw, const EngineProfile& engine, const ScenarioRequest& request, Workload& w,
              std::vector<std::string>& notes);

/// The notes the device adds about the KV cache dtype (FP8 KV without native FP8).
std::vector<std::string> kv_dtype_notes(const HardwareProfile& hw, const std::string& kv_dtype);
/// A format whose GEMMs need units the device lacks (FP8 W8A8 or W4A8 on an A100) is computed as the
/// weight-only path engines fall back to, dequantized to 16 bits in the kernel; this says so.
std::vector<std::string> weight_only_notes(const HardwareProfile& hw, const QuantFormat& format);
/// The publisher's own checkpoint of `model` (for the name it was asked for by) in the number format
/// of `format` (FP8 by its matrix dtype: block-scaled where `format` is per-channel) that `engine`
/// runs, or nullptr: an official checkpoint is what an engineer serves before quantizing their own.
const OfficialRelease* official_twin(const Catalog& catalog, const ResolvedModel& model, const EngineProfile& engine, const QuantFormat& format);
/// Where the weights are, or could be, the model publisher's own checkpoint (ModelSpec::releases):
/// "the official checkpoint Qwen/Qwen3-32B-FP8", or, for a self-made FP8 of a model whose publisher
/// ships block-scaled FP8 that the engine runs, the format to ask for instead. None otherwise.
std::optional<std::string> official_checkpoint_note(const Catalog& catalog, const ResolvedModel& model, const EngineProfile& engine,
                                                    const QuantFormat& format);

/// Picks the engine and backend for a device: the user's choice checked
/// against what runs there, else the device class default.
EngineChoice choose_engine(const Catalog& catalog, const HardwareProfile& hw, const std::string& requested);

}  // namespace optadvisor
