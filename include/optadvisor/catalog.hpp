// SPDX-License-Identifier: MIT
// The loaded database: the data/ files embedded in the binary, plus overlay
// directories (--data-dir, $OPTADVISOR_DATA_DIR) that add or replace entries.
// Every file is checked against its JSON Schema and then semantically; all
// problems are collected, with file and JSON pointer.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "optadvisor/error.hpp"
#include "optadvisor/hardware.hpp"

namespace optadvisor {

struct LoadOptions {
  /// Directories laid out like data/ (hardware/, models/, quant/, engines/),
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

/// One raw data document before it is turned into a typed entry.
struct DataDocument {
  std::string kind;     ///< "hardware", "models", "quant", "engines", "rules"
  std::string display;  ///< "data/hardware/x.json" or the overlay file's path
  nlohmann::json json;
  bool overlay = false;
};

class Catalog {
 public:
  /// Loads embedded data and overlays; throws Error(kBadInput) naming the first
  /// problem (and how many more) when any file is invalid.
  static Catalog load(const LoadOptions& options);

  /// Checks every file and returns every problem found (empty: all valid).
  static std::vector<Problem> validate(const LoadOptions& options);

  const std::vector<HardwareProfile>& hardware() const { return hardware_; }
  /// Where each hardware id came from ("data/hardware/..." or an overlay path).
  const std::string& hardware_origin(const std::string& id) const;

  /// Looks a name up among ids, aliases and default bins, normalized.
  std::optional<Resolution> find_hardware(std::string_view name) const;
  /// As find_hardware, but an unknown name throws bad_input with suggestions.
  const HardwareProfile& resolve_hardware(std::string_view name, Resolution* how = nullptr) const;
  const HardwareProfile& hardware_by_id(const std::string& id) const;

  /// Raw documents of a kind other than hardware (models, quant, engines, ...),
  /// after overlays, keyed by file path; consumed by the other modules.
  const std::vector<DataDocument>& documents() const { return documents_; }

 private:
  static void build(const LoadOptions& options, std::vector<Problem>& problems, Catalog& out);

  std::vector<HardwareProfile> hardware_;
  std::map<std::string, std::string> hardware_origin_;
  std::map<std::string, Resolution> hardware_names_;  ///< normalized name -> resolution
  std::vector<DataDocument> documents_;
};

/// Checks a document against the named schema (e.g. "hardware"); problems get
/// the display name and a JSON pointer. The schemas are embedded.
void check_against_schema(const std::string& schema_name, const nlohmann::json& doc, const std::string& display,
                          std::vector<Problem>& problems);

/// Overlay directories from --data-dir values and $OPTADVISOR_DATA_DIR (colon-separated), env first.
std::vector<std::filesystem::path> overlay_dirs_from(const std::vector<std::string>& cli_dirs, const char* env_value);

}  // namespace optadvisor
