// SPDX-License-Identifier: MIT
// The options that spread a serving load's request lengths, shared by serve
// and plan: --prompt-range-ratio / --gen-range-ratio (uniform, as vllm bench
// serve --random-range-ratio) and --prompt-stddev / --gen-stddev (normal, as
// aiperf and genai-perf).
#pragma once

#include <CLI/CLI.hpp>

#include "optadvisor/analysis/request_lengths.hpp"

namespace optadvisor::cli {

/// Adds the four options, binding them to `prompt` and `gen`; a side takes a ratio or a deviation, not both.
void add_length_spread_options(CLI::App* cmd, LengthSpread& prompt, LengthSpread& gen);

}  // namespace optadvisor::cli
