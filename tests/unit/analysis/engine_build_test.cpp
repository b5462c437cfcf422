// SPDX-License-Identifier: MIT
// --engine ENGINE@VERSION in an estimate: a llama.cpp build before b3216 (PR #8075) runs quantized
// prefill as dequantize + FP16 cuBLAS, later builds as int8 tensor-core MMQ; a server's version
// leaves the estimate alone and says so; a version that is not one is bad input.
#include <catch2/catch.hpp>

#include <limits>

#include "fixtures.hpp"
#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/analysis_json.hpp"
#include "optadvisor/analysis/prepare.hpp"

using namespace optadvisor;
using Catch::Matchers::Contains;
using fixtures::any_contains;
using fixtures::catalog;
using fixtures::request;

namespace {

Factors factors_of(const std::string& quant, const std::string& engine) {
  const PreparedScenario ps = prepare_scenario(catalog(), request("rtx4090", "llama-3.1-8b", quant, engine));
  return analyze(ps.scenario).factors;
}

}  // namespace

TEST_CASE("build numbers: b3216 and 3216 name one build, anything else is not one", "[catalog][engine][build]") {
  CHECK(parse_build_number("b3216") == 3216u);
  CHECK(parse_build_number("3216") == 3216u);
  CHECK_FALSE(parse_build_number("b"));
  CHECK_FALSE(parse_build_number(""));
  CHECK_FALSE(parse_build_number("b32a6"));
  CHECK_FALSE(parse_build_number("0.19.0"));
  CHECK_FALSE(parse_build_number("b1234567890"));  // more digits than any build
}

TEST_CASE("a llama.cpp CUDA build below 3216 is the earliest build, 3216 to 6269 the MoE tile era, 6270 the newest", "[catalog][engine][build]") {
  const BackendProfile& cuda = catalog().resolve_engine("llama.cpp").backends.at("cuda");
  REQUIRE(cuda.earlier_builds.size() == 2);
  const BackendBuild* before = cuda.build_for(3215);
  REQUIRE(before != nullptr);
  CHECK(before->until_build == 3216);
  REQUIRE(cuda.build_for(3216) != nullptr);
  CHECK(cuda.build_for(3216)->until_build == 6270);
  CHECK(cuda.build_for(3216)->moe_prefill_only());
  CHECK_FALSE(before->moe_prefill_only());
  CHECK(cuda.build_for(6270) == nullptr);
  CHECK(cuda.build_for(9000) == nullptr);
  // The earlier build changes only quantized weights' path.
  CHECK(cuda.prefill_path(true, before).compute_dtype == "fp16acc16");
  CHECK(cuda.prefill_path(true, nullptr).compute_dtype == "int8");
  CHECK(cuda.prefill_path(false, before).compute_dtype == "fp16acc16");
  CHECK(cuda.prefill_path(false, before).efficiency == cuda.prefill_compute_efficiency);
}

TEST_CASE("estimate on llama.cpp@b2850 prefills Q4_K_M at the FP16 cuBLAS rate, the newest build at the int8 MMQ rate",
          "[analysis][engine][build]") {
  // RTX 4090: FP16 tensor math with FP16 accumulation 330.3 TFLOP/s, int8 660.6 TOP/s (data/hardware).
  // Before b3216: 330.3e12 x 0.37 (earlier_builds) = 122.2 TFLOP/s.
  // Newest:       660.6e12 x 0.23 (prefill_compute_efficiency) = 151.9 TFLOP/s, 1.24x as fast.
  const Factors old = factors_of("q4_k_m", "llama.cpp:cuda@b2850");
  const Factors now = factors_of("q4_k_m", "llama.cpp:cuda");
  CHECK(old.compute_dtype == "fp16 (FP16 accumulate)");
  CHECK(old.achievable_compute_flops_per_s == Approx(330.3e12 * 0.37));
  CHECK(now.compute_dtype == "int8");
  CHECK(now.achievable_compute_flops_per_s == Approx(660.6e12 * 0.23));
  CHECK(factors_of("q4_k_m", "llama.cpp@b6060").achievable_compute_flops_per_s == Approx(now.achievable_compute_flops_per_s));
  // F16 weights go through cuBLAS in every build: 330.3e12 x 0.23 x 2.04 (the f16 multiplier) = 155.0 TFLOP/s.
  CHECK(factors_of("f16", "llama.cpp:cuda@b2850").achievable_compute_flops_per_s == Approx(330.3e12 * 0.23 * 2.04));
  CHECK(factors_of("f16", "llama.cpp:cuda").achievable_compute_flops_per_s == Approx(330.3e12 * 0.23 * 2.04));
}

