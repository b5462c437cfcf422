// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/advisor/playbook.hpp"
#include "optadvisor/advisor/rules.hpp"
#include "optadvisor/advisor/transforms.hpp"
#include "fixtures.hpp"

using namespace optadvisor;
using nlohmann::json;

namespace {

using fixtures::catalog;

/// Problems of one rule document parsed next to the shipped assumptions.
std::vector<Problem> problems_of(const json& doc) {
  std::vector<std::pair<std::string, json>> docs;
  for (const auto& d : catalog().rule_documents())
    if (d.second.contains("assumptions")) docs.push_back(d);
  docs.emplace_back("overlay/rules/bad.json", doc);
  std::vector<Problem> problems;
  RuleBook::parse(docs, catalog(), problems);
  return problems;
}

bool has_problem(const std::vector<Problem>& problems, const std::string& pointer, const std::string& needle) {
  for (const auto& p : problems)
    if (p.pointer == pointer && p.message.find(needle) != std::string::npos) return true;
  return false;
}

json good_rule() {
  return json::parse(R"({
    "id": "test-rule", "title": "A test rule", "summary": "For tests.", "goals": ["latency"],
    "when": [{"fact": "decode.bound", "in": ["memory-bandwidth"], "because": "decode is {decode.bound} bound"}],
    "requires": [{"fact": "engine.id", "equals": "vllm", "text": "vLLM", "reason": "{engine.id} is not vLLM"}],
    "transform": {"name": "kv_cache_dtype", "params": {"dtype": "fp8"}},
    "effort": "low", "quality": "near-lossless", "risk": {"level": "low", "text": "none"}, "how": {"vllm": "--kv-cache-dtype fp8"},
    "sources": [{"title": "t", "url": "u", "read": "2026-11-30"}]})");
}

}  // namespace

TEST_CASE("the shipped rule book loads without problems", "[rules]") {
  std::vector<Problem> problems;
  const RuleBook book = RuleBook::parse(catalog().rule_documents(), catalog(), problems);
  for (const auto& p : problems) UNSCOPED_INFO(to_string(p));
  CHECK(problems.empty());
  CHECK(book.rules().size() >= 30);
  // Every goal the issue names has inference rules; training comes with the training model.
  for (Goal g : {Goal::kLatency, Goal::kThroughput, Goal::kMemory}) {
    std::size_t n = 0;
    for (const auto& r : book.rules()) n += r.serves(g) ? 1 : 0;
    CHECK(n >= 8);
  }
  // Schema check of the shipped files (validate-data runs it too).
  for (const auto& [file, doc] : catalog().rule_documents()) {
    std::vector<Problem> schema;
    check_against_schema("rule", doc, file, schema);
    for (const auto& p : schema) UNSCOPED_INFO(to_string(p));
    CHECK(schema.empty());
  }
}

TEST_CASE("every rule and assumption is sourced, effects rows exist", "[rules]") {
  const RuleBook book = RuleBook::load(catalog());
  std::ifstream in(std::string(OPTADVISOR_SOURCE_DIR) + "/bench/data/effects.csv");
  REQUIRE(in);
  std::set<std::string> rows;
  std::string line;
  while (std::getline(in, line)) rows.insert(line.substr(0, line.find(',')));
  for (const auto& r : book.rules()) {
    INFO(r.id);
    CHECK(!r.sources.empty());
    CHECK(!r.how.empty());
    for (const auto& e : r.effects) CHECK(rows.count(e) == 1);
  }
  for (const auto& [id, a] : book.assumptions()) {
    INFO(id);
    CHECK(!a.sources.empty());
    CHECK(!a.derivation.empty());
    CHECK(a.min <= a.value);
    CHECK(a.value <= a.max);
    for (const auto& e : a.effects) CHECK(rows.count(e) == 1);
  }
}

TEST_CASE("a well-formed rule parses", "[rules]") {
  json doc = {{"rules", json::array({good_rule()})}};
  const auto problems = problems_of(doc);
  for (const auto& p : problems) UNSCOPED_INFO(to_string(p));
  CHECK(problems.empty());
}

