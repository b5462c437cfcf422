// SPDX-License-Identifier: MIT
// The training model: memory per GPU and time per step. Every efficiency
// comes from the engine profile or the system document (data/training/),
// every peak from the hardware profile; this file holds the formulas.
// Notation: t = tensor-parallel, p = pipeline, c = context-parallel,
// d = data-parallel degree; M microbatches per replica per step.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "optadvisor/analysis/training.hpp"

namespace optadvisor {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

double ring_factor(double n) { return n > 1 ? (n - 1) / n : 0.0; }

/// Peak dense rate for training in `dtype`: bf16 falls back to fp16 (V100, T4), fp8 to nothing.
double training_peak(const HardwareProfile& hw, const std::string& dtype) {
  if (auto r = hw.peak_flops_per_s(dtype)) return *r;
  if (dtype == "bf16")
    if (auto r = hw.peak_flops_per_s("fp16")) return *r;
  return 0;
}

/// The device's maximum achievable matmul fraction for a dtype.
double matmul_ceiling(const TrainingSystem& sys, const HardwareProfile& hw, const std::string& dtype) {
  const std::string key = dtype == "bf16" && !hw.peak_flops_per_s("bf16") ? std::string("fp16") : dtype;
  if (auto it = sys.matmul_ceiling.find(hw.id); it != sys.matmul_ceiling.end())
    if (auto d = it->second.find(key); d != it->second.end()) return d->second;
  if (auto d = sys.matmul_ceiling_default.find(key); d != sys.matmul_ceiling_default.end()) return d->second;
  return 0.8;
}

/// FlashAttention-2 reference efficiency of the device at sequence length `seq`.
double attention_reference(const TrainingSystem& sys, const HardwareProfile& hw, double seq) {
  double at_long = sys.attention_efficiency_default;
  for (const auto& [keyword, value] : sys.attention_efficiency_by_arch)
    if (hw.architecture.find(keyword) != std::string::npos) at_long = value;
  return at_long * seq / (seq + sys.attention_half_seq);
}

/// Average keys a query attends to in a causal sequence of `seq` tokens,
/// with a sliding window on a share of the layers.
double causal_keys(const TrainingModel& m, double seq) {
  const double full = (seq + 1) / 2;
  if (m.sliding_window == 0 || m.sliding_layer_fraction <= 0) return full;
  const double w = static_cast<double>(m.sliding_window);
  const double sliding = w >= seq ? full : w - w * w / (2 * seq);
  return (1 - m.sliding_layer_fraction) * full + m.sliding_layer_fraction * sliding;
}

double sum_groups(const std::map<std::string, double>& groups, const std::vector<std::string>& drop = {}) {
  double total = 0;
  for (const auto& [g, v] : groups)
    if (!contains(drop, g)) total += v;
  return total;
}

struct Placement {
  bool tp_spans = false;  ///< the tensor-parallel group crosses nodes
  bool cp_spans = false;
  bool dp_spans = false;
  bool pp_spans = false;  ///< consecutive stages sit on different nodes
};

Placement place(const TrainingWorkload& w, uint32_t per_node) {
  // Megatron order: tp innermost, then cp, then dp, then pp.
  Placement p;
  const uint64_t tp = w.tp, tc = uint64_t{w.tp} * w.cp, tcd = tc * w.dp;
  p.tp_spans = tp > per_node;
  p.cp_spans = w.cp > 1 && tc > per_node;
  p.dp_spans = w.dp > 1 && tcd > per_node;
  p.pp_spans = w.pp > 1 && tcd >= per_node;
  return p;
}

}  // namespace

std::map<std::string, double> activation_bytes_per_token_by_group(const TrainingModel& m, const TrainingWorkload& w, bool fused_gated_mlp) {
  const double t = static_cast<double>(w.tp);
  const double rep = (w.sequence_parallel && w.tp > 1) ? t : 1.0;  // replicated groups split only with SP
  const double h = static_cast<double>(m.hidden);
  const double f = m.ffn_active_width;
  std::map<std::string, double> g;
  g["norm_inputs"] = 2 * 2 * h / rep;                // inputs of the two norms, 16-bit
  g["norm_outputs"] = 2 * 2 * h / rep;               // inputs of the QKV and first MLP matmuls
  g["dropout_masks"] = m.dropout ? 2 * h / rep : 0;  // 1-byte masks after attention and MLP
  g["q"] = 2 * static_cast<double>(m.q_width) / t;
  g["k"] = 2 * static_cast<double>(m.k_width) / t;
  g["v"] = 2 * static_cast<double>(m.v_width) / t;
  // The attention output feeds the output projection; FlashAttention also keeps an fp32 log-sum-exp per head.
  g["attention_out"] = (2 * static_cast<double>(m.attention_out_width) + (w.flash_attention ? 4.0 * static_cast<double>(m.heads) : 0)) / t;
  // Without FlashAttention: softmax output (2 B), and with dropout its mask (1 B) and output (2 B), per key per head.
  g["attention_scores"] = w.flash_attention ? 0 : (2 + (m.dropout ? 3 : 0)) * static_cast<double>(m.heads) * static_cast<double>(w.seq) / t;
  if (m.gated_mlp) {
    g["mlp_gate"] = 2 * f / t;
    g["mlp_up"] = 2 * f / t;
    g["mlp_act"] = fused_gated_mlp ? 0 : 2 * f / t;  // silu(gate), saved by the product unless fused
    g["mlp_down_input"] = 2 * f / t;
  } else {
    g["mlp_gate"] = 0;
    g["mlp_up"] = 2 * f / t;  // activation input
    g["mlp_act"] = 0;
    g["mlp_down_input"] = 2 * f / t;  // activation output
  }
  return g;
}

