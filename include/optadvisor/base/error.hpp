// SPDX-License-Identifier: MIT
// Errors and data problems. One Error type carries an exit code, a one-line
// message and an optional hint; the CLI's single catch site maps it to stderr.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace optadvisor {

/// Process exit status, documented in README.
enum class ExitCode : int {
  kOk = 0,
  kRuntime = 1,      ///< an unexpected runtime failure
  kBadInput = 2,     ///< bad usage, unknown name, invalid file or value
  kCheckFailed = 3,  ///< a check the user asked for failed (does not fit, --require unmet)
};

/// The one exception type the library throws for user-facing failures.
class Error : public std::runtime_error {
 public:
  Error(ExitCode code, std::string message, std::string hint = {}) : std::runtime_error(message), code_(code), hint_(std::move(hint)) {}
  ExitCode code() const { return code_; }
  const std::string& hint() const { return hint_; }

 private:
  ExitCode code_;
  std::string hint_;
};

/// Shorthand for the common case: bad input (exit 2).
inline Error bad_input(std::string message, std::string hint = {}) {
  return Error(ExitCode::kBadInput, std::move(message), std::move(hint));
}

/// One problem found while validating a data file: where and what.
struct Problem {
  std::string file;     ///< file name as the user knows it, e.g. "data/hardware/x.json"
  std::string pointer;  ///< JSON pointer into the document, "" for the whole file
  std::string message;  ///< what is wrong, e.g. "expected a positive number"
};

/// "file: /pointer: message", the form validate-data prints.
std::string to_string(const Problem& p);

}  // namespace optadvisor
