// SPDX-License-Identifier: MIT
#include "optadvisor/base/error.hpp"

namespace optadvisor {

std::string to_string(const Problem& p) {
  std::string out = p.file;
  if (!p.pointer.empty()) out += (out.empty() ? "" : ": ") + p.pointer;
  out += (out.empty() ? "" : ": ") + p.message;
  return out;
}

}  // namespace optadvisor
