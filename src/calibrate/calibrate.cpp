// SPDX-License-Identifier: MIT
// Mapping measurements to scenarios and fitting an engine backend's
// efficiency factors to them. The fit minimizes the absolute log errors by
// reweighted, bounded Levenberg-Marquardt (each factor in log space, the
// overhead in microseconds), so a factor the rows determine is recovered
// exactly when the rows were made by the model itself.
#include "optadvisor/calibrate/calibrate.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "optadvisor/catalog/model.hpp"
#include "base/names.hpp"
#include "base/strings.hpp"

namespace optadvisor {
namespace {

/// Whether `engine` (an id, optionally with ":backend") loads whatever weight format each file
/// holds (EngineProfile::formats_per_file); false for a name the catalog does not know, which
/// prepare_scenario then reports.
bool formats_per_file(const Catalog& catalog, const std::string& engine) {
  try {
    return catalog.resolve_engine(engine).formats_per_file;
  } catch (const Error&) {
    return false;
  }
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_separator(char c) { return c == '-' || c == '_' || c == ' '; }

/// The part of a model name after its organisation or directory: "meta-llama/Llama-3.1-8B" -> "Llama-3.1-8B".
std::string base_name(const std::string& name) {
  const auto slash = name.find_last_of("/\\");
  return slash == std::string::npos ? name : name.substr(slash + 1);
}

/// Spellings of a model name to look up, longest first: every prefix ending at
/// a separator, from the start and from the second word ("Meta-Llama-3-8B-Instruct-Q4_K_M"
/// gives "Meta-Llama-3-8B-Instruct", ..., "Llama-3-8B-Instruct", ...).
std::vector<std::string> name_candidates(const std::string& full) {
  const std::string name = base_name(full);
  std::vector<std::size_t> starts = {0};
  for (std::size_t i = 0; i < name.size(); ++i)
    if (is_separator(name[i])) {
      starts.push_back(i + 1);
      break;
    }
  std::vector<std::string> out;
  for (std::size_t start : starts) {
    std::vector<std::size_t> ends = {name.size()};
    for (std::size_t i = name.size(); i-- > start;)
      if (is_separator(name[i]) && i > start) ends.push_back(i);
    for (std::size_t end : ends) out.push_back(name.substr(start, end - start));
  }
  return out;
}

/// A quant id named in a file or model name: "Q4_K_M" in "Llama-3-8B-Instruct-Q4_K_M",
/// "FP8" in "Llama-3.1-8B-Instruct-FP8-dynamic". The longest match wins.
std::string quant_in_name(const QuantDb& quant, const std::string& full) {
  const std::string name = base_name(full);
  static const std::map<std::string, std::string> kSpellings = {
      {"fp16", "f16"}, {"awq", "awq-int4"}, {"gptq", "gptq-int4"}, {"fp32", "fp32"}, {"f32", "fp32"}};
  auto lookup = [&](const std::string& token) -> std::string {
    if (token.empty()) return {};
    if (const QuantFormat* f = quant.find(token)) return f->id;
    if (auto it = kSpellings.find(lower(token)); it != kSpellings.end()) return it->second;
    return {};
  };
  std::string best;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (i != 0 && !is_separator(name[i - 1])) continue;
    const std::string suffix = name.substr(i);
    std::string found = lookup(suffix);
    if (found.empty()) found = lookup(suffix.substr(0, suffix.find('-')));
    if (found.size() > best.size()) best = found;
  }
  return best;
}

struct ModelMatch {
  const ModelSpec* spec = nullptr;
  std::string how;
  std::string problem;
};

std::string with_commas(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

class ModelMatcher {
 public:
  explicit ModelMatcher(const Catalog& catalog) : catalog_(catalog) {}

  uint64_t params_of(const ModelSpec& spec) {
    auto it = params_.find(spec.id);
    if (it == params_.end()) it = params_.emplace(spec.id, parameter_count(spec)).first;
    return it->second;
  }

  /// The preset a row ran: by its name (confirmed by the parameter count when
  /// the file records it), else by parameter count alone when one preset matches.
  ModelMatch match(const Measurement& m) {
    const double params = static_cast<double>(m.model_params);
    auto params_agree = [&](const ModelSpec& s, double tolerance) {
      return params <= 0 || std::fabs(static_cast<double>(params_of(s)) / params - 1.0) <= tolerance;
    };
    std::string rejected;
    if (!m.model_name.empty()) {
      for (const auto& candidate : name_candidates(m.model_name)) {
        auto found = catalog_.find_model(candidate);
        if (!found) continue;
        const ModelSpec& spec = catalog_.resolve_model(found->id);
        if (params_agree(spec, 0.02)) {
          std::string how = m.tool == "vllm" ? "model id" : "file name";
          if (params > 0) how += fmt::format("; {} parameters match", with_commas(m.model_params));
          return {&spec, how, {}};
        }
        if (rejected.empty())
          rejected = fmt::format("'{}' names {}, but that has {} parameters, not {}", candidate, spec.id, with_commas(params_of(spec)),
                                 with_commas(m.model_params));
      }
    }
    if (params > 0) {
      std::vector<const ModelSpec*> same;
      for (const auto& spec : catalog_.models())
        if (params_agree(spec, 0.005)) same.push_back(&spec);
      if (same.size() == 1) return {same.front(), fmt::format("{} parameters", with_commas(m.model_params)), {}};
      if (same.size() > 1) {
        std::string ids;
        for (const auto* s : same) ids += (ids.empty() ? "" : ", ") + s->id;
        return {nullptr,
                {},
                fmt::format("'{}' ({} parameters) could be any of {}; pass --model", m.model_desc.empty() ? m.model_name : m.model_desc,
                            with_commas(m.model_params), ids)};
      }
    }
    const std::string what = !m.model_name.empty() ? m.model_name : m.model_desc;
    if (what.empty()) return {nullptr, {}, "the file does not name the model; pass --model"};
    return {nullptr,
            {},
            fmt::format("no model preset matches '{}'{}; pass --model (optadvisor models)", what,
                        rejected.empty() ? "" : " (" + rejected + ")")};
  }

 private:
  const Catalog& catalog_;
  std::map<std::string, uint64_t> params_;
};

/// The weight format of a row: llama-bench's file type, else a name in the file name.
std::string match_quant(const Catalog& catalog, const Measurement& m, std::string& how) {
  if (!m.quant_hint.empty()) {
    for (const auto& f : catalog.quant().formats())
      if (f.llama_ftype == m.quant_hint) {
        how = "file type";
        return f.id;
      }
  }
  if (std::string q = quant_in_name(catalog.quant(), m.model_name); !q.empty()) {
    how = m.tool == "vllm" ? "model id" : "file name";
    return q;
  }
  return {};
}

}  // namespace

double median_abs(std::vector<double> values) {
  if (values.empty()) return 0;
  for (auto& v : values) v = std::fabs(v);
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double predict_measurement(const Measurement& m, const Scenario& s) {
  const Analysis a = analyze(s);
  const double gen = static_cast<double>(m.gen_tokens);
  const double new_prompt = static_cast<double>(m.prompt_tokens - std::min(m.prompt_tokens, m.depth_tokens));
  const double batch = static_cast<double>(std::max<uint64_t>(a.batch, 1));
  // A serving run's cycle: every sequence's prefill, then its decode steps (the
  // scenario was built with the measurement's gen tokens, in map_measurements).
  const double cycle = a.request_latency_s;
  auto ttft = [&] {
    // A request's own prompt, prefilled as it arrives; with other requests in
    // flight it first waits for the running step and shares its own step with
    // their decodes: about one decode step more (queueing beyond that is not modelled).
    Scenario one = s;
    one.workload.batch = 1;
    one.workload.batch_max = false;
    return analyze(one).prefill.time_s + (batch > 1 ? a.decode.time_s : 0.0);
  };
  switch (m.metric) {
    case MeasuredMetric::kPrefillTokensPerS: return a.prefill.time_s > 0 ? new_prompt / a.prefill.time_s : 0;
    case MeasuredMetric::kDecodeTokensPerS: return a.decode.tokens_per_s_per_sequence;
    case MeasuredMetric::kPromptGenTokensPerS: return cycle > 0 ? (new_prompt + gen) / cycle : 0;
    case MeasuredMetric::kOutputTokensPerS: return cycle > 0 ? batch * gen / cycle : 0;
    case MeasuredMetric::kLatencyS: return cycle;
    case MeasuredMetric::kTtftS: return ttft();
    case MeasuredMetric::kTpotS: return gen > 1 ? std::max(cycle - ttft(), 0.0) / (gen - 1) : a.decode.time_s;
  }
  return 0;
}

namespace {

/// What every row of one mapping shares: the catalog, the device, the request and its overrides.
struct MappingContext {
  const Catalog& catalog;
  const HardwareProfile& hw;
  const CalibrationRequest& request;
  const ModelSpec* model_override;
  const QuantFormat* quant_override;
  ModelMatcher& matcher;
};

/// Model: --model (noted where the file's parameter count differs by more than 2%), else matched from the file.
ModelMatch row_model(const MappingContext& ctx, const Measurement& m, std::vector<std::string>& notes) {
  const ModelSpec* spec = ctx.model_override;
  if (!spec) return ctx.matcher.match(m);
  if (m.model_params > 0) {
    const double ratio = static_cast<double>(ctx.matcher.params_of(*spec)) / static_cast<double>(m.model_params);
    if (std::fabs(ratio - 1) > 0.02)
      notes.push_back(fmt::format("--model {} has {} parameters, the file's model {}", spec->id, with_commas(ctx.matcher.params_of(*spec)),
                                  with_commas(m.model_params)));
  }
  return {spec, "--model", {}};
}

/// Workload: the run the measurement describes, as a scenario request.
ScenarioRequest row_request(const MappingContext& ctx, const Measurement& m, const ModelSpec& spec, const std::string& quant,
                            const std::string& engine) {
  ScenarioRequest r;
  r.hardware = ctx.hw.id;
  r.model.preset = spec.id;
  r.quant = quant;
  r.engine = engine;
  r.batch = std::to_string(std::max<uint64_t>(m.batch, 1));
  r.prompt_tokens = static_cast<int64_t>(m.prompt_tokens);
  r.gen_tokens = static_cast<int64_t>(m.gen_tokens);
  r.ubatch_tokens = static_cast<int64_t>(m.ubatch_tokens);
  r.kv_dtype = m.kv_dtype;
  r.flash_attention = m.flash_attention;
  r.tp = ctx.request.tp.value_or(m.tp);
  r.gpus = r.tp;
  // llama-bench -d: the depth is already in the KV cache; only n_prompt is prefilled.
  if (m.depth_tokens > 0 && m.prompt_tokens > m.depth_tokens)
    r.prefix_cached_fraction = (static_cast<double>(m.depth_tokens) + 0.5) / static_cast<double>(m.prompt_tokens);
  return r;
}

/// Checks a prepared row against what the run must have been: why it cannot be used, else
/// nullopt with its mapping and notes filled in.
std::optional<std::string> check_prepared(const MappingContext& ctx, const ModelSpec& spec, bool quant_assumed, const std::string& model_how,
                                          const std::string& quant_how, CalibrationRow& row) {
  const Measurement& m = row.measurement;
  const Scenario& s = row.prepared.scenario;
  if (quant_assumed) row.notes.push_back(fmt::format("weights assumed {} (the file does not say; pass --quant)", s.weights.quant_id));
  const int64_t layers = static_cast<int64_t>(spec.num_hidden_layers);
  if (m.gpu_layers > 0 && m.gpu_layers < layers && m.gpu_layers < 99)
    return fmt::format("n_gpu_layers {} of {}'s {} layers: partial offload is not calibrated", m.gpu_layers, spec.id, layers);
  const Analysis a = analyze(s);
  if (!a.memory.fits)
    return fmt::format("{} {} needs {:.1f} GB on {} by the model's estimate, more than fits; the run must have differed", spec.id,
                       s.weights.quant_id, a.memory.total_bytes / 1e9, ctx.hw.id);
  row.mapping = fmt::format("{} {} ({}; {})", spec.id, row.prepared.quant->id, model_how, quant_how);
  if (m.model_size_bytes > 0) {
    const double ratio = s.weights.total_bytes / static_cast<double>(m.model_size_bytes);
    if (std::fabs(ratio - 1) > 0.1)
      row.notes.push_back(fmt::format("the file holds {:.2f} GB of weights, the catalog's {} {:.2f} GB; predictions use the catalog's",
                                      static_cast<double>(m.model_size_bytes) / 1e9, spec.id, s.weights.total_bytes / 1e9));
  }
  return std::nullopt;
}

/// Maps one measurement onto a prepared scenario in `row`: why it cannot be used, else nullopt.
std::optional<std::string> map_row(const MappingContext& ctx, const Measurement& m, CalibrationRow& row) {
  if (!m.unusable.empty()) return m.unusable;
  row.measurement = m;
  row.notes = m.notes;
  const std::string engine = ctx.request.engine.empty() ? m.engine : ctx.request.engine;
  if (engine.empty()) return "the file does not say which engine ran; pass --engine";
  // Model.
  const ModelMatch model = row_model(ctx, m, row.notes);
  if (!model.spec) return model.problem;
  const ModelSpec* spec = model.spec;
  // Weight format.
  std::string quant_how = ctx.quant_override ? "--quant" : "assumed";
  std::string quant = ctx.quant_override ? ctx.quant_override->id : match_quant(ctx.catalog, m, quant_how);
  if (quant.empty() && formats_per_file(ctx.catalog, engine))
    return fmt::format("the weight format of '{}' is not recorded; pass --quant", m.model_desc.empty() ? m.model_name : m.model_desc);
  try {
    row.prepared = prepare_scenario(ctx.catalog, row_request(ctx, m, *spec, quant, engine));
  } catch (const Error& e) {
    return std::string(e.what());
  }
  return check_prepared(ctx, *spec, quant.empty(), model.how, quant_how, row);
}

/// Refuses a mapping with no usable row, or with rows of several engine backends.
void check_mapped(const MappedMeasurements& out, std::size_t measurements, const HardwareProfile& hw) {
  if (out.rows.empty()) {
    std::vector<std::string> reasons;
    for (const auto& s : out.skipped)
      if (std::find(reasons.begin(), reasons.end(), s.reason) == reasons.end()) reasons.push_back(s.reason);
    if (reasons.size() > 2) reasons.resize(2);
    throw bad_input(fmt::format("none of the {} measurements can be used on {}", measurements, hw.id), join(reasons, "; "));
  }
  std::set<std::string> engines;
  for (const auto& row : out.rows) engines.insert(row.prepared.scenario.engine.id());
  if (engines.size() > 1)
    throw bad_input(fmt::format("the measurements ran on several engines ({}); a calibration is for one engine backend",
                                join(std::vector<std::string>(engines.begin(), engines.end()))),
                    "calibrate each separately, choosing with --engine");
}

}  // namespace

MappedMeasurements map_measurements(const Catalog& catalog, const std::vector<Measurement>& measurements,
                                    const CalibrationRequest& request) {
  if (request.hardware.empty())
    throw bad_input("no hardware given", "pass --hw NAME (optadvisor hw list): the device the results were measured on");
  MappedMeasurements out;
  out.hardware = &catalog.resolve_hardware(request.hardware);
  const HardwareProfile& hw = *out.hardware;
  const ModelSpec* model_override = request.model.empty() ? nullptr : &catalog.resolve_model(request.model);
  const QuantFormat* quant_override = request.quant.empty() ? nullptr : &catalog.quant().resolve(request.quant);
  if (!request.engine.empty()) catalog.resolve_engine(request.engine);
  if (request.tp && *request.tp < 1) throw bad_input(fmt::format("--tp must be at least 1 (got {})", *request.tp));
  if (measurements.empty()) throw bad_input("the results files hold no measurements");

  ModelMatcher matcher(catalog);
  const MappingContext ctx{catalog, hw, request, model_override, quant_override, matcher};
  for (const auto& m : measurements) {
    CalibrationRow row;
    if (std::optional<std::string> reason = map_row(ctx, m, row))
      out.skipped.push_back({m, std::move(*reason)});
    else
      out.rows.push_back(std::move(row));
  }
  check_mapped(out, measurements.size(), hw);
  return out;
}

namespace {

/// One factor the fit may move, in the space it is searched in: log for
/// efficiencies (a ratio is as likely to be off by x2 as by /2), microseconds
/// for overheads.
struct Param {
  std::string name;
  double* value = nullptr;
  double lower = 0, upper = 0;
  bool log_space = true;
  double to_u(double v) const { return log_space ? std::log(v) : v * 1e6; }
  double from_u(double u) const { return log_space ? std::exp(u) : u / 1e6; }
  double u_lower() const { return to_u(lower); }
  double u_upper() const { return to_u(upper); }
};

/// Bounds of a fitted per-format multiplier: the engine schema's (above 0; at most 1.5 in decode,
/// 4 in prefill, where a 16-bit format may take another kernel path than the quantized reference),
/// with a floor that keeps a format at least a twentieth as fast as the reference one.
constexpr double kMultiplierLower = 0.05;
constexpr double kDecodeMultiplierUpper = 1.5;
constexpr double kPrefillMultiplierUpper = 4.0;

/// The weight formats of the rows that depend on one factor, in row order, with their counts.
struct FormatRows {
  std::vector<std::string> order;
  std::map<std::string, std::size_t> rows;
  std::map<std::string, std::pair<double, double>> weights_bytes;  ///< smallest and largest model
  void add(const std::string& quant_id, double model_bytes) {
    if (rows[quant_id]++ == 0) {
      order.push_back(quant_id);
      weights_bytes[quant_id] = {model_bytes, model_bytes};
    }
    auto& [smallest, largest] = weights_bytes[quant_id];
    smallest = std::min(smallest, model_bytes);
    largest = std::max(largest, model_bytes);
  }
  /// The largest ratio of model sizes within one format (0 without rows).
  double widest_spread() const {
    double out = 0;
    for (const auto& [q, w] : weights_bytes)
      if (w.first > 0) out = std::max(out, w.second / w.first);
    return out;
  }
  /// The format with the most rows; the first of equals in row order.
  std::string reference() const {
    std::string best;
    for (const auto& q : order)
      if (best.empty() || rows.at(q) > rows.at(best)) best = q;
    return best;
  }
};

/// Residuals ln(predicted / measured), one per row, times the square root of the row's weight.
std::vector<double> residuals(const std::vector<CalibrationRow>& rows, const std::vector<double>& weights) {
  std::vector<double> r;
  r.reserve(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    r.push_back(std::sqrt(weights[i]) *
                std::log(std::max(predict_measurement(row.measurement, row.prepared.scenario), 1e-30) / row.measurement.value));
  }
  return r;
}

double cost_of(const std::vector<double>& r) {
  double c = 0;
  for (double x : r) c += x * x;
  return c;
}

/// Solves A x = b for a small dense system (Gaussian elimination with partial pivoting).
std::vector<double> solve(std::vector<std::vector<double>> a, std::vector<double> b) {
  const std::size_t n = b.size();
  for (std::size_t col = 0; col < n; ++col) {
    std::size_t pivot = col;
    for (std::size_t r = col + 1; r < n; ++r)
      if (std::fabs(a[r][col]) > std::fabs(a[pivot][col])) pivot = r;
    std::swap(a[col], a[pivot]);
    std::swap(b[col], b[pivot]);
    if (std::fabs(a[col][col]) < 1e-300) return std::vector<double>(n, 0.0);
    for (std::size_t r = col + 1; r < n; ++r) {
      const double k = a[r][col] / a[col][col];
      for (std::size_t c = col; c < n; ++c) a[r][c] -= k * a[col][c];
      b[r] -= k * b[col];
    }
  }
  std::vector<double> x(n);
  for (std::size_t i = n; i-- > 0;) {
    double s = b[i];
    for (std::size_t c = i + 1; c < n; ++c) s -= a[i][c] * x[c];
    x[i] = s / a[i][i];
  }
  return x;
}

/// Levenberg-Marquardt on the free parameters, each kept inside its bounds:
/// minimizes the weighted sum of squared log errors.
void least_squares(const std::vector<Param*>& params, const std::vector<CalibrationRow>& rows, const std::vector<double>& weights) {
  if (params.empty()) return;
  const std::size_t k = params.size();
  auto set = [&](const std::vector<double>& u) {
    for (std::size_t i = 0; i < k; ++i) *params[i]->value = params[i]->from_u(std::clamp(u[i], params[i]->u_lower(), params[i]->u_upper()));
  };
  std::vector<double> u(k);
  for (std::size_t i = 0; i < k; ++i) u[i] = std::clamp(params[i]->to_u(*params[i]->value), params[i]->u_lower(), params[i]->u_upper());
  set(u);
  std::vector<double> r = residuals(rows, weights);
  double cost = cost_of(r);
  double lambda = 1e-3;
  for (int iteration = 0; iteration < 200; ++iteration) {
    // Jacobian by forward differences, stepping inward at an upper bound.
    std::vector<std::vector<double>> jac(rows.size(), std::vector<double>(k));
    for (std::size_t j = 0; j < k; ++j) {
      const double h = params[j]->log_space ? 1e-5 : 1e-3;  // 0.001% in log space; 1 ns for overheads
      std::vector<double> shifted = u;
      const double step = u[j] + h <= params[j]->u_upper() ? h : -h;
      shifted[j] += step;
      set(shifted);
      const std::vector<double> r2 = residuals(rows, weights);
      for (std::size_t i = 0; i < rows.size(); ++i) jac[i][j] = (r2[i] - r[i]) / step;
    }
    set(u);
    std::vector<std::vector<double>> jtj(k, std::vector<double>(k, 0.0));
    std::vector<double> jtr(k, 0.0);
    for (std::size_t i = 0; i < rows.size(); ++i)
      for (std::size_t a = 0; a < k; ++a) {
        jtr[a] += jac[i][a] * r[i];
        for (std::size_t b = 0; b < k; ++b) jtj[a][b] += jac[i][a] * jac[i][b];
      }
    bool improved = false;
    double largest_step = 0;
    while (lambda < 1e12) {
      auto damped = jtj;
      for (std::size_t a = 0; a < k; ++a) damped[a][a] += lambda * (jtj[a][a] + 1e-12);
      std::vector<double> minus_g(k);
      for (std::size_t a = 0; a < k; ++a) minus_g[a] = -jtr[a];
      const std::vector<double> delta = solve(damped, minus_g);
      std::vector<double> next(k);
      largest_step = 0;
      for (std::size_t a = 0; a < k; ++a) {
        next[a] = std::clamp(u[a] + delta[a], params[a]->u_lower(), params[a]->u_upper());
        largest_step = std::max(largest_step, std::fabs(next[a] - u[a]));
      }
      set(next);
      const std::vector<double> r_next = residuals(rows, weights);
      const double cost_next = cost_of(r_next);
      if (cost_next < cost) {
        const double gained = cost - cost_next;
        u = next, r = r_next, cost = cost_next;
        lambda = std::max(lambda / 3, 1e-9);
        improved = gained > 1e-18 * std::max(cost, 1e-30) && largest_step > 1e-12;
        break;
      }
      lambda *= 4;
    }
    set(u);
    if (!improved) break;
  }
}

/// Minimizes the sum of absolute log errors by iteratively reweighted least
/// squares: a row the model cannot describe (a long prompt without flash
/// attention, say) then moves the factors less than the rows it can.
void fit_absolute(const std::vector<Param*>& params, const std::vector<CalibrationRow>& rows) {
  std::vector<double> weights(rows.size(), 1.0);
  for (int round = 0; round < 40; ++round) {
    std::vector<double> before;
    for (const Param* p : params) before.push_back(p->to_u(*p->value));
    least_squares(params, rows, weights);
    const std::vector<double> r = residuals(rows, std::vector<double>(rows.size(), 1.0));
    for (std::size_t i = 0; i < rows.size(); ++i) weights[i] = 1.0 / std::max(std::fabs(r[i]), 1e-3);  // 0.1%: below that, all rows agree
    double moved = 0;
    for (std::size_t i = 0; i < params.size(); ++i) moved = std::max(moved, std::fabs(params[i]->to_u(*params[i]->value) - before[i]));
    if (round > 0 && moved < 1e-7) break;
  }
}

std::string factor_text(const std::string& name, double v) {
  return name.size() > 2 && name.compare(name.size() - 2, 2, "_s") == 0 ? fmt::format("{:.4g} s", v) : fmt::format("{:.4g}", v);
}

/// How strongly a row depends on a factor: d ln predicted / d ln factor, by a 1% step.
double elasticity(const Param& p, const CalibrationRow& row) {
  const double v = *p.value;
  const double base = predict_measurement(row.measurement, row.prepared.scenario);
  *p.value = v * 1.01;
  const double moved = predict_measurement(row.measurement, row.prepared.scenario);
  *p.value = v;
  return base > 0 && moved > 0 ? std::fabs(std::log(moved / base)) / std::log(1.01) : 0.0;
}

/// "lower" or "upper" when the fit left the factor at that bound, else "".
std::string at_bound(const Param& p) {
  const double span = p.u_upper() - p.u_lower();
  const double u = p.to_u(*p.value);
  return u - p.u_lower() <= 1e-6 * span ? std::string("lower") : p.u_upper() - u <= 1e-6 * span ? std::string("upper") : std::string();
}

/// The median errors before and after the fit, and the row left worst.
void summarize_errors(CalibrationFit& fit) {
  std::vector<double> before_errors, after_errors;
  for (std::size_t i = 0; i < fit.rows.size(); ++i) {
    const CalibrationRow& row = fit.rows[i];
    before_errors.push_back(row.error_before());
    after_errors.push_back(row.error_after());
    if (std::fabs(row.error_after()) > fit.max_abs_error_after) {
      fit.max_abs_error_after = std::fabs(row.error_after());
      fit.max_error_row = i;
    }
  }
  fit.median_abs_error_before = median_abs(before_errors);
  fit.median_abs_error_after = median_abs(after_errors);
}

/// Where the measurements came from: their files, the latest date (else today), the tools and the device.
void record_provenance(Calibration& cal, const std::vector<CalibrationRow>& rows, const std::string& today) {
  std::vector<std::string> files;
  std::string date;
  for (const auto& row : rows) {
    const std::string file = base_name(row.measurement.file);
    if (std::find(files.begin(), files.end(), file) == files.end()) files.push_back(file);
    date = std::max(date, row.measurement.date);
    bool known = false;
    for (const auto& t : cal.tools) known = known || (t.name == row.measurement.tool && t.version == row.measurement.tool_version);
    if (!known && !row.measurement.tool.empty()) cal.tools.push_back({row.measurement.tool, row.measurement.tool_version});
    if (cal.device_info.empty()) cal.device_info = row.measurement.device_info;
  }
  cal.source_file = join(files);
  cal.date = date.empty() ? today : date;
}

/// The earlier build of `backend` the measurements come from (llama.cpp before b3216, Metal
/// before b6469), with its number; null where they name none or the newest. A build that differs
/// only in its MoE prefill kernels counts as the newest: a calibration fits dense terms.
std::pair<const BackendBuild*, uint64_t> measured_build(const EngineProfile& engine, const BackendProfile& backend,
                                                        const std::vector<CalibrationRow>& rows) {
  for (const auto& row : rows) {
    if (row.measurement.tool != engine.id) continue;
    const std::string& version = row.measurement.tool_version;  // "b2869 (e849648)"
    const auto build = parse_build_number(version.substr(0, version.find(' ')));
    const BackendBuild* earlier = build ? backend.build_for(*build) : nullptr;
    if (earlier && !earlier->moe_prefill_only()) return {earlier, *build};
  }
  return {nullptr, 0};
}

/// Says so when the measurements come from a build the backend's earlier_builds cover: the shipped
/// predictions are the newest build's; the fit starts from that build's per-layer cost and format
/// multipliers, which the calibration records with what it fits, so the fitted factors describe
/// the user's build. (A calibration has no MoE dispatch term: the newest builds' stays.)
const BackendBuild* start_from_earlier_build(const EngineProfile& engine, BackendProfile& backend,
                                             const std::vector<CalibrationRow>& rows, std::vector<std::string>& notes) {
  const auto [earlier, build] = measured_build(engine, backend, rows);
  if (!earlier) return nullptr;
  notes.push_back(fmt::format("the measurements come from build b{}, before b{} ({}): BEFORE is the newest build's prediction "
                              "(estimate --engine {}@b{} models yours); the fitted factors describe your build",
                              build, earlier->until_build, earlier->change, engine.id, build));
  if (earlier->layer_overhead_s) backend.layer_overhead_s = *earlier->layer_overhead_s;
  for (const auto& [quant_id, qe] : earlier->quant_efficiency) backend.quant_efficiency[quant_id] = qe;
  return earlier;
}

/// Points every row at `engine` and `backend`; returns what each pointed at before.
std::vector<EngineChoice> point_rows_at(std::vector<CalibrationRow>& rows, const EngineProfile& engine, const BackendProfile& backend) {
  std::vector<EngineChoice> saved;
  for (auto& row : rows) {
    saved.push_back(row.prepared.scenario.engine);
    row.prepared.scenario.engine.engine = &engine;
    row.prepared.scenario.engine.backend = &backend;
  }
  return saved;
}

/// The efficiencies and the overhead the fit may move, within their physical bounds.
struct BackendParams {
  Param decode, prefill, layer;
};

/// Physical bounds: an efficiency is at most 1 after the engine's per-format
/// multiplier; an overhead is not negative and below a millisecond per layer.
BackendParams backend_params(const EngineProfile& engine, BackendProfile& backend, const std::vector<CalibrationRow>& rows) {
  double decode_multiplier = 1, prefill_multiplier = 1;
  for (const auto& row : rows) {
    const QuantEfficiency qe = engine.efficiency_for(backend, row.prepared.scenario.weights.quant_id);
    decode_multiplier = std::max(decode_multiplier, qe.decode);
    prefill_multiplier = std::max(prefill_multiplier, qe.prefill);
  }
  return {{"decode_bandwidth_efficiency", &backend.decode_bandwidth_efficiency, 0.01, std::min(1.0, 1.0 / decode_multiplier), true},
          {"prefill_compute_efficiency", &backend.prefill_compute_efficiency, 0.01, std::min(1.0, 1.0 / prefill_multiplier), true},
          {"layer_overhead_s", &backend.layer_overhead_s, 0.0, 1e-3, false}};
}

/// The rows that depend on the decode and on the prefill efficiency, with their weight formats.
struct Dependence {
  std::size_t decode_rows = 0, prefill_rows = 0;
  FormatRows decode_formats, prefill_formats;
};

Dependence dependence_of(const BackendParams& params, const std::vector<CalibrationRow>& rows) {
  constexpr double kDepends = 0.1;  // a row whose prediction moves less than 0.1% per 1% says little about the factor
  Dependence d;
  for (const auto& row : rows) {
    const std::string& quant_id = row.prepared.scenario.weights.quant_id;
    if (elasticity(params.decode, row) >= kDepends) {
      ++d.decode_rows;
      d.decode_formats.add(quant_id, row.prepared.scenario.weights.total_bytes);
    }
    if (elasticity(params.prefill, row) >= kDepends) {
      ++d.prefill_rows;
      d.prefill_formats.add(quant_id, row.prepared.scenario.weights.total_bytes);
    }
  }
  return d;
}

/// A per-format multiplier the fit moves: its format, which efficiency, its value before and its rows.
struct Multiplier {
  std::string quant_id;
  bool decode = true;
  double before = 0;
  std::size_t rows = 0;
};

/// Rows of several weight formats: the efficiency is fitted on the format with the most rows
/// (its multiplier kept, so the bound follows it alone) and each other format's multiplier on
/// its own rows. A format no row measures keeps the engine profile's multiplier.
struct FormatMultipliers {
  std::deque<Param> params;  // stable addresses: `free` points at them
  std::vector<Multiplier> info;

  void add(const FormatRows& formats, Param& efficiency, bool is_decode, const EngineProfile& engine, BackendProfile& backend) {
    if (formats.order.size() < 2) return;
    const std::string reference = formats.reference();
    const QuantEfficiency ref = engine.efficiency_for(backend, reference);
    efficiency.upper = std::min(1.0, 1.0 / (is_decode ? ref.decode : ref.prefill));
    for (const std::string& quant_id : formats.order) {
      if (quant_id == reference) continue;
      const QuantEfficiency shipped = engine.efficiency_for(backend, quant_id);
      QuantEfficiency& qe = backend.quant_efficiency.emplace(quant_id, shipped).first->second;
      double& value = is_decode ? qe.decode : qe.prefill;
      params.push_back({fmt::format("quant_efficiency.{}.{}", quant_id, is_decode ? "decode" : "prefill"), &value, kMultiplierLower,
                        is_decode ? kDecodeMultiplierUpper : kPrefillMultiplierUpper, true});
      info.push_back({quant_id, is_decode, value, formats.rows.at(quant_id)});
    }
  }
};

/// The factors the rows tell apart: each efficiency some row depends on, the layer overhead
/// where `fit_layer`, and every per-format multiplier.
std::vector<Param*> free_params(BackendParams& params, const Dependence& d, bool fit_layer, FormatMultipliers& multipliers) {
  std::vector<Param*> free;
  if (d.decode_rows > 0) free.push_back(&params.decode);
  if (d.prefill_rows > 0) free.push_back(&params.prefill);
  if (fit_layer) free.push_back(&params.layer);
  for (Param& m : multipliers.params) free.push_back(&m);
  return free;
}

/// Fits the free factors by their absolute log errors.
void fit_within_bounds(const std::vector<Param*>& free, const std::vector<CalibrationRow>& rows) {
  fit_absolute(free, rows);
  // A factor the fit pushed against a bound is fixed there, the others refitted.
  std::vector<Param*> inside;
  for (Param* p : free)
    if (at_bound(*p).empty()) inside.push_back(p);
  if (inside.size() != free.size()) fit_absolute(inside, rows);
}

/// Round to what the overlay stores, so the "after" column is what later estimates will print.
void round_to_stored(const std::vector<Param*>& free) {
  for (Param* p : free) {
    const double per_unit = p->log_space ? 1e4 : 1e7;  // 4 decimals; 0.1 us
    *p->value = std::clamp(std::round(*p->value * per_unit) / per_unit, p->lower, p->upper);
  }
}

/// One factor, fitted (noting a bound it ended on) or kept, and why.
void describe_factor(CalibrationFit& fit, const std::vector<Param*>& free, const Param& p, double old_value, std::size_t rows_used,
                     const char* kind, const std::string& kept_why) {
  FactorChange c{p.name, old_value, *p.value, p.lower, p.upper, false, {}, {}};
  c.fitted = std::find(free.begin(), free.end(), &p) != free.end();
  if (c.fitted) {
    c.bound = at_bound(p);
    c.why = fmt::format("fitted on {} {} row{}", rows_used, kind, rows_used == 1 ? "" : "s");
    if (!c.bound.empty()) {
      const std::string hit =
          fmt::format("{} at its {} bound {}", p.name, c.bound, factor_text(p.name, c.bound == "lower" ? p.lower : p.upper));
      fit.calibration.bounds_hit.push_back(hit);
      fit.notes.push_back(
          hit + ": the rows disagree in a way these factors cannot absorb; look at the rows with the largest errors after the fit");
    }
  } else {
    c.why = kept_why;
  }
  fit.factors.push_back(c);
}

/// The factors, fitted or kept, and why.
void describe_factors(CalibrationFit& fit, const std::vector<Param*>& free, const BackendParams& params, const BackendProfile& before,
                      const Dependence& d, const FormatMultipliers& multipliers) {
  describe_factor(fit, free, params.decode, before.decode_bandwidth_efficiency, d.decode_rows, "decode",
                  "kept: no row depends on decode bandwidth");
  describe_factor(fit, free, params.prefill, before.prefill_compute_efficiency, d.prefill_rows, "prefill",
                  "kept: no row depends on prefill compute");
  describe_factor(fit, free, params.layer, before.layer_overhead_s, d.decode_rows, "decode",
                  d.decode_rows >= 3 ? "kept: needs decode rows of models of clearly different sizes (1.5x apart) in one weight format"
                                     : "kept: needs three or more decode rows of models of different sizes");
  fit.factors.push_back(
      {"step_overhead_s", before.step_overhead_s, before.step_overhead_s, 0, 1, false, {}, "kept: not separable from the layer overhead"});
  for (std::size_t i = 0; i < multipliers.params.size(); ++i)
    describe_factor(fit, free, multipliers.params[i], multipliers.info[i].before, multipliers.info[i].rows,
                    multipliers.info[i].decode ? "decode" : "prefill", "");
}

/// The overlay's factors: the fitted ones of the backend, and every fitted per-format multiplier.
void record_factors(Calibration& cal, const std::vector<Param*>& free, const BackendParams& params, const FormatMultipliers& multipliers,
                    const BackendProfile& backend, const BackendBuild* earlier, const std::vector<CalibrationRow>& rows) {
  for (const Param* p : free) {
    if (p == &params.decode) cal.factors.decode_bandwidth_efficiency = *p->value;
    if (p == &params.prefill) cal.factors.prefill_compute_efficiency = *p->value;
    if (p == &params.layer) cal.factors.layer_overhead_s = *p->value;
  }
  for (const Multiplier& m : multipliers.info) cal.factors.quant_efficiency[m.quant_id] = backend.quant_efficiency.at(m.quant_id);
  if (earlier == nullptr) return;
  // What the fit took from the earlier build and kept, recorded so the calibration reproduces it.
  if (earlier->layer_overhead_s && !cal.factors.layer_overhead_s) cal.factors.layer_overhead_s = backend.layer_overhead_s;
  for (const auto& row : rows) {
    const std::string& quant_id = row.prepared.scenario.weights.quant_id;
    if (earlier->quant_efficiency.contains(quant_id) && !cal.factors.quant_efficiency.contains(quant_id))
      cal.factors.quant_efficiency[quant_id] = backend.quant_efficiency.at(quant_id);
  }
}

}  // namespace

CalibrationFit fit_calibration(const Catalog& catalog, MappedMeasurements mapped, const CalibrationRequest& request) {
  CalibrationFit fit;
  fit.hardware = mapped.hardware;
  fit.rows = std::move(mapped.rows);
  fit.skipped = std::move(mapped.skipped);
  if (fit.rows.empty()) throw bad_input("no measurement to fit");
  const EngineChoice original = fit.rows.front().prepared.scenario.engine;
  const std::string backend_name = original.backend->name;
  fit.engine_id = original.id();
  fit.replaces = catalog.find_calibration(fit.hardware->id, original.engine->id, backend_name);

  // Work on a copy of the engine with the profile's own (uncalibrated) backend.
  EngineProfile engine = *original.engine;
  BackendProfile& backend = engine.backends.at(backend_name);
  const std::vector<EngineChoice> saved = point_rows_at(fit.rows, engine, backend);
  for (auto& row : fit.rows) row.predicted_before = predict_measurement(row.measurement, row.prepared.scenario);
  const BackendBuild* earlier = start_from_earlier_build(engine, backend, fit.rows, fit.notes);
  const BackendProfile before = backend;

  BackendParams params = backend_params(engine, backend, fit.rows);
  const Dependence d = dependence_of(params, fit.rows);
  FormatMultipliers multipliers;
  multipliers.add(d.decode_formats, params.decode, true, engine, backend);
  multipliers.add(d.prefill_formats, params.prefill, false, engine, backend);
  // The per-layer overhead and the bandwidth efficiency trade off exactly for
  // one model size; models of clearly different sizes in one weight format tell
  // them apart (across formats, the format's multiplier takes the difference).
  const bool fit_layer = d.decode_rows >= 3 && d.decode_formats.widest_spread() >= 1.5;

  const std::vector<Param*> free = free_params(params, d, fit_layer, multipliers);
  if (free.empty())
    throw bad_input(fmt::format("no efficiency factor of {} depends on these measurements", fit.engine_id),
                    "calibrate with llama-bench pp/tg rows or vLLM serve results");
  fit_within_bounds(free, fit.rows);
  round_to_stored(free);
  for (auto& row : fit.rows) row.predicted_after = predict_measurement(row.measurement, row.prepared.scenario);

  summarize_errors(fit);
  if (fit.median_abs_error_after > fit.median_abs_error_before)
    fit.notes.push_back(
        "the fitted factors do not lower the median error: the rows differ in ways the model does not describe (long prompts "
        "without flash attention, say), or the engine profile was already fitted on runs like these; check with --dry-run "
        "before keeping the calibration");
  describe_factors(fit, free, params, before, d, multipliers);

  Calibration& cal = fit.calibration;
  cal.hardware = fit.hardware->id;
  cal.engine = engine.id;
  cal.backend = backend_name;
  record_factors(cal, free, params, multipliers, backend, earlier, fit.rows);
  record_provenance(cal, fit.rows, request.today);
  cal.rows = fit.rows.size();
  cal.median_abs_error_before = std::round(fit.median_abs_error_before * 1e4) / 1e4;
  cal.median_abs_error_after = std::round(fit.median_abs_error_after * 1e4) / 1e4;
  cal.origin.clear();
  cal.backend_profile = backend;

  // Leave the rows pointing at the catalog's engine, not at this function's copy.
  for (std::size_t i = 0; i < fit.rows.size(); ++i) fit.rows[i].prepared.scenario.engine = saved[i];
  return fit;
}

}  // namespace optadvisor
