// SPDX-License-Identifier: MIT
// GGUF header reader: tiny models written in memory with exact bytes worked
// by hand, architecture fields per family, and hostile or broken files, each
// asserting the exit code and the message.
#include "optadvisor/readers/gguf.hpp"

#include <catch2/catch.hpp>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "optadvisor/catalog/catalog.hpp"
#include "fixtures.hpp"

namespace fs = std::filesystem;
using namespace optadvisor;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

const QuantDb& db() { return fixtures::catalog().quant(); }

// GGUF value types and the ggml types the tests use.
constexpr uint32_t kU8 = 0, kU32 = 4, kI32 = 5, kF32 = 6, kString = 8, kArray = 9, kU64 = 10;
constexpr uint32_t kTypeF32 = 0, kTypeQ4_0 = 2, kTypeQ8_0 = 8;

/// Little-endian GGUF fields appended to a string.
struct Bytes {
  std::string out;
  Bytes& u8(uint8_t v) {
    out.push_back(static_cast<char>(v));
    return *this;
  }
  Bytes& u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) u8(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  Bytes& u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) u8(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  Bytes& f32(float v) {
    uint32_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    return u32(bits);
  }
  Bytes& str(const std::string& s) {
    u64(s.size());
    out += s;
    return *this;
  }
  Bytes& zeros(std::size_t n) {
    out.append(n, '\0');
    return *this;
  }
};

/// Bytes of `elements` weights of a ggml type, from the block structs:
/// F32 4 per weight, Q4_0 18 per 32 (fp16 scale + 16 nibble bytes), Q8_0 34 per 32 (fp16 scale + 32 int8).
uint64_t tensor_bytes(uint32_t type, uint64_t elements) {
  switch (type) {
    case kTypeF32: return 4 * elements;
    case kTypeQ4_0: return elements / 32 * 18;
    case kTypeQ8_0: return elements / 32 * 34;
    default: {
      const GgmlType* t = db().ggml_type_by_id(type);
      REQUIRE(t != nullptr);
      return t->bytes_for(elements);
    }
  }
}

uint64_t align_up(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

/// Writes a whole GGUF file: header, metadata, tensor table, padding and zeroed tensor data.
class GgufBuilder {
 public:
  GgufBuilder& kv_u32(const std::string& key, uint32_t v) { return add(key, kU32, Bytes().u32(v)); }
  GgufBuilder& kv_u64(const std::string& key, uint64_t v) { return add(key, kU64, Bytes().u64(v)); }
  GgufBuilder& kv_f32(const std::string& key, float v) { return add(key, kF32, Bytes().f32(v)); }
  GgufBuilder& kv_str(const std::string& key, const std::string& v) { return add(key, kString, Bytes().str(v)); }
  /// An array of `count` strings "tok0", "tok1", ... (the tokenizer's shape).
  GgufBuilder& kv_str_array(const std::string& key, uint64_t count) {
    Bytes b;
    b.u32(kString).u64(count);
    for (uint64_t i = 0; i < count; ++i) b.str("tok" + std::to_string(i));
    return add(key, kArray, b);
  }
  GgufBuilder& kv_f32_array(const std::string& key, uint64_t count) {
    Bytes b;
    b.u32(kF32).u64(count);
    for (uint64_t i = 0; i < count; ++i) b.f32(0.0f);
    return add(key, kArray, b);
  }
  GgufBuilder& kv_i32_array(const std::string& key, const std::vector<int32_t>& values) {
    Bytes b;
    b.u32(kI32).u64(values.size());
    for (int32_t v : values) b.u32(static_cast<uint32_t>(v));
    return add(key, kArray, b);
  }
  GgufBuilder& tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type) {
    tensors_.push_back({name, std::move(dims), type});
    return *this;
  }
  GgufBuilder& alignment(uint32_t a) {
    alignment_ = a;
    return kv_u32("general.alignment", a);
  }

  std::string build(uint32_t version = 3) {
    Bytes b;
    b.out = "GGUF";
    b.u32(version).u64(tensors_.size()).u64(kv_count_);
    b.out += kvs_.out;
    uint64_t offset = 0;
    std::vector<uint64_t> sizes;
    for (const auto& t : tensors_) {
      b.str(t.name).u32(static_cast<uint32_t>(t.dims.size()));
      uint64_t elements = 1;
      for (uint64_t d : t.dims) {
        b.u64(d);
        elements *= d;
      }
      b.u32(t.type).u64(offset);
      sizes.push_back(tensor_bytes(t.type, elements));
      offset += align_up(sizes.back(), alignment_);
    }
    data_offset_ = align_up(b.out.size(), alignment_);
    b.zeros(data_offset_ - b.out.size());
    b.zeros(offset);  // every tensor's data, padded to the alignment
    return b.out;
  }
  uint64_t data_offset() const { return data_offset_; }

 private:
  struct TensorSpec {
    std::string name;
    std::vector<uint64_t> dims;
    uint32_t type;
  };
  GgufBuilder& add(const std::string& key, uint32_t type, const Bytes& value) {
    kvs_.str(key).u32(type);
    kvs_.out += value.out;
    ++kv_count_;
    return *this;
  }

  Bytes kvs_;
  uint64_t kv_count_ = 0;
  std::vector<TensorSpec> tensors_;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
};

/// Metadata of a 2-layer llama: hidden 64, 4 heads of 16, 2 KV heads, FFN 128, vocab 100.
GgufBuilder tiny_llama_metadata(uint32_t file_type = 2) {
  GgufBuilder b;
  b.kv_str("general.architecture", "llama")
      .kv_str("general.name", "tiny-llama")
      .kv_u32("general.file_type", file_type)
      .kv_u32("llama.block_count", 2)
      .kv_u32("llama.embedding_length", 64)
      .kv_u32("llama.feed_forward_length", 128)
      .kv_u32("llama.attention.head_count", 4)
      .kv_u32("llama.attention.head_count_kv", 2)
      .kv_u32("llama.context_length", 2048)
      .kv_f32("llama.rope.freq_base", 10000.0f)
      .kv_str_array("tokenizer.ggml.tokens", 100)
      .kv_f32_array("tokenizer.ggml.scores", 100);
  return b;
}

/// The tiny llama's tensors: Q4_0 and Q8_0 matrices, F32 norms, no output.weight (tied).
GgufBuilder& add_tiny_llama_tensors(GgufBuilder& b) {
  b.tensor("token_embd.weight", {64, 100}, kTypeQ8_0).tensor("output_norm.weight", {64}, kTypeF32);
  for (int i = 0; i < 2; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    b.tensor(p + "attn_norm.weight", {64}, kTypeF32)
        .tensor(p + "attn_q.weight", {64, 64}, kTypeQ4_0)
        .tensor(p + "attn_k.weight", {64, 32}, kTypeQ4_0)
        .tensor(p + "attn_v.weight", {64, 32}, kTypeQ8_0)
        .tensor(p + "attn_output.weight", {64, 64}, kTypeQ4_0)
        .tensor(p + "ffn_norm.weight", {64}, kTypeF32)
        .tensor(p + "ffn_gate.weight", {64, 128}, kTypeQ4_0)
        .tensor(p + "ffn_up.weight", {64, 128}, kTypeQ4_0)
        .tensor(p + "ffn_down.weight", {128, 64}, kTypeQ8_0);
  }
  return b;
}