TEST_CASE("estimate says which build it models and what a server's version changes", "[analysis][engine][build]") {
  const PreparedScenario old = prepare_scenario(catalog(), request("rtx4090", "llama-3.1-8b", "q4_k_m", "llama.cpp@b2850"));
  CHECK(old.scenario.engine.version == "b2850");
  CHECK(any_contains(old.notes, "quantized prefill as builds before b3216 ran it"));
  const PreparedScenario now = prepare_scenario(catalog(), request("rtx4090", "llama-3.1-8b", "q4_k_m", "llama.cpp@b6060"));
  CHECK(now.scenario.engine.build == nullptr);
  CHECK(any_contains(now.notes, "the newest kernels (b3216 and later)"));
  const PreparedScenario server = prepare_scenario(catalog(), request("h100-sxm", "llama-3.1-8b", "fp8", "vllm@0.6.0"));
  CHECK(server.scenario.engine.id() == "vllm");
  CHECK(any_contains(server.notes, "serve applies the version's calibration era"));
}

TEST_CASE("the estimate's JSON names the version asked for and the earlier kernels it runs", "[analysis][engine][build][json]") {
  auto engine_of = [](const std::string& engine) {
    const PreparedScenario ps = prepare_scenario(catalog(), request("rtx4090", "llama-3.1-8b", "q4_k_m", engine));
    return scenario_json(ps, analyze(ps.scenario)).at("engine");
  };
  const nlohmann::json old = engine_of("llama.cpp@b2850");
  CHECK(old.at("version") == "b2850");
  CHECK(old.at("earlier_build").at("until_build") == 3216);
  CHECK_THAT(old.at("earlier_build").at("change").get<std::string>(), Contains("PR #8075"));
  const nlohmann::json now = engine_of("llama.cpp@b6060");
  CHECK(now.at("version") == "b6060");
  CHECK(now.at("earlier_build").is_null());
  const nlohmann::json newest = engine_of("llama.cpp");
  CHECK(newest.at("version").is_null());
  CHECK(newest.at("earlier_build").is_null());
}

TEST_CASE("a version that is not one is bad input naming what was given", "[analysis][engine][build][bad-input]") {
  auto refuses = [](const std::string& engine, const std::string& text) {
    try {
      prepare_scenario(catalog(), request("rtx4090", "llama-3.1-8b", "q4_k_m", engine));
      FAIL("accepted " << engine);
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::kBadInput);
      CHECK_THAT(e.what(), Contains(engine) && Contains(text));
    }
  };
  refuses("llama.cpp@", "expected ENGINE@VERSION");
  refuses("llama.cpp@b32x6", "expected a build number such as b3216");
  refuses("llama.cpp@0.19.0", "expected a build number such as b3216");
  refuses("llama.cpp@B3216", "expected ENGINE@VERSION");  // versions are lower case
  refuses("llama.cpp@" + std::string(70, '1'), "expected ENGINE@VERSION");
}

