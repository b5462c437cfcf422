// SPDX-License-Identifier: MIT
// `--hw auto`: what the vendor tools of this machine report (nvidia-smi,
// rocm-smi, sysctl/ioreg/system_profiler, /proc), parsed into one device, and
// that device mapped to a hardware profile. Parsing and mapping are pure; the
// tools are run by a caller-supplied runner, so tests feed recorded outputs.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "optadvisor/catalog/hardware.hpp"

namespace optadvisor {

/// One device as the local tools report it.
struct DetectedDevice {
  std::string kind;                    ///< "gpu", "apple-silicon" or "cpu" (no accelerator found)
  std::string vendor;                  ///< "nvidia", "amd", "apple", "intel", or "" when unknown
  std::string name;                    ///< as reported: "NVIDIA H100 80GB HBM3", "Apple M4 Max"
  std::optional<double> memory_bytes;  ///< per device: VRAM, or unified memory on Apple silicon
  int count = 1;                       ///< devices with this name
  std::optional<int> gpu_cores;        ///< Apple silicon GPU cores
  std::string cpu_model;               ///< the host CPU, when known
  std::optional<double> ram_bytes;     ///< host memory, when known
  std::string source;                  ///< the tool the device came from: "nvidia-smi", "rocm-smi", "sysctl", "/proc/cpuinfo"
  std::vector<std::string> raw_lines;  ///< the tool lines the device was read from
  std::vector<std::string> missing;    ///< what could not be read, e.g. "GPU core count"
};

/// How one probe went.
struct ProbeRun {
  enum class Status { kOk, kNotFound, kFailed, kTimedOut };
  Status status = Status::kNotFound;
  std::string output;  ///< stdout (or the file's text)
  std::string detail;  ///< "exit status 9", "no such file", ...
};

/// One thing detection may run or read. A runner gets these, nothing else.
struct Probe {
  std::string tool;               ///< "nvidia-smi", "/proc/cpuinfo", ...
  std::vector<std::string> argv;  ///< the command line; empty for a file
  std::string path;               ///< the file to read; empty for a command
  std::string fixture;            ///< file name of a recorded output: "nvidia-smi.txt"
};

/// Runs one probe: executes the command (or reads the file) with a timeout.
using ProbeRunner = std::function<ProbeRun(const Probe&)>;

/// What detection found, and what it tried on the way.
struct DetectedHardware {
  std::optional<DetectedDevice> device;  ///< nullopt: no tool answered usefully
  std::vector<std::string> probes;       ///< "nvidia-smi: not found", "rocm-smi: ok", ... in order
  std::vector<std::string> notes;        ///< e.g. other GPU kinds found besides the first
};

/// The probes, in the order detect_hardware tries them.
const std::vector<Probe>& detection_probes();
std::string_view to_string(ProbeRun::Status status);

/// Parsers of recorded outputs. Each returns nullopt when the text holds no
/// device; `notes` gets a line for anything skipped or unreadable.
/// nvidia-smi --query-gpu=name,memory.total,count --format=csv,noheader,nounits
/// (one line per GPU, memory in MiB). The first GPU's kind is the device; other kinds go to notes.
std::optional<DetectedDevice> parse_nvidia_smi(std::string_view text, std::vector<std::string>& notes);
/// rocm-smi --showproductname --showmeminfo vram --json: {"card0": {"Card Series": ..., "VRAM Total Memory (B)": ...}}.
std::optional<DetectedDevice> parse_rocm_smi(std::string_view text, std::vector<std::string>& notes);
/// sysctl -n machdep.cpu.brand_string hw.memsize (two lines) plus the GPU core count from
/// ioreg -rc AGXAccelerator ("gpu-core-count" = N) or system_profiler SPDisplaysDataType
/// ("Total Number of Cores: N"); either may be empty. Only an "Apple ..." brand is a device.
std::optional<DetectedDevice> parse_apple(std::string_view sysctl, std::string_view ioreg, std::string_view system_profiler,
                                          std::vector<std::string>& notes);
/// The host: /proc/cpuinfo (model name, logical CPU count, vendor) and /proc/meminfo (MemTotal in kB).
DetectedDevice parse_proc(std::string_view cpuinfo, std::string_view meminfo);

/// Runs the probes in order, stopping at the first accelerator found (NVIDIA,
/// then AMD, then Apple silicon); the host CPU and RAM fill in what they can.
DetectedHardware detect_hardware(const ProbeRunner& run);

/// A detected device mapped to a profile, or why not.
struct ProfileMatch {
  std::optional<std::string> id;
  std::string how;                 ///< "the reported name is an alias of h100-sxm", ...
  std::vector<std::string> notes;  ///< memory that differs from the profile, GPU count, ...
  std::string problem;             ///< when no id: what was found and why nothing matched
  std::string hint;                ///< when no id: how to add a profile
};

/// Maps a device to one profile. A profile matches when the reported name,
/// normalized, is one of its names (id, aliases, default bins, display name,
/// `detect` list), or when every word of the reported name is a word of its
/// names. Among several, the GPU core count (Apple silicon) and then the memory
/// size (within 10%) decide; then an exact name, then a default bin.
ProfileMatch match_profile(const DetectedDevice& device, const std::vector<HardwareProfile>& profiles);

/// Maps a detection result to one of `profiles`, or says why not (no device
/// found: the probes tried; a CPU only: which accelerator tools failed).
ProfileMatch match_detected(const DetectedHardware& detected, const std::vector<HardwareProfile>& profiles);

/// The cpu-class profile of the host CPU beside an accelerator (its /proc/cpuinfo model name),
/// for the offload host of --hw auto; nullopt when the device is a CPU alone or no CPU profile matches.
std::optional<std::string> match_host_cpu(const DetectedDevice& device, const std::vector<HardwareProfile>& profiles);

/// What `--hw auto` resolves to: a profile id and how it was found.
struct DetectedProfile {
  std::string id;
  std::string via;  ///< "detected: NVIDIA H100 80GB HBM3 via nvidia-smi, 79.6 GiB"
};
/// As match_detected, but no match throws bad_input with the problem and hint.
DetectedProfile resolve_detected(const DetectedHardware& detected, const std::vector<HardwareProfile>& profiles);

/// "NVIDIA H100 80GB HBM3 x8 via nvidia-smi".
std::string describe(const DetectedDevice& device);

}  // namespace optadvisor
