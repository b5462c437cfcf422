// SPDX-License-Identifier: MIT
// `optadvisor calibrate --from results.json --hw H`: fit an engine backend's
// efficiency factors on the user's own llama-bench / vLLM measurements and
// write them as an overlay under $XDG_DATA_HOME/optadvisor/calibrations/,
// which later commands load automatically (docs/calibration.md).
#include <chrono>
#include <cstdlib>
#include <ctime>

#include <fmt/format.h>

#include "cli/common.hpp"
#include "cli/detect_tools.hpp"
#include "optadvisor/render/report_calibrate.hpp"

namespace optadvisor::cli {
namespace {

struct CalibrateOptions {
  std::vector<std::string> files;
  CalibrationRequest request;
  int64_t tp = 0;
  int64_t batch = 0;
  int64_t prompt = -1;
  int64_t gen = -1;
  std::string out;
  bool dry_run = false;
  FormatOption format;
  RequireOption require;
};

/// Today as YYYY-MM-DD (UTC); $SOURCE_DATE_EPOCH fixes it for reproducible output.
std::string today() {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH"); epoch != nullptr && *epoch != '\0') {
    char* end = nullptr;
    const long long v = std::strtoll(epoch, &end, 10);
    if (end != nullptr && *end == '\0' && v >= 0) now = static_cast<std::time_t>(v);
  }
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[16];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d", &utc);
  return buf;
}

void run(const CalibrateOptions& o, const GlobalOptions& global) {
  const std::vector<Requirement> requirements = o.require.parse();
  if (o.batch < 0 || o.prompt < -1 || o.gen < -1 || o.tp < 0) throw bad_input("--batch, --prompt, --gen and --tp must not be negative");
  const Catalog& catalog = load_catalog(global);
  CalibrationRequest request = o.request;
  request.hardware = resolve_hw_auto(request.hardware, catalog);
  if (o.tp > 0) request.tp = o.tp;
  request.today = today();
  MeasurementOptions workload;
  if (o.batch > 0) workload.batch = static_cast<uint64_t>(o.batch);
  if (o.prompt >= 0) workload.prompt_tokens = static_cast<uint64_t>(o.prompt);
  if (o.gen >= 0) workload.gen_tokens = static_cast<uint64_t>(o.gen);

  std::vector<Measurement> measurements;
  for (const auto& path : o.files) {
    const BenchFile file = load_bench_results(path);
    auto ms = measurements_from(file, workload);
    measurements.insert(measurements.end(), ms.begin(), ms.end());
  }
  const CalibrationFit fit = fit_calibration(catalog, map_measurements(catalog, measurements, request), request);

  std::filesystem::path target;
  const bool to_stdout = o.out == "-";  // the calibration document on stdout, the report on stderr
  if (to_stdout) {
    target = "-";
  } else if (!o.out.empty()) {
    target = o.out;
  } else {
    const auto dir = user_data_dir();
    if (!dir && !o.dry_run)
      throw bad_input("nowhere to write the calibration: neither XDG_DATA_HOME nor HOME is set", "pass --out FILE or --dry-run");
    if (dir)
      target = *dir / "calibrations" / calibration_file_name(fit.calibration.hardware, fit.calibration.engine, fit.calibration.backend);
  }
  std::error_code ec;
  if (!target.empty() && !to_stdout && std::filesystem::is_directory(target, ec))
    throw bad_input(fmt::format("--out '{}' is a directory", target.string()), "name the file, e.g. DIR/calibrations/x.json");

  // The overlay must load back: check it against its schema before writing it.
  const nlohmann::ordered_json doc = to_json(fit.calibration);
  std::vector<Problem> problems;
  check_against_schema("calibration", nlohmann::json::parse(doc.dump()), target.string(), problems);
  if (!problems.empty())
    throw Error(ExitCode::kRuntime, "internal: the calibration does not match its schema: " + to_string(problems.front()));
  const bool written = !o.dry_run && !to_stdout;
  RequireOption::check_paths(requirements, calibration_report_json(fit, target.string(), written));
  if (written) write_calibration_file(target, doc);
  const std::string report = render_calibration(fit, target.string(), written, o.format.get(), stdout_style(global));
  if (to_stdout) {
    if (!o.dry_run) fmt::print("{}\n", doc.dump(2));
    fmt::print(stderr, "{}", report);
  } else {
    fmt::print("{}", report);
  }
  if (!requirements.empty()) RequireOption::enforce(requirements, calibration_report_json(fit, target.string(), written));
}

}  // namespace

void register_calibrate(CLI::App& app, const GlobalOptions& global) {
  auto o = std::make_shared<CalibrateOptions>();
  auto* cmd = app.add_subcommand(
      "calibrate",
      "Fit an engine's efficiency factors to your own llama-bench or vLLM benchmark results and save them for later estimates");
  cmd->add_option("--from", o->files,
                  "Results file: llama-bench -o json/jsonl, vllm bench serve --save-result, vllm bench latency --output-json (repeatable)")
      ->required()
      ->type_name("FILE");
  cmd->add_option("--hw", o->request.hardware, "The device the results were measured on (optadvisor hw list)")->required();
  cmd->add_option("--model,-m", o->request.model, "Model preset every row ran (default: read from the file)");
  cmd->add_option("--quant,-q", o->request.quant, "Weight format every row ran (default: read from the file)");
  cmd->add_option("--engine,-e", o->request.engine, "Engine and backend, e.g. llama.cpp:vulkan (default: read from the file)");
  cmd->add_option("--tp", o->tp, "Tensor-parallel degree of vLLM runs (default: the file's metadata, else 1)");
  cmd->add_option("--batch,-b", o->batch, "vllm bench latency: its --batch-size (default 8)");
  cmd->add_option("--prompt,-p", o->prompt, "vllm bench latency: its --input-len (default 32)");
  cmd->add_option("--gen,-n", o->gen, "vllm bench latency: its --output-len (default 128)");
  cmd->add_option(
         "--out,-o", o->out,
         "Write the calibration here instead of $XDG_DATA_HOME/optadvisor/calibrations/ (- prints it on stdout, the report on stderr)")
      ->type_name("FILE");
  cmd->add_flag("--dry-run", o->dry_run, "Fit and print, write nothing");
  o->format.attach(cmd);
  o->require.attach(cmd);
  cmd->callback([o, &global] { run(*o, global); });
}

}  // namespace optadvisor::cli
