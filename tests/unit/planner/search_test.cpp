// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/advisor/playbook.hpp"
#include "optadvisor/analysis/analysis_json.hpp"
#include "optadvisor/planner/search.hpp"
#include "fixtures.hpp"

using namespace optadvisor;

namespace {

using fixtures::catalog;
using fixtures::request;

using fixtures::model;

SearchRequest request_for(const std::string& model_id, Goal goal, std::vector<std::string> devices) {
  SearchRequest r;
  r.goal = goal;
  r.workload.model.preset = model_id;
  r.space.hardware = std::move(devices);
  return r;
}

const SearchCandidate& best_by_metric(const SearchResult& result) {
  const bool lower = metric_for(result.goal).lower_is_better;
  const SearchCandidate* best = &result.candidates.front();
  for (const auto& c : result.candidates)
    if (lower ? c.metric < best->metric : c.metric > best->metric) best = &c;
  return *best;
}

}  // namespace

TEST_CASE("Pareto fronts of a hand-made set", "[search][pareto]") {
  // Both coordinates minimized. Worked by hand:
  //   A(1,5) B(2,3) C(3,1) G(2,3): nothing dominates them      -> front 1 (G equals B and shares its front)
  //   D(2,4): B is no worse in x and better in y               -> front 2
  //   E(3,3): B (better x) and C (better y) dominate it        -> front 2 (D and E do not dominate each other)
  //   F(4,4): D (better x, equal y) and E dominate it          -> front 3
  const std::vector<std::pair<double, double>> points = {{1, 5}, {2, 3}, {3, 1}, {2, 4}, {3, 3}, {4, 4}, {2, 3}};
  const std::vector<uint32_t> expected = {1, 1, 1, 2, 2, 3, 1};
  CHECK(pareto_fronts(points) == expected);
  // Equal y, different x: the smaller x dominates.
  CHECK(pareto_fronts({{2, 3}, {1, 3}}) == std::vector<uint32_t>{2, 1});
  CHECK(pareto_fronts({}).empty());
}

TEST_CASE("search finds the obvious answer: an H100 has the lowest latency for an 8B model", "[search]") {
  const SearchResult r = search(catalog(), model("llama-3.1-8b"), request_for("llama-3.1-8b", Goal::kLatency, {"rtx4090", "h100"}));
  REQUIRE_FALSE(r.candidates.empty());
  CHECK(r.stats.searched == r.stats.fit);  // an 8B model fits every configuration of these two cards
  CHECK(r.stats.meet_requirements == r.candidates.size());
  const SearchCandidate& best = best_by_metric(r);
  CHECK(best.hardware->id == "h100-sxm");  // 3.35 TB/s against 1.01 TB/s
  // The fastest single RTX 4090 and single H100: the H100 has the higher decode rate.
  double decode_4090 = 0, decode_h100 = 0;
  for (const auto& c : r.candidates) {
    if (c.gpus != 1) continue;
    double& d = c.hardware->id == "h100-sxm" ? decode_h100 : decode_4090;
    d = std::max(d, c.decode_tokens_per_s_per_sequence);
    CHECK(c.batch == 1);  // latency runs batch 1
  }
  CHECK(decode_h100 > decode_4090);
  // Priced configurations (the RTX 4090) are listed before those without a price (the H100).
  CHECK(r.candidates.front().hardware->id == "rtx4090");
  CHECK(r.candidates.back().hardware->id == "h100-sxm");
  CHECK_FALSE(r.candidates.back().cost_front);
  CHECK(r.candidates.back().energy_front);
  // Every rank-1 row with a price is on one of the two fronts.
  for (const auto& c : r.candidates)
    if (c.rank == 1) CHECK((c.cost_front == 1u || c.energy_front == 1u));
}

