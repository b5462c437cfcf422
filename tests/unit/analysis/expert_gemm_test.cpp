// SPDX-License-Identifier: MIT
// The routed experts' grouped GEMM in prefill (llama.cpp mul_mat_id): tokens per touched expert in
// one ubatch, the saturating efficiency t / (t + half_tokens), and the expert weights one pass reads.
#include <algorithm>
#include <cmath>

#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/analysis_json.hpp"
#include "optadvisor/analysis/expert_layout.hpp"
#include "optadvisor/analysis/prepare.hpp"

using namespace optadvisor;
using fixtures::catalog;
using fixtures::analyze_request;
using fixtures::request;

namespace {

ModelSpec moe(uint64_t experts, uint64_t per_token) {
  ModelSpec m;
  m.num_experts = experts;
  m.num_experts_per_tok = per_token;
  return m;
}

/// Qwen3-30B-A3B q4_k_m under llama.cpp's ROCm backend on a Ryzen AI Max+ 395, prefilling `prompt` tokens only.
ScenarioRequest qwen_prefill(int64_t prompt) {
  ScenarioRequest r = request("ryzen-ai-max-395", "qwen3-30b-a3b", "q4_k_m", "llama.cpp:rocm");
  r.prompt_tokens = prompt;
  r.gen_tokens = 0;
  return r;
}

}  // namespace

TEST_CASE("an expert GEMM's efficiency follows its tokens per expert", "[analysis][moe]") {
  // Qwen3-30B-A3B shape, 128 experts, 8 per token, a 512-token ubatch: every expert is touched
  // (1 - (15/16)^512 = 1 - 4e-15), each gets 512 x 8 / 128 = 32 tokens; half_tokens 96 gives
  // 32 / (32 + 96) = 0.25 of the dense efficiency.
  const ExpertGemm q = expert_gemm(moe(128, 8), 512, 96);
  CHECK(q.touched_fraction == Approx(1.0).epsilon(1e-12));
  CHECK(q.tokens_per_expert == Approx(32.0));
  CHECK(q.efficiency_factor == Approx(0.25));
  // DeepSeek-V2-Lite shape, 64 experts, 6 per token, a 16-token ubatch: (58/64)^16 = 0.90625^16
  // = 0.20700, so 79.30% of the experts are touched, by 16 x 6 / (64 x 0.79300) = 1.8916 tokens
  // each; half_tokens 38 gives 1.8916 / 39.8916 = 0.04742.
  const ExpertGemm d = expert_gemm(moe(64, 6), 16, 38);
  CHECK(d.touched_fraction == Approx(0.79300).epsilon(1e-4));
  CHECK(d.tokens_per_expert == Approx(1.8916).epsilon(1e-4));
  CHECK(d.efficiency_factor == Approx(0.04742).epsilon(1e-3));
  // One token touches exactly k of E experts, one token each.
  const ExpertGemm one = expert_gemm(moe(64, 6), 1, 38);
  CHECK(one.touched_fraction == Approx(6.0 / 64.0));
  CHECK(one.tokens_per_expert == Approx(1.0));
  // A kernel whose full tiles reach only a share of the dense rate (llama.cpp CUDA: 0.23, half at
  // 7 tokens): 0.23 x 32 / (32 + 7) = 0.18872 at 32 tokens per expert, 0.23 x 4 / 11 = 0.08364 at 4.
  CHECK(expert_gemm(moe(128, 8), 512, 7, 0.23).efficiency_factor == Approx(0.18872).epsilon(1e-4));
  CHECK(grouped_gemm_fill(4.0, 7.0, 0.23) == Approx(0.08364).epsilon(1e-4));
  CHECK(grouped_gemm_fill(4.0, 0.0, 0.23) == Approx(0.23));  // no tile term: the share alone
  // No parameter (0) keeps the dense efficiency; a dense model has no experts.
  CHECK(expert_gemm(moe(128, 8), 512, 0).efficiency_factor == 1.0);
  CHECK(expert_gemm(ModelSpec{}, 512, 96).efficiency_factor == 1.0);
  CHECK(expert_gemm(ModelSpec{}, 512, 96).touched_fraction == 1.0);
}