TEST_CASE("builds before b8233 run each Gated DeltaNet layer unfused, 0.44 ms more per token", "[analysis][engine][build]") {
  const auto decode_s = [](const std::string& model, const std::string& engine) {
    const PreparedScenario ps = prepare_scenario(catalog(), request("ryzen-ai-max-395", model, "q8_0", engine));
    return 1.0 / analyze(ps.scenario).decode.tokens_per_s;  // batch 1: seconds per token
  };
  // Qwen3-Next-80B-A3B: 48 layers, every fourth full attention (full_attention_interval 4), so 36
  // Gated DeltaNet layers: 36 x 0.44 ms = 15.84 ms more per token in a build before b8233.
  const double before = decode_s("qwen3-next-80b-a3b", "llama.cpp:rocm@b7423");
  const double fused = decode_s("qwen3-next-80b-a3b", "llama.cpp:rocm@b8233");
  CHECK(before - fused == Approx(36 * 4.4e-4).epsilon(1e-9));
  CHECK(decode_s("qwen3-next-80b-a3b", "llama.cpp:rocm") == Approx(fused));  // no build named: the newest
  // A model without delta-net layers, or Mamba-2 layers (llama.cpp's ssm_scan was fused from the start), is unchanged.
  CHECK(decode_s("qwen3-30b-a3b", "llama.cpp:rocm@b7423") == Approx(decode_s("qwen3-30b-a3b", "llama.cpp:rocm@b8233")));
  CHECK(decode_s("nemotron-3-nano-30b-a3b", "llama.cpp:rocm@b7423") ==
        Approx(decode_s("nemotron-3-nano-30b-a3b", "llama.cpp:rocm@b8233")));

  const PreparedScenario ps = prepare_scenario(catalog(), request("ryzen-ai-max-395", "qwen3-next-80b-a3b", "q8_0", "llama.cpp:rocm@b7423"));
  CHECK(any_contains(ps.notes, "its 36 Gated DeltaNet layers run unfused, 440 us more per token each; b8233: the GATED_DELTA_NET operator"));
  CHECK_FALSE(any_contains(ps.notes, "its figures do not depend on the version"));  // the build changes these layers
  // Prefill is left as it was: the same builds' prefill rows are within -2% to +50% without a term.
  const PreparedScenario newer = prepare_scenario(catalog(), request("ryzen-ai-max-395", "qwen3-next-80b-a3b", "q8_0", "llama.cpp:rocm@b8233"));
  CHECK(analyze(ps.scenario).prefill.time_s == Approx(analyze(newer.scenario).prefill.time_s));
}

TEST_CASE("AMD's Vulkan coopmat1 path runs builds before 7938 at its earlier efficiency, newer builds and no build at the tuned one",
          "[analysis][engine][build]") {
  // Ryzen AI Max+ 395 (Radeon 8060S, RDNA 3.5): fp16 matrix peak 59.392 TFLOP/s (data/hardware).
  // Vulkan on AMD RDNA 3: 0.28 of it from build 7938 on (PR #18749's tiles), 0.22 before:
  //   59.392e12 x 0.22 = 13.07 TFLOP/s at b7937; 59.392e12 x 0.28 = 16.63 TFLOP/s at b7938 and unnamed.
  auto compute = [](const std::string& engine) {
    const PreparedScenario ps = prepare_scenario(catalog(), request("ryzen-ai-max-395", "llama-2-7b", "q4_0", engine));
    return analyze(ps.scenario).factors.achievable_compute_flops_per_s;
  };
  CHECK(compute("llama.cpp:vulkan@b7423") == Approx(59.392e12 * 0.22));
  CHECK(compute("llama.cpp:vulkan@b7937") == Approx(59.392e12 * 0.22));
  CHECK(compute("llama.cpp:vulkan@b7938") == Approx(59.392e12 * 0.28));
  CHECK(compute("llama.cpp:vulkan") == Approx(59.392e12 * 0.28));
  // ROCm on the same GPU has no such era.
  CHECK(compute("llama.cpp:rocm@b7423") == Approx(compute("llama.cpp:rocm")));
  // The estimate says which it modelled.
  auto notes_of = [](const std::string& engine) { return prepare_scenario(catalog(), request("ryzen-ai-max-395", "llama-2-7b", "q4_0", engine)).notes; };
  CHECK(any_contains(notes_of("llama.cpp:vulkan@b7500"), "prefill as builds before b7938 ran it; b7938: tiles tuned for AMD's coopmat1 path"));
  CHECK(any_contains(notes_of("llama.cpp:vulkan@b9000"), "the newest kernels (b7938 and later)"));
  CHECK(any_contains(notes_of("llama.cpp:rocm@b7423"), "its figures do not depend on the version"));
}

