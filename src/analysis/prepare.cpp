// SPDX-License-Identifier: MIT
#include "optadvisor/analysis/prepare.hpp"

#include <algorithm>
#include <cctype>
#include <memory>

#include <fmt/format.h>

#include "base/units.hpp"
#include "base/strings.hpp"

namespace optadvisor {
namespace {

// --weights-size: a file of this model in a mix of types near the named format's size; beyond these
// bounds it is another model or format (a typo in the unit, a shard's size instead of the file's).
constexpr double kWeightsSizeRatioMin = 0.5;
constexpr double kWeightsSizeRatioMax = 2.0;
constexpr double kMaxWeightsSizeBytes = 1e14;  // 100 TB: bounds the input before it is used
constexpr int64_t kMaxGpuLayers = 100000;        // -ngl 999 is common for "all"; bounds the input

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

/// Inference engines the device lists, as "engine" or "engine:backend".
std::vector<std::string> inference_engines_on(const Catalog& catalog, const HardwareProfile& hw) {
  std::vector<std::string> out;
  for (const auto& e : hw.engines) {
    const std::string base = e.substr(0, e.find(':'));
    for (const auto& profile : catalog.engines())
      if (profile.id == base && profile.kind == "inference") out.push_back(e);
  }
  return out;
}

int64_t positive(int64_t value, const char* option, int64_t min = 1) {
  if (value < min) {
    throw bad_input(fmt::format("{} must be {} (got {})", option, min == 0 ? "zero or more" : "at least " + std::to_string(min), value));
  }
  return value;
}

/// "48, 64 or 128 GB", "384, 768 or 1536 GiB".
std::string sizes_sold(const HardwareProfile& hw) {
  std::vector<double> sizes;
  for (const auto& o : hw.memory_options) sizes.push_back(o.capacity_bytes);
  return format_memory_sizes(sizes);
}

bool names_nvlink(const std::string& kind) {
  std::string lower;
  for (char c : kind) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("nvlink") != std::string::npos;
}

/// --host: the CPU whose memory holds the layers that do not fit; its peak bandwidth x the
/// engine's host efficiency replaces the engine's default (--host-bandwidth still overrides it).
void apply_host(const Catalog& catalog, const HardwareProfile& hw, const EngineProfile& engine, const ScenarioRequest& r, Workload& w,
                std::vector<std::string>& notes) {
  const HardwareProfile& host = catalog.resolve_hardware(r.host);
  if (host.device_class != DeviceClass::kCpu)
    throw bad_input(fmt::format("--host '{}' is a {} profile, not a CPU", r.host, to_string(host.device_class)),
                    "CPU profiles: optadvisor hw list --class cpu");
  if (!engine.offloads_to_host || hw.unified_memory) {
    notes.push_back(fmt::format("--host {}: {} keeps no layers in host memory on {}; the host is not used", host.id, engine.name, hw.id));
    return;
  }
  w.host_id = host.id;
  if (r.host_bandwidth_bytes_per_s) {
    notes.push_back(fmt::format("host {}: --host-bandwidth {:.1f} GB/s replaces its memory bandwidth for offloaded layers", host.id,
                                *r.host_bandwidth_bytes_per_s / 1e9));
    return;
  }
  w.host_bandwidth_bytes_per_s = host.memory_bandwidth_bytes_per_s * engine.host_bandwidth_efficiency;
  notes.push_back(fmt::format("host {}: offloaded layers read at {:.1f} GB/s x {} ({} host efficiency) = {:.1f} GB/s", host.id,
                              host.memory_bandwidth_bytes_per_s / 1e9, engine.host_bandwidth_efficiency, engine.name,
                              *w.host_bandwidth_bytes_per_s / 1e9));
}

/// The host CPU's achievable matrix rate for the weights it multiplies (offloaded layers' and
/// --n-cpu-moe experts' decode steps): the --host CPU's peak of the CPU backend's compute dtype,
/// else the engine's default host, times the CPU backend's prefill_compute_efficiency.
struct HostCompute {
  double flops_per_s = 0;
  double peak_flops_per_s = 0;
  double efficiency = 1.0;
  std::string dtype;  ///< "" when the engine has no CPU backend
  std::string from;   ///< "host epyc-9654" or "llama.cpp's default host"
};

HostCompute host_compute_for(const Catalog& catalog, const EngineProfile& engine, const std::string& host_id) {
  HostCompute out;
  const auto cpu = engine.backends.find("cpu");
  out.efficiency = cpu == engine.backends.end() ? 1.0 : cpu->second.prefill_compute_efficiency;
  out.dtype = cpu == engine.backends.end() ? std::string() : cpu->second.quantized_compute_dtype;
  if (out.dtype.rfind("cpu:", 0) == 0) out.dtype = out.dtype.substr(4);
  out.peak_flops_per_s = engine.host_compute_flops_per_s;
  out.from = fmt::format("{}'s default host", engine.name);
  if (!host_id.empty()) {
    const HardwareProfile& host = catalog.resolve_hardware(host_id);
    const auto it = host.cpu_flops_per_s.find(out.dtype);
    if (it != host.cpu_flops_per_s.end() && it->second > 0) out.peak_flops_per_s = it->second, out.from = "host " + host.id;
  }
  out.flops_per_s = out.peak_flops_per_s * out.efficiency;
  return out;
}

/// --n-cpu-moe N / --cpu-moe: the routed experts of the first N (all) layers stay in host memory
/// and the engine runs them on the host CPU (llama.cpp) at the host compute set before; the
/// bandwidth is the host bandwidth set before.
void set_expert_offload(const Catalog& catalog, const HardwareProfile& hw, const EngineProfile& engine, const ModelSpec& m,
                        const WeightsSummary& weights, const ScenarioRequest& r, Workload& w, std::vector<std::string>& notes) {
  if (!r.n_cpu_moe && !r.cpu_moe) return;
  const char* option = r.cpu_moe ? "--cpu-moe" : "--n-cpu-moe";
  if (r.n_cpu_moe && r.cpu_moe) throw bad_input("--n-cpu-moe and --cpu-moe are exclusive", "--cpu-moe is --n-cpu-moe with every layer");
  if (!engine.offloads_to_host || hw.unified_memory)
    throw bad_input(fmt::format("{}: {} keeps no experts in host memory on {}", option, engine.name, hw.id),
                    hw.unified_memory ? "the device's memory is the host's: leave the option out"
                                      : "engines that keep experts in host memory: --engine llama.cpp");
  if (m.num_experts == 0 || weights.routed_expert_bytes <= 0)
    throw bad_input(fmt::format("{}: {} has no routed experts to keep in host memory", option, m.name));
  if (r.n_cpu_moe && (*r.n_cpu_moe < 1 || static_cast<uint64_t>(*r.n_cpu_moe) > m.num_hidden_layers))
    throw bad_input(fmt::format("--n-cpu-moe {} is outside 1..{} ({}'s layers)", *r.n_cpu_moe, m.num_hidden_layers, m.name));
  if (w.gpus > 1) throw bad_input(fmt::format("{} is modelled on one GPU; leave out --tp, --pp and --dp-attention", option));
  w.cpu_moe_layers = r.cpu_moe ? static_cast<uint32_t>(m.num_hidden_layers) : static_cast<uint32_t>(*r.n_cpu_moe);
  const HostCompute host = host_compute_for(catalog, engine, w.host_id);
  notes.push_back(fmt::format("{}: the routed experts of {} layers stay in host memory and run on the host CPU at {:.1f} TOP/s {} peak "
                              "({}) x {} (CPU backend efficiency) = {:.1f} TOP/s, read at {:.1f} GB/s",
                              option, w.cpu_moe_layers, host.peak_flops_per_s / 1e12, host.dtype.empty() ? "matrix" : host.dtype, host.from,
                              host.efficiency, host.flops_per_s / 1e12, w.host_bandwidth_bytes_per_s.value_or(0) / 1e9));
}

/// --n-gpu-layers N (llama.cpp -ngl): the engine keeps the last N repeating layers on the GPU and
/// the others in host memory, where the host CPU runs them; N above the layer count is every layer
/// and the output layer (llama.cpp's -ngl 99).
void set_gpu_layers(const HardwareProfile& hw, const EngineProfile& engine, const ModelSpec& m, const ScenarioRequest& r, Workload& w,
                    std::vector<std::string>& notes) {
  if (!r.n_gpu_layers) return;
  const int64_t n = *r.n_gpu_layers;
  if (n < 0 || n > kMaxGpuLayers)
    throw bad_input(fmt::format("--n-gpu-layers {} is outside 0..{}", n, kMaxGpuLayers),
                    fmt::format("{} has {} layers; {} or more puts every layer and the output layer on the GPU", m.name, m.num_hidden_layers,
                                m.num_hidden_layers + 1));
  if (!engine.offloads_to_host || hw.unified_memory)
    throw bad_input(fmt::format("--n-gpu-layers: {} keeps no layers in host memory on {}", engine.name, hw.id),
                    hw.unified_memory ? "the device's memory is the host's: leave the option out"
                                      : "engines that keep layers in host memory: --engine llama.cpp");
  if (w.gpus > 1) throw bad_input("--n-gpu-layers is modelled on one GPU; leave out --tp, --pp and --dp-attention");
  w.gpu_layers = static_cast<uint32_t>(std::min<int64_t>(n, static_cast<int64_t>(m.num_hidden_layers) + 1));
  if (*w.gpu_layers <= m.num_hidden_layers)
    notes.push_back(fmt::format("--n-gpu-layers {}: {} of {} layers on the GPU; the other {} and the output layer in host memory, run on "
                                "the host CPU for decode",
                                n, *w.gpu_layers, m.num_hidden_layers, m.num_hidden_layers - *w.gpu_layers));
}

bool engine_takes(const EngineProfile& engine, const QuantFormat& f) {
  if (f.container == Container::kGguf) return std::find(engine.quants.begin(), engine.quants.end(), "*gguf") != engine.quants.end();
  return std::find(engine.quants.begin(), engine.quants.end(), f.id) != engine.quants.end();
}

/// Nominal bits per quantized weight of a format's default storage (ordering hints only).
double nominal_bits(const QuantDb& db, const QuantFormat& f) {
  if (const GgmlType* t = db.ggml_type(f.default_storage)) return t->bits_per_weight();
  if (const StorageLayout* l = db.layout(f.default_storage)) {
    const double group = static_cast<double>(l->group_elements) * std::max<uint32_t>(l->block_rows, 1);
    return l->weight_bits + (group > 0 ? l->group_bits / group : 0.0);
  }
  return 16;
}

}  // namespace

const QuantFormat* engine_format(const Catalog& catalog, const EngineProfile& engine, const QuantFormat& format) {
  if (engine_takes(engine, format)) return &format;
  // "bf16" means the checkpoint, not a GGUF, for engines that load checkpoints.
  if (const QuantFormat* hf = catalog.quant().find("hf-" + format.id); hf && engine_takes(engine, *hf)) return hf;
  for (const auto& id : format.equivalents)
    if (const QuantFormat* e = catalog.quant().find(id); e && engine_takes(engine, *e)) return e;
  return nullptr;
}

const QuantFormat* native_default_format(const Catalog& catalog, const ModelSpec& model, const EngineProfile& engine,
                                         const HardwareProfile& hw) {
  if (model.native_format.empty()) return nullptr;
  const QuantFormat* native = catalog.quant().find(model.native_format);
  if (!native) return nullptr;
  const QuantFormat* runs = engine_format(catalog, engine, *native);
  return runs && runs_checkpoint(*runs, hw.capabilities, model) ? runs : nullptr;
}

std::vector<std::string> formats_to_suggest(const Catalog& catalog, const EngineProfile& engine, const ModelSpec& model,
                                            const HardwareProfile& hw, const QuantFormat& requested, std::size_t limit) {
  std::vector<const QuantFormat*> rest;
  for (const auto& f : catalog.quant().formats())
    if (engine_takes(engine, f)) rest.push_back(&f);
  const double wanted = nominal_bits(catalog.quant(), requested);
  std::stable_sort(rest.begin(), rest.end(), [&](const QuantFormat* a, const QuantFormat* b) {
    return std::abs(nominal_bits(catalog.quant(), *a) - wanted) < std::abs(nominal_bits(catalog.quant(), *b) - wanted);
  });
  std::vector<std::string> out;
  auto add = [&](const QuantFormat* f) {
    if (f && std::find(out.begin(), out.end(), f->id) == out.end()) out.push_back(f->id);
  };
  add(native_default_format(catalog, model, engine, hw));
  add(catalog.quant().find(engine.default_quant));
  for (const QuantFormat* f : rest) add(f);
  if (out.size() > limit) out.resize(limit), out.push_back("...");
  return out;
}

std::shared_ptr<const HardwareProfile> device_as_requested(const HardwareProfile& hw, const ScenarioRequest& r,
                                                           std::vector<std::string>& notes) {
  std::optional<HardwareProfile> out;
  if (!r.memory.empty()) {
    const auto bytes = parse_bytes(r.memory);
    if (!bytes) throw bad_input(fmt::format("--memory '{}' is not a memory size", r.memory), "e.g. 64GB, 64GiB or 0.5TB");
    if (hw.memory_options.empty()) {
      // A part sold in one size: naming that size is fine, any other needs an overlay profile.
      if (!hw.is_own_memory_size(*bytes))
        throw bad_input(fmt::format("--memory {}: {} is sold with {} only", r.memory, hw.id, format_memory_size(hw.memory_capacity_bytes)),
                        "for another part, write an overlay profile that extends this one (docs/data.md)");
      notes.push_back(fmt::format("memory: {} (--memory; {} is sold with that size only)", format_memory_size(hw.memory_capacity_bytes), hw.id));
    } else {
      const MemoryOption* option = hw.memory_option(*bytes);
      if (!option)
        throw bad_input(fmt::format("--memory {}: {} is sold with {}", r.memory, hw.id, sizes_sold(hw)), "pick one of those sizes");
      out = with_memory_option(hw, *option);
      notes.push_back(
          fmt::format("memory: {} (--memory; {} is sold with {})", format_memory_size(option->capacity_bytes), hw.id, sizes_sold(hw)));
    }
  } else if (!hw.memory_options.empty()) {
    notes.push_back(
        fmt::format("memory: {} ({} is sold with {}; give yours with --memory)", format_memory_size(hw.memory_capacity_bytes), hw.id, sizes_sold(hw)));
  }
  const bool several = r.gpus > 1 || r.tp > 1 || r.pp > 1;  // tp x pp > 1, without the product (checked later)
  if (r.link == "pcie") {
    if (!hw.pcie) throw bad_input(fmt::format("--link pcie: {} has no PCIe link in its profile", hw.id));
    if (!out) out = hw;
    out->scale_up.reset();
  } else if (r.link == "nvlink") {
    if (!hw.scale_up || !names_nvlink(hw.scale_up->kind))
      throw bad_input(fmt::format("--link nvlink: {} has no NVLink connector", hw.id),
                      hw.pcie ? "its GPUs talk over " + hw.pcie->kind : std::string("see optadvisor hw show ") + hw.id);
    if (!out) out = hw;
    out->scale_up->accessory = false;
    if (several && hw.scale_up->accessory)
      notes.push_back(fmt::format("link: {} (--link nvlink: the bridge, sold separately, is fitted)", hw.scale_up->kind));
  } else if (!r.link.empty()) {
    throw bad_input(fmt::format("--link '{}' is not pcie or nvlink", r.link));
  } else if (several && hw.scale_up && hw.scale_up->accessory && hw.pcie) {
    notes.push_back(fmt::format("link: {} (the {} is sold separately; --link nvlink if yours has it)", hw.pcie->kind, hw.scale_up->kind));
  }
  if (!out) return nullptr;
  return std::make_shared<const HardwareProfile>(std::move(*out));
}

namespace {

/// The version after '@' in --engine (split_engine_version checked its characters): a build number
/// for a backend with earlier builds ("b3216"), else a dotted version (what `serve` reads as an era).
void choose_version(const std::string& requested, const std::string& version, EngineChoice& choice) {
  choice.version = version;
  if (choice.backend->earlier_builds.empty()) return;
  const auto build = parse_build_number(version);
  if (!build)
    throw bad_input(fmt::format("--engine '{}': expected a build number such as b3216 after '@'", requested),
                    "llama-bench and llama-cli --version print it: build: 8cf427ff (5163)");
  choice.build = choice.backend->build_for(*build);
}

}  // namespace

EngineChoice choose_engine(const Catalog& catalog, const HardwareProfile& hw, const std::string& requested_with_version) {
  const auto available = inference_engines_on(catalog, hw);
  EngineChoice choice;
  const auto [requested, version] = split_engine_version(requested_with_version);
  std::string wanted = requested;
  if (wanted.empty()) {
    for (const auto& e : catalog.engines()) {
      if (std::find(e.default_for_classes.begin(), e.default_for_classes.end(), std::string(to_string(hw.device_class))) ==
          e.default_for_classes.end())
        continue;
      for (const auto& a : available)
        if (a == e.id || starts_with(a, e.id + ":")) wanted = e.id;
      if (!wanted.empty()) break;
    }
    if (wanted.empty() && !available.empty()) wanted = available.front();
    if (wanted.empty()) throw bad_input(fmt::format("no inference engine is known to run on {}", hw.id));
    choice.defaulted = true;
  }
  const EngineProfile& engine = catalog.resolve_engine(wanted);
  if (engine.kind != "inference")
    throw bad_input(fmt::format("engine '{}' is a training framework", wanted), "inference engines on " + hw.id + ": " + join(available));
  choice.engine = &engine;
  const auto colon = wanted.find(':');
  std::string backend = colon == std::string::npos ? std::string{} : wanted.substr(colon + 1);
  // The device's own list says which backends run there.
  std::vector<std::string> device_backends;
  bool runs = false;
  for (const auto& a : available) {
    if (a == engine.id) runs = true;
    if (starts_with(a, engine.id + ":")) {
      runs = true;
      device_backends.push_back(a.substr(engine.id.size() + 1));
    }
  }
  if (!runs) throw bad_input(fmt::format("engine '{}' does not run on {}", wanted, hw.id), "engines that do: " + join(available));
  if (backend.empty()) {
    if (!device_backends.empty()) backend = device_backends.front();
  } else if (std::find(device_backends.begin(), device_backends.end(), backend) == device_backends.end()) {
    throw bad_input(fmt::format("engine '{}' does not run on {}", wanted, hw.id), "engines that do: " + join(available));
  }
  auto it = backend.empty() ? engine.backends.end() : engine.backends.find(backend);
  if (it == engine.backends.end()) {
    // Engines with one backend name it after the platform ("metal", "npu"); take it.
    it = engine.backends.find("default");
    if (it == engine.backends.end()) it = engine.backends.begin();
  }
  choice.backend = &it->second;
  if (!version.empty()) choose_version(requested_with_version, version, choice);
  return choice;
}

WeightsBreakdown model_weights(const Catalog& catalog, const ResolvedModel& model, const QuantFormat& format) {
  if (model.gguf_weights && (format.id == model.gguf_quant_id || model.gguf_quant_id.empty())) return *model.gguf_weights;
  return quantize(model_tensors(model.spec), quant_facts(model.spec), format, catalog.quant());
}

WeightsBreakdown scaled_to_total(WeightsBreakdown weights, double total_bytes, const std::string& what) {
  const double table_bytes = static_cast<double>(weights.weights_bytes);
  const double ratio = table_bytes > 0 ? total_bytes / table_bytes : 0.0;
  if (!(ratio >= kWeightsSizeRatioMin && ratio <= kWeightsSizeRatioMax))
    throw bad_input(fmt::format("{} is {:.2f}x the {} weights of this model ({}): not a file of this model in that format", what, ratio,
                                weights.format_id, format_bytes(table_bytes)),
                    "give the size llama-bench prints in its size column, or pick the --quant the file was made with");
  uint64_t sum = 0;
  for (auto& t : weights.tensors) {
    t.bytes = static_cast<uint64_t>(std::llround(static_cast<double>(t.bytes) * ratio));
    sum += t.bytes;
  }
  weights.groups = group_totals(weights.tensors);
  weights.file_bytes = weights.file_bytes - weights.weights_bytes + sum;
  weights.weights_bytes = sum;
  weights.bits_per_weight = weights.params ? 8.0 * static_cast<double>(sum) / static_cast<double>(weights.params) : 0.0;
  weights.notes.push_back(fmt::format("{}: every tensor's bytes scaled by {:.3f} from the {} table", what, ratio, weights.format_id));
  return weights;
}

WeightsSummary summarize_weights(const ModelSpec& spec, const WeightsBreakdown& weights) {
  return summarize_weights(spec, weights, parameter_counts(spec));
}

WeightsSummary summarize_weights(const ModelSpec& spec, const WeightsBreakdown& weights, const ParameterCounts& preset) {
  WeightsSummary s;
  s.quant_id = weights.format_id;
  s.total_bytes = static_cast<double>(weights.weights_bytes);
  s.params = static_cast<double>(weights.params);
  s.bits_per_weight = weights.bits_per_weight;
  s.tied_embeddings = spec.tie_word_embeddings;
  double unquantized_bytes = 0, quantized_expert_bytes = 0, quantized_other_bytes = 0;
  for (const auto& t : weights.tensors) {
    const bool expert_stack = t.kind.size() > 5 && t.kind.ends_with("_exps");
    if (iequals(t.storage, "f16") || iequals(t.storage, "bf16") || iequals(t.storage, "f32"))
      unquantized_bytes += static_cast<double>(t.bytes);
    else
      (expert_stack ? quantized_expert_bytes : quantized_other_bytes) += static_cast<double>(t.bytes);
    if (t.kind == "token_embd") s.token_embedding_bytes += static_cast<double>(t.bytes);
    // The output layer is token_embd itself when tied; an untied token_embd is only looked up.
    if (t.kind == "output" || (t.kind == "token_embd" && spec.tie_word_embeddings)) {
      s.output_head_params += static_cast<double>(t.elements);
      s.output_head_bytes += static_cast<double>(t.bytes);
    }
    else if (t.kind == "token_embd")
      s.embedding_lookup_params += static_cast<double>(t.elements);
    if (is_lookup_table(t.kind)) s.lookup_table_bytes += static_cast<double>(t.bytes);
    if (expert_stack) s.routed_expert_bytes += static_cast<double>(t.bytes);
  }
  s.quantized = unquantized_bytes < 0.5 * s.total_bytes;
  s.experts_only_quantized = quantized_expert_bytes > 0 && quantized_other_bytes == 0;
  // Active parameters scale with the tensors actually stored (a GGUF may differ from the preset).
  const double preset_total = static_cast<double>(preset.total);
  const double preset_active = static_cast<double>(preset.active);
  s.active_params = preset_total > 0 ? s.params * preset_active / preset_total : s.params;
  if (spec.num_experts > 0 && spec.num_experts_per_tok > 0 && s.routed_expert_bytes > 0) {
    // params = dense + routed, active = dense + routed x k/E.
    const double pick = static_cast<double>(spec.num_experts_per_tok) / static_cast<double>(spec.num_experts);
    s.routed_active_params = (s.params - s.active_params) / std::max(1.0 - pick, 1e-9) * pick;
  }
  s.per_layer_bytes = spec.num_hidden_layers ? s.total_bytes / static_cast<double>(spec.num_hidden_layers) : s.total_bytes;
  if (weights.native_compute) {
    s.native_compute_dtype = weights.native_compute->dtype;
    s.native_capability = weights.native_compute->capability;
  }
  return s;
}

void check_layout(const ModelSpec& model, const HardwareProfile& hw, const EngineProfile& engine, const Workload& w) {
  if (w.tp < 1 || w.pp < 1) throw Error(ExitCode::kRuntime, "internal: a parallel layout with tp or pp 0");
  const uint32_t layout_gpus = w.tp * w.pp * w.dp_attention;
  if (layout_gpus != w.gpus)
    throw bad_input(w.dp_attention > 1 ? fmt::format("--tp {} x --pp {} x --dp-attention {} = {} does not match --gpus {}", w.tp, w.pp,
                                                     w.dp_attention, layout_gpus, w.gpus)
                                       : fmt::format("--tp {} x --pp {} = {} does not match --gpus {}", w.tp, w.pp, layout_gpus, w.gpus),
                    "every GPU holds one tensor-parallel shard of one pipeline stage (of one attention rank)");
  if (model.num_attention_heads % w.tp != 0)
    throw bad_input(fmt::format("--tp {} does not divide the model's {} attention heads", w.tp, model.num_attention_heads),
                    "use a tensor-parallel degree that divides the head count");
  // Engines split KV heads over tp ranks, or replicate them when tp is a multiple of their count;
  // that holds for each layer kind's count (Gemma 4's full layers have their own).
  for (const uint64_t kv_heads : {model.num_key_value_heads, model.num_global_key_value_heads})
    if (model.kv_lora_rank == 0 && kv_heads > 0 && kv_heads % w.tp != 0 && w.tp % kv_heads != 0)
      throw bad_input(fmt::format("--tp {} neither divides the model's {} key-value heads nor is a multiple of them", w.tp, kv_heads),
                      "engines shard KV heads over tensor-parallel ranks (or replicate them); pick a tp that divides the count");
  check_expert_layout(model, &engine, w.expert_layout(), "");
  if (w.pp > model.num_hidden_layers) throw bad_input(fmt::format("--pp {} exceeds the model's {} layers", w.pp, model.num_hidden_layers));
  if (w.gpus > 1 && hw.unified_memory && hw.device_class != DeviceClass::kWorkstationGpu)
    throw bad_input(fmt::format("{} is a single-chip device; multi-GPU options do not apply", hw.id));
  if (w.gpus > 1 && engine.multi_device == MultiDevice::kNone)
    throw bad_input(fmt::format("engine '{}' runs on one device; multi-GPU options do not apply", engine.id));
  if (w.tp > 1 && engine.multi_device == MultiDevice::kLayers)
    throw bad_input(fmt::format("{} splits layers across GPUs; use --pp N{} instead of --tp", engine.name,
                                engine.multi_device_setting.empty() ? "" : " (its default " + engine.multi_device_setting + ")"),
                    "or pick an engine with tensor parallelism: --engine vllm");
}

std::optional<double> host_bandwidth_for(const HardwareProfile& hw, const EngineProfile& engine, const std::optional<double>& requested) {
  if (engine.offloads_to_host && !hw.unified_memory && !requested) return engine.host_bandwidth_bytes_per_s;
  return requested;
}

std::vector<std::string> kv_dtype_notes(const HardwareProfile& hw, const std::string& kv_dtype) {
  std::vector<std::string> out;
  // Only engines that list an fp8 KV cache get here (llama.cpp lists none).
  if (kv_dtype == "fp8" && !hw.capabilities.fp8)
    out.push_back("fp8 KV cache without native FP8: the engine stores fp8 and converts on read");
  return out;
}

PreparedScenario prepare_scenario(const Catalog& catalog, const ScenarioRequest& r) {
  if (r.hardware.empty()) throw bad_input("no hardware given", "pass --hw NAME (optadvisor hw list)");
  catalog.resolve_hardware(r.hardware);  // an unknown device is reported before the model is read
  return prepare_scenario(catalog, r, resolve_model(catalog, r.model));
}

namespace {

/// The workload numbers of a request, checked: batch, tokens, context against the model's
/// maximum, parallel degrees, ubatch. They come first: they are the cheapest to get wrong.
void set_workload_numbers(Workload& w, const ScenarioRequest& r, const ModelSpec& m) {
  const std::string batch = r.batch_or_default();
  const int64_t prompt_tokens = r.prompt_or_default(), gen_tokens = r.gen_or_default(), context_tokens = r.context_or_default();
  if (batch == "max") {
    w.batch_max = true;
  } else {
    std::size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(batch, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != batch.size()) throw bad_input(fmt::format("--batch '{}' is not a number or 'max'", batch));
    w.batch = static_cast<uint64_t>(positive(value, "--batch"));
    if (w.batch > (1u << 20)) throw bad_input(fmt::format("--batch {} is beyond any device (at most 1048576)", w.batch));
  }
  constexpr int64_t kMaxTokens = int64_t{1} << 24;  // 16M tokens: beyond every model's context
  w.prompt_tokens = static_cast<uint64_t>(positive(prompt_tokens, "--prompt", 0));
  w.gen_tokens = static_cast<uint64_t>(positive(gen_tokens, "--gen", 0));
  for (const auto& [value, name] : {std::pair{prompt_tokens, "--prompt"}, {gen_tokens, "--gen"}, {context_tokens, "--context"}})
    if (value > kMaxTokens) throw bad_input(fmt::format("{} {} is above 16,777,216 tokens, beyond any model's context", name, value));
  if (w.prompt_tokens + w.gen_tokens == 0) throw bad_input("--prompt and --gen are both 0: nothing to estimate");
  w.context_tokens = static_cast<uint64_t>(positive(context_tokens, "--context", 0));
  if (w.context_tokens && w.context_tokens < w.prompt_tokens + w.gen_tokens)
    throw bad_input(fmt::format("--context {} is shorter than --prompt + --gen ({})", w.context_tokens, w.prompt_tokens + w.gen_tokens));
  const uint64_t max_context = m.max_position_embeddings;
  if (max_context > 0 && w.context() > max_context)
    throw bad_input(fmt::format("{} {} is beyond {}'s maximum context of {} tokens", w.context_tokens ? "--context" : "--prompt + --gen",
                                w.context(), m.name, max_context),
                    "shorten the context, or use a config.json whose max_position_embeddings allows it");
  w.tp = static_cast<uint32_t>(positive(r.tp, "--tp"));
  w.pp = static_cast<uint32_t>(positive(r.pp, "--pp"));
  w.ep = static_cast<uint32_t>(positive(r.ep, "--ep"));
  w.dp_attention = static_cast<uint32_t>(positive(r.dp_attention, "--dp-attention"));
  if (r.tp > 1024 || r.pp > 1024 || r.gpus > 1024 || r.ep > 1024 || r.dp_attention > 1024)
    throw bad_input("at most 1024 GPUs are modelled");  // before tp x pp x dp-attention
  if (r.tp * r.pp * r.dp_attention > 1024)
    throw bad_input(fmt::format("--tp {} x --pp {} x --dp-attention {} is beyond the 1024 GPUs modelled", r.tp, r.pp, r.dp_attention));
  w.gpus = static_cast<uint32_t>(r.gpus == 0 ? r.tp * r.pp * r.dp_attention : positive(r.gpus, "--gpus"));
  w.replicas = static_cast<uint32_t>(positive(std::min<int64_t>(r.replicas, 1025), "--replicas"));
  if (static_cast<uint64_t>(w.replicas) * w.gpus > 1024)
    throw bad_input(fmt::format("--replicas {} x {} GPU{} each is beyond the 1024 GPUs modelled", r.replicas, w.gpus, w.gpus == 1 ? "" : "s"));
  if (r.host_bandwidth_bytes_per_s && !(*r.host_bandwidth_bytes_per_s > 0))
    throw bad_input("--host-bandwidth must be a positive number of bytes/s");
  w.ubatch_tokens = static_cast<uint64_t>(positive(r.ubatch_tokens, "--ubatch", 0));
  if (r.ubatch_tokens > kMaxTokens) throw bad_input("--ubatch above 16,777,216 tokens is beyond any engine");
}

/// The serving techniques the advisor's transforms switch on, checked (see Workload).
void set_serving_techniques(Workload& w, const ScenarioRequest& r) {
  w.flash_attention = r.flash_attention;
  w.graphs = r.graphs;
  const Speculation& spec = r.speculation;
  if (spec.draft_tokens > 0) {
    if (!(spec.accepted_tokens >= 1.0) || spec.accepted_tokens > static_cast<double>(spec.draft_tokens) + 1.0)
      throw bad_input(fmt::format("speculative decoding accepts between 1 and draft tokens + 1 = {} tokens per step (got {})",
                                  spec.draft_tokens + 1, spec.accepted_tokens));
    if (spec.verify_tokens > 0 && spec.verify_tokens <= spec.draft_tokens)
      throw bad_input(fmt::format("speculative decoding: a tree of {} verified tokens cannot hold {} drafts and the target's own token",
                                  spec.verify_tokens, spec.draft_tokens));
    if (!(spec.draft_overhead >= 0) || !(spec.draft_memory_bytes >= 0))
      throw bad_input("speculative decoding: the draft overhead and draft weights must be zero or more");
  }
  w.speculation = spec;
  if (!(r.prefix_cached_fraction >= 0 && r.prefix_cached_fraction < 1))
    throw bad_input(fmt::format("the cached prefix fraction must be in [0, 1) (got {})", r.prefix_cached_fraction));
  w.prefix_cached_fraction = r.prefix_cached_fraction;
  if (!(r.attention_speedup > 0)) throw bad_input("the attention speed-up must be positive");
  w.attention_kernel = r.attention_kernel;
  w.attention_speedup = r.attention_speedup;
  if (r.usable_memory_fraction && !(*r.usable_memory_fraction > 0 && *r.usable_memory_fraction <= 1))
    throw bad_input(fmt::format("the usable memory fraction must be in (0, 1] (got {})", *r.usable_memory_fraction));
  w.usable_memory_fraction = r.usable_memory_fraction;
  if (r.engine_memory_share && !(*r.engine_memory_share > 0 && *r.engine_memory_share <= 1))
    throw bad_input(fmt::format("--gpu-memory-utilization {} is out of range", *r.engine_memory_share),
                    "give the share of each device's memory, above 0 and at most 1 (leave it out for the engine's default)");
  w.engine_memory_share = r.engine_memory_share;
  w.entitled_memory_limit = r.entitled_memory_limit;
  w.weights_mmap = r.weights_mmap;
}

/// The end of version_note where the backend's figures do not change with the build.
constexpr std::string_view kVersionIndependent = "its figures do not depend on the version";

/// What --engine ENGINE@VERSION changes in an estimate of `model` on `hw`, said in a note.
std::string version_note(const EngineChoice& c, const HardwareProfile& hw, const ModelSpec& model) {
  const BackendProfile& b = *c.backend;
  const DevicePath* path = b.device_path_for(hw.vendor, hw.architecture);
  if (path && !path->earlier_builds.empty()) {
    if (const DevicePath::EarlierBuild* e = path->earlier_build(parse_build_number(c.version)))
      return fmt::format("engine: {} build {} on {}: prefill as builds before b{} ran it; b{}: {}", c.id(), c.version, hw.name, e->until_build,
                         e->until_build, e->change);
    return fmt::format("engine: {} build {} on {}: the newest kernels (b{} and later)", c.id(), c.version, hw.name,
                       path->earlier_builds.back().until_build);
  }
  const bool moe = model.num_experts > 0;
  if (c.build)
    return fmt::format("engine: {} build {}: {} as builds before b{} ran it; b{}: {}", c.id(), c.version, c.build->what_differs(moe),
                       c.build->until_build, c.build->until_build, c.build->change);
  // The newest change that applies to this model (a dense model skips those to MoE prefill alone).
  uint64_t newest = 0;
  for (const BackendBuild& e : b.earlier_builds)
    if (moe || !e.moe_prefill_only()) newest = e.until_build;
  if (newest > 0) return fmt::format("engine: {} build {}: the newest kernels (b{} and later)", c.id(), c.version, newest);
  if (c.engine->serving.enabled())
    return fmt::format("engine: {} {}: estimate uses the same efficiencies for every version; serve applies the version's calibration era",
                       c.id(), c.version);
  return fmt::format("engine: {} {}: {}", c.id(), c.version, kVersionIndependent);
}

/// The notes on what --engine ENGINE@VERSION changes: the version's kernels, and the Gated DeltaNet
/// layers a build before the fused operator runs unfused (which, where it is the only change, the
/// version's own note leaves to it).
void add_version_notes(const Scenario& s, std::vector<std::string>& notes) {
  const uint64_t unfused = unfused_delta_net_layers(s.engine, s.model);
  if (!s.engine.version.empty()) {
    std::string note = version_note(s.engine, *s.hardware, s.model);
    if (unfused == 0 || !note.ends_with(kVersionIndependent)) notes.push_back(std::move(note));
  }
  if (unfused == 0) return;
  const UnfusedDeltaNet& u = *s.engine.engine->unfused_delta_net;
  notes.push_back(fmt::format("engine: {} build {}: its {} Gated DeltaNet layers run unfused, {} more per token each; b{}: {}", s.engine.id(),
                              s.engine.version, unfused, format_seconds(u.layer_overhead_s), u.until_build, u.change));
}

/// Where the weights' format takes its own kernel path on this device, which and why.
void add_format_path_note(const Scenario& s, std::vector<std::string>& notes) {
  const DevicePath* path = s.engine.backend->device_path_for(s.hardware->vendor, s.hardware->architecture);
  const DevicePath::FormatPath* f = path ? path->format_path(s.weights.quant_id) : nullptr;
  if (f)
    notes.push_back(fmt::format("engine: {} on {}: {} weights' GEMMs run at the {} peak: {}", s.engine.id(), s.hardware->name,
                                s.weights.quant_id, f->compute_dtype, f->why));
}

/// Where a MoE model's expert format never takes the backend's mat-vec kernels, so that decode runs
/// the grouped GEMM, which and why.
void add_expert_matvec_note(const Scenario& s, std::vector<std::string>& notes) {
  const auto& excluded = s.engine.backend->expert_matvec_excluded_quants;
  const auto it = excluded.find(s.weights.quant_id);
  if (s.model.num_experts > 0 && it != excluded.end())
    notes.push_back(fmt::format("engine: {}: {} experts take the grouped GEMM even at one token: {}", s.engine.id(), it->first, it->second));
}

/// The weight format when the request names none: the GGUF file's own type, the model's native
/// checkpoint where the engine runs it on the device, else the engine's default; said in a note.
std::string default_quant_id(const Catalog& catalog, const ResolvedModel& model, const EngineProfile& engine, const HardwareProfile& hw,
                             std::vector<std::string>& notes) {
  std::string quant_id;
  const QuantFormat* native = model.gguf_quant_id.empty() ? native_default_format(catalog, model.spec, engine, hw) : nullptr;
  if (!model.gguf_quant_id.empty()) {
    quant_id = model.gguf_quant_id;
    notes.push_back(fmt::format("weights: {} (the GGUF file's type; pick another with --quant)", quant_id));
  } else if (native) {
    quant_id = native->id;
    notes.push_back(fmt::format("weights: {} (the model's native {} checkpoint{}; pick another with --quant)", quant_id,
                                model.spec.native_format,
                                native->id == model.spec.native_format ? "" : " as " + engine.name + " loads it"));
  } else {
    quant_id = engine.default_quant;
    notes.push_back(fmt::format("weights: {} (the engine's default; pick another with --quant)", quant_id));
  }
  return quant_id;
}

}  // namespace

PreparedScenario prepare_scenario(const Catalog& catalog, const ScenarioRequest& r, const ResolvedModel& model) {
  PreparedScenario out;
  Scenario& s = out.scenario;
  if (r.hardware.empty()) throw bad_input("no hardware given", "pass --hw NAME (optadvisor hw list)");
  s.hardware = &catalog.resolve_hardware(r.hardware, &out.hardware_how);
  if (!r.hardware_detected.empty()) out.notes.push_back("hardware: " + r.hardware_detected);
  if ((s.hardware_variant = device_as_requested(*s.hardware, r, out.notes))) s.hardware = s.hardware_variant.get();
  const HardwareProfile& hw = *s.hardware;
  out.model = model;
  s.model = out.model.spec;

  Workload& w = s.workload;
  set_workload_numbers(w, r, s.model);
  set_serving_techniques(w, r);

  // Engine, then the weight format it runs.
  s.engine = choose_engine(catalog, hw, r.engine);
  // A build that differs only in how it multiplies routed experts runs a dense model as the newest do.
  if (s.engine.build && s.model.num_experts == 0 && s.engine.build->moe_prefill_only()) s.engine.build = nullptr;
  const EngineProfile& engine = *s.engine.engine;
  if (s.engine.defaulted)
    out.notes.push_back(
        fmt::format("engine: {} (the default for {}; pick another with --engine)", s.engine.id(), to_string(hw.device_class)));
  add_version_notes(s, out.notes);
  // The user's own measurements of this engine backend on this device replace its efficiency factors.
  if (const Calibration* cal = catalog.find_calibration(hw.id, engine.id, s.engine.backend->name)) {
    s.engine.backend = &cal->backend_profile;
    s.engine.build = nullptr;
    out.calibration = cal;
    out.notes.push_back(fmt::format("calibrated from your measurements: {}, {} runs, {}", cal->source_file, cal->rows, cal->date));
  }
  check_layout(s.model, hw, engine, w);
  if (w.engine_memory_share && !engine.memory.reserve_fraction)
    throw bad_input(fmt::format("--gpu-memory-utilization applies to engines that claim a share of memory up front (vllm, sglang); "
                                "{} does not",
                                engine.id),
                    engine.memory.free_fraction_for_kv ? "it sizes its KV cache from the memory left free after loading"
                                                       : "it takes the memory it needs");

  const std::string quant_id = r.quant.empty() ? default_quant_id(catalog, out.model, engine, hw, out.notes) : r.quant;
  const QuantFormat& requested = catalog.quant().resolve(quant_id);
  const QuantFormat* format = engine_format(catalog, engine, requested);
  if (!format)
    throw bad_input(fmt::format("engine '{}' does not run {} weights", engine.id, requested.id),
                    "it runs: " + join(formats_to_suggest(catalog, engine, s.model, hw, requested, 8)));
  out.quant = format;
  for (auto& note : weight_only_notes(hw, *format)) out.notes.push_back(std::move(note));
  if (auto note = official_checkpoint_note(catalog, out.model, engine, *format)) out.notes.push_back(std::move(*note));
  if (out.model.computed_weights && out.model.computed_weights->format_id == format->id) {
    out.weights = *out.model.computed_weights;
  } else {
    out.weights = model_weights(catalog, out.model, *format);
    out.model.computed_weights = std::make_shared<const WeightsBreakdown>(out.weights);
  }
  if (!r.weights_size.empty()) {
    const auto bytes = parse_bytes(r.weights_size);
    if (!bytes || *bytes > kMaxWeightsSizeBytes)
      throw bad_input(fmt::format("--weights-size '{}' is not a size", r.weights_size), "e.g. 13.40GiB (llama-bench's size column) or 14.4GB");
    out.weights = scaled_to_total(std::move(out.weights), *bytes, fmt::format("--weights-size {}", r.weights_size));
    out.notes.push_back(fmt::format("weights: {} as given by --weights-size, spread over the {} tensor table in proportion",
                                    format_bytes(*bytes), format->id));
  }
  if (!out.model.computed_counts) out.model.computed_counts = std::make_shared<const ParameterCounts>(parameter_counts(out.model.spec));
  s.weights = summarize_weights(s.model, out.weights, *out.model.computed_counts);
  add_format_path_note(s, out.notes);
  add_expert_matvec_note(s, out.notes);

  w.kv_dtype = r.kv_dtype.empty() ? (engine.kv_dtypes.empty() ? std::string("f16") : engine.kv_dtypes.front()) : r.kv_dtype;
  w.kv_bytes_per_element = catalog.quant().kv_bytes_per_element(w.kv_dtype);
  if (std::find(engine.kv_dtypes.begin(), engine.kv_dtypes.end(), w.kv_dtype) == engine.kv_dtypes.end())
    throw bad_input(fmt::format("engine '{}' has no {} KV cache", engine.id, w.kv_dtype), "it supports: " + join(engine.kv_dtypes));
  for (auto& note : kv_dtype_notes(hw, w.kv_dtype)) out.notes.push_back(std::move(note));
  set_host(catalog, hw, engine, r, w, out.notes);
  set_expert_offload(catalog, hw, engine, s.model, s.weights, r, w, out.notes);
  set_gpu_layers(hw, engine, s.model, r, w, out.notes);
  return out;
}

const OfficialRelease* official_twin(const Catalog& catalog, const ResolvedModel& model, const EngineProfile& engine, const QuantFormat& format) {
  if (!format.native_compute) return nullptr;
  for (const OfficialRelease& release : model.spec.releases) {
    const QuantFormat* f = catalog.quant().find(release.format);
    if (f && f->native_compute && f->native_compute->dtype == format.native_compute->dtype &&
        std::find(engine.quants.begin(), engine.quants.end(), f->id) != engine.quants.end() &&
        official_release(model.spec, f->id, model.asked()) == &release)
      return &release;
  }
  return nullptr;
}

std::optional<std::string> official_checkpoint_note(const Catalog& catalog, const ResolvedModel& model, const EngineProfile& engine,
                                                    const QuantFormat& format) {
  if (const OfficialRelease* own = official_release(model.spec, format.id, model.asked()))
    return fmt::format("weights: the official checkpoint {}", own->repo);
  if (const OfficialRelease* twin = official_twin(catalog, model, engine, format))
    return fmt::format("weights: the publisher ships this model as {} in {} (--quant {} sizes that checkpoint)", twin->repo, twin->format,
                       twin->format);
  return std::nullopt;
}

std::vector<std::string> weight_only_notes(const HardwareProfile& hw, const QuantFormat& format) {
  if (!format.native_compute || runs_natively(format, hw.capabilities)) return {};
  return {fmt::format("{} has no {} tensor cores: {} is computed weight-only (its bytes, 16-bit GEMMs)", hw.name,
                      format.native_compute->capability, format.id)};
}

void set_host(const Catalog& catalog, const HardwareProfile& hw, const EngineProfile& engine, const ScenarioRequest& r, Workload& w,
              std::vector<std::string>& notes) {
  w.host_bandwidth_bytes_per_s = host_bandwidth_for(hw, engine, r.host_bandwidth_bytes_per_s);
  w.host_id.clear();
  if (!r.host.empty()) apply_host(catalog, hw, engine, r, w, notes);
  w.host_compute_flops_per_s.reset();
  if (w.host_bandwidth_bytes_per_s) w.host_compute_flops_per_s = host_compute_for(catalog, engine, w.host_id).flops_per_s;
}

}  // namespace optadvisor
