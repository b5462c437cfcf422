// SPDX-License-Identifier: MIT
// The rule book: parses data/rules/*.json, checks every rule against the
// fact catalog, the transform catalog, the assumptions and the rest of the
// database, and evaluates conditions.
#include "optadvisor/advisor/rules.hpp"
#include "optadvisor/advisor/under_load.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "catalog/embedded.hpp"
#include "base/names.hpp"
#include "optadvisor/advisor/transforms.hpp"

namespace optadvisor {

std::string_view to_string(FactType t) {
  switch (t) {
    case FactType::kBool: return "bool";
    case FactType::kNumber: return "number";
    case FactType::kString: return "string";
    case FactType::kStringList: return "list";
  }
  return "bool";
}

namespace {
/// "nvidia, amd, ...": the schema's list (hardware_vendors()), not a copy of it.
std::string vendor_list() {
  std::string out;
  for (const auto& v : hardware_vendors()) out += (out.empty() ? "" : ", ") + v;
  return out;
}
}  // namespace

const std::vector<FactInfo>& fact_catalog() {
  using T = FactType;
  static const std::vector<FactInfo> facts = {
      {"goal", T::kString, "the goal asked for: latency, throughput, memory or training"},
      {"hardware.id", T::kString, "device id"},
      {"hardware.name", T::kString, "device name"},
      {"hardware.class", T::kString, "device class: datacenter-gpu, consumer-gpu, workstation-gpu, apple-silicon, mobile-soc, accelerator"},
      {"hardware.vendor", T::kString, vendor_list()},
      {"hardware.capabilities.fp8", T::kBool, "FP8 tensor cores"},
      {"hardware.capabilities.nvfp4", T::kBool, "NVFP4 tensor cores (Blackwell)"},
      {"hardware.capabilities.mxfp4", T::kBool, "MXFP4 tensor cores"},
      {"hardware.capabilities.int4", T::kBool, "INT4 tensor cores"},
      {"hardware.capabilities.int8", T::kBool, "INT8 matrix units (the profile states an int8 rate)"},
      {"hardware.capabilities.flash_attention_2", T::kBool, "FlashAttention-2 runs (NVIDIA Ampere or newer, AMD CDNA3)"},
      {"hardware.capabilities.flash_attention_3", T::kBool, "FlashAttention-3 runs (Hopper)"},
      {"hardware.capabilities.cuda_graphs", T::kBool, "CUDA graphs"},
      {"hardware.capabilities.unified_memory", T::kBool, "CPU and GPU share one memory"},
      {"hardware.capabilities.npu", T::kBool, "an NPU (Neural Engine, Hexagon)"},
      {"hardware.capabilities.multi_gpu_link", T::kBool, "a GPU-to-GPU link (NVLink, xGMI, ICI)"},
      {"hardware.engines", T::kStringList, "engine ids that run on the device (backends dropped)"},
      {"hardware.memory_bytes", T::kNumber, "installed memory, bytes"},
      {"hardware.usable_fraction", T::kNumber, "share of memory a program may use by default (macOS wired limit); 1 when unlimited"},
      {"hardware.app_memory_limit", T::kBool, "a per-app memory limit applies (iOS)"},
      {"hardware.entitled_memory_limit", T::kBool, "a larger per-app limit exists with an entitlement (iOS)"},
      {"hardware.sustained_fraction", T::kNumber, "sustained / burst throughput under minutes of load (1 when not throttled)"},
      {"engine.id", T::kString, "engine id: vllm, llama.cpp, sglang, tensorrt-llm, mlx, executorch, qnn, mlc-llm"},
      {"engine.backend", T::kString, "engine backend: cuda, metal, default, npu, ..."},
      {"engine.kv_dtypes", T::kStringList, "KV-cache dtypes the engine offers"},
      {"engine.quants", T::kStringList, "weight formats the engine runs (\"*gguf\" = every GGUF type)"},
      {"engine.paged_kv", T::kBool, "the engine pages its KV cache (blocks shared between sequences)"},
      {"engine.memory_share", T::kNumber, "share of each device's memory the engine claims up front (vLLM, SGLang); 0 when it claims none"},
      {"model.id", T::kString, "model id"},
      {"model.name", T::kString, "model name"},
      {"model.params", T::kNumber, "parameters"},
      {"model.active_params", T::kNumber, "parameters used per token (MoE: routed subset)"},
      {"model.moe", T::kBool, "mixture of experts"},
      {"model.mtp_layers", T::kNumber, "multi-token-prediction layers the checkpoint ships (DeepSeek-V3, GLM-4.5)"},
      {"model.sliding_window", T::kBool, "some layers use sliding-window attention"},
      {"model.mla", T::kBool, "multi-head latent attention (compressed KV)"},
      {"model.layers", T::kNumber, "decoder layers"},
      {"model.attention_heads", T::kNumber, "query heads"},
      {"model.kv_heads", T::kNumber, "KV heads"},
      {"model.max_context", T::kNumber, "longest context the model allows, tokens"},
      {"quant.id", T::kString, "weight format id"},
      {"quant.official_checkpoint", T::kString, "the publisher's own checkpoint in this weight format (Qwen/Qwen3-32B-FP8); \"\" when there is none"},
      {"quant.container", T::kString, "gguf, safetensors, pte or qnn"},
      {"quant.bits_per_weight", T::kNumber, "bits per weight of the whole checkpoint"},
      {"quant.quantized", T::kBool, "most weight bytes are below 16 bits"},
      {"workload.batch", T::kNumber, "concurrent sequences (resolved)"},
      {"workload.batch_max", T::kBool, "batch is 'max' (as many as fit)"},
      {"workload.prompt_tokens", T::kNumber, "prompt tokens per sequence"},
      {"workload.gen_tokens", T::kNumber, "generated tokens per sequence"},
      {"workload.ubatch_tokens", T::kNumber, "prompt tokens per forward pass in prefill (llama.cpp -ub; a server's max batched tokens)"},
      {"workload.context_tokens", T::kNumber, "KV reservation per sequence (a continuous-batching server: the maximum length)"},
      {"workload.kv_dtype", T::kString, "KV-cache dtype"},
      {"workload.kv_bits", T::kNumber, "bits per KV-cache element"},
      {"workload.gpus", T::kNumber, "GPUs"},
      {"workload.tp", T::kNumber, "tensor-parallel degree"},
      {"workload.replicas", T::kNumber, "data-parallel copies of the tp x pp layout"},
      {"workload.ep", T::kNumber, "expert-parallel degree"},
      {"workload.dp_attention", T::kNumber, "data-parallel attention ranks"},
      {"workload.pp", T::kNumber, "pipeline (layer-split) degree"},
      {"workload.expert_offload_layers", T::kNumber, "layers whose routed experts stay in host memory (llama.cpp --n-cpu-moe; 0 when off)"},
      {"workload.flash_attention", T::kBool, "fused (flash) attention in effect"},
      {"workload.attention_kernel", T::kString, "attention kernel chosen explicitly: \"\", fa2 or fa3"},
      {"workload.graphs", T::kBool, "decode step captured as a CUDA graph"},
      {"workload.speculative", T::kBool, "speculative decoding on"},
      {"workload.draft_tokens", T::kNumber, "speculative decoding: tokens drafted per step (0 when off)"},
      {"workload.accepted_tokens", T::kNumber, "speculative decoding: mean tokens a step yields (1 when off)"},
      {"workload.prefix_cached_fraction", T::kNumber, "share of each prompt served from the prefix cache"},
      {"workload.weights_mmap", T::kBool, "weights mapped from the file outside the app footprint (phones)"},
      {"workload.memory_limit_raised", T::kBool, "the device's memory limit was raised (wired limit, entitlement)"},
      {"memory.fits", T::kBool, "everything fits in device memory"},
      {"memory.runs", T::kBool, "it runs: fits, or llama.cpp keeps some layers in host memory"},
      {"memory.total_bytes", T::kNumber, "memory needed per device, bytes"},
      {"memory.limit_bytes", T::kNumber, "memory the engine may use per device, bytes"},
      {"memory.use_fraction", T::kNumber, "needed / usable memory"},
      {"memory.headroom_bytes", T::kNumber, "usable minus needed, bytes (negative when over)"},
      {"memory.weights_share", T::kNumber, "weights / needed memory"},
      {"memory.kv_share", T::kNumber, "KV cache / needed memory"},
      {"memory.max_batch", T::kNumber, "sequences of memory.kv_tokens_per_sequence tokens that fit"},
      {"memory.kv_tokens_per_sequence", T::kNumber, "tokens of KV a sequence holds (a continuous-batching server: prompt + generated)"},
      {"memory.max_context", T::kNumber, "tokens per sequence that fit at this batch"},
      {"memory.offloaded_layers", T::kNumber, "layers llama.cpp keeps in host memory"},
      {"prefill.bound", T::kString, "what binds prefill: compute, memory-bandwidth, memory-capacity, overhead, interconnect"},
      {"prefill.time_s", T::kNumber, "time to first token, seconds"},
      {"prefill.passes", T::kNumber, "forward passes the prompts take (their tokens over workload.ubatch_tokens, rounded up)"},
      {"prefill.attention_share", T::kNumber, "attention math / prefill time"},
      {"decode.bound", T::kString, "what binds a decode step"},
      {"decode.time_s", T::kNumber, "time per output token, seconds"},
      {"decode.weights_share", T::kNumber, "weight reads / decode step time"},
      {"decode.kv_share", T::kNumber, "KV-cache reads / decode step time"},
      {"decode.compute_share", T::kNumber, "matrix math / decode step time"},
      {"decode.overhead_share", T::kNumber, "launch and scheduling overhead / decode step time"},
      {"decode.interconnect_share", T::kNumber, "tensor-parallel all-reduces / decode step time"},
      {"request.decode_share", T::kNumber, "decode / (prefill + decode) time of one request"},
      {"throughput.tokens_per_s", T::kNumber, "serving output tokens/s: batch x gen / (prefill + decode)"},
      // Training (goal training).
      {"training.engine", T::kString, "training framework: pytorch-fsdp2, megatron, deepspeed"},
      {"training.shardings", T::kStringList, "sharding modes the framework offers: ddp, zero1, zero2, zero3, fsdp"},
      {"training.engine_lora", T::kBool, "the framework trains LoRA / QLoRA adapters"},
      {"training.bound", T::kString, "what binds a training step: compute, memory-capacity, communication, pipeline-bubble, host-offload"},
      {"training.fits", T::kBool, "the training step fits in GPU memory"},
      {"training.precision", T::kString, "bf16, bf16-pure or fp8"},
      {"training.recompute", T::kString, "activation recomputation: none, selective, full"},
      {"training.sharding_stage", T::kNumber, "ZeRO/FSDP stage: 0 (DDP) to 3"},
      {"training.gpus", T::kNumber, "GPUs in the job"},
      {"training.data_parallel", T::kNumber, "data-parallel degree"},
      {"training.tp", T::kNumber, "tensor-parallel degree"},
      {"training.pp", T::kNumber, "pipeline-parallel degree"},
      {"training.cp", T::kNumber, "context-parallel degree"},
      {"training.sequence_parallel", T::kBool, "sequence parallelism on (with tensor parallelism)"},
      {"training.compiled", T::kBool, "elementwise kernels fused (torch.compile, or the framework's own fused kernels)"},
      {"training.sequence_tokens", T::kNumber, "tokens per sequence"},
      {"training.micro_batch", T::kNumber, "sequences per microbatch per data-parallel rank"},
      {"training.grad_accum", T::kNumber, "microbatches per optimizer step per rank (gradient accumulation)"},
      {"training.lora", T::kBool, "LoRA or QLoRA adapters instead of full training"},
      {"training.qlora", T::kBool, "the frozen base is quantized (QLoRA)"},
      {"training.optimizer", T::kString, "optimizer id: adamw, adamw-8bit"},
      {"training.step_time_s", T::kNumber, "time of one optimizer step, seconds"},
      {"training.mfu", T::kNumber, "model FLOP utilization"},
      {"training.attention_share", T::kNumber, "attention / step time"},
      {"training.recompute_share", T::kNumber, "recomputation / step time"},
      {"training.comm_share", T::kNumber, "exposed communication / step time"},
      {"training.memory_share_activations", T::kNumber, "saved activations / memory per GPU"},
      {"training.memory_share_states", T::kNumber, "weights, gradients and optimizer states / memory per GPU"},
      {"training.headroom_bytes", T::kNumber, "usable minus needed memory per GPU, bytes"},
      {"training.optimizer_offload", T::kBool, "master weights and optimizer moments live in host memory (ZeRO-Offload)"},
      {"training.activation_offload", T::kBool, "saved activations wait in host memory"},
      {"training.host_link", T::kBool, "the GPU has its own memory and a PCIe link to the host (offload is possible)"},
      {"training.offload_share", T::kNumber, "exposed host offload (CPU step, copies) / step time"},
  };
  return facts;
}

const FactInfo* find_fact(std::string_view name) {
  for (const auto& f : fact_catalog())
    if (f.name == name) return &f;
  return nullptr;
}

bool fact_for_inference(std::string_view name) { return name.rfind("training.", 0) != 0; }

bool fact_for_training(std::string_view name) {
  static const std::vector<std::string_view> memory = {"memory.fits",        "memory.runs",         "memory.total_bytes",
                                                       "memory.limit_bytes", "memory.use_fraction", "memory.headroom_bytes"};
  if (name == "goal" || name.rfind("hardware.", 0) == 0 || name.rfind("model.", 0) == 0 || name.rfind("training.", 0) == 0) return true;
  return std::find(memory.begin(), memory.end(), name) != memory.end();
}

namespace {

double as_number(const nlohmann::json& j) { return j.is_number() ? j.get<double>() : std::nan(""); }

}  // namespace

bool is_placeholder(std::string_view inner) {
  if (inner.empty()) return false;
  const std::size_t colon = inner.find(':');
  const std::string_view name = inner.substr(0, colon);
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char ch = name[i];
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || (ch == '@' && i == 0);
    if (!ok) return false;
  }
  if (colon == std::string_view::npos) return true;
  const std::string_view format = inner.substr(colon + 1);
  return !format.empty() && format.find_first_of(" \"'{") == std::string_view::npos;
}

