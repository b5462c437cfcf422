// SPDX-License-Identifier: MIT
// The optadvisor executable (the command line lives in app.cpp).
#include "app.hpp"

int main(int argc, char** argv) { return optadvisor::cli::run(argc, argv); }