TEST_CASE("AMD's Vulkan path runs BF16 weights on the fp32 vector ALUs, other formats on its matrix path", "[analysis][engine][build]") {
  // Radeon 8060S (RDNA 3.5): RADV exposes no bfloat16 cooperative matrix, so llama.cpp's scalar
  // matmul_bf16 shaders run BF16 products in fp32: 29.696 TFLOP/s peak x 0.28 (the path's
  // efficiency) = 8.315 TFLOP/s, where Q8_0 runs at 59.392e12 x 0.28 = 16.63 TFLOP/s.
  auto factors = [](const std::string& model, const std::string& quant, const std::string& engine) {
    return analyze(prepare_scenario(catalog(), request("ryzen-ai-max-395", model, quant, engine)).scenario).factors;
  };
  const Factors bf16 = factors("ministral-3-14b", "bf16", "llama.cpp:vulkan");
  CHECK(bf16.compute_dtype == "fp32");
  CHECK(bf16.achievable_compute_flops_per_s == Approx(29.696e12 * 0.28));
  CHECK(factors("ministral-3-14b", "q8_0", "llama.cpp:vulkan").achievable_compute_flops_per_s == Approx(59.392e12 * 0.28));
  // The build era applies to it too: 29.696e12 x 0.22 before b7938.
  CHECK(factors("ministral-3-14b", "bf16", "llama.cpp:vulkan@b7423").achievable_compute_flops_per_s == Approx(29.696e12 * 0.22));
  // ROCm on the same GPU runs BF16 on its matrix cores.
  CHECK(factors("ministral-3-14b", "bf16", "llama.cpp:rocm").compute_dtype != "fp32");
  // NVIDIA's Vulkan path (coopmat2) is not AMD's: an RTX 4090's BF16 stays on the matrix cores.
  const Factors nvidia = analyze(prepare_scenario(catalog(), request("rtx4090", "llama-3.1-8b", "bf16", "llama.cpp:vulkan")).scenario).factors;
  CHECK(nvidia.compute_dtype != "fp32");
  // The estimate says why, only where the format takes its own path.
  const auto on_strix = [](const std::string& quant) {
    return prepare_scenario(catalog(), request("ryzen-ai-max-395", "ministral-3-14b", quant, "llama.cpp:vulkan"));
  };
  CHECK(any_contains(on_strix("bf16").notes, "bf16 weights' GEMMs run at the fp32 peak: RADV exposes no VK_KHR_shader_bfloat16"));
  CHECK_FALSE(any_contains(on_strix("q8_0").notes, "GEMMs run at the"));
}

TEST_CASE("llama.cpp Metal before b6469 decodes at the 2023-2024 figures, the newest builds at their own", "[analysis][engine][build]") {
  // M4 Max (40-core GPU): 546 GB/s. Metal's decode efficiency 0.86 is shared by both eras; Q4_K_M's
  // multiplier is 0.69 before b6469 (fitted on discussion #4167 and May 2024 runs) and 0.99 after:
  //   b2797:  546e9 x 0.86 x 0.69 = 324.0 GB/s, 150 us a layer, no MoE term;
  //   newest: 546e9 x 0.86 x 0.99 = 464.9 GB/s,  60 us a layer, 100 us a MoE layer.
  const auto factors = [](const std::string& model, const std::string& engine) {
    return analyze(prepare_scenario(catalog(), request("m4-max-40c", model, "q4_k_m", engine)).scenario).factors;
  };
  const Factors old = factors("llama-3.1-8b", "llama.cpp:metal@b2797");
  const Factors now = factors("llama-3.1-8b", "llama.cpp:metal");
  CHECK(old.achievable_bandwidth_bytes_per_s == Approx(546e9 * 0.86 * 0.69));
  CHECK(old.layer_overhead_s == Approx(150e-6));
  CHECK(now.achievable_bandwidth_bytes_per_s == Approx(546e9 * 0.86 * 0.99));
  CHECK(now.layer_overhead_s == Approx(60e-6));
  CHECK(factors("llama-3.1-8b", "llama.cpp:metal@b6469").layer_overhead_s == Approx(60e-6));  // the first newest build
  // Formats the earlier build does not list keep the backend's multiplier (Q4_0: 0.99 in both).
  const auto q4_0 = [](const std::string& engine) {
    return analyze(prepare_scenario(catalog(), request("m4-max-40c", "llama-3.1-8b", "q4_0", engine)).scenario).factors;
  };
  CHECK(q4_0("llama.cpp:metal@b1550").achievable_bandwidth_bytes_per_s == Approx(q4_0("llama.cpp:metal").achievable_bandwidth_bytes_per_s));
  // A MoE model pays the dispatch term only in the newest builds.
  CHECK(factors("qwen3-30b-a3b", "llama.cpp:metal@b2797").moe_layer_overhead_s == 0.0);
  CHECK(factors("qwen3-30b-a3b", "llama.cpp:metal").moe_layer_overhead_s == Approx(100e-6));
  // The note says what the earlier build changes.
  const PreparedScenario ps = prepare_scenario(catalog(), request("m4-max-40c", "llama-3.1-8b", "q4_k_m", "llama.cpp:metal@b2797"));
  CHECK(any_contains(ps.notes, "decode as builds before b6469 ran it"));
}