bool Condition::holds(const Facts& facts) const {
  if (!any.empty()) return std::any_of(any.begin(), any.end(), [&](const Condition& c) { return c.holds(facts); });
  auto it = facts.find(fact);
  if (it == facts.end()) return false;
  const nlohmann::json& v = it->second;
  auto equal = [](const nlohmann::json& a, const nlohmann::json& b) {
    if (a.is_number() && b.is_number())
      return std::fabs(a.get<double>() - b.get<double>()) <= 1e-9 * std::max(1.0, std::fabs(a.get<double>()));
    return a == b;
  };
  auto member = [&](const nlohmann::json& list) {
    return std::any_of(list.begin(), list.end(), [&](const nlohmann::json& x) { return equal(v, x); });
  };
  auto has = [&](const nlohmann::json& needle) {
    return v.is_array() && std::any_of(v.begin(), v.end(), [&](const nlohmann::json& x) { return x == needle; });
  };
  if (op == "equals") return equal(v, value);
  if (op == "not_equals") return !equal(v, value);
  if (op == "in") return member(value);
  if (op == "not_in") return !member(value);
  if (op == "contains") return has(value);
  if (op == "not_contains") return !has(value);
  const double x = as_number(v), y = as_number(value);
  if (std::isnan(x) || std::isnan(y)) return false;
  if (op == "gt") return x > y;
  if (op == "ge") return x >= y;
  if (op == "lt") return x < y;
  if (op == "le") return x <= y;
  return false;
}

