// SPDX-License-Identifier: MIT
#include "cli/length_options.hpp"

#include <fmt/format.h>

namespace optadvisor::cli {
namespace {

void add_side(CLI::App* cmd, LengthSpread& spread, const std::string& side, const std::string& what) {
  auto* ratio = cmd->add_option_function<double>(
                       "--" + side + "-range-ratio",
                       [&spread](double r) {
                         spread.kind = LengthSpread::Kind::kUniform;
                         spread.range_ratio = r;
                       },
                       fmt::format("{} lengths uniform in --{} x (1 - R) .. x (1 + R), each request its own (vllm bench serve "
                                   "--random-range-ratio R; default: every request the same)",
                                   what, side))
                    ->check(CLI::Range(0.0, kMaxRangeRatio));
  auto* stddev = cmd->add_option_function<double>(
                        "--" + side + "-stddev",
                        [&spread](double s) {
                          spread.kind = LengthSpread::Kind::kNormal;
                          spread.stddev_tokens = s;
                        },
                        fmt::format("{} lengths normal around --{} with this deviation in tokens, at least 1 (aiperf {}; capped at "
                                    "{:g} deviations above)",
                                    what, side, side == "prompt" ? "--synthetic-input-tokens-stddev" : "--output-tokens-stddev",
                                    kNormalCapStddevs))
                     ->check(CLI::Range(0.0, kMaxLengthStddevTokens));
  ratio->excludes(stddev);
}

}  // namespace

void add_length_spread_options(CLI::App* cmd, LengthSpread& prompt, LengthSpread& gen) {
  add_side(cmd, prompt, "prompt", "Prompt");
  add_side(cmd, gen, "gen", "Generated");
}

}  // namespace optadvisor::cli
