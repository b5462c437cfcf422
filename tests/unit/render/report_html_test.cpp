// SPDX-License-Identifier: MIT
// The HTML report and its roofline chart: log scales, ticks, ridge points,
// roofs per data type, escaping, and the advisor's points before and after.
#include <catch2/catch.hpp>

#include <string>

#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/advisor/playbook.hpp"
#include "optadvisor/render/html/report_html.hpp"
#include "optadvisor/advisor/rules.hpp"
#include "optadvisor/render/html/svg_roofline.hpp"
#include "fixtures.hpp"

using namespace optadvisor;

namespace {

using fixtures::catalog;

const RuleBook& book() { return fixtures::rule_book(); }

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + needle.size())) ++n;
  return n;
}

}  // namespace

TEST_CASE("a log scale puts each decade an equal distance apart", "[report_html]") {
  // x: 1..1000 onto 100..400 px is 3 decades over 300 px, 100 px a decade:
  // 10 -> 100 + 1/3 x 300 = 200; 100 -> 300; the ends map onto the ends.
  const LogScale x{1, 1000, 100, 400};
  CHECK(x.to_px(1) == Approx(100));
  CHECK(x.to_px(10) == Approx(200));
  CHECK(x.to_px(100) == Approx(300));
  CHECK(x.to_px(1000) == Approx(400));
  // A y axis grows upwards: 1e12..1e15 FLOP/s onto 400..100 px, -100 px a decade.
  // 1e13 -> 300; 10^12.5 = 3.162e12 is half a decade: 400 - 50 = 350.
  const LogScale y{1e12, 1e15, 400, 100};
  CHECK(y.to_px(1e13) == Approx(300));
  CHECK(y.to_px(3.16227766e12) == Approx(350).margin(1e-6));
  CHECK(y.to_px(1e15) == Approx(100));
  // Non-positive values cannot sit on a log axis: they land on the low end.
  CHECK(x.to_px(0) == Approx(100));
}

TEST_CASE("decades and their tick labels", "[report_html]") {
  auto [lo, hi] = decade_range(0.34, 1772);
  CHECK(lo == Approx(0.1));
  CHECK(hi == Approx(1e4));
  // A power of ten stays itself (no extra decade from rounding).
  std::tie(lo, hi) = decade_range(1000, 1000);
  CHECK(lo == Approx(1000));
  CHECK(hi == Approx(10000));
  const auto ticks = decade_ticks(0.1, 1e4);
  REQUIRE(ticks.size() == 6);
  CHECK(ticks.front() == Approx(0.1));
  CHECK(ticks[3] == Approx(100));
  CHECK(si_label(1e12, "FLOP/s") == "1 TFLOP/s");
  CHECK(si_label(1e17, "FLOP/s") == "100 PFLOP/s");
  CHECK(si_label(1.979e15, "FLOP/s") == "1.98 PFLOP/s");
  CHECK(si_label(3.35e12, "B/s") == "3.35 TB/s");
  CHECK(si_label(100, "FLOP/s") == "100 FLOP/s");
  CHECK(si_label(1000, "") == "1k");
  CHECK(si_label(0.1, "") == "0.1");
  CHECK(si_label(0.01, "") == "0.01");
}

