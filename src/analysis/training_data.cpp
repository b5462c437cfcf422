// SPDX-License-Identifier: MIT
// data/training/ documents (engine profiles, the system document) and the
// architecture summaries the training model reads.
#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "base/names.hpp"
#include "optadvisor/analysis/training.hpp"

namespace optadvisor {

std::string_view to_string(TrainPrecision p) {
  return p == TrainPrecision::kFp8 ? "fp8" : p == TrainPrecision::kBf16Pure ? "bf16-pure" : "bf16";
}

std::string_view to_string(Recompute r) {
  switch (r) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "full";
  }
  return "none";
}

std::string_view to_string(PipelineSchedule s) { return s == PipelineSchedule::kInterleaved ? "interleaved" : "1f1b"; }

std::string_view to_string(TrainingBound b) {
  switch (b) {
    case TrainingBound::kCompute: return "compute";
    case TrainingBound::kMemoryCapacity: return "memory-capacity";
    case TrainingBound::kCommunication: return "communication";
    case TrainingBound::kPipelineBubble: return "pipeline-bubble";
    case TrainingBound::kHostOffload: return "host-offload";
  }
  return "compute";
}

double OptimizerSpec::bytes_per_param() const {
  double bytes = states * bits_per_state / 8.0;
  if (block_elements > 0) bytes += states * scale_bytes_per_block / static_cast<double>(block_elements);
  return bytes;
}

const std::vector<std::string>& activation_groups() {
  static const std::vector<std::string> groups = {"norm_inputs", "norm_outputs",  "dropout_masks",    "q",        "k",
                                                  "v",           "attention_out", "attention_scores", "mlp_gate", "mlp_up",
                                                  "mlp_act",     "mlp_down_input"};
  return groups;
}

const TrainingHost& TrainingSystem::host_for(const HardwareProfile& hw) const {
  const auto it = hosts.find(std::string(to_string(hw.device_class)));
  return it != hosts.end() ? it->second : default_host;
}

const TrainingEngineProfile* TrainingData::find_engine(std::string_view name) const {
  const std::string key = normalize_name(name);
  for (const auto& e : engines) {
    if (normalize_name(e.id) == key) return &e;
    for (const auto& a : e.aliases)
      if (normalize_name(a) == key) return &e;
  }
  return nullptr;
}

