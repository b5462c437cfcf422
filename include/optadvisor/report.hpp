// SPDX-License-Identifier: MIT
// Renderers: they format already-computed results and never compute.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "optadvisor/catalog.hpp"
#include "optadvisor/hardware.hpp"

namespace optadvisor {

/// Version of every JSON document the CLI prints; bumped on breaking changes.
constexpr int kSchemaVersion = 1;

enum class OutputFormat { kText, kJson, kMarkdown };

/// Text styling; enabled only on a terminal and never with NO_COLOR.
struct Style {
  bool color = false;
  std::string bold(const std::string& s) const;
  std::string dim(const std::string& s) const;
};

/// `hw list`: one row per device.
std::string render_hardware_list(const std::vector<const HardwareProfile*>& devices, OutputFormat format);
nlohmann::json hardware_list_json(const std::vector<const HardwareProfile*>& devices);

/// `hw show`: the whole profile with sources.
std::string render_hardware_show(const HardwareProfile& hw, const Resolution& how, const std::string& origin,
                                 OutputFormat format, const Style& style);

}  // namespace optadvisor