TEST_CASE("the ridge point of a real profile is its peak over its bandwidth", "[report_html]") {
  const HardwareProfile& h100 = catalog().resolve_hardware("h100-sxm");
  // H100 SXM: bf16 dense 989e12 FLOP/s over 3.35e12 B/s = 295.2 FLOP/byte.
  CHECK(ridge_point_flop_per_byte(*h100.peak_flops_per_s("bf16"), h100.memory_bandwidth_bytes_per_s) == Approx(295.2).margin(0.05));
  // FP8 doubles it: 1979e12 / 3.35e12 = 590.7.
  CHECK(ridge_point_flop_per_byte(*h100.peak_flops_per_s("fp8"), h100.memory_bandwidth_bytes_per_s) == Approx(590.7).margin(0.05));
  // Left of the ridge the slope binds (1 FLOP/B x 3.35e12 B/s), right of it the roof.
  CHECK(attainable_flops_per_s(1, 989e12, 3.35e12) == Approx(3.35e12));
  CHECK(attainable_flops_per_s(1000, 989e12, 3.35e12) == Approx(989e12));

  // Equal peaks share a roof; the one the estimate ran on is marked.
  Factors f;
  f.compute_dtype = "bf16";
  f.peak_compute_flops_per_s = 989e12;
  const auto roofs = device_roofs(h100, f);
  REQUIRE(roofs.size() == 4);  // fp8+int8, fp16+bf16, tf32, fp32
  CHECK(roofs[0].label == "fp8, int8");
  CHECK(roofs[0].flops_per_s == Approx(1979e12));
  CHECK(roofs[1].label == "fp16, bf16");
  CHECK(roofs[1].used);
  CHECK(roofs[3].label == "fp32");
  CHECK_FALSE(roofs[3].used);
  // A data type outside flops_per_s (a phone's NPU) gets a roof of its own, in
  // order of its peak: 35e12 sits below fp32's 67e12, so it comes last.
  f.compute_dtype = "npu";
  f.peak_compute_flops_per_s = 35e12;
  const auto with_npu = device_roofs(h100, f);
  REQUIRE(with_npu.size() == 5);
  CHECK(with_npu[4].label == "npu");
  CHECK(with_npu[4].used);
  CHECK_FALSE(with_npu[1].used);

  // GeForce: llama.cpp's f16 path runs at the FP16-accumulate rate, 419e12 on an RTX 5090,
  // the same peak as its FP32-accumulate fp8 rate, so it names that roof instead of adding one.
  const HardwareProfile& rtx5090 = catalog().resolve_hardware("rtx5090");
  f.compute_dtype = "fp16 (FP16 accumulate)";
  f.peak_compute_flops_per_s = 419e12;
  const auto geforce = device_roofs(rtx5090, f);
  REQUIRE(geforce.size() == 5);  // fp4, int8, fp8 (+ fp16 acc.), fp16+bf16, fp32+tf32
  CHECK(geforce[2].label == "fp8, fp16 (FP16 acc.)");
  CHECK(geforce[2].used);
  CHECK(geforce[4].label == "fp32, tf32");
}

TEST_CASE("the chart's axes cover every roof and point in whole decades", "[report_html]") {
  RooflineChart c;
  c.bandwidth_bytes_per_s = 3.35e12;
  c.roofs = {{"fp8", 1979e12, false}, {"bf16", 989e12, true}};
  c.points = {{"decode", PointSeries::kBefore, "", "decode", 1.02, 2.67e12, 989e12},
              {"prefill", PointSeries::kBefore, "", "prefill", 522, 585e12, 989e12}};
  const RooflineLayout l;  // 1040 x 600; plot x 104..840, y 500..20
  const RooflineAxes axes = roofline_axes(c, l);
  // x: data 1.02 .. 590.7 (fp8 ridge), widened by 3x each way: 0.34 .. 1772 -> 0.1 .. 1e4.
  CHECK(axes.x.min_value == Approx(0.1));
  CHECK(axes.x.max_value == Approx(1e4));
  // y: the slope at x = 0.1 is 3.35e11; 3.35e11 / 2 .. 1979e12 x 2 -> 1e11 .. 1e16.
  CHECK(axes.y.min_value == Approx(1e11));
  CHECK(axes.y.max_value == Approx(1e16));
  CHECK(axes.x_ticks.size() == 6);
  CHECK(axes.y_ticks.size() == 6);
  // 5 decades over 736 px: 147.2 px each. x = 1 is one decade in: 104 + 147.2 = 251.2.
  CHECK(axes.x.to_px(1) == Approx(251.2));
  // The bf16 ridge, 295.2 FLOP/B: 104 + (log10 295.2 + 1) / 5 x 736 = 104 + 3.4701 / 5 x 736 = 614.8.
  CHECK(axes.x.to_px(989e12 / 3.35e12) == Approx(614.8).margin(0.1));
  // y: 480 px over 5 decades, 96 px each; 1e15 is 4 decades up from 500: 500 - 384 = 116.
  CHECK(axes.y.to_px(1e15) == Approx(116));
}

