// SPDX-License-Identifier: MIT
// The cost of one serving iteration on one attention rank: a mix of decode
// sequences (one new token each, attending to their contexts) and prefill
// chunks, on a layout of tensor, pipeline, expert and data-parallel-attention
// ranks. The scenario's model, weights and device give the sizes once
// (step_model); step_cost() is then a few dozen flops, so the serving
// simulation can call it for every iteration.
#pragma once

#include <cstdint>
#include <string>

#include "optadvisor/analysis/scenario.hpp"
#include "optadvisor/catalog/engine.hpp"

namespace optadvisor {

/// How one worker spreads a model over its GPUs: dp attention ranks, each
/// sharding attention and dense layers over tp GPUs; the routed experts
/// sharded over all tp x dp GPUs, ep ways by expert and the rest by tensor.
struct ServingLayout {
  uint32_t tp = 1;
  uint32_t pp = 1;
  uint32_t ep = 1;            ///< expert-parallel degree (divides the routed experts)
  uint32_t dp_attention = 1;  ///< data-parallel attention ranks
  uint32_t gpus() const { return tp * pp * dp_attention; }
  uint32_t moe_tp() const { return ep ? tp * dp_attention / ep : tp; }
};

enum class ServingRole { kMixed, kPrefill, kDecode };

/// Per-rank sizes and rates of one scenario on one layout. Bytes and FLOPs
/// are per GPU of the rank; times in seconds.
struct StepModel {
  ServingLayout layout;
  ServingScheduler scheduler = ServingScheduler::kMixed;
  KvAdmission admission = KvAdmission::kIncremental;
  uint64_t max_batched_tokens = 8192;
  uint64_t max_sequences = 1024;

  // Weights.
  double dense_weight_bytes = 0;      ///< attention, dense FFN, shared experts, head: read every step
  double expert_weight_bytes = 0;     ///< this GPU's share of all routed experts
  double expert_pick = 0;             ///< k / E (0: dense model)
  double dense_flops_per_token = 0;   ///< 2 x dense active params / tp (embedding and output layer excluded)
  double head_flops_per_logit = 0;    ///< 2 x output-layer params / tp, per token given logits
  double expert_flops_per_token = 0;  ///< 2 x routed active params / (tp x dp): per token of the whole worker

  // KV cache and attention, per token of context.
  double kv_bytes_per_token_full = 0;     ///< full-attention layers, this GPU
  double kv_bytes_per_token_sliding = 0;  ///< sliding-window layers, this GPU
  /// What a step reads per cached token: the above, plus what KV-shared layers (Gemma 3n) read of
  /// their source layers' caches again.
  double kv_read_bytes_per_token_full = 0;
  double kv_read_bytes_per_token_sliding = 0;
  uint64_t window_tokens = 0;
  double attention_flops_full = 0;     ///< per (query token x context token), full layers, this GPU
  double attention_flops_sliding = 0;  ///< the same for sliding layers (context capped at the window)
  double decode_attention_scale = 1;   ///< decode's pair FLOPs over prefill's (absorbed MLA scores the latent)
  // DSA sparse attention (DeepSeek-V3.2, GLM-5): every token's latent and indexer key are stored;
  // a decode query reads every indexer key but attends to (and reads the latents of) top-k tokens.
  uint64_t sparse_topk = 0;                  ///< 0 = dense attention
  double sparse_latent_bytes_per_token = 0;  ///< of kv_bytes_per_token_full, read for top-k tokens only
  double indexer_flops_per_pair = 0;         ///< the indexer's scoring of one cached key, all layers, this GPU
  // DeepSeek-V4's sparse compressed layers attend to the top-k of context / ratio entries: per token
  // of context up to compressed_cap_tokens (ratio x top-k). Their indexers and the heavily compressed
  // layers, linear in the context, are in attention_flops_full.
  uint64_t compressed_cap_tokens = 0;
  double attention_flops_compressed = 0;  ///< per (query token x context token up to the cap), this GPU
  // Linear-attention layers (Gated DeltaNet, Mamba-2): a fixed state per sequence, read and written every step.
  double state_bytes_per_sequence = 0;     ///< this GPU
  double kv_pool_bytes = 0;                ///< this GPU's KV pool
  double kv_transfer_bytes_per_token = 0;  ///< the whole rank's KV per token (what disaggregation moves)

  /// The weights' format on this engine (EngineProfile::efficiency_for, as estimate uses it): a
  /// mixed-input kernel (INT4 or FP8 weights with 16-bit activations, Marlin) reads the weights at
  /// `decode` times the era's rate and multiplies them at `prefill` times its GEMM rate.
  QuantEfficiency weight_format;

  // Peaks, and the rates achieved on them (set_era).
  double peak_bandwidth_bytes_per_s = 0;
  double peak_gemm_flops_per_s = 0;
  double peak_attention_flops_per_s = 0;
  double peak_link_bytes_per_s = 0;
  double bandwidth_bytes_per_s = 0;         ///< achievable (peak x era efficiency): KV, state
  double weight_bandwidth_bytes_per_s = 0;  ///< achievable on the dense weights (bandwidth_bytes_per_s x the format's share)
  double expert_weight_bandwidth_bytes_per_s = 0;  ///< on the routed experts (the same, unless only they are in the format)
  bool experts_only_format = false;  ///< only the routed experts are stored below 16 bits (WeightsSummary::experts_only_quantized)
  double gemm_flops_per_s = 0;              ///< peak x era efficiency x the format's share
  double attention_flops_per_s = 0;
  double step_overhead_s = 0;
  double sequence_overhead_s = 0;  ///< per sequence (decode or prompt chunk) in an iteration
  double layer_overhead_s = 0;
  /// Per pass: the engine's lightning-indexer kernel chain x the layers that run one (0 without DSA).
  double indexer_chain_s = 0;
  /// The engine backend's MoE layer time for the experts' format (moe_layer_overhead_for): the
  /// routing and expert kernels' fixed time at a few tokens.
  double backend_moe_layer_overhead_s = 0;
  /// Per MoE layer and iteration beyond layer_overhead_s: the backend's time where the era pays it
  /// (ServingEra::backend_moe_layer_time), else 0.
  double moe_layer_overhead_s = 0;
  double expert_gemm_half_tokens = 0;  ///< the era's grouped-GEMM tile fill (0 = experts at the dense GEMM efficiency)
  double layers = 0;
  double moe_layers = 0;

