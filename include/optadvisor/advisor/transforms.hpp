// SPDX-License-Identifier: MIT
// The fixed set of scenario transforms a rule may apply: each takes the
// current request (what the user asked, plus earlier changes) and returns a
// changed one, or says why it cannot apply here. The advisor then prepares
// and analyzes the result with the same model as the baseline; no transform
// states an effect as a number.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "optadvisor/advisor/rules.hpp"
#include "optadvisor/analysis/training.hpp"

namespace optadvisor {

/// One parameter a transform takes, for validation and documentation.
struct TransformParam {
  std::string name;
  /// "string", "number", "integer", "number-map" (a number, or {engine id: number, "*": number}), "quant" (a format id, or {engine id: format id, "*": ...}),
  /// "kv-dtype" (the same for KV-cache dtypes), "engine", "precision-map" ({"4"|"8"|"16"|"*": format id}), "batch",
  /// "sharding" (a sharding mode, or {training framework id: mode})
  std::string kind;
  bool required = false;
  std::string description;
};

struct TransformInfo {
  std::string name;
  std::string description;
  std::vector<TransformParam> params;
  bool training = false;  ///< changes a training request (goal training) rather than an inference one
};

/// Every transform, in documentation order.
const std::vector<TransformInfo>& transform_catalog();
const TransformInfo* find_transform(std::string_view name);

/// What a transform reads: the catalog, the current request and its result.
/// Refers to the caller's objects, which must outlive it (it lives for one apply_transform call).
struct TransformInput {
  const Catalog& catalog;
  const ScenarioRequest& request;
  const PreparedScenario& prepared;
  const Analysis& analysis;
  // Goal training: the training step instead (the inference members are empty).
  const TrainingRequest* training_request = nullptr;
  const PreparedTraining* training = nullptr;
  const TrainingAnalysis* training_analysis = nullptr;
};

struct TransformResult {
  std::optional<ScenarioRequest> request;           ///< empty (and no training_request): the transform does not apply here
  std::optional<TrainingRequest> training_request;  ///< the changed training request (training transforms)
  std::string not_applicable;                       ///< why, when request is empty
  std::vector<std::string> notes;                   ///< what it chose ("draft model: llama-3.2-1b")
};

/// Applies one step. Parameters must be resolved: "@id" replaced by the
/// assumption's number. Throws Error(kRuntime) for an unknown transform name
/// (the rule loader rejects those first).
TransformResult apply_transform(const TransformStep& step, const TransformInput& in);

/// Tokens a verification step yields on average with `drafts` drafted tokens, each accepted with
/// probability `rate` when the ones before it were, plus the target's own: 1 + a + ... + a^k =
/// (1 - a^(k+1)) / (1 - a).
double expected_accepted_tokens(double rate, uint32_t drafts);

/// The precision class of a weight format for switch_engine: "4" (up to 7
/// bits per weight, 16-bit embeddings included), "8" (up to 11), else "16".
std::string precision_class(double bits_per_weight);

}  // namespace optadvisor
