// SPDX-License-Identifier: MIT
// Size accuracy benchmark: compares the sizes `optadvisor size` computes
// (quantize() over a preset's tensors) with published file sizes in
// bench/data/sizes.csv, mapped to presets and formats by
// bench/data/sizes_mapped.csv. Reports the absolute percentage error per
// format family, exact byte counts and GB/GiB listings apart, every row over
// 1 % with its reason, and checks the targets (docs/accuracy-sizes.md).
//
//   optadvisor_size_accuracy [--data sizes.csv] [--map sizes_mapped.csv] [--json out.json] [-v]
//
// Exit status: 0 targets met, 2 bad usage or data, 3 a target missed.
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_common.hpp"
#include "csv.hpp"
#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/readers/model_source.hpp"
#include "optadvisor/catalog/quant.hpp"

using namespace optadvisor;
using optadvisor::bench::CsvRow;
using optadvisor::bench::quantile;

namespace {

constexpr double kGgufMedianLimitPct = 1.0;        // median over standard GGUF rows
constexpr double kCheckpointMedianLimitPct = 2.0;  // median over standard AWQ, GPTQ, FP8 and MLX rows, per family
constexpr double kRowLimitPct = 3.0;               // every standard row
constexpr double kReportOverPct = 1.0;             // rows listed with their reason

const std::array<std::string, 6> kFamilies = {"GGUF", "AWQ", "GPTQ", "FP8", "MLX", "other"};

/// Family of a sizes.csv `format` value ("GGUF", "safetensors AWQ", "MLX", "llamafile", ...).
std::string family_of(const std::string& format) {
  if (format == "GGUF") return "GGUF";
  for (const char* f : {"AWQ", "GPTQ", "FP8", "MLX"})
    if (format.find(f) != std::string::npos) return f;
  return "other";
}

/// A size as a page lists it ("4.15 GB", "1.87 GiB", "4.34G", "581 MB"),
/// with half the step of its last digit: the true size lies within ± that.
struct Listing {
  double bytes = 0;
  double half_width_bytes = 0;
};

/// Parses a listing. Units: GB and MB are decimal, GiB and MiB binary; a bare
/// "G" (llama.cpp quantize.cpp) is GiB. Hugging Face drops trailing zeros
/// ("5 GB" is 5.00 GB), so fewer than three significant digits are read as
/// three. A listing that sums N rounded shards ("sum of 9 shards",
/// "(5 + 4.08)") is uncertain by N half-steps. nullopt when unreadable.
std::optional<Listing> parse_listing(const std::string& text) {
  std::size_t pos = 0;
  while (pos < text.size() && (std::isdigit(static_cast<unsigned char>(text[pos])) || text[pos] == '.')) ++pos;
  if (pos == 0) return std::nullopt;
  const std::string number = text.substr(0, pos);
  const double value = std::stod(number);
  if (!(value > 0)) return std::nullopt;
  const std::size_t dot = number.find('.');
  const int decimals = dot == std::string::npos ? 0 : static_cast<int>(number.size() - dot - 1);
  int significant = 0;
  bool leading = true;
  for (char c : number) {
    if (c == '.') continue;
    if (leading && c == '0') continue;
    leading = false;
    ++significant;
  }
  std::size_t u = pos;
  while (u < text.size() && text[u] == ' ') ++u;
  const std::string rest = text.substr(u);
  auto starts = [&](const char* s) { return rest.rfind(s, 0) == 0; };
  double unit_bytes = 0;
  if (starts("GiB"))
    unit_bytes = 1073741824.0;
  else if (starts("GB"))
    unit_bytes = 1e9;
  else if (starts("MiB"))
    unit_bytes = 1048576.0;
  else if (starts("MB"))
    unit_bytes = 1e6;
  else if (starts("G") && (rest.size() == 1 || !std::isalpha(static_cast<unsigned char>(rest[1]))))
    unit_bytes = 1073741824.0;
  else
    return std::nullopt;

  double step = std::pow(10.0, -decimals);
  if (significant < 3) step = std::min(step, std::pow(10.0, std::floor(std::log10(value)) - 2));
  double shards = 1;
  if (const auto s = rest.find("sum of "); s != std::string::npos) {
    const std::size_t start = s + 7;
    std::size_t end = start;
    while (end < rest.size() && std::isdigit(static_cast<unsigned char>(rest[end]))) ++end;
    if (end > start) shards = std::stod(rest.substr(start, end - start));
  } else if (const auto p = rest.find('('); p != std::string::npos) {
    shards += static_cast<double>(std::count(rest.begin() + static_cast<std::ptrdiff_t>(p), rest.end(), '+'));
  }
  return Listing{value * unit_bytes, shards * step / 2 * unit_bytes};
}

/// One compared row.
struct Result {
  std::string id;
  std::string family;
  std::string model;         ///< preset id
  std::string quant;         ///< format id
  std::string source_model;  ///< as sizes.csv names it
  std::string source_quant;
  std::string compare;  ///< "file" or "tensors"
  std::string note;
  bool standard = true;
  bool exact = true;  ///< a byte count; false: a GB/GiB listing
  std::string as_listed;
  double measured_bytes = 0;
  double half_width_bytes = 0;  ///< rounding of a listing, 0 for exact rows
  uint64_t predicted_bytes = 0;
  double error_pct = 0;  ///< signed: 100 x (predicted - measured) / measured
  double abs_error_pct() const { return std::fabs(error_pct); }
  bool within_rounding() const { return std::fabs(static_cast<double>(predicted_bytes) - measured_bytes) <= half_width_bytes; }
};

struct Stats {
  std::size_t n = 0;
  double median_pct = NAN, p90_pct = NAN, max_pct = NAN;
  std::size_t within_rounding = 0;
};

Stats stats_of(const std::vector<const Result*>& rows) {
  Stats s;
  std::vector<double> errors;
  for (const auto* r : rows) {
    errors.push_back(r->abs_error_pct());
    if (r->within_rounding()) ++s.within_rounding;
  }
  s.n = errors.size();
  if (s.n == 0) return s;
  s.median_pct = quantile(errors, 0.5);
  s.p90_pct = quantile(errors, 0.9);
  s.max_pct = *std::max_element(errors.begin(), errors.end());
  return s;
}

nlohmann::json to_json(const Stats& s, bool with_rounding) {
  auto num = [](double v) { return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v); };
  nlohmann::json j = {{"n", s.n}, {"median_pct", num(s.median_pct)}, {"p90_pct", num(s.p90_pct)}, {"max_pct", num(s.max_pct)}};
  if (with_rounding) j["within_rounding"] = s.within_rounding;
  return j;
}