TEST_CASE("llama.cpp Metal before b1752 multiplies every (token, expert) pair of a prompt pass with the mat-vec kernel",
          "[analysis][engine][build][moe]") {
  // Before PR #4725 Metal had no mat-mat mul_mat_id: a pass of T tokens reads T x 2 / 8 of Mixtral's
  // routed expert bytes (each token its two of eight experts), at any T. So the weight time is
  // dense + T/4 x routed, linear in T: w(512) - w(256) = 64 x routed = 2 x (w(256) - w(128)), where
  // the grouped GEMM of b1752 reads each touched expert once (all eight from 128 tokens on: no change).
  const auto prefill = [](const std::string& engine, int prompt) {
    ScenarioRequest r = request("m2-max-38c", "mixtral-8x7b", "q4_0", engine);
    r.prompt_tokens = prompt;
    r.gen_tokens = 1;
    return analyze(prepare_scenario(catalog(), r).scenario).prefill;
  };
  const PhaseEstimate old128 = prefill("llama.cpp:metal@b1631", 128), old256 = prefill("llama.cpp:metal@b1631", 256),
                      old512 = prefill("llama.cpp:metal@b1631", 512);
  REQUIRE(old512.passes == 1.0);
  CHECK_FALSE(old512.experts.grouped);
  CHECK(old512.weights_time_s - old256.weights_time_s == Approx(2.0 * (old256.weights_time_s - old128.weights_time_s)).epsilon(1e-9));
  CHECK(old256.weights_time_s - old128.weights_time_s > 0.0);
  const PhaseEstimate new256 = prefill("llama.cpp:metal@b1752", 256), new512 = prefill("llama.cpp:metal@b1752", 512);
  CHECK(new512.experts.grouped);
  CHECK(new512.weights_time_s == Approx(new256.weights_time_s));
  // b1631 is also before b6469: the older entry takes the newer one's per-layer cost (150 us).
  const auto layer_overhead = [](const std::string& engine) {
    return analyze(prepare_scenario(catalog(), request("m2-max-38c", "mixtral-8x7b", "q4_0", engine)).scenario).factors.layer_overhead_s;
  };
  CHECK(layer_overhead("llama.cpp:metal@b1631") == Approx(150e-6));
  const PreparedScenario ps = prepare_scenario(catalog(), request("m2-max-38c", "mixtral-8x7b", "q4_0", "llama.cpp:metal@b1631"));
  CHECK(any_contains(ps.notes, "MoE prefill and decode as builds before b1752 ran it"));
}

TEST_CASE("an earlier-build entry takes the newer entries' values where it sets none", "[catalog][engine][build]") {
  const BackendProfile& metal = catalog().resolve_engine("llama.cpp").backends.at("metal");
  REQUIRE(metal.earlier_builds.size() == 2);
  const BackendBuild& oldest = metal.earlier_builds[0];
  const BackendBuild& newer = metal.earlier_builds[1];
  CHECK(oldest.expert_matvec_every_pass);
  CHECK_FALSE(newer.expert_matvec_every_pass);  // nothing flows forward
  REQUIRE(oldest.layer_overhead_s);
  CHECK(*oldest.layer_overhead_s == *newer.layer_overhead_s);
  CHECK(oldest.quant_efficiency.at("q4_k_m").decode == newer.quant_efficiency.at("q4_k_m").decode);
  CHECK(metal.build_for(1751) == &oldest);
  CHECK(metal.build_for(1752) == &newer);
  CHECK(expert_matvec_max_tokens_in(metal, &oldest) == std::numeric_limits<uint64_t>::max());
  CHECK(expert_matvec_max_tokens_in(metal, &newer) == metal.expert_matvec_max_tokens);
}