TEST_CASE("the rule loader reports every problem with its pointer", "[rules]") {
  json a = good_rule();
  a["when"][0]["fact"] = "decode.bownd";
  json b = good_rule();
  b["id"] = "b";
  b["when"][0] = {{"fact", "memory.fits"}, {"equals", "no"}, {"because", "x"}};
  b["requires"][0].erase("reason");
  json c = good_rule();
  c["id"] = "c";
  c["transform"] = {{"name", "quantise_weights"}, {"params", {{"quant", "fp8"}}}};
  json d = good_rule();
  d["id"] = "d";
  d["transform"] = {{"name", "speculative_decoding"},
                    {"params", {{"method", "eagle"}, {"accepted_tokens", "@no_such_number"}, {"draft_tokens", 4}, {"speed", 2}}}};
  json e = good_rule();
  e["id"] = "e";
  e["transform"] = {{"name", "quantize_weights"}, {"params", {{"quant", {{"vllm", "fp9"}, {"nosuchengine", "fp8"}}}}}};
  e["how"] = {{"nosuchengine", "x"}};
  e["when"][0]["because"] = "decode is {decode.bownd} bound";
  json f = good_rule();  // duplicate id of a
  f["when"][0] = {{"fact", "workload.batch"}, {"gt", 1}, {"lt", 4}, {"because", "x"}};
  json g = good_rule();
  g["id"] = "g";
  g["when"][0] = {{"fact", "hardware.engines"}, {"equals", "vllm"}, {"because", "x"}};
  g["requires"][0] = {{"fact", "engine.id"}, {"in", {"vllm", "tensorrt"}}, {"text", "t"}, {"reason", "r"}};
  const auto problems = problems_of({{"rules", {a, b, c, d, e, f, g}}});
  for (const auto& p : problems) UNSCOPED_INFO(to_string(p));
  CHECK(has_problem(problems, "/rules/0/when/0/fact", "unknown fact 'decode.bownd' (did you mean 'decode.bound'?)"));
  CHECK(has_problem(problems, "/rules/1/when/0/equals", "fact 'memory.fits' is a bool; compare it with a bool value"));
  CHECK(has_problem(problems, "/rules/1/requires/0", "a prerequisite needs a 'reason'"));
  CHECK(has_problem(problems, "/rules/2/transform/name", "unknown transform 'quantise_weights' (did you mean 'quantize_weights'?)"));
  CHECK(has_problem(problems, "/rules/3/transform/params/accepted_tokens", "unknown assumption 'no_such_number'"));
  CHECK(has_problem(problems, "/rules/3/transform/params/speed", "transform 'speculative_decoding' has no parameter 'speed'"));
  CHECK(has_problem(problems, "/rules/4/transform/params/quant/vllm", "unknown weight format 'fp9'"));
  CHECK(has_problem(problems, "/rules/4/transform/params/quant/nosuchengine", "unknown engine 'nosuchengine'"));
  CHECK(has_problem(problems, "/rules/4/how/nosuchengine", "unknown engine 'nosuchengine'"));
  CHECK(has_problem(problems, "/rules/4/when/0/because", "unknown fact 'decode.bownd' in the text"));
  CHECK(has_problem(problems, "/rules/5/when/0", "a condition has more than one operator"));
  CHECK(has_problem(problems, "/rules/5/id", "duplicate rule id 'test-rule'"));
  CHECK(has_problem(problems, "/rules/6/when/0/equals", "fact 'hardware.engines' is a list"));
  CHECK(has_problem(problems, "/rules/6/requires/0/in", "unknown engine 'tensorrt'"));
  CHECK(problems.size() >= 14);
}

TEST_CASE("after-conditions need a reason, known facts and a transform whose result they check", "[rules]") {
  json ok = good_rule();
  ok["after"] = json::array({{{"fact", "memory.offloaded_layers"}, {"gt", 0}, {"reason", "keeps {memory.offloaded_layers} layers off"}}});
  CHECK(problems_of({{"rules", {ok}}}).empty());
  json no_reason = ok;
  no_reason["after"][0].erase("reason");
  json bad_fact = ok;
  bad_fact["id"] = "bad-fact";
  bad_fact["after"][0]["fact"] = "memory.offloaded_layer";
  json no_transform = ok;
  no_transform["id"] = "no-transform";
  no_transform.erase("transform");
  no_transform["not_quantified"] = "not computed";
  const auto problems = problems_of({{"rules", {no_reason, bad_fact, no_transform}}});
  for (const auto& p : problems) UNSCOPED_INFO(to_string(p));
  CHECK(has_problem(problems, "/rules/0/after/0", "an after-condition needs a 'reason'"));
  CHECK(has_problem(problems, "/rules/1/after/0/fact", "unknown fact 'memory.offloaded_layer'"));
  CHECK(has_problem(problems, "/rules/2/after", "after-conditions check a transform's result: the rule has none"));
}