std::string tiny_llama(uint32_t version = 3, uint32_t file_type = 2) {
  GgufBuilder b = tiny_llama_metadata(file_type);
  return add_tiny_llama_tensors(b).build(version);
}

const TensorAssignment& find_tensor(const WeightsBreakdown& w, const std::string& name) {
  for (const auto& t : w.tensors)
    if (t.name == name) return t;
  FAIL("no tensor " << name);
  return w.tensors.front();
}

bool has_note(const std::vector<std::string>& notes, const std::string& words) {
  for (const auto& n : notes)
    if (n.find(words) != std::string::npos) return true;
  return false;
}

/// Parsing `bytes` fails with bad input (exit 2), a message naming the file and holding every word.
void check_bad(const std::string& bytes, const std::vector<std::string>& words) {
  try {
    parse_gguf_model(bytes, "bad.gguf", db());
    FAIL("the file was accepted");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::kBadInput);
    const std::string message = e.what();
    CHECK_THAT(message, StartsWith("bad.gguf: "));
    for (const auto& w : words) CHECK_THAT(message, Contains(w));
  }
}

/// A bare header: magic, version, counts.
Bytes header(uint32_t version, uint64_t tensors, uint64_t kvs) {
  Bytes b;
  b.out = "GGUF";
  b.u32(version).u64(tensors).u64(kvs);
  return b;
}

/// A temporary directory removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("optadvisor-gguf-" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

TEST_CASE("a tiny llama GGUF gives exact bytes per tensor", "[gguf]") {
  GgufBuilder b = tiny_llama_metadata();
  const std::string file = add_tiny_llama_tensors(b).build(3);
  const GgufModel g = parse_gguf_model(file, "models/tiny.gguf", db());

  CHECK(g.version == 3);
  CHECK(g.tensor_count == 20);  // 2 outside the blocks + 2 x 9
  CHECK(g.metadata_count == 12);
  CHECK(g.quant_id == "q4_0");  // general.file_type 2 = LLAMA_FTYPE_MOSTLY_Q4_0

  const WeightsBreakdown& w = g.weights;
  REQUIRE(w.tensors.size() == 20);
  // token_embd 64 x 100 Q8_0: 6400 / 32 = 200 blocks x 34 = 6800.
  CHECK(find_tensor(w, "token_embd.weight").bytes == 6800);
  CHECK(find_tensor(w, "token_embd.weight").storage == "Q8_0");
  // Norms are F32: 64 x 4 = 256.
  CHECK(find_tensor(w, "output_norm.weight").bytes == 256);
  CHECK(find_tensor(w, "blk.0.attn_norm.weight").bytes == 256);
  // attn_q 64 x 64 Q4_0: 4096 / 32 = 128 blocks x 18 = 2304.
  CHECK(find_tensor(w, "blk.0.attn_q.weight").bytes == 2304);
  // attn_k 64 x 32 Q4_0: 2048 / 32 = 64 x 18 = 1152; attn_v the same in Q8_0: 64 x 34 = 2176.
  CHECK(find_tensor(w, "blk.0.attn_k.weight").bytes == 1152);
  CHECK(find_tensor(w, "blk.1.attn_v.weight").bytes == 2176);
  // ffn_gate/up 64 x 128 Q4_0: 8192 / 32 = 256 x 18 = 4608; ffn_down Q8_0: 256 x 34 = 8704.
  CHECK(find_tensor(w, "blk.1.ffn_up.weight").bytes == 4608);
  CHECK(find_tensor(w, "blk.1.ffn_down.weight").bytes == 8704);
  // Per block 256 + 2304 + 1152 + 2176 + 2304 + 256 + 4608 + 4608 + 8704 = 26368;
  // total 6800 + 256 + 2 x 26368 = 59792 bytes.
  CHECK(w.weights_bytes == 59792);
  // Elements: 6400 + 64 + 2 x (64 + 4096 + 2048 + 2048 + 4096 + 64 + 8192 + 8192 + 8192) = 80448.
  CHECK(w.params == 80448);
  CHECK(w.bits_per_weight == Approx(8.0 * 59792 / 80448).epsilon(1e-12));
  CHECK(w.file_bytes == file.size());
  CHECK(w.header_bytes == b.data_offset());
  CHECK(w.header_bytes % 32 == 0);
  CHECK(w.file_overhead_modeled);
  CHECK(w.format_id == "q4_0");

  // Kinds, layers and groups as quantize() names them; the tied embedding follows the output rules.
  const TensorAssignment& q = find_tensor(w, "blk.1.attn_q.weight");
  CHECK(q.kind == "attn_q");
  CHECK(q.group == "attention");
  CHECK(q.quantized);
  CHECK(find_tensor(w, "blk.0.ffn_down.weight").group == "ffn");
  CHECK(find_tensor(w, "output_norm.weight").group == "norms");
  CHECK_FALSE(find_tensor(w, "output_norm.weight").quantized);
  CHECK(find_tensor(w, "token_embd.weight").group == "embeddings");
  CHECK(find_tensor(w, "token_embd.weight").category == "output");
  uint64_t group_bytes = 0;
  for (const auto& grp : w.groups) group_bytes += grp.bytes;
  CHECK(group_bytes == w.weights_bytes);

  const ModelSpec& s = g.spec;
  CHECK(s.id == "gguf:tiny-llama");
  CHECK(s.name == "tiny-llama");
  CHECK(s.model_type == "llama");
  CHECK(s.hidden_size == 64);
  CHECK(s.num_hidden_layers == 2);
  CHECK(s.num_attention_heads == 4);
  CHECK(s.num_key_value_heads == 2);
  CHECK(s.head_dim == 16);  // no key_length: the attn_k rows 32 / 2 KV heads
  CHECK(s.intermediate_size == 128);
  CHECK(s.vocab_size == 100);  // tokenizer.ggml.tokens has 100 entries, token_embd 100 rows
  CHECK(s.tie_word_embeddings);
  CHECK(s.max_position_embeddings == 2048);
  CHECK(s.rope_theta == Approx(10000.0).epsilon(1e-9));
  CHECK(s.num_experts == 0);
  CHECK(s.sliding_window == 0);
  // KV cache per token: 2 layers x 2 (K and V) x 2 heads x 16 = 128 elements.
  CHECK(kv_cache_elements_per_token_full(s) == 128);
  // The spec's own tensor list matches the file's element count.
  CHECK(parameter_count(s) == w.params);
}

TEST_CASE("GGUF versions 2 and 3 read the same", "[gguf]") {
  const GgufModel v2 = parse_gguf_model(tiny_llama(2), "tiny.gguf", db());
  const GgufModel v3 = parse_gguf_model(tiny_llama(3), "tiny.gguf", db());
  CHECK(v2.version == 2);
  CHECK(v3.version == 3);
  CHECK(v2.weights.weights_bytes == v3.weights.weights_bytes);
  CHECK(v2.weights.header_bytes == v3.weights.header_bytes);
  CHECK(v2.spec.hidden_size == v3.spec.hidden_size);
  CHECK(v2.quant_id == v3.quant_id);
}

TEST_CASE("an output tensor means untied embeddings", "[gguf]") {
  GgufBuilder b = tiny_llama_metadata();
  add_tiny_llama_tensors(b).tensor("output.weight", {64, 100}, kTypeQ8_0);
  const GgufModel g = parse_gguf_model(b.build(), "tiny.gguf", db());
  CHECK_FALSE(g.spec.tie_word_embeddings);
  CHECK(find_tensor(g.weights, "token_embd.weight").category == "token_embd");
  CHECK(find_tensor(g.weights, "output.weight").group == "output");
  CHECK(g.weights.weights_bytes == 59792 + 6800);
}

