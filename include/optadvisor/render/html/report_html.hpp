// SPDX-License-Identifier: MIT
// The HTML report: one self-contained page (inline CSS and SVG, no scripts,
// nothing fetched) with the scenario, the diagnosis, a roofline chart, the
// memory breakdown, the ranked playbook and the assumptions. Pure renderers:
// they format results the advisor and the model already computed.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/advisor/playbook.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/render/report_advice.hpp"
#include "optadvisor/advisor/rules.hpp"
#include "optadvisor/render/html/svg_roofline.hpp"
#include "optadvisor/render/html/svg_serving.hpp"

namespace optadvisor {

/// What the page says about where it came from; passed in so the output stays reproducible.
struct HtmlReportInfo {
  std::string program_version;     ///< "0.1.0"
  std::string data_version;        ///< "2026.11.30+3f2a9c1d0e4b"
  std::vector<std::string> notes;  ///< extra lines from the command (a default it chose)
};

/// The advisor's result (`--format html`, `optadvisor report`). Training goals
/// get every section but the roofline, which is about inference phases.
std::string render_advice_html(const Advice& advice, const RuleBook& book, const AdviceView& view, const HtmlReportInfo& info);

/// `estimate --format html`: one scenario's header, bounds, roofline and memory bar.
std::string render_estimate_html(const PreparedScenario& prepared, const Analysis& analysis, const HtmlReportInfo& info);

/// `serve --sweep --format html`: the scenario, the sweep table and the serving
/// chart (TPOT and TTFT against tokens/s per GPU, SLO lines, knee; one line per layout).
std::string render_serve_html(const std::string& title, const std::vector<std::pair<std::string, std::string>>& facts,
                              const std::vector<ServingSeries>& series, double slo_ttft_s, double slo_tpot_s,
                              const std::vector<std::string>& notes, const HtmlReportInfo& info);

/// Compute roofs of a device: equal dense peaks of flops_per_s share one roof
/// ("fp16, bf16"), highest first; the data type `factors` ran on is marked
/// used (added as its own roof when it is not in flops_per_s: NPU, CPU, FP16-accumulate).
std::vector<Roof> device_roofs(const HardwareProfile& hw, const Factors& factors);

/// The prefill and decode points of one analysis (phases with no time are left out).
std::vector<RooflinePoint> phase_points(const Analysis& analysis, PointSeries series, const std::string& tag, const std::string& what);

/// The roofline of an inference advice: the scenario as given, after the
/// stacked plan and after each of the top `recommendations`, with arrows.
RooflineChart advice_roofline(const Advice& advice, std::size_t recommendations = 3);

/// One horizontal memory bar: named parts against what the device allows.
struct MemoryBar {
  std::string label;                                     ///< "as given", "after the plan"
  std::vector<std::pair<std::string, double>> segments;  ///< {"weights", bytes}, ...
  double total_bytes = 0;                                ///< needed per device
  double capacity_bytes = 0;                             ///< usable per device
  double limit_bytes = 0;                                ///< what the engine may use (<= capacity)
  bool fits = false;
  std::string note;  ///< "12 layers in host memory"
};

/// The bar of an inference analysis (weights, KV cache, activations, runtime).
MemoryBar memory_bar(const std::string& label, const MemoryBreakdown& memory);
/// The bar of a training step (model states, activations, buffers per GPU).
MemoryBar memory_bar(const std::string& label, const TrainingMemory& memory);

/// Bars on one linear scale, with the usable capacity marked; sizes in GB and GiB.
std::string render_memory_bars_svg(const std::vector<MemoryBar>& bars);

}  // namespace optadvisor
