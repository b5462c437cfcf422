// SPDX-License-Identifier: MIT
#include "optadvisor/analysis/serving_ceiling.hpp"

#include <algorithm>
#include <cmath>

namespace optadvisor {
namespace {

/// One rank's decode step of `b` sequences, each at `context` tokens, in a worker stepping `worker_tokens` in all.
StepMix decode_mix(const StepModel& m, double b, double context, double worker_tokens) {
  StepMix mix;
  add_decode(mix, m, context, b);
  mix.worker_tokens = worker_tokens;
  return mix;
}

/// A prompt of `tokens` prefilled alone, in chunks of the engine's token budget (from position 0:
/// a prompt after a cached prefix attends to more).
double lone_prefill_s(const StepModel& m, double tokens) {
  const double budget = static_cast<double>(std::max<uint64_t>(m.max_batched_tokens, 1));
  double t = 0;
  for (double done = 0; done < tokens; done += budget) {
    StepMix mix;
    add_prefill_chunk(mix, m, done, std::min(tokens, done + budget));
    mix.worker_tokens = mix.prefill_tokens;
    t += step_cost(m, mix).time_s;
  }
  return t;
}

/// The most decode sequences a rank holds: its sequence cap and what its KV pool holds.
double batch_cap(const StepModel& m, const CeilingLoad& load) {
  const bool reserve_full = m.admission == KvAdmission::kReserveFull;
  const double per_sequence = request_kv_bytes(m, load.context_tokens + (reserve_full ? load.decode_steps : 0.0) + 1.0);
  double cap = static_cast<double>(m.max_sequences);
  if (per_sequence > 0) cap = std::min(cap, std::floor(m.kv_pool_bytes / per_sequence));
  return std::max(cap, 1.0);
}

/// Whether a worker can complete `rate` requests/s in the steady state with its mean TPOT within
/// the SLO. Per rank, with x the mean step time and N the mean decode batch (every step advances
/// every running sequence, so by Little's law N = rank rate x decode_steps x x, and N is at most the cap):
///   x >= step(N)                    a decode step of N sequences (weights, KV, overheads);
///   x (1 - prefill share) >= g(N)   where each second also holds the prompts' GEMM and attention
///                                   math, g(N) is the step without its weight reads (fixed costs,
///                                   KV, the decode tokens' math), affine in N so it averages over steps.
bool sustains(const StepModel& m, const StepModel& no_weights, const CeilingLoad& load, double cap, double rate) {
  const double ranks = std::max<uint32_t>(1, m.layout.dp_attention);
  const double rank_rate = rate / ranks;
  const double prefill_share =
      rate * (load.prompt_tokens * (m.dense_flops_per_token / ranks + m.expert_flops_per_token) + m.head_flops_per_logit / ranks) /
          m.gemm_flops_per_s +
      (m.attention_flops_per_s > 0 ? rank_rate * m.attention_flops_full * load.prompt_tokens * load.prompt_tokens / 2.0 / m.attention_flops_per_s
                                   : 0.0);
  if (prefill_share >= 1) return false;
  if (!(load.decode_steps > 0)) return true;
  const double slo = load.slo_tpot_s > 0 ? load.slo_tpot_s : INFINITY;
  const double batch = std::min(rank_rate * load.decode_steps * slo, cap);
  const double step = batch / (rank_rate * load.decode_steps);
  // A dp-attention worker's experts see every rank's tokens: ranks x batch of them per step.
  const StepMix mix = decode_mix(m, batch, load.context_tokens, ranks * batch * m.verify_tokens);
  return step >= step_cost(m, mix).time_s && step * (1 - prefill_share) >= step_cost(no_weights, mix).time_s;
}

}  // namespace

CeilingLoad ceiling_load(const ServingPool& pool, const ServingLoad& load, double slo_ttft_s, double slo_tpot_s,
                         double request_overhead_s) {
  CeilingLoad c;
  const double prompt = static_cast<double>(load.prompt_tokens);
  const double uncached = prompt * (1.0 - std::clamp(load.prefix_hit, 0.0, 1.0));
  const double after_first = load.gen_tokens > 0 ? static_cast<double>(load.gen_tokens - 1) : 0.0;
  c.prompt_tokens = pool.role == ServingRole::kDecode ? 0.0 : uncached;
  c.decode_steps = pool.role == ServingRole::kPrefill ? 0.0 : after_first;
  c.context_tokens = prompt;
  c.slo_ttft_s = pool.role == ServingRole::kDecode ? 0.0 : slo_ttft_s;  // a decode worker's TTFT holds another pool's prefill
  c.slo_tpot_s = pool.role == ServingRole::kPrefill ? 0.0 : slo_tpot_s;
  c.request_overhead_s = request_overhead_s;
  return c;
}

double serving_rate_ceiling(const ServingPool& pool, const CeilingLoad& load) {
  const StepModel& m = pool.step;
  // A pool that cannot hold one whole request never runs it (simulate_serving's fit check).
  if (!(m.kv_pool_bytes > 0) || request_kv_bytes(m, load.context_tokens + load.decode_steps + 1.0) > m.kv_pool_bytes) return 0;
  if (load.slo_ttft_s > 0 && load.prompt_tokens > 0 && load.request_overhead_s + lone_prefill_s(m, load.prompt_tokens) > load.slo_ttft_s)
    return 0;
  const double cap = batch_cap(m, load);
  if (load.decode_steps > 0 && load.slo_tpot_s > 0 && step_cost(m, decode_mix(m, 1, load.context_tokens, 1)).time_s > load.slo_tpot_s) return 0;
  StepModel no_weights = m;
  no_weights.dense_weight_bytes = no_weights.expert_weight_bytes = 0;
  // The rate is sustainable below some ceiling and not above (every term grows with it): bisect.
  double lo = 0, hi = 1;
  while (sustains(m, no_weights, load, cap, hi) && hi < 1e9) lo = hi, hi *= 2;
  for (int i = 0; i < 40 && hi - lo > 1e-4 * hi; ++i) {
    const double mid = (lo + hi) / 2;
    (sustains(m, no_weights, load, cap, mid) ? lo : hi) = mid;
  }
  return hi;
}

}  // namespace optadvisor