bool Rule::serves(Goal g) const { return std::find(goals.begin(), goals.end(), g) != goals.end(); }

int Rule::quality_class() const {
  static const char* const kClasses[] = {"lossless", "near-lossless", "lossy", "different-model"};
  for (int i = 0; i < 4; ++i)
    if (quality == kClasses[i]) return i;
  return quality == "different-run" ? 3 : -1;
}

std::string Rule::how_for(const std::string& engine_id, bool official) const {
  if (official) {
    if (auto it = how_official.find(engine_id); it != how_official.end()) return it->second;
    if (auto it = how_official.find("*"); it != how_official.end()) return it->second;
  }
  if (auto it = how.find(engine_id); it != how.end()) return it->second;
  if (auto it = how.find("*"); it != how.end()) return it->second;
  return {};
}

const Rule* RuleBook::find(std::string_view id) const {
  for (const auto& r : rules_)
    if (r.id == id) return &r;
  return nullptr;
}

const Rule& RuleBook::resolve(std::string_view id) const {
  if (const Rule* r = find(id)) return *r;
  std::vector<std::string> ids;
  for (const auto& r : rules_) ids.push_back(r.id);
  const auto close = closest_names(id, ids);
  std::string hint = "see 'optadvisor rules list' for the rule ids";
  if (!close.empty()) {
    hint = "did you mean ";
    for (std::size_t i = 0; i < close.size(); ++i) hint += (i == 0 ? "" : (i + 1 == close.size() ? " or " : ", ")) + ("'" + close[i] + "'");
    hint += "? (optadvisor rules list)";
  }
  throw bad_input(fmt::format("unknown rule '{}'", id), hint);
}

