// SPDX-License-Identifier: MIT
#include "detect_tools.hpp"

#include "base/names.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "optadvisor/base/error.hpp"
#include "optadvisor/render/report_detect.hpp"

extern char** environ;

namespace optadvisor::cli {
namespace {

/// More than any probe prints (system_profiler's display section is a few kB).
constexpr std::size_t kMaxOutputBytes = 1 << 20;

using Clock = std::chrono::steady_clock;

ProbeRun read_text_file(const std::filesystem::path& path) {
  ProbeRun r;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    r.status = ProbeRun::Status::kNotFound;
    return r;
  }
  std::ostringstream text;
  text << in.rdbuf();
  r.status = ProbeRun::Status::kOk;
  r.output = text.str().substr(0, kMaxOutputBytes);
  return r;
}

/// Closes a file descriptor once, on every path out.
struct Fd {
  int fd = -1;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

struct SpawnSetup {
  posix_spawn_file_actions_t actions{};
  posix_spawnattr_t attr{};
  SpawnSetup() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

/// Waits for the child until the deadline; false when it is still running.
bool wait_until(pid_t pid, Clock::time_point deadline, int& status) {
  while (true) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return true;
    if (done < 0 && errno != EINTR) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

ProbeRun run_command(const std::vector<std::string>& argv, double timeout_s) {
  ProbeRun r;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    r.status = ProbeRun::Status::kFailed;
    r.detail = fmt::format("pipe: {}", std::strerror(errno));
    return r;
  }
  Fd read_end{fds[0]}, write_end{fds[1]};

  SpawnSetup setup;
  posix_spawn_file_actions_addopen(&setup.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&setup.actions, write_end.fd, STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&setup.actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  // Its own process group, so a timeout kills whatever the tool started too.
  sigset_t no_signals;
  sigemptyset(&no_signals);
  posix_spawnattr_setsigmask(&setup.attr, &no_signals);
  posix_spawnattr_setpgroup(&setup.attr, 0);
  posix_spawnattr_setflags(&setup.attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);

  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, args[0], &setup.actions, &setup.attr, args.data(), environ);
  write_end.reset();
  if (rc != 0) {
    r.status = rc == ENOENT ? ProbeRun::Status::kNotFound : ProbeRun::Status::kFailed;
    if (rc != ENOENT) r.detail = std::strerror(rc);
    return r;
  }

  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  bool timed_out = false;
  char buffer[4096];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{read_end.fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // the deadline check above ends the loop
    const ssize_t n = ::read(read_end.fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // end of output
    if (r.output.size() < kMaxOutputBytes) r.output.append(buffer, static_cast<std::size_t>(n));
  }
  read_end.reset();
  int status = 0;
  if (timed_out || !wait_until(pid, deadline, status)) {
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    r.status = ProbeRun::Status::kTimedOut;
    r.detail = fmt::format("no answer within {:g} s", timeout_s);
    r.output.clear();
    return r;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    r.status = ProbeRun::Status::kOk;
  } else {
    r.status = ProbeRun::Status::kFailed;
    r.detail = WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status))
                                 : fmt::format("killed by signal {}", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  }
  return r;
}

}  // namespace

ProbeRun run_probe(const Probe& probe, double timeout_s) {
  if (!probe.path.empty()) return read_text_file(probe.path);
  return run_command(probe.argv, timeout_s);
}

ProbeRun read_fixture(const Probe& probe, const std::filesystem::path& dir) {
  ProbeRun r = read_text_file(dir / probe.fixture);
  if (r.status == ProbeRun::Status::kNotFound) r.detail = "no " + probe.fixture + " recorded";
  return r;
}

namespace {

DetectedHardware detect_with(const std::string& recorded_dir, const std::string& origin) {
  ProbeRunner runner;
  if (!recorded_dir.empty()) {
    const std::filesystem::path dir(recorded_dir);
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
      throw bad_input(fmt::format("{}: '{}' is not a directory", origin, recorded_dir),
                      "point it at a folder of recorded tool outputs (docs/detection.md)");
    spdlog::info("--hw auto: reading recorded outputs from {}", recorded_dir);
    runner = [dir](const Probe& p) { return read_fixture(p, dir); };
  } else {
    runner = [](const Probe& p) { return run_probe(p, kProbeTimeoutS); };
  }
  DetectedHardware detected = detect_hardware(runner);
  for (const auto& p : detected.probes) spdlog::debug("--hw auto: {}", p);
  if (detected.device) {
    spdlog::info("--hw auto: {}", describe(*detected.device));
    for (const auto& line : detected.device->raw_lines) spdlog::debug("--hw auto: reported: {}", line);
  }
  for (const auto& n : detected.notes) spdlog::info("--hw auto: {}", n);
  return detected;
}

}  // namespace

DetectedHardware detect_local_hardware() {
  const char* fixtures = std::getenv("OPTADVISOR_DETECT_FIXTURES");
  return detect_with(fixtures != nullptr ? fixtures : "", "OPTADVISOR_DETECT_FIXTURES");
}

const DetectedHardware& local_hardware() {
  static const DetectedHardware detected = detect_local_hardware();
  return detected;
}

std::string resolve_hw_auto(const std::string& name, const Catalog& catalog, std::string* detected_via) {
  if (normalize_name(name) != "auto") return name;
  DetectedProfile found = resolve_detected(local_hardware(), catalog.hardware());
  if (detected_via) *detected_via = std::move(found.via);
  return found.id;
}

void fill_detected_host(const std::string& asked, ScenarioRequest& request, const Catalog& catalog) {
  if (normalize_name(asked) != "auto" || !request.host.empty() || !local_hardware().device) return;
  const DetectedDevice& device = *local_hardware().device;
  if (auto id = match_host_cpu(device, catalog.hardware())) {
    request.host = *id;
    request.hardware_detected += fmt::format("; host CPU {} is {} (--host)", device.cpu_model, *id);
  }
}

std::vector<std::string> resolve_hw_auto(std::vector<std::string> names, const Catalog& catalog) {
  for (auto& name : names) name = resolve_hw_auto(name, catalog);
  return names;
}

void register_hw_detect(CLI::App* hw, const GlobalOptions& global) {
  struct DetectOptions {
    std::string from;
    FormatOption format;
  };
  auto options = std::make_shared<DetectOptions>();
  auto* detect = hw->add_subcommand("detect", "Detect this machine's device and the profile --hw auto maps it to");
  detect
      ->add_option("--from", options->from,
                   "Map recorded tool outputs (nvidia-smi.txt, rocm-smi.json, sysctl.txt, ...) from another machine")
      ->type_name("DIR");
  options->format.attach(detect, false);
  detect->callback([options, &global] {
    const Catalog& catalog = load_catalog(global);
    const DetectedHardware detected = options->from.empty() ? local_hardware() : detect_with(options->from, "--from");
    const ProfileMatch match = match_detected(detected, catalog.hardware());
    if (!match.id) throw bad_input(match.problem, match.hint);
    const HardwareProfile& profile = catalog.resolve_hardware(*match.id);
    fmt::print("{}", render_detection(detected, match, profile, options->format.get(), stdout_style(global)));
  });
}

}  // namespace optadvisor::cli
