// SPDX-License-Identifier: MIT
#include "optadvisor/catalog/catalog.hpp"

#include <algorithm>
#include <functional>
#include <system_error>

#include <fmt/format.h>

#include "catalog/embedded.hpp"
#include "base/input_file.hpp"
#include "base/names.hpp"

namespace optadvisor {
namespace {

namespace fs = std::filesystem;

/// One raw data document before it becomes a typed entry.
struct DataDocument {
  std::string kind;     ///< "hardware", "models", "quant", "engines", "rules"
  std::string display;  ///< "data/hardware/x.json" or the overlay file's path
  nlohmann::json json;
  bool overlay = false;
  bool pending_extends = false;  ///< an overlay profile with "extends", merged and checked once all are read
};

/// data/ subfolder -> schema name (data/schema/<name>.schema.json).
const std::map<std::string, std::string>& schema_for_kind() {
  static const std::map<std::string, std::string> m = {
      {"hardware", "hardware"}, {"models", "model"}, {"quant", "quant"},
      {"engines", "engine"},    {"rules", "rule"},   {"training", "training"},
      {"calibrations", "calibration"}, {"shapes", "shape"}};
  return m;
}

bool has_embedded_schema(const std::string& name) {
  const std::string path = "schema/" + name + ".schema.json";
  const auto& files = embedded_files();
  return std::any_of(files.begin(), files.end(), [&](const EmbeddedFile& f) { return f.path == path; });
}

std::string first_component(const std::string& relative) {
  auto slash = relative.find('/');
  return slash == std::string::npos ? std::string{} : relative.substr(0, slash);
}

/// Parses `text`; on failure records one problem and returns nullopt.
std::optional<nlohmann::json> parse_document(std::string_view text, const std::string& display,
                                             std::vector<Problem>& problems) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    problems.push_back({display, "", "empty file"});
    return std::nullopt;
  }
  std::string why;
  std::optional<nlohmann::json> json = parse_json_input(text, why);
  if (!json) problems.push_back({display, "", "invalid JSON: " + why});
  return json;
}

void collect_embedded(std::vector<DataDocument>& docs, bool validate, std::vector<Problem>& problems) {
  for (const auto& file : embedded_files()) {
    const std::string path(file.path);
    const std::string kind = first_component(path);
    if (kind.empty() || kind == "schema") continue;
    const std::string display = "data/" + path;
    auto json = parse_document(file.content, display, problems);
    if (!json) continue;
    if (validate) {
      auto it = schema_for_kind().find(kind);
      if (it != schema_for_kind().end() && has_embedded_schema(it->second))
        check_against_schema(it->second, *json, display, problems);
    }
    docs.push_back({kind, display, std::move(*json), false});
  }
}

void collect_overlay(const fs::path& dir, std::vector<DataDocument>& docs, std::vector<Problem>& problems) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    problems.push_back({dir.string(), "", "data directory does not exist"});
    return;
  }
  if (!fs::is_directory(dir, ec)) {
    problems.push_back({dir.string(), "", "not a directory (--data-dir takes a folder laid out like data/)"});
    return;
  }
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    // Not only regular files: a FIFO or device named *.json is reported, not skipped.
    if (!it->is_directory(ec) && it->path().extension() == ".json") files.push_back(it->path());
  }
  if (ec) problems.push_back({dir.string(), "", "cannot list directory: " + ec.message()});
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    const std::string display = path.string();
    const std::string relative = fs::relative(path, dir, ec).generic_string();
    const std::string kind = first_component(relative);
    if (!schema_for_kind().count(kind)) {
      problems.push_back({display, "",
                          "unknown data kind; put the file under hardware/, models/, quant/, engines/, training/, rules/, calibrations/ or shapes/"});
      continue;
    }
    std::string why;
    const std::optional<std::string> text = read_input_file(path.string(), why);
    if (!text) {
      problems.push_back({display, "", "file " + why});
      continue;
    }
    auto json = parse_document(*text, display, problems);
    if (!json) continue;
    if (kind == "hardware" && json->is_object() && json->contains("extends")) {
      docs.push_back({kind, display, std::move(*json), true, true});  // checked after the merge (resolve_extends)
      continue;
    }
    const auto& schema = schema_for_kind().at(kind);
    const std::size_t before = problems.size();
    if (has_embedded_schema(schema)) check_against_schema(schema, *json, display, problems);
    if (problems.size() == before) docs.push_back({kind, display, std::move(*json), true});
  }
}