namespace {

/// Collects the problems of one document with its display name.
struct Checker {
  const std::string& file;
  std::vector<Problem>& problems;
  void add(const std::string& pointer, std::string message) const { problems.push_back({file, pointer, std::move(message)}); }
};

const std::set<std::string>& template_formats() {
  static const std::set<std::string> f = {"%", "gb", "s", "x", "int"};
  return f;
}

bool known_engine(const Catalog& catalog, const std::string& id) {
  return std::any_of(catalog.engines().begin(), catalog.engines().end(), [&](const EngineProfile& e) { return e.id == id; });
}

/// An engine id some device lists (inference engines, and frameworks such as pytorch).
bool listed_engine(const Catalog& catalog, const std::string& id) {
  for (const auto& hw : catalog.hardware())
    for (const auto& e : hw.engines)
      if (e.substr(0, e.find(':')) == id) return true;
  return false;
}

/// A training framework id (data/training/, "pytorch-fsdp2", "megatron", "deepspeed").
bool training_framework(const Catalog& catalog, const std::string& id) {
  for (const auto& [file, doc] : catalog.training_documents())
    if (doc.value("id", "") == id && doc.value("kind", "") != "system") return true;
  return false;
}

/// Values that must name something in the database.
void check_fact_values(const Catalog& catalog, const std::string& fact, const nlohmann::json& value, const Checker& c,
                       const std::string& pointer) {
  std::vector<nlohmann::json> values;
  if (value.is_array())
    values.assign(value.begin(), value.end());
  else
    values.push_back(value);
  for (const auto& v : values) {
    if (!v.is_string()) continue;
    const std::string s = v.get<std::string>();
    if ((fact == "engine.id" || fact == "hardware.engines") && !known_engine(catalog, s) && !listed_engine(catalog, s))
      c.add(pointer, fmt::format("unknown engine '{}'", s));
    if (fact == "training.engine" && !training_framework(catalog, s)) c.add(pointer, fmt::format("unknown training framework '{}'", s));
    if (fact == "hardware.class" && !device_class_from_string(s)) c.add(pointer, fmt::format("unknown device class '{}'", s));
    if (fact == "quant.id" && !catalog.quant().find(s)) c.add(pointer, fmt::format("unknown weight format '{}'", s));
    if (fact == "workload.kv_dtype") {
      const auto ids = catalog.quant().kv_dtype_ids();
      if (std::find(ids.begin(), ids.end(), s) == ids.end()) c.add(pointer, fmt::format("unknown KV-cache dtype '{}'", s));
    }
    if (fact == "goal" && !goal_from_string(s)) c.add(pointer, fmt::format("unknown goal '{}'", s));
  }
}

void check_template(const std::string& text, const std::map<std::string, Assumption>& assumptions, const Checker& c,
                    const std::string& pointer) {
  for (std::size_t open = text.find('{'); open != std::string::npos; open = text.find('{', open + 1)) {
    const std::size_t close = text.find('}', open);
    if (close == std::string::npos) return;
    const std::string inner = text.substr(open + 1, close - open - 1);
    if (!is_placeholder(inner)) continue;
    const std::string name = inner.substr(0, inner.find(':'));
    const std::string format = inner.find(':') == std::string::npos ? "" : inner.substr(inner.find(':') + 1);
    if (!format.empty() && !template_formats().count(format))
      c.add(pointer, fmt::format("unknown format ':{}' (use %, gb, s, x or int)", format));
    if (!name.empty() && name[0] == '@') {
      if (!assumptions.count(name.substr(1))) c.add(pointer, fmt::format("unknown assumption '{}'", name.substr(1)));
    } else if (!find_fact(name)) {
      c.add(pointer, fmt::format("unknown fact '{}' in the text", name));
    }
  }
}

/// " (did you mean 'x'?)" with the name of `names` closest to `name`, or "" when none is close.
std::string did_you_mean(const std::string& name, const std::vector<std::string>& names) {
  const auto close = closest_names(name, names, 1);
  return close.empty() ? "" : " (did you mean '" + close[0] + "'?)";
}

Condition parse_condition(const nlohmann::json& j, const Catalog& catalog, const std::map<std::string, Assumption>& assumptions,
                          const Checker& c, const std::string& pointer) {
  Condition out;
  out.text = j.value("text", "");
  out.reason = j.value("reason", "");
  out.because = j.value("because", "");
  for (const char* key : {"text", "reason", "because"})
    if (j.contains(key)) check_template(j.at(key).get<std::string>(), assumptions, c, pointer + "/" + key);
  if (j.contains("any")) {
    if (j.contains("fact")) c.add(pointer, "a condition has either 'fact' or 'any', not both");
    const auto& list = j.at("any");
    for (std::size_t i = 0; i < list.size(); ++i)
      out.any.push_back(parse_condition(list[i], catalog, assumptions, c, pointer + "/any/" + std::to_string(i)));
    if (out.any.empty()) c.add(pointer + "/any", "'any' needs at least one condition");
    return out;
  }
  if (!j.contains("fact")) {
    c.add(pointer, "a condition needs 'fact' (or 'any')");
    return out;
  }
  out.fact = j.at("fact").get<std::string>();
  const FactInfo* info = find_fact(out.fact);
  if (!info) {
    std::vector<std::string> names;
    for (const auto& f : fact_catalog()) names.push_back(f.name);
    c.add(pointer + "/fact", fmt::format("unknown fact '{}'{}", out.fact, did_you_mean(out.fact, names)));
  }
  static const std::vector<std::string> ops = {"equals", "not_equals", "in", "not_in", "contains", "not_contains", "gt", "ge", "lt", "le"};
  int found = 0;
  for (const auto& op : ops) {
    if (!j.contains(op)) continue;
    ++found;
    out.op = op;
    out.value = j.at(op);
  }
  if (found != 1) {
    c.add(pointer, found == 0 ? "a condition needs one operator: equals, not_equals, in, not_in, contains, not_contains, gt, ge, lt, le"
                              : "a condition has more than one operator");
    return out;
  }
  if (!info) return out;
  const std::string where = pointer + "/" + out.op;
  auto scalar_ok = [&](const nlohmann::json& v) {
    switch (info->type) {
      case FactType::kBool: return v.is_boolean();
      case FactType::kNumber: return v.is_number();
      case FactType::kString: return v.is_string();
      case FactType::kStringList: return false;
    }
    return false;
  };
  const std::string type = std::string(to_string(info->type));
  if (out.op == "equals" || out.op == "not_equals") {
    if (!scalar_ok(out.value)) c.add(where, fmt::format("fact '{}' is a {}; compare it with a {} value", out.fact, type, type));
  } else if (out.op == "in" || out.op == "not_in") {
    if (!out.value.is_array() || out.value.empty() || !std::all_of(out.value.begin(), out.value.end(), scalar_ok))
      c.add(where, fmt::format("'{}' takes a non-empty list of {} values for fact '{}'", out.op, type, out.fact));
  } else if (out.op == "contains" || out.op == "not_contains") {
    if (info->type != FactType::kStringList || !out.value.is_string())
      c.add(where, fmt::format("'{}' needs a list fact and a string value ('{}' is a {})", out.op, out.fact, type));
  } else if (info->type != FactType::kNumber || !out.value.is_number()) {
    c.add(where, fmt::format("'{}' compares numbers; fact '{}' is a {}", out.op, out.fact, type));
  }
  check_fact_values(catalog, out.fact, out.value, c, where);
  return out;
}

/// Checks one transform parameter against its declared kind.
void check_param(const TransformParam& param, const nlohmann::json& value, const Catalog& catalog,
                 const std::map<std::string, Assumption>& assumptions, const Checker& c, const std::string& pointer,
                 std::vector<std::string>& used) {
  if (value.is_string() && !value.get<std::string>().empty() && value.get<std::string>()[0] == '@') {
    const std::string id = value.get<std::string>().substr(1);
    if (param.kind != "number" && param.kind != "integer" && param.kind != "number-map")
      c.add(pointer, fmt::format("parameter '{}' is a {}, not a number; it cannot take an assumption", param.name, param.kind));
    else if (!assumptions.count(id))
      c.add(pointer, fmt::format("unknown assumption '{}'", id));
    else
      used.push_back(id);
    return;
  }
  auto check_quant = [&](const nlohmann::json& v, const std::string& p) {
    if (!v.is_string()) return c.add(p, "expected a weight format id");
    if (!catalog.quant().find(v.get<std::string>())) c.add(p, fmt::format("unknown weight format '{}'", v.get<std::string>()));
  };
  auto check_kv = [&](const nlohmann::json& v, const std::string& p) {
    const auto ids = catalog.quant().kv_dtype_ids();
    if (!v.is_string() || std::find(ids.begin(), ids.end(), v.get<std::string>()) == ids.end())
      c.add(p, fmt::format("unknown KV-cache dtype {}", v.dump()));
  };
  auto per_engine = [&](auto check) {
    if (value.is_string()) return check(value, pointer);
    if (!value.is_object() || value.empty()) return c.add(pointer, "expected an id or an object {engine id: id, \"*\": id}");
    for (const auto& [engine, v] : value.items()) {
      if (engine != "*" && !known_engine(catalog, engine)) c.add(pointer + "/" + engine, fmt::format("unknown engine '{}'", engine));
      check(v, pointer + "/" + engine);
    }
  };
  if (param.kind == "number") {
    if (!value.is_number()) c.add(pointer, fmt::format("parameter '{}' must be a number or \"@assumption\"", param.name));
  } else if (param.kind == "number-map") {
    if (value.is_number()) return;
    if (!value.is_object() || value.empty())
      return c.add(pointer,
                   fmt::format("parameter '{}' must be a number, \"@assumption\" or {{engine id: number, \"*\": number}}", param.name));
    const TransformParam number{param.name, "number", false, ""};
    for (const auto& [engine, v] : value.items()) {
      if (engine != "*" && !known_engine(catalog, engine)) c.add(pointer + "/" + engine, fmt::format("unknown engine '{}'", engine));
      check_param(number, v, catalog, assumptions, c, pointer + "/" + engine, used);
    }
  } else if (param.kind == "integer") {
    if (!value.is_number_integer() || value.get<int64_t>() < 1)
      c.add(pointer, fmt::format("parameter '{}' must be a positive integer", param.name));
  } else if (param.kind == "string") {
    if (!value.is_string()) c.add(pointer, fmt::format("parameter '{}' must be a string", param.name));
  } else if (param.kind == "quant") {
    per_engine(check_quant);
  } else if (param.kind == "kv-dtype") {
    per_engine(check_kv);
  } else if (param.kind == "engine") {
    if (!value.is_string() || !known_engine(catalog, value.get<std::string>()))
      c.add(pointer, fmt::format("unknown engine {}", value.dump()));
  } else if (param.kind == "precision-map") {
    if (!value.is_object() || value.empty()) return c.add(pointer, "expected {\"4\"|\"8\"|\"16\"|\"*\": format id}");
    for (const auto& [k, v] : value.items()) {
      if (k != "4" && k != "8" && k != "16" && k != "*") c.add(pointer + "/" + k, "precision classes are \"4\", \"8\", \"16\" and \"*\"");
      check_quant(v, pointer + "/" + k);
    }
  } else if (param.kind == "sharding") {
    static const std::set<std::string> modes = {"ddp", "zero1", "zero2", "zero3", "fsdp"};
    auto check_mode = [&](const nlohmann::json& v, const std::string& p) {
      if (!v.is_string() || !modes.count(v.get<std::string>()))
        c.add(p, fmt::format("unknown sharding mode {} (ddp, zero1, zero2, zero3, fsdp)", v.dump()));
    };
    if (value.is_string())
      check_mode(value, pointer);
    else if (value.is_object() && !value.empty())
      for (const auto& [framework, v] : value.items()) {
        if (framework != "*" && !training_framework(catalog, framework))
          c.add(pointer + "/" + framework, fmt::format("unknown training framework '{}'", framework));
        check_mode(v, pointer + "/" + framework);
      }
    else
      c.add(pointer, "expected a sharding mode or {framework id: mode}");
  } else if (param.kind == "batch") {
    if (!(value.is_string() && value.get<std::string>() == "max") && !(value.is_number_integer() && value.get<int64_t>() > 0))
      c.add(pointer, "batch is \"max\" or a positive integer");
  }
}

/// What parsing one rule reads besides its JSON: the database, the assumptions, where problems go and
/// the rule's JSON pointer.
struct RuleContext {
  const Catalog& catalog;
  const std::map<std::string, Assumption>& assumptions;
  const Checker& c;
  const std::string& pointer;
};

void parse_goals(const nlohmann::json& j, const RuleContext& x, Rule& r) {
  for (const auto& g : j.at("goals")) {
    if (auto goal = goal_from_string(g.get<std::string>()))
      r.goals.push_back(*goal);
    else
      x.c.add(x.pointer + "/goals", fmt::format("unknown goal '{}'", g.get<std::string>()));
  }
}

/// The triggers ("when"), prerequisites ("requires") and the changed scenario's checks ("after"),
/// each with the text it needs.
void parse_conditions(const nlohmann::json& j, const RuleContext& x, Rule& r) {
  const Checker& c = x.c;
  const std::string& pointer = x.pointer;
  if (j.contains("when"))
    for (std::size_t i = 0; i < j.at("when").size(); ++i)
      r.when.push_back(parse_condition(j.at("when")[i], x.catalog, x.assumptions, c, pointer + "/when/" + std::to_string(i)));
  if (j.contains("requires"))
    for (std::size_t i = 0; i < j.at("requires").size(); ++i) {
      const std::string p = pointer + "/requires/" + std::to_string(i);
      r.requires_.push_back(parse_condition(j.at("requires")[i], x.catalog, x.assumptions, c, p));
      if (r.requires_.back().reason.empty()) c.add(p, "a prerequisite needs a 'reason' (shown when it is not met)");
      if (r.requires_.back().text.empty()) c.add(p, "a prerequisite needs a 'text' (the requirement as a statement)");
    }
  if (j.contains("after"))
    for (std::size_t i = 0; i < j.at("after").size(); ++i) {
      const std::string p = pointer + "/after/" + std::to_string(i);
      r.after.push_back(parse_condition(j.at("after")[i], x.catalog, x.assumptions, c, p));
      if (r.after.back().reason.empty()) c.add(p, "an after-condition needs a 'reason' (shown when the change does not show it)");
    }
  if (!r.after.empty() && !j.contains("transform")) c.add(pointer + "/after", "after-conditions check a transform's result: the rule has none");
  for (std::size_t i = 0; i < r.when.size(); ++i)
    if (r.when[i].because.empty()) c.add(pointer + "/when/" + std::to_string(i), "a trigger needs a 'because' (why it applies here)");
}

/// One transform step at `p`, or nothing when it names no known transform.
std::optional<TransformStep> parse_transform_step(const nlohmann::json& json, const std::string& p, const RuleContext& x, Rule& r) {
  const Checker& c = x.c;
  TransformStep step;
  step.name = json.at("name").get<std::string>();
  step.params = json.value("params", nlohmann::json::object());
  const TransformInfo* info = find_transform(step.name);
  if (!info) {
    std::vector<std::string> names;
    for (const auto& ti : transform_catalog()) names.push_back(ti.name);
    c.add(p + "/name", fmt::format("unknown transform '{}'{}", step.name, did_you_mean(step.name, names)));
    return std::nullopt;
  }
  for (const auto& param : info->params)
    if (param.required && !step.params.contains(param.name))
      c.add(p + "/params", fmt::format("transform '{}' needs parameter '{}'", step.name, param.name));
  for (const auto& item : step.params.items()) {
    const std::string& key = item.key();
    const auto& value = item.value();
    auto it = std::find_if(info->params.begin(), info->params.end(), [&](const TransformParam& tp) { return tp.name == key; });
    if (it == info->params.end()) {
      c.add(p + "/params/" + key, fmt::format("transform '{}' has no parameter '{}'", step.name, key));
      continue;
    }
    check_param(*it, value, x.catalog, x.assumptions, c, p + "/params/" + key, r.assumptions);
  }
  return step;
}

/// The rule's "transform": one step or a list of them.
void parse_transforms(const nlohmann::json& t, const RuleContext& x, Rule& r) {
  std::vector<nlohmann::json> steps;
  if (t.is_array())
    steps.assign(t.begin(), t.end());
  else
    steps.push_back(t);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const std::string p = x.pointer + "/transform" + (t.is_array() ? "/" + std::to_string(i) : "");
    if (auto step = parse_transform_step(steps[i], p, x, r)) r.transform.push_back(std::move(*step));
  }
}

