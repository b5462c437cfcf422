// SPDX-License-Identifier: MIT
// Calibration from the user's measurements: the llama-bench and vLLM result
// parsers on recorded files (tests/data/calibration/, see its README), bad
// files refused with their message, the mapping of rows onto scenarios, the
// fit recovering factors from measurements the model itself produced, bounds,
// and the overlay loading back into the catalog.
#include "optadvisor/calibrate/calibrate.hpp"

#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "optadvisor/analysis/analysis_json.hpp"
#include "optadvisor/readers/bench_import.hpp"
#include "optadvisor/catalog/calibration.hpp"
#include "optadvisor/catalog/catalog.hpp"
#include "fixtures.hpp"

namespace fs = std::filesystem;
using namespace optadvisor;
using Catch::Matchers::Contains;

namespace {

using fixtures::catalog;

std::string data(const std::string& name) { return std::string(OPTADVISOR_SOURCE_DIR) + "/tests/data/calibration/" + name; }

using fixtures::bad_input_message;

std::vector<Measurement> only(const std::vector<Measurement>& all, MeasuredMetric metric) {
  std::vector<Measurement> out;
  for (const auto& m : all)
    if (m.metric == metric) out.push_back(m);
  return out;
}

/// Replaces each row's measured value with what the model predicts when the
/// engine backend's factors are changed by `change`: measurements the model
/// itself made, whose factors a fit must recover.
template <typename Change>
void make_synthetic(MappedMeasurements& mapped, Change change) {
  for (auto& row : mapped.rows) {
    Scenario s = row.prepared.scenario;
    EngineProfile engine = *s.engine.engine;
    BackendProfile& backend = engine.backends.at(s.engine.backend->name);
    change(backend);
    s.engine.engine = &engine;
    s.engine.backend = &backend;
    row.measurement.value = predict_measurement(row.measurement, s);
  }
}

CalibrationRequest on(const std::string& hw) {
  CalibrationRequest r;
  r.hardware = hw;
  r.today = "2026-01-02";
  return r;
}

}  // namespace

TEST_CASE("calibrate: llama-bench JSON of mid-2024 builds: every field read, backend booleans folded", "[calibrate][import]") {
  const BenchFile f = load_bench_results(data("llama-bench-rtx4090.json"));
  CHECK(f.format == BenchFormat::kLlamaBenchJson);
  REQUIRE(f.llama_bench.size() == 8);
  const LlamaBenchRow& r = f.llama_bench[0];
  CHECK(r.build_commit == "e849648");
  CHECK(r.build_number == 2869);
  CHECK(r.backends == "CUDA");  // "cuda": true in the older printer
  CHECK(r.gpu_info == "NVIDIA GeForce RTX 4090");
  CHECK(r.cpu_info == "AMD EPYC 7B13 64-Core Processor");
  CHECK(r.model_filename == "models/Meta-Llama-3-8B-Instruct-Q4_K_M.gguf");
  CHECK(r.model_type == "llama 8B Q4_K - Medium");
  CHECK(r.model_size_bytes == 4912898048u);
  CHECK(r.model_n_params == 8030261248u);
  CHECK(r.n_batch == 2048);
  CHECK(r.n_ubatch == 512);
  CHECK(r.n_threads == 16);
  CHECK(r.type_k == "f16");
  CHECK(r.type_v == "f16");
  CHECK(r.n_gpu_layers == 99);
  CHECK(r.split_mode == "layer");
  CHECK_FALSE(r.no_kv_offload);
  CHECK(r.flash_attn == 0);  // false
  CHECK(r.tensor_split == "0.00");
  CHECK(r.n_prompt == 512);
  CHECK(r.n_gen == 0);
  CHECK(r.n_depth == 0);  // absent in this printer
  CHECK(r.test_time == "2024-05-10T14:02:11Z");
  CHECK(r.avg_ts == Approx(7138.99).epsilon(1e-9));
  CHECK(r.avg_ns == Approx(71719402));
  REQUIRE(r.samples_ts.size() == 5);
  CHECK(r.samples_ts[2] == Approx(7138.99));
  const LlamaBenchRow& tg = f.llama_bench[7];
  CHECK(tg.model_type == "llama 8B F16");
  CHECK(tg.n_prompt == 0);
  CHECK(tg.n_gen == 4096);
  CHECK(tg.avg_ts == Approx(52.63));
}