/// Merges each overlay profile with "extends" onto its base document (RFC 7396 merge patch;
/// the base's default_for, aliases and detect are not inherited), then checks the result against the
/// schema. A base may itself extend another; the last loaded document with the id is the base.
/// An unknown base, a cycle or a merged document the schema rejects drops the overlay with a problem.
void resolve_extends(std::vector<DataDocument>& docs, std::vector<Problem>& problems) {
  enum class State { kPending, kVisiting, kDone, kFailed };
  std::map<const DataDocument*, State> state;
  for (const auto& d : docs)
    if (d.pending_extends) state[&d] = State::kPending;
  auto base_of = [&](const std::string& id, const DataDocument* self) -> DataDocument* {
    DataDocument* found = nullptr;
    for (auto& d : docs)
      if (&d != self && d.kind == "hardware" && d.json.is_object() && d.json.value("id", std::string{}) == id) found = &d;
    return found;
  };
  std::function<bool(DataDocument&)> resolve = [&](DataDocument& doc) -> bool {
    auto it = state.find(&doc);
    if (it == state.end() || it->second == State::kDone) return true;
    if (it->second == State::kFailed) return false;
    const auto& ext = doc.json.at("extends");
    const std::string base_id = ext.is_string() ? ext.get<std::string>() : std::string{};
    if (it->second == State::kVisiting) {
      problems.push_back({doc.display, "/extends", fmt::format("extends '{}' in a cycle (a profile cannot extend itself, directly or through others)", base_id)});
      it->second = State::kFailed;
      return false;
    }
    it->second = State::kVisiting;
    DataDocument* base = ext.is_string() ? base_of(base_id, &doc) : nullptr;
    bool ok = true;
    if (!ext.is_string()) {
      problems.push_back({doc.display, "/extends", "must be the id of a hardware profile (a string)"});
      ok = false;
    } else if (!base) {
      problems.push_back({doc.display, "/extends", fmt::format("extends unknown hardware '{}'", base_id)});
      ok = false;
    } else if (!resolve(*base)) {
      if (state[&doc] != State::kFailed)  // the cycle was reported at the document that closed it
        problems.push_back({doc.display, "/extends", fmt::format("its base '{}' could not be loaded", base_id)});
      ok = false;
    }
    if (ok) {
      nlohmann::json merged = base->json;
      merged.erase("default_for");
      merged.erase("aliases");
      merged.erase("detect");  // what vendor tools report for the base: --hw auto would find two profiles
      merged.erase("extends");
      merged.merge_patch(doc.json);
      const std::size_t before = problems.size();
      if (has_embedded_schema("hardware")) check_against_schema("hardware", merged, doc.display, problems);
      ok = problems.size() == before;
      if (ok) doc.json = std::move(merged);
    }
    state[&doc] = ok ? State::kDone : State::kFailed;
    return ok;
  };
  for (auto& d : docs)
    if (d.pending_extends) resolve(d);
  std::vector<DataDocument> kept;
  for (auto& d : docs) {
    auto it = state.find(&d);
    if (it == state.end() || it->second == State::kDone) kept.push_back(std::move(d));
  }
  docs = std::move(kept);
}

}  // namespace

std::optional<std::string> NameIndex::add(const std::string& name, const std::string& id, const std::string& via) {
  const std::string key = normalize_name(name);
  auto it = names_.find(key);
  if (it != names_.end()) {
    if (it->second.id != id) return it->second.id;
    return std::nullopt;
  }
  names_[key] = {name, id, via};
  return std::nullopt;
}

std::optional<Resolution> NameIndex::find(std::string_view name) const {
  auto it = names_.find(normalize_name(name));
  if (it == names_.end()) return std::nullopt;
  Resolution r = it->second;
  r.query = std::string(name);
  return r;
}

void NameIndex::throw_unknown(std::string_view kind, std::string_view name, std::string_view list_command) const {
  std::vector<std::string> candidates;
  for (const auto& [key, r] : names_) candidates.push_back(r.query);
  std::vector<std::string> close;
  for (const auto& n : closest_names(name, candidates, 12)) {
    const std::string id = find(n)->id;
    if (std::find(close.begin(), close.end(), id) == close.end() && close.size() < 3) close.push_back(id);
  }
  std::string hint;
  if (!close.empty()) {
    hint = "did you mean ";
    for (std::size_t i = 0; i < close.size(); ++i)
      hint += (i == 0 ? "" : (i + 1 == close.size() ? " or " : ", ")) + ("'" + close[i] + "'");
    hint += fmt::format("? ({})", list_command);
  } else {
    hint = fmt::format("see '{}' for the known ids", list_command);
  }
  throw bad_input(fmt::format("unknown {} '{}'", kind, name), hint);
}