TEST_CASE("BF16 experts on llama.cpp Vulkan pay the matrix shader's time per MoE layer in a decode step", "[analysis][engine][moe]") {
  // ggml_vk_use_mul_mat_vec_id leaves BF16 out: 1.41 ms per MoE layer and step (fitted on three
  // Strix Halo rows). Qwen3-30B-A3B has 48 MoE layers: 48 x 1.41 ms = 67.7 ms more per token.
  const auto estimate = [](const std::string& quant, const std::string& engine) {
    return analyze(prepare_scenario(catalog(), request("ryzen-ai-max-395", "qwen3-30b-a3b", quant, engine)).scenario);
  };
  CHECK(estimate("bf16", "llama.cpp:vulkan").factors.moe_layer_overhead_s == Approx(1.41e-3));
  CHECK(estimate("q8_0", "llama.cpp:vulkan").factors.moe_layer_overhead_s == 0.0);  // the mat-vec shader
  CHECK(estimate("bf16", "llama.cpp:rocm").factors.moe_layer_overhead_s == 0.0);    // HIP's mat-vec takes BF16
  // The decode step's overhead carries it: 48 x 1.41 ms more than the Q8_0 file's.
  const double bf16_overhead = estimate("bf16", "llama.cpp:vulkan").decode.overhead_time_s;
  const double q8_overhead = estimate("q8_0", "llama.cpp:vulkan").decode.overhead_time_s;
  CHECK(bf16_overhead - q8_overhead == Approx(48 * 1.41e-3));
}

TEST_CASE("llama.cpp CUDA before b6270 fills the grouped expert GEMM's tiles more slowly, a dense model runs it as the newest builds",
          "[analysis][engine][build][moe]") {
  // DeepSeek-V2-Lite (64 routed experts, 6 a token) in passes of 64 tokens: 1 - (1 - 6/64)^64 = 0.998164
  // of the experts touched, 64 x 6 / (64 x 0.998164) = 6.0110 tokens each. The grouped GEMM runs at
  // 0.23 x 6.0110 / (6.0110 + 7) = 0.10626 of the dense rate in the newest builds and, with PR #15525's
  // tiles not yet there, 0.23 x 6.0110 / (6.0110 + 14) = 0.069089 before b6270.
  const auto experts = [](const std::string& engine) {
    ScenarioRequest r = request("rtx3090", "deepseek-v2-lite", "q4_0", engine);
    r.prompt_tokens = 512;
    r.gen_tokens = 1;
    r.ubatch_tokens = 64;
    return analyze(prepare_scenario(catalog(), r).scenario).prefill.experts;
  };
  CHECK(experts("llama.cpp:cuda@b6250").tokens_per_expert == Approx(6.0110).epsilon(1e-4));
  CHECK(experts("llama.cpp:cuda@b6250").share_of_dense_rate == Approx(0.069089).epsilon(1e-4));
  CHECK(experts("llama.cpp:cuda@b6270").share_of_dense_rate == Approx(0.10626).epsilon(1e-4));
  CHECK(experts("llama.cpp:cuda").share_of_dense_rate == Approx(0.10626).epsilon(1e-4));
  // The older b3216 entry takes the tile figure too (entries accumulate going back).
  CHECK(experts("llama.cpp:cuda@b3000").share_of_dense_rate == Approx(0.069089).epsilon(1e-4));
  const PreparedScenario moe = prepare_scenario(catalog(), request("rtx3090", "deepseek-v2-lite", "q4_0", "llama.cpp:cuda@b6250"));
  CHECK(any_contains(moe.notes, "MoE prefill as builds before b6270 ran it"));
  // A dense model: the build differs only in its MoE kernels, so it is the newest kernels for it.
  const PreparedScenario dense = prepare_scenario(catalog(), request("rtx3090", "llama-3.1-8b", "q4_0", "llama.cpp:cuda@b6250"));
  CHECK(dense.scenario.engine.build == nullptr);
  CHECK(any_contains(dense.notes, "the newest kernels (b3216 and later)"));
  const PreparedScenario dense_old = prepare_scenario(catalog(), request("rtx3090", "llama-3.1-8b", "q4_0", "llama.cpp:cuda@b3000"));
  CHECK(any_contains(dense_old.notes, "build b3000: quantized prefill as builds before b3216 ran it"));
  const PreparedScenario moe_old = prepare_scenario(catalog(), request("rtx3090", "deepseek-v2-lite", "q4_0", "llama.cpp:cuda@b3000"));
  CHECK(any_contains(moe_old.notes, "build b3000: quantized prefill and MoE prefill as builds before b3216 ran it"));
}
