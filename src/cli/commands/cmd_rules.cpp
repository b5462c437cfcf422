// SPDX-License-Identifier: MIT
// `optadvisor rules list`, `optadvisor rules facts` and `optadvisor explain RULE`:
// the playbook's rules, the facts they read and everything about one rule.
#include <fmt/format.h>

#include "cli/common.hpp"
#include "optadvisor/render/report_advice.hpp"
#include "optadvisor/advisor/rules.hpp"

namespace optadvisor::cli {

void register_rules(CLI::App& app, const GlobalOptions& global) {
  auto* rules = app.add_subcommand("rules", "The advisor's rules (data/rules/): list them, or the facts they read");
  rules->require_subcommand(1);

  struct ListOptions {
    std::string goal;
    FormatOption format;
  };
  auto list_options = std::make_shared<ListOptions>();
  auto* list = rules->add_subcommand("list", "Every rule with its goals and transform, and every assumption");
  list->add_option("--goal", list_options->goal, "Only the rules of one goal")
      ->check(CLI::IsMember({"latency", "throughput", "memory", "training"}));
  list_options->format.attach(list);
  list->callback([list_options, &global] {
    const Catalog& catalog = load_catalog(global);
    const RuleBook book = RuleBook::load(catalog);
    std::optional<Goal> goal;
    if (!list_options->goal.empty()) goal = goal_from_string(list_options->goal);
    fmt::print("{}", render_rules_list(book, goal, list_options->format.get()));
  });

  auto facts_format = std::make_shared<FormatOption>();
  auto* facts = rules->add_subcommand("facts", "The facts rule conditions may read");
  facts_format->attach(facts);
  facts->callback([facts_format] { fmt::print("{}", render_facts(facts_format->get())); });

  struct ExplainOptions {
    std::string rule;
    FormatOption format;
  };
  auto explain_options = std::make_shared<ExplainOptions>();
  auto* explain =
      app.add_subcommand("explain", "Everything about one rule: triggers, prerequisites, transform, how-to, assumptions, sources");
  explain->add_option("rule", explain_options->rule, "Rule id (optadvisor rules list)")->required();
  explain_options->format.attach(explain);
  explain->callback([explain_options, &global] {
    const Catalog& catalog = load_catalog(global);
    const RuleBook book = RuleBook::load(catalog);
    fmt::print("{}", render_rule(book.resolve(explain_options->rule), book, explain_options->format.get(), stdout_style(global)));
  });
}

}  // namespace optadvisor::cli