TEST_CASE("prefill runs the routed experts' FLOPs at the grouped efficiency", "[analysis][moe]") {
  ScenarioRequest r = qwen_prefill(512);
  Scenario s = prepare_scenario(catalog(), r).scenario;
  // 48 layers x 128 experts x (gate, up, down: 3 x 2048 x 768 = 4,718,592) = 28,991,029,248 routed
  // weights, 8 of 128 experts per token: 1,811,939,328 active.
  REQUIRE(s.weights.routed_active_params == Approx(1811939328.0).epsilon(1e-9));
  const double half = s.engine.backend->expert_gemm_half_tokens;
  REQUIRE(half > 0);  // fitted (data/engines/llama.cpp.json)
  const Analysis grouped = analyze(s);
  EngineProfile engine = *s.engine.engine;
  BackendProfile dense = *s.engine.backend;
  dense.expert_gemm_half_tokens = 0;
  s.engine.engine = &engine;
  s.engine.backend = &dense;
  const Analysis flat = analyze(s);
  // Routed FLOPs: 2 x 1,811,939,328 x 512 tokens = 1.8554e12; at 32 tokens per expert
  // they take (32 + half) / 32 times as long as at the dense rate, the rest of the pass is unchanged.
  const double routed_flops = 2.0 * 1811939328.0 * 512.0;
  const double at_dense = routed_flops / grouped.factors.achievable_compute_flops_per_s;
  CHECK(grouped.prefill.compute_time_s - flat.prefill.compute_time_s == Approx(at_dense * ((32.0 + half) / 32.0 - 1.0)).epsilon(1e-9));
  CHECK(grouped.prefill.time_s > flat.prefill.time_s);
  CHECK(grouped.prefill.flops == Approx(flat.prefill.flops));  // the same math, at a lower rate
}

TEST_CASE("a one-token ubatch reads only the experts its token picks", "[analysis][moe]") {
  ScenarioRequest r = qwen_prefill(64);
  r.ubatch_tokens = 1;
  const Scenario s = prepare_scenario(catalog(), r).scenario;
  const Analysis a = analyze(s);
  // 64 passes of one token; each reads the dense weights (less the token-embedding table) and
  // 8 / 128 of the routed experts, not all of them.
  const double per_pass = s.weights.total_bytes - s.weights.token_embedding_bytes - s.weights.routed_expert_bytes * (1.0 - 8.0 / 128.0);
  REQUIRE_FALSE(s.weights.tied_embeddings);
  CHECK(a.prefill.weights_time_s == Approx(64.0 * per_pass / a.factors.achievable_bandwidth_bytes_per_s).epsilon(1e-9));
}

TEST_CASE("a pass within the mat-vec limit reads each token's experts for that token", "[analysis][moe]") {
  // llama.cpp's mat-vec kernels multiply each (token, expert) pair on its own. Qwen3-30B-A3B in
  // 8-token passes on ROCm (limit 8): each pass reads 8 x 8 / 128 = 0.5 of the routed experts,
  // where the 1 - (15/16)^8 = 0.4033 of them the pass touches is what a grouped GEMM reads once.
  // A 64-token prompt is 8 such passes.
  ScenarioRequest r = qwen_prefill(64);
  r.ubatch_tokens = 8;
  const Scenario s = prepare_scenario(catalog(), r).scenario;
  REQUIRE(s.engine.backend->expert_matvec_max_tokens == 8);
  const Analysis a = analyze(s);
  const double per_pass = s.weights.total_bytes - s.weights.token_embedding_bytes - s.weights.routed_expert_bytes * (1.0 - 0.5);
  CHECK(a.prefill.weights_time_s == Approx(8.0 * per_pass / a.factors.achievable_bandwidth_bytes_per_s).epsilon(1e-9));
  // 9-token passes run the grouped GEMM: each touched expert once, 1 - (15/16)^9 = 0.4406 of them
  // (a 63-token prompt: 7 passes).
  r.prompt_tokens = 63;
  r.ubatch_tokens = 9;
  const Scenario g = prepare_scenario(catalog(), r).scenario;
  const double touched = 1.0 - std::pow(15.0 / 16.0, 9.0);
  const double grouped_pass = g.weights.total_bytes - g.weights.token_embedding_bytes - g.weights.routed_expert_bytes * (1.0 - touched);
  const Analysis b = analyze(g);
  CHECK(b.prefill.weights_time_s == Approx(7.0 * grouped_pass / b.factors.achievable_bandwidth_bytes_per_s).epsilon(1e-9));
}

