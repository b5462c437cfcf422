// SPDX-License-Identifier: MIT
// Model architecture presets (Hugging Face config.json field names) and the
// tensor list they imply. Tensor names follow GGUF ("blk.3.ffn_down.weight"),
// so llama-quantize's per-tensor rules can be applied to presets and GGUF
// files alike.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "optadvisor/base/error.hpp"

namespace optadvisor {

/// Largest dimensions accepted from any model source (presets, overlays, config.json, GGUF).
/// Beyond them a file is damaged or hostile, and per-layer loops or element products would run
/// away; model_from_json() reports any dimension past them.
constexpr uint64_t kMaxModelLayers = 10000;             ///< decoder blocks, MTP blocks, patterns
constexpr uint64_t kMaxModelWidth = uint64_t{1} << 24;  ///< widths, ranks, head_dim, vocabulary
constexpr uint64_t kMaxModelHeads = uint64_t{1} << 16;  ///< attention and KV heads
constexpr uint64_t kMaxModelExperts = uint64_t{1} << 16;
constexpr uint64_t kMaxModelContext = uint64_t{1} << 40;  ///< context length, sliding window (tokens)
/// Largest parameter count the dimensions may give (2^50, about 1.1e15), so element and byte counts
/// stay far inside uint64.
constexpr uint64_t kMaxModelParameters = uint64_t{1} << 50;

/// One weight tensor. Shapes follow ggml order: `row_elements` is ne[0], the
/// contiguous dimension that quantization blocks run along.
struct Tensor {
  std::string name;           ///< full GGUF name, e.g. "blk.3.attn_v.weight"
  std::string kind;           ///< name without "blk.N." and ".weight": "attn_v", "ffn_down_exps", "token_embd", "output_norm"
  int layer = -1;             ///< block index, -1 outside the blocks
  uint64_t row_elements = 0;  ///< ne[0]
  uint64_t rows = 1;          ///< ne[1]
  uint64_t slices = 1;        ///< ne[2] (experts for merged expert tensors), 1 otherwise
  uint64_t elements() const { return row_elements * rows * slices; }
  /// 1-D tensors (norms, biases) stay F32 in GGUF files whatever the file type.
  bool is_vector() const { return rows == 1 && slices == 1; }
};

/// True for a table that is only ever looked up by token beside token_embd (Gemma 3n's per-layer
/// embeddings): a step reads one row of it, and it is never multiplied.
inline bool is_lookup_table(const std::string& kind) { return kind == "per_layer_token_embd"; }

/// SigLIP-style vision tower of a multimodal checkpoint (HF `vision_config`).
/// Used only to reconcile published checkpoint totals: llama.cpp writes the
/// tower to a separate mmproj file, so it is not part of `model_tensors`.
struct VisionTowerSpec {
  uint64_t hidden_size = 0;        ///< tower width
  uint64_t num_hidden_layers = 0;  ///< encoder layers
  uint64_t intermediate_size = 0;  ///< encoder MLP width
  uint64_t patch_size = 0;         ///< patch edge, pixels
  uint64_t image_size = 0;         ///< input image edge, pixels
  uint64_t num_channels = 3;       ///< input colour channels (Qwen: in_channels)
  /// Qwen3-VL / Qwen3.5 tower (HF depth, num_position_embeddings, temporal_patch_size,
  /// spatial_merge_size): a learned table of num_position_embeddings positions instead of one per
  /// patch of image_size, a 3-D patch conv over temporal_patch_size frames, and a patch merger
  /// (spatial_merge_size^2 patches -> text hidden) instead of Gemma-3's projector. 0 = SigLIP/Gemma-3.
  uint64_t num_position_embeddings = 0;
  uint64_t temporal_patch_size = 1;
  uint64_t spatial_merge_size = 0;
  /// Llama 4 tower (HF projector_input_dim, projector_output_dim = vision_output_dim,
  /// pixel_shuffle_ratio): a class token and (image/patch)^2 + 1 learned positions, pre/post
  /// LayerNorms, a pixel-shuffle MLP adapter (hidden / ratio^2 -> projector_input_dim ->
  /// projector_output_dim, no biases) and a bias-free projector to the text hidden. 0 = not Llama 4.
  uint64_t projector_input_dim = 0;
  uint64_t projector_output_dim = 0;
  double pixel_shuffle_ratio = 0;
  /// "pixtral" (HF vision_config.model_type of Mistral3ForConditionalGeneration): gated-MLP ViT
  /// with RMSNorms and 2-D RoPE (no position table, no biases), and the Mistral-3 projector (RMSNorm,
  /// a spatial_merge_size^2 patch merger, two Linears to the text hidden; multimodal_projector_bias
  /// false). "moonvit3d" (Kimi-K2.5's MoonViT-3D, HF vt_* keys): the Qwen tower's layers with a
  /// 2-D patch conv, a learned init_pos_emb_height x init_pos_emb_width table (num_position_embeddings;
  /// the temporal sin-cos table is a non-persistent buffer), a final LayerNorm, and the patchmerger
  /// projector (pre-norm, merge^2 x hidden square Linear, Linear to the text hidden, with biases).
  /// "gemma4_vision" (Gemma 4): a gated-MLP ViT with four RMSNorms and q/k norms per layer, no
  /// biases, a patch Linear, two learned (x, y) position tables of num_position_embeddings rows
  /// each (HF position_embedding_size) and a one-Linear projector; no image_size.
  /// "" = told apart by the fields above.
  std::string model_type;
  uint64_t head_dim = 0;  ///< gemma4_vision: width of its q/k norms (HF vision_config head_dim); 0 elsewhere
};

/// An official checkpoint in another weight format, published beside the main one.
struct OfficialRelease {
  std::string format;  ///< quant format id (data/quant/formats.json), e.g. "fp8-block"
  std::string repo;    ///< Hugging Face repository, e.g. "Qwen/Qwen3-32B-FP8"
  /// The names (the preset id, its aliases) this is the release of: a base-model alias has none, a
  /// later model sharing the preset's shape its own (qwen3.6-27b: Qwen/Qwen3.6-27B-FP8). Empty = all.
  std::vector<std::string> names;
};

/// Checkpoint weight quantization as stated by HF `quantization_config`.
/// Only what changes the published element count is kept.
struct CheckpointQuantization {
  /// "fp8" (block or per-tensor scales), "mxfp4" (one scale per 32 weights) or "compressed-tensors"
  std::string quant_method;
  std::vector<uint64_t> weight_block_size;  ///< fp8: [rows, columns] of one scale block, e.g. [128, 128]; empty: per-tensor
  /// fp8 without weight_block_size (HF weight_block_size null): one scalar weight scale per matrix,
  /// plus one activation (input) scale where "static"; "dynamic" stores the weight scale only.
  std::string activation_scheme;
  /// compressed-tensors pack-quantized INT weights of the routed experts (HF
  /// config_groups.group_0.weights.num_bits / group_size; Kimi-K2.5: 4 / 32). 0 = not compressed-tensors.
  uint64_t num_bits = 0;
  uint64_t group_size = 0;
};

/// A transformer decoder as the advisor models it. Field names are the Hugging
/// Face config.json names wherever one exists; counts are plain element counts
/// (not bytes), widths are elements per token. Zero means "absent" for the
/// optional integer fields (no experts, no MLA, no sliding window, ...).
struct ModelSpec {
  std::string id;                    ///< catalogue id, e.g. "llama-3.1-8b"
  std::string name;                  ///< display name
  std::vector<std::string> aliases;  ///< other ids that resolve to this preset
  /// HF architecture family: llama, mistral, mixtral, qwen2, qwen3, qwen3_moe,
  /// gemma2, gemma3_text, phi3, deepseek_v3, gpt_oss. Selects the GGUF tensor
  /// layout (e.g. phi3's fused attn_qkv) and the trait defaults below.
  std::string model_type;