TEST_CASE("training and inference rules do not mix", "[rules]") {
  json both = good_rule();
  both["goals"] = {"latency", "training"};
  json fact = good_rule();
  fact["id"] = "fact";
  fact["when"][0] = {{"fact", "training.fits"}, {"equals", false}, {"because", "x"}};
  json train = good_rule();
  train["id"] = "train";
  train["goals"] = {"training"};
  train["when"][0] = {{"fact", "training.fits"}, {"equals", false}, {"because", "x"}};
  train["requires"] = json::array();
  json sharding = train;
  sharding["id"] = "sharding";
  sharding["transform"] = {{"name", "sharding"}, {"params", {{"name", {{"pytorch-fsdp2", "zero4"}, {"torchtitan", "fsdp"}}}}}};
  sharding["how"] = {{"pytorch-fsdp2", "fully_shard"}};
  const auto problems = problems_of({{"rules", {both, fact, train, sharding}}});
  for (const auto& p : problems) UNSCOPED_INFO(to_string(p));
  CHECK(has_problem(problems, "/rules/0/goals", "a rule serves training or the inference goals, not both"));
  CHECK(has_problem(problems, "/rules/1/when/0/fact", "fact 'training.fits' is not known for inference scenarios"));
  CHECK(has_problem(problems, "/rules/2/transform", "transform 'kv_cache_dtype' changes inference scenarios; this rule serves training"));
  CHECK(has_problem(problems, "/rules/3/transform/params/name/pytorch-fsdp2", "unknown sharding mode \"zero4\""));
  CHECK(has_problem(problems, "/rules/3/transform/params/name/torchtitan", "unknown training framework 'torchtitan'"));
}

TEST_CASE("every training fact is filled for a training step", "[rules][facts]") {
  TrainingRequest t;
  t.hardware = "h100";
  t.model.preset = "llama-3.1-8b";
  t.gpus = 8;
  const PreparedTraining p = prepare_training(catalog(), t);
  const Facts facts = training_facts(p, analyze_training(p.scenario));
  for (const auto& f : fact_catalog()) {
    if (!fact_for_training(f.name)) continue;
    INFO(f.name);
    CHECK(facts.count(f.name) == 1);
  }
  for (const auto& [name, value] : facts) {
    INFO(name);
    CHECK(fact_for_training(name));
  }
}

TEST_CASE("the rule schema rejects unknown fields and bad enums", "[rules][schema]") {
  json rule = good_rule();
  rule["effort"] = "trivial";
  rule["quality"] = "perfect";
  rule["impact"] = 2.0;  // a rule never states its impact
  std::vector<Problem> problems;
  check_against_schema("rule", {{"rules", {rule}}}, "x.json", problems);
  bool enum_found = false, field_found = false, quality_found = false;
  for (const auto& p : problems) {
    enum_found = enum_found || (p.pointer == "/rules/0/effort" && p.message == "not one of the allowed values");
    quality_found = quality_found || (p.pointer == "/rules/0/quality" && p.message == "not one of the allowed values");
    field_found = field_found || p.message == "unknown field (not in the schema)";
  }
  CHECK(enum_found);
  CHECK(quality_found);
  CHECK(field_found);
}

TEST_CASE("conditions", "[rules]") {
  const Facts facts = {{"decode.bound", "memory-bandwidth"},
                       {"workload.batch", 4},
                       {"memory.fits", true},
                       {"hardware.engines", json::array({"vllm", "llama.cpp"})}};
  auto make = [](const std::string& fact, const std::string& op, json value) {
    Condition c;
    c.fact = fact;
    c.op = op;
    c.value = std::move(value);
    return c;
  };
  CHECK(make("decode.bound", "equals", "memory-bandwidth").holds(facts));
  CHECK(make("decode.bound", "in", json::array({"compute", "memory-bandwidth"})).holds(facts));
  CHECK_FALSE(make("decode.bound", "not_in", json::array({"compute", "memory-bandwidth"})).holds(facts));
  CHECK(make("workload.batch", "gt", 3).holds(facts));
  CHECK_FALSE(make("workload.batch", "lt", 4).holds(facts));
  CHECK(make("workload.batch", "le", 4).holds(facts));
  CHECK(make("hardware.engines", "contains", "vllm").holds(facts));
  CHECK(make("hardware.engines", "not_contains", "qnn").holds(facts));
  CHECK(make("memory.fits", "equals", true).holds(facts));
  CHECK_FALSE(make("prefill.bound", "equals", "compute").holds(facts));  // a missing fact never holds
  Condition any;
  any.any = {make("workload.batch", "gt", 10), make("memory.fits", "equals", true)};
  CHECK(any.holds(facts));
}