// Training rules read training facts and change training requests; the others, inference ones.
void check_training_split(const RuleContext& x, const Rule& r) {
  const Checker& c = x.c;
  const std::string& pointer = x.pointer;
  const bool training = r.serves(Goal::kTraining);
  if (training && r.goals.size() > 1) c.add(pointer + "/goals", "a rule serves training or the inference goals, not both");
  for (std::size_t i = 0; i < r.transform.size(); ++i) {
    const TransformInfo* info = find_transform(r.transform[i].name);
    if (info && info->training != training)
      c.add(pointer + "/transform", fmt::format("transform '{}' changes {} scenarios; this rule serves {}", info->name,
                                                info->training ? "training" : "inference", training ? "training" : "inference goals"));
  }
  auto check_facts = [&](const std::vector<Condition>& list, const std::string& where) {
    std::function<void(const Condition&, const std::string&)> one = [&](const Condition& cond, const std::string& p) {
      for (std::size_t k = 0; k < cond.any.size(); ++k) one(cond.any[k], p + "/any/" + std::to_string(k));
      if (cond.fact.empty() || !find_fact(cond.fact)) return;
      if (training ? !fact_for_training(cond.fact) : !fact_for_inference(cond.fact))
        c.add(p + "/fact", fmt::format("fact '{}' is not known for {} scenarios", cond.fact, training ? "training" : "inference"));
    };
    for (std::size_t k = 0; k < list.size(); ++k) one(list[k], where + "/" + std::to_string(k));
  };
  check_facts(r.when, pointer + "/when");
  check_facts(r.requires_, pointer + "/requires");
  check_facts(r.after, pointer + "/after");
}

