// SPDX-License-Identifier: MIT
// A rule whose effect shows only under a stream of requests, simulated beside the playbook: the
// serving simulation (analysis/serving.hpp) of the advised scenario, as it is and as the rule
// would change it, on the same GPUs and load.
#pragma once

#include <optional>
#include <string>

#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/analysis/serving.hpp"
#include "optadvisor/catalog/catalog.hpp"

namespace optadvisor {

/// The comparisons rules may ask for (a rule's "under_load"): "disaggregate" (one prefill and
/// one decode worker against two mixed workers), "chunked-prefill" (prompt chunks mixed into
/// decode steps against prefill-only steps).
bool is_load_comparison(const std::string& kind);

/// Their names, comma-separated, for messages.
std::string load_comparison_names();

struct LoadComparison {
  std::string kind;        ///< "disaggregate" or "chunked-prefill"
  std::string setting;     ///< "2 GPUs, a closed loop of 32 clients, prompt 512 + gen 128 tokens"
  std::string base_label;  ///< "aggregated: 2 workers x tp 1"
  std::string alt_label;   ///< "disaggregated: 1 prefill + 1 decode worker x tp 1"
  ServingResult base, alt;
};

/// The comparison `kind` for the scenario `request` prepared as `prepared` (analysis: its
/// estimate, for the batch it ran). Empty with `why` set when it cannot be simulated (an engine
/// with no serving model, a layout the simulation refuses).
std::optional<LoadComparison> compare_under_load(const std::string& kind, const Catalog& catalog, const ScenarioRequest& request,
                                                 const PreparedScenario& prepared, const Analysis& analysis, std::string& why);

}  // namespace optadvisor
