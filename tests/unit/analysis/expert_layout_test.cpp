// SPDX-License-Identifier: MIT
// Expert parallelism with data-parallel attention as a layout of the one-batch estimate (--ep,
// --dp-attention), the traffic it puts on the GPU link, and the layouts it refuses.
#include <catch2/catch.hpp>

#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/expert_layout.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/base/error.hpp"
#include "fixtures.hpp"

using namespace optadvisor;
using fixtures::analyze_request;
using fixtures::catalog;
using fixtures::request;

namespace {

/// DeepSeek-V3 (native FP8 blocks) on eight H200s with vLLM: tensor parallel 8, or `dp` attention
/// ranks of tensor parallel 8 / dp with the experts sharded 8 ways.
ScenarioRequest deepseek_on_eight_h200(uint32_t dp, const char* batch, int64_t prompt = 2000, int64_t gen = 500) {
  ScenarioRequest r = request("h200", "deepseek-v3", "", "vllm");
  r.gpus = 8;
  r.tp = 8 / dp;
  r.dp_attention = dp;
  r.ep = dp > 1 ? 8 : 1;
  r.batch = batch;
  r.prompt_tokens = prompt;
  r.gen_tokens = gen;
  return r;
}

ModelSpec deepseek_v3() { return prepare_scenario(catalog(), deepseek_on_eight_h200(1, "1")).scenario.model; }

}  // namespace

TEST_CASE("link traffic of tensor parallel and of expert parallel layouts, worked by hand", "[analysis][expert_layout]") {
  const ModelSpec m = deepseek_v3();
  // DeepSeek-V3: hidden 7168, 8 routed experts per token, 61 layers of which the first 3 are dense.
  REQUIRE(m.hidden_size == 7168);
  REQUIRE(m.num_experts_per_tok == 8);
  CHECK(moe_layer_count(m) == 58);
  SECTION("tensor parallel 8: two ring all-reduces per layer, no all-to-all") {
    // 61 x 2 = 122 all-reduces; each moves 2 x 7/8 of 7168 bf16 values (2 bytes) per token:
    // 122 x 2 x 0.875 x 7168 x 2 = 3,060,736 bytes per token.
    const LayoutTraffic t = layout_traffic(m, ExpertLayout{8, 1, 1}, 61, moe_layer_count(m));
    CHECK(t.allreduce_count == 122);
    CHECK(t.allreduce_bytes_per_token == Approx(3060736.0));
    CHECK(t.alltoall_bytes_per_token == 0);
    CHECK(t.alltoall_count == 0);
  }
  SECTION("eight attention ranks, experts eight ways: all-to-all only") {
    // Dispatch (FP8, 1 byte) and combine (BF16, 2 bytes) of 8 experts' copies, 7/8 of them off the
    // GPU, in each of 58 MoE layers: 58 x 8 x 7168 x 3 x 0.875 = 8,730,624 bytes per token; 116 collectives.
    const LayoutTraffic t = layout_traffic(m, ExpertLayout{1, 8, 8}, 61, moe_layer_count(m));
    CHECK(t.allreduce_count == 0);
    CHECK(t.alltoall_bytes_per_token == Approx(8730624.0));
    CHECK(t.alltoall_count == 116);
  }
  SECTION("four ranks of tensor parallel 2: one all-reduce per layer, the rank's two GPUs share the all-to-all") {
    // 61 all-reduces of 2 x 1/2 x 7168 x 2 bytes = 874,496 bytes per token; all-to-all 8,730,624 / 2 = 4,365,312.
    const LayoutTraffic t = layout_traffic(m, ExpertLayout{2, 4, 8}, 61, moe_layer_count(m));
    CHECK(t.allreduce_count == 61);
    CHECK(t.allreduce_bytes_per_token == Approx(874496.0));
    CHECK(t.alltoall_bytes_per_token == Approx(4365312.0));
  }
}

TEST_CASE("layouts over more GPUs than a node send the off-node share over the scale-out network", "[analysis][expert_layout]") {
  const ModelSpec m = deepseek_v3();
  // H100 SXM: NVLink 450 GB/s per direction in a node of 8; 50 GB/s per GPU over the network.
  const NodeLinks links = node_links(catalog().resolve_hardware("h100-sxm"));
  REQUIRE(links.node_gpus == 8);
  REQUIRE(links.scale_up_bytes_per_s == Approx(450e9));
  REQUIRE(links.scale_out_bytes_per_s == Approx(50e9));
  SECTION("within a node nothing changes") {
    CHECK(layout_traffic(m, ExpertLayout{1, 8, 8}, 61, 58, links).alltoall_bytes_per_token == Approx(8730624.0));
  }
  SECTION("sixteen ranks: 8 of 15 peers off the node, their bytes 9x slower") {
    // Off this GPU: 58 x 8 x 7168 x 3 x 15/16 = 9,354,240 bytes; 8/15 of them cross the network at
    // 450 / 50 = 9 times the NVLink time: 9,354,240 x (7/15 + 8/15 x 9) = 9,354,240 x 79/15 = 49,265,664.
    const LayoutTraffic t = layout_traffic(m, ExpertLayout{1, 16, 16}, 61, 58, links);
    CHECK(t.alltoall_bytes_per_token == Approx(49265664.0));
    CHECK(t.alltoall_count == 116);
  }
  SECTION("tensor parallel 16: the ring all-reduce runs at the network's rate") {
    // 122 all-reduces x 2 x 15/16 x 7168 x 2 bytes = 3,279,360 bytes, x 9 = 29,514,240.
    CHECK(layout_traffic(m, ExpertLayout{16, 1, 1}, 61, 58, links).allreduce_bytes_per_token == Approx(29514240.0));
  }
  SECTION("a device without a recorded node keeps every GPU on its scale-up link") {
    NodeLinks unknown = links;
    unknown.node_gpus = 0;
    CHECK(layout_traffic(m, ExpertLayout{1, 16, 16}, 61, 58, unknown).alltoall_bytes_per_token == Approx(9354240.0));
  }
}

