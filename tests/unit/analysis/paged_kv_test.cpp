// SPDX-License-Identifier: MIT
// A continuous-batching server (vLLM, SGLang, TensorRT-LLM) gives each running sequence KV blocks
// for the tokens it holds (prompt + generated), not for the maximum length (--context), runs as
// many sequences at a time as its pool holds, and must hold one sequence of the maximum length.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "optadvisor/analysis/analysis.hpp"
#include "fixtures.hpp"

using namespace optadvisor;
using fixtures::analyze_request;
using fixtures::request;

namespace {

/// Llama-3.1-8B in BF16 on an L4 (24 GB) at an 8k maximum length: 512 + 128 tokens per request.
ScenarioRequest l4_at_8k(const std::string& engine, const char* batch) {
  ScenarioRequest r = request("l4", "llama-3.1-8b", "", engine);
  r.context_tokens = 8192;
  r.prompt_tokens = 512;
  r.gen_tokens = 128;
  r.batch = batch;
  return r;
}

}  // namespace

TEST_CASE("paged KV: a server's sequences hold prompt + generated tokens, not the maximum length", "[analysis][paged_kv]") {
  // Llama-3.1-8B's KV per token in f16: 32 layers x 8 KV heads x 128 x 2 (K and V) x 2 bytes =
  // 131,072 bytes. vLLM: 512 + 128 = 640 tokens, whole 16-token blocks: 640 x 131,072 = 83,886,080
  // bytes per sequence; 16 of them 1,342,177,280 bytes, more than one 8192-token sequence
  // (1,073,741,824), so the cache is the batch's.
  const Analysis vllm = analyze_request(l4_at_8k("vllm", "16"));
  CHECK(vllm.memory.kv_tokens_per_sequence == 640);
  CHECK(vllm.memory.kv_cache_bytes == Approx(1342177280.0));
  CHECK(vllm.batch == 16);
  CHECK(vllm.memory.fits);
  // llama.cpp's server reserves the whole context per slot: 16 x 8192 x 131,072 = 17.2 GB of KV
  // beside 16 GB of weights, more than the L4 has.
  const Analysis llama = analyze_request(l4_at_8k("llama.cpp:cuda", "16"));
  CHECK(llama.memory.kv_tokens_per_sequence == 8192);
  CHECK(llama.memory.kv_cache_bytes == Approx(16.0 * 8192 * 131072));
}

TEST_CASE("paged KV: the pool holds at least one sequence of the maximum length", "[analysis][paged_kv]") {
  // One request of 640 tokens: the cache is still sized for one 8192-token sequence (vLLM refuses
  // a max_model_len whose KV exceeds its pool): 8192 x 131,072 = 1,073,741,824 bytes.
  const Analysis one = analyze_request(l4_at_8k("vllm", "1"));
  CHECK(one.memory.kv_cache_bytes == Approx(1073741824.0));
  CHECK(one.memory.fits);
  // At 131,072 tokens one sequence needs 17.2 GB of KV: with 16 GB of weights it does not fit an
  // L4, and the warning says the server refuses that maximum length.
  ScenarioRequest longest = l4_at_8k("vllm", "1");
  longest.context_tokens = 131072;
  const Analysis refused = analyze_request(longest);
  CHECK_FALSE(refused.memory.fits);
  bool warned = false;
  for (const auto& w : refused.warnings) warned = warned || w.find("refuses a maximum length of 131072 tokens") != std::string::npos;
  CHECK(warned);
}

TEST_CASE("paged KV: a batch past the pool runs as many sequences as fit, the rest wait", "[analysis][paged_kv]") {
  const Analysis a = analyze_request(l4_at_8k("vllm", "200"));
  CHECK(a.memory.fits);
  REQUIRE(a.memory.max_batch >= 1);
  CHECK(a.memory.max_batch < 200);
  CHECK(a.batch == a.memory.max_batch);
  CHECK(a.batch_asked == 200);  // what compare reports beside the batch it ran
  bool noted = false;
  for (const auto& s : a.warnings)
    noted = noted || s.find(fmt::format("vllm runs {} of the 200 sequences at a time", a.memory.max_batch)) != std::string::npos;
  CHECK(noted);
}