TEST_CASE("general.alignment moves the data section", "[gguf]") {
  GgufBuilder b = tiny_llama_metadata();
  b.alignment(64);
  const std::string file = add_tiny_llama_tensors(b).build();
  const GgufModel g = parse_gguf_model(file, "tiny.gguf", db());
  CHECK(g.weights.header_bytes == b.data_offset());
  CHECK(g.weights.header_bytes % 64 == 0);
  CHECK(g.weights.weights_bytes == 59792);
}

TEST_CASE("general.file_type maps to quant ids", "[gguf]") {
  const std::map<uint32_t, std::string> expected = {{0, "fp32"},    {1, "f16"},     {2, "q4_0"},  {7, "q8_0"},      {10, "q2_k"},
                                                    {15, "q4_k_m"}, {17, "q5_k_m"}, {18, "q6_k"}, {19, "iq2_xxs"},  {21, "q2_k_s"},
                                                    {30, "iq4_xs"}, {31, "iq1_m"},  {32, "bf16"}, {38, "mxfp4_moe"}};
  for (const auto& [ftype, id] : expected) {
    INFO("general.file_type " << ftype);
    REQUIRE(db().find(id) != nullptr);
    const GgufModel g = parse_gguf_model(tiny_llama(3, ftype), "tiny.gguf", db());
    CHECK(g.quant_id == id);
    CHECK(g.weights.format_id == id);
  }
  // Known to llama.cpp but not a format here, unknown, and absent: no id, a note, exact bytes anyway.
  const GgufModel tq = parse_gguf_model(tiny_llama(3, 36), "tiny.gguf", db());
  CHECK(tq.quant_id.empty());
  CHECK(has_note(tq.notes, "LLAMA_FTYPE_MOSTLY_TQ1_0"));
  CHECK(tq.weights.weights_bytes == 59792);
  const GgufModel odd = parse_gguf_model(tiny_llama(3, 999), "tiny.gguf", db());
  CHECK(odd.quant_id.empty());
  CHECK(has_note(odd.notes, "not a llama.cpp file type"));

  GgufBuilder b;
  b.kv_str("general.architecture", "llama")
      .kv_u32("llama.block_count", 2)
      .kv_u32("llama.embedding_length", 64)
      .kv_u32("llama.feed_forward_length", 128)
      .kv_u32("llama.attention.head_count", 4)
      .kv_u32("llama.attention.head_count_kv", 2);
  add_tiny_llama_tensors(b);
  const GgufModel none = parse_gguf_model(b.build(), "dir/anonymous.gguf", db());
  CHECK(none.quant_id.empty());
  CHECK(none.weights.format_id == "gguf");
  CHECK(has_note(none.notes, "general.file_type absent"));
  CHECK(none.spec.id == "gguf:anonymous");  // no general.name: the file stem
  CHECK(none.spec.vocab_size == 100);       // no tokenizer: token_embd rows
  CHECK(none.spec.max_position_embeddings == 0);
}

TEST_CASE("Gemma-3 GGUF: key length, sliding window every sixth layer, norms", "[gguf]") {
  GgufBuilder b;
  b.kv_str("general.architecture", "gemma3")
      .kv_str("general.name", "tiny-gemma3")
      .kv_u32("general.file_type", 1)
      .kv_u32("gemma3.block_count", 6)
      .kv_u32("gemma3.embedding_length", 64)
      .kv_u32("gemma3.feed_forward_length", 128)
      .kv_u32("gemma3.attention.head_count", 4)
      .kv_u32("gemma3.attention.head_count_kv", 1)
      .kv_u32("gemma3.attention.key_length", 32)
      .kv_u32("gemma3.attention.value_length", 32)
      .kv_u32("gemma3.attention.sliding_window", 512)
      .kv_u32("gemma3.context_length", 32768)
      .kv_str_array("tokenizer.ggml.tokens", 100);
  b.tensor("token_embd.weight", {64, 100}, kTypeF32);
  for (int i = 0; i < 6; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    b.tensor(p + "attn_q_norm.weight", {32}, kTypeF32)
        .tensor(p + "attn_k_norm.weight", {32}, kTypeF32)
        .tensor(p + "post_attention_norm.weight", {64}, kTypeF32)
        .tensor(p + "post_ffw_norm.weight", {64}, kTypeF32);
  }
  const GgufModel g = parse_gguf_model(b.build(), "gemma.gguf", db());
  const ModelSpec& s = g.spec;
  CHECK(s.model_type == "gemma3_text");
  CHECK(s.head_dim == 32);  // key_length, not 64 / 4
  CHECK(s.num_key_value_heads == 1);
  CHECK(s.sliding_window == 512);
  CHECK(s.sliding_window_pattern == 6);  // llama.cpp set_swa_pattern(6)
  CHECK(s.qk_norm);
  CHECK(s.sandwich_norm);
  CHECK(s.tie_word_embeddings);
  CHECK(g.quant_id == "f16");
  // Layers 0-4 slide, layer 5 is full: 5 sliding + 1 full.
  const KvShape k = kv_shape(s);
  CHECK(k.sliding_layers == 5);
  CHECK(k.full_layers == 1);
  CHECK(k.window_tokens == 512);
  // 8192 tokens: 2 x 1 x 32 = 64 elements per token per layer; 1 x 8192 + 5 x 512 = 10752 tokens held.
  CHECK(kv_cache_elements(s, 8192, 1) == 64 * 10752);
}

TEST_CASE("gpt-oss GGUF: experts, alternating sliding window, sinks and biases", "[gguf]") {
  for (const std::string arch : {"gpt-oss", "gptoss"}) {
    INFO(arch);
    GgufBuilder b;
    b.kv_str("general.architecture", arch)
        .kv_u32("general.file_type", 38)
        .kv_u32(arch + ".block_count", 2)
        .kv_u32(arch + ".embedding_length", 64)
        .kv_u32(arch + ".feed_forward_length", 32)
        .kv_u32(arch + ".expert_feed_forward_length", 32)
        .kv_u32(arch + ".expert_count", 4)
        .kv_u32(arch + ".expert_used_count", 2)
        .kv_u32(arch + ".attention.head_count", 4)
        .kv_u32(arch + ".attention.head_count_kv", 2)
        .kv_u32(arch + ".attention.key_length", 16)
        .kv_u32(arch + ".attention.sliding_window", 128)
        .kv_u32(arch + ".vocab_size", 100);
    b.tensor("token_embd.weight", {64, 100}, kTypeF32).tensor("output.weight", {64, 100}, kTypeF32);
    for (int i = 0; i < 2; ++i) {
      const std::string p = "blk." + std::to_string(i) + ".";
      b.tensor(p + "attn_sinks.weight", {4}, kTypeF32)
          .tensor(p + "attn_output.bias", {64}, kTypeF32)
          .tensor(p + "ffn_gate_inp.weight", {64, 4}, kTypeF32)
          .tensor(p + "ffn_gate_inp.bias", {4}, kTypeF32)
          .tensor(p + "ffn_up_exps.weight", {64, 32, 4}, kTypeQ8_0)
          .tensor(p + "ffn_up_exps.bias", {32, 4}, kTypeF32);
    }
    const GgufModel g = parse_gguf_model(b.build(), "oss.gguf", db());
    const ModelSpec& s = g.spec;
    CHECK(s.model_type == "gpt_oss");
    CHECK(s.num_experts == 4);
    CHECK(s.num_experts_per_tok == 2);
    CHECK(s.moe_intermediate_size == 32);
    CHECK(s.first_k_dense_replace == 0);
    CHECK(s.mlp_only_layers.empty());
    CHECK(s.sliding_window == 128);
    CHECK(s.sliding_window_pattern == 2);  // llama.cpp set_swa_pattern(2): layer 0 slides, layer 1 is full
    CHECK(is_sliding_layer(s, 0));
    CHECK_FALSE(is_sliding_layer(s, 1));
    CHECK(s.attention_sinks);
    CHECK(s.attention_bias);
    CHECK(s.router_bias);
    CHECK(s.mlp_bias);
    CHECK_FALSE(s.tie_word_embeddings);
    CHECK(g.quant_id == "mxfp4_moe");
    // ffn_up_exps 64 x 32 x 4 Q8_0: 8192 / 32 = 256 blocks x 34 = 8704 bytes, grouped with the experts.
    CHECK(find_tensor(g.weights, "blk.0.ffn_up_exps.weight").bytes == 8704);
    CHECK(find_tensor(g.weights, "blk.0.ffn_up_exps.weight").group == "experts");
  }
}

