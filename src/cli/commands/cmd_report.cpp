// SPDX-License-Identifier: MIT
// `optadvisor report`: the advisor's result as one self-contained HTML page
// (the same options as `advise`; --out FILE, else stdout).
#include "cli/common.hpp"

namespace optadvisor::cli {

void register_report(CLI::App& app, const GlobalOptions& global) {
  auto* cmd = app.add_subcommand("report",
                                 "The advisor's result as one self-contained HTML page: roofline, memory, ranked playbook (optadvisor "
                                 "report --hw H --goal G --out report.html)");
  auto options = add_advise_options(cmd, /*html_report=*/true);
  auto out_path = std::make_shared<std::string>();
  cmd->add_option("--out,-o", *out_path, "Write the page to this file (default: stdout)")->type_name("FILE");
  cmd->callback([options, out_path, &global] { run_advise(*options, global, *out_path); });
}

}  // namespace optadvisor::cli
