// SPDX-License-Identifier: MIT
// libFuzzer target: the whole command line in-process. The input is split on
// newlines (or NUL bytes) into arguments; every command runs with its real
// parsing, loading, analysis and rendering, and must return an exit code
// (0-3) rather than crash. It runs in a scratch directory with a scratch
// XDG_DATA_HOME and recorded-output detection, and inputs that could write a
// file (--out, -o) are skipped.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <unistd.h>

#include "../../src/cli/app.hpp"

namespace {

bool may_write_files(const std::string& arg) {
  if (arg.rfind("--out", 0) == 0) return true;
  // Short options, alone or combined (-vo FILE): any that contains 'o'.
  return arg.size() >= 2 && arg[0] == '-' && arg[1] != '-' && arg.find('o') != std::string::npos;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char scratch[] = "/tmp/optadvisor-fuzz-cli-XXXXXX";
  if (mkdtemp(scratch) == nullptr || chdir(scratch) != 0) std::abort();
  setenv("HOME", scratch, 1);
  setenv("XDG_DATA_HOME", scratch, 1);
  setenv("NO_COLOR", "1", 1);
  setenv("OPTADVISOR_DETECT_FIXTURES", scratch, 1);  // --hw auto reads (absent) recorded outputs, runs nothing
  unsetenv("OPTADVISOR_DATA_DIR");
  if (std::freopen("/dev/null", "w", stdout) == nullptr) std::abort();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  std::vector<std::string> args = {"optadvisor"};
  std::string current;
  for (size_t i = 0; i < size; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == '\n' || c == '\0') {
      args.push_back(current);
      current.clear();
      if (args.size() > 32) return 0;
    } else {
      current += c;
    }
  }
  if (!current.empty()) args.push_back(current);
  for (const auto& a : args)
    if (may_write_files(a)) return 0;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int code = optadvisor::cli::run(static_cast<int>(args.size()), argv.data());
  if (code < 0 || code > 3) __builtin_trap();
  return 0;
}
