// SPDX-License-Identifier: MIT
// Benchmark results a user measured on their own machine: llama-bench's JSON
// and JSONL output, vLLM's `bench serve --save-result` and `bench latency
// --output-json` files. Pure parsers (text in, typed rows out) plus the
// translation of each row into a measurement with its workload; which model,
// weight format and device a measurement ran is decided later (calibrate.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace optadvisor {

/// One llama-bench test (one object of `llama-bench -o json` / `-o jsonl`).
/// Field names are llama-bench's (tools/llama-bench/llama-bench.cpp, test::get_fields).
struct LlamaBenchRow {
  std::string build_commit;
  int64_t build_number = 0;
  std::string cpu_info;
  std::string gpu_info;
  std::string backends;  ///< "CUDA", "Metal,BLAS"; older builds' booleans (cuda, metal, ...) folded in
  std::string model_filename;
  std::string model_type;         ///< llama_model_desc(): "llama 8B Q4_K - Medium"
  uint64_t model_size_bytes = 0;  ///< llama_model_size(): bytes of all tensors
  uint64_t model_n_params = 0;
  int64_t n_batch = 0;
  int64_t n_ubatch = 0;
  int64_t n_threads = 0;
  std::string type_k = "f16";
  std::string type_v = "f16";
  int64_t n_gpu_layers = 99;
  std::string split_mode;
  bool no_kv_offload = false;
  int flash_attn = -1;  ///< 1 on, 0 off, -1 auto (older builds wrote true/false)
  std::string tensor_split;
  int64_t n_prompt = 0;
  int64_t n_gen = 0;
  int64_t n_depth = 0;    ///< tokens already in the KV cache (-d); absent before 2025 builds
  std::string test_time;  ///< RFC 3339, "2024-05-12T10:31:07Z"
  double avg_ns = 0;
  double stddev_ns = 0;
  double avg_ts = 0;  ///< (n_prompt + n_gen) / time, tokens/s, averaged over repetitions
  double stddev_ts = 0;
  std::vector<double> samples_ts;
};

/// One `vllm bench serve --save-result` document (benchmark_serving.py before).
struct VllmServeResult {
  std::string date;      ///< "20250301-120501"
  std::string backend;   ///< "vllm", "openai-chat", ...
  std::string model_id;  ///< "meta-llama/Llama-3.1-8B-Instruct"
  std::string tokenizer_id;
  int64_t num_prompts = 0;
  std::optional<double> request_rate;      ///< requests/s; unset = "inf" (all at once)
  std::optional<int64_t> max_concurrency;  ///< unset = null (no client-side cap)
  double duration_s = 0;
  int64_t completed = 0;
  int64_t total_input_tokens = 0;
  int64_t total_output_tokens = 0;
  double request_throughput = 0;      ///< requests/s
  double output_throughput = 0;       ///< output tokens/s
  double total_token_throughput = 0;  ///< input + output tokens/s
  std::optional<double> mean_ttft_ms, median_ttft_ms, p99_ttft_ms;
  std::optional<double> mean_tpot_ms, median_tpot_ms, p99_tpot_ms;
  std::optional<double> mean_itl_ms, median_itl_ms;
  std::optional<int64_t> tensor_parallel_size;  ///< from --metadata tp=N / tensor_parallel_size=N, when recorded
  std::string version;                          ///< from --metadata vllm=X / version=X, when recorded
};

/// One `vllm bench latency --output-json` document. It records timings only:
/// model and workload are what the command line said.
struct VllmLatencyResult {
  double avg_latency_s = 0;
  std::optional<double> std_latency_s;
  std::vector<double> latencies_s;
  std::map<std::string, double> percentiles_s;  ///< "10", "25", "50", "75", "90", "99"
};

enum class BenchFormat { kLlamaBenchJson, kLlamaBenchJsonl, kVllmServe, kVllmLatency };
std::string_view to_string(BenchFormat f);

/// A parsed results file: one of the three kinds.
struct BenchFile {
  std::string name;  ///< the path as given, for messages and provenance
  BenchFormat format = BenchFormat::kLlamaBenchJson;
  std::vector<LlamaBenchRow> llama_bench;
  std::vector<VllmServeResult> vllm_serve;  ///< several with --append-result
  std::optional<VllmLatencyResult> vllm_latency;
};

