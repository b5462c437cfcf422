// SPDX-License-Identifier: MIT
#include "optadvisor/render/report_catalog.hpp"

#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/table.hpp"
#include "base/units.hpp"

namespace optadvisor {
namespace {

std::string table_with_footer(const Table& table, OutputFormat format, const std::string& footer) {
  std::string out = format == OutputFormat::kMarkdown ? table.to_markdown() : table.to_text();
  if (!footer.empty()) out += "\n" + footer + "\n";
  return out;
}

std::string document(const char* key, const nlohmann::json& list) {
  return nlohmann::json{{"schema_version", kSchemaVersion}, {key, list}}.dump(2) + "\n";
}

}  // namespace

std::string render_model_list(const std::vector<ModelSummary>& models, OutputFormat format) {
  if (format == OutputFormat::kJson) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& s : models) {
      const ModelSpec& m = *s.spec;
      list.push_back({{"id", m.id},
                      {"name", m.name},
                      {"model_type", m.model_type},
                      {"params", s.params},
                      {"active_params", s.active_params},
                      {"layers", m.num_hidden_layers},
                      {"max_context_tokens", m.max_position_embeddings},
                      {"aliases", m.aliases}});
    }
    return document("models", list);
  }
  using A = Table::Align;
  std::string dtype = models.empty() ? "f16" : models.front().kv_dtype;
  for (char& c : dtype) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  Table t({"ID", "NAME", "TYPE", "PARAMS B", "ACTIVE B", "LAYERS", "CONTEXT", "KV BYTES/TOKEN (" + dtype + ")"},
          {A::kLeft, A::kLeft, A::kLeft, A::kRight, A::kRight, A::kRight, A::kRight, A::kRight});
  for (const auto& s : models) {
    const ModelSpec& m = *s.spec;
    t.add_row({m.id, m.name, m.model_type, format_sig3(static_cast<double>(s.params) / 1e9),
               format_sig3(static_cast<double>(s.active_params) / 1e9), std::to_string(m.num_hidden_layers),
               std::to_string(m.max_position_embeddings), fmt::format("{:.0f}", s.kv_bytes_per_token)});
  }
  return table_with_footer(t, format,
                           fmt::format("{} presets. Bring your own with --model-config config.json or --gguf file.gguf.", models.size()));
}

std::string render_engine_list(const std::vector<EngineProfile>& engines, OutputFormat format) {
  if (format == OutputFormat::kJson) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& e : engines) {
      nlohmann::json backends = nlohmann::json::object();
      for (const auto& [name, b] : e.backends)
        backends[name] = {{"decode_bandwidth_efficiency", b.decode_bandwidth_efficiency},
                          {"prefill_compute_efficiency", b.prefill_compute_efficiency},
                          {"layer_overhead_s", b.layer_overhead_s},
                          {"step_overhead_s", b.step_overhead_s},
                          {"calibrated_on", b.calibrated_on.size()}};
      list.push_back({{"id", e.id},
                      {"name", e.name},
                      {"kind", e.kind},
                      {"backends", backends},
                      {"quants", e.quants},
                      {"default_for_classes", e.default_for_classes}});
    }
    return document("engines", list);
  }
  using A = Table::Align;
  Table t({"ENGINE", "BACKEND", "DECODE BW EFF", "PREFILL EFF", "LAYER OVERHEAD", "DEFAULT FOR", "CALIBRATED ON"},
          {A::kLeft, A::kLeft, A::kRight, A::kRight, A::kRight, A::kLeft, A::kRight});
  for (const auto& e : engines)
    for (const auto& [name, b] : e.backends)
      t.add_row({e.id, name, fmt::format("{:.2f}", b.decode_bandwidth_efficiency), fmt::format("{:.2f}", b.prefill_compute_efficiency),
                 format_seconds(b.layer_overhead_s), fmt::format("{}", fmt::join(e.default_for_classes, ", ")),
                 b.calibrated_on.empty() ? "-" : std::to_string(b.calibrated_on.size()) + " rows"});
  return table_with_footer(t, format,
                           "Efficiencies are fractions of the device's peak; '-' means set by analogy, not yet fitted (docs/accuracy.md).");
}

std::string render_quant_list(const std::vector<QuantFormat>& formats, OutputFormat format) {
  if (format == OutputFormat::kJson) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& f : formats)
      list.push_back({{"id", f.id}, {"name", f.name}, {"container", std::string(to_string(f.container))}, {"description", f.description}});
    return document("quants", list);
  }
  Table t({"ID", "CONTAINER", "DESCRIPTION"});
  for (const auto& f : formats) t.add_row({f.id, std::string(to_string(f.container)), f.description});
  return table_with_footer(t, format, "Sizes per model: optadvisor size --model M --quant all");
}

}  // namespace optadvisor
