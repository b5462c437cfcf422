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
#include "optadvisor/require.hpp"

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

/// --require EXPR (repeatable): expressions are parsed when the command runs,
/// before any work, so a malformed one is exit 2 with nothing on stdout.
struct RequireOption {
  std::vector<std::string> expressions;
  void attach(CLI::App* app);
  /// Parses every expression (throws bad_input with the column of the problem).
  std::vector<Requirement> parse() const;
  /// Checks the command's JSON output; prints each failing requirement on stderr
  /// and throws Error(kCheckFailed) when any fails.
  static void enforce(const std::vector<Requirement>& requirements, const nlohmann::json& document);
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
void register_compare(CLI::App& app, const GlobalOptions& global);
void register_search(CLI::App& app, const GlobalOptions& global);
void register_report(CLI::App& app, const GlobalOptions& global);
void register_calibrate(CLI::App& app, const GlobalOptions& global);
void register_completion(CLI::App& app, const GlobalOptions& global);

/// The advisor's options (cmd_advise.cpp), on `advise` and on the main command,
/// so that `optadvisor --hw H --goal G` runs the advisor.
struct AdviseOptions;
std::shared_ptr<AdviseOptions> add_advise_options(CLI::App* app);
/// True when any advisor option was given on the command line.
bool advise_options_given(const AdviseOptions& options);
void run_advise(const AdviseOptions& options, const GlobalOptions& global);

}  // namespace optadvisor::cli
