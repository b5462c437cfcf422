// SPDX-License-Identifier: MIT
// The inference performance and memory model. Every efficiency comes from the
// engine profile (data/engines/), every peak from the hardware profile; this
// file holds only the formulas.
#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/expert_layout.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>

#include <fmt/format.h>

namespace optadvisor {
namespace {

/// Peak rate for a compute dtype: "fp16", "bf16", "fp8", "fp4", "int8",
/// "cpu:fp32", "npu". Falls back fp16 -> bf16 -> fp32 -> CPU, and says which it used.
double peak_compute(const HardwareProfile& hw, const std::string& dtype, std::string* used) {
  // The first rate present wins; `used` names it.
  auto from = [&](const std::map<std::string, double>& rates, const std::string& key, const std::string& label) {
    auto it = rates.find(key);
    if (it == rates.end() || !(it->second > 0)) return false;
    *used = label;
    return true;
  };
  auto rate = [&](const std::map<std::string, double>& rates, const std::string& key) { return rates.at(key); };
  if (dtype == "npu" && hw.npu_ops_per_s) {
    *used = "npu";
    return *hw.npu_ops_per_s;
  }
  if (dtype == "fp16acc16" && from(hw.fp16_accumulate_flops_per_s, "fp16", "fp16 (FP16 accumulate)"))
    return rate(hw.fp16_accumulate_flops_per_s, "fp16");
  if (dtype.rfind("cpu:", 0) == 0) {
    const std::string key = dtype.substr(4);
    if (from(hw.cpu_flops_per_s, key, dtype)) return rate(hw.cpu_flops_per_s, key);
    if (from(hw.cpu_flops_per_s, "fp32", "cpu:fp32")) return rate(hw.cpu_flops_per_s, "fp32");
  }
  for (const std::string& key : {dtype, std::string("fp16"), std::string("bf16"), std::string("fp32")})
    if (from(hw.flops_per_s, key, key)) return rate(hw.flops_per_s, key);
  if (from(hw.cpu_flops_per_s, "fp32", "cpu:fp32")) return rate(hw.cpu_flops_per_s, "fp32");
  if (hw.npu_ops_per_s) {
    *used = "npu";
    return *hw.npu_ops_per_s;
  }
  *used = "none";
  return 0;
}

/// Expected fraction of routed experts a batch of `tokens` touches in one
/// layer when each token picks k of E uniformly: 1 - (1 - k/E)^tokens (each expert
/// is missed by one token with probability 1 - k/E; top-k routing as in Shazeer et al.
/// 2017, "Outrageously Large Neural Networks", arXiv:1701.06538, balanced by the aux loss).
double experts_touched_fraction(const ModelSpec& m, double tokens) {
  if (m.num_experts == 0 || m.num_experts_per_tok == 0) return 1.0;
  const double pick = static_cast<double>(m.num_experts_per_tok) / static_cast<double>(m.num_experts);
  return 1.0 - std::pow(1.0 - pick, std::max(tokens, 1.0));
}

/// The same as a share read when every token reads its own k experts (mat-vec kernels run per
/// (token, expert) pair): tokens x k / E, above 1 once the pairs outnumber the experts.
double expert_pairs_fraction(const ModelSpec& m, double tokens) {
  if (m.num_experts == 0 || m.num_experts_per_tok == 0) return 1.0;
  return std::max(tokens, 1.0) * static_cast<double>(m.num_experts_per_tok) / static_cast<double>(m.num_experts);
}

}  // namespace

ExpertGemm expert_gemm(const ModelSpec& m, double tokens, double half_tokens, double peak_share) {
  ExpertGemm g;
  if (m.num_experts == 0 || m.num_experts_per_tok == 0) return g;
  g.touched_fraction = experts_touched_fraction(m, tokens);
  const double k = static_cast<double>(m.num_experts_per_tok), n = static_cast<double>(m.num_experts);
  g.tokens_per_expert = std::max(tokens, 1.0) * k / (n * g.touched_fraction);
  g.efficiency_factor = grouped_gemm_fill(g.tokens_per_expert, half_tokens, peak_share);
  return g;
}

double grouped_gemm_fill(double tokens_per_expert, double half_tokens, double peak_share) {
  return peak_share * (half_tokens > 0 && tokens_per_expert > 0 ? tokens_per_expert / (tokens_per_expert + half_tokens) : 1.0);
}

namespace {

/// Host overhead of one decode step over all layers: with a graph, the backend's per-layer figure
/// scaled by the graph factor; without one, where the engine states its launches, every kernel
/// launched one by one (more for MoE layers, and per expert for engines that loop over them).
double decode_layers_overhead_s(const Scenario& s, const Factors& f, double tokens) {
  const EngineProfile& engine = *s.engine.engine;
  const ModelSpec& m = s.model;
  const EagerLaunches& e = engine.eager;
  // Builds that run a delta-net layer's recurrence as a graph of small operators pay that per layer too.
  const uint64_t unfused = unfused_delta_net_layers(s.engine, m);
  const double unfused_s = unfused > 0 ? static_cast<double>(unfused) * engine.unfused_delta_net->layer_overhead_s : 0.0;
  if (f.graphs || !(e.launch_s > 0)) return static_cast<double>(m.num_hidden_layers) * f.layer_overhead_s + unfused_s;
  double kernels = 0;
  const double experts_run = static_cast<double>(m.num_experts) * experts_touched_fraction(m, tokens);
  for (uint64_t layer = 0; layer < m.num_hidden_layers; ++layer) {
    kernels += e.kernels_per_layer;
    if (m.num_experts > 0 && is_moe_layer(m, layer)) kernels += e.extra_kernels_per_moe_layer + e.kernels_per_expert * experts_run;
  }
  return kernels * e.launch_s + unfused_s;
}

/// Recurrent-layer FLOPs per token per layer, independent of the context. Gated DeltaNet, per
/// value head: S.k (2 dk dv), the decayed rank-1 state update (3 dk dv) and S.q (2 dk dv). Mamba-2,
/// per head: the decay (d_head d_state), the dt B x outer product (2 d_head d_state) and C.h (2 d_head d_state).
/// LFM2 short convolution, per hidden channel: the B * x gate (1), the conv_L_cache-tap depthwise
/// conv (2 L) and the C gate (1); its in/out projections are weights, counted with them.
double linear_attention_flops_per_token(const ModelSpec& m) {
  if (m.conv_L_cache > 0) return static_cast<double>(m.hidden_size) * (2.0 * static_cast<double>(m.conv_L_cache) + 2.0);
  if (m.mamba_n_heads > 0)
    return 5.0 * static_cast<double>(m.mamba_n_heads) * static_cast<double>(m.mamba_d_head) * static_cast<double>(m.mamba_d_state);
  return 7.0 * static_cast<double>(m.linear_num_value_heads) * static_cast<double>(m.linear_key_head_dim) *
         static_cast<double>(m.linear_value_head_dim);
}

/// DSA lightning-indexer FLOPs for one token scoring `context` cached keys in one layer.
double indexer_flops_per_token(const ModelSpec& m, double context) {
  return 2.0 * static_cast<double>(m.index_n_heads) * static_cast<double>(m.index_head_dim) * context;
}

/// DeepSeek-V4's attention over its compressed entries for one new token at `context` (the window is
/// the sliding part): the heavily compressed layers attend to all their entries, each sparse layer
/// to its top-k entries after its indexer scored all of them. 0 for every other family.
double compressed_attention_flops_per_token(const ModelSpec& m, const KvShape& kv, double context) {
  const double c = 2.0 * static_cast<double>(attention_widths(m).sliding);
  double flops = c * kv.compressed_dense_entries_per_token * context;
  if (kv.compressed_sparse_layers > 0) {
    const double entries = context / static_cast<double>(kv.compressed_sparse_ratio);
    flops += static_cast<double>(kv.compressed_sparse_layers) *
             (c * std::min(entries, static_cast<double>(kv.compressed_topk)) + indexer_flops_per_token(m, entries));
  }
  return flops;
}

/// The same summed over the causal positions 0..p-1 of a prompt (closed form): entries grow as
/// i / ratio, the sparse layers' attended ones capped at the top-k past position ratio x top-k.
double compressed_prefill_attention_flops(const ModelSpec& m, const KvShape& kv, double p) {
  const double c = 2.0 * static_cast<double>(attention_widths(m).sliding);
  double flops = c * kv.compressed_dense_entries_per_token * p * p / 2.0;
  if (kv.compressed_sparse_layers > 0) {
    const auto r = static_cast<double>(kv.compressed_sparse_ratio);
    const auto k = static_cast<double>(kv.compressed_topk);
    const double attended = p > r * k ? r * k * k / 2.0 + (p - r * k) * k : p * p / (2.0 * r);
    flops += static_cast<double>(kv.compressed_sparse_layers) * (c * attended + indexer_flops_per_token(m, p * p / (2.0 * r)));
  }
  return flops;
}

/// Attention score+value FLOPs for one new token attending to `context` tokens, all layers: full
/// layers attend to the context (a DSA layer to its index_topk tokens, plus the indexer scoring
/// them all), sliding layers to their window, linear layers update a fixed state. Per full layer
/// 2 x heads x (qk_dim + v_dim) x context, i.e. 4 x context x d_attn for MHA (Kaplan et al. 2020,
/// "Scaling Laws for Neural Language Models", arXiv:2001.08361, table 1); MLA's dims per DeepSeek-V2
/// (arXiv:2405.04434); each layer kind at its own head width (Gemma 4's full layers: global_head_dim).
double attention_flops_per_token(const ModelSpec& m, const KvShape& cache, double context) {
  const KvShape kv = attention_reads(cache);  // KV-shared layers attend too
  const AttentionWidths width = attention_widths(m);
  const double window = kv.window_tokens ? std::min<double>(context, static_cast<double>(kv.window_tokens)) : context;
  const double attended = kv.sparse_topk ? std::min<double>(context, static_cast<double>(kv.sparse_topk)) : context;
  const double per_layer_full =
      2.0 * static_cast<double>(width.full) * attended + (kv.sparse_topk ? indexer_flops_per_token(m, context) : 0.0);
  const double per_layer_sliding = 2.0 * static_cast<double>(width.sliding) * window;
  return static_cast<double>(kv.full_layers) * per_layer_full + static_cast<double>(kv.sliding_layers) * per_layer_sliding +
         static_cast<double>(kv.linear_layers) * linear_attention_flops_per_token(m) + compressed_attention_flops_per_token(m, kv, context);
}

/// Causal prefill attention FLOPs for a prompt of `p` tokens: the sum of
/// attention_flops_per_token over positions 0..p-1 (closed form per layer kind).
double prefill_attention_flops(const ModelSpec& m, const KvShape& cache, double p) {
  const KvShape kv = attention_reads(cache);  // KV-shared layers attend too
  const AttentionWidths width = attention_widths(m);
  const double c_full = 2.0 * static_cast<double>(width.full);
  const double c_sliding = 2.0 * static_cast<double>(width.sliding);
  // Attention over at most w tokens for each of p positions: c (w^2/2 + (p - w) w) past w, c p^2/2 below.
  const auto capped = [p](double c, double w) { return p > w ? c * (w * w / 2.0 + (p - w) * w) : c * p * p / 2.0; };
  double full = c_full * p * p / 2.0;
  if (kv.sparse_topk) full = capped(c_full, static_cast<double>(kv.sparse_topk)) + indexer_flops_per_token(m, p) * p / 2.0;
  const double sliding = kv.window_tokens ? capped(c_sliding, static_cast<double>(kv.window_tokens)) : c_sliding * p * p / 2.0;
  return static_cast<double>(kv.full_layers) * full + static_cast<double>(kv.sliding_layers) * sliding +
         static_cast<double>(kv.linear_layers) * linear_attention_flops_per_token(m) * p + compressed_prefill_attention_flops(m, kv, p);
}

/// What the program may allocate: the phone's per-app limit (or the entitled
/// one), else the driver-visible bytes times the usable fraction (the macOS
/// wired limit, or a raised one the workload states).
double usable_capacity(const HardwareProfile& hw, const Workload& wl) {
  if (hw.app_limit_bytes) {
    if (wl.entitled_memory_limit && hw.app_limit_entitled_bytes) return *hw.app_limit_entitled_bytes;
    return *hw.app_limit_bytes;
  }
  if (wl.usable_memory_fraction) return hw.physical_memory_bytes() * *wl.usable_memory_fraction;
  return hw.usable_memory_bytes();
}

/// Adds `k` times every summed quantity of `src` to `dst`.
void add_scaled(PhaseEstimate& dst, const PhaseEstimate& src, double k) {
  dst.weights_time_s += k * src.weights_time_s;
  dst.kv_time_s += k * src.kv_time_s;
  dst.offload_time_s += k * src.offload_time_s;
  dst.compute_time_s += k * src.compute_time_s;
  dst.attention_compute_time_s += k * src.attention_compute_time_s;
  dst.overhead_time_s += k * src.overhead_time_s;
  dst.interconnect_time_s += k * src.interconnect_time_s;
  dst.exposed_compute_s += k * src.exposed_compute_s;
  dst.exposed_weights_s += k * src.exposed_weights_s;
  dst.exposed_kv_s += k * src.exposed_kv_s;
  dst.exposed_offload_s += k * src.exposed_offload_s;
  dst.host_weights_streamed = dst.host_weights_streamed || src.host_weights_streamed;
  if (dst.experts.tokens_per_pass <= 0) dst.experts = src.experts;  // the first step's, not summed
  dst.flops += k * src.flops;
  dst.bytes += k * src.bytes;
}

/// The parts of a phase's time, each the exposed part of a component (they sum to time_s). Weight
/// and KV-cache reads share the device's memory bandwidth, so they count together; reads of
/// offloaded layers cross the host link, a resource of their own.
struct TimePart {
  Bound bound;
  double time;
  const char* what;
};

std::array<TimePart, 5> time_parts(const PhaseEstimate& p) {
  return {{{Bound::kCompute, p.exposed_compute_s, "matrix math"},
           {Bound::kMemoryBandwidth, p.exposed_weights_s + p.exposed_kv_s, "memory reads"},
           p.host_weights_streamed ? TimePart{Bound::kInterconnect, p.exposed_offload_s, "PCIe copies of host-resident weights"}
                                   : TimePart{Bound::kMemoryBandwidth, p.exposed_offload_s, "host-memory (offloaded layer) reads"},
           {Bound::kOverhead, p.overhead_time_s, "launch and scheduling overhead"},
           {Bound::kInterconnect, p.interconnect_time_s, "tensor-parallel all-reduces"}}};
}

/// The binding resource of a phase: the part with the largest share of its time (the first on a tie).
TimePart binding_part(const PhaseEstimate& p) {
  const auto parts = time_parts(p);
  const TimePart* top = &parts[0];
  for (const auto& part : parts)
    if (part.time > top->time) top = &part;
  return *top;
}

void classify(PhaseEstimate& p, const char* phase) {
  const TimePart top = binding_part(p);
  p.bound = top.time > 0 ? top.bound : Bound::kNone;
  p.phase = phase;
}

}  // namespace

std::string PhaseEstimate::explanation() const {
  if (*phase == '\0') return {};  // the phase did not run (--gen 0, or no prompt)
  if (bound == Bound::kNone) return fmt::format("{}: nothing to do", phase);
  const TimePart top = binding_part(*this);
  const TimePart shares[] = {
      {Bound::kMemoryBandwidth, exposed_weights_s, "weights"}, {Bound::kMemoryBandwidth, exposed_kv_s, "KV cache"},
      {Bound::kMemoryBandwidth, exposed_offload_s, "offload"}, {Bound::kCompute, exposed_compute_s, "compute"},
      {Bound::kOverhead, overhead_time_s, "overhead"},         {Bound::kInterconnect, interconnect_time_s, "interconnect"}};
  const auto percent = [this](double part) { return time_s > 0 ? 100.0 * part / time_s : 0.0; };
  fmt::memory_buffer list;
  for (const auto& share : shares)
    if (share.time >= 0.005 * time_s)
      fmt::format_to(std::back_inserter(list), "{}{} {:.0f}%", list.size() ? ", " : "", share.what, percent(share.time));
  return fmt::format("{}: {} bound, {} {:.0f}% of the time ({}); arithmetic intensity {:.3g} FLOP/byte vs ridge {:.3g}", phase,
                     to_string(bound), top.what, percent(top.time), fmt::to_string(list), arithmetic_intensity, ridge_point);
}

std::string_view to_string(Bound b) {
  switch (b) {
    case Bound::kCompute: return "compute";
    case Bound::kMemoryBandwidth: return "memory-bandwidth";
    case Bound::kMemoryCapacity: return "memory-capacity";
    case Bound::kOverhead: return "overhead";
    case Bound::kInterconnect: return "interconnect";
    case Bound::kThermal: return "thermal";
    case Bound::kNone: return "none";
  }
  return "none";
}

namespace {

/// KV-cache bytes of one sequence: 2 (K and V) x layers x KV heads x head dim x context x bytes per
/// element (Pope et al. 2022, "Efficiently Scaling Transformer Inference", arXiv:2211.05102, section
/// 2.1; GQA per Ainslie et al. 2023, arXiv:2305.13245; MLA's latent per DeepSeek-V2, arXiv:2405.04434).
/// kv_bytes_per_sequence with the model's cache layout worked out once: the
/// largest-context search below calls it a few dozen times per analysis.
double kv_bytes_with(const Scenario& s, const KvShape& kv, uint64_t context) {
  const auto policy =
      s.engine.engine && !s.engine.engine->cap_sliding_window ? KvWindowPolicy::kFullContext : KvWindowPolicy::kCapSlidingLayers;
  const KvElements elements = kv_cache_elements_by_kind(kv, context, 1, policy);
  // KV heads split across tensor-parallel ranks (replicated when kv_heads < tp), each layer kind by its own count.
  const double tp = static_cast<double>(std::max<uint32_t>(1, s.workload.tp));
  const auto split = [&](uint64_t kv_heads) {
    return s.model.kv_lora_rank ? 1.0 : std::min(tp, static_cast<double>(std::max<uint64_t>(1, kv_heads)));
  };
  const double per_rank =
      static_cast<double>(elements.full) / split(kv.full_kv_heads) + static_cast<double>(elements.sliding) / split(kv.sliding_kv_heads);
  // Linear-attention state: fixed per sequence, at its own dtype, split by value heads (a short
  // convolution's by its hidden channels).
  const uint64_t state_shards =
      s.model.linear_num_value_heads + s.model.mamba_n_heads + (s.model.conv_L_cache > 0 ? s.model.hidden_size : 0);
  const double state_split = std::min(tp, static_cast<double>(std::max<uint64_t>(1, state_shards)));
  const double state = recurrent_state_bytes(kv, 1) / state_split;
  return (per_rank * s.workload.kv_bytes_per_element + state) / static_cast<double>(std::max<uint32_t>(1, s.workload.pp));
}

/// Cache bytes one decode step reads per sequence: all of it (a KV-shared layer reads its source
/// layer's again), except that a DSA layer reads every indexer key but only the index_topk latents
/// it selected (DSA layers are never windowed, so the cache grows linearly with the context).
double kv_read_bytes_with(const Scenario& s, const KvShape& cache, uint64_t context) {
  const KvShape kv = attention_reads(cache);
  const double all = kv_bytes_with(s, kv, context);
  if (kv.sparse_topk == 0 || context <= kv.sparse_topk || kv.elements_per_token_per_layer == 0) return all;
  const auto per = static_cast<double>(kv.elements_per_token_per_layer);
  const auto indexer = static_cast<double>(kv.indexer_elements_per_token_per_layer);
  const double selected = static_cast<double>(kv.sparse_topk) / static_cast<double>(context);
  return all * (indexer + (per - indexer) * selected) / per;
}

}  // namespace

double kv_bytes_per_sequence(const Scenario& s, uint64_t context) { return kv_bytes_with(s, kv_shape(s.model), context); }

namespace {

/// The rates the model runs at: bandwidth and compute (peak x the engine's efficiency), the
/// overheads, and whether flash attention and graphs are on.
void fill_factors(const Scenario& s, Factors& f) {
  const HardwareProfile& hw = *s.hardware;
  const WeightsSummary& w = s.weights;
  const EngineProfile& engine = *s.engine.engine;
  const BackendProfile& backend = *s.engine.backend;
  const Workload& wl = s.workload;
  const double tp = std::max<uint32_t>(1, wl.tp);
  const QuantEfficiency qe = engine.efficiency_for(backend, w.quant_id, s.engine.build);
  f.peak_bandwidth_bytes_per_s = hw.memory_bandwidth_bytes_per_s;
  // A weight-only format's kernels read the bytes stored in it at their own share: the whole model's,
  // or the routed experts' alone where only they are stored below 16 bits.
  f.expert_format_decode_efficiency = w.experts_only_quantized ? qe.decode : 1.0;
  f.decode_bandwidth_efficiency = std::min(1.0, backend.decode_bandwidth_efficiency * (w.experts_only_quantized ? 1.0 : qe.decode));
  f.achievable_bandwidth_bytes_per_s = f.peak_bandwidth_bytes_per_s * f.decode_bandwidth_efficiency;
  const double per_unit = backend.bytes_per_s_per_compute_unit_on(hw.vendor, hw.architecture);
  if (per_unit > 0 && hw.compute_units && *hw.compute_units > 0) {
    const double ceiling = static_cast<double>(*hw.compute_units) * per_unit;
    if (ceiling < f.achievable_bandwidth_bytes_per_s) {
      f.compute_unit_bandwidth_ceiling_bytes_per_s = ceiling;
      f.achievable_bandwidth_bytes_per_s = ceiling;
      f.decode_bandwidth_efficiency = ceiling / f.peak_bandwidth_bytes_per_s;
    }
  }
  // Quantized weights take their own kernels where the backend (in the chosen build) has them.
  const PrefillPath prefill = backend.prefill_path(w.quantized, s.engine.build);
  std::string dtype = prefill.compute_dtype;
  // FP8/FP4 checkpoints run on the native matrix path where the device has it (GGUF files have none).
  if (!w.native_compute_dtype.empty() && hw.capabilities.has(w.native_capability)) dtype = w.native_compute_dtype;
  // Where the backend's GEMMs take another kernel path on this device (the matrix cores left idle, or
  // another matrix path), its compute dtype and efficiency apply.
  double prefill_efficiency = prefill.efficiency;
  if (const DevicePath* path = backend.device_path_for(hw.vendor, hw.architecture)) {
    if (const std::string own = path->compute_dtype_for(w.quant_id); !own.empty()) dtype = own;
    prefill_efficiency = path->efficiency_for(parse_build_number(s.engine.version), prefill_efficiency);
    // The path's quantized kernels are the newest builds'; a build with quantized kernels of its own
    // (before b3216 every GPU dequantized for cuBLAS) keeps them.
    const bool newest_quantized = w.quantized && !(s.engine.build && s.engine.build->own_quantized_prefill());
    if (newest_quantized && !path->quantized_compute_dtype.empty()) dtype = path->quantized_compute_dtype;
    if (newest_quantized && path->quantized_prefill_compute_efficiency) prefill_efficiency = *path->quantized_prefill_compute_efficiency;
  }
  f.peak_compute_flops_per_s = peak_compute(hw, dtype, &f.compute_dtype);
  f.prefill_compute_efficiency = std::min(1.0, prefill_efficiency * qe.prefill);
  f.achievable_compute_flops_per_s = f.peak_compute_flops_per_s * f.prefill_compute_efficiency;
  f.graphs = wl.graphs.value_or(backend.graphs);
  f.layer_overhead_s = layer_overhead_s_in(backend, s.engine.build) * (f.graphs ? engine.graph_overhead_factor : 1.0);
  f.step_overhead_s = backend.step_overhead_s;
  f.moe_layer_overhead_s = s.model.num_experts > 0 ? moe_layer_overhead_s_in(backend, s.engine.build, w.quant_id) : 0.0;
  f.mla_layer_overhead_s = s.model.kv_lora_rank > 0 ? engine.mla_layer_overhead_s : 0.0;
  f.dsa_indexer_layer_s = indexer_layer_count(kv_shape(s.model)) > 0 ? engine.dsa_indexer_layer_s : 0.0;
  f.flash_attention = wl.flash_attention.value_or(engine.memory.flash_attention_default) &&
                      (hw.capabilities.flash_attention_2 || engine.own_flash_attention);
  const Link* link = nullptr;
  if (tp > 1 || wl.expert_layout().exchanges_experts(s.model)) {
    link = hw.default_multi_gpu_link();  // prepare_scenario put the --link choice into the profile
    f.link_bandwidth_bytes_per_s = link ? link->per_direction_bytes_per_s() : 0;
  }
  if (hw.pcie) f.host_to_device_bytes_per_s = hw.pcie->per_direction_bytes_per_s() * engine.host_to_device_fraction;
}

/// Activation and compute buffers per device. ggml (llama.cpp): per-token activations of one
/// ubatch plus the f32 KQ score matrix (context x ubatch x heads) unless flash attention fuses
/// it; server engines: the profiling forward pass of max_batched_tokens at once (chunked prefill).
double activation_bytes(const Scenario& s, bool flash_attention) {
  const ModelSpec& m = s.model;
  const EngineProfile& engine = *s.engine.engine;
  const Workload& wl = s.workload;
  const double tp = std::max<uint32_t>(1, wl.tp);
  const double hidden = static_cast<double>(m.hidden_size);
  if (engine.memory.activation_model == ActivationModel::kGgmlUbatch) {
    const double ubatch = static_cast<double>(std::min<uint64_t>(s.prefill_chunk_tokens(), std::max<uint64_t>(wl.prompt_tokens, 1)));
    double bytes = ubatch * hidden * engine.memory.activation_bytes_per_token + static_cast<double>(m.vocab_size) * 4.0;
    if (!flash_attention) bytes += static_cast<double>(wl.context()) * ubatch * static_cast<double>(m.num_attention_heads) * 4.0 / tp;
    return bytes;
  }
  const double tokens = static_cast<double>(wl.ubatch_tokens ? wl.ubatch_tokens : engine.memory.max_batched_tokens);
  return tokens * hidden * engine.memory.activation_bytes_per_token / tp;
}

/// The largest context whose KV cache fits `per_seq_budget`: binary search on the (monotonic) KV size.
uint64_t largest_context(const Scenario& s, const KvShape& kv, double per_seq_budget) {
  uint64_t lo = 0, hi = s.model.max_position_embeddings ? s.model.max_position_embeddings : (1u << 20);
  if (kv_bytes_with(s, kv, hi) <= per_seq_budget) return hi;
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    (kv_bytes_with(s, kv, mid) <= per_seq_budget ? lo : hi) = mid;
  }
  return lo;
}

/// The MoE layers among the first Workload::cpu_moe_layers, whose routed experts stay in host
/// memory and run on the host CPU (llama.cpp --n-cpu-moe), and their share of all routed experts.
struct HostExperts {
  uint64_t layers = 0;
  double fraction = 0;
};

HostExperts host_experts_of(const Scenario& s) {
  const ModelSpec& m = s.model;
  HostExperts out;
  if (s.workload.cpu_moe_layers == 0 || m.num_experts == 0) return out;
  uint64_t moe_layers = 0;
  for (uint64_t layer = 0; layer < m.num_hidden_layers; ++layer) {
    if (!is_moe_layer(m, layer)) continue;
    ++moe_layers;
    if (layer < s.workload.cpu_moe_layers) ++out.layers;
  }
  out.fraction = moe_layers ? static_cast<double>(out.layers) / static_cast<double>(moe_layers) : 0.0;
  return out;
}

/// What the device's memory holds for this scenario. Phones: weights mapped read-only from the file
/// are clean pages, outside the per-app footprint limit, but they still need physical memory (at
/// most the device's usable share of it).
double memory_room(const Scenario& s, const MemoryBreakdown& mem) {
  const HardwareProfile& hw = *s.hardware;
  double room = mem.capacity_bytes;
  if (s.workload.weights_mmap && hw.app_limit_bytes) {
    const double ceiling = hw.memory_capacity_bytes * hw.memory_usable_fraction.value_or(1.0);
    room += std::clamp(ceiling - mem.capacity_bytes, 0.0, mem.weights_bytes);
  }
  return room;
}

/// Engines that offload (llama.cpp) keep the layers that do not fit in host memory, or those
/// --n-gpu-layers leaves there: the first ones, and the output layer unless every layer is on the GPU.
void offload_layers(const Scenario& s, bool text, Analysis& a) {
  const EngineProfile& engine = *s.engine.engine;
  const ModelSpec& m = s.model;
  const WeightsSummary& w = s.weights;
  MemoryBreakdown& mem = a.memory;
  const double layers = static_cast<double>(m.num_hidden_layers);
  const std::optional<uint32_t> asked = s.workload.gpu_layers;
  const bool asked_offload = asked && *asked <= m.num_hidden_layers;
  if ((mem.fits && !asked_offload) || !engine.offloads_to_host || s.hardware->unified_memory || layers <= 0) return;
  const double tp = std::max<uint32_t>(1, s.workload.tp);
  const double pp = std::max<uint32_t>(1, s.workload.pp);
  const double per_layer = (w.total_bytes - mem.host_expert_bytes) / layers / tp / pp;
  const double over = mem.total_bytes - mem.limit_bytes;
  const uint64_t needed = over > 0 ? std::min<uint64_t>(m.num_hidden_layers, static_cast<uint64_t>(std::ceil(over / per_layer))) : 0;
  if (asked_offload) {
    // The repeating layers' share, without the output layer and the looked-up embedding table.
    const double block = std::max(w.total_bytes - mem.host_expert_bytes - w.output_head_bytes - w.bytes_looked_up(), 0.0) / layers;
    const uint64_t host_layers = m.num_hidden_layers - *asked;
    const double host_bytes = static_cast<double>(host_layers) * block + w.output_head_bytes;
    if (mem.total_bytes - host_bytes <= mem.limit_bytes) {
      mem.offloaded_layers = host_layers;
      mem.offloaded_bytes = host_bytes;
      return;
    }
    if (text)
      a.warnings.push_back(fmt::format("--n-gpu-layers {} does not fit: the GPU part needs {:.2f} GB, {} may use {:.2f} GB (llama.cpp "
                                       "would fail to allocate); at most {} layers fit, taken below",
                                       *asked, (mem.total_bytes - host_bytes) / 1e9, engine.id, mem.limit_bytes / 1e9,
                                       m.num_hidden_layers - needed));
  }
  mem.offloaded_layers = needed;
  mem.offloaded_bytes = static_cast<double>(mem.offloaded_layers) * per_layer;
  if (text && !asked_offload)
    a.warnings.push_back(fmt::format("weights do not fit: {} would keep {} of {} layers in host memory (-ngl {}); {}", engine.name,
                                     mem.offloaded_layers, m.num_hidden_layers, m.num_hidden_layers - mem.offloaded_layers,
                                     engine.host_weights_streamed_min_tokens > 0
                                         ? fmt::format("the host CPU runs them for batches under {:g} tokens (decode), and larger "
                                                       "batches (prompt ubatches) copy them to the GPU over PCIe",
                                                       engine.host_weights_streamed_min_tokens)
                                         : std::string("those run at host-memory bandwidth")));
}

/// What the engine may use of `room` (its share where it claims one up front) and what it reserves.
void set_limit(const Scenario& s, double room, MemoryBreakdown& mem) {
  const std::optional<double> share = engine_memory_share(s);
  mem.engine_share = share;
  mem.limit_bytes = share ? room * *share : room;
  mem.reserved_bytes = share ? std::max(mem.total_bytes, mem.limit_bytes) : mem.total_bytes;
}

/// Memory per device, the batch that runs, and the layers an offloading engine keeps in host
/// memory. Returns the prompt tokens a shared prefix cache holds.
uint64_t fill_memory(const Scenario& s, const KvShape& kv, bool flash_attention, bool text, Analysis& a) {
  const HardwareProfile& hw = *s.hardware;
  const ModelSpec& m = s.model;
  const WeightsSummary& w = s.weights;
  const EngineProfile& engine = *s.engine.engine;
  const Workload& wl = s.workload;
  const double tp = std::max<uint32_t>(1, wl.tp);
  const double pp = std::max<uint32_t>(1, wl.pp);
  MemoryBreakdown& mem = a.memory;
  const uint64_t context = wl.context();
  // A continuous-batching server (vLLM, SGLang, TensorRT-LLM) gives a running sequence KV blocks for
  // the tokens it holds, prompt + generated, not for the configured maximum length, and runs as many
  // sequences at a time as its pool holds; the maximum length has to fit once (vLLM refuses a
  // max_model_len whose KV exceeds its pool).
  const uint64_t block = engine.memory.kv_block_tokens;
  const bool schedules = engine.serving.enabled() && block > 0;
  const uint64_t held = schedules ? std::min(context, (wl.prompt_tokens + wl.gen_tokens + block - 1) / block * block) : context;
  mem.total_layers = m.num_hidden_layers;
  mem.kv_tokens_per_sequence = held;
  mem.capacity_bytes = usable_capacity(hw, wl);
  // --n-cpu-moe: those layers' routed experts sit in host memory, not on the device.
  const HostExperts host_experts = host_experts_of(s);
  mem.host_expert_layers = host_experts.layers;
  mem.host_expert_bytes = host_experts.fraction * w.routed_expert_bytes;
  // Dense weights (and a drafter) sharded over an attention rank's tp GPUs, the routed experts over all tp x dp.
  const uint32_t ranks = std::max<uint32_t>(1, wl.dp_attention);
  const double dp = ranks;
  mem.weights_bytes = ((w.total_bytes - w.routed_expert_bytes + wl.speculation.draft_memory_bytes) / tp +
                       (w.routed_expert_bytes - mem.host_expert_bytes) / (tp * dp)) /
                      pp;
  mem.kv_bytes_per_token = held ? kv_bytes_with(s, kv, held) / static_cast<double>(held) : 0;
  mem.overhead_bytes = engine.memory.runtime_overhead_bytes;
  const double kv_per_seq = kv_bytes_with(s, kv, held);
  mem.activation_bytes = activation_bytes(s, flash_attention);
  const double fixed = mem.weights_bytes + mem.activation_bytes + mem.overhead_bytes;
  const double room = memory_room(s, mem);
  const double kv_budget = kv_budget_of(s, room, fixed);
  // A prefix cache holds a prompt prefix the sequences share once (paged
  // engines share its blocks across sequences).
  const uint64_t cached_prefix = static_cast<uint64_t>(std::floor(wl.prefix_cached_fraction * static_cast<double>(wl.prompt_tokens)));
  const double shared_kv = cached_prefix > 0 && engine.memory.kv_block_tokens > 0 ? kv_bytes_with(s, kv, cached_prefix) : 0.0;
  // Sequences one attention rank's GPUs hold; the worker holds dp times as many.
  uint64_t rank_max = 0;
  if (kv_per_seq <= 0)
    rank_max = 0;
  else if (shared_kv > 0)
    rank_max = kv_budget < kv_per_seq ? 0 : 1 + static_cast<uint64_t>(std::floor((kv_budget - kv_per_seq) / (kv_per_seq - shared_kv)));
  else
    rank_max = static_cast<uint64_t>(std::floor(kv_budget / kv_per_seq));
  mem.max_batch = std::min<uint64_t>(rank_max * ranks, 1u << 20);
  uint64_t batch =
      wl.batch_max ? std::min<uint64_t>(std::max<uint64_t>(mem.max_batch, 1), engine.max_batch * ranks) : std::max<uint64_t>(wl.batch, 1);
  const double kv_longest = schedules && held < context ? kv_bytes_with(s, kv, context) : kv_per_seq;
  a.batch_asked = batch;
  if (schedules && batch > mem.max_batch && mem.max_batch >= 1 && kv_longest <= kv_budget) {
    if (text)
      a.warnings.push_back(fmt::format("{} runs {} of the {} sequences at a time: its KV pool holds {} sequences of {} tokens (prompt "
                                          "+ generated); the others wait for free blocks",
                                          engine.id, mem.max_batch, batch, mem.max_batch, held));
    batch = mem.max_batch;
  }
  a.batch = batch;
  const uint64_t rank_batch = (batch + ranks - 1) / ranks;  // the busiest rank's
  // A server's pool must also hold one sequence of the maximum length (the startup check).
  mem.kv_cache_bytes = std::max(kv_per_seq * static_cast<double>(rank_batch) - shared_kv * static_cast<double>(rank_batch - 1), kv_longest);
  mem.total_bytes = fixed + mem.kv_cache_bytes;
  set_limit(s, room, mem);
  mem.fits = mem.total_bytes <= mem.limit_bytes;
  if (text && schedules && kv_longest > kv_budget && kv_longest > kv_per_seq)
    a.warnings.push_back(fmt::format("{} refuses a maximum length of {} tokens here: one such sequence needs {:.2f} GB of KV cache, "
                                     "its pool holds {:.2f} GB (lower --context, vLLM's --max-model-len)",
                                     engine.id, context, kv_longest / 1e9, kv_budget / 1e9));
  // The longest context: per sequence of the batch, or on a server the longest one sequence its pool holds.
  const double per_seq_budget =
      schedules ? kv_budget : (kv_budget + shared_kv * static_cast<double>(rank_batch - 1)) / static_cast<double>(rank_batch);
  mem.max_context = largest_context(s, kv, per_seq_budget);
  offload_layers(s, text, a);
  return cached_prefix;
}

/// The share of the host bandwidth the host CPU reaches on routed experts it runs (--n-cpu-moe):
/// that of the engine's own CPU backend, whose kernels it runs.
double host_expert_read_share(const EngineProfile& engine) {
  const auto it = engine.backends.find("cpu");
  return it == engine.backends.end() ? 1.0 : it->second.expert_read_share;
}

/// One forward pass over `tokens_per_seq` new tokens of every sequence, as a sum of per-operator
/// rooflines (Williams, Waterman, Patterson 2009, "Roofline", CACM 52(4)): time = max(bytes /
/// bandwidth, FLOPs / compute) per operator, because kernels run one after another.
/// Holds references: the scenario, its KV shape and factors must outlive it.
struct ForwardPass {
  const Scenario& s;
  const KvShape& kv;
  const Factors& f;
  double batch = 1;
  double offloaded_bytes = 0;
  double host_bw = 0;
  double host_expert_fraction = 0;  ///< share of the routed experts in host memory, run on the host CPU
  double host_compute = 0;          ///< the host CPU's achievable matrix rate for them
  double host_expert_read_share = 1;  ///< of host_bw, what the host CPU's expert kernels reach (its cpu backend's expert_read_share)

