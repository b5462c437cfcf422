// SPDX-License-Identifier: MIT
// Model presets: published counts reproduced exactly, GGUF tensor shapes,
// KV-cache elements (hand-worked), active parameters, HF config import.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "optadvisor/catalog/catalog.hpp"
#include "fixtures.hpp"
#include "optadvisor/catalog/model.hpp"

#ifndef OPTADVISOR_SOURCE_DIR
#error "OPTADVISOR_SOURCE_DIR must name the source tree"
#endif

namespace fs = std::filesystem;
using nlohmann::json;
using namespace optadvisor;

namespace {

const fs::path kSourceDir = OPTADVISOR_SOURCE_DIR;

json load_json(const fs::path& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return json::parse(in);
}

std::map<std::string, ModelSpec> load_presets() {
  std::map<std::string, ModelSpec> presets;
  for (const auto& entry : fs::directory_iterator(kSourceDir / "data" / "models")) {
    if (entry.path().extension() != ".json") continue;
    std::vector<Problem> problems;
    std::optional<ModelSpec> spec = model_from_json(load_json(entry.path()), problems);
    INFO(entry.path().filename().string());
    for (const Problem& p : problems) INFO(p.pointer + ": " + p.message);
    REQUIRE(problems.empty());
    REQUIRE(spec);
    CHECK(spec->id + ".json" == entry.path().filename().string());
    presets.emplace(spec->id, *spec);
  }
  return presets;
}

const std::map<std::string, ModelSpec>& presets() {
  static const std::map<std::string, ModelSpec> all = load_presets();
  return all;
}

const ModelSpec& preset(const std::string& id) {
  INFO(id);
  REQUIRE(presets().count(id) == 1);
  return presets().at(id);
}

const Tensor& find_tensor(const std::vector<Tensor>& tensors, const std::string& name) {
  auto it = std::find_if(tensors.begin(), tensors.end(), [&](const Tensor& t) { return t.name == name; });
  INFO(name);
  REQUIRE(it != tensors.end());
  return *it;
}

bool has_tensor(const std::vector<Tensor>& tensors, const std::string& name) {
  return std::any_of(tensors.begin(), tensors.end(), [&](const Tensor& t) { return t.name == name; });
}

void check_shape(const std::vector<Tensor>& tensors, const std::string& name, uint64_t ne0, uint64_t ne1 = 1, uint64_t ne2 = 1) {
  const Tensor& t = find_tensor(tensors, name);
  INFO(name);
  CHECK(t.row_elements == ne0);
  CHECK(t.rows == ne1);
  CHECK(t.slices == ne2);
}

ModelSpec import_fixture(const std::string& file) {
  return model_from_hf_config(load_json(kSourceDir / "tests" / "data" / "hf" / file), file);
}

std::string import_error(const json& config, const std::string& source = "config.json") {
  try {
    model_from_hf_config(config, source);
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::kBadInput);
    CHECK_FALSE(e.hint().empty());
    return e.what();
  }
  FAIL("expected bad_input");
  return {};
}

uint64_t input_embedding(const ModelSpec& s) { return s.vocab_size * s.hidden_size; }

}  // namespace

TEST_CASE("every preset reproduces its published parameter count exactly", "[model]") {
  const std::vector<std::string> required = {
      "llama-2-7b",       "llama-2-13b",  "llama-2-70b",  "llama-3-8b",    "llama-3-70b",     "llama-3.1-8b",    "llama-3.1-70b",
      "llama-3.1-405b",   "llama-3.2-1b", "llama-3.2-3b", "llama-3.3-70b", "mistral-7b-v0.1", "mistral-7b-v0.3", "mixtral-8x7b",
      "qwen2.5-0.5b",     "qwen2.5-1.5b", "qwen2.5-3b",   "qwen2.5-7b",    "qwen2.5-14b",     "qwen2.5-32b",     "qwen2.5-72b",
      "qwen2.5-coder-7b", "qwen3-0.6b",   "qwen3-4b",     "qwen3-8b",      "qwen3-32b",       "qwen3-30b-a3b",   "qwen3-235b-a22b",
      "gemma-2-2b",       "gemma-2-9b",   "gemma-2-27b",  "gemma-3-4b",    "gemma-3-27b",     "phi-3-mini",      "phi-3.5-mini",
      "deepseek-v3",      "gpt-oss-20b",  "gpt-oss-120b", "tinyllama-1.1b", "gemma-4-31b",     "gemma-4-26b-a4b",
      "deepseek-v4-flash", "deepseek-v4-pro"};
  for (const std::string& id : required) CHECK(presets().count(id) == 1);

  for (const auto& [id, spec] : presets()) {
    INFO(id);
    REQUIRE(spec.params_exact > 0);
    CHECK_FALSE(spec.params_source.empty());
    CHECK(spec.sources.size() >= 1);
    // params_unexplained: the documented residue of a preset whose checkpoint holds a tensor the
    // architecture does not say (Kimi-K2); 0 everywhere else.
    CHECK(checkpoint_parameter_count(spec) + spec.params_unexplained == spec.params_exact);
    // FP4-packed experts (DeepSeek-V4) store two weights per counted element.
    CHECK(parameter_count(spec) <= spec.params_exact + packed_expert_elements(spec));

    // Names are unique and kinds match names.
    std::set<std::string> names;
    for (const Tensor& t : model_tensors(spec)) {
      CHECK(names.insert(t.name).second);
      CHECK(t.elements() > 0);
      const std::string prefix = t.layer >= 0 ? "blk." + std::to_string(t.layer) + "." : "";
      const std::string suffix = t.kind.find(".bias") != std::string::npos ? "" : ".weight";
      CHECK(t.name == prefix + t.kind + suffix);
    }

    // to_json round-trips.
    std::vector<Problem> problems;
    std::optional<ModelSpec> again = model_from_json(to_json(spec), problems);
    REQUIRE(again);
    CHECK(parameter_count(*again) == parameter_count(spec));
    CHECK(checkpoint_parameter_count(*again) + again->params_unexplained == spec.params_exact);
    CHECK(kv_cache_elements(*again, 32768, 1) == kv_cache_elements(spec, 32768, 1));
    CHECK(to_json(*again) == to_json(spec));
  }
}