TEST_CASE("search: the budget drops configurations above it", "[search]") {
  SearchRequest r = request_for("llama-3.1-8b", Goal::kLatency, {"rtx4090", "rtx5090"});
  const SearchResult all = search(catalog(), model("llama-3.1-8b"), r);
  r.budget_usd = 2000;
  const SearchResult cheap = search(catalog(), model("llama-3.1-8b"), r);
  // One RTX 4090 (1599 USD) or one RTX 5090 (1999 USD) is within 2000 USD; two of either are not.
  REQUIRE_FALSE(cheap.candidates.empty());
  CHECK(cheap.stats.over_budget > 0);
  std::size_t within = 0;
  for (const auto& c : all.candidates) within += *c.efficiency.price_usd <= 2000 ? 1 : 0;
  CHECK(cheap.candidates.size() == within);
  for (const auto& c : cheap.candidates) {
    CHECK(c.gpus == 1);
    CHECK(*c.efficiency.price_usd <= 2000);
  }
}

TEST_CASE("search: --require keeps the candidates whose estimate JSON meets it", "[search]") {
  SearchRequest r = request_for("llama-3.1-8b", Goal::kThroughput, {"rtx4090"});
  r.space.max_gpus = 1;
  const SearchResult all = search(catalog(), model("llama-3.1-8b"), r);
  r.requirements = {parse_requirement("decode.tokens_per_s_per_sequence>=100"), parse_requirement("scenario.engine.id!=vllm")};
  const SearchResult kept = search(catalog(), model("llama-3.1-8b"), r);
  std::size_t expected = 0;
  for (const auto& c : all.candidates) expected += c.decode_tokens_per_s_per_sequence >= 100 && c.engine != "vllm" ? 1 : 0;
  REQUIRE(expected > 0);
  CHECK(kept.candidates.size() == expected);
  CHECK(kept.stats.fit == all.stats.fit);
  CHECK(kept.stats.meet_requirements == expected);
  for (const auto& c : kept.candidates) {
    CHECK(c.decode_tokens_per_s_per_sequence >= 100);
    CHECK(c.engine != "vllm");
  }
}

TEST_CASE("search: throughput tries powers of two up to the largest batch that fits", "[search]") {
  SearchRequest r = request_for("llama-3.1-8b", Goal::kThroughput, {"h100"});
  r.space.engines = {"vllm"};
  r.space.quants = {"fp8"};
  r.space.max_gpus = 1;
  const SearchResult result = search(catalog(), model("llama-3.1-8b"), r);
  std::vector<uint64_t> batches;
  for (const auto& c : result.candidates) batches.push_back(c.batch);
  std::sort(batches.begin(), batches.end());
  // The largest batch is what `fit` reports: sequences of 640 tokens whose KV cache fits beside the weights
  // (below vLLM's cap of 1024). The list is the powers of two below it, then it.
  ScenarioRequest fit = request("h100", "llama-3.1-8b", "fp8", "vllm");
  const uint64_t largest = analyze(prepare_scenario(catalog(), fit).scenario).memory.max_batch;
  REQUIRE(largest > 512);
  REQUIRE(largest < 1024);
  std::vector<uint64_t> expected;
  for (uint64_t b = 1; b < largest; b *= 2) expected.push_back(b);
  expected.push_back(largest);
  CHECK(batches == expected);
  CHECK(best_by_metric(result).batch == largest);  // throughput grows with the batch on a bandwidth-bound decode
}