DeepSpeedEstimate deepspeed_estimate(const DeepSpeedEstimatorInput& in) {
  // deepspeed/runtime/zero/stage_1_and_2.py and stage3.py, term for term.
  const double p = in.params;
  const double total_gpus = static_cast<double>(in.gpus_per_node) * in.nodes;
  const double per_node = static_cast<double>(in.gpus_per_node);
  DeepSpeedEstimate out;
  if (in.stage <= 2) {
    if (in.offload_optimizer) {
      out.gpu_bytes = 2 * p;
      out.cpu_bytes = p * std::max(4 * total_gpus, 16.0) * in.additional_buffer_factor;
    } else {
      out.gpu_bytes = in.legacy_zero2 ? 4 * p + 16 * p / total_gpus : 2 * p + 18 * p / total_gpus;
      out.cpu_bytes = p * 4 * per_node * in.additional_buffer_factor;
    }
    return out;
  }
  const double largest_layer_memory = 4 * in.largest_layer_params;
  const double gpus_factor = 1.0 / in.nodes;
  if (in.offload_params) {  // parameters and optimizer on the CPU
    out.gpu_bytes = largest_layer_memory;
    out.cpu_bytes = in.zero_init ? p * 18 * gpus_factor * in.additional_buffer_factor
                                 : p * std::max(4 * per_node, 18 * gpus_factor) * in.additional_buffer_factor;
  } else if (in.offload_optimizer) {
    out.gpu_bytes = largest_layer_memory + 2 * p / total_gpus;
    out.cpu_bytes = in.zero_init ? p * 16 * gpus_factor * in.additional_buffer_factor
                                 : std::max(4 * per_node, 16 * gpus_factor) * p * in.additional_buffer_factor;
  } else {
    out.gpu_bytes = largest_layer_memory + 18 * p / total_gpus;
    out.cpu_bytes = in.zero_init ? in.largest_layer_params * 4 * per_node * in.additional_buffer_factor
                                 : p * 4 * per_node * in.additional_buffer_factor;
  }
  return out;
}

std::optional<DeepSpeedEstimate> deepspeed_estimate_for(const TrainingScenario& s) {
  const TrainingWorkload& w = s.workload;
  if (!s.engine || !s.engine->zero_memory_estimator || w.sharding.stage < 2 || w.lora_rank > 0 || w.tp > 1 || w.pp > 1) return std::nullopt;
  DeepSpeedEstimatorInput in;
  in.params = s.model.params;
  in.largest_layer_params = s.model.largest_layer_params;
  const uint32_t per_node = s.system ? s.system->gpus_per_node : 8;
  const uint32_t ranks = w.dp * w.cp;
  in.gpus_per_node = std::min(ranks, per_node);
  in.nodes = (ranks + in.gpus_per_node - 1) / in.gpus_per_node;
  in.stage = w.sharding.stage;
  return deepspeed_estimate(in);
}

