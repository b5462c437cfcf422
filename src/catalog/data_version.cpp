// SPDX-License-Identifier: MIT
#include <algorithm>
#include <string>

#include "catalog/embedded.hpp"
#include "optadvisor/catalog/catalog.hpp"

namespace optadvisor {

std::string data_version() {
  const auto& files = embedded_files();
  auto it = std::find_if(files.begin(), files.end(), [](const EmbeddedFile& f) { return f.path == "VERSION"; });
  std::string version = it == files.end() ? "unversioned" : std::string(it->content);
  while (!version.empty() && (version.back() == '\n' || version.back() == '\r' || version.back() == ' ')) version.pop_back();
  return version + "+" + std::string(embedded_data_digest());
}

}  // namespace optadvisor
