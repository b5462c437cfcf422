// SPDX-License-Identifier: MIT
#include "optadvisor/analysis/request_lengths.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include <fmt/format.h>

#include "optadvisor/base/error.hpp"

namespace optadvisor {
namespace {

/// A uniform double in [0, 1) from the top 53 bits of one draw.
double unit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

/// A standard normal (Box-Muller, one of the pair).
double standard_normal(std::mt19937_64& rng) {
  const double u1 = 1.0 - unit(rng);  // (0, 1]
  const double u2 = unit(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

/// Draws past zero are drawn again (aiperf's truncation) at most this many times, then the mean stands.
constexpr int kNormalRedraws = 64;
/// Draws a length-biased draw rejects at most before it takes the mean (an acceptance below 1 in
/// 1,000 needs a deviation hundreds of times the mean).
constexpr int kBiasedRedraws = 1000;

}  // namespace

LengthRange length_range(uint64_t mean, const LengthSpread& spread) {
  const auto l = static_cast<double>(mean);
  switch (spread.kind) {
    case LengthSpread::Kind::kFixed: break;
    case LengthSpread::Kind::kUniform: {
      const auto lo = std::max<uint64_t>(1, static_cast<uint64_t>(std::floor(l * (1.0 - spread.range_ratio))));
      const auto hi = std::max(lo, static_cast<uint64_t>(std::floor(l * (1.0 + spread.range_ratio))));
      return {lo, hi};
    }
    case LengthSpread::Kind::kNormal:
      if (!(spread.stddev_tokens > 0)) break;
      return {1, std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(l + kNormalCapStddevs * spread.stddev_tokens)))};
  }
  return {mean, mean};
}

uint64_t draw_length(uint64_t mean, const LengthSpread& spread, std::mt19937_64& rng) {
  const LengthRange range = length_range(mean, spread);
  if (range.min == range.max) return range.min;
  if (spread.kind == LengthSpread::Kind::kUniform) return range.min + rng() % (range.max - range.min + 1);
  const auto l = static_cast<double>(mean);
  double x = l;
  for (int i = 0; i < kNormalRedraws; ++i) {
    const double d = l + spread.stddev_tokens * standard_normal(rng);
    if (d > 0) {
      x = d;
      break;
    }
  }
  return std::clamp(static_cast<uint64_t>(std::ceil(x)), range.min, range.max);
}

uint64_t draw_decoding_length(uint64_t mean, const LengthSpread& spread, std::mt19937_64& rng) {
  const LengthRange range = length_range(mean, spread);
  if (range.min == range.max || range.max < 2) return range.max;
  const auto steps = static_cast<double>(range.max - 1);
  for (int i = 0; i < kBiasedRedraws; ++i) {
    const uint64_t x = draw_length(mean, spread, rng);
    if (unit(rng) * steps < static_cast<double>(x - 1)) return x;
  }
  return std::max<uint64_t>(mean, 2);
}

std::string describe(uint64_t mean, const LengthSpread& spread) {
  const LengthRange r = length_range(mean, spread);
  switch (spread.kind) {
    case LengthSpread::Kind::kFixed: return "";
    case LengthSpread::Kind::kUniform: return fmt::format("uniform {}-{}", r.min, r.max);
    case LengthSpread::Kind::kNormal: return fmt::format("normal, stddev {:.4g}, {}-{}", spread.stddev_tokens, r.min, r.max);
  }
  return "";
}

std::string length_text(uint64_t mean, const LengthSpread& spread) {
  return spread.fixed() ? std::to_string(mean) : fmt::format("{} ({})", mean, describe(mean, spread));
}

void check_spread(const LengthSpread& spread, const char* name) {
  if (spread.kind == LengthSpread::Kind::kUniform && !(spread.range_ratio >= 0 && spread.range_ratio <= kMaxRangeRatio))
    throw bad_input(fmt::format("--{}-range-ratio {} is out of range", name, spread.range_ratio),
                    fmt::format("use 0 to {} (lengths uniform in L x (1 - r) .. L x (1 + r))", kMaxRangeRatio));
  if (spread.kind == LengthSpread::Kind::kNormal && !(spread.stddev_tokens >= 0 && spread.stddev_tokens <= kMaxLengthStddevTokens))
    throw bad_input(fmt::format("--{}-stddev {} is out of range", name, spread.stddev_tokens),
                    fmt::format("use 0 to {:.0f} tokens", kMaxLengthStddevTokens));
}

}  // namespace optadvisor