TEST_CASE("aliases resolve to one preset only", "[model]") {
  std::map<std::string, std::string> owner;
  for (const auto& [id, spec] : presets()) {
    CHECK(owner.emplace(id, id).second);
    for (const std::string& alias : spec.aliases) {
      INFO(id + " alias " + alias);
      CHECK(owner.emplace(alias, id).second);
    }
  }
  CHECK(owner.at("deepseek-r1") == "deepseek-v3");
}

TEST_CASE("published totals decompose into explicit checkpoint terms", "[model]") {
  auto term = [](const ModelSpec& s, const std::string& what) {
    for (const CountTerm& t : checkpoint_extra_terms(s)) {
      if (t.what == what) return t.elements;
    }
    FAIL("no term " + what);
    return uint64_t{0};
  };
  // Llama-2-7B: 32 layers x 64-float rotary inv_freq buffers = 2,048.
  CHECK(term(preset("llama-2-7b"), "rotary_inv_freq_buffers") == 2048);
  // Qwen3-0.6B stores lm_head although tied: 151,936 x 1,024 = 155,582,464.
  CHECK(term(preset("qwen3-0.6b"), "untied_output_copy") == 155582464);
  // Gemma-3: SigLIP tower 416,866,032 + projector 1,152 x hidden + 1,152.
  CHECK(term(preset("gemma-3-4b"), "vision_tower") == 416866032 + 2950272);
  CHECK(term(preset("gemma-3-27b"), "vision_tower") == 416866032 + 6194304);
  // DeepSeek-V3: MTP module 11,610,068,224 + its embed/head copies 2 x 926,679,040.
  const ModelSpec& ds = preset("deepseek-v3");
  CHECK(parameter_count(ds) == 671026419200);
  CHECK(term(ds, "mtp_layers") == 11610068224 + 2 * 926679040ULL);
  // FP8 block scales, 128 x 128 blocks. Attention per layer:
  // q_a 12x56=672, q_b 192x12=2304, kv_a 5x56=280, kv_b 256x4=1024, o 56x128=7168 -> 11,448.
  // Dense FFN 3 x 144x56 = 24,192; an expert 3 x 16x56 = 2,688, 257 per MoE layer = 690,816.
  // 3 dense layers x 35,640 + (58 + 1 MTP) MoE layers x 702,264 = 41,540,496.
  CHECK(term(ds, "quantization_scales") == 41540496);
  // gpt-oss-20b: one MXFP4 scale per 32 expert weights:
  // 24 layers x 32 experts x (2880x2880 x 3) / 32 = 597,196,800.
  CHECK(term(preset("gpt-oss-20b"), "quantization_scales") == 597196800);
  CHECK(parameter_count(preset("gpt-oss-20b")) == 20914757184);
  CHECK(parameter_count(preset("gpt-oss-120b")) == 116829156672);
}

