// SPDX-License-Identifier: MIT
// The per-iteration cost model of a serving rank. The formulas are the same
// rooflines as analyze()'s single-batch pass (analysis.cpp), written over the
// aggregate quantities of an iteration's mix so the simulation can call them
// once per iteration.
#include "optadvisor/analysis/serving_step.hpp"

#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/expert_layout.hpp"

#include <algorithm>
#include <cmath>

namespace optadvisor {
namespace {

/// Attention FLOPs per (query token x context token) per full layer: QK^T and PV,
/// 2 FLOPs per multiply-add (Vaswani et al. 2017; FlashAttention-2 paper,
/// Dao 2023, section 4.1 counts 4 x d per pair for d = head dim).
double attention_pair_flops(const ModelSpec& m) { return 2.0 * static_cast<double>(attention_widths(m).full); }

/// The same per sliding layer (Gemma 4's sliding layers are narrower than its full ones).
double sliding_attention_pair_flops(const ModelSpec& m) { return 2.0 * static_cast<double>(attention_widths(m).sliding); }

/// Decode with MLA runs the absorbed form (FlashMLA, vLLM and SGLang MLA
/// decode): every head scores the kv_lora_rank + rope latent and reads the
/// kv_lora_rank values (DeepSeek-V2 paper, Liu et al. 2024, section 2.1.2).
double decode_attention_pair_flops(const ModelSpec& m) {
  if (!m.kv_lora_rank) return attention_pair_flops(m);
  const double latent = static_cast<double>(m.kv_lora_rank);
  return 2.0 * static_cast<double>(m.num_attention_heads) * (latent + static_cast<double>(m.qk_rope_head_dim) + latent);
}

double bf16_peak(const HardwareProfile& hw) {
  for (const char* key : {"bf16", "fp16"})
    if (auto it = hw.flops_per_s.find(key); it != hw.flops_per_s.end() && it->second > 0) return it->second;
  return 0;
}

/// The GPUs a layout divides work over: tensor parallel, attention data parallel, both per pipeline stage.
struct LayoutDegrees {
  double tp, dp, pp, worker_gpus;
};

// --- weights: dense parts sharded over tp, experts over every GPU ---------
// Pipeline stages hold 1/pp of the layers each but run one after another,
// so a step's time covers the whole stack at one GPU's rates.
void set_weights(StepModel& sm, const ModelSpec& m, const WeightsSummary& w, const LayoutDegrees& d) {
  const double tp = d.tp, worker_gpus = d.worker_gpus;
  const double embedding_skipped = w.bytes_looked_up();
  const double dense_bytes = w.total_bytes - w.routed_expert_bytes;
  sm.dense_weight_bytes = (dense_bytes - embedding_skipped) / tp;
  sm.expert_weight_bytes = w.routed_expert_bytes / worker_gpus;
  const double routed_active = w.routed_active_params;
  if (m.num_experts > 0 && m.num_experts_per_tok > 0 && w.routed_expert_bytes > 0)
    sm.expert_pick = static_cast<double>(m.num_experts_per_tok) / static_cast<double>(m.num_experts);
  // 2 FLOPs per weight per token (a multiply-add; Kaplan et al. 2020, eq. 2.1).
  sm.dense_flops_per_token = 2.0 * w.per_token_dense_params() / tp;
  sm.head_flops_per_logit = 2.0 * w.output_head_params / tp;
  sm.expert_flops_per_token = 2.0 * routed_active / worker_gpus;
}

// --- KV cache and attention ----------------------------------------------
void set_kv_and_attention(StepModel& sm, const Scenario& s, double tp) {
  const ModelSpec& m = s.model;
  const EngineProfile& engine = *s.engine.engine;
  const KvShape kv = kv_shape(m);
  const auto split = [&](uint64_t kv_heads) {  // KV heads replicate when fewer than tp
    return m.kv_lora_rank ? 1.0 : std::min(tp, static_cast<double>(std::max<uint64_t>(1, kv_heads)));
  };
  const double element = s.workload.kv_bytes_per_element;
  const double per_layer = static_cast<double>(kv.elements_per_token_per_layer) * element;
  const double per_sliding_layer = static_cast<double>(kv.sliding_elements_per_token_per_layer) * element;
  const bool capped = engine.cap_sliding_window && kv.window_tokens > 0;
  // An engine that does not cap the window keeps every token of the sliding layers: their bytes join the full part.
  const double full_layers = static_cast<double>(kv.full_layers);
  const double sliding_layers = static_cast<double>(kv.sliding_layers);
  const KvShape read = attention_reads(kv);  // KV-shared layers read and attend too
  const double full_read_layers = static_cast<double>(read.full_layers);
  const double sliding_read_layers = static_cast<double>(read.sliding_layers);
  // DeepSeek-V4's compressed entries grow with the context like a full layer's (one KV head: no split).
  const double compressed_bytes = static_cast<double>(kv.compressed_elements_per_token) * element;
  const double full_bytes = per_layer * full_layers / split(kv.full_kv_heads) + compressed_bytes;
  const double sliding_bytes = per_sliding_layer * sliding_layers / split(kv.sliding_kv_heads);
  sm.kv_bytes_per_token_full = full_bytes + (capped ? 0.0 : sliding_bytes);
  sm.kv_bytes_per_token_sliding = capped ? sliding_bytes : 0.0;
  const double sliding_read = per_sliding_layer * sliding_read_layers / split(kv.sliding_kv_heads);
  sm.kv_read_bytes_per_token_full = per_layer * full_read_layers / split(kv.full_kv_heads) + compressed_bytes + (capped ? 0.0 : sliding_read);
  sm.kv_read_bytes_per_token_sliding = capped ? sliding_read : 0.0;
  sm.window_tokens = capped ? kv.window_tokens : 0;
  sm.kv_transfer_bytes_per_token = per_layer * full_layers + per_sliding_layer * sliding_layers + compressed_bytes;
  const double full_flops = attention_pair_flops(m) / tp * full_read_layers;
  const double sliding_flops = sliding_attention_pair_flops(m) / tp * sliding_read_layers;
  sm.attention_flops_full = full_flops + (capped ? 0.0 : sliding_flops);
  sm.attention_flops_sliding = capped ? sliding_flops : 0.0;
  sm.decode_attention_scale = decode_attention_pair_flops(m) / attention_pair_flops(m);
  if (kv.compressed_layers > 0) {
    // DeepSeek-V4 (no tensor split of its single KV head, but of the query heads): the ratio-128 layers
    // and the sparse layers' indexers grow with the context; the sparse layers' attention stops at top-k.
    const double entry = sliding_attention_pair_flops(m) / tp;
    sm.attention_flops_full += entry * kv.compressed_dense_entries_per_token;
    if (kv.compressed_sparse_layers > 0) {
      const auto ratio = static_cast<double>(kv.compressed_sparse_ratio);
      const auto sparse = static_cast<double>(kv.compressed_sparse_layers);
      sm.attention_flops_full += sparse * 2.0 * static_cast<double>(m.index_n_heads * m.index_head_dim) / ratio / tp;
      sm.attention_flops_compressed = sparse * entry / ratio;
      sm.compressed_cap_tokens = kv.compressed_sparse_ratio * kv.compressed_topk;
    }
  }
  if (kv.sparse_topk > 0) {
    sm.sparse_topk = kv.sparse_topk;
    const double latent = static_cast<double>(kv.elements_per_token_per_layer - kv.indexer_elements_per_token_per_layer) * element;
    sm.sparse_latent_bytes_per_token = latent * full_layers / split(kv.full_kv_heads);
    // The lightning indexer scores each cached key with index_n_heads heads of index_head_dim (DeepSeek-V3.2 report).
    sm.indexer_flops_per_pair = 2.0 * static_cast<double>(m.index_n_heads * m.index_head_dim) * full_layers / tp;
  }
  sm.state_bytes_per_sequence = recurrent_state_bytes(kv, 1) / tp;
  sm.indexer_chain_s = static_cast<double>(indexer_layer_count(kv)) * engine.dsa_indexer_layer_s;
}

// --- the KV pool each engine sizes ---------------------------------------
void set_kv_pool(StepModel& sm, const Scenario& s, const LayoutDegrees& d) {
  const WeightsSummary& w = s.weights;
  const EngineProfile& engine = *s.engine.engine;
  const double tp = d.tp, pp = d.pp;
  const double dense_bytes = w.total_bytes - w.routed_expert_bytes;
  // A speculative drafter's weights (and its own cache) are held like the dense layers, as analyze() holds them.
  const double drafter = s.workload.speculation.enabled() ? s.workload.speculation.draft_memory_bytes : 0.0;
  const double weights_memory = ((dense_bytes + drafter) / tp + w.routed_expert_bytes / d.worker_gpus) / pp;
  const double activations =
      static_cast<double>(sm.max_batched_tokens) * static_cast<double>(s.model.hidden_size) * engine.memory.activation_bytes_per_token / tp;
  const double fixed = weights_memory + activations + engine.memory.runtime_overhead_bytes;
  // Per rank-GPU column: every stage holds its layers' share.
  sm.kv_pool_bytes = kv_budget_of(s, s.hardware->usable_memory_bytes(), fixed) * pp;
}

// --- communication ---------------------------------------------------------
void set_communication(StepModel& sm, const Scenario& s, const ServingLayout& layout) {
  const ModelSpec& m = s.model;
  const EngineProfile& engine = *s.engine.engine;
  const Link* link = s.hardware->default_multi_gpu_link();
  sm.peak_link_bytes_per_s = link ? link->per_direction_bytes_per_s() : 0;
  const LayoutTraffic traffic =
      layout_traffic(m, ExpertLayout{layout.tp, layout.dp_attention, layout.ep}, sm.layers, sm.moe_layers, node_links(*s.hardware));
  sm.allreduce_bytes_per_token = traffic.allreduce_bytes_per_token;
  sm.alltoall_bytes_per_token = traffic.alltoall_bytes_per_token;
  sm.collectives = traffic.allreduce_count + traffic.alltoall_count;
  sm.engine_collective_latency_s = engine.allreduce_latency_s;
}

}  // namespace

StepModel step_model(const Scenario& s, const ServingLayout& layout, const ServingEra& era, double peak_flops,
                     uint64_t max_batched_tokens) {
  StepModel sm;
  const HardwareProfile& hw = *s.hardware;
  const ModelSpec& m = s.model;
  const EngineProfile& engine = *s.engine.engine;
  sm.layout = layout;
  sm.scheduler = engine.serving.scheduler;
  sm.admission = engine.serving.admission;
  sm.max_batched_tokens = max_batched_tokens ? max_batched_tokens : engine.serving.batched_tokens_for(hw.memory_capacity_bytes);
  sm.max_sequences = engine.serving.max_sequences;
  const double tp = std::max<uint32_t>(1, layout.tp);
  const double dp = std::max<uint32_t>(1, layout.dp_attention);
  const double pp = std::max<uint32_t>(1, layout.pp);
  const LayoutDegrees degrees{tp, dp, pp, tp * dp};  // worker GPUs per pipeline stage

  set_weights(sm, m, s.weights, degrees);
  set_kv_and_attention(sm, s, tp);
  set_kv_pool(sm, s, degrees);

  // --- rates ----------------------------------------------------------------
  sm.peak_bandwidth_bytes_per_s = hw.memory_bandwidth_bytes_per_s;
  sm.peak_gemm_flops_per_s = peak_flops;
  sm.peak_attention_flops_per_s = bf16_peak(hw);
  sm.layers = static_cast<double>(m.num_hidden_layers);
  sm.moe_layers = moe_layer_count(m);
  sm.backend_moe_layer_overhead_s = m.num_experts > 0 ? s.engine.backend->moe_layer_overhead_for(s.weights.quant_id) : 0.0;
  sm.weight_format = engine.efficiency_for(*s.engine.backend, s.weights.quant_id, s.engine.build);
  sm.experts_only_format = s.weights.experts_only_quantized;

  set_communication(sm, s, layout);
  set_era(sm, era);
  if (const Speculation& spec = s.workload.speculation; spec.enabled()) {
    sm.verify_tokens = spec.verified_tokens();
    sm.accepted_tokens = spec.accepted_tokens;
    sm.draft_overhead = spec.draft_overhead;
  }
  return sm;
}

void set_era(StepModel& m, const ServingEra& era) {
  m.bandwidth_bytes_per_s = m.peak_bandwidth_bytes_per_s * era.bandwidth_efficiency;
  // The format's kernels read the bytes stored in it at their share: every weight, or the routed experts alone.
  const double format_rate = m.peak_bandwidth_bytes_per_s * std::min(1.0, era.bandwidth_efficiency * m.weight_format.decode);
  m.expert_weight_bandwidth_bytes_per_s = format_rate;
  m.weight_bandwidth_bytes_per_s = m.experts_only_format ? m.peak_bandwidth_bytes_per_s * std::min(1.0, era.bandwidth_efficiency) : format_rate;
  m.gemm_flops_per_s = m.peak_gemm_flops_per_s * std::min(1.0, era.gemm_efficiency * m.weight_format.prefill);
  m.attention_flops_per_s = m.peak_attention_flops_per_s * era.attention_efficiency;
  m.link_bytes_per_s = m.peak_link_bytes_per_s * era.communication_efficiency;
  m.step_overhead_s = era.step_overhead_s;
  m.sequence_overhead_s = era.sequence_overhead_s;
  m.layer_overhead_s = era.layer_overhead_s;
  m.moe_layer_overhead_s = era.backend_moe_layer_time ? m.backend_moe_layer_overhead_s : 0.0;
  m.expert_gemm_half_tokens = era.expert_gemm_half_tokens;
  const double one = era.collective_latency_s > 0 ? era.collective_latency_s : m.engine_collective_latency_s;
  m.collective_latency_s = m.collectives * one;
}

namespace {

/// Causal attention pairs of positions [0, p) over a sliding window w (0 = none).
double sliding_pairs(double p, double w) { return w <= 0 || p <= w ? p * p / 2.0 : w * w / 2.0 + (p - w) * w; }

}  // namespace

void add_decode(StepMix& mix, const StepModel& m, double context, double count) {
  const double window = static_cast<double>(m.window_tokens);
  const auto cap = static_cast<double>(m.compressed_cap_tokens);
  mix.decode_sequences += count;
  mix.decode_context_full += count * context;
  mix.decode_context_sliding += count * (window > 0 ? std::min(context, window) : context);
  if (m.sparse_topk) mix.decode_context_sparse += count * std::min(context, static_cast<double>(m.sparse_topk));
  if (cap > 0) mix.decode_context_compressed += count * std::min(context, cap);
}

void add_prefill_chunk(StepMix& mix, const StepModel& m, double a, double b) {
  const double window = static_cast<double>(m.window_tokens);
  const auto cap = static_cast<double>(m.compressed_cap_tokens);
  mix.prefill_tokens += b - a;
  mix.prefill_chunks += 1;
  mix.prefill_attention_full += (b * b - a * a) / 2.0;
  if (m.sparse_topk) {
    const auto k = static_cast<double>(m.sparse_topk);
    mix.prefill_attention_sparse += sliding_pairs(b, k) - sliding_pairs(a, k);
  }
  mix.prefill_attention_sliding += sliding_pairs(b, window) - sliding_pairs(a, window);
  if (cap > 0) mix.prefill_attention_compressed += sliding_pairs(b, cap) - sliding_pairs(a, cap);
  mix.prefill_kv_tokens_full += b;
  mix.prefill_kv_tokens_sliding += window > 0 ? std::min(b, window) : b;
}

double request_kv_bytes(const StepModel& m, double tokens) {
  const double w = static_cast<double>(m.window_tokens);
  return m.kv_bytes_per_token_full * tokens + m.kv_bytes_per_token_sliding * (w > 0 ? std::min(tokens, w) : tokens) +
         m.state_bytes_per_sequence;
}

ExpertStep expert_step(const StepModel& m, double worker_tokens) {
  ExpertStep e;
  e.worker_tokens = worker_tokens;
  // Expected share of a layer's routed experts a step's tokens touch when
  // each picks k of E: 1 - (1 - k/E)^tokens.
  e.touched = m.expert_pick > 0 ? 1.0 - std::pow(1.0 - m.expert_pick, worker_tokens) : 0.0;
  // The routed experts' grouped GEMMs fill their token tiles with t = worker tokens x k / (E x touched) rows each.
  e.fill = e.touched > 0 ? grouped_gemm_fill(worker_tokens * m.expert_pick / e.touched, m.expert_gemm_half_tokens) : 1.0;
  return e;
}

double step_tokens(const StepModel& m, const StepMix& mix) { return mix.decode_sequences * m.verify_tokens + mix.prefill_tokens; }

StepCost step_cost(const StepModel& m, const StepMix& mix) {
  const double tokens = step_tokens(m, mix);
  if (tokens <= 0) return {};
  return step_cost(m, mix, expert_step(m, std::max(mix.worker_tokens, tokens)));
}

namespace {

/// One forward pass: every decoding sequence checks `verify` tokens (attending to its context,
/// whose KV is read once), every prompt chunk its tokens.
StepCost pass_cost(const StepModel& m, const StepMix& mix, const ExpertStep& experts, double verify) {
  StepCost c;
  const double decode_tokens = mix.decode_sequences * verify;
  const double tokens = decode_tokens + mix.prefill_tokens;
  if (tokens <= 0) return c;
  const double worker_tokens = experts.worker_tokens;
  const double touched = experts.touched, expert_fill = experts.fill;
  const double expert_bytes = m.expert_weight_bytes * touched;
  const double weights_t = m.experts_only_format
                               ? m.dense_weight_bytes / m.weight_bandwidth_bytes_per_s + expert_bytes / m.expert_weight_bandwidth_bytes_per_s
                               : (m.dense_weight_bytes + expert_bytes) / m.weight_bandwidth_bytes_per_s;
  // The output layer runs for each decode token and for the last token of each prefill chunk
  // (engines compute a chunked prompt's logits at every chunk's end and discard all but the last).
  const double logits = decode_tokens + mix.prefill_chunks;
  const double linear_t =
      (m.dense_flops_per_token * tokens + m.head_flops_per_logit * logits + m.expert_flops_per_token * worker_tokens / expert_fill) /
      m.gemm_flops_per_s;
  double kv_bytes = m.kv_read_bytes_per_token_full * (mix.decode_context_full + mix.prefill_kv_tokens_full) +
                    m.kv_read_bytes_per_token_sliding * (mix.decode_context_sliding + mix.prefill_kv_tokens_sliding) +
                    2.0 * m.state_bytes_per_sequence * mix.decode_sequences;
  double decode_pairs = mix.decode_context_full, prefill_pairs = mix.prefill_attention_full;
  double indexer_flops = 0, prefill_indexer_flops = 0;
  if (m.sparse_topk > 0) {
    // Decode reads every indexer key but only the top-k tokens' latents, and attends to those; a
    // prompt token likewise attends to its top-k after its indexer scored its whole context.
    kv_bytes -= m.sparse_latent_bytes_per_token * (mix.decode_context_full - mix.decode_context_sparse);
    decode_pairs = mix.decode_context_sparse;
    indexer_flops = m.indexer_flops_per_pair * mix.decode_context_full;
    prefill_pairs = mix.prefill_attention_sparse;
    prefill_indexer_flops = m.indexer_flops_per_pair * mix.prefill_attention_full;
  }
  const double kv_t = kv_bytes / m.bandwidth_bytes_per_s;
  const double attention_flops =
      m.attention_flops_full * (decode_pairs * verify * m.decode_attention_scale + prefill_pairs) + prefill_indexer_flops +
      m.attention_flops_sliding * (mix.decode_context_sliding * verify + mix.prefill_attention_sliding) + indexer_flops * verify +
      m.attention_flops_compressed * (mix.decode_context_compressed * verify + mix.prefill_attention_compressed);
  const double attention_t = attention_flops / m.attention_flops_per_s;
  c.overhead_s = m.step_overhead_s + m.layers * m.layer_overhead_s + m.moe_layers * m.moe_layer_overhead_s + m.indexer_chain_s +
                 m.sequence_overhead_s * (mix.decode_sequences + mix.prefill_chunks);
  if (m.link_bytes_per_s > 0) c.communication_s = tokens * (m.allreduce_bytes_per_token + m.alltoall_bytes_per_token) / m.link_bytes_per_s;
  c.communication_s += m.collective_latency_s;
  c.compute_s = (linear_t > weights_t ? linear_t : 0.0) + (attention_t > kv_t ? attention_t : 0.0);
  c.bandwidth_s = (linear_t > weights_t ? 0.0 : weights_t) + (attention_t > kv_t ? 0.0 : kv_t);
  c.time_s = c.compute_s + c.bandwidth_s + c.overhead_s + c.communication_s;
  return c;
}

/// a + k b, member by member.
StepCost add_scaled(const StepCost& a, const StepCost& b, double k) {
  return {a.time_s + k * b.time_s, a.compute_s + k * b.compute_s, a.bandwidth_s + k * b.bandwidth_s, a.overhead_s + k * b.overhead_s,
          a.communication_s + k * b.communication_s};
}

}  // namespace

StepCost step_cost(const StepModel& m, const StepMix& mix, const ExpertStep& experts) {
  if (!m.speculates() || mix.decode_sequences <= 0) return pass_cost(m, mix, experts, m.verify_tokens);
  // A fluid of verification steps: each yields accepted_tokens tokens a sequence, so an iteration
  // (one token each) costs 1 / accepted_tokens of the step's decode part and of its drafting
  // (draft_overhead of a plain decode step), and the whole of what its prompt chunks add to it.
  // The worker's tokens split between decode and prompts as this rank's do.
  StepMix decode = mix;
  decode.prefill_tokens = decode.prefill_chunks = decode.prefill_attention_full = decode.prefill_attention_sliding = 0;
  decode.prefill_attention_sparse = 0;
  decode.prefill_attention_compressed = decode.prefill_kv_tokens_full = decode.prefill_kv_tokens_sliding = 0;
  const double verified = mix.decode_sequences * m.verify_tokens, tokens = verified + mix.prefill_tokens;
  const double worker_share = experts.worker_tokens / tokens;
  const ExpertStep decode_experts = mix.prefill_tokens > 0 ? expert_step(m, verified * worker_share) : experts;
  const StepCost verify = pass_cost(m, decode, decode_experts, m.verify_tokens);
  StepCost c = mix.prefill_tokens > 0 ? add_scaled(pass_cost(m, mix, experts, m.verify_tokens), verify, -1.0) : StepCost{};
  c = add_scaled(c, verify, 1.0 / m.accepted_tokens);
  if (m.draft_overhead > 0) {
    const StepCost plain = pass_cost(m, decode, expert_step(m, mix.decode_sequences * worker_share), 1.0);
    c = add_scaled(c, plain, m.draft_overhead / m.accepted_tokens);
  }
  return c;
}

}  // namespace optadvisor
