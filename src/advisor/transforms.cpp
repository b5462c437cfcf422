// SPDX-License-Identifier: MIT
// The scenario transforms rules apply. Each changes the request (what the
// user asked plus earlier changes) and nothing else; the advisor prepares and
// analyzes the result with the same model as the baseline.
#include "optadvisor/advisor/transforms.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "optadvisor/readers/model_source.hpp"
#include "base/json_fields.hpp"
#include "base/units.hpp"

namespace optadvisor {
namespace {

using Params = nlohmann::json;

TransformResult not_here(std::string why) {
  TransformResult r;
  r.not_applicable = std::move(why);
  return r;
}

TransformResult changed(ScenarioRequest request, std::vector<std::string> notes = {}) {
  TransformResult r;
  r.request = std::move(request);
  r.notes = std::move(notes);
  return r;
}

double number(const Params& p, const char* key, double fallback = 0) {
  const nlohmann::json* v = json_field::find(p, key);
  return v ? json_field::as_number(*v).value_or(fallback) : fallback;
}

/// A per-engine choice: a plain id, or {engine id: id, "*": id}.
std::optional<std::string> for_engine(const Params& value, const std::string& engine_id) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object()) {
    if (value.contains(engine_id)) return value.at(engine_id).get<std::string>();
    if (value.contains("*")) return value.at("*").get<std::string>();
  }
  return std::nullopt;
}

bool engine_runs(const EngineProfile& engine, const QuantFormat& format) {
  if (format.container == Container::kGguf) return std::find(engine.quants.begin(), engine.quants.end(), "*gguf") != engine.quants.end();
  return std::find(engine.quants.begin(), engine.quants.end(), format.id) != engine.quants.end();
}

/// Parameters of one decoder layer: everything but the embeddings, over the layers.
double layer_params(const Scenario& s) {
  const double embeddings = static_cast<double>(s.model.vocab_size * s.model.hidden_size) * (s.model.tie_word_embeddings ? 1.0 : 2.0);
  const double layers = static_cast<double>(std::max<uint64_t>(s.model.num_hidden_layers, 1));
  return std::max(s.weights.params - embeddings, 0.0) / layers;
}

/// Drafts are shipped in 16-bit (EAGLE heads, Medusa heads): 2 bytes per parameter.
constexpr double kDraftBytesPerParam = 2.0;

TransformResult quantize_weights(const Params& p, const TransformInput& in) {
  const Scenario& s = in.prepared.scenario;
  const std::string engine = s.engine.engine->id;
  const auto target = for_engine(p.at("quant"), engine);
  if (!target) return not_here(fmt::format("no weight format is given for {}", engine));
  const QuantFormat* format = in.catalog.quant().find(*target);
  if (!format) return not_here(fmt::format("unknown weight format '{}'", *target));
  const OfficialRelease* twin = official_twin(in.catalog, in.prepared.model, *s.engine.engine, *format);
  if (twin) format = in.catalog.quant().find(twin->format);
  if (in.prepared.quant->id == format->id) return not_here(fmt::format("the weights are already {}", format->id));
  if (!runs_checkpoint(*format, s.hardware->capabilities, s.model))
    return not_here(fmt::format("{} has no matrix units for {}", s.hardware->name, format->id));
  ScenarioRequest r = in.request;
  r.quant = format->id;
  r.weights_size.clear();  // the measured size was of the user's file, not of one in the new format
  std::string change = fmt::format("weights: {} -> {}{}", in.prepared.quant->id, format->id,
                                   twin ? fmt::format(" (the official checkpoint {})", twin->repo) : "");
  return changed(std::move(r), {std::move(change)});
}

TransformResult kv_cache_dtype(const Params& p, const TransformInput& in) {
  const std::string engine = in.prepared.scenario.engine.engine->id;
  const auto target = for_engine(p.at("dtype"), engine);
  if (!target) return not_here(fmt::format("no KV-cache dtype is given for {}", engine));
  if (in.prepared.scenario.workload.kv_dtype == *target) return not_here(fmt::format("the KV cache is already {}", *target));
  ScenarioRequest r = in.request;
  r.kv_dtype = *target;
  std::string change = fmt::format("KV cache: {} -> {}", in.prepared.scenario.workload.kv_dtype, *target);
  return changed(std::move(r), {std::move(change)});
}

/// The smallest catalog model with the target's tokenizer (same model type,
/// vocabulary within 1%) and at most `max_fraction` of its parameters.
const ModelSpec* draft_model_for(const Catalog& catalog, const Scenario& s, double max_fraction) {
  const ModelSpec* best = nullptr;
  double best_params = 0;
  const double target_params = static_cast<double>(parameter_count(s.model));
  for (const ModelSpec* candidate : catalog.models_of_type(s.model.model_type)) {
    const ModelSpec& m = *candidate;
    if (m.id == s.model.id) continue;
    const double vocab_gap = std::fabs(static_cast<double>(m.vocab_size) - static_cast<double>(s.model.vocab_size));
    if (vocab_gap > 0.01 * static_cast<double>(s.model.vocab_size)) continue;
    const double params = static_cast<double>(parameter_count(m));
    if (params > max_fraction * target_params) continue;
    if (!best || params < best_params) best = &m, best_params = params;
  }
  return best;
}

/// A per-engine number: a plain number, or {engine id: number, "*": number}.
std::optional<double> number_for_engine(const Params& value, const std::string& engine_id) {
  if (value.is_number()) return value.get<double>();
  if (value.is_object()) {
    if (value.contains(engine_id) && value.at(engine_id).is_number()) return value.at(engine_id).get<double>();
    if (value.contains("*") && value.at("*").is_number()) return value.at("*").get<double>();
  }
  return std::nullopt;
}

/// The letters of a model id before its first digit ("llama-" of llama-3.2-1b): models of one
/// family (trained together, one tokenizer) share it; tinyllama-1.1b is not a llama-2-7b.
std::string family_of(const std::string& id) { return id.substr(0, id.find_first_of("0123456789")); }

/// The drafter's cost per verification step of k drafts, as a fraction of a plain decode step of the target.
using DraftCost = std::function<double(uint32_t)>;

/// What every drafter reads: the rule's parameters, the baseline and its decode step.
struct DraftContext {
  const Params& p;
  const TransformInput& in;
  const Scenario& s;
  const Factors& f;
  double hidden, vocab, t_plain, batch;
};

/// The speculation a drafter sets up: the drafter's cost and memory, the most drafts it proposes, the
/// acceptance rate per draft (unset: a stated acceptance length) and what it notes.
struct DraftSetup {
  Speculation spec;
  DraftCost cost;
  uint32_t max_k = 1;
  std::optional<double> rate;
  std::vector<std::string> notes;
};

// A drafter pass reads its weights once for the batch (or does its matrix math, where that is
// longer) and launches its layers' kernels.
double drafter_pass_s(const DraftContext& d, double params, double layers) {
  const double read = params * kDraftBytesPerParam / std::max(d.f.achievable_bandwidth_bytes_per_s, 1.0);
  const double math = 2.0 * params * d.batch / std::max(d.f.achievable_compute_flops_per_s, 1.0);
  return std::max(read, math) + layers * d.f.layer_overhead_s;
}

void one_layer_drafter(const DraftContext& d, DraftSetup& out) {
  // EAGLE: one decoder layer plus an output layer over the draft vocabulary, run once per drafted token.
  const double head_vocab = std::min(d.vocab, number(d.p, "draft_vocab", d.vocab));
  const double params = layer_params(d.s) + d.hidden * head_vocab;
  out.spec.draft_memory_bytes = params * kDraftBytesPerParam;
  const double per_token = drafter_pass_s(d, params, 1.0) / d.t_plain;
  out.cost = [per_token](uint32_t k) { return per_token * k; };
  out.notes.push_back(
      fmt::format("drafter: one decoder layer and a {:.0f}-token output layer, {} in 16-bit; each drafted token costs {:.3f} of a "
                  "target step",
                  head_vocab, format_gb(out.spec.draft_memory_bytes), per_token));
}

