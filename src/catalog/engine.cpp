// SPDX-License-Identifier: MIT
#include "optadvisor/catalog/engine.hpp"
#include "optadvisor/catalog/model.hpp"
#include "base/strings.hpp"

#include <fmt/format.h>

#include <limits>

namespace optadvisor {

QuantEfficiency EngineProfile::efficiency_for(const BackendProfile& backend, const std::string& quant_id, const BackendBuild* build) const {
  if (build)
    if (auto earlier = build->quant_efficiency.find(quant_id); earlier != build->quant_efficiency.end()) return earlier->second;
  if (auto own = backend.quant_efficiency.find(quant_id); own != backend.quant_efficiency.end()) return own->second;
  auto it = quant_efficiency.find(quant_id);
  if (it != quant_efficiency.end()) return it->second;
  it = quant_efficiency.find("default");
  if (it != quant_efficiency.end()) return it->second;
  return {};
}

std::string EngineChoice::id() const {
  if (engine == nullptr) return {};
  if (backend == nullptr || backend->name == "default") return engine->id;
  return engine->id + ":" + backend->name;
}

int compare_versions(const std::string& a, const std::string& b) {
  // Numeric fields first; the text after them ("rc2", "post1") breaks ties.
  auto split = [](const std::string& v) {
    std::vector<uint64_t> nums;
    std::size_t i = 0;
    while (i < v.size() && nums.size() < 8) {
      if (v[i] < '0' || v[i] > '9') break;
      uint64_t n = 0;
      while (i < v.size() && v[i] >= '0' && v[i] <= '9' && n < 100000000) n = n * 10 + static_cast<uint64_t>(v[i++] - '0');
      nums.push_back(n);
      if (i < v.size() && v[i] == '.' && i + 1 < v.size() && v[i + 1] >= '0' && v[i + 1] <= '9')
        ++i;
      else
        break;
    }
    return std::make_pair(nums, v.substr(std::min(i, v.size())));
  };
  const auto [na, sa] = split(a);
  const auto [nb, sb] = split(b);
  for (std::size_t k = 0; k < std::max(na.size(), nb.size()); ++k) {
    const uint64_t x = k < na.size() ? na[k] : 0, y = k < nb.size() ? nb[k] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return sa == sb ? 0 : (sa < sb ? -1 : 1);
}

namespace {
bool differs_in_decode(const BackendBuild& b) {
  return b.layer_overhead_s.has_value() || b.moe_layer_overhead_s.has_value() || !b.quant_efficiency.empty();
}
bool differs_in_moe_prefill(const BackendBuild& b) { return b.expert_matvec_every_pass || b.expert_gemm_half_tokens.has_value(); }
}  // namespace

std::string BackendBuild::what_differs(bool moe_model) const {
  std::vector<std::string> parts;
  if (own_quantized_prefill()) parts.emplace_back("quantized prefill");
  if (moe_model && differs_in_moe_prefill(*this)) parts.emplace_back("MoE prefill");
  if (differs_in_decode(*this) || parts.empty()) parts.emplace_back("decode");
  return join_with_and(parts);
}

bool BackendBuild::moe_prefill_only() const { return differs_in_moe_prefill(*this) && !own_quantized_prefill() && !differs_in_decode(*this); }

bool BackendBuild::own_quantized_prefill() const { return !quantized_compute_dtype.empty() || quantized_prefill_compute_efficiency > 0; }

double layer_overhead_s_in(const BackendProfile& backend, const BackendBuild* build) {
  return build && build->layer_overhead_s ? *build->layer_overhead_s : backend.layer_overhead_s;
}

uint64_t expert_matvec_max_tokens_in(const BackendProfile& backend, const BackendBuild* build) {
  return build && build->expert_matvec_every_pass ? std::numeric_limits<uint64_t>::max() : backend.expert_matvec_max_tokens;
}

ExpertGemmTermsUsed expert_gemm_terms_in(const BackendProfile& backend, const BackendBuild* build, const std::string& quant_id) {
  if (build && build->expert_gemm_half_tokens) return {{*build->expert_gemm_half_tokens, backend.expert_gemm_peak_share}, false};
  const auto it = backend.expert_gemm_by_quant.find(quant_id);
  if (it != backend.expert_gemm_by_quant.end()) return {it->second, true};
  return {{backend.expert_gemm_half_tokens, backend.expert_gemm_peak_share}, false};
}

double moe_layer_overhead_s_in(const BackendProfile& backend, const BackendBuild* build, const std::string& quant_id) {
  return build && build->moe_layer_overhead_s ? *build->moe_layer_overhead_s : backend.moe_layer_overhead_for(quant_id);
}

const BackendBuild* BackendProfile::build_for(uint64_t build) const {
  for (const auto& b : earlier_builds)
    if (build < b.until_build) return &b;
  return nullptr;
}

PrefillPath BackendProfile::prefill_path(bool quantized, const BackendBuild* build) const {
  if (!quantized) return {compute_dtype, prefill_compute_efficiency};
  const std::string& q_dtype = build && !build->quantized_compute_dtype.empty() ? build->quantized_compute_dtype : quantized_compute_dtype;
  const double efficiency =
      build && build->quantized_prefill_compute_efficiency > 0 ? build->quantized_prefill_compute_efficiency : prefill_compute_efficiency;
  return {q_dtype.empty() ? compute_dtype : q_dtype, efficiency};
}

std::pair<std::string, std::string> split_engine_version(const std::string& engine) {
  const auto at = engine.find('@');
  if (at == std::string::npos) return {engine, ""};
  std::string version = engine.substr(at + 1);
  if (version.empty() || version.size() > 64 || version.find_first_not_of("0123456789.abcdefghijklmnopqrstuvwxyz-_+") != std::string::npos)
    throw bad_input(fmt::format("--engine '{}': expected ENGINE@VERSION such as llama.cpp@b3216 or vllm@0.19.0", engine));
  return {engine.substr(0, at), std::move(version)};
}

std::optional<uint64_t> parse_build_number(const std::string& version) {
  const std::string digits = !version.empty() && version[0] == 'b' ? version.substr(1) : version;
  if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoull(digits);
}

uint64_t unfused_delta_net_layers(const EngineChoice& choice, const ModelSpec& model) {
  if (!choice.engine || !choice.engine->unfused_delta_net) return 0;
  const std::optional<uint64_t> build = parse_build_number(choice.version);
  if (!build || *build >= choice.engine->unfused_delta_net->until_build) return 0;
  uint64_t layers = 0;
  for (uint64_t layer = 0; layer < model.num_hidden_layers; ++layer) layers += is_linear_layer(model, layer) ? 1 : 0;
  return layers;
}

const ServingEra* EngineServing::era_for(const std::string& version) const {
  if (eras.empty()) return nullptr;
  if (version.empty()) return &eras.back();
  const ServingEra* found = &eras.front();
  for (const auto& era : eras)
    if (compare_versions(era.from_version, version) <= 0) found = &era;
  return found;
}

std::string EngineServing::era_versions(const ServingEra& era) const {
  const bool first = &era == &eras.front();
  const bool last = &era == &eras.back();
  if (first && last) return "every version";
  if (last) return era.from_version + " and later";
  const std::string& next = (&era + 1)->from_version;
  return first ? "versions before " + next : era.from_version + " to before " + next;
}

namespace {

void read_serving(const nlohmann::json& j, EngineServing& s, std::vector<Problem>& problems) {
  const std::string scheduler = j.value("scheduler", std::string{"mixed"});
  if (scheduler == "prefill-first")
    s.scheduler = ServingScheduler::kPrefillFirst;
  else if (scheduler != "mixed")
    problems.push_back({"", "/serving/scheduler", "expected mixed or prefill-first (got '" + scheduler + "')"});
  const std::string admission = j.value("kv_admission", std::string{"incremental"});
  if (admission == "reserve-full")
    s.admission = KvAdmission::kReserveFull;
  else if (admission != "incremental")
    problems.push_back({"", "/serving/kv_admission", "expected incremental or reserve-full (got '" + admission + "')"});
  s.max_batched_tokens = j.at("max_batched_tokens").get<uint64_t>();
  for (const auto& t : j.value("max_batched_tokens_by_memory", nlohmann::json::array())) {
    const double below = t.at("below_bytes").get<double>();
    if (!s.max_batched_tokens_by_memory.empty() && below <= s.max_batched_tokens_by_memory.back().first)
      problems.push_back({"", "/serving/max_batched_tokens_by_memory", "tiers must be listed by ascending below_bytes"});
    s.max_batched_tokens_by_memory.emplace_back(below, t.at("tokens").get<uint64_t>());
  }
  s.max_sequences = j.at("max_sequences").get<uint64_t>();
  for (const auto& e : j.at("eras")) {
    ServingEra era;
    era.from_version = e.at("from_version").get<std::string>();
    era.bandwidth_efficiency = e.at("bandwidth_efficiency").get<double>();
    era.gemm_efficiency = e.at("gemm_efficiency").get<double>();
    era.attention_efficiency = e.at("attention_efficiency").get<double>();
    era.step_overhead_s = e.at("step_overhead_s").get<double>();
    era.layer_overhead_s = e.at("layer_overhead_s").get<double>();
    era.communication_efficiency = e.at("communication_efficiency").get<double>();
    era.expert_gemm_half_tokens = e.value("expert_gemm_half_tokens", 0.0);
    era.request_overhead_s = e.value("request_overhead_s", 0.0);
    era.frontend_request_s = e.value("frontend_request_s", 0.0);
    era.sequence_overhead_s = e.value("sequence_overhead_s", 0.0);
    era.collective_latency_s = e.value("collective_latency_s", 0.0);
    era.backend_moe_layer_time = e.value("backend_moe_layer_time", false);
    era.calibrated_on = e.value("calibrated_on", std::vector<std::string>{});
    era.caveats = e.value("caveats", std::vector<std::string>{});
    if (e.contains("accuracy")) {
      const auto& a = e.at("accuracy");
      era.accuracy_measured = a.at("measured").get<std::string>();
      auto read = [](const nlohmann::json& x, std::string device) {
        return ServingAccuracy{std::move(device), x.at("runs").get<uint64_t>(), x.at("ttft_median_error").get<double>(),
                               x.at("ttft_p90_error").get<double>(), x.at("tpot_median_error").get<double>(),
                               x.at("tpot_p90_error").get<double>()};
      };
      era.accuracy.push_back(read(a.at("all"), ""));
      uint64_t device_runs = 0;
      for (const auto& d : a.at("by_device")) {
        era.accuracy.push_back(read(d, d.at("device").get<std::string>()));
        device_runs += era.accuracy.back().runs;
      }
      // The pool is the devices' runs together: every run was measured on one device.
      if (device_runs != era.accuracy.front().runs)
        problems.push_back({"", "/serving/eras/accuracy",
                            fmt::format("by_device runs add up to {}, not the {} runs of all", device_runs, era.accuracy.front().runs)});
    }
    if (!s.eras.empty() && compare_versions(s.eras.back().from_version, era.from_version) >= 0)
      problems.push_back({"", "/serving/eras", "eras must be listed oldest first ('" + era.from_version + "')"});
    s.eras.push_back(era);
  }
}

/// An older build ran what every newer earlier-build entry describes too, unless it says otherwise:
/// each entry (oldest first) takes the next newer one's values where it sets none.
void inherit_newer_builds(std::vector<BackendBuild>& builds) {
  for (std::size_t i = builds.size(); i-- > 1;) {
    BackendBuild& older = builds[i - 1];
    const BackendBuild& newer = builds[i];
    if (older.quantized_compute_dtype.empty()) older.quantized_compute_dtype = newer.quantized_compute_dtype;
    if (older.quantized_prefill_compute_efficiency <= 0) older.quantized_prefill_compute_efficiency = newer.quantized_prefill_compute_efficiency;
    if (!older.layer_overhead_s) older.layer_overhead_s = newer.layer_overhead_s;
    if (!older.moe_layer_overhead_s) older.moe_layer_overhead_s = newer.moe_layer_overhead_s;
    for (const auto& [quant, efficiency] : newer.quant_efficiency) older.quant_efficiency.try_emplace(quant, efficiency);
    older.expert_matvec_every_pass = older.expert_matvec_every_pass || newer.expert_matvec_every_pass;
    if (!older.expert_gemm_half_tokens) older.expert_gemm_half_tokens = newer.expert_gemm_half_tokens;
  }
}

/// Per-format multipliers on the efficiencies ({"<format>": {"decode": x, "prefill": y}}, 1 where absent).
void read_quant_efficiency(const nlohmann::json& j, std::map<std::string, QuantEfficiency>& out) {
  for (const auto& [q, v] : j.items()) out[q] = {v.value("decode", 1.0), v.value("prefill", 1.0)};
}

/// A backend's recorded errors on the published validation sets ("accuracy"), one entry per kind of
/// model and device class.
void read_estimate_accuracy(const nlohmann::json& b, BackendProfile& bp, std::vector<Problem>& problems) {
  for (const auto& a : b.value("accuracy", nlohmann::json::array())) {
    EstimateAccuracy e;
    e.data = a.at("data").get<std::string>();
    e.moe = a.at("models").get<std::string>() == "moe";
    e.device_class = a.at("device_class").get<std::string>();
    e.recorded = a.at("recorded").get<std::string>();
    auto phase = [&](const char* key, EstimateAccuracy::Phase& out) {
      if (!a.contains(key)) return;
      const auto& p = a.at(key);
      out = {p.at("runs").get<uint64_t>(), p.at("median_error").get<double>(), p.at("p90_error").get<double>()};
    };
    phase("prefill", e.prefill);
    phase("decode", e.decode);
    if (bp.accuracy_for(e.moe, e.device_class))
      problems.push_back({"", "/backends/" + bp.name + "/accuracy",
                          fmt::format("two entries for {} models on {}", e.moe ? "moe" : "dense", e.device_class)});
    bp.accuracy.push_back(std::move(e));
  }
}

/// One entry of "backends", named `name`: its efficiencies, overheads and device classes.
BackendProfile read_backend(const std::string& name, const nlohmann::json& b, std::vector<Problem>& problems) {
  BackendProfile bp;
  bp.name = name;
  bp.decode_bandwidth_efficiency = b.at("decode_bandwidth_efficiency").get<double>();
  bp.prefill_compute_efficiency = b.at("prefill_compute_efficiency").get<double>();
  bp.bytes_per_s_per_compute_unit = b.value("bytes_per_s_per_compute_unit", 0.0);
  bp.compute_dtype = b.value("compute_dtype", std::string{"fp16"});
  bp.quantized_compute_dtype = b.value("quantized_compute_dtype", std::string{});
  if (b.contains("grouped_expert_gemm")) {
    const auto& g = b.at("grouped_expert_gemm");
    bp.expert_gemm_half_tokens = g.at("half_tokens").get<double>();
    bp.expert_gemm_peak_share = g.value("peak_share", 1.0);
    for (const auto& q : g.value("by_quant", nlohmann::json::array()))
      bp.expert_gemm_by_quant[q.at("quant").get<std::string>()] = {q.at("half_tokens").get<double>(), q.value("peak_share", 1.0)};
  }
  read_estimate_accuracy(b, bp, problems);
  if (b.contains("expert_matvec")) {
    bp.expert_matvec_max_tokens = b.at("expert_matvec").at("max_tokens").get<uint64_t>();
    for (const auto& q : b.at("expert_matvec").value("excluded_quants", nlohmann::json::array()))
      bp.expert_matvec_excluded_quants[q.at("quant").get<std::string>()] = q.at("why").get<std::string>();
  }
  bp.layer_overhead_s = b.at("layer_overhead_s").get<double>();
  if (b.contains("moe_layer_overhead")) {
    bp.moe_layer_overhead_s = b.at("moe_layer_overhead").at("seconds").get<double>();
    for (const auto& q : b.at("moe_layer_overhead").value("by_quant", nlohmann::json::array()))
      bp.moe_layer_overhead_by_quant_s[q.at("quant").get<std::string>()] = q.at("seconds").get<double>();
  }
  if (b.contains("float_expert_loop")) bp.float_expert_call_s = b.at("float_expert_loop").at("seconds_per_expert").get<double>();
  if (b.contains("expert_read_share")) bp.expert_read_share = b.at("expert_read_share").at("value").get<double>();
  bp.step_overhead_s = b.at("step_overhead_s").get<double>();
  bp.graphs = b.value("graphs", false);
  bp.applies_to_classes = b.value("applies_to_classes", std::vector<std::string>{});
  bp.calibrated_on = b.value("calibrated_on", std::vector<std::string>{});
  if (b.contains("quant_efficiency")) read_quant_efficiency(b.at("quant_efficiency"), bp.quant_efficiency);
  for (const auto& v : b.value("device_paths", nlohmann::json::array())) {
    DevicePath path;
    path.vendor = v.at("vendor").get<std::string>();
    path.architecture_contains = v.at("architecture_contains").get<std::string>();
    path.compute_dtype = v.value("compute_dtype", std::string{});
    path.quantized_compute_dtype = v.value("quantized_compute_dtype", std::string{});
    if (v.contains("quantized_prefill_compute_efficiency"))
      path.quantized_prefill_compute_efficiency = v.at("quantized_prefill_compute_efficiency").get<double>();
    if (v.contains("prefill_compute_efficiency")) path.prefill_compute_efficiency = v.at("prefill_compute_efficiency").get<double>();
    if (v.contains("bytes_per_s_per_compute_unit")) path.bytes_per_s_per_compute_unit = v.at("bytes_per_s_per_compute_unit").get<double>();
    for (const auto& f : v.value("format_paths", nlohmann::json::array()))
      path.format_paths[f.at("quant").get<std::string>()] = {f.at("compute_dtype").get<std::string>(), f.at("why").get<std::string>()};
    for (const auto& e : v.value("earlier_builds", nlohmann::json::array())) {
      DevicePath::EarlierBuild build{e.at("until_build").get<uint64_t>(), e.at("prefill_compute_efficiency").get<double>(),
                                     e.at("change").get<std::string>()};
      if (!path.earlier_builds.empty() && build.until_build <= path.earlier_builds.back().until_build)
        problems.push_back({"", "/backends/" + name + "/device_paths", "earlier builds must be listed oldest first"});
      path.earlier_builds.push_back(std::move(build));
    }
    bp.device_paths.push_back(std::move(path));
  }
  for (const auto& e : b.value("earlier_builds", nlohmann::json::array())) {
    BackendBuild build;
    build.until_build = e.at("until_build").get<uint64_t>();
    build.change = e.at("change").get<std::string>();
    build.quantized_compute_dtype = e.value("quantized_compute_dtype", std::string{});
    build.quantized_prefill_compute_efficiency = e.value("quantized_prefill_compute_efficiency", 0.0);
    build.calibrated_on = e.value("calibrated_on", std::vector<std::string>{});
    if (e.contains("layer_overhead_s")) build.layer_overhead_s = e.at("layer_overhead_s").get<double>();
    if (e.contains("moe_layer_overhead_s")) build.moe_layer_overhead_s = e.at("moe_layer_overhead_s").get<double>();
    if (e.contains("quant_efficiency")) read_quant_efficiency(e.at("quant_efficiency"), build.quant_efficiency);
    build.expert_matvec_every_pass = e.value("expert_matvec_every_pass", false);
    if (e.contains("expert_gemm_half_tokens")) build.expert_gemm_half_tokens = e.at("expert_gemm_half_tokens").get<double>();
    if (!bp.earlier_builds.empty() && build.until_build <= bp.earlier_builds.back().until_build)
      problems.push_back({"", "/backends/" + name + "/earlier_builds", "earlier builds must be listed oldest first"});
    bp.earlier_builds.push_back(std::move(build));
  }
  inherit_newer_builds(bp.earlier_builds);
  for (const auto& c : bp.applies_to_classes)
    if (!device_class_from_string(c))
      problems.push_back({"", "/backends/" + name + "/applies_to_classes", "unknown device class '" + c + "'"});
  return bp;
}

/// "eager_launches": the kernel launches of a step run without graphs.
void read_eager_launches(const nlohmann::json& l, EngineProfile& e) {
  e.eager.launch_s = l.at("launch_s").get<double>();
  e.eager.kernels_per_layer = l.at("kernels_per_layer").get<double>();
  e.eager.extra_kernels_per_moe_layer = l.value("extra_kernels_per_moe_layer", 0.0);
  e.eager.kernels_per_expert = l.value("kernels_per_expert", 0.0);
}

/// "memory": the runtime overhead, the reserve and the activation model.
void read_memory(const nlohmann::json& m, EngineMemory& memory, std::vector<Problem>& problems) {
  memory.runtime_overhead_bytes = m.at("runtime_overhead_bytes").get<double>();
  if (m.contains("reserve_fraction")) memory.reserve_fraction = m.at("reserve_fraction").get<double>();
  if (m.contains("free_fraction_for_kv")) memory.free_fraction_for_kv = m.at("free_fraction_for_kv").get<double>();
  memory.activation_bytes_per_token = m.value("activation_bytes_per_token", 0.0);
  memory.max_batched_tokens = m.value("max_batched_tokens", uint64_t{8192});
  memory.ubatch_tokens = m.value("ubatch_tokens", uint64_t{512});
  memory.flash_attention_default = m.value("flash_attention_default", true);
  memory.unfused_score_bytes = m.value("unfused_score_bytes", 0.0);
  memory.kv_block_tokens = m.value("kv_block_tokens", uint64_t{0});
  const std::string activations = m.value("activation_model", std::string{"batched-tokens"});
  if (activations == "ggml-ubatch")
    memory.activation_model = ActivationModel::kGgmlUbatch;
  else if (activations != "batched-tokens")
    problems.push_back({"", "/memory/activation_model", "expected ggml-ubatch or batched-tokens (got '" + activations + "')"});
}

}  // namespace

std::optional<EngineProfile> engine_from_json(const nlohmann::json& j, std::vector<Problem>& problems) {
  EngineProfile e;
  try {
    e.id = j.at("id").get<std::string>();
    e.name = j.at("name").get<std::string>();
    e.kind = j.at("kind").get<std::string>();
    e.aliases = j.value("aliases", std::vector<std::string>{});
    const std::string split = j.value("multi_device", std::string{"tensor"});
    if (split == "tensor")
      e.multi_device = MultiDevice::kTensor;
    else if (split == "layers")
      e.multi_device = MultiDevice::kLayers;
    else if (split == "none")
      e.multi_device = MultiDevice::kNone;
    else
      problems.push_back({"", "/multi_device", "expected tensor, layers or none (got '" + split + "')"});
    e.multi_device_setting = j.value("multi_device_setting", std::string{});
    e.offloads_to_host = j.value("offloads_to_host", false);
    e.own_flash_attention = j.value("own_flash_attention", false);
    e.expert_parallel = j.value("expert_parallel", false);
    for (const auto& [name, b] : j.at("backends").items()) e.backends[name] = read_backend(name, b, problems);
    e.graph_overhead_factor = j.value("graph_overhead_factor", 0.3);
    if (j.contains("eager_launches")) read_eager_launches(j.at("eager_launches"), e);
    e.allreduce_latency_s = j.value("allreduce_latency_s", 0.0);
    e.host_bandwidth_efficiency = j.value("host_bandwidth_efficiency", 1.0);
    e.host_bandwidth_bytes_per_s = j.value("host_bandwidth_bytes_per_s", 0.0) * e.host_bandwidth_efficiency;
    e.host_compute_flops_per_s = j.value("host_compute_flops_per_s", 0.0);
    e.expert_offload_arg = j.value("expert_offload_arg", std::string());
    e.host_weights_streamed_min_tokens = j.value("host_weights_streamed_min_tokens", 0.0);
    e.host_to_device_fraction = j.value("host_to_device_fraction", 1.0);
    if (j.contains("unfused_delta_net")) {
      const auto& u = j.at("unfused_delta_net");
      e.unfused_delta_net = UnfusedDeltaNet{u.at("until_build").get<uint64_t>(), u.at("change").get<std::string>(),
                                            u.at("layer_overhead_s").get<double>(), u.value("calibrated_on", std::vector<std::string>{})};
    }
    if (j.contains("mla_layer_overhead")) e.mla_layer_overhead_s = j.at("mla_layer_overhead").at("seconds").get<double>();
    if (j.contains("dsa_indexer_layer")) e.dsa_indexer_layer_s = j.at("dsa_indexer_layer").at("seconds").get<double>();
    e.default_for_classes = j.value("default_for_classes", std::vector<std::string>{});
    e.quants = j.at("quants").get<std::vector<std::string>>();
    e.default_quant = j.value("default_quant", std::string{});
    e.formats_per_file = j.value("formats_per_file", false);
    if (j.contains("quant_efficiency")) read_quant_efficiency(j.at("quant_efficiency"), e.quant_efficiency);
    read_memory(j.at("memory"), e.memory, problems);
    e.cap_sliding_window = j.value("kv_window_policy", std::string{"cap-sliding"}) == "cap-sliding";
    e.kv_dtypes = j.value("kv_dtypes", std::vector<std::string>{"f16"});
    e.max_batch = j.value("max_batch", uint64_t{256});
    e.measure_command = j.value("measure_command", std::string{});
    if (j.contains("serving")) read_serving(j.at("serving"), e.serving, problems);
    e.notes = j.value("notes", std::vector<std::string>{});
    e.sources = j.at("sources");
  } catch (const nlohmann::json::exception& ex) {
    problems.push_back({"", "", std::string("malformed engine profile: ") + ex.what()});
    return std::nullopt;
  }
  if (!e.default_quant.empty() && e.kind == "inference") {
    bool listed = false;
    for (const auto& q : e.quants) listed = listed || q == e.default_quant || q == "*gguf";
    if (!listed) problems.push_back({"", "/default_quant", "not among this engine's quants"});
  }
  return e;
}

std::vector<std::string> ServingEra::accuracy_devices() const {
  std::vector<std::string> out;
  for (const ServingAccuracy& a : accuracy)
    if (!a.device.empty()) out.push_back(a.device);
  return out;
}

const ServingAccuracy* ServingEra::accuracy_on(const std::string& device) const {
  for (const ServingAccuracy& a : accuracy)
    if (a.device == device) return &a;
  return nullptr;
}

}  // namespace optadvisor