TEST_CASE("DeepSeek GGUF: MLA ranks, dense lead layers, shared expert", "[gguf]") {
  // Current converters: key/value_length describe the absorbed MQA form and
  // the _mla keys the per-head widths; older files carry only the latter as
  // key/value_length. Both must give the same spec.
  for (const bool mla_keys : {true, false}) {
    INFO("key_length_mla present: " << mla_keys);
    GgufBuilder b;
    b.kv_str("general.architecture", "deepseek2")
        .kv_u32("deepseek2.block_count", 3)
        .kv_u32("deepseek2.leading_dense_block_count", 1)
        .kv_u32("deepseek2.embedding_length", 64)
        .kv_u32("deepseek2.feed_forward_length", 128)
        .kv_u32("deepseek2.attention.head_count", 4)
        .kv_u32("deepseek2.attention.q_lora_rank", 48)
        .kv_u32("deepseek2.attention.kv_lora_rank", 32)
        .kv_u32("deepseek2.rope.dimension_count", 8)
        .kv_u32("deepseek2.expert_count", 8)
        .kv_u32("deepseek2.expert_used_count", 2)
        .kv_u32("deepseek2.expert_feed_forward_length", 32)
        .kv_u32("deepseek2.expert_shared_count", 1)
        .kv_u32("deepseek2.vocab_size", 100);
    if (mla_keys) {
      b.kv_u32("deepseek2.attention.head_count_kv", 1)
          .kv_u32("deepseek2.attention.key_length", 40)  // kv_lora_rank + rope = 32 + 8
          .kv_u32("deepseek2.attention.value_length", 32)
          .kv_u32("deepseek2.attention.key_length_mla", 24)  // nope 16 + rope 8
          .kv_u32("deepseek2.attention.value_length_mla", 16);
    } else {
      b.kv_u32("deepseek2.attention.head_count_kv", 4)
          .kv_u32("deepseek2.attention.key_length", 24)
          .kv_u32("deepseek2.attention.value_length", 16);
    }
    b.tensor("token_embd.weight", {64, 100}, kTypeF32).tensor("output.weight", {64, 100}, kTypeF32);
    b.tensor("blk.0.ffn_down.weight", {128, 64}, kTypeF32);
    for (int i = 1; i < 3; ++i) {
      const std::string p = "blk." + std::to_string(i) + ".";
      b.tensor(p + "ffn_gate_inp.weight", {64, 8}, kTypeF32)
          .tensor(p + "exp_probs_b.bias", {8}, kTypeF32)
          .tensor(p + "ffn_up_shexp.weight", {64, 32}, kTypeF32);
    }
    const GgufModel g = parse_gguf_model(b.build(), "ds.gguf", db());
    const ModelSpec& s = g.spec;
    CHECK(s.model_type == "deepseek_v3");
    CHECK(s.kv_lora_rank == 32);
    CHECK(s.q_lora_rank == 48);
    CHECK(s.qk_rope_head_dim == 8);
    CHECK(s.qk_nope_head_dim == 16);
    CHECK(s.v_head_dim == 16);
    CHECK(s.first_k_dense_replace == 1);
    CHECK(s.mlp_only_layers.empty());
    CHECK(s.shared_expert_intermediate_size == 32);
    CHECK(s.moe_intermediate_size == 32);
    CHECK(s.router_score_correction_bias);
    // The cache holds the latent plus the shared rotary key: 32 + 8 = 40 per layer per token, 3 layers.
    const KvShape k = kv_shape(s);
    CHECK(k.latent);
    CHECK(k.elements_per_token_per_layer == 40);
    CHECK(kv_cache_elements_per_token_full(s) == 120);
  }
}

TEST_CASE("other GGUF architectures read as llama-like, with a note", "[gguf]") {
  GgufBuilder b;
  b.kv_str("general.architecture", "granite")
      .kv_u32("granite.block_count", 2)
      .kv_u32("granite.embedding_length", 64)
      .kv_u32("granite.feed_forward_length", 128)
      .kv_i32_array("granite.attention.head_count_kv", {2, 1})
      .kv_u32("granite.attention.head_count", 4)
      .kv_u32("granite.attention.sliding_window", 4096);
  add_tiny_llama_tensors(b);
  const GgufModel g = parse_gguf_model(b.build(), "granite.gguf", db());
  CHECK(g.spec.model_type == "llama");
  CHECK(has_note(g.notes, "architecture 'granite' is not modelled"));
  CHECK(g.spec.num_key_value_heads == 2);  // per-layer array: the largest
  CHECK(has_note(g.notes, "varies by layer"));
  CHECK(g.spec.sliding_window == 0);  // pattern unknown: every layer keeps the whole context
  CHECK(has_note(g.notes, "sliding window of 4096 tokens ignored"));
}

TEST_CASE("mistral3 GGUFs (Ministral 3, Devstral Small 2) read as the llama layout they are", "[gguf]") {
  // llama.cpp's mistral3 architecture builds the standard llama block (llm_build_mistral3); only
  // its rope scaling differs, which the estimates do not read.
  GgufBuilder b;
  b.kv_str("general.architecture", "mistral3")
      .kv_u32("mistral3.block_count", 2)
      .kv_u32("mistral3.embedding_length", 64)
      .kv_u32("mistral3.feed_forward_length", 128)
      .kv_u32("mistral3.attention.head_count", 4)
      .kv_u32("mistral3.attention.head_count_kv", 2);
  add_tiny_llama_tensors(b);
  const GgufModel g = parse_gguf_model(b.build(), "ministral.gguf", db());
  CHECK(g.spec.model_type == "llama");
  CHECK_FALSE(has_note(g.notes, "is not modelled"));
  CHECK(g.spec.num_key_value_heads == 2);
}

