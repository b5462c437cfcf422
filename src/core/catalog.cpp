// SPDX-License-Identifier: MIT
#include "optadvisor/catalog.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <system_error>

#include <fmt/format.h>

#include "optadvisor/embedded.hpp"
#include "optadvisor/names.hpp"

namespace optadvisor {
namespace {

namespace fs = std::filesystem;

/// data/ subfolder -> schema name (data/schema/<name>.schema.json).
const std::map<std::string, std::string>& schema_for_kind() {
  static const std::map<std::string, std::string> m = {
      {"hardware", "hardware"}, {"models", "model"}, {"quant", "quant"}, {"engines", "engine"}, {"rules", "rule"}};
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
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 3, column 5: ..."; keep the readable part.
    std::string what = e.what();
    auto pos = what.find("parse error");
    problems.push_back({display, "", "invalid JSON: " + (pos == std::string::npos ? what : what.substr(pos))});
    return std::nullopt;
  }
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
    if (it->is_regular_file(ec) && it->path().extension() == ".json") files.push_back(it->path());
  }
  if (ec) problems.push_back({dir.string(), "", "cannot list directory: " + ec.message()});
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    const std::string display = path.string();
    const std::string relative = fs::relative(path, dir, ec).generic_string();
    const std::string kind = first_component(relative);
    if (!schema_for_kind().count(kind)) {
      problems.push_back({display, "",
                          "unknown data kind; put the file under hardware/, models/, quant/, engines/ or rules/"});
      continue;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      problems.push_back({display, "", "cannot read file"});
      continue;
    }
    std::ostringstream text;
    text << in.rdbuf();
    auto json = parse_document(text.str(), display, problems);
    if (!json) continue;
    const auto& schema = schema_for_kind().at(kind);
    const std::size_t before = problems.size();
    if (has_embedded_schema(schema)) check_against_schema(schema, *json, display, problems);
    if (problems.size() == before) docs.push_back({kind, display, std::move(*json), true});
  }
}

}  // namespace

void Catalog::build(const LoadOptions& options, std::vector<Problem>& problems, Catalog& out) {
  auto& hardware = out.hardware_;
  auto& origin = out.hardware_origin_;
  auto& names = out.hardware_names_;
  auto& others = out.documents_;
  std::vector<DataDocument> docs;
  collect_embedded(docs, options.validate_embedded, problems);
  for (const auto& dir : options.overlay_dirs) collect_overlay(dir, docs, problems);

  std::map<std::string, std::size_t> index_by_id;
  std::map<std::string, bool> id_from_overlay;
  for (auto& doc : docs) {
    if (doc.kind != "hardware") {
      others.push_back(std::move(doc));
      continue;
    }
    std::vector<Problem> found;
    auto hw = hardware_from_json(doc.json, found);
    for (auto& p : found) {
      p.file = doc.display;
      problems.push_back(std::move(p));
    }
    if (!hw) continue;
    hw->document = doc.json;
    auto existing = index_by_id.find(hw->id);
    if (existing == index_by_id.end()) {
      index_by_id[hw->id] = hardware.size();
      origin[hw->id] = doc.display;
      id_from_overlay[hw->id] = doc.overlay;
      hardware.push_back(std::move(*hw));
    } else if (doc.overlay && !id_from_overlay[hw->id]) {
      // An overlay replaces a shipped profile.
      origin[hw->id] = doc.display;
      id_from_overlay[hw->id] = true;
      hardware[existing->second] = std::move(*hw);
    } else {
      problems.push_back({doc.display, "/id", fmt::format("duplicate id '{}' (also defined in {})", hw->id, origin[hw->id])});
    }
  }

  // Names: ids first, then aliases and default bins; a name may lead to one device only.
  for (const auto& hw : hardware) names[normalize_name(hw.id)] = {hw.id, hw.id, "id"};
  for (const auto& hw : hardware) {
    auto add = [&](const std::string& name, const char* via, const char* field) {
      const std::string key = normalize_name(name);
      auto it = names.find(key);
      if (it != names.end() && it->second.id != hw.id) {
        problems.push_back({origin[hw.id], std::string("/") + field,
                            fmt::format("name '{}' already refers to '{}'", name, it->second.id)});
        return;
      }
      if (it == names.end()) names[key] = {name, hw.id, via};
    };
    for (const auto& a : hw.aliases) add(a, "alias", "aliases");
    for (const auto& d : hw.default_for) add(d, "default bin", "default_for");
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

const std::string& Catalog::hardware_origin(const std::string& id) const {
  static const std::string unknown;
  auto it = hardware_origin_.find(id);
  return it == hardware_origin_.end() ? unknown : it->second;
}

std::optional<Resolution> Catalog::find_hardware(std::string_view name) const {
  auto it = hardware_names_.find(normalize_name(name));
  if (it == hardware_names_.end()) return std::nullopt;
  Resolution r = it->second;
  r.query = std::string(name);
  return r;
}

const HardwareProfile& Catalog::hardware_by_id(const std::string& id) const {
  for (const auto& hw : hardware_)
    if (hw.id == id) return hw;
  throw Error(ExitCode::kRuntime, "internal: hardware id '" + id + "' vanished");
}

const HardwareProfile& Catalog::resolve_hardware(std::string_view name, Resolution* how) const {
  auto found = find_hardware(name);
  if (!found) {
    std::vector<std::string> candidates;
    for (const auto& hw : hardware_) {
      candidates.push_back(hw.id);
      candidates.insert(candidates.end(), hw.aliases.begin(), hw.aliases.end());
    }
    std::vector<std::string> close;
    for (const auto& n : closest_names(name, candidates, 8)) {
      const std::string id = find_hardware(n)->id;
      if (std::find(close.begin(), close.end(), id) == close.end() && close.size() < 3) close.push_back(id);
    }
    std::string hint;
    if (!close.empty()) {
      hint = "did you mean ";
      for (std::size_t i = 0; i < close.size(); ++i)
        hint += (i == 0 ? "" : (i + 1 == close.size() ? " or " : ", ")) + ("'" + close[i] + "'");
      hint += "? (optadvisor hw list)";
    } else {
      hint = "see 'optadvisor hw list' for the known devices";
    }
    throw bad_input(fmt::format("unknown hardware '{}'", name), hint);
  }
  if (how) *how = *found;
  return hardware_by_id(found->id);
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