TEST_CASE("tensor names and ggml shapes follow convert_hf_to_gguf: dense models", "[model]") {
  SECTION("llama-3.1-8b: GQA, untied") {
    const auto t = model_tensors(preset("llama-3.1-8b"));
    CHECK(t.size() == 1 + 32 * 9 + 2);  // token_embd, 9 per block, output_norm, output
    check_shape(t, "token_embd.weight", 4096, 128256);
    check_shape(t, "output.weight", 4096, 128256);
    check_shape(t, "output_norm.weight", 4096);
    check_shape(t, "blk.0.attn_q.weight", 4096, 4096);
    check_shape(t, "blk.0.attn_k.weight", 4096, 1024);  // 8 KV heads x 128
    check_shape(t, "blk.31.attn_v.weight", 4096, 1024);
    check_shape(t, "blk.0.attn_output.weight", 4096, 4096);
    check_shape(t, "blk.0.ffn_gate.weight", 4096, 14336);
    check_shape(t, "blk.0.ffn_down.weight", 14336, 4096);  // ne0 = input width
    check_shape(t, "blk.0.ffn_norm.weight", 4096);
    CHECK(find_tensor(t, "blk.5.ffn_down.weight").layer == 5);
    CHECK(find_tensor(t, "blk.5.ffn_down.weight").kind == "ffn_down");
  }
  SECTION("tied models have no output tensor") {
    CHECK_FALSE(has_tensor(model_tensors(preset("llama-3.2-1b")), "output.weight"));
    CHECK_FALSE(has_tensor(model_tensors(preset("gemma-2-9b")), "output.weight"));
  }
  SECTION("qwen2.5: q/k/v biases, no o bias") {
    const auto t = model_tensors(preset("qwen2.5-7b"));
    check_shape(t, "blk.0.attn_q.bias", 3584);
    check_shape(t, "blk.0.attn_k.bias", 512);
    check_shape(t, "blk.0.attn_v.bias", 512);
    CHECK(find_tensor(t, "blk.0.attn_q.bias").kind == "attn_q.bias");
    CHECK(find_tensor(t, "blk.0.attn_q.bias").is_vector());
    CHECK_FALSE(has_tensor(t, "blk.0.attn_output.bias"));
  }
  SECTION("qwen3: q/k norms and wide q") {
    const auto t = model_tensors(preset("qwen3-0.6b"));
    check_shape(t, "blk.0.attn_q.weight", 1024, 2048);
    check_shape(t, "blk.0.attn_q_norm.weight", 128);
    check_shape(t, "blk.0.attn_k_norm.weight", 128);
  }
  SECTION("gemma: sandwich norms") {
    const auto t = model_tensors(preset("gemma-3-27b"));
    for (const char* n :
         {"blk.0.attn_norm.weight", "blk.0.post_attention_norm.weight", "blk.0.ffn_norm.weight", "blk.0.post_ffw_norm.weight"}) {
      check_shape(t, n, 5376);
    }
    check_shape(t, "blk.0.attn_q_norm.weight", 128);
    check_shape(t, "token_embd.weight", 5376, 262208);
  }
  SECTION("phi-3: fused attn_qkv and ffn_up") {
    const auto t = model_tensors(preset("phi-3-mini"));
    check_shape(t, "blk.0.attn_qkv.weight", 3072, 9216);
    check_shape(t, "blk.0.ffn_up.weight", 3072, 16384);
    check_shape(t, "blk.0.ffn_down.weight", 8192, 3072);
    CHECK_FALSE(has_tensor(t, "blk.0.attn_q.weight"));
    CHECK_FALSE(has_tensor(t, "blk.0.ffn_gate.weight"));
  }
}

TEST_CASE("tensor names and ggml shapes follow convert_hf_to_gguf: mixture-of-experts models", "[model]") {
  SECTION("mixtral: merged experts and router") {
    const auto t = model_tensors(preset("mixtral-8x7b"));
    check_shape(t, "blk.0.ffn_gate_inp.weight", 4096, 8);
    check_shape(t, "blk.0.ffn_gate_exps.weight", 4096, 14336, 8);
    check_shape(t, "blk.0.ffn_up_exps.weight", 4096, 14336, 8);
    check_shape(t, "blk.0.ffn_down_exps.weight", 14336, 4096, 8);
    CHECK_FALSE(has_tensor(t, "blk.0.ffn_gate.weight"));
  }
  SECTION("deepseek-v3: MLA with split k_b/v_b, dense then MoE layers, shared expert") {
    const auto t = model_tensors(preset("deepseek-v3"));
    check_shape(t, "blk.0.attn_q_a.weight", 7168, 1536);
    check_shape(t, "blk.0.attn_q_a_norm.weight", 1536);
    check_shape(t, "blk.0.attn_q_b.weight", 1536, 128 * 192);
    check_shape(t, "blk.0.attn_kv_a_mqa.weight", 7168, 576);
    check_shape(t, "blk.0.attn_kv_a_norm.weight", 512);
    check_shape(t, "blk.0.attn_k_b.weight", 128, 512, 128);
    check_shape(t, "blk.0.attn_v_b.weight", 512, 128, 128);
    check_shape(t, "blk.0.attn_output.weight", 16384, 7168);
    CHECK_FALSE(has_tensor(t, "blk.0.attn_kv_b.weight"));
    check_shape(t, "blk.2.ffn_gate.weight", 7168, 18432);
    CHECK_FALSE(has_tensor(t, "blk.3.ffn_gate.weight"));
    check_shape(t, "blk.3.ffn_gate_inp.weight", 7168, 256);
    check_shape(t, "blk.3.exp_probs_b.bias", 256);
    check_shape(t, "blk.3.ffn_gate_exps.weight", 7168, 2048, 256);
    check_shape(t, "blk.3.ffn_down_exps.weight", 2048, 7168, 256);
    check_shape(t, "blk.3.ffn_gate_shexp.weight", 7168, 2048);
    check_shape(t, "blk.60.ffn_down_shexp.weight", 2048, 7168);
    CHECK_FALSE(has_tensor(t, "blk.61.attn_norm.weight"));  // MTP block is not in GGUF
  }
  SECTION("gpt-oss: biases, sinks, expert biases, post_attention_norm") {
    const auto t = model_tensors(preset("gpt-oss-20b"));
    check_shape(t, "blk.0.attn_q.weight", 2880, 4096);
    check_shape(t, "blk.0.attn_q.bias", 4096);
    check_shape(t, "blk.0.attn_k.bias", 512);
    check_shape(t, "blk.0.attn_output.weight", 4096, 2880);
    check_shape(t, "blk.0.attn_output.bias", 2880);
    check_shape(t, "blk.0.attn_sinks.weight", 64);
    check_shape(t, "blk.0.post_attention_norm.weight", 2880);
    CHECK_FALSE(has_tensor(t, "blk.0.ffn_norm.weight"));
    check_shape(t, "blk.0.ffn_gate_inp.weight", 2880, 32);
    check_shape(t, "blk.0.ffn_gate_inp.bias", 32);
    check_shape(t, "blk.0.ffn_gate_exps.weight", 2880, 2880, 32);
    check_shape(t, "blk.0.ffn_gate_exps.bias", 2880, 32);
    check_shape(t, "blk.0.ffn_down_exps.bias", 2880, 32);
    CHECK(find_tensor(t, "blk.0.ffn_up_exps.bias").kind == "ffn_up_exps.bias");
  }
}

