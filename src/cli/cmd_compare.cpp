// SPDX-License-Identifier: MIT
#include "common.hpp"

namespace optadvisor::cli {

void register_compare(CLI::App& app, const GlobalOptions& global) {
  (void)app;
  (void)global;
}

}  // namespace optadvisor::cli