/// "not_quantified" (why a rule's effect is not computed) and the load comparison shown instead.
void parse_unquantified(const nlohmann::json& j, const RuleContext& x, Rule& r) {
  const Checker& c = x.c;
  const std::string& pointer = x.pointer;
  r.not_quantified = j.value("not_quantified", "");
  if (r.transform.empty() == r.not_quantified.empty() && !j.contains("transform"))
    c.add(pointer, "a rule needs a 'transform', or 'not_quantified' saying why its effect is not computed");
  if (j.contains("transform") && !r.not_quantified.empty()) c.add(pointer, "a rule has a 'transform' or 'not_quantified', not both");
  r.under_load = j.value("under_load", "");
  if (!r.under_load.empty() && r.not_quantified.empty())
    c.add(pointer + "/under_load", "'under_load' goes with 'not_quantified': a computed rule shows its effect itself");
  if (!r.under_load.empty() && !is_load_comparison(r.under_load))
    c.add(pointer + "/under_load", fmt::format("no load comparison '{}' (known: {})", r.under_load, load_comparison_names()));
}

void parse_how_map(const nlohmann::json& j, const char* key, const RuleContext& x, std::map<std::string, std::string>& how) {
  for (const auto& [engine, text] : j.at(key).items()) {
    const std::string at = x.pointer + "/" + key + "/" + engine;
    // listed_engine last: it reads every device profile, which a normal run never needs.
    if (engine != "*" && !known_engine(x.catalog, engine) && !training_framework(x.catalog, engine) && !listed_engine(x.catalog, engine))
      x.c.add(at, fmt::format("unknown engine '{}' (use an engine id or \"*\")", engine));
    how[engine] = text.get<std::string>();
    check_template(how[engine], x.assumptions, x.c, at);
  }
}

