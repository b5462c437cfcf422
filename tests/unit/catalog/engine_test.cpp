// SPDX-License-Identifier: MIT
// What an engine does, as data: the behaviour fields of data/engines/*.json,
// and the native FP8/FP4 path of data/quant/formats.json.
#include <catch2/catch.hpp>

#include "optadvisor/catalog/catalog.hpp"
#include "fixtures.hpp"

using namespace optadvisor;

namespace {

using fixtures::catalog;

nlohmann::json minimal_engine() {
  return {
      {"id", "x"},
      {"name", "X"},
      {"kind", "inference"},
      {"backends",
       {{"default",
         {{"decode_bandwidth_efficiency", 0.7}, {"prefill_compute_efficiency", 0.5}, {"layer_overhead_s", 0}, {"step_overhead_s", 0}}}}},
      {"quants", {"hf-bf16"}},
      {"memory", {{"runtime_overhead_bytes", 0}}},
      {"sources", nlohmann::json::object()}};
}

}  // namespace

TEST_CASE("engine behaviour comes from the engine files", "[catalog][engine]") {
  const EngineProfile& llama = catalog().resolve_engine("llama.cpp");
  const EngineProfile& vllm = catalog().resolve_engine("vllm");
  const EngineProfile& mlx = catalog().resolve_engine("mlx");
  CHECK(llama.multi_device == MultiDevice::kLayers);
  CHECK(llama.multi_device_setting == "-sm layer");
  CHECK(vllm.multi_device == MultiDevice::kTensor);
  for (const char* one_device : {"mlx", "executorch", "qnn"})
    CHECK(catalog().resolve_engine(one_device).multi_device == MultiDevice::kNone);
  CHECK(llama.offloads_to_host);
  CHECK_FALSE(vllm.offloads_to_host);
  CHECK(llama.own_flash_attention);
  CHECK(mlx.own_flash_attention);
  CHECK_FALSE(vllm.own_flash_attention);
  CHECK(llama.memory.activation_model == ActivationModel::kGgmlUbatch);
  CHECK(vllm.memory.activation_model == ActivationModel::kBatchedTokens);
  // The prefill chunk follows the activation model: n_ubatch for ggml, max_batched_tokens otherwise.
  CHECK(llama.memory.prefill_chunk_tokens() == llama.memory.ubatch_tokens);
  CHECK(vllm.memory.prefill_chunk_tokens() == vllm.memory.max_batched_tokens);
}

TEST_CASE("engine behaviour fields: defaults and bad values", "[catalog][engine]") {
  std::vector<Problem> problems;
  const auto plain = engine_from_json(minimal_engine(), problems);
  REQUIRE(plain);
  CHECK(problems.empty());
  // Absent: a tensor-parallel server engine without offload or its own attention kernels.
  CHECK(plain->multi_device == MultiDevice::kTensor);
  CHECK_FALSE(plain->offloads_to_host);
  CHECK_FALSE(plain->own_flash_attention);
  CHECK(plain->memory.activation_model == ActivationModel::kBatchedTokens);

  nlohmann::json bad = minimal_engine();
  bad["multi_device"] = "pipeline";
  bad["memory"]["activation_model"] = "ggml";
  problems.clear();
  engine_from_json(bad, problems);
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].pointer == "/multi_device");
  CHECK(problems[1].pointer == "/memory/activation_model");
}

TEST_CASE("runs_natively: FP8 and FP4 checkpoints need the device's capability", "[catalog][quant]") {
  const QuantDb& q = catalog().quant();
  const auto& a100 = catalog().resolve_hardware("a100-sxm-80gb").capabilities;  // no FP8, no FP4
  const auto& h100 = catalog().resolve_hardware("h100").capabilities;           // FP8
  const auto& mi355x = catalog().resolve_hardware("mi355x").capabilities;       // FP8, MXFP4, no NVFP4
  REQUIRE(q.resolve("fp8").native_compute);
  CHECK(q.resolve("fp8").native_compute->dtype == "fp8");
  CHECK(q.resolve("nvfp4").native_compute->dtype == "fp4");
  CHECK(q.resolve("mxfp4").native_compute->capability == "mxfp4");
  CHECK_FALSE(runs_natively(q.resolve("fp8"), a100));
  CHECK(runs_natively(q.resolve("fp8"), h100));
  CHECK_FALSE(runs_natively(q.resolve("nvfp4"), h100));
  CHECK(runs_natively(q.resolve("mxfp4"), mi355x));
  CHECK_FALSE(runs_natively(q.resolve("nvfp4"), mi355x));
  // Weight-only formats have no native path to lack.
  CHECK_FALSE(q.resolve("q4_k_m").native_compute);
  CHECK(runs_natively(q.resolve("q4_k_m"), a100));
  CHECK(runs_natively(q.resolve("awq-int4"), a100));
}