namespace {

/// What every part of a step reads: the layout, the tokens on one GPU and the stage sizes.
struct StepShape {
  double t = 1, pp = 1, cp = 1;
  double d_shard = 1;  ///< optimizer / FSDP sharding and gradient reduction group
  double M = 1;        ///< microbatches per replica per step
  double layers = 0, layers_per_stage = 0;
  bool lora = false;
  double tokens_local = 0;  ///< tokens of one microbatch on one GPU
  double h = 0, vocab = 0, seq = 0;
  double optimizer_bpp = 0;
  bool pure_bf16 = false;  ///< BF16 weights, gradients and moments, no FP32 master copy (--precision bf16-pure)
  Placement where;
  double logits_bytes = 0;  ///< per token per vocabulary entry around the loss
  double adapter_params_per_layer = 0, adapter_params_local = 0;
  double first_stage_params = 0, last_stage_params = 0;
  double none_per_token = 0;  ///< activation bytes per token per layer, all saved
  double kept_per_token = 0;  ///< the same, under the recompute mode
  bool pp_unsharded = false;  ///< parameters stay gathered across the microbatches (Engine::pp_keeps_unsharded)
};

StepShape shape_of(const TrainingScenario& s) {
  const TrainingModel& m = s.model;
  const TrainingEngineProfile& e = *s.engine;
  const TrainingSystem& sys = *s.system;
  const TrainingWorkload& w = s.workload;
  StepShape k;
  k.t = w.tp;
  k.pp = w.pp;
  k.cp = w.cp;
  k.d_shard = static_cast<double>(w.dp) * k.cp;
  k.M = static_cast<double>(w.microbatches);
  k.layers = static_cast<double>(m.layers);
  k.layers_per_stage = std::ceil(k.layers / k.pp);
  k.lora = w.lora_rank > 0;
  const double tokens_mb = static_cast<double>(w.micro_batch) * static_cast<double>(w.seq);  // per replica per microbatch
  k.tokens_local = tokens_mb / k.cp;
  k.h = static_cast<double>(m.hidden);
  k.vocab = static_cast<double>(m.vocab);
  k.seq = static_cast<double>(w.seq);
  const OptimizerSpec optimizer = sys.optimizers.count(w.optimizer) ? sys.optimizers.at(w.optimizer) : OptimizerSpec{};
  // Pure BF16: the moments in 16 bits (half of AdamW's fp32 pair), 16-bit gradients, no fp32 master copy.
  k.pure_bf16 = w.precision == TrainPrecision::kBf16Pure && !k.lora;
  k.optimizer_bpp = optimizer.bytes_per_param() * (k.pure_bf16 ? 0.5 : 1.0);
  k.where = place(w, sys.gpus_per_node);
  k.logits_bytes = w.fused_loss ? e.fused_logits_bytes_per_entry : e.logits_bytes_per_entry;
  k.adapter_params_per_layer = k.lora ? static_cast<double>(w.lora_rank) * m.layer_lora_dims : 0;
  k.adapter_params_local = k.adapter_params_per_layer * k.layers_per_stage / k.t;
  k.first_stage_params =
      k.layers_per_stage * m.layer_params + m.embedding_params + (w.pp == 1 ? (m.tied_embeddings ? 0 : m.head_params) + m.other_params : 0);
  k.last_stage_params = k.layers_per_stage * m.layer_params + m.head_params + m.other_params;
  // Activations saved per token per layer (Korthikanti et al. 2022, "Reducing Activation Recomputation in
  // Large Transformer Models", arXiv:2205.05198, section 4), by group, less what the recompute mode drops.
  const auto groups = activation_bytes_per_token_by_group(m, w, e.fused_gated_mlp);
  k.none_per_token = sum_groups(groups);
  k.kept_per_token = k.none_per_token;
  if (w.recompute == Recompute::kSelective) k.kept_per_token = sum_groups(groups, e.selective_drops);
  if (w.recompute == Recompute::kFull) k.kept_per_token = 2 * k.h / ((w.sequence_parallel && w.tp > 1) ? k.t : 1.0);
  k.pp_unsharded = e.pp_keeps_unsharded && w.pp > 1 && w.sharding.stage >= 2 && !k.lora;
  return k;
}

/// Model states per GPU by role, as the engine lays them out (sharded from their stage, the
/// optimizer's moments from the OptimizerSpec); offloaded ones count in host memory. States held
/// only during the optimizer step go to `step_only`.
void add_model_states(TrainingMemory& mem, double& step_only, double params_local, const TrainingScenario& s, const StepShape& k) {
  const TrainingEngineProfile& e = *s.engine;
  const TrainingWorkload& w = s.workload;
  const double d_shard = k.d_shard;
  const bool lora = k.lora, pp_unsharded = k.pp_unsharded;
  for (const auto& c : e.states) {
    bool sharded = w.sharding.stage >= c.sharded_from_stage;
    if (pp_unsharded && (c.role == "weights" || c.role == "gradients")) sharded = false;
    double bpp = c.role == "optimizer" ? k.optimizer_bpp : c.bytes_per_param;
    if (k.pure_bf16 && c.role == "master") continue;
    if (k.pure_bf16 && c.role == "gradients") bpp = std::min(bpp, 2.0);
    if (lora) {
      if (c.role != "weights") continue;  // the frozen base has no gradients or optimizer states
      bpp = w.lora_base_bytes_per_param;
    }
    // FSDP2 keeps no persistent 16-bit copy once sharded (even over one rank): only the gathered layers hold it.
    if (sharded && !c.persistent_when_sharded && !lora) continue;
    if (!sharded && pp_unsharded && c.role == "gradients") bpp = std::max(bpp, 4.0);  // accumulated unsharded in fp32
    const double bytes = params_local * bpp / (sharded ? d_shard : 1.0);
    // Optimizer offload (Ren et al. 2021, "ZeRO-Offload", arXiv:2101.06840, section 4): master weights,
    // moments and the fp32 gradient partition live in host memory; the 16-bit gradients leave bucket
    // by bucket where the engine streams them (DeepSpeed), else stay whole until the step (Megatron).
    if (w.optimizer_offload && (c.role == "master" || c.role == "optimizer" || (c.role == "gradients" && c.step_only))) {
      mem.host_bytes += bytes;
      continue;
    }
    if (w.optimizer_offload && e.offload.gradients_to_host && c.role == "gradients") {
      mem.gradients_bytes += std::min(bytes, e.offload.gradient_bucket_bytes);
      continue;
    }
    if (c.step_only) {
      step_only += bytes;
      continue;
    }
    if (c.role == "weights")
      mem.weights_bytes += bytes;
    else if (c.role == "gradients")
      mem.gradients_bytes += bytes;
    else if (c.role == "master")
      mem.master_weights_bytes += bytes;
    else
      mem.optimizer_bytes += bytes;
  }
}

/// Memory per GPU on the stage that needs the most (the first holds the most microbatches in
/// flight, the last the loss): model states per ZeRO stage (Rajbhandari et al. 2020, "ZeRO",
/// arXiv:1910.02054, section 5), gathered layers, activations, working buffers and logits.
TrainingMemory step_memory(const TrainingScenario& s, const StepShape& k) {
  const TrainingModel& m = s.model;
  const TrainingEngineProfile& e = *s.engine;
  const TrainingWorkload& w = s.workload;
  const double t = k.t, pp = k.pp, M = k.M, h = k.h, layers_per_stage = k.layers_per_stage;
  const double tokens_local = k.tokens_local, none_per_token = k.none_per_token, kept_per_token = k.kept_per_token;
  const bool lora = k.lora, pp_unsharded = k.pp_unsharded;
  const double per_layer_mb = kept_per_token * tokens_local;

  double interleave = 1;
  if (w.pp > 1 && w.schedule == PipelineSchedule::kInterleaved && w.virtual_stages > 1)
    interleave = 1 + (pp - 1) / (pp * static_cast<double>(w.virtual_stages));
  const double first_in_flight = w.pp > 1 ? std::min(std::min(pp, M) * interleave, M) : 1.0;

  auto stage_memory = [&](double stage_params, double in_flight, bool has_head, bool has_embedding) {
    TrainingMemory mem;
    const double params_local = stage_params / t;
    double step_only = 0;
    add_model_states(mem, step_only, params_local, s, k);
    if (lora) mem.adapter_bytes = k.adapter_params_local * (e.adapter_bytes_per_param + k.optimizer_bpp);
    if (w.sharding.stage >= 3 && !pp_unsharded) {
      const double bytes_per_param = lora ? std::max(2.0, w.lora_base_bytes_per_param) : e.gathered_bytes_per_param;
      mem.gathered_bytes = e.gathered_units * m.largest_layer_params / t * bytes_per_param;
    }
    mem.activation_bytes_per_layer = per_layer_mb;
    mem.in_flight_microbatches = in_flight;
    mem.activation_bytes = per_layer_mb * layers_per_stage * in_flight;
    if (w.activation_offload) {  // saved activations wait in host memory; the GPU keeps the layers in use and prefetched
      const double on_gpu = per_layer_mb * std::min(layers_per_stage * in_flight, e.offload.activation_layers_on_gpu);
      mem.host_bytes += mem.activation_bytes - on_gpu;
      mem.activation_bytes = on_gpu;
    }
    if (w.recompute == Recompute::kFull)
      mem.working_bytes = none_per_token * tokens_local;  // one layer recomputed
    else if (w.recompute == Recompute::kSelective)
      mem.working_bytes = (none_per_token - kept_per_token) * tokens_local;
    if (has_embedding) mem.working_bytes += 2 * h * tokens_local / ((w.sequence_parallel && w.tp > 1) ? t : 1.0);
    if (has_head) mem.logits_bytes = tokens_local * k.vocab / t * k.logits_bytes;
    const double live = mem.model_state_bytes() + mem.gathered_bytes + mem.activation_bytes + mem.working_bytes + mem.logits_bytes;
    mem.overhead_bytes = e.runtime_overhead_bytes + e.allocator_overhead_fraction * live;
    const double states = mem.model_state_bytes();
    mem.step_bytes = states + step_only + e.runtime_overhead_bytes + e.allocator_overhead_fraction * (states + step_only);
    mem.total_bytes = std::max(live + mem.overhead_bytes, mem.step_bytes);
    return mem;
  };
  TrainingMemory out;
  if (w.pp == 1) {
    out = stage_memory(k.first_stage_params, 1.0, true, true);
    out.peak_stage = "only";
  } else {
    TrainingMemory first = stage_memory(k.first_stage_params, first_in_flight, false, true);
    TrainingMemory last = stage_memory(k.last_stage_params, 1.0, true, false);
    out = first.total_bytes >= last.total_bytes ? first : last;
    out.peak_stage = first.total_bytes >= last.total_bytes ? "first" : "last";
  }
  out.capacity_bytes = s.hardware->usable_memory_bytes();
  // Every GPU of a node offloads to the same host memory.
  out.host_bytes_per_node = out.host_bytes * std::min<double>(w.gpus, s.system->gpus_per_node);
  out.host_capacity_bytes = s.host.memory_bytes;
  out.host_fits = out.host_bytes <= 0 || out.host_bytes_per_node <= out.host_capacity_bytes;
  out.fits = out.total_bytes <= out.capacity_bytes && out.host_fits;
  return out;
}

/// The rates a step runs at on this device: matmul, attention and memory, and the links.
struct StepRates {
  bool fp8 = false;
  double peak_bf16 = 0, peak_gemm = 0;
  double achievable_gemm = 1, achievable_bf16 = 1, achievable_attention = 1, bandwidth = 1;
  double intra = 1;       ///< collective bus bandwidth inside a node
  double intra_raw = 0;   ///< the link's per-direction bandwidth
  double inter_bits = 0;  ///< per GPU between nodes
  double inter_efficiency = 1;
  double per_node = 8;
  double pcie = 1;       ///< host-device copies, per direction, achievable
  double host_step = 1;  ///< host memory bandwidth one GPU's CPU optimizer step gets
  /// A ring that crosses nodes runs one channel per NIC: with k of its ranks in each node, the
  /// crossings share k NICs, so its bus bandwidth is min(link in the node, k x NIC per GPU).
  double link(bool spans, double inner = 1) const {
    if (!spans) return intra;
    const double ranks_per_node = std::max(1.0, std::floor(per_node / std::max(inner, 1.0)));
    return std::max(std::min(intra_raw, ranks_per_node * inter_bits / 8) * inter_efficiency, 1.0);
  }
};

StepRates rates_of(const TrainingScenario& s, const StepShape& k, TrainingFactors& factors) {
  const HardwareProfile& hw = *s.hardware;
  const TrainingEngineProfile& e = *s.engine;
  const TrainingSystem& sys = *s.system;
  const TrainingWorkload& w = s.workload;
  StepRates r;
  const bool fp8 = r.fp8 = w.precision == TrainPrecision::kFp8;
  const std::string gemm_dtype = fp8 ? "fp8" : "bf16";
  const std::string peak_label = fp8 ? "fp8" : hw.peak_flops_per_s("bf16") ? "bf16" : "fp16";  // V100/T4 train in fp16
  const double peak_bf16 = r.peak_bf16 = training_peak(hw, "bf16");
  const double peak_gemm = r.peak_gemm = fp8 ? training_peak(hw, "fp8") : peak_bf16;
  auto gemm_eff = [&](const std::string& dtype) {
    auto it = e.gemm_efficiency.find(dtype);
    return it != e.gemm_efficiency.end() ? it->second : e.gemm_efficiency.at("bf16");
  };
  const double ceiling = matmul_ceiling(sys, hw, gemm_dtype);
  const double achievable_gemm = r.achievable_gemm = std::max(peak_gemm * ceiling * gemm_eff(gemm_dtype), 1.0);
  const double achievable_bf16 = r.achievable_bf16 = std::max(peak_bf16 * matmul_ceiling(sys, hw, "bf16") * gemm_eff("bf16"), 1.0);
  const double attention_eff = attention_reference(sys, hw, k.seq) * e.attention_efficiency;
  r.achievable_attention = w.flash_attention ? std::max(peak_bf16 * attention_eff, 1.0) : achievable_bf16;
  const double bandwidth = r.bandwidth = std::max(hw.memory_bandwidth_bytes_per_s * sys.memory_bandwidth_efficiency, 1.0);
  double intra = 0;
  if (const Link* link = hw.default_multi_gpu_link()) intra = link->per_direction_bytes_per_s();
  // The network between nodes: the device's own scale-out figure, else the system's by device, else its default.
  double inter_bits = sys.inter_node_bits_per_s_default;
  if (auto it = sys.inter_node_bits_per_s.find(hw.id); it != sys.inter_node_bits_per_s.end()) inter_bits = it->second;
  if (hw.scale_out) inter_bits = hw.scale_out->per_direction_bytes_per_s() * 8;
  if (intra <= 0) intra = inter_bits / 8;  // no link between GPUs on record: the network
  r.intra_raw = intra;
  intra = r.intra = std::max(intra * sys.intra_node_collective_efficiency, 1.0);
  const double inter = std::max(inter_bits / 8 * sys.inter_node_collective_efficiency, 1.0);
  r.inter_bits = inter_bits;
  r.inter_efficiency = sys.inter_node_collective_efficiency;
  r.per_node = hw.node_gpus ? hw.node_gpus : sys.gpus_per_node;
  r.pcie = std::max((hw.pcie ? hw.pcie->per_direction_bytes_per_s() : 0) * sys.pcie_efficiency, 1.0);
  r.host_step = std::max(s.host.memory_bandwidth_bytes_per_s * sys.host_optimizer_bandwidth_efficiency /
                             std::min<double>(w.gpus, sys.gpus_per_node),
                         1.0);

  factors.compute_dtype = peak_label;
  factors.peak_flops_per_s = peak_gemm;
  factors.matmul_ceiling = ceiling;
  factors.gemm_efficiency = gemm_eff(gemm_dtype);
  factors.achievable_gemm_flops_per_s = achievable_gemm;
  factors.attention_efficiency = w.flash_attention ? attention_eff : achievable_bf16 / std::max(peak_bf16, 1.0);
  factors.memory_bandwidth_bytes_per_s = bandwidth;
  factors.intra_node_bytes_per_s = intra;
  factors.inter_node_bytes_per_s = inter;
  factors.dp_spans_nodes = k.where.dp_spans;
  factors.tp_spans_nodes = k.where.tp_spans;
  return r;
}

/// One microbatch on the slowest stage (the one with the head), by part.
struct MicrobatchTime {
  double gemm_s = 0, attention_s = 0, elementwise_s = 0, overhead_s = 0, dequant_s = 0, recompute_s = 0;
  double compute_s = 0;  ///< the five parts above that run on the GPU's units (recompute is inside them)
  double tp_s = 0, cp_s = 0, p2p_s = 0;
  double time_s = 0;                   ///< compute plus exposed communication
  double selective_matmul_params = 0;  ///< per layer, run again by selective recompute
  double qkv_dims = 0;                 ///< query plus attention-output width
};

/// The tensor-, context- and pipeline-parallel communication of one microbatch not hidden
/// behind its compute (`out.attention_s` must be set: the context-parallel ring hides under it).
void add_parallel_communication(MicrobatchTime& out, const TrainingScenario& s, const StepShape& k, const StepRates& r) {
  const TrainingModel& m = s.model;
  const TrainingEngineProfile& e = *s.engine;
  const TrainingSystem& sys = *s.system;
  const TrainingWorkload& w = s.workload;
  const double t = k.t, cp = k.cp, h = k.h, tokens_local = k.tokens_local, layers_per_stage = k.layers_per_stage;
  const double attention_s_mb = out.attention_s, per_node = r.per_node;
  const double rep = (w.sequence_parallel && w.tp > 1) ? t : 1.0;
  const Placement& where = k.where;
  auto link = [&](bool spans, double inner = 1) { return r.link(spans, inner); };
  // Tensor-parallel collectives (Shoeybi et al. 2019, "Megatron-LM", arXiv:1909.08053; with SP, Korthikanti
  // et al. 2022, section 4.2.2): two per layer in the forward, two in the backward (all-reduce, or
  // all-gather + reduce-scatter with SP: the same bytes), two more when the forward is recomputed.
  double tp_s_mb = 0;
  if (w.tp > 1) {
    const double collectives = 4 + (w.recompute == Recompute::kFull ? 2 : 0);
    const double bytes = tokens_local * h * 2;
    const double one = 2 * ring_factor(t) * bytes / link(where.tp_spans) + sys.collective_latency_s;
    tp_s_mb = layers_per_stage * collectives * one * (1 - e.tp_overlap);
  }
  // Context parallelism: ring exchange of K and V blocks (3x with the backward), under the attention kernels
  // (ring attention: Liu et al. 2023, "Ring Attention with Blockwise Transformers", arXiv:2310.01889).
  double cp_s_mb = 0;
  if (w.cp > 1) {
    const double bytes = (cp - 1) * tokens_local * static_cast<double>(m.k_width + m.v_width) / t * 2 * 3;
    const double comm = layers_per_stage * bytes / link(where.cp_spans, t);
    cp_s_mb = std::max(0.0, comm - attention_s_mb);
  }
  double p2p_s_mb = 0;
  if (w.pp > 1) {
    const double v = w.schedule == PipelineSchedule::kInterleaved ? static_cast<double>(w.virtual_stages) : 1.0;
    const double bytes = tokens_local * h * 2 / rep;
    p2p_s_mb = 2 * v * (bytes / link(where.pp_spans, per_node) + sys.collective_latency_s);
  }
  out.tp_s = tp_s_mb;
  out.cp_s = cp_s_mb;
  out.p2p_s = p2p_s_mb;
}

/// FLOPs per token per layer on this GPU of the weight matmuls: the passes a layer runs, what recompute
/// runs again, and the output layer's.
struct GemmWork {
  double layer = 0, recompute = 0, head = 0;
};

GemmWork gemm_work(const TrainingScenario& s, const StepShape& k, MicrobatchTime& out) {
  const TrainingModel& m = s.model;
  const TrainingEngineProfile& e = *s.engine;
  const TrainingWorkload& w = s.workload;
  const double t = k.t;
  const bool lora = k.lora;
  // Weight matmuls: 2 FLOPs per parameter per token forward, 4 backward (Kaplan et al. 2020,
  // "Scaling Laws for Neural Language Models", arXiv:2001.08361, section 2.1: C = 6N per token).
  const double layer_gemm_fwd = 2 * m.layer_active_params / t;  // FLOPs per token per layer on this GPU
  const double head_gemm_fwd = 2 * m.head_params / t;
  const double adapter_flops = 6 * k.adapter_params_per_layer / t;  // forward + both backward matmuls of the adapters
  double& selective_matmul_params = out.selective_matmul_params;
  for (const auto& kind : e.selective_recompute_matmuls) {
    auto it = m.layer_matmul_params_by_kind.find(kind);
    if (it != m.layer_matmul_params_by_kind.end()) selective_matmul_params += it->second;
  }
  const double pass_factor = lora ? 2.0 : 3.0;  // LoRA: no weight gradients for the frozen base
  GemmWork g;
  g.layer = pass_factor * layer_gemm_fwd + (lora ? adapter_flops : 0);
  if (w.recompute == Recompute::kFull)
    g.recompute = layer_gemm_fwd;
  else if (w.recompute == Recompute::kSelective)
    g.recompute = 2 * selective_matmul_params / t;
  g.head = pass_factor * head_gemm_fwd;
  return g;
}

/// Attention-core FLOPs per token per layer on this GPU, and what recompute runs again.
struct AttentionWork {
  double hw = 0, recompute = 0;
};

AttentionWork attention_work(const TrainingScenario& s, const StepShape& k, MicrobatchTime& out) {
  const TrainingModel& m = s.model;
  const TrainingWorkload& w = s.workload;
  // Attention core: causal with FlashAttention (the backward recomputes scores: 2.5 x forward; Dao 2023,
  // "FlashAttention-2", arXiv:2307.08691, section 3.1), full square without.
  const double qkv_dims = out.qkv_dims = static_cast<double>(m.q_width + m.attention_out_width);
  const double keys = w.flash_attention ? causal_keys(m, k.seq) : k.seq;
  const double attention_fwd = 2 * qkv_dims * keys / k.t;
  AttentionWork a;
  a.hw = attention_fwd * (w.flash_attention ? 3.5 : 3.0);
  if (w.recompute == Recompute::kFull)
    a.recompute = attention_fwd;
  else if (w.recompute == Recompute::kSelective && !w.flash_attention && contains(s.engine->selective_drops, "attention_scores"))
    a.recompute = attention_fwd;
  return a;
}

/// Elementwise bytes per token on this GPU: per layer (all passes), run again by recompute, the FP8 casts
/// per layer, and the loss buffers.
struct ElementwiseWork {
  double layer = 0, recompute = 0, fp8_cast = 0, loss = 0;
};

ElementwiseWork elementwise_work(const TrainingScenario& s, const StepShape& k, const StepRates& r) {
  const TrainingModel& m = s.model;
  const TrainingWorkload& w = s.workload;
  const double t = k.t, h = k.h, seq = k.seq, none_per_token = k.none_per_token, kept_per_token = k.kept_per_token;
  // Elementwise traffic per token per layer in the forward pass (eager kernels; backward about twice).
  const double rep = (w.sequence_parallel && w.tp > 1) ? t : 1.0;
  const double f = m.ffn_active_width;
  double elementwise_fwd = (8 * h + 12 * h + (m.dropout ? 10 * h : 0)) / rep;  // norms, residual adds, dropout
  elementwise_fwd += ((m.rope ? 4.0 * static_cast<double>(m.q_width + m.k_width) : 0) + (m.gated_mlp ? 10 * f : 4 * f)) / t;
  if (!w.flash_attention)
    elementwise_fwd += static_cast<double>(m.heads) * seq * (6 + (m.dropout ? 5 : 0)) / t;  // scores written, softmax, dropout
  ElementwiseWork x;
  x.layer = 3 * elementwise_fwd;
  if (w.recompute == Recompute::kFull)
    x.recompute = elementwise_fwd;
  else if (w.recompute == Recompute::kSelective && none_per_token > 0)
    x.recompute = elementwise_fwd * (none_per_token - kept_per_token) / none_per_token;
  if (r.fp8) {
    // Tensor-wise scaling: cast every linear input (read 2 B, write 1 B) and keep a transposed copy for the
    // weight gradient, and cast the output gradients in the backward.
    const double inputs = (2 * h + static_cast<double>(m.attention_out_width) + f) / t;
    const double grads = (static_cast<double>(m.q_width + m.k_width + m.v_width) + 2 * h + (m.gated_mlp ? 2 * f : f)) / t;
    x.fp8_cast = 3 * inputs + 2 * inputs + 3 * grads;
  }
  x.loss = k.vocab / t * k.logits_bytes * 2;  // write and read the loss buffers
  return x;
}

MicrobatchTime microbatch_time(const TrainingScenario& s, const StepShape& k, const StepRates& r) {
  const TrainingModel& m = s.model;
  const TrainingEngineProfile& e = *s.engine;
  const TrainingWorkload& w = s.workload;
  const double t = k.t, layers_per_stage = k.layers_per_stage, tokens_local = k.tokens_local;
  const double achievable_gemm = r.achievable_gemm, achievable_bf16 = r.achievable_bf16, achievable_attention = r.achievable_attention;
  const double bandwidth = r.bandwidth;
  const bool lora = k.lora, fp8 = r.fp8, pp_unsharded = k.pp_unsharded;
  MicrobatchTime out;
  const GemmWork gemm = gemm_work(s, k, out);
  const AttentionWork attention = attention_work(s, k, out);
  const ElementwiseWork elementwise = elementwise_work(s, k, r);
  // Eager PyTorch runs every elementwise op as its own kernel; the profile is fitted on compiled runs.
  const double traffic = e.elementwise_traffic * (w.compiled ? 1.0 : e.compile.eager_elementwise_factor);

  const double gemm_s_mb =
      tokens_local * layers_per_stage * (gemm.layer + gemm.recompute) / achievable_gemm + tokens_local * gemm.head / achievable_bf16;
  const double attention_s_mb = tokens_local * layers_per_stage * (attention.hw + attention.recompute) / achievable_attention;
  double elementwise_bytes_mb =
      tokens_local * (layers_per_stage * ((elementwise.layer + elementwise.recompute) * traffic + elementwise.fp8_cast) +
                      elementwise.loss * traffic);
  if (fp8) elementwise_bytes_mb += layers_per_stage * m.layer_params / t * 6;  // weight casts and transposes
  const double elementwise_s_mb = elementwise_bytes_mb / bandwidth;
  double dequant_s_mb = 0;
  if (lora && !w.lora_base_quant.empty()) {
    const double passes = 2 + (w.recompute == Recompute::kFull ? 1 : 0);
    dequant_s_mb = passes * layers_per_stage * m.layer_params / t * (w.lora_base_bytes_per_param + 2 + 2) / bandwidth;
  }
  const double recompute_s_mb = tokens_local * layers_per_stage * gemm.recompute / achievable_gemm +
                                tokens_local * layers_per_stage * attention.recompute / achievable_attention +
                                tokens_local * layers_per_stage * elementwise.recompute * traffic / bandwidth;
  double overhead_s_mb = layers_per_stage * e.layer_overhead_s * (w.recompute == Recompute::kFull ? 4.0 / 3.0 : 1.0);
  if (w.sharding.stage >= 3 && !pp_unsharded)  // unpacking gathered layers and packing gradients, every microbatch
    overhead_s_mb += layers_per_stage * m.layer_params / t * e.gather_copy_bytes_per_param / bandwidth;
  const double compute_mb = gemm_s_mb + attention_s_mb + elementwise_s_mb + overhead_s_mb + dequant_s_mb;

  out.gemm_s = gemm_s_mb;
  out.attention_s = attention_s_mb;
  out.elementwise_s = elementwise_s_mb;
  out.overhead_s = overhead_s_mb;
  out.dequant_s = dequant_s_mb;
  out.recompute_s = recompute_s_mb;
  out.compute_s = compute_mb;
  add_parallel_communication(out, s, k, r);
  out.time_s = compute_mb + out.tp_s + out.cp_s + out.p2p_s;
  return out;
}

/// Data-parallel traffic per step (total and not hidden behind compute) and the optimizer step.
struct DataParallelTime {
  double total_s = 0, exposed_s = 0, optimizer_s = 0;
  double host_optimizer_s = 0;  ///< optimizer offload: gradient copies not hidden, the CPU step and the parameter copy back
};

DataParallelTime data_parallel_time(const TrainingScenario& s, const StepShape& k, const StepRates& r, double compute_mb) {
  const TrainingEngineProfile& e = *s.engine;
  const TrainingSystem& sys = *s.system;
  const TrainingWorkload& w = s.workload;
  const double t = k.t, cp = k.cp, M = k.M, d_shard = k.d_shard, layers_per_stage = k.layers_per_stage;
  const double first_stage_params = k.first_stage_params, last_stage_params = k.last_stage_params;
  const double optimizer_bpp = k.optimizer_bpp, bandwidth = r.bandwidth;
  const bool lora = k.lora, pp_unsharded = k.pp_unsharded, pure_bf16 = k.pure_bf16;
  const Placement& where = k.where;
  auto link = [&](bool spans, double inner = 1) { return r.link(spans, inner); };
  const double params_local = (w.pp == 1 ? first_stage_params : std::max(first_stage_params, last_stage_params)) / t;
  const double trainable_local = lora ? k.adapter_params_local : params_local;
  const auto overlap_it = e.dp_overlap.find(w.sharding.name);
  const bool overlap = overlap_it != e.dp_overlap.end() && overlap_it->second;
  const double dp_bw = link(where.dp_spans, t * cp);
  const double buckets = std::max(layers_per_stage, 1.0);
  double dp_total = 0, dp_exposed = 0;
  // Gradient all-reduce (DDP) or reduce-scatter plus parameter all-gather (ZeRO-1/2), and ZeRO-3's
  // all-gathers in forward and backward (Rajbhandari et al. 2020, "ZeRO", arXiv:1910.02054, section 7).
  if (d_shard > 1) {
    const double rf = ring_factor(d_shard);
    const double fwd_mb = compute_mb / 3, bwd_mb = compute_mb * 2 / 3;
    if (w.sharding.stage >= 3 && !pp_unsharded) {
      const double gather = rf * params_local * (lora ? std::max(2.0, w.lora_base_bytes_per_param) : e.param_gather_bytes) / dp_bw;
      const double reduce = rf * trainable_local * e.grad_reduce_bytes / dp_bw;
      const double per_mb = 2 * gather + reduce + 3 * buckets * sys.collective_latency_s;
      dp_total = M * per_mb;
      dp_exposed = overlap ? M * (std::max(0.0, per_mb - compute_mb) + per_mb / (3 * buckets)) : dp_total;
    } else {
      const double grad =
          (w.sharding.stage == 0 ? 2 : 1) * rf * trainable_local * e.grad_reduce_bytes / dp_bw + buckets * sys.collective_latency_s;
      const double gather = w.sharding.stage >= 1 ? rf * trainable_local * e.param_gather_bytes / dp_bw : 0;
      dp_total = grad + gather;
      dp_exposed = overlap ? std::max(0.0, grad - bwd_mb) + grad / buckets + std::max(0.0, gather - fwd_mb) : dp_total;
    }
  }
  // AdamW step: read and write master weights and moments, read gradients, write the 16-bit weights.
  double master_bpp = 0, grad_bpp = 0;
  int optimizer_stage = 1;
  for (const auto& c : e.states) {
    if (c.role == "master" && !pure_bf16) master_bpp += c.bytes_per_param;
    if (c.role == "gradients" && !c.step_only) grad_bpp += pure_bf16 ? std::min(c.bytes_per_param, 2.0) : c.bytes_per_param;
    if (c.role == "optimizer") optimizer_stage = c.sharded_from_stage;
  }
  const double updated_local = trainable_local / (w.sharding.stage >= optimizer_stage ? d_shard : 1.0);
  const double step_traffic = lora ? 2 * (4 + optimizer_bpp) + 4 : 2 * (master_bpp + optimizer_bpp) + grad_bpp + 2;
  if (!w.optimizer_offload) return {dp_total, dp_exposed, updated_local * step_traffic / bandwidth, 0};
  // ZeRO-Offload's schedule (Ren et al. 2021, section 4.1): each rank's gradient partition goes to the
  // host during backward (every microbatch where the engine streams gradients, else once), CPU Adam
  // updates it at the host's bandwidth, and the 16-bit parameters come back in tiles while it runs.
  const double copies = e.offload.gradients_to_host ? M : 1.0;
  const double to_host_s = updated_local * grad_bpp / r.pcie;
  const double exposed_to_host_s = copies * std::max(0.0, to_host_s - compute_mb * 2 / 3);
  const double cpu_step_s = updated_local * step_traffic / r.host_step;
  const double to_device_s = updated_local * 2 / r.pcie;
  return {dp_total, dp_exposed, 0, exposed_to_host_s + std::max(cpu_step_s, to_device_s)};
}

/// What binds the step, and the sentence that says so.
void explain_bound(TrainingAnalysis& a) {
  const TrainingTime& tm = a.time;
  const double step = std::max(tm.step_time_s, 1e-12);
  const double compute_share = (tm.compute_s()) / step;
  const double comm_share = tm.communication_s() / step;
  const double bubble_share = tm.pp_bubble_s / step;
  const double offload_share = tm.offload_s() / step;
  if (!a.memory.fits && !a.memory.host_fits) {
    a.bound = TrainingBound::kMemoryCapacity;
    a.explanation = fmt::format("memory-capacity bound: the host needs {:.1f} GB per node for what is offloaded, {:.1f} GB installed",
                                a.memory.host_bytes_per_node / 1e9, a.memory.host_capacity_bytes / 1e9);
  } else if (!a.memory.fits) {
    a.bound = TrainingBound::kMemoryCapacity;
    a.explanation = fmt::format("memory-capacity bound: needs {:.1f} GB per GPU, {:.1f} GB usable", a.memory.total_bytes / 1e9,
                                a.memory.capacity_bytes / 1e9);
  } else {
    a.bound = TrainingBound::kCompute;
    const double largest = std::max({compute_share, comm_share, bubble_share, offload_share});
    if (offload_share == largest && offload_share > compute_share)
      a.bound = TrainingBound::kHostOffload;
    else if (comm_share > compute_share && comm_share >= bubble_share)
      a.bound = TrainingBound::kCommunication;
    else if (bubble_share > compute_share && bubble_share > comm_share)
      a.bound = TrainingBound::kPipelineBubble;
    a.explanation = fmt::format(
        "{} bound: matrix math {:.0f}%, attention {:.0f}%, elementwise, launches and optimizer {:.0f}%, exposed communication "
        "{:.0f}%, pipeline bubble {:.0f}%{} of the step",
        to_string(a.bound), 100 * tm.gemm_s / step, 100 * tm.attention_s / step,
        100 * (tm.elementwise_s + tm.overhead_s + tm.optimizer_s + tm.dequant_s) / step, 100 * comm_share, 100 * bubble_share,
        tm.offload_s() > 0 ? fmt::format(", host offload {:.0f}%", 100 * offload_share) : std::string());
  }
}

/// Warnings about the layout and the assumptions the figures rest on.
void add_warnings_and_assumptions(TrainingAnalysis& a, const TrainingScenario& s, const StepShape& k, double inter_bits) {
  const TrainingModel& m = s.model;
  const TrainingSystem& sys = *s.system;
  const TrainingWorkload& w = s.workload;
  const Placement& where = k.where;
  const bool lora = k.lora;
  const double bubble_share = a.time.pp_bubble_s / std::max(a.time.step_time_s, 1e-12);
  if (w.pp > 1 && bubble_share > 0.15)
    a.warnings.push_back(
        fmt::format("the pipeline bubble is {:.0f}% of the step: raise the microbatches per step ({} now; "
                    "--global-batch) or use --pp-schedule interleaved",
                    100 * bubble_share, w.microbatches));
  if (where.tp_spans) a.warnings.push_back("the tensor-parallel group crosses nodes: its collectives run at network speed");
  if (m.max_position && w.seq > m.max_position)
    a.warnings.push_back(fmt::format("sequence {} is longer than the model's context of {} tokens", w.seq, m.max_position));
  const TrainingMemory& mem = a.memory;
  const double forward_backward_peak =
      mem.model_state_bytes() + mem.gathered_bytes + mem.activation_bytes + mem.working_bytes + mem.logits_bytes + mem.overhead_bytes;
  if (mem.step_bytes > forward_backward_peak)
    a.assumptions.push_back("the peak is reached in the optimizer step (its fp32 gradient partition), not in forward/backward");
  a.assumptions.push_back(
      "MFU counts 6 x parameters x tokens plus non-causal attention (12 x layers x width x sequence), "
      "as Megatron, llm-foundry and torchtitan do");
  if (lora) a.assumptions.push_back("LoRA: model FLOPs are 4 x base parameters (forward and input gradients) plus 6 x adapter parameters");
  if (m.moe)
    a.assumptions.push_back(
        "MoE: experts are split by tensor parallelism only (no expert parallelism); FLOPs count the routed experts a token uses");
  if (w.gpus > sys.gpus_per_node)
    a.assumptions.push_back(fmt::format("{} GPUs per node; {:.0f} Gb/s per GPU between nodes", sys.gpus_per_node, inter_bits / 1e9));
}

}  // namespace

