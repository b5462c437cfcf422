// SPDX-License-Identifier: MIT
#include "optadvisor/render/report_detect.hpp"

#include <fmt/format.h>

#include "base/units.hpp"

namespace optadvisor {
namespace {

template <typename T>
nlohmann::json or_null(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

/// Identical lines once, with a count: eight GPUs print one line "x8".
std::vector<std::string> collapsed(const std::vector<std::string>& lines) {
  std::vector<std::pair<std::string, int>> counted;
  for (const auto& l : lines) {
    if (!counted.empty() && counted.back().first == l)
      ++counted.back().second;
    else
      counted.emplace_back(l, 1);
  }
  std::vector<std::string> out;
  for (const auto& [line, n] : counted) out.push_back(n > 1 ? fmt::format("{} (x{})", line, n) : line);
  return out;
}

}  // namespace

nlohmann::json detection_json(const DetectedHardware& detected, const ProfileMatch& match, const HardwareProfile& profile) {
  const DetectedDevice& d = *detected.device;
  std::vector<std::string> notes = detected.notes;
  notes.insert(notes.end(), match.notes.begin(), match.notes.end());
  return {{"schema_version", kSchemaVersion},
          {"device",
           {{"kind", d.kind},
            {"vendor", d.vendor},
            {"name", d.name},
            {"memory_bytes", or_null(d.memory_bytes)},
            {"count", d.count},
            {"gpu_cores", or_null(d.gpu_cores)},
            {"cpu_model", d.cpu_model},
            {"ram_bytes", or_null(d.ram_bytes)},
            {"source", d.source},
            {"raw_lines", d.raw_lines},
            {"missing", d.missing}}},
          {"profile", {{"id", profile.id}, {"name", profile.name}, {"matched_by", match.how}}},
          {"notes", notes},
          {"probes", detected.probes}};
}

std::string render_detection(const DetectedHardware& detected, const ProfileMatch& match, const HardwareProfile& profile,
                             OutputFormat format, const Style& style) {
  if (format == OutputFormat::kJson) return detection_json(detected, match, profile).dump(2) + "\n";
  const DetectedDevice& d = *detected.device;
  auto item = [](const std::string& key, const std::string& value) { return fmt::format("  {:<12}{}\n", key, value); };
  std::string out = style.bold(describe(d)) + "\n";
  out += item("profile", fmt::format("{} ({})", profile.id, profile.name));
  out += item("matched", match.how);
  if (d.memory_bytes) out += item("memory", format_bytes(*d.memory_bytes) + (d.kind == "gpu" ? " per device" : ""));
  if (d.gpu_cores) out += item("GPU cores", std::to_string(*d.gpu_cores));
  if (!d.cpu_model.empty() && d.cpu_model != d.name) out += item("host CPU", d.cpu_model);
  if (d.ram_bytes && d.kind != "apple-silicon") out += item("host RAM", format_bytes(*d.ram_bytes));
  for (const auto& line : collapsed(d.raw_lines)) out += item("reported", line);
  for (const auto& p : detected.probes) out += item("tried", p);
  for (const auto& n : detected.notes) out += "note: " + n + "\n";
  for (const auto& n : match.notes) out += "note: " + n + "\n";
  out += fmt::format("\n--hw auto means --hw {} here; 'optadvisor hw show {}' shows the profile.\n", profile.id, profile.id);
  return out;
}

}  // namespace optadvisor
