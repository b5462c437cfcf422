// SPDX-License-Identifier: MIT
// The scale-out rule: the fewest GPUs (doubling) that make a training step fit with every model
// state sharded, ranked below the changes that run on the GPUs asked for.
#include <catch2/catch.hpp>

#include <algorithm>

#include "optadvisor/advisor/playbook.hpp"
#include "optadvisor/advisor/rules.hpp"
#include "fixtures.hpp"

using namespace optadvisor;
using fixtures::catalog;

namespace {

AdviceRequest training(const std::string& hw, const std::string& model, const std::string& engine) {
  AdviceRequest r;
  r.goal = Goal::kTraining;
  r.scenario.hardware = hw;
  r.scenario.model.preset = model;
  r.scenario.engine = engine;
  r.scenario.gpus = 1;
  return r;
}

const Recommendation* find(const Advice& a, const std::string& id) {
  auto it = std::find_if(a.recommendations.begin(), a.recommendations.end(), [&](const Recommendation& r) { return r.rule->id == id; });
  return it == a.recommendations.end() ? nullptr : &*it;
}

}  // namespace

TEST_CASE("scale-out: the fewest GPUs that fit, below every change on the GPUs asked for", "[advisor][training][scale-out]") {
  // Llama-3.1-8B full fine-tune on one H100 with DeepSpeed: 178 GB needed, 85.5 GB usable.
  AdviceRequest q = training("h100", "llama-3.1-8b", "deepspeed");
  q.training.global_batch = 3;  // not a multiple of the ranks scale-out adds: it rounds up to whole microbatches
  const Advice a = advise(catalog(), fixtures::rule_book(), q);
  REQUIRE_FALSE(a.base.runs);
  const Recommendation* out = find(a, "scale-out");
  const Recommendation* offload = find(a, "optimizer-offload");
  REQUIRE(out != nullptr);
  REQUIRE(offload != nullptr);
  const TrainingWorkload& w = out->after.training().prepared.scenario.workload;
  CHECK(out->after.runs);
  CHECK(w.gpus > 1);
  CHECK(w.global_batch % (uint64_t{w.dp} * w.micro_batch) == 0);
  CHECK(w.global_batch >= 3);
  CHECK(w.sharding.stage == 3);
  // Half as many GPUs would not fit: the count is the fewest.
  AdviceRequest half = q;
  half.scenario.gpus = w.gpus / 2;
  half.training.sharding = "zero3";
  const uint64_t h = w.gpus / 2;
  half.training.global_batch = static_cast<int64_t>((std::max<uint64_t>(3, h) + h - 1) / h * h);
  if (w.gpus / 2 > 1) CHECK_FALSE(advise(catalog(), fixtures::rule_book(), half).base.runs);
  // ZeRO-Offload runs on the one GPU asked for: it ranks above the rule that needs more.
  CHECK(offload->after.runs);
  CHECK(offload->rank < out->rank);
  REQUIRE_FALSE(out->notes.empty());
  CHECK(out->notes.front().rfind("1 -> " + std::to_string(w.gpus) + " GPUs, sharding zero3", 0) == 0);
}
