// SPDX-License-Identifier: MIT
// Parsers for the result files of llama-bench and vLLM's benchmarks. The field
// names follow the tools' own printers: llama.cpp tools/llama-bench/llama-bench.cpp
// (test::get_fields, json_printer, jsonl_printer; before mid-2024 the backend was
// a set of booleans cuda/vulkan/kompute/metal/sycl/gpu_blas/blas), vLLM
// vllm/benchmarks/serve.py (result_json of --save-result; --append-result
// writes one document per line) and vllm/benchmarks/latency.py (--output-json).
#include "optadvisor/readers/bench_import.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/input_file.hpp"
#include "optadvisor/base/error.hpp"
#include "optadvisor/readers/model_source.hpp"
#include "base/json_fields.hpp"

namespace optadvisor {
namespace {

using nlohmann::json;

constexpr const char* kExpected =
    "expected the output of 'llama-bench -o json' or '-o jsonl', 'vllm bench serve --save-result' "
    "or 'vllm bench latency --output-json'";

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

/// "[json.exception.parse_error.101] parse error at line 3, column 5: ..." -> "parse error at line 3, column 5: ...";
/// a number too large for a double (out_of_range.406, "number overflow parsing '1e999'") is bad input too.
/// Typed access to one result object; a wrong type is bad input naming the row and field.
class Fields {
 public:
  Fields(const json& j, const std::string& where) : j_(j), where_(where) {}

  bool has(const char* key) const { return json_field::find(j_, key) != nullptr; }

  std::string str(const char* key, std::string fallback = {}) const {
    if (!has(key)) return fallback;
    const json& v = j_.at(key);
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
    throw wrong(key, "a string");
  }
  int64_t integer(const char* key, int64_t fallback = 0) const {
    if (!has(key)) return fallback;
    const json& v = j_.at(key);
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() && std::fabs(v.get<double>()) < 9e18)
      return static_cast<int64_t>(v.get<double>());
    if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
    throw wrong(key, "an integer");
  }
  double number(const char* key, double fallback = 0) const {
    if (!has(key)) return fallback;
    if (auto v = json_field::as_number(j_.at(key))) return *v;
    throw wrong(key, "a number");
  }
  std::optional<double> optional_number(const char* key) const {
    if (!has(key)) return std::nullopt;
    return number(key);
  }
  bool boolean(const char* key, bool fallback = false) const {
    if (!has(key)) return fallback;
    const json& v = j_.at(key);
    if (v.is_boolean()) return v.get<bool>();
    if (v.is_number_integer()) return v.get<int64_t>() != 0;
    if (v.is_string()) return v.get<std::string>() != "0" && !v.get<std::string>().empty();
    throw wrong(key, "true or false");
  }
  void require(std::initializer_list<const char*> keys) const {
    for (const char* k : keys)
      if (!has(k)) throw bad_input(fmt::format("{}: missing '{}'", where_, k), kExpected);
  }