TEST_CASE("markup escaping covers the five special characters", "[report_html]") {
  CHECK(escape_markup(R"(<a href="x">Tom & Jerry's</a>)") == "&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;");
  CHECK(escape_markup("plain text 1.5 GB") == "plain text 1.5 GB");
  // Names from overlays reach the chart escaped.
  RooflineChart c;
  c.title = "<script>alert('x')</script>";
  c.bandwidth_bytes_per_s = 1e12;
  c.roofs = {{"fp16 \"fast\" & <new>", 1e14, true}};
  c.points = {{"decode", PointSeries::kBefore, "<b>", "decode & <more>", 2, 1e12, 1e14}};
  const std::string svg = render_roofline_svg(c);
  CHECK(svg.find("<script>") == std::string::npos);
  CHECK(svg.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;") != std::string::npos);
  CHECK(svg.find("fp16 &quot;fast&quot; &amp; &lt;new&gt;") != std::string::npos);
  CHECK(svg.find("<b>") == std::string::npos);
  CHECK(svg.rfind("<svg ", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
}

TEST_CASE("the advisor's page has the chart with points before and after, the memory bars and the playbook", "[report_html]") {
  AdviceRequest r;
  r.goal = Goal::kLatency;
  r.scenario.hardware = "h100";
  r.scenario.model.preset = "llama-3.1-70b";
  const Advice a = advise(catalog(), book(), r);
  REQUIRE_FALSE(a.recommendations.empty());
  REQUIRE_FALSE(a.plan.empty());

  // The points are the advisor's own analyses: FLOPs over time, intensity as computed.
  const RooflineChart c = advice_roofline(a, 3);
  REQUIRE(c.points.size() >= 4);
  CHECK(c.points[0].phase == "prefill");
  CHECK(c.points[0].series == PointSeries::kBefore);
  CHECK(c.points[0].flops_per_s == Approx(a.base.inference().analysis.prefill.flops / a.base.inference().analysis.prefill.time_s));
  CHECK(c.points[1].phase == "decode");
  CHECK(c.points[1].flop_per_byte == Approx(a.base.inference().analysis.decode.arithmetic_intensity));
  bool plan_decode = false;
  for (const auto& p : c.points)
    if (p.series == PointSeries::kPlan && p.phase == "decode") {
      plan_decode = true;
      CHECK(p.flops_per_s == Approx(a.plan.back().result.inference().analysis.decode.achieved_flops_per_s()));
    }
  CHECK(plan_decode);
  CHECK_FALSE(c.arrows.empty());
  for (const auto& arrow : c.arrows) CHECK(c.points[arrow.from].series == PointSeries::kBefore);

  const std::string html = render_advice_html(a, book(), AdviceView{}, HtmlReportInfo{"9.9.9", "test-data", {}});
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(count(html, "<svg ") == 2);  // roofline and memory bars
  CHECK(count(html, "class=\"roof\"") == 4);
  CHECK(count(html, "class=\"bandwidth-slope\"") == 1);
  CHECK(count(html, "data-series=\"plan\"") >= 1);
  CHECK(count(html, "<tr class=\"rec\"") == a.recommendations.size());
  CHECK(count(html, "<g class=\"bar\"") == 2);  // as given, after the plan
  CHECK(html.find("optadvisor 9.9.9, data test-data") != std::string::npos);
  // Nothing is fetched: no scripts, no external stylesheets, fonts or images.
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("<link") == std::string::npos);
  CHECK(html.find("<img") == std::string::npos);
  CHECK(html.find("@import") == std::string::npos);
  // Deterministic: the same advice renders the same bytes.
  CHECK(html == render_advice_html(a, book(), AdviceView{}, HtmlReportInfo{"9.9.9", "test-data", {}}));
}

TEST_CASE("memory bars label GB and GiB and split the parts", "[report_html]") {
  const MemoryBreakdown m{.weights_bytes = 16e9,
                          .kv_cache_bytes = 2e9,
                          .activation_bytes = 1e9,
                          .overhead_bytes = 1e9,
                          .total_bytes = 20e9,
                          .capacity_bytes = 24e9,
                          .limit_bytes = 24e9,
                          .fits = true};
  const MemoryBar b = memory_bar("as given", m);
  CHECK(b.segments.size() == 4);  // the parts add up: no "other"
  const std::string svg = render_memory_bars_svg({b});
  // 20e9 B = 20.0 GB = 20e9 / 2^30 = 18.6 GiB; 24e9 B = 24.0 GB = 22.4 GiB.
  CHECK(svg.find("20.0 GB (18.6 GiB) needed; 24.0 GB (22.4 GiB) usable: fits") != std::string::npos);
  CHECK(count(svg, "class=\"segment\"") == 4);
  CHECK(count(svg, "class=\"capacity\"") == 1);
}
