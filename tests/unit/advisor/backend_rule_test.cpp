// SPDX-License-Identifier: MIT
// The llamacpp-rocm-backend rule: the same GGUF file on llama.cpp's ROCm backend instead of Vulkan
// on an AMD GPU, kept only where the computed request is faster.
#include <catch2/catch.hpp>

#include "optadvisor/advisor/playbook.hpp"
#include "optadvisor/advisor/rules.hpp"
#include "optadvisor/advisor/transforms.hpp"
#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "fixtures.hpp"

using namespace optadvisor;
using fixtures::catalog;

namespace {

ScenarioRequest strix(const std::string& model, const std::string& quant, const std::string& engine) {
  ScenarioRequest r = fixtures::request("ryzen-ai-max-395", model, quant, engine);
  r.prompt_tokens = 4096;
  r.gen_tokens = 256;
  return r;
}

const Recommendation* find(const Advice& a, const std::string& id) {
  for (const auto& rec : a.recommendations)
    if (rec.rule->id == id) return &rec;
  return nullptr;
}

}  // namespace

TEST_CASE("switch_backend keeps the engine, the file and the build, and needs the device to run the backend", "[advisor][backend]") {
  auto apply = [](const ScenarioRequest& r) { return fixtures::apply_rule("llamacpp-rocm-backend", r); };
  ScenarioRequest r = strix("ministral-3-14b", "bf16", "llama.cpp:vulkan@b9193");
  r.weights_size = "27.0GB";
  r.ubatch_tokens = 1024;
  const TransformResult t = apply(r);
  REQUIRE(t.request);
  CHECK(t.request->engine == "llama.cpp:rocm@b9193");
  CHECK(t.request->quant == "bf16");
  CHECK(t.request->weights_size == "27.0GB");  // the same GGUF file
  CHECK(t.request->ubatch_tokens == 1024);
  REQUIRE(t.notes.size() == 1);
  CHECK(t.notes[0] == "backend: llama.cpp:vulkan -> llama.cpp:rocm (the same GGUF file)");
  // Already on ROCm; or a device that does not list llama.cpp:rocm (an RTX 4090 runs Vulkan too).
  CHECK(apply(strix("ministral-3-14b", "bf16", "llama.cpp:rocm")).not_applicable == "the backend is already rocm");
  ScenarioRequest nvidia = fixtures::request("rtx4090", "llama-3.1-8b", "q4_k_m", "llama.cpp:vulkan");
  CHECK(apply(nvidia).not_applicable == "NVIDIA GeForce RTX 4090 24GB does not run llama.cpp:rocm");
}

TEST_CASE("the advisor moves BF16 off AMD's Vulkan path and keeps quantized decode on it, by the computed request",
          "[advisor][backend]") {
  // Ministral-3-14B BF16 on a Strix Halo: Vulkan runs BF16 products on the fp32 vector ALUs (8.3
  // TFLOP/s), ROCm on the matrix cores (20.8), so a 4,096-token prompt prefills about 2.5x faster
  // on ROCm and the request is faster.
  AdviceRequest q;
  q.scenario = strix("ministral-3-14b", "bf16", "llama.cpp:vulkan");
  q.goal = Goal::kLatency;
  const Advice a = advise(catalog(), fixtures::rule_book(), q);
  const Recommendation* rocm = find(a, "llamacpp-rocm-backend");
  REQUIRE(rocm);
  CHECK(rocm->after.inference().analysis.prefill.time_s < 0.5 * a.base.inference().analysis.prefill.time_s);
  CHECK(rocm->after.inference().analysis.request_latency_s < a.base.inference().analysis.request_latency_s);
  // Qwen3.6-35B-A3B Q4_K_M: ROCm prefills about as fast and decodes slower (50.3 against 60.4 tok/s
  // measured, effects row P007), so the change is computed as a loss and not offered.
  AdviceRequest k = q;
  k.scenario = strix("qwen3.6-35b-a3b", "q4_k_m", "llama.cpp:vulkan");
  CHECK_FALSE(find(advise(catalog(), fixtures::rule_book(), k), "llamacpp-rocm-backend"));
}