void heads_drafter(const DraftContext& d, DraftSetup& out) {
  // Medusa: every head (a residual block and its own output layer) runs once per step.
  const double heads = number(d.p, "heads", 1.0);
  const double params = heads * (d.hidden * d.hidden + d.hidden * d.vocab);
  out.spec.draft_memory_bytes = params * kDraftBytesPerParam;
  const double per_step = drafter_pass_s(d, params, heads) / d.t_plain;
  out.cost = [per_step](uint32_t) { return per_step; };
  // One head per drafted position.
  const uint32_t head_count = static_cast<uint32_t>(std::lround(heads));
  out.max_k = d.p.contains("max_draft_tokens") || d.p.contains("fixed_draft_tokens") ? std::min(out.max_k, head_count) : head_count;
  out.notes.push_back(
      fmt::format("drafter: {:.0f} heads with their own output layers, {} in 16-bit; drafting costs {:.3f} of a target step", heads,
                  format_gb(out.spec.draft_memory_bytes), per_step));
}

/// Empty when the drafter runs; else why not.
std::optional<std::string> mtp_drafter(const DraftContext& d, DraftSetup& out) {
  // The checkpoint's own multi-token-prediction layer drafts: one (MoE) layer's active weights and
  // the shared output layer over the full vocabulary, per drafted token; its weights ship with the model.
  if (d.s.model.num_nextn_predict_layers == 0) return fmt::format("{} ships no multi-token-prediction layers", d.s.model.name);
  const double layers = static_cast<double>(std::max<uint64_t>(d.s.model.num_hidden_layers, 1));
  const double params = (d.s.weights.per_token_dense_params() + d.s.weights.routed_active_params) / layers + d.hidden * d.vocab;
  const double per_token = drafter_pass_s(d, params, 1.0) / d.t_plain;
  out.cost = [per_token](uint32_t k) { return per_token * k; };
  out.max_k = std::min<uint32_t>(out.max_k, static_cast<uint32_t>(d.s.model.num_nextn_predict_layers));
  out.notes.push_back(
      fmt::format("drafter: the model's own multi-token-prediction layer (in the checkpoint); each drafted token costs {:.3f} of a "
                  "target step",
                  per_token));
  return std::nullopt;
}

/// Empty when the drafter runs; else why not.
std::optional<std::string> draft_model_drafter(const DraftContext& d, const std::string& engine, DraftSetup& out) {
  const TransformInput& in = d.in;
  const Scenario& s = d.s;
  const ModelSpec* draft = draft_model_for(in.catalog, s, number(d.p, "max_draft_fraction", 0.25));
  if (!draft) return fmt::format("no smaller model with {}'s tokenizer is in the catalog (optadvisor models)", s.model.name);
  ScenarioRequest dr = in.request;
  dr.model = ModelRequest{};
  dr.model.preset = draft->id;
  dr.weights_size.clear();  // the measured size is the target's file
  if (!in.prepared.model.gguf_quant_id.empty() && dr.quant.empty()) dr.quant = in.prepared.quant->id;
  PreparedScenario draft_prepared;
  try {
    draft_prepared = prepare_scenario(in.catalog, dr);
  } catch (const Error& e) {
    return fmt::format("the draft model {} does not run here: {}", draft->id, e.what());
  }
  const Analysis da = analyze(draft_prepared.scenario);
  // Drafting k tokens runs the draft model k times.
  const double per_token = da.decode.time_s / d.t_plain;
  out.cost = [per_token](uint32_t k) { return per_token * k; };
  out.spec.draft_memory_bytes = draft_prepared.scenario.weights.total_bytes +
                                da.memory.kv_cache_bytes * std::max(1.0, static_cast<double>(s.workload.tp * s.workload.pp));
  // Acceptance depends on the pairing: a draft of the target's own family agrees with it far more often.
  const bool same_family = family_of(draft->id) == family_of(s.model.id);
  if (same_family && d.p.contains("same_family_rate")) out.rate = number_for_engine(d.p.at("same_family_rate"), engine);
  out.notes.push_back(fmt::format("draft model: {} ({}, {}, {} family); each drafted token costs {:.3f} of a target step", draft->id,
                                  draft_prepared.quant->id, format_gb(out.spec.draft_memory_bytes),
                                  same_family ? "the target's" : "another", per_token));
  return std::nullopt;
}

/// A stated acceptance length for a fixed draft (rule books of earlier versions, overlays).
TransformResult fixed_drafts(const Params& p, ScenarioRequest r, DraftSetup& setup) {
  Speculation& spec = setup.spec;
  spec.draft_tokens = setup.max_k;
  spec.accepted_tokens = std::min(number(p, "accepted_tokens", 1.0), static_cast<double>(setup.max_k) + 1.0);
  spec.draft_overhead = setup.cost(setup.max_k);
  r.speculation = spec;
  setup.notes.push_back(fmt::format("{} accepted tokens per step of {} drafted", format_sig3(spec.accepted_tokens), spec.draft_tokens));
  return changed(std::move(r), std::move(setup.notes));
}

/// The number of drafts that decodes fastest at this batch: each more draft adds a^k to the expected
/// tokens per step and its drafting and verification cost (verification turns compute-bound as the batch grows).
/// The request differs from the prepared one in its speculation alone, which preparing copies
/// into the workload: each trial is the prepared scenario with that workload field changed.
/// `fixed`: the draft count was given (max_k), so only it is tried.
TransformResult fastest_drafts(const Scenario& s, double batch, ScenarioRequest r, DraftSetup& setup, bool fixed) {
  double best_time = 0;
  Speculation best;
  Scenario trial_scenario = s;
  for (uint32_t k = fixed ? std::max<uint32_t>(setup.max_k, 1) : 1; k <= std::max<uint32_t>(setup.max_k, 1); ++k) {
    Speculation trial = setup.spec;
    trial.draft_tokens = k;
    trial.accepted_tokens = expected_accepted_tokens(*setup.rate, k);
    trial.draft_overhead = setup.cost(k);
    trial_scenario.workload.speculation = trial;
    double time = 0;
    try {
      time = analyze(trial_scenario, Detail::kNumbers).decode.time_s;
    } catch (const Error&) {
      continue;
    }
    if (best.draft_tokens == 0 || time < best_time) best_time = time, best = trial;
  }
  if (best.draft_tokens == 0) return not_here("no number of drafts runs here");
  r.speculation = best;
  const std::string drafts = fmt::format("{} draft{} per step", best.draft_tokens, best.draft_tokens == 1 ? "" : "s");
  if (fixed)
    setup.notes.push_back(fmt::format("{} (as given): {} tokens per step at {:.0f}% acceptance per draft", drafts,
                                      format_sig3(best.accepted_tokens), *setup.rate * 100));
  else
    setup.notes.push_back(fmt::format("{} (fastest of 1-{} at batch {:.0f}): {} tokens per step at {:.0f}% acceptance per draft", drafts,
                                      setup.max_k, batch, format_sig3(best.accepted_tokens), *setup.rate * 100));
  return changed(std::move(r), std::move(setup.notes));
}

