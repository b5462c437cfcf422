// SPDX-License-Identifier: MIT
#include "optadvisor/readers/model_source.hpp"

#include <cmath>

#include <fmt/format.h>

#include "base/input_file.hpp"
#include "optadvisor/readers/gguf.hpp"

namespace optadvisor {

std::string read_text_file(const std::string& path, const std::string& what) {
  std::string why;
  std::optional<std::string> text = read_input_file(path, why);
  if (!text) {
    const std::string hint = why == "cannot be read" ? "check the file's permissions" : "";
    throw bad_input(fmt::format("{} '{}' {}", what, printable(path), why), hint);
  }
  return std::move(*text);
}

double parse_param_count(const std::string& text, const std::string& option) {
  std::string s;
  for (char c : text)
    if (c != '_' && c != ',' && c != ' ') s += c;
  double scale = 1;
  if (!s.empty()) {
    switch (std::tolower(static_cast<unsigned char>(s.back()))) {
      case 'k': scale = 1e3; break;
      case 'm': scale = 1e6; break;
      case 'b': scale = 1e9; break;
      case 't': scale = 1e12; break;
      default: break;
    }
    if (scale != 1) s.pop_back();
  }
  double value = 0;
  std::size_t used = 0;
  try {
    value = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (s.empty() || used != s.size() || !std::isfinite(value))
    throw bad_input(fmt::format("{} '{}' is not a parameter count", option, text), "write it like 70B, 7.5b, 125M or 7e9");
  value *= scale;
  if (value <= 0) throw bad_input(fmt::format("{} '{}' must be positive", option, text));
  return value;
}

QuantModelFacts quant_facts(const ModelSpec& spec) {
  QuantModelFacts f;
  f.arch = spec.model_type;
  f.n_layers = static_cast<uint32_t>(spec.num_hidden_layers);
  f.n_head = static_cast<uint32_t>(spec.num_attention_heads);
  f.n_head_kv = static_cast<uint32_t>(spec.num_key_value_heads);
  f.n_expert = static_cast<uint32_t>(spec.num_experts);
  f.tied_embeddings = spec.tie_word_embeddings;
  return f;
}

ResolvedModel resolve_model(const Catalog& catalog, const ModelRequest& request) {
  const int given = !request.preset.empty() + !request.config_path.empty() + !request.gguf_path.empty() + !request.params.empty();
  if (given == 0)
    throw bad_input("no model given", "pass --model ID (optadvisor models), --model-config config.json, --gguf FILE or --params 7B");
  if (given > 1) throw bad_input("give one of --model, --model-config, --gguf and --params, not several");
  ResolvedModel out;
  if (!request.preset.empty()) {
    Resolution how;
    out.spec = catalog.resolve_model(request.preset, &how);
    out.how = how;
    out.origin = catalog.origin(out.spec.id);
  } else if (!request.config_path.empty()) {
    const std::string text = read_text_file(request.config_path, "config file");
    std::string why;
    std::optional<nlohmann::json> config = parse_json_input(text, why);
    if (!config) throw bad_input(fmt::format("{}: invalid JSON: {}", printable(request.config_path), why));
    out.spec = model_from_hf_config(*config, request.config_path);
    out.origin = request.config_path;
  } else if (!request.gguf_path.empty()) {
    GgufModel g = read_gguf_model(request.gguf_path, catalog.quant());
    out.spec = std::move(g.spec);
    out.gguf_weights = std::move(g.weights);
    out.gguf_quant_id = g.quant_id;
    out.origin = request.gguf_path;
    out.assumptions = std::move(g.notes);
  } else {
    out.spec = model_from_params(parse_param_count(request.params, "--params"), catalog.params_shape());
    out.origin = "--params";
    out.assumptions = out.spec.notes;
  }
  return out;
}

}  // namespace optadvisor
