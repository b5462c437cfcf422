// SPDX-License-Identifier: MIT
// `calibrate` output: what was mapped, measured against predicted before and
// after the fit, the factors, the skipped rows and the overlay written.
#include <algorithm>

#include <fmt/format.h>

#include "optadvisor/render/report_calibrate.hpp"
#include "base/table.hpp"
#include "base/units.hpp"

namespace optadvisor {
namespace {

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of("/\\");
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string value_text(MeasuredMetric metric, double v) {
  if (unit_of(metric) == "s") return format_seconds(v);
  return fmt::format("{} tok/s", format_sig3(v));
}

std::string percent(double fraction) { return fmt::format("{:+.1f}%", 100 * fraction); }

std::string factor_value(const std::string& name, double v) {
  return name.size() > 2 && name.compare(name.size() - 2, 2, "_s") == 0 ? format_seconds(v) : fmt::format("{:.4g}", v);
}

std::string row_name(const CalibrationRow& row) {
  return fmt::format("{} {} {}", row.prepared.scenario.model.id, row.prepared.quant->id, row.measurement.label);
}

std::string skipped_name(const SkippedMeasurement& s) {
  const Measurement& m = s.measurement;
  return fmt::format("{} #{} {}", base_name(m.file), m.index, m.label);
}

}  // namespace

nlohmann::json calibration_report_json(const CalibrationFit& fit, const std::string& path, bool written) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : fit.rows) {
    const Measurement& m = row.measurement;
    rows.push_back(
        {{"file", base_name(m.file)},
         {"index", m.index},
         {"label", m.label},
         {"model", row.prepared.scenario.model.id},
         {"quant", row.prepared.quant->id},
         {"mapping", row.mapping},
         {"metric", std::string(to_string(m.metric))},
         {"unit", std::string(unit_of(m.metric))},
         {"workload",
          {{"batch", m.batch}, {"prompt_tokens", m.prompt_tokens}, {"gen_tokens", m.gen_tokens}, {"depth_tokens", m.depth_tokens}}},
         {"measured", m.value},
         {"predicted_before", row.predicted_before},
         {"predicted_after", row.predicted_after},
         {"error_before", row.error_before()},
         {"error_after", row.error_after()},
         {"notes", row.notes}});
  }
  nlohmann::json skipped = nlohmann::json::array();
  for (const auto& s : fit.skipped)
    skipped.push_back(
        {{"file", base_name(s.measurement.file)}, {"index", s.measurement.index}, {"label", s.measurement.label}, {"reason", s.reason}});
  nlohmann::json factors = nlohmann::json::array();
  for (const auto& f : fit.factors)
    factors.push_back({{"name", f.name},
                       {"before", f.before},
                       {"after", f.after},
                       {"fitted", f.fitted},
                       {"lower", f.lower},
                       {"upper", f.upper},
                       {"bound", f.bound.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.bound)},
                       {"why", f.why}});
  return {{"schema_version", kSchemaVersion},
          {"hardware", {{"id", fit.hardware->id}, {"name", fit.hardware->name}}},
          {"engine", fit.engine_id},
          {"measurements", rows},
          {"skipped", skipped},
          {"median_abs_error_before", fit.median_abs_error_before},
          {"median_abs_error_after", fit.median_abs_error_after},
          {"max_abs_error_after", fit.max_abs_error_after},
          {"factors", factors},
          {"calibration", nlohmann::json::parse(to_json(fit.calibration).dump())},
          {"replaces", fit.replaces ? nlohmann::json(fit.replaces->origin) : nlohmann::json(nullptr)},
          {"path", path},
          {"written", written},
          {"notes", fit.notes}};
}