TEST_CASE("calibrate: llama-bench JSONL of current builds", "[calibrate][import]") {
  const BenchFile f = load_bench_results(data("llama-bench-m2-ultra.jsonl"));
  CHECK(f.format == BenchFormat::kLlamaBenchJsonl);
  REQUIRE(f.llama_bench.size() == 8);
  const LlamaBenchRow& r = f.llama_bench[2];
  CHECK(r.backends == "Metal,BLAS");
  CHECK(r.gpu_info == "Apple M2 Ultra");
  CHECK(r.model_filename == "/Users/bench/models/Meta-Llama-3-8B-Instruct-Q4_K_M.gguf");
  CHECK(r.n_gpu_layers == -1);
  CHECK(r.flash_attn == 0);
  CHECK(r.n_prompt == 0);
  CHECK(r.n_gen == 512);
  CHECK(r.n_depth == 0);
  CHECK(r.avg_ts == Approx(78.81));
  CHECK(r.samples_ts.size() == 5);
  CHECK(llama_cpp_backend(r.backends, r.gpu_info) == "metal");

  // One complete line is one JSON object: still JSONL.
  std::ifstream in(data("llama-bench-m2-ultra.jsonl"));
  std::string first;
  std::getline(in, first);
  const BenchFile one = parse_bench_results(first + "\n", "one.jsonl");
  CHECK(one.format == BenchFormat::kLlamaBenchJsonl);
  CHECK(one.llama_bench.size() == 1);
}

TEST_CASE("calibrate: vllm bench serve and latency result files", "[calibrate][import]") {
  const BenchFile serve = load_bench_results(data("vllm-serve-h100-llama31-8b.json"));
  CHECK(serve.format == BenchFormat::kVllmServe);
  REQUIRE(serve.vllm_serve.size() == 1);
  const VllmServeResult& r = serve.vllm_serve[0];
  CHECK(r.date == "20250611-101527");
  CHECK(r.backend == "vllm");
  CHECK(r.model_id == "meta-llama/Llama-3.1-8B-Instruct");
  CHECK(r.num_prompts == 320);
  CHECK_FALSE(r.request_rate.has_value());  // "inf"
  REQUIRE(r.max_concurrency.has_value());
  CHECK(*r.max_concurrency == 16);
  CHECK(r.completed == 320);
  CHECK(r.total_input_tokens == 327680);
  CHECK(r.total_output_tokens == 40960);
  CHECK(r.mean_ttft_ms.value() == Approx(44.83));
  CHECK(r.p99_ttft_ms.value() == Approx(104.61));
  CHECK(r.mean_tpot_ms.value() == Approx(11.21));
  CHECK(r.median_itl_ms.value() == Approx(8.42));
  CHECK(r.version == "0.9.1");  // --metadata vllm=0.9.1
  // output_throughput = total_output_tokens / duration.
  CHECK(r.output_throughput == Approx(40960.0 / r.duration_s));

  const auto ms = measurements_from(serve);
  REQUIRE(ms.size() == 3);
  CHECK(ms[0].metric == MeasuredMetric::kOutputTokensPerS);
  CHECK(ms[0].label == "serve c16 output");
  CHECK(ms[0].batch == 16);
  CHECK(ms[0].prompt_tokens == 1024);  // 327680 / 320
  CHECK(ms[0].gen_tokens == 128);      // 40960 / 320
  CHECK(ms[0].engine == "vllm");
  CHECK(ms[0].tool_version == "0.9.1");
  CHECK(ms[0].date == "2025-06-11");
  CHECK(ms[1].metric == MeasuredMetric::kTtftS);
  CHECK(ms[1].value == Approx(0.04483));
  CHECK(ms[2].metric == MeasuredMetric::kTpotS);
  CHECK(ms[2].value == Approx(0.01121));

  const BenchFile latency = load_bench_results(data("vllm-latency-h100-llama31-8b.json"));
  CHECK(latency.format == BenchFormat::kVllmLatency);
  REQUIRE(latency.vllm_latency.has_value());
  CHECK(latency.vllm_latency->avg_latency_s == Approx(0.87029));
  CHECK(latency.vllm_latency->latencies_s.size() == 30);
  CHECK(latency.vllm_latency->percentiles_s.size() == 6);
  CHECK(latency.vllm_latency->percentiles_s.count("50") == 1);
  // The file records no workload: vllm bench latency's defaults unless given.
  auto lm = measurements_from(latency);
  REQUIRE(lm.size() == 1);
  CHECK(lm[0].batch == 8);
  CHECK(lm[0].prompt_tokens == 32);
  CHECK(lm[0].gen_tokens == 128);
  CHECK_THAT(lm[0].notes.at(0), Contains("defaults"));
  MeasurementOptions o;
  o.batch = 1;
  o.prompt_tokens = 1024;
  o.gen_tokens = 256;
  lm = measurements_from(latency, o);
  CHECK(lm[0].label == "latency b1 in1024 out256");
  CHECK(lm[0].notes.empty());
}