TEST_CASE("read_gguf_model reads a file in chunks, never its data", "[gguf]") {
  TempDir dir;
  // A 200000-entry merges list makes the metadata a few MiB, so the reader grows its buffer several times.
  GgufBuilder b = tiny_llama_metadata();
  b.kv_str_array("tokenizer.ggml.merges", 200000);
  const std::string file = add_tiny_llama_tensors(b).build();
  REQUIRE(file.size() > 2 * 1024 * 1024);
  const fs::path path = dir.path / "tiny-llama-q4_0.gguf";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(file.data(), static_cast<std::streamsize>(file.size()));
  }
  const GgufModel g = read_gguf_model(path.string(), db());
  CHECK(g.weights.file_bytes == file.size());
  CHECK(g.weights.header_bytes == b.data_offset());
  CHECK(g.weights.weights_bytes == 59792);
  CHECK(g.spec.vocab_size == 100);
  CHECK(g.metadata_count == 13);
  CHECK(g.quant_id == "q4_0");

  // Missing paths and directories.
  try {
    read_gguf_model((dir.path / "missing.gguf").string(), db());
    FAIL("accepted a missing file");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::kBadInput);
    CHECK_THAT(std::string(e.what()), Contains("missing.gguf") && Contains("no such file"));
  }
  try {
    read_gguf_model(dir.path.string(), db());
    FAIL("accepted a directory");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::kBadInput);
    CHECK_THAT(std::string(e.what()), Contains("is a directory"));
  }
  // The same file cut in its data section.
  const fs::path cut = dir.path / "cut.gguf";
  {
    std::ofstream out(cut, std::ios::binary);
    out.write(file.data(), static_cast<std::streamsize>(file.size() - 1000));
  }
  try {
    read_gguf_model(cut.string(), db());
    FAIL("accepted a truncated file");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::kBadInput);
    CHECK_THAT(std::string(e.what()), Contains("truncated") && Contains("blk.1.ffn_down.weight"));
  }
}

TEST_CASE("broken GGUF headers are bad input with a clear message: the file header", "[gguf]") {
  const std::string good = tiny_llama();

  SECTION("empty file") { check_bad("", {"empty file"}); }
  SECTION("bad magic") {
    std::string f = good;
    f[3] = 'X';
    check_bad(f, {"not a GGUF file", "GGUX"});
  }
  SECTION("version 1") {
    std::string f = good;
    f[4] = 1;
    check_bad(f, {"version 1 is not supported"});
  }
  SECTION("version 99") {
    std::string f = good;
    f[4] = 99;
    check_bad(f, {"unsupported GGUF version 99"});
  }
  SECTION("big-endian") {
    std::string f = good;
    f[4] = 0;
    f[7] = 3;
    check_bad(f, {"big-endian"});
  }
  SECTION("truncated in the header") { check_bad(good.substr(0, 10), {"truncated", "tensor count"}); }
  SECTION("truncated in a metadata string") {
    Bytes b = header(3, 0, 1);
    b.str("general.name").u32(kString).u64(100);
    b.out += "abc";
    check_bad(b.out, {"truncated", "general.name"});
  }
  SECTION("truncated in the tensor table") {
    const std::string name = "blk.1.ffn_down.weight";
    const std::size_t at = good.find(name);
    REQUIRE(at != std::string::npos);
    check_bad(good.substr(0, at + name.size() + 2), {"truncated", name});
  }
  SECTION("truncated before the counted entries") { check_bad(good.substr(0, 40), {"truncated", "metadata pairs"}); }
}

TEST_CASE("broken GGUF headers are bad input with a clear message: metadata and counts", "[gguf]") {
  SECTION("string length 2^60") {
    Bytes b = header(3, 0, 1);
    b.u64(uint64_t{1} << 60).zeros(16);
    check_bad(b.out, {"string length 1152921504606846976", "exceeds"});
  }
  SECTION("array count 2^62") {
    Bytes b = header(3, 0, 1);
    b.str("a").u32(kArray).u32(kU8).u64(uint64_t{1} << 62);
    check_bad(b.out, {"array 'a'", "4611686018427387904 elements"});
  }
  SECTION("metadata past 64 MiB") {
    // A 65 MiB byte array: the bytes are there, but metadata that large is not a model header.
    Bytes b = header(3, 0, 1);
    b.str("blob").u32(kArray).u32(kU8).u64(65 * 1024 * 1024);
    b.zeros(65 * 1024 * 1024);
    check_bad(b.out, {"'blob'", "64 MiB limit", "metadata"});
  }
  SECTION("array of arrays") {
    Bytes b = header(3, 0, 1);
    b.str("a").u32(kArray).u32(kArray).u64(1).zeros(16);
    check_bad(b.out, {"array of arrays"});
  }
  SECTION("unknown metadata type") {
    Bytes b = header(3, 0, 1);
    b.str("a").u32(77).zeros(8);
    check_bad(b.out, {"'a'", "unknown value type 77"});
  }
  SECTION("duplicate key") {
    Bytes b = header(3, 0, 2);
    b.str("a").u32(kU32).u32(1).str("a").u32(kU32).u32(2);
    check_bad(b.out, {"duplicate metadata key 'a'"});
  }
  SECTION("tensor count 2^40") { check_bad(header(3, uint64_t{1} << 40, 0).out, {"tensor count 1099511627776", "exceeds"}); }
  SECTION("metadata count 2^40") { check_bad(header(3, 0, uint64_t{1} << 40).out, {"metadata count 1099511627776", "exceeds"}); }
}

TEST_CASE("broken GGUF headers are bad input with a clear message: the tensor table", "[gguf]") {
  const std::string good = tiny_llama();
  SECTION("n_dims 9") {
    Bytes b = header(3, 1, 0);
    b.str("t").u32(9).zeros(32);
    check_bad(b.out, {"tensor 't'", "9 dimensions"});
  }
  SECTION("unknown tensor type 999") {
    Bytes b = header(3, 1, 0);
    b.str("t").u32(1).u64(32).u32(999).u64(0);
    check_bad(b.out, {"tensor 't'", "unknown ggml type 999"});
  }
  SECTION("dimension product overflow") {
    Bytes b = header(3, 1, 0);
    b.str("t").u32(3).u64(uint64_t{1} << 32).u64(uint64_t{1} << 32).u64(256).u32(kTypeF32).u64(0);
    check_bad(b.out, {"tensor 't'", "overflows"});
  }
  SECTION("negative dimension") {
    Bytes b = header(3, 1, 0);
    b.str("t").u32(1).u64(~uint64_t{0}).u32(kTypeF32).u64(0);
    check_bad(b.out, {"tensor 't'", "negative or absurd dimension"});
  }
  SECTION("row not a multiple of the block") {
    Bytes b = header(3, 1, 0);
    b.str("t").u32(2).u64(48).u64(2).u32(kTypeQ4_0).u64(0);
    check_bad(b.out, {"tensor 't'", "rows of 48 elements", "Q4_0", "32-element blocks"});
  }
  SECTION("tensor data past the end of the file") { check_bad(good.substr(0, good.size() - 100), {"truncated", "blk.1.ffn_down.weight"}); }
  SECTION("misaligned tensor offset") {
    Bytes b = header(3, 1, 0);
    b.str("t").u32(1).u64(32).u32(kTypeF32).u64(4).zeros(256);
    check_bad(b.out, {"tensor 't'", "not a multiple of the alignment 32"});
  }
}