  uint64_t hidden_size = 0;              ///< residual stream width H
  uint64_t num_hidden_layers = 0;        ///< decoder blocks L (MTP blocks not included)
  uint64_t num_attention_heads = 0;      ///< query heads
  uint64_t num_key_value_heads = 0;      ///< KV heads (GQA); equals heads for MHA
  uint64_t head_dim = 0;                 ///< per-head width; hidden/heads unless stated
  uint64_t intermediate_size = 0;        ///< dense FFN width (HF value; for mixtral/gpt_oss HF uses it for the expert width)
  uint64_t vocab_size = 0;               ///< embedding rows V
  bool tie_word_embeddings = false;      ///< output head shares token_embd
  uint64_t max_position_embeddings = 0;  ///< longest context the config allows, tokens (0 = unknown)
  double rope_theta = 0.0;               ///< RoPE base (0 = unknown); informational

  bool attention_bias = false;                ///< bias on q, k, v and o projections (HF attention_bias)
  bool qkv_bias = false;                      ///< bias on q, k, v only (Qwen2 hardcodes it)
  bool mlp_bias = false;                      ///< bias on FFN / expert projections (HF mlp_bias; gpt-oss experts)
  bool router_bias = false;                   ///< bias on the MoE router (gpt-oss)
  bool router_score_correction_bias = false;  ///< DeepSeek-V3 e_score_correction_bias (GGUF exp_probs_b)
  bool qk_norm = false;                       ///< RMSNorm on q and k (Qwen3, Gemma-3, MiniMax-M2)
  /// Width of the q/k norms (HF qk_norm_type): "per_head" (default: one head_dim-wide weight each,
  /// shared by the heads) or "per_layer" (MiniMax-M2: q_norm over heads x head_dim, k_norm over
  /// kv_heads x head_dim).
  std::string qk_norm_type = "per_head";
  bool attn_output_gate = false;  ///< q_proj also produces a per-channel output gate (Qwen3-Next, Qwen3.5): 2 x heads x head_dim wide
  bool sandwich_norm = false;     ///< extra post-attention and post-FFN norms (Gemma-2/3)
  bool attention_sinks = false;   ///< one learned sink logit per head per layer (gpt-oss)

