// SPDX-License-Identifier: MIT
// Pure BF16 training: no FP32 master copy, 16-bit gradients and AdamW moments.
#include <catch2/catch.hpp>

#include "optadvisor/analysis/training.hpp"
#include "optadvisor/catalog/catalog.hpp"
#include "fixtures.hpp"

using namespace optadvisor;
using fixtures::catalog;

TEST_CASE("pure BF16 drops the master copy and halves the moments", "[training][memory][precision]") {
  TrainingRequest r;
  r.hardware = "h100-sxm";
  r.model.preset = "llama-3.1-8b";
  r.gpus = 8;
  r.sharding = "ddp";
  const TrainingAnalysis mixed = analyze_training(prepare_training(catalog(), r).scenario);
  r.precision = "bf16-pure";
  const PreparedTraining p = prepare_training(catalog(), r);
  CHECK(to_string(p.scenario.workload.precision) == "bf16-pure");
  const TrainingAnalysis pure = analyze_training(p.scenario);
  CHECK(mixed.memory.master_weights_bytes > 0);
  CHECK(pure.memory.master_weights_bytes == 0);
  // AdamW's two fp32 moments (8 bytes per parameter) become two bf16 moments (4).
  CHECK(pure.memory.optimizer_bytes == Approx(mixed.memory.optimizer_bytes / 2));
  CHECK(pure.memory.weights_bytes == Approx(mixed.memory.weights_bytes));
  CHECK(pure.memory.gradients_bytes <= mixed.memory.gradients_bytes);
  // 8.03e9 parameters unsharded: at least 4 (master) + 4 (half the moments) bytes each fewer, 64 GB.
  CHECK(mixed.memory.model_state_bytes() - pure.memory.model_state_bytes() >= 8.0 * 8.03e9 * 0.99);
  // The GEMMs run at the same BF16 rate; the optimizer step moves fewer bytes.
  CHECK(pure.tokens_per_s >= mixed.tokens_per_s);
  r.hardware = "v100";
  CHECK_THROWS_WITH(prepare_training(catalog(), r), "pure-BF16 training needs BF16 tensor cores; NVIDIA Tesla V100 SXM2 16GB has none");
}
