// SPDX-License-Identifier: MIT
// Training offload: optimizer states (ZeRO-Offload) and saved activations in host memory, with the
// CPU step and the PCIe copies in the step time, the node's host memory checked, and bad input.
#include <catch2/catch.hpp>

#include "optadvisor/analysis/training.hpp"
#include "optadvisor/catalog/catalog.hpp"
#include "fixtures.hpp"

using namespace optadvisor;
using fixtures::catalog;

namespace {

TrainingRequest llama_8b(const std::string& engine, int64_t gpus = 1) {
  TrainingRequest r;
  r.hardware = "h100-sxm";
  r.model.preset = "llama-3.1-8b";
  r.engine = engine;
  r.gpus = gpus;
  return r;
}

std::string bad_input_message(const TrainingRequest& r) {
  const std::string message = fixtures::bad_input_message([&] { (void)prepare_training(catalog(), r); });
  return message.empty() ? "no error" : message;
}

}  // namespace

TEST_CASE("ZeRO-Offload: Llama-3.1-8B on one H100, optimizer states in host memory", "[training][offload]") {
  TrainingRequest r = llama_8b("deepspeed");
  const TrainingAnalysis on_gpu = analyze_training(prepare_training(catalog(), r).scenario);
  r.optimizer_offload = true;
  const PreparedTraining p = prepare_training(catalog(), r);
  const TrainingAnalysis a = analyze_training(p.scenario);
  const double P = p.scenario.model.params;
  CHECK(P == Approx(8.03e9).epsilon(0.001));
  // GPU: the 16-bit weights (2P = 16.06 GB, DeepSpeed's own estimate for stage 2 with offload) and
  // one 1e9-byte reduce bucket of gradients; no master copy or moments.
  CHECK(a.memory.weights_bytes == Approx(2 * P));
  CHECK(a.memory.gradients_bytes == Approx(1e9));
  CHECK(a.memory.master_weights_bytes == 0);
  CHECK(a.memory.optimizer_bytes == 0);
  CHECK_FALSE(on_gpu.memory.fits);
  CHECK(a.memory.fits);
  // Host: fp32 master (4) + two fp32 moments (8) + the fp32 gradient partition (4) = 16 B per parameter,
  // 128.5 GB, within the DGX H100's 2 TB.
  CHECK(a.memory.host_bytes == Approx(16 * P));
  CHECK(a.memory.host_bytes_per_node == Approx(16 * P));
  CHECK(a.memory.host_capacity_bytes == Approx(2e12));
  CHECK(a.memory.host_fits);
  // The CPU step reads and writes master weights and moments (2 x 12 B), reads the 16-bit gradients
  // (2 B) and writes the 16-bit weights (2 B): 28 B per parameter at 0.5 x 614.4 GB/s = 307.2 GB/s,
  // 8.03e9 x 28 / 307.2e9 = 0.732 s. The copies back, 2 B per parameter at 0.889 x 64 GB/s PCIe,
  // take 0.282 s under it; the gradients' copy (0.282 s) hides under the 0.32 s backward.
  CHECK(a.time.optimizer_s == 0);
  CHECK(a.time.host_optimizer_s == Approx(P * 28 / 307.2e9).epsilon(1e-9));
  CHECK(a.time.step_time_s == Approx(on_gpu.time.step_time_s - on_gpu.time.optimizer_s + a.time.host_optimizer_s));
  CHECK(a.bound == TrainingBound::kHostOffload);
  CHECK(a.explanation.find("host offload 60%") != std::string::npos);
  REQUIRE_FALSE(p.notes.empty());
  CHECK(p.notes.back().rfind("host: DGX H100", 0) == 0);
}