  // Speculative decoding (the scenario's Speculation): each decoding sequence's step checks
  // verify_tokens tokens in one pass and yields accepted_tokens of them on average, after a drafter
  // that costs draft_overhead of a plain decode step. Off at 1, 1 and 0.
  double verify_tokens = 1;
  double accepted_tokens = 1;
  double draft_overhead = 0;
  bool speculates() const { return accepted_tokens > 1.0 || verify_tokens > 1.0; }

  // Communication per token.
  double allreduce_bytes_per_token = 0;  ///< tensor-parallel all-reduce traffic per token, per step
  double alltoall_bytes_per_token = 0;   ///< expert dispatch + combine per token, per step
  double collectives = 0;                ///< all-reduces, dispatches and combines per step (all layers)
  double engine_collective_latency_s = 0;  ///< the engine's fixed cost of one, where its era has none
  double collective_latency_s = 0;       ///< per step: collectives x the era's (or engine's) fixed cost of one
  double link_bytes_per_s = 0;  ///< achievable per direction
};

/// What one iteration of one rank runs.
struct StepMix {
  double decode_sequences = 0;
  double decode_context_full = 0;     ///< sum of the decode sequences' contexts
  double decode_context_sliding = 0;  ///< sum of min(context, window)
  double decode_context_sparse = 0;   ///< sum of min(context, sparse_topk) (DSA)
  double decode_context_compressed = 0;  ///< sum of min(context, compressed_cap_tokens) (DeepSeek-V4)
  double prefill_tokens = 0;
  double prefill_chunks = 0;          ///< prompt chunks in the step (the last token of each gets logits)
  double prefill_attention_full = 0;  ///< sum over prefill tokens of the context each attends to
  double prefill_attention_sparse = 0;  ///< the same capped at sparse_topk (DSA: what a prompt token attends to)
  double prefill_attention_sliding = 0;
  double prefill_attention_compressed = 0;  ///< the same capped at compressed_cap_tokens
  double prefill_kv_tokens_full = 0;  ///< context tokens the prefill chunks read or write
  double prefill_kv_tokens_sliding = 0;
  double worker_tokens = 0;  ///< tokens of every rank of the worker this iteration (MoE routing)
};

struct StepCost {
  double time_s = 0;
  double compute_s = 0;  ///< the compute part of the max() terms that bound
  double bandwidth_s = 0;
  double overhead_s = 0;
  double communication_s = 0;
};

/// Adds `count` decode sequences of `context` tokens each to `mix`: one new token each, reading
/// their context (sliding layers up to the window, DSA and compressed layers up to their caps).
void add_decode(StepMix& mix, const StepModel& m, double context, double count = 1);

/// Adds a prefill chunk of positions [a, b) to `mix`: its tokens, the causal attention pairs they
/// form with the context before them (sliding and compressed layers capped), and the context read.
void add_prefill_chunk(StepMix& mix, const StepModel& m, double a, double b);

/// What one request of `tokens` context holds in a rank's pool: its KV (sliding layers capped at
/// the window) and the fixed state of linear-attention layers.
double request_kv_bytes(const StepModel& m, double tokens);

/// One iteration's time: each operator class is its own roofline, summed
/// (weights GEMMs: weight reads vs matrix math; attention: KV reads vs its
/// math), plus scheduler and launch overhead and TP/EP communication.
/// With speculative decoding an iteration still moves each decoding sequence one token on: it
/// costs the verification step's decode part and its drafting over accepted_tokens (a fluid of
/// the steps that yield that many tokens each), plus what its prompt chunks add to such a step.
StepCost step_cost(const StepModel& m, const StepMix& mix);

/// The tokens a step of `mix` runs through the model: each decoding sequence's verified tokens
/// (one without speculation) and the prompt tokens.
double step_tokens(const StepModel& m, const StepMix& mix);

/// The routed experts in a step of `worker_tokens` tokens (over every rank of the worker): the
/// expected share of a layer's experts they touch, and how full those experts' GEMM tiles are.
/// Every rank of a worker shares it, so the simulation works it out once per iteration.
struct ExpertStep {
  double worker_tokens = -1;
  double touched = 0;
  double fill = 1;
};
ExpertStep expert_step(const StepModel& m, double worker_tokens);
/// step_cost() with the step's expert terms already worked out for max(mix.worker_tokens, its tokens).
StepCost step_cost(const StepModel& m, const StepMix& mix, const ExpertStep& experts);

/// Sets the achieved rates and overheads from an era's efficiencies.
void set_era(StepModel& m, const ServingEra& era);

/// The sizes and rates of `scenario` (resolved with tp = layout.tp) on `layout`,
/// with `era`'s efficiencies and the engine's scheduling knobs. `peak_flops`
/// is the matrix rate of the weights' compute dtype (analyze()'s factors). `max_batched_tokens`
/// sets the tokens per iteration (and the activations the KV pool leaves room for); 0 takes the
/// engine's default.
StepModel step_model(const Scenario& scenario, const ServingLayout& layout, const ServingEra& era, double peak_flops,
                     uint64_t max_batched_tokens = 0);

}  // namespace optadvisor