TEST_CASE("calibrate: concurrency of a rate-limited vLLM run from Little's law", "[calibrate][import]") {
  // 2 requests/s, each lasting TTFT 100 ms + 99 x TPOT 20 ms = 2.08 s:
  // 2 x 2.08 = 4.16, so about 4 requests in flight.
  const std::string doc = R"({"date": "20250101-000000", "backend": "vllm", "model_id": "Qwen/Qwen2.5-7B-Instruct",
    "num_prompts": 100, "request_rate": 2.0, "max_concurrency": null, "duration": 50.0, "completed": 100,
    "total_input_tokens": 51200, "total_output_tokens": 10000, "request_throughput": 2.0, "output_throughput": 200.0,
    "total_token_throughput": 1224.0, "mean_ttft_ms": 100.0, "mean_tpot_ms": 20.0})";
  const auto ms = measurements_from(parse_bench_results(doc, "rate.json"));
  REQUIRE(ms.size() == 3);
  CHECK(ms[0].batch == 4);
  CHECK(ms[0].prompt_tokens == 512);
  CHECK(ms[0].gen_tokens == 100);
  CHECK_THAT(ms[0].notes.at(0), Contains("Little's law"));
}

TEST_CASE("calibrate: llama-bench rows become measurements with their workload", "[calibrate][import]") {
  const auto ms = measurements_from(load_bench_results(data("llama-bench-rtx4090.json")));
  REQUIRE(ms.size() == 8);
  CHECK(ms[0].label == "pp512");
  CHECK(ms[0].metric == MeasuredMetric::kPrefillTokensPerS);
  CHECK(ms[0].prompt_tokens == 512);
  CHECK(ms[0].gen_tokens == 0);
  CHECK(ms[0].ubatch_tokens == 512);
  CHECK(ms[0].engine == "llama.cpp:cuda");
  CHECK(ms[0].quant_hint == "LLAMA_FTYPE_MOSTLY_Q4_K_M");
  CHECK(ms[0].model_name == "Meta-Llama-3-8B-Instruct-Q4_K_M");
  CHECK(ms[0].tool_version == "b2869 (e849648)");
  CHECK(ms[0].date == "2024-05-10");
  CHECK(ms[0].flash_attention == std::optional<bool>(false));
  CHECK(ms[3].label == "tg4096");
  CHECK(ms[3].metric == MeasuredMetric::kDecodeTokensPerS);
  CHECK(ms[3].gen_tokens == 4096);
  CHECK(ms[3].unusable.empty());

  const auto mixed = measurements_from(load_bench_results(data("llama-bench-rtx4090-mixed.json")));
  REQUIRE(mixed.size() == 6);
  CHECK(mixed[2].label == "pp512 @ d4096");
  CHECK(mixed[2].prompt_tokens == 4608);  // 4096 cached + 512 new
  CHECK(mixed[2].depth_tokens == 4096);
  CHECK(mixed[2].flash_attention == std::optional<bool>(true));
  CHECK(mixed[4].unusable.find("no_kv_offload") != std::string::npos);
}

TEST_CASE("calibrate: llama.cpp names of file types and backends", "[calibrate][import]") {
  CHECK(llama_ftype_from_desc("llama 8B Q4_K - Medium") == "LLAMA_FTYPE_MOSTLY_Q4_K_M");
  CHECK(llama_ftype_from_desc("llama 7B mostly Q4_0") == "LLAMA_FTYPE_MOSTLY_Q4_0");
  CHECK(llama_ftype_from_desc("llama 8B Q2_K - Small") == "LLAMA_FTYPE_MOSTLY_Q2_K_S");  // not the shorter "Q2_K"
  CHECK(llama_ftype_from_desc("qwen2 7B IQ3_S mix - 3.66 bpw") == "LLAMA_FTYPE_MOSTLY_IQ3_M");
  CHECK(llama_ftype_from_desc("llama 8B BF16") == "LLAMA_FTYPE_MOSTLY_BF16");
  CHECK(llama_ftype_from_desc("llama 8B Q8_0 (guessed)") == "LLAMA_FTYPE_MOSTLY_Q8_0");
  CHECK(llama_ftype_from_desc("llama 8B something new").empty());
  CHECK(llama_cpp_backend("CUDA", "NVIDIA GeForce RTX 4090") == "cuda");
  CHECK(llama_cpp_backend("CUDA", "AMD Radeon RX 7900 XTX") == "rocm");  // GGML_CUDA_NAME in HIP builds
  CHECK(llama_cpp_backend("RPC,Vulkan", "") == "vulkan");
  CHECK(llama_cpp_backend("BLAS", "") == "cpu");
  CHECK(llama_cpp_backend("Kompute", "").empty());
}