std::string render_calibration(const CalibrationFit& fit, const std::string& path, bool written, OutputFormat format, const Style& style) {
  if (format == OutputFormat::kJson) return calibration_report_json(fit, path, written).dump(2) + "\n";
  const bool md = format == OutputFormat::kMarkdown;
  const Calibration& cal = fit.calibration;
  using A = Table::Align;
  auto heading = [&](const std::string& h) { return md ? "\n## " + h + "\n\n" : "\n" + style.bold(h) + "\n"; };
  std::string out;
  const std::string title = fmt::format("Calibration of {} on {} ({})", fit.engine_id, fit.hardware->name, fit.hardware->id);
  out += md ? "# " + title + "\n\n" : style.bold(title) + "\n";
  std::string tools;
  for (const auto& t : cal.tools) tools += (tools.empty() ? "" : ", ") + t.name + (t.version.empty() ? "" : " " + t.version);
  out += fmt::format("{} measurement{} from {}, {}{}{}\n", fit.rows.size(), fit.rows.size() == 1 ? "" : "s", cal.source_file, cal.date,
                     tools.empty() ? "" : ", " + tools, cal.device_info.empty() ? "" : ", on " + cal.device_info);
  // How each distinct model in the files was read.
  std::vector<std::string> mapped;
  for (const auto& row : fit.rows) {
    const std::string from = row.measurement.model_name.empty() ? row.measurement.model_desc : row.measurement.model_name;
    const std::string line = fmt::format("{} -> {}", from.empty() ? "(the file names no model)" : from, row.mapping);
    if (std::find(mapped.begin(), mapped.end(), line) == mapped.end()) mapped.push_back(line);
  }
  for (const auto& line : mapped) out += (md ? "- " : "  ") + line + "\n";
  std::vector<std::string> notes;
  for (const auto& row : fit.rows)
    for (const auto& n : row.notes)
      if (std::find(notes.begin(), notes.end(), n) == notes.end()) notes.push_back(n);
  for (const auto& n : notes) out += (md ? "- note: " : "  note: ") + n + "\n";

  out += heading("Measured against predicted");
  Table t({"MEASUREMENT", "MEASURED", "BEFORE", "AFTER", "ERROR BEFORE", "ERROR AFTER"},
          {A::kLeft, A::kRight, A::kRight, A::kRight, A::kRight, A::kRight});
  for (const auto& row : fit.rows) {
    const MeasuredMetric m = row.measurement.metric;
    t.add_row({row_name(row), value_text(m, row.measurement.value), value_text(m, row.predicted_before), value_text(m, row.predicted_after),
               percent(row.error_before()), percent(row.error_after())});
  }
  out += md ? t.to_markdown() + "\n" : t.to_text();
  out += fmt::format("median absolute error: {:.1f}% before, {:.1f}% after\n", 100 * fit.median_abs_error_before,
                     100 * fit.median_abs_error_after);
  if (fit.rows.size() > 1) {
    const CalibrationRow& worst = fit.rows.at(fit.max_error_row);
    out += fmt::format("largest error after the fit: {} ({})\n", percent(worst.error_after()), row_name(worst));
  }

  out += heading(fmt::format("Factors of {} on {}", fit.engine_id, fit.hardware->id));
  Table f({"FACTOR", "BEFORE", "AFTER", ""}, {A::kLeft, A::kRight, A::kRight, A::kLeft});
  for (const auto& c : fit.factors)
    f.add_row({c.name, factor_value(c.name, c.before), factor_value(c.name, c.after),
               c.why + (c.bound.empty() ? "" : fmt::format(" (at its {} bound)", c.bound))});
  out += md ? f.to_markdown() + "\n" : f.to_text();
  for (const auto& n : fit.notes) out += (md ? "- " : "! ") + n + "\n";

  if (!fit.skipped.empty()) {
    out += heading(fmt::format("Skipped ({})", fit.skipped.size()));
    for (const auto& s : fit.skipped) out += (md ? "- " : "  ") + skipped_name(s) + ": " + s.reason + "\n";
  }
  out += "\n";
  if (!written) {
    out += path.empty() ? std::string("dry run: nothing written\n")
                        : fmt::format("dry run: nothing written (the calibration would go to {})\n", path);
  } else {
    out += fmt::format("wrote {}\n", path);
    out += fmt::format("estimates for {} with {} use these factors when that directory is loaded (delete the file to undo)\n",
                       fit.hardware->id, fit.engine_id);
  }
  if (fit.replaces && fit.replaces->origin != path)
    out += fmt::format("{} the calibration in {}\n", written ? "supersedes" : "would supersede", fit.replaces->origin);
  return out;
}

}  // namespace optadvisor