 private:
  Error wrong(const char* key, const char* what) const {
    return bad_input(fmt::format("{}: '{}' is not {} (got {})", where_, key, what, printable(j_.at(key).dump(), 60)), kExpected);
  }
  const json& j_;
  std::string where_;
};

bool looks_like_llama_bench(const json& j) {
  return j.is_object() && j.contains("model_type") && j.contains("n_prompt") && j.contains("n_gen") &&
         (j.contains("avg_ts") || j.contains("avg_ns"));
}
bool looks_like_vllm_serve(const json& j) {
  return j.is_object() && (j.contains("output_throughput") || j.contains("mean_ttft_ms")) &&
         (j.contains("model_id") || j.contains("completed"));
}
bool looks_like_vllm_latency(const json& j) { return j.is_object() && j.contains("avg_latency") && j.contains("latencies"); }

/// The backend names older llama-bench builds wrote as booleans, in get_backend()'s order.
std::string legacy_backends(const Fields& f, const std::string& gpu_info) {
  if (f.boolean("cuda")) {
    const std::string g = lower(gpu_info);
    // GGML_CUDA_NAME is "ROCm" in HIP builds, which set the same flag.
    return g.find("amd") != std::string::npos || g.find("radeon") != std::string::npos ? "ROCm" : "CUDA";
  }
  if (f.boolean("vulkan")) return "Vulkan";
  if (f.boolean("metal")) return "Metal";
  if (f.boolean("sycl")) return "SYCL";
  if (f.boolean("kompute")) return "Kompute";
  if (f.boolean("gpu_blas")) return "GPU BLAS";
  if (f.boolean("blas")) return "BLAS";
  return "CPU";
}

LlamaBenchRow llama_bench_row(const json& j, const std::string& where) {
  if (!j.is_object()) throw bad_input(fmt::format("{}: not a JSON object", where), kExpected);
  const Fields f(j, where);
  f.require({"model_type", "n_prompt", "n_gen"});
  if (!f.has("avg_ts") && !f.has("avg_ns")) throw bad_input(fmt::format("{}: missing 'avg_ts'", where), kExpected);
  LlamaBenchRow r;
  r.build_commit = f.str("build_commit");
  r.build_number = f.integer("build_number");
  r.cpu_info = f.str("cpu_info");
  r.gpu_info = f.str("gpu_info");
  r.backends = f.has("backends") ? f.str("backends") : legacy_backends(f, r.gpu_info);
  r.model_filename = f.str("model_filename");
  r.model_type = f.str("model_type");
  r.model_size_bytes = static_cast<uint64_t>(std::max<int64_t>(0, f.integer("model_size")));
  r.model_n_params = static_cast<uint64_t>(std::max<int64_t>(0, f.integer("model_n_params")));
  r.n_batch = f.integer("n_batch", 2048);
  r.n_ubatch = f.integer("n_ubatch", 512);
  r.n_threads = f.integer("n_threads");
  r.type_k = f.str("type_k", "f16");
  r.type_v = f.str("type_v", "f16");
  r.n_gpu_layers = f.integer("n_gpu_layers", 99);
  r.split_mode = f.str("split_mode", "layer");
  r.no_kv_offload = f.boolean("no_kv_offload");
  // flash_attn: true/false before the 2025 auto mode, then -1 (auto), 0, 1.
  if (f.has("flash_attn")) {
    const json& fa = j.at("flash_attn");
    r.flash_attn = fa.is_boolean() ? (fa.get<bool>() ? 1 : 0) : static_cast<int>(f.integer("flash_attn"));
  }
  r.tensor_split = f.str("tensor_split");
  r.n_prompt = f.integer("n_prompt");
  r.n_gen = f.integer("n_gen");
  r.n_depth = f.integer("n_depth");
  r.test_time = f.str("test_time");
  r.avg_ns = f.number("avg_ns");
  r.stddev_ns = f.number("stddev_ns");
  r.avg_ts = f.number("avg_ts");
  r.stddev_ts = f.number("stddev_ts");
  if (r.n_prompt < 0 || r.n_gen < 0 || r.n_depth < 0) throw bad_input(fmt::format("{}: negative token counts", where), kExpected);
  // Beyond any context; also keeps n_prompt + n_depth and n_prompt + n_gen inside int64.
  constexpr int64_t kMaxTokens = int64_t{1} << 40;
  for (const auto& [key, value] : {std::pair{"n_prompt", r.n_prompt}, {"n_gen", r.n_gen}, {"n_depth", r.n_depth}})
    if (value > kMaxTokens) throw bad_input(fmt::format("{}: '{}' is {}, beyond any model's context", where, key, value), kExpected);
  if (r.avg_ts <= 0 && r.avg_ns > 0) r.avg_ts = 1e9 * static_cast<double>(r.n_prompt + r.n_gen) / r.avg_ns;
  if (f.has("samples_ts") && j.at("samples_ts").is_array())
    for (const auto& v : j.at("samples_ts"))
      if (v.is_number()) r.samples_ts.push_back(v.get<double>());
  return r;
}

VllmServeResult vllm_serve(const json& j, const std::string& where) {
  const Fields f(j, where);
  f.require({"completed", "total_input_tokens", "total_output_tokens", "output_throughput"});
  VllmServeResult r;
  r.date = f.str("date");
  r.backend = f.str("backend", "vllm");
  r.model_id = f.str("model_id");
  r.tokenizer_id = f.str("tokenizer_id");
  r.num_prompts = f.integer("num_prompts");
  // request_rate is a number, or the string "inf" when every request is sent at once.
  if (f.has("request_rate") && j.at("request_rate").is_number())
    r.request_rate = j.at("request_rate").get<double>();
  else if (f.has("request_rate") && j.at("request_rate").is_string() && j.at("request_rate").get<std::string>() != "inf") {
    try {
      r.request_rate = std::stod(j.at("request_rate").get<std::string>());
    } catch (const std::exception&) {
      throw bad_input(fmt::format("{}: 'request_rate' is neither a number nor \"inf\"", where), kExpected);
    }
  }
  if (f.has("max_concurrency")) r.max_concurrency = f.integer("max_concurrency");
  r.duration_s = f.number("duration");
  r.completed = f.integer("completed");
  r.total_input_tokens = f.integer("total_input_tokens");
  r.total_output_tokens = f.integer("total_output_tokens");
  r.request_throughput = f.number("request_throughput");
  r.output_throughput = f.number("output_throughput");
  r.total_token_throughput = f.number("total_token_throughput");
  r.mean_ttft_ms = f.optional_number("mean_ttft_ms");
  r.median_ttft_ms = f.optional_number("median_ttft_ms");
  r.p99_ttft_ms = f.optional_number("p99_ttft_ms");
  r.mean_tpot_ms = f.optional_number("mean_tpot_ms");
  r.median_tpot_ms = f.optional_number("median_tpot_ms");
  r.p99_tpot_ms = f.optional_number("p99_tpot_ms");
  r.mean_itl_ms = f.optional_number("mean_itl_ms");
  r.median_itl_ms = f.optional_number("median_itl_ms");
  // --metadata KEY=VALUE pairs land at the top level as strings.
  for (const char* key : {"vllm", "vllm_version", "version"})
    if (f.has(key) && j.at(key).is_string()) {
      r.version = j.at(key).get<std::string>();
      break;
    }
  for (const char* key : {"tensor_parallel_size", "tp"}) {
    if (!f.has(key)) continue;
    const std::string v = f.str(key);
    try {
      r.tensor_parallel_size = std::stoll(v);
    } catch (const std::exception&) {
      throw bad_input(fmt::format("{}: '{}' is not a number (got '{}')", where, key, v), kExpected);
    }
    break;
  }
  return r;
}

VllmLatencyResult vllm_latency(const json& j, const std::string& where) {
  const Fields f(j, where);
  VllmLatencyResult r;
  r.avg_latency_s = f.number("avg_latency");
  r.std_latency_s = f.optional_number("std_latency");
  if (!j.at("latencies").is_array()) throw bad_input(fmt::format("{}: 'latencies' is not a list", where), kExpected);
  for (const auto& v : j.at("latencies"))
    if (v.is_number()) r.latencies_s.push_back(v.get<double>());
  if (j.contains("percentiles") && j.at("percentiles").is_object())
    for (const auto& [k, v] : j.at("percentiles").items())
      if (v.is_number()) r.percentiles_s[k] = v.get<double>();
  if (!(r.avg_latency_s > 0)) throw bad_input(fmt::format("{}: 'avg_latency' must be a positive number of seconds", where), kExpected);
  return r;
}

/// Keys of a JSON object, for "this is not what we expected" messages.
std::string some_keys(const json& j) {
  if (!j.is_object()) return j.is_array() ? "a JSON list" : std::string("a JSON ") + j.type_name();
  std::string keys;
  int n = 0;
  for (const auto& [k, v] : j.items()) {
    if (n++ == 4) {
      keys += ", ...";
      break;
    }
    keys += (keys.empty() ? "'" : ", '") + k + "'";
  }
  return keys.empty() ? "an empty JSON object" : "a JSON object with keys " + keys;
}

/// Text that is not JSON: name what it looks like when we can.
[[noreturn]] void throw_not_json(std::string_view text, const std::string& name, const std::string& parse_error) {
  const std::string first = trim(text.substr(0, text.find('\n')));
  if (first.rfind("build_commit,", 0) == 0 || first.find(",model_type,") != std::string::npos)
    throw bad_input(fmt::format("{}: this is llama-bench CSV output (-o csv), which is not read", name),
                    "rerun llama-bench with -o json or -o jsonl");
  if (!first.empty() && first.front() == '|')
    throw bad_input(fmt::format("{}: this is a Markdown table (llama-bench's default -o md), which is not read", name),
                    "rerun llama-bench with -o json or -o jsonl");
  if (first.find("Serving Benchmark Result") != std::string::npos || first.find("Successful requests") != std::string::npos)
    throw bad_input(fmt::format("{}: this is vLLM's printed summary, not its result file", name),
                    "rerun 'vllm bench serve' with --save-result and pass the JSON file it writes");
  throw bad_input(fmt::format("{}: not valid JSON ({})", name, parse_error), std::string(kExpected) + "; was the file cut short?");
}

std::string date_of_test_time(const std::string& t) {
  // RFC 3339 "2024-05-12T10:31:07Z".
  return t.size() >= 10 && t[4] == '-' && t[7] == '-' ? t.substr(0, 10) : std::string{};
}

std::string date_of_vllm(const std::string& d) {
  // datetime.now().strftime("%Y%m%d-%H%M%S").
  if (d.size() >= 8 && std::all_of(d.begin(), d.begin() + 8, [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }))
    return d.substr(0, 4) + "-" + d.substr(4, 2) + "-" + d.substr(6, 2);
  return {};
}

/// "models/Meta-Llama-3-8B-Instruct-Q4_K_M.gguf" -> "Meta-Llama-3-8B-Instruct-Q4_K_M".
std::string file_stem(const std::string& path) {
  std::string base = path.substr(path.find_last_of("/\\") == std::string::npos ? 0 : path.find_last_of("/\\") + 1);
  const std::string l = lower(base);
  if (l.size() > 5 && l.compare(l.size() - 5, 5, ".gguf") == 0) base.resize(base.size() - 5);
  // Split files: name-00001-of-00003.
  const auto of = lower(base).rfind("-of-");
  if (of != std::string::npos && of >= 6 && base[of - 6] == '-') base.resize(of - 6);
  return base;
}

std::string llama_bench_label(const LlamaBenchRow& r) {
  std::string label;
  if (r.n_prompt > 0 && r.n_gen == 0)
    label = fmt::format("pp{}", r.n_prompt);
  else if (r.n_gen > 0 && r.n_prompt == 0)
    label = fmt::format("tg{}", r.n_gen);
  else
    label = fmt::format("pp{}+tg{}", r.n_prompt, r.n_gen);
  if (r.n_depth > 0) label += fmt::format(" @ d{}", r.n_depth);
  return label;
}

Measurement from_llama_bench(const LlamaBenchRow& r, const std::string& file, std::size_t index) {
  Measurement m;
  m.label = llama_bench_label(r);
  m.file = file;
  m.index = index;
  m.model_name = file_stem(r.model_filename);
  m.model_desc = r.model_type;
  m.quant_hint = llama_ftype_from_desc(r.model_type);
  m.model_params = r.model_n_params;
  m.model_size_bytes = r.model_size_bytes;
  m.tool = "llama.cpp";
  if (r.build_number > 0 || !r.build_commit.empty())
    m.tool_version = r.build_commit.empty() ? fmt::format("b{}", r.build_number) : fmt::format("b{} ({})", r.build_number, r.build_commit);
  m.device_info = r.gpu_info.empty() ? r.cpu_info : r.gpu_info;
  m.date = date_of_test_time(r.test_time);
  const std::string backend = llama_cpp_backend(r.backends, r.gpu_info);
  m.engine = backend.empty() ? std::string{} : "llama.cpp:" + backend;
  m.depth_tokens = static_cast<uint64_t>(r.n_depth);
  m.prompt_tokens = static_cast<uint64_t>(r.n_prompt + r.n_depth);  // the cached depth counts as prompt already seen
  m.gen_tokens = static_cast<uint64_t>(r.n_gen);
  // llama.cpp runs at most n_batch tokens per call and splits them into n_ubatch.
  m.ubatch_tokens = static_cast<uint64_t>(std::max<int64_t>(1, std::min(r.n_ubatch, r.n_batch > 0 ? r.n_batch : r.n_ubatch)));
  m.kv_dtype = lower(r.type_k);
  if (lower(r.type_k) != lower(r.type_v))
    m.notes.push_back(fmt::format("K cache {} and V cache {} differ; modelled as {} for both", r.type_k, r.type_v, r.type_k));
  if (r.flash_attn == 1)
    m.flash_attention = true;
  else if (r.flash_attn == 0)
    m.flash_attention = false;
  m.gpu_layers = r.n_gpu_layers;
  m.value = r.avg_ts;
  if (r.n_prompt > 0 && r.n_gen == 0)
    m.metric = MeasuredMetric::kPrefillTokensPerS;
  else if (r.n_gen > 0 && r.n_prompt == 0)
    m.metric = MeasuredMetric::kDecodeTokensPerS;
  else
    m.metric = MeasuredMetric::kPromptGenTokensPerS;

  if (r.n_prompt == 0 && r.n_gen == 0)
    m.unusable = "n_prompt and n_gen are both 0";
  else if (!(r.avg_ts > 0))
    m.unusable = "no timing (avg_ts is 0)";
  else if (backend.empty())
    m.unusable = fmt::format("backend '{}' is not one optadvisor models", r.backends);
  else if (r.no_kv_offload)
    m.unusable = "no_kv_offload: the KV cache stayed in host memory, which is not modelled";
  else if (r.n_gpu_layers == 0 && backend != "cpu")
    m.unusable = "n_gpu_layers 0: the model ran on the CPU, not the GPU";
  else if (r.tensor_split.find('/') != std::string::npos)
    m.unusable = fmt::format("split across several GPUs (tensor_split {}); calibrate with single-GPU runs", r.tensor_split);
  else if (lower(r.split_mode) == "row")
    m.unusable = "split_mode row spreads tensors across GPUs; calibrate with single-GPU runs";
  return m;
}

/// Mean tokens per request, rounded to whole tokens.
uint64_t mean_tokens(int64_t total, int64_t completed) {
  return completed > 0 ? static_cast<uint64_t>(std::llround(static_cast<double>(total) / static_cast<double>(completed))) : 0;
}

std::vector<Measurement> from_vllm_serve(const VllmServeResult& r, const std::string& file, std::size_t index) {
  Measurement base;
  base.file = file;
  base.index = index;
  base.model_name = r.model_id;
  base.tool = "vllm";
  base.tool_version = r.version;
  base.date = date_of_vllm(r.date);
  const std::string backend = lower(r.backend);
  if (backend == "vllm" || backend.rfind("openai", 0) == 0 || backend.empty()) {
    base.engine = "vllm";
    if (backend != "vllm")
      base.notes.push_back(fmt::format("client backend '{}': assumed a vLLM server (pass --engine otherwise)", r.backend));
  } else if (backend == "sglang" || backend == "tensorrt-llm" || backend == "llama.cpp") {
    base.engine = backend;
  } else {
    base.unusable = fmt::format("served by '{}', which optadvisor does not model", r.backend);
  }
  base.prompt_tokens = mean_tokens(r.total_input_tokens, r.completed);
  base.gen_tokens = mean_tokens(r.total_output_tokens, r.completed);
  if (r.tensor_parallel_size) base.tp = *r.tensor_parallel_size;
  // Concurrency: the client's cap when set; all prompts at once with an
  // infinite rate; otherwise Little's law, requests/s x mean request time.
  double concurrency = 0;
  if (r.max_concurrency && *r.max_concurrency > 0) {
    concurrency = static_cast<double>(std::min<int64_t>(*r.max_concurrency, std::max<int64_t>(r.num_prompts, 1)));
  } else if (!r.request_rate) {
    concurrency = static_cast<double>(std::max<int64_t>(r.num_prompts, r.completed));
    base.notes.push_back(fmt::format("request rate inf without max_concurrency: all {} requests in flight at once", r.num_prompts));
  } else if (r.mean_ttft_ms && r.mean_tpot_ms && r.request_throughput > 0) {
    const double request_s = (*r.mean_ttft_ms + *r.mean_tpot_ms * std::max(0.0, static_cast<double>(base.gen_tokens) - 1.0)) / 1e3;
    concurrency = std::max(1.0, std::round(r.request_throughput * request_s));
    base.notes.push_back(fmt::format("{:g} requests/s x {:.3g} s per request: about {:.0f} requests in flight (Little's law)",
                                     r.request_throughput, request_s, concurrency));
  }
  // A concurrency past any server (or inf from absurd rates) would not convert to an integer.
  constexpr double kMaxConcurrency = 1 << 20;
  if (!(concurrency <= kMaxConcurrency)) {
    if (base.unusable.empty()) base.unusable = fmt::format("concurrency {:g} is beyond any server", concurrency);
    concurrency = 0;
  }
  base.batch = static_cast<uint64_t>(std::max(1.0, concurrency));
  if (base.unusable.empty()) {
    if (r.completed <= 0)
      base.unusable = "no request completed";
    else if (concurrency <= 0)
      base.unusable = "concurrency unknown: a finite request rate without TTFT and TPOT";
    else if (base.gen_tokens == 0)
      base.unusable = "no output tokens";
  }
  const std::string prefix = fmt::format("serve c{}", base.batch);
  std::vector<Measurement> out;
  auto add = [&](MeasuredMetric metric, double value, const char* what) {
    Measurement m = base;
    m.metric = metric;
    m.value = value;
    m.label = fmt::format("{} {}", prefix, what);
    if (m.unusable.empty() && !(value > 0)) m.unusable = fmt::format("{} is not positive", what);
    out.push_back(std::move(m));
  };
  add(MeasuredMetric::kOutputTokensPerS, r.output_throughput, "output");
  if (r.mean_ttft_ms) add(MeasuredMetric::kTtftS, *r.mean_ttft_ms / 1e3, "TTFT");
  if (r.mean_tpot_ms && base.gen_tokens > 1) add(MeasuredMetric::kTpotS, *r.mean_tpot_ms / 1e3, "TPOT");
  return out;
}

Measurement from_vllm_latency(const VllmLatencyResult& r, const std::string& file, const MeasurementOptions& o) {
  Measurement m;
  m.file = file;
  m.index = 1;
  m.tool = "vllm";
  m.engine = "vllm";
  m.metric = MeasuredMetric::kLatencyS;
  m.value = r.avg_latency_s;
  // vllm bench latency's defaults: --batch-size 8 --input-len 32 --output-len 128.
  m.batch = o.batch.value_or(8);
  m.prompt_tokens = o.prompt_tokens.value_or(32);
  m.gen_tokens = o.gen_tokens.value_or(128);
  if (!o.batch || !o.prompt_tokens || !o.gen_tokens)
    m.notes.push_back(
        fmt::format("the file does not record its workload; batch {}, input {}, output {} (vllm bench latency's "
                    "defaults where --batch, --prompt, --gen were not given)",
                    m.batch, m.prompt_tokens, m.gen_tokens));
  m.label = fmt::format("latency b{} in{} out{}", m.batch, m.prompt_tokens, m.gen_tokens);
  if (m.gen_tokens == 0 && m.prompt_tokens == 0) m.unusable = "no tokens in the workload";
  return m;
}

}  // namespace