TransformResult speculative_decoding(const Params& p, const TransformInput& in) {
  if (in.request.speculation.enabled())
    return not_here(fmt::format("speculative decoding ({}) is already on", in.request.speculation.method));
  const Scenario& s = in.prepared.scenario;
  if (s.workload.gen_tokens == 0) return not_here("nothing is generated (--gen 0)");
  if (!(in.analysis.decode.time_s > 0)) return not_here("no decode step to speculate on");
  const std::string engine = s.engine.engine->id;
  DraftSetup setup;
  setup.spec.method = p.at("method").get<std::string>();
  setup.spec.draft_overhead = number(p, "draft_overhead", 0.0);
  const std::string drafter = p.value("drafter", "none");
  const DraftContext context{p,
                             in,
                             s,
                             in.analysis.factors,
                             static_cast<double>(s.model.hidden_size),
                             static_cast<double>(s.model.vocab_size),
                             in.analysis.decode.time_s,
                             static_cast<double>(std::max<uint64_t>(in.analysis.batch, 1))};
  if (p.contains("acceptance_rate")) setup.rate = number_for_engine(p.at("acceptance_rate"), engine);
  setup.cost = [overhead = setup.spec.draft_overhead](uint32_t) { return overhead; };
  // "fixed_draft_tokens": the count a caller chose (serve --draft-tokens), tried alone.
  const bool fixed = p.contains("fixed_draft_tokens");
  setup.max_k = static_cast<uint32_t>(std::lround(
      number(p, fixed ? "fixed_draft_tokens" : p.contains("max_draft_tokens") ? "max_draft_tokens" : "draft_tokens", 1.0)));
  std::optional<std::string> why_not;
  if (drafter == "one-layer")
    one_layer_drafter(context, setup);
  else if (drafter == "heads")
    heads_drafter(context, setup);
  else if (drafter == "mtp")
    why_not = mtp_drafter(context, setup);
  else if (drafter == "draft-model")
    why_not = draft_model_drafter(context, engine, setup);
  if (why_not) return not_here(std::move(*why_not));
  if (const auto tree = p.contains("verify_tokens") ? number_for_engine(p.at("verify_tokens"), engine) : std::nullopt; tree && *tree >= 2) {
    // A tree of `tree` tokens: every depth the search tries verifies the whole tree.
    setup.spec.verify_tokens = static_cast<uint32_t>(std::lround(*tree));
    setup.max_k = std::min(setup.max_k, setup.spec.verify_tokens - 1);
    setup.notes.push_back(fmt::format("the target verifies a tree of {} drafted tokens per sequence in one pass", setup.spec.verify_tokens));
  }
  if (!setup.rate) return fixed_drafts(p, in.request, setup);
  return fastest_drafts(s, context.batch, in.request, setup, fixed);
}

TransformResult prefix_caching(const Params& p, const TransformInput& in) {
  const double fraction = number(p, "shared_fraction");
  if (in.prepared.scenario.workload.prompt_tokens < 2) return not_here("the prompt is too short to share a prefix");
  if (in.request.prefix_cached_fraction >= fraction) return not_here("the prefix cache is already counted");
  ScenarioRequest r = in.request;
  r.prefix_cached_fraction = fraction;
  std::string change = fmt::format("{:.0f}% of each prompt served from the prefix cache", fraction * 100);
  return changed(std::move(r), {std::move(change)});
}

TransformResult flash_attention(const Params& p, const TransformInput& in) {
  const std::string kernel = p.at("kernel").get<std::string>();
  const double speedup = number(p, "speedup", 1.0);
  ScenarioRequest r = in.request;
  if (kernel == "fa2") {
    if (in.analysis.factors.flash_attention) return not_here("flash attention is already on");
  } else if (kernel == "fa3") {
    if (in.request.attention_kernel == "fa3") return not_here("FlashAttention-3 is already on");
    if (!in.analysis.factors.flash_attention) return not_here("turn flash attention on first (FlashAttention-2)");
  } else {
    return not_here(fmt::format("unknown attention kernel '{}'", kernel));
  }
  r.flash_attention = true;
  r.attention_kernel = kernel;
  r.attention_speedup = in.request.attention_speedup * speedup;
  std::string change = fmt::format("attention kernels {}x faster than before", format_sig3(speedup));
  return changed(std::move(r), {std::move(change)});
}

TransformResult cuda_graphs(const Params&, const TransformInput& in) {
  if (in.analysis.factors.graphs) return not_here("the decode step is already a CUDA graph");
  ScenarioRequest r = in.request;
  r.graphs = true;
  return changed(std::move(r), {"decode step captured as a CUDA graph"});
}

TransformResult tensor_parallel(const Params& p, const TransformInput& in) {
  const int64_t degree = std::lround(number(p, "degree", 2));
  if (in.request.tp >= degree) return not_here(fmt::format("tensor parallelism is already {}", in.request.tp));
  if (in.request.dp_attention > 1) return not_here("attention runs in data-parallel ranks (--dp-attention)");
  ScenarioRequest r = in.request;
  r.tp = degree;
  r.gpus = degree * r.pp;
  std::string change = fmt::format("{} GPUs, tensor parallel {}", r.gpus, degree);
  return changed(std::move(r), {std::move(change)});
}

/// Data-parallel replicas in place of tensor parallelism: the same GPUs as copies of a smaller
/// layout, each serving its share of the sequences (the total kept, rounded up; under --batch max
/// each copy fills its own memory). Of the degrees that divide tp and hold the model, the one that
/// serves fastest is taken (the smaller on a tie).
/// The layout(t) that serves the most tokens per second and holds the model, over the tensor-parallel
/// degrees t that divide the scenario's and are smaller; empty when none does. A layout the model or
/// engine refuses (heads or experts not divisible, ...) is skipped.
std::optional<ScenarioRequest> fastest_split(const TransformInput& in, const std::function<ScenarioRequest(uint32_t)>& layout) {
  const uint32_t tp = in.prepared.scenario.workload.tp;
  std::optional<ScenarioRequest> best;
  double best_rate = 0;
  for (uint32_t t = 1; t < tp; ++t) {
    if (tp % t != 0) continue;
    ScenarioRequest r = layout(t);
    Analysis a;
    try {
      a = analyze(prepare_scenario(in.catalog, r, in.prepared.model).scenario, Detail::kNumbers);
    } catch (const Error&) {
      continue;
    }
    if (!a.memory.fits) continue;
    if (!best || a.serving_tokens_per_s > best_rate) best = std::move(r), best_rate = a.serving_tokens_per_s;
  }
  return best;
}

TransformResult replicate(const Params&, const TransformInput& in) {
  const Workload& w = in.prepared.scenario.workload;
  if (w.tp < 2) return not_here("one GPU per copy already (tensor parallel 1)");
  if (w.pp > 1) return not_here(fmt::format("pipeline parallel {}: the stages would have to be re-planned", w.pp));
  if (w.dp_attention > 1) return not_here("attention runs in data-parallel ranks (--dp-attention)");
  std::optional<ScenarioRequest> best = fastest_split(in, [&](uint32_t t) {
    const uint32_t copies = w.tp / t;
    ScenarioRequest r = in.request;
    r.tp = t;
    r.gpus = t;
    r.replicas = static_cast<int64_t>(w.replicas) * copies;
    if (!w.batch_max) r.batch = std::to_string((w.batch + copies - 1) / copies);
    return r;
  });
  if (!best) return not_here(fmt::format("no smaller tensor-parallel degree than {} holds the model", w.tp));
  const auto copies = static_cast<uint32_t>(w.tp / best->tp);
  std::vector<std::string> notes = {fmt::format("tensor parallel {} -> {} replicas of tensor parallel {} on the same {} GPUs", w.tp,
                                                copies * w.replicas, best->tp, w.total_gpus())};
  if (!w.batch_max) notes.push_back(fmt::format("batch {} -> {} per replica (the same concurrency in all)", w.batch, best->batch_or_default()));
  return changed(std::move(*best), std::move(notes));
}

