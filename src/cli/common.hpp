// SPDX-License-Identifier: MIT
// What every subcommand shares: global options, output format, catalog loading.
#pragma once

#include <memory>
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
void register_advise(CLI::App& app, const GlobalOptions& global);
void register_rules(CLI::App& app, const GlobalOptions& global);

/// The advisor's options (cmd_advise.cpp), on `advise` and on the main command,
/// so that `optadvisor --hw H --goal G` runs the advisor.
struct AdviseOptions;
std::shared_ptr<AdviseOptions> add_advise_options(CLI::App* app);
/// True when any advisor option was given on the command line.
bool advise_options_given(const AdviseOptions& options);
void run_advise(const AdviseOptions& options, const GlobalOptions& global);

}  // namespace optadvisor::cli
