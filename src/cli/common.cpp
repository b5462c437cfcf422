// SPDX-License-Identifier: MIT
#include "common.hpp"

#include <cerrno>
#include <cstdio>
#include <deque>
#include <memory>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "base/output_file.hpp"

namespace optadvisor::cli {

void FormatOption::attach(CLI::App* app, bool allow_markdown, bool allow_html) {
  std::vector<std::string> choices = {"text", "json"};
  if (allow_markdown) choices.push_back("markdown");
  if (allow_html) choices.push_back("html");
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
  // html is a real format of a few commands: say where it is, not just that it is not here.
  const CLI::Validator no_html(
      [allow_html, list](std::string& value) -> std::string {
        if (allow_html || value != "html") return {};
        return "html is not an output format of this command (it has " + list +
               "); html reports come from 'optadvisor report', 'advise' and 'estimate'";
      },
      "");
  app->add_option("--format", format, "Output format")->check(no_html)->check(CLI::IsMember(choices))->capture_default_str();
  app->add_flag("--json", json, "Same as --format json");
}

OutputFormat FormatOption::get() const {
  if (json || format == "json") return OutputFormat::kJson;
  if (format == "markdown") return OutputFormat::kMarkdown;
  if (format == "html") return OutputFormat::kHtml;
  return OutputFormat::kText;
}

void RequireOption::attach(CLI::App* app) {
  app->add_option("--require", expressions,
                  "Fail (exit 3) unless this holds for the JSON output, e.g. 'decode.tokens_per_s>=30', memory.fits (repeatable)")
      ->type_name("EXPR");
}

std::vector<Requirement> RequireOption::parse() const {
  std::vector<Requirement> parsed;
  parsed.reserve(expressions.size());
  for (const auto& e : expressions) parsed.push_back(parse_requirement(e));
  return parsed;
}

void RequireOption::check_paths(const std::vector<Requirement>& requirements, const nlohmann::json& document) {
  if (requirements.empty()) return;
  for (const auto& r : check_requirements(requirements, document))
    if (r.missing)
      throw bad_input(fmt::format("--require '{}': {}", r.text, r.reason), "the path names a key of the command's --json output");
}

void RequireOption::enforce(const std::vector<Requirement>& requirements, const nlohmann::json& document) {
  if (requirements.empty()) return;
  check_paths(requirements, document);
  const auto results = check_requirements(requirements, document);
  int failed = 0;
  for (const auto& r : results) failed += r.passed ? 0 : 1;
  if (failed == 0) {
    spdlog::info("all {} requirement(s) met", results.size());
    return;
  }
  std::fflush(stdout);
  for (const auto& r : results)
    if (!r.passed) fmt::print(stderr, "optadvisor: requirement not met: {}: {}\n", r.text, r.reason);
  throw Error(ExitCode::kCheckFailed, fmt::format("{} of {} requirement(s) not met", failed, results.size()));
}

void add_model_options(CLI::App* app, ModelRequest& model) {
  app->add_option("--model,-m", model.preset, "Model preset id (optadvisor models), e.g. llama-3.1-8b");
  app->add_option("--model-config", model.config_path, "A Hugging Face config.json")->type_name("FILE");
  app->add_option("--gguf", model.gguf_path, "A GGUF file (only its header is read)")->type_name("FILE");
  app->add_option("--params", model.params, "A bare dense model of this size: 70B, 7e9");
}

std::optional<std::filesystem::path> user_data_dir() {
  // XDG Base Directory: $XDG_DATA_HOME when set to an absolute path, else ~/.local/share.
  const char* xdg = std::getenv("XDG_DATA_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::filesystem::path(xdg) / "optadvisor";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] != '\0') return std::filesystem::path(home) / ".local" / "share" / "optadvisor";
  return std::nullopt;
}

const Catalog& load_catalog(const GlobalOptions& global) {
  LoadOptions options;
  // The user's own data (calibrations written by `calibrate`) first, when it exists; --data-dir and
  // $OPTADVISOR_DATA_DIR apply after it.
  std::error_code ec;
  if (auto user = user_data_dir(); user && std::filesystem::is_directory(*user, ec)) options.overlay_dirs.push_back(*user);
  const auto dirs = overlay_dirs_from(global.data_dirs, std::getenv("OPTADVISOR_DATA_DIR"));
  options.overlay_dirs.insert(options.overlay_dirs.end(), dirs.begin(), dirs.end());
  // Catalogs are never destroyed: freeing the parsed documents would cost about a tenth of a
  // whole run (docs/performance.md). In-process callers (the CLI fuzz target) keep the last few.
  static auto* kept = new std::deque<std::unique_ptr<Catalog>>();
  kept->push_back(std::make_unique<Catalog>(Catalog::load(options)));
  if (kept->size() > 4) kept->pop_front();
  return *kept->back();
}

Style stdout_style(const GlobalOptions& global) {
  Style style;
  const char* no_color = std::getenv("NO_COLOR");
  style.color = !global.no_color && (no_color == nullptr || *no_color == '\0') && isatty(STDOUT_FILENO) != 0;
  return style;
}

void write_result(const std::string& text, const std::string& path) {
  if (path.empty() || path == "-") {
    fmt::print("{}", text);
    return;
  }
  write_file_replacing(path, text, "--out");
  fmt::print(stderr, "optadvisor: wrote {} ({} bytes)\n", path, text.size());
}

}  // namespace optadvisor::cli