/// Expert parallelism with data-parallel attention in place of tensor parallelism on a MoE model:
/// the same GPUs hold the routed experts sharded over all of them (ep = the GPUs) while attention
/// runs in dp-attention ranks of a smaller tensor-parallel degree, each with its own sequences and
/// KV cache (the batch kept; under --batch max each rank fills its own memory). Of the degrees
/// that divide tp and hold the model, the one that serves fastest is taken (the smaller tp on a tie).
TransformResult expert_parallel(const Params&, const TransformInput& in) {
  const Workload& w = in.prepared.scenario.workload;
  const ModelSpec& m = in.prepared.scenario.model;
  if (m.num_experts == 0) return not_here(fmt::format("{} has no routed experts", m.name));
  if (w.dp_attention > 1 || w.ep > 1) return not_here("expert parallelism is on already");
  if (w.tp < 2) return not_here("one GPU per copy already (tensor parallel 1)");
  std::optional<ScenarioRequest> best = fastest_split(in, [&](uint32_t t) {
    ScenarioRequest r = in.request;
    r.tp = t;
    r.dp_attention = w.tp / t;
    r.ep = w.tp;
    r.gpus = static_cast<int64_t>(w.tp) * w.pp;
    return r;
  });
  if (!best) return not_here(fmt::format("no data-parallel attention layout on {} GPUs holds the model", w.tp));
  return changed(std::move(*best), {fmt::format("tensor parallel {} -> {} attention ranks of tensor parallel {}, experts sharded over all "
                                                "{} GPUs (expert parallel {})",
                                                w.tp, best->dp_attention, best->tp, w.tp, w.tp)});
}

/// llama.cpp's expert offload in place of layer offload: the routed experts of the first N layers
/// stay in host memory (--n-cpu-moe N) and every layer's attention, shared experts and norms run on
/// the GPU. N is the smallest count with which the rest fits (memory falls as N grows, so a
/// bisection finds it); --cpu-moe when N is every layer.
TransformResult offload_experts(const Params&, const TransformInput& in) {
  const Scenario& s = in.prepared.scenario;
  const uint64_t layers = s.model.num_hidden_layers;
  if (s.model.num_experts == 0 || s.weights.routed_expert_bytes <= 0) return not_here(fmt::format("{} has no routed experts", s.model.name));
  if (!s.engine.engine->offloads_to_host || s.hardware->unified_memory)
    return not_here(fmt::format("{} keeps no experts in host memory on {}", s.engine.engine->name, s.hardware->name));
  if (in.request.n_cpu_moe || in.request.cpu_moe) return not_here("the experts are already in host memory (--n-cpu-moe)");
  if (s.workload.tp > 1 || s.workload.pp > 1) return not_here("expert offload is modelled on one GPU");
  if (in.analysis.memory.fits) return not_here("it fits on the GPU already");
  const auto fits_with = [&](uint64_t n) {
    ScenarioRequest r = in.request;
    r.n_cpu_moe = static_cast<int64_t>(n);
    try {
      return analyze(prepare_scenario(in.catalog, r, in.prepared.model).scenario, Detail::kNumbers).memory.fits;
    } catch (const Error&) {
      return false;
    }
  };
  if (!fits_with(layers)) return not_here("even with every layer's experts in host memory the rest does not fit");
  uint64_t lo = 1, hi = layers;  // fits_with(hi) holds
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (fits_with(mid))
      hi = mid;
    else
      lo = mid + 1;
  }
  ScenarioRequest r = in.request;
  if (hi == layers)
    r.cpu_moe = true;
  else
    r.n_cpu_moe = static_cast<int64_t>(hi);
  std::string note = fmt::format("the routed experts of {} of {} layers in host memory ({}), every layer's attention on the GPU", hi,
                                 layers, hi == layers ? "--cpu-moe" : fmt::format("--n-cpu-moe {}", hi));
  return changed(std::move(r), {std::move(note)});
}

TransformResult set_batch(const Params& p, const TransformInput& in) {
  ScenarioRequest r = in.request;
  const uint64_t current = in.analysis.batch;
  if (p.at("batch").is_string()) {
    if (in.request.batch == "max") return not_here("the batch is already as large as fits");
    const uint64_t fit = std::min<uint64_t>(in.analysis.memory.max_batch, in.prepared.scenario.engine.engine->max_batch);
    if (fit <= current) return not_here(fmt::format("no room for more sequences: {} of this context fit", in.analysis.memory.max_batch));
    r.batch = "max";
    std::string change = fmt::format("batch {} -> {} (as many as fit)", current, fit);
    return changed(std::move(r), {std::move(change)});
  }
  const uint64_t want = p.at("batch").get<uint64_t>();
  if (want <= current) return not_here(fmt::format("the batch is already {}", current));
  r.batch = std::to_string(want);
  std::string change = fmt::format("batch {} -> {}", current, want);
  return changed(std::move(r), {std::move(change)});
}

/// A larger prompt microbatch (llama.cpp -ub): each pass reads the weights once and a MoE model's
/// grouped expert GEMMs fill their tiles with the tokens routed to each expert, so fewer, larger
/// passes prefill faster while the compute buffer grows with the pass. Of the powers of two above
/// today's up to max_tokens (stopping at the first that takes the prompt in one pass), the one with
/// the shortest request that still fits is taken (the smaller on a tie): where layers already spill
/// to host memory, a larger buffer can spill one more and slow every decode step.
TransformResult prefill_ubatch(const Params& p, const TransformInput& in) {
  const Scenario& s = in.prepared.scenario;
  if (s.engine.engine->memory.activation_model != ActivationModel::kGgmlUbatch)
    return not_here(fmt::format("{} sizes its prefill steps itself (no microbatch option)", s.engine.engine->name));
  const uint64_t current = s.prefill_chunk_tokens();
  if (in.analysis.prefill.passes <= 1) return not_here(fmt::format("the prompt already runs in one pass of up to {} tokens", current));
  const auto max_tokens = static_cast<uint64_t>(std::max(number(p, "max_tokens"), 0.0));
  std::optional<ScenarioRequest> best;
  double best_s = in.analysis.request_latency_s;
  for (uint64_t tokens = current * 2; tokens <= max_tokens; tokens *= 2) {
    ScenarioRequest r = in.request;
    r.ubatch_tokens = static_cast<int64_t>(tokens);
    Analysis a;
    try {
      a = analyze(prepare_scenario(in.catalog, r, in.prepared.model).scenario, Detail::kNumbers);
    } catch (const Error&) {
      break;
    }
    if (in.analysis.memory.fits && !a.memory.fits) break;  // larger passes only need more memory
    if (a.request_latency_s < best_s) best = std::move(r), best_s = a.request_latency_s;
    if (a.prefill.passes <= 1) break;
  }
  if (!best) return not_here(fmt::format("no larger microbatch than {} tokens makes a request faster within memory", current));
  std::string change = fmt::format("prompt microbatch {} -> {} tokens (llama.cpp -ub)", current, best->ubatch_tokens);
  return changed(std::move(*best), {std::move(change)});
}

TransformResult switch_backend(const Params& p, const TransformInput& in) {
  const Scenario& s = in.prepared.scenario;
  const std::string backend = p.at("backend").get<std::string>();
  if (s.engine.backend->name == backend) return not_here(fmt::format("the backend is already {}", backend));
  const std::string target = s.engine.engine->id + ":" + backend;
  const auto& listed = s.hardware->engines;
  if (std::find(listed.begin(), listed.end(), target) == listed.end())
    return not_here(fmt::format("{} does not run {}", s.hardware->name, target));
  // The same engine and file: the weights, the microbatch and the build carry over.
  ScenarioRequest r = in.request;
  r.engine = s.engine.version.empty() ? target : target + "@" + s.engine.version;
  return changed(std::move(r), {fmt::format("backend: {} -> {} (the same GGUF file)", s.engine.id(), target)});
}