TEST_CASE("KV-cache elements, hand-worked", "[model]") {
  SECTION("GQA, every layer full") {
    const ModelSpec& s = preset("llama-3.1-8b");
    // 2 (K and V) x 32 layers x 8 KV heads x 128 = 65,536 elements per token.
    CHECK(kv_cache_elements_per_token_full(s) == 65536);
    // 8,192 tokens x 65,536 = 536,870,912.
    CHECK(kv_cache_elements(s, 8192, 1) == 536870912);
    // 4 sequences x 4,096 tokens x 65,536 = 1,073,741,824.
    CHECK(kv_cache_elements(s, 4096, 4) == 1073741824);
    const KvShape k = kv_shape(s);
    CHECK(k.full_layers == 32);
    CHECK(k.sliding_layers == 0);
    CHECK_FALSE(k.latent);
  }
  SECTION("MHA") {
    // Llama-2-7B: 2 x 32 x 32 x 128 = 262,144 per token.
    CHECK(kv_cache_elements_per_token_full(preset("llama-2-7b")) == 262144);
  }
  SECTION("MLA caches the latent plus the rotary key, no factor 2") {
    const ModelSpec& s = preset("deepseek-v3");
    // 61 layers x (512 + 64) = 35,136 per token.
    CHECK(kv_cache_elements_per_token_full(s) == 35136);
    // 32,768 tokens x 35,136 = 1,151,336,448.
    CHECK(kv_cache_elements(s, 32768, 1) == 1151336448);
    CHECK(kv_shape(s).latent);
  }
  SECTION("Gemma-2 alternating 4096 window") {
    const ModelSpec& s = preset("gemma-2-9b");
    // Per layer 2 x 8 x 256 = 4,096; 42 layers -> 172,032 per token.
    CHECK(kv_cache_elements_per_token_full(s) == 172032);
    const KvShape k = kv_shape(s);
    CHECK(k.full_layers == 21);
    CHECK(k.sliding_layers == 21);
    CHECK(is_sliding_layer(s, 0));
    CHECK_FALSE(is_sliding_layer(s, 1));
    // 8,192 context: 21 full x 8,192 x 4,096 = 704,643,072
    //              + 21 sliding x 4,096 x 4,096 = 352,321,536  -> 1,056,964,608.
    CHECK(kv_cache_elements(s, 8192, 1) == 1056964608);
    // Full-context engines: 42 x 8,192 x 4,096 = 1,409,286,144.
    CHECK(kv_cache_elements(s, 8192, 1, KvWindowPolicy::kFullContext) == 1409286144);
    // Below the window both agree: 42 x 2,048 x 4,096 = 352,321,536.
    CHECK(kv_cache_elements(s, 2048, 1) == 352321536);
    CHECK(kv_cache_elements(s, 2048, 1, KvWindowPolicy::kFullContext) == 352321536);
  }
  SECTION("Gemma-3 5:1 pattern, 1024 window") {
    const ModelSpec& s = preset("gemma-3-27b");
    const KvShape k = kv_shape(s);
    CHECK(k.full_layers == 10);  // layers 5, 11, ..., 59
    CHECK(k.sliding_layers == 52);
    CHECK_FALSE(is_sliding_layer(s, 5));
    CHECK(is_sliding_layer(s, 6));
    // Per layer 2 x 16 x 128 = 4,096. 32,768 context:
    // 10 x 32,768 x 4,096 = 1,342,177,280 + 52 x 1,024 x 4,096 = 218,103,808 -> 1,560,281,088.
    CHECK(kv_cache_elements(s, 32768, 1) == 1560281088);
    CHECK(kv_shape(preset("gemma-3-4b")).full_layers == 5);
  }
  SECTION("gpt-oss alternating 128-token window") {
    const ModelSpec& s = preset("gpt-oss-20b");
    // Per layer 2 x 8 x 64 = 1,024. 8,192 context, batch 2:
    // (12 x 8,192 + 12 x 128) x 1,024 = 102,236,160 per sequence -> 204,472,320.
    CHECK(kv_cache_elements(s, 8192, 2) == 204472320);
    CHECK(kv_cache_elements_per_token_full(s) == 24576);
  }
  SECTION("Mistral-7B-v0.1: every layer slides over 4096") {
    const ModelSpec& s = preset("mistral-7b-v0.1");
    // 32 x 4,096 x 2,048 = 268,435,456 at any context >= 4,096.
    CHECK(kv_cache_elements(s, 32768, 1) == 268435456);
    // llama.cpp (llama arch) ignores the window: 32 x 32,768 x 2,048 = 2,147,483,648.
    CHECK(kv_cache_elements(s, 32768, 1, KvWindowPolicy::kFullContext) == 2147483648ULL);
    CHECK(kv_cache_elements(preset("mistral-7b-v0.3"), 32768, 1) == 2147483648ULL);
  }
  SECTION("a window wider than the context never binds") {
    // Phi-3.5-mini window 262,144: 32 x 131,072 x (2 x 32 x 96 = 6,144) = 25,769,803,776.
    CHECK(kv_cache_elements(preset("phi-3.5-mini"), 131072, 1) == 25769803776ULL);
  }
}

