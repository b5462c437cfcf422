// SPDX-License-Identifier: MIT
#include "optadvisor/advisor/speculation.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "optadvisor/advisor/playbook.hpp"
#include "optadvisor/advisor/transforms.hpp"
#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/base/error.hpp"

namespace optadvisor {
namespace {

constexpr std::string_view kRulePrefix = "speculative-";

/// The rule's speculative_decoding step, or null.
const TransformStep* speculation_step(const Rule& rule) {
  for (const TransformStep& step : rule.transform)
    if (step.name == "speculative_decoding") return &step;
  return nullptr;
}

}  // namespace

std::vector<std::string> speculation_methods(const RuleBook& book) {
  std::vector<std::string> out;
  for (const Rule& rule : book.rules())
    if (rule.id.starts_with(kRulePrefix) && speculation_step(rule)) out.push_back(rule.id.substr(kRulePrefix.size()));
  return out;
}

SpeculationChoice choose_speculation(const Catalog& catalog, const RuleBook& book, const ScenarioRequest& request, const std::string& method,
                                     std::optional<uint32_t> drafts, std::optional<double> rate) {
  const std::vector<std::string> methods = speculation_methods(book);
  const Rule* rule = book.find(std::string(kRulePrefix) + method);
  const TransformStep* step = rule ? speculation_step(*rule) : nullptr;
  if (!step) throw bad_input(fmt::format("--speculative: unknown method '{}'", method), fmt::format("use one of {}", fmt::join(methods, ", ")));
  ScenarioRequest base = request;
  base.speculation = {};
  const PreparedScenario prepared = prepare_scenario(catalog, base);
  const Analysis analysis = analyze(prepared.scenario);
  std::map<std::string, double> values;
  for (const auto& [id, a] : book.assumptions()) values[id] = a.value;
  const Facts facts = inference_facts(prepared, analysis, Goal::kLatency);
  for (const Condition& c : rule->requires_)
    if (!c.holds(facts))
      throw bad_input(fmt::format("--speculative {}: {}", method, fill_template(c.reason.empty() ? c.text : c.reason, facts, values)));
  TransformStep chosen{step->name, resolve_params(step->params, values)};
  if (rate) chosen.params["acceptance_rate"] = *rate;
  if (drafts) chosen.params["fixed_draft_tokens"] = *drafts;
  const TransformResult result = apply_transform(chosen, TransformInput{catalog, base, prepared, analysis});
  if (!result.request) throw bad_input(fmt::format("--speculative {}: {}", method, result.not_applicable));
  SpeculationChoice out;
  out.speculation = result.request->speculation;
  if (drafts && out.speculation.draft_tokens != *drafts)
    throw bad_input(fmt::format("--draft-tokens {}: {} drafts at most {} here", *drafts, method, out.speculation.draft_tokens));
  out.notes = result.notes;
  // Past the ridge verifying the drafts costs more than they save; the user asked for it, so say so.
  // The prepared scenario with the speculation in its workload, as the transform tried it (no second prepare).
  Scenario with = prepared.scenario;
  with.workload.speculation = out.speculation;
  const double speculating_s = analyze(with, Detail::kNumbers).decode.time_s;
  if (speculating_s > analysis.decode.time_s)
    out.notes.push_back(fmt::format("at batch {} speculative decoding is slower than none by the one-batch estimate: {:.3g} against {:.3g} ms a token",
                                    base.batch_or_default(), speculating_s * 1e3, analysis.decode.time_s * 1e3));
  return out;
}

SpeculationChoice choose_serving_speculation(const Catalog& catalog, const RuleBook& book, const ServeRequest& request,
                                             const std::string& method, std::optional<uint32_t> drafts, std::optional<double> rate) {
  const ServePoolRequest& pool = request.disaggregated ? request.decode : request.aggregated;
  ScenarioRequest r = request.scenario;
  r.speculation = {};
  r.tp = pool.layout.tp;
  r.pp = pool.layout.pp;
  r.ep = pool.layout.ep;
  r.dp_attention = pool.layout.dp_attention;
  r.prompt_tokens = static_cast<int64_t>(request.load.prompt_tokens);
  r.gen_tokens = static_cast<int64_t>(request.load.gen_tokens);
  ServeRequest plain_request = request;
  plain_request.scenario.speculation = {};
  const ServingResult plain = simulate_serving(prepare_serving(catalog, plain_request).setup, request.load);
  r.batch = fmt::format("{:.0f}", std::max(1.0, std::round(plain.mean_decode_batch * pool.layout.dp_attention)));
  return choose_speculation(catalog, book, r, method, drafts, rate);
}

}  // namespace optadvisor
