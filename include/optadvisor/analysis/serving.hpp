// SPDX-License-Identifier: MIT
// Serving under load: an iteration-level simulation of continuous batching as
// vLLM, SGLang and TensorRT-LLM schedule it. Clients (a closed loop of C, or
// an open-loop Poisson rate) send requests to workers; each worker runs
// iterations that mix decode steps and prefill chunks under the engine's
// token budget, sequence cap and KV pool; each iteration costs what the
// per-operator step model (serving_step.hpp) says for its mix. Disaggregated
// serving gives prefill and decode their own worker pools and moves the KV
// cache between them. A pure function: deterministic (seeded), no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "optadvisor/analysis/request_lengths.hpp"
#include "optadvisor/analysis/serving_step.hpp"

namespace optadvisor {

/// What the clients do.
struct ServingLoad {
  uint64_t concurrency = 0;  ///< closed loop: C clients, each sends its next request when the last completes
  double rate_per_s = 0;     ///< open loop: Poisson arrivals at this rate (used when concurrency is 0)
  uint64_t prompt_tokens = 1024;  ///< each request's, or the mean of prompt_spread
  uint64_t gen_tokens = 1024;     ///< each request's, or the mean of gen_spread
  LengthSpread prompt_spread, gen_spread;  ///< fixed lengths unless set (request_lengths.hpp)
  bool lengths_vary() const { return !prompt_spread.fixed() || !gen_spread.fixed(); }
  double prefix_hit = 0;  ///< share of each prompt already in the prefix cache
  uint64_t requests = 0;  ///< requests to measure; 0 = sized from the load (simulated_requests())
  uint64_t seed = 1;
  /// Requests issued before the measured ones (`aiperf --warmup-request-count`); unset = the
  /// load's own: C for a closed loop (the clients' first cycle), a tenth of the measured ones
  /// (at least 8) for an open loop. 0 measures from the start, the first burst of C prompts included.
  std::optional<uint64_t> warmup_requests;
};

/// One pool of identical workers (a worker: dp attention ranks stepping together).
struct ServingPool {
  ServingRole role = ServingRole::kMixed;
  uint32_t workers = 1;
  StepModel step;  ///< the cost model of one rank of one worker
};

struct ServingSetup {
  std::vector<ServingPool> pools;       ///< one mixed pool (aggregated) or a prefill and a decode pool
  double kv_link_peak_bytes_per_s = 0;  ///< per direction, the link prefill -> decode KV moves over (disaggregated)
  double kv_transfer_bytes_per_s = 0;   ///< achieved on it (apply_era)
  double kv_transfer_latency_s = 0;     ///< per transfer: one scheduler step to hand the blocks over
  double request_overhead_s = 0;        ///< per request outside the iterations (API server), in TTFT and e2e
  double frontend_request_s = 0;        ///< each API server's serial time per request (one server per front worker)
  double slo_ttft_s = 0;                ///< 0 = none
  double slo_tpot_s = 0;
};

struct LatencyStats {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
};

/// What binds the served load.
enum class ServingBound { kCompute, kBandwidth, kKvCapacity, kScheduler, kCommunication, kSequenceCap, kApiServer };
std::string_view to_string(ServingBound b);

/// A server keeps up with an open loop while its completions over the measured window are at least
/// this share of the arrivals (the requests in the system vary by about 5% of a window as long as a
/// lifetime, so a smaller shortfall is noise, not a growing queue).
constexpr double kServingKeepUpShare = 0.9;

struct ServingResult {
  LatencyStats ttft_s, tpot_s, e2e_s;
  double output_tokens_per_s = 0;
  double output_tokens_per_s_per_gpu = 0;
  double requests_per_s = 0;
  /// Requests that arrived over the same window (an open loop's realised rate; a closed loop's issues).
  double arrivals_per_s = 0;
  /// Completions kept pace with arrivals over the measured window (kServingKeepUpShare): a queue
  /// that grows falls further behind.
  bool keeps_up = true;
  double goodput_requests_per_s = 0;  ///< completed requests/s meeting both SLOs (all requests when no SLO)
  double slo_attained = 1.0;          ///< share of measured requests meeting both SLOs
  uint64_t gpus = 0;
  uint64_t kv_pool_tokens = 0;     ///< per rank (one attention replica), at the prompt+gen average
  uint64_t max_batch_in_pool = 0;  ///< sequences of prompt+gen tokens (the means) the pool holds per rank
  double mean_decode_batch = 0;    ///< sequences per decode iteration, per rank
  double kv_wait_share = 0;        ///< share of time some request waited for KV blocks
  uint64_t preemptions = 0;
  ServingBound bound = ServingBound::kBandwidth;
  /// Shares of busy iteration time by resource, for the explanation.
  double compute_share = 0, bandwidth_share = 0, overhead_share = 0, communication_share = 0;
  uint64_t simulated_requests = 0;
  uint64_t warmup_requests = 0;    ///< issued before the measured window opened
  uint64_t measured_requests = 0;  ///< whose latencies the statistics hold
  uint64_t iterations = 0;
  bool fits = true;  ///< the weights leave room for at least one sequence on every rank
  std::vector<std::string> notes;
};

/// Requests measured for a load unless it names them: two cycles of the clients
/// (at least 64), bounded at about 8M generated tokens per point.
uint64_t simulated_requests(const ServingLoad& load);

/// Sets every pool's achieved rates and overheads from an era's efficiencies
/// (the peaks stay): how the calibration tries factors without rebuilding.
void apply_era(ServingSetup& setup, const ServingEra& era);

ServingResult simulate_serving(const ServingSetup& setup, const ServingLoad& load);

/// The knee of a sweep (points in increasing load): with SLOs, the highest-throughput
/// point that meets both (goodput equals throughput within 1%); without, the last point
/// before throughput grows by less than 10% from one point to the next. 0 when none qualifies.
std::size_t serving_knee(const std::vector<ServingResult>& sweep, bool with_slos);

}  // namespace optadvisor