  /// Adds the pass's components to `p` and returns its time. `past`: prompt tokens already in the
  /// KV cache (a cached prefix), attended to but not recomputed.
  double operator()(double ctx, double tokens_per_seq, PhaseEstimate& p, bool prefill, double past = 0) const {
    const ModelSpec& m = s.model;
    const WeightsSummary& w = s.weights;
    const EngineProfile& engine = *s.engine.engine;
    const BackendProfile& backend = *s.engine.backend;
    const Workload& wl = s.workload;
    const double tp = std::max<uint32_t>(1, wl.tp);
    const double pp = std::max<uint32_t>(1, wl.pp);
    const double dp = std::max<uint32_t>(1, wl.dp_attention);
    const double layers = static_cast<double>(m.num_hidden_layers);
    const double bw = std::max(f.achievable_bandwidth_bytes_per_s, 1.0);
    const double compute = std::max(f.achievable_compute_flops_per_s, 1.0);
    // With data-parallel attention each rank runs its own sequences (the busiest holds
    // ceil(batch / dp)) while every GPU's experts serve all ranks' tokens.
    const double b = std::ceil(batch / dp);
    const double embedding_skipped = w.bytes_looked_up();
    // Pipeline stages (llama.cpp layer split) run one after another for a token, so a step reads
    // every stage's share in turn: the per-device bytes times pp, at one device's bandwidth.
    const double host_expert_bytes = host_expert_fraction * w.routed_expert_bytes;
    const double resident_fraction = 1.0 - offloaded_bytes / std::max((w.total_bytes - host_expert_bytes) / tp / pp, 1.0);
    const double tokens = tokens_per_seq * b;                  // this rank's
    const double worker_tokens = tokens_per_seq * batch;       // every rank's, which the experts see
    const double chunk = static_cast<double>(s.prefill_chunk_tokens());
    const double passes = prefill ? std::max(1.0, std::ceil(tokens / std::max(chunk, 1.0))) : 1.0;
    // Each pass reads the experts its own tokens touch; in prefill the routed GEMMs run per expert
    // on the tokens routed to it, at the backend's grouped-GEMM efficiency, unless the pass is small
    // enough for the backend's mat-vec kernels (as decode's are) and they take the weights' format.
    const double pass_tokens = worker_tokens / passes;
    const bool matvec_format = backend.expert_matvec_runs(w.quant_id);
    const auto matvec_max_tokens = static_cast<double>(expert_matvec_max_tokens_in(backend, s.engine.build));
    const bool small_pass = !prefill || pass_tokens <= matvec_max_tokens;
    const bool grouped = m.num_experts > 0 && (!matvec_format || !small_pass);
    const ExpertGemmTermsUsed gemm = expert_gemm_terms_in(backend, s.engine.build, w.quant_id);
    const ExpertGemm experts =
        grouped ? expert_gemm(m, pass_tokens, gemm.terms.half_tokens, gemm.terms.peak_share) : expert_gemm(m, pass_tokens, 0.0);
    // The mat-vec kernels multiply each (token, expert) pair on its own (llama.cpp's mul_mv_id and
    // MMVQ with ids), so a pass of a few tokens reads each token's experts for that token: k / E of
    // them a token, where a grouped GEMM reads each touched expert once.
    const bool pairwise = !grouped && pass_tokens > 1.0 && pass_tokens <= matvec_max_tokens;
    const double expert_read_fraction = pairwise ? expert_pairs_fraction(m, pass_tokens) : experts.touched_fraction;
    if (m.num_experts > 0)
      p.experts = {pass_tokens, experts.tokens_per_expert, grouped, experts.efficiency_factor, 0.0,
                   grouped && gemm.format_own ? w.quant_id : std::string()};
    const double experts_untouched = w.routed_expert_bytes * (1.0 - expert_read_fraction);
    // Weights in host memory (offloaded layers, --n-cpu-moe experts): once a pass's batch reaches
    // the engine's threshold (ggml's offload_op: prefill ubatches), their operators run on the device
    // and each pass copies the whole host-resident tensors over PCIe; below it (decode) the host CPU
    // reads the touched ones and multiplies them.
    const bool streamed = engine.host_weights_streamed_min_tokens > 0 && f.host_to_device_bytes_per_s > 0 &&
                          tokens / passes >= engine.host_weights_streamed_min_tokens;
    const double host_touched_bytes = host_expert_bytes * experts.touched_fraction;
    // Dense weights are sharded over a rank's tp GPUs, the routed experts over all tp x dp; the
    // experts are read at the backend's expert_read_share of the bandwidth.
    const double dense_bytes = (w.total_bytes - w.routed_expert_bytes - embedding_skipped) / tp;
    const double routed_bytes = (w.routed_expert_bytes - experts_untouched - host_touched_bytes) / (tp * dp);
    const double weight_bytes = dense_bytes + routed_bytes;
    double kv_bytes = 0, attention = 0;
    if (prefill) {
      attention = (prefill_attention_flops(m, kv, past + tokens_per_seq) - prefill_attention_flops(m, kv, past)) * b;
      kv_bytes = kv_bytes_with(s, kv, static_cast<uint64_t>(past + tokens_per_seq)) * pp * b;  // written once (prefix read once)
      // A prompt split over several passes: each later pass reads again the KV its sequence's earlier
      // passes wrote (attention streams the whole prefix once per pass), about the half-way prefix each;
      // at one-token passes this is decode's read per token, at 512-token ones a small share.
      const double repasses = std::max(passes - b, 0.0);
      if (repasses > 0) kv_bytes += repasses * kv_read_bytes_with(s, kv, static_cast<uint64_t>(past + tokens_per_seq / 2.0)) * pp;
    } else {
      // Every new token of a step (several when a speculative draft is verified) attends to the context.
      attention = attention_flops_per_token(m, kv, ctx) * b * tokens_per_seq;
      kv_bytes = kv_read_bytes_with(s, kv, static_cast<uint64_t>(ctx)) * pp * b;
    }
    // Kernels run one after another, so each operator is its own roofline:
    // the weight GEMMs (bound by weight reads or matrix math) and attention
    // (bound by KV reads or its own math), summed.
    // 2N per token forward (Kaplan et al. 2020, section 2.1), less what the host CPU multiplies:
    // its experts and the offloaded layers' share, unless they stream to the device.
    const double host_expert_share = streamed ? 0.0 : host_expert_fraction;
    const double offloaded_share = streamed ? 0.0 : 1.0 - resident_fraction;
    const double host_flops = 2.0 * w.routed_active_params * host_expert_share * tokens;
    const double routed_device_flops = 2.0 * w.routed_active_params * (1.0 - host_expert_share) * worker_tokens / (tp * dp);
    // The output layer runs for the tokens that get logits: a prompt's last (one per sequence), every decoded one.
    const double logit_tokens = prefill ? b : tokens;
    const double device_linear_flops =
        2.0 * (w.per_token_dense_params() * tokens + w.output_head_params * logit_tokens) / tp + routed_device_flops;
    const double offloaded_flops = device_linear_flops * offloaded_share;
    const double linear_flops = device_linear_flops - offloaded_flops;
    const double routed_flops = routed_device_flops * (1.0 - offloaded_share);
    const double attention_flops = attention / tp;
    const double flops = linear_flops + attention_flops;
    const double weights_t = passes * (dense_bytes + routed_bytes / backend.expert_read_share / f.expert_format_decode_efficiency) *
                             resident_fraction / bw;
    // The host's weights, run in turn with the device's kernels (the graph splits there and back):
    // streamed, a copy of every host-resident byte per pass at the PCIe rate; else a roofline on the
    // host (the bytes read at its bandwidth, the FLOPs at its compute). The activations crossing
    // PCIe (tokens x hidden per layer and direction) are left out: small.
    const double h2d = std::max(f.host_to_device_bytes_per_s, 1.0);
    const double host_experts_t =
        host_expert_fraction <= 0 ? 0.0
        : streamed                ? passes * host_expert_bytes / h2d
                   : std::max(passes * host_touched_bytes / std::max(host_bw * host_expert_read_share, 1.0),
                              host_flops / std::max(host_compute, 1.0));
    // On the host an offloaded MoE layer reads only the experts the pass touches, like the device's
    // layers, and reads them as the host's expert kernels do (--n-cpu-moe's share); a copy to the
    // device moves the whole tensors.
    const double offloaded_experts = (1.0 - resident_fraction) * (w.routed_expert_bytes - host_expert_bytes) / tp / pp;
    const double offloaded_untouched = offloaded_experts * (1.0 - experts.touched_fraction);
    const double offloaded_experts_read = offloaded_experts - offloaded_untouched;
    const double offload_t =
        offloaded_bytes <= 0 ? 0.0
        : streamed           ? passes * offloaded_bytes / h2d
                             : std::max(passes * ((offloaded_bytes - offloaded_experts) / std::max(host_bw, 1.0) +
                                         offloaded_experts_read / std::max(host_bw * host_expert_read_share, 1.0)),
                                        host_compute > 0 ? offloaded_flops / host_compute : 0.0);
    // Without flash attention an engine may materialize the scores (llama.cpp: f32 KQ, softmax,
    // KQV): every score element of every head and layer is moved unfused_score_bytes.
    if (!f.flash_attention && engine.memory.unfused_score_bytes > 0) {
      const double keys = prefill ? tokens_per_seq * (past + tokens_per_seq / 2.0) : tokens_per_seq * ctx;
      kv_bytes += keys * b * static_cast<double>(m.num_attention_heads) / tp * layers * engine.memory.unfused_score_bytes;
    }
    const double kv_t = kv_bytes / bw;
    const double linear_compute_t = (linear_flops - routed_flops) / compute + routed_flops / (compute * experts.efficiency_factor);
    const double attention_compute_t = attention_flops / (compute * wl.attention_speedup);
    const double compute_t = linear_compute_t + attention_compute_t;
    // A prefill pass of one token runs the decode step's graph (llama.cpp captures and replays only
    // one-token graphs), so it costs what a decode step costs; longer passes pay the eager per-layer cost.
    const bool decode_like = !prefill || pass_tokens <= 1.0;
    // A MoE layer's routing and expert dispatch have a fixed time a pass: launched uncaptured (MLX),
    // or latency-bound kernels at a few tokens (SGLang's fused MoE).
    const double moe_dispatch_s = f.moe_layer_overhead_s > 0 ? moe_layer_count(m) * f.moe_layer_overhead_s : 0.0;
    // 16-bit experts a backend multiplies one at a time pay that loop's fixed cost per touched expert.
    const double expert_loop_s = grouped && !w.quantized && backend.float_expert_call_s > 0
                                     ? moe_layer_count(m) * experts.touched_fraction * static_cast<double>(m.num_experts) *
                                           backend.float_expert_call_s / (tp * dp)
                                     : 0.0;
    if (m.num_experts > 0) p.experts.per_expert_loop_s = passes * expert_loop_s;
    // Engines whose latent-attention path costs more per layer than a GQA layer pay it once a pass (every layer is MLA).
    const double mla_s = f.mla_layer_overhead_s > 0 ? layers * f.mla_layer_overhead_s : 0.0;
    // A lightning indexer's kernel chain runs once a pass in each layer that has one.
    const double indexer_s = static_cast<double>(indexer_layer_count(kv)) * f.dsa_indexer_layer_s;
    const double layers_t =
        decode_like ? decode_layers_overhead_s(s, f, pass_tokens) : layers * layer_overhead_s_in(backend, s.engine.build);
    const double overhead_t = passes * (layers_t + moe_dispatch_s + mla_s + indexer_s + expert_loop_s) + f.step_overhead_s;
    double comm_t = 0;
    if (tp > 1 || wl.expert_layout().exchanges_experts(m)) {
      // Tensor-parallel all-reduces and the experts' all-to-all, each with a fixed latency (expert_layout.cpp).
      const ExpertLayout layout = wl.expert_layout();
      const LayoutTraffic traffic =
          layout_traffic(m, layout, layers, layout.exchanges_experts(m) ? moe_layer_count(m) : 0.0, node_links(*s.hardware));
      comm_t = tokens * (traffic.allreduce_bytes_per_token + traffic.alltoall_bytes_per_token) / std::max(f.link_bandwidth_bytes_per_s, 1.0) +
               (traffic.allreduce_count + traffic.alltoall_count) * engine.allreduce_latency_s;
    }
    p.passes = passes;
    p.weights_time_s += weights_t;
    p.offload_time_s += offload_t + host_experts_t;
    p.exposed_offload_s += offload_t + host_experts_t;
    p.host_weights_streamed = p.host_weights_streamed || (streamed && offload_t + host_experts_t > 0);
    p.kv_time_s += kv_t;
    p.compute_time_s += compute_t;
    p.attention_compute_time_s += attention_compute_t;
    p.overhead_time_s += overhead_t;
    p.interconnect_time_s += comm_t;
    // Of each overlapping pair only the longer shows in the phase's time.
    if (weights_t >= linear_compute_t)
      p.exposed_weights_s += weights_t;
    else
      p.exposed_compute_s += linear_compute_t;
    if (kv_t >= attention_compute_t)
      p.exposed_kv_s += kv_t;
    else
      p.exposed_compute_s += attention_compute_t;
    p.flops += flops + host_flops + offloaded_flops;  // the host's share is still work done
    p.bytes += passes * (weight_bytes + host_touched_bytes) + kv_bytes;
    // Pipeline stages run in turn for one sequence. (llama.cpp can overlap
    // micro-batches across stages, but published runs show little of it:
    // 70B Q4_K_M pp4096 is 846 tok/s on 2 and 840 on 4 RTX 4090s.)
    // The host's weights (read and run on the host, or copied over PCIe) come in turn with the device's work.
    return std::max(weights_t, linear_compute_t) + std::max(kv_t, attention_compute_t) + offload_t + host_experts_t + overhead_t + comm_t;
  }
};

/// Tokens per second, arithmetic intensity against the ridge point, and the binding resource.
void finish_phase(PhaseEstimate& p, double tokens, double batch, double ridge, const char* name) {
  p.tokens_per_s = p.time_s > 0 ? tokens / p.time_s : 0;
  p.tokens_per_s_per_sequence = p.tokens_per_s / batch;
  p.arithmetic_intensity = p.bytes > 0 ? p.flops / p.bytes : 0;
  p.ridge_point = ridge;
  classify(p, name);
}

/// Decode averaged over the generated tokens as the context grows (16 samples); a speculative
/// step verifies the draft in one pass and yields accepted_tokens tokens.
void estimate_decode(const Workload& wl, const ForwardPass& pass, PhaseEstimate& d) {
  const double g = static_cast<double>(wl.gen_tokens);
  const int samples = static_cast<int>(std::min<uint64_t>(wl.gen_tokens, 16));
  PhaseEstimate sum;
  double total_time = 0;
  const Speculation& spec = wl.speculation;
  for (int i = 0; i < samples; ++i) {
    const double ctx = static_cast<double>(wl.prompt_tokens) + (i + 0.5) * g / samples;
    if (!spec.enabled()) {
      total_time += pass(ctx, 1.0, sum, false);
      continue;
    }
    // Speculative step: the target verifies the drafted chain plus its own token (or the drafted
    // tree) in one pass; drafting costs a stated fraction of a plain step; the step yields
    // accepted_tokens tokens on average.
    PhaseEstimate verify, plain;
    total_time += pass(ctx, spec.verified_tokens(), verify, false);
    total_time += spec.draft_overhead * pass(ctx, 1.0, plain, false);
    add_scaled(sum, verify, 1.0);
    add_scaled(sum, plain, spec.draft_overhead);
  }
  const double k = spec.enabled() ? 1.0 / samples / spec.accepted_tokens : 1.0 / samples;
  d.weights_time_s = sum.weights_time_s * k;
  d.kv_time_s = sum.kv_time_s * k;
  d.offload_time_s = sum.offload_time_s * k;
  d.compute_time_s = sum.compute_time_s * k;
  d.attention_compute_time_s = sum.attention_compute_time_s * k;
  d.overhead_time_s = sum.overhead_time_s * k;
  d.interconnect_time_s = sum.interconnect_time_s * k;
  d.exposed_compute_s = sum.exposed_compute_s * k;
  d.exposed_weights_s = sum.exposed_weights_s * k;
  d.exposed_kv_s = sum.exposed_kv_s * k;
  d.exposed_offload_s = sum.exposed_offload_s * k;
  d.host_weights_streamed = sum.host_weights_streamed;
  d.experts = sum.experts;
  d.flops = sum.flops * k;
  d.bytes = sum.bytes * k;
  d.time_s = total_time * k;
}

/// Request latency (TTFT + gen x time per token) and serving throughput, computed once here.
void fill_serving(Analysis& a, const Workload& wl, uint64_t batch) {
  const double b = static_cast<double>(batch);
  const double gen = static_cast<double>(wl.gen_tokens);
  a.request_latency_s = a.prefill.time_s + gen * a.decode.time_s;
  const double cycle_tokens = wl.gen_tokens > 0 ? b * gen : b * static_cast<double>(wl.prompt_tokens);
  // Replicas serve side by side, each its own batch on its own GPUs: their rates add, a request's latency is one copy's.
  const double replicas = static_cast<double>(std::max<uint32_t>(wl.replicas, 1));
  a.serving_tokens_per_s = a.request_latency_s > 0 ? replicas * cycle_tokens / a.request_latency_s : 0.0;
  if ((wl.batch_max || batch > 1 || wl.replicas > 1) && wl.gen_tokens > 0) {
    a.has_throughput = true;
    a.throughput_batch = batch;
    a.output_tokens_per_s = a.serving_tokens_per_s;
  }
}

/// What the figures do not show: does not fit, thermal throttling, context beyond the model.
void add_capacity_notes(Analysis& a, const Scenario& s, bool text) {
  const HardwareProfile& hw = *s.hardware;
  const ModelSpec& m = s.model;
  const EngineProfile& engine = *s.engine.engine;
  const Workload& wl = s.workload;
  const MemoryBreakdown& mem = a.memory;
  const uint64_t context = wl.context();
  const double host_bw = wl.host_bandwidth_bytes_per_s.value_or(0);
  const double offloaded_bytes = mem.offloaded_bytes;
  if (!mem.fits && mem.offloaded_layers == 0) {
    a.prefill.bound = a.decode.bound = Bound::kMemoryCapacity;
    if (text)
      a.warnings.push_back(fmt::format("does not fit: needs {:.2f} GB per device, {} may use {:.2f} GB", mem.total_bytes / 1e9, engine.id,
                                       mem.limit_bytes / 1e9));
  }
  if (hw.sustained_fraction) {
    a.sustained_factor = *hw.sustained_fraction;
    if (text)
      a.assumptions.push_back(
          fmt::format("sustained (thermally throttled) throughput is {:.0f}% of the burst figures shown", a.sustained_factor * 100));
  }
  if (text && m.max_position_embeddings && context > m.max_position_embeddings)
    a.warnings.push_back(fmt::format("context {} exceeds the model's maximum of {} tokens", context, m.max_position_embeddings));
  if (text && mem.host_expert_layers > 0)
    a.assumptions.push_back(fmt::format(
        "the routed experts of {} of {} layers ({:.2f} GB) are in host memory and run on the host CPU: the experts a step touches "
        "read at {:.1f} GB/s or multiplied at {:.1f} TOP/s, whichever is longer, in turn with the device's work; the activations "
        "crossing PCIe are left out (a few KB per token and layer)",
        wl.cpu_moe_layers, m.num_hidden_layers, mem.host_expert_bytes / 1e9, host_bw / 1e9,
        wl.host_compute_flops_per_s.value_or(0) / 1e12));
  if (text && offloaded_bytes > 0 && host_bw <= 0)
    a.warnings.push_back("no host-memory bandwidth known; pass --host-bandwidth for offloaded layers");
}

}  // namespace

