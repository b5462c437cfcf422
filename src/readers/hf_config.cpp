// SPDX-License-Identifier: MIT
// Hugging Face config.json importer: maps each supported family's keys and
// transformers config-class defaults onto a preset document, then reuses
// model_from_json for the semantic checks.
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "optadvisor/catalog/model.hpp"
#include "base/strings.hpp"
#include "base/json_fields.hpp"

namespace optadvisor {

namespace {

using nlohmann::json;

/// The config.json model_type values accepted (gemma3 is the multimodal
/// wrapper whose text_config holds a gemma3_text model; mistral3 wraps a mistral or ministral3 one).
const std::vector<std::string>& accepted_types() {
  static const std::vector<std::string> types = {"llama",           "mistral",          "mixtral",    "qwen2",       "qwen3",
                                                 "qwen3_moe",       "gemma2",           "gemma3",     "gemma3_text", "phi3",
                                                 "deepseek_v3",     "gpt_oss",          "kimi_k2",    "kimi_k25",    "deepseek_v32",
                                                 "glm_moe_dsa",     "minimax_m2",       "qwen3_next", "qwen3_5",     "qwen3_5_moe",
                                                 "qwen3_5_text",    "qwen3_5_moe_text", "nemotron_h", "llama4",      "llama4_text",
                                                 "granitemoehybrid", "gemma4",           "gemma4_text",      "lfm2_moe",
                                                 "gemma3n",         "gemma3n_text",     "mistral3",   "ministral3"};
  return types;
}

std::string describe(const json& v) {
  std::string text = v.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return std::string(v.type_name()) + " " + text;
}

/// Typed access to one config object. Missing required fields and wrong
/// types throw bad_input naming the source file and the field.
class HfFields {
 public:
  HfFields(const json& j, const std::string& source, std::string prefix, std::string model_type)
      : j_(j), source_(source), prefix_(std::move(prefix)), model_type_(std::move(model_type)) {}

  /// Present with a non-null value.
  bool has(const char* key) const { return json_field::find(j_, key) != nullptr; }
  /// Present, possibly null (transformers treats null and absent differently for some keys).
  bool present(const char* key) const { return j_.contains(key); }

  uint64_t required_uint(const char* key) const {
    if (!has(key)) {
      throw bad_input(source_ + ": missing required field '" + prefix_ + key + "'", hint(key));
    }
    return to_uint(key);
  }

  std::optional<uint64_t> uint(const char* key) const {
    if (!has(key)) return std::nullopt;
    return to_uint(key);
  }

  /// The value, or `fallback` (recorded as an applied default) when absent.
  uint64_t uint_or(const char* key, uint64_t fallback) {
    if (auto v = uint(key)) return *v;
    defaults_.push_back(prefix_ + key + "=" + std::to_string(fallback));
    return fallback;
  }

  std::optional<bool> boolean(const char* key) const {
    if (!has(key)) return std::nullopt;
    if (auto v = json_field::as_bool(j_.at(key))) return v;
    wrong_type(key, "true or false");
  }

  std::optional<double> number(const char* key) const {
    if (!has(key)) return std::nullopt;
    if (auto v = json_field::as_number(j_.at(key))) return v;
    wrong_type(key, "a number");
  }

  std::optional<std::string> string(const char* key) const {
    if (!has(key)) return std::nullopt;
    if (auto v = json_field::as_string(j_.at(key))) return v;
    wrong_type(key, "a string");
  }

  /// Present as a JSON array.
  bool is_array(const char* key) const { return has(key) && j_.at(key).is_array(); }

  /// Refuses the value of `key`: "<file>: <prefix><key>: <what>", with `hint`.
  [[noreturn]] void refuse(const char* key, const std::string& what, const std::string& hint) const {
    throw bad_input(source_ + ": " + prefix_ + key + ": " + what, hint);
  }

  std::vector<uint64_t> uints(const char* key) const {
    std::vector<uint64_t> out;
    if (!has(key)) return out;
    const json& v = j_.at(key);
    if (!v.is_array()) wrong_type(key, "an array of non-negative integers");
    for (const json& item : v) {
      const auto value = json_field::as_uint(item);
      if (!value) wrong_type(key, "an array of non-negative integers");
      out.push_back(*value);
    }
    return out;
  }

  std::vector<std::string> strings(const char* key) const {
    std::vector<std::string> out;
    if (!has(key)) return out;
    const json& v = j_.at(key);
    if (!v.is_array()) wrong_type(key, "an array of strings");
    for (const json& item : v) {
      auto value = json_field::as_string(item);
      if (!value) wrong_type(key, "an array of strings");
      out.push_back(std::move(*value));
    }
    return out;
  }

  const json* object(const char* key) const {
    if (!has(key)) return nullptr;
    if (!j_.at(key).is_object()) wrong_type(key, "an object");
    return &j_.at(key);
  }

  const std::vector<std::string>& defaults() const { return defaults_; }

 private:
  uint64_t to_uint(const char* key) const {
    if (auto v = json_field::as_uint(j_.at(key))) return *v;
    wrong_type(key, "a non-negative integer");
  }

  [[noreturn]] void wrong_type(const char* key, const char* expected) const {
    throw bad_input(source_ + ": field '" + prefix_ + key + "' must be " + expected + ", got " + describe(j_.at(key)), hint(key));
  }

  std::string hint(const char* key) const {
    return std::string("a ") + model_type_ + " config.json states " + prefix_ + key +
           "; use the file from the model's Hugging Face repository unchanged";
  }