namespace {

template <typename T>
T value_or(const nlohmann::json& j, const char* key, T fallback) {
  auto it = j.find(key);
  return it == j.end() ? fallback : it->get<T>();
}

TrainingEngineProfile engine_from(const nlohmann::json& j) {
  TrainingEngineProfile e;
  e.id = j.at("id").get<std::string>();
  e.name = j.at("name").get<std::string>();
  e.aliases = value_or(j, "aliases", std::vector<std::string>{});
  e.runs_as = j.at("runs_as").get<std::string>();
  e.description = value_or(j, "description", std::string{});
  e.shardings = j.at("shardings").get<std::vector<std::string>>();
  e.default_sharding = j.at("default_sharding").get<std::string>();
  e.optimizers = j.at("optimizers").get<std::vector<std::string>>();
  e.default_optimizer = j.at("default_optimizer").get<std::string>();
  e.default_recompute = value_or(j, "default_recompute", std::string("none"));
  e.sequence_parallel_default = value_or(j, "sequence_parallel_default", false);
  if (auto p = j.find("pipeline"); p != j.end()) {
    e.default_pipeline_schedule = value_or(*p, "default_schedule", std::string("1f1b"));
    e.default_virtual_stages = value_or(*p, "virtual_stages", 2u);
  }
  if (auto l = j.find("lora"); l != j.end()) {
    e.lora = l->at("supported").get<bool>();
    e.lora_base_quants = value_or(*l, "base_quants", std::vector<std::string>{});
    e.adapter_bytes_per_param = value_or(*l, "adapter_bytes_per_param", 8.0);
  }
  for (const auto& s : j.at("states")) {
    StateComponent c;
    c.role = s.at("role").get<std::string>();
    c.what = s.at("what").get<std::string>();
    c.bytes_per_param = value_or(s, "bytes_per_param", 0.0);
    c.sharded_from_stage = s.at("sharded_from_stage").get<int>();
    c.persistent_when_sharded = value_or(s, "persistent_when_sharded", true);
    c.step_only = value_or(s, "step_only", false);
    e.states.push_back(c);
  }
  const auto& comm = j.at("communication");
  e.grad_reduce_bytes = comm.at("grad_reduce_bytes").get<double>();
  e.param_gather_bytes = comm.at("param_gather_bytes").get<double>();
  e.dp_overlap = comm.at("dp_overlap").get<std::map<std::string, bool>>();
  e.tp_overlap = comm.at("tp_overlap").get<double>();
  e.gathered_units = value_or(comm, "gathered_units", 2.0);
  e.gathered_bytes_per_param = value_or(comm, "gathered_bytes_per_param", 4.0);
  e.pp_keeps_unsharded = value_or(comm, "pp_keeps_unsharded", false);
  const auto& act = j.at("activations");
  e.logits_bytes_per_entry = act.at("logits_bytes_per_entry").get<double>();
  e.fused_logits_bytes_per_entry = value_or(act, "fused_logits_bytes_per_entry", e.logits_bytes_per_entry);
  e.fused_loss_default = value_or(act, "fused_loss_default", false);
  e.fused_gated_mlp = act.at("fused_gated_mlp").get<bool>();
  const auto& sel = act.at("selective");
  e.selective_description = sel.at("description").get<std::string>();
  e.selective_drops = sel.at("drops").get<std::vector<std::string>>();
  e.selective_recompute_matmuls = value_or(sel, "recompute_matmuls", std::vector<std::string>{});
  const auto& mem = j.at("memory");
  e.runtime_overhead_bytes = mem.at("runtime_overhead_bytes").get<double>();
  e.allocator_overhead_fraction = mem.at("allocator_overhead_fraction").get<double>();
  e.zero_memory_estimator = mem.value("zero_memory_estimator", false);
  if (auto o = j.find("offload"); o != j.end()) {
    e.offload.optimizer_how = value_or(*o, "optimizer_how", std::string{});
    e.offload.gradients_to_host = value_or(*o, "gradients_to_host", false);
    e.offload.gradient_bucket_bytes = value_or(*o, "gradient_bucket_bytes", 0.0);
    e.offload.activations_how = value_or(*o, "activations_how", std::string{});
    e.offload.activation_layers_on_gpu = value_or(*o, "activation_layers_on_gpu", 2.0);
  }
  if (auto c = j.find("compile"); c != j.end()) {
    e.compile.supported = true;
    e.compile.default_on = c->at("default").get<bool>();
    e.compile.eager_elementwise_factor = c->at("eager_elementwise_factor").get<double>();
    e.compile.how = c->at("how").get<std::string>();
  }
  const auto& eff = j.at("efficiency");
  e.gemm_efficiency = eff.at("gemm").get<std::map<std::string, double>>();
  e.attention_efficiency = eff.at("attention").get<double>();
  e.elementwise_traffic = eff.at("elementwise_traffic").get<double>();
  e.layer_overhead_s = value_or(eff, "layer_overhead_s", 0.0);
  e.gather_copy_bytes_per_param = value_or(eff, "gather_copy_bytes_per_param", 0.0);
  e.calibrated_on = j.at("calibrated_on").get<std::vector<std::string>>();
  e.notes = value_or(j, "notes", std::vector<std::string>{});
  e.sources = j.at("sources");
  return e;
}

TrainingSystem system_from(const nlohmann::json& j) {
  TrainingSystem s;
  s.gpus_per_node = j.at("gpus_per_node").get<uint32_t>();
  const auto& inter = j.at("inter_node");
  s.inter_node_bits_per_s_default = inter.at("default_bits_per_s").get<double>();
  s.inter_node_bits_per_s = value_or(inter, "by_hardware", std::map<std::string, double>{});
  const auto& coll = j.at("collectives");
  s.intra_node_collective_efficiency = coll.at("intra_node_efficiency").get<double>();
  s.inter_node_collective_efficiency = coll.at("inter_node_efficiency").get<double>();
  s.collective_latency_s = coll.at("latency_s").get<double>();
  s.memory_bandwidth_efficiency = j.at("memory_bandwidth_efficiency").get<double>();
  const auto& mm = j.at("matmul_ceiling");
  s.matmul_ceiling_default = mm.at("default").get<std::map<std::string, double>>();
  s.matmul_ceiling = value_or(mm, "by_hardware", std::map<std::string, std::map<std::string, double>>{});
  const auto& att = j.at("attention");
  s.attention_half_seq = att.at("half_seq_tokens").get<double>();
  s.attention_efficiency_default = att.at("default").get<double>();
  s.attention_efficiency_by_arch = att.at("by_architecture").get<std::map<std::string, double>>();
  for (const auto& [id, o] : j.at("optimizers").items()) {
    OptimizerSpec spec;
    spec.id = id;
    spec.description = value_or(o, "description", std::string{});
    spec.states = o.at("states").get<int>();
    spec.bits_per_state = o.at("bits_per_state").get<double>();
    spec.block_elements = value_or(o, "block_elements", uint64_t{0});
    spec.scale_bytes_per_block = value_or(o, "scale_bytes_per_block", 0.0);
    s.optimizers[id] = spec;
  }
  if (auto h = j.find("host"); h != j.end()) {
    auto host = [](const nlohmann::json& x) {
      return TrainingHost{x.at("what").get<std::string>(), x.at("memory_bytes").get<double>(),
                          x.at("memory_bandwidth_bytes_per_s").get<double>()};
    };
    s.default_host = host(h->at("default"));
    if (auto c = h->find("by_device_class"); c != h->end())
      for (const auto& [device_class, x] : c->items()) s.hosts[device_class] = host(x);
    s.host_optimizer_bandwidth_efficiency = h->at("optimizer_bandwidth_efficiency").get<double>();
    s.pcie_efficiency = h->at("pcie_efficiency").get<double>();
  }
  s.sources = j.at("sources");
  return s;
}

/// What a schema cannot check in an engine profile.
void check_engine(const TrainingEngineProfile& e, const std::string& display, std::vector<Problem>& problems) {
  auto add = [&](const std::string& pointer, const std::string& message) { problems.push_back({display, pointer, message}); };
  if (std::find(e.shardings.begin(), e.shardings.end(), e.default_sharding) == e.shardings.end())
    add("/default_sharding", fmt::format("'{}' is not among the engine's shardings", e.default_sharding));
  if (std::find(e.optimizers.begin(), e.optimizers.end(), e.default_optimizer) == e.optimizers.end())
    add("/default_optimizer", fmt::format("'{}' is not among the engine's optimizers", e.default_optimizer));
  int optimizer_states = 0;
  for (std::size_t i = 0; i < e.states.size(); ++i) {
    const auto& c = e.states[i];
    if (c.role == "optimizer")
      ++optimizer_states;
    else if (c.bytes_per_param <= 0)
      add(fmt::format("/states/{}/bytes_per_param", i), "a positive number is needed for this role");
  }
  if (optimizer_states != 1) add("/states", "exactly one state with role 'optimizer' is needed");
  for (const auto& [name, overlap] : e.dp_overlap) {
    (void)overlap;
    if (std::find(e.shardings.begin(), e.shardings.end(), name) == e.shardings.end())
      add("/communication/dp_overlap/" + name, "not one of the engine's shardings");
  }
  for (const auto& s : e.shardings)
    if (!e.dp_overlap.count(s)) add("/communication/dp_overlap", fmt::format("no entry for sharding '{}'", s));
}

}  // namespace

