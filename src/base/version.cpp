// SPDX-License-Identifier: MIT
#include "optadvisor/base/version.hpp"

namespace optadvisor {

std::string program_version() { return OPTADVISOR_VERSION; }

}  // namespace optadvisor
