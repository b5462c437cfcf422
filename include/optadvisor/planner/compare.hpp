// SPDX-License-Identifier: MIT
// `compare`: one scenario run on several devices, weight formats or engines,
// side by side, with energy and hardware cost per generated token. Pure: a
// candidate that cannot run becomes a row with the reason, never an abort.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/prepare.hpp"

namespace optadvisor {

/// Energy and hardware cost of serving at a rate, from the profile's board
/// power and list price; each figure is absent when the profile lacks it.
/// Prices are never invented: no profile price, no per-dollar figure.
struct Efficiency {
  std::optional<double> power_watts;            ///< board power (TDP) x GPUs
  std::optional<double> tokens_per_joule;       ///< tokens/s over power_watts
  std::optional<double> price_usd;              ///< list price x GPUs
  std::optional<double> tokens_per_s_per_kusd;  ///< tokens/s per 1000 USD of price_usd
};

/// tokens_per_joule = tokens_per_s / (power_watts x gpus);
/// tokens_per_s_per_kusd = tokens_per_s / (price_usd x gpus / 1000).
Efficiency efficiency(const HardwareProfile& hw, uint32_t gpus, double tokens_per_s);

/// The one thing a comparison varies.
enum class CompareAxis { kHardware, kQuant, kEngine };
std::string_view to_string(CompareAxis axis);

/// What a comparison may be sorted by; kGiven keeps the order of the list.
enum class CompareSort { kGiven, kTtft, kDecode, kThroughput, kPerJoule, kPerDollar };
std::string_view to_string(CompareSort sort);
/// "ttft", "decode", "throughput", "per-joule", "per-dollar" (and "given").
std::optional<CompareSort> compare_sort_from_string(std::string_view s);

struct CompareRequest {
  ScenarioRequest base;  ///< the model, the workload and the axes that do not vary
  CompareAxis axis = CompareAxis::kHardware;
  std::vector<std::string> values;  ///< the varying axis, in the order given (at least one)
  CompareSort sort = CompareSort::kGiven;
};

/// How far a candidate got.
enum class CandidateStatus {
  kFits,         ///< runs in device memory
  kOffloaded,    ///< llama.cpp keeps some layers in host memory; it runs, slowly
  kDoesNotFit,   ///< needs more memory than the engine may use
  kUnavailable,  ///< cannot be set up (engine not on the device, format the engine lacks, ...)
};
std::string_view to_string(CandidateStatus status);

/// Columns where a best value is marked, in display order.
enum class CompareColumn { kHeadroom, kTtft, kDecodePerSequence, kDecode, kThroughput, kPerJoule, kPerDollar };
/// The column's JSON key: "memory_headroom_bytes", "ttft_s", ...
std::string_view column_key(CompareColumn column);
const std::vector<CompareColumn>& all_compare_columns();

struct CompareRow {
  std::string value;  ///< the axis value as given
  ScenarioRequest request;
  CandidateStatus status = CandidateStatus::kUnavailable;
  std::string reason;                        ///< why it does not fit or cannot run; empty when it fits
  std::optional<PreparedScenario> prepared;  ///< set unless unavailable
  Analysis analysis;
  double serving_tokens_per_s = 0;  ///< batch x gen / (TTFT + gen x time per token)
  Efficiency efficiency;
  std::vector<CompareColumn> best;  ///< columns where this row holds the best value among the rows that fit

  bool runs() const { return status == CandidateStatus::kFits || status == CandidateStatus::kOffloaded; }
  /// The value of a column, when the row runs and the figure exists.
  std::optional<double> column(CompareColumn c) const;
};

struct Comparison {
  CompareAxis axis = CompareAxis::kHardware;
  CompareSort sort = CompareSort::kGiven;
  ScenarioRequest base;          ///< the workload every row shares
  ResolvedModel model;           ///< without its per-tensor table
  std::vector<CompareRow> rows;  ///< sorted as asked
};

/// Checks every name first (an unknown device, format or engine throws
/// bad_input with suggestions before anything runs), then prepares and
/// analyzes each candidate. When no candidate can be set up at all, the first
/// reason is thrown as bad_input: the request itself is wrong.
Comparison compare(const Catalog& catalog, const ResolvedModel& model, const CompareRequest& request);

/// True when the higher value of a column is the better one.
bool higher_is_better(CompareColumn column);

/// Throws bad_input, with the closest names, for an engine or backend no
/// profile knows: "vllm" and "llama.cpp:metal" pass, "llama.cpp:metl" does not.
void check_engine_name(const Catalog& catalog, const std::string& name);

}  // namespace optadvisor