TEST_CASE("calibrate: files that are not benchmark results are refused, naming the file", "[calibrate][import][bad]") {
  CHECK_THAT(bad_input_message([] { load_bench_results(data("bad/empty.json")); }), Contains("empty.json: empty file"));
  CHECK_THAT(bad_input_message([] { load_bench_results(data("bad/truncated.json")); }),
             Contains("truncated.json: not valid JSON") && Contains("line 93"));
  CHECK_THAT(bad_input_message([] { load_bench_results(data("bad/truncated.jsonl")); }),
             Contains("truncated.jsonl: line 4 is not valid JSON"));
  CHECK_THAT(bad_input_message([] { load_bench_results(data("bad/llama-bench.csv")); }), Contains("llama-bench CSV output"));
  CHECK_THAT(bad_input_message([] { load_bench_results(data("bad/llama-bench.md")); }), Contains("Markdown table"));
  CHECK_THAT(bad_input_message([] { load_bench_results(data("bad/hf-config.json")); }),
             Contains("hf-config.json: not a llama-bench or vLLM benchmark result") && Contains("'architectures'"));
  CHECK_THAT(bad_input_message([] { load_bench_results(data("bad")); }), Contains("is a directory"));
  CHECK_THAT(bad_input_message([] { load_bench_results(data("bad/missing.json")); }), Contains("missing.json' does not exist"));
  CHECK_THAT(bad_input_message([] { parse_bench_results("[]", "x.json"); }), Contains("x.json: an empty list"));
  CHECK_THAT(bad_input_message([] {
               parse_bench_results(R"([{"model_type": "llama 8B F16", "n_prompt": 512, "n_gen": 0, "avg_ts": "fast"}])", "x.json");
             }),
             Contains("x.json: item 1: 'avg_ts' is not a number"));
  CHECK_THAT(
      bad_input_message([] { parse_bench_results(R"([{"model_type": "llama 8B F16", "n_prompt": 512, "avg_ts": 1.0}, 3])", "x.json"); }),
      Contains("x.json: item 1"));
  CHECK_THAT(
      bad_input_message([] { parse_bench_results(R"({"elapsed_time": 10, "num_requests": 100, "tokens_per_second": 5000})", "t.json"); }),
      Contains("'vllm bench throughput' result"));
  CHECK_THAT(bad_input_message([] { parse_bench_results("[1, 2, 3]", "n.json"); }), Contains("item 1 is not a llama-bench result"));
}

TEST_CASE("calibrate: rows map onto presets, formats and engines, unmappable rows are listed", "[calibrate][map]") {
  const auto ms = measurements_from(load_bench_results(data("llama-bench-rtx4090-mixed.json")));
  const MappedMeasurements mapped = map_measurements(catalog(), ms, on("rtx4090"));
  REQUIRE(mapped.rows.size() == 3);
  CHECK(mapped.rows[0].prepared.scenario.model.id == "llama-3.1-8b");
  CHECK(mapped.rows[0].prepared.quant->id == "q4_k_m");
  CHECK(mapped.rows[0].prepared.scenario.engine.id() == "llama.cpp:cuda");
  CHECK_THAT(mapped.rows[0].mapping, Contains("file name") && Contains("8,030,261,248 parameters match") && Contains("file type"));
  REQUIRE(mapped.skipped.size() == 3);
  CHECK_THAT(mapped.skipped[0].reason, Contains("n_gpu_layers 20") && Contains("partial offload"));
  CHECK_THAT(mapped.skipped[1].reason, Contains("no_kv_offload"));
  CHECK_THAT(mapped.skipped[2].reason, Contains("no model preset matches 'granite-3.1-3b-a800m-instruct-Q8_0'"));

  // The vLLM model id maps through the preset's aliases; the weights are assumed, and said so.
  const auto serve = measurements_from(load_bench_results(data("vllm-serve-h100-llama31-8b.json")));
  const MappedMeasurements v = map_measurements(catalog(), serve, on("h100-sxm"));
  REQUIRE(v.rows.size() == 3);
  CHECK(v.rows[0].prepared.scenario.model.id == "llama-3.1-8b");
  CHECK(v.rows[0].prepared.quant->id == "hf-bf16");
  CHECK(v.rows[0].prepared.scenario.engine.id() == "vllm");
  CHECK(v.rows[0].prepared.scenario.workload.batch == 16);
  CHECK_THAT(v.rows[0].notes.back(), Contains("weights assumed hf-bf16"));

  // A name that does not resolve falls back to the parameter count; the weight format to the file name.
  Measurement m = ms[0];
  m.model_name = "my-finetune-Q5_K_M";
  m.quant_hint.clear();
  m.model_params = parameter_count(catalog().resolve_model("gemma-2-9b"));
  const MappedMeasurements q = map_measurements(catalog(), {m}, on("rtx4090"));
  REQUIRE(q.rows.size() == 1);
  CHECK(q.rows[0].prepared.scenario.model.id == "gemma-2-9b");
  CHECK(q.rows[0].prepared.quant->id == "q5_k_m");
  CHECK_THAT(q.rows[0].mapping, Contains("9,241,705,984 parameters; file name"));
  // No format in the file at all: llama.cpp loads whatever each GGUF holds (formats_per_file in
  // data/engines/llama.cpp.json), so there is none to assume; vLLM's result ran its default.
  Measurement bare = m;
  bare.model_name = "my-finetune";
  const MappedMeasurements unknown = map_measurements(catalog(), {bare, ms[0]}, on("rtx4090"));
  REQUIRE(unknown.skipped.size() == 1);
  CHECK_THAT(unknown.skipped[0].reason, Contains("the weight format of") && Contains("is not recorded; pass --quant"));
  CHECK(catalog().resolve_engine("llama.cpp").formats_per_file);
  CHECK_FALSE(catalog().resolve_engine("vllm").formats_per_file);
  // Two presets with the same parameter count: ambiguous, and said so.
  m.model_params = parameter_count(catalog().resolve_model("qwen2.5-7b"));
  const MappedMeasurements both = map_measurements(catalog(), {m, ms[0]}, on("rtx4090"));
  REQUIRE(both.skipped.size() == 1);
  CHECK_THAT(both.skipped[0].reason, Contains("could be any of qwen2.5-7b, qwen2.5-coder-7b; pass --model"));

  CHECK_THAT(bad_input_message([&] { map_measurements(catalog(), ms, on("rtx9999")); }), Contains("unknown hardware 'rtx9999'"));
  CHECK_THAT(bad_input_message([&] {
               map_measurements(catalog(), {ms[3], ms[4]}, on("rtx4090"));
             }),
             Contains("none of the 2 measurements can be used on rtx4090"));
  // A device that does not run the file's backend: every row skipped, the reason in the hint.
  try {
    map_measurements(catalog(), ms, on("m2-ultra-76c"));
    FAIL("expected bad input");
  } catch (const Error& e) {
    CHECK_THAT(e.hint(), Contains("does not run on m2-ultra-76c"));
  }
}