TEST_CASE("templates fill facts and assumptions and leave JSON alone", "[rules]") {
  const Facts facts = {{"memory.kv_share", 0.256}, {"memory.total_bytes", 4.2e9}, {"decode.time_s", 0.0071},
                       {"workload.batch", 16},     {"hardware.name", "RTX 5090"}, {"memory.fits", false}};
  const std::map<std::string, double> assumptions = {{"spec_accept_eagle", 5.71}};
  CHECK(fill_template("KV {memory.kv_share:%}, {memory.total_bytes:gb}, {decode.time_s:s}, batch {workload.batch}", facts, assumptions) ==
        "KV 26%, 4.20 GB, 7.10 ms, batch 16");
  CHECK(fill_template("{hardware.name} fits: {memory.fits}; accepts {@spec_accept_eagle}", facts, assumptions) ==
        "RTX 5090 fits: no; accepts 5.71");
  CHECK(fill_template("--speculative-config '{\"method\": \"eagle3\"}'", facts, assumptions) ==
        "--speculative-config '{\"method\": \"eagle3\"}'");
  CHECK(is_placeholder("decode.bound"));
  CHECK(is_placeholder("@fa2_speedup"));
  CHECK(is_placeholder("memory.kv_share:%"));
  CHECK_FALSE(is_placeholder("\"method\": \"eagle3\""));
}

TEST_CASE("assumption overrides (--assume) are checked", "[rules]") {
  const RuleBook book = RuleBook::load(catalog());
  CHECK(parse_assumption_override("spec_accept_eagle=3.5") == std::pair<std::string, double>("spec_accept_eagle", 3.5));
  CHECK_THROWS_WITH(parse_assumption_override("spec_accept_eagle"), "--assume 'spec_accept_eagle' is not NAME=VALUE");
  CHECK_THROWS_WITH(parse_assumption_override("x=fast"), "--assume x: 'fast' is not a number");
  CHECK_THROWS_WITH(check_assumption_overrides(book, {{"spec_accept_eagel", 3.0}}), "unknown assumption 'spec_accept_eagel'");
  CHECK_THROWS_WITH(check_assumption_overrides(book, {{"prefix_shared_fraction", 1.5}}),
                    "--assume prefix_shared_fraction=1.5 is outside the allowed range [0, 0.99]");
  CHECK_NOTHROW(check_assumption_overrides(book, {{"spec_rate_eagle_chain", 0.6}}));
}

TEST_CASE("every fact in the catalog is filled for an inference scenario", "[rules][facts]") {
  ScenarioRequest r;
  r.hardware = "h100";
  r.model.preset = "llama-3.1-8b";
  const PreparedScenario ps = prepare_scenario(catalog(), r);
  const Facts facts = inference_facts(ps, analyze(ps.scenario), Goal::kLatency);
  for (const auto& f : fact_catalog()) {
    if (!fact_for_inference(f.name)) continue;
    INFO(f.name);
    REQUIRE(facts.count(f.name) == 1);
    const json& v = facts.at(f.name);
    switch (f.type) {
      case FactType::kBool: CHECK(v.is_boolean()); break;
      case FactType::kNumber: CHECK(v.is_number()); break;
      case FactType::kString: CHECK(v.is_string()); break;
      case FactType::kStringList: CHECK(v.is_array()); break;
    }
  }
  for (const auto& [name, value] : facts) {
    INFO(name);
    CHECK(find_fact(name) != nullptr);
  }
}