TEST_CASE("broken GGUF headers are bad input with a clear message: the model metadata", "[gguf]") {
  SECTION("alignment not a power of two") {
    GgufBuilder g = tiny_llama_metadata();
    g.kv_u32("general.alignment", 48);
    check_bad(add_tiny_llama_tensors(g).build(), {"general.alignment", "power of two"});
  }
  SECTION("duplicate tensor") {
    GgufBuilder g = tiny_llama_metadata();
    add_tiny_llama_tensors(g).tensor("blk.0.attn_q.weight", {64, 64}, kTypeQ4_0);
    check_bad(g.build(), {"duplicate tensor 'blk.0.attn_q.weight'"});
  }
  SECTION("no architecture") {
    GgufBuilder g;
    g.kv_u32("general.file_type", 2);
    check_bad(add_tiny_llama_tensors(g).build(), {"general.architecture"});
  }
  SECTION("absurd hyperparameter") {
    GgufBuilder g = tiny_llama_metadata();
    g.kv_u64("llama.expert_count", uint64_t{1} << 40);
    check_bad(add_tiny_llama_tensors(g).build(), {"llama.expert_count", "beyond any real model"});
  }
  SECTION("wrongly typed hyperparameter") {
    GgufBuilder g;
    g.kv_str("general.architecture", "llama").kv_str("llama.block_count", "two");
    check_bad(add_tiny_llama_tensors(g).build(), {"llama.block_count", "STRING", "expected an integer"});
  }
  SECTION("inconsistent heads") {
    GgufBuilder g;
    g.kv_str("general.architecture", "llama")
        .kv_u32("llama.block_count", 2)
        .kv_u32("llama.embedding_length", 64)
        .kv_u32("llama.feed_forward_length", 128)
        .kv_u32("llama.attention.head_count", 4)
        .kv_u32("llama.attention.head_count_kv", 3)
        .kv_u32("llama.attention.key_length", 16);
    check_bad(add_tiny_llama_tensors(g).build(), {"inconsistent model metadata", "num_key_value_heads"});
  }
}

TEST_CASE("every prefix of a valid GGUF is rejected cleanly", "[gguf]") {
  // No prefix may crash or be accepted: the data section is part of the file.
  const std::string good = tiny_llama();
  const std::size_t step = 7;
  for (std::size_t n = 0; n < good.size(); n += step) {
    INFO("prefix of " << n << " bytes");
    CHECK_THROWS_AS(parse_gguf_model(std::string_view(good).substr(0, n), "p.gguf", db()), Error);
  }
  CHECK_NOTHROW(parse_gguf_model(good, "p.gguf", db()));
}

TEST_CASE("MiniMax-M2 and Qwen3-Next GGUFs: per-layer q/k norms, gated queries, linear-attention blocks", "[gguf]") {
  SECTION("minimax-m2: q_norm over every head") {
    GgufBuilder b;
    b.kv_str("general.architecture", "minimax-m2")
        .kv_u32("minimax-m2.block_count", 2)
        .kv_u32("minimax-m2.embedding_length", 64)
        .kv_u32("minimax-m2.expert_feed_forward_length", 32)
        .kv_u32("minimax-m2.expert_count", 8)
        .kv_u32("minimax-m2.expert_used_count", 2)
        .kv_u32("minimax-m2.attention.head_count", 4)
        .kv_u32("minimax-m2.attention.head_count_kv", 2)
        .kv_u32("minimax-m2.attention.key_length", 16)
        .kv_u32("minimax-m2.vocab_size", 100);
    b.tensor("token_embd.weight", {64, 100}, kTypeF32).tensor("output.weight", {64, 100}, kTypeF32);
    for (int i = 0; i < 2; ++i) {
      const std::string p = "blk." + std::to_string(i) + ".";
      b.tensor(p + "attn_q_norm.weight", {64}, kTypeF32)  // 4 heads x 16
          .tensor(p + "attn_k_norm.weight", {32}, kTypeF32)
          .tensor(p + "ffn_gate_inp.weight", {64, 8}, kTypeF32)
          .tensor(p + "exp_probs_b.bias", {8}, kTypeF32);
    }
    const ModelSpec s = parse_gguf_model(b.build(), "mm.gguf", db()).spec;
    CHECK(s.model_type == "minimax_m2");
    CHECK(s.qk_norm);
    CHECK(s.qk_norm_type == "per_layer");
    CHECK(s.router_score_correction_bias);
    CHECK(s.shared_expert_intermediate_size == 0);
  }
  SECTION("qwen3next: three Gated DeltaNet blocks to one gated full-attention block") {
    GgufBuilder b;
    b.kv_str("general.architecture", "qwen3next")
        .kv_u32("qwen3next.block_count", 4)
        .kv_u32("qwen3next.embedding_length", 64)
        .kv_u32("qwen3next.expert_feed_forward_length", 16)
        .kv_u32("qwen3next.expert_count", 8)
        .kv_u32("qwen3next.expert_used_count", 2)
        .kv_u32("qwen3next.attention.head_count", 4)
        .kv_u32("qwen3next.attention.head_count_kv", 2)
        .kv_u32("qwen3next.attention.key_length", 16)
        .kv_u32("qwen3next.ssm.state_size", 8)
        .kv_u32("qwen3next.ssm.group_count", 2)
        .kv_u32("qwen3next.vocab_size", 100);
    b.tensor("token_embd.weight", {64, 100}, kTypeF32).tensor("output.weight", {64, 100}, kTypeF32);
    for (int i = 0; i < 4; ++i) {
      const std::string p = "blk." + std::to_string(i) + ".";
      b.tensor(p + "ffn_gate_inp.weight", {64, 8}, kTypeF32)
          .tensor(p + "ffn_up_shexp.weight", {64, 16}, kTypeF32)
          .tensor(p + "ffn_gate_inp_shexp.weight", {64}, kTypeF32);
      if (i == 3) {
        b.tensor(p + "attn_q.weight", {64, 128}, kTypeF32)  // query + gate: 2 x 4 heads x 16
            .tensor(p + "attn_k.weight", {64, 32}, kTypeF32)
            .tensor(p + "attn_q_norm.weight", {16}, kTypeF32);
      } else {
        // q, k: 2 key heads x 8; v, z: 4 value heads x 8. conv over q, k, v = 16 + 16 + 32 = 64 channels.
        b.tensor(p + "ssm_in.weight", {64, 96}, kTypeF32)
            .tensor(p + "ssm_conv1d.weight", {4, 64}, kTypeF32)
            .tensor(p + "ssm_a", {4}, kTypeF32)
            .tensor(p + "ssm_norm.weight", {8}, kTypeF32);
      }
    }
    const ModelSpec s = parse_gguf_model(b.build(), "next.gguf", db()).spec;
    CHECK(s.model_type == "qwen3_next");
    CHECK(s.attn_output_gate);
    CHECK(s.shared_expert_gate);
    CHECK(s.linear_num_value_heads == 4);
    CHECK(s.linear_value_head_dim == 8);
    CHECK(s.linear_num_key_heads == 2);
    CHECK(s.linear_key_head_dim == 8);
    CHECK(s.linear_conv_kernel_dim == 4);
    const KvShape k = kv_shape(s);
    CHECK(k.linear_layers == 3);
    CHECK(k.full_layers == 1);
    // Only block 3 caches: 2 x 2 KV heads x 16 = 64 per token. Each linear block: 4 x 8 x 8 = 256 state
    // + 64 channels x 3 conv inputs = 192.
    CHECK(kv_cache_elements_per_token_full(s) == 64);
    CHECK(k.state_elements_per_layer == 256 + 192);
  }
}

