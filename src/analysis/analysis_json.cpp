// SPDX-License-Identifier: MIT
#include "optadvisor/analysis/analysis_json.hpp"

#include <vector>

#include "optadvisor/base/version.hpp"

namespace optadvisor {
namespace {

// The keys of the phase and memory sections, one getter each: a full section
// takes them all, a requirement builds only the values it reads.
template <typename T>
using Fields = std::vector<std::pair<std::string, nlohmann::json (*)(const T&)>>;

const Fields<PhaseEstimate>& phase_fields() {
  using P = PhaseEstimate;
  using J = nlohmann::json;
  static const Fields<P> fields = {{"time_s", [](const P& p) -> J { return p.time_s; }},
                                   {"tokens_per_s", [](const P& p) -> J { return p.tokens_per_s; }},
                                   {"tokens_per_s_per_sequence", [](const P& p) -> J { return p.tokens_per_s_per_sequence; }},
                                   {"bound", [](const P& p) -> J { return std::string(to_string(p.bound)); }},
                                   {"explanation", [](const P& p) -> J { return p.explanation(); }},
                                   {"flops", [](const P& p) -> J { return p.flops; }},
                                   {"bytes", [](const P& p) -> J { return p.bytes; }},
                                   {"arithmetic_intensity", [](const P& p) -> J { return p.arithmetic_intensity; }},
                                   {"ridge_point", [](const P& p) -> J { return p.ridge_point; }},
                                   {"passes", [](const P& p) -> J { return p.passes; }},
                                   {"experts", [](const P& p) -> J {
                                      if (p.experts.tokens_per_pass <= 0) return nullptr;
                                      return {{"kernel", p.experts.grouped ? "grouped-gemm" : "mat-vec"},
                                              {"tokens_per_pass", p.experts.tokens_per_pass},
                                              {"tokens_per_expert", p.experts.tokens_per_expert},
                                              {"share_of_dense_rate", p.experts.share_of_dense_rate},
                                              {"per_expert_loop_s", p.experts.per_expert_loop_s},
                                              {"format_terms", p.experts.format_terms.empty() ? J(nullptr) : J(p.experts.format_terms)}};
                                    }},
                                   {"components_s", [](const P& p) -> J {
                                      return {{"compute", p.compute_time_s},   {"weights", p.weights_time_s},
                                              {"kv_cache", p.kv_time_s},       {"offload", p.offload_time_s},
                                              {"overhead", p.overhead_time_s}, {"interconnect", p.interconnect_time_s}};
                                    }}};
  return fields;
}

const Fields<MemoryBreakdown>& memory_fields() {
  using M = MemoryBreakdown;
  using J = nlohmann::json;
  static const Fields<M> fields = {{"weights_bytes", [](const M& m) -> J { return m.weights_bytes; }},
                                   {"kv_cache_bytes", [](const M& m) -> J { return m.kv_cache_bytes; }},
                                   {"activation_bytes", [](const M& m) -> J { return m.activation_bytes; }},
                                   {"overhead_bytes", [](const M& m) -> J { return m.overhead_bytes; }},
                                   {"total_bytes", [](const M& m) -> J { return m.total_bytes; }},
                                   {"capacity_bytes", [](const M& m) -> J { return m.capacity_bytes; }},
                                   {"reserved_bytes", [](const M& m) -> J { return m.reserved_bytes; }},
                                   {"fits", [](const M& m) -> J { return m.fits; }},
                                   {"headroom_bytes", [](const M& m) -> J { return m.limit_bytes - m.total_bytes; }},
                                   {"limit_bytes", [](const M& m) -> J { return m.limit_bytes; }},
                                   {"engine_share", [](const M& m) -> J { return m.engine_share ? J(*m.engine_share) : J(nullptr); }},
                                   {"kv_bytes_per_token", [](const M& m) -> J { return m.kv_bytes_per_token; }},
                                   {"kv_tokens_per_sequence", [](const M& m) -> J { return m.kv_tokens_per_sequence; }},
                                   {"max_batch", [](const M& m) -> J { return m.max_batch; }},
                                   {"max_context_tokens", [](const M& m) -> J { return m.max_context; }},
                                   {"offloaded_layers", [](const M& m) -> J { return m.offloaded_layers; }},
                                   {"total_layers", [](const M& m) -> J { return m.total_layers; }},
                                   {"per_device", [](const M&) -> J { return true; }}};
  return fields;
}

/// Fills `out` with the fields of `value` that `wanted` names: "section" for all, "section.key" for one.
template <typename T>
void add_fields(nlohmann::json& out, const std::string& section, const Fields<T>& fields, const T& value,
                const std::set<std::string>& wanted) {
  const bool all = wanted.count(section) > 0;
  for (const auto& [key, get] : fields)
    if (all || wanted.count(section + "." + key)) out[section][key] = get(value);
}

bool wants(const std::set<std::string>& wanted, const std::string& section, const std::string& key) {
  return wanted.count(section) || wanted.count(section + "." + key);
}

/// Every field of a section.
template <typename T>
nlohmann::json all_fields(const Fields<T>& fields, const T& value) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, get] : fields) out[key] = get(value);
  return out;
}