TEST_CASE("every transform a rule names exists and documents its parameters", "[rules][transforms]") {
  const RuleBook book = RuleBook::load(catalog());
  for (const auto& r : book.rules())
    for (const auto& step : r.transform) {
      INFO(r.id << " " << step.name);
      REQUIRE(find_transform(step.name) != nullptr);
    }
  for (const auto& t : transform_catalog()) {
    CHECK(!t.description.empty());
    for (const auto& p : t.params) CHECK(!p.description.empty());
  }
  CHECK(precision_class(4.9) == "4");
  CHECK(precision_class(6.0) == "4");
  CHECK(precision_class(8.5) == "8");
  CHECK(precision_class(16) == "16");
}

TEST_CASE("every shipped rule states its quality class, model switches are different-model, LoRA a different run", "[rules][quality]") {
  std::vector<Problem> problems;
  const RuleBook book = RuleBook::parse(catalog().rule_documents(), catalog(), problems);
  for (const auto& r : book.rules()) {
    INFO(r.id);
    CHECK(r.quality_class() >= 0);
    const bool switches =
        std::any_of(r.transform.begin(), r.transform.end(), [](const TransformStep& s) { return s.name == "switch_model"; });
    // LoRA trains adapters where every weight was asked for: an alternative to the job, like another model.
    const bool other_run = std::any_of(r.transform.begin(), r.transform.end(), [](const TransformStep& s) { return s.name == "lora"; });
    CHECK(switches == (r.quality == "different-model"));
    CHECK(other_run == (r.quality == "different-run"));
    CHECK((switches || other_run) == r.switches_model());
  }
  // 8-bit steps are near-lossless, 4-bit ones lossy (the classes the ranking's margin compares).
  auto quality = [&](const std::string& id) {
    for (const auto& r : book.rules())
      if (r.id == id) return r.quality;
    return std::string();
  };
  CHECK(quality("fp8-weights") == "near-lossless");
  CHECK(quality("kv-cache-q8") == "near-lossless");
  CHECK(quality("awq-int4-marlin") == "lossy");
  CHECK(quality("kv-cache-q4") == "lossy");
  CHECK(quality("cpu-offload") == "lossless");
}

TEST_CASE("a rule's under_load goes with not_quantified and names a known comparison", "[rules][under_load]") {
  json computed = good_rule();
  computed["id"] = "computed";
  computed["under_load"] = "disaggregate";  // a computed rule shows its own effect
  json unknown = good_rule();
  unknown["id"] = "unknown";
  unknown.erase("transform");
  unknown["not_quantified"] = "not here";
  unknown["under_load"] = "chunk";
  json fine = unknown;
  fine["id"] = "fine";
  fine["under_load"] = "disaggregate";
  const auto problems = problems_of({{"rules", {computed, unknown, fine}}});
  for (const auto& p : problems) UNSCOPED_INFO(to_string(p));
  CHECK(has_problem(problems, "/rules/0/under_load", "'under_load' goes with 'not_quantified'"));
  CHECK(has_problem(problems, "/rules/1/under_load", "no load comparison 'chunk'"));
  for (const auto& p : problems) CHECK(p.pointer.rfind("/rules/2", 0) != 0);
}

TEST_CASE("how_official goes with quantize_weights and names known facts", "[rules]") {
  json fine = good_rule();
  fine["transform"] = {{"name", "quantize_weights"}, {"params", {{"quant", "fp8"}}}};
  fine["how_official"] = {{"vllm", "vllm serve {quant.official_checkpoint}"}};
  CHECK(problems_of({{"rules", {fine}}}).empty());
  json wrong_transform = good_rule();  // kv_cache_dtype changes no checkpoint
  wrong_transform["how_official"] = {{"vllm", "vllm serve {quant.official_checkpoint}"}};
  json bad_fact = fine;
  bad_fact["id"] = "bad-fact";
  bad_fact["how_official"] = {{"nosuchengine", "serve {quant.official_repo}"}};
  const auto problems = problems_of({{"rules", {wrong_transform, bad_fact}}});
  for (const auto& p : problems) UNSCOPED_INFO(to_string(p));
  CHECK(has_problem(problems, "/rules/0/how_official", "'how_official' goes with the transform quantize_weights"));
  CHECK(has_problem(problems, "/rules/1/how_official/nosuchengine", "unknown engine 'nosuchengine'"));
  CHECK(has_problem(problems, "/rules/1/how_official/nosuchengine", "unknown fact 'quant.official_repo'"));
}