std::string cell(const Stats& s) {
  if (s.n == 0) return fmt::format("{:>4} {:>8} {:>8} {:>8}", 0, "-", "-", "-");
  return fmt::format("{:>4} {:>7.3f}% {:>7.3f}% {:>7.3f}%", s.n, s.median_pct, s.p90_pct, s.max_pct);
}

std::string gb(double bytes) { return fmt::format("{:.3f} GB", bytes / 1e9); }

std::string field(const CsvRow& row, const char* name) {
  const auto it = row.find(name);
  return it == row.end() ? std::string() : it->second;
}

/// The command line.
struct Options {
  std::string data = std::string(OPTADVISOR_SOURCE_DIR) + "/bench/data/sizes.csv";
  std::string map_path = std::string(OPTADVISOR_SOURCE_DIR) + "/bench/data/sizes_mapped.csv";
  std::string json_path;
  bool verbose = false;
};

// --- join and check the mapping: every problem is collected --------------

/// sizes.csv joined with its mapping: the rows compared, the rows not mappable, and every problem found.
struct Joined {
  std::vector<Result> results;
  std::vector<std::pair<const CsvRow*, const CsvRow*>> unmapped;  // (sizes row, mapping row)
  std::vector<std::string> problems;
};

/// The size `quantize()` predicts for row `r`, from its preset's tensors (computed once per preset).
void predict_size(const Catalog& catalog, const std::string& imatrix, std::map<std::string, std::vector<Tensor>>& tensors_by_model, Result& r) {
  const QuantDb& db = catalog.quant();
  const ModelSpec& spec = catalog.resolve_model(r.model);
  auto [t, inserted] = tensors_by_model.try_emplace(spec.id);
  if (inserted) t->second = model_tensors(spec);
  QuantOptions options;
  if (imatrix == "yes") options.imatrix = true;
  if (imatrix == "no") options.imatrix = false;
  const WeightsBreakdown w = quantize(t->second, quant_facts(spec), db.resolve(r.quant), db, options);
  r.predicted_bytes = r.compare == "tensors" ? w.weights_bytes : w.file_bytes;
  r.error_pct = 100.0 * (static_cast<double>(r.predicted_bytes) - r.measured_bytes) / r.measured_bytes;
}