TransformResult switch_engine(const Params& p, const TransformInput& in) {
  const Scenario& s = in.prepared.scenario;
  const std::string target = p.at("engine").get<std::string>();
  if (s.engine.engine->id == target) return not_here(fmt::format("the engine is already {}", target));
  const EngineProfile& engine = in.catalog.resolve_engine(target);
  // Keep the precision: the map's format for this precision class, else the next wider one.
  const Params& map = p.at("quants");
  std::vector<std::string> order;
  const std::string cls = precision_class(s.weights.bits_per_weight);
  for (const std::string c : {"4", "8", "16"})
    if (std::stoi(c) >= std::stoi(cls)) order.push_back(c);
  order.push_back("*");
  const QuantFormat* chosen = nullptr;
  for (const auto& c : order) {
    if (!map.contains(c)) continue;
    const QuantFormat* f = in.catalog.quant().find(map.at(c).get<std::string>());
    if (f && engine_runs(engine, *f) && runs_natively(*f, s.hardware->capabilities)) {
      chosen = f;
      break;
    }
  }
  if (!chosen) return not_here(fmt::format("no weight format of this precision runs on {} with {}", s.hardware->name, target));
  ScenarioRequest r = in.request;
  r.engine = target;
  r.quant = chosen->id;
  r.weights_size.clear();  // another engine's format is another file
  if (std::find(engine.kv_dtypes.begin(), engine.kv_dtypes.end(), s.workload.kv_dtype) == engine.kv_dtypes.end()) r.kv_dtype.clear();
  if (engine.multi_device == MultiDevice::kLayers && r.tp > 1) {
    r.pp = r.tp * r.pp;
    r.tp = 1;
  }
  // Engine-specific choices do not carry over.
  r.ubatch_tokens = 0;
  std::string change = fmt::format("engine: {} -> {}, weights: {} -> {}", s.engine.id(), target, in.prepared.quant->id, chosen->id);
  return changed(std::move(r), {std::move(change)});
}

TransformResult limit_context(const Params&, const TransformInput& in) {
  const Workload& w = in.prepared.scenario.workload;
  const uint64_t context = w.context();
  const uint64_t fit = in.analysis.memory.max_context;
  if (fit >= context) return not_here("the context already fits");
  if (fit <= w.gen_tokens)
    return not_here(
        fmt::format("not even {} tokens of context fit: the weights and buffers leave no room for the KV cache", w.gen_tokens + 1));
  ScenarioRequest r = in.request;
  r.context_tokens = static_cast<int64_t>(fit);
  std::string note = fmt::format("context {} -> {} tokens", context, fit);
  if (w.prompt_tokens + w.gen_tokens > fit) {
    r.prompt_tokens = static_cast<int64_t>(fit - w.gen_tokens);
    note += fmt::format(" (prompt {} -> {} tokens)", w.prompt_tokens, *r.prompt_tokens);
  }
  return changed(std::move(r), {note});
}

TransformResult raise_wired_limit(const Params& p, const TransformInput& in) {
  const HardwareProfile& hw = *in.prepared.scenario.hardware;
  const double fraction = number(p, "fraction");
  if (hw.app_limit_bytes) return not_here("phones have a per-app limit, not a wired-memory limit");
  const double current = in.request.usable_memory_fraction.value_or(hw.memory_usable_fraction.value_or(1.0));
  if (!hw.memory_usable_fraction || current >= fraction)
    return not_here(fmt::format("the GPU may already use {:.0f}% of memory", current * 100));
  ScenarioRequest r = in.request;
  r.usable_memory_fraction = fraction;
  std::string change = fmt::format("GPU memory limit {:.0f}% -> {:.0f}% of RAM", current * 100, fraction * 100);
  return changed(std::move(r), {std::move(change)});
}

/// vLLM's gpu_memory_utilization or SGLang's mem_fraction_static raised to the share the scenario
/// needs (to the next hundredth), as long as `free_bytes` of each device stay outside it.
TransformResult raise_memory_share(const Params& p, const TransformInput& in) {
  const Scenario& s = in.prepared.scenario;
  const MemoryBreakdown& mem = in.analysis.memory;
  const std::optional<double> share = mem.engine_share;
  if (!share) return not_here(fmt::format("{} does not claim a share of memory up front", s.engine.engine->id));
  if (mem.fits) return not_here(fmt::format("it fits in the engine's share already ({:.2f})", *share));
  const double room = mem.limit_bytes / *share;  // the memory the share is of
  const double next = *memory_share_to_fit(mem);
  const double highest = 1.0 - number(p, "free_bytes") / room;
  if (next > highest)
    return not_here(fmt::format("it needs {:.2f} of each device's {}, above the {:.3f} that leaves {} outside the engine", next,
                                format_gb(room), highest, format_gb(number(p, "free_bytes"))));
  ScenarioRequest r = in.request;
  r.engine_memory_share = next;
  std::string change = fmt::format("{} memory share: {:.2f} -> {:.2f} of each device's {}", s.engine.engine->id, *share, next, format_gb(room));
  return changed(std::move(r), {std::move(change)});
}

TransformResult memory_entitlement(const Params&, const TransformInput& in) {
  const HardwareProfile& hw = *in.prepared.scenario.hardware;
  if (!hw.app_limit_bytes || !hw.app_limit_entitled_bytes) return not_here("no entitled memory limit is known for this device");
  if (in.request.entitled_memory_limit) return not_here("the entitlement is already counted");
  ScenarioRequest r = in.request;
  r.entitled_memory_limit = true;
  std::string change = fmt::format("app memory limit {} -> {}", format_gb(*hw.app_limit_bytes), format_gb(*hw.app_limit_entitled_bytes));
  return changed(std::move(r), {std::move(change)});
}

TransformResult mmap_weights(const Params&, const TransformInput& in) {
  if (!in.prepared.scenario.hardware->app_limit_bytes) return not_here("no per-app footprint limit applies on this device");
  if (in.request.weights_mmap) return not_here("the weights are already mapped");
  ScenarioRequest r = in.request;
  r.weights_mmap = true;
  return changed(std::move(r), {"weights mapped read-only from the file (clean pages, outside the app footprint)"});
}

double kv_elements_per_token(const ModelSpec& m, uint64_t context) {
  return static_cast<double>(kv_cache_elements(m, std::max<uint64_t>(context, 1), 1, KvWindowPolicy::kCapSlidingLayers)) /
         static_cast<double>(std::max<uint64_t>(context, 1));
}

