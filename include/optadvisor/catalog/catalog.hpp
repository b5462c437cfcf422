// SPDX-License-Identifier: MIT
// The loaded database: the data/ files embedded in the binary, plus overlay
// directories (--data-dir, $OPTADVISOR_DATA_DIR) that add or replace entries.
// Every file is checked against its JSON Schema and then semantically; all
// problems are collected, with file and JSON pointer.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "optadvisor/catalog/calibration.hpp"
#include "optadvisor/catalog/engine.hpp"
#include "optadvisor/base/error.hpp"
#include "optadvisor/catalog/hardware.hpp"
#include "optadvisor/catalog/model.hpp"
#include "optadvisor/catalog/quant.hpp"

namespace optadvisor {

struct LoadOptions {
  /// Directories laid out like data/ (hardware/, models/, quant/, engines/, training/),
  /// applied in order after the embedded data; a later entry with the same id wins.
  std::vector<std::filesystem::path> overlay_dirs;
  /// Schema-check the embedded files too (validate-data does; the tests do).
  /// Off by default: the embedded data is checked when it is built and tested.
  bool validate_embedded = false;
};

/// How a user's name reached an entry.
struct Resolution {
  std::string query;
  std::string id;
  std::string via;  ///< "id", "alias" or "default bin"
};

/// Normalized names (ids, aliases, default bins) of one kind of entry.
class NameIndex {
 public:
  /// Adds a name; returns the id it already leads to when that is another id.
  std::optional<std::string> add(const std::string& name, const std::string& id, const std::string& via);
  std::optional<Resolution> find(std::string_view name) const;
  /// Throws bad_input "unknown <kind> 'name'" with the closest ids as a hint.
  [[noreturn]] void throw_unknown(std::string_view kind, std::string_view name, std::string_view list_command) const;

 private:
  std::map<std::string, Resolution> names_;
};

class Catalog {
 public:
  /// Loads embedded data and overlays; throws Error(kBadInput) naming the first
  /// problem (and how many more) when any file is invalid.
  static Catalog load(const LoadOptions& options);
  /// Checks every file and returns every problem found (empty: all valid).
  static std::vector<Problem> validate(const LoadOptions& options);

  /// Every hardware profile (and below, model preset). The shipped ones are parsed when first asked for,
  /// alone by resolve_*() or all by these lists; a returned reference stays valid as long as the catalog.
  const std::vector<HardwareProfile>& hardware() const;
  const std::vector<ModelSpec>& models() const;
  /// The model presets whose HF model_type is `model_type`, in catalog order; parses only those
  /// (and any whose type the embedded index does not record).
  std::vector<const ModelSpec*> models_of_type(std::string_view model_type) const;
  const std::vector<EngineProfile>& engines() const { return engines_; }
  const QuantDb& quant() const { return quant_; }
  /// The shape `--params N` builds (data/shapes/params-default.json).
  const ParamsShape& params_shape() const;
  /// Schema-checked documents of data/training/ (training engine profiles and
  /// published runs), keyed by display path; parsed by the training module.
  const std::vector<std::pair<std::string, nlohmann::json>>& training_documents() const { return training_documents_; }
  /// Schema-checked documents of data/rules/ (playbook rules, assumptions and
  /// advisor defaults), keyed by display path, embedded first, then overlays;
  /// parsed by the rule book (rules.hpp).
  const std::vector<std::pair<std::string, nlohmann::json>>& rule_documents() const { return rule_documents_; }
  /// The user's calibrations (calibrations/ in overlays), one per device and engine backend; the last loaded wins.
  const std::vector<Calibration>& calibrations() const { return calibrations_; }
  /// The calibration of `backend` of `engine` on device `hardware` (ids), nullptr when there is none.
  const Calibration* find_calibration(std::string_view hardware, std::string_view engine, std::string_view backend) const;

  /// Where an entry came from ("data/hardware/..." or an overlay path).
  const std::string& origin(const std::string& id) const;

  std::optional<Resolution> find_hardware(std::string_view name) const { return hardware_names_.find(name); }
  /// As find_hardware, but an unknown name throws bad_input with suggestions.
  /// ("--hw auto" is the command line's: it detects the machine and passes the id.)
  const HardwareProfile& resolve_hardware(std::string_view name, Resolution* how = nullptr) const;
  std::optional<Resolution> find_model(std::string_view name) const { return model_names_.find(name); }
  const ModelSpec& resolve_model(std::string_view name, Resolution* how = nullptr) const;
  /// An engine id with an optional backend, "llama.cpp:metal".
  const EngineProfile& resolve_engine(std::string_view name) const;

  /// Kept for `hw show`; same as origin().
  const std::string& hardware_origin(const std::string& id) const { return origin(id); }

 private:
  /// `lazy`: leave the shipped hardware profiles and model presets unparsed until they are asked for
  /// (load()); validate() parses and checks everything.
  static void build(const LoadOptions& options, bool lazy, std::vector<Problem>& problems, Catalog& out);
  /// Entry i, parsed, checked and converted in place first when it is still a placeholder.
  const HardwareProfile& hardware_entry(std::size_t i) const;
  const ModelSpec& model_entry(std::size_t i) const;

  // A placeholder holds only the id and names (from the index embedded with the data); its text is
  // in *_unparsed_ at the same position until it is parsed (under entry_lock_). The vectors never
  // grow after build(), so the entries keep their addresses.
  /// Held while an entry is looked at or parsed, so that threads (the planner's) may share a catalog.
  /// Moving a catalog gives it a fresh one.
  struct EntryLock {
    std::mutex mutex;
    EntryLock() = default;
    EntryLock(EntryLock&&) noexcept {}
    EntryLock& operator=(EntryLock&&) noexcept { return *this; }
  };
  mutable EntryLock entry_lock_;
  mutable std::vector<HardwareProfile> hardware_;
  mutable std::vector<std::string_view> hardware_unparsed_;
  mutable std::vector<ModelSpec> models_;
  mutable std::vector<std::string_view> models_unparsed_;
  std::vector<EngineProfile> engines_;
  QuantDb quant_;
  std::optional<ParamsShape> params_shape_;
  std::vector<std::pair<std::string, nlohmann::json>> training_documents_;
  std::vector<std::pair<std::string, nlohmann::json>> rule_documents_;
  std::vector<Calibration> calibrations_;
  std::map<std::string, std::string> origin_;
  NameIndex hardware_names_;
  NameIndex model_names_;
  NameIndex engine_names_;
};

/// Checks a document against the named schema (e.g. "hardware"); problems get
/// the display name and a JSON pointer. The schemas are embedded.
void check_against_schema(const std::string& schema_name, const nlohmann::json& doc, const std::string& display,
                          std::vector<Problem>& problems);

/// The version of the embedded database: data/VERSION plus a digest of the
/// embedded files, e.g. "2026.11.30+3f2a9c1d0e4b".
std::string data_version();

/// Overlay directories from --data-dir values and $OPTADVISOR_DATA_DIR (colon-separated), env first.
std::vector<std::filesystem::path> overlay_dirs_from(const std::vector<std::string>& cli_dirs, const char* env_value);

}  // namespace optadvisor
