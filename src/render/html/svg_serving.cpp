// SPDX-License-Identifier: MIT
#include "optadvisor/render/html/svg_serving.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "optadvisor/render/html/svg_roofline.hpp"

namespace optadvisor {
namespace {

constexpr double kWidth = 760, kPanel = 300, kLeft = 64, kRight = 24, kTop = 34, kBottom = 44;
constexpr const char* kColors[] = {"#2563eb", "#ea580c", "#16a34a", "#9333ea"};

/// A round step giving about 5 ticks up to `max`.
double tick_step(double max) {
  const double raw = max / 5, mag = std::pow(10.0, std::floor(std::log10(std::max(raw, 1e-12))));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

struct Axis {
  double max, step;
  double at(double v, double lo_px, double hi_px) const { return lo_px + (hi_px - lo_px) * v / max; }
};

Axis axis_for(double max) {
  const double step = tick_step(max > 0 ? max : 1);
  return {std::ceil((max > 0 ? max : 1) / step) * step, step};
}

std::string panel(const std::vector<ServingSeries>& series, bool tpot, double slo_s, double y0, const Axis& x) {
  double ymax = slo_s * 1e3 * 1.2;
  for (const auto& s : series)
    for (const auto& p : s.points)
      if (p.fits) ymax = std::max(ymax, (tpot ? p.tpot_s.mean : p.ttft_s.mean) * 1e3);
  const Axis y = axis_for(ymax);
  const double left = kLeft, right = kWidth - kRight, top = y0 + kTop, bottom = y0 + kPanel - kBottom;
  auto px = [&](double v) { return x.at(v, left, right); };
  auto py = [&](double v) { return y.at(v, bottom, top); };
  std::string out = fmt::format("<text x=\"{}\" y=\"{}\" font-weight=\"600\">{} (ms, mean) vs output tokens/s per GPU</text>\n", left,
                                y0 + 20, tpot ? "TPOT" : "TTFT");
  for (double v = 0; v <= y.max + 1e-9; v += y.step)
    out += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e2e8f0\"/><text x=\"{:.1f}\" y=\"{:.1f}\" "
        "text-anchor=\"end\" fill=\"#475569\">{:g}</text>\n",
        left, py(v), right, py(v), left - 6, py(v) + 4, v);
  for (double v = 0; v <= x.max + 1e-9; v += x.step)
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#475569\">{:g}</text>\n", px(v), bottom + 16, v);
  out += fmt::format(
      "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#334155\"/>"
      "<line x1=\"{0}\" y1=\"{3:.1f}\" x2=\"{0}\" y2=\"{1:.1f}\" stroke=\"#334155\"/>\n",
      left, bottom, right, top);
  if (slo_s > 0)
    out += fmt::format(
        "<line class=\"slo\" x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#dc2626\" stroke-dasharray=\"6 4\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\" fill=\"#dc2626\">SLO {5:g} ms</text>\n",
        left, py(slo_s * 1e3), right, right - 4, py(slo_s * 1e3) - 4, slo_s * 1e3);
  for (std::size_t k = 0; k < series.size(); ++k) {
    const ServingSeries& s = series[k];
    const char* color = kColors[k % 4];
    std::string line;
    for (std::size_t i = 0; i < s.points.size(); ++i) {
      const ServingResult& p = s.points[i];
      if (!p.fits) continue;
      const double cx = px(p.output_tokens_per_s_per_gpu), cy = py((tpot ? p.tpot_s.mean : p.ttft_s.mean) * 1e3);
      line += fmt::format("{}{:.1f},{:.1f}", line.empty() ? "" : " ", cx, cy);
      out += fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"><title>{}: {} -> {:.0f} tok/s/GPU</title></circle>"
          "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" fill=\"#475569\">{}</text>\n",
          cx, cy, color, escape_markup(s.label), escape_markup(s.loads[i]), p.output_tokens_per_s_per_gpu, cx + 5, cy - 5,
          escape_markup(s.loads[i]));
      if (i == s.knee)
        out += fmt::format("<circle class=\"knee\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"8\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n",
                           cx, cy, color);
    }
    out += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", line, color);
  }
  return out;
}

}  // namespace

std::string render_serving_svg(const std::vector<ServingSeries>& series, double slo_ttft_s, double slo_tpot_s) {
  double xmax = 0;
  for (const auto& s : series)
    for (const auto& p : s.points)
      if (p.fits) xmax = std::max(xmax, p.output_tokens_per_s_per_gpu);
  const Axis x = axis_for(xmax * 1.05);
  const double height = 2 * kPanel + 24.0 * static_cast<double>(series.size()) + 10;
  std::string out = fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" class="serving" viewBox="0 0 {0} {1}" width="{0}" height="{1}" )"
                                R"(role="img" aria-labelledby="sv-title" font-size="12"><title id="sv-title">TPOT and TTFT against output )"
                                R"(tokens/s per GPU over the load sweep</title>)"
                                "\n",
                                kWidth, height);
  out += panel(series, true, slo_tpot_s, 0, x);
  out += panel(series, false, slo_ttft_s, kPanel, x);
  for (std::size_t k = 0; k < series.size(); ++k) {
    const double y = 2 * kPanel + 16 + 24.0 * static_cast<double>(k);
    out += fmt::format(
        "<rect x=\"{}\" y=\"{:.1f}\" width=\"14\" height=\"4\" fill=\"{}\"/><text x=\"{}\" y=\"{:.1f}\">{} (ring: the knee)</text>\n",
        kLeft, y - 4, kColors[k % 4], kLeft + 20, y, escape_markup(series[k].label));
  }
  return out + "</svg>\n";
}

}  // namespace optadvisor
