// SPDX-License-Identifier: MIT
// Renderers for --goal training. They format; every number comes from the analysis.
#include <cmath>
#include <fmt/format.h>

#include "optadvisor/render/report_training.hpp"
#include "base/table.hpp"
#include "base/units.hpp"

namespace optadvisor {
namespace {

std::string sharding_text(const Sharding& s) {
  static const char* stages[] = {"no sharding", "optimizer states sharded", "optimizer states and gradients sharded",
                                 "parameters, gradients and optimizer states sharded"};
  return fmt::format("{} ({})", s.name, stages[std::clamp(s.stage, 0, 3)]);
}

std::string with_commas(double value) {
  std::string digits = fmt::format("{:.0f}", value);
  std::string out;
  const std::size_t start = digits[0] == '-' ? 1 : 0;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > start && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

nlohmann::json scenario_json(const PreparedTraining& p) {
  const TrainingScenario& s = p.scenario;
  const TrainingWorkload& w = s.workload;
  nlohmann::json workload = {{"gpus", w.gpus},
                             {"tp", w.tp},
                             {"pp", w.pp},
                             {"cp", w.cp},
                             {"dp", w.dp},
                             {"seq", w.seq},
                             {"micro_batch", w.micro_batch},
                             {"global_batch", w.global_batch},
                             {"gradient_accumulation", w.microbatches},
                             {"precision", std::string(to_string(w.precision))},
                             {"recompute", std::string(to_string(w.recompute))},
                             {"sharding", w.sharding.name},
                             {"zero_stage", w.sharding.stage},
                             {"sequence_parallel", w.sequence_parallel},
                             {"pp_schedule", std::string(to_string(w.schedule))},
                             {"virtual_stages", w.virtual_stages},
                             {"flash_attention", w.flash_attention},
                             {"fused_loss", w.fused_loss},
                             {"compiled", w.compiled},
                             {"optimizer", w.optimizer},
                             {"lora_rank", w.lora_rank}};
  if (!w.lora_base_quant.empty()) workload["lora_base_quant"] = w.lora_base_quant;
  workload["optimizer_offload"] = w.optimizer_offload;
  workload["activation_offload"] = w.activation_offload;
  if (w.optimizer_offload || w.activation_offload)
    workload["host"] = {{"what", s.host.what},
                        {"memory_bytes", s.host.memory_bytes},
                        {"memory_bandwidth_bytes_per_s", s.host.memory_bandwidth_bytes_per_s}};
  return {{"goal", "training"},
          {"hardware", {{"id", s.hardware->id}, {"name", s.hardware->name}, {"class", std::string(to_string(s.hardware->device_class))}}},
          {"model", {{"id", s.model.id}, {"name", s.model.name}, {"source", p.model.origin}, {"params", s.model.params}}},
          {"engine", {{"id", s.engine->id}, {"name", s.engine->name}}},
          {"workload", workload}};
}

nlohmann::json memory_json(const TrainingMemory& m) {
  return {{"weights_bytes", m.weights_bytes},
          {"gradients_bytes", m.gradients_bytes},
          {"master_weights_bytes", m.master_weights_bytes},
          {"optimizer_bytes", m.optimizer_bytes},
          {"adapter_bytes", m.adapter_bytes},
          {"model_state_bytes", m.model_state_bytes()},
          {"gathered_bytes", m.gathered_bytes},
          {"activation_bytes", m.activation_bytes},
          {"activation_bytes_per_layer", m.activation_bytes_per_layer},
          {"in_flight_microbatches", m.in_flight_microbatches},
          {"working_bytes", m.working_bytes},
          {"logits_bytes", m.logits_bytes},
          {"overhead_bytes", m.overhead_bytes},
          {"step_bytes", m.step_bytes},
          {"total_bytes", m.total_bytes},
          {"capacity_bytes", m.capacity_bytes},
          {"headroom_bytes", m.capacity_bytes - m.total_bytes},
          {"fits", m.fits},
          {"host_bytes", m.host_bytes},
          {"host_bytes_per_node", m.host_bytes_per_node},
          {"host_capacity_bytes", m.host_capacity_bytes},
          {"host_fits", m.host_fits},
          {"peak_stage", m.peak_stage},
          {"per_gpu", true}};
}

nlohmann::json time_json(const TrainingTime& t) {
  return {{"step_time_s", t.step_time_s},
          {"microbatch_time_s", t.microbatch_time_s},
          {"components_s",
           {{"gemm", t.gemm_s},
            {"attention", t.attention_s},
            {"elementwise", t.elementwise_s},
            {"launch_overhead", t.overhead_s},
            {"optimizer_step", t.optimizer_s},
            {"host_optimizer_step", t.host_optimizer_s},
            {"activation_offload_exposed", t.activation_offload_s},
            {"qlora_dequant", t.dequant_s},
            {"tp_comm_exposed", t.tp_comm_s},
            {"cp_comm_exposed", t.cp_comm_s},
            {"pp_p2p", t.pp_p2p_s},
            {"pp_bubble", t.pp_bubble_s},
            {"dp_comm_exposed", t.dp_comm_exposed_s}}},
          {"recompute_s", t.recompute_s},
          {"dp_comm_total_s", t.dp_comm_s}};
}

nlohmann::json factors_json(const PreparedTraining& p, const TrainingFactors& f) {
  return {{"compute_dtype", f.compute_dtype},
          {"peak_flops_per_s", f.peak_flops_per_s},
          {"matmul_ceiling", f.matmul_ceiling},
          {"gemm_efficiency", f.gemm_efficiency},
          {"achievable_gemm_flops_per_s", f.achievable_gemm_flops_per_s},
          {"attention_efficiency", f.attention_efficiency},
          {"memory_bandwidth_bytes_per_s", f.memory_bandwidth_bytes_per_s},
          {"intra_node_bytes_per_s", f.intra_node_bytes_per_s},
          {"inter_node_bytes_per_s", f.inter_node_bytes_per_s},
          {"dp_spans_nodes", f.dp_spans_nodes},
          {"tp_spans_nodes", f.tp_spans_nodes},
          {"calibrated_on", p.scenario.engine->calibrated_on.size()}};
}

std::string memory_table(const TrainingMemory& m, const TrainingWorkload& w, bool md) {
  using A = Table::Align;
  Table t({"MEMORY (per GPU)", "GB", "GiB"}, {A::kLeft, A::kRight, A::kRight});
  auto row = [&](const std::string& what, double bytes) {
    t.add_row({what, fmt::format("{:.2f}", bytes / kBytesPerGB), fmt::format("{:.2f}", bytes / kBytesPerGiB)});
  };
  if (w.lora_rank)
    row(w.lora_base_quant.empty() ? "frozen base weights (16-bit)" : "frozen base weights (" + w.lora_base_quant + ")", m.weights_bytes);
  else if (m.weights_bytes > 0)
    row("weights (16-bit)", m.weights_bytes);
  if (!w.lora_rank) {
    row("gradients", m.gradients_bytes);
    row("master weights (fp32)", m.master_weights_bytes);
    row(fmt::format("optimizer states ({})", w.optimizer), m.optimizer_bytes);
  } else {
    row(fmt::format("LoRA adapters, grads, {} states", w.optimizer), m.adapter_bytes);
  }
  if (m.gathered_bytes > 0) row("gathered layers, 16-bit (ZeRO-3/FSDP)", m.gathered_bytes);
  row(fmt::format("activations ({:.3g} microbatch{} in flight)", m.in_flight_microbatches, m.in_flight_microbatches == 1 ? "" : "es"),
      m.activation_bytes);
  if (m.working_bytes > 0) row("recompute and working buffers", m.working_bytes);
  if (m.logits_bytes > 0) row("logits and loss", m.logits_bytes);
  row("runtime, workspaces, allocator", m.overhead_bytes);
  row("total at the peak", m.total_bytes);
  row("usable capacity", m.capacity_bytes);
  if (m.host_bytes > 0) {
    row("in host memory (offloaded)", m.host_bytes);
    const long node_gpus = std::lround(m.host_bytes_per_node / m.host_bytes);
    row(fmt::format("host memory, {} GPU{} of a node", node_gpus, node_gpus == 1 ? "" : "s"), m.host_bytes_per_node);
    row("host memory installed", m.host_capacity_bytes);
  }
  return md ? t.to_markdown() : t.to_text();
}

std::string time_table(const TrainingTime& t, bool md) {
  using A = Table::Align;
  Table table({"STEP TIME (per GPU)", "seconds", "share"}, {A::kLeft, A::kRight, A::kRight});
  const double step = t.step_time_s > 0 ? t.step_time_s : 1;
  auto row = [&](const char* what, double s) {
    if (s <= 0) return;
    table.add_row({what, fmt::format("{:.4f}", s), fmt::format("{:.1f}%", 100 * s / step)});
  };
  row("matrix multiplies (GEMM)", t.gemm_s);
  row("attention kernels", t.attention_s);
  row("elementwise (norms, activations, loss)", t.elementwise_s);
  row("kernel launches, host work", t.overhead_s);
  row("QLoRA dequantization", t.dequant_s);
  row("optimizer step", t.optimizer_s);
  row("optimizer step on the host, with its copies", t.host_optimizer_s);
  row("activation copies (exposed)", t.activation_offload_s);
  row("tensor-parallel comm (exposed)", t.tp_comm_s);
  row("context-parallel comm (exposed)", t.cp_comm_s);
  row("pipeline sends", t.pp_p2p_s);
  row("pipeline bubble", t.pp_bubble_s);
  row("data-parallel comm (exposed)", t.dp_comm_exposed_s);
  table.add_row({"step", fmt::format("{:.4f}", t.step_time_s), "100.0%"});
  return md ? table.to_markdown() : table.to_text();
}

std::string header(const PreparedTraining& p, bool md, const Style& style, const std::string& verdict) {
  const TrainingScenario& s = p.scenario;
  const TrainingWorkload& w = s.workload;
  std::string out;
  std::string title = fmt::format("{}{} on {} x {} with {}", verdict, s.model.name, w.gpus, s.hardware->name, s.engine->id);
  if (w.lora_rank) title += fmt::format(" ({}LoRA rank {})", w.lora_base_quant.empty() ? "" : "Q", w.lora_rank);
  out += md ? "# Training " + title + "\n\n" : style.bold("Training " + title) + "\n";
  out += fmt::format("parallelism: {} GPU{} = tp {} x pp {} x cp {} x dp {}; sharding {}", w.gpus, w.gpus == 1 ? "" : "s", w.tp, w.pp, w.cp,
                     w.dp, sharding_text(w.sharding));
  if (w.tp > 1) out += w.sequence_parallel ? "; sequence parallel" : "; no sequence parallelism";
  if (w.pp > 1)
    out += w.schedule == PipelineSchedule::kInterleaved ? fmt::format("; interleaved 1F1B, {} virtual stages", w.virtual_stages)
                                                        : std::string("; 1F1B schedule");
  out += "\n";
  out += fmt::format("batch: seq {} x micro-batch {} x dp {} x {} accumulation step{} = global batch {} ({} tokens per step)\n", w.seq,
                     w.micro_batch, w.dp, w.microbatches, w.microbatches == 1 ? "" : "s", w.global_batch,
                     with_commas(static_cast<double>(w.global_batch * w.seq)));
  out += fmt::format("precision {}; recompute {}; optimizer {}; FlashAttention {}; fused loss {}{}\n", to_string(w.precision),
                     to_string(w.recompute), w.optimizer, w.flash_attention ? "on" : "off", w.fused_loss ? "on" : "off",
                     p.scenario.engine->compile.supported ? fmt::format("; torch.compile {}", w.compiled ? "on" : "off") : "");
  if (w.optimizer_offload || w.activation_offload)
    out += fmt::format("offload to host memory over PCIe: {}\n", w.optimizer_offload && w.activation_offload ? "optimizer states and activations"
                                                               : w.optimizer_offload                        ? "optimizer states"
                                                                                                            : "activations");
  for (const auto& n : p.notes) out += n + "\n";
  return out;
}

}  // namespace

nlohmann::json training_estimate_json(const PreparedTraining& p, const TrainingAnalysis& a,
                                      const std::optional<DeepSpeedEstimate>& deepspeed) {
  nlohmann::json out = {{"schema_version", kSchemaVersion}, {"scenario", scenario_json(p)}};
  out["training"] = {{"tokens_per_s_per_gpu", a.tokens_per_s_per_gpu},
                     {"tokens_per_s", a.tokens_per_s},
                     {"step_time_s", a.time.step_time_s},
                     {"tokens_per_step", a.tokens_per_step},
                     {"mfu", a.mfu},
                     {"hfu", a.hfu},
                     {"mfu_peak_dtype", a.factors.compute_dtype},
                     {"mfu_peak_flops_per_s", a.factors.peak_flops_per_s},
                     {"model_flops_per_token", a.model_flops_per_token},
                     {"hardware_flops_per_token", a.hardware_flops_per_token},
                     {"trainable_params", a.trainable_params},
                     {"memory_per_gpu_bytes", a.memory.total_bytes},
                     {"capacity_bytes", a.memory.capacity_bytes},
                     {"fits", a.memory.fits},
                     {"bound", std::string(to_string(a.bound))},
                     {"explanation", a.explanation}};
  out["memory"] = memory_json(a.memory);
  out["step_time"] = time_json(a.time);
  out["factors"] = factors_json(p, a.factors);
  if (deepspeed)
    out["deepspeed_estimator"] = {{"gpu_bytes", deepspeed->gpu_bytes},
                                  {"cpu_bytes", deepspeed->cpu_bytes},
                                  {"what", "model states only, no offload (estimate_zero2/zero3_model_states_mem_needs)"}};
  out["warnings"] = a.warnings;
  std::vector<std::string> notes = p.notes;
  notes.insert(notes.end(), a.assumptions.begin(), a.assumptions.end());
  out["notes"] = notes;
  return out;
}

std::string render_training_estimate(const PreparedTraining& p, const TrainingAnalysis& a, OutputFormat format, const Style& style,
                                     const std::optional<DeepSpeedEstimate>& deepspeed) {
  if (format == OutputFormat::kJson) return training_estimate_json(p, a, deepspeed).dump(2) + "\n";
  const bool md = format == OutputFormat::kMarkdown;
  const TrainingScenario& s = p.scenario;
  const TrainingFactors& f = a.factors;
  auto heading = [&](const std::string& h) { return md ? "\n## " + h + "\n\n" : "\n" + style.bold(h) + "\n"; };
  auto item = [&](const std::string& k, const std::string& v) {
    return md ? fmt::format("- **{}**: {}\n", k, v) : fmt::format("  {:<13}{}\n", k, v);
  };
  std::string out = header(p, md, style, "");

  out += heading(fmt::format("Memory (per GPU, peak on the {} stage)", a.memory.peak_stage));
  out += memory_table(a.memory, s.workload, md);
  if (md) out += "\n";
  out += a.memory.fits ? fmt::format("fits, {} headroom\n", format_bytes(a.memory.capacity_bytes - a.memory.total_bytes))
                       : style.bold(fmt::format("does not fit: {} over (optadvisor fit --goal training suggests changes)\n",
                                                format_bytes(a.memory.total_bytes - a.memory.capacity_bytes)));
  if (deepspeed) out += fmt::format("DeepSpeed's own estimator (model states only): {} per GPU\n", format_bytes(deepspeed->gpu_bytes));

  out += heading("Step");
  out += item("step time", format_seconds(a.time.step_time_s));
  out += item("throughput",
              fmt::format("{} tokens/s per GPU, {} tokens/s in total", with_commas(a.tokens_per_s_per_gpu), with_commas(a.tokens_per_s)));
  out += item("MFU",
              fmt::format("{:.1f}% of {} {} (HFU {:.1f}%)", 100 * a.mfu, format_flops(f.peak_flops_per_s), f.compute_dtype, 100 * a.hfu));
  out += item("bound", a.explanation);
  out += "\n" + time_table(a.time, md);

  out += heading("How this was estimated");
  out += item("GEMMs",
              fmt::format("{} {} peak x {:.3f} matmul ceiling x {:.2f} engine = {}", f.compute_dtype, format_flops(f.peak_flops_per_s),
                          f.matmul_ceiling, f.gemm_efficiency, format_flops(f.achievable_gemm_flops_per_s)));
  out += item("attention", fmt::format("{:.0f}% of the 16-bit peak at {} tokens", 100 * f.attention_efficiency, s.workload.seq));
  out += item("memory", fmt::format("{} achievable for elementwise kernels", format_bandwidth(f.memory_bandwidth_bytes_per_s)));
  out += item("links", fmt::format("{} per direction in a node, {} per GPU between nodes", format_bandwidth(f.intra_node_bytes_per_s),
                                   format_bandwidth(f.inter_node_bytes_per_s)));
  const auto& calibrated = s.engine->calibrated_on;
  out +=
      item("source", calibrated.empty()
                         ? fmt::format("{} efficiencies set by analogy; no published run fitted yet (docs/training.md)", s.engine->id)
                         : fmt::format("{} efficiencies fitted on {} published runs (docs/training.md)", s.engine->id, calibrated.size()));
  if (!a.warnings.empty()) {
    out += heading("Warnings");
    for (const auto& w : a.warnings) out += (md ? "- " : "  ! ") + w + "\n";
  }
  for (const auto& n : a.assumptions) out += (md ? "- " : "  ") + n + "\n";
  return out;
}

nlohmann::json training_fit_json(const PreparedTraining& p, const TrainingAnalysis& a, const std::vector<TrainingChange>& changes) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& c : changes)
    list.push_back({{"change", c.description},
                    {"kind", c.kind},
                    {"fits", c.fits},
                    {"memory_per_gpu_bytes", c.memory_per_gpu_bytes},
                    {"tokens_per_s", c.tokens_per_s}});
  nlohmann::json out = {{"schema_version", kSchemaVersion},
                        {"scenario", scenario_json(p)},
                        {"training",
                         {{"memory_per_gpu_bytes", a.memory.total_bytes},
                          {"capacity_bytes", a.memory.capacity_bytes},
                          {"fits", a.memory.fits},
                          {"tokens_per_s_per_gpu", a.tokens_per_s_per_gpu},
                          {"tokens_per_s", a.tokens_per_s},
                          {"step_time_s", a.time.step_time_s},
                          {"mfu", a.mfu},
                          {"bound", std::string(to_string(a.bound))}}},
                        {"memory", memory_json(a.memory)},
                        {"fits", a.memory.fits},
                        {"suggestions", list},
                        {"warnings", a.warnings}};
  return out;
}