TEST_CASE("a pass within the backend's mat-vec limit multiplies the experts as decode does", "[analysis][moe]") {
  // llama.cpp's ROCm backend runs MUL_MAT_ID with MMVQ up to 8 tokens a pass (data/engines/llama.cpp.json,
  // expert_matvec), so a prompt in 8-token passes pays no tile fill; 9-token passes run the grouped GEMM.
  const auto routed_compute = [](uint64_t ubatch) {
    ScenarioRequest r = qwen_prefill(72);
    r.ubatch_tokens = ubatch;
    Scenario s = prepare_scenario(catalog(), r).scenario;
    REQUIRE(s.engine.backend->expert_matvec_max_tokens == 8);
    const Analysis grouped = analyze(s);
    BackendProfile dense = *s.engine.backend;
    dense.expert_gemm_half_tokens = 0;
    s.engine.backend = &dense;
    return grouped.prefill.compute_time_s - analyze(s).prefill.compute_time_s;
  };
  CHECK(routed_compute(8) == 0.0);
  CHECK(routed_compute(9) > 0.0);
}

TEST_CASE("a decode step of more sequences than the mat-vec limit keeps the mat-vec cost", "[analysis][moe]") {
  // docs/accuracy.md ("Small passes"): the grouped GEMM's tile fill, fitted at 10-64 tokens per
  // expert, would halve the step's throughput from 8 to 9 sequences, a cliff llama.cpp does not
  // show, so decode steps take no fill at any batch. 16 sequences of Qwen3-30B-A3B on ROCm
  // (limit 8): 16 x 8 / 128 = 1 token per expert before touching, yet the same compute time as
  // with half_tokens 0.
  ScenarioRequest r = request("ryzen-ai-max-395", "qwen3-30b-a3b", "q4_k_m", "llama.cpp:rocm");
  r.batch = "16";
  r.prompt_tokens = 512;
  r.gen_tokens = 64;
  Scenario s = prepare_scenario(catalog(), r).scenario;
  REQUIRE(s.engine.backend->expert_matvec_max_tokens < 16);
  REQUIRE(s.engine.backend->expert_gemm_half_tokens > 0);
  const Analysis as_is = analyze(s);
  BackendProfile dense = *s.engine.backend;
  dense.expert_gemm_half_tokens = 0;
  s.engine.backend = &dense;
  const Analysis flat = analyze(s);
  CHECK(as_is.decode.compute_time_s == flat.decode.compute_time_s);
  CHECK(as_is.prefill.compute_time_s > flat.prefill.compute_time_s);  // its 512-token prefill passes do pay it
}

