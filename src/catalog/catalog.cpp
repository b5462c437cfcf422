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
  /// An embedded hardware profile or model preset left unparsed (json is null): the catalog places it by
  /// the names embedded with it and parses it when it is first asked for.
  const EmbeddedFile* unparsed = nullptr;
  bool dropped = false;  ///< an unparsed document that failed to parse when an overlay needed it as a base
};

/// data/ subfolder -> schema name (data/schema/<name>.schema.json).
const std::map<std::string, std::string>& schema_for_kind() {
  static const std::map<std::string, std::string> m = {{"hardware", "hardware"},        {"models", "model"}, {"quant", "quant"},
                                                       {"engines", "engine"},           {"rules", "rule"},   {"training", "training"},
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
std::optional<nlohmann::json> parse_document(std::string_view text, const std::string& display, std::vector<Problem>& problems) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    problems.push_back({display, "", "empty file"});
    return std::nullopt;
  }
  std::string why;
  std::optional<nlohmann::json> json = parse_json_input(text, why);
  if (!json) problems.push_back({display, "", "invalid JSON: " + why});
  return json;
}

/// The lines of `text` ("a\nb\n" -> {a, b}).
std::vector<std::string> lines(std::string_view text) {
  std::vector<std::string> out;
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t end = text.find('\n', start);
    out.emplace_back(text.substr(start, end - start));
    start = end == std::string_view::npos ? text.size() : end + 1;
  }
  return out;
}

/// With `lazy`, indexed files (hardware profiles and model presets whose names were read when they were
/// embedded) are kept unparsed; every other file is parsed (and with `validate` schema-checked) now.
void collect_embedded(std::vector<DataDocument>& docs, bool validate, bool lazy, std::vector<Problem>& problems) {
  for (const auto& file : embedded_files()) {
    const std::string path(file.path);
    const std::string kind = first_component(path);
    if (kind.empty() || kind == "schema") continue;
    const std::string display = "data/" + path;
    if (lazy && file.indexed) {
      docs.push_back({kind, display, nlohmann::json(), false, false, &file});
      continue;
    }
    auto json = parse_document(file.content, display, problems);
    if (!json) continue;
    if (validate) {
      auto it = schema_for_kind().find(kind);
      if (it != schema_for_kind().end() && has_embedded_schema(it->second)) check_against_schema(it->second, *json, display, problems);
    }
    docs.push_back({kind, display, std::move(*json), false});
  }
}