/// The compared row of sizes row `s` mapped by `m`, its problems added to `problems`; nullopt when it cannot be compared.
std::optional<Result> compare_row(const Catalog& catalog, const CsvRow& s, const CsvRow& m, const std::string& where,
                                  std::map<std::string, std::vector<Tensor>>& tensors_by_model, std::vector<std::string>& problems) {
  const QuantDb& db = catalog.quant();
  Result r;
  r.id = field(s, "id");
  r.family = family_of(field(s, "format"));
  r.model = field(m, "model");
  r.quant = field(m, "quant");
  r.source_model = field(s, "model");
  r.source_quant = field(s, "quant");
  r.compare = field(m, "compare");
  r.note = field(m, "note");
  r.standard = field(m, "standard") == "yes";
  const std::string imatrix = field(m, "imatrix");
  if (r.compare != "file" && r.compare != "tensors") problems.push_back(where + ": compare must be file or tensors");
  if (field(m, "standard") != "yes" && field(m, "standard") != "no") problems.push_back(where + ": standard must be yes or no");
  if (imatrix != "yes" && imatrix != "no" && imatrix != "unknown") problems.push_back(where + ": imatrix must be yes, no or unknown");
  if (!catalog.find_model(r.model)) problems.push_back(fmt::format("{}: unknown model preset '{}'", where, r.model));
  if (!db.find(r.quant)) problems.push_back(fmt::format("{}: unknown quant '{}'", where, r.quant));

  if (const std::string bytes = field(s, "file_bytes"); !bytes.empty()) {
    r.measured_bytes = std::stod(bytes);
  } else if (const auto listing = parse_listing(field(s, "file_gb_as_listed"))) {
    r.exact = false;
    r.as_listed = field(s, "file_gb_as_listed");
    r.measured_bytes = listing->bytes;
    r.half_width_bytes = listing->half_width_bytes;
  } else {
    problems.push_back(fmt::format("{}: no file_bytes and unreadable listing '{}'", where, field(s, "file_gb_as_listed")));
  }
  if (!catalog.find_model(r.model) || !db.find(r.quant) || !(r.measured_bytes > 0)) return std::nullopt;
  predict_size(catalog, imatrix, tensors_by_model, r);
  return r;
}

Joined join(const Catalog& catalog, const std::vector<CsvRow>& sizes, const std::vector<CsvRow>& mapped, const std::string& map_path) {
  Joined out;
  std::map<std::string, const CsvRow*> by_id;
  for (const auto& m : mapped) {
    const std::string id = field(m, "id");
    if (!by_id.emplace(id, &m).second) out.problems.push_back(fmt::format("{}: id '{}' is mapped twice", map_path, id));
  }
  std::map<std::string, std::vector<Tensor>> tensors_by_model;
  std::size_t seen = 0;
  for (const auto& s : sizes) {
    const std::string id = field(s, "id");
    const auto it = by_id.find(id);
    if (it == by_id.end()) {
      out.problems.push_back(fmt::format("row {} of sizes.csv has no mapping row", id));
      continue;
    }
    ++seen;
    const CsvRow& m = *it->second;
    const std::string where = fmt::format("{}: id {}", map_path, id);
    if (field(m, "mappable") != "yes") {
      if (field(m, "mappable") != "no") out.problems.push_back(where + ": mappable must be yes or no");
      if (field(m, "note").empty()) out.problems.push_back(where + ": an unmappable row needs a note saying why");
      out.unmapped.emplace_back(&s, &m);
      continue;
    }
    if (auto r = compare_row(catalog, s, m, where, tensors_by_model, out.problems)) out.results.push_back(std::move(*r));
  }
  if (seen != by_id.size()) out.problems.push_back(fmt::format("{} holds ids that sizes.csv does not", map_path));
  return out;
}

template <typename Keep>
std::vector<const Result*> select(const std::vector<Result>& results, Keep keep) {
  std::vector<const Result*> out;
  for (const auto& r : results)
    if (keep(r)) out.push_back(&r);
  return out;
}

// --- per family -------------------------------------------------------------

