// SPDX-License-Identifier: MIT
// --goal training: from what the user typed to a checked TrainingScenario,
// and the smallest changes that make a run fit.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/names.hpp"
#include "optadvisor/catalog/quant.hpp"
#include "optadvisor/analysis/training.hpp"
#include "base/strings.hpp"

namespace optadvisor {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

int64_t at_least(int64_t value, const char* option, int64_t min) {
  if (value < min) throw bad_input(fmt::format("{} must be at least {} (got {})", option, min, value));
  return value;
}

int stage_of(const std::string& sharding) {
  if (sharding == "zero1") return 1;
  if (sharding == "zero2") return 2;
  if (sharding == "zero3" || sharding == "fsdp") return 3;
  return 0;
}

constexpr int64_t kMaxGpus = 1 << 17;    // 131072: beyond any published run
constexpr int64_t kMaxTokens = 1 << 24;  // 16M tokens per sequence
constexpr int64_t kMaxBatch = 1 << 24;

/// The training framework: the user's, or PyTorch; it must run on the device.
const TrainingEngineProfile* choose_training_engine(const TrainingData& data, const HardwareProfile& hw, const std::string& requested,
                                                    std::vector<std::string>& defaults) {
  const TrainingEngineProfile* engine = nullptr;
  std::vector<std::string> on_device;
  for (const auto& e : data.engines)
    if (contains(hw.engines, e.runs_as)) on_device.push_back(e.id);
  if (requested.empty()) {
    const auto* pytorch = data.find_engine("pytorch-fsdp2");
    if (pytorch && contains(hw.engines, pytorch->runs_as))
      engine = pytorch;
    else if (!on_device.empty())
      engine = data.find_engine(on_device.front());
    if (!engine) throw bad_input(fmt::format("no training framework is known to run on {}", hw.id), "pick a GPU: optadvisor hw list");
    defaults.push_back("engine " + engine->id);
  } else {
    engine = data.find_engine(requested);
    if (!engine) {
      std::vector<std::string> ids;
      for (const auto& e : data.engines) ids.push_back(e.id);
      throw bad_input(fmt::format("unknown training engine '{}'", requested), "training engines: " + join(ids));
    }
    if (!contains(hw.engines, engine->runs_as))
      throw bad_input(fmt::format("training engine '{}' does not run on {}", engine->id, hw.id),
                      on_device.empty() ? std::string("no training framework runs there") : "training engines there: " + join(on_device));
  }
  return engine;
}

/// Parallel layout: gpus = tp x pp x cp x dp, each checked against the device and the model.
void set_layout(TrainingWorkload& w, const TrainingRequest& r, const HardwareProfile& hw, const TrainingModel& m) {
  const int64_t tp = at_least(r.tp, "--tp", 1), pp = at_least(r.pp, "--pp", 1), cp = at_least(r.cp, "--cp", 1);
  if (tp > kMaxGpus || pp > kMaxGpus || cp > kMaxGpus || r.gpus > kMaxGpus)
    throw bad_input(fmt::format("at most {} GPUs are modelled", kMaxGpus));
  const int64_t inner = tp * pp * cp;
  if (inner > kMaxGpus) throw bad_input(fmt::format("--tp {} x --pp {} x --cp {} is beyond {} GPUs", tp, pp, cp, kMaxGpus));
  const int64_t gpus = r.gpus == 0 ? inner : at_least(r.gpus, "--gpus", 1);
  if (gpus % inner != 0)
    throw bad_input(fmt::format("--gpus {} is not a multiple of --tp {} x --pp {} x --cp {} = {}", gpus, tp, pp, cp, inner),
                    "gpus = tp x pp x cp x the data-parallel degree");
  w.gpus = static_cast<uint32_t>(gpus);
  w.tp = static_cast<uint32_t>(tp);
  w.pp = static_cast<uint32_t>(pp);
  w.cp = static_cast<uint32_t>(cp);
  w.dp = static_cast<uint32_t>(gpus / inner);
  if (gpus > 1 && hw.unified_memory && hw.device_class != DeviceClass::kWorkstationGpu)
    throw bad_input(fmt::format("{} is a single-chip device; multi-GPU options do not apply", hw.id));
  if (m.heads % w.tp != 0)
    throw bad_input(fmt::format("--tp {} does not divide the model's {} attention heads", w.tp, m.heads),
                    "use a tensor-parallel degree that divides the head count");
  if (w.pp > m.layers) throw bad_input(fmt::format("--pp {} exceeds the model's {} layers", w.pp, m.layers));
}

/// Tokens per sequence, the microbatch and the global batch (gradient accumulation).
void set_sequence_and_batch(TrainingWorkload& w, const TrainingRequest& r, const TrainingModel& m, std::vector<std::string>& defaults) {
  if (r.seq == 0) {
    w.seq = 4096;
    if (m.max_position && m.max_position < w.seq) w.seq = m.max_position;
    defaults.push_back(fmt::format("seq {}", w.seq));
  } else {
    w.seq = static_cast<uint64_t>(at_least(r.seq, "--seq", 1));
  }
  if (w.seq > static_cast<uint64_t>(kMaxTokens)) throw bad_input("--seq above 16,777,216 tokens is beyond any model's context");
  if (w.seq % w.cp != 0)
    throw bad_input(fmt::format("--seq {} is not divisible by --cp {}", w.seq, w.cp), "context parallelism splits each sequence evenly");
  w.micro_batch = static_cast<uint64_t>(at_least(r.micro_batch, "--micro-batch", 1));
  if (r.micro_batch > kMaxBatch) throw bad_input("--micro-batch is beyond any device");
  const uint64_t per_step = uint64_t{w.dp} * w.micro_batch;
  if (r.global_batch == 0) {
    w.global_batch = per_step;
    defaults.push_back(
        fmt::format("global batch {} (micro-batch {} x {} data-parallel, no accumulation)", w.global_batch, w.micro_batch, w.dp));
  } else {
    w.global_batch = static_cast<uint64_t>(at_least(r.global_batch, "--global-batch", 1));
    if (r.global_batch > kMaxBatch) throw bad_input("--global-batch is beyond any published run (at most 16,777,216)");
    if (w.global_batch % per_step != 0)
      throw bad_input(fmt::format("--global-batch {} is not divisible by --micro-batch {} x {} data-parallel ranks = {}", w.global_batch,
                                  w.micro_batch, w.dp, per_step),
                      "global batch = micro-batch x data-parallel degree x gradient-accumulation steps");
  }
  w.microbatches = w.global_batch / per_step;
}

/// Precision: bf16 (fp16 where the device has no bf16), fp8 only on FP8 tensor cores.
void set_precision(TrainingWorkload& w, const TrainingRequest& r, const HardwareProfile& hw, std::vector<std::string>& defaults,
                   std::vector<std::string>& notes) {
  const std::string precision = r.precision.empty() ? "bf16" : r.precision;
  if (r.precision.empty()) defaults.push_back("precision bf16");
  if (precision == "fp8") {
    if (!hw.capabilities.fp8 || !hw.peak_flops_per_s("fp8"))
      throw bad_input(fmt::format("fp8 training needs FP8 tensor cores; {} has none", hw.name),
                      "use --precision bf16, or a GPU with FP8 (Hopper, Ada, Blackwell, MI300)");
    w.precision = TrainPrecision::kFp8;
  } else if (precision == "bf16") {
    w.precision = TrainPrecision::kBf16;
    if (!hw.peak_flops_per_s("bf16")) {
      if (!hw.peak_flops_per_s("fp16"))
        throw bad_input(fmt::format("{} has no 16-bit matrix rate to train on", hw.name), "pick a GPU: optadvisor hw list");
      notes.push_back(
          fmt::format("{} has no BF16 tensor cores: fp16 mixed precision with loss scaling assumed (same bytes, fp16 rate)", hw.name));
    }
  } else if (precision == "bf16-pure") {
    if (!hw.peak_flops_per_s("bf16"))
      throw bad_input(fmt::format("pure-BF16 training needs BF16 tensor cores; {} has none", hw.name), "use --precision bf16");
    w.precision = TrainPrecision::kBf16Pure;
  } else {
    throw bad_input(fmt::format("--precision '{}' is not bf16, bf16-pure or fp8", precision));
  }
}

/// Recompute, sharding, sequence parallelism, pipeline schedule, attention, loss and optimizer.
void set_techniques(TrainingWorkload& w, const TrainingRequest& r, const TrainingEngineProfile& engine, const TrainingModel& m,
                    const TrainingData& data, std::vector<std::string>& defaults, std::vector<std::string>& notes) {
  const std::string recompute = r.recompute.empty() ? engine.default_recompute : r.recompute;
  if (r.recompute.empty()) defaults.push_back("recompute " + recompute);
  if (recompute == "none")
    w.recompute = Recompute::kNone;
  else if (recompute == "selective")
    w.recompute = Recompute::kSelective;
  else if (recompute == "full")
    w.recompute = Recompute::kFull;
  else
    throw bad_input(fmt::format("--recompute '{}' is not none, selective or full", recompute));

  // One data-parallel rank has nothing to shard: default to plain data parallelism there.
  const bool single_rank = uint64_t{w.dp} * w.cp == 1;
  const std::string sharding = !r.sharding.empty()                                ? r.sharding
                               : single_rank && contains(engine.shardings, "ddp") ? "ddp"
                                                                                  : engine.default_sharding;
  if (!contains(engine.shardings, sharding)) {
    if (stage_of(sharding) == 0 && sharding != "ddp")
      throw bad_input(fmt::format("--sharding '{}' is not ddp, zero1, zero2, zero3 or fsdp", sharding));
    throw bad_input(fmt::format("{} has no --sharding {}", engine.id, sharding), "it supports: " + join(engine.shardings));
  }
  w.sharding = {sharding, stage_of(sharding)};
  if (r.sharding.empty()) defaults.push_back("sharding " + sharding);
  if (w.sharding.stage > 0 && single_rank) notes.push_back(fmt::format("one data-parallel rank: --sharding {} shards nothing", sharding));

  w.sequence_parallel = w.tp > 1 && r.sequence_parallel.value_or(engine.sequence_parallel_default);
  if (r.sequence_parallel.value_or(false) && w.tp == 1) notes.push_back("sequence parallelism needs --tp > 1; ignored");

  const std::string schedule = r.pp_schedule.empty() ? engine.default_pipeline_schedule : r.pp_schedule;
  if (schedule != "1f1b" && schedule != "interleaved")
    throw bad_input(fmt::format("--pp-schedule '{}' is not 1f1b or interleaved", schedule));
  w.schedule = w.pp > 1 && schedule == "interleaved" ? PipelineSchedule::kInterleaved : PipelineSchedule::k1F1B;
  w.virtual_stages = 1;
  if (r.virtual_stages < 0) throw bad_input("--vp must be at least 1");
  if (r.virtual_stages > 0 && w.schedule != PipelineSchedule::kInterleaved)
    throw bad_input("--vp applies to --pp-schedule interleaved with --pp > 1");
  if (w.schedule == PipelineSchedule::kInterleaved) {
    const uint64_t per_stage = (m.layers + w.pp - 1) / w.pp;  // uneven stages are allowed (torchtitan, Megatron)
    if (r.virtual_stages > 0) {
      if (static_cast<uint64_t>(r.virtual_stages) > per_stage)
        throw bad_input(fmt::format("--vp {} exceeds the {} layers of a pipeline stage", r.virtual_stages, per_stage),
                        "each virtual stage holds at least one layer");
      w.virtual_stages = static_cast<uint32_t>(r.virtual_stages);
    } else {
      w.virtual_stages = static_cast<uint32_t>(std::min<uint64_t>(std::max<uint32_t>(engine.default_virtual_stages, 1), per_stage));
    }
    if (w.virtual_stages == 1) w.schedule = PipelineSchedule::k1F1B;
  }

  w.flash_attention = r.flash_attention.value_or(true);
  w.fused_loss = r.fused_loss.value_or(engine.fused_loss_default);
  if (r.compile.has_value() && !engine.compile.supported)
    throw bad_input(fmt::format("--compile: {} has no torch.compile switch", engine.name),
                    "its kernels are fused already; leave the option out");
  w.compiled = engine.compile.supported ? r.compile.value_or(engine.compile.default_on) : true;
  if (w.cp > 1 && !w.flash_attention)
    throw bad_input("context parallelism needs FlashAttention (ring attention)", "drop --flash-attention off or --cp");

  w.optimizer = r.optimizer.empty() ? engine.default_optimizer : r.optimizer;
  if (!data.system.optimizers.count(w.optimizer)) {
    std::vector<std::string> ids;
    for (const auto& [id, o] : data.system.optimizers) ids.push_back(id);
    throw bad_input(fmt::format("unknown optimizer '{}'", w.optimizer), "optimizers: " + join(ids));
  }
  if (!contains(engine.optimizers, w.optimizer))
    throw bad_input(fmt::format("{} has no {} optimizer", engine.id, w.optimizer), "it supports: " + join(engine.optimizers));
}

/// Optimizer and activation offload: the engine must run them, the device must have host memory
/// apart from its own, and the node's host is the --host CPU (one socket) or the system document's.
void set_offload(TrainingScenario& s, const TrainingRequest& r, const Catalog& catalog, std::vector<std::string>& notes) {
  TrainingWorkload& w = s.workload;
  const TrainingEngineProfile& engine = *s.engine;
  const HardwareProfile& hw = *s.hardware;
  w.optimizer_offload = r.optimizer_offload.value_or(false);
  w.activation_offload = r.activation_offload.value_or(false);
  const bool offload = w.optimizer_offload || w.activation_offload;
  if (w.optimizer_offload && engine.offload.optimizer_how.empty())
    throw bad_input(fmt::format("{} has no optimizer CPU offload in this model", engine.id), "use --engine deepspeed or megatron");
  if (w.activation_offload && engine.offload.activations_how.empty())
    throw bad_input(fmt::format("{} has no activation offload in this model", engine.id), "use --engine megatron or pytorch");
  if (w.optimizer_offload && w.lora_rank > 0)
    throw bad_input("optimizer offload with LoRA adapters is not modelled (their optimizer states are small)", "drop --optimizer-offload");
  if (w.activation_offload && w.recompute == Recompute::kFull)
    throw bad_input("--activation-offload with --recompute full: the layer inputs are all full recompute keeps", "use one or the other");
  if (offload && (hw.unified_memory || !hw.pcie))
    throw bad_input(fmt::format("{} has no host link to offload over (its memory is {})", hw.name, hw.unified_memory ? "unified" : "its own"),
                    "offload applies to discrete GPUs on PCIe");
  if (!r.host.empty()) {
    if (!offload) throw bad_input("--host under --goal training names the host offload uses", "add --optimizer-offload on or --activation-offload on");
    const HardwareProfile& cpu = catalog.resolve_hardware(r.host);
    if (cpu.device_class != DeviceClass::kCpu)
      throw bad_input(fmt::format("--host {} is not a CPU", r.host), "optadvisor hw list --class cpu");
    s.host = {cpu.name + " (one socket)", cpu.memory_capacity_bytes, cpu.memory_bandwidth_bytes_per_s};
  } else {
    s.host = s.system->host_for(hw);
    if (offload) notes.push_back("host: " + s.host.what + " (change with --host CPU)");
  }
  if (offload && (s.host.memory_bytes <= 0 || s.host.memory_bandwidth_bytes_per_s <= 0))
    throw bad_input("the training system document describes no host to offload to", "add host to data/training/system.json or pass --host CPU");
}

/// LoRA / QLoRA: the adapter rank, and the frozen base's format with its bytes per parameter.
/// `spec` is the tensor list behind the model when there is one (QLoRA needs it).
void set_lora(TrainingWorkload& w, const TrainingRequest& r, const TrainingEngineProfile& engine, const TrainingModel& m,
              const ModelSpec* spec, const Catalog& catalog) {
  if (r.lora_rank < 0) throw bad_input(fmt::format("--lora-rank must be zero or more (got {})", r.lora_rank));
  if (!r.quant.empty() && r.lora_rank == 0)
    throw bad_input("--quant sets the frozen base of QLoRA under --goal training", "add --lora-rank R (e.g. 16)");
  if (r.lora_rank > 0) {
    if (!engine.lora) throw bad_input(fmt::format("{} does not run LoRA fine-tuning", engine.id), "use --engine pytorch (PEFT)");
    if (static_cast<uint64_t>(r.lora_rank) > m.hidden)
      throw bad_input(fmt::format("--lora-rank {} exceeds the model's hidden size {}", r.lora_rank, m.hidden));
    if (w.precision == TrainPrecision::kFp8) throw bad_input("fp8 training with LoRA adapters is not modelled", "use --precision bf16");
    w.lora_rank = static_cast<uint64_t>(r.lora_rank);
    if (!r.quant.empty()) {
      const QuantFormat& format = catalog.quant().resolve(r.quant);
      if (!contains(engine.lora_base_quants, format.id))
        throw bad_input(fmt::format("{} cannot train LoRA on a {} base", engine.id, format.id),
                        engine.lora_base_quants.empty() ? std::string("use a 16-bit base (drop --quant)")
                                                        : "QLoRA bases it supports: " + join(engine.lora_base_quants));
      if (w.tp > 1 || w.pp > 1 || w.cp > 1) throw bad_input("QLoRA runs data-parallel only in this model", "drop --tp, --pp and --cp");
      if (!spec) throw bad_input("QLoRA needs the model's tensor list", "use --model, --model-config or --params");
      const WeightsBreakdown base = quantize(model_tensors(*spec), quant_facts(*spec), format, catalog.quant());
      w.lora_base_quant = format.id;
      w.lora_base_bytes_per_param = base.params ? static_cast<double>(base.weights_bytes) / static_cast<double>(base.params) : 2.0;
    }
  }
}

/// `spec` is the tensor list behind `model` when there is one (QLoRA needs it).
PreparedTraining prepare_with(const Catalog& catalog, const TrainingRequest& r, const ResolvedModel& resolved, const ModelSpec* spec,
                              const TrainingModel& model, std::shared_ptr<const TrainingData> data) {
  PreparedTraining out;
  out.data = std::move(data);
  out.model = resolved;
  TrainingScenario& s = out.scenario;
  if (r.hardware.empty()) throw bad_input("no hardware given", "pass --hw NAME (optadvisor hw list)");
  s.hardware = &catalog.resolve_hardware(r.hardware, &out.hardware_how);
  const HardwareProfile& hw = *s.hardware;
  s.model = model;
  const TrainingModel& m = s.model;
  s.system = &out.data->system;
  std::vector<std::string> defaults;

  s.engine = choose_training_engine(*out.data, hw, r.engine, defaults);
  TrainingWorkload& w = s.workload;
  set_layout(w, r, hw, m);
  set_sequence_and_batch(w, r, m, defaults);
  set_precision(w, r, hw, defaults, out.notes);
  set_techniques(w, r, *s.engine, m, *out.data, defaults, out.notes);
  set_lora(w, r, *s.engine, m, spec, catalog);
  set_offload(s, r, catalog, out.notes);

  if (!defaults.empty())
    out.notes.insert(out.notes.begin(), "defaults: " + join(defaults, "; ") +
                                            " (change with --engine, --seq, --global-batch, --precision, --recompute, --sharding)");
  for (const auto& a : resolved.assumptions) out.notes.push_back(a);
  if (m.max_position && w.seq > m.max_position)
    out.notes.push_back(fmt::format("--seq {} is beyond the model's context of {} tokens", w.seq, m.max_position));
  return out;
}

}  // namespace

