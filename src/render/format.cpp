// SPDX-License-Identifier: MIT
#include "optadvisor/render/format.hpp"

namespace optadvisor {

std::string Style::bold(const std::string& s) const { return color ? "\x1b[1m" + s + "\x1b[0m" : s; }
std::string Style::dim(const std::string& s) const { return color ? "\x1b[2m" + s + "\x1b[0m" : s; }

}  // namespace optadvisor
