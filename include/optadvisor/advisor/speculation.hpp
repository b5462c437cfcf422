// SPDX-License-Identifier: MIT
// Speculative decoding set up by name for a scenario outside the playbook (serve
// --speculative): the rule book's speculative-METHOD rule, its drafter's cost and
// memory, its acceptance, and the draft count, as the advisor computes them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "optadvisor/advisor/rules.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/analysis/serving_setup.hpp"
#include "optadvisor/catalog/catalog.hpp"

namespace optadvisor {

struct SpeculationChoice {
  Speculation speculation;
  std::vector<std::string> notes;  ///< what the drafter is and what was chosen
};

/// The methods `book` can set up: the ids of its speculative-* rules without the prefix ("eagle", "mtp", ...).
std::vector<std::string> speculation_methods(const RuleBook& book);

/// Speculative decoding by `method` on `request` (its batch, lengths and layout): the rule
/// speculative-METHOD's drafter, at `drafts` drafted tokens per step (else the count that decodes
/// fastest at the request's batch) and `rate` acceptance per draft (else the rule's). bad_input
/// when the method is unknown, its rule's prerequisites fail here, or the drafter cannot run.
SpeculationChoice choose_speculation(const Catalog& catalog, const RuleBook& book, const ScenarioRequest& request, const std::string& method,
                                     std::optional<uint32_t> drafts, std::optional<double> rate);

/// The same for a server (serve --speculative): on its decoding workers' layout, at the batch one
/// of their attention ranks decodes under the load without speculation (one simulation), over the
/// worker's ranks.
SpeculationChoice choose_serving_speculation(const Catalog& catalog, const RuleBook& book, const ServeRequest& request,
                                             const std::string& method, std::optional<uint32_t> drafts, std::optional<double> rate);

}  // namespace optadvisor