/// The serving section: the batch the estimate ran, one request's wall time and the output
/// rate over it; output_tokens_per_s is null when the request generates nothing.
nlohmann::json throughput_json(const Workload& w, const Analysis& a) {
  return {{"batch", a.batch},
          {"replicas", w.replicas},
          {"request_latency_s", a.request_latency_s},
          {"output_tokens_per_s", w.gen_tokens > 0 ? nlohmann::json(a.serving_tokens_per_s) : nlohmann::json(nullptr)}};
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (std::size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) s.replace(pos, from.size(), to);
}

/// The engine, the version the user named after '@' (null: the newest), and the earlier kernels
/// that version runs where the backend lists a change after it (null: the newest kernels).
nlohmann::json engine_json(const EngineChoice& e) {
  nlohmann::json earlier = nullptr;
  if (e.build) earlier = {{"until_build", e.build->until_build}, {"change", e.build->change}};
  return {{"id", e.id()},
          {"defaulted", e.defaulted},
          {"version", e.version.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.version)},
          {"earlier_build", earlier}};
}

}  // namespace

nlohmann::json calibration_json(const PreparedScenario& ps) {
  if (!ps.calibration) return nullptr;
  return {{"source", ps.calibration->source_file}, {"rows", ps.calibration->rows}, {"date", ps.calibration->date}};
}

/// The backend's recorded errors on published runs of this kind of model on this class of device
/// (the shipped efficiencies'); null where none was measured.
nlohmann::json accuracy_json(const Scenario& s) {
  const EstimateAccuracy* a = s.engine.backend->accuracy_for(s.model.num_experts > 0, to_string(s.hardware->device_class));
  if (!a) return nullptr;
  auto phase = [](const EstimateAccuracy::Phase& p) {
    return p.runs ? nlohmann::json{{"runs", p.runs}, {"median_error", p.median_error}, {"p90_error", p.p90_error}} : nlohmann::json(nullptr);
  };
  return {{"data", a->data},
          {"models", a->moe ? "moe" : "dense"},
          {"device_class", a->device_class},
          {"prefill", phase(a->prefill)},
          {"decode", phase(a->decode)},
          {"recorded", a->recorded}};
}

