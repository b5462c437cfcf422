// SPDX-License-Identifier: MIT
#include "fixtures.hpp"

#include <algorithm>
#include <fstream>

namespace optadvisor::fixtures {

const Catalog& catalog() {
  static const Catalog c = Catalog::load({});
  return c;
}

ResolvedModel model(const std::string& id) {
  ModelRequest m;
  m.preset = id;
  return resolve_model(catalog(), m);
}

const ModelSpec& spec(const std::string& id) { return catalog().resolve_model(id); }

const Tensor* find_tensor(const std::vector<Tensor>& all, const std::string& name) {
  for (const Tensor& t : all)
    if (t.name == name) return &t;
  return nullptr;
}

uint64_t checkpoint_term(const ModelSpec& s, const std::string& what) {
  for (const CountTerm& t : checkpoint_extra_terms(s))
    if (t.what == what) return t.elements;
  FAIL("no checkpoint term " + what);
  return 0;
}

std::string first_problem_pointer(const nlohmann::json& doc) {
  std::vector<Problem> problems;
  const bool ok = model_from_json(doc, problems).has_value();
  return ok || problems.empty() ? std::string() : problems.front().pointer;
}

nlohmann::json hf_config(const std::string& file) {
  std::ifstream in(std::string(OPTADVISOR_SOURCE_DIR) + "/tests/data/hf/" + file);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

HardwareProfile round_device(double bandwidth_bytes_per_s, double flops_per_s, double capacity_bytes) {
  HardwareProfile hw;
  hw.id = "round";
  hw.name = "Round-number test device";
  hw.device_class = DeviceClass::kDatacenterGpu;
  hw.memory_capacity_bytes = capacity_bytes;
  hw.memory_bandwidth_bytes_per_s = bandwidth_bytes_per_s;
  hw.flops_per_s = {{"fp16", flops_per_s}, {"bf16", flops_per_s}};
  return hw;
}

const RuleBook& rule_book() {
  static const RuleBook b = RuleBook::load(catalog());
  return b;
}

TransformResult apply_rule(const std::string& rule_id, const ScenarioRequest& r) {
  const Rule& rule = rule_book().resolve(rule_id);
  REQUIRE(rule.transform.size() == 1);
  const PreparedScenario p = prepare_scenario(catalog(), r);
  const Analysis a = analyze(p.scenario);
  return apply_transform(rule.transform.front(), TransformInput{catalog(), r, p, a});
}

PlainEngine::PlainEngine(double bw_eff, double compute_eff, uint64_t max_batched_tokens, uint64_t kv_block_tokens) {
  engine.id = "plain";
  engine.kind = "inference";
  BackendProfile b;
  b.name = "default";
  b.decode_bandwidth_efficiency = bw_eff;
  b.prefill_compute_efficiency = compute_eff;
  b.layer_overhead_s = 0;
  b.step_overhead_s = 0;
  engine.backends["default"] = b;
  engine.memory.runtime_overhead_bytes = 0;
  engine.memory.max_batched_tokens = max_batched_tokens;
  engine.memory.kv_block_tokens = kv_block_tokens;
}

Scenario plain_scenario(const HardwareProfile& hw, const std::string& model, const PlainEngine& e) {
  Scenario s;
  s.hardware = &hw;
  s.model = catalog().resolve_model(model);
  s.engine = e.choice();
  s.workload.kv_bytes_per_element = 2.0;
  return s;
}

Scenario plain_scenario(const HardwareProfile& hw, const std::string& model, const PlainEngine& e, const HandWeights& w, uint64_t prompt,
                        uint64_t gen) {
  Scenario s = plain_scenario(hw, model, e);
  s.weights.total_bytes = w.total_bytes;
  s.weights.params = w.params;
  s.weights.active_params = w.active_params;
  s.workload.prompt_tokens = prompt;
  s.workload.gen_tokens = gen;
  return s;
}

ScenarioRequest request(const std::string& hardware, const std::string& model, const std::string& quant, const std::string& engine) {
  ScenarioRequest r;
  r.hardware = hardware;
  r.model.preset = model;
  r.quant = quant;
  r.engine = engine;
  return r;
}

ServeRequest serve_request(const std::string& hardware, const std::string& model, const std::string& quant, const std::string& engine,
                           uint32_t tp) {
  ServeRequest r;
  r.scenario = request(hardware, model, quant, engine);
  r.aggregated.layout.tp = tp;
  r.load.concurrency = 1;
  return r;
}

Analysis analyze_request(const ScenarioRequest& r) { return analyze(prepare_scenario(catalog(), r).scenario); }

bool any_contains(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& line) { return line.find(text) != std::string::npos; });
}

StepModel round_rank() {
  StepModel m;
  m.dense_weight_bytes = 1e9;
  m.dense_flops_per_token = 2e9;
  m.kv_bytes_per_token_full = 1e5;
  m.kv_read_bytes_per_token_full = 1e5;  // no KV-shared layers: a step reads what is cached
  m.attention_flops_full = 1e5;
  m.bandwidth_bytes_per_s = 1e12;
  m.weight_bandwidth_bytes_per_s = 1e12;
  m.expert_weight_bandwidth_bytes_per_s = 1e12;
  m.gemm_flops_per_s = 1e15;
  m.attention_flops_per_s = 1e14;
  m.step_overhead_s = 1e-3;
  m.layers = 10;
  m.kv_pool_bytes = 1e12;
  return m;
}

ServingSetup one_pool(const StepModel& m) {
  ServingSetup s;
  ServingPool p;
  p.step = m;
  s.pools.push_back(p);
  return s;
}

ServingLoad closed_loop(uint64_t clients, uint64_t prompt, uint64_t gen) {
  ServingLoad l;
  l.concurrency = clients;
  l.prompt_tokens = prompt;
  l.gen_tokens = gen;
  return l;
}

}  // namespace optadvisor::fixtures