std::string_view to_string(BenchFormat f) {
  switch (f) {
    case BenchFormat::kLlamaBenchJson: return "llama-bench JSON";
    case BenchFormat::kLlamaBenchJsonl: return "llama-bench JSONL";
    case BenchFormat::kVllmServe: return "vllm bench serve";
    case BenchFormat::kVllmLatency: return "vllm bench latency";
  }
  return "unknown";
}

std::string_view to_string(MeasuredMetric m) {
  switch (m) {
    case MeasuredMetric::kPrefillTokensPerS: return "prefill_tokens_per_s";
    case MeasuredMetric::kDecodeTokensPerS: return "decode_tokens_per_s";
    case MeasuredMetric::kPromptGenTokensPerS: return "prompt_gen_tokens_per_s";
    case MeasuredMetric::kOutputTokensPerS: return "output_tokens_per_s";
    case MeasuredMetric::kTtftS: return "ttft_s";
    case MeasuredMetric::kTpotS: return "tpot_s";
    case MeasuredMetric::kLatencyS: return "latency_s";
  }
  return "unknown";
}

std::string_view unit_of(MeasuredMetric m) {
  switch (m) {
    case MeasuredMetric::kTtftS:
    case MeasuredMetric::kTpotS:
    case MeasuredMetric::kLatencyS: return "s";
    default: return "tokens/s";
  }
}

