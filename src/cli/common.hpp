// SPDX-License-Identifier: MIT
// What every subcommand shares: global options, output format, catalog loading.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/readers/model_source.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/render/report_estimate.hpp"
#include "optadvisor/render/report_hardware.hpp"
#include "optadvisor/planner/require.hpp"

namespace optadvisor::cli {

struct GlobalOptions {
  std::vector<std::string> data_dirs;
  int verbosity = 0;
  bool no_color = false;
};

/// --format text|json|markdown (|html) plus the --json shorthand, attached to one subcommand.
struct FormatOption {
  std::string format = "text";
  bool json = false;
  /// allow_html: the command renders --format html (others reject it with a clear error).
  void attach(CLI::App* app, bool allow_markdown = true, bool allow_html = false);
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
  /// A path that is not in the output is a mistake in the expression: bad_input (exit 2) naming it
  /// and the keys nearest it. Called before the output is printed.
  static void check_paths(const std::vector<Requirement>& requirements, const nlohmann::json& document);
};

/// Loads the embedded data, the user's data directory (user_data_dir(), when it
/// exists), then --data-dir / $OPTADVISOR_DATA_DIR overlays.
/// The catalog lives until the process ends.
const Catalog& load_catalog(const GlobalOptions& global);
/// $XDG_DATA_HOME/optadvisor (default ~/.local/share/optadvisor), where `calibrate`
/// writes; nullopt when neither variable gives a path.
std::optional<std::filesystem::path> user_data_dir();
/// Colour on a terminal only, and never with NO_COLOR or --no-color.
Style stdout_style(const GlobalOptions& global);
/// Prints a command's whole result on stdout, or writes it to `path` ("" or "-": stdout)
/// and says so in one line on stderr. An unwritable path is bad input (exit 2).
void write_result(const std::string& text, const std::string& path);

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
void register_serve(CLI::App& app, const GlobalOptions& global);
void register_plan(CLI::App& app, const GlobalOptions& global);

/// The advisor's options (cmd_advise.cpp), on `advise` and on the main command,
/// so that `optadvisor --hw H --goal G` runs the advisor.
struct AdviseOptions;
/// html_report: `optadvisor report`, which has no --format and always renders HTML.
std::shared_ptr<AdviseOptions> add_advise_options(CLI::App* app, bool html_report = false);
/// True when any advisor option was given on the command line.
bool advise_options_given(const AdviseOptions& options);
/// Runs the advisor and prints its result, or writes it to `out_path` when not empty.
void run_advise(const AdviseOptions& options, const GlobalOptions& global, const std::string& out_path = {});

}  // namespace optadvisor::cli
