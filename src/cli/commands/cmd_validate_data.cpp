// SPDX-License-Identifier: MIT
// `optadvisor validate-data [DIR]`: checks shipped data, or a user's overlay, and reports every problem.
#include <cstdio>

#include <fmt/format.h>

#include "cli/common.hpp"
#include "optadvisor/base/error.hpp"
#include "optadvisor/advisor/rules.hpp"

namespace optadvisor::cli {

void register_validate_data(CLI::App& app, const GlobalOptions& global) {
  struct Options {
    std::vector<std::string> dirs;
    FormatOption format;
  };
  auto options = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("validate-data", "Check data files against their schemas; every problem is listed");
  cmd->add_option("dir", options->dirs, "Overlay directories laid out like data/ (default: the shipped data only)");
  options->format.attach(cmd, false);
  cmd->callback([options, &global] {
    LoadOptions load;
    std::vector<std::string> dirs = global.data_dirs;
    dirs.insert(dirs.end(), options->dirs.begin(), options->dirs.end());
    load.overlay_dirs = overlay_dirs_from(dirs, std::getenv("OPTADVISOR_DATA_DIR"));
    auto problems = Catalog::validate(load);
    // Rule semantics (facts, transforms, assumptions, ids) need the rest of the database loaded.
    if (problems.empty()) {
      const Catalog catalog = Catalog::load(load);
      RuleBook::parse(catalog.rule_documents(), catalog, problems);
    }
    if (options->format.get() == OutputFormat::kJson) {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& p : problems) list.push_back({{"file", p.file}, {"pointer", p.pointer}, {"message", p.message}});
      nlohmann::json out = {{"schema_version", kSchemaVersion}, {"valid", problems.empty()}, {"problems", list}};
      fmt::print("{}\n", out.dump(2));
    } else if (problems.empty()) {
      fmt::print("all data files are valid\n");
    } else {
      for (const auto& p : problems) fmt::print(stderr, "{}\n", to_string(p));
    }
    if (!problems.empty()) throw Error(ExitCode::kBadInput, fmt::format("{} problem(s) found in the data", problems.size()));
  });
}

}  // namespace optadvisor::cli