TrainingData training_data_from(const std::vector<std::pair<std::string, nlohmann::json>>& documents, std::vector<Problem>& problems) {
  TrainingData data;
  bool have_system = false;
  std::map<std::string, std::string> engine_origin;
  std::string system_origin;
  for (const auto& [display, doc] : documents) {
    try {
      const std::string kind = doc.at("kind").get<std::string>();
      if (kind == "engine") {
        TrainingEngineProfile e = engine_from(doc);
        const std::size_t before = problems.size();
        check_engine(e, display, problems);
        if (problems.size() != before) continue;
        auto it = std::find_if(data.engines.begin(), data.engines.end(), [&](const auto& x) { return x.id == e.id; });
        if (it != data.engines.end())
          *it = std::move(e);  // a later document (an overlay) replaces the shipped one
        else
          data.engines.push_back(std::move(e));
        engine_origin[doc.at("id").get<std::string>()] = display;
      } else if (kind == "system") {
        data.system = system_from(doc);
        have_system = true;
        system_origin = display;
      } else {
        problems.push_back({display, "/kind", fmt::format("unknown kind '{}' (engine or system)", kind)});
      }
    } catch (const nlohmann::json::exception& e) {
      problems.push_back({display, "", fmt::format("not a valid training document: {}", e.what())});
    }
  }
  if (!have_system) problems.push_back({"data/training", "", "no system document (kind 'system')"});
  for (const auto& e : data.engines)
    for (const auto& o : e.optimizers)
      if (have_system && !data.system.optimizers.count(o))
        problems.push_back({engine_origin[e.id], "/optimizers", fmt::format("optimizer '{}' is not described in {}", o, system_origin)});
  return data;
}