TransformResult switch_model(const Params& p, const TransformInput& in) {
  const Scenario& s = in.prepared.scenario;
  const std::string select = p.at("select").get<std::string>();
  const double params = static_cast<double>(parameter_count(s.model));
  const ModelSpec* best = nullptr;
  std::string why;
  if (select == "kv-efficient") {
    const double band = number(p, "params_band", 2.0);
    const double max_ratio = number(p, "max_kv_ratio", 0.5);
    const uint64_t context = s.workload.context();
    const double own = kv_elements_per_token(s.model, context);
    double best_distance = 0;
    for (const auto& m : in.catalog.models()) {
      if (m.sliding_window == 0 && m.kv_lora_rank == 0) continue;
      const double mp = static_cast<double>(parameter_count(m));
      if (mp > params * band || mp < params / band) continue;
      if (m.max_position_embeddings && m.max_position_embeddings < context) continue;
      if (kv_elements_per_token(m, context) > max_ratio * own) continue;
      const double distance = std::fabs(std::log(mp / params));
      if (!best || distance < best_distance) best = &m, best_distance = distance;
    }
    if (!best) return not_here("no catalog model of a similar size caches markedly less KV at this context");
    why = fmt::format("model: {} -> {} ({}; KV per token at {} tokens {:.2f}x)", s.model.id, best->id,
                      best->kv_lora_rank ? "multi-head latent attention" : "sliding-window layers", context,
                      kv_elements_per_token(*best, context) / own);
  } else if (select == "sustained") {
    const double sustained = s.hardware->sustained_fraction.value_or(1.0);
    if (sustained >= 1.0) return not_here(fmt::format("{} is not known to throttle", s.hardware->name));
    const double target = static_cast<double>(active_parameter_count(s.model)) * sustained;
    for (int pass = 0; pass < 2 && !best; ++pass) {
      for (const auto& m : in.catalog.models()) {
        if (pass == 0 && m.model_type != s.model.model_type) continue;
        const double active = static_cast<double>(active_parameter_count(m));
        if (active > target || m.id == s.model.id) continue;
        if (!best || active > static_cast<double>(active_parameter_count(*best))) best = &m;
      }
    }
    if (!best) return not_here("no smaller model is in the catalog");
    why = fmt::format("model: {} -> {} (at most {:.0f}% of the active parameters, the sustained share of burst speed)", s.model.id,
                      best->id, sustained * 100);
  } else {
    return not_here(fmt::format("unknown model selection '{}'", select));
  }
  ScenarioRequest r = in.request;
  r.model = ModelRequest{};
  r.model.preset = best->id;
  r.weights_size.clear();  // the measured size was of the other model's file
  if (!in.prepared.model.gguf_quant_id.empty() && r.quant.empty()) r.quant = in.prepared.quant->id;
  return changed(std::move(r), {why});
}

// --- training ---------------------------------------------------------------

TransformResult training_changed(TrainingRequest request, std::vector<std::string> notes) {
  TransformResult r;
  r.training_request = std::move(request);
  r.notes = std::move(notes);
  return r;
}

int sharding_stage(const std::string& name) {
  if (name == "zero1") return 1;
  if (name == "zero2") return 2;
  if (name == "zero3" || name == "fsdp") return 3;
  return 0;
}

/// Runs a changed training request through the model (for transforms that search).
std::optional<TrainingAnalysis> try_training(const TransformInput& in, const TrainingRequest& r) {
  try {
    return analyze_training(prepare_training(in.catalog, r, in.training->model).scenario);
  } catch (const Error&) {
    return std::nullopt;
  }
}

TransformResult training_precision(const Params& p, const TransformInput& in) {
  const std::string precision = p.at("precision").get<std::string>();
  const std::string current(to_string(in.training->scenario.workload.precision));
  if (current == precision) return not_here(fmt::format("the step already runs in {}", precision));
  TrainingRequest r = *in.training_request;
  r.precision = precision;
  std::string change = fmt::format("precision: {} -> {}", current, precision);
  return training_changed(std::move(r), {std::move(change)});
}

TransformResult recompute(const Params& p, const TransformInput& in) {
  const std::string mode = p.at("mode").get<std::string>();
  const Recompute current = in.training->scenario.workload.recompute;
  auto rank = [](const std::string& m) { return m == "full" ? 2 : m == "selective" ? 1 : 0; };
  if (rank(std::string(to_string(current))) >= rank(mode))
    return not_here(fmt::format("activation recomputation is already {}", to_string(current)));
  TrainingRequest r = *in.training_request;
  r.recompute = mode;
  std::string change = fmt::format("recompute: {} -> {}", to_string(current), mode);
  return training_changed(std::move(r), {std::move(change)});
}

TransformResult sharding(const Params& p, const TransformInput& in) {
  const TrainingScenario& sc = in.training->scenario;
  const auto target = for_engine(p.at("name"), sc.engine->id);
  if (!target) return not_here(fmt::format("no sharding mode is given for {}", sc.engine->id));
  if (std::find(sc.engine->shardings.begin(), sc.engine->shardings.end(), *target) == sc.engine->shardings.end())
    return not_here(fmt::format("{} has no {} sharding", sc.engine->id, *target));
  if (sc.workload.dp < 2) return not_here("one data-parallel rank: there is nothing to shard over (add GPUs)");
  if (sharding_stage(*target) <= sc.workload.sharding.stage)
    return not_here(fmt::format("{} already shards as much ({})", sc.workload.sharding.name, sc.workload.sharding.stage));
  TrainingRequest r = *in.training_request;
  r.sharding = *target;
  std::string change = fmt::format("sharding: {} -> {}", sc.workload.sharding.name, *target);
  return training_changed(std::move(r), {std::move(change)});
}

TransformResult micro_batch(const Params& p, const TransformInput& in) {
  const std::string mode = p.at("mode").get<std::string>();
  const TrainingWorkload& w = in.training->scenario.workload;
  const bool fits = in.training_analysis->memory.fits;
  TrainingRequest r = *in.training_request;
  // Keep the optimizer step's batch: what the micro-batch gives up, accumulation makes up.
  const uint64_t global = w.global_batch;
  r.global_batch = static_cast<int64_t>(global);
  if (mode == "fit") {
    if (fits) return not_here("the step fits already");
    if (w.micro_batch <= 1) return not_here("the micro-batch is already 1");
    for (uint64_t micro = w.micro_batch / 2; micro >= 1; micro /= 2) {
      r.micro_batch = static_cast<int64_t>(micro);
      auto a = try_training(in, r);
      if (a && a->memory.fits)
        return training_changed(r, {fmt::format("micro-batch {} -> {}, accumulating {} microbatches per step (global batch {} kept)",
                                                w.micro_batch, micro, global / (w.dp * micro), global)});
      if (micro == 1) break;
    }
    return not_here("even a micro-batch of 1 does not fit");
  }
  if (!fits) return not_here("the step does not fit yet");
  uint64_t best = 0;
  for (uint64_t micro = w.micro_batch * 2; micro <= w.micro_batch * 64; micro *= 2) {
    TrainingRequest t = r;
    t.micro_batch = static_cast<int64_t>(micro);
    if (global % (w.dp * micro) != 0) t.global_batch = static_cast<int64_t>(w.dp * micro);
    auto a = try_training(in, t);
    if (!a || !a->memory.fits) break;
    best = micro;
  }
  if (best == 0) return not_here(fmt::format("a micro-batch of {} does not fit", w.micro_batch * 2));
  r.micro_batch = static_cast<int64_t>(best);
  std::string note = fmt::format("micro-batch {} -> {}", w.micro_batch, best);
  if (global % (w.dp * best) != 0) {
    r.global_batch = static_cast<int64_t>(w.dp * best);
    note += fmt::format("; the global batch grows {} -> {} sequences (re-tune the learning rate)", global, w.dp * best);
  } else {
    note += fmt::format(", {} microbatches per step (global batch {} kept)", global / (w.dp * best), global);
  }
  return training_changed(std::move(r), {note});
}

