// SPDX-License-Identifier: MIT
// The whole command line as a function: parses argv, runs the command, prints
// results on stdout and one error line on stderr, and returns the exit code.
#pragma once

namespace optadvisor::cli {

int run(int argc, char** argv);

}  // namespace optadvisor::cli
