// SPDX-License-Identifier: MIT
// The chart serving engineers read: TPOT and TTFT against output tokens/s per
// GPU over a load sweep, one line per layout, the SLO lines and the knee.
#pragma once

#include <string>
#include <vector>

#include "optadvisor/analysis/serving.hpp"

namespace optadvisor {

struct ServingSeries {
  std::string label;               ///< "tp 2", "disaggregated 1P x tp 8 + 1D x tp 8"
  std::vector<std::string> loads;  ///< a point's label: its concurrency or rate
  std::vector<ServingResult> points;
  std::size_t knee = 0;  ///< index of the knee point (serving_knee)
};

/// Two panels (TPOT, TTFT) as one inline <svg>; slo_* = 0 draws no SLO line.
std::string render_serving_svg(const std::vector<ServingSeries>& series, double slo_ttft_s, double slo_tpot_s);

}  // namespace optadvisor