nlohmann::json scenario_json(const PreparedScenario& ps, const Analysis& a) {
  const Scenario& s = ps.scenario;
  const Workload& w = s.workload;
  nlohmann::json out = {
      {"hardware", {{"id", s.hardware->id}, {"name", s.hardware->name}, {"class", std::string(to_string(s.hardware->device_class))}}},
      {"model",
       {{"id", s.model.id},
        {"name", s.model.name},
        {"source", ps.model.origin},
        {"params", s.weights.params},
        {"active_params", s.weights.active_params}}},
      {"quant", {{"id", ps.quant->id}, {"name", ps.quant->name}, {"bits_per_weight", s.weights.bits_per_weight}}},
      {"engine", engine_json(s.engine)},
      {"workload",
       {{"batch", a.batch},
        {"batch_max", w.batch_max},
        {"prompt_tokens", w.prompt_tokens},
        {"gen_tokens", w.gen_tokens},
        {"context_tokens", w.context()},
        {"kv_dtype", w.kv_dtype},
        {"gpus", w.gpus},
        {"tp", w.tp},
        {"pp", w.pp},
        {"replicas", w.replicas},
        {"ep", w.ep},
        {"dp_attention", w.dp_attention}}}};
  if (ps.calibration) out["engine"]["calibration"] = calibration_json(ps);
  out["hardware"]["memory_bytes"] = s.hardware->memory_capacity_bytes;
  if (w.gpus > 1)
    if (const Link* link = s.hardware->default_multi_gpu_link()) out["hardware"]["link"] = link->kind;
  if (!w.host_id.empty()) out["host"] = {{"id", w.host_id}, {"bandwidth_bytes_per_s", w.host_bandwidth_bytes_per_s.value_or(0)}};
  if (w.gpu_layers) out["workload"]["gpu_layers"] = *w.gpu_layers;
  if (w.cpu_moe_layers > 0)
    out["expert_offload"] = {{"layers", w.cpu_moe_layers},
                             {"moe_layers", a.memory.host_expert_layers},
                             {"host_bytes", a.memory.host_expert_bytes},
                             {"host_id", w.host_id},
                             {"bandwidth_bytes_per_s", w.host_bandwidth_bytes_per_s.value_or(0)},
                             {"compute_flops_per_s", w.host_compute_flops_per_s.value_or(0)}};
  return out;
}

std::string measure_command(const PreparedScenario& ps, const Analysis& a) {
  const Scenario& s = ps.scenario;
  std::string cmd = s.engine.engine->measure_command;
  if (cmd.empty()) return {};
  const Workload& w = s.workload;
  replace_all(cmd, "{model}", s.model.id);
  replace_all(cmd, "{prompt}", std::to_string(w.prompt_tokens));
  replace_all(cmd, "{gen}", std::to_string(w.gen_tokens));
  replace_all(cmd, "{batch}", std::to_string(std::max<uint64_t>(a.batch, 1)));
  replace_all(cmd, "{tp}", std::to_string(w.tp));
  // llama.cpp's -ngl: as asked, else the layers that fit, else every layer (99).
  const uint64_t gpu_layers = w.gpu_layers                  ? *w.gpu_layers
                              : a.memory.offloaded_layers > 0 ? a.memory.total_layers - a.memory.offloaded_layers
                                                              : 99;
  replace_all(cmd, "{ngl}", std::to_string(gpu_layers));
  if (w.cpu_moe_layers > 0 && !s.engine.engine->expert_offload_arg.empty()) {
    std::string arg = s.engine.engine->expert_offload_arg;
    replace_all(arg, "{layers}", std::to_string(w.cpu_moe_layers));
    cmd += arg;
  }
  return cmd;
}

