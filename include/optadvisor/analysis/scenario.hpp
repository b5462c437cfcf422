// SPDX-License-Identifier: MIT
// A Scenario is plain data: everything the user said (device, model, weight
// format, engine, workload) plus the weight sizes derived from it once, so
// that analyze() stays a cheap pure function the rule engine can call often.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "optadvisor/catalog/engine.hpp"
#include "optadvisor/catalog/hardware.hpp"
#include "optadvisor/catalog/model.hpp"
#include "optadvisor/analysis/expert_layout.hpp"

namespace optadvisor {

/// The weight sizes analyze() needs, from the per-tensor quantization.
struct WeightsSummary {
  std::string quant_id;
  double total_bytes = 0;            ///< every weight tensor as stored
  double token_embedding_bytes = 0;  ///< token_embd (decode reads only the rows it needs, unless tied)
  bool tied_embeddings = false;      ///< the output head reads token_embd in full every step
  double lookup_table_bytes = 0;     ///< tables only ever looked up by token (Gemma 3n's per-layer embeddings)
  double routed_expert_bytes = 0;    ///< all routed experts of all MoE layers
  double routed_active_params = 0;   ///< the routed experts' share of active_params (k of E experts per token)
  double per_layer_bytes = 0;        ///< average bytes of one block (for layer offload and pipeline split)
  double params = 0;                 ///< parameters (elements) in the tensors
  double active_params = 0;          ///< parameters touched per token (MoE: routed subset), as published: embeddings included
  double output_head_params = 0;     ///< the output layer (token_embd when tied): multiplied only for the tokens given logits
  double output_head_bytes = 0;      ///< that layer's tensor as stored
  double embedding_lookup_params = 0;  ///< token_embd when the output layer does not share it: looked up, never multiplied
  double bits_per_weight = 0;        ///< 8 x total_bytes / params
  bool quantized = false;            ///< most weight bytes are in a sub-16-bit storage type
  /// Only the routed experts are stored below 16 bits (int4-wo, MXFP4 on gpt-oss; so a MoE model): a weight-only
  /// format's kernel efficiency covers their bytes, not the 16-bit attention and shared weights.
  bool experts_only_quantized = false;
  /// Data type the matrix units run on for this format when the device has
  /// native_capability ("fp8", "fp4"; formats.json native_compute), "" for weight-only formats.
  std::string native_compute_dtype;
  std::string native_capability;
  /// Weight bytes a forward step does not read in full: the lookup tables, and token_embd unless the
  /// output head shares it (a step reads only the rows of its tokens, which is left out).
  double bytes_looked_up() const { return lookup_table_bytes + (tied_embeddings ? 0.0 : token_embedding_bytes); }
  /// Parameters every token multiplies outside the routed experts: the active ones less the
  /// embedding lookup and the output layer, which runs only for the tokens that get logits (a
  /// prompt's last token, every decoded token).
  double per_token_dense_params() const {
    const double p = active_params - routed_active_params - output_head_params - embedding_lookup_params;
    return p > 0 ? p : 0.0;
  }
};

/// Speculative decoding: each target step verifies `draft_tokens` proposed
/// tokens at once and keeps `accepted_tokens` of them on average (the
/// acceptance length, counting the token the target adds itself).
struct Speculation {
  std::string method;             ///< "eagle", "medusa", "draft-model", "ngram"; "" = off
  double accepted_tokens = 1.0;   ///< mean tokens produced per target step, >= 1
  uint32_t draft_tokens = 0;      ///< tokens proposed per step, the depth of a tree (0 = off)
  double draft_overhead = 0;      ///< drafting cost per step, as a fraction of one plain decode step
  double draft_memory_bytes = 0;  ///< weights and cache the drafter holds, whole model (divided like the target's)
  /// Tokens per sequence the target checks in one verification pass: a drafted tree's size (SGLang's
  /// --speculative-num-draft-tokens); 0 for a chain, which checks draft_tokens + 1.
  uint32_t verify_tokens = 0;
  bool enabled() const { return draft_tokens > 0; }
  /// Tokens per sequence in one verification pass.
  double verified_tokens() const { return verify_tokens > 0 ? verify_tokens : static_cast<double>(draft_tokens) + 1.0; }
};

/// What the user asked to run.
struct Workload {
  uint64_t batch = 1;            ///< concurrent sequences
  bool batch_max = false;        ///< as many sequences as fit
  uint64_t prompt_tokens = 512;  ///< tokens prefilled per sequence
  uint64_t gen_tokens = 128;     ///< tokens generated per sequence
  uint64_t context_tokens = 0;   ///< KV reservation per sequence; 0 = prompt + gen
  std::string kv_dtype = "f16";
  double kv_bytes_per_element = 2.0;  ///< from the quant data for kv_dtype
  uint32_t gpus = 1;
  uint32_t tp = 1;                                   ///< tensor parallel degree
  uint32_t pp = 1;                                   ///< pipeline / layer-split degree
  uint32_t replicas = 1;                             ///< copies of the tp x pp layout serving side by side (gpus is one copy's)
  uint32_t ep = 1;                                   ///< expert-parallel degree (routed experts exchanged by all-to-all)
  uint32_t dp_attention = 1;                         ///< data-parallel attention ranks: the batch is split over them
  std::optional<bool> flash_attention;               ///< unset: the engine's default
  std::optional<bool> graphs;                        ///< unset: the backend's default
  std::optional<double> host_bandwidth_bytes_per_s;  ///< system RAM for offloaded layers
  std::string host_id;                               ///< the cpu-class profile host_bandwidth_bytes_per_s came from (--host); "" when none
  uint32_t cpu_moe_layers = 0;                       ///< the first layers whose routed experts stay in, and run on, the host (--n-cpu-moe)
  /// --n-gpu-layers N (llama.cpp -ngl): the last N repeating layers on the GPU, the others in host
  /// memory; N above the layer count also puts the output layer on the GPU. Unset: as many as fit.
  std::optional<uint32_t> gpu_layers;
  std::optional<double> host_compute_flops_per_s;    ///< the host CPU's achievable matrix rate for the weights it multiplies (offloaded layers, --n-cpu-moe experts)
  uint64_t ubatch_tokens = 0;                        ///< tokens per forward pass in prefill (llama.cpp -ub); 0 = the engine's
  Speculation speculation;                           ///< off unless draft_tokens > 0
  double prefix_cached_fraction = 0;                 ///< share of each prompt already in the prefix cache (a shared system prompt)
  std::string attention_kernel;                      ///< "" = the engine's; "fa2", "fa3" when chosen explicitly
  double attention_speedup = 1.0;                    ///< attention kernels' rate relative to the engine's calibrated one
  std::optional<double> usable_memory_fraction;      ///< overrides the device's (a raised macOS wired limit)
  /// Overrides the share of each device's memory an engine that claims one up front takes
  /// (vLLM gpu_memory_utilization, SGLang mem_fraction_static); unset: the engine's default.
  std::optional<double> engine_memory_share;
  bool entitled_memory_limit = false;                ///< phones: the increased-memory-limit entitlement applies
  bool weights_mmap = false;                         ///< phones: weights mapped read-only from the file, outside the app's footprint

  uint64_t context() const { return context_tokens ? context_tokens : prompt_tokens + gen_tokens; }
  uint32_t total_gpus() const { return gpus * replicas; }  ///< every replica's GPUs
  ExpertLayout expert_layout() const { return ExpertLayout{tp, dp_attention, ep}; }
};

/// Points into the Catalog (`hardware` unless hardware_variant owns it, the engine); the Catalog must outlive it.
struct Scenario {
  const HardwareProfile* hardware = nullptr;
  /// Owns *hardware when the request changed the device (--memory, --link); null otherwise.
  std::shared_ptr<const HardwareProfile> hardware_variant;
  ModelSpec model;
  WeightsSummary weights;
  EngineChoice engine;
  Workload workload;

  /// Tokens per forward pass in prefill: --ubatch, else the engine's (llama.cpp's n_ubatch, a
  /// server's max batched tokens per step).
  uint64_t prefill_chunk_tokens() const {
    return workload.ubatch_tokens ? workload.ubatch_tokens : engine.engine->memory.prefill_chunk_tokens();
  }
};

}  // namespace optadvisor
