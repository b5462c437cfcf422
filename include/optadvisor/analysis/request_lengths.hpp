// SPDX-License-Identifier: MIT
// How the prompt and generated lengths of a serving load's requests vary
// around their means, as the benchmark tools draw them: uniform within a
// range ratio (vllm bench serve --random-range-ratio) or normal with a
// standard deviation in tokens (aiperf and genai-perf
// --synthetic-input-tokens-stddev / --output-tokens-stddev). Draws are
// deterministic for a seed on every platform (no std:: distributions, whose
// algorithms are the library's own).
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace optadvisor {

struct LengthSpread {
  enum class Kind { kFixed, kUniform, kNormal };
  Kind kind = Kind::kFixed;
  /// kUniform: lengths uniform over the integers int(L (1 - r)) .. int(L (1 + r)), at least 1.
  double range_ratio = 0;
  /// kNormal: a normal of mean L and this deviation, truncated at zero and rounded up (at least 1),
  /// capped at L + kNormalCapStddevs deviations.
  double stddev_tokens = 0;
  bool fixed() const { return kind == Kind::kFixed; }
};

/// Deviations above the mean at which a normal length is capped: a draw past it is one in 30,000,
/// and the cap bounds the longest request the KV pool and the model's context must hold.
inline constexpr double kNormalCapStddevs = 4.0;
/// The largest range ratio and deviation accepted (a ratio of 1 would draw empty prompts).
inline constexpr double kMaxRangeRatio = 0.99;
inline constexpr double kMaxLengthStddevTokens = 4'194'304;

/// The shortest and the longest length `spread` draws around `mean` (both `mean` when fixed).
struct LengthRange {
  uint64_t min = 0, max = 0;
};
LengthRange length_range(uint64_t mean, const LengthSpread& spread);

/// One length drawn around `mean`.
uint64_t draw_length(uint64_t mean, const LengthSpread& spread, std::mt19937_64& rng);
/// The generated length of a request found decoding in a steady state: drawn as draw_length() draws
/// it, with a chance in proportion to its decode steps (length - 1), since a request twice as long
/// is in the batch twice as long (length-biased sampling); never 1 where the spread reaches past it.
uint64_t draw_decoding_length(uint64_t mean, const LengthSpread& spread, std::mt19937_64& rng);

/// "uniform 512-1536", "normal, stddev 256, 1-2048"; "" when fixed.
std::string describe(uint64_t mean, const LengthSpread& spread);
/// "1024", or "1024 (uniform 512-1536)" with a spread.
std::string length_text(uint64_t mean, const LengthSpread& spread);

/// Checks a spread given for the option `name` ("prompt" or "gen"); throws bad_input.
void check_spread(const LengthSpread& spread, const char* name);

}  // namespace optadvisor
