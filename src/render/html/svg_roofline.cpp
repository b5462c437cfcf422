// SPDX-License-Identifier: MIT
// The roofline chart: scales, ticks and the SVG text. Coordinates are printed
// with one decimal so the output is byte-for-byte reproducible.
#include "optadvisor/render/html/svg_roofline.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>

#include <fmt/format.h>

namespace optadvisor {
namespace {

/// Deepest y axis drawn: a decode point of a tiny model on a datacenter GPU
/// would otherwise squeeze the roofs into the top of the chart.
constexpr double kMaxDecades = 7;

constexpr const char* kPrefillColor = "#1d4ed8";
constexpr const char* kDecodeColor = "#c2410c";
constexpr const char* kRoofColor = "#334155";
constexpr const char* kGridColor = "#e2e8f0";
constexpr const char* kMinorGridColor = "#f1f5f9";

const char* phase_color(const std::string& phase) { return phase == "prefill" ? kPrefillColor : kDecodeColor; }

std::string_view series_id(PointSeries s) {
  switch (s) {
    case PointSeries::kBefore: return "before";
    case PointSeries::kPlan: return "plan";
    case PointSeries::kRecommendation: return "recommendation";
  }
  return "before";
}

/// A mantissa with up to three significant digits and no trailing zeros: 1, 2.2, 1.98, 989.
std::string mantissa_text(double m) {
  if (std::fabs(m - std::round(m)) < 1e-9 * std::max(1.0, std::fabs(m))) return fmt::format("{:.0f}", m);
  return fmt::format("{:.3g}", m);
}

std::string ridge_text(double flop_per_byte) {
  return flop_per_byte >= 10 ? fmt::format("{:.0f}", flop_per_byte) : fmt::format("{:.3g}", flop_per_byte);
}

std::string px(double v) { return fmt::format("{:.1f}", v); }

/// A label placed at `y_px`, moved down so it keeps `gap_px` from the one above.
struct PlacedLabel {
  double want_px = 0;
  double at_px = 0;
  std::size_t index = 0;
};

std::vector<PlacedLabel> spread_labels(std::vector<PlacedLabel> labels, double gap_px) {
  std::sort(labels.begin(), labels.end(), [](const PlacedLabel& a, const PlacedLabel& b) { return a.want_px < b.want_px; });
  double last = -1e9;
  for (auto& l : labels) {
    l.at_px = std::max(l.want_px, last + gap_px);
    last = l.at_px;
  }
  return labels;
}

std::string marker_shape(const RooflinePoint& p, double x, double y) {
  const char* color = phase_color(p.phase);
  switch (p.series) {
    case PointSeries::kBefore:
      return fmt::format(R"(<circle cx="{}" cy="{}" r="6" fill="{}" stroke="#ffffff" stroke-width="1.5"/>)", px(x), px(y), color);
    case PointSeries::kPlan:
      return fmt::format(R"(<path d="M{} {}l7 7l-7 7l-7 -7z" fill="{}" stroke="#ffffff" stroke-width="1.5"/>)", px(x), px(y - 7), color);
    case PointSeries::kRecommendation:
      return fmt::format(R"(<circle cx="{}" cy="{}" r="4.5" fill="#ffffff" stroke="{}" stroke-width="1.8"/>)", px(x), px(y), color);
  }
  return {};
}

}  // namespace

std::string escape_markup(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

double LogScale::to_px(double value) const {
  const double lo = std::log10(min_value);
  const double span = std::log10(max_value) - lo;
  if (!(value > 0) || !(span > 0)) return min_px;
  return min_px + (std::log10(value) - lo) / span * (max_px - min_px);
}

std::pair<double, double> decade_range(double lo, double hi) {
  // A little slack so a value a rounding error above a power of ten does not open a new decade.
  double a = std::floor(std::log10(lo) + 1e-9);
  double b = std::ceil(std::log10(hi) - 1e-9);
  if (b <= a) b = a + 1;
  return {std::pow(10.0, a), std::pow(10.0, b)};
}

std::vector<double> decade_ticks(double lo, double hi) {
  std::vector<double> ticks;
  const long a = std::lround(std::log10(lo));
  const long b = std::lround(std::log10(hi));
  for (long e = a; e <= b; ++e) ticks.push_back(std::pow(10.0, static_cast<double>(e)));
  return ticks;
}

std::string si_label(double value, std::string_view unit) {
  static constexpr std::array<const char*, 7> kPrefixes = {"", "k", "M", "G", "T", "P", "E"};
  std::size_t n = 0;
  double m = value;
  while (std::fabs(m) >= 1000 * (1 - 1e-9) && n + 1 < kPrefixes.size()) {
    m /= 1000;
    ++n;
  }
  std::string number = mantissa_text(m) + (unit.empty() || n == 0 ? "" : " ") + kPrefixes[n];
  if (unit.empty()) return number;
  return number + (n == 0 ? " " : "") + std::string(unit);
}

double ridge_point_flop_per_byte(double peak_flops_per_s, double bandwidth_bytes_per_s) {
  return bandwidth_bytes_per_s > 0 ? peak_flops_per_s / bandwidth_bytes_per_s : 0;
}

double attainable_flops_per_s(double flop_per_byte, double peak_flops_per_s, double bandwidth_bytes_per_s) {
  return std::min(peak_flops_per_s, bandwidth_bytes_per_s * flop_per_byte);
}

RooflineAxes roofline_axes(const RooflineChart& c, const RooflineLayout& l) {
  double x_lo = 1e300, x_hi = 0, y_lo = 1e300, y_hi = 0;
  auto cover_x = [&](double v) {
    if (v > 0 && std::isfinite(v)) x_lo = std::min(x_lo, v), x_hi = std::max(x_hi, v);
  };
  auto cover_y = [&](double v) {
    if (v > 0 && std::isfinite(v)) y_lo = std::min(y_lo, v), y_hi = std::max(y_hi, v);
  };
  for (const auto& r : c.roofs) {
    cover_x(ridge_point_flop_per_byte(r.flops_per_s, c.bandwidth_bytes_per_s));
    cover_y(r.flops_per_s);
  }
  if (c.achievable_flops_per_s > 0 && c.achievable_bandwidth_bytes_per_s > 0) {
    cover_x(ridge_point_flop_per_byte(c.achievable_flops_per_s, c.achievable_bandwidth_bytes_per_s));
    cover_y(c.achievable_flops_per_s);
  }
  for (const auto& p : c.points) {
    cover_x(p.flop_per_byte);
    cover_y(p.flops_per_s);
  }
  if (x_hi <= 0) x_lo = 1, x_hi = 100;
  if (y_hi <= 0) y_lo = 1e12, y_hi = 1e15;
  // Half a decade of air on each side keeps points and ridges off the frame.
  const auto [xa, xb] = decade_range(x_lo / 3, x_hi * 3);
  // The slope at the left edge should be visible too, not only the points.
  if (c.bandwidth_bytes_per_s > 0) y_lo = std::min(y_lo, c.bandwidth_bytes_per_s * xa);
  auto [ya, yb] = decade_range(y_lo / 2, y_hi * 2);
  if (yb / ya > std::pow(10.0, kMaxDecades)) ya = yb / std::pow(10.0, kMaxDecades);
  RooflineAxes axes;
  axes.x = {xa, xb, l.left_px, l.width_px - l.right_px};
  axes.y = {ya, yb, l.height_px - l.bottom_px, l.top_px};
  axes.x_ticks = decade_ticks(xa, xb);
  axes.y_ticks = decade_ticks(ya, yb);
  return axes;
}

namespace {

/// The plot area inside the frame and its log scales; X and Y clamp to the frame.
struct Plot {
  RooflineAxes axes;
  double left = 0, right = 0, bottom = 0, top = 0;
  explicit Plot(RooflineAxes a)
      : axes(std::move(a)), left(axes.x.min_px), right(axes.x.max_px), bottom(axes.y.min_px), top(axes.y.max_px) {}
  double X(double v) const { return std::clamp(axes.x.to_px(v), left, right); }
  double Y(double v) const { return std::clamp(axes.y.to_px(v), top, bottom); }
};

/// The <svg> element, its title and the arrow markers.
std::string svg_header(const RooflineChart& c, const RooflineLayout& l) {
  std::string svg = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" class="roofline" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-labelledby="rl-title" font-size="12">)"
      "\n<title id=\"rl-title\">{t}</title>\n",
      fmt::arg("w", px(l.width_px)), fmt::arg("h", px(l.height_px)), fmt::arg("t", escape_markup(c.title)));
  svg += "<defs>\n";
  for (const char* phase : {"prefill", "decode"})
    svg += fmt::format(
        R"(<marker id="rl-arrow-{}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0 0L10 5L0 10z" fill="{}"/></marker>)"
        "\n",
        phase, phase_color(phase));
  svg += "</defs>\n";
  return svg;
}

/// Whole decades (labelled) and 2..9 within each (faint).
std::string svg_grid(const Plot& plot) {
  std::string svg;
  const RooflineAxes& axes = plot.axes;
  const double left = plot.left, right = plot.right, bottom = plot.bottom, top = plot.top;
  auto X = [&](double v) { return plot.X(v); };
  auto Y = [&](double v) { return plot.Y(v); };
  // Grid: whole decades (labelled) and 2..9 within each (faint).
  svg += "<g class=\"grid\">\n";
  for (std::size_t i = 0; i + 1 < axes.x_ticks.size(); ++i)
    for (int k = 2; k <= 9; ++k)
      svg += fmt::format(R"(<line x1="{x}" y1="{a}" x2="{x}" y2="{b}" stroke="{c}"/>)"
                         "\n",
                         fmt::arg("x", px(X(axes.x_ticks[i] * k))), fmt::arg("a", px(top)), fmt::arg("b", px(bottom)),
                         fmt::arg("c", kMinorGridColor));
  for (std::size_t i = 0; i + 1 < axes.y_ticks.size(); ++i)
    for (int k = 2; k <= 9; ++k)
      svg += fmt::format(R"(<line x1="{a}" y1="{y}" x2="{b}" y2="{y}" stroke="{c}"/>)"
                         "\n",
                         fmt::arg("y", px(Y(axes.y_ticks[i] * k))), fmt::arg("a", px(left)), fmt::arg("b", px(right)),
                         fmt::arg("c", kMinorGridColor));
  for (double t : axes.x_ticks)
    svg += fmt::format(R"(<line x1="{x}" y1="{a}" x2="{x}" y2="{b}" stroke="{c}"/>)"
                       "\n",
                       fmt::arg("x", px(X(t))), fmt::arg("a", px(top)), fmt::arg("b", px(bottom)), fmt::arg("c", kGridColor));
  for (double t : axes.y_ticks)
    svg += fmt::format(R"(<line x1="{a}" y1="{y}" x2="{b}" y2="{y}" stroke="{c}"/>)"
                       "\n",
                       fmt::arg("y", px(Y(t))), fmt::arg("a", px(left)), fmt::arg("b", px(right)), fmt::arg("c", kGridColor));
  svg += "</g>\n";
  return svg;
}

/// The frame, the tick labels and the axis titles.
std::string svg_axes(const Plot& plot) {
  std::string svg;
  const RooflineAxes& axes = plot.axes;
  const double left = plot.left, right = plot.right, bottom = plot.bottom, top = plot.top;
  auto X = [&](double v) { return plot.X(v); };
  auto Y = [&](double v) { return plot.Y(v); };
  // Axes with labelled ticks.
  svg += "<g class=\"axes\" fill=\"#0f172a\">\n";
  svg += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#94a3b8"/>)"
                     "\n",
                     px(left), px(top), px(right - left), px(bottom - top));
  for (double t : axes.x_ticks)
    svg += fmt::format(R"(<text class="tick x" x="{}" y="{}" text-anchor="middle">{}</text>)"
                       "\n",
                       px(X(t)), px(bottom + 16), escape_markup(si_label(t, "")));
  for (double t : axes.y_ticks)
    svg += fmt::format(R"(<text class="tick y" x="{}" y="{}" text-anchor="end">{}</text>)"
                       "\n",
                       px(left - 6), px(Y(t) + 4), escape_markup(si_label(t, "FLOP/s")));
  svg += fmt::format(
      R"(<text class="axis-title" x="{}" y="{}" text-anchor="middle">arithmetic intensity (FLOP per byte of memory traffic, log scale)</text>)"
      "\n",
      px((left + right) / 2), px(bottom + 36));
  svg += fmt::format(
      R"~(<text class="axis-title" transform="translate({} {}) rotate(-90)" text-anchor="middle">attainable FLOP/s per device (log scale)</text>)~"
      "\n",
      px(18), px((top + bottom) / 2));
  svg += "</g>\n";
  return svg;
}

/// The bandwidth slope, a roof per data type with its ridge point, and the engine's achievable roof.
std::string svg_roofs(const RooflineChart& c, const Plot& plot) {
  std::string svg;
  const RooflineAxes& axes = plot.axes;
  const double left = plot.left, right = plot.right, bottom = plot.bottom, top = plot.top;
  auto X = [&](double v) { return plot.X(v); };
  auto Y = [&](double v) { return plot.Y(v); };
  const double bw = c.bandwidth_bytes_per_s;
  double top_peak = 0;
  for (const auto& r : c.roofs) top_peak = std::max(top_peak, r.flops_per_s);
  if (bw <= 0 || top_peak <= 0) {
    svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">no peak rates known for this device</text>)"
                       "\n",
                       px((left + right) / 2), px((top + bottom) / 2));
  } else {
    // The bandwidth slope: from where it enters the plot to the highest ridge.
    const double x_start = std::max(axes.x.min_value, axes.y.min_value / bw);
    const double x_end = ridge_point_flop_per_byte(top_peak, bw);
    svg += "<g class=\"roofs\">\n";
    svg += fmt::format(R"(<line class="bandwidth-slope" x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="2"/>)"
                       "\n",
                       px(X(x_start)), px(Y(bw * x_start)), px(X(x_end)), px(Y(top_peak)), kRoofColor);
    // Its label, along the slope where it is inside the plot.
    {
      const double xm = std::sqrt(x_start * x_end);
      const double angle = std::atan2(Y(top_peak) - Y(bw * x_start), X(x_end) - X(x_start)) * 180.0 / std::numbers::pi;
      svg += fmt::format(
          R"~(<text class="bandwidth-label" transform="translate({} {}) rotate({:.1f})" text-anchor="middle" fill="{}">memory bandwidth {}</text>)~"
          "\n",
          px(X(xm) - 6), px(Y(bw * xm) - 6), angle, kRoofColor, escape_markup(si_label(bw, "B/s")));
    }
    std::vector<PlacedLabel> labels;
    for (std::size_t i = 0; i < c.roofs.size(); ++i) {
      const Roof& r = c.roofs[i];
      const double ridge = ridge_point_flop_per_byte(r.flops_per_s, bw);
      svg += fmt::format(R"(<line class="roof" data-dtype="{}" x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="{}" stroke-width="{}"/>)"
                         "\n",
                         escape_markup(r.label), px(X(ridge)), px(right), kRoofColor, r.used ? "2.5" : "1.2",
                         fmt::arg("y", px(Y(r.flops_per_s))));
      svg += fmt::format(R"(<circle class="ridge" cx="{}" cy="{}" r="3" fill="{}"><title>{} ridge point: {} FLOP/byte</title></circle>)"
                         "\n",
                         px(X(ridge)), px(Y(r.flops_per_s)), kRoofColor, escape_markup(r.label), ridge_text(ridge));
      if (r.used)
        svg += fmt::format(R"(<line class="ridge-guide" x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="{}" stroke-dasharray="2 3"/>)"
                           "\n",
                           px(Y(r.flops_per_s)), px(bottom), kRoofColor, fmt::arg("x", px(X(ridge))));
      labels.push_back({Y(r.flops_per_s), 0, i});
    }
    for (const auto& pl : spread_labels(labels, 26)) {
      const Roof& r = c.roofs[pl.index];
      svg += fmt::format(R"(<text class="roof-label" x="{}" y="{}" fill="{}"{}>{}</text>)"
                         "\n",
                         px(right + 6), px(pl.at_px + 4), kRoofColor, r.used ? R"( font-weight="bold")" : "", escape_markup(r.label));
      svg += fmt::format(R"(<text class="ridge-label" x="{}" y="{}" fill="#64748b" font-size="11">{}, ridge {} FLOP/B</text>)"
                         "\n",
                         px(right + 6), px(pl.at_px + 17), escape_markup(si_label(r.flops_per_s, "FLOP/s")),
                         ridge_text(ridge_point_flop_per_byte(r.flops_per_s, bw)));
    }
    // What the estimate could reach: the engine's efficiencies applied to the peaks.
    if (c.achievable_flops_per_s > 0 && c.achievable_bandwidth_bytes_per_s > 0) {
      const double abw = c.achievable_bandwidth_bytes_per_s;
      const double a_start = std::max(axes.x.min_value, axes.y.min_value / abw);
      const double a_ridge = ridge_point_flop_per_byte(c.achievable_flops_per_s, abw);
      svg += fmt::format(
          R"(<polyline class="achievable" points="{},{} {},{} {},{}" fill="none" stroke="#64748b" stroke-width="1.5" stroke-dasharray="6 4"/>)"
          "\n",
          px(X(a_start)), px(Y(abw * a_start)), px(X(a_ridge)), px(Y(c.achievable_flops_per_s)), px(right),
          px(Y(c.achievable_flops_per_s)));
    }
    svg += "</g>\n";
  }
  return svg;
}

/// Before -> after arrows, drawn before the points so that the points sit on top.
std::string svg_arrows(const RooflineChart& c, const Plot& plot) {
  std::string svg;
  auto X = [&](double v) { return plot.X(v); };
  auto Y = [&](double v) { return plot.Y(v); };
  // Arrows first, so the points sit on top of them.
  svg += "<g class=\"arrows\">\n";
  for (const auto& a : c.arrows) {
    if (a.from >= c.points.size() || a.to >= c.points.size()) continue;
    const RooflinePoint& p = c.points[a.from];
    const RooflinePoint& q = c.points[a.to];
    const double x1 = X(p.flop_per_byte), y1 = Y(p.flops_per_s), x2 = X(q.flop_per_byte), y2 = Y(q.flops_per_s);
    const double length = std::hypot(x2 - x1, y2 - y1);
    if (length < 18) continue;  // the change is too small to draw
    const double ux = (x2 - x1) / length, uy = (y2 - y1) / length;
    const bool plan = q.series == PointSeries::kPlan;
    svg += fmt::format(
        R"~(<line class="arrow" data-phase="{}" data-to="{}" x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="{}"{} marker-end="url(#rl-arrow-{})"/>)~"
        "\n",
        escape_markup(q.phase), series_id(q.series), px(x1 + 8 * ux), px(y1 + 8 * uy), px(x2 - 9 * ux), px(y2 - 9 * uy),
        phase_color(q.phase), plan ? "1.8" : "1", plan ? "" : R"( stroke-dasharray="4 3" opacity="0.7")",
        q.phase == "prefill" ? "prefill" : "decode");
  }
  svg += "</g>\n";
  return svg;
}

/// The points, each with its title and a tag placed where no earlier tag is.
std::string svg_points(const RooflineChart& c, const Plot& plot) {
  std::string svg;
  auto X = [&](double v) { return plot.X(v); };
  auto Y = [&](double v) { return plot.Y(v); };
  // Tags go beside their point, at the first of four corners that no earlier tag took.
  struct Box {
    double x0, y0, x1, y1;
  };
  std::vector<Box> taken;
  auto place_tag = [&](double x, double y, const std::string& tag) {
    const double w = 6.2 * static_cast<double>(tag.size()), hgt = 11;
    const std::array<std::pair<double, double>, 4> corners = {{{x + 7, y - 6}, {x + 7, y + 15}, {x - 7 - w, y - 6}, {x - 7 - w, y + 15}}};
    for (const auto& [tx, ty] : corners) {
      const Box b{tx, ty - hgt, tx + w, ty};
      const bool clear =
          std::none_of(taken.begin(), taken.end(), [&](const Box& o) { return b.x0 < o.x1 && o.x0 < b.x1 && b.y0 < o.y1 && o.y0 < b.y1; });
      if (clear) {
        taken.push_back(b);
        return std::pair<double, double>{tx, ty};
      }
    }
    return corners[0];
  };
  svg += "<g class=\"points\">\n";
  for (const auto& p : c.points) {
    if (!(p.flop_per_byte > 0) || !(p.flops_per_s > 0)) continue;
    const double x = X(p.flop_per_byte), y = Y(p.flops_per_s);
    svg += fmt::format(R"(<g class="point" data-phase="{}" data-series="{}"><title>{}</title>{})", escape_markup(p.phase),
                       series_id(p.series), escape_markup(p.title), marker_shape(p, x, y));
    if (!p.tag.empty()) {
      const auto [tx, ty] = place_tag(x, y, p.tag);
      svg += fmt::format(R"(<text x="{}" y="{}" font-size="11" fill="{}">{}</text>)", px(tx), px(ty), phase_color(p.phase),
                         escape_markup(p.tag));
    }
    svg += "</g>\n";
  }
  svg += "</g>\n";
  return svg;
}

/// The legend under the x axis, entries flowing left to right.
std::string svg_legend(const RooflineChart& c, const RooflineLayout& l, const Plot& plot) {
  std::string svg;
  const double left = plot.left, bottom = plot.bottom;
  // Legend under the x axis, so it never hides a point or a roof.
  struct Entry {
    std::string kind;
    std::string text;
  };
  std::vector<Entry> entries = {{"prefill", "prefill (prompt)"}, {"decode", "decode (one step)"}, {"before", "as given"}};
  bool any_plan = false, any_rec = false;
  for (const auto& p : c.points) {
    any_plan = any_plan || p.series == PointSeries::kPlan;
    any_rec = any_rec || p.series == PointSeries::kRecommendation;
  }
  if (any_plan) entries.push_back({"plan", "after the stacked plan"});
  if (any_rec) entries.push_back({"recommendation", "after recommendation #rank alone"});
  entries.push_back({"roof", "peak compute roofs and bandwidth slope"});
  if (std::any_of(c.roofs.begin(), c.roofs.end(), [](const Roof& r) { return r.used; }))
    entries.push_back({"used", "bold roof: the data type the estimate ran on"});
  if (c.achievable_flops_per_s > 0) entries.push_back({"achievable", "reachable at the engine's efficiencies"});
  // Entries flow left to right and wrap; text width is estimated at 6.6 px a character.
  double sx = left + 10, cy = bottom + 60;
  svg += "<g class=\"legend\">\n";
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const double width = 36 + 6.6 * static_cast<double>(entries[i].text.size());
    if (sx + width > l.width_px - 10 && sx > left + 10) {
      sx = left + 10;
      cy += 18;
    }
    const std::string& k = entries[i].kind;
    std::string glyph;
    if (k == "prefill" || k == "decode")
      glyph = fmt::format(R"(<rect x="{}" y="{}" width="14" height="8" fill="{}"/>)", px(sx - 7), px(cy - 4), phase_color(k));
    else if (k == "before")
      glyph = fmt::format(R"(<circle cx="{}" cy="{}" r="5" fill="#475569"/>)", px(sx), px(cy));
    else if (k == "plan")
      glyph = fmt::format(R"(<path d="M{} {}l6 6l-6 6l-6 -6z" fill="#475569"/>)", px(sx), px(cy - 6));
    else if (k == "recommendation")
      glyph = fmt::format(R"(<circle cx="{}" cy="{}" r="4" fill="#ffffff" stroke="#475569" stroke-width="1.8"/>)", px(sx), px(cy));
    else if (k == "roof")
      glyph = fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1.2"/>)", px(sx - 9), px(cy), px(sx + 9),
                          px(cy), kRoofColor);
    else if (k == "used")
      glyph = fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="3"/>)", px(sx - 9), px(cy), px(sx + 9), px(cy),
                          kRoofColor);
    else
      glyph = fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#64748b" stroke-width="1.5" stroke-dasharray="6 4"/>)",
                          px(sx - 9), px(cy), px(sx + 9), px(cy));
    svg += fmt::format(R"(<g class="legend-entry" data-kind="{}">{}<text x="{}" y="{}">{}</text></g>)"
                       "\n",
                       k, glyph, px(sx + 16), px(cy + 4), escape_markup(entries[i].text));
    sx += width;
  }
  svg += "</g>\n";
  return svg;
}

}  // namespace

std::string render_roofline_svg(const RooflineChart& c, const RooflineLayout& l) {
  const Plot plot(roofline_axes(c, l));
  return svg_header(c, l) + svg_grid(plot) + svg_axes(plot) + svg_roofs(c, plot) + svg_arrows(c, plot) + svg_points(c, plot) +
         svg_legend(c, l, plot) + "</svg>\n";
}

}  // namespace optadvisor