TEST_CASE("calibrate: the fit recovers a decode efficiency the model itself produced", "[calibrate][fit]") {
  // tg rows of one model: only the decode bandwidth efficiency is fitted.
  const auto ms = only(measurements_from(load_bench_results(data("llama-bench-rtx4090.json"))), MeasuredMetric::kDecodeTokensPerS);
  MappedMeasurements mapped = map_measurements(catalog(), {ms[0], ms[1]}, on("rtx4090"));
  const double shipped = mapped.rows[0].prepared.scenario.engine.backend->decode_bandwidth_efficiency;
  make_synthetic(mapped, [&](BackendProfile& b) { b.decode_bandwidth_efficiency = 0.8 * shipped; });
  const CalibrationFit fit = fit_calibration(catalog(), mapped, on("rtx4090"));
  REQUIRE(fit.calibration.factors.decode_bandwidth_efficiency.has_value());
  CHECK(*fit.calibration.factors.decode_bandwidth_efficiency == Approx(0.8 * shipped).epsilon(0.01));
  CHECK_FALSE(fit.calibration.factors.prefill_compute_efficiency.has_value());
  CHECK_FALSE(fit.calibration.factors.layer_overhead_s.has_value());  // one model size cannot separate it
  // Before: the shipped factor predicts 1 / 0.8 = 1.25x too fast where bandwidth binds.
  CHECK(fit.median_abs_error_before > 0.15);
  CHECK(fit.median_abs_error_after < 0.005);
  CHECK(fit.factors.at(0).name == "decode_bandwidth_efficiency");
  CHECK(fit.factors.at(0).fitted);
  CHECK(fit.factors.at(0).bound.empty());
  CHECK_FALSE(fit.factors.at(1).fitted);
  CHECK_THAT(fit.factors.at(2).why, Contains("different sizes"));
}

