// SPDX-License-Identifier: MIT
#include "optadvisor/planner/compare.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/names.hpp"
#include "optadvisor/analysis/goals.hpp"
#include "base/units.hpp"

namespace optadvisor {

Efficiency efficiency(const HardwareProfile& hw, uint32_t gpus, double tokens_per_s) {
  Efficiency e;
  const double n = static_cast<double>(std::max<uint32_t>(gpus, 1));
  if (hw.power_watts && *hw.power_watts > 0) {
    e.power_watts = *hw.power_watts * n;
    e.tokens_per_joule = tokens_per_s / *e.power_watts;
  }
  if (hw.price_usd && *hw.price_usd > 0) {
    e.price_usd = *hw.price_usd * n;
    e.tokens_per_s_per_kusd = tokens_per_s / (*e.price_usd / 1000.0);
  }
  return e;
}

std::string_view to_string(CompareAxis axis) {
  switch (axis) {
    case CompareAxis::kHardware: return "hardware";
    case CompareAxis::kQuant: return "quant";
    case CompareAxis::kEngine: return "engine";
  }
  return "hardware";
}

std::string_view to_string(CompareSort sort) {
  switch (sort) {
    case CompareSort::kGiven: return "given";
    case CompareSort::kTtft: return "ttft";
    case CompareSort::kDecode: return "decode";
    case CompareSort::kThroughput: return "throughput";
    case CompareSort::kPerJoule: return "per-joule";
    case CompareSort::kPerDollar: return "per-dollar";
  }
  return "given";
}

std::optional<CompareSort> compare_sort_from_string(std::string_view s) {
  for (CompareSort c : {CompareSort::kGiven, CompareSort::kTtft, CompareSort::kDecode, CompareSort::kThroughput, CompareSort::kPerJoule,
                        CompareSort::kPerDollar})
    if (to_string(c) == s) return c;
  return std::nullopt;
}

std::string_view to_string(CandidateStatus status) {
  switch (status) {
    case CandidateStatus::kFits: return "fits";
    case CandidateStatus::kOffloaded: return "offloaded";
    case CandidateStatus::kDoesNotFit: return "does-not-fit";
    case CandidateStatus::kUnavailable: return "unavailable";
  }
  return "unavailable";
}

std::string_view column_key(CompareColumn column) {
  switch (column) {
    case CompareColumn::kHeadroom: return "memory_headroom_bytes";
    case CompareColumn::kTtft: return "ttft_s";
    case CompareColumn::kDecodePerSequence: return "decode_tokens_per_s_per_sequence";
    case CompareColumn::kDecode: return "decode_tokens_per_s";
    case CompareColumn::kThroughput: return "serving_tokens_per_s";
    case CompareColumn::kPerJoule: return "tokens_per_joule";
    case CompareColumn::kPerDollar: return "tokens_per_s_per_kusd";
  }
  return "";
}

const std::vector<CompareColumn>& all_compare_columns() {
  static const std::vector<CompareColumn> columns = {
      CompareColumn::kHeadroom,   CompareColumn::kTtft,     CompareColumn::kDecodePerSequence, CompareColumn::kDecode,
      CompareColumn::kThroughput, CompareColumn::kPerJoule, CompareColumn::kPerDollar};
  return columns;
}

bool higher_is_better(CompareColumn column) { return column != CompareColumn::kTtft; }

std::optional<double> CompareRow::column(CompareColumn c) const {
  if (!runs()) return std::nullopt;
  const Workload& w = prepared->scenario.workload;
  switch (c) {
    case CompareColumn::kHeadroom: return analysis.memory.limit_bytes - analysis.memory.total_bytes;
    case CompareColumn::kTtft:
      if (w.prompt_tokens == 0) return std::nullopt;
      return analysis.prefill.time_s;
    case CompareColumn::kDecodePerSequence:
      if (w.gen_tokens == 0) return std::nullopt;
      return analysis.decode.tokens_per_s_per_sequence;
    case CompareColumn::kDecode:
      if (w.gen_tokens == 0) return std::nullopt;
      return analysis.decode.tokens_per_s;
    case CompareColumn::kThroughput: return serving_tokens_per_s;
    case CompareColumn::kPerJoule: return efficiency.tokens_per_joule;
    case CompareColumn::kPerDollar: return efficiency.tokens_per_s_per_kusd;
  }
  return std::nullopt;
}

void check_engine_name(const Catalog& catalog, const std::string& name) {
  const EngineProfile& engine = catalog.resolve_engine(name);  // unknown engine: bad_input with suggestions
  const auto colon = name.find(':');
  if (colon == std::string::npos) return;
  const std::string backend = name.substr(colon + 1);
  // A backend is known when the engine's profile has it or some device lists it.
  std::vector<std::string> known;
  for (const auto& [id, profile] : engine.backends)
    if (id != "default") known.push_back(engine.id + ":" + id);
  for (const auto& hw : catalog.hardware())
    for (const auto& e : hw.engines)
      if (e.rfind(engine.id + ":", 0) == 0 && std::find(known.begin(), known.end(), e) == known.end()) known.push_back(e);
  const std::string wanted = engine.id + ":" + backend;
  if (std::find(known.begin(), known.end(), wanted) != known.end()) return;
  std::sort(known.begin(), known.end());
  const auto close = closest_names(wanted, known);
  std::string hint = known.empty() ? fmt::format("'{}' has no backends to choose from; pass --engine {}", engine.id, engine.id)
                                   : fmt::format("backends: {}", fmt::join(known, ", "));
  if (!close.empty()) hint = fmt::format("did you mean '{}'? ({})", close.front(), hint);
  throw bad_input(fmt::format("unknown backend '{}' for engine '{}'", backend, engine.id), hint);
}

namespace {

/// A device entry of --hw: "m4-max-40c" or "m4-max-40c:64GB" (one of the sizes the part is sold in).
struct DeviceEntry {
  std::string hardware;
  std::string memory;  ///< "" = the profile's own size
};

DeviceEntry device_entry(const std::string& value) {
  const auto colon = value.rfind(':');
  if (colon == std::string::npos) return {value, {}};
  return {value.substr(0, colon), value.substr(colon + 1)};
}

void check_device(const Catalog& catalog, const std::string& value) {
  const DeviceEntry entry = device_entry(value);
  if (entry.hardware.empty() || (value.back() == ':'))
    throw bad_input(fmt::format("--hw entry '{}' is not a device or device:size", value), "e.g. m4-max-40c or m4-max-40c:64GB");
  const HardwareProfile& hw = catalog.resolve_hardware(entry.hardware);
  if (entry.memory.empty()) return;
  ScenarioRequest sized;
  sized.memory = entry.memory;
  std::vector<std::string> notes;
  device_as_requested(hw, sized, notes);  // a size the part is not sold in: bad_input listing the sizes it is
}

void check_value(const Catalog& catalog, CompareAxis axis, const std::string& value) {
  if (value.empty()) throw bad_input(fmt::format("an empty {} in the list", to_string(axis)), "separate values with single commas");
  switch (axis) {
    case CompareAxis::kHardware: check_device(catalog, value); break;
    case CompareAxis::kQuant: catalog.quant().resolve(value); break;
    case CompareAxis::kEngine: check_engine_name(catalog, value); break;
  }
}

ScenarioRequest with_value(ScenarioRequest r, CompareAxis axis, const std::string& value) {
  switch (axis) {
    case CompareAxis::kHardware: {
      DeviceEntry entry = device_entry(value);
      r.hardware = std::move(entry.hardware);
      if (!entry.memory.empty()) r.memory = std::move(entry.memory);
      break;
    }
    case CompareAxis::kQuant: r.quant = value; break;
    case CompareAxis::kEngine: r.engine = value; break;
  }
  return r;
}

void evaluate(const Catalog& catalog, const ResolvedModel& model, CompareRow& row) {
  row.prepared = prepare_scenario(catalog, row.request, model);
  const PreparedScenario& ps = *row.prepared;
  row.analysis = analyze(ps.scenario);
  const MemoryBreakdown& m = row.analysis.memory;
  row.serving_tokens_per_s = goal_metric(Goal::kThroughput, row.analysis);
  row.efficiency = efficiency(*ps.scenario.hardware, ps.scenario.workload.total_gpus(), row.serving_tokens_per_s);
  if (m.fits) {
    row.status = CandidateStatus::kFits;
    // A server that runs fewer sequences than asked (its KV pool is full) is compared at that batch: say so.
    if (row.analysis.batch < row.analysis.batch_asked)
      row.reason = fmt::format("runs {} of the {} sequences at a time (its KV pool is full); its figures are at batch {}",
                               row.analysis.batch, row.analysis.batch_asked, row.analysis.batch);
  } else if (m.offloaded_layers > 0) {
    row.status = CandidateStatus::kOffloaded;
    row.reason = fmt::format("{} of {} layers stay in host memory", m.offloaded_layers, m.total_layers);
  } else {
    row.status = CandidateStatus::kDoesNotFit;
    row.reason = fmt::format("does not fit: needs {} per device, {} may use {}", format_gb(m.total_bytes), ps.scenario.engine.engine->id,
                             format_gb(m.limit_bytes));
  }
}

void mark_best(std::vector<CompareRow>& rows) {
  // Among the rows that fit: a configuration that spills layers to host
  // memory is shown, but is no one's recommendation.
  for (CompareColumn c : all_compare_columns()) {
    std::optional<double> best;
    for (const auto& row : rows) {
      if (row.status != CandidateStatus::kFits) continue;
      const auto v = row.column(c);
      if (!v || !std::isfinite(*v)) continue;
      if (!best || (higher_is_better(c) ? *v > *best : *v < *best)) best = v;
    }
    if (!best) continue;
    for (auto& row : rows)
      if (row.status == CandidateStatus::kFits && row.column(c) == best) row.best.push_back(c);
  }
}

std::optional<CompareColumn> sort_column(CompareSort sort) {
  switch (sort) {
    case CompareSort::kGiven: return std::nullopt;
    case CompareSort::kTtft: return CompareColumn::kTtft;
    case CompareSort::kDecode: return CompareColumn::kDecodePerSequence;
    case CompareSort::kThroughput: return CompareColumn::kThroughput;
    case CompareSort::kPerJoule: return CompareColumn::kPerJoule;
    case CompareSort::kPerDollar: return CompareColumn::kPerDollar;
  }
  return std::nullopt;
}

}  // namespace

Comparison compare(const Catalog& catalog, const ResolvedModel& model, const CompareRequest& request) {
  if (request.values.empty()) throw bad_input(fmt::format("no {} to compare", to_string(request.axis)));
  // Every name first, so that a typo fails before any work and prints nothing.
  for (const auto& v : request.values) check_value(catalog, request.axis, v);
  const ScenarioRequest& base = request.base;
  if (request.axis != CompareAxis::kHardware) {
    if (base.hardware.empty()) throw bad_input("no hardware given", "pass --hw NAME, or several: --hw rtx4090,h100");
    catalog.resolve_hardware(base.hardware);
  }
  if (request.axis != CompareAxis::kQuant && !base.quant.empty()) catalog.quant().resolve(base.quant);
  if (request.axis != CompareAxis::kEngine && !base.engine.empty()) check_engine_name(catalog, base.engine);

  Comparison out;
  out.axis = request.axis;
  out.sort = request.sort;
  out.base = base;
  out.model = model;
  out.model.gguf_weights.reset();  // the per-tensor table is not part of a comparison
  out.model.computed_weights.reset();
  std::optional<Error> first_error;
  for (const auto& v : request.values) {
    CompareRow row;
    row.value = v;
    row.request = with_value(base, request.axis, v);
    try {
      evaluate(catalog, model, row);
    } catch (const Error& e) {
      if (e.code() != ExitCode::kBadInput) throw;
      // This candidate cannot be set up (an engine the device lacks, a format
      // the engine does not run); the others still compare.
      if (!first_error) first_error = e;
      row.prepared.reset();
      row.status = CandidateStatus::kUnavailable;
      row.reason = e.what();
    }
    out.rows.push_back(std::move(row));
  }
  const bool any = std::any_of(out.rows.begin(), out.rows.end(), [](const CompareRow& r) { return r.prepared.has_value(); });
  if (!any && first_error) throw *first_error;  // nothing could run: the request itself is wrong
  mark_best(out.rows);
  if (const auto column = sort_column(request.sort)) {
    const bool higher = higher_is_better(*column);
    std::stable_sort(out.rows.begin(), out.rows.end(), [&](const CompareRow& a, const CompareRow& b) {
      const auto x = a.column(*column);
      const auto y = b.column(*column);
      if (!x || !y) return x.has_value() && !y.has_value();  // rows without the figure go last
      return higher ? *x > *y : *x < *y;
    });
  }
  return out;
}

}  // namespace optadvisor