TEST_CASE("a one-token prompt costs what a decode step costs", "[analysis][moe]") {
  // A one-token pass replays the decode step's graph: the same weights, the same overhead.
  ScenarioRequest r = request("rtx3090", "gpt-oss-20b", "mxfp4", "llama.cpp");
  r.prompt_tokens = 1;
  r.gen_tokens = 1;
  const Analysis a = analyze_request(r);
  CHECK(a.prefill.overhead_time_s == Approx(a.decode.overhead_time_s).epsilon(1e-12));
  CHECK(a.prefill.weights_time_s == Approx(a.decode.weights_time_s).epsilon(1e-12));
  CHECK(a.prefill.compute_time_s <= a.decode.compute_time_s * 1.001);  // no tile fill on the expert products
}

TEST_CASE("each later pass of a prompt reads again the KV its earlier passes wrote", "[analysis]") {
  // Llama-3.1-8B, f16 KV: 2 (K, V) x 32 layers x 8 KV heads x 128 x 2 bytes = 131,072 bytes a token.
  // A 64-token prompt in one-token passes writes 64 x 131,072 = 8,388,608 bytes, and its 63 later
  // passes each read about the half-way prefix, 32 x 131,072 = 4,194,304: 8,388,608 + 63 x 4,194,304
  // = 272,629,760 bytes. In one 64-token pass only the writes remain.
  ScenarioRequest r = request("rtx4090", "llama-3.1-8b", "q4_k_m", "llama.cpp");
  r.prompt_tokens = 64;
  r.gen_tokens = 0;
  r.ubatch_tokens = 1;
  const Analysis split = analyze_request(r);
  CHECK(split.prefill.kv_time_s == Approx(272629760.0 / split.factors.achievable_bandwidth_bytes_per_s).epsilon(1e-9));
  r.ubatch_tokens = 64;
  const Analysis whole = analyze_request(r);
  CHECK(whole.prefill.kv_time_s == Approx(8388608.0 / whole.factors.achievable_bandwidth_bytes_per_s).epsilon(1e-9));
}

TEST_CASE("MLX pays its MoE dispatch once per pass and MoE layer", "[analysis][moe]") {
  // data/engines/mlx.json moe_layer_overhead: 124 us a MoE layer and pass. gpt-oss-20b has 24 MoE
  // layers: a decode step costs 24 x 124 us = 2.976 ms more than without it; a dense model nothing.
  ScenarioRequest r = request("m2-max-38c", "gpt-oss-20b", "mxfp4", "mlx");
  r.prompt_tokens = 512;
  r.gen_tokens = 128;
  Scenario s = prepare_scenario(catalog(), r).scenario;
  REQUIRE(s.engine.backend->moe_layer_overhead_s == Approx(124e-6));
  const Analysis with = analyze(s);
  BackendProfile none = *s.engine.backend;
  none.moe_layer_overhead_s = 0;
  s.engine.backend = &none;
  const Analysis without = analyze(s);
  CHECK(with.decode.overhead_time_s - without.decode.overhead_time_s == Approx(24 * 124e-6).epsilon(1e-9));
  CHECK(with.decode.time_s - without.decode.time_s == Approx(24 * 124e-6).epsilon(1e-6));
  // The 512-token prompt is one pass (up to 8,192 tokens a pass, max_batched_tokens): one more 2.976 ms.
  CHECK(with.prefill.overhead_time_s - without.prefill.overhead_time_s == Approx(24 * 124e-6).epsilon(1e-9));

  ScenarioRequest d = request("m2-max-38c", "llama-3.1-8b", "mlx-4bit", "mlx");
  Scenario dense = prepare_scenario(catalog(), d).scenario;
  const Analysis a = analyze(dense);
  dense.engine.backend = &none;
  CHECK(analyze(dense).decode.overhead_time_s == a.decode.overhead_time_s);
}

