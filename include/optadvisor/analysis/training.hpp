// SPDX-License-Identifier: MIT
// The training model: what one training step costs on each GPU in memory and
// time, across precisions, ZeRO/FSDP sharding, tensor, pipeline and context
// parallelism, activation recomputation and LoRA/QLoRA, and what binds it.
// analyze_training() is pure (no I/O, no logging); the engine profiles and
// the cluster facts it reads come from data/training/ (schema
// data/schema/training.schema.json). See docs/training.md for the method.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/catalog/hardware.hpp"
#include "optadvisor/catalog/model.hpp"
#include "optadvisor/readers/model_source.hpp"

namespace optadvisor {

/// kBf16Pure: BF16 weights, gradients and optimizer moments, no FP32 master copy (the optimizer
/// rounds stochastically or keeps a Kahan term instead).
enum class TrainPrecision { kBf16, kFp8, kBf16Pure };
enum class Recompute { kNone, kSelective, kFull };
enum class PipelineSchedule { k1F1B, kInterleaved };
/// What binds a training step.
enum class TrainingBound { kCompute, kMemoryCapacity, kCommunication, kPipelineBubble, kHostOffload };

std::string_view to_string(TrainPrecision p);
std::string_view to_string(Recompute r);
std::string_view to_string(PipelineSchedule s);
std::string_view to_string(TrainingBound b);

/// How data parallelism shards the model states: "ddp" (stage 0), "zero1"
/// (optimizer states), "zero2" (+ gradients), "zero3" / "fsdp" (+ parameters).
struct Sharding {
  std::string name = "ddp";
  int stage = 0;  ///< 0..3; a state component is sharded when stage >= its sharded_from_stage
};

/// One per-parameter model state under an engine's convention.
struct StateComponent {
  std::string role;                     ///< "weights", "gradients", "master" or "optimizer" (bytes from the OptimizerSpec)
  std::string what;                     ///< "bf16 working weights", "fp32 main gradients", ...
  double bytes_per_param = 0;           ///< unused for role "optimizer"
  int sharded_from_stage = 4;           ///< the ZeRO stage from which it is split over the data-parallel group (4 = never)
  bool persistent_when_sharded = true;  ///< false: once sharded it exists only for the gathered layers (FSDP2's bf16 copies)
  bool step_only = false;               ///< allocated only during the optimizer step (DeepSpeed's fp32 gradient partition)
};

/// An optimizer's per-parameter state (moments), by its own layout.
struct OptimizerSpec {
  std::string id;  ///< "adamw", "adamw-8bit"
  std::string description;
  int states = 2;  ///< tensors per parameter (Adam: m and v)
  double bits_per_state = 32;
  uint64_t block_elements = 0;  ///< block-wise quantization: one scale per block (0 = none)
  double scale_bytes_per_block = 0;
  /// Bytes per parameter of all its states, block scales included.
  double bytes_per_param() const;
};

/// Activation tensors a layer saves for its backward pass, by group. The
/// groups a recompute mode drops are named in the engine profile.
///   norm_inputs, norm_outputs, dropout_masks: replicated across tensor-parallel
///     ranks unless sequence parallelism is on;
///   q, k, v, attention_out, attention_scores, mlp_gate, mlp_up, mlp_act,
///     mlp_down_input: split across tensor-parallel ranks.
const std::vector<std::string>& activation_groups();

/// A training framework's conventions and achieved efficiencies.
struct TrainingEngineProfile {
  std::string id;  ///< "pytorch-fsdp2", "megatron", "deepspeed"
  std::string name;
  std::vector<std::string> aliases;
  std::string runs_as;  ///< the id hardware profiles list in `engines` ("pytorch", ...)
  std::string description;

  std::vector<std::string> shardings;  ///< accepted --sharding values
  std::string default_sharding;
  std::vector<std::string> optimizers;
  std::string default_optimizer;
  std::string default_recompute = "none";
  bool sequence_parallel_default = false;  ///< with tp > 1
  std::string default_pipeline_schedule = "1f1b";
  uint32_t default_virtual_stages = 2;        ///< for the interleaved schedule
  bool lora = false;                          ///< runs LoRA / QLoRA fine-tuning
  std::vector<std::string> lora_base_quants;  ///< quant ids the frozen base may use (QLoRA)