TransformResult context_parallel(const Params& p, const TransformInput& in) {
  const TrainingWorkload& w = in.training->scenario.workload;
  const uint32_t degree = static_cast<uint32_t>(std::lround(number(p, "degree", 2)));
  const uint32_t cp = w.cp * degree;
  if (w.gpus % (w.tp * w.pp * cp) != 0)
    return not_here(fmt::format("{} GPUs do not split into tp {} x pp {} x cp {}", w.gpus, w.tp, w.pp, cp));
  TrainingRequest r = *in.training_request;
  r.cp = cp;
  r.gpus = w.gpus;
  const uint64_t dp = w.gpus / (w.tp * w.pp * cp);
  // The same sequences per step: fewer data-parallel ranks accumulate more.
  if (w.global_batch % (dp * w.micro_batch) == 0) r.global_batch = static_cast<int64_t>(w.global_batch);
  std::string change = fmt::format("context parallel {} -> {} over the same {} GPUs (data parallel {} -> {})", w.cp, cp, w.gpus, w.dp, dp);
  return training_changed(std::move(r), {std::move(change)});
}

TransformResult sequence_parallel(const Params&, const TransformInput& in) {
  const TrainingWorkload& w = in.training->scenario.workload;
  if (w.tp < 2) return not_here("sequence parallelism splits along tensor parallelism; tp is 1");
  if (w.sequence_parallel) return not_here("sequence parallelism is already on");
  TrainingRequest r = *in.training_request;
  r.sequence_parallel = true;
  return training_changed(std::move(r), {"sequence parallelism on"});
}

TransformResult compile(const Params&, const TransformInput& in) {
  const TrainingScenario& sc = in.training->scenario;
  if (!sc.engine->compile.supported) return not_here(fmt::format("{} has no torch.compile switch", sc.engine->name));
  if (sc.workload.compiled) return not_here("the blocks are compiled already");
  TrainingRequest r = *in.training_request;
  r.compile = true;
  return training_changed(std::move(r), {"torch.compile on: elementwise kernels fused"});
}

TransformResult lora(const Params& p, const TransformInput& in) {
  const TrainingWorkload& w = in.training->scenario.workload;
  if (w.lora_rank > 0) return not_here(fmt::format("already training LoRA adapters (rank {})", w.lora_rank));
  TrainingRequest r = *in.training_request;
  r.lora_rank = std::lround(number(p, "rank", 16));
  r.quant = p.value("base", "");
  std::string change = fmt::format("LoRA rank {} on a {} base", r.lora_rank, r.quant.empty() ? "16-bit" : r.quant);
  return training_changed(std::move(r), {std::move(change)});
}

TransformResult optimizer(const Params& p, const TransformInput& in) {
  const std::string id = p.at("id").get<std::string>();
  const std::string current = in.training->scenario.workload.optimizer;
  if (current == id) return not_here(fmt::format("the optimizer is already {}", id));
  const auto& list = in.training->scenario.engine->optimizers;
  if (std::find(list.begin(), list.end(), id) == list.end())
    return not_here(fmt::format("{} has no {} optimizer", in.training->scenario.engine->id, id));
  TrainingRequest r = *in.training_request;
  r.optimizer = id;
  std::string change = fmt::format("optimizer: {} -> {}", current, id);
  return training_changed(std::move(r), {std::move(change)});
}

TransformResult offload(const Params& p, const TransformInput& in) {
  const std::string what = p.at("what").get<std::string>();
  const TrainingScenario& sc = in.training->scenario;
  const TrainingWorkload& w = sc.workload;
  const bool optimizer = what == "optimizer";
  if (!optimizer && what != "activations") return not_here(fmt::format("nothing called '{}' is offloaded", what));
  if (optimizer ? w.optimizer_offload : w.activation_offload) return not_here(fmt::format("the {} are already in host memory", what == "optimizer" ? "optimizer states" : "activations"));
  if ((optimizer ? sc.engine->offload.optimizer_how : sc.engine->offload.activations_how).empty())
    return not_here(fmt::format("{} has no {} offload in this model", sc.engine->id, what));
  TrainingRequest r = *in.training_request;
  (optimizer ? r.optimizer_offload : r.activation_offload) = true;
  return training_changed(std::move(r), {optimizer ? "master weights and optimizer moments to host memory; the optimizer step on the CPU"
                                                   : "saved activations to host memory, back for the backward pass"});
}

/// Another training framework, with its own default sharding (the names differ between frameworks).
TransformResult training_engine(const Params& p, const TransformInput& in) {
  const std::string id = p.at("engine").get<std::string>();
  const TrainingScenario& sc = in.training->scenario;
  if (sc.engine->id == id) return not_here(fmt::format("the job already trains with {}", id));
  TrainingRequest r = *in.training_request;
  r.engine = id;
  r.sharding.clear();
  r.pp_schedule.clear();
  r.virtual_stages = 0;
  return training_changed(std::move(r), {fmt::format("framework: {} -> {} (its default sharding)", sc.engine->id, id)});
}

/// The fewest GPUs, doubling, that make the step fit with every model state sharded: the same
/// per-rank batch, so the global batch grows with the ranks unless it already spans them.
TransformResult scale_out(const Params& p, const TransformInput& in) {
  const TrainingScenario& sc = in.training->scenario;
  const TrainingWorkload& w = sc.workload;
  if (in.training_analysis->memory.fits) return not_here("the step fits already");
  const auto target = for_engine(p.at("sharding"), sc.engine->id);
  if (!target) return not_here(fmt::format("no sharding mode is given for {}", sc.engine->id));
  const uint64_t max_gpus = static_cast<uint64_t>(std::lround(number(p, "max_gpus", 512)));
  TrainingRequest r = *in.training_request;
  r.sharding = *target;
  for (uint64_t gpus = uint64_t{w.gpus} * 2; gpus <= max_gpus; gpus *= 2) {
    r.gpus = static_cast<int64_t>(gpus);
    const uint64_t dp = gpus / (uint64_t{w.tp} * w.pp * w.cp);
    const uint64_t per_step = dp * w.micro_batch;  // the global batch stays a whole number of microbatches per rank
    r.global_batch = static_cast<int64_t>((std::max<uint64_t>(w.global_batch, per_step) + per_step - 1) / per_step * per_step);
    auto a = try_training(in, r);
    if (a && a->memory.fits)
      return training_changed(r, {fmt::format("{} -> {} GPUs, sharding {} (data parallel {} -> {}; global batch {} -> {})", w.gpus, gpus,
                                              *target, w.dp, dp, w.global_batch, r.global_batch)});
  }
  return not_here(fmt::format("even {} GPUs with {} sharding do not fit", max_gpus, *target));
}

using TransformFn = TransformResult (*)(const Params&, const TransformInput&);

