// SPDX-License-Identifier: MIT
#include "optadvisor/base/version.hpp"

#include <algorithm>

#include "catalog/embedded.hpp"

namespace optadvisor {

std::string program_version() { return OPTADVISOR_VERSION; }

std::string data_version() {
  const auto& files = embedded_files();
  auto it = std::find_if(files.begin(), files.end(), [](const EmbeddedFile& f) { return f.path == "VERSION"; });
  std::string version = it == files.end() ? "unversioned" : std::string(it->content);
  while (!version.empty() && (version.back() == '\n' || version.back() == '\r' || version.back() == ' ')) version.pop_back();
  return version + "+" + std::string(embedded_data_digest());
}

}  // namespace optadvisor