TEST_CASE("SGLang pays its fused-MoE kernels' fixed time once per decode step and MoE layer", "[analysis][moe]") {
  // data/engines/sglang.json moe_layer_overhead: 74 us a MoE layer and pass (fitted on three H20 rows).
  // Qwen3-30B-A3B has 48 MoE layers: a decode step costs 48 x 74 us = 3.552 ms more than without it.
  ScenarioRequest r = request("h20", "qwen3-30b-a3b", "fp8", "sglang");
  r.prompt_tokens = 1;
  r.gen_tokens = 128;
  Scenario s = prepare_scenario(catalog(), r).scenario;
  REQUIRE(s.engine.backend->moe_layer_overhead_s == Approx(74e-6));
  const Analysis with = analyze(s);
  BackendProfile none = *s.engine.backend;
  none.moe_layer_overhead_s = 0;
  s.engine.backend = &none;
  CHECK(with.decode.time_s - analyze(s).decode.time_s == Approx(48 * 74e-6).epsilon(1e-6));
  // A dense model on the same engine pays nothing.
  Scenario dense = prepare_scenario(catalog(), request("h20", "qwen3-14b", "fp8", "sglang")).scenario;
  const double dense_s = analyze(dense).decode.time_s;
  dense.engine.backend = &none;
  CHECK(analyze(dense).decode.time_s == dense_s);
}

TEST_CASE("the estimate says how each phase multiplied the experts", "[analysis][moe][json]") {
  // Qwen3-30B-A3B on ROCm, a 512-token prompt in one pass: 512 x 8 / 128 = 32 tokens per touched
  // expert through the grouped GEMM at 32 / (32 + half_tokens) of the dense rate; decode steps of
  // one token take the mat-vec kernels. A dense model has no such entry.
  ScenarioRequest r = qwen_prefill(512);
  r.gen_tokens = 16;
  const PreparedScenario ps = prepare_scenario(catalog(), r);
  const Analysis a = analyze(ps.scenario);
  const double half = ps.scenario.engine.backend->expert_gemm_half_tokens;
  const nlohmann::json j = estimate_json(ps, a);
  CHECK(j.at("prefill").at("experts").at("kernel") == "grouped-gemm");
  CHECK(j.at("prefill").at("experts").at("tokens_per_pass").get<double>() == Approx(512.0));
  CHECK(j.at("prefill").at("experts").at("tokens_per_expert").get<double>() == Approx(32.0));
  CHECK(j.at("prefill").at("experts").at("share_of_dense_rate").get<double>() == Approx(32.0 / (32.0 + half)));
  CHECK(j.at("decode").at("experts").at("kernel") == "mat-vec");
  const PreparedScenario dense = prepare_scenario(catalog(), request("ryzen-ai-max-395", "llama-3.1-8b", "q4_k_m", "llama.cpp:rocm"));
  CHECK(estimate_json(dense, analyze(dense.scenario)).at("prefill").at("experts").is_null());
}