struct Entry {
  TransformInfo info;
  TransformFn fn;
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> list = {
      {{"quantize_weights",
        "store the weights in another format (re-quantized per tensor, as the format's tool would)",
        {{"quant", "quant", true, "format id, or {engine id: format id, \"*\": format id}"}}},
       quantize_weights},
      {{"kv_cache_dtype",
        "store the KV cache in another element type",
        {{"dtype", "kv-dtype", true, "KV-cache dtype, or {engine id: dtype, \"*\": dtype}"}}},
       kv_cache_dtype},
      {{"speculative_decoding",
        "draft tokens cheaply and verify them in one target step",
        {{"method", "string", true, "eagle, medusa, mtp, draft-model or ngram"},
         {"acceptance_rate", "number-map", false,
          "probability that a drafted token is accepted when the ones before it were, or {engine id: rate, \"*\": rate}; "
          "the advisor picks the number of drafts"},
         {"same_family_rate", "number-map", false, "draft-model: the acceptance rate of a draft of the target's own family"},
         {"max_draft_tokens", "number", false, "most drafts per step the search tries"},
         {"verify_tokens", "number-map", false,
          "tokens per sequence the target verifies in one pass when the drafts form a tree, or {engine id: tokens}; the depth "
          "searched stays below it (default: a chain, drafts + 1)"},
         {"accepted_tokens", "number", false, "without acceptance_rate: mean tokens kept per step of draft_tokens drafts"},
         {"draft_tokens", "number", false, "without acceptance_rate: tokens drafted and verified per step"},
         {"draft_overhead", "number", false,
          "drafting cost per step as a fraction of a plain decode step (computed for every drafter but none)"},
         {"drafter", "string", false, "what drafts: one-layer, heads, mtp (the model's own MTP layers), draft-model or none"},
         {"draft_vocab", "number", false, "one-layer: tokens of the drafter's output layer"},
         {"heads", "number", false, "Medusa heads (drafter heads)"},
         {"max_draft_fraction", "number", false, "draft-model: largest draft as a fraction of the target's parameters"}}},
       speculative_decoding},
      {{"prefix_caching",
        "serve a shared prompt prefix from the KV cache instead of recomputing it",
        {{"shared_fraction", "number", true, "share of each prompt that is a cached prefix"}}},
       prefix_caching},
      {{"flash_attention",
        "fused attention kernels",
        {{"kernel", "string", true, "fa2 or fa3"}, {"speedup", "number", true, "attention kernel speed-up over what runs now"}}},
       flash_attention},
      {{"cuda_graphs", "capture the decode step as a CUDA graph", {}}, cuda_graphs},
      {{"tensor_parallel", "split every layer across GPUs", {{"degree", "integer", true, "GPUs per model replica"}}}, tensor_parallel},
      {{"replicate", "serve the same GPUs as data-parallel replicas of a smaller tensor-parallel layout", {}}, replicate},
      {{"expert_parallel", "shard the routed experts over every GPU and run attention in data-parallel ranks (MoE)", {}}, expert_parallel},
      {{"offload_experts", "keep the routed experts of the fewest layers that make the rest fit in host memory (llama.cpp --n-cpu-moe)", {}},
       offload_experts},
      {{"set_batch", "serve more sequences at once", {{"batch", "batch", true, "\"max\" (as many as fit) or a number"}}}, set_batch},
      {{"prefill_ubatch",
        "prefill in larger microbatches (llama.cpp -ub): the power of two above today's that makes a request fastest and fits",
        {{"max_tokens", "integer", true, "largest microbatch tried, tokens"}}},
       prefill_ubatch},
      {{"switch_backend",
        "run the same engine and weights on another of its backends for this device (llama.cpp: Vulkan -> ROCm)",
        {{"backend", "string", true, "backend name of the same engine, e.g. rocm"}}},
       switch_backend},
      {{"switch_engine",
        "serve with another engine, keeping the weights' precision",
        {{"engine", "engine", true, "engine id"},
         {"quants", "precision-map", true, "format per precision class: {\"4\": ..., \"8\": ..., \"16\": ..., \"*\": ...}"}}},
       switch_engine},
      {{"limit_context", "cap the context at what fits in memory", {}}, limit_context},
      {{"raise_wired_limit", "raise the macOS GPU wired-memory limit", {{"fraction", "number", true, "share of RAM the GPU may wire"}}},
       raise_wired_limit},
      {{"raise_memory_share",
        "raise the share of memory vLLM or SGLang claims up front to what the scenario needs",
        {{"free_bytes", "number", true, "bytes of each device left outside the engine's share (CUDA context and graphs)"}}},
       raise_memory_share},
      {{"memory_entitlement", "use the increased-memory-limit entitlement (iOS)", {}}, memory_entitlement},
      {{"mmap_weights", "map the weights read-only from the file (outside the iOS footprint)", {}}, mmap_weights},
      {{"switch_model",
        "pick another catalog model",
        {{"select", "string", true, "kv-efficient (sliding-window or MLA of a similar size) or sustained (fits the throttled rate)"},
         {"params_band", "number", false, "kv-efficient: parameter ratio allowed either way"},
         {"max_kv_ratio", "number", false, "kv-efficient: KV per token at most this share of the current model's"}}},
       switch_model},
      {{"training_precision",
        "train in another precision (FP8 GEMMs with BF16 master weights)",
        {{"precision", "string", true, "bf16 or fp8"}},
        true},
       training_precision},
      {{"recompute",
        "recompute activations in the backward pass instead of saving them",
        {{"mode", "string", true, "selective (attention core) or full (every layer)"}},
        true},
       recompute},
      {{"sharding",
        "shard model states over the data-parallel ranks (ZeRO / FSDP)",
        {{"name", "sharding", true, "zero1, zero2, zero3 or fsdp, or {framework id: name}"}},
        true},
       sharding},
      {{"micro_batch",
        "change the micro-batch, keeping the global batch through gradient accumulation",
        {{"mode", "string", true, "max (largest that fits) or fit (smallest change that fits)"}},
        true},
       micro_batch},
      {{"context_parallel",
        "split each sequence over GPUs (ring attention) instead of replicating it",
        {{"degree", "integer", true, "factor to multiply the context-parallel degree by"}},
        true},
       context_parallel},
      {{"sequence_parallel", "split norms and dropout along the sequence with tensor parallelism", {}, true}, sequence_parallel},
      {{"compile", "torch.compile the blocks: fused elementwise kernels", {}, true}, compile},
      {{"lora",
        "train low-rank adapters on a frozen base",
        {{"rank", "integer", true, "adapter rank"}, {"base", "string", false, "frozen base format: \"\" (16-bit) or nf4 (QLoRA)"}},
        true},
       lora},
      {{"optimizer", "use another optimizer", {{"id", "string", true, "optimizer id (adamw-8bit)"}}, true}, optimizer},
      {{"offload",
        "keep optimizer states or saved activations in host memory (ZeRO-Offload, activation offload)",
        {{"what", "string", true, "optimizer or activations"}},
        true},
       offload},
      {{"training_engine",
        "train with another framework (its default sharding)",
        {{"engine", "string", true, "training framework id: pytorch-fsdp2, megatron or deepspeed"}},
        true},
       training_engine},
      {{"scale_out",
        "add GPUs, doubling, until the step fits with every model state sharded",
        {{"sharding", "sharding", true, "the fully sharded mode, or {framework id: name}"},
         {"max_gpus", "number", false, "most GPUs to try (default 512)"}},
        true},
       scale_out},
  };
  return list;
}

}  // namespace

const std::vector<TransformInfo>& transform_catalog() {
  static const std::vector<TransformInfo> infos = [] {
    std::vector<TransformInfo> out;
    for (const auto& e : entries()) out.push_back(e.info);
    return out;
  }();
  return infos;
}

const TransformInfo* find_transform(std::string_view name) {
  for (const auto& t : transform_catalog())
    if (t.name == name) return &t;
  return nullptr;
}

TransformResult apply_transform(const TransformStep& step, const TransformInput& in) {
  for (const auto& e : entries()) {
    if (e.info.name != step.name) continue;
    if (e.info.training != (in.training != nullptr))
      return not_here(fmt::format("'{}' transforms {} scenarios", step.name, e.info.training ? "training" : "inference"));
    return e.fn(step.params, in);
  }
  throw Error(ExitCode::kRuntime, fmt::format("internal: unknown transform '{}'", step.name));
}

double expected_accepted_tokens(double rate, uint32_t drafts) {
  const double a = std::clamp(rate, 0.0, 1.0);
  if (a >= 1.0) return static_cast<double>(drafts) + 1.0;
  return (1.0 - std::pow(a, static_cast<double>(drafts) + 1.0)) / (1.0 - a);
}

std::string precision_class(double bits_per_weight) {
  if (bits_per_weight <= 7.0) return "4";
  if (bits_per_weight <= 11.0) return "8";
  return "16";
}

}  // namespace optadvisor