  const json& j_;
  const std::string& source_;
  std::string prefix_;
  std::string model_type_;
  std::vector<std::string> defaults_;
};

/// The per-layer attention pattern of a config: explicit HF layer_types win;
/// otherwise the family's rule.
void set_sliding(json& doc, HfFields& c, const std::string& mt, uint64_t layers) {
  std::vector<std::string> layer_types = c.strings("layer_types");
  uint64_t window = 0;
  uint64_t pattern = 0;
  if (mt == "mistral") {
    // MistralConfig(sliding_window=4096): absent -> 4096, null -> no window.
    window = c.present("sliding_window") ? c.uint("sliding_window").value_or(0) : c.uint_or("sliding_window", 4096);
  } else if (mt == "mixtral" || mt == "phi3" || mt == "ministral3") {
    window = c.uint("sliding_window").value_or(0);  // Ministral3Config: sliding_window None
  } else if (mt == "qwen2" || mt == "qwen3" || mt == "qwen3_moe") {
    // The window applies only with use_sliding_window, to layers >= max_window_layers.
    if (c.boolean("use_sliding_window").value_or(false)) {
      window = c.uint_or("sliding_window", 4096);
      if (layer_types.empty()) {
        const uint64_t first = c.uint_or("max_window_layers", 28);
        for (uint64_t i = 0; i < layers; ++i) layer_types.push_back(i >= first ? "sliding_attention" : "full_attention");
      }
    } else {
      layer_types.clear();
    }
  } else if (mt == "gemma2") {
    window = c.uint_or("sliding_window", 4096);
    pattern = 2;  // Gemma2Config: layer i slides when (i+1) % 2 != 0
  } else if (mt == "gemma3_text") {
    window = c.uint_or("sliding_window", 4096);
    pattern = c.uint_or("sliding_window_pattern", 6);
  } else if (mt == "gemma3n_text") {
    window = c.uint_or("sliding_window", 512);
    pattern = 5;  // Gemma3nTextConfig's default layer_types: full attention where (i+1) % 5 == 0
  } else if (mt == "gemma4_text") {
    window = c.required_uint("sliding_window");
  } else if (mt == "gpt_oss") {
    window = c.uint_or("sliding_window", 128);
    pattern = 2;  // GptOssConfig: alternating, sliding first
  }
  if (!layer_types.empty()) {
    pattern = 0;
    const bool any_sliding = std::find(layer_types.begin(), layer_types.end(), "sliding_attention") != layer_types.end();
    if (!any_sliding) {
      layer_types.clear();
      window = 0;
    } else if (window == 0) {
      window = c.uint_or("sliding_window", 4096);
    }
  }
  if (window == 0) return;
  doc["sliding_window"] = window;
  if (!layer_types.empty()) {
    doc["layer_types"] = layer_types;
  } else if (pattern > 0) {
    doc["sliding_window_pattern"] = pattern;
  }
}

/// Qwen3-Next / Qwen3.5: Gated DeltaNet layers between full-attention ones, from layer_types or
/// full_attention_interval (Qwen3NextConfig defaults: interval 4, 16 key heads and 32 value heads
/// of 128, conv kernel 4), and the MTP layer (mtp_num_hidden_layers) without embedding copies.
void set_linear_attention(json& doc, HfFields& c) {
  const std::vector<std::string> layer_types = c.strings("layer_types");
  if (!layer_types.empty()) {
    doc["layer_types"] = layer_types;
  } else {
    doc["full_attention_interval"] = c.uint_or("full_attention_interval", 4);
  }
  doc["linear_num_key_heads"] = c.uint_or("linear_num_key_heads", 16);
  doc["linear_key_head_dim"] = c.uint_or("linear_key_head_dim", 128);
  doc["linear_num_value_heads"] = c.uint_or("linear_num_value_heads", 32);
  doc["linear_value_head_dim"] = c.uint_or("linear_value_head_dim", 128);
  doc["linear_conv_kernel_dim"] = c.uint_or("linear_conv_kernel_dim", 4);
  if (const auto dtype = c.string("mamba_ssm_dtype")) doc["mamba_ssm_dtype"] = *dtype;
  doc["attn_output_gate"] = c.boolean("attn_output_gate").value_or(true);
  const uint64_t mtp = c.uint("mtp_num_hidden_layers").value_or(c.uint("num_nextn_predict_layers").value_or(0));
  if (mtp > 0) {
    doc["num_nextn_predict_layers"] = mtp;
    doc["checkpoint_includes"].push_back("mtp_layers_shared_embedding");
  }
}

/// Nemotron-H: the block pattern, Mamba-2 widths under their NemotronHConfig names, the MoE of
/// 'E' blocks (n_routed_experts, moe_shared_expert_intermediate_size, moe_latent_size) and the MTP
/// modules (num_nextn_predict_layers of mtp_hybrid_override_pattern blocks, sharing the
/// embedding and head).
void set_nemotron_h(json& doc, HfFields& c) {
  doc["hybrid_override_pattern"] = c.string("hybrid_override_pattern").value_or("");
  doc["mamba_n_heads"] = c.required_uint("mamba_num_heads");
  doc["mamba_d_head"] = c.required_uint("mamba_head_dim");
  doc["mamba_n_groups"] = c.uint_or("n_groups", 8);
  doc["mamba_d_state"] = c.uint_or("ssm_state_size", 128);
  doc["mamba_d_conv"] = c.uint_or("conv_kernel", 4);
  doc["mamba_conv_bias"] = c.boolean("use_conv_bias").value_or(true);
  if (const auto dtype = c.string("mamba_ssm_cache_dtype")) doc["mamba_ssm_dtype"] = *dtype;
  if (const auto experts = c.uint("n_routed_experts")) {
    doc["num_experts"] = *experts;
    doc["num_experts_per_tok"] = c.required_uint("num_experts_per_tok");
    doc["moe_intermediate_size"] = c.required_uint("moe_intermediate_size");
    const uint64_t shared =
        c.uint("moe_shared_expert_intermediate_size").value_or(0) * std::max<uint64_t>(1, c.uint("n_shared_experts").value_or(1));
    if (shared > 0) doc["shared_expert_intermediate_size"] = shared;
    if (const auto latent = c.uint("moe_latent_size")) doc["moe_latent_size"] = *latent;
  }
  if (const uint64_t mtp = c.uint("num_nextn_predict_layers").value_or(0); mtp > 0) {
    doc["num_nextn_predict_layers"] = mtp;
    if (const auto pattern = c.string("mtp_hybrid_override_pattern")) doc["mtp_hybrid_override_pattern"] = *pattern;
    doc["checkpoint_includes"].push_back("mtp_layers_shared_embedding");
  }
}

/// LFM2-MoE (Lfm2MoeConfig): layer_types "conv" / "full_attention" (older configs list the attention
/// layers in full_attn_idxs), the short convolution's taps and bias, and num_dense_layers dense
/// layers before the MoE ones. use_expert_bias's F32 routing bias is a buffer, not counted.
void set_lfm2_moe(json& doc, HfFields& c, uint64_t layers) {
  std::vector<std::string> types = c.strings("layer_types");
  if (types.empty()) {
    types.assign(layers, "conv");
    for (uint64_t i : c.uints("full_attn_idxs"))
      if (i < layers) types[i] = "full_attention";
  }
  doc["layer_types"] = types;
  doc["conv_L_cache"] = c.uint_or("conv_L_cache", 3);
  doc["conv_bias"] = c.boolean("conv_bias").value_or(false);
  doc["num_experts"] = c.uint_or("num_experts", 32);
  doc["num_experts_per_tok"] = c.uint_or("num_experts_per_tok", 4);
  doc["moe_intermediate_size"] = c.uint_or("moe_intermediate_size", 1792);
  doc["first_k_dense_replace"] = std::min(c.uint_or("num_dense_layers", 2), layers);
}

/// Granite 4.0-H (GraniteMoeHybridConfig): layer_types "mamba" / "attention", the Mamba-2 widths
/// under their own names, experts of intermediate_size with a shared expert of
/// shared_intermediate_size; without experts the shared MLP is the dense FFN.
void set_granite_hybrid(json& doc, HfFields& c) {
  std::vector<std::string> types = c.strings("layer_types");
  for (std::string& t : types)
    if (t == "attention") t = "full_attention";
  if (!types.empty()) doc["layer_types"] = types;
  doc["mamba_n_heads"] = c.required_uint("mamba_n_heads");
  doc["mamba_d_head"] = c.required_uint("mamba_d_head");
  doc["mamba_n_groups"] = c.uint_or("mamba_n_groups", 1);
  doc["mamba_d_state"] = c.required_uint("mamba_d_state");
  doc["mamba_d_conv"] = c.uint_or("mamba_d_conv", 4);
  doc["mamba_conv_bias"] = c.boolean("mamba_conv_bias").value_or(true);
  const uint64_t experts = c.uint("num_local_experts").value_or(0);
  const uint64_t shared = c.uint("shared_intermediate_size").value_or(0);
  if (experts > 0) {
    doc["num_experts"] = experts;
    doc["num_experts_per_tok"] = c.required_uint("num_experts_per_tok");
    doc["moe_intermediate_size"] = c.required_uint("intermediate_size");
    if (shared > 0) doc["shared_expert_intermediate_size"] = shared;
  } else {
    doc["intermediate_size"] = shared;
  }
}

/// Llama 4 text model: routed experts of intermediate_size with one shared expert of the same
/// width, dense layers of intermediate_size_mlp between MoE layers (interleave_moe_layer_step or
/// moe_layers), and chunked local attention (attention_chunk_size) on the RoPE layers, the NoPE
/// ones (no_rope_layers 0, or every no_rope_layer_interval-th) global: modelled as a window.
void set_llama4(json& doc, HfFields& c, uint64_t layers) {
  const uint64_t width = c.required_uint("intermediate_size");
  doc["intermediate_size"] = c.uint_or("intermediate_size_mlp", 16384);
  doc["num_experts"] = c.uint_or("num_local_experts", 16);
  doc["num_experts_per_tok"] = c.uint_or("num_experts_per_tok", 1);
  doc["moe_intermediate_size"] = width;
  doc["shared_expert_intermediate_size"] = width;
  std::set<uint64_t> moe;
  for (uint64_t i : c.uints("moe_layers")) moe.insert(i);
  if (moe.empty()) {
    const uint64_t step = std::max<uint64_t>(1, c.uint_or("interleave_moe_layer_step", 1));
    for (uint64_t i = step - 1; i < layers; i += step) moe.insert(i);
  }
  std::vector<uint64_t> dense;
  for (uint64_t i = 0; i < layers; ++i)
    if (moe.count(i) == 0) dense.push_back(i);
  if (!dense.empty()) doc["mlp_only_layers"] = dense;
  const uint64_t chunk = c.uint("attention_chunk_size").value_or(0);
  if (chunk == 0) return;
  doc["sliding_window"] = chunk;
  const std::vector<uint64_t> rope = c.uints("no_rope_layers");
  if (rope.size() == layers) {
    std::vector<std::string> types;
    for (uint64_t r : rope) types.push_back(r != 0 ? "sliding_attention" : "full_attention");
    doc["layer_types"] = types;
  } else {
    doc["sliding_window_pattern"] = c.uint_or("no_rope_layer_interval", 4);
  }
}

/// Gemma 4 text model: the full-attention layers' head width and (with attention_k_eq_v, as
/// transformers reads it) KV heads, the MoE block beside the dense MLP (enable_moe_block:
/// num_experts, top_k_experts, moe_intermediate_size), and the lm_head copy the released checkpoints
/// store beside the tied embedding. Per-layer embeddings, shared KV layers and the double-wide MLP
/// (the E2B / E4B models) are refused.
void set_gemma4(json& doc, HfFields& c, const std::string& source_name, const std::string& prefix) {
  for (const char* key : {"hidden_size_per_layer_input", "num_kv_shared_layers"})
    if (c.uint(key).value_or(0) > 0)
      throw bad_input(source_name + ": " + prefix + key + " > 0 is not supported",
                      "Gemma 4's per-layer embeddings and shared KV layers (E2B, E4B) are not modelled; 26B-A4B and 31B have none");
  if (c.boolean("use_double_wide_mlp").value_or(false))
    throw bad_input(source_name + ": " + prefix + "use_double_wide_mlp true is not supported", "26B-A4B and 31B state false");
  if (c.strings("layer_types").empty())
    throw bad_input(source_name + ": missing required field '" + prefix + "layer_types'",
                    "a gemma4_text config.json lists its sliding and full layers in layer_types");
  if (const auto global = c.uint("global_head_dim")) doc["global_head_dim"] = *global;
  const bool k_eq_v = c.boolean("attention_k_eq_v").value_or(false);
  if (k_eq_v) {
    doc["attention_k_eq_v"] = true;
    if (const auto global_kv = c.uint("num_global_key_value_heads")) doc["num_global_key_value_heads"] = *global_kv;
  }
  if (c.boolean("enable_moe_block").value_or(false)) {
    doc["enable_moe_block"] = true;
    doc["num_experts"] = c.required_uint("num_experts");
    doc["num_experts_per_tok"] = c.required_uint("top_k_experts");
    const std::optional<uint64_t> width = c.uint("moe_intermediate_size");
    doc["moe_intermediate_size"] = width ? *width : c.required_uint("expert_intermediate_size");
  }
  if (doc.value("tie_word_embeddings", false)) doc["checkpoint_includes"].push_back("untied_output_copy");
}

/// Gemma 3n text model (Gemma3nTextConfig defaults: the E4B model): per-layer inputs, AltUp,
/// LAuReL and the KV-shared layers. The FFN width may be a per-layer list (MatFormer slices); only
/// equal widths are modelled.
void set_gemma3n(json& doc, HfFields& c) {
  doc["hidden_size_per_layer_input"] = c.uint_or("hidden_size_per_layer_input", 256);
  doc["vocab_size_per_layer_input"] = c.uint_or("vocab_size_per_layer_input", 262144);
  doc["altup_num_inputs"] = c.uint_or("altup_num_inputs", 4);
  doc["laurel_rank"] = c.uint_or("laurel_rank", 64);
  const uint64_t shared = c.uint_or("num_kv_shared_layers", 15);
  if (shared > 0) doc["num_kv_shared_layers"] = shared;
}

/// What the import of a Gemma 3n multimodal config.json leaves out.
constexpr const char* kGemma3nTowersNote =
    "The audio and vision towers (audio_config, vision_config: named architectures the config does not describe) are not counted.";

/// Gemma 3n's intermediate_size: one width, or a list of per-layer widths that must all be equal.
uint64_t gemma3n_intermediate(HfFields& c) {
  if (!c.is_array("intermediate_size")) return c.uint_or("intermediate_size", 16384);
  const std::vector<uint64_t> widths = c.uints("intermediate_size");
  if (widths.empty() || std::adjacent_find(widths.begin(), widths.end(), std::not_equal_to<>()) != widths.end())
    c.refuse("intermediate_size", "per-layer FFN widths that differ are not supported",
             "the released Gemma 3n E2B and E4B configs give one width for every layer");
  return widths.front();
}

/// The language model nested in text_config of a multimodal wrapper.
const json& text_config_of(const HfFields& top, const std::string& source_name, const std::string& mt) {
  const json* text = top.object("text_config");
  if (text == nullptr) {
    throw bad_input(source_name + ": missing required field 'text_config'",
                    "a " + mt + " config.json nests the language model in text_config");
  }
  return *text;
}

/// Kimi-K2.5's MoonViT-3D tower (vt_* keys) with its patchmerger projector. Every released
/// config states the tower; no defaults are assumed.
void set_kimi_k25_vision(json& doc, const HfFields& top, const std::string& source_name, const std::string& family) {
  const json* vision_json = top.object("vision_config");
  if (vision_json == nullptr) return;
  HfFields vision(*vision_json, source_name, "vision_config.", family);
  const std::vector<uint64_t> merge = vision.uints("merge_kernel_size");
  if (merge.size() != 2 || merge[0] != merge[1])
    throw bad_input(source_name + ": vision_config.merge_kernel_size must be two equal edges, e.g. [2, 2]",
                    "use the config.json from the model's Hugging Face repository unchanged");
  if (vision.string("mm_projector_type").value_or("patchmerger") != "patchmerger" ||
      vision.uint("mm_hidden_size").value_or(0) != vision.required_uint("vt_hidden_size"))
    throw bad_input(source_name + ": vision_config: only the patchmerger projector over the tower's own width is modelled",
                    "Kimi-K2.5 states mm_projector_type patchmerger with mm_hidden_size = vt_hidden_size");
  doc["vision_config"] = {
      {"model_type", "moonvit3d"},
      {"hidden_size", vision.required_uint("vt_hidden_size")},
      {"num_hidden_layers", vision.required_uint("vt_num_hidden_layers")},
      {"intermediate_size", vision.required_uint("vt_intermediate_size")},
      {"patch_size", vision.required_uint("patch_size")},
      {"num_position_embeddings", vision.required_uint("init_pos_emb_height") * vision.required_uint("init_pos_emb_width")},
      {"spatial_merge_size", merge[0]}};
  doc["checkpoint_includes"] = json::array({"vision_tower"});
}

/// The Llama 4 vision tower; returns the defaults applied.
std::vector<std::string> set_llama4_vision(json& doc, const HfFields& top, const std::string& source_name, const std::string& family) {
  const json* vision_json = top.object("vision_config");
  if (vision_json == nullptr) return {};
  HfFields vision(*vision_json, source_name, "vision_config.", family);
  // Stated in every released Llama 4 config; no class defaults are assumed for the tower.
  const std::optional<double> ratio = vision.number("pixel_shuffle_ratio");
  if (!ratio)
    throw bad_input(source_name + ": missing required field 'vision_config.pixel_shuffle_ratio'",
                    "use the config.json from the model's Hugging Face repository unchanged");
  doc["vision_config"] = {{"hidden_size", vision.required_uint("hidden_size")},
                          {"num_hidden_layers", vision.required_uint("num_hidden_layers")},
                          {"intermediate_size", vision.required_uint("intermediate_size")},
                          {"patch_size", vision.required_uint("patch_size")},
                          {"image_size", vision.required_uint("image_size")},
                          {"num_channels", vision.uint_or("num_channels", 3)},
                          {"projector_input_dim", vision.required_uint("projector_input_dim")},
                          {"projector_output_dim", vision.required_uint("vision_output_dim")},
                          {"pixel_shuffle_ratio", *ratio}};
  doc["checkpoint_includes"] = json::array({"vision_tower"});
  return vision.defaults();
}

/// Qwen3.5's Qwen3-VL-style tower; returns the defaults applied.
std::vector<std::string> set_qwen3_5_vision(json& doc, const HfFields& top, const std::string& source_name, const std::string& family) {
  const json* vision_json = top.object("vision_config");
  if (vision_json == nullptr) return {};
  HfFields vision(*vision_json, source_name, "vision_config.", family);
  doc["vision_config"] = {{"hidden_size", vision.uint_or("hidden_size", 1152)},
                          {"num_hidden_layers", vision.uint_or("depth", 27)},
                          {"intermediate_size", vision.uint_or("intermediate_size", 4304)},
                          {"patch_size", vision.uint_or("patch_size", 16)},
                          {"num_channels", vision.uint_or("in_channels", 3)},
                          {"num_position_embeddings", vision.uint_or("num_position_embeddings", 2304)},
                          {"temporal_patch_size", vision.uint_or("temporal_patch_size", 2)},
                          {"spatial_merge_size", vision.uint_or("spatial_merge_size", 2)}};
  if (!vision.uints("deepstack_visual_indexes").empty())
    throw bad_input(source_name + ": vision_config.deepstack_visual_indexes is not supported",
                    "Qwen3.5 towers have none; deepstack mergers (Qwen3-VL) are not modelled");
  doc["checkpoint_includes"] = json::array({"vision_tower"});
  return vision.defaults();
}

/// Mistral 3's Pixtral tower and projector (Mistral3ForConditionalGeneration): vision_config with
/// PixtralVisionConfig's defaults where it is silent, spatial_merge_size at the top level
/// (Mistral3Config default 2); returns the defaults applied.
std::vector<std::string> set_pixtral_vision(json& doc, HfFields& top, const std::string& source_name) {
  const json* vision_json = top.object("vision_config");
  if (vision_json == nullptr) return {};
  HfFields vision(*vision_json, source_name, "vision_config.", "mistral3");
  if (vision.string("model_type").value_or("pixtral") != "pixtral")
    vision.refuse("model_type", "'" + *vision.string("model_type") + "' is not modelled", "Mistral 3 releases state model_type pixtral");
  if (top.boolean("multimodal_projector_bias").value_or(false))
    top.refuse("multimodal_projector_bias", "true is not modelled", "Mistral 3 releases state false (the Mistral3Config default)");
  doc["vision_config"] = {{"model_type", "pixtral"},
                          {"hidden_size", vision.uint_or("hidden_size", 1024)},
                          {"num_hidden_layers", vision.uint_or("num_hidden_layers", 24)},
                          {"intermediate_size", vision.uint_or("intermediate_size", 4096)},
                          {"patch_size", vision.uint_or("patch_size", 16)},
                          {"image_size", vision.uint_or("image_size", 1024)},
                          {"num_channels", vision.uint_or("num_channels", 3)},
                          {"spatial_merge_size", top.uint_or("spatial_merge_size", 2)}};
  doc["checkpoint_includes"] = json::array({"vision_tower"});
  return vision.defaults();
}

/// Gemma-3's SigLIP tower from vision_config, SiglipVisionConfig's defaults where it is silent
/// (always present); returns the defaults applied.
std::vector<std::string> set_gemma3_vision(json& doc, const HfFields& top, const std::string& source_name) {
  const json* vision_json = top.object("vision_config");
  const json no_vision = json::object();
  HfFields vision(vision_json != nullptr ? *vision_json : no_vision, source_name, "vision_config.", "gemma3");
  // SiglipVisionConfig defaults.
  doc["vision_config"] = {{"hidden_size", vision.uint_or("hidden_size", 768)},
                          {"num_hidden_layers", vision.uint_or("num_hidden_layers", 12)},
                          {"intermediate_size", vision.uint_or("intermediate_size", 3072)},
                          {"patch_size", vision.uint_or("patch_size", 16)},
                          {"image_size", vision.uint_or("image_size", 224)},
                          {"num_channels", vision.uint_or("num_channels", 3)}};
  doc["checkpoint_includes"] = json::array({"vision_tower"});
  return vision.defaults();
}

/// Gemma 4's tower (vision_config model_type gemma4_vision); every released config states it, so
/// no class defaults are assumed beyond three colour channels.
void set_gemma4_vision(json& doc, const HfFields& top, const std::string& source_name, const std::string& family) {
  const json* vision_json = top.object("vision_config");
  if (vision_json == nullptr) return;
  HfFields vision(*vision_json, source_name, "vision_config.", family);
  if (vision.boolean("use_clipped_linears").value_or(false))
    throw bad_input(source_name + ": vision_config.use_clipped_linears true is not supported",
                    "the Gemma 4 26B and 31B towers have none; clipped linears store further scalars not modelled here");
  doc["vision_config"] = {{"model_type", "gemma4_vision"},
                          {"hidden_size", vision.required_uint("hidden_size")},
                          {"num_hidden_layers", vision.required_uint("num_hidden_layers")},
                          {"intermediate_size", vision.required_uint("intermediate_size")},
                          {"patch_size", vision.required_uint("patch_size")},
                          {"num_channels", vision.uint("num_channels").value_or(3)},
                          {"num_position_embeddings", vision.required_uint("position_embedding_size")},
                          {"head_dim", vision.required_uint("head_dim")}};
  doc["checkpoint_includes"].push_back("vision_tower");
}

/// The language model of a config.json: the top level, or text_config of a multimodal wrapper
/// (whose tower goes into doc).
struct TextModel {
  const json* text;
  std::string prefix;
  std::vector<std::string> vision_defaults;
};

/// Unwraps the multimodal families (Kimi-K2.5, Llama 4, Qwen3.5, Gemma-3, Mistral 3): `mt` becomes the
/// text model's type; the tower, when stated, goes into doc.
TextModel unwrap_multimodal(json& doc, const json& config, HfFields& top, const std::string& source_name, std::string& mt,
                            const std::string& family) {
  if (mt == "kimi_k25") {
    // A kimi_k2 (DeepSeek-V3-shaped) text_config and the MoonViT-3D tower.
    TextModel m{&text_config_of(top, source_name, mt), "text_config.", {}};
    mt = "deepseek_v3";
    set_kimi_k25_vision(doc, top, source_name, family);
    return m;
  }
  if (mt == "llama4") {
    // Llama 4 multimodal: text_config (llama4_text) and the Llama 4 vision tower.
    TextModel m{&text_config_of(top, source_name, mt), "text_config.", {}};
    mt = "llama4_text";
    m.vision_defaults = set_llama4_vision(doc, top, source_name, family);
    return m;
  }
  if (mt == "qwen3_5" || mt == "qwen3_5_moe") {
    // Qwen3.5 multimodal: the language model in text_config, the Qwen3-VL-style tower in vision_config.
    TextModel m{&text_config_of(top, source_name, mt), "text_config.", {}};
    mt += "_text";
    m.vision_defaults = set_qwen3_5_vision(doc, top, source_name, family);
    return m;
  }
  if (mt == "gemma4") {
    // Gemma 4 multimodal: text_config (gemma4_text) and the gemma4_vision tower.
    TextModel m{&text_config_of(top, source_name, mt), "text_config.", {}};
    mt = "gemma4_text";
    set_gemma4_vision(doc, top, source_name, family);
    return m;
  }
  if (mt == "gemma3n") {
    // Gemma 3n multimodal: text_config (gemma3n_text); the MobileNet-V5 and USM audio towers are
    // named architectures the config does not describe, so they are left out of the count.
    TextModel m{&text_config_of(top, source_name, mt), "text_config.", {}};
    mt = "gemma3n_text";
    return m;
  }
  if (mt == "mistral3") {
    // Mistral 3 multimodal (Mistral-Small-3.x, Ministral 3, Devstral Small 2): a mistral or
    // ministral3 text_config (Mistral3Config's default: mistral) and the Pixtral tower.
    TextModel m{&text_config_of(top, source_name, mt), "text_config.", {}};
    HfFields text(*m.text, source_name, "text_config.", mt);
    mt = text.string("model_type").value_or("mistral");
    if (mt != "mistral" && mt != "ministral3")
      text.refuse("model_type", "'" + mt + "' is not a Mistral 3 language model", "expected mistral or ministral3");
    m.vision_defaults = set_pixtral_vision(doc, top, source_name);
    return m;
  }
  if (mt == "gemma3") {
    // Gemma-3 multimodal: the SigLIP tower in vision_config (both may rely on config-class defaults).
    TextModel m{&text_config_of(top, source_name, mt), "text_config.", {}};
    mt = "gemma3_text";
    m.vision_defaults = set_gemma3_vision(doc, top, source_name);
    return m;
  }
  return TextModel{&config, "", {}};
}

/// num_key_value_heads: absent -> the config-class default; null -> heads.
uint64_t kv_heads_of(HfFields& c, const std::string& mt, uint64_t heads) {
  static const std::map<std::string, uint64_t> kv_class_default = {
      {"mistral", 8},    {"ministral3", 8},  {"mixtral", 8},     {"qwen2", 32},          {"qwen3", 32},  {"qwen3_moe", 4},
      {"gemma2", 4},     {"gemma3_text", 4}, {"deepseek_v3", 128},   {"gpt_oss", 8}, {"qwen3_next", 2}, {"gemma3n_text", 2},
      {"nemotron_h", 8}, {"llama4_text", 8}, {"granitemoehybrid", 8}, {"lfm2_moe", 8}};
  if (c.has("num_key_value_heads")) return *c.uint("num_key_value_heads");
  if (!c.present("num_key_value_heads") && kv_class_default.count(mt) > 0)
    return c.uint_or("num_key_value_heads", kv_class_default.at(mt));
  return heads;
}

/// head_dim: some classes fix a default, the rest derive hidden / heads.
uint64_t head_dim_of(HfFields& c, const std::string& mt, uint64_t hidden, uint64_t heads) {
  static const std::map<std::string, uint64_t> head_dim_class_default = {
      {"qwen3", 128},      {"gemma2", 256},       {"gemma3_text", 256},      {"gpt_oss", 64}, {"gemma3n_text", 256},
      {"qwen3_next", 256}, {"qwen3_5_text", 256}, {"qwen3_5_moe_text", 256}, {"llama4_text", 128}, {"ministral3", 128}};
  if (c.has("head_dim")) return *c.uint("head_dim");
  if (head_dim_class_default.count(mt) > 0) return c.uint_or("head_dim", head_dim_class_default.at(mt));
  return heads > 0 ? hidden / heads : 0;
}

/// id and name from _name_or_path (or the file's name), and the model_type read.
void set_identity(json& doc, const HfFields& top, const std::string& source_name, const std::string& mt) {
  const std::optional<std::string> name_or_path = top.string("_name_or_path");
  doc["id"] = name_or_path && !name_or_path->empty() ? "config:" + *name_or_path : "custom";
  doc["name"] =
      name_or_path && !name_or_path->empty() ? *name_or_path : std::filesystem::path(source_name).filename().string() + " (" + mt + ")";
  doc["model_type"] = mt == "ministral3" ? "mistral" : mt;  // a Mistral decoder; YaRN and the query scale add no weights
}

/// Gemma 4: the context as stated, and the full-attention layers' rope_theta (rope_parameters per
/// layer type; the sliding layers' base is informational only, like Gemma-3's local base).
void set_gemma4_positions(json& doc, HfFields& c, const std::string& source_name, const std::string& prefix) {
  doc["max_position_embeddings"] = c.required_uint("max_position_embeddings");
  const json* rp = c.object("rope_parameters");
  if (rp == nullptr) return;
  HfFields rope(*rp, source_name, prefix + "rope_parameters.", "gemma4_text");
  if (const json* full = rope.object("full_attention")) {
    HfFields full_rope(*full, source_name, prefix + "rope_parameters.full_attention.", "gemma4_text");
    if (const auto theta = full_rope.number("rope_theta")) doc["rope_theta"] = *theta;
  }
}

/// max_position_embeddings and rope_theta, with the config classes' defaults (transformers v5
/// nests rope_theta in rope_parameters).
void set_positions(json& doc, HfFields& c, const std::string& mt, const std::string& source_name, const std::string& prefix) {
  if (mt == "gemma4_text") {
    set_gemma4_positions(doc, c, source_name, prefix);
    return;
  }
  static const std::map<std::string, uint64_t> max_pos_default = {
      {"llama", 2048},      {"mistral", 131072},        {"mixtral", 131072},         {"qwen2", 32768},         {"qwen3", 32768},
      {"qwen3_moe", 32768}, {"gemma2", 8192},           {"gemma3_text", 131072},     {"phi3", 4096},           {"deepseek_v3", 4096},
      {"gpt_oss", 131072},  {"minimax_m2", 196608},     {"qwen3_next", 32768},       {"qwen3_5_text", 262144}, {"qwen3_5_moe_text", 262144},
      {"nemotron_h", 4096}, {"llama4_text", 4096 * 32}, {"granitemoehybrid", 131072}, {"lfm2_moe", 128000}, {"gemma3n_text", 32768},
      {"ministral3", 262144}};
  doc["max_position_embeddings"] = c.uint_or("max_position_embeddings", max_pos_default.at(mt));
  static const std::map<std::string, double> rope_default = {
      {"llama", 10000.0},        {"mistral", 10000.0},         {"mixtral", 1e6},          {"qwen2", 10000.0},
      {"qwen3", 10000.0},        {"qwen3_moe", 10000.0},       {"gemma2", 10000.0},       {"gemma3_text", 1e6},
      {"phi3", 10000.0},         {"deepseek_v3", 10000.0},     {"gpt_oss", 150000.0},     {"minimax_m2", 5e6},
      {"qwen3_next", 10000.0},   {"qwen3_5_text", 1e7},        {"qwen3_5_moe_text", 1e7}, {"nemotron_h", 10000.0},
      {"llama4_text", 500000.0}, {"granitemoehybrid", 10000.0}, {"lfm2_moe", 1e6}, {"gemma3n_text", 1e6},
      {"ministral3", 1e6}};
  std::optional<double> theta = c.number("rope_theta");
  if (!theta) {
    if (const json* rp = c.object("rope_parameters")) {  // transformers v5 layout
      HfFields rope(*rp, source_name, prefix + "rope_parameters.", mt);
      theta = rope.number("rope_theta");
    }
  }
  doc["rope_theta"] = theta.value_or(rope_default.at(mt));
}

/// tie_word_embeddings (a wrapper may state it at its top level), then biases and norms: the HF
/// keys where the family has them; the rest are fixed by the architecture and come from
/// model_from_json's trait table.
void set_tying_and_biases(json& doc, const HfFields& c, const HfFields& top, bool nested, const std::string& mt,
                          const std::string& source_name, bool gemma3, bool qwen_hybrid) {
  const bool tied_default = mt == "gemma2" || gemma3 || mt == "gemma3n_text" || mt == "gemma4_text" || mt == "lfm2_moe";
  std::optional<bool> tied = c.boolean("tie_word_embeddings");
  if (!tied && mt == "lfm2_moe") tied = c.boolean("tie_embedding");  // the original LFM2 key
  if (!tied && nested) tied = top.boolean("tie_word_embeddings");
  doc["tie_word_embeddings"] = tied.value_or(tied_default);

  if (mt == "llama" || mt == "qwen3" || mt == "qwen3_moe" || mt == "gemma2" || gemma3 || mt == "gpt_oss" || qwen_hybrid ||
      mt == "llama4_text" || mt == "gemma4_text" || mt == "gemma3n_text") {
    doc["attention_bias"] = c.boolean("attention_bias").value_or(mt == "gpt_oss");
  }
  if (mt == "llama") doc["mlp_bias"] = c.boolean("mlp_bias").value_or(false);
  if (mt == "deepseek_v3" && c.boolean("attention_bias").value_or(false)) {
    throw bad_input(source_name + ": attention_bias true is not supported for deepseek_v3",
                    "every released DeepSeek-V3 config has attention_bias false");
  }
}

/// The dense FFN width (when the class has one); returns it.
uint64_t set_intermediate(json& doc, HfFields& c, const std::string& mt) {
  uint64_t intermediate = 0;
  if (mt == "qwen3_moe") {
    intermediate = c.uint_or("intermediate_size", 6144);
  } else if (mt == "qwen3_next" || mt == "qwen3_5_moe_text") {
    intermediate = c.uint("intermediate_size").value_or(0);  // unused: every layer is MoE unless mlp_only_layers
  } else if (mt == "gemma3n_text") {
    intermediate = gemma3n_intermediate(c);
  } else {
    intermediate = c.required_uint("intermediate_size");
  }
  if (intermediate > 0) doc["intermediate_size"] = intermediate;
  return intermediate;
}

/// The routed experts' count, top-k, width and shared expert per config class; returns the count.
uint64_t set_routed_experts(json& doc, HfFields& c, const std::string& mt, bool qwen_moe) {
  uint64_t experts = 0;
  if (mt == "mixtral") {
    experts = c.uint_or("num_local_experts", 8);
    doc["num_experts_per_tok"] = c.uint_or("num_experts_per_tok", 2);
  } else if (qwen_moe) {
    experts = c.uint_or("num_experts", mt == "qwen3_moe" ? 128 : 512);
    doc["num_experts_per_tok"] = c.uint_or("num_experts_per_tok", mt == "qwen3_moe" ? 8 : 10);
    doc["moe_intermediate_size"] = c.required_uint("moe_intermediate_size");
    if (mt != "qwen3_moe") {
      const uint64_t shared = c.uint("shared_expert_intermediate_size").value_or(0);
      if (shared > 0) doc["shared_expert_intermediate_size"] = shared;
    }
  } else if (mt == "minimax_m2") {
    experts = c.required_uint("num_local_experts");
    doc["num_experts_per_tok"] = c.required_uint("num_experts_per_tok");
    const uint64_t shared = c.uint("shared_intermediate_size").value_or(0);
    if (shared > 0) doc["shared_expert_intermediate_size"] = shared;
    doc["router_score_correction_bias"] = c.boolean("use_routing_bias").value_or(false);
    doc["qk_norm"] = c.boolean("use_qk_norm").value_or(false);
    if (const auto type = c.string("qk_norm_type")) doc["qk_norm_type"] = *type;
  } else if (mt == "deepseek_v3") {
    experts = c.uint_or("n_routed_experts", 256);
    doc["num_experts_per_tok"] = c.uint_or("num_experts_per_tok", 8);
    const uint64_t width = c.required_uint("moe_intermediate_size");
    doc["moe_intermediate_size"] = width;
    const uint64_t shared = c.present("n_shared_experts") ? c.uint("n_shared_experts").value_or(0) : c.uint_or("n_shared_experts", 1);
    if (shared > 0) doc["shared_expert_intermediate_size"] = shared * width;
  } else if (mt == "gpt_oss") {
    experts = c.uint_or("num_local_experts", 128);
    const std::optional<uint64_t> k = c.uint("num_experts_per_tok");
    doc["num_experts_per_tok"] = k ? *k : c.uint_or("experts_per_token", 4);
  }
  return experts;
}

/// Dense FFN width and MoE layout: the routed experts, their width and which layers stay dense,
/// per config class.
void set_experts(json& doc, HfFields& c, const std::string& mt, uint64_t layers) {
  const bool moe_width_is_intermediate = mt == "mixtral" || mt == "gpt_oss" || mt == "minimax_m2";
  const bool qwen_moe = mt == "qwen3_moe" || mt == "qwen3_next" || mt == "qwen3_5_moe_text";
  const uint64_t intermediate = set_intermediate(doc, c, mt);
  const uint64_t experts = set_routed_experts(doc, c, mt, qwen_moe);
  if (moe_width_is_intermediate) doc["moe_intermediate_size"] = intermediate;
  if (experts > 0) {
    doc["num_experts"] = experts;
    std::set<uint64_t> dense;
    if (qwen_moe) {
      // Qwen3MoeDecoderLayer: sparse iff not in mlp_only_layers and (i+1) % decoder_sparse_step == 0.
      const uint64_t step = std::max<uint64_t>(1, c.uint_or("decoder_sparse_step", 1));
      for (uint64_t i : c.uints("mlp_only_layers")) dense.insert(i);
      for (uint64_t i = 0; i < layers; ++i) {
        if ((i + 1) % step != 0) dense.insert(i);
      }
    } else if (mt == "deepseek_v3") {
      // DeepseekV3: MoE iff i >= first_k_dense_replace and i % moe_layer_freq == 0.
      const uint64_t first = c.uint_or("first_k_dense_replace", 3);
      const uint64_t freq = std::max<uint64_t>(1, c.uint_or("moe_layer_freq", 1));
      doc["first_k_dense_replace"] = std::min(first, layers);
      for (uint64_t i = first; i < layers; ++i) {
        if (i % freq != 0) dense.insert(i);
      }
    }
    if (!dense.empty()) doc["mlp_only_layers"] = std::vector<uint64_t>(dense.begin(), dense.end());
  } else {
    doc.erase("num_experts_per_tok");
    doc.erase("moe_intermediate_size");
    doc.erase("shared_expert_intermediate_size");
  }
}

/// DeepSeek-V3's multi-head latent attention ranks, its multi-token-prediction layers and
/// (DeepSeek-V3.2, GLM-5) the DSA indexer.
void set_mla(json& doc, HfFields& c, const std::string& family) {
  const uint64_t q_rank = c.present("q_lora_rank") ? c.uint("q_lora_rank").value_or(0) : c.uint_or("q_lora_rank", 1536);
  if (q_rank > 0) doc["q_lora_rank"] = q_rank;
  doc["kv_lora_rank"] = c.uint_or("kv_lora_rank", 512);
  doc["qk_rope_head_dim"] = c.uint_or("qk_rope_head_dim", 64);
  doc["qk_nope_head_dim"] = c.uint_or("qk_nope_head_dim", 128);
  doc["v_head_dim"] = c.uint_or("v_head_dim", 128);
  const uint64_t mtp = c.uint("num_nextn_predict_layers").value_or(0);
  if (mtp > 0) {
    doc["num_nextn_predict_layers"] = mtp;
    // GLM-5's MTP layer stores no embedding/head copies (its published total shows it).
    doc["checkpoint_includes"].push_back(family == "glm_moe_dsa" ? "mtp_layers_shared_embedding" : "mtp_layers");
  }
  if (family == "deepseek_v32" || family == "glm_moe_dsa") {
    doc["index_n_heads"] = c.required_uint("index_n_heads");
    doc["index_head_dim"] = c.required_uint("index_head_dim");
    doc["index_topk"] = c.required_uint("index_topk");
  }
}

/// compressed-tensors' one weight group (config_groups.group_0) of packed INT weights: Kimi-K2.5's
/// INT4 routed experts.
void set_compressed_tensors(json& doc, const HfFields& qc, const std::string& source_name, const std::string& qprefix,
                            const std::string& mt) {
  const json* groups = qc.object("config_groups");
  const json* group = groups != nullptr && groups->contains("group_0") ? &groups->at("group_0") : nullptr;
  const json* weights = group != nullptr && group->is_object() && group->contains("weights") ? &group->at("weights") : nullptr;
  if (weights == nullptr || !weights->is_object() || groups->size() != 1)
    throw bad_input(source_name + ": " + qprefix + "config_groups: expected one group_0 with its weights",
                    "use the config.json from the model's Hugging Face repository unchanged");
  HfFields w(*weights, source_name, qprefix + "config_groups.group_0.weights.", mt);
  doc["quantization_config"] = {
      {"quant_method", "compressed-tensors"}, {"num_bits", w.required_uint("num_bits")}, {"group_size", w.required_uint("group_size")}};
  doc["checkpoint_includes"].push_back("quantization_scales");
  if (doc["quantization_config"]["num_bits"] == 4 && doc["quantization_config"]["group_size"] == 32) doc["native_format"] = "int4-wo";
}

/// The checkpoint's own quantization (block-scaled or per-tensor FP8, MXFP4, compressed-tensors INT4)
/// as its native format; others noted and ignored.
void set_checkpoint_quantization(json& doc, std::vector<std::string>& notes, const HfFields& top, const HfFields& c, bool nested,
                                 const std::string& source_name, const std::string& prefix, const std::string& mt) {
  const json* quant = top.object("quantization_config");
  if (quant == nullptr && nested) quant = c.object("quantization_config");  // Kimi-K2.5 states it in text_config
  if (quant == nullptr) return;
  const std::string qprefix = (quant == top.object("quantization_config") ? std::string() : prefix) + "quantization_config.";
  HfFields qc(*quant, source_name, qprefix, mt);
  const std::string method = qc.string("quant_method").value_or("");
  if (method == "fp8" && qc.has("weight_block_size")) {
    const std::vector<uint64_t> block = qc.uints("weight_block_size");
    doc["quantization_config"] = {{"quant_method", "fp8"}, {"weight_block_size", block}};
    doc["checkpoint_includes"].push_back("quantization_scales");
    if (block == std::vector<uint64_t>{128, 128}) doc["native_format"] = "fp8-block";
  } else if (method == "fp8" && (qc.string("activation_scheme").value_or("") == "static" ||
                                 qc.string("activation_scheme").value_or("") == "dynamic")) {
    // weight_block_size null: per-tensor scales (Mistral's 2512 releases, static).
    doc["quantization_config"] = {{"quant_method", "fp8"}, {"activation_scheme", *qc.string("activation_scheme")}};
    doc["checkpoint_includes"].push_back("quantization_scales");
    doc["native_format"] = "fp8";
  } else if (method == "mxfp4") {
    doc["quantization_config"] = {{"quant_method", "mxfp4"}};
    doc["checkpoint_includes"].push_back("quantization_scales");
    doc["native_format"] = "mxfp4";
  } else if (method == "compressed-tensors" && qc.string("format").value_or("") == "pack-quantized") {
    set_compressed_tensors(doc, qc, source_name, qprefix, mt);
  } else if (!method.empty()) {
    notes.push_back("quantization_config '" + method + "' ignored: sizes are computed from the architecture.");
  }
}

/// Throws unless `model_type` is imported. DeepSeek-V4's compressed attention, hyper-connections
/// and FP4 experts are modelled for its presets only, and the refusal says so.
void check_model_type(const std::string& model_type, const std::string& source_name) {
  if (model_type == "deepseek_v4") {
    throw bad_input(source_name + ": model_type 'deepseek_v4' cannot be imported from config.json",
                    "use the deepseek-v4-flash or deepseek-v4-pro preset (--model deepseek-v4-flash)");
  }
  const auto& accepted = accepted_types();
  if (std::find(accepted.begin(), accepted.end(), model_type) == accepted.end()) {
    throw bad_input(source_name + ": unsupported model_type '" + model_type + "'", "supported model_type values: " + join(accepted));
  }
}

}  // namespace

ModelSpec model_from_hf_config(const nlohmann::json& config, const std::string& source_name) {
  if (!config.is_object()) {
    throw bad_input(source_name + ": expected a JSON object (a Hugging Face config.json)",
                    "pass the config.json from the model's Hugging Face repository");
  }
  HfFields top(config, source_name, "", "Hugging Face");
  const std::optional<std::string> top_type = top.string("model_type");
  if (!top_type) {
    throw bad_input(source_name + ": missing required field 'model_type'", "supported model_type values: " + join(accepted_types()));
  }
  check_model_type(*top_type, source_name);

  std::string mt = *top_type;
  json doc = json::object();
  // DeepSeek-V3-shaped families: Kimi-K2 (kimi_k2 with DeepseekV3ForCausalLM), DeepSeek-V3.2 and
  // GLM-5 (MLA plus the DSA indexer).
  std::string family = mt;
  if (mt == "kimi_k2" || mt == "deepseek_v32" || mt == "glm_moe_dsa") mt = "deepseek_v3";
  const TextModel model = unwrap_multimodal(doc, config, top, source_name, mt, family);
  const json* text = model.text;
  const std::string& prefix = model.prefix;
  HfFields c(*text, source_name, prefix, mt);

  const uint64_t hidden = c.required_uint("hidden_size");
  const uint64_t layers = c.required_uint("num_hidden_layers");
  if (layers > kMaxModelLayers)  // before the per-layer patterns below are built
    throw bad_input(source_name + ": " + prefix + "num_hidden_layers: " + std::to_string(layers) + " is beyond the limit of " +
                        std::to_string(kMaxModelLayers) + " for any model",
                    "check the config.json against the model's Hugging Face repository");
  const bool gemma3 = mt == "gemma3_text";
  const bool gemma3n = mt == "gemma3n_text";
  const bool qwen_hybrid = mt == "qwen3_next" || mt == "qwen3_5_text" || mt == "qwen3_5_moe_text";
  // Gemma-3 text configs routinely omit these and rely on Gemma3TextConfig.
  const uint64_t heads = gemma3 || gemma3n ? c.uint_or("num_attention_heads", 8) : c.required_uint("num_attention_heads");
  const uint64_t vocab = gemma3 ? c.uint_or("vocab_size", 262208) : gemma3n ? c.uint_or("vocab_size", 262400) : c.required_uint("vocab_size");
  const uint64_t kv_heads = kv_heads_of(c, mt, heads);
  const uint64_t head_dim = head_dim_of(c, mt, hidden, heads);

  set_identity(doc, top, source_name, mt);
  doc["hidden_size"] = hidden;
  doc["num_hidden_layers"] = layers;
  doc["num_attention_heads"] = heads;
  doc["num_key_value_heads"] = kv_heads;
  doc["vocab_size"] = vocab;
  if (mt != "deepseek_v3") doc["head_dim"] = head_dim;
  set_positions(doc, c, mt, source_name, prefix);

  set_tying_and_biases(doc, c, top, text != &config, mt, source_name, gemma3, qwen_hybrid);

  set_experts(doc, c, mt, layers);
  if (mt == "deepseek_v3") set_mla(doc, c, family);
  set_sliding(doc, c, mt, layers);
  if (qwen_hybrid) set_linear_attention(doc, c);
  if (mt == "nemotron_h") set_nemotron_h(doc, c);
  if (mt == "llama4_text") set_llama4(doc, c, layers);
  if (mt == "granitemoehybrid") set_granite_hybrid(doc, c);
  if (mt == "lfm2_moe") set_lfm2_moe(doc, c, layers);
  if (mt == "gemma4_text") set_gemma4(doc, c, source_name, prefix);
  if (gemma3n) set_gemma3n(doc, c);

  std::vector<std::string> notes = {"Imported from " + source_name + " (model_type " + *top_type + ")."};
  if (gemma3n && text != &config) notes.push_back(kGemma3nTowersNote);
  set_checkpoint_quantization(doc, notes, top, c, text != &config, source_name, prefix, mt);

  std::vector<std::string> defaults = top.defaults();
  defaults.insert(defaults.end(), c.defaults().begin(), c.defaults().end());
  defaults.insert(defaults.end(), model.vision_defaults.begin(), model.vision_defaults.end());
  if (!defaults.empty()) notes.push_back("transformers config-class defaults applied: " + join(defaults) + ".");
  doc["notes"] = notes;
  doc["sources"] = json::array();

  std::vector<Problem> problems;
  std::optional<ModelSpec> spec = model_from_json(doc, problems);
  if (!spec) {
    const Problem& p = problems.front();
    const std::string field = p.pointer.empty() ? "" : prefix + p.pointer.substr(1) + ": ";
    throw bad_input(source_name + ": " + field + p.message, "check the config.json against the model's Hugging Face repository");
  }
  return *spec;
}

}  // namespace optadvisor