TEST_CASE("active parameters per token against published figures", "[model]") {
  // Mixtral: 46,702,792,704 - 32 layers x 6 idle experts x 3 x 4,096 x 14,336
  // = 12,879,925,248; Mistral publishes "12.9B active" (embeddings included).
  const ModelSpec& mixtral = preset("mixtral-8x7b");
  CHECK(active_parameter_count(mixtral) == 12879925248);
  CHECK(active_parameter_count(mixtral) >= 12850000000ULL);
  CHECK(active_parameter_count(mixtral) < 12950000000ULL);

  // Qwen3-30B-A3B: 3,353,032,704; Qwen publishes "3.3B activated" (truncated).
  const ModelSpec& q30 = preset("qwen3-30b-a3b");
  CHECK(active_parameter_count(q30) == 3353032704);
  CHECK(active_parameter_count(q30) >= 3300000000ULL);
  CHECK(active_parameter_count(q30) < 3400000000ULL);

  // Qwen3-235B-A22B: 22,190,763,520 ("22B").
  CHECK(active_parameter_count(preset("qwen3-235b-a22b")) == 22190763520);

  // DeepSeek-V3: 37,552,297,472; the README's "37B" matches the count without
  // the input embedding lookup (926,679,040): 36,625,618,432.
  const ModelSpec& ds = preset("deepseek-v3");
  CHECK(active_parameter_count(ds) == 37552297472);
  const uint64_t ds_compute = active_parameter_count(ds) - input_embedding(ds);
  CHECK(ds_compute >= 36500000000ULL);
  CHECK(ds_compute < 37500000000ULL);

  // gpt-oss: published "3.6B active" / "5.1B active" exclude the input embedding
  // (201,088 x 2,880 = 579,133,440): 3,608,307,264 and 5,132,849,472.
  const ModelSpec& g20 = preset("gpt-oss-20b");
  const ModelSpec& g120 = preset("gpt-oss-120b");
  CHECK(active_parameter_count(g20) == 4187440704);
  CHECK(active_parameter_count(g120) == 5711982912);
  CHECK(active_parameter_count(g20) - input_embedding(g20) == 3608307264);
  CHECK(active_parameter_count(g120) - input_embedding(g120) == 5132849472);
  CHECK(active_parameter_count(g20) - input_embedding(g20) >= 3550000000ULL);
  CHECK(active_parameter_count(g20) - input_embedding(g20) < 3650000000ULL);
  CHECK(active_parameter_count(g120) - input_embedding(g120) >= 5050000000ULL);
  CHECK(active_parameter_count(g120) - input_embedding(g120) < 5150000000ULL);

  // Dense models: active == total.
  CHECK(active_parameter_count(preset("llama-3.1-8b")) == parameter_count(preset("llama-3.1-8b")));
}