nlohmann::json estimate_json(const PreparedScenario& ps, const Analysis& a) {
  nlohmann::json out = {{"schema_version", kSchemaVersion},
                        {"scenario", scenario_json(ps, a)},
                        {"memory", all_fields(memory_fields(), a.memory)},
                        {"prefill", all_fields(phase_fields(), a.prefill)},
                        {"decode", all_fields(phase_fields(), a.decode)}};
  out["prefill"]["ttft_s"] = a.prefill.time_s;
  out["decode"]["time_per_token_s"] = a.decode.time_s;
  out["throughput"] = throughput_json(ps.scenario.workload, a);
  if (a.sustained_factor < 1.0)
    out["sustained"] = {{"factor", a.sustained_factor},
                        {"decode_tokens_per_s", a.decode.tokens_per_s * a.sustained_factor},
                        {"prefill_tokens_per_s", a.prefill.tokens_per_s * a.sustained_factor}};
  const Factors& f = a.factors;
  out["factors"] = {{"peak_bandwidth_bytes_per_s", f.peak_bandwidth_bytes_per_s},
                    {"decode_bandwidth_efficiency", f.decode_bandwidth_efficiency},
                    {"achievable_bandwidth_bytes_per_s", f.achievable_bandwidth_bytes_per_s},
                    {"compute_dtype", f.compute_dtype},
                    {"peak_compute_flops_per_s", f.peak_compute_flops_per_s},
                    {"prefill_compute_efficiency", f.prefill_compute_efficiency},
                    {"achievable_compute_flops_per_s", f.achievable_compute_flops_per_s},
                    {"layer_overhead_s", f.layer_overhead_s},
                    {"step_overhead_s", f.step_overhead_s},
                    {"graphs", f.graphs},
                    {"flash_attention", f.flash_attention},
                    {"calibrated_on", ps.scenario.engine.backend->calibrated_on.size()}};
  if (f.link_bandwidth_bytes_per_s > 0) out["factors"]["link_bandwidth_bytes_per_s"] = f.link_bandwidth_bytes_per_s;
  if (f.compute_unit_bandwidth_ceiling_bytes_per_s > 0)
    out["factors"]["compute_unit_bandwidth_ceiling_bytes_per_s"] = f.compute_unit_bandwidth_ceiling_bytes_per_s;
  if (f.expert_format_decode_efficiency < 1) out["factors"]["expert_format_decode_efficiency"] = f.expert_format_decode_efficiency;
  if (f.moe_layer_overhead_s > 0) out["factors"]["moe_layer_overhead_s"] = f.moe_layer_overhead_s;
  if (f.mla_layer_overhead_s > 0) out["factors"]["mla_layer_overhead_s"] = f.mla_layer_overhead_s;
  if (f.dsa_indexer_layer_s > 0) out["factors"]["dsa_indexer_layer_s"] = f.dsa_indexer_layer_s;
  out["factors"]["calibration"] = calibration_json(ps);
  out["factors"]["accuracy"] = ps.calibration ? nlohmann::json(nullptr) : accuracy_json(ps.scenario);
  out["warnings"] = a.warnings;
  std::vector<std::string> notes = ps.notes;
  notes.insert(notes.end(), a.assumptions.begin(), a.assumptions.end());
  out["notes"] = notes;
  out["measure_command"] = measure_command(ps, a);
  return out;
}

nlohmann::json fit_json(const PreparedScenario& ps, const Analysis& a) {
  return {{"schema_version", kSchemaVersion},
          {"scenario", scenario_json(ps, a)},
          {"memory", all_fields(memory_fields(), a.memory)},
          {"fits", a.memory.fits},
          {"warnings", a.warnings}};
}

const std::set<std::string>& estimate_sections_modeled() {
  static const std::set<std::string> sections = {"schema_version", "scenario", "memory", "prefill", "decode", "throughput"};
  return sections;
}

nlohmann::json estimate_sections_json(const PreparedScenario& ps, const Analysis& a, const std::set<std::string>& wanted) {
  nlohmann::json out = nlohmann::json::object();
  auto section_wanted = [&](const std::string& section) {
    const auto it = wanted.lower_bound(section);
    return it != wanted.end() && (*it == section || it->rfind(section + ".", 0) == 0);
  };
  if (section_wanted("schema_version")) out["schema_version"] = kSchemaVersion;
  if (section_wanted("scenario")) out["scenario"] = scenario_json(ps, a);
  if (section_wanted("memory")) add_fields(out, "memory", memory_fields(), a.memory, wanted);
  if (section_wanted("prefill")) {
    add_fields(out, "prefill", phase_fields(), a.prefill, wanted);
    if (wants(wanted, "prefill", "ttft_s")) out["prefill"]["ttft_s"] = a.prefill.time_s;
  }
  if (section_wanted("decode")) {
    add_fields(out, "decode", phase_fields(), a.decode, wanted);
    if (wants(wanted, "decode", "time_per_token_s")) out["decode"]["time_per_token_s"] = a.decode.time_s;
  }
  if (section_wanted("throughput")) out["throughput"] = throughput_json(ps.scenario.workload, a);
  return out;
}

}  // namespace optadvisor