TEST_CASE("Mamba-2 hybrid GGUFs: the Nemotron-H block pattern and Granite's mamba layers", "[gguf]") {
  // Mamba-2 block: 4 heads, inner 32 (d_head 8), 1 group of d_state 16; conv over x, B, C = 32 + 2 x 16 = 64.
  const auto mamba_block = [](GgufBuilder& b, const std::string& p) {
    b.tensor(p + "ssm_in.weight", {64, 32 + 64 + 4}, kTypeF32)
        .tensor(p + "ssm_conv1d.weight", {4, 64}, kTypeF32)
        .tensor(p + "ssm_conv1d.bias", {64}, kTypeF32)
        .tensor(p + "ssm_a", {4}, kTypeF32)
        .tensor(p + "ssm_d", {4}, kTypeF32)
        .tensor(p + "ssm_out.weight", {32, 64}, kTypeF32);
  };
  SECTION("nemotron_h: M * - E") {
    GgufBuilder b;
    b.kv_str("general.architecture", "nemotron_h_moe")
        .kv_u32("nemotron_h_moe.block_count", 4)
        .kv_u32("nemotron_h_moe.embedding_length", 64)
        .kv_u32("nemotron_h_moe.expert_count", 8)
        .kv_u32("nemotron_h_moe.expert_used_count", 2)
        .kv_u32("nemotron_h_moe.attention.head_count", 4)
        .kv_u32("nemotron_h_moe.attention.head_count_kv", 2)
        .kv_u32("nemotron_h_moe.attention.key_length", 16)
        .kv_u32("nemotron_h_moe.ssm.state_size", 16)
        .kv_u32("nemotron_h_moe.ssm.group_count", 1)
        .kv_u32("nemotron_h_moe.vocab_size", 100);
    b.tensor("token_embd.weight", {64, 100}, kTypeF32).tensor("output.weight", {64, 100}, kTypeF32);
    mamba_block(b, "blk.0.");
    b.tensor("blk.1.attn_q.weight", {64, 64}, kTypeF32).tensor("blk.1.attn_k.weight", {64, 32}, kTypeF32);
    b.tensor("blk.2.ffn_up.weight", {64, 96}, kTypeF32).tensor("blk.2.ffn_down.weight", {96, 64}, kTypeF32);
    b.tensor("blk.3.ffn_gate_inp.weight", {64, 8}, kTypeF32)
        .tensor("blk.3.ffn_up_exps.weight", {64, 24, 8}, kTypeF32)
        .tensor("blk.3.ffn_down_exps.weight", {24, 64, 8}, kTypeF32)
        .tensor("blk.3.ffn_up_shexp.weight", {64, 48}, kTypeF32);
    const ModelSpec s = parse_gguf_model(b.build(), "nemo.gguf", db()).spec;
    CHECK(s.model_type == "nemotron_h");
    CHECK(s.hybrid_override_pattern == "M*-E");
    CHECK(s.mamba_n_heads == 4);
    CHECK(s.mamba_d_head == 8);
    CHECK(s.mamba_d_state == 16);
    CHECK(s.mamba_d_conv == 4);
    CHECK(s.mamba_conv_bias);
    CHECK(s.intermediate_size == 96);
    CHECK(s.moe_intermediate_size == 24);
    CHECK(s.shared_expert_intermediate_size == 48);
    const KvShape k = kv_shape(s);
    CHECK(k.full_layers == 1);    // the '*' block
    CHECK(k.linear_layers == 1);  // the 'M' block
    // State: 4 x 8 x 16 = 512 + 64 channels x 3 conv inputs = 192.
    CHECK(k.state_elements_per_layer == 512 + 192);
  }
  SECTION("nemotron_h: a latent MoE block") {
    GgufBuilder b;
    b.kv_str("general.architecture", "nemotron_h_moe")
        .kv_u32("nemotron_h_moe.block_count", 2)
        .kv_u32("nemotron_h_moe.embedding_length", 64)
        .kv_u32("nemotron_h_moe.feed_forward_length", 96)
        .kv_u32("nemotron_h_moe.expert_count", 8)
        .kv_u32("nemotron_h_moe.expert_used_count", 2)
        .kv_u32("nemotron_h_moe.attention.head_count", 4)
        .kv_u32("nemotron_h_moe.attention.head_count_kv", 2)
        .kv_u32("nemotron_h_moe.ssm.state_size", 16)
        .kv_u32("nemotron_h_moe.ssm.group_count", 1)
        .kv_u32("nemotron_h_moe.vocab_size", 100);
    b.tensor("token_embd.weight", {64, 100}, kTypeF32).tensor("output.weight", {64, 100}, kTypeF32);
    mamba_block(b, "blk.0.");
    // Experts of 24 in a 16-wide latent: down 64 -> 16 before them, up 16 -> 64 after them.
    b.tensor("blk.1.ffn_gate_inp.weight", {64, 8}, kTypeF32)
        .tensor("blk.1.ffn_latent_down.weight", {64, 16}, kTypeF32)
        .tensor("blk.1.ffn_latent_up.weight", {16, 64}, kTypeF32)
        .tensor("blk.1.ffn_up_exps.weight", {16, 24, 8}, kTypeF32)
        .tensor("blk.1.ffn_down_exps.weight", {24, 16, 8}, kTypeF32);
    const ModelSpec s = parse_gguf_model(b.build(), "nemo-latent.gguf", db()).spec;
    CHECK(s.hybrid_override_pattern == "ME");
    CHECK(s.moe_latent_size == 16);
    CHECK(s.moe_intermediate_size == 24);
    // The spec's expert stacks have the file's shapes: 16 x 24 x 8 each.
    const std::vector<Tensor> t = model_tensors(s);
    const auto up = std::find_if(t.begin(), t.end(), [](const Tensor& x) { return x.name == "blk.1.ffn_up_exps.weight"; });
    REQUIRE(up != t.end());
    CHECK(up->elements() == 16 * 24 * 8);
  }
  SECTION("granitehybrid: mamba and attention layers, MoE in each") {
    GgufBuilder b;
    b.kv_str("general.architecture", "granitehybrid")
        .kv_u32("granitehybrid.block_count", 2)
        .kv_u32("granitehybrid.embedding_length", 64)
        .kv_u32("granitehybrid.expert_count", 8)
        .kv_u32("granitehybrid.expert_used_count", 2)
        .kv_u32("granitehybrid.expert_feed_forward_length", 24)
        .kv_u32("granitehybrid.attention.head_count", 4)
        .kv_u32("granitehybrid.attention.head_count_kv", 2)
        .kv_u32("granitehybrid.attention.key_length", 16)
        .kv_u32("granitehybrid.ssm.state_size", 16)
        .kv_u32("granitehybrid.ssm.inner_size", 32)
        .kv_u32("granitehybrid.vocab_size", 100);
    b.tensor("token_embd.weight", {64, 100}, kTypeF32);
    mamba_block(b, "blk.0.");
    for (int i = 0; i < 2; ++i) b.tensor("blk." + std::to_string(i) + ".ffn_gate_inp.weight", {64, 8}, kTypeF32);
    const ModelSpec s = parse_gguf_model(b.build(), "granite.gguf", db()).spec;
    CHECK(s.model_type == "granitemoehybrid");
    CHECK(is_mamba_layer(s, 0));
    CHECK_FALSE(is_mamba_layer(s, 1));
    CHECK(kv_shape(s).full_layers == 1);
    CHECK(kv_cache_elements_per_token_full(s) == 64);
  }
}

