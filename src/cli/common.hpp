// SPDX-License-Identifier: MIT
// What every subcommand shares: global options, output format, catalog loading.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "optadvisor/catalog.hpp"
#include "optadvisor/model_source.hpp"
#include "optadvisor/prepare.hpp"
#include "optadvisor/report.hpp"

namespace optadvisor::cli {

struct GlobalOptions {
  std::vector<std::string> data_dirs;
  int verbosity = 0;
  bool no_color = false;
};

/// --format text|json|markdown plus the --json shorthand, attached to one subcommand.
struct FormatOption {
  std::string format = "text";
  bool json = false;
  void attach(CLI::App* app, bool allow_markdown = true);
  OutputFormat get() const;
};

/// Loads the embedded data plus --data-dir / $OPTADVISOR_DATA_DIR overlays.
Catalog load_catalog(const GlobalOptions& global);
/// Colour on a terminal only, and never with NO_COLOR or --no-color.
Style stdout_style(const GlobalOptions& global);

/// --model / --model-config / --gguf / --params on a subcommand.
void add_model_options(CLI::App* app, ModelRequest& model);

/// Subcommand registration; each lives in its own cmd_<name>.cpp.
void register_hw(CLI::App& app, const GlobalOptions& global);
void register_validate_data(CLI::App& app, const GlobalOptions& global);
void register_size(CLI::App& app, const GlobalOptions& global);
void register_estimate(CLI::App& app, const GlobalOptions& global);
void register_catalog_lists(CLI::App& app, const GlobalOptions& global);

}  // namespace optadvisor::cli