TEST_CASE("calibrate: over two weight formats the fit recovers each format's multiplier", "[calibrate][fit][formats]") {
  // Q4_K_M rows first (4 of them, the reference format), then 4 F16 rows of the same 8B model.
  const auto all = measurements_from(load_bench_results(data("llama-bench-rtx4090.json")));
  MappedMeasurements mapped = map_measurements(catalog(), all, on("rtx4090"));
  const EngineChoice& choice = mapped.rows[0].prepared.scenario.engine;
  const BackendProfile& shipped = *choice.backend;
  const QuantEfficiency f16 = choice.engine->efficiency_for(shipped, "f16");
  const double decode = 0.9 * shipped.decode_bandwidth_efficiency, prefill = 1.2 * shipped.prefill_compute_efficiency;
  // F16 runs 15% slower in decode and 10% faster in prefill, relative to Q4_K_M, than the profile says.
  const QuantEfficiency f16_true{0.85 * f16.decode, 1.1 * f16.prefill};
  make_synthetic(mapped, [&](BackendProfile& b) {
    b.decode_bandwidth_efficiency = decode;
    b.prefill_compute_efficiency = prefill;
    b.quant_efficiency["f16"] = f16_true;
  });
  const CalibrationFit fit = fit_calibration(catalog(), mapped, on("rtx4090"));
  const CalibrationFactors& f = fit.calibration.factors;
  CHECK(f.decode_bandwidth_efficiency.value() == Approx(decode).epsilon(0.01));
  CHECK(f.prefill_compute_efficiency.value() == Approx(prefill).epsilon(0.01));
  REQUIRE(f.quant_efficiency.count("f16") == 1);
  CHECK(f.quant_efficiency.at("f16").decode == Approx(f16_true.decode).epsilon(0.01));
  CHECK(f.quant_efficiency.at("f16").prefill == Approx(f16_true.prefill).epsilon(0.01));
  CHECK(f.quant_efficiency.count("q4_k_m") == 0);  // the reference keeps its multiplier
  // One model in two formats cannot separate the layer overhead from the F16 multiplier.
  CHECK_FALSE(f.layer_overhead_s.has_value());
  CHECK_THAT(fit.factors.at(2).why, Contains("in one weight format"));
  // Every row, of either format, is within 0.5% after the fit, and the report names the worst.
  CHECK(fit.median_abs_error_after < 0.005);
  CHECK(fit.max_abs_error_after < 0.005);
  CHECK(fit.max_abs_error_after == Approx(std::fabs(fit.rows.at(fit.max_error_row).error_after())));
  bool listed = false;
  // Two tg rows and the pp4096 row: without flash attention (these llama-bench runs) its score matrix
  // traffic makes it depend on the bandwidth too.
  for (const auto& c : fit.factors)
    listed = listed || (c.name == "quant_efficiency.f16.decode" && c.fitted && c.why == "fitted on 3 decode rows");
  CHECK(listed);
  CHECK(fit.calibration.rows == 8);
  CHECK(fit.calibration.date == "2024-05-10");
  CHECK(fit.calibration.source_file == "llama-bench-rtx4090.json");
  REQUIRE(fit.calibration.tools.size() == 1);
  CHECK(fit.calibration.tools[0].version == "b2869 (e849648)");
  // The overlay applies the multiplier: an F16 estimate runs at the fitted effective efficiency.
  const BackendProfile calibrated = apply_calibration(shipped, f);
  CHECK(choice.engine->efficiency_for(calibrated, "f16").decode == Approx(f16_true.decode).epsilon(0.01));
  // The overlay document reads back with the multiplier.
  std::vector<Problem> problems;
  const auto back = calibration_from_json(nlohmann::json::parse(to_json(fit.calibration).dump()), problems);
  REQUIRE(back.has_value());
  CHECK(problems.empty());
  REQUIRE(back->factors.quant_efficiency.count("f16") == 1);
  CHECK(back->factors.quant_efficiency.at("f16").decode == f.quant_efficiency.at("f16").decode);
  CHECK(back->factors.quant_efficiency.at("f16").prefill == f.quant_efficiency.at("f16").prefill);
}

TEST_CASE("calibrate: over two model sizes in one format the fit recovers the layer overhead", "[calibrate][fit]") {
  // The Q4_K_M rows twice: as the 8B model they ran, and read as a 3B model (2.0 GB of weights
  // against 4.9 GB: more than 1.5x apart), so the per-layer overhead separates from bandwidth.
  const auto all = measurements_from(load_bench_results(data("llama-bench-rtx4090.json")));
  const std::vector<Measurement> q4(all.begin(), all.begin() + 4);
  MappedMeasurements mapped = map_measurements(catalog(), q4, on("rtx4090"));
  CalibrationRequest small = on("rtx4090");
  small.model = "llama-3.2-3b";
  for (auto& row : map_measurements(catalog(), q4, small).rows) mapped.rows.push_back(row);
  REQUIRE(mapped.rows.size() == 8);
  const BackendProfile& shipped = *mapped.rows[0].prepared.scenario.engine.backend;
  const double decode = 0.9 * shipped.decode_bandwidth_efficiency, prefill = 1.2 * shipped.prefill_compute_efficiency, layer = 60e-6;
  make_synthetic(mapped, [&](BackendProfile& b) {
    b.decode_bandwidth_efficiency = decode;
    b.prefill_compute_efficiency = prefill;
    b.layer_overhead_s = layer;
  });
  const CalibrationFit fit = fit_calibration(catalog(), mapped, on("rtx4090"));
  const CalibrationFactors& f = fit.calibration.factors;
  CHECK(f.decode_bandwidth_efficiency.value() == Approx(decode).epsilon(0.01));
  CHECK(f.prefill_compute_efficiency.value() == Approx(prefill).epsilon(0.01));
  CHECK(f.layer_overhead_s.value() == Approx(layer).epsilon(0.02));
  CHECK(f.quant_efficiency.empty());  // one format: no multiplier to fit
  CHECK_FALSE(f.step_overhead_s.has_value());
  CHECK(fit.median_abs_error_after < 0.005);
}