  uint64_t num_experts = 0;            ///< routed experts per MoE layer (HF num_local_experts / num_experts / n_routed_experts)
  uint64_t num_experts_per_tok = 0;    ///< routed experts used per token
  uint64_t moe_intermediate_size = 0;  ///< width of one routed expert
  uint64_t shared_expert_intermediate_size =
      0;  ///< total width of the always-on shared expert(s) (DeepSeek: n_shared_experts x moe_intermediate_size)
  uint64_t first_k_dense_replace = 0;     ///< the first k layers use a dense FFN (DeepSeek)
  bool shared_expert_gate = false;        ///< sigmoid gate (Linear H -> 1) on the shared expert (Qwen2-MoE, Qwen3-Next, Qwen3.5)
  /// Latent MoE (HF moe_latent_size; Nemotron-3-Super): the routed experts work in a latent this
  /// wide; the block projects hidden -> latent before them and latent -> hidden after them
  /// (fc1_latent_proj, fc2_latent_proj), both always active. The router and the shared expert
  /// read the full hidden width. 0 = experts at hidden_size.
  uint64_t moe_latent_size = 0;
  std::vector<uint64_t> mlp_only_layers;  ///< further layers with a dense FFN (Qwen-MoE)

  uint64_t q_lora_rank = 0;       ///< MLA query compression rank (0 = plain q projection)
  uint64_t kv_lora_rank = 0;      ///< MLA latent width (0 = not MLA)
  uint64_t qk_rope_head_dim = 0;  ///< MLA rotary part of q/k heads (also cached, shared by heads)
  uint64_t qk_nope_head_dim = 0;  ///< MLA non-rotary part of q/k heads
  uint64_t v_head_dim = 0;        ///< MLA value head width

  /// DeepSeek sparse attention (DSA; DeepSeek-V3.2, GLM-5): a lightning indexer per layer scores
  /// every cached token with index_n_heads small heads of index_head_dim over its own cached key
  /// (index_head_dim per token per layer), and the MLA attention then reads only the index_topk
  /// best tokens. 0 = dense attention.
  uint64_t index_n_heads = 0;
  uint64_t index_head_dim = 0;
  uint64_t index_topk = 0;

  /// Gated DeltaNet linear-attention layers (Qwen3-Next, Qwen3.5): a fixed recurrent state per
  /// sequence (value heads x key_head_dim x value_head_dim) plus a short-convolution state instead
  /// of a cache growing with the context. Which layers: layer_types "linear_attention", or every
  /// layer except each full_attention_interval-th.
  uint64_t full_attention_interval = 0;  ///< N: layer i is full attention iff (i+1) mod N == 0, the rest linear (0 = none)
  uint64_t linear_num_key_heads = 0;
  uint64_t linear_key_head_dim = 0;
  uint64_t linear_num_value_heads = 0;
  uint64_t linear_value_head_dim = 0;
  uint64_t linear_conv_kernel_dim = 0;  ///< causal conv1d kernel over q, k and v
  /// Element type of the recurrent state (HF mamba_ssm_dtype): "float32", "bfloat16" or "float16";
  /// the convolution state is held at 16 bits.
  std::string mamba_ssm_dtype = "bfloat16";

