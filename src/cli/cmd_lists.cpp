// SPDX-License-Identifier: MIT
// `optadvisor models`, `optadvisor engines`, `optadvisor quants`: what the catalog knows.
#include <fmt/format.h>

#include "common.hpp"
#include "base/table.hpp"
#include "base/units.hpp"

namespace optadvisor::cli {
namespace {

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

void print_table(const Table& table, OutputFormat format, const std::string& footer) {
  fmt::print("{}", format == OutputFormat::kMarkdown ? table.to_markdown() : table.to_text());
  if (!footer.empty()) fmt::print("\n{}\n", footer);
}

}  // namespace

void register_catalog_lists(CLI::App& app, const GlobalOptions& global) {
  auto models_format = std::make_shared<FormatOption>();
  auto* models = app.add_subcommand("models", "List the model presets");
  models_format->attach(models);
  models->callback([models_format, &global] {
    const Catalog& catalog = load_catalog(global);
    if (models_format->get() == OutputFormat::kJson) {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& m : catalog.models())
        list.push_back({{"id", m.id}, {"name", m.name}, {"model_type", m.model_type}, {"params", parameter_count(m)},
                        {"active_params", active_parameter_count(m)}, {"layers", m.num_hidden_layers},
                        {"max_context_tokens", m.max_position_embeddings}, {"aliases", m.aliases}});
      fmt::print("{}\n", nlohmann::json{{"schema_version", kSchemaVersion}, {"models", list}}.dump(2));
      return;
    }
    using A = Table::Align;
    Table t({"ID", "NAME", "TYPE", "PARAMS B", "ACTIVE B", "LAYERS", "CONTEXT", "KV BYTES/TOKEN (F16)"},
            {A::kLeft, A::kLeft, A::kLeft, A::kRight, A::kRight, A::kRight, A::kRight, A::kRight});
    for (const auto& m : catalog.models())
      t.add_row({m.id, m.name, m.model_type, format_sig3(static_cast<double>(parameter_count(m)) / 1e9),
                 format_sig3(static_cast<double>(active_parameter_count(m)) / 1e9), std::to_string(m.num_hidden_layers),
                 std::to_string(m.max_position_embeddings), std::to_string(kv_cache_elements_per_token_full(m) * 2)});
    print_table(t, models_format->get(), fmt::format("{} presets. Bring your own with --model-config config.json or --gguf file.gguf.",
                                                     catalog.models().size()));
  });

  auto engines_format = std::make_shared<FormatOption>();
  auto* engines = app.add_subcommand("engines", "List the inference engines, their backends and calibration");
  engines_format->attach(engines);
  engines->callback([engines_format, &global] {
    const Catalog& catalog = load_catalog(global);
    if (engines_format->get() == OutputFormat::kJson) {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& e : catalog.engines()) {
        nlohmann::json backends = nlohmann::json::object();
        for (const auto& [name, b] : e.backends)
          backends[name] = {{"decode_bandwidth_efficiency", b.decode_bandwidth_efficiency},
                            {"prefill_compute_efficiency", b.prefill_compute_efficiency},
                            {"layer_overhead_s", b.layer_overhead_s}, {"step_overhead_s", b.step_overhead_s},
                            {"calibrated_on", b.calibrated_on.size()}};
        list.push_back({{"id", e.id}, {"name", e.name}, {"kind", e.kind}, {"backends", backends}, {"quants", e.quants},
                        {"default_for_classes", e.default_for_classes}});
      }
      fmt::print("{}\n", nlohmann::json{{"schema_version", kSchemaVersion}, {"engines", list}}.dump(2));
      return;
    }
    using A = Table::Align;
    Table t({"ENGINE", "BACKEND", "DECODE BW EFF", "PREFILL EFF", "LAYER OVERHEAD", "DEFAULT FOR", "CALIBRATED ON"},
            {A::kLeft, A::kLeft, A::kRight, A::kRight, A::kRight, A::kLeft, A::kRight});
    for (const auto& e : catalog.engines())
      for (const auto& [name, b] : e.backends)
        t.add_row({e.id, name, fmt::format("{:.2f}", b.decode_bandwidth_efficiency), fmt::format("{:.2f}", b.prefill_compute_efficiency),
                   format_seconds(b.layer_overhead_s), join(e.default_for_classes),
                   b.calibrated_on.empty() ? "-" : std::to_string(b.calibrated_on.size()) + " rows"});
    print_table(t, engines_format->get(),
                "Efficiencies are fractions of the device's peak; '-' means set by analogy, not yet fitted (docs/accuracy.md).");
  });

  auto quants_format = std::make_shared<FormatOption>();
  auto* quants = app.add_subcommand("quants", "List the quantization formats");
  quants_format->attach(quants);
  quants->callback([quants_format, &global] {
    const Catalog& catalog = load_catalog(global);
    if (quants_format->get() == OutputFormat::kJson) {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& f : catalog.quant().formats())
        list.push_back({{"id", f.id}, {"name", f.name}, {"container", std::string(to_string(f.container))}, {"description", f.description}});
      fmt::print("{}\n", nlohmann::json{{"schema_version", kSchemaVersion}, {"quants", list}}.dump(2));
      return;
    }
    Table t({"ID", "CONTAINER", "DESCRIPTION"});
    for (const auto& f : catalog.quant().formats()) t.add_row({f.id, std::string(to_string(f.container)), f.description});
    print_table(t, quants_format->get(), "Sizes per model: optadvisor size --model M --quant all");
  });
}

}  // namespace optadvisor::cli
