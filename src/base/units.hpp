// SPDX-License-Identifier: MIT
// Human-readable quantities for text output. GB is 10^9 bytes and GiB is
// 2^30 bytes, always labelled; JSON output carries plain numbers instead.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace optadvisor {

constexpr double kBytesPerGB = 1e9;
constexpr double kBytesPerGiB = 1073741824.0;

/// "64GB", "64 GiB", "0.5TB", "512e9" (bytes) -> bytes; nullopt when it is not a positive size.
/// GB and TB are powers of ten, GiB and TiB powers of two; the unit is case-insensitive.
std::optional<double> parse_bytes(std::string_view text);

/// "4.92 GB (4.58 GiB)".
std::string format_bytes(double bytes);
/// "4.92 GB" only (table cells).
std::string format_gb(double bytes);
/// A memory size as it is sold: "64 GB", or "384 GiB" for a size that is a whole number of GiB
/// but not of GB (DIMM-built server memory); otherwise "{:g} GB".
std::string format_memory_size(double bytes);
/// Several sold sizes in one unit: "48, 64 or 128 GB", "384, 768 or 1536 GiB".
std::string format_memory_sizes(const std::vector<double>& bytes);
/// "3.35 TB/s", "546 GB/s".
std::string format_bandwidth(double bytes_per_s);
/// "989 TFLOP/s", "1.98 PFLOP/s".
std::string format_flops(double flops_per_s);
/// A number with three significant digits, "-" when absent.
std::string format_sig3(double value);
/// "12.3 ms", "1.20 s", "45 us".
std::string format_seconds(double seconds);

}  // namespace optadvisor