TEST_CASE("optimizer offload: Megatron keeps its gradient buffer, a node's ranks share the host", "[training][offload]") {
  TrainingRequest r = llama_8b("megatron", 8);
  r.sharding = "zero1";
  const TrainingAnalysis base = analyze_training(prepare_training(catalog(), r).scenario);
  r.optimizer_offload = true;
  const TrainingAnalysis a = analyze_training(prepare_training(catalog(), r).scenario);
  CHECK(a.memory.gradients_bytes == Approx(base.memory.gradients_bytes));
  CHECK(a.memory.master_weights_bytes == 0);
  CHECK(a.memory.optimizer_bytes == 0);
  // Each rank offloads its 1/8 of the master weights and moments; eight ranks fill one host.
  CHECK(a.memory.host_bytes == Approx(base.memory.master_weights_bytes + base.memory.optimizer_bytes));
  CHECK(a.memory.host_bytes_per_node == Approx(8 * a.memory.host_bytes));
  // A desktop host with 64 GiB (68.7 GB) cannot hold 8 ranks' 12 B x 8.03e9 / 8 each (96.4 GB).
  r.host = "ryzen-9-9950x";
  const TrainingAnalysis small = analyze_training(prepare_training(catalog(), r).scenario);
  CHECK(small.memory.host_capacity_bytes == Approx(68719476736.0));
  CHECK_FALSE(small.memory.host_fits);
  CHECK_FALSE(small.memory.fits);
  CHECK(small.bound == TrainingBound::kMemoryCapacity);
  CHECK(small.explanation.find("the host needs 96.4 GB per node") != std::string::npos);
}

TEST_CASE("activation offload: two layers stay on the GPU, the copies show where compute cannot hide them", "[training][offload]") {
  TrainingRequest r = llama_8b("megatron", 8);
  r.seq = 8192;
  r.micro_batch = 4;
  const TrainingAnalysis base = analyze_training(prepare_training(catalog(), r).scenario);
  r.activation_offload = true;
  const PreparedTraining p = prepare_training(catalog(), r);
  const TrainingAnalysis a = analyze_training(p.scenario);
  const double per_layer = base.memory.activation_bytes_per_layer;
  const double layers = 32;
  CHECK(a.memory.activation_bytes == Approx(2 * per_layer));
  CHECK(a.memory.host_bytes == Approx((layers - 2) * per_layer));
  // Out during the forward (a third of the compute), back during the backward (two thirds), each at
  // 0.889 x 64 GB/s; one microbatch per step here.
  const double copy_s = (layers - 2) * per_layer / (0.889 * 64e9);
  const double compute_s = base.time.microbatch_time_s - base.time.tp_comm_s;
  CHECK(a.time.activation_offload_s == Approx(std::max(0.0, copy_s - compute_s / 3) + std::max(0.0, copy_s - 2 * compute_s / 3)));
  CHECK(a.time.step_time_s == Approx(base.time.step_time_s + a.time.activation_offload_s));
  CHECK(a.memory.total_bytes < base.memory.total_bytes);
}

TEST_CASE("training offload: bad input", "[training][offload][bad-input]") {
  TrainingRequest r = llama_8b("pytorch");
  r.optimizer_offload = true;
  CHECK(bad_input_message(r) == "pytorch-fsdp2 has no optimizer CPU offload in this model");
  r = llama_8b("deepspeed");
  r.activation_offload = true;
  CHECK(bad_input_message(r) == "deepspeed has no activation offload in this model");
  r = llama_8b("megatron");
  r.activation_offload = true;
  r.recompute = "full";
  CHECK(bad_input_message(r).rfind("--activation-offload with --recompute full", 0) == 0);
  r = llama_8b("deepspeed");
  r.host = "xeon-8480";
  CHECK(bad_input_message(r) == "--host under --goal training names the host offload uses");
  r.optimizer_offload = true;
  r.host = "rtx4090";
  CHECK(bad_input_message(r) == "--host rtx4090 is not a CPU");
  r = llama_8b("pytorch");
  r.hardware = "m4-max-40c";
  r.activation_offload = true;
  CHECK(bad_input_message(r).find("has no host link to offload over (its memory is unified)") != std::string::npos);
  r = llama_8b("deepspeed");
  r.optimizer_offload = true;
  r.lora_rank = 16;
  CHECK(bad_input_message(r).rfind("optimizer offload with LoRA adapters is not modelled", 0) == 0);
}