TEST_CASE("ROCm multiplies 16-bit experts one at a time: 64 us per touched expert, MoE layer and pass", "[analysis][moe]") {
  // ggml-cuda's mul_mat_id fallback (HIP): neither MMQ nor MMF takes BF16 experts, so a 512-token
  // pass syncs the routing ids to the host and runs one GEMM per touched expert. Qwen3-30B-A3B:
  // 48 MoE layers x 128 experts, all touched by 512 x 8 routed tokens (1 - (15/16)^512 = 1 - 4e-15):
  //   48 x 128 x 64e-6 s = 0.393216 s more in the prefill pass.
  const auto prefill = [](const std::string& quant, const std::string& engine) {
    ScenarioRequest r = request("ryzen-ai-max-395", "qwen3-30b-a3b", quant, engine);
    r.prompt_tokens = 512;
    r.gen_tokens = 0;
    Scenario s = prepare_scenario(catalog(), r).scenario;
    const Analysis with = analyze(s);
    BackendProfile without = *s.engine.backend;
    without.float_expert_call_s = 0;
    s.engine.backend = &without;
    return std::pair{with.prefill, analyze(s).prefill};
  };
  const auto [bf16, bf16_without] = prefill("bf16", "llama.cpp:rocm");
  CHECK(bf16.overhead_time_s - bf16_without.overhead_time_s == Approx(48 * 128 * 64e-6).epsilon(1e-6));
  CHECK(bf16.time_s - bf16_without.time_s == Approx(0.393216).epsilon(1e-6));
  CHECK(bf16.experts.per_expert_loop_s == Approx(0.393216).epsilon(1e-6));
  // The estimate reports it, and 0 where no loop runs.
  ScenarioRequest r = request("ryzen-ai-max-395", "qwen3-30b-a3b", "bf16", "llama.cpp:rocm");
  r.prompt_tokens = 512;
  r.gen_tokens = 4;
  const PreparedScenario ps = prepare_scenario(catalog(), r);
  const nlohmann::json j = estimate_json(ps, analyze(ps.scenario));
  CHECK(j.at("prefill").at("experts").at("per_expert_loop_s").get<double>() == Approx(0.393216).epsilon(1e-6));
  CHECK(j.at("decode").at("experts").at("per_expert_loop_s").get<double>() == 0.0);
  // Quantized experts take MMQ: no loop. Vulkan's mul_mm_id is one dispatch: no loop either.
  const auto [q8, q8_without] = prefill("q8_0", "llama.cpp:rocm");
  CHECK(q8.time_s == Approx(q8_without.time_s));
  const auto [vk, vk_without] = prefill("bf16", "llama.cpp:vulkan");
  CHECK(vk.time_s == Approx(vk_without.time_s));
  // Decode steps of one token take the mat-vec kernels (MMVF on AMD): no loop.
  ScenarioRequest d = request("ryzen-ai-max-395", "qwen3-30b-a3b", "bf16", "llama.cpp:rocm");
  Scenario ds = prepare_scenario(catalog(), d).scenario;
  const double decode_s = analyze(ds).decode.time_s;
  BackendProfile none = *ds.engine.backend;
  none.float_expert_call_s = 0;
  ds.engine.backend = &none;
  CHECK(analyze(ds).decode.time_s == Approx(decode_s));
}

TEST_CASE("llama.cpp Vulkan multiplies BF16 experts with the grouped GEMM even at one token", "[analysis][moe]") {
  // ggml_vk_use_mul_mat_vec_id has no BF16 case (data/engines/llama.cpp.json, expert_matvec
  // excluded_quants): a decode step of Qwen3-30B-A3B BF16 runs the tiled shader, one token per touched
  // expert at 1 / (1 + 80) of the path's rate; Q4_K_M experts take the mat-vec kernels.
  ScenarioRequest r = request("ryzen-ai-max-395", "qwen3-30b-a3b", "bf16", "llama.cpp:vulkan");
  r.prompt_tokens = 0;
  r.gen_tokens = 16;
  const PreparedScenario bf16 = prepare_scenario(catalog(), r);
  const Analysis a = analyze(bf16.scenario);
  CHECK(a.decode.experts.grouped);
  CHECK(a.decode.experts.tokens_per_expert == Approx(1.0));
  CHECK(a.decode.experts.share_of_dense_rate == Approx(1.0 / 81.0));
  CHECK(std::any_of(bf16.notes.begin(), bf16.notes.end(),
                    [](const std::string& n) { return n.find("bf16 experts take the grouped GEMM even at one token") != std::string::npos; }));
  r.quant = "q4_k_m";
  const PreparedScenario q4 = prepare_scenario(catalog(), r);
  CHECK_FALSE(analyze(q4.scenario).decode.experts.grouped);
  CHECK(std::none_of(q4.notes.begin(), q4.notes.end(), [](const std::string& n) { return n.find("even at one token") != std::string::npos; }));
  // A dense BF16 model has no experts to route, and no note.
  ScenarioRequest d = request("ryzen-ai-max-395", "ministral-3-14b", "bf16", "llama.cpp:vulkan");
  const PreparedScenario dense = prepare_scenario(catalog(), d);
  CHECK(std::none_of(dense.notes.begin(), dense.notes.end(), [](const std::string& n) { return n.find("even at one token") != std::string::npos; }));
}