  /// Mamba-2 mixer layers (Granite 4.0-H: layer_types "mamba"; Nemotron-H: 'M' blocks): in_proj to
  /// x, z (heads x d_head each), B, C (groups x d_state each) and dt, a causal conv1d over x, B and
  /// C, per-head A_log, D and dt_bias, a gated RMSNorm and out_proj. The state per sequence is
  /// heads x d_head x d_state (at mamba_ssm_dtype) plus kernel-1 conv inputs. HF granitemoehybrid
  /// names; nemotron_h calls them mamba_num_heads, mamba_head_dim, n_groups, ssm_state_size, conv_kernel.
  uint64_t mamba_n_heads = 0;
  uint64_t mamba_d_head = 0;
  uint64_t mamba_n_groups = 0;
  uint64_t mamba_d_state = 0;
  uint64_t mamba_d_conv = 0;
  bool mamba_conv_bias = true;  ///< bias on conv1d (HF use_conv_bias / mamba_conv_bias)
  /// Nemotron-H (HF hybrid_override_pattern): one character per block, each block one norm and one
  /// mixer: 'M' Mamba-2, '*' attention, '-' an ungated squared-ReLU MLP (intermediate_size), 'E' an
  /// MoE of ungated experts with a shared expert. Empty for every other family.
  std::string hybrid_override_pattern;
  /// Nemotron-H MTP module (HF mtp_hybrid_override_pattern): the blocks of each of the
  /// num_nextn_predict_layers modules, one character each as in hybrid_override_pattern ("*E":
  /// an attention block, then an MoE block). The module's first block also holds enorm, hnorm
  /// and eh_proj (2H -> H), its last a final norm; embedding and output head are shared.
  std::string mtp_hybrid_override_pattern;
  /// LFM2 gated short-convolution layers (HF lfm2 / lfm2_moe layer_types "conv"): in_proj (hidden ->
  /// 3 x hidden: B, C and x), a depthwise causal conv1d of conv_L_cache taps over B * x, the gate C
  /// and out_proj (hidden x hidden). The state per sequence is the last conv_L_cache - 1 inputs of
  /// the hidden channels (llama.cpp and vLLM; transformers allocates conv_L_cache). 0 = none.
  uint64_t conv_L_cache = 0;
  bool conv_bias = false;  ///< bias on in_proj, conv and out_proj (HF conv_bias)

  uint64_t sliding_window = 0;          ///< window of sliding-attention layers, tokens (0 = none)
  uint64_t sliding_window_pattern = 0;  ///< N: layer i is full attention iff (i+1) mod N == 0 (Gemma-2: 2, Gemma-3: 6)
  std::vector<std::string>
      layer_types;  ///< explicit per-layer "sliding_attention" / "full_attention" / "linear_attention" (HF layer_types)
  /// Gemma 4: the full-attention layers' own head width and KV heads (HF global_head_dim,
  /// num_global_key_value_heads; 0 = the sliding layers' head_dim / num_key_value_heads). The HF
  /// import sets num_global_key_value_heads only where attention_k_eq_v is set, as transformers reads it.
  uint64_t global_head_dim = 0;
  uint64_t num_global_key_value_heads = 0;
  /// Gemma 4 (HF attention_k_eq_v): a full-attention layer has no v_proj; its value is the key
  /// projection's output (normed without a scale and not rotated, so K and V stay two cached tensors).
  bool attention_k_eq_v = false;
  /// Gemma 4 26B-A4B (HF enable_moe_block): every layer runs its dense MLP (intermediate_size) and a
  /// routed-expert block side by side, the block with its router (norm-free input scale, per-expert
  /// output scale) and three more norms (pre-experts, post-MLP, post-experts).
  bool enable_moe_block = false;