TEST_CASE("calibrate: a Metal file of two formats leaves no format behind", "[calibrate][fit][formats]") {
  // Published M2 Ultra runs (tests/data/calibration/README.md): Q4_K_M and F16 of Llama 3 8B.
  // With Q4_K_M's shipped Metal multiplier frozen, one efficiency cannot serve both formats.
  const auto all = measurements_from(load_bench_results(data("llama-bench-m2-ultra.jsonl")));
  const CalibrationFit fit = fit_calibration(catalog(), map_measurements(catalog(), all, on("m2-ultra-76c")), on("m2-ultra-76c"));
  // Q4_K_M has the first row of the 4 each: the reference, F16's multipliers fitted. The runs are
  // build b2797, before Metal's b6469 era: the fit starts from that build's Q4_K_M multiplier
  // (0.69, not the newest builds' 0.99) and records it, so the calibration reproduces the fit.
  REQUIRE(fit.calibration.factors.quant_efficiency.size() == 2);
  CHECK(fit.calibration.factors.quant_efficiency.count("f16") == 1);
  CHECK(fit.calibration.factors.quant_efficiency.at("q4_k_m").decode == Approx(0.69));
  CHECK(fixtures::any_contains(fit.notes, "before b6469"));
  // No format is left off to one side: each format's decode rows (tg512, tg4096) straddle zero,
  // the rest being what the model does not describe between short and long contexts.
  for (const std::string quant : {"q4_k_m", "f16"}) {
    double lowest = 1, highest = -1;
    for (const auto& row : fit.rows)
      if (row.measurement.metric == MeasuredMetric::kDecodeTokensPerS && row.prepared.quant->id == quant) {
        lowest = std::min(lowest, row.error_after());
        highest = std::max(highest, row.error_after());
      }
    INFO(quant << ": decode errors after from " << lowest << " to " << highest);
    CHECK(lowest <= 0.001);
    CHECK(highest >= -0.001);
  }
  // One efficiency for both formats left its worst row at +10.8% (Q4_K_M tg4096) and a median of 4.2%.
  CHECK(fit.max_abs_error_after < 0.108);
  CHECK(fit.median_abs_error_after < 0.042);
}

TEST_CASE("calibrate: a factor the rows push past its physical bound stops there and says so", "[calibrate][fit][bounds]") {
  const auto ms = only(measurements_from(load_bench_results(data("llama-bench-rtx4090.json"))), MeasuredMetric::kDecodeTokensPerS);
  MappedMeasurements mapped = map_measurements(catalog(), {ms[0]}, on("rtx4090"));
  // 3x the shipped prediction needs an efficiency of about 3 x 0.82 = 2.5: impossible.
  for (auto& row : mapped.rows) row.measurement.value = 3 * predict_measurement(row.measurement, row.prepared.scenario);
  const CalibrationFit fit = fit_calibration(catalog(), mapped, on("rtx4090"));
  CHECK(fit.calibration.factors.decode_bandwidth_efficiency.value() == Approx(1.0));
  CHECK(fit.factors.at(0).bound == "upper");
  REQUIRE(fit.calibration.bounds_hit.size() == 1);
  CHECK_THAT(fit.calibration.bounds_hit[0], Contains("decode_bandwidth_efficiency at its upper bound 1"));
  CHECK(fit.median_abs_error_after > 0.3);  // the bound keeps the error visible

  // A prefill 100x slower than predicted drives the efficiency to its lower bound 0.01.
  const auto pp = only(measurements_from(load_bench_results(data("llama-bench-rtx4090.json"))), MeasuredMetric::kPrefillTokensPerS);
  MappedMeasurements slow = map_measurements(catalog(), {pp[0]}, on("rtx4090"));
  for (auto& row : slow.rows) row.measurement.value = predict_measurement(row.measurement, row.prepared.scenario) / 100;
  const CalibrationFit low = fit_calibration(catalog(), slow, on("rtx4090"));
  CHECK(low.factors.at(1).bound == "lower");
  CHECK(low.calibration.factors.prefill_compute_efficiency.value() == Approx(0.01));
}

TEST_CASE("calibrate: predicted serving metrics are consistent with the analysis", "[calibrate][predict]") {
  const auto serve = measurements_from(load_bench_results(data("vllm-serve-h100-llama31-8b.json")));
  const MappedMeasurements v = map_measurements(catalog(), serve, on("h100-sxm"));
  const Scenario& s = v.rows[0].prepared.scenario;
  Scenario one = s;
  one.workload.batch = 1;
  const Analysis a16 = analyze(s), a1 = analyze(one);
  // Throughput: 16 sequences x 128 tokens over one cycle (prefill of all 16 prompts, then 128 steps).
  const double cycle = a16.prefill.time_s + 128 * a16.decode.time_s;
  CHECK(predict_measurement(v.rows[0].measurement, s) == Approx(16 * 128 / cycle));
  // TTFT: the request's own prompt plus the decode step it waits for and shares.
  CHECK(predict_measurement(v.rows[1].measurement, s) == Approx(a1.prefill.time_s + a16.decode.time_s));
  // TPOT: a decode step plus the other requests' prefills spread over the 127 later tokens.
  CHECK(predict_measurement(v.rows[2].measurement, s) == Approx(a16.decode.time_s + (a16.prefill.time_s - a1.prefill.time_s) / 127));
}

