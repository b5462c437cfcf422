// SPDX-License-Identifier: MIT
// analyze(Scenario) -> Analysis: memory, prefill, decode and serving
// throughput, with what binds each phase. A pure function: no I/O, no
// logging, no globals; microseconds per call.
#pragma once

#include <string>
#include <vector>

#include "optadvisor/analysis/scenario.hpp"

namespace optadvisor {

enum class Bound { kCompute, kMemoryBandwidth, kMemoryCapacity, kOverhead, kInterconnect, kThermal, kNone };
std::string_view to_string(Bound b);

struct MemoryBreakdown {
  double weights_bytes = 0;     ///< per device
  double kv_cache_bytes = 0;    ///< per device, for the batch at full context
  double activation_bytes = 0;  ///< activation / compute buffers per device
  double overhead_bytes = 0;    ///< runtime context and engine reservations per device
  double total_bytes = 0;
  double capacity_bytes = 0;  ///< usable by the program per device
  double reserved_bytes = 0;  ///< what the engine claims up front (vLLM), else total
  double limit_bytes = 0;     ///< what the engine may use: capacity, or capacity x its reserve fraction
  std::optional<double> engine_share = std::nullopt;  ///< that fraction (vLLM gpu_memory_utilization, SGLang mem_fraction_static); none for other engines
  bool fits = false;
  double kv_bytes_per_token = 0;    ///< per sequence, all layers, at the window-capped full context average
  uint64_t kv_tokens_per_sequence = 0;  ///< tokens of KV each sequence holds: its context, or on a continuous-batching server prompt + generated (whole blocks)
  uint64_t max_batch = 0;           ///< sequences of kv_tokens_per_sequence that fit
  uint64_t max_context = 0;         ///< tokens per sequence that fit at this batch (a server: the longest one sequence its pool holds)
  uint64_t offloaded_layers = 0;    ///< llama.cpp layers kept in host memory
  double offloaded_bytes = 0;       ///< weights of those layers, per device
  uint64_t host_expert_layers = 0;  ///< MoE layers whose routed experts stay in host memory (--n-cpu-moe, --cpu-moe)
  double host_expert_bytes = 0;     ///< those experts' bytes, in host memory (not in weights_bytes)
  uint64_t total_layers = 0;
};

/// The cost of one phase, split so the binding resource is visible.
struct PhaseEstimate {
  double time_s = 0;        ///< wall time of the phase (prefill: TTFT; decode: per token)
  double tokens_per_s = 0;  ///< aggregate over the batch
  double tokens_per_s_per_sequence = 0;
  double flops = 0;  ///< per phase (prefill) or per step (decode)
  double bytes = 0;  ///< memory traffic, same basis
  double compute_time_s = 0;
  double attention_compute_time_s = 0;  ///< the attention part of compute_time_s
  double weights_time_s = 0;
  double kv_time_s = 0;
  double overhead_time_s = 0;
  double interconnect_time_s = 0;
  double offload_time_s = 0;  ///< reading host-resident layers
  double passes = 1;          ///< forward passes: prefill's prompts in chunks of the ubatch; 1 for a decode step
  /// The part of each component the phase's time shows: of a weight read and its matrix math (or a
  /// KV read and its attention math), which overlap, only the longer; overhead and interconnect
  /// in full. They sum to time_s, so shares of them describe the phase's time.
  double exposed_compute_s = 0;
  double exposed_weights_s = 0;
  double exposed_kv_s = 0;
  double exposed_offload_s = 0;
  /// The host-resident weights were copied to the device over PCIe (a prefill ubatch at or above
  /// the engine's threshold): the offload time is those copies, bound by the link.
  bool host_weights_streamed = false;
  /// How the routed experts were multiplied in the phase's passes (MoE models; tokens_per_pass 0 otherwise).
  struct Experts {
    double tokens_per_pass = 0;       ///< the tokens of one pass, every rank's (what the experts see)
    double tokens_per_expert = 0;     ///< per touched expert
    bool grouped = false;             ///< the grouped GEMM; else mat-vec kernels, each token its own experts
    double share_of_dense_rate = 1;   ///< the grouped GEMM's rate over the dense one (1 for mat-vec)
    /// The fixed cost of multiplying 16-bit experts one expert at a time over the phase's passes
    /// (BackendProfile::float_expert_call_s), part of the overhead time; 0 where a grouped kernel runs them.
    double per_expert_loop_s = 0;
    /// The weight format whose own grouped-GEMM terms the experts ran at (BackendProfile::
    /// expert_gemm_by_quant); "" = the backend's terms, or the mat-vec kernels.
    std::string format_terms;
  } experts;
  double arithmetic_intensity = 0;  ///< FLOP per byte
  double ridge_point = 0;           ///< achievable FLOP/s over achievable bytes/s
  Bound bound = Bound::kNone;
  const char* phase = "";  ///< "prefill" or "decode" (static text), what explanation() calls it
  /// "decode: memory-bandwidth bound, memory reads 97% of the time (weights 90%, KV cache 7%, ...);
  /// arithmetic intensity ... vs ridge ...": written from the numbers above when asked for, so an
  /// analysis that is never shown costs no text.
  std::string explanation() const;
  /// FLOP/s the phase achieves (its FLOPs over its time; a roofline chart's y), 0 without time.
  double achieved_flops_per_s() const { return time_s > 0 ? flops / time_s : 0; }
};

/// Efficiencies and peaks the estimate used, for the user to see.
struct Factors {
  double peak_bandwidth_bytes_per_s = 0;
  double achievable_bandwidth_bytes_per_s = 0;
  double peak_compute_flops_per_s = 0;
  std::string compute_dtype;
  double achievable_compute_flops_per_s = 0;
  double decode_bandwidth_efficiency = 0;
  /// The weight format's decode share on the routed experts' bytes alone, where the format stores
  /// only them below 16 bits (WeightsSummary::experts_only_quantized); 1 otherwise, the format's
  /// share being in decode_bandwidth_efficiency.
  double expert_format_decode_efficiency = 1;
  /// Set when the backend's per-compute-unit ceiling binds: compute units x bytes/s per unit
  /// (achievable_bandwidth_bytes_per_s is then this, and decode_bandwidth_efficiency its share of peak).
  double compute_unit_bandwidth_ceiling_bytes_per_s = 0;
  double prefill_compute_efficiency = 0;
  double layer_overhead_s = 0;
  double step_overhead_s = 0;
  /// Per pass and MoE layer: the backend's uncaptured routing and expert dispatch (MLX); 0 for a
  /// dense model or a backend without one.
  double moe_layer_overhead_s = 0;
  /// Per pass and MLA layer: the engine's latent-attention path beyond a GQA layer's (llama.cpp); 0
  /// for a model without MLA or an engine without the term.
  double mla_layer_overhead_s = 0;
  /// Per pass and layer with a lightning indexer: the engine's indexer kernel chain; 0 for a model
  /// without one or an engine without the term.
  double dsa_indexer_layer_s = 0;
  bool graphs = false;
  bool flash_attention = true;
  double link_bandwidth_bytes_per_s = 0;  ///< per direction, for tensor parallel
  /// Host to device (PCIe, per direction, after packet overhead): what weights kept in host memory
  /// stream over when the engine runs their operators on the device; 0 when the device has no PCIe.
  double host_to_device_bytes_per_s = 0;
};

struct Analysis {
  MemoryBreakdown memory;
  PhaseEstimate prefill;
  PhaseEstimate decode;  ///< averaged over the generated tokens
  uint64_t batch = 1;    ///< sequences the estimate ran (the resolved --batch)
  /// Sequences asked for: the resolved --batch before a continuous-batching server's KV pool cut it
  /// to `batch` (equal to it otherwise).
  uint64_t batch_asked = 1;
  bool has_throughput = false;
  uint64_t throughput_batch = 0;
  double output_tokens_per_s = 0;  ///< serving: replicas x batch x gen / (prefill + decode time)
  /// One request: TTFT + gen x time per output token (prefill.time_s + gen x decode.time_s).
  double request_latency_s = 0;
  /// Tokens the batch produces per second over a request's whole cycle: batch x gen (batch x
  /// prompt when nothing is generated) / request_latency_s, times the replicas serving side by
  /// side. Defined at batch 1 too.
  double serving_tokens_per_s = 0;
  double sustained_factor = 1.0;  ///< thermal: sustained / burst (phones)
  Factors factors;
  std::vector<std::string> warnings;
  std::vector<std::string> assumptions;
};

/// How much of an Analysis to fill: kNumbers skips the warnings
/// and assumption texts (every number is the same), for callers that evaluate
/// many scenarios and show few (search, the advisor's candidate changes).
enum class Detail { kFull, kNumbers };

/// The model. Throws nothing for valid scenarios; results stay finite.
Analysis analyze(const Scenario& scenario, Detail detail = Detail::kFull);

/// KV-cache bytes for one sequence of `context` tokens, per device (divided by tp).
double kv_bytes_per_sequence(const Scenario& s, uint64_t context);

/// Routed experts' grouped GEMM in one forward pass of `tokens` tokens (llama.cpp mul_mat_id:
/// one product per touched expert over the tokens routed to it).
struct ExpertGemm {
  double touched_fraction = 1.0;   ///< expected share of the experts the pass touches
  double tokens_per_expert = 0;    ///< tokens x k / (E x touched_fraction)
  double efficiency_factor = 1.0;  ///< peak_share x t / (t + half_tokens): multiplies the dense prefill efficiency
};
ExpertGemm expert_gemm(const ModelSpec& m, double tokens, double half_tokens, double peak_share = 1.0);
/// The share of the dense rate products of `tokens_per_expert` rows reach: the grouped kernel's own
/// peak share times its tile fill, small products filling only part of the kernel's token tiles,
/// peak_share x t / (t + half_tokens); the fill is 1 when half_tokens is 0.
double grouped_gemm_fill(double tokens_per_expert, double half_tokens, double peak_share = 1.0);

/// What a device's KV cache may use once `fixed` bytes (weights, activations, runtime) are placed
/// in `room` bytes: vLLM and SGLang claim a fraction of all memory up front, TensorRT-LLM gives a
/// fraction of what is free after load, others the rest. Never negative.
double kv_budget_of(const Scenario& s, double room, double fixed);

/// The share of each device's memory the scenario's engine claims up front (vLLM
/// gpu_memory_utilization, SGLang mem_fraction_static: the workload's override, else the
/// engine's default); none for engines that size their pools otherwise.
std::optional<double> engine_memory_share(const Scenario& s);

/// The share (to the next hundredth) the engine of `mem` would need to claim for it to fit: memory
/// needed over the memory the share is of; nullopt for engines that claim none.
std::optional<double> memory_share_to_fit(const MemoryBreakdown& mem);

}  // namespace optadvisor