TEST_CASE("Hugging Face config.json import matches the presets", "[model]") {
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"llama-3.1-8b.json", "llama-3.1-8b"},         {"qwen3-30b-a3b.json", "qwen3-30b-a3b"},
      {"gemma-3-27b-it.json", "gemma-3-27b"},        {"gemma-3-4b-it.json", "gemma-3-4b"},
      {"deepseek-v3.json", "deepseek-v3"},           {"gpt-oss-20b.json", "gpt-oss-20b"},
      {"phi-3-mini-4k-instruct.json", "phi-3-mini"}, {"qwen2.5-7b.json", "qwen2.5-7b"},
      {"gemma-2-9b-it.json", "gemma-2-9b"},          {"mistral-7b-instruct-v0.1.json", "mistral-7b-v0.1"},
      {"mixtral-8x7b-v0.1.json", "mixtral-8x7b"},   {"gemma-4-31b-it.json", "gemma-4-31b"},
      {"gemma-4-26b-a4b-it.json", "gemma-4-26b-a4b"}, {"ministral-3-14b-instruct-2512.json", "ministral-3-14b"},
      {"devstral-2-123b-instruct-2512.json", "devstral-2-123b"}};
  for (const auto& [file, id] : pairs) {
    INFO(file);
    const ModelSpec imported = import_fixture(file);
    const ModelSpec& p = preset(id);
    CHECK(parameter_count(imported) == parameter_count(p));
    CHECK(active_parameter_count(imported) == active_parameter_count(p));
    CHECK(kv_cache_elements(imported, 65536, 1) == kv_cache_elements(p, 65536, 1));
    CHECK(model_tensors(imported).size() == model_tensors(p).size());
    CHECK(imported.model_type == p.model_type);
  }
  // Where the checkpoint extras follow from config.json (vision tower, MTP
  // layer, FP8 or MXFP4 scales) the import reproduces the published total too.
  CHECK(checkpoint_parameter_count(import_fixture("gemma-3-27b-it.json")) == 27432406640);
  CHECK(checkpoint_parameter_count(import_fixture("gemma-3-4b-it.json")) == 4300079472);
  CHECK(checkpoint_parameter_count(import_fixture("deepseek-v3.json")) == 684531386000);
  CHECK(checkpoint_parameter_count(import_fixture("gpt-oss-20b.json")) == 21511953984);
  CHECK(checkpoint_parameter_count(import_fixture("gemma-4-31b-it.json")) == 32682372656);
  CHECK(checkpoint_parameter_count(import_fixture("gemma-4-26b-a4b-it.json")) == 26544131376);
  // Ministral 3 14B (mistral3 wrapper): text 13,506,073,600 + Pixtral tower and projector 438,958,080
  // + 40 layers x 7 Linears x (weight_scale + activation_scale) 560 = the published 13,945,032,240.
  CHECK(checkpoint_parameter_count(import_fixture("ministral-3-14b-instruct-2512.json")) == 13945032240);
  CHECK(import_fixture("ministral-3-14b-instruct-2512.json").native_format == "fp8");
  // Devstral 2 123B (text-only ministral3): 125,025,988,608 + 88 x 84,480 block scales
  // (96x96 x 2 + 8x96 x 2 + 224x96 x 3 per layer) = 125,033,422,848; the preset's, not a published total.
  CHECK(checkpoint_parameter_count(import_fixture("devstral-2-123b-instruct-2512.json")) == 125033422848);
  CHECK(import_fixture("devstral-2-123b-instruct-2512.json").native_format == "fp8-block");
  CHECK(import_fixture("devstral-2-123b-instruct-2512.json").sliding_window == 0);  // Ministral3Config: None
  // The checkpoint's quantization_config names its native format: the default weights where an engine runs it.
  CHECK(import_fixture("deepseek-v3.json").native_format == "fp8-block");  // fp8, weight_block_size [128, 128]
  CHECK(import_fixture("gpt-oss-20b.json").native_format == "mxfp4");
  CHECK(import_fixture("llama-3.1-8b.json").native_format.empty());
  CHECK(preset("gpt-oss-120b").native_format == "mxfp4");
  CHECK(preset("deepseek-v3").native_format == "fp8-block");
  // Per-tensor FP8 (weight_block_size null, static activations): two scalars per decoder Linear.
  json fp8 = load_json(kSourceDir / "tests" / "data" / "hf" / "llama-3.1-8b.json");
  fp8["quantization_config"] = {{"quant_method", "fp8"}, {"activation_scheme", "static"}, {"weight_block_size", nullptr}};
  const ModelSpec per_tensor = model_from_hf_config(fp8, "fp8.json");
  CHECK(per_tensor.native_format == "fp8");
  CHECK(checkpoint_parameter_count(per_tensor) == parameter_count(per_tensor) + 32 * 7 * 2);

  SECTION("ids and defaults") {
    const ModelSpec llama = import_fixture("llama-3.1-8b.json");
    CHECK(llama.id == "custom");
    CHECK(llama.head_dim == 128);  // absent: hidden / heads
    const ModelSpec phi = import_fixture("phi-3-mini-4k-instruct.json");
    CHECK(phi.id == "config:Phi-3-mini-4k-instruct");
    // Gemma-3-4B's text_config omits heads, KV heads, head_dim and vocab.
    const ModelSpec g4 = import_fixture("gemma-3-4b-it.json");
    CHECK(g4.num_attention_heads == 8);
    CHECK(g4.num_key_value_heads == 4);
    CHECK(g4.head_dim == 256);
    CHECK(g4.vocab_size == 262208);
    CHECK(g4.tie_word_embeddings);
    CHECK(g4.sliding_window_pattern == 6);
    const bool noted = std::any_of(g4.notes.begin(), g4.notes.end(),
                                   [](const std::string& n) { return n.find("text_config.vocab_size=262208") != std::string::npos; });
    CHECK(noted);
    // Qwen2.5 states sliding_window but use_sliding_window is false.
    CHECK(import_fixture("qwen2.5-7b.json").sliding_window == 0);
    CHECK(import_fixture("qwen2.5-7b.json").qkv_bias);
  }
  SECTION("num_key_value_heads: absent takes the class default, null means MHA") {
    json cfg = load_json(kSourceDir / "tests" / "data" / "hf" / "mistral-7b-instruct-v0.1.json");
    cfg.erase("num_key_value_heads");
    CHECK(model_from_hf_config(cfg, "m.json").num_key_value_heads == 8);  // MistralConfig default
    cfg["num_key_value_heads"] = nullptr;
    CHECK(model_from_hf_config(cfg, "m.json").num_key_value_heads == 32);
    cfg.erase("sliding_window");
    CHECK(model_from_hf_config(cfg, "m.json").sliding_window == 4096);  // MistralConfig default
  }
}