TEST_CASE("a device path's format paths name quant formats by their canonical id", "[catalog][engine]") {
  // compute_dtype_for matches the scenario's quant id exactly, so an alias or a typo here would
  // silently never apply: every key must be a format's own id.
  std::size_t seen = 0;
  for (const auto& engine : catalog().engines())
    for (const auto& [name, backend] : engine.backends)
      for (const auto& path : backend.device_paths)
        for (const auto& [quant, format_path] : path.format_paths) {
          const std::string& dtype = format_path.compute_dtype;
          const QuantFormat* format = catalog().quant().find(quant);
          INFO(engine.id << " " << name << " " << path.architecture_contains << " " << quant);
          REQUIRE(format != nullptr);
          CHECK(format->id == quant);
          CHECK((dtype == "fp32" || dtype == "fp16" || dtype == "bf16" || dtype == "int8"));
          ++seen;
        }
  CHECK(seen >= 1);  // llama.cpp Vulkan on AMD RDNA 3: bf16 -> fp32
  DevicePath path;
  path.vendor = "amd";
  path.architecture_contains = "RDNA 3";
  path.format_paths = {{"bf16", {"fp32", "scalar shaders"}}};
  CHECK(path.compute_dtype_for("bf16") == "fp32");
  CHECK(path.compute_dtype_for("q8_0").empty());  // the path's own (here none: the backend's)
}

namespace {

/// Every backend's entries of a map keyed by quant id (`entries(backend)`), each key checked to be a
/// canonical quant id (the model matches the scenario's id exactly, so an alias would never apply),
/// then `check(backend, quant, value)`; how many there were.
template <class Entries, class Check>
std::size_t each_quant_entry(Entries entries, Check check) {
  std::size_t seen = 0;
  for (const auto& engine : catalog().engines())
    for (const auto& [name, backend] : engine.backends)
      for (const auto& [quant, value] : entries(backend)) {
        const QuantFormat* format = catalog().quant().find(quant);
        INFO(engine.id << " " << name << " " << quant);
        REQUIRE(format != nullptr);
        CHECK(format->id == quant);
        check(backend, quant, value);
        ++seen;
      }
  return seen;
}

}  // namespace

TEST_CASE("a backend's formats without mat-vec experts name quant formats by their canonical id", "[catalog][engine]") {
  const std::size_t seen = each_quant_entry([](const BackendProfile& b) -> const auto& { return b.expert_matvec_excluded_quants; },
                                            [](const BackendProfile& b, const std::string& quant, const std::string& why) {
                                              CHECK_FALSE(why.empty());
                                              CHECK_FALSE(b.expert_matvec_runs(quant));
                                            });
  CHECK(seen >= 1);  // llama.cpp Vulkan: bf16
}

TEST_CASE("a MoE layer time per weight format names quant formats by their canonical id", "[catalog][engine]") {
  const std::size_t seen = each_quant_entry([](const BackendProfile& b) -> const auto& { return b.moe_layer_overhead_by_quant_s; },
                                            [](const BackendProfile& b, const std::string& quant, double seconds) {
                                              CHECK(b.moe_layer_overhead_for(quant) == seconds);
                                            });
  CHECK(seen >= 3);  // vLLM: nvfp4, int4-wo, mxfp4
}

TEST_CASE("grouped-GEMM terms per weight format name quant formats by their canonical id", "[catalog][engine]") {
  const std::size_t seen = each_quant_entry([](const BackendProfile& b) -> const auto& { return b.expert_gemm_by_quant; },
                                            [](const BackendProfile& b, const std::string& quant, const ExpertGemmTerms& terms) {
                                              CHECK(expert_gemm_terms_in(b, nullptr, quant).terms.half_tokens == terms.half_tokens);
                                              CHECK(expert_gemm_terms_in(b, nullptr, quant).terms.peak_share == terms.peak_share);
                                            });
  CHECK(seen >= 2);  // llama.cpp ROCm and Vulkan: mxfp4_moe
}