TrainingData training_data(const Catalog& catalog) {
  std::vector<Problem> problems;
  TrainingData data = training_data_from(catalog.training_documents(), problems);
  if (!problems.empty())
    throw bad_input(to_string(problems.front()),
                    problems.size() > 1 ? fmt::format("{} more problem(s) in the training data; fix the file or leave it out of --data-dir",
                                                      problems.size() - 1)
                                        : std::string("fix the file or leave it out of --data-dir"));
  return data;
}

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

/// Query, key, value and attention-output widths over all heads.
void set_attention_widths(TrainingModel& m, const ModelSpec& spec) {
  if (spec.kv_lora_rank) {
    const uint64_t qk = spec.qk_nope_head_dim + spec.qk_rope_head_dim;
    m.q_width = m.heads * qk;
    m.k_width = m.heads * qk;  // FlashAttention sees per-head keys expanded from the latent
    m.v_width = m.heads * spec.v_head_dim;
    m.attention_out_width = m.heads * spec.v_head_dim;
  } else {
    m.q_width = m.heads * spec.head_dim;
    m.k_width = m.kv_heads * spec.head_dim;
    m.v_width = m.kv_heads * spec.head_dim;
    m.attention_out_width = m.heads * spec.head_dim;
  }
}

/// Sums over the decoder layers' tensors: each layer's parameters, the parameters a token
/// activates, and the LoRA adapter dimensions (rows plus columns of each adaptable matrix).
struct LayerSums {
  std::vector<double> layer_total;
  double active_total = 0;
  double lora_dims = 0;
};

/// Counts the checkpoint's tensors into `m` (outside the layers, and matmuls by kind) and the layers' sums.
LayerSums count_tensors(TrainingModel& m, const ModelSpec& spec) {
  const double routed_share =
      spec.num_experts ? static_cast<double>(spec.num_experts_per_tok) / static_cast<double>(spec.num_experts) : 1.0;
  LayerSums sums;
  sums.layer_total.assign(m.layers, 0.0);
  static const std::set<std::string> matmul_kinds = {"attn_q",   "attn_k", "attn_v",   "attn_output",
                                                     "ffn_gate", "ffn_up", "ffn_down", "attn_qkv"};
  for (const Tensor& t : model_tensors(spec)) {
    const double e = static_cast<double>(t.elements());
    if (t.layer < 0) {
      if (t.kind == "token_embd" || is_lookup_table(t.kind))  // input lookup tables
        m.embedding_params += e;
      else if (t.kind == "output")
        m.head_params += e;
      else
        m.other_params += e;
      continue;
    }
    if (static_cast<uint64_t>(t.layer) < m.layers) sums.layer_total[static_cast<std::size_t>(t.layer)] += e;
    const bool routed = t.kind.find("_exps") != std::string::npos;
    sums.active_total += routed ? e * routed_share : e;
    const bool adaptable = !t.is_vector() && !routed && t.kind != "ffn_gate_inp" && !ends_with(t.kind, ".bias") &&
                           (starts_with(t.kind, "attn_") || starts_with(t.kind, "ffn_"));
    if (adaptable) sums.lora_dims += static_cast<double>(t.row_elements + t.rows) * static_cast<double>(t.slices);
    if (matmul_kinds.count(t.kind)) m.layer_matmul_params_by_kind[t.kind] += e;
  }
  return sums;
}

/// The per-layer averages of the sums and of the matmuls by kind.
void set_layer_averages(TrainingModel& m, const LayerSums& sums, double blocks) {
  double block_sum = 0;
  for (double v : sums.layer_total) {
    block_sum += v;
    m.largest_layer_params = std::max(m.largest_layer_params, v);
  }
  m.layer_params = block_sum / blocks;
  m.layer_active_params = sums.active_total / blocks;
  m.layer_lora_dims = sums.lora_dims / blocks;
  for (auto& [kind, v] : m.layer_matmul_params_by_kind) v /= blocks;
  // Phi-3 fuses q/k/v and gate/up; split them by width so recompute choices still find their matmuls.
  if (auto it = m.layer_matmul_params_by_kind.find("attn_qkv"); it != m.layer_matmul_params_by_kind.end()) {
    const double total = it->second;
    const double widths = static_cast<double>(m.q_width + m.k_width + m.v_width);
    m.layer_matmul_params_by_kind["attn_q"] += total * static_cast<double>(m.q_width) / widths;
    m.layer_matmul_params_by_kind["attn_k"] += total * static_cast<double>(m.k_width) / widths;
    m.layer_matmul_params_by_kind["attn_v"] += total * static_cast<double>(m.v_width) / widths;
    m.layer_matmul_params_by_kind.erase(it);
  }
}

