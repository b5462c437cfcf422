// SPDX-License-Identifier: MIT
// A roofline chart as inline SVG: log-log axes (arithmetic intensity in
// FLOP/byte against attainable FLOP/s), one compute roof per data type, the
// memory-bandwidth slope, ridge points, and a workload's phases as points.
// Pure: plain data in, a deterministic string out (Williams et al. 2009).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace optadvisor {

/// Escapes & < > " ' so any text is safe in HTML/XML text and attribute values.
std::string escape_markup(std::string_view text);

/// A base-10 logarithmic axis: value `min_value` lands on `min_px`, `max_value`
/// on `max_px` (max_px < min_px for a y axis that grows upwards). Values > 0.
struct LogScale {
  double min_value = 1;
  double max_value = 10;
  double min_px = 0;
  double max_px = 100;
  /// min_px + (log10 v - log10 min) / (log10 max - log10 min) x (max_px - min_px).
  double to_px(double value) const;
};

/// The whole decades around [lo, hi]: {10^floor(log10 lo), 10^ceil(log10 hi)},
/// at least one decade wide. lo and hi > 0.
std::pair<double, double> decade_range(double lo, double hi);
/// The powers of ten from lo to hi inclusive (lo and hi powers of ten).
std::vector<double> decade_ticks(double lo, double hi);
/// A tick label with an SI prefix: (1e12, "FLOP/s") -> "1 TFLOP/s"; (1000, "") -> "1k"; (0.1, "") -> "0.1".
std::string si_label(double value, std::string_view unit);

/// FLOP per byte where a compute roof meets the bandwidth slope: peak / bandwidth.
double ridge_point_flop_per_byte(double peak_flops_per_s, double bandwidth_bytes_per_s);
/// The roofline itself: min(peak, bandwidth x intensity).
double attainable_flops_per_s(double flop_per_byte, double peak_flops_per_s, double bandwidth_bytes_per_s);

/// One compute roof: the device's dense peak for some data types (equal peaks share a roof).
struct Roof {
  std::string label;  ///< "fp16, bf16"
  double flops_per_s = 0;
  bool used = false;  ///< the data type the estimate's matrix math ran on
};

/// What a point shows: the scenario as given, after the stacked plan, or after one recommendation.
enum class PointSeries { kBefore, kPlan, kRecommendation };

struct RooflinePoint {
  std::string phase;  ///< "prefill" or "decode" (sets the colour)
  PointSeries series = PointSeries::kBefore;
  std::string tag;    ///< short label drawn beside the point ("#2"); "" for none
  std::string title;  ///< tooltip text
  double flop_per_byte = 0;
  double flops_per_s = 0;       ///< achieved: FLOPs of the phase over its time
  double peak_flops_per_s = 0;  ///< the peak of the data type its matrix math ran on (its roof)
};

/// An arrow from one point to another (indices into RooflineChart::points).
struct RooflineArrow {
  std::size_t from = 0;
  std::size_t to = 0;
};

struct RooflineChart {
  std::string title;                 ///< accessible name of the figure
  double bandwidth_bytes_per_s = 0;  ///< peak memory bandwidth of one device
  std::vector<Roof> roofs;           ///< peak compute per data type
  /// The rates the estimate could reach (peak x engine efficiency); 0 = not drawn.
  double achievable_flops_per_s = 0;
  double achievable_bandwidth_bytes_per_s = 0;
  std::vector<RooflinePoint> points;
  std::vector<RooflineArrow> arrows;
};

/// Pixel geometry of the chart; the plot area is inside the margins.
struct RooflineLayout {
  double width_px = 1040;
  double height_px = 600;
  double left_px = 104;   ///< y tick labels and the axis title
  double right_px = 200;  ///< roof labels
  double top_px = 20;
  double bottom_px = 100;  ///< x tick labels, axis title and the legend
};

/// The axes a chart needs: whole decades covering every ridge point and data
/// point (x) and every roof and point (y, at most kMaxDecades deep).
struct RooflineAxes {
  LogScale x;
  LogScale y;
  std::vector<double> x_ticks;
  std::vector<double> y_ticks;
};
RooflineAxes roofline_axes(const RooflineChart& chart, const RooflineLayout& layout);

/// The chart as one <svg> element (XML well-formed, no external references).
std::string render_roofline_svg(const RooflineChart& chart, const RooflineLayout& layout = {});

}  // namespace optadvisor
