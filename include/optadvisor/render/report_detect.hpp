// SPDX-License-Identifier: MIT
// `hw detect`: what the local tools reported and the profile it maps to.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "optadvisor/readers/detect.hpp"
#include "optadvisor/render/format.hpp"

namespace optadvisor {

/// The detection result with its mapping; `profile` is the matched profile
/// (match.id set). Schema: data/schema/output/hw_detect.schema.json.
nlohmann::json detection_json(const DetectedHardware& detected, const ProfileMatch& match, const HardwareProfile& profile);
std::string render_detection(const DetectedHardware& detected, const ProfileMatch& match, const HardwareProfile& profile,
                             OutputFormat format, const Style& style);

}  // namespace optadvisor
