// SPDX-License-Identifier: MIT
// What the accuracy benchmarks share beyond their CSV reading: the command line and the median of a sample.
#pragma once

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace optadvisor::bench {

/// Reads a benchmark's command line: a name in `flags` sets its bool, a name in `options` takes the
/// next argument. Anything else (or an option without its value) prints `usage` and a newline to
/// stderr and returns false.
inline bool parse_args(int argc, char** argv, const std::map<std::string, bool*>& flags, const std::map<std::string, std::string*>& options,
                       const std::string& usage) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (const auto o = options.find(a); o != options.end() && i + 1 < argc) {
      *o->second = argv[++i];
    } else if (const auto f = flags.find(a); f != flags.end()) {
      *f->second = true;
    } else {
      fmt::print(stderr, "{}\n", usage);
      return false;
    }
  }
  return true;
}

/// The middle value of a sample (the mean of the two middle ones for an even count); 0 when empty.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace optadvisor::bench