TEST_CASE("vLLM's MoE layer time follows the kernel path of the experts' format", "[analysis][moe]") {
  // data/engines/vllm.json moe_layer_overhead: 57 us for FP8 (and unlisted formats), 30 us for
  // NVFP4, 4.5 us for MXFP4 (gpt-oss's fused kernels). MiniMax-M2.5 has 62 MoE layers: a decode step
  // costs 62 x 57 us = 3.534 ms more in FP8, 62 x 30 us = 1.860 ms in NVFP4.
  const auto moe_time = [](const char* model, const char* quant) {
    ScenarioRequest r = request("b200", model, quant, "vllm");
    r.prompt_tokens = 1;
    r.gen_tokens = 16;
    const Scenario s = prepare_scenario(catalog(), r).scenario;
    const Analysis a = analyze(s);
    return std::pair{a.factors.moe_layer_overhead_s, a.factors.moe_layer_overhead_s * moe_layer_count(s.model)};
  };
  CHECK(moe_time("minimax-m2.5", "fp8").first == Approx(57e-6));
  CHECK(moe_time("minimax-m2.5", "fp8").second == Approx(62 * 57e-6));
  CHECK(moe_time("minimax-m2.5", "nvfp4").second == Approx(62 * 30e-6));
  CHECK(moe_time("gpt-oss-120b", "mxfp4").first == Approx(4.5e-6));
  CHECK(moe_time("llama-3.1-8b", "fp8").first == 0);  // a dense model has no MoE layer
}

TEST_CASE("a format with grouped-GEMM terms of its own runs at them, the others at the backend's", "[analysis][moe]") {
  // data/engines/llama.cpp.json, rocm grouped_expert_gemm: half_tokens 102 for every format but
  // mxfp4_moe, whose by_quant entry has half_tokens 25 and peak_share 0.64.
  const EngineProfile& engine = catalog().resolve_engine("llama.cpp");
  const BackendProfile& rocm = engine.backends.at("rocm");
  const ExpertGemmTermsUsed q4 = expert_gemm_terms_in(rocm, nullptr, "q4_k_m");
  const ExpertGemmTermsUsed mxfp4 = expert_gemm_terms_in(rocm, nullptr, "mxfp4_moe");
  CHECK(q4.terms.half_tokens == 102.0);
  CHECK(q4.terms.peak_share == 1.0);
  CHECK(mxfp4.terms.half_tokens == 25.0);
  CHECK(mxfp4.terms.peak_share == 0.64);
  CHECK(mxfp4.format_own);
  CHECK_FALSE(q4.format_own);
  // gpt-oss-120b (128 experts, 4 per token) prefilling one 512-token ubatch: 512 x 4 / 128 = 16
  // tokens per expert, so 0.64 x 16 / (16 + 25) = 0.24976 of the dense rate (with the backend's
  // terms it would be 16 / (16 + 102) = 0.13559).
  ScenarioRequest r = request("ryzen-ai-max-395", "gpt-oss-120b", "mxfp4", "llama.cpp:rocm");
  r.prompt_tokens = 512;
  r.gen_tokens = 0;
  const Analysis a = analyze_request(r);
  CHECK(a.prefill.experts.tokens_per_expert == Approx(16.0).epsilon(1e-6));
  CHECK(a.prefill.experts.share_of_dense_rate == Approx(0.24976).epsilon(1e-4));
  // A build that sets its own half_tokens keeps it for every format (the format's terms are the
  // newest builds'): CUDA before PR #15525 fills at 14 tokens.
  const BackendProfile& cuda = engine.backends.at("cuda");
  CHECK(expert_gemm_terms_in(cuda, cuda.build_for(6000), "mxfp4_moe").terms.half_tokens == 14.0);
}
