// SPDX-License-Identifier: MIT
#include "common.hpp"

namespace optadvisor::cli {

void register_search(CLI::App& app, const GlobalOptions& global) {
  (void)app;
  (void)global;
}

}  // namespace optadvisor::cli
