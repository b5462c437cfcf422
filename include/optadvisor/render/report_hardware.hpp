// SPDX-License-Identifier: MIT
// `hw list` and `hw show`: the hardware database as tables, Markdown and JSON.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/catalog/hardware.hpp"
#include "optadvisor/render/format.hpp"

namespace optadvisor {

/// `hw list`: one row per device.
std::string render_hardware_list(const std::vector<const HardwareProfile*>& devices, OutputFormat format);
nlohmann::json hardware_list_json(const std::vector<const HardwareProfile*>& devices);

/// `hw show`: the whole profile with sources.
std::string render_hardware_show(const HardwareProfile& hw, const Resolution& how, const std::string& origin, OutputFormat format,
                                 const Style& style);

}  // namespace optadvisor
