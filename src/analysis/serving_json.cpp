// SPDX-License-Identifier: MIT
#include "optadvisor/analysis/serving_json.hpp"

#include "optadvisor/base/version.hpp"

namespace optadvisor {
namespace {

nlohmann::json stats_json(const LatencyStats& s) { return {{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}}; }

nlohmann::json layout_json(const ServePoolRequest& p) {
  return {{"workers", p.workers},
          {"tp", p.layout.tp},
          {"pp", p.layout.pp},
          {"ep", p.layout.ep},
          {"dp_attention", p.layout.dp_attention},
          {"gpus_per_worker", p.layout.gpus()},
          {"max_batch", p.max_batch ? nlohmann::json(p.max_batch) : nlohmann::json(nullptr)},
          {"max_batched_tokens", p.max_batched_tokens ? nlohmann::json(p.max_batched_tokens) : nlohmann::json(nullptr)}};
}

/// The era's errors on measured runs: on this device where it was measured there (`device` set),
/// else pooled over the devices it was (`device` null, `extrapolated` true); null when never measured.
nlohmann::json accuracy_json(const ServingEra* era, const std::string& device) {
  const ServingAccuracy* a = era ? era->accuracy_shown_on(device) : nullptr;
  if (!a) return nullptr;
  const bool extrapolated = a->device.empty();
  return {{"device", extrapolated ? nlohmann::json(nullptr) : nlohmann::json(device)},
          {"extrapolated", extrapolated},
          {"runs", a->runs},
          {"ttft_median_error", a->ttft_median_error},
          {"ttft_p90_error", a->ttft_p90_error},
          {"tpot_median_error", a->tpot_median_error},
          {"tpot_p90_error", a->tpot_p90_error},
          {"measured_on", era->accuracy_devices()},
          {"measured", era->accuracy_measured}};
}

}  // namespace

nlohmann::json length_spread_json(uint64_t mean, const LengthSpread& spread) {
  const LengthRange range = length_range(mean, spread);
  nlohmann::json j = {{"min", range.min}, {"max", range.max}};
  if (spread.kind == LengthSpread::Kind::kUniform) j["kind"] = "uniform", j["range_ratio"] = spread.range_ratio;
  if (spread.kind == LengthSpread::Kind::kNormal) j["kind"] = "normal", j["stddev_tokens"] = spread.stddev_tokens;
  if (spread.fixed()) j["kind"] = "fixed";
  return j;
}

nlohmann::json serving_point_json(const ServeRequest& request, const ServingResult& r) {
  nlohmann::json load = {
      {"prompt_tokens", request.load.prompt_tokens}, {"gen_tokens", request.load.gen_tokens}, {"prefix_hit", request.load.prefix_hit}};
  // The spreads only where the lengths vary, so a fixed-length document reads as it always has.
  if (!request.load.prompt_spread.fixed()) load["prompt_spread"] = length_spread_json(request.load.prompt_tokens, request.load.prompt_spread);
  if (!request.load.gen_spread.fixed()) load["gen_spread"] = length_spread_json(request.load.gen_tokens, request.load.gen_spread);
  if (request.load.concurrency)
    load["concurrency"] = request.load.concurrency;
  else
    load["rate_per_s"] = request.load.rate_per_s;
  return {{"load", load},
          {"fits", r.fits},
          {"ttft_s", stats_json(r.ttft_s)},
          {"tpot_s", stats_json(r.tpot_s)},
          {"e2e_s", stats_json(r.e2e_s)},
          {"output_tokens_per_s", {{"total", r.output_tokens_per_s}, {"per_gpu", r.output_tokens_per_s_per_gpu}}},
          {"requests_per_s", r.requests_per_s},
          {"arrivals_per_s", r.arrivals_per_s},
          {"keeps_up", r.keeps_up},
          {"goodput",
           {{"requests_per_s", r.goodput_requests_per_s},
            {"slo_attained", r.slo_attained},
            {"slo_ttft_s", request.slo_ttft_s > 0 ? nlohmann::json(request.slo_ttft_s) : nlohmann::json(nullptr)},
            {"slo_tpot_s", request.slo_tpot_s > 0 ? nlohmann::json(request.slo_tpot_s) : nlohmann::json(nullptr)}}},
          {"kv_pool", {{"tokens", r.kv_pool_tokens}, {"max_batch", r.max_batch_in_pool}, {"wait_share", r.kv_wait_share}}},
          {"mean_decode_batch", r.mean_decode_batch},
          {"preemptions", r.preemptions},
          {"bound", std::string(to_string(r.bound))},
          {"time_shares",
           {{"compute", r.compute_share},
            {"bandwidth", r.bandwidth_share},
            {"overhead", r.overhead_share},
            {"communication", r.communication_share}}},
          {"gpus", r.gpus},
          {"simulated",
           {{"requests", r.simulated_requests},
            {"warmup_requests", r.warmup_requests},
            {"measured_requests", r.measured_requests},
            {"iterations", r.iterations}}},
          {"notes", r.notes}};
}

nlohmann::json serve_json(const PreparedServing& prepared, const ServeRequest& request, const std::vector<ServeRequest>& points,
                          const std::vector<ServingResult>& results, bool sweep) {
  const Scenario& s = prepared.base.scenario;
  nlohmann::json scenario = {
      {"hardware", {{"id", s.hardware->id}, {"name", s.hardware->name}}},
      {"model", {{"id", s.model.id}, {"name", s.model.name}}},
      {"quant", s.weights.quant_id},
      {"kv_dtype", s.workload.kv_dtype},
      {"engine",
       {{"id", s.engine.engine->id},
        {"version", request.engine_version.empty() ? nlohmann::json(nullptr) : nlohmann::json(request.engine_version)},
        {"era", prepared.era ? prepared.era->from_version : std::string{}},
        {"accuracy", accuracy_json(prepared.era, s.hardware->id)}}},
      {"mode", request.disaggregated ? "disaggregated" : "aggregated"}};
  if (const Speculation& spec = s.workload.speculation; spec.enabled())
    scenario["speculation"] = {{"method", spec.method},
                               {"draft_tokens", spec.draft_tokens},
                               {"verified_tokens", spec.verified_tokens()},
                               {"accepted_tokens", spec.accepted_tokens},
                               {"draft_overhead", spec.draft_overhead},
                               {"draft_memory_bytes", spec.draft_memory_bytes}};
  if (request.disaggregated)
    scenario["prefill"] = layout_json(request.prefill), scenario["decode"] = layout_json(request.decode);
  else
    scenario["layout"] = layout_json(request.aggregated);
  nlohmann::json out = {{"schema_version", kSchemaVersion}, {"scenario", scenario}, {"notes", prepared.notes}};
  if (sweep) {
    nlohmann::json list = nlohmann::json::array();
    for (std::size_t i = 0; i < results.size(); ++i) list.push_back(serving_point_json(points[i], results[i]));
    out["sweep"] = list;
  } else {
    const nlohmann::json point = serving_point_json(points.front(), results.front());
    for (const auto& [key, value] : point.items()) out[key] = value;
  }
  return out;
}

}  // namespace optadvisor