TrainingAnalysis analyze_training(const TrainingScenario& s) {
  TrainingAnalysis a;
  const TrainingModel& m = s.model;
  const TrainingEngineProfile& e = *s.engine;
  const TrainingWorkload& w = s.workload;
  const StepShape k = shape_of(s);
  const double pp = k.pp, M = k.M, layers = k.layers, seq = k.seq;
  const bool lora = k.lora;

  a.memory = step_memory(s, k);
  const StepRates r = rates_of(s, k, a.factors);
  const MicrobatchTime mb = microbatch_time(s, k, r);
  const double microbatch_s = mb.time_s;
  const double virtual_stages = w.schedule == PipelineSchedule::kInterleaved ? static_cast<double>(w.virtual_stages) : 1.0;
  // The pipeline bubble of 1F1B, (p - 1) / v microbatch times (Narayanan et al. 2021, "Efficient
  // Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", arXiv:2104.04473, section 2.2).
  const double bubble_s = w.pp > 1 ? (pp - 1) / virtual_stages * microbatch_s : 0;
  const double pipeline_s = M * microbatch_s + bubble_s;
  const DataParallelTime dp = data_parallel_time(s, k, r, mb.compute_s);

  TrainingTime& tm = a.time;
  tm.microbatch_time_s = microbatch_s;
  tm.gemm_s = M * mb.gemm_s;
  tm.attention_s = M * mb.attention_s;
  tm.elementwise_s = M * mb.elementwise_s;
  tm.overhead_s = M * mb.overhead_s;
  tm.recompute_s = M * mb.recompute_s;
  tm.dequant_s = M * mb.dequant_s;
  tm.optimizer_s = dp.optimizer_s;
  tm.host_optimizer_s = dp.host_optimizer_s;
  if (w.activation_offload) {
    // Out over PCIe in the forward, back in the backward, on a side stream: what the pass does not cover shows.
    const double moved = k.kept_per_token * k.tokens_local * std::max(0.0, k.layers_per_stage - e.offload.activation_layers_on_gpu);
    const double copy_s = moved / r.pcie;
    tm.activation_offload_s = M * (std::max(0.0, copy_s - mb.compute_s / 3) + std::max(0.0, copy_s - mb.compute_s * 2 / 3));
  }
  tm.tp_comm_s = M * mb.tp_s;
  tm.cp_comm_s = M * mb.cp_s;
  tm.pp_p2p_s = M * mb.p2p_s;
  tm.pp_bubble_s = bubble_s;
  tm.dp_comm_s = dp.total_s;
  tm.dp_comm_exposed_s = dp.exposed_s;
  tm.step_time_s = pipeline_s + dp.exposed_s + dp.optimizer_s + tm.offload_s();

  // ---------------------------------------------------------------- throughput and utilisation
  a.tokens_per_step = static_cast<double>(w.global_batch) * seq;
  a.tokens_per_s = tm.step_time_s > 0 ? a.tokens_per_step / tm.step_time_s : 0;
  a.tokens_per_s_per_gpu = a.tokens_per_s / static_cast<double>(w.gpus);
  const double matmul_params = layers * m.layer_active_params + m.head_params;
  const double attention_model = 6 * mb.qkv_dims * seq * layers;  // non-causal, as Megatron, llm-foundry and torchtitan count it
  const double adapter_total = k.adapter_params_per_layer * layers;
  a.trainable_params = lora ? adapter_total : m.params;
  a.model_flops_per_token = (lora ? 4 * matmul_params + 6 * adapter_total : 6 * matmul_params) + attention_model;
  double recompute_flops = 0;
  if (w.recompute == Recompute::kFull)
    recompute_flops = 2 * layers * m.layer_active_params + attention_model / 3;
  else if (w.recompute == Recompute::kSelective)
    recompute_flops = 2 * layers * mb.selective_matmul_params +
                      (!w.flash_attention && contains(e.selective_drops, "attention_scores") ? attention_model / 3 : 0);
  a.hardware_flops_per_token = a.model_flops_per_token + recompute_flops;
  // Model FLOPs utilisation (Chowdhery et al. 2022, "PaLM", arXiv:2204.02311, appendix B): model FLOPs per
  // token x tokens/s over peak; HFU counts the recomputed FLOPs too (Korthikanti et al. 2022, section 6).
  if (r.peak_gemm > 0) {
    a.mfu = a.model_flops_per_token * a.tokens_per_s_per_gpu / r.peak_gemm;
    a.hfu = a.hardware_flops_per_token * a.tokens_per_s_per_gpu / r.peak_gemm;
  }

  explain_bound(a);
  add_warnings_and_assumptions(a, s, k, r.inter_bits);
  return a;
}

}  // namespace optadvisor
