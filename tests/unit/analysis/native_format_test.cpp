// SPDX-License-Identifier: MIT
// A model's native checkpoint format as the default weight format, per engine
// and device, and the formats a refusal names.
#include <catch2/catch.hpp>

#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/catalog/catalog.hpp"
#include "fixtures.hpp"

using namespace optadvisor;

namespace {

using fixtures::catalog;

PreparedScenario prepare(const std::string& hw, const std::string& model, const std::string& engine, const std::string& quant = "",
                         int64_t gpus = 1) {
  ScenarioRequest r;
  r.hardware = hw;
  r.model.preset = model;
  r.engine = engine;
  r.quant = quant;
  r.tp = gpus;
  return prepare_scenario(catalog(), r);
}

std::string hint_of(const std::string& hw, const std::string& model, const std::string& engine, const std::string& quant) {
  try {
    prepare(hw, model, engine, quant);
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::kBadInput);
    return e.hint();
  }
  return {};
}

}  // namespace

TEST_CASE("gpt-oss defaults to its MXFP4 checkpoint on every engine that runs it", "[analysis][native]") {
  // H100 has no FP4 tensor cores: the server engines run MXFP4 weight-only.
  for (const char* engine : {"vllm", "sglang", "tensorrt-llm"}) {
    INFO(engine);
    const auto p = prepare("h100", "gpt-oss-120b", engine);
    CHECK(p.quant->id == "mxfp4");
    // Weight-only: no FP4 matrix path on Hopper, so the compute dtype is not switched.
    CHECK(p.scenario.weights.native_compute_dtype == "fp4");
    CHECK_FALSE(catalog().resolve_hardware("h100").capabilities.mxfp4);
  }
  // llama.cpp loads the MXFP4 GGUF (file type MXFP4_MOE).
  CHECK(prepare("h100", "gpt-oss-120b", "llama.cpp").quant->id == "mxfp4_moe");
  // What users type: --quant mxfp4 is the MXFP4 GGUF on llama.cpp, the checkpoint on vLLM.
  CHECK(prepare("h100", "gpt-oss-120b", "llama.cpp", "mxfp4").quant->id == "mxfp4_moe");
  CHECK(prepare("h100", "gpt-oss-120b", "llama.cpp", "mxfp4_moe").quant->id == "mxfp4_moe");
  CHECK(prepare("h100", "gpt-oss-120b", "vllm", "mxfp4_moe").quant->id == "mxfp4");
  // A model without a native format keeps the engine's default.
  CHECK(prepare("h100", "llama-3.1-8b", "vllm").quant->id == "hf-bf16");
  CHECK(prepare("h100", "llama-3.1-8b", "llama.cpp").quant->id == "q4_k_m");
}

