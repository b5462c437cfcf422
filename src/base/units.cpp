// SPDX-License-Identifier: MIT
#include "base/units.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace optadvisor {

std::optional<double> parse_bytes(std::string_view text) {
  std::string s(text);
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(s, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::string unit;
  for (char c : s.substr(used))
    if (c != ' ') unit += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double scale = 0;
  if (unit.empty() || unit == "b")
    scale = 1;
  else if (unit == "gb")
    scale = kBytesPerGB;
  else if (unit == "gib")
    scale = kBytesPerGiB;
  else if (unit == "tb")
    scale = 1e12;
  else if (unit == "tib")
    scale = kBytesPerGiB * 1024;
  if (scale == 0 || !(value > 0) || !std::isfinite(value * scale)) return std::nullopt;
  return value * scale;
}

std::string format_sig3(double value) {
  if (!std::isfinite(value)) return "-";
  const double a = std::fabs(value);
  if (a >= 100 || a == 0) return fmt::format("{:.0f}", value);
  if (a >= 10) return fmt::format("{:.1f}", value);
  if (a >= 1) return fmt::format("{:.2f}", value);
  return fmt::format("{:.3g}", value);
}

std::string format_gb(double bytes) { return format_sig3(bytes / kBytesPerGB) + " GB"; }

namespace {

bool whole(double x) { return std::fabs(x - std::round(x)) < 1e-9 * std::max(1.0, std::fabs(x)); }

/// The unit every size is a whole number of: GB first, then GiB; GB when neither.
double memory_unit(const std::vector<double>& bytes) {
  if (std::all_of(bytes.begin(), bytes.end(), [](double b) { return whole(b / kBytesPerGB); })) return kBytesPerGB;
  if (std::all_of(bytes.begin(), bytes.end(), [](double b) { return whole(b / kBytesPerGiB); })) return kBytesPerGiB;
  return kBytesPerGB;
}

}  // namespace

std::string format_memory_size(double bytes) { return format_memory_sizes({bytes}); }

std::string format_memory_sizes(const std::vector<double>& bytes) {
  const double unit = memory_unit(bytes);
  std::string out;
  for (std::size_t i = 0; i < bytes.size(); ++i)
    out += (i == 0 ? "" : (i + 1 == bytes.size() ? " or " : ", ")) + fmt::format("{:g}", bytes[i] / unit);
  return out + (unit == kBytesPerGiB ? " GiB" : " GB");
}

std::string format_bytes(double bytes) {
  if (bytes < 1e6) return fmt::format("{:.0f} bytes", bytes);
  if (bytes < 1e9) return fmt::format("{} MB ({} MiB)", format_sig3(bytes / 1e6), format_sig3(bytes / 1048576.0));
  return fmt::format("{} GB ({} GiB)", format_sig3(bytes / kBytesPerGB), format_sig3(bytes / kBytesPerGiB));
}

std::string format_bandwidth(double bytes_per_s) {
  if (bytes_per_s >= 1e12) return format_sig3(bytes_per_s / 1e12) + " TB/s";
  return format_sig3(bytes_per_s / 1e9) + " GB/s";
}

std::string format_flops(double flops_per_s) {
  if (flops_per_s >= 1e15) return format_sig3(flops_per_s / 1e15) + " PFLOP/s";
  return format_sig3(flops_per_s / 1e12) + " TFLOP/s";
}

std::string format_seconds(double seconds) {
  if (!std::isfinite(seconds)) return "-";
  if (seconds >= 1) return format_sig3(seconds) + " s";
  if (seconds >= 1e-3) return format_sig3(seconds * 1e3) + " ms";
  return format_sig3(seconds * 1e6) + " us";
}

}  // namespace optadvisor
