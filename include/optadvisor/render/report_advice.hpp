// SPDX-License-Identifier: MIT
// Renderers for the advisor and the rule book: text (100 columns), JSON and
// Markdown. They format an already-computed Advice and never compute.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "optadvisor/advisor/playbook.hpp"
#include "optadvisor/render/format.hpp"
#include "optadvisor/advisor/rules.hpp"

namespace optadvisor {

/// What to show besides the ranked playbook.
struct AdviceView {
  bool all = false;  ///< list every rule left out, with its reason
};

/// `optadvisor --hw H --goal G`: diagnosis, ranked playbook, stacked plan.
nlohmann::json advice_json(const Advice& advice, const RuleBook& book);
std::string render_advice(const Advice& advice, const RuleBook& book, const AdviceView& view, OutputFormat format, const Style& style);

/// `--why-not RULE`: whether one rule applies here, and why (not).
nlohmann::json why_not_json(const Advice& advice, const Rule& rule);
/// The serving simulation beside an unquantified rule as lines ("simulated on ...", one line per
/// layout), or why it did not run; empty when the rule has none.
std::vector<std::string> under_load_lines(const Unquantified& u);

std::string render_why_not(const Advice& advice, const Rule& rule, OutputFormat format);

/// `optadvisor rules list`: every rule (optionally of one goal) and every assumption.
nlohmann::json rules_list_json(const RuleBook& book, std::optional<Goal> goal);
std::string render_rules_list(const RuleBook& book, std::optional<Goal> goal, OutputFormat format);

/// `optadvisor explain RULE`: everything about one rule.
nlohmann::json rule_json(const Rule& rule, const RuleBook& book);
std::string render_rule(const Rule& rule, const RuleBook& book, OutputFormat format, const Style& style);

/// `optadvisor rules facts`: the facts conditions may read.
std::string render_facts(OutputFormat format);

}  // namespace optadvisor
