// SPDX-License-Identifier: MIT
// A calibration: efficiency factors of one engine backend on one device,
// fitted on the user's own measurements (`optadvisor calibrate`). Stored as an
// overlay document under calibrations/ (schema data/schema/calibration.schema.json);
// prepare_scenario() applies it over the engine profile's defaults whenever
// the same device runs the same engine backend.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "optadvisor/catalog/engine.hpp"
#include "optadvisor/base/error.hpp"

namespace optadvisor {

/// The factors a calibration sets; unset ones keep the engine profile's value.
struct CalibrationFactors {
  std::optional<double> decode_bandwidth_efficiency;  ///< achieved / peak memory bandwidth in decode
  std::optional<double> prefill_compute_efficiency;   ///< achieved / peak matrix FLOP/s in prefill
  std::optional<double> layer_overhead_s;             ///< per decode step and layer
  std::optional<double> step_overhead_s;              ///< per decode step
  /// Per weight format: the multipliers on the two efficiencies (engine.hpp, QuantEfficiency) for
  /// the formats the measurements cover beyond the one the efficiencies refer to.
  std::map<std::string, QuantEfficiency> quant_efficiency;
};

/// One tool that produced the measurements, "llama.cpp" "b5163 (8cf427ff)".
struct CalibrationTool {
  std::string name;
  std::string version;  ///< "" when the results file does not record it
};

struct Calibration {
  std::string hardware;  ///< hardware id
  std::string engine;    ///< engine id, "llama.cpp"
  std::string backend;   ///< backend name, "cuda"; "default" for single-backend engines
  CalibrationFactors factors;
  // fitted_on: where the factors come from.
  std::string source_file;  ///< results file name (no directory)
  std::string date;         ///< YYYY-MM-DD the measurements were taken
  uint64_t rows = 0;        ///< measurements fitted
  std::vector<CalibrationTool> tools;
  std::string device_info;              ///< what the tool reported ("NVIDIA GeForce RTX 4090"), "" if nothing
  double median_abs_error_before = 0;   ///< |predicted / measured - 1|, median over the rows, shipped factors
  double median_abs_error_after = 0;    ///< the same with the fitted factors
  std::vector<std::string> bounds_hit;  ///< "decode_bandwidth_efficiency at its upper bound 1"
  std::vector<std::string> notes;

  std::string origin;              ///< the file it was loaded from (set by the catalog)
  BackendProfile backend_profile;  ///< the engine backend with the factors applied (set by the catalog)

  /// "llama.cpp:cuda", or "vllm" for a "default" backend, as EngineChoice::id() prints it.
  std::string engine_id() const;
};

/// Reads a schema-valid calibration document; problems for what the schema cannot check.
std::optional<Calibration> calibration_from_json(const nlohmann::json& j, std::vector<Problem>& problems);
/// The overlay document (what calibration_from_json reads back), keys in reading order.
nlohmann::ordered_json to_json(const Calibration& c);

/// "rtx4090--llama.cpp-cuda.json": one file per device and engine backend.
std::string calibration_file_name(const std::string& hardware, const std::string& engine, const std::string& backend);

/// `base` with the calibration's factors over it.
BackendProfile apply_calibration(const BackendProfile& base, const CalibrationFactors& factors);

/// Writes `doc` to `path` atomically (a temporary file beside it, then rename),
/// creating the directory; Error(kRuntime) naming the path on failure.
void write_calibration_file(const std::filesystem::path& path, const nlohmann::ordered_json& doc);

}  // namespace optadvisor