TEST_CASE("gpt-oss-120b in MXFP4: the checkpoint's bytes", "[analysis][native]") {
  const auto p = prepare("h100", "gpt-oss-120b", "vllm");
  // Experts: 36 layers x 128 experts x (2 x 2880 x 2880 gate/up + 2880 x 2880 down) = 114,661,785,600
  // weights: 57,330,892,800 B of E2M1 codes + 3,583,180,800 E8M0 scales (one per 32) = 60,914,073,600 B;
  // everything else (2,167,371,072 weights: attention, embeddings, head, norms, biases, router,
  // sinks) in bf16 = 4,334,742,144 B. Sum 65,248,815,744 B (65.25 GB).
  CHECK(p.weights.weights_bytes == 65'248'815'744ULL);
}

TEST_CASE("gpt-oss on MLX: MXFP4 experts, 8-bit elsewhere (mlx-community -MXFP4-Q8)", "[analysis][native]") {
  // MLX has no FP4 math but loads MXFP4 (its mode "mxfp4", one E8M0 scale per 32): the native
  // checkpoint becomes the mlx-lm conversion, and --quant mxfp4 means it there.
  CHECK(prepare("m4-max-40c", "gpt-oss-20b", "mlx").quant->id == "mlx-mxfp4-q8");
  CHECK(prepare("m4-max-40c", "gpt-oss-20b", "mlx", "mxfp4").quant->id == "mlx-mxfp4-q8");
  CHECK(prepare("m4-max-40c", "llama-3.1-8b", "mlx").quant->id == "mlx-4bit");  // no native format: the engine's default
  const auto p = prepare("m4-max-40c", "gpt-oss-20b", "mlx");
  // Experts: 24 layers x 32 x (2 x 2880 x 2880 gate/up + 2880 x 2880 down) = 19,110,297,600 weights
  // at 4.25 bits = 10,152,345,600 B, their biases 24 x 32 x (5760 + 2880) = 6,635,520 and the router
  // 24 x 2880 x 32 = 2,211,840 in bf16 = 17,694,720 B (mlx-lm quantizes the router to 8 bits:
  // 2 MB less, left out). Embedding and head 2 x 201,088 x 2880 = 1,158,266,880 and attention
  // 24 x (2 x 2880 x 4096 + 2 x 2880 x 512) = 637,009,920 weights at 8.5 bits = 1,907,481,600 B.
  // Norms, attention biases, sinks and router biases: 335,424 in bf16 = 670,848 B.
  // Sum 12,078,192,768 B (12.08 GB; the Hub's listing of the checkpoint is 12.1 GB).
  CHECK(p.weights.weights_bytes == 12'078'192'768ULL);
}

TEST_CASE("DeepSeek-V3 defaults to block-scaled FP8 where the device has FP8 units", "[analysis][native]") {
  CHECK(prepare("h100", "deepseek-v3", "vllm", "", 8).quant->id == "fp8-block");
  CHECK(prepare("h100", "deepseek-v3", "sglang", "", 8).quant->id == "fp8-block");
  // A100 has no FP8 path: the engine's 16-bit default.
  CHECK(prepare("a100", "deepseek-v3", "vllm", "", 8).quant->id == "hf-bf16");
}

TEST_CASE("a refused format names the model's native format first, then the engine's default", "[analysis][native]") {
  // llama.cpp takes GGUF files only. After mxfp4_moe (native) and q4_k_m (default) come the
  // GGUF types nearest to AWQ's 4 + 20/128 = 4.16 bits: iq4_xs (4.25), q4_0 (4.5), ...
  const std::string hint = hint_of("h100", "gpt-oss-120b", "llama.cpp", "awq-int4");
  CHECK(hint.rfind("it runs: mxfp4_moe, q4_k_m, ", 0) == 0);
  CHECK(hint.find("q2_k, q2_k_s") == std::string::npos);
  // vLLM: mxfp4 (native), hf-bf16 (default), then 4-bit checkpoints.
  CHECK(hint_of("h100", "gpt-oss-120b", "vllm", "q4_k_m").rfind("it runs: mxfp4, hf-bf16, ", 0) == 0);
  // No native format: the default, then the nearest to q8_0's 8.5 bits: fp8-block (8 + 32/16384), fp8 (8).
  CHECK(hint_of("h100", "llama-3.1-8b", "vllm", "q8_0").rfind("it runs: hf-bf16, fp8-block, fp8, ", 0) == 0);
}

TEST_CASE("Kimi-K2.5 defaults to its INT4 weight-only experts", "[analysis][native]") {
  // Weight-only INT4 has no compute prerequisite: the default on vLLM and SGLang on H100 and A100 alike.
  for (const char* engine : {"vllm", "sglang"}) {
    for (const char* hw : {"h100", "a100"}) {
      INFO(engine << " " << hw);
      CHECK(prepare(hw, "kimi-k2.5", engine, "", 8).quant->id == "int4-wo");
    }
  }
  const auto p = prepare("h200", "kimi-k2.5", "vllm", "", 8);
  // Routed experts: 60 layers x 384 x 3 x 7,168 x 2,048 = 1,014,686,023,680 weights at 4 bits + a
  // bf16 scale per 32 = 4.5 bits: 570,760,888,320 B. The other 11,722,208,768 weights (attention
  // with MLA's attn_k_b / attn_v_b, shared experts, routers, dense layer, embeddings, head, norms)
  // in bf16: 23,444,417,536 B. Sum 594,205,305,856 B (594.2 GB; the text model, not the tower).
  CHECK(p.weights.weights_bytes == 594'205'305'856ULL);
  // The serving rows' explicit format still wins.
  CHECK(prepare("b200", "kimi-k2.5", "vllm", "nvfp4", 8).quant->id == "nvfp4");
}

TEST_CASE("DeepSeek-V4 defaults to its MXFP4-expert, FP8-elsewhere checkpoint", "[analysis][native]") {
  for (const char* engine : {"vllm", "sglang", "tensorrt-llm"}) {
    INFO(engine);
    CHECK(prepare("b200", "deepseek-v4-flash", engine, "", 2).quant->id == "mxfp4-fp8");
  }
  const auto p = prepare("b200", "deepseek-v4-flash", "vllm", "", 2);
  // Routed experts: 43 layers x 256 x 3 x 4,096 x 2,048 = 277,025,390,592 weights: 138,512,695,296 B of
  // E2M1 codes + 8,657,043,456 E8M0 scales = 147,169,738,752 B. Embeddings and head 2 x 129,280 x 4,096
  // in bf16 = 2,118,123,520 B. The other 6.25e9 weights (attention, shared experts, compressors,
  // indexers, hyper-connections) in FP8 with their 128 x 128 scales, norms in bf16: 6,299,545,014 B.
  CHECK(p.weights.weights_bytes == 155'587'407'286ULL);
  // mxfp4 keeps those 6.2e9 weights in bf16: one byte more each, less their fp32 block scales.
  const auto bf16_rest = prepare("b200", "deepseek-v4-flash", "vllm", "mxfp4", 2);
  CHECK(bf16_rest.weights.weights_bytes - p.weights.weights_bytes == 6'200'685'304ULL);
}
