// SPDX-License-Identifier: MIT
#include "optadvisor/catalog/calibration.hpp"

#include <system_error>

#include <fmt/format.h>

#include "base/output_file.hpp"

namespace optadvisor {

std::string Calibration::engine_id() const { return backend == "default" ? engine : engine + ":" + backend; }

std::optional<Calibration> calibration_from_json(const nlohmann::json& j, std::vector<Problem>& problems) {
  Calibration c;
  try {
    c.hardware = j.at("hardware").get<std::string>();
    c.engine = j.at("engine").get<std::string>();
    c.backend = j.at("backend").get<std::string>();
    const auto& f = j.at("factors");
    auto factor = [&](const char* key, std::optional<double>& out) {
      if (f.contains(key)) out = f.at(key).get<double>();
    };
    factor("decode_bandwidth_efficiency", c.factors.decode_bandwidth_efficiency);
    factor("prefill_compute_efficiency", c.factors.prefill_compute_efficiency);
    factor("layer_overhead_s", c.factors.layer_overhead_s);
    factor("step_overhead_s", c.factors.step_overhead_s);
    if (f.contains("quant_efficiency"))
      for (const auto& [quant, qe] : f.at("quant_efficiency").items())
        c.factors.quant_efficiency[quant] = {qe.at("decode").get<double>(), qe.at("prefill").get<double>()};
    const auto& on = j.at("fitted_on");
    c.source_file = on.at("file").get<std::string>();
    c.date = on.at("date").get<std::string>();
    c.rows = on.at("rows").get<uint64_t>();
    for (const auto& t : on.value("tools", nlohmann::json::array()))
      c.tools.push_back({t.at("name").get<std::string>(), t.value("version", std::string{})});
    c.device_info = on.value("device_info", std::string{});
    c.median_abs_error_before = on.value("median_abs_error_before", 0.0);
    c.median_abs_error_after = on.value("median_abs_error_after", 0.0);
    c.bounds_hit = j.value("bounds_hit", std::vector<std::string>{});
    c.notes = j.value("notes", std::vector<std::string>{});
  } catch (const nlohmann::json::exception& e) {
    problems.push_back({"", "", std::string("malformed calibration: ") + e.what()});
    return std::nullopt;
  }
  if (!c.factors.decode_bandwidth_efficiency && !c.factors.prefill_compute_efficiency && !c.factors.layer_overhead_s &&
      !c.factors.step_overhead_s && c.factors.quant_efficiency.empty())
    problems.push_back({"", "/factors", "sets no factor"});
  return c;
}

nlohmann::ordered_json to_json(const Calibration& c) {
  nlohmann::ordered_json factors = nlohmann::ordered_json::object();
  if (c.factors.decode_bandwidth_efficiency) factors["decode_bandwidth_efficiency"] = *c.factors.decode_bandwidth_efficiency;
  if (c.factors.prefill_compute_efficiency) factors["prefill_compute_efficiency"] = *c.factors.prefill_compute_efficiency;
  if (c.factors.layer_overhead_s) factors["layer_overhead_s"] = *c.factors.layer_overhead_s;
  if (c.factors.step_overhead_s) factors["step_overhead_s"] = *c.factors.step_overhead_s;
  for (const auto& [quant, qe] : c.factors.quant_efficiency)
    factors["quant_efficiency"][quant] = {{"decode", qe.decode}, {"prefill", qe.prefill}};
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  for (const auto& t : c.tools) {
    nlohmann::ordered_json tool = {{"name", t.name}};
    if (!t.version.empty()) tool["version"] = t.version;
    tools.push_back(tool);
  }
  nlohmann::ordered_json on = {{"file", c.source_file}, {"date", c.date}, {"rows", c.rows}, {"tools", tools}};
  if (!c.device_info.empty()) on["device_info"] = c.device_info;
  on["median_abs_error_before"] = c.median_abs_error_before;
  on["median_abs_error_after"] = c.median_abs_error_after;
  nlohmann::ordered_json doc = {
      {"hardware", c.hardware}, {"engine", c.engine}, {"backend", c.backend}, {"factors", factors}, {"fitted_on", on}};
  if (!c.bounds_hit.empty()) doc["bounds_hit"] = c.bounds_hit;
  if (!c.notes.empty()) doc["notes"] = c.notes;
  return doc;
}

std::string calibration_file_name(const std::string& hardware, const std::string& engine, const std::string& backend) {
  return fmt::format("{}--{}-{}.json", hardware, engine, backend);
}

BackendProfile apply_calibration(const BackendProfile& base, const CalibrationFactors& factors) {
  BackendProfile b = base;
  if (factors.decode_bandwidth_efficiency) b.decode_bandwidth_efficiency = *factors.decode_bandwidth_efficiency;
  if (factors.prefill_compute_efficiency) b.prefill_compute_efficiency = *factors.prefill_compute_efficiency;
  if (factors.layer_overhead_s) b.layer_overhead_s = *factors.layer_overhead_s;
  if (factors.step_overhead_s) b.step_overhead_s = *factors.step_overhead_s;
  for (const auto& [quant, qe] : factors.quant_efficiency) b.quant_efficiency[quant] = qe;
  return b;
}

void write_calibration_file(const std::filesystem::path& path, const nlohmann::ordered_json& doc) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.has_parent_path()) {
    fs::create_directories(path.parent_path(), ec);
    if (ec) throw Error(ExitCode::kRuntime, fmt::format("cannot create directory '{}': {}", path.parent_path().string(), ec.message()));
  }
  // A reader never sees half a file: write beside it, then rename over it.
  write_file_replacing(path.string(), doc.dump(2) + "\n", "calibration file");
}

}  // namespace optadvisor