namespace {

/// Adds an entry's names, reporting a name that already leads elsewhere.
template <typename Entry>
void index_names(NameIndex& index, const Entry& e, const std::string& origin, std::vector<Problem>& problems,
                 const std::vector<std::string>& defaults = {}) {
  auto add = [&](const std::string& name, const char* via, const char* field) {
    if (auto other = index.add(name, e.id, via))
      problems.push_back({origin, std::string("/") + field, fmt::format("name '{}' already refers to '{}'", name, *other)});
  };
  for (const auto& a : e.aliases) add(a, "alias", "aliases");
  for (const auto& d : defaults) add(d, "default bin", "default_for");
}

/// Keeps the entry, letting an overlay replace a shipped one with the same id.
template <typename Entry>
void place(std::vector<Entry>& entries, Entry entry, const DataDocument& doc, std::map<std::string, std::string>& origin,
           std::map<std::string, bool>& from_overlay, std::vector<Problem>& problems) {
  auto it = std::find_if(entries.begin(), entries.end(), [&](const Entry& e) { return e.id == entry.id; });
  if (it == entries.end()) {
    origin[entry.id] = doc.display;
    from_overlay[entry.id] = doc.overlay;
    entries.push_back(std::move(entry));
  } else if (doc.overlay && !from_overlay[entry.id]) {
    origin[entry.id] = doc.display;
    from_overlay[entry.id] = true;
    *it = std::move(entry);
  } else {
    problems.push_back({doc.display, "/id", fmt::format("duplicate id '{}' (also defined in {})", entry.id, origin[entry.id])});
  }
}

}  // namespace

void Catalog::build(const LoadOptions& options, std::vector<Problem>& problems, Catalog& out) {
  std::vector<DataDocument> docs;
  collect_embedded(docs, options.validate_embedded, problems);
  for (const auto& dir : options.overlay_dirs) collect_overlay(dir, docs, problems);
  resolve_extends(docs, problems);

  std::map<std::string, bool> from_overlay;
  std::vector<const DataDocument*> calibration_docs;
  auto with_file = [&](std::vector<Problem>& found, const DataDocument& doc) {
    for (auto& p : found) {
      p.file = doc.display;
      problems.push_back(std::move(p));
    }
  };
  for (auto& doc : docs) {
    std::vector<Problem> found;
    if (doc.kind == "hardware") {
      auto hw = hardware_from_json(doc.json, found);
      with_file(found, doc);
      if (!hw) continue;
      hw->document = std::move(doc.json);  // the parsed profile, kept whole for `hw show`
      place(out.hardware_, std::move(*hw), doc, out.origin_, from_overlay, problems);
    } else if (doc.kind == "models") {
      auto model = model_from_json(doc.json, found);
      with_file(found, doc);
      if (model) place(out.models_, std::move(*model), doc, out.origin_, from_overlay, problems);
    } else if (doc.kind == "engines") {
      auto engine = engine_from_json(doc.json, found);
      with_file(found, doc);
      if (engine) place(out.engines_, std::move(*engine), doc, out.origin_, from_overlay, problems);
    } else if (doc.kind == "training") {
      out.training_documents_.emplace_back(doc.display, std::move(doc.json));
    } else if (doc.kind == "rules") {
      out.rule_documents_.emplace_back(doc.display, std::move(doc.json));
    } else if (doc.kind == "calibrations") {
      calibration_docs.push_back(&doc);  // resolved once every device and engine is known
    } else if (doc.kind == "shapes") {
      auto shape = params_shape_from_json(doc.json, found);
      with_file(found, doc);
      if (shape && shape->id == "params-default") out.params_shape_ = std::move(*shape);
    } else if (doc.kind == "quant") {
      out.quant_.add_document(doc.json, found);
      with_file(found, doc);
    }
  }
  {
    std::vector<Problem> found;
    out.quant_.check(found);
    for (auto& p : found) {
      if (p.file.empty()) p.file = "data/quant";
      problems.push_back(std::move(p));
    }
  }

  // Names: ids first, then aliases and default bins; a name may lead to one entry only.
  for (const auto& hw : out.hardware_) out.hardware_names_.add(hw.id, hw.id, "id");
  for (const auto& hw : out.hardware_) index_names(out.hardware_names_, hw, out.origin_[hw.id], problems, hw.default_for);
  for (const auto& m : out.models_) out.model_names_.add(m.id, m.id, "id");
  for (const auto& m : out.models_) index_names(out.model_names_, m, out.origin_[m.id], problems);
  for (const auto& e : out.engines_) out.engine_names_.add(e.id, e.id, "id");
  for (const auto& e : out.engines_) index_names(out.engine_names_, e, out.origin_[e.id], problems);

  // Calibrations apply over a loaded engine backend on a loaded device; a later one replaces an earlier one.
  for (const DataDocument* doc : calibration_docs) {
    std::vector<Problem> found;
    auto cal = calibration_from_json(doc->json, found);
    with_file(found, *doc);
    if (!cal) continue;
    const auto engine = std::find_if(out.engines_.begin(), out.engines_.end(), [&](const EngineProfile& e) { return e.id == cal->engine; });
    if (std::none_of(out.hardware_.begin(), out.hardware_.end(), [&](const HardwareProfile& h) { return h.id == cal->hardware; })) {
      problems.push_back({doc->display, "/hardware", fmt::format("unknown hardware '{}'", cal->hardware)});
    } else if (engine == out.engines_.end()) {
      problems.push_back({doc->display, "/engine", fmt::format("unknown engine '{}'", cal->engine)});
    } else if (!engine->backends.count(cal->backend)) {
      std::string names;
      for (const auto& [name, b] : engine->backends) names += (names.empty() ? "" : ", ") + name;
      problems.push_back({doc->display, "/backend", fmt::format("engine '{}' has no backend '{}' (it has {})", cal->engine, cal->backend, names)});
    } else {
      cal->origin = doc->display;
      cal->backend_profile = apply_calibration(engine->backends.at(cal->backend), cal->factors);
      auto same = std::find_if(out.calibrations_.begin(), out.calibrations_.end(), [&](const Calibration& c) {
        return c.hardware == cal->hardware && c.engine == cal->engine && c.backend == cal->backend;
      });
      if (same == out.calibrations_.end()) out.calibrations_.push_back(std::move(*cal));
      else *same = std::move(*cal);
    }
  }
}