void parse_how(const nlohmann::json& j, const RuleContext& x, Rule& r) {
  parse_how_map(j, "how", x, r.how);
  if (j.contains("how_official")) {
    if (std::none_of(r.transform.begin(), r.transform.end(), [](const TransformStep& t) { return t.name == "quantize_weights"; }))
      x.c.add(x.pointer + "/how_official", "'how_official' goes with the transform quantize_weights, the one that takes official checkpoints");
    parse_how_map(j, "how_official", x, r.how_official);
  }
}

void parse_rule(const nlohmann::json& j, const Catalog& catalog, const std::map<std::string, Assumption>& assumptions, const Checker& c,
                const std::string& pointer, Rule& r) {
  const RuleContext x{catalog, assumptions, c, pointer};
  r.id = j.at("id").get<std::string>();
  r.title = j.at("title").get<std::string>();
  r.summary = j.value("summary", "");
  parse_goals(j, x, r);
  parse_conditions(j, x, r);
  if (j.contains("transform")) parse_transforms(j.at("transform"), x, r);
  check_training_split(x, r);
  parse_unquantified(j, x, r);
  r.effort = j.at("effort").get<std::string>();
  r.quality = j.value("quality", "");
  if (r.quality_class() < 0)
    c.add(pointer + "/quality", fmt::format("quality '{}' is not one of lossless, near-lossless, lossy, different-model, different-run", r.quality));
  r.risk_level = j.at("risk").at("level").get<std::string>();
  r.risk = j.at("risk").at("text").get<std::string>();
  parse_how(j, x, r);
  r.sources = j.at("sources");
  r.effects = j.value("effects", std::vector<std::string>{});
  for (const auto& id : j.value("assumptions", std::vector<std::string>{})) {
    if (!assumptions.count(id))
      c.add(pointer + "/assumptions", fmt::format("unknown assumption '{}'", id));
    else if (std::find(r.assumptions.begin(), r.assumptions.end(), id) == r.assumptions.end())
      r.assumptions.push_back(id);
  }
  check_template(r.title, assumptions, c, pointer + "/title");
  check_template(r.risk, assumptions, c, pointer + "/risk/text");
}