  /// Gemma 3n (model_type gemma3n_text; HF field names). Per-layer embeddings: a second lookup
  /// table of vocab_size_per_layer_input rows, num_hidden_layers x hidden_size_per_layer_input wide
  /// (one row read per token, never multiplied), projected from the hidden state too
  /// (per_layer_model_projection) and mixed into each layer through a gate and a projection of
  /// hidden_size_per_layer_input. AltUp: altup_num_inputs residual streams (the 3 extra ones made
  /// and merged by two sets of altup_num_inputs - 1 square projections), a router and prediction and
  /// correction coefficients per layer. LAuReL: a rank-laurel_rank residual beside attention. The
  /// last num_kv_shared_layers layers compute only a query and attend to the cache of the last
  /// layer of their kind before them (they cache nothing). 0 for every other family.
  uint64_t hidden_size_per_layer_input = 0;
  uint64_t vocab_size_per_layer_input = 0;
  uint64_t altup_num_inputs = 0;
  uint64_t laurel_rank = 0;
  uint64_t num_kv_shared_layers = 0;

  /// DeepSeek-V4 (model_type deepseek_v4; HF field names). Attention: one shared K = V head of
  /// head_dim behind a q_lora_rank query, a grouped low-rank output (o_groups groups of
  /// heads x head_dim / o_groups -> o_lora_rank each, then o_groups x o_lora_rank -> hidden) and a
  /// learned sink per head; every layer keeps the last sliding_window tokens uncompressed.
  /// compress_ratios (one per layer, the MTP layers after the main ones): 0 = the window only; m > 0
  /// = a compressor pools every m tokens into one cached head_dim entry (m = 4 with overlapping
  /// windows, twice as wide, and a lightning indexer of index_n_heads x index_head_dim picking
  /// index_topk entries; m = 128 without). hc_mult residual streams (manifold-constrained
  /// hyper-connections) mixed around each sub-block; the first num_hash_layers MoE layers route by a
  /// token-id table (tid2eid) instead of a score bias. 0 / empty for every other family.
  std::vector<uint64_t> compress_ratios;
  uint64_t o_lora_rank = 0;
  uint64_t o_groups = 0;
  uint64_t hc_mult = 0;
  uint64_t num_hash_layers = 0;
  /// Storage of the routed experts when it differs from the rest of the checkpoint (HF expert_dtype):
  /// "fp4" = E2M1 values packed two per stored element with one E8M0 scale per 32 (DeepSeek-V4).
  std::string expert_dtype;

  uint64_t num_nextn_predict_layers = 0;                      ///< multi-token-prediction blocks in the checkpoint (not in GGUF)
  std::optional<VisionTowerSpec> vision_config;               ///< vision tower of a multimodal checkpoint
  std::optional<CheckpointQuantization> quantization_config;  ///< checkpoint quantization
  /// Quant format id the official checkpoint ships in ("mxfp4", "fp8-block"); it is the
  /// default weight format on engines that run it. "" = a 16-bit checkpoint.
  std::string native_format;
  /// The publisher's own checkpoints in other weight formats (Qwen/Qwen3-32B-FP8 beside the BF16 release).
  std::vector<OfficialRelease> releases;