Catalog Catalog::load(const LoadOptions& options) {
  std::vector<Problem> problems;
  Catalog c;
  build(options, problems, c);
  if (!problems.empty()) {
    std::string hint = problems.size() > 1
                           ? fmt::format("{} more problem(s); run 'optadvisor validate-data' on the directory to see all",
                                         problems.size() - 1)
                           : "run 'optadvisor validate-data' on the directory to check it";
    throw bad_input(to_string(problems.front()), hint);
  }
  return c;
}

std::vector<Problem> Catalog::validate(const LoadOptions& options) {
  std::vector<Problem> problems;
  Catalog c;
  LoadOptions checked = options;
  checked.validate_embedded = true;
  build(checked, problems, c);
  return problems;
}

const Calibration* Catalog::find_calibration(std::string_view hardware, std::string_view engine, std::string_view backend) const {
  for (const auto& c : calibrations_)
    if (c.hardware == hardware && c.engine == engine && c.backend == backend) return &c;
  return nullptr;
}

const std::string& Catalog::origin(const std::string& id) const {
  static const std::string unknown;
  auto it = origin_.find(id);
  return it == origin_.end() ? unknown : it->second;
}

const HardwareProfile& Catalog::resolve_hardware(std::string_view name, Resolution* how) const {
  auto found = hardware_names_.find(name);
  if (!found) hardware_names_.throw_unknown("hardware", name, "optadvisor hw list");
  if (how) *how = *found;
  for (const auto& hw : hardware_)
    if (hw.id == found->id) return hw;
  throw Error(ExitCode::kRuntime, "internal: hardware id '" + found->id + "' vanished");
}

const ModelSpec& Catalog::resolve_model(std::string_view name, Resolution* how) const {
  auto found = model_names_.find(name);
  if (!found) model_names_.throw_unknown("model", name, "optadvisor models");
  if (how) *how = *found;
  for (const auto& m : models_)
    if (m.id == found->id) return m;
  throw Error(ExitCode::kRuntime, "internal: model id '" + found->id + "' vanished");
}

const ParamsShape& Catalog::params_shape() const {
  if (!params_shape_) throw Error(ExitCode::kRuntime, "the data has no shapes/params-default.json: --params cannot build a model");
  return *params_shape_;
}

const EngineProfile& Catalog::resolve_engine(std::string_view name) const {
  const std::string_view base = name.substr(0, name.find(':'));
  auto found = engine_names_.find(base);
  if (!found) engine_names_.throw_unknown("engine", name, "optadvisor engines");
  for (const auto& e : engines_)
    if (e.id == found->id) return e;
  throw Error(ExitCode::kRuntime, "internal: engine id '" + found->id + "' vanished");
}

std::vector<std::filesystem::path> overlay_dirs_from(const std::vector<std::string>& cli_dirs, const char* env_value) {
  std::vector<std::filesystem::path> dirs;
  if (env_value != nullptr) {
    std::string env(env_value);
    std::size_t start = 0;
    while (start <= env.size()) {
      auto colon = env.find(':', start);
      std::string part = env.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (!part.empty()) dirs.emplace_back(part);
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  for (const auto& d : cli_dirs) dirs.emplace_back(d);
  return dirs;
}

}  // namespace optadvisor