/// The error table per family (its standard rows, exact bytes and listings apart) and the publisher recipes;
/// returns the families as JSON, each family's standard rows in `all_by_family`.
nlohmann::json report_families(const std::vector<Result>& results, std::map<std::string, Stats>& all_by_family) {
  fmt::print("absolute error of the predicted size; standard file types and checkpoint formats\n");
  fmt::print("{:<7} {:<16} {:>4} {:>8} {:>8} {:>8} {:>12}\n", "FAMILY", "ROWS", "N", "MEDIAN", "P90", "MAX", "IN ROUNDING");
  nlohmann::json families;
  for (const auto& family : kFamilies) {
    const Stats exact = stats_of(select(results, [&](const Result& r) { return r.standard && r.family == family && r.exact; }));
    const Stats listed = stats_of(select(results, [&](const Result& r) { return r.standard && r.family == family && !r.exact; }));
    const Stats all = stats_of(select(results, [&](const Result& r) { return r.standard && r.family == family; }));
    const Stats family_recipes = stats_of(select(results, [&](const Result& r) { return !r.standard && r.family == family; }));
    all_by_family[family] = all;
    std::string label = family;
    if (exact.n) fmt::print("{:<7} {:<16} {}\n", std::exchange(label, ""), "exact bytes", cell(exact));
    if (listed.n)
      fmt::print("{:<7} {:<16} {} {:>12}\n", std::exchange(label, ""), "GB/GiB listings", cell(listed),
                 fmt::format("{}/{}", listed.within_rounding, listed.n));
    fmt::print("{:<7} {:<16} {}\n", label, "all", cell(all));
    families[family] = {{"exact", to_json(exact, false)},
                        {"listed", to_json(listed, true)},
                        {"all", to_json(all, true)},
                        {"publisher_recipes", to_json(family_recipes, true)}};
  }
  const Stats recipes = stats_of(select(results, [](const Result& r) { return !r.standard; }));
  if (recipes.n)
    fmt::print("\npublisher recipes (not modelled, left out of the targets): n {}, median {:.2f}%, max {:.2f}%\n", recipes.n,
               recipes.median_pct, recipes.max_pct);
  return families;
}

// --- rows over 1 % ----------------------------------------------------------

nlohmann::json report_over(const std::vector<Result>& results) {
  auto over = select(results, [](const Result& r) { return r.abs_error_pct() > kReportOverPct; });
  std::sort(over.begin(), over.end(), [](const Result* a, const Result* b) { return a->abs_error_pct() > b->abs_error_pct(); });
  fmt::print("\nrows over {:.0f}% (predicted vs measured):\n", kReportOverPct);
  nlohmann::json over_json = nlohmann::json::array();
  for (const auto* r : over) {
    fmt::print("  {:>4} {:<6} {:<14} {:<10} {:>11} vs {:>11}{} {:>+8.2f}%  {}{}\n", r->id, r->family, r->model, r->quant,
               gb(static_cast<double>(r->predicted_bytes)), gb(r->measured_bytes), r->exact ? " " : "*", r->error_pct,
               r->standard ? "" : "[recipe] ", r->note.empty() ? "(no reason recorded)" : r->note);
    over_json.push_back({{"id", r->id},
                         {"family", r->family},
                         {"model", r->model},
                         {"quant", r->quant},
                         {"source_quant", r->source_quant},
                         {"predicted_bytes", r->predicted_bytes},
                         {"measured_bytes", r->measured_bytes},
                         {"exact", r->exact},
                         {"error_pct", r->error_pct},
                         {"standard", r->standard},
                         {"reason", r->note}});
  }
  if (over.empty())
    fmt::print("  none\n");
  else
    fmt::print("  (* a GB/GiB listing; [recipe] a publisher recipe, outside the targets)\n");
  return over_json;
}

nlohmann::json report_unmapped(const std::vector<std::pair<const CsvRow*, const CsvRow*>>& unmapped) {
  fmt::print("\nnot mappable ({}):\n", unmapped.size());
  nlohmann::json unmapped_json = nlohmann::json::array();
  for (const auto& [s, m] : unmapped) {
    fmt::print("  {:>4} {:<44} {:<8} {}\n", field(*s, "id"), field(*s, "model"), field(*s, "quant"), field(*m, "note"));
    unmapped_json.push_back({{"id", field(*s, "id")}, {"reason", field(*m, "note")}});
  }
  return unmapped_json;
}

void report_every_row(const std::vector<Result>& results) {
  fmt::print("\nevery compared row:\n");
  for (const auto& r : results)
    fmt::print("  {:>4} {:<6} {:<16} {:<10} {:<7} {:>15} vs {:>15.0f}{} {:>+8.3f}%{}{}\n", r.id, r.family, r.model, r.quant, r.compare,
               r.predicted_bytes, r.measured_bytes, r.exact ? " " : "*", r.error_pct,
               r.exact ? "" : (r.within_rounding() ? " in rounding" : " outside rounding"), r.standard ? "" : " [recipe]");
}

