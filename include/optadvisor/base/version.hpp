// SPDX-License-Identifier: MIT
// Program and data versions.
#pragma once

#include <string>

namespace optadvisor {

/// Version of every JSON document the CLI prints; bumped on breaking changes.
constexpr int kSchemaVersion = 1;

/// The program version, e.g. "0.1.0".
std::string program_version();

}  // namespace optadvisor