  /// Model states per parameter, by role; the optimizer's moments come from the OptimizerSpec.
  std::vector<StateComponent> states;
  double adapter_bytes_per_param = 8;   ///< LoRA adapters: fp32 weights and gradients (moments from the optimizer)
  double grad_reduce_bytes = 4;         ///< bytes per gradient element on the wire
  double param_gather_bytes = 2;        ///< bytes per parameter all-gathered (ZeRO-3 / FSDP, ZeRO-1/2 after the step)
  double gathered_units = 2;            ///< ZeRO-3 / FSDP: layers gathered at once (current + prefetched)
  double gathered_bytes_per_param = 4;  ///< ZeRO-3 / FSDP: unsharded 16-bit parameters and gradients of a gathered layer
  /// With pipeline stages, keep parameters gathered and gradients unsharded across the microbatches of a
  /// step (torchtitan sets reshard_after_forward=False under PP): only master weights and moments stay sharded.
  bool pp_keeps_unsharded = false;
  double logits_bytes_per_entry = 10;       ///< bytes per token per vocabulary entry held around the loss
  double fused_logits_bytes_per_entry = 4;  ///< the same with a fused cross-entropy kernel (16-bit logits, gradient in place)
  bool fused_loss_default = false;
  bool fused_gated_mlp = false;                          ///< the SwiGLU product is fused: silu(gate) is not saved
  std::vector<std::string> selective_drops;              ///< activation groups selective recompute does not save
  std::vector<std::string> selective_recompute_matmuls;  ///< layer matmuls selective recompute runs again
  std::string selective_description;
  std::map<std::string, bool> dp_overlap;  ///< by sharding name: gradient/parameter traffic overlapped with compute
  double tp_overlap = 0;                   ///< share of tensor-parallel traffic hidden behind GEMMs
  double runtime_overhead_bytes = 0;       ///< CUDA context, NCCL and library workspaces per GPU
  double allocator_overhead_fraction = 0;  ///< caching-allocator reserve on top of live tensors
  bool zero_memory_estimator = false;      ///< ships DeepSpeed's ZeRO model-states estimator, quoted beside the model

  /// Host offload the engine runs (`offload` in the profile); an empty `how` = not supported.
  struct Offload {
    std::string optimizer_how;  ///< how to turn on optimizer CPU offload ("" = the engine has none)
    /// With the optimizer offloaded, the 16-bit gradients leave the GPU bucket by bucket (DeepSpeed
    /// ZeRO-Offload) instead of being held whole until the step (Megatron's grad buffer).
    bool gradients_to_host = false;
    double gradient_bucket_bytes = 0;  ///< GPU gradient buffer kept when gradients_to_host
    std::string activations_how;       ///< how to turn on activation offload ("" = none)
    double activation_layers_on_gpu = 2;  ///< layers of saved activations held on the GPU (the one in use and the next, prefetched)
  } offload;

  /// torch.compile (`compile` in the profile): whether the framework has the switch, whether the
  /// profile's runs compiled, and the elementwise traffic of eager kernels relative to compiled ones.
  struct Compile {
    bool supported = false;
    bool default_on = false;
    double eager_elementwise_factor = 1;  ///< eager / compiled elementwise bytes (unfused norms, activations, RoPE)
    std::string how;                      ///< how to turn it on
  } compile;