TEST_CASE("lfm2moe GGUFs: short-convolution blocks beside attention, dense lead blocks before the MoE", "[gguf]") {
  // llama.cpp lfm2moe: blocks 0 and 2 are short convolutions (shortconv.*, 3 taps over 64 channels),
  // block 1 attends; block 0 has a dense FFN of 96, blocks 1 and 2 route over 8 experts of 24.
  GgufBuilder b;
  b.kv_str("general.architecture", "lfm2moe")
      .kv_u32("lfm2moe.block_count", 3)
      .kv_u32("lfm2moe.embedding_length", 64)
      .kv_u32("lfm2moe.feed_forward_length", 96)
      .kv_u32("lfm2moe.expert_count", 8)
      .kv_u32("lfm2moe.expert_used_count", 2)
      .kv_u32("lfm2moe.expert_feed_forward_length", 24)
      .kv_u32("lfm2moe.leading_dense_block_count", 1)
      .kv_u32("lfm2moe.attention.head_count", 4)
      .kv_u32("lfm2moe.attention.head_count_kv", 2)
      .kv_u32("lfm2moe.shortconv.l_cache", 3)
      .kv_u32("lfm2moe.vocab_size", 100);
  b.tensor("token_embd.weight", {64, 100}, kTypeF32).tensor("token_embd_norm.weight", {64}, kTypeF32);
  for (const int i : {0, 2}) {
    const std::string p = "blk." + std::to_string(i) + ".";
    b.tensor(p + "shortconv.in_proj.weight", {64, 192}, kTypeF32)
        .tensor(p + "shortconv.conv.weight", {3, 64}, kTypeF32)
        .tensor(p + "shortconv.out_proj.weight", {64, 64}, kTypeF32);
  }
  b.tensor("blk.1.attn_q.weight", {64, 64}, kTypeF32)
      .tensor("blk.1.attn_k.weight", {64, 32}, kTypeF32)
      .tensor("blk.1.attn_q_norm.weight", {16}, kTypeF32);
  for (const int i : {1, 2}) {
    const std::string p = "blk." + std::to_string(i) + ".";
    b.tensor(p + "ffn_gate_inp.weight", {64, 8}, kTypeF32).tensor(p + "exp_probs_b.bias", {8}, kTypeF32);
  }
  const ModelSpec s = parse_gguf_model(b.build(), "lfm2.gguf", db()).spec;
  CHECK(s.model_type == "lfm2_moe");
  CHECK(s.conv_L_cache == 3);
  CHECK_FALSE(s.conv_bias);
  CHECK(is_short_conv_layer(s, 0));
  CHECK_FALSE(is_short_conv_layer(s, 1));
  CHECK(is_short_conv_layer(s, 2));
  CHECK(s.first_k_dense_replace == 1);
  CHECK(s.router_score_correction_bias);  // the GGUF holds expert_bias as exp_probs_b
  CHECK(s.tie_word_embeddings);
  const KvShape k = kv_shape(s);
  CHECK(k.full_layers == 1);
  CHECK(k.linear_layers == 2);
  // Block 1 caches 2 x 2 KV heads x 16 = 64 per token; each conv block keeps (3 - 1) x 64 = 128 values.
  CHECK(kv_cache_elements_per_token_full(s) == 64);
  CHECK(k.state_elements_per_layer == 128);
}

TEST_CASE("gemma3n GGUFs: per-layer inputs, AltUp and LAuReL from the tensors, the shared KV layers from a float key", "[gguf][gemma3n]") {
  // A tiny Gemma 3n written from its own tensor list: 10 layers (full attention at 4 and 9), hidden 64,
  // 2 heads and 1 KV head of 32, per-layer inputs of 8, 4 AltUp streams, LAuReL rank 4, the last 4
  // layers sharing the caches of layers 4 (full) and 5 (sliding).
  const nlohmann::json doc = {{"id", "tiny"},
                              {"name", "tiny"},
                              {"model_type", "gemma3n_text"},
                              {"hidden_size", 64},
                              {"num_hidden_layers", 10},
                              {"num_attention_heads", 2},
                              {"num_key_value_heads", 1},
                              {"head_dim", 32},
                              {"intermediate_size", 128},
                              {"vocab_size", 100},
                              {"sliding_window", 16},
                              {"sliding_window_pattern", 5},
                              {"hidden_size_per_layer_input", 8},
                              {"vocab_size_per_layer_input", 100},
                              {"altup_num_inputs", 4},
                              {"laurel_rank", 4},
                              {"num_kv_shared_layers", 4},
                              {"sources", nlohmann::json::array()}};
  std::vector<Problem> problems;
  const std::optional<ModelSpec> tiny = model_from_json(doc, problems);
  REQUIRE(tiny);
  GgufBuilder b;
  b.kv_str("general.architecture", "gemma3n")
      .kv_u32("gemma3n.block_count", 10)
      .kv_u32("gemma3n.embedding_length", 64)
      .kv_u32("gemma3n.feed_forward_length", 128)
      .kv_u32("gemma3n.attention.head_count", 2)
      .kv_u32("gemma3n.attention.head_count_kv", 1)
      .kv_u32("gemma3n.attention.key_length", 32)
      .kv_u32("gemma3n.attention.value_length", 32)
      .kv_u32("gemma3n.attention.sliding_window", 16)
      .kv_u32("gemma3n.context_length", 4096)
      .kv_u32("gemma3n.embedding_length_per_layer_input", 8)
      .kv_u32("gemma3n.altup.num_inputs", 4)
      .kv_f32("gemma3n.attention.shared_kv_layers", 4.0f)  // published files write it as a float
      .kv_str_array("tokenizer.ggml.tokens", 100);
  for (const Tensor& t : model_tensors(*tiny)) {
    std::vector<uint64_t> dims = {t.row_elements};
    if (t.rows > 1 || t.slices > 1) dims.push_back(t.rows);
    if (t.slices > 1) dims.push_back(t.slices);
    b.tensor(t.name, dims, kTypeF32);
  }
  const ModelSpec s = parse_gguf_model(b.build(), "gemma3n.gguf", db()).spec;
  CHECK(s.model_type == "gemma3n_text");
  CHECK(s.hidden_size_per_layer_input == 8);
  CHECK(s.vocab_size_per_layer_input == 100);
  CHECK(s.altup_num_inputs == 4);
  CHECK(s.laurel_rank == 4);
  CHECK(s.num_kv_shared_layers == 4);
  CHECK(s.sliding_window_pattern == 5);  // llama.cpp's period for gemma3n
  CHECK(parameter_count(s) == parameter_count(*tiny));
  // Layers 0-5 cache: full 4, sliding 0-3 and 5; 6-8 (sliding) and 9 (full) read them. 2 x 32 per token per layer.
  const KvShape k = kv_shape(s);
  CHECK(k.full_layers == 1);
  CHECK(k.sliding_layers == 5);
  CHECK(k.shared_full_layers == 1);
  CHECK(k.shared_sliding_layers == 3);
  CHECK(kv_cache_elements_per_token_full(s) == 6 * 64);
}