// --- targets ------------------------------------------------------------------

/// The targets of docs/accuracy-sizes.md on the standard rows, as JSON; `met_all` says whether every one was met.
nlohmann::json report_targets(const std::vector<Result>& results, std::map<std::string, Stats>& all_by_family, bool& met_all) {
  fmt::print("\ntargets (standard rows):\n");
  nlohmann::json targets = nlohmann::json::array();
  met_all = true;
  auto check = [&](const std::string& name, const Stats& s, double value_pct, double limit_pct) {
    const bool met = s.n == 0 || value_pct <= limit_pct;
    met_all = met_all && met;
    fmt::print("  {:<34} {:>8} <= {:.0f}%  {}\n", name, s.n ? fmt::format("{:.3f}%", value_pct) : "no rows", limit_pct,
               met ? "met" : "MISSED");
    targets.push_back({{"name", name},
                       {"n", s.n},
                       {"value_pct", s.n ? nlohmann::json(value_pct) : nlohmann::json(nullptr)},
                       {"limit_pct", limit_pct},
                       {"met", met}});
  };
  check("GGUF median", all_by_family["GGUF"], all_by_family["GGUF"].median_pct, kGgufMedianLimitPct);
  for (const char* f : {"AWQ", "GPTQ", "FP8", "MLX"})
    check(fmt::format("{} median", f), all_by_family[f], all_by_family[f].median_pct, kCheckpointMedianLimitPct);
  const Stats every = stats_of(select(results, [](const Result& r) { return r.standard; }));
  check("every standard row", every, every.max_pct, kRowLimitPct);
  return targets;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!optadvisor::bench::parse_args(argc, argv, {{"-v", &o.verbose}},
                                     {{"--data", &o.data}, {"--map", &o.map_path}, {"--json", &o.json_path}},
                                     "usage: optadvisor_size_accuracy [--data CSV] [--map CSV] [--json OUT] [-v]"))
    return 2;

  std::vector<CsvRow> sizes, mapped;
  try {
    sizes = optadvisor::bench::read_csv(o.data);
    mapped = optadvisor::bench::read_csv(o.map_path);
  } catch (const std::exception& e) {
    fmt::print(stderr, "optadvisor_size_accuracy: error: {}\n", e.what());
    return 2;
  }
  const Catalog catalog = Catalog::load({});
  const Joined joined = join(catalog, sizes, mapped, o.map_path);
  if (!joined.problems.empty()) {
    for (const auto& p : joined.problems) fmt::print(stderr, "optadvisor_size_accuracy: error: {}\n", p);
    return 2;
  }
  const std::vector<Result>& results = joined.results;
  const std::size_t n_standard = select(results, [](const Result& r) { return r.standard; }).size();

  fmt::print("size accuracy: {} rows in {}, {} compared ({} standard, {} publisher recipes), {} not mappable\n\n", sizes.size(),
             o.data.substr(o.data.find_last_of('/') + 1), results.size(), n_standard, results.size() - n_standard, joined.unmapped.size());
  nlohmann::json summary;
  summary["schema_version"] = 1;
  std::map<std::string, Stats> all_by_family;
  summary["families"] = report_families(results, all_by_family);
  const nlohmann::json over_json = report_over(results);
  const nlohmann::json unmapped_json = report_unmapped(joined.unmapped);
  if (o.verbose) report_every_row(results);
  bool met_all = true;
  const nlohmann::json targets = report_targets(results, all_by_family, met_all);

  summary["rows"] = {
      {"in_data", sizes.size()}, {"compared", results.size()}, {"standard", n_standard}, {"not_mappable", joined.unmapped.size()}};
  summary["over_1_pct"] = over_json;
  summary["not_mappable"] = unmapped_json;
  summary["targets"] = targets;
  summary["targets_met"] = met_all;
  if (!o.json_path.empty()) {
    std::ofstream out(o.json_path);
    if (!out) {
      fmt::print(stderr, "optadvisor_size_accuracy: error: cannot write {}\n", o.json_path);
      return 2;
    }
    out << summary.dump(2) << "\n";
  }
  fmt::print("{}\n", met_all ? "all targets met" : "targets missed");
  return met_all ? 0 : 3;
}
