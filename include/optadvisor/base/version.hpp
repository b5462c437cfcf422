// SPDX-License-Identifier: MIT
// Program and data versions.
#pragma once

#include <string>

namespace optadvisor {

/// Version of every JSON document the CLI prints; bumped on breaking changes.
constexpr int kSchemaVersion = 1;

/// The program version, e.g. "0.1.0".
std::string program_version();
/// The data version: data/VERSION plus a digest of the embedded files, e.g. "2026.11.30+3f2a9c1d0e4b".
std::string data_version();

}  // namespace optadvisor
