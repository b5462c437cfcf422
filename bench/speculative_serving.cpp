// SPDX-License-Identifier: MIT
// Speculative decoding under load: `serve --speculative` against published speed-ups of serving
// engines (bench/data/speculative_serving.csv): the output tokens/s with the method over without it,
// at the same clients and lengths.
//   optadvisor_speculative_serving        the table (docs/serving.md, "Speculative decoding under load")
// Error of a row: exp(|ln(predicted / measured)|) - 1.
#include <cmath>
#include <iostream>

#include <fmt/format.h>

#include "csv.hpp"
#include "optadvisor/advisor/speculation.hpp"
#include "optadvisor/analysis/serving.hpp"
#include "optadvisor/base/error.hpp"

using namespace optadvisor;

namespace {

/// serve's output tokens/s for `r`, with speculation as `method` sets it up (none when empty).
double tokens_per_s(const Catalog& catalog, const RuleBook& book, ServeRequest r, const std::string& method, std::string* what) {
  if (!method.empty()) {
    const SpeculationChoice c = choose_serving_speculation(catalog, book, r, method, std::nullopt, std::nullopt);
    r.scenario.speculation = c.speculation;
    *what = fmt::format("{} drafts, {:.2f} accepted of {:.0f} verified", c.speculation.draft_tokens, c.speculation.accepted_tokens,
                        c.speculation.verified_tokens());
  }
  return simulate_serving(prepare_serving(catalog, r).setup, r.load).output_tokens_per_s;
}

}  // namespace

int main() {
  try {
    const Catalog catalog = Catalog::load({});
    const RuleBook book = RuleBook::load(catalog);
    const auto rows = bench::read_csv(std::string(OPTADVISOR_SOURCE_DIR) + "/bench/data/speculative_serving.csv");
    fmt::print("| row | engine | device | model | method | clients | speculation | predicted | measured | error |\n");
    fmt::print("|---|---|---|---|---|---:|---|---:|---:|---:|\n");
    for (const auto& row : rows) {
      ServeRequest r;
      r.scenario.hardware = row.at("hardware");
      r.scenario.model.preset = row.at("model");
      r.scenario.quant = row.at("quant");
      r.scenario.engine = row.at("engine");
      r.load.concurrency = std::stoull(row.at("concurrency"));
      r.load.prompt_tokens = std::stoull(row.at("prompt"));
      r.load.gen_tokens = std::stoull(row.at("gen"));
      std::string what;
      const double predicted = tokens_per_s(catalog, book, r, row.at("method"), &what) / tokens_per_s(catalog, book, r, "", &what);
      const double measured = std::stod(row.at("measured_speedup"));
      fmt::print("| {} | {} | {} | {} | {} | {} | {} | {:.2f}x | {:.2f}x | {:.0f}% |\n", row.at("id"), row.at("engine"), row.at("hardware"),
                 row.at("model"), row.at("method"), row.at("concurrency"), what, predicted, measured,
                 100 * (std::exp(std::fabs(std::log(predicted / measured))) - 1));
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "optadvisor_speculative_serving: " << e.what() << "\n";
    return 1;
  }
}