TEST_CASE("data-parallel attention: dense weights per rank, experts over all GPUs, each rank its own sequences", "[analysis][expert_layout]") {
  const PreparedScenario tp = prepare_scenario(catalog(), deepseek_on_eight_h200(1, "256"));
  const PreparedScenario ep = prepare_scenario(catalog(), deepseek_on_eight_h200(8, "256"));
  const WeightsSummary& w = tp.scenario.weights;
  const Analysis a_tp = analyze(tp.scenario);
  const Analysis a_ep = analyze(ep.scenario);
  // Tensor parallel 8 holds an eighth of everything: 673.15 GB / 8 = 84.14 GB per GPU. Each of
  // eight attention ranks holds the dense parts whole and an eighth of the routed experts:
  // (673.15 - 654.00) + 654.00 / 8 = 100.84 GB.
  CHECK(a_tp.memory.weights_bytes == Approx(w.total_bytes / 8));
  CHECK(a_ep.memory.weights_bytes == Approx(w.total_bytes - w.routed_expert_bytes + w.routed_expert_bytes / 8));
  CHECK(a_ep.memory.weights_bytes / 1e9 == Approx(100.84).epsilon(1e-3));
  // MLA's one latent per token is replicated on every tensor-parallel GPU; a rank holds only its
  // own 256 / 8 = 32 sequences, so its GPU holds an eighth of the cache.
  CHECK(a_ep.memory.kv_cache_bytes == Approx(a_tp.memory.kv_cache_bytes / 8));
  CHECK(ep.scenario.workload.gpus == 8);
  // The whole worker holds eight ranks' sequences (capped at eight times vLLM's max_num_seqs).
  ScenarioRequest most = deepseek_on_eight_h200(8, "max");
  ScenarioRequest most_tp = deepseek_on_eight_h200(1, "max");
  CHECK(analyze_request(most).batch > 3 * analyze_request(most_tp).batch);
}

TEST_CASE("tensor parallel wins at low concurrency, expert parallel with data-parallel attention at high", "[analysis][expert_layout]") {
  // At 16 sequences a step reads weights: every attention rank reads its dense weights whole
  // (about 17 GB against 2 GB per GPU under tensor parallel 8), so a token takes longer. At 256
  // sequences of 2,500 tokens the replicated MLA cache dominates tensor parallel's step, and the
  // ranks each read an eighth of it.
  const Analysis low_tp = analyze_request(deepseek_on_eight_h200(1, "16"));
  const Analysis low_ep = analyze_request(deepseek_on_eight_h200(8, "16"));
  CHECK(low_ep.decode.time_s > low_tp.decode.time_s);  // per token
  CHECK(low_ep.decode.tokens_per_s < low_tp.decode.tokens_per_s);
  const Analysis high_tp = analyze_request(deepseek_on_eight_h200(1, "256"));
  const Analysis high_ep = analyze_request(deepseek_on_eight_h200(8, "256"));
  CHECK(high_ep.decode.tokens_per_s > 1.1 * high_tp.decode.tokens_per_s);
  CHECK(high_ep.serving_tokens_per_s > 1.2 * high_tp.serving_tokens_per_s);
  // The all-to-all shows as interconnect time in the decode step.
  CHECK(high_ep.decode.interconnect_time_s > 0);
}

TEST_CASE("expert-parallel layouts the model or engine cannot run are refused with the option named", "[analysis][expert_layout]") {
  auto message = [](const ScenarioRequest& r) {
    try {
      prepare_scenario(catalog(), r);
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::kBadInput);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  ScenarioRequest dense = request("h100", "llama-3.1-70b", "fp8", "vllm");
  dense.tp = dense.gpus = 2;
  dense.ep = 2;
  CHECK(message(dense) == "--ep 2: Llama-3.1-70B has no routed experts");
  dense.ep = 1;
  dense.dp_attention = 2;
  dense.tp = 1;
  CHECK(message(dense) == "--dp-attention 2: Llama-3.1-70B is a dense model");
  ScenarioRequest odd = deepseek_on_eight_h200(8, "1");
  odd.ep = 3;
  CHECK(message(odd) == "--ep 3 does not divide the model's 256 routed experts");
  odd.ep = 16;
  CHECK(message(odd) == "--ep 16 does not divide the worker's 8 GPUs (tp 1 x dp-attention 8)");
  ScenarioRequest gpus = deepseek_on_eight_h200(8, "1");
  gpus.gpus = 4;
  CHECK(message(gpus) == "--tp 1 x --pp 1 x --dp-attention 8 = 8 does not match --gpus 4");
  ScenarioRequest cpp = request("rtx4090", "qwen3-30b-a3b", "q4_k_m", "llama.cpp");
  cpp.dp_attention = 2;
  cpp.gpus = 2;
  CHECK(message(cpp) == "--dp-attention: llama.cpp has no expert parallelism");
  ScenarioRequest big = deepseek_on_eight_h200(8, "1");
  big.dp_attention = 2048;
  CHECK(message(big) == "at most 1024 GPUs are modelled");
}