/// Every device x engine x format x parallel layout below through the cache
/// and through prepare_scenario: the same scenario, or the same error.
static int check_cache_matches_prepare(const char* model_id, const char* kv_dtype) {
  const ResolvedModel m = model(model_id);
  ScenarioRequest base;
  base.model.preset = model_id;
  base.batch = "4";
  base.kv_dtype = kv_dtype;
  ScenarioCache cache(catalog(), m, base);
  int compared = 0;
  for (const char* hw_id : {"rtx4090", "h100", "m4-max-40c", "mi300x", "a100-sxm-80gb"}) {
    const HardwareProfile& hw = catalog().resolve_hardware(hw_id);
    for (const char* engine : {"vllm", "llama.cpp", "mlx", "tensorrt-llm", "sglang"}) {
      for (const char* quant : {"hf-bf16", "fp8", "awq-int4", "q4_k_m", "mlx-4bit"}) {
        for (uint32_t gpus : {1u, 2u, 3u}) {
          for (const bool pipeline : {false, true}) {
            const uint32_t tp = pipeline ? 1 : gpus, pp = pipeline ? gpus : 1;
            const ScenarioRequest request = cache.request(hw, engine, quant, gpus, tp, pp);
            std::optional<PreparedScenario> want, got;
            std::string want_error, got_error;
            try {
              want = prepare_scenario(catalog(), request, m);
            } catch (const Error& e) {
              want_error = e.what();
            }
            try {
              got = cache.prepare(hw, engine, quant, gpus, tp, pp);
            } catch (const Error& e) {
              got_error = e.what();
            }
            INFO(model_id << " kv '" << kv_dtype << "' " << hw_id << " " << engine << " " << quant << " gpus " << gpus << " tp " << tp);
            REQUIRE(want.has_value() == got.has_value());
            if (!want) {
              CHECK(got_error == want_error);
              continue;
            }
            ++compared;
            const Scenario& a = want->scenario;
            const Scenario& b = got->scenario;
            CHECK(a.hardware == b.hardware);
            CHECK(a.engine.id() == b.engine.id());
            CHECK(a.engine.backend == b.engine.backend);
            CHECK(a.engine.defaulted == b.engine.defaulted);
            CHECK(want->quant == got->quant);
            CHECK(want->notes == got->notes);
            CHECK(want->hardware_how.id == got->hardware_how.id);
            CHECK(want->hardware_how.via == got->hardware_how.via);
            CHECK(a.weights.total_bytes == b.weights.total_bytes);
            CHECK(a.weights.active_params == b.weights.active_params);
            CHECK(a.weights.native_compute_dtype == b.weights.native_compute_dtype);
            CHECK(a.workload.gpus == b.workload.gpus);
            CHECK(a.workload.tp == b.workload.tp);
            CHECK(a.workload.pp == b.workload.pp);
            CHECK(a.workload.batch == b.workload.batch);
            CHECK(a.workload.kv_dtype == b.workload.kv_dtype);
            CHECK(a.workload.host_bandwidth_bytes_per_s == b.workload.host_bandwidth_bytes_per_s);
            // The analysis is a pure function of the scenario: identical inputs, identical numbers.
            const Analysis x = analyze(a), y = analyze(b);
            CHECK(x.memory.total_bytes == y.memory.total_bytes);
            CHECK(x.memory.max_batch == y.memory.max_batch);
            CHECK(x.prefill.time_s == y.prefill.time_s);
            CHECK(x.decode.time_s == y.decode.time_s);
            CHECK(x.warnings == y.warnings);
          }
        }
      }
    }
  }
  return compared;
}

TEST_CASE("the scenario cache gives what prepare_scenario gives", "[search][cache]") {
  for (const char* model_id : {"llama-3.1-8b", "qwen3-30b-a3b"})
    for (const char* kv_dtype : {"", "fp8"}) CHECK(check_cache_matches_prepare(model_id, kv_dtype) > 20);
}