// MLP width a token passes through, averaged over layers.
double ffn_active_width(const ModelSpec& spec, uint64_t layers, double blocks) {
  double ffn = 0;
  for (uint64_t i = 0; i < layers; ++i) {
    if (is_moe_layer(spec, i))
      ffn += static_cast<double>(spec.num_experts_per_tok * spec.moe_intermediate_size + spec.shared_expert_intermediate_size);
    else
      ffn += static_cast<double>(spec.intermediate_size);
  }
  return ffn / blocks;
}

}  // namespace

TrainingModel training_model(const ModelSpec& spec) {
  TrainingModel m;
  m.id = spec.id;
  m.name = spec.name;
  m.layers = spec.num_hidden_layers;
  m.hidden = spec.hidden_size;
  m.heads = spec.num_attention_heads;
  m.kv_heads = spec.num_key_value_heads ? spec.num_key_value_heads : spec.num_attention_heads;
  m.vocab = spec.vocab_size;
  m.max_position = spec.max_position_embeddings;
  m.tied_embeddings = spec.tie_word_embeddings;
  m.moe = spec.num_experts > 0;
  m.gated_mlp = true;  // every supported family uses a gated MLP (SwiGLU / GeGLU)
  m.rope = true;
  m.dropout = false;
  set_attention_widths(m, spec);
  const KvShape kv = kv_shape(spec);
  m.sliding_window = kv.window_tokens;
  if (m.layers) m.sliding_layer_fraction = static_cast<double>(kv.sliding_layers) / static_cast<double>(m.layers);

  const LayerSums sums = count_tensors(m, spec);
  if (m.tied_embeddings) m.head_params = m.embedding_params;
  m.params = static_cast<double>(parameter_count(spec));
  const double blocks = static_cast<double>(std::max<uint64_t>(m.layers, 1));
  set_layer_averages(m, sums, blocks);
  m.ffn_active_width = ffn_active_width(spec, m.layers, blocks);
  return m;
}

TrainingModel training_model(const GptShape& g) {
  TrainingModel m;
  m.id = g.id;
  m.name = g.id;
  const double h = static_cast<double>(g.hidden);
  const double f = static_cast<double>(g.ffn ? g.ffn : 4 * g.hidden);
  const double v = static_cast<double>(g.vocab);
  m.layers = g.layers;
  m.hidden = g.hidden;
  m.heads = g.heads;
  m.kv_heads = g.heads;
  m.q_width = m.k_width = m.v_width = m.attention_out_width = g.hidden;
  m.ffn_active_width = f;
  m.vocab = g.vocab;
  m.max_position = g.positions;
  m.tied_embeddings = g.tied;
  m.gated_mlp = false;
  m.rope = false;
  m.dropout = g.dropout;
  const double biases = g.biases ? 4 * h + f + h : 0;  // qkv, output, up, down
  const double norms = g.biases ? 4 * h : 2 * h;       // two LayerNorms, weight (+ bias)
  m.layer_params = 4 * h * h + 2 * h * f + biases + norms;
  m.layer_active_params = m.layer_params;
  m.largest_layer_params = m.layer_params;
  m.layer_lora_dims = 4 * (2 * h) + 2 * (h + f);
  m.layer_matmul_params_by_kind = {{"attn_q", h * h},      {"attn_k", h * h}, {"attn_v", h * h},
                                   {"attn_output", h * h}, {"ffn_up", h * f}, {"ffn_down", h * f}};
  m.embedding_params = v * h + static_cast<double>(g.positions) * h;
  m.head_params = v * h;
  m.other_params = g.biases ? 2 * h : h;
  m.params = static_cast<double>(g.layers) * m.layer_params + m.embedding_params + (g.tied ? 0 : m.head_params) + m.other_params;
  return m;
}

}  // namespace optadvisor
