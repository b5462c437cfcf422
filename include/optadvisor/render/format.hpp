// SPDX-License-Identifier: MIT
// How results are printed: the output formats and terminal styling shared by every renderer.
// Renderers format already-computed results and never compute.
#pragma once

#include <string>

#include "optadvisor/base/version.hpp"

namespace optadvisor {

enum class OutputFormat { kText, kJson, kMarkdown, kHtml };

/// Text styling; enabled only on a terminal and never with NO_COLOR.
struct Style {
  bool color = false;
  std::string bold(const std::string& s) const;
  std::string dim(const std::string& s) const;
};

}  // namespace optadvisor