TEST_CASE("search and estimate agree on the KV-head rule", "[search][cache][layout]") {
  // Qwen2.5-7B: 28 attention heads, 4 KV heads. tp 14 divides 28 but neither
  // divides 4 nor is a multiple of it (4 % 14 = 4, 14 % 4 = 2): both refuse,
  // in the same words. tp 28 replicates each KV head on 7 ranks: both accept.
  const ResolvedModel m = model("qwen2.5-7b");
  ScenarioRequest base;
  base.model.preset = "qwen2.5-7b";
  ScenarioCache cache(catalog(), m, base);
  const HardwareProfile& hw = catalog().resolve_hardware("h100");
  std::string want, got;
  try {
    prepare_scenario(catalog(), cache.request(hw, "vllm", "hf-bf16", 14, 14, 1), m);
  } catch (const Error& e) {
    want = e.what();
  }
  try {
    cache.prepare(hw, "vllm", "hf-bf16", 14, 14, 1);
  } catch (const Error& e) {
    got = e.what();
  }
  CHECK(want == "--tp 14 neither divides the model's 4 key-value heads nor is a multiple of them");
  CHECK(got == want);
  CHECK(prepare_scenario(catalog(), cache.request(hw, "vllm", "hf-bf16", 28, 28, 1), m).scenario.workload.tp == 28);
  CHECK(cache.prepare(hw, "vllm", "hf-bf16", 28, 28, 1).scenario.workload.tp == 28);
}

TEST_CASE("the estimate sections --require reads are those of estimate --json", "[search][require]") {
  struct Case {
    const char* hw;
    const char* model;
    const char* engine;
    const char* batch;
  };
  // Batch 1 and a server batch (throughput present), a MoE model, an offloading llama.cpp.
  for (const Case& c : {Case{"h100", "llama-3.1-8b", "vllm", "1"}, Case{"rtx4090", "qwen3-30b-a3b", "llama.cpp", "max"},
                        Case{"rtx3060", "llama-3.1-70b", "llama.cpp", "4"}, Case{"m4-max-40c", "gemma-3-27b", "mlx", "2"}}) {
    ScenarioRequest r;
    r.hardware = c.hw;
    r.model.preset = c.model;
    r.engine = c.engine;
    r.batch = c.batch;
    const PreparedScenario ps = prepare_scenario(catalog(), r);
    const Analysis a = analyze(ps.scenario);
    const nlohmann::json full = estimate_json(ps, a);
    const nlohmann::json part = estimate_sections_json(ps, a, estimate_sections_modeled());
    INFO(c.hw << " " << c.model << " " << c.engine << " batch " << c.batch);
    for (const auto& section : estimate_sections_modeled()) {
      INFO(section);
      CHECK(full.contains(section) == part.contains(section));
      if (full.contains(section)) CHECK(full[section] == part[section]);
    }
  }
}

TEST_CASE("search: bad spaces are bad input", "[search]") {
  SearchRequest r = request_for("llama-3.1-8b", Goal::kLatency, {"rtx4090", "h100x"});
  CHECK_THROWS_WITH(search(catalog(), model("llama-3.1-8b"), r), "unknown hardware 'h100x'");
  r = request_for("llama-3.1-8b", Goal::kLatency, {"rtx4090"});
  r.budget_usd = -5;
  CHECK_THROWS_WITH(search(catalog(), model("llama-3.1-8b"), r), "--budget-usd must be a positive number of US dollars");
  r.budget_usd.reset();
  r.space.device_class = DeviceClass::kAppleSilicon;
  CHECK_THROWS_WITH(search(catalog(), model("llama-3.1-8b"), r), "no device of class apple-silicon to search");
  // A workload no engine accepts: the first reason, as bad input.
  r = request_for("llama-3.1-8b", Goal::kLatency, {"rtx4090"});
  r.workload.prompt_tokens = -1;
  CHECK_THROWS_WITH(search(catalog(), model("llama-3.1-8b"), r), "--prompt must be zero or more (got -1)");
}