TEST_CASE("bad config.json files are refused with the field named", "[model]") {
  const json good = load_json(kSourceDir / "tests" / "data" / "hf" / "llama-3.1-8b.json");

  json missing = good;
  missing.erase("hidden_size");
  CHECK(import_error(missing, "Llama/config.json") == "Llama/config.json: missing required field 'hidden_size'");

  json wrong = good;
  wrong["num_hidden_layers"] = "32";
  CHECK(import_error(wrong) == "config.json: field 'num_hidden_layers' must be a non-negative integer, got string \"32\"");

  json negative = good;
  negative["intermediate_size"] = -1;
  CHECK(import_error(negative) == "config.json: field 'intermediate_size' must be a non-negative integer, got number -1");

  json wrong_bool = good;
  wrong_bool["tie_word_embeddings"] = "no";
  CHECK(import_error(wrong_bool) == "config.json: field 'tie_word_embeddings' must be true or false, got string \"no\"");

  json unsupported = good;
  unsupported["model_type"] = "falcon";
  CHECK(import_error(unsupported) == "config.json: unsupported model_type 'falcon'");
  try {
    model_from_hf_config(unsupported, "config.json");
  } catch (const Error& e) {
    CHECK(std::string(e.hint()).find("llama, mistral, mixtral") != std::string::npos);
  }

  json no_type = good;
  no_type.erase("model_type");
  CHECK(import_error(no_type) == "config.json: missing required field 'model_type'");

  json indivisible = good;
  indivisible["num_key_value_heads"] = 5;
  CHECK(import_error(indivisible) ==
        "config.json: num_key_value_heads: num_attention_heads (32) must be a multiple of num_key_value_heads (5)");

  json gemma = load_json(kSourceDir / "tests" / "data" / "hf" / "gemma-3-27b-it.json");
  json nested = gemma;
  nested["text_config"].erase("hidden_size");
  CHECK(import_error(nested) == "config.json: missing required field 'text_config.hidden_size'");
  json no_text = gemma;
  no_text.erase("text_config");
  CHECK(import_error(no_text) == "config.json: missing required field 'text_config'");

  json mistral3 = load_json(kSourceDir / "tests" / "data" / "hf" / "ministral-3-14b-instruct-2512.json");
  mistral3["text_config"]["model_type"] = "llama";
  CHECK(import_error(mistral3) == "config.json: text_config.model_type: 'llama' is not a Mistral 3 language model");
  mistral3["text_config"]["model_type"] = "ministral3";
  mistral3["vision_config"]["model_type"] = "siglip_vision_model";
  CHECK(import_error(mistral3) == "config.json: vision_config.model_type: 'siglip_vision_model' is not modelled");
  mistral3["vision_config"]["model_type"] = "pixtral";
  mistral3["multimodal_projector_bias"] = true;
  CHECK(import_error(mistral3) == "config.json: multimodal_projector_bias: true is not modelled");

  json moe = load_json(kSourceDir / "tests" / "data" / "hf" / "qwen3-30b-a3b.json");
  moe.erase("moe_intermediate_size");
  CHECK(import_error(moe) == "config.json: missing required field 'moe_intermediate_size'");

  CHECK(import_error(json::array()) == "config.json: expected a JSON object (a Hugging Face config.json)");
}

