// SPDX-License-Identifier: MIT
#include <fmt/format.h>

#include "optadvisor/render/report_estimate.hpp"
#include "base/table.hpp"
#include "base/units.hpp"

namespace optadvisor {
namespace {

std::string memory_text(const MemoryBreakdown& m, bool md) {
  using A = Table::Align;
  Table t({"MEMORY (per device)", "GB", "GiB"}, {A::kLeft, A::kRight, A::kRight});
  auto row = [&](const char* what, double bytes) {
    t.add_row({what, fmt::format("{:.2f}", bytes / kBytesPerGB), fmt::format("{:.2f}", bytes / kBytesPerGiB)});
  };
  row("weights", m.weights_bytes);
  row("KV cache", m.kv_cache_bytes);
  row("activations / compute buffers", m.activation_bytes);
  row("runtime overhead", m.overhead_bytes);
  row("total", m.total_bytes);
  row("usable capacity", m.capacity_bytes);
  if (m.limit_bytes < m.capacity_bytes) row("engine's share of it", m.limit_bytes);
  return md ? t.to_markdown() : t.to_text();
}

/// The achievable bandwidth and where it comes from: peak x efficiency, or the engine's per-unit ceiling.
std::string bandwidth_text(const Scenario& s, const Factors& f) {
  // A format stored only in the routed experts: its kernels' own share applies to their bytes alone.
  const std::string experts =
      f.expert_format_decode_efficiency < 1
          ? fmt::format("; the {} experts at {:.2f} of that", s.weights.quant_id, f.expert_format_decode_efficiency)
          : std::string();
  if (!(f.compute_unit_bandwidth_ceiling_bytes_per_s > 0))
    return fmt::format("{} peak x {:.2f} efficiency = {}{}", format_bandwidth(f.peak_bandwidth_bytes_per_s), f.decode_bandwidth_efficiency,
                       format_bandwidth(f.achievable_bandwidth_bytes_per_s), experts);
  const double per_unit = s.engine.backend->bytes_per_s_per_compute_unit_on(s.hardware->vendor, s.hardware->architecture);
  return fmt::format("{} peak, but the engine's kernels read at most {} per {}: {} x {} = {} ({:.2f} of peak){}",
                     format_bandwidth(f.peak_bandwidth_bytes_per_s), format_bandwidth(per_unit),
                     s.hardware->compute_unit_kind.empty() ? "compute unit" : s.hardware->compute_unit_kind,
                     s.hardware->compute_units.value_or(0), format_bandwidth(per_unit),
                     format_bandwidth(f.achievable_bandwidth_bytes_per_s), f.decode_bandwidth_efficiency, experts);
}

/// How a MoE model's prefill passes multiply the routed experts: the grouped GEMM's share of the dense
/// rate at its tokens per expert, or the mat-vec kernels (each token reading its own experts).
std::string experts_text(const PhaseEstimate::Experts& e) {
  const std::string pass = fmt::format("passes of {:.0f} tokens", e.tokens_per_pass);
  if (!e.grouped) return pass + ": mat-vec kernels, each token reading its own experts";
  std::string text = fmt::format("{}: {:.1f} tokens per expert, grouped GEMM at {:.2f} of the dense rate", pass, e.tokens_per_expert,
                                 e.share_of_dense_rate);
  if (!e.format_terms.empty()) text += fmt::format(" ({} experts' own tile fill)", e.format_terms);
  if (e.per_expert_loop_s > 0)
    text += fmt::format("; 16-bit experts multiplied one expert at a time, {:.3g} s of fixed costs", e.per_expert_loop_s);
  return text;
}

/// Whether the weights, KV cache and buffers fit; with layers in host memory (llama.cpp), what the GPU part needs.
std::string memory_verdict(const MemoryBreakdown& mem, const Style& style) {
  const double on_gpu = mem.total_bytes - mem.offloaded_bytes;
  if (mem.offloaded_layers > 0 && on_gpu <= mem.limit_bytes)
    return fmt::format("runs with {} of {} layers in host memory, {}; the GPU part needs {}, {} headroom\n", mem.offloaded_layers,
                       mem.total_layers, format_bytes(mem.offloaded_bytes), format_bytes(on_gpu), format_bytes(mem.limit_bytes - on_gpu));
  if (mem.offloaded_layers > 0)
    return style.bold(fmt::format("does not fit even with {} of {} layers in host memory: the GPU part is {} over\n", mem.offloaded_layers,
                                  mem.total_layers, format_bytes(on_gpu - mem.limit_bytes)));
  return mem.fits ? fmt::format("fits, {} headroom\n", format_bytes(mem.limit_bytes - mem.total_bytes))
                  : style.bold(fmt::format("does not fit: {} over\n", format_bytes(mem.total_bytes - mem.limit_bytes)));
}

/// The per-step costs: per layer (graph-captured or not), the per-layer terms of MoE, MLA and indexer layers, per step.
std::string overhead_text(const Factors& f) {
  std::string per_layer = format_seconds(f.layer_overhead_s) + " per layer per step" + (f.graphs ? " (graph-captured)" : "");
  if (f.moe_layer_overhead_s > 0)
    per_layer += fmt::format(" + {} per MoE layer (routing and expert dispatch)", format_seconds(f.moe_layer_overhead_s));
  if (f.mla_layer_overhead_s > 0) per_layer += fmt::format(" + {} per MLA layer (latent attention)", format_seconds(f.mla_layer_overhead_s));
  if (f.dsa_indexer_layer_s > 0)
    per_layer += fmt::format(" + {} per indexer layer (DSA kernel chain)", format_seconds(f.dsa_indexer_layer_s));
  return per_layer + ", " + format_seconds(f.step_overhead_s) + " per step";
}

/// How far the backend's shipped efficiencies were from published measurements of this kind of
/// model on this class of device: the validation set's errors, or that none was measured.
std::string accuracy_text(const Scenario& s) {
  const bool moe = s.model.num_experts > 0;
  const std::string_view cls = to_string(s.hardware->device_class);
  const std::string models = moe ? "MoE" : "dense";
  const EstimateAccuracy* a = s.engine.backend->accuracy_for(moe, cls);
  if (!a)
    return fmt::format("no published {} run of a {} model on a {} device is in estimate's validation sets: extrapolated{}", s.engine.id(),
                       models, cls, s.engine.engine->serving.enabled() ? " (serve reports its own errors on measured serving runs)" : "");
  auto phase = [](const char* name, const EstimateAccuracy::Phase& p) {
    return fmt::format("{} {:.0f}% (p90 {:.0f}%, {} runs)", name, 100 * p.median_error, 100 * p.p90_error, p.runs);
  };
  std::string phases;
  if (a->prefill.runs) phases = phase("prefill", a->prefill);
  if (a->decode.runs) phases += (phases.empty() ? "" : ", ") + phase("decode", a->decode);
  return fmt::format("{} models on {} devices, {}: median error {}", models, cls, a->data, phases);
}

}  // namespace

std::string gpus_text(const Workload& w) {
  std::string degrees = fmt::format("tp {}, pp {}", w.tp, w.pp);
  if (w.dp_attention > 1) degrees += fmt::format(", dp-attention {}", w.dp_attention);
  if (w.ep > 1) degrees += fmt::format(", ep {}", w.ep);
  const std::string layout = w.gpus > 1 ? fmt::format("{} GPUs ({})", w.gpus, degrees) : std::string("1 GPU");
  if (w.replicas > 1) return fmt::format(", {} replicas x {}", w.replicas, layout);
  return w.gpus > 1 ? ", " + layout : std::string();
}

std::string render_estimate(const PreparedScenario& ps, const Analysis& a, OutputFormat format, const Style& style) {
  if (format == OutputFormat::kJson) return estimate_json(ps, a).dump(2) + "\n";
  const bool md = format == OutputFormat::kMarkdown;
  const Scenario& s = ps.scenario;
  const Workload& w = s.workload;
  const Factors& f = a.factors;
  auto heading = [&](const std::string& h) { return md ? "\n## " + h + "\n\n" : "\n" + style.bold(h) + "\n"; };
  auto item = [&](const std::string& k, const std::string& v) {
    return md ? fmt::format("- **{}**: {}\n", k, v) : fmt::format("  {:<13}{}\n", k, v);
  };
  std::string out;
  const std::string title = fmt::format("{} ({}, {}) on {} with {}", s.model.name, ps.quant->id, format_gb(s.weights.total_bytes),
                                        s.hardware->name, s.engine.id());
  out += md ? "# " + title + "\n\n" : style.bold(title) + "\n";
  out += fmt::format("workload: batch {}, prompt {} tokens, generate {} tokens, context {}, KV cache {}{}\n",
                     w.batch_max ? fmt::format("max ({})", a.throughput_batch) : std::to_string(w.batch), w.prompt_tokens, w.gen_tokens,
                     w.context(), w.kv_dtype, gpus_text(w));
  for (const auto& n : ps.notes) out += n + "\n";

  out += heading("Memory");
  out += memory_text(a.memory, md);
  out += memory_verdict(a.memory, style);

  if (w.prompt_tokens > 0) {
    out += heading("Prefill (time to first token)");
    out += item("TTFT", format_seconds(a.prefill.time_s));
    out += item("throughput", fmt::format("{:.0f} tokens/s", a.prefill.tokens_per_s));
    if (a.prefill.passes > 1)
      out += item("passes", fmt::format("{:.0f} forward passes of up to {} prompt tokens", a.prefill.passes, s.prefill_chunk_tokens()));
    out += item("bound", a.prefill.explanation());
  }
  if (w.gen_tokens > 0) {
    out += heading(fmt::format("Decode (averaged over {} generated tokens)", w.gen_tokens));
    out += item("per token", format_seconds(a.decode.time_s));
    out +=
        item("throughput", fmt::format("{:.1f} tokens/s ({:.1f} per sequence)", a.decode.tokens_per_s, a.decode.tokens_per_s_per_sequence));
    out += item("bound", a.decode.explanation());
  }
  if (a.has_throughput) {
    out += heading("Serving throughput");
    out += item("output",
                fmt::format("{:.0f} tokens/s at batch {}{} (prefill + decode of every sequence)", a.output_tokens_per_s, a.throughput_batch,
                            w.replicas > 1 ? fmt::format(" on each of {} replicas", w.replicas) : std::string()));
  }
  if (a.sustained_factor < 1.0) {
    out += heading("Sustained (thermal)");
    out += item("decode", fmt::format("{:.1f} tokens/s after minutes of load ({:.0f}% of burst)",
                                      a.decode.tokens_per_s * a.sustained_factor, a.sustained_factor * 100));
  }
  out += heading("How this was estimated");
  out += item("bandwidth", bandwidth_text(s, f));
  out += item("compute", fmt::format("{} {} peak x {:.2f} efficiency = {}", f.compute_dtype, format_flops(f.peak_compute_flops_per_s),
                                     f.prefill_compute_efficiency, format_flops(f.achievable_compute_flops_per_s)));
  if (a.prefill.experts.tokens_per_pass > 0) out += item("experts", "prefill " + experts_text(a.prefill.experts));
  out += item("overhead", overhead_text(f));
  if (f.link_bandwidth_bytes_per_s > 0) out += item("link", format_bandwidth(f.link_bandwidth_bytes_per_s) + " per direction");
  const auto& calibrated = s.engine.backend->calibrated_on;
  if (ps.calibration)
    out += item("source", fmt::format("{} efficiencies calibrated on your {} measurements ({}, {})", s.engine.id(), ps.calibration->rows,
                                      ps.calibration->source_file, ps.calibration->date));
  else
    out +=
        item("source",
             calibrated.empty()
                 ? fmt::format("{} efficiencies set by analogy with calibrated engines; no published measurement fitted yet", s.engine.id())
                 : fmt::format("{} efficiencies fitted on {} published measurements (docs/accuracy.md)", s.engine.id(), calibrated.size()));
  // The recorded errors are the shipped efficiencies'; your own calibration has its own.
  if (!ps.calibration) out += item("accuracy", accuracy_text(s));
  if (!a.warnings.empty()) {
    out += heading("Warnings");
    for (const auto& warning : a.warnings) out += (md ? "- " : "  ! ") + warning + "\n";
  }
  for (const auto& n : a.assumptions) out += (md ? "- " : "  ") + n + "\n";
  const std::string cmd = measure_command(ps, a);
  if (!cmd.empty()) out += heading("Measure it") + (md ? "\n```\n" + cmd + "\n```\n" : "  " + cmd + "\n");
  return out;
}

std::string render_fit(const PreparedScenario& ps, const Analysis& a, OutputFormat format, const Style& style) {
  if (format == OutputFormat::kJson) return fit_json(ps, a).dump(2) + "\n";
  const bool md = format == OutputFormat::kMarkdown;
  const Scenario& s = ps.scenario;
  const auto& m = a.memory;
  std::string out;
  const std::string verdict = m.fits ? "FITS" : "DOES NOT FIT";
  const std::string title = fmt::format("{}: {} ({}) on {} with {}", verdict, s.model.name, ps.quant->id, s.hardware->name, s.engine.id());
  out += md ? "# " + title + "\n\n" : style.bold(title) + "\n";
  const uint64_t batch = s.workload.batch_max ? a.throughput_batch : s.workload.batch;
  const bool held = m.kv_tokens_per_sequence < s.workload.context();  // a server: sequences hold prompt + gen
  if (held)
    out += fmt::format("batch {} x {} tokens (prompt + gen; maximum length {}), KV cache {}\n", batch, m.kv_tokens_per_sequence,
                       s.workload.context(), s.workload.kv_dtype);
  else
    out += fmt::format("batch {} x context {} tokens, KV cache {}\n", batch, s.workload.context(), s.workload.kv_dtype);
  for (const auto& n : ps.notes) out += n + "\n";
  out += "\n" + memory_text(m, md);
  if (m.fits)
    out += fmt::format("headroom: {}\n", format_bytes(m.limit_bytes - m.total_bytes));
  else
    out += fmt::format("over by: {}\n", format_bytes(m.total_bytes - m.limit_bytes));
  const char* model_max = m.max_context == s.model.max_position_embeddings ? " (the model's maximum)" : "";
  if (held) {
    out += fmt::format("largest batch of {}-token sequences: {}\n", m.kv_tokens_per_sequence, m.max_batch);
    out += fmt::format("longest sequence the KV pool holds: {} tokens{}\n", m.max_context, model_max);
  } else {
    out += fmt::format("largest batch at {} tokens of context: {}\n", s.workload.context(), m.max_batch);
    out += fmt::format("largest context at batch {}: {} tokens{}\n", batch, m.max_context, model_max);
  }
  for (const auto& warning : a.warnings) out += "warning: " + warning + "\n";
  out += "\nGB = 10^9 bytes, GiB = 2^30 bytes.\n";
  return out;
}

}  // namespace optadvisor