/// The most files and folders an overlay directory may hold (a bound before anything is read).
constexpr std::size_t kMaxOverlayEntries = 10000;

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
  // Each folder is listed on its own, so one that cannot be read is named, never skipped.
  std::vector<fs::path> folders = {dir};
  while (!folders.empty() && folders.size() + files.size() <= kMaxOverlayEntries) {
    const fs::path folder = folders.back();
    folders.pop_back();
    for (auto it = fs::directory_iterator(folder, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      // Not only regular files: a FIFO or device named *.json is reported, not skipped.
      if (it->is_directory(ec) && !it->is_symlink(ec))
        folders.push_back(it->path());
      else if (it->path().extension() == ".json")
        files.push_back(it->path());
    }
    if (ec) {
      problems.push_back({folder.string(), "", "cannot list directory: " + ec.message()});
      ec.clear();
    }
  }
  if (folders.size() + files.size() > kMaxOverlayEntries)
    problems.push_back({dir.string(), "", fmt::format("more than {} files and folders; an overlay holds a few data files", kMaxOverlayEntries)});
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    const std::string display = path.string();
    const std::string relative = fs::relative(path, dir, ec).generic_string();
    const std::string kind = first_component(relative);
    if (!schema_for_kind().count(kind)) {
      problems.push_back(
          {display, "",
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
    for (auto d = docs.rbegin(); d != docs.rend(); ++d) {
      if (&*d == self || d->kind != "hardware" || d->dropped) continue;
      if (d->unparsed) {
        if (d->unparsed->id != id) continue;
        // An unparsed shipped profile is the base: parse it now (it is then converted like a parsed one).
        auto json = parse_document(d->unparsed->content, d->display, problems);
        d->unparsed = nullptr;
        if (!json) {
          d->dropped = true;
          continue;
        }
        d->json = std::move(*json);
        return &*d;
      }
      if (d->json.is_object() && d->json.value("id", std::string{}) == id) return &*d;
    }
    return nullptr;
  };
  std::function<bool(DataDocument&)> resolve = [&](DataDocument& doc) -> bool {
    auto it = state.find(&doc);
    if (it == state.end() || it->second == State::kDone) return true;
    if (it->second == State::kFailed) return false;
    const auto& ext = doc.json.at("extends");
    const std::string base_id = ext.is_string() ? ext.get<std::string>() : std::string{};
    if (it->second == State::kVisiting) {
      problems.push_back({doc.display, "/extends",
                          fmt::format("extends '{}' in a cycle (a profile cannot extend itself, directly or through others)", base_id)});
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
    for (std::size_t i = 0; i < close.size(); ++i) hint += (i == 0 ? "" : (i + 1 == close.size() ? " or " : ", ")) + ("'" + close[i] + "'");
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

/// Keeps the entry, letting an overlay replace a shipped one with the same id. `unparsed` runs beside
/// `entries`: the text of an entry that is only a placeholder (id and names) until it is first asked for.
template <typename Entry>
void place(std::vector<Entry>& entries, std::vector<std::string_view>& unparsed, Entry entry, const DataDocument& doc,
           std::map<std::string, std::string>& origin, std::map<std::string, bool>& from_overlay, std::vector<Problem>& problems) {
  const std::string_view text = doc.unparsed ? doc.unparsed->content : std::string_view{};
  auto it = std::find_if(entries.begin(), entries.end(), [&](const Entry& e) { return e.id == entry.id; });
  if (it == entries.end()) {
    origin[entry.id] = doc.display;
    from_overlay[entry.id] = doc.overlay;
    entries.push_back(std::move(entry));
    unparsed.resize(entries.size());
    unparsed.back() = text;
  } else if (doc.overlay && !from_overlay[entry.id]) {
    origin[entry.id] = doc.display;
    from_overlay[entry.id] = true;
    *it = std::move(entry);
    // Kinds that are always parsed keep no texts beside their entries.
    unparsed.resize(entries.size());
    unparsed[static_cast<std::size_t>(it - entries.begin())] = text;
  } else {
    problems.push_back({doc.display, "/id", fmt::format("duplicate id '{}' (also defined in {})", entry.id, origin[entry.id])});
  }
}

/// Throws bad_input naming the first problem and how many more there are.
[[noreturn]] void throw_problems(const std::vector<Problem>& problems) {
  std::string hint = problems.size() > 1 ? fmt::format("{} more problem(s); run 'optadvisor validate-data' on the directory to see all",
                                                       problems.size() - 1)
                                         : "run 'optadvisor validate-data' on the directory to check it";
  throw bad_input(to_string(problems.front()), hint);
}

std::optional<HardwareProfile> hardware_from_document(nlohmann::json& json, std::vector<Problem>& found) {
  auto hw = hardware_from_json(json, found);
  if (hw) hw->document = std::move(json);  // the parsed profile, kept whole for `hw show`
  return hw;
}

/// Parses, checks and converts entry `i` when it is still a placeholder; the entry keeps its address.
template <typename Entry, typename Convert>
const Entry& materialize(std::vector<Entry>& entries, std::vector<std::string_view>& unparsed, std::size_t i, const std::string& display,
                         Convert convert) {
  if (i < unparsed.size() && unparsed[i].data() != nullptr) {
    std::vector<Problem> problems;
    std::optional<Entry> entry;
    if (auto json = parse_document(unparsed[i], display, problems)) {
      std::vector<Problem> found;
      entry = convert(*json, found);
      for (auto& p : found) {
        p.file = display;
        problems.push_back(std::move(p));
      }
    }
    if (!problems.empty()) throw_problems(problems);
    if (!entry) throw Error(ExitCode::kRuntime, "internal: " + display + " could not be converted");
    entries[i] = std::move(*entry);
    unparsed[i] = {};
  }
  return entries[i];
}

/// The problems a document's reader found, each naming the document.
void add_with_file(std::vector<Problem>& found, const DataDocument& doc, std::vector<Problem>& problems) {
  for (auto& p : found) {
    p.file = doc.display;
    problems.push_back(std::move(p));
  }
}

/// Calibrations apply over a loaded engine backend on a loaded device; a later one replaces an earlier one.
void add_calibrations(const std::vector<const DataDocument*>& calibration_docs, const std::vector<HardwareProfile>& hardware,
                      const std::vector<EngineProfile>& engines, std::vector<Calibration>& calibrations, std::vector<Problem>& problems) {
  for (const DataDocument* doc : calibration_docs) {
    std::vector<Problem> found;
    auto cal = calibration_from_json(doc->json, found);
    add_with_file(found, *doc, problems);
    if (!cal) continue;
    const auto engine = std::find_if(engines.begin(), engines.end(), [&](const EngineProfile& e) { return e.id == cal->engine; });
    if (std::none_of(hardware.begin(), hardware.end(), [&](const HardwareProfile& h) { return h.id == cal->hardware; })) {
      problems.push_back({doc->display, "/hardware", fmt::format("unknown hardware '{}'", cal->hardware)});
    } else if (engine == engines.end()) {
      problems.push_back({doc->display, "/engine", fmt::format("unknown engine '{}'", cal->engine)});
    } else if (!engine->backends.count(cal->backend)) {
      std::string names;
      for (const auto& [name, b] : engine->backends) names += (names.empty() ? "" : ", ") + name;
      problems.push_back(
          {doc->display, "/backend", fmt::format("engine '{}' has no backend '{}' (it has {})", cal->engine, cal->backend, names)});
    } else {
      cal->origin = doc->display;
      cal->backend_profile = apply_calibration(engine->backends.at(cal->backend), cal->factors);
      auto same = std::find_if(calibrations.begin(), calibrations.end(), [&](const Calibration& c) {
        return c.hardware == cal->hardware && c.engine == cal->engine && c.backend == cal->backend;
      });
      if (same == calibrations.end())
        calibrations.push_back(std::move(*cal));
      else
        *same = std::move(*cal);
    }
  }
}

}  // namespace

void Catalog::build(const LoadOptions& options, bool lazy, std::vector<Problem>& problems, Catalog& out) {
  std::vector<DataDocument> docs;
  collect_embedded(docs, options.validate_embedded, lazy && !options.validate_embedded, problems);
  for (const auto& dir : options.overlay_dirs) collect_overlay(dir, docs, problems);
  resolve_extends(docs, problems);

  std::map<std::string, bool> from_overlay;
  std::vector<const DataDocument*> calibration_docs;
  for (auto& doc : docs) {
    std::vector<Problem> found;
    if (doc.dropped) continue;
    if (doc.unparsed && doc.kind == "hardware") {
      HardwareProfile hw;  // a placeholder with the names the index holds; parsed when it is asked for
      hw.id = std::string(doc.unparsed->id);
      hw.aliases = lines(doc.unparsed->aliases);
      hw.default_for = lines(doc.unparsed->default_for);
      place(out.hardware_, out.hardware_unparsed_, std::move(hw), doc, out.origin_, from_overlay, problems);
    } else if (doc.unparsed && doc.kind == "models") {
      ModelSpec model;
      model.id = std::string(doc.unparsed->id);
      model.aliases = lines(doc.unparsed->aliases);
      model.model_type = std::string(doc.unparsed->model_type);  // what models_of_type() filters on before parsing
      place(out.models_, out.models_unparsed_, std::move(model), doc, out.origin_, from_overlay, problems);
    } else if (doc.kind == "hardware") {
      auto hw = hardware_from_document(doc.json, found);
      add_with_file(found, doc, problems);
      if (hw) place(out.hardware_, out.hardware_unparsed_, std::move(*hw), doc, out.origin_, from_overlay, problems);
    } else if (doc.kind == "models") {
      auto model = model_from_json(doc.json, found);
      add_with_file(found, doc, problems);
      if (model) place(out.models_, out.models_unparsed_, std::move(*model), doc, out.origin_, from_overlay, problems);
    } else if (doc.kind == "engines") {
      auto engine = engine_from_json(doc.json, found);
      add_with_file(found, doc, problems);
      std::vector<std::string_view> unparsed;  // engines are always parsed
      if (engine) place(out.engines_, unparsed, std::move(*engine), doc, out.origin_, from_overlay, problems);
    } else if (doc.kind == "training") {
      out.training_documents_.emplace_back(doc.display, std::move(doc.json));
    } else if (doc.kind == "rules") {
      out.rule_documents_.emplace_back(doc.display, std::move(doc.json));
    } else if (doc.kind == "calibrations") {
      calibration_docs.push_back(&doc);  // resolved once every device and engine is known
    } else if (doc.kind == "shapes") {
      auto shape = params_shape_from_json(doc.json, found);
      add_with_file(found, doc, problems);
      if (shape && shape->id == "params-default") out.params_shape_ = std::move(*shape);
    } else if (doc.kind == "quant") {
      out.quant_.add_document(doc.json, found);
      add_with_file(found, doc, problems);
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

  add_calibrations(calibration_docs, out.hardware_, out.engines_, out.calibrations_, problems);
}

Catalog Catalog::load(const LoadOptions& options) {
  std::vector<Problem> problems;
  Catalog c;
  build(options, true, problems, c);
  if (!problems.empty()) throw_problems(problems);
  return c;
}

std::vector<Problem> Catalog::validate(const LoadOptions& options) {
  std::vector<Problem> problems;
  Catalog c;
  LoadOptions checked = options;
  checked.validate_embedded = true;
  build(checked, false, problems, c);
  return problems;
}

const HardwareProfile& Catalog::hardware_entry(std::size_t i) const {
  const std::lock_guard lock(entry_lock_.mutex);
  return materialize(hardware_, hardware_unparsed_, i, origin(hardware_[i].id), hardware_from_document);
}

const ModelSpec& Catalog::model_entry(std::size_t i) const {
  const std::lock_guard lock(entry_lock_.mutex);
  return materialize(models_, models_unparsed_, i, origin(models_[i].id),
                     [](const nlohmann::json& j, std::vector<Problem>& found) { return model_from_json(j, found); });
}

const std::vector<HardwareProfile>& Catalog::hardware() const {
  for (std::size_t i = 0; i < hardware_.size(); ++i) hardware_entry(i);
  return hardware_;
}

const std::vector<ModelSpec>& Catalog::models() const {
  for (std::size_t i = 0; i < models_.size(); ++i) model_entry(i);
  return models_;
}

std::vector<const ModelSpec*> Catalog::models_of_type(std::string_view model_type) const {
  std::vector<const ModelSpec*> out;
  for (std::size_t i = 0; i < models_.size(); ++i) {
    // A placeholder whose index names another type is left unparsed; one that names none is parsed to see.
    bool skip = false;
    {
      const std::lock_guard lock(entry_lock_.mutex);
      const bool placeholder = i < models_unparsed_.size() && models_unparsed_[i].data() != nullptr;
      skip = placeholder && !models_[i].model_type.empty() && models_[i].model_type != model_type;
    }
    if (skip) continue;
    const ModelSpec& m = model_entry(i);
    if (m.model_type == model_type) out.push_back(&m);
  }
  return out;
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
  for (std::size_t i = 0; i < hardware_.size(); ++i)
    if (hardware_[i].id == found->id) return hardware_entry(i);
  throw Error(ExitCode::kRuntime, "internal: hardware id '" + found->id + "' vanished");
}

const ModelSpec& Catalog::resolve_model(std::string_view name, Resolution* how) const {
  auto found = model_names_.find(name);
  if (!found) model_names_.throw_unknown("model", name, "optadvisor models");
  if (how) *how = *found;
  for (std::size_t i = 0; i < models_.size(); ++i)
    if (models_[i].id == found->id) return model_entry(i);
  throw Error(ExitCode::kRuntime, "internal: model id '" + found->id + "' vanished");
}

const ParamsShape& Catalog::params_shape() const {
  if (!params_shape_) throw Error(ExitCode::kRuntime, "the data has no shapes/params-default.json: --params cannot build a model");
  return *params_shape_;
}

const EngineProfile& Catalog::resolve_engine(std::string_view name) const {
  const std::string_view base = name.substr(0, name.find_first_of(":@"));
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