std::string llama_ftype_from_desc(std::string_view model_type) {
  // llama_model_ftype_name() in llama.cpp src/llama-model-loader.cpp; builds
  // before 2024 prefixed "mostly ". The desc is "<arch> <size> <ftype name>".
  static const std::vector<std::pair<std::string, std::string>> kNames = {
      {"all F32", "ALL_F32"},
      {"F16", "MOSTLY_F16"},
      {"BF16", "MOSTLY_BF16"},
      {"Q4_0", "MOSTLY_Q4_0"},
      {"Q4_1", "MOSTLY_Q4_1"},
      {"Q5_0", "MOSTLY_Q5_0"},
      {"Q5_1", "MOSTLY_Q5_1"},
      {"Q8_0", "MOSTLY_Q8_0"},
      {"Q2_K - Medium", "MOSTLY_Q2_K"},
      {"Q2_K", "MOSTLY_Q2_K"},
      {"Q2_K - Small", "MOSTLY_Q2_K_S"},
      {"Q3_K - Small", "MOSTLY_Q3_K_S"},
      {"Q3_K - Medium", "MOSTLY_Q3_K_M"},
      {"Q3_K - Large", "MOSTLY_Q3_K_L"},
      {"Q4_K - Small", "MOSTLY_Q4_K_S"},
      {"Q4_K - Medium", "MOSTLY_Q4_K_M"},
      {"Q5_K - Small", "MOSTLY_Q5_K_S"},
      {"Q5_K - Medium", "MOSTLY_Q5_K_M"},
      {"Q6_K", "MOSTLY_Q6_K"},
      {"IQ2_XXS - 2.0625 bpw", "MOSTLY_IQ2_XXS"},
      {"IQ2_XSS - 2.0625 bpw", "MOSTLY_IQ2_XXS"},
      {"IQ2_XS - 2.3125 bpw", "MOSTLY_IQ2_XS"},
      {"IQ2_S - 2.5 bpw", "MOSTLY_IQ2_S"},
      {"IQ2_M - 2.7 bpw", "MOSTLY_IQ2_M"},
      {"IQ3_XS - 3.3 bpw", "MOSTLY_IQ3_XS"},
      {"IQ3_XXS - 3.0625 bpw", "MOSTLY_IQ3_XXS"},
      {"IQ1_S - 1.5625 bpw", "MOSTLY_IQ1_S"},
      {"IQ1_M - 1.75 bpw", "MOSTLY_IQ1_M"},
      {"IQ4_NL - 4.5 bpw", "MOSTLY_IQ4_NL"},
      {"IQ4_XS - 4.25 bpw", "MOSTLY_IQ4_XS"},
      {"IQ3_S - 3.4375 bpw", "MOSTLY_IQ3_S"},
      {"IQ3_S mix - 3.66 bpw", "MOSTLY_IQ3_M"},
      {"MXFP4 MoE", "MOSTLY_MXFP4_MOE"},
  };
  std::string desc = trim(model_type);
  if (desc.size() > 10 && desc.compare(desc.size() - 10, 10, " (guessed)") == 0) desc.resize(desc.size() - 10);
  // The longest name that ends the description wins ("Q2_K - Small" over "Q2_K").
  std::string best, best_name;
  for (const auto& [name, ftype] : kNames) {
    for (const std::string& form : {name, "mostly " + name}) {
      if (desc.size() < form.size() + 1 || desc.compare(desc.size() - form.size(), form.size(), form) != 0) continue;
      if (desc[desc.size() - form.size() - 1] != ' ') continue;
      if (form.size() > best_name.size()) best = ftype, best_name = form;
    }
  }
  return best.empty() ? std::string{} : "LLAMA_FTYPE_" + best;
}