TEST_CASE("calibrate: the overlay validates against its schema and is picked up by the catalog", "[calibrate][overlay]") {
  const auto ms = measurements_from(load_bench_results(data("llama-bench-rtx4090-mixed.json")));
  const CalibrationFit fit = fit_calibration(catalog(), map_measurements(catalog(), ms, on("rtx4090")), on("rtx4090"));
  const nlohmann::ordered_json doc = to_json(fit.calibration);
  std::vector<Problem> problems;
  check_against_schema("calibration", nlohmann::json::parse(doc.dump()), "x.json", problems);
  for (const auto& p : problems) FAIL_CHECK(to_string(p));
  CHECK(doc.at("fitted_on").at("file") == "llama-bench-rtx4090-mixed.json");
  CHECK(doc.at("fitted_on").at("rows") == 3);
  CHECK(calibration_file_name("rtx4090", "llama.cpp", "cuda") == "rtx4090--llama.cpp-cuda.json");

  const fs::path dir = fs::temp_directory_path() / "optadvisor-calibrate-test";
  fs::remove_all(dir);
  write_calibration_file(dir / "calibrations" / "rtx4090--llama.cpp-cuda.json", doc);
  CHECK_FALSE(fs::exists(dir / "calibrations" / "rtx4090--llama.cpp-cuda.json.tmp"));
  LoadOptions options;
  options.overlay_dirs = {dir};
  const Catalog with = Catalog::load(options);
  const Calibration* cal = with.find_calibration("rtx4090", "llama.cpp", "cuda");
  REQUIRE(cal != nullptr);
  CHECK(with.find_calibration("rtx4090", "llama.cpp", "vulkan") == nullptr);
  CHECK(cal->rows == 3);

  ScenarioRequest r;
  r.hardware = "rtx4090";
  r.model.preset = "llama-3.1-8b";
  r.quant = "q4_k_m";
  const PreparedScenario ps = prepare_scenario(with, r);
  REQUIRE(ps.calibration == cal);
  CHECK(ps.scenario.engine.backend->decode_bandwidth_efficiency == Approx(*fit.calibration.factors.decode_bandwidth_efficiency));
  CHECK(ps.scenario.engine.backend->step_overhead_s == Approx(catalog().resolve_engine("llama.cpp").backends.at("cuda").step_overhead_s));
  CHECK_THAT(ps.notes.back(), Contains("calibrated from your measurements: llama-bench-rtx4090-mixed.json, 3 runs, 2025-09-02"));
  CHECK(calibration_json(ps).at("rows") == 3);
  // Another engine backend on the same device keeps the shipped factors.
  r.engine = "llama.cpp:vulkan";
  CHECK(prepare_scenario(with, r).calibration == nullptr);

  // A calibration for a backend the engine does not have is a data problem naming the file.
  std::ofstream(dir / "calibrations" / "bad.json")
      << R"({"hardware": "rtx4090", "engine": "llama.cpp", "backend": "warp", "factors": {"decode_bandwidth_efficiency": 0.5},
            "fitted_on": {"file": "x.json", "date": "2025-01-01", "rows": 1}})";
  CHECK_THAT(bad_input_message([&] { Catalog::load(options); }), Contains("bad.json: /backend: engine 'llama.cpp' has no backend 'warp'"));
  std::ofstream(dir / "calibrations" / "bad.json")
      << R"({"hardware": "rtx4090", "engine": "llama.cpp", "backend": "cuda", "factors": {"decode_bandwidth_efficiency": 1.5},
            "fitted_on": {"file": "x.json", "date": "2025-01-01", "rows": 1}})";
  CHECK_THAT(bad_input_message([&] { Catalog::load(options); }), Contains("bad.json") && Contains("decode_bandwidth_efficiency"));
  fs::remove_all(dir);
}

TEST_CASE("calibrate: measurements of a build that differs only in its MoE kernels start from the newest build", "[calibrate][fit]") {
  // llama.cpp CUDA lists b3216 (quantized prefill) and b6270 (MoE tile sizes alone) as earlier builds.
  // A dense model measured at b6200 runs as the newest builds do; at b3000 it runs the pre-b3216 path.
  auto notes_at = [](const std::string& version) {
    auto ms = measurements_from(load_bench_results(data("llama-bench-rtx4090.json")));
    for (auto& m : ms) m.tool_version = version;
    return fit_calibration(catalog(), map_measurements(catalog(), ms, on("rtx4090")), on("rtx4090")).notes;
  };
  auto mentions_build = [](const std::vector<std::string>& notes, const char* text) {
    return std::any_of(notes.begin(), notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
  };
  CHECK_FALSE(mentions_build(notes_at("b6200 (0000000)"), "the measurements come from build"));
  CHECK(mentions_build(notes_at("b3000 (0000000)"), "the measurements come from build b3000, before b3216"));
}
