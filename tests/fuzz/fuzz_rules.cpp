// SPDX-License-Identifier: MIT
// libFuzzer target: a playbook rule document (data/rules/*.json) as an overlay
// would supply it, through the rule schema and the rule book's checks
// (facts, operators, transforms, assumptions, templates), next to the
// embedded assumptions and defaults.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/advisor/rules.hpp"

namespace {

const optadvisor::Catalog& catalog() {
  static const optadvisor::Catalog c = optadvisor::Catalog::load(optadvisor::LoadOptions{});
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto json = nlohmann::json::parse(std::string_view(reinterpret_cast<const char*>(data), size), nullptr, false);
  if (json.is_discarded()) return 0;
  std::vector<optadvisor::Problem> problems;
  try {
    optadvisor::check_against_schema("rule", json, "fuzz.json", problems);
    if (!problems.empty()) return 0;  // the loader stops at schema problems; the rule book assumes a valid document
    // The embedded documents (assumptions, defaults, other rules) plus the fuzzed one, as an overlay adds it.
    auto documents = catalog().rule_documents();
    documents.emplace_back("overlay/rules/fuzz.json", json);
    problems.clear();
    (void)optadvisor::RuleBook::parse(documents, catalog(), problems);
  } catch (const optadvisor::Error&) {}
  return 0;
}
