// SPDX-License-Identifier: MIT
// Calibration from the user's own measurements: map each measured row to a
// scenario (device, model preset, weight format, engine backend, workload),
// predict it with the shipped efficiency factors, fit the few factors the rows
// determine, and describe the result as a calibration overlay (calibration.hpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/readers/bench_import.hpp"
#include "optadvisor/catalog/calibration.hpp"
#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/analysis/prepare.hpp"

namespace optadvisor {

/// What the user said beside the results files.
struct CalibrationRequest {
  std::string hardware;       ///< --hw (required; passed to Catalog::resolve_hardware)
  std::string model;          ///< --model: the preset every row ran ("" = read from the file)
  std::string quant;          ///< --quant: the weight format every row ran ("" = read from the file)
  std::string engine;         ///< --engine: overrides the file's engine backend
  std::optional<int64_t> tp;  ///< --tp for vLLM runs (default: the file's metadata, else 1)
  std::string today;          ///< YYYY-MM-DD, the date when no row records one
};

/// One measurement with the scenario it maps to and its predictions.
struct CalibrationRow {
  Measurement measurement;
  PreparedScenario prepared;
  std::string mapping;             ///< "llama-3-8b q4_k_m (file name; 8,030,261,248 parameters match)"
  std::vector<std::string> notes;  ///< assumptions made mapping it
  double predicted_before = 0;     ///< with the engine profile's factors, in the metric's unit
  double predicted_after = 0;      ///< with the fitted factors
  double error_before() const { return predicted_before / measurement.value - 1.0; }
  double error_after() const { return predicted_after / measurement.value - 1.0; }
};

/// A measurement that cannot be used, and why.
struct SkippedMeasurement {
  Measurement measurement;
  std::string reason;
};

/// `hardware` (and each row's PreparedScenario) points into the Catalog; the Catalog must outlive it.
struct MappedMeasurements {
  const HardwareProfile* hardware = nullptr;
  std::vector<CalibrationRow> rows;
  std::vector<SkippedMeasurement> skipped;
};

/// Maps every measurement onto a scenario on the requested device. Rows that
/// cannot be mapped are listed in `skipped` with the reason. Throws bad_input
/// for an unknown --hw/--model/--quant, when no row maps, or when the rows
/// measure more than one engine backend.
MappedMeasurements map_measurements(const Catalog& catalog, const std::vector<Measurement>& measurements,
                                    const CalibrationRequest& request);

/// The measured quantity as the model predicts it for a scenario (same unit as the measurement).
double predict_measurement(const Measurement& m, const Scenario& scenario);

/// One efficiency factor before and after the fit.
struct FactorChange {
  std::string name;  ///< "decode_bandwidth_efficiency", ...
  double before = 0;
  double after = 0;
  double lower = 0;  ///< physical bounds the fit kept it in
  double upper = 0;
  bool fitted = false;
  std::string bound;  ///< "lower" or "upper" when the fit ended on a bound, else ""
  std::string why;    ///< "fitted on 4 decode rows", "kept: no row depends on it"
};

/// `hardware` and `replaces` point into the Catalog; the Catalog must outlive it.
struct CalibrationFit {
  const HardwareProfile* hardware = nullptr;
  std::string engine_id;  ///< "llama.cpp:cuda"
  std::vector<CalibrationRow> rows;
  std::vector<SkippedMeasurement> skipped;
  std::vector<FactorChange> factors;
  double median_abs_error_before = 0;
  double median_abs_error_after = 0;
  double max_abs_error_after = 0;         ///< the largest |error after| of a row
  std::size_t max_error_row = 0;          ///< that row's index in `rows`
  Calibration calibration;                ///< the overlay to write (fitted factors, provenance)
  const Calibration* replaces = nullptr;  ///< an earlier calibration of the same device and backend, if loaded
  std::vector<std::string> notes;
};

/// Fits the factors the rows determine: decode bandwidth efficiency from rows
/// that depend on it (llama-bench tg, vLLM TPOT), prefill compute efficiency
/// likewise (pp, TTFT), the per-layer overhead only with three or more decode
/// rows over models of clearly different sizes, and with rows of two or more weight
/// formats the per-format multiplier of each format beside the one with the most rows
/// (engine.hpp, QuantEfficiency). Minimizes the sum of squared
/// log errors, each factor held within physical bounds. Pure.
CalibrationFit fit_calibration(const Catalog& catalog, MappedMeasurements mapped, const CalibrationRequest& request);

/// Median of |x| (0 for an empty list).
double median_abs(std::vector<double> values);

}  // namespace optadvisor