  /// What the published checkpoint total counts beyond `model_tensors`:
  /// "rotary_inv_freq_buffers", "untied_output_copy", "vision_tower",
  /// "mtp_layers", "mtp_layers_shared_embedding", "quantization_scales", "encoder_towers". See checkpoint_extra_terms().
  std::vector<std::string> checkpoint_includes;
  /// Stored elements of encoders no config field describes in full (Gemma 3n's MobileNet-V5 vision
  /// and USM audio towers and their embedders), by name, each counted from its published
  /// architecture (the preset's notes say how); checkpoint_includes "encoder_towers" adds them.
  std::map<std::string, uint64_t> encoder_tower_params;
  uint64_t params_exact = 0;  ///< published checkpoint total (HF safetensors.total); 0 = none published
  /// Elements of params_exact no modelled term explains (a tensor the published checkpoint has and
  /// the architecture does not say); the notes say what is known of it. 0 for an exact preset.
  uint64_t params_unexplained = 0;
  std::string params_source;                         ///< where params_exact was read
  nlohmann::json sources = nlohmann::json::array();  ///< [{title, url, read, covers}]
  std::vector<std::string> notes;                    ///< modelling notes and assumptions
};

/// The official release of `model` in weight format `format_id` for the name it was asked for by
/// (`asked`, any case; "" matches a release for every name), or nullptr.
const OfficialRelease* official_release(const ModelSpec& model, const std::string& format_id, const std::string& asked = "");

/// The model_type values this module understands.
const std::vector<std::string>& supported_model_types();

/// True when layer `layer` (0-based) uses sliding-window attention.
bool is_sliding_layer(const ModelSpec& spec, uint64_t layer);

/// True when layer `layer` (0-based) is a linear-attention (Gated DeltaNet) layer. MTP blocks
/// (layer >= num_hidden_layers) are full attention.
bool is_linear_layer(const ModelSpec& spec, uint64_t layer);

/// True when layer `layer` (0-based) is a Mamba-2 mixer layer (layer_types "mamba" or a
/// hybrid_override_pattern 'M').
bool is_mamba_layer(const ModelSpec& spec, uint64_t layer);

/// True when layer `layer` (0-based) is an LFM2 short-convolution layer (layer_types "conv").
bool is_short_conv_layer(const ModelSpec& spec, uint64_t layer);

/// True when layer `layer` has routed experts (else a dense FFN; with enable_moe_block both).
bool is_moe_layer(const ModelSpec& spec, uint64_t layer);

/// Head width of layer `layer`'s attention: global_head_dim on a full-attention layer where it is
/// set (Gemma 4), head_dim otherwise.
uint64_t layer_head_dim(const ModelSpec& spec, uint64_t layer);

/// KV heads of layer `layer`'s attention: num_global_key_value_heads on a full-attention layer
/// where it is set (Gemma 4), num_key_value_heads otherwise.
uint64_t layer_kv_heads(const ModelSpec& spec, uint64_t layer);

/// Query heads x (key width + value width) of one attention layer of each kind: what the score and
/// value FLOPs per (query, cached token) pair scale with. MLA: the expanded heads (qk_nope +
/// qk_rope and v_head_dim); Gemma 4's full layers: global_head_dim.
struct AttentionWidths {
  uint64_t full = 0;
  uint64_t sliding = 0;
};
AttentionWidths attention_widths(const ModelSpec& spec);

/// Reads a preset document (data/models/<id>.json, already schema-valid or
/// not) and applies the model_type's trait defaults. Checks what a schema
/// cannot: heads divisible by KV heads, experts_per_tok <= experts, layer
/// pattern lengths, MLA fields given together, ... Every problem found is
/// appended (JSON pointer + message, `file` left empty); returns nullopt if any.
std::optional<ModelSpec> model_from_json(const nlohmann::json& j, std::vector<Problem>& problems);

/// The preset document for `spec`; model_from_json(to_json(s)) reproduces s.
nlohmann::json to_json(const ModelSpec& spec);

/// Every weight tensor with the GGUF name and ggml shape that llama.cpp's
/// convert_hf_to_gguf.py writes for this architecture: merged 3-D expert
/// tensors, split MLA attn_k_b/attn_v_b, fused phi3 attn_qkv/ffn_up, biases as
/// separate ".bias" tensors. Omits the computed constants the converter may
/// add (rope_freqs, rope_factors_long/short: a few hundred F32 values), the
/// MTP blocks (the converter skips them) and vision towers (mmproj file).
std::vector<Tensor> model_tensors(const ModelSpec& spec);

/// Sum of model_tensors() elements: the model's weights as a GGUF holds them.
uint64_t parameter_count(const ModelSpec& spec);

/// Weights touched per token: everything except the routed experts a token
/// does not use (num_experts_per_tok of num_experts per MoE layer; shared
/// experts always). The input embedding table is included whole.
uint64_t active_parameter_count(const ModelSpec& spec);

/// Both counts from one walk over the tensors (what a caller needing both should use).
struct ParameterCounts {
  uint64_t total = 0;   ///< parameter_count()
  uint64_t active = 0;  ///< active_parameter_count()
};
ParameterCounts parameter_counts(const ModelSpec& spec);

/// One term of the difference between a published checkpoint total and
/// parameter_count().
struct CountTerm {
  std::string what;       ///< the checkpoint_includes entry it explains
  uint64_t elements = 0;  ///< stored elements
};

/// The extra stored elements each `checkpoint_includes` entry stands for,
/// computed from the architecture: rotary inv_freq buffers (head_dim/2 per
/// layer), an untied copy of the output head, the SigLIP tower + Gemma-3
/// projector, MTP blocks with their embedding/head copies, FP8 block scales or
/// MXFP4 scales.
std::vector<CountTerm> checkpoint_extra_terms(const ModelSpec& spec);

/// Weights a checkpoint does not store one per element: with expert_dtype "fp4" two routed-expert
/// weights share one stored int8 element, so the published total counts half of them.
uint64_t packed_expert_elements(const ModelSpec& spec);

/// parameter_count() plus checkpoint_extra_terms(), less packed_expert_elements(): what HF's
/// safetensors total reports for the checkpoint. Equals params_exact for every preset.
uint64_t checkpoint_parameter_count(const ModelSpec& spec);

/// Which engine convention to follow for sliding-window layers.
enum class KvWindowPolicy {
  /// Sliding layers hold min(context, sliding_window) tokens: HF transformers'
  /// cache, vLLM's hybrid allocator, llama.cpp's SWA cache for gemma2/gemma3/
  /// gpt-oss (llama.cpp adds n_ubatch cells of slack, not modelled here).
  kCapSlidingLayers,
  /// Every layer holds the whole context: engines without SWA-aware caches,
  /// llama.cpp with --swa-full, and llama.cpp for llama/phi3 architectures,
  /// which ignore Mistral-v0.1's and Phi-3's sliding_window.
  kFullContext,
};

/// The per-token cache layout of one model.
struct KvShape {
  uint64_t full_layers = 0;     ///< layers caching every token
  uint64_t sliding_layers = 0;  ///< layers caching at most window_tokens
  uint64_t window_tokens = 0;   ///< sliding_window, 0 when no layer slides
  uint64_t elements_per_token_per_layer =
      0;  ///< a full layer's: 2 x kv_heads x head_dim, or kv_lora_rank + qk_rope_head_dim for MLA, plus the DSA indexer key
  /// A sliding layer's: equal to elements_per_token_per_layer unless the layer kinds have their own
  /// head width and KV heads (Gemma 4: 2 x num_key_value_heads x head_dim here, 2 x
  /// num_global_key_value_heads x global_head_dim on the full layers).
  uint64_t sliding_elements_per_token_per_layer = 0;
  uint64_t full_kv_heads = 0;     ///< KV heads a full layer caches (what tensor parallelism splits)
  uint64_t sliding_kv_heads = 0;  ///< KV heads a sliding layer caches
  bool latent = false;  ///< MLA: one shared latent, no separate V
  uint64_t indexer_elements_per_token_per_layer = 0;  ///< DSA indexer key (index_head_dim), included above
  uint64_t sparse_topk = 0;                           ///< DSA: tokens each query attends to (index_topk), 0 = all
  /// DeepSeek-V4 compressed KV: elements every token of context adds over all compressed layers
  /// together (head_dim / m per layer of ratio m, plus index_head_dim / m for the indexer's keys), on
  /// top of the window the sliding part holds; 0 for every other family.
  uint64_t compressed_elements_per_token = 0;
  uint64_t compressed_layers = 0;  ///< layers with a compressor (DeepSeek-V4 compress_ratios > 0)
  /// DeepSeek-V4 attention over the compressed entries, beside the window: the heavily compressed
  /// layers (ratio above 4) attend to every entry, so sum(1 / ratio) over them is the entries they
  /// attend to per token of context; each sparse layer (ratio compressed_sparse_ratio) has its
  /// indexer score every entry and attends to the compressed_topk it keeps. 0 for every other family.
  double compressed_dense_entries_per_token = 0;
  uint64_t compressed_sparse_layers = 0;
  uint64_t compressed_sparse_ratio = 0;
  uint64_t compressed_topk = 0;
  /// Gemma 3n KV sharing: layers that cache nothing but attend to the cache of an earlier layer of
  /// their kind (full or sliding). Memory counts full_layers and sliding_layers; attention math and
  /// the cache reads of a step count these as well.
  uint64_t shared_full_layers = 0;
  uint64_t shared_sliding_layers = 0;
  uint64_t linear_layers = 0;  ///< Gated DeltaNet, Mamba-2 or short-convolution layers: no per-token cache, a fixed state
  uint64_t state_elements_per_layer = 0;              ///< per sequence: recurrent state + convolution state
  double state_bytes_per_layer = 0;                   ///< the same in bytes (recurrent state at mamba_ssm_dtype, conv state at 16 bits)
};

/// Cache layout: MHA/GQA cache K and V (2 x kv_heads x head_dim per layer per
/// token); MLA caches the compressed latent plus the shared rotary key
/// (kv_lora_rank + qk_rope_head_dim, as llama.cpp and vLLM/SGLang MLA do).
/// Each layer kind at its own head width and KV heads (Gemma 4). attention_k_eq_v layers still
/// cache K and V apart: the key is normed and rotated, the value only normed (no shared buffer).
KvShape kv_shape(const ModelSpec& spec);

/// The cache as attention reads it: Gemma 3n's KV-shared layers counted with the layers whose
/// cache they read (full or sliding), for attention math and a step's cache reads; memory uses
/// kv_shape itself. Every other model's shape unchanged.
KvShape attention_reads(KvShape k);

/// Layers that run a lightning indexer each forward pass: every DSA layer (DeepSeek-V3.2, GLM-5)
/// and DeepSeek-V4's sparse compressed layers. 0 for every other model.
uint64_t indexer_layer_count(const KvShape& k);

/// Bytes of the fixed per-sequence state of the linear-attention layers (0 without them); it does
/// not grow with the context and does not follow the KV-cache dtype.
double recurrent_state_bytes(const KvShape& shape, uint64_t batch);

/// KV-cache elements per token over all layers, ignoring any window: the
/// figure to report per token. Multiply by bytes per element for memory.
uint64_t kv_cache_elements_per_token_full(const ModelSpec& spec);

/// KV-cache elements of each layer kind, for splitting them over tensor-parallel ranks apart.
struct KvElements {
  uint64_t full = 0;     ///< full-attention (and MLA / DSA) layers
  uint64_t sliding = 0;  ///< sliding-window layers
  uint64_t total() const { return full + sliding; }
};
KvElements kv_cache_elements_by_kind(const KvShape& shape, uint64_t context_tokens, uint64_t batch,
                                     KvWindowPolicy policy = KvWindowPolicy::kCapSlidingLayers);

/// KV-cache ELEMENTS (not bytes) for `batch` sequences of `context_tokens`
/// each: sum over layers of the layer kind's elements per token x tokens held,
/// where full layers hold context_tokens and sliding layers min(context, window).
uint64_t kv_cache_elements(const ModelSpec& spec, uint64_t context_tokens, uint64_t batch,
                           KvWindowPolicy policy = KvWindowPolicy::kCapSlidingLayers);
/// The same for a layout already worked out with kv_shape() (for callers that ask many times).
uint64_t kv_cache_elements(const KvShape& shape, uint64_t context_tokens, uint64_t batch,
                           KvWindowPolicy policy = KvWindowPolicy::kCapSlidingLayers);

/// Imports a Hugging Face config.json (Llama, Mistral, Mixtral, Qwen2/2.5,
/// Qwen3, Qwen3-MoE, Gemma 2, Gemma 3 incl. the multimodal config with a
/// nested text_config, Phi-3, DeepSeek-V3, gpt-oss). Unknown fields are
/// ignored; absent optional fields take transformers' config-class defaults.
/// Throws bad_input naming `source_name` and the field when a required field
/// is missing or has the wrong type, or the model_type is unsupported.
ModelSpec model_from_hf_config(const nlohmann::json& config, const std::string& source_name);

/// The shape rule of `--params N` (data/shapes/params-default.json, schema
/// data/schema/shape.schema.json): a bare dense decoder sized to a count.
struct ParamsShape {
  std::string id;
  std::string model_type;
  uint64_t vocab_size = 0;
  std::string vocab_source;  ///< "Llama-3 tokenizer"
  uint64_t head_dim = 0;
  uint64_t max_kv_heads = 0;
  double ffn_ratio = 0;  ///< FFN / hidden of the base shape
  uint64_t ffn_multiple = 0;
  double hidden_per_layer = 0;  ///< layers ~ hidden / hidden_per_layer
  double tie_embeddings_below_params = 0;
  std::string tied_note, untied_note;
  uint64_t max_position_embeddings = 0;
  double rope_theta = 0;
};

std::optional<ParamsShape> params_shape_from_json(const nlohmann::json& j, std::vector<Problem>& problems);

/// A bare dense model of about `params` parameters in `shape`, for when
/// nothing else is known (the rule is stated in the result's notes): heads of
/// head_dim, at most max_kv_heads KV heads, tied embeddings below
/// tie_embeddings_below_params, layers ~ hidden / hidden_per_layer, FFN
/// refitted so parameter_count lands within 1% of `params`.
/// Throws bad_input outside 1e8..1e13.
ModelSpec model_from_params(double params, const ParamsShape& shape);

}  // namespace optadvisor
