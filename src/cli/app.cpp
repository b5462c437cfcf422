// SPDX-License-Identifier: MIT
// The command line: argument parsing only. One try/catch maps failures to
// exit codes (see README): 0 ok, 1 runtime, 2 bad input, 3 check failed.
// main.cpp calls run(); the CLI fuzz target calls it in-process.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <system_error>

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "app.hpp"
#include "base/input_file.hpp"
#include "common.hpp"
#include "detect_tools.hpp"
#include "optadvisor/base/error.hpp"
#include "optadvisor/base/version.hpp"

namespace {

// Messages echo file names, arguments and file contents: control characters are escaped (one
// line each, no terminal escapes) and a runaway message is cut.
constexpr std::size_t kMaxMessageChars = 2000;

void print_error(const std::string& message, const std::string& hint) {
  std::fflush(stdout);
  std::string text = fmt::format("optadvisor: error: {}\n", optadvisor::printable(message, kMaxMessageChars));
  if (!hint.empty()) text += fmt::format("hint: {}\n", optadvisor::printable(hint, kMaxMessageChars));
  std::fputs(text.c_str(), stderr);  // never throws: with stderr unwritable too, the exit status is all that is left
}

/// The innermost subcommand that was parsed, for a precise --help hint.
std::string command_path(const CLI::App* app) {
  std::string path = "optadvisor";
  while (app != nullptr) {
    auto subs = app->get_subcommands();
    if (subs.empty()) break;
    app = subs.front();
    path += " " + app->get_name();
  }
  return path;
}

}  // namespace

namespace optadvisor::cli {

namespace {

/// The stderr logger: colour only on a terminal (spdlog checks), and never with NO_COLOR or
/// --no-color (applied once the options are parsed).
std::shared_ptr<spdlog::logger> stderr_logger() {
  const char* no_color_env = std::getenv("NO_COLOR");
  const bool no_color_env_set = no_color_env != nullptr && *no_color_env != '\0';
  auto logger = spdlog::get("optadvisor");  // set up once per process (run() may be called again in-process)
  if (!logger) logger = spdlog::stderr_color_mt("optadvisor", no_color_env_set ? spdlog::color_mode::never : spdlog::color_mode::automatic);
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("optadvisor: %l: %v");
  spdlog::set_level(spdlog::level::warn);
  return logger;
}

/// The options before any subcommand: --version, --data-dir, the log level and colour.
void add_global_options(CLI::App& app, GlobalOptions& global, bool& show_version, bool& quiet) {
  app.add_flag("--version", show_version, "Print the program and data versions");
  app.add_option("--data-dir", global.data_dirs,
                 "Add or override data from a directory laid out like data/ (repeatable; also $OPTADVISOR_DATA_DIR)")
      ->type_name("DIR");
  app.add_flag("-v,--verbose", global.verbosity, "Log more to stderr (repeat for debug)");
  app.add_flag("--quiet", quiet, "Only errors on stderr");
  app.add_flag("--no-color", global.no_color, "Never colour the output (NO_COLOR is honoured too)");
}

/// Every subcommand, in the order --help lists them.
void register_commands(CLI::App& app, GlobalOptions& global) {
  register_hw(app, global);
  register_validate_data(app, global);
  register_size(app, global);
  register_estimate(app, global);
  register_catalog_lists(app, global);
  register_advise(app, global);
  register_rules(app, global);
  register_compare(app, global);
  register_search(app, global);
  register_serve(app, global);
  register_plan(app, global);
  register_report(app, global);
  register_calibrate(app, global);
  register_completion(app, global);
}

int run_command(int argc, char** argv) {
  using optadvisor::ExitCode;
  namespace cli = optadvisor::cli;

  auto logger = stderr_logger();

  CLI::App app{"optadvisor: what limits your model on this hardware, and what to do about it", "optadvisor"};
  app.set_help_all_flag("--help-all", "Show help for every subcommand");
  cli::GlobalOptions global;
  bool show_version = false;
  bool quiet = false;  // -q is --quant on the advisor's options
  add_global_options(app, global, show_version, quiet);
  app.fallthrough();

  register_commands(app, global);
  // optadvisor --hw H --goal G ...: the advisor without naming it.
  const auto advise_here = cli::add_advise_options(&app);

  app.parse_complete_callback([&] {
    if (quiet && global.verbosity > 0) throw optadvisor::bad_input("--quiet and --verbose contradict each other", "pass one of them");
    if (global.no_color)
      for (auto& sink : logger->sinks())
        if (auto colored = std::dynamic_pointer_cast<spdlog::sinks::stderr_color_sink_mt>(sink))
          colored->set_color_mode(spdlog::color_mode::never);
    if (quiet) spdlog::set_level(spdlog::level::err);
    if (global.verbosity >= 2)
      spdlog::set_level(spdlog::level::debug);
    else if (global.verbosity == 1)
      spdlog::set_level(spdlog::level::info);
    // Runs before any subcommand does: advisor options belong to no subcommand
    // (a subcommand's unknown options fall through to the main command).
    if (!app.get_subcommands().empty() && cli::advise_options_given(*advise_here))
      throw optadvisor::bad_input(
          fmt::format("'{}' does not take the advisor's options (--hw/--goal before it, or options it lacks)",
                      command_path(&app).substr(std::string("optadvisor ").size())),
          fmt::format("run '{} --help' for its options, or 'optadvisor --hw H --goal G' for the advisor", command_path(&app)));
  });

  try {
    app.parse(argc, argv);
    if (show_version) {
      fmt::print("optadvisor {} (data {})\n", optadvisor::program_version(), optadvisor::data_version());
      return 0;
    }
    if (app.get_subcommands().empty()) {
      if (cli::advise_options_given(*advise_here)) {
        cli::run_advise(*advise_here, global);
        return 0;
      }
      print_error("no command given", "try 'optadvisor --hw rtx5090 --goal latency', 'optadvisor hw list' or 'optadvisor --help'");
      return static_cast<int>(ExitCode::kBadInput);
    }
    return 0;
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    print_error(e.what(), fmt::format("run '{} --help' for usage", command_path(&app)));
    return static_cast<int>(ExitCode::kBadInput);
  } catch (const optadvisor::Error& e) {
    print_error(e.what(), e.hint());
    return static_cast<int>(e.code());
  } catch (const std::system_error& e) {  // writing stdout failed (fmt reports it as a system error)
    print_error(fmt::format("cannot write the output: {}", e.what()), "");
    return static_cast<int>(ExitCode::kRuntime);
  } catch (const std::bad_alloc&) {
    print_error("out of memory", "");
    return static_cast<int>(ExitCode::kRuntime);
  } catch (const std::exception& e) {
    print_error(fmt::format("internal failure: {}", e.what()), "please report this with the command line that caused it");
    return static_cast<int>(ExitCode::kRuntime);
  }
}

}  // namespace

int run(int argc, char** argv) {
  int code = run_command(argc, argv);
  // Output that fit the stdio buffer is written here; a full disk or closed pipe is a runtime failure.
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
    print_error("cannot write the output to stdout", "");
    if (code == 0) code = static_cast<int>(ExitCode::kRuntime);
  }
  return code;
}

}  // namespace optadvisor::cli