std::string llama_cpp_backend(std::string_view backends, std::string_view gpu_info) {
  std::string fallback;
  std::size_t start = 0;
  const std::string all(backends);
  while (start <= all.size()) {
    const auto comma = all.find(',', start);
    std::string name = lower(trim(all.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (name == "cuda") {
      const std::string g = lower(gpu_info);
      return g.find("amd") != std::string::npos || g.find("radeon") != std::string::npos ? "rocm" : "cuda";
    }
    if (name == "metal" || name == "vulkan" || name == "sycl" || name == "opencl") return name;
    if (name == "rocm" || name == "hip") return "rocm";
    if (name == "cpu" || name == "blas") fallback = "cpu";
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return fallback;
}

BenchFile parse_bench_results(std::string_view text, const std::string& name) {
  BenchFile file;
  file.name = name;
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) throw bad_input(fmt::format("{}: empty file", name), kExpected);

  // One JSON document, or JSON Lines (llama-bench -o jsonl, vllm --append-result).
  std::vector<json> docs;
  bool lines = false;
  std::string whole_error;
  if (auto whole = parse_json_input(text, whole_error)) {
    docs.push_back(std::move(*whole));
  } else {
    std::size_t start = 0, line_no = 0;
    while (start < text.size()) {
      const auto nl = text.find('\n', start);
      const std::string line = trim(text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start));
      ++line_no;
      if (!line.empty()) {
        std::string line_error;
        auto doc = parse_json_input(line, line_error);
        if (!doc) {
          // Several lines parsed but one did not: a cut-short JSONL file.
          if (docs.size() >= 1 && (looks_like_llama_bench(docs.front()) || looks_like_vllm_serve(docs.front())))
            throw bad_input(fmt::format("{}: line {} is not valid JSON ({})", name, line_no, line_error),
                            "each line of a JSONL file must be one complete object; was the file cut short?");
          throw_not_json(text, name, whole_error);
        }
        docs.push_back(std::move(*doc));
      }
      if (nl == std::string_view::npos) break;
      start = nl + 1;
    }
    lines = docs.size() > 1;
    if (!lines) throw_not_json(text, name, whole_error);
  }

  const json& first = docs.front();
  if (!lines && first.is_array()) {
    if (first.empty())
      throw bad_input(fmt::format("{}: an empty list: llama-bench wrote no results", name),
                      "did the run finish? rerun llama-bench -o json");
    for (std::size_t i = 0; i < first.size(); ++i) {
      const json& row = first.at(i);
      if (!looks_like_llama_bench(row))
        throw bad_input(fmt::format("{}: item {} is not a llama-bench result ({})", name, i + 1, some_keys(row)), kExpected);
      file.llama_bench.push_back(llama_bench_row(row, fmt::format("{}: item {}", name, i + 1)));
    }
    file.format = BenchFormat::kLlamaBenchJson;
    return file;
  }
  if (!lines && looks_like_vllm_latency(first)) {
    file.format = BenchFormat::kVllmLatency;
    file.vllm_latency = vllm_latency(first, name);
    return file;
  }
  if (looks_like_llama_bench(first)) {
    file.format = BenchFormat::kLlamaBenchJsonl;
    for (std::size_t i = 0; i < docs.size(); ++i) {
      if (!looks_like_llama_bench(docs[i]))
        throw bad_input(fmt::format("{}: line {} is not a llama-bench result ({})", name, i + 1, some_keys(docs[i])), kExpected);
      file.llama_bench.push_back(llama_bench_row(docs[i], fmt::format("{}: line {}", name, i + 1)));
    }
    return file;
  }
  if (looks_like_vllm_serve(first)) {
    file.format = BenchFormat::kVllmServe;
    for (std::size_t i = 0; i < docs.size(); ++i) {
      const std::string where = lines ? fmt::format("{}: line {}", name, i + 1) : name;
      if (!looks_like_vllm_serve(docs[i]))
        throw bad_input(fmt::format("{}: not a vllm bench serve result ({})", where, some_keys(docs[i])), kExpected);
      file.vllm_serve.push_back(vllm_serve(docs[i], where));
    }
    return file;
  }
  if (first.is_object() && first.contains("tokens_per_second") && first.contains("elapsed_time"))
    throw bad_input(fmt::format("{}: a 'vllm bench throughput' result, which records no per-request workload", name),
                    "use 'vllm bench serve --save-result' (with --max-concurrency) or 'vllm bench latency --output-json'");
  throw bad_input(fmt::format("{}: not a llama-bench or vLLM benchmark result ({})", name, some_keys(first)), kExpected);
}

BenchFile load_bench_results(const std::string& path) { return parse_bench_results(read_text_file(path, "results file"), path); }

std::vector<Measurement> measurements_from(const BenchFile& file, const MeasurementOptions& options) {
  std::vector<Measurement> out;
  for (std::size_t i = 0; i < file.llama_bench.size(); ++i) out.push_back(from_llama_bench(file.llama_bench[i], file.name, i + 1));
  for (std::size_t i = 0; i < file.vllm_serve.size(); ++i) {
    auto ms = from_vllm_serve(file.vllm_serve[i], file.name, i + 1);
    out.insert(out.end(), ms.begin(), ms.end());
  }
  if (file.vllm_latency) out.push_back(from_vllm_latency(*file.vllm_latency, file.name, options));
  return out;
}

}  // namespace optadvisor