/// Recognizes and parses results text. Throws bad_input naming `name` and
/// what was expected for anything else: empty or truncated JSON, a CSV or
/// Markdown table, JSON of another kind, a row missing a required field.
BenchFile parse_bench_results(std::string_view text, const std::string& name);

/// Reads `path` and parses it; bad_input when it is missing, a directory or unreadable.
BenchFile load_bench_results(const std::string& path);

/// What a measurement measured.
enum class MeasuredMetric {
  kPrefillTokensPerS,    ///< llama-bench ppN: n_prompt / time
  kDecodeTokensPerS,     ///< llama-bench tgN: n_gen / time, batch 1
  kPromptGenTokensPerS,  ///< llama-bench ppN+tgM: (n_prompt + n_gen) / time
  kOutputTokensPerS,     ///< vLLM serve: output tokens/s of the whole run
  kTtftS,                ///< vLLM serve: mean time to first token
  kTpotS,                ///< vLLM serve: mean time per output token after the first
  kLatencyS,             ///< vLLM latency: one batch, prefill plus every decode step
};
std::string_view to_string(MeasuredMetric m);
/// "tokens/s" or "s".
std::string_view unit_of(MeasuredMetric m);

/// One number measured on the user's machine, with the workload that produced it.
struct Measurement {
  std::string label;      ///< "pp512", "tg128 @ d4096", "serve c16 TTFT"
  std::string file;       ///< results file it came from
  std::size_t index = 0;  ///< row / document number in that file, from 1
  MeasuredMetric metric = MeasuredMetric::kDecodeTokensPerS;
  double value = 0;  ///< in unit_of(metric)
  // What the file says about the model (mapping hints).
  std::string model_name;  ///< file name stem or model_id, "" when the file does not say
  std::string model_desc;  ///< llama-bench model_type, "llama 8B Q4_K - Medium"
  std::string quant_hint;  ///< a quant id the file implies ("q4_k_m"), "" when unknown
  uint64_t model_params = 0;
  uint64_t model_size_bytes = 0;
  // Engine.
  std::string engine;        ///< "llama.cpp:cuda", "vllm"; "" when the file does not say
  std::string tool;          ///< "llama.cpp", "vllm"
  std::string tool_version;  ///< "b2876 (commit 3f3d3f2c)", "" when the file does not say
  std::string device_info;   ///< llama-bench gpu_info / cpu_info
  std::string date;          ///< YYYY-MM-DD of the run, "" when the file does not say
  // Workload.
  uint64_t batch = 1;
  uint64_t prompt_tokens = 0;
  uint64_t gen_tokens = 0;
  uint64_t depth_tokens = 0;   ///< context already cached before the test
  uint64_t ubatch_tokens = 0;  ///< 0 = the engine's
  std::string kv_dtype;        ///< "" = the engine's
  std::optional<bool> flash_attention;
  int64_t gpu_layers = -1;  ///< llama.cpp -ngl as recorded (99 or -1: all)
  int64_t tp = 1;
  std::vector<std::string> notes;  ///< how the workload was read (assumptions)
  std::string unusable;            ///< why the row cannot calibrate anything ("" = usable)
};

/// Options for files that do not record their workload (vLLM latency).
struct MeasurementOptions {
  std::optional<uint64_t> batch;
  std::optional<uint64_t> prompt_tokens;
  std::optional<uint64_t> gen_tokens;
};

/// Every measurement in a file; rows the model cannot express (partial GPU
/// offload, KV cache kept on the host, ...) carry `unusable`.
std::vector<Measurement> measurements_from(const BenchFile& file, const MeasurementOptions& options = {});

/// llama.cpp file-type name as llama_model_desc() prints it ("Q4_K - Medium",
/// "mostly Q4_0") to the LLAMA_FTYPE_* enumerator ("LLAMA_FTYPE_MOSTLY_Q4_K_M"); "" if unknown.
std::string llama_ftype_from_desc(std::string_view model_type);

/// llama-bench "backends" ("CUDA", "Metal,BLAS") to optadvisor's llama.cpp backend ("cuda", "metal"); "" if none matches.
std::string llama_cpp_backend(std::string_view backends, std::string_view gpu_info);

}  // namespace optadvisor