  /// Fitted efficiencies (bench/training_accuracy.cpp --fit).
  std::map<std::string, double> gemm_efficiency;  ///< by precision: achieved / the device's maximum achievable matmul rate
  double attention_efficiency = 1;                ///< achieved / the FlashAttention-2 reference curve of the device
  double elementwise_traffic = 1;                 ///< share of eager elementwise traffic left after fusion
  double layer_overhead_s = 0;  ///< per layer per microbatch, forward + backward: kernel launches and host work not hidden
  double gather_copy_bytes_per_param =
      0;  ///< ZeRO-3/FSDP: memory traffic per parameter per microbatch to unpack gathered and pack reduced buffers
  std::vector<std::string> calibrated_on;  ///< bench/data/training_runs.csv ids
  std::vector<std::string> notes;
  nlohmann::json sources;
};

/// The CPU side of one node: what optimizer and activation offload use.
struct TrainingHost {
  std::string what;  ///< "DGX H100: 2 x Xeon Platinum 8480C, 2 TB DDR5-4800"
  double memory_bytes = 0;  ///< per node
  double memory_bandwidth_bytes_per_s = 0;  ///< per node, peak
};

/// Facts about the machines around the GPU: nodes, networks, matmul and
/// attention ceilings, optimizer layouts. One document, data/training/system.json.
struct TrainingSystem {
  uint32_t gpus_per_node = 8;
  double inter_node_bits_per_s_default = 0;             ///< per GPU
  std::map<std::string, double> inter_node_bits_per_s;  ///< per GPU, by hardware id
  double intra_node_collective_efficiency = 1;          ///< NCCL bus bandwidth / link bandwidth per direction
  double inter_node_collective_efficiency = 1;
  double collective_latency_s = 0;                                      ///< fixed cost of one collective
  double memory_bandwidth_efficiency = 1;                               ///< achievable / peak HBM bandwidth for elementwise kernels
  std::map<std::string, std::map<std::string, double>> matmul_ceiling;  ///< hardware id -> precision -> fraction of peak
  std::map<std::string, double> matmul_ceiling_default;                 ///< precision -> fraction of peak
  /// FlashAttention-2 forward+backward reference: efficiency(s) = at_long_seq x s / (s + half_seq).
  std::map<std::string, double> attention_efficiency_by_arch;  ///< architecture keyword -> at_long_seq
  double attention_efficiency_default = 0.3;
  double attention_half_seq = 512;
  std::map<std::string, OptimizerSpec> optimizers;
  /// The host around the GPUs, for offload: by device class ("datacenter-gpu"), else `default`.
  std::map<std::string, TrainingHost> hosts;
  TrainingHost default_host;
  double host_optimizer_bandwidth_efficiency = 0.5;  ///< CPU Adam's achieved share of the host memory bandwidth
  double pcie_efficiency = 0.9;                      ///< achieved share of the PCIe per-direction rate for pinned copies
  nlohmann::json sources;
  /// The host for a device: its class's, else the default.
  const TrainingHost& host_for(const HardwareProfile& hw) const;
};

/// The training data: engine profiles and the system document.
struct TrainingData {
  std::vector<TrainingEngineProfile> engines;
  TrainingSystem system;
  /// The engine for a name or alias ("pytorch", "fsdp2", "megatron"); nullptr if none.
  const TrainingEngineProfile* find_engine(std::string_view name) const;
};

/// Parses catalog.training_documents(): every engine profile and the system
/// document; a later document with the same id replaces an earlier one
/// (overlays). Throws bad_input naming the file for a semantic problem.
TrainingData training_data(const Catalog& catalog);
/// Same, from raw (display path, document) pairs; problems are appended.
TrainingData training_data_from(const std::vector<std::pair<std::string, nlohmann::json>>& documents, std::vector<Problem>& problems);

/// The architecture facts the training model needs, summed once from the
/// exact tensor list (or built from a GPT-style shape for published runs).
struct TrainingModel {
  std::string id;
  std::string name;
  double params = 0;            ///< every stored parameter
  double embedding_params = 0;  ///< input lookup tables (token, learned position and Gemma 3n per-layer embeddings): no matmul
  double head_params = 0;       ///< output projection (a matmul; equals the token embedding when tied)
  bool tied_embeddings = false;
  double other_params = 0;  ///< outside the blocks and the two above (final norm)
  double layer_params = 0;  ///< average block
  double largest_layer_params = 0;
  double layer_active_params = 0;  ///< average block, touched per token (MoE: routed subset)
  double layer_lora_dims = 0;      ///< per block: sum over adaptable linear layers of (inputs + outputs)
  /// Per block, the matmul parameters behind each group selective recompute may rerun ("attn_k", "attn_output", "ffn_up", ...).
  std::map<std::string, double> layer_matmul_params_by_kind;
  uint64_t layers = 0;
  uint64_t hidden = 0;
  uint64_t heads = 0;
  uint64_t q_width = 0;              ///< query width per token (heads x query head dim)
  uint64_t k_width = 0;              ///< key width per token as attention consumes it (expanded for MLA)
  uint64_t v_width = 0;              ///< value width per token
  uint64_t attention_out_width = 0;  ///< attention output width (heads x value head dim)
  uint64_t kv_heads = 0;
  double ffn_active_width = 0;  ///< MLP hidden width a token passes through (MoE: routed experts + shared)
  uint64_t vocab = 0;
  uint64_t max_position = 0;          ///< longest context the model allows (0 = unknown)
  uint64_t sliding_window = 0;        ///< 0 = none
  double sliding_layer_fraction = 0;  ///< share of layers with the window
  bool gated_mlp = true;              ///< SwiGLU/GeGLU (gate and up) vs one activation (GELU)
  bool dropout = false;               ///< dropout after attention and MLP (and on attention probabilities)
  bool rope = true;                   ///< rotary position embedding applied to q and k
  bool moe = false;
};

/// From a model spec's exact tensor list.
TrainingModel training_model(const ModelSpec& spec);

/// A GPT-2/3-style decoder (Megatron GPT, MPT): MHA, 4h-wide GELU MLP unless
/// stated, LayerNorm, learned positions; used for published runs whose
/// architectures are not presets.
struct GptShape {
  std::string id;
  uint64_t hidden = 0;
  uint64_t layers = 0;
  uint64_t heads = 0;
  uint64_t ffn = 0;  ///< 0 = 4 x hidden
  uint64_t vocab = 0;
  uint64_t positions = 0;  ///< learned position embeddings (0 = none)
  bool tied = false;
  bool biases = true;  ///< linear and LayerNorm biases
  bool dropout = true;
};
TrainingModel training_model(const GptShape& shape);

/// What the user asked to train, checked.
struct TrainingWorkload {
  uint32_t gpus = 1;
  uint32_t tp = 1;
  uint32_t pp = 1;
  uint32_t cp = 1;
  uint32_t dp = 1;            ///< gpus / (tp x pp x cp)
  uint64_t seq = 4096;        ///< tokens per sequence
  uint64_t micro_batch = 1;   ///< sequences per microbatch per data-parallel replica
  uint64_t global_batch = 1;  ///< sequences per optimizer step, all replicas
  uint64_t microbatches = 1;  ///< per replica per step: global / (dp x micro)
  TrainPrecision precision = TrainPrecision::kBf16;
  Recompute recompute = Recompute::kNone;
  Sharding sharding;
  bool sequence_parallel = false;
  PipelineSchedule schedule = PipelineSchedule::k1F1B;
  uint32_t virtual_stages = 1;  ///< per GPU, interleaved schedule
  bool flash_attention = true;
  bool fused_loss = false;  ///< a fused cross-entropy kernel: the logits are not upcast and copied
  bool compiled = true;     ///< torch.compile fuses the elementwise kernels (engines without the switch: their own fused kernels)
  std::string optimizer = "adamw";
  uint64_t lora_rank = 0;                ///< 0 = full training
  std::string lora_base_quant;           ///< "" = 16-bit frozen base; else the QLoRA storage format id
  double lora_base_bytes_per_param = 2;  ///< frozen base weights, exact over the tensor list
  bool optimizer_offload = false;        ///< master weights and moments in host memory, the step on the CPU (ZeRO-Offload)
  bool activation_offload = false;       ///< saved activations copied to host memory and back for the backward pass
};

/// Points into the Catalog (device) and into PreparedTraining::data (engine, system): both must outlive it.
struct TrainingScenario {
  const HardwareProfile* hardware = nullptr;
  TrainingModel model;
  const TrainingEngineProfile* engine = nullptr;
  const TrainingSystem* system = nullptr;
  TrainingWorkload workload;
  TrainingHost host;  ///< the node's CPU side (system document, or --host)
};

/// Per-GPU memory at the step's peak (the heaviest pipeline stage).
struct TrainingMemory {
  double weights_bytes = 0;  ///< working weights (frozen base for LoRA)
  double gradients_bytes = 0;
  double master_weights_bytes = 0;
  double optimizer_bytes = 0;             ///< optimizer moments
  double adapter_bytes = 0;               ///< LoRA adapters with their gradients and optimizer states
  double gathered_bytes = 0;              ///< ZeRO-3 / FSDP: layers gathered for compute
  double activation_bytes = 0;            ///< saved activations of every microbatch in flight
  double activation_bytes_per_layer = 0;  ///< one layer, one microbatch, as saved
  double working_bytes = 0;               ///< transient: a layer being recomputed, the embedding output
  double logits_bytes = 0;                ///< logits and loss buffers (last stage)
  double overhead_bytes = 0;              ///< runtime context, workspaces, allocator reserve
  double step_bytes = 0;                  ///< during the optimizer step: states, step-only buffers, overhead
  double total_bytes = 0;                 ///< the larger of the forward/backward peak and step_bytes
  double capacity_bytes = 0;              ///< usable per GPU
  bool fits = false;  ///< on the GPU, and on the host when anything is offloaded
  double host_bytes = 0;           ///< per GPU, in host memory (offloaded optimizer states, activations)
  double host_bytes_per_node = 0;  ///< host_bytes x the GPUs of a node
  double host_capacity_bytes = 0;  ///< the node's host memory
  bool host_fits = true;
  double in_flight_microbatches = 1;  ///< activation sets held by the first stage (pipeline)
  std::string peak_stage;             ///< "only", "first" or "last"
  double model_state_bytes() const { return weights_bytes + gradients_bytes + master_weights_bytes + optimizer_bytes + adapter_bytes; }
};

/// Time of one optimizer step on one GPU, split by cause.
struct TrainingTime {
  double step_time_s = 0;
  double microbatch_time_s = 0;  ///< forward + backward of one microbatch on one stage
  double gemm_s = 0;             ///< per step, every microbatch
  double attention_s = 0;
  double elementwise_s = 0;  ///< norms, activations, residuals, casts (memory-bound)
  double overhead_s = 0;     ///< kernel launches and host work per layer and microbatch
  double recompute_s = 0;    ///< included in the three above, shown separately
  double optimizer_s = 0;        ///< the optimizer step on the GPU
  double host_optimizer_s = 0;   ///< optimizer offload: the step on the CPU, with its copies, as exposed
  double activation_offload_s = 0;  ///< activation offload: copies not hidden behind compute
  double dequant_s = 0;          ///< QLoRA: expanding the 4-bit base for every pass
  double tp_comm_s = 0;          ///< exposed tensor-parallel collectives
  double cp_comm_s = 0;          ///< exposed context-parallel exchanges
  double pp_p2p_s = 0;           ///< pipeline sends
  double pp_bubble_s = 0;        ///< pipeline fill and drain
  double dp_comm_s = 0;          ///< gradient / parameter traffic, total
  double dp_comm_exposed_s = 0;  ///< the part not hidden behind compute
  double compute_s() const { return gemm_s + attention_s + elementwise_s + overhead_s + optimizer_s + dequant_s; }
  double offload_s() const { return host_optimizer_s + activation_offload_s; }
  double communication_s() const { return tp_comm_s + cp_comm_s + pp_p2p_s + dp_comm_exposed_s; }
};

/// The peaks, efficiencies and bandwidths the estimate used.
struct TrainingFactors {
  std::string compute_dtype;    ///< "bf16" or "fp8" for the layer GEMMs
  double peak_flops_per_s = 0;  ///< of compute_dtype (MFU's denominator)
  double matmul_ceiling = 0;    ///< device's maximum achievable matmul fraction
  double gemm_efficiency = 0;   ///< engine's share of that ceiling
  double achievable_gemm_flops_per_s = 0;
  double attention_efficiency = 0;          ///< of the bf16 peak, at this sequence length
  double memory_bandwidth_bytes_per_s = 0;  ///< achievable, for elementwise kernels
  double intra_node_bytes_per_s = 0;        ///< per direction, achievable
  double inter_node_bytes_per_s = 0;        ///< per GPU, achievable
  bool dp_spans_nodes = false;
  bool tp_spans_nodes = false;
};

struct TrainingAnalysis {
  TrainingMemory memory;
  TrainingTime time;
  TrainingFactors factors;
  double tokens_per_step = 0;
  double tokens_per_s = 0;  ///< all GPUs
  double tokens_per_s_per_gpu = 0;
  double model_flops_per_token = 0;     ///< MFU convention: 6 x matmul params + non-causal attention (LoRA: 4 x base + 6 x adapters)
  double hardware_flops_per_token = 0;  ///< the same plus recomputation
  double mfu = 0;                       ///< model FLOP/s over the peak of the precision used
  double hfu = 0;
  double trainable_params = 0;
  TrainingBound bound = TrainingBound::kCompute;
  std::string explanation;
  std::vector<std::string> warnings;
  std::vector<std::string> assumptions;
};

/// The model. Pure; results stay finite for any valid scenario.
TrainingAnalysis analyze_training(const TrainingScenario& scenario);

/// Saved activation bytes of one layer per token on one GPU, by group, before
/// recompute drops any (16-bit activations, 1-byte dropout masks). Korthikanti
/// et al. 2022 Table 2 generalised to GQA, gated MLPs and FlashAttention;
/// a GPT layer without FlashAttention gives (34 + 5as/h) x h bytes per token.
std::map<std::string, double> activation_bytes_per_token_by_group(const TrainingModel& m, const TrainingWorkload& w, bool fused_gated_mlp);

/// DeepSpeed's own model-state estimators, reproduced exactly
/// (deepspeed/runtime/zero/stage_1_and_2.py estimate_zero2_model_states_mem_needs,
/// stage3.py estimate_zero3_model_states_mem_needs).
struct DeepSpeedEstimate {
  double gpu_bytes = 0;
  double cpu_bytes = 0;
};
struct DeepSpeedEstimatorInput {
  double params = 0;
  double largest_layer_params = 0;
  uint32_t gpus_per_node = 8;
  uint32_t nodes = 1;
  int stage = 2;  ///< 2 or 3
  bool offload_optimizer = false;
  bool offload_params = false;  ///< stage 3 only
  bool zero_init = true;        ///< stage 3 only
  double additional_buffer_factor = 1.5;
  bool legacy_zero2 = false;  ///< the formula before DeepSpeed PR #5099 (4P + 16P/N), still printed in its docs
};
DeepSpeedEstimate deepspeed_estimate(const DeepSpeedEstimatorInput& in);
/// DeepSpeed's estimate for a scenario: the engine is DeepSpeed, the stage 2 or 3, full training, no
/// tensor or pipeline split (the estimator knows none); nullopt otherwise.
std::optional<DeepSpeedEstimate> deepspeed_estimate_for(const TrainingScenario& scenario);

/// What the user typed for --goal training.
struct TrainingRequest {
  std::string hardware;
  ModelRequest model;
  std::string engine;  ///< "" = pytorch-fsdp2
  int64_t gpus = 0;    ///< 0 = tp x pp x cp
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t cp = 1;
  int64_t seq = 0;  ///< 0 = 4096, or the model's maximum if shorter
  int64_t micro_batch = 1;
  int64_t global_batch = 0;               ///< 0 = dp x micro-batch (no accumulation)
  std::string precision;                  ///< "" = bf16
  std::string recompute;                  ///< "" = the engine's default
  std::string sharding;                   ///< "" = the engine's default
  std::string optimizer;                  ///< "" = the engine's default
  std::string pp_schedule;                ///< "" = the engine's default
  int64_t virtual_stages = 0;             ///< 0 = the engine's default
  std::optional<bool> sequence_parallel;  ///< unset: the engine's default
  std::optional<bool> flash_attention;    ///< unset: on
  std::optional<bool> fused_loss;         ///< unset: the engine's default
  std::optional<bool> compile;            ///< torch.compile; unset: the engine's default
  int64_t lora_rank = 0;
  std::string quant;  ///< QLoRA base format, with lora_rank
  std::optional<bool> optimizer_offload;   ///< unset: off
  std::optional<bool> activation_offload;  ///< unset: off
  std::string host;                        ///< --host: a cpu-class profile for the node's host ("" = the system document's)
};

/// A ready TrainingScenario plus what was resolved, for reports.
/// `scenario.hardware` points into the Catalog; the Catalog must outlive it (the engine and
/// system it points to are owned by `data`, shared by copies).
struct PreparedTraining {
  std::shared_ptr<const TrainingData> data;  ///< owns the engine and system the scenario points to
  TrainingScenario scenario;
  ResolvedModel model;
  Resolution hardware_how;
  std::vector<std::string> notes;  ///< defaults chosen and fallbacks, printed
};

/// Resolves names and checks the request; one-line bad_input for every contradiction.
PreparedTraining prepare_training(const Catalog& catalog, const TrainingRequest& request);
/// As above with the model given (tests, suggestions).
PreparedTraining prepare_training(const Catalog& catalog, const TrainingRequest& request, const ResolvedModel& model);
/// As above for an architecture that is not a preset (published runs: GPT, MPT); no QLoRA.
PreparedTraining prepare_training(const Catalog& catalog, const TrainingRequest& request, const TrainingModel& model);

/// One change to the request and what it gives.
struct TrainingChange {
  std::string description;  ///< "--recompute selective"
  std::string kind;         ///< "same math" (the run computes the same thing) or "changes the run"
  TrainingRequest request;
  double memory_per_gpu_bytes = 0;
  double tokens_per_s = 0;
  bool fits = false;
};

/// For a run that does not fit: the smallest changes that make it fit, best
/// first (one change when one suffices, else a short combination), plus
/// single changes that come closest. Each change is re-run through the model.
std::vector<TrainingChange> suggest_training_fixes(const Catalog& catalog, const PreparedTraining& prepared,
                                                   const TrainingRequest& request);

}  // namespace optadvisor
