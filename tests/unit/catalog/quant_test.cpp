// SPDX-License-Identifier: MIT
// Quantization module: ggml block layouts, llama-quantize mixes against real
// GGUF files, fallbacks, MoE and tied-embedding rules, other formats' overheads.
#include <catch2/catch.hpp>

#include <fstream>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>

#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/catalog/quant.hpp"

using namespace optadvisor;

namespace {

nlohmann::json read_json(const std::string& relative) {
  std::ifstream in(std::string(OPTADVISOR_SOURCE_DIR) + "/" + relative);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

const QuantDb& db() {
  static const QuantDb instance = [] {
    std::vector<Problem> problems;
    QuantDb d = QuantDb::from_json(read_json("data/quant/ggml_types.json"), read_json("data/quant/formats.json"), problems);
    for (const auto& p : problems) FAIL_CHECK(p.pointer << ": " << p.message);
    return d;
  }();
  return instance;
}

Tensor make(std::string name, std::string kind, int layer, uint64_t row, uint64_t rows = 1, uint64_t slices = 1) {
  Tensor t;
  t.name = std::move(name);
  t.kind = std::move(kind);
  t.layer = layer;
  t.row_elements = row;
  t.rows = rows;
  t.slices = slices;
  return t;
}

/// A Llama-style dense decoder in GGUF naming and ggml shape order (ne[0] first).
struct DenseShape {
  int layers;
  uint64_t hidden, heads, kv_heads, head_dim, ffn, vocab;
  bool tied;
};

std::vector<Tensor> dense_tensors(const DenseShape& s) {
  std::vector<Tensor> t;
  t.push_back(make("token_embd.weight", "token_embd", -1, s.hidden, s.vocab));
  t.push_back(make("output_norm.weight", "output_norm", -1, s.hidden));
  if (!s.tied) t.push_back(make("output.weight", "output", -1, s.hidden, s.vocab));
  for (int i = 0; i < s.layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    t.push_back(make(p + "attn_norm.weight", "attn_norm", i, s.hidden));
    t.push_back(make(p + "attn_q.weight", "attn_q", i, s.hidden, s.heads * s.head_dim));
    t.push_back(make(p + "attn_k.weight", "attn_k", i, s.hidden, s.kv_heads * s.head_dim));
    t.push_back(make(p + "attn_v.weight", "attn_v", i, s.hidden, s.kv_heads * s.head_dim));
    t.push_back(make(p + "attn_output.weight", "attn_output", i, s.heads * s.head_dim, s.hidden));
    t.push_back(make(p + "ffn_norm.weight", "ffn_norm", i, s.hidden));
    t.push_back(make(p + "ffn_gate.weight", "ffn_gate", i, s.hidden, s.ffn));
    t.push_back(make(p + "ffn_up.weight", "ffn_up", i, s.hidden, s.ffn));
    t.push_back(make(p + "ffn_down.weight", "ffn_down", i, s.ffn, s.hidden));
  }
  return t;
}

// Llama-3.1-8B: 32 layers, hidden 4096, 32 heads, 8 KV heads, head_dim 128, FFN 14336, vocab 128256, untied.
const DenseShape kLlama31_8B{32, 4096, 32, 8, 128, 14336, 128256, false};
const QuantModelFacts kLlama31_8BFacts{"llama", 32, 32, 8, 0, false};
// Llama-3.1-70B: 80 layers, hidden 8192, 64 heads, 8 KV heads, FFN 28672.
const DenseShape kLlama31_70B{80, 8192, 64, 8, 128, 28672, 128256, false};
const QuantModelFacts kLlama31_70BFacts{"llama", 80, 64, 8, 0, false};
// Llama-3.2-1B: 16 layers, hidden 2048, 32 heads (head_dim 64), 8 KV heads, FFN 8192, tied.
const DenseShape kLlama32_1B{16, 2048, 32, 8, 64, 8192, 128256, true};
const QuantModelFacts kLlama32_1BFacts{"llama", 16, 32, 8, 0, true};
// Mistral-7B-v0.3: as Llama-3.1-8B but vocab 32768.
const DenseShape kMistral7B{32, 4096, 32, 8, 128, 14336, 32768, false};

WeightsBreakdown run(const std::vector<Tensor>& tensors, const QuantModelFacts& facts, std::string_view format, QuantOptions options = {}) {
  return quantize(tensors, facts, db().resolve(format), db(), options);
}

const TensorAssignment& find_tensor(const WeightsBreakdown& b, const std::string& name) {
  for (const auto& a : b.tensors)
    if (a.name == name) return a;
  FAIL("no tensor " << name);
  throw std::logic_error("unreachable");
}

std::map<std::string, int> storage_counts(const WeightsBreakdown& b, const std::string& kind) {
  std::map<std::string, int> counts;
  for (const auto& a : b.tensors)
    if (a.kind == kind) ++counts[a.storage];
  return counts;
}

Error catch_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  FAIL("no optadvisor::Error thrown");
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("quant data files pass the schema and load without problems", "[quant]") {
  for (const char* file : {"data/quant/ggml_types.json", "data/quant/formats.json"}) {
    std::vector<Problem> problems;
    check_against_schema("quant", read_json(file), file, problems);
    for (const auto& p : problems) FAIL_CHECK(to_string(p));
  }
  CHECK(db().formats().size() >= 40);
  CHECK(db().find("q4_k_m") != nullptr);
}

TEST_CASE("ggml block layouts match ggml-common.h", "[quant]") {
  struct Expected {
    const char* id;
    uint32_t type_id, block, bytes;
    double bpw;
  };
  const Expected expected[] = {
      {"F32", 0, 1, 4, 32},
      {"F16", 1, 1, 2, 16},
      {"BF16", 30, 1, 2, 16},
      {"Q4_0", 2, 32, 18, 4.5},
      {"Q4_1", 3, 32, 20, 5.0},
      {"Q5_0", 6, 32, 22, 5.5},
      {"Q5_1", 7, 32, 24, 6.0},
      {"Q8_0", 8, 32, 34, 8.5},
      {"Q8_1", 9, 32, 36, 9.0},
      {"Q2_K", 10, 256, 84, 2.625},
      {"Q3_K", 11, 256, 110, 3.4375},
      {"Q4_K", 12, 256, 144, 4.5},
      {"Q5_K", 13, 256, 176, 5.5},
      {"Q6_K", 14, 256, 210, 6.5625},
      {"Q8_K", 15, 256, 292, 9.125},
      {"IQ2_XXS", 16, 256, 66, 2.0625},
      {"IQ2_XS", 17, 256, 74, 2.3125},
      {"IQ3_XXS", 18, 256, 98, 3.0625},
      {"IQ1_S", 19, 256, 50, 1.5625},
      {"IQ4_NL", 20, 32, 18, 4.5},
      {"IQ3_S", 21, 256, 110, 3.4375},
      {"IQ2_S", 22, 256, 82, 2.5625},
      {"IQ4_XS", 23, 256, 136, 4.25},
      {"IQ1_M", 29, 256, 56, 1.75},
      {"TQ1_0", 34, 256, 54, 1.6875},
      {"TQ2_0", 35, 256, 66, 2.0625},
      {"MXFP4", 39, 32, 17, 4.25},
  };
  for (const auto& e : expected) {
    INFO(e.id);
    const GgmlType* t = db().ggml_type(e.id);
    REQUIRE(t != nullptr);
    CHECK(t->type_id == e.type_id);
    CHECK(t->block_elements == e.block);
    CHECK(t->bytes_per_block == e.bytes);
    CHECK(t->bits_per_weight() == Approx(e.bpw).epsilon(1e-12));
    CHECK(db().ggml_type_by_id(e.type_id) == t);
  }
  // Retired ids still resolve for old files; Q4_0_4_4 has Q4_0's bytes.
  const GgmlType* repacked = db().ggml_type_by_id(31);
  REQUIRE(repacked != nullptr);
  CHECK(repacked->removed);
  CHECK(repacked->bytes_for(4096) == db().ggml_type("Q4_0")->bytes_for(4096));
  // tensor_type_fallback targets.
  CHECK(db().ggml_type("Q4_K")->fallback == "Q5_0");
  CHECK(db().ggml_type("Q5_K")->fallback == "Q5_1");
  CHECK(db().ggml_type("Q6_K")->fallback == "Q8_0");
  CHECK(db().ggml_type("Q2_K")->fallback == "Q4_0");
  CHECK(db().ggml_type("IQ4_XS")->fallback == "IQ4_NL");
}

TEST_CASE("Llama-3.1-8B Q4_K_M is 4,920,739,232 bytes on disk", "[quant]") {
  const auto tensors = dense_tensors(kLlama31_8B);
  const auto b = run(tensors, kLlama31_8BFacts, "q4_k_m");
  // token_embd  Q4_K: 4096 x 128256 = 525,336,576 weights / 256 x 144 = 295,501,824
  // output      Q6_K: 525,336,576 / 256 x 210                          = 430,940,160
  // output_norm F32:  4096 x 4                                           =      16,384
  // per layer, all Q4_K: q, o 16,777,216 w -> 9,437,184 each; k, v 4,194,304 w -> 2,359,296 each;
  //   gate, up, down 58,720,256 w -> 33,030,144 each; 2 norms 16,384 each  = 122,716,160
  //   x 32 layers                                                          = 3,926,917,120
  // use_more_bits picks 16 of 32 layers (0-3, 6, 9, ..., 27, 28-31):
  //   attn_v Q6_K: 16 x (3,440,640 - 2,359,296)                            =  17,301,504
  //   ffn_down Q6_K: 16 x (48,168,960 - 33,030,144)                        = 242,221,056
  // total                                                                  = 4,912,898,048
  CHECK(b.weights_bytes == 4'912'898'048ULL);
  CHECK(b.params == 8'030'261'248ULL);
  // tools/quantize/README.md lists 4.8944 bits per weight for this mix.
  CHECK(b.bits_per_weight == Approx(4.8944).margin(5e-5));
  // Header: 24 B + 7,823,874 B of key/value metadata (Llama 3 vocabulary, calibrated
  // on this very file) + 291 tensor infos of 17,286 B = 7,841,184 B, already 32-aligned.
  CHECK(b.header_bytes == 7'841'184ULL);
  CHECK(b.file_bytes == 4'920'739'232ULL);

  CHECK(find_tensor(b, "token_embd.weight").storage == "Q4_K");
  CHECK(find_tensor(b, "output.weight").storage == "Q6_K");
  CHECK(find_tensor(b, "output_norm.weight").storage == "F32");
  CHECK(storage_counts(b, "attn_v") == std::map<std::string, int>{{"Q4_K", 16}, {"Q6_K", 16}});
  CHECK(storage_counts(b, "ffn_down") == std::map<std::string, int>{{"Q4_K", 16}, {"Q6_K", 16}});
  for (int layer : {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31})
    CHECK(find_tensor(b, "blk." + std::to_string(layer) + ".ffn_down.weight").storage == "Q6_K");
  CHECK(find_tensor(b, "blk.4.ffn_down.weight").storage == "Q4_K");

  // Groups for --verbose add up to the total.
  uint64_t sum = 0;
  for (const auto& g : b.groups) sum += g.bytes;
  CHECK(sum == b.weights_bytes);
  CHECK(b.groups.front().group == "embeddings");
  CHECK(b.groups.front().bytes == 295'501'824ULL);
}

TEST_CASE("other Llama-3 8B mixes reproduce real files", "[quant]") {
  const auto tensors = dense_tensors(kLlama31_8B);
  // bartowski Q2_K: Q2_K base, attn_v Q4_K (gqa 4), ffn_down and attn_output Q3_K.
  // Tensor bytes 3,171,295,232 + the same 7,841,184 B header.
  CHECK(run(tensors, kLlama31_8BFacts, "q2_k").weights_bytes == 3'171'295'232ULL);
  CHECK(run(tensors, kLlama31_8BFacts, "q2_k").file_bytes == 3'179'136'416ULL);
  // Q8_0: the 8,030,261,248 - 266,240 = 8,029,995,008 matrix weights at 34 B per 32 are
  // 8,531,869,696 B, the 266,240 norm weights F32 1,064,960 B: 8,532,934,656 B of tensors.
  // ThomasBaruzier's file is 8,540,775,808 B, 32 B less than our estimate (its metadata differs).
  const auto q8 = run(tensors, kLlama31_8BFacts, "q8_0");
  CHECK(q8.weights_bytes == 8'532'934'656ULL);
  CHECK(q8.file_bytes - 8'540'775'808ULL == 32);
  // Q5_0 with an importance matrix puts the first n/8 = 4 ffn_down in Q5_1 (llama-quantize
  // guards Q4_0/Q5_0 that way only with --imatrix): + 4 x 58,720,256 / 32 x 2 B = 14,680,064 B.
  const auto q5_static = run(tensors, kLlama31_8BFacts, "q5_0");
  const auto q5_imatrix = run(tensors, kLlama31_8BFacts, "q5_0", QuantOptions{true});
  CHECK(q5_imatrix.weights_bytes - q5_static.weights_bytes == 14'680'064ULL);
  CHECK(q5_imatrix.file_bytes - 5'613'979'008ULL == 32);  // ThomasBaruzier's imatrix Q5_0
  // IQ2_S needs an imatrix; ThomasBaruzier's file is 2,758,493,568 B.
  CHECK(run(tensors, kLlama31_8BFacts, "iq2_s").file_bytes - 2'758'493'568ULL == 32);
}

TEST_CASE("Mistral-7B Q4_K_M tensor bytes equal what llama.cpp reports", "[quant]") {
  // llama.cpp server /v1/models meta "size" for Mistral-7B-v0.3 Q4_K_M: 4,372,054,016 B of tensors.
  // Same layers as Llama-3.1-8B (3,926,917,120 + 17,301,504 + 242,221,056 + 16,384 = 4,186,456,064)
  // plus token_embd Q4_K 4096 x 32768 / 256 x 144 = 75,497,472 and output Q6_K / 256 x 210 = 110,100,480.
  const QuantModelFacts facts{"llama", 32, 32, 8, 0, false};
  const auto b = run(dense_tensors(kMistral7B), facts, "q4_k_m");
  CHECK(b.weights_bytes == 4'372'054'016ULL);
  CHECK(b.params == 7'248'023'552ULL);
}

TEST_CASE("70B models bump attn_v to Q5_K", "[quant]") {
  const auto tensors = dense_tensors(kLlama31_70B);
  const auto b = run(tensors, kLlama31_70BFacts, "q4_k_m");
  // llama.cpp classifies an 80-layer GQA llama as 70B: attn_v that would be Q4_K becomes Q5_K;
  // use_more_bits layers stay Q6_K (40 of 80).
  CHECK(storage_counts(b, "attn_v") == std::map<std::string, int>{{"Q5_K", 40}, {"Q6_K", 40}});
  // bartowski Llama-3.1-70B-Instruct Q4_K_M: 42,512,531,456 B of tensors, file 42,520,398,400 B;
  // our header (same metadata, 723 tensor infos = 43,110 B) is 64 B larger than that file's.
  CHECK(b.weights_bytes == 42'512'531'456ULL);
  CHECK(b.file_bytes - 42'520'398'400ULL == 64);
  // The same shape as qwen2 is 70B too; as a 65B-style model without GQA it is not.
  const auto no_gqa = run(tensors, QuantModelFacts{"llama", 80, 64, 64, 0, false}, "q4_k_m");
  CHECK(storage_counts(no_gqa, "attn_v").count("Q5_K") == 0);
}

TEST_CASE("rows that do not hold whole blocks fall back", "[quant]") {
  // Qwen2.5-72B's ffn_down rows are 29,568 long: 29,568 / 256 = 115.5, so Q4_K -> Q5_0
  // (29,568 / 32 = 924 blocks of 22 B per row) and Q6_K -> Q8_0. Five such layers of a
  // 16-layer model: use_more_bits(i, 16) holds for 0, 1 and 4 (and 14, 15), not for 2 and 3.
  std::vector<Tensor> t = {make("token_embd.weight", "token_embd", -1, 8192, 152064), make("output.weight", "output", -1, 8192, 152064),
                           make("blk.4.attn_q.weight", "attn_q", 4, 8200, 8)};
  for (int i = 0; i < 5; ++i) t.push_back(make("blk." + std::to_string(i) + ".ffn_down.weight", "ffn_down", i, 29568, 8192));
  const QuantModelFacts facts{"qwen2", 16, 64, 8, 0, false};
  const auto b = run(t, facts, "q4_k_m");
  const auto& more_bits = find_tensor(b, "blk.0.ffn_down.weight");  // Q6_K -> Q8_0
  CHECK(more_bits.storage == "Q8_0");
  CHECK(more_bits.bytes == 8192ULL * 924 * 34);
  const auto& plain = find_tensor(b, "blk.3.ffn_down.weight");  // Q4_K -> Q5_0
  CHECK(plain.storage == "Q5_0");
  CHECK(plain.bytes == 8192ULL * 924 * 22);
  CHECK(plain.note == "row of 29568 is not a multiple of Q4_K's 256: Q5_0 instead");
  // 8,200 is not a multiple of 32 either: Q4_K -> Q5_0 does not fit, F16 is the last resort.
  CHECK(find_tensor(b, "blk.4.attn_q.weight").storage == "F16");
  // A row that is not a multiple of the default type's block makes output Q8_0 (here it fits).
  CHECK(find_tensor(b, "output.weight").storage == "Q6_K");
  const auto odd = run({make("output.weight", "output", -1, 2880, 1000)}, facts, "q4_k_m");
  CHECK(odd.tensors[0].storage == "Q8_0");  // 2880 % 256 != 0
  REQUIRE_FALSE(b.notes.empty());
}

TEST_CASE("tied embeddings: token_embd takes the output rule", "[quant]") {
  const auto b = run(dense_tensors(kLlama32_1B), kLlama32_1BFacts, "q4_k_m");
  const auto& embd = find_tensor(b, "token_embd.weight");
  CHECK(embd.storage == "Q6_K");
  CHECK(embd.category == "output");
  // bartowski Llama-3.2-1B-Instruct Q4_K_M: 799,862,784 B of tensors, 807,694,464 B on disk;
  // our header is 864 B larger than that file's.
  CHECK(b.weights_bytes == 799'862'784ULL);
  CHECK(b.file_bytes - 807'694'464ULL == 864);
  // Untied, the same tensor keeps the default type.
  DenseShape untied = kLlama32_1B;
  untied.tied = false;
  CHECK(find_tensor(run(dense_tensors(untied), kLlama32_1BFacts, "q4_k_m"), "token_embd.weight").storage == "Q4_K");
}

TEST_CASE("MoE expert rules", "[quant]") {
  // A Mixtral-like model: 8 experts, merged expert stacks (ne[2] = 8), router ffn_gate_inp.
  std::vector<Tensor> t = {make("token_embd.weight", "token_embd", -1, 4096, 32000), make("output.weight", "output", -1, 4096, 32000)};
  for (int i = 0; i < 32; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    t.push_back(make(p + "attn_k.weight", "attn_k", i, 4096, 1024));
    t.push_back(make(p + "attn_v.weight", "attn_v", i, 4096, 1024));
    t.push_back(make(p + "attn_output.weight", "attn_output", i, 4096, 4096));
    t.push_back(make(p + "ffn_gate_inp.weight", "ffn_gate_inp", i, 4096, 8));
    t.push_back(make(p + "ffn_down_exps.weight", "ffn_down_exps", i, 14336, 4096, 8));
    t.push_back(make(p + "ffn_up_exps.weight", "ffn_up_exps", i, 4096, 14336, 8));
  }
  const QuantModelFacts mixtral{"llama", 32, 32, 8, 8, false};
  const auto b = run(t, mixtral, "q4_k_m");
  // Exactly 8 experts: attn_v and attn_k Q8_0, attn_output Q5_K; the router is never quantized.
  CHECK(storage_counts(b, "attn_v") == std::map<std::string, int>{{"Q8_0", 32}});
  CHECK(storage_counts(b, "attn_k") == std::map<std::string, int>{{"Q8_0", 32}});
  CHECK(storage_counts(b, "attn_output") == std::map<std::string, int>{{"Q5_K", 32}});
  CHECK(storage_counts(b, "ffn_gate_inp") == std::map<std::string, int>{{"F32", 32}});
  // Expert stacks follow the ffn_down rule with the layer taken from the name.
  CHECK(storage_counts(b, "ffn_down_exps") == std::map<std::string, int>{{"Q4_K", 16}, {"Q6_K", 16}});
  const auto& exps = find_tensor(b, "blk.0.ffn_down_exps.weight");
  CHECK(exps.storage == "Q6_K");
  CHECK(exps.bytes == 8ULL * 4096 * (14336 / 256) * 210);
  CHECK(exps.group == "experts");

  // 128 experts: no 8-expert overrides; attn_v follows use_more_bits again.
  const QuantModelFacts many{"qwen3moe", 32, 32, 8, 128, false};
  CHECK(storage_counts(run(t, many, "q4_k_m"), "attn_v") == std::map<std::string, int>{{"Q4_K", 16}, {"Q6_K", 16}});

  // MXFP4_MOE: expert stacks MXFP4, every other quantizable tensor Q8_0.
  const auto mx = run(t, mixtral, "mxfp4_moe");
  CHECK(find_tensor(mx, "blk.3.ffn_up_exps.weight").storage == "MXFP4");
  CHECK(find_tensor(mx, "blk.3.attn_output.weight").storage == "Q8_0");
  CHECK(find_tensor(mx, "output.weight").storage == "Q8_0");
  CHECK(find_tensor(mx, "token_embd.weight").storage == "Q8_0");
  CHECK(find_tensor(mx, "blk.3.ffn_gate_inp.weight").storage == "F32");
}

TEST_CASE("very-low-bit mixes protect embeddings, output, attn_v and early ffn_down", "[quant]") {
  const auto b = run(dense_tensors(kLlama31_8B), kLlama31_8BFacts, "iq2_xxs");
  CHECK(find_tensor(b, "token_embd.weight").storage == "Q2_K");
  CHECK(find_tensor(b, "output.weight").storage == "Q5_K");
  CHECK(storage_counts(b, "attn_v") == std::map<std::string, int>{{"Q4_K", 32}});  // gqa 32/8 = 4
  CHECK(storage_counts(b, "ffn_down") == std::map<std::string, int>{{"IQ2_XXS", 28}, {"Q2_K", 4}});
  // tools/quantize/README.md: IQ2_XXS 2.3824 bits per weight on Llama-3.1-8B.
  CHECK(b.bits_per_weight == Approx(2.3824).margin(5e-5));
}

TEST_CASE("non-GGUF layouts: AWQ, GPTQ, NVFP4, MXFP4, MLX, NF4 overheads", "[quant]") {
  // One 4096 x 4096 Linear weight = 16,777,216 weights, 4096 rows of 4096 inputs.
  const Tensor w = make("blk.0.attn_q.weight", "attn_q", 0, 4096, 4096);
  auto bytes = [&](const char* layout) { return db().layout(layout)->bytes_for(w); };
  // AWQ: 4 bits x 16,777,216 = 67,108,864 bits; 4096 rows x 32 groups x (16-bit scale + 4-bit zero)
  // = 2,621,440 bits; 69,730,304 bits = 8,716,288 B = 4.15625 bits per weight.
  CHECK(bytes("awq-g128") == 8'716'288ULL);
  // GPTQ: the same plus g_idx, one int32 per input channel: 4096 x 4 = 16,384 B.
  CHECK(bytes("gptq-g128") == 8'716'288ULL + 16'384);
  // NVFP4: 67,108,864 + 1,048,576 scales x 8 bits + 2 fp32 per-tensor scales = 75,497,536 bits.
  CHECK(bytes("nvfp4") == 9'437'192ULL);
  // MXFP4: 67,108,864 + 524,288 E8M0 scales x 8 bits = 71,303,168 bits = 4.25 bits per weight.
  CHECK(bytes("mxfp4") == 8'912'896ULL);
  // MLX 4-bit: 67,108,864 + 262,144 groups x (16-bit scale + 16-bit bias) = 75,497,472 bits.
  CHECK(bytes("mlx-affine-4-g64") == 9'437'184ULL);
  // NF4 with double quant: 67,108,864 + 262,144 uint8 absmax x 8 + 1,024 fp32 second-level
  // scales x 32 + 8,736 bits of code books and offset = 69,247,520 bits.
  CHECK(bytes("bnb-nf4-dq") == 8'655'940ULL);
  // LLM.int8: 8 bits + one fp32 per row: 16,777,216 + 16,384 B.
  CHECK(bytes("bnb-int8") == 16'793'600ULL);
}

TEST_CASE("block-scaled FP8: one fp32 scale per 128 x 128 tile, edge tiles included", "[quant]") {
  const StorageLayout& fp8 = *db().layout("fp8-block128");
  // 4096 x 4096: 16,777,216 B of E4M3 + (32 x 32 = 1,024 tiles) x 4 B = 16,781,312 B.
  CHECK(fp8.bytes_for(make("blk.0.attn_q.weight", "attn_q", 0, 4096, 4096)) == 16'781'312ULL);
  // DeepSeek-V3 kv_a_proj_with_mqa: 576 rows of 7168 inputs. 576 / 128 = 4.5 -> 5 row tiles,
  // 7168 / 128 = 56 column tiles: 280 scales. 4,128,768 B + 280 x 4 = 4,129,888 B.
  const Tensor kv_a = make("blk.0.attn_kv_a_mqa.weight", "attn_kv_a_mqa", 0, 7168, 576);
  CHECK(fp8.fits(kv_a));
  CHECK(fp8.bytes_for(kv_a) == 4'129'888ULL);
  // A stack of 256 experts of 2048 rows x 7168: 256 x 16 x 56 = 229,376 scales.
  Tensor experts = make("blk.3.ffn_up_exps.weight", "ffn_up_exps", 3, 7168, 2048);
  experts.slices = 256;
  CHECK(fp8.bytes_for(experts) == 256ULL * 7168 * 2048 + 229'376ULL * 4);
}

TEST_CASE("MXFP4 runs weight-only where there are no FP4 matrix units, FP8 needs FP8 units", "[quant]") {
  Capabilities hopper;
  hopper.fp8 = true;
  Capabilities ampere;
  const QuantFormat& mxfp4 = db().resolve("mxfp4");
  REQUIRE(mxfp4.native_compute);
  CHECK(mxfp4.native_compute->weight_only_fallback);
  // gpt-oss on an H100: vLLM's Marlin MXFP4 path runs its own checkpoint; other models are not offered MXFP4 there.
  CHECK_FALSE(runs_natively(mxfp4, hopper));
  ModelSpec gpt_oss;
  gpt_oss.native_format = "mxfp4";
  CHECK(runs_checkpoint(mxfp4, hopper, gpt_oss));
  CHECK_FALSE(runs_checkpoint(mxfp4, hopper, ModelSpec{}));
  CHECK(runs_natively(db().resolve("fp8-block"), hopper));
  CHECK_FALSE(runs_natively(db().resolve("fp8-block"), ampere));
  CHECK_FALSE(runs_natively(db().resolve("nvfp4"), hopper));
  // The checkpoint, the GGUF and MLX's conversion of the same MXFP4 weights name each other.
  CHECK(mxfp4.equivalents == std::vector<std::string>{"mxfp4_moe", "mlx-mxfp4-q8"});
  CHECK(db().resolve("mxfp4_moe").equivalents == std::vector<std::string>{"mxfp4"});
  CHECK(db().resolve("mlx-mxfp4-q8").equivalents == std::vector<std::string>{"mxfp4"});
}

TEST_CASE("non-GGUF formats: which tensors stay 16-bit", "[quant]") {
  const auto tensors = dense_tensors(kLlama31_8B);
  // AWQ keeps token_embd and lm_head in f16.
  const auto awq = run(tensors, kLlama31_8BFacts, "awq-int4");
  CHECK(find_tensor(awq, "token_embd.weight").storage == "f16");
  CHECK(find_tensor(awq, "output.weight").storage == "f16");
  CHECK(find_tensor(awq, "blk.0.ffn_down.weight").storage == "awq-g128");
  // 6,979,321,856 block weights x 4.15625 / 8 = 3,625,975,808 B (every input dim is a multiple
  // of 128) + 2 x 525,336,576 x 2 B of embeddings + 266,240 x 2 B of norms = 5,727,854,592 B.
  CHECK(awq.weights_bytes == 5'727'854'592ULL);

  // hugging-quants Llama-3.1-70B-Instruct-AWQ-INT4: 9 shards listed at 39.77 GB in total.
  // 68,451,041,280 block weights x 4.15625 / 8 = 35,562,455,040 B + 2 x 1,050,673,152 x 2 B of
  // embeddings + 161 x 8192 x 2 B of norms = 39,767,785,472 B.
  CHECK(run(dense_tensors(kLlama31_70B), kLlama31_70BFacts, "awq-int4").weights_bytes == 39'767'785'472ULL);
  // TheBloke Mistral-7B-v0.1 AWQ and GPTQ (g128) list 4.15 GB and 4.16 GB; g_idx adds 32 bits
  // per input channel of each of the 224 linear layers.
  const DenseShape mistral01{32, 4096, 32, 8, 128, 14336, 32000, false};
  const QuantModelFacts mistral_facts{"llama", 32, 32, 8, 0, false};
  const auto mistral_awq = run(dense_tensors(mistral01), mistral_facts, "awq-int4");
  const auto mistral_gptq = run(dense_tensors(mistral01), mistral_facts, "gptq-int4");
  CHECK(mistral_awq.file_bytes == Approx(4.15e9).epsilon(0.0013));
  CHECK(mistral_gptq.file_bytes == Approx(4.16e9).epsilon(0.0013));
  CHECK(mistral_gptq.weights_bytes - mistral_awq.weights_bytes == 32ULL * (6 * 4096 + 14336) * 4);

  // mlx-lm quantizes every Linear and the Embedding: (6,979,321,856 + 2 x 525,336,576) x 4.5 / 8
  // = 4,516,872,192 B + 532,480 B of bf16 norms = 4,517,404,672 B; mlx-community lists 4.52 GB.
  const auto mlx = run(tensors, kLlama31_8BFacts, "mlx-4bit");
  CHECK(mlx.weights_bytes == 4'517'404'672ULL);
  CHECK(find_tensor(mlx, "token_embd.weight").storage == "mlx-affine-4-g64");
  CHECK(run(tensors, kLlama31_8BFacts, "mlx-8bit").bits_per_weight == Approx(8.5).margin(0.001));

  // FP8 (neuralmagic Llama-3.1-8B-Instruct-FP8 lists 9.08 GB): 6,979,321,856 B of FP8 weights,
  // 2,101,346,304 B of bf16 embeddings, per-channel scales and norms.
  const auto fp8 = run(tensors, kLlama31_8BFacts, "fp8");
  CHECK(fp8.file_bytes == Approx(9.08e9).epsilon(0.001));

  // NVFP4 and NF4 keep lm_head and embeddings 16-bit; ExecuTorch 8da4w makes them 8-bit per
  // channel; QNN w4a16 keeps the embedding 16-bit and makes lm_head 8-bit.
  CHECK(find_tensor(run(tensors, kLlama31_8BFacts, "nvfp4"), "output.weight").storage == "bf16");
  CHECK(find_tensor(run(tensors, kLlama31_8BFacts, "nf4"), "output.weight").storage == "bf16");
  const auto et = run(tensors, kLlama31_8BFacts, "8da4w");
  CHECK(find_tensor(et, "token_embd.weight").storage == "et-8bit-channel");
  CHECK(find_tensor(et, "blk.0.attn_q.weight").storage == "et-4bit-g32");
  const auto qnn = run(tensors, kLlama31_8BFacts, "w4a16");
  CHECK(find_tensor(qnn, "token_embd.weight").storage == "f16");
  CHECK(find_tensor(qnn, "output.weight").storage == "qnn-w8-channel");
  CHECK(qnn.file_bytes == qnn.weights_bytes);
  CHECK_FALSE(qnn.file_overhead_modeled);

  // MXFP4 on a MoE model (gpt-oss): only expert stacks; attention stays bf16.
  const std::vector<Tensor> moe = {make("blk.0.attn_q.weight", "attn_q", 0, 2880, 4096),
                                   make("blk.0.ffn_down_exps.weight", "ffn_down_exps", 0, 2880, 2880, 32)};
  const auto gpt_oss = run(moe, QuantModelFacts{"gpt-oss", 24, 64, 8, 32, false}, "mxfp4");
  CHECK(gpt_oss.tensors[0].storage == "bf16");
  CHECK(gpt_oss.tensors[1].storage == "mxfp4");
  // 32 x 2880 x 2880 = 265,420,800 weights x 4.25 bits / 8 = 141,004,800 B.
  CHECK(gpt_oss.tensors[1].bytes == 141'004'800ULL);

  // A row that is not a multiple of MLX's group of 64 stays unquantized.
  const auto odd = run({make("blk.0.ffn_down.weight", "ffn_down", 0, 4100, 64)}, kLlama31_8BFacts, "mlx-4bit");
  CHECK(odd.tensors[0].storage == "bf16");
}

TEST_CASE("unquantized checkpoints", "[quant]") {
  const auto tensors = dense_tensors(kLlama31_8B);
  // safetensors bf16: 2 B per parameter.
  CHECK(run(tensors, kLlama31_8BFacts, "hf-bf16").weights_bytes == 2 * 8'030'261'248ULL);
  // GGUF BF16 keeps the 266,240 norm weights F32: + 532,480 B. The Llama-3-8B-Instruct BF16
  // file (ddh0) is 16,068,890,912 B; our estimate is 5,248 B larger (different metadata).
  const auto bf16 = run(tensors, kLlama31_8BFacts, "bf16");
  CHECK(bf16.weights_bytes == 2 * 8'030'261'248ULL + 532'480);
  CHECK(bf16.file_bytes - 16'068'890'912ULL == 5'248);
  CHECK(run(tensors, kLlama31_8BFacts, "fp32").weights_bytes == 4 * 8'030'261'248ULL);
}

TEST_CASE("KV-cache dtypes", "[quant]") {
  CHECK(db().kv_bytes_per_element("f16") == 2.0);
  CHECK(db().kv_bytes_per_element("bf16") == 2.0);
  CHECK(db().kv_bytes_per_element("fp8") == 1.0);
  CHECK(db().kv_bytes_per_element("q8_0") == Approx(34.0 / 32));
  CHECK(db().kv_bytes_per_element("q4_0") == Approx(18.0 / 32));
  const Error e = catch_error([] { (void)db().kv_bytes_per_element("int3"); });
  CHECK(std::string(e.what()) == "unknown KV-cache dtype 'int3'");
  CHECK(e.hint() == "valid KV-cache dtypes: f16, bf16, fp8, q8_0, q4_0");
  CHECK(e.code() == ExitCode::kBadInput);
}

TEST_CASE("format lookup", "[quant]") {
  CHECK(db().find("Q4_K_M") == db().find("q4_k_m"));
  CHECK(db().find("q4km") == db().find("q4_k_m"));
  CHECK(db().find("AWQ-INT4")->id == "awq-int4");
  CHECK(db().find("q4_k_x") == nullptr);
  const Error e = catch_error([] { (void)db().resolve("q4_k_x"); });
  CHECK(std::string(e.what()) == "unknown quantization format 'q4_k_x'");
  CHECK_THAT(e.hint(), Catch::Contains("'q4_k_m'") && Catch::StartsWith("did you mean"));
  const Error none = catch_error([] { (void)db().resolve("zzzzzzzzzzzz"); });
  CHECK_THAT(none.hint(), Catch::StartsWith("valid formats: q2_k, "));
}

TEST_CASE("bad quant data is reported with pointers", "[quant]") {
  nlohmann::json formats = read_json("data/quant/formats.json");
  formats["formats"][0]["rules"].push_back({{"tensors", {"attn_z"}}, {"storage", "Q9_K"}});
  formats["formats"][0]["rules"].push_back({{"size_class", "13B"}, {"storage", "Q4_K"}});
  formats["formats"][1]["id"] = formats["formats"][0]["id"];
  formats["layouts"][3]["group_elements"] = nullptr;
  formats["kv_cache_dtypes"][0]["ggml_type"] = "F16";
  std::vector<Problem> problems;
  (void)QuantDb::from_json(read_json("data/quant/ggml_types.json"), formats, problems);
  const std::size_t n = formats["formats"][0]["rules"].size();
  auto has = [&](const std::string& pointer, const std::string& message) {
    for (const auto& p : problems)
      if (p.pointer == pointer && p.message == message) return true;
    return false;
  };
  for (const auto& p : problems) INFO(p.pointer << ": " << p.message);
  CHECK(has("/formats/0/rules/" + std::to_string(n - 2) + "/storage", "format 'q2_k': 'Q9_K' is not a ggml type (or keep)"));
  CHECK(has("/formats/0/rules/" + std::to_string(n - 2) + "/tensors/0", "unknown tensor category 'attn_z'"));
  CHECK(has("/formats/0/rules/" + std::to_string(n - 1) + "/size_class", "unknown size class '13B'"));
  CHECK(has("/formats/1/id", "duplicate format id 'q2_k'"));
  CHECK(has("/layouts/3", "group_bits, groups_over_tensor, nested_groups and block_rows need group_elements"));
  CHECK(has("/kv_cache_dtypes/0", "give exactly one of bits_per_element and ggml_type"));
}

TEST_CASE("breakdown serializes to JSON", "[quant]") {
  const auto b = run(dense_tensors(kLlama32_1B), kLlama32_1BFacts, "q8_0");
  const nlohmann::json j = b;
  CHECK(j.at("format") == "q8_0");
  CHECK(j.at("container") == "gguf");
  CHECK(j.at("weights_bytes") == b.weights_bytes);
  CHECK(j.at("file_bytes") == b.file_bytes);
  CHECK(j.at("tensors").size() == b.tensors.size());
  CHECK(j.at("tensors").at(0).at("note") == "tied embeddings: follows the output rules");
  // pocketpal lists hugging-quants' Llama-3.2-1B-Instruct Q8_0 at 1,321,079,200 B.
  CHECK(b.file_bytes - 1'321'079'200ULL == 4'672);
}