TEST_CASE("a serving era's recorded accuracy: by device, pooled, and the pool is the devices' runs", "[catalog][engine]") {
  const ServingEra& vllm = catalog().resolve_engine("vllm").serving.eras.back();
  const ServingAccuracy* h100 = vllm.accuracy_on("h100-sxm");
  const ServingAccuracy* pooled = vllm.accuracy_pooled();
  REQUIRE(h100 != nullptr);
  REQUIRE(pooled != nullptr);
  CHECK(vllm.accuracy_on("l4") == nullptr);  // never measured there: serve says the figures are extrapolated
  CHECK(vllm.accuracy_shown_on("l4") == pooled);
  CHECK(vllm.accuracy_shown_on("h100-sxm") == h100);
  CHECK(vllm.accuracy_devices().size() + 1 == vllm.accuracy.size());
  CHECK(h100->runs > 0);
  CHECK(h100->runs < pooled->runs);
  CHECK(h100->ttft_median_error <= h100->ttft_p90_error);
  CHECK(h100->tpot_median_error <= h100->tpot_p90_error);

  nlohmann::json e = minimal_engine();
  nlohmann::json one = {{"runs", 3}, {"ttft_median_error", 0.2}, {"ttft_p90_error", 0.5}, {"tpot_median_error", 0.1}, {"tpot_p90_error", 0.3}};
  nlohmann::json a100 = one, h100_runs = one;
  a100["device"] = "a100-sxm-80gb";
  a100["runs"] = 1;
  h100_runs["device"] = "h100-sxm";
  h100_runs["runs"] = 2;
  e["serving"] = {{"scheduler", "mixed"},
                  {"kv_admission", "incremental"},
                  {"max_batched_tokens", 8192},
                  {"max_sequences", 256},
                  {"eras",
                   {{{"from_version", "0.0"},
                     {"bandwidth_efficiency", 0.8},
                     {"gemm_efficiency", 0.6},
                     {"attention_efficiency", 0.4},
                     {"step_overhead_s", 0.001},
                     {"layer_overhead_s", 0},
                     {"communication_efficiency", 0.7},
                     {"accuracy", {{"measured", "by hand"}, {"all", one}, {"by_device", {a100, h100_runs}}}}}}}};
  std::vector<Problem> problems;
  const auto ok = engine_from_json(e, problems);
  REQUIRE(ok);
  CHECK(problems.empty());  // 1 + 2 runs = the pool's 3
  CHECK(ok->serving.eras.front().accuracy_on("a100-sxm-80gb")->runs == 1);
  // A pool that is not the devices' runs together is refused.
  e["serving"]["eras"][0]["accuracy"]["all"]["runs"] = 4;
  problems.clear();
  engine_from_json(e, problems);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].pointer == "/serving/eras/accuracy");
  CHECK(problems[0].message.find("add up to 3, not the 4") != std::string::npos);
}

TEST_CASE("a backend's recorded estimate accuracy: by kind of model and device class, one entry each", "[catalog][engine]") {
  // The shipped data: llama.cpp CUDA on consumer GPUs has dense and MoE entries, from their own files.
  const BackendProfile& cuda = catalog().resolve_engine("llama.cpp").backends.at("cuda");
  const EstimateAccuracy* dense = cuda.accuracy_for(false, "consumer-gpu");
  const EstimateAccuracy* moe = cuda.accuracy_for(true, "consumer-gpu");
  REQUIRE(dense != nullptr);
  REQUIRE(moe != nullptr);
  CHECK(dense->data == "bench/data/speed_scenarios.csv");
  CHECK(moe->data == "bench/data/moe_scenarios.csv");
  CHECK(dense->prefill.runs > 0);
  CHECK(dense->prefill.median_error <= dense->prefill.p90_error);
  CHECK(cuda.accuracy_for(false, "mobile-soc") == nullptr);  // estimate says the figures are extrapolated

  nlohmann::json e = minimal_engine();
  const nlohmann::json entry = {{"data", "bench/data/x.csv"},
                                {"models", "dense"},
                                {"device_class", "cpu"},
                                {"decode", {{"runs", 4}, {"median_error", 0.1}, {"p90_error", 0.2}}},
                                {"recorded", "by hand"}};
  e["backends"]["default"]["accuracy"] = nlohmann::json::array({entry});
  std::vector<Problem> problems;
  const auto one = engine_from_json(e, problems);
  REQUIRE(one);
  CHECK(problems.empty());
  const EstimateAccuracy* cpu = one->backends.at("default").accuracy_for(false, "cpu");
  REQUIRE(cpu != nullptr);
  CHECK(cpu->decode.runs == 4);
  CHECK(cpu->prefill.runs == 0);  // no prefill measured
  // Two entries for the same kind of model and class would leave estimate to pick one: refused.
  e["backends"]["default"]["accuracy"] = nlohmann::json::array({entry, entry});
  problems.clear();
  engine_from_json(e, problems);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].pointer == "/backends/default/accuracy");
}
