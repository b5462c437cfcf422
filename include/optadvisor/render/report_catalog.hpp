// SPDX-License-Identifier: MIT
// `optadvisor models`, `engines`, `quants`: what the catalog knows, as tables, Markdown and JSON.
#pragma once

#include <string>
#include <vector>

#include "optadvisor/analysis/size.hpp"
#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/render/format.hpp"

namespace optadvisor {

std::string render_model_list(const std::vector<ModelSummary>& models, OutputFormat format);
std::string render_engine_list(const std::vector<EngineProfile>& engines, OutputFormat format);
std::string render_quant_list(const std::vector<QuantFormat>& formats, OutputFormat format);

}  // namespace optadvisor
