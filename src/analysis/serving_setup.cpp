// SPDX-License-Identifier: MIT
#include "optadvisor/analysis/serving_setup.hpp"

#include <fmt/format.h>

#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/expert_layout.hpp"
#include "optadvisor/analysis/request_lengths.hpp"
#include "optadvisor/base/error.hpp"

namespace optadvisor {
namespace {

void check_pool(const ModelSpec& model, const ServePoolRequest& pool, const char* name) {
  const ServingLayout& l = pool.layout;
  if (pool.workers < 1 || pool.workers > kMaxServeWorkers)
    throw bad_input(fmt::format("--{}workers {} is out of range", name, pool.workers), fmt::format("use 1 to {}", kMaxServeWorkers));
  for (const auto& [value, option] : {std::pair{l.tp, "tp"}, {l.pp, "pp"}, {l.ep, "ep"}, {l.dp_attention, "dp-attention"}})
    if (value < 1 || value > kMaxServeDegree)
      throw bad_input(fmt::format("--{}{} {} is out of range", name, option, value), fmt::format("use 1 to {}", kMaxServeDegree));
  if (pool.max_batch > kMaxServeConcurrency)
    throw bad_input(fmt::format("--{}max-batch {} is out of range", name, pool.max_batch),
                    fmt::format("use 1 to {}", kMaxServeConcurrency));
  if (pool.max_batched_tokens > kMaxServeBatchedTokens)
    throw bad_input(fmt::format("--{}max-batched-tokens {} is out of range", name, pool.max_batched_tokens),
                    fmt::format("use 1 to {}", kMaxServeBatchedTokens));
  check_expert_layout(model, nullptr, ExpertLayout{l.tp, l.dp_attention, l.ep}, name);
}

ServingPool build_pool(const Catalog& catalog, const ServeRequest& r, const ResolvedModel& model, const ServePoolRequest& pool,
                       ServingRole role, const ServingEra& era, PreparedScenario* keep) {
  ScenarioRequest sr = r.scenario;
  // One attention rank's scenario: the step model spreads the experts over the worker's ranks.
  sr.tp = pool.layout.tp;
  sr.pp = pool.layout.pp;
  sr.ep = sr.dp_attention = 1;
  sr.gpus = static_cast<int64_t>(pool.layout.tp) * pool.layout.pp;
  sr.prompt_tokens = static_cast<int64_t>(r.load.prompt_tokens);
  sr.gen_tokens = static_cast<int64_t>(r.load.gen_tokens);
  if (role == ServingRole::kPrefill) sr.speculation = {};  // a prefill worker drafts nothing
  PreparedScenario prepared = prepare_scenario(catalog, sr, model);
  const Analysis a = analyze(prepared.scenario, Detail::kNumbers);
  ServingPool out;
  out.role = role;
  out.workers = pool.workers;
  out.step = step_model(prepared.scenario, pool.layout, era, a.factors.peak_compute_flops_per_s, pool.max_batched_tokens);
  if (pool.max_batch) out.step.max_sequences = pool.max_batch;
  if (keep) *keep = std::move(prepared);
  return out;
}

/// Says what a worker of `pool` that spans nodes sends over: the device's network, or (where the
/// device records its node but no network) the scale-up link assumed throughout. A device that
/// records neither is taken to be one scale-up domain, as before nodes were recorded.
void note_nodes(const HardwareProfile& hw, const ServePoolRequest& pool, const char* name, std::vector<std::string>& notes) {
  const uint32_t gpus = pool.layout.gpus();
  if (hw.node_gpus == 0 || gpus <= hw.node_gpus) return;
  if (hw.scale_out)
    notes.push_back(fmt::format("{}worker of {} GPUs spans {} nodes of {}: its collectives' off-node share goes over {} at {:.0f} GB/s per GPU",
                                name, gpus, (gpus + hw.node_gpus - 1) / hw.node_gpus, hw.node_gpus, hw.scale_out->kind,
                                hw.scale_out->per_direction_bytes_per_s() / 1e9));
  else
    notes.push_back(fmt::format("{}worker of {} GPUs spans nodes of {}, and {} records no network between them: every GPU is taken to "
                                "be on its scale-up link (optimistic)",
                                name, gpus, hw.node_gpus, hw.name));
}

}  // namespace

void check_serving_lengths(const ModelSpec& model, const ServingLoad& load) {
  if (load.gen_tokens < 1) throw bad_input("--gen must be at least 1 for serving", "a request produces at least its first token");
  if (load.prompt_tokens < 1) throw bad_input("--prompt must be at least 1 for serving");
  const uint64_t context = model.max_position_embeddings;
  if (context && load.prompt_tokens + load.gen_tokens > context)
    throw bad_input(fmt::format("--prompt {} + --gen {} exceeds {}'s context of {} tokens", load.prompt_tokens, load.gen_tokens,
                                model.name, context));
  check_spread(load.prompt_spread, "prompt");
  check_spread(load.gen_spread, "gen");
  const uint64_t prompt = length_range(load.prompt_tokens, load.prompt_spread).max;
  const uint64_t gen = length_range(load.gen_tokens, load.gen_spread).max;
  if (context && prompt + gen > context)
    throw bad_input(fmt::format("the longest request the length spreads draw ({} prompt + {} generated tokens) exceeds {}'s context "
                                "of {} tokens",
                                prompt, gen, model.name, context),
                    "narrow --prompt-range-ratio/--gen-range-ratio or --prompt-stddev/--gen-stddev, or shorten --prompt/--gen");
}

PreparedServing prepare_serving(const Catalog& catalog, const ServeRequest& r) {
  if (r.scenario.hardware.empty()) throw bad_input("no hardware given", "pass --hw NAME (optadvisor hw list)");
  catalog.resolve_hardware(r.scenario.hardware);  // an unknown device is reported before the model is read
  return prepare_serving(catalog, r, resolve_model(catalog, r.scenario.model));
}

PreparedServing prepare_serving(const Catalog& catalog, const ServeRequest& r, const ResolvedModel& model_in) {
  PreparedServing out;
  // Resolve once at tp 1 to learn the model and the engine.
  ScenarioRequest probe = r.scenario;
  probe.tp = probe.pp = probe.ep = probe.dp_attention = 1;
  probe.gpus = 1;
  PreparedScenario base = prepare_scenario(catalog, probe, model_in);
  const ResolvedModel& resolved = base.model;  // with its weights in the format chosen, for the pools
  const EngineProfile& engine = *base.scenario.engine.engine;
  if (!engine.serving.enabled())
    throw bad_input(fmt::format("engine '{}' has no serving model", engine.id),
                    "optadvisor serve models continuous batching for vllm, sglang and tensorrt-llm");
  // What preparing the scenario said about the device, the host and the format (--memory, --host, ...).
  out.notes = base.notes;
  const ServingEra* era = engine.serving.era_for(r.engine_version);
  out.era = era;
  if (!r.engine_version.empty()) {
    const ServingEra& newest = engine.serving.eras.back();
    if (era == &newest && compare_versions(r.engine_version, newest.from_version) > 0 && era->calibrated_on.empty())
      out.notes.push_back(
          fmt::format("{} {}: no calibration era is recorded; the newest era's factors apply", engine.name, r.engine_version));
    else
      out.notes.push_back(fmt::format("{} {}: the calibration era covering {} applies", engine.name, r.engine_version,
                                      engine.serving.era_versions(*era)));
  }
  for (const std::string& caveat : era->caveats) out.notes.push_back(fmt::format("{}: {}", engine.name, caveat));
  const ModelSpec& model = base.scenario.model;
  if (r.load.concurrency == 0 && !(r.load.rate_per_s > 0))
    throw bad_input("no load given", "pass --concurrency C (closed loop) or --rate R (requests per second)");
  if (r.load.concurrency > kMaxServeConcurrency)
    throw bad_input(fmt::format("--concurrency {} is out of range", r.load.concurrency), fmt::format("use 1 to {}", kMaxServeConcurrency));
  check_serving_lengths(model, r.load);
  if (r.disaggregated) {
    check_pool(model, r.prefill, "prefill-");
    check_pool(model, r.decode, "decode-");
    out.setup.pools.push_back(build_pool(catalog, r, resolved, r.prefill, ServingRole::kPrefill, *era, nullptr));
    out.setup.pools.push_back(build_pool(catalog, r, resolved, r.decode, ServingRole::kDecode, *era, &out.base));
    // KV moves prefill -> decode over the device's GPU link where a prefill and a decode worker fit
    // in one node, else over each GPU's network (NIXL over RDMA) where the device records it.
    const HardwareProfile& hw = *out.base.scenario.hardware;
    const Link* link = hw.default_multi_gpu_link();
    const uint64_t pair_gpus = static_cast<uint64_t>(r.prefill.layout.gpus()) + r.decode.layout.gpus();
    if (hw.scale_out && hw.node_gpus > 0 && pair_gpus > hw.node_gpus) link = &*hw.scale_out;
    out.setup.kv_link_peak_bytes_per_s = link ? link->per_direction_bytes_per_s() : 0;
    note_nodes(hw, r.prefill, "a prefill ", out.notes);
    note_nodes(hw, r.decode, "a decode ", out.notes);
  } else {
    check_pool(model, r.aggregated, "");
    out.setup.pools.push_back(build_pool(catalog, r, resolved, r.aggregated, ServingRole::kMixed, *era, &out.base));
    note_nodes(*out.base.scenario.hardware, r.aggregated, "a ", out.notes);
  }
  apply_era(out.setup, *era);
  out.setup.slo_ttft_s = r.slo_ttft_s;
  out.setup.slo_tpot_s = r.slo_tpot_s;
  return out;
}

}  // namespace optadvisor
