// SPDX-License-Identifier: MIT
// Runs the detection probes of this machine (detect.hpp): vendor tools with a
// timeout, /proc files, or recorded outputs from $OPTADVISOR_DETECT_FIXTURES.
#pragma once

#include <filesystem>

#include <CLI/CLI.hpp>

#include "common.hpp"
#include "optadvisor/readers/detect.hpp"

namespace optadvisor::cli {

/// A tool that does not answer within this is killed and counts as "timed out".
constexpr double kProbeTimeoutS = 5.0;

/// Runs a command probe (stdin and stderr on /dev/null) or reads a file probe.
/// A tool that is not installed is kNotFound; a non-zero exit is kFailed.
ProbeRun run_probe(const Probe& probe, double timeout_s);
/// The recorded output DIR/<probe.fixture>; a missing file is kNotFound.
ProbeRun read_fixture(const Probe& probe, const std::filesystem::path& dir);
/// Detection of this machine, or of the recorded outputs in
/// $OPTADVISOR_DETECT_FIXTURES (a testing aid, docs/detection.md).
DetectedHardware detect_local_hardware();

/// This machine's detection, run the first time it is asked for (then kept for the process).
const DetectedHardware& local_hardware();

/// --hw auto: the id of the profile this machine maps to (bad input when none
/// does), with "detected: ..." in `detected_via`; any other name is returned as it is.
std::string resolve_hw_auto(const std::string& name, const Catalog& catalog, std::string* detected_via = nullptr);
/// The same for each name of a --hw list.
std::vector<std::string> resolve_hw_auto(std::vector<std::string> names, const Catalog& catalog);

/// --hw auto with a GPU and a known host CPU: sets request.host (unless given) to the CPU's profile
/// and says so in request.hardware_detected. `asked` is the --hw the user typed.
void fill_detected_host(const std::string& asked, ScenarioRequest& request, const Catalog& catalog);

/// `optadvisor hw detect [--json]`, added under `hw`.
void register_hw_detect(CLI::App* hw, const GlobalOptions& global);

}  // namespace optadvisor::cli
