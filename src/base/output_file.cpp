// SPDX-License-Identifier: MIT
#include "base/output_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "base/input_file.hpp"
#include "optadvisor/base/error.hpp"

namespace optadvisor {

void write_file_replacing(const std::string& path, std::string_view text, const std::string& what) {
  namespace fs = std::filesystem;
  const std::string shown = printable(path);
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (fs::is_directory(status))
    throw bad_input(fmt::format("{} '{}' is a directory", what, shown), "name the file to write, e.g. DIR/result.json");
  if (fs::exists(status) && !fs::is_regular_file(status))
    throw bad_input(fmt::format("{} '{}' exists and is not a regular file; it is not replaced", what, shown),
                    "name a new file or a regular file to overwrite (--out - writes to stdout)");

  const fs::path target(path);
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const fs::path temporary = folder / fmt::format(".{}.tmp-{}", target.filename().string(), static_cast<long>(::getpid()));
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    throw bad_input(fmt::format("cannot write '{}': {}", shown, std::strerror(errno)),
                    "pass --out a file in a folder that exists and is writable");
  bool ok = true;
  for (std::size_t done = 0; ok && done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<std::size_t>(n);
  }
  ok = ::close(fd) == 0 && ok;
  if (ok) {
    fs::rename(temporary, target, ec);
    ok = !ec;
  }
  if (!ok) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw Error(ExitCode::kRuntime, fmt::format("writing {} '{}' failed", what, shown),
                "check the free space and permissions of that folder");
  }
}

}  // namespace optadvisor
