// SPDX-License-Identifier: MIT
// What many unit tests share: the shipped catalog, loaded once per test binary, and a
// preset resolved as --model would resolve it.
#pragma once

#include <string>

#include <catch2/catch.hpp>

#include "optadvisor/advisor/rules.hpp"
#include "optadvisor/base/error.hpp"
#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/readers/model_source.hpp"

namespace optadvisor::fixtures {

/// The embedded data, no overlays. Lives for the whole test run.
const Catalog& catalog();

/// The preset `id` of catalog(), resolved as `--model id` is.
ResolvedModel model(const std::string& id);

/// A datacenter-class device with round numbers (fp16 = bf16 = `flops_per_s`), for
/// figures worked by hand.
HardwareProfile round_device(double bandwidth_bytes_per_s, double flops_per_s, double capacity_bytes);

/// The shipped rule book of catalog(), loaded once.
const RuleBook& rule_book();

/// The message of the bad_input error `f` throws, checking that it is one (exit 2); "" when it throws none.
template <typename F>
std::string bad_input_message(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::kBadInput);
    return e.what();
  }
  return {};
}

}  // namespace optadvisor::fixtures
