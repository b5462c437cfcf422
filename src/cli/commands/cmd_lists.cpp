// SPDX-License-Identifier: MIT
// `optadvisor models`, `optadvisor engines`, `optadvisor quants`: what the catalog knows.
#include <fmt/format.h>

#include "cli/common.hpp"
#include "optadvisor/render/report_catalog.hpp"

namespace optadvisor::cli {

void register_catalog_lists(CLI::App& app, const GlobalOptions& global) {
  auto models_format = std::make_shared<FormatOption>();
  auto* models = app.add_subcommand("models", "List the model presets");
  models_format->attach(models);
  models->callback([models_format, &global] {
    const Catalog& catalog = load_catalog(global);
    fmt::print("{}", render_model_list(model_summaries(catalog), models_format->get()));
  });

  auto engines_format = std::make_shared<FormatOption>();
  auto* engines = app.add_subcommand("engines", "List the inference engines, their backends and calibration");
  engines_format->attach(engines);
  engines->callback(
      [engines_format, &global] { fmt::print("{}", render_engine_list(load_catalog(global).engines(), engines_format->get())); });

  auto quants_format = std::make_shared<FormatOption>();
  auto* quants = app.add_subcommand("quants", "List the quantization formats");
  quants_format->attach(quants);
  quants->callback(
      [quants_format, &global] { fmt::print("{}", render_quant_list(load_catalog(global).quant().formats(), quants_format->get())); });
}

}  // namespace optadvisor::cli