PreparedTraining prepare_training(const Catalog& catalog, const TrainingRequest& request, const ResolvedModel& model) {
  return prepare_with(catalog, request, model, &model.spec, training_model(model.spec),
                      std::make_shared<const TrainingData>(training_data(catalog)));
}

PreparedTraining prepare_training(const Catalog& catalog, const TrainingRequest& request, const TrainingModel& model) {
  ResolvedModel resolved;
  resolved.spec.id = model.id;
  resolved.spec.name = model.name;
  resolved.origin = "architecture";
  return prepare_with(catalog, request, resolved, nullptr, model, std::make_shared<const TrainingData>(training_data(catalog)));
}

PreparedTraining prepare_training(const Catalog& catalog, const TrainingRequest& request) {
  if (request.hardware.empty()) throw bad_input("no hardware given", "pass --hw NAME (optadvisor hw list)");
  catalog.resolve_hardware(request.hardware);  // an unknown device is the first thing to report
  return prepare_training(catalog, request, resolve_model(catalog, request.model));
}

namespace {

struct Candidate {
  std::string description;
  std::string kind;  ///< "same math", "adds GPUs", "changes the run"
  TrainingRequest request;
};

int kind_rank(const std::string& kind) {
  if (kind == "same math") return 0;
  if (kind == "adds GPUs") return 1;
  return 2;
}

std::vector<Candidate> single_changes(const TrainingRequest& r, const PreparedTraining& p) {
  const TrainingWorkload& w = p.scenario.workload;
  const TrainingEngineProfile& e = *p.scenario.engine;
  const TrainingModel& m = p.scenario.model;
  const uint32_t per_node = p.scenario.system->gpus_per_node;
  std::vector<Candidate> out;
  auto add = [&](std::string what, std::string kind, auto edit) {
    TrainingRequest next = r;
    edit(next);
    out.push_back({std::move(what), std::move(kind), std::move(next)});
  };
  if (w.recompute == Recompute::kNone) add("--recompute selective", "same math", [](TrainingRequest& n) { n.recompute = "selective"; });
  if (w.recompute != Recompute::kFull) add("--recompute full", "same math", [](TrainingRequest& n) { n.recompute = "full"; });
  if (uint64_t{w.dp} * w.cp > 1) {
    for (const auto& s : e.shardings) {
      const int stage = stage_of(s);
      if (stage <= w.sharding.stage) continue;
      // One name per stage: the engine's own ("fsdp" for PyTorch, "zero3" for DeepSpeed).
      if (stage == 3 && s == "zero3" && contains(e.shardings, "fsdp")) continue;
      add("--sharding " + s, "same math", [s](TrainingRequest& n) { n.sharding = s; });
    }
  }
  if (w.micro_batch > 1) {
    const int64_t half = static_cast<int64_t>(w.micro_batch % 2 == 0 ? w.micro_batch / 2 : 1);
    add(fmt::format("--micro-batch {} (more gradient accumulation, same global batch)", half), "same math",
        [half](TrainingRequest& n) { n.micro_batch = half; });
  }
  if (w.tp > 1 && !w.sequence_parallel) add("--sequence-parallel on", "same math", [](TrainingRequest& n) { n.sequence_parallel = true; });
  if (!w.fused_loss && e.fused_logits_bytes_per_entry < e.logits_bytes_per_entry)
    add("--fused-loss on", "same math", [](TrainingRequest& n) { n.fused_loss = true; });
  if (w.dp % 2 == 0 && w.lora_base_quant.empty()) {
    if (w.tp * 2 <= per_node && m.heads % (w.tp * 2) == 0)
      add(fmt::format("--tp {}", w.tp * 2), "same math", [&w](TrainingRequest& n) { n.tp = w.tp * 2; });
    if (w.pp * 2 <= m.layers)
      add(fmt::format("--pp {}", w.pp * 2), "same math", [&w](TrainingRequest& n) {
        n.pp = w.pp * 2;
        n.virtual_stages = 0;
      });
    if (w.flash_attention && w.seq % (w.cp * 2) == 0 && w.seq >= 8192)
      add(fmt::format("--cp {}", w.cp * 2), "same math", [&w](TrainingRequest& n) { n.cp = w.cp * 2; });
  }
  if (w.sharding.stage > 0 || contains(e.shardings, "fsdp") || contains(e.shardings, "zero3")) {
    const uint64_t gpus = uint64_t{w.gpus} * 2;
    const bool keeps_batch = w.global_batch % (uint64_t{w.dp} * 2 * w.micro_batch) == 0;
    add(fmt::format("--gpus {}{}", gpus, w.sharding.stage == 0 ? fmt::format(" --sharding {}", e.default_sharding) : std::string()),
        keeps_batch ? "adds GPUs" : "changes the run", [&](TrainingRequest& n) {
          n.gpus = static_cast<int64_t>(gpus);
          if (!keeps_batch) n.global_batch = static_cast<int64_t>(w.global_batch * 2);
          if (w.sharding.stage == 0 && stage_of(e.default_sharding) > 0) n.sharding = e.default_sharding;
        });
  }
  const HardwareProfile& hw = *p.scenario.hardware;
  const bool host_link = !hw.unified_memory && hw.pcie;
  if (host_link && !w.optimizer_offload && !e.offload.optimizer_how.empty() && w.lora_rank == 0)
    add("--optimizer-offload on", "same math",
        [](TrainingRequest& n) { n.optimizer_offload = true; });
  if (host_link && !w.activation_offload && !e.offload.activations_how.empty() && w.recompute != Recompute::kFull)
    add("--activation-offload on", "same math", [](TrainingRequest& n) { n.activation_offload = true; });
  if (w.optimizer != "adamw-8bit" && contains(e.optimizers, "adamw-8bit"))
    add("--optimizer adamw-8bit", "changes the run", [](TrainingRequest& n) { n.optimizer = "adamw-8bit"; });
  if (w.lora_rank == 0 && e.lora)
    add("--lora-rank 16 (fine-tune adapters instead of every weight)", "changes the run", [](TrainingRequest& n) { n.lora_rank = 16; });
  if (w.lora_rank > 0 && w.lora_base_quant.empty() && contains(e.lora_base_quants, "nf4") && w.tp == 1 && w.pp == 1 && w.cp == 1)
    add("--quant nf4 (QLoRA: a 4-bit frozen base)", "changes the run", [](TrainingRequest& n) { n.quant = "nf4"; });
  if (w.seq >= 1024 && w.seq % (2 * w.cp) == 0)
    add(fmt::format("--seq {}", w.seq / 2), "changes the run", [&w](TrainingRequest& n) { n.seq = static_cast<int64_t>(w.seq / 2); });
  return out;
}

/// Every choice of the prepared run made explicit, so a change alters one thing only.
TrainingRequest pinned(const TrainingRequest& request, const PreparedTraining& p) {
  TrainingRequest r = request;
  const TrainingWorkload& w = p.scenario.workload;
  r.engine = p.scenario.engine->id;
  r.gpus = w.gpus;
  r.tp = w.tp;
  r.pp = w.pp;
  r.cp = w.cp;
  r.seq = static_cast<int64_t>(w.seq);
  r.micro_batch = static_cast<int64_t>(w.micro_batch);
  r.global_batch = static_cast<int64_t>(w.global_batch);
  r.precision = std::string(to_string(w.precision));
  r.recompute = std::string(to_string(w.recompute));
  r.sharding = w.sharding.name;
  r.optimizer = w.optimizer;
  r.fused_loss = w.fused_loss;
  if (p.scenario.engine->compile.supported) r.compile = w.compiled;
  r.optimizer_offload = w.optimizer_offload;
  r.activation_offload = w.activation_offload;
  return r;
}

/// The run with request `r` (the prepared model and data, all else from `r`): its memory and speed,
/// nothing when the change is not valid for this run; `keep` receives the prepared run.
std::optional<TrainingChange> evaluate_change(const Catalog& catalog, const PreparedTraining& prepared, const TrainingRequest& r,
                                              PreparedTraining* keep) {
  try {
    const bool has_spec = prepared.model.origin != "architecture";
    PreparedTraining p =
        prepare_with(catalog, r, prepared.model, has_spec ? &prepared.model.spec : nullptr, prepared.scenario.model, prepared.data);
    const TrainingAnalysis a = analyze_training(p.scenario);
    TrainingChange c;
    c.request = r;
    c.memory_per_gpu_bytes = a.memory.total_bytes;
    c.tokens_per_s = a.tokens_per_s;
    c.fits = a.memory.fits;
    if (keep) *keep = std::move(p);
    return c;
  } catch (const Error&) {
    return std::nullopt;  // the change is not valid for this run (e.g. divisibility)
  }
}

/// The single change that saves the most memory from `current` (at least 0.1% below `memory`),
/// of the least drastic kind that saves any, with its prepared run.
struct CombineStep {
  std::optional<TrainingChange> change;
  PreparedTraining prepared;
  std::string kind;
};

CombineStep most_saving_change(const Catalog& catalog, const PreparedTraining& prepared, const TrainingRequest& current,
                               const PreparedTraining& current_prepared, double memory) {
  CombineStep best;
  for (int allowed = 0; allowed <= 2 && !best.change; ++allowed) {
    for (const auto& cand : single_changes(current, current_prepared)) {
      if (kind_rank(cand.kind) != allowed) continue;
      PreparedTraining p;
      auto c = evaluate_change(catalog, prepared, cand.request, &p);
      if (!c || c->memory_per_gpu_bytes >= memory * 0.999) continue;
      if (!best.change || c->memory_per_gpu_bytes < best.change->memory_per_gpu_bytes) {
        best.change = c;
        best.change->description = cand.description;
        best.prepared = std::move(p);
        best.kind = cand.kind;
      }
    }
  }
  return best;
}

// No single change fits: combine, taking at each step the change that saves the most memory,
// preferring changes that keep the math, then adding GPUs, then changing the run.
std::optional<TrainingChange> combined_change(const Catalog& catalog, const PreparedTraining& prepared, const TrainingRequest& base) {
  TrainingRequest current = base;
  PreparedTraining current_prepared = prepared;
  std::vector<std::string> steps;
  std::string worst_kind = "same math";
  std::optional<TrainingChange> combined;
  double memory = analyze_training(prepared.scenario).memory.total_bytes;
  for (int round = 0; round < 6; ++round) {
    CombineStep step = most_saving_change(catalog, prepared, current, current_prepared, memory);
    std::optional<TrainingChange>& best = step.change;
    if (!best) break;
    steps.push_back(best->description);
    if (kind_rank(step.kind) > kind_rank(worst_kind)) worst_kind = step.kind;
    current = best->request;
    current_prepared = std::move(step.prepared);
    memory = best->memory_per_gpu_bytes;
    combined = best;
    if (best->fits) break;
  }
  if (combined) {
    combined->description = join(steps, " + ");
    combined->kind = worst_kind;
  }
  return combined;
}

}  // namespace