std::string render_training_fit(const PreparedTraining& p, const TrainingAnalysis& a, const std::vector<TrainingChange>& changes,
                                OutputFormat format, const Style& style) {
  if (format == OutputFormat::kJson) return training_fit_json(p, a, changes).dump(2) + "\n";
  const bool md = format == OutputFormat::kMarkdown;
  const TrainingMemory& m = a.memory;
  std::string out = header(p, md, style, m.fits ? "FITS: " : "DOES NOT FIT: ");
  out += "\n" + memory_table(m, p.scenario.workload, md) + (md ? "\n" : "");
  if (m.fits)
    out += fmt::format("headroom: {}\n", format_bytes(m.capacity_bytes - m.total_bytes));
  else
    out += fmt::format("over by: {}\n", format_bytes(m.total_bytes - m.capacity_bytes));
  if (!m.fits) {
    if (changes.empty()) {
      out += "\nno change within reach makes it fit\n";
    } else if (changes.front().fits) {
      out +=
          fmt::format("\nsmallest change that fits: {} ({}): {} per GPU, {} tokens/s\n", changes.front().description, changes.front().kind,
                      format_bytes(changes.front().memory_per_gpu_bytes), with_commas(changes.front().tokens_per_s));
      using A = Table::Align;
      Table t({"CHANGE", "KIND", "GB/GPU", "FITS", "TOKENS/S"}, {A::kLeft, A::kLeft, A::kRight, A::kLeft, A::kRight});
      for (const auto& c : changes)
        t.add_row({c.description, c.kind, fmt::format("{:.1f}", c.memory_per_gpu_bytes / kBytesPerGB), c.fits ? "yes" : "no",
                   with_commas(c.tokens_per_s)});
      out += "\n" + (md ? t.to_markdown() : t.to_text());
    } else {
      out += "\nno change within reach makes it fit; the closest:\n";
      for (const auto& c : changes) out += fmt::format("  {}: {} per GPU\n", c.description, format_bytes(c.memory_per_gpu_bytes));
    }
  }
  for (const auto& w : a.warnings) out += "warning: " + w + "\n";
  out += "\nGB = 10^9 bytes, GiB = 2^30 bytes.\n";
  return out;
}

}  // namespace optadvisor