TEST_CASE("a candidate's estimate command reproduces it", "[search]") {
  SearchRequest r = request_for("llama-3.1-8b", Goal::kThroughput, {"h100"});
  r.workload.prompt_tokens = 1024;
  SearchCandidate c;
  c.hardware = &catalog().resolve_hardware("h100");
  c.quant = "fp8";
  c.engine = "vllm";
  c.gpus = 2;
  c.tp = 2;
  c.batch_text = "64";
  CHECK(estimate_command(candidate_request(r, c)) ==
        "optadvisor estimate --hw h100-sxm --model llama-3.1-8b --quant fp8 --engine vllm --tp 2 --batch 64 --prompt 1024");
  ScenarioRequest odd = candidate_request(r, c);
  odd.model = {};
  odd.model.config_path = "/tmp/my model/config.json";
  CHECK(estimate_command(odd).find("--model-config '/tmp/my model/config.json'") != std::string::npos);
}

TEST_CASE("search: throughput weighs each layout replicated over the GPU budget", "[search][replicas]") {
  SearchRequest r = request_for("llama-3.1-8b", Goal::kThroughput, {"rtx4090"});
  r.space.max_gpus = 2;
  r.space.engines = {"vllm"};
  r.space.quants = {"fp8"};
  const SearchResult result = search(catalog(), model("llama-3.1-8b"), r);
  const SearchCandidate* copies = nullptr;
  const SearchCandidate* single = nullptr;
  for (const auto& c : result.candidates) {
    if (c.replicas == 2 && c.gpus == 1) copies = &c;
    if (copies && c.replicas == 1 && c.gpus == 1 && c.batch == copies->batch) single = &c;
  }
  REQUIRE(copies);
  REQUIRE(single);
  // Two copies of the one-GPU layout at its fastest batch: twice its rate for twice its price, and
  // one copy's memory and batch.
  CHECK(copies->serving_tokens_per_s == Approx(2 * single->serving_tokens_per_s));
  CHECK(copies->metric == Approx(copies->serving_tokens_per_s));
  REQUIRE(single->efficiency.price_usd);
  CHECK(*copies->efficiency.price_usd == Approx(2 * *single->efficiency.price_usd));
  CHECK(copies->memory_bytes == single->memory_bytes);
  // On the same two GPUs the copies out-serve tensor parallel 2, so they lead the ranking.
  for (const auto& c : result.candidates)
    if (c.tp == 2) CHECK(c.serving_tokens_per_s < copies->serving_tokens_per_s);
  CHECK(result.candidates.front().replicas == 2);
  CHECK(estimate_command(candidate_request(r, *copies)).find("--replicas 2") != std::string::npos);
  // The latency goal never replicates: a request is served by one copy.
  const SearchResult latency = search(catalog(), model("llama-3.1-8b"), request_for("llama-3.1-8b", Goal::kLatency, {"rtx4090"}));
  for (const auto& c : latency.candidates) CHECK(c.replicas == 1);
}

TEST_CASE("search takes --host and expert offload, and its reproduce command gives the same estimate", "[search][host]") {
  SearchRequest r = request_for("gpt-oss-120b", Goal::kLatency, {"rtx4090"});
  r.workload.host = "ryzen-9-9950x";
  r.workload.cpu_moe = true;
  r.space.max_gpus = 1;
  const SearchResult result = search(catalog(), model("gpt-oss-120b"), r);
  REQUIRE_FALSE(result.candidates.empty());
  const SearchCandidate& best = best_by_metric(result);
  // gpt-oss-120b has 36 layers: --cpu-moe ran as every layer's experts in host memory.
  CHECK(best.expert_offload_layers == 36);
  const ScenarioRequest again = candidate_request(result.request, best);
  const std::string command = estimate_command(again);
  CHECK(command.find("--host ryzen-9-9950x") != std::string::npos);
  CHECK(command.find("--n-cpu-moe 36") != std::string::npos);
  // The host's bandwidth and compute reach the candidate as they reach estimate.
  const PreparedScenario p = prepare_scenario(catalog(), again);
  CHECK(p.scenario.workload.host_id == "ryzen-9-9950x");
  CHECK(goal_metric(Goal::kLatency, analyze(p.scenario)) == Approx(best.metric));
}
