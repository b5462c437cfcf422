// SPDX-License-Identifier: MIT
// Where a model comes from: a catalog preset (--model), a Hugging Face
// config.json (--model-config), a GGUF header (--gguf) or a bare parameter
// count (--params). One resolved model for every command.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/catalog/model.hpp"
#include "optadvisor/catalog/quant.hpp"

namespace optadvisor {

struct ModelRequest {
  std::string preset;       ///< --model
  std::string config_path;  ///< --model-config
  std::string gguf_path;    ///< --gguf
  std::string params;       ///< --params "70B", "7e9"
  bool any() const { return !preset.empty() || !config_path.empty() || !gguf_path.empty() || !params.empty(); }
};

struct ResolvedModel {
  ModelSpec spec;
  std::string origin;             ///< "preset", "config.json path", "GGUF path", "--params"
  std::optional<Resolution> how;  ///< for presets
  /// The name the model was asked for by (a preset id or alias, as typed); "" for a file or --params.
  std::string asked() const { return how ? how->query : std::string(); }
  /// For GGUF files: the weights exactly as the file stores them.
  std::optional<WeightsBreakdown> gguf_weights;
  std::string gguf_quant_id;  ///< file type recorded in the GGUF, mapped to a quant id when known
  /// The per-tensor table prepare_scenario last computed for this model, in the format its
  /// format_id names: a scenario prepared from this model in that format reuses it (the advisor
  /// and the planners prepare one model many times). Shared and never changed after it is made.
  std::shared_ptr<const WeightsBreakdown> computed_weights;
  /// parameter_counts(spec), once prepare_scenario has worked it out (it depends on the spec alone,
  /// which is set when the model is resolved and never changed after).
  std::shared_ptr<const ParameterCounts> computed_counts;
  std::vector<std::string> assumptions;
};

/// Resolves exactly one model source; throws bad_input for none, several,
/// unknown presets, unreadable or invalid files.
ResolvedModel resolve_model(const Catalog& catalog, const ModelRequest& request);

/// Parses "70B", "7.5b", "125M", "7e9", "1.2T" into a parameter count.
/// Throws bad_input naming `option` for anything else, zero or negative.
double parse_param_count(const std::string& text, const std::string& option);

/// The facts llama-quantize's rules read, from a model.
QuantModelFacts quant_facts(const ModelSpec& spec);

/// Reads a whole text file; bad_input naming the path when it is missing, a directory or unreadable.
std::string read_text_file(const std::string& path, const std::string& what);

}  // namespace optadvisor