void parse_assumption(const nlohmann::json& j, const Checker& c, const std::string& pointer, Assumption& a) {
  a.id = j.at("id").get<std::string>();
  a.value = j.at("value").get<double>();
  a.min = j.at("min").get<double>();
  a.max = j.at("max").get<double>();
  a.unit = j.value("unit", "");
  a.description = j.at("description").get<std::string>();
  a.derivation = j.value("derivation", "");
  a.effects = j.value("effects", std::vector<std::string>{});
  a.sources = j.at("sources");
  if (!(a.min <= a.value && a.value <= a.max))
    c.add(pointer + "/value", fmt::format("{} is outside [min, max] = [{}, {}]", a.value, a.min, a.max));
}

bool is_embedded(const std::string& display) {
  if (display.rfind("data/", 0) != 0) return false;
  const std::string path = display.substr(5);
  const auto& files = embedded_files();
  return std::any_of(files.begin(), files.end(), [&](const EmbeddedFile& f) { return f.path == path; });
}

}  // namespace

RuleBook RuleBook::parse(const std::vector<std::pair<std::string, nlohmann::json>>& documents, const Catalog& catalog,
                         std::vector<Problem>& problems) {
  RuleBook book;
  // Assumptions first: rules refer to them.
  std::map<std::string, std::string> assumption_origin;
  for (const auto& [file, doc] : documents) {
    const Checker c{file, problems};
    if (!doc.contains("assumptions")) continue;
    const auto& list = doc.at("assumptions");
    for (std::size_t i = 0; i < list.size(); ++i) {
      Assumption a;
      const std::string p = "/assumptions/" + std::to_string(i);
      parse_assumption(list[i], c, p, a);
      a.origin = file;
      auto it = assumption_origin.find(a.id);
      if (it != assumption_origin.end() && (is_embedded(file) || !is_embedded(it->second)))
        c.add(p + "/id", fmt::format("duplicate assumption '{}' (also defined in {})", a.id, it->second));
      assumption_origin[a.id] = file;
      book.assumptions_[a.id] = std::move(a);
    }
  }
  std::map<std::string, std::string> rule_origin;
  for (const auto& [file, doc] : documents) {
    const Checker c{file, problems};
    if (doc.contains("defaults")) {
      const auto& d = doc.at("defaults");
      if (d.contains("models"))
        for (const auto& [cls, model] : d.at("models").items()) {
          if (!device_class_from_string(cls)) c.add("/defaults/models/" + cls, fmt::format("unknown device class '{}'", cls));
          if (!catalog.find_model(model.get<std::string>()))
            c.add("/defaults/models/" + cls, fmt::format("unknown model '{}'", model.get<std::string>()));
          book.defaults_.models[cls] = model.get<std::string>();
        }
      if (d.contains("workloads"))
        for (const auto& [goal, w] : d.at("workloads").items()) {
          if (!goal_from_string(goal)) c.add("/defaults/workloads/" + goal, fmt::format("unknown goal '{}'", goal));
          book.defaults_.workloads[goal] = w;
        }
      book.defaults_.plan_steps = d.value("plan_steps", book.defaults_.plan_steps);
      book.defaults_.min_gain = d.value("min_gain", book.defaults_.min_gain);
    }
    if (!doc.contains("rules")) continue;
    const auto& list = doc.at("rules");
    for (std::size_t i = 0; i < list.size(); ++i) {
      Rule r;
      const std::string p = "/rules/" + std::to_string(i);
      parse_rule(list[i], catalog, book.assumptions_, c, p, r);
      r.origin = file;
      r.pointer = p;
      auto it = rule_origin.find(r.id);
      if (it != rule_origin.end()) {
        if (is_embedded(file) || !is_embedded(it->second)) {
          c.add(p + "/id", fmt::format("duplicate rule id '{}' (also defined in {})", r.id, it->second));
          continue;
        }
        // An overlay replaces a shipped rule with the same id.
        auto old = std::find_if(book.rules_.begin(), book.rules_.end(), [&](const Rule& x) { return x.id == r.id; });
        *old = std::move(r);
        rule_origin[old->id] = file;
        continue;
      }
      rule_origin[r.id] = file;
      book.rules_.push_back(std::move(r));
    }
  }
  return book;
}

RuleBook RuleBook::load(const Catalog& catalog) {
  std::vector<Problem> problems;
  RuleBook book = parse(catalog.rule_documents(), catalog, problems);
  if (!problems.empty()) {
    std::string hint = problems.size() > 1
                           ? fmt::format("{} more problem(s); run 'optadvisor validate-data' to see all", problems.size() - 1)
                           : "run 'optadvisor validate-data' to check the rule files";
    throw bad_input(to_string(problems.front()), hint);
  }
  return book;
}

std::pair<std::string, double> parse_assumption_override(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw bad_input(fmt::format("--assume '{}' is not NAME=VALUE", text), "e.g. --assume spec_accept_eagle=3.5 (optadvisor rules list)");
  const std::string name = text.substr(0, eq);
  const std::string number = text.substr(eq + 1);
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != number.size() || !std::isfinite(v)) throw bad_input(fmt::format("--assume {}: '{}' is not a number", name, number));
  return {name, v};
}

void check_assumption_overrides(const RuleBook& book, const std::map<std::string, double>& overrides) {
  for (const auto& [id, value] : overrides) {
    auto it = book.assumptions().find(id);
    if (it == book.assumptions().end()) {
      std::vector<std::string> ids;
      for (const auto& [k, a] : book.assumptions()) ids.push_back(k);
      const auto close = closest_names(id, ids, 1);
      throw bad_input(fmt::format("unknown assumption '{}'", id),
                      close.empty() ? "the assumptions are listed by 'optadvisor rules list'"
                                    : fmt::format("did you mean '{}'? (optadvisor rules list)", close[0]));
    }
    const Assumption& a = it->second;
    if (value < a.min || value > a.max)
      throw bad_input(fmt::format("--assume {}={} is outside the allowed range [{}, {}]", id, value, a.min, a.max),
                      fmt::format("{} ({})", a.description, a.unit));
  }
}

}  // namespace optadvisor