std::vector<TrainingChange> suggest_training_fixes(const Catalog& catalog, const PreparedTraining& prepared,
                                                   const TrainingRequest& request) {
  const TrainingRequest base = pinned(request, prepared);
  std::vector<TrainingChange> singles;
  for (const auto& cand : single_changes(base, prepared)) {
    auto c = evaluate_change(catalog, prepared, cand.request, nullptr);
    if (!c) continue;
    c->description = cand.description;
    c->kind = cand.kind;
    singles.push_back(*c);
  }
  std::vector<TrainingChange> fitting;
  for (const auto& c : singles)
    if (c.fits) fitting.push_back(c);
  std::sort(fitting.begin(), fitting.end(), [](const TrainingChange& a, const TrainingChange& b) {
    if (kind_rank(a.kind) != kind_rank(b.kind)) return kind_rank(a.kind) < kind_rank(b.kind);
    return a.tokens_per_s > b.tokens_per_s;
  });
  if (!fitting.empty()) {
    if (fitting.size() > 5) fitting.resize(5);
    return fitting;
  }

  std::vector<TrainingChange> out;
  if (auto combined = combined_change(catalog, prepared, base)) out.push_back(*combined);
  std::sort(singles.begin(), singles.end(),
            [](const TrainingChange& a, const TrainingChange& b) { return a.memory_per_gpu_bytes < b.memory_per_gpu_bytes; });
  for (const auto& c : singles) {
    if (out.size() >= 4) break;
    out.push_back(c);
  }
  return out;
}

}  // namespace optadvisor
