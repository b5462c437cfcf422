// SPDX-License-Identifier: MIT
#include "common.hpp"

#include <cstdlib>
#include <unistd.h>

namespace optadvisor::cli {

void FormatOption::attach(CLI::App* app, bool allow_markdown) {
  std::vector<std::string> choices = {"text", "json"};
  if (allow_markdown) choices.push_back("markdown");
  app->add_option("--format", format, "Output format")->check(CLI::IsMember(choices))->capture_default_str();
  app->add_flag("--json", json, "Same as --format json");
}

OutputFormat FormatOption::get() const {
  if (json || format == "json") return OutputFormat::kJson;
  if (format == "markdown") return OutputFormat::kMarkdown;
  return OutputFormat::kText;
}

void add_model_options(CLI::App* app, ModelRequest& model) {
  app->add_option("--model,-m", model.preset, "Model preset id (optadvisor models), e.g. llama-3.1-8b");
  app->add_option("--model-config", model.config_path, "A Hugging Face config.json")->type_name("FILE");
  app->add_option("--gguf", model.gguf_path, "A GGUF file (only its header is read)")->type_name("FILE");
  app->add_option("--params", model.params, "A bare dense model of this size: 70B, 7e9");
}

Catalog load_catalog(const GlobalOptions& global) {
  LoadOptions options;
  options.overlay_dirs = overlay_dirs_from(global.data_dirs, std::getenv("OPTADVISOR_DATA_DIR"));
  return Catalog::load(options);
}

Style stdout_style(const GlobalOptions& global) {
  Style style;
  const char* no_color = std::getenv("NO_COLOR");
  style.color = !global.no_color && (no_color == nullptr || *no_color == '\0') && isatty(STDOUT_FILENO) != 0;
  return style;
}

}  // namespace optadvisor::cli