Analysis analyze(const Scenario& s, Detail detail) {
  const bool text = detail == Detail::kFull;
  const KvShape kv = kv_shape(s.model);  // worked out once: the cache layout does not change below
  Analysis a;
  const Workload& wl = s.workload;

  // --- factors -------------------------------------------------------------
  Factors& f = a.factors;
  fill_factors(s, f);
  const double ridge = std::max(f.achievable_compute_flops_per_s, 1.0) / std::max(f.achievable_bandwidth_bytes_per_s, 1.0);

  // --- memory --------------------------------------------------------------
  const uint64_t cached_prefix = fill_memory(s, kv, f.flash_attention, text, a);
  const double b = static_cast<double>(a.batch);
  const ForwardPass pass{s,
                         kv,
                         f,
                         b,
                         a.memory.offloaded_bytes,
                         wl.host_bandwidth_bytes_per_s.value_or(0),
                         s.weights.routed_expert_bytes > 0 ? a.memory.host_expert_bytes / s.weights.routed_expert_bytes : 0.0,
                         wl.host_compute_flops_per_s.value_or(0),
                         host_expert_read_share(*s.engine.engine)};

  // --- prefill: the whole prompt of every sequence -------------------------
  if (wl.prompt_tokens > 0) {
    const double prompt = static_cast<double>(wl.prompt_tokens);
    const double past = std::min(static_cast<double>(cached_prefix), prompt - 1);
    a.prefill.time_s = pass(0, prompt - past, a.prefill, true, past);
    finish_phase(a.prefill, prompt * b, b, ridge, "prefill");
  }

  // --- decode: averaged over the generated tokens as the context grows ----
  if (wl.gen_tokens > 0) {
    estimate_decode(wl, pass, a.decode);
    finish_phase(a.decode, b, b, ridge, "decode");
  }

  fill_serving(a, wl, a.batch);
  add_capacity_notes(a, s, text);
  return a;
}

std::optional<double> engine_memory_share(const Scenario& s) {
  const EngineProfile& engine = *s.engine.engine;
  if (!engine.memory.reserve_fraction) return std::nullopt;
  return s.workload.engine_memory_share ? s.workload.engine_memory_share : engine.memory.reserve_fraction;
}

std::optional<double> memory_share_to_fit(const MemoryBreakdown& mem) {
  if (!mem.engine_share || !(mem.limit_bytes > 0)) return std::nullopt;
  const double needed = mem.total_bytes / (mem.limit_bytes / *mem.engine_share);
  return std::ceil(needed * 100.0 - 1e-9) / 100.0;
}

double kv_budget_of(const Scenario& s, double room, double fixed) {
  const EngineProfile& engine = *s.engine.engine;
  double kv_budget = room - fixed;
  if (const auto share = engine_memory_share(s))
    kv_budget = room * *share - fixed;
  else if (engine.memory.free_fraction_for_kv)
    kv_budget = (room - fixed) * *engine.memory.free_fraction_for_kv;
  return std::max(kv_budget, 0.0);
}

}  // namespace optadvisor
