// SPDX-License-Identifier: MIT
// Writing a result file without ever destroying what was there: a temporary file in the target's
// folder, renamed over the target only when that is a regular file (or absent).
#pragma once

#include <string>
#include <string_view>

namespace optadvisor {

/// Writes `text` to `path` atomically. `what` names the option or file in messages ("--out").
/// An existing target that is not a regular file (a directory, FIFO, device) is bad input (exit 2)
/// and is left untouched; so is a folder that cannot take the temporary file. A failed write is
/// Error(kRuntime). Nothing is left behind on failure.
void write_file_replacing(const std::string& path, std::string_view text, const std::string& what);

}  // namespace optadvisor