TEST_CASE("model_from_json reports semantic problems with pointers", "[model]") {
  const json base = to_json(preset("qwen3-30b-a3b"));
  auto problems_of = [](const json& doc) {
    std::vector<Problem> problems;
    CHECK_FALSE(model_from_json(doc, problems));
    return problems;
  };
  auto has = [](const std::vector<Problem>& problems, const std::string& pointer, const std::string& message) {
    return std::any_of(problems.begin(), problems.end(),
                       [&](const Problem& p) { return p.pointer == pointer && p.message == message && p.file.empty(); });
  };
  // `base` with field `name` set to `value`.
  auto with = [&](const std::string& name, const json& value) {
    json doc = base;
    doc[name] = value;
    return doc;
  };

  CHECK(has(problems_of(with("num_experts_per_tok", 200)), "/num_experts_per_tok", "num_experts_per_tok (200) exceeds num_experts (128)"));

  CHECK(has(problems_of(with("num_key_value_heads", 5)), "/num_key_value_heads",
            "num_attention_heads (32) must be a multiple of num_key_value_heads (5)"));

  json pattern = to_json(preset("gpt-oss-20b"));
  pattern["layer_types"].erase(0);
  CHECK(has(problems_of(pattern), "/layer_types", "has 23 entries for 24 layers"));

  CHECK(has(problems_of(with("hidden_sise", 1)), "/hidden_sise", "unknown field 'hidden_sise'"));

  // Ranges come before any per-layer loop; each names its field.
  // An intermediate size of 2^60 wrapped to a 2.39B-parameter model before.
  CHECK(has(problems_of(with("intermediate_size", uint64_t{1} << 60)), "/intermediate_size",
            "1152921504606846976 is beyond the limit of 16777216 for any model"));
  // 10^15 layers hung building the tensor list.
  CHECK(has(problems_of(with("num_hidden_layers", uint64_t{1000000000000000})), "/num_hidden_layers",
            "1000000000000000 is beyond the limit of 10000 for any model"));
  CHECK(has(problems_of(with("num_experts", 65537)), "/num_experts", "65537 is beyond the limit of 65536 for any model"));
  CHECK(has(problems_of(with("num_attention_heads", 65537)), "/num_attention_heads", "65537 is beyond the limit of 65536 for any model"));
  // Every dimension in range, the product not: 128 experts x 2^24 x 2^24 = 2^55 elements in one
  // expert tensor alone (2^50 is the limit), which wrapped silently in uint64 products before.
  json product = base;
  product["hidden_size"] = uint64_t{1} << 24;
  product["moe_intermediate_size"] = uint64_t{1} << 24;
  const auto overflow = problems_of(product);
  REQUIRE(overflow.size() == 1);
  CHECK(overflow.front().pointer.empty());
  CHECK_THAT(overflow.front().message, Catch::Contains("parameters, beyond the limit of 1.13e+15 for any model"));
  CHECK_THAT(overflow.front().message, Catch::Contains("[16777216 x 16777216 x 128], has 3.6e+16"));

  CHECK(has(problems_of(with("hidden_size", "2048")), "/hidden_size", "expected a non-negative integer"));

  json missing = base;
  missing.erase("vocab_size");
  CHECK(has(problems_of(missing), "/vocab_size", "missing required field 'vocab_size'"));

  json mla = to_json(preset("deepseek-v3"));
  mla.erase("v_head_dim");
  CHECK(has(problems_of(mla), "/kv_lora_rank", "MLA needs qk_rope_head_dim, qk_nope_head_dim and v_head_dim as well"));

  json includes = to_json(preset("llama-3.1-8b"));
  includes["checkpoint_includes"] = {"vision_tower"};
  CHECK(has(problems_of(includes), "/checkpoint_includes", "vision_tower needs vision_config"));

  json type = base;
  type["model_type"] = "falcon";
  CHECK(problems_of(type).front().pointer == "/model_type");
}

TEST_CASE("model_from_params builds a Llama-like shape near the request", "[model]") {
  const ParamsShape& shape = fixtures::catalog().params_shape();
  // data/shapes/params-default.json: Llama-3's vocabulary, head_dim 128, 8 KV heads.
  CHECK(shape.vocab_size == 128256);
  CHECK(shape.head_dim == 128);
  CHECK(shape.max_kv_heads == 8);
  for (double params : {1e8, 5e8, 1e9, 3e9, 7e9, 8e9, 13e9, 34e9, 70e9, 405e9, 1e12, 5e12}) {
    INFO(params);
    const ModelSpec s = model_from_params(params, shape);
    const double got = static_cast<double>(parameter_count(s));
    CHECK(got == Approx(params).epsilon(0.01));
    CHECK(s.model_type == "llama");
    CHECK(s.head_dim == 128);
    CHECK(s.num_attention_heads * 128 == s.hidden_size);
    CHECK(s.num_attention_heads % s.num_key_value_heads == 0);
    CHECK(s.intermediate_size % 256 == 0);
    CHECK(s.notes.size() >= 3);
    CHECK(s.tie_word_embeddings == (params < 4e9));
    std::vector<Problem> problems;
    CHECK(model_from_json(to_json(s), problems));
  }
  // Near Llama-3-8B's shape for 8e9: hidden 4096, 32 layers.
  const ModelSpec eight = model_from_params(8e9, shape);
  CHECK(eight.hidden_size == 4096);
  CHECK(eight.num_hidden_layers == 32);
  CHECK_THROWS_WITH(model_from_params(1e6, shape), Catch::Contains("cannot build a model shape"));
  CHECK_THROWS_AS(model_from_params(1e14, shape), Error);
}

TEST_CASE("the --params shape is data, not a model preset", "[catalog][model]") {
  const ParamsShape& shape = fixtures::catalog().params_shape();
  CHECK(shape.id == "params-default");
  CHECK(shape.ffn_ratio == 3.5);
  CHECK(shape.rope_theta == 500000.0);
  // data/shapes/, not data/models/: no preset of that name.
  for (const auto& m : fixtures::catalog().models()) CHECK(m.id != "params-default");
  const ModelSpec built = model_from_params(8e9, shape);
  CHECK(built.rope_theta == 500000.0);
  CHECK(built.max_position_embeddings == 131072);
  CHECK(built.vocab_size == 128256);
}
