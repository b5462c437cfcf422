// SPDX-License-Identifier: MIT
#include "analysis/open_loop_start.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace optadvisor {

namespace {

/// Contexts at which a steady batch is sampled: its sequences' generated tokens spread evenly.
constexpr int kContextSamples = 16;
/// Bisection steps on the batch: 2^-40 of the largest batch.
constexpr int kBisections = 40;

void add_scaled(StepMix& into, const StepMix& from, double f) {
  into.decode_sequences += f * from.decode_sequences;
  into.decode_context_full += f * from.decode_context_full;
  into.decode_context_sliding += f * from.decode_context_sliding;
  into.decode_context_sparse += f * from.decode_context_sparse;
  into.decode_context_compressed += f * from.decode_context_compressed;
  into.prefill_tokens += f * from.prefill_tokens;
  into.prefill_chunks += f * from.prefill_chunks;
  into.prefill_attention_full += f * from.prefill_attention_full;
  into.prefill_attention_sparse += f * from.prefill_attention_sparse;
  into.prefill_attention_sliding += f * from.prefill_attention_sliding;
  into.prefill_attention_compressed += f * from.prefill_attention_compressed;
  into.prefill_kv_tokens_full += f * from.prefill_kv_tokens_full;
  into.prefill_kv_tokens_sliding += f * from.prefill_kv_tokens_sliding;
}

}  // namespace

OpenLoopStart open_loop_start(const ServingPool& pool, const ServingLoad& load, double rate_per_rank, bool prefills) {
  OpenLoopStart out;
  const StepModel& m = pool.step;
  if (load.gen_tokens < 2 || !(rate_per_rank > 0)) return out;
  const auto prompt = static_cast<double>(load.prompt_tokens);
  const auto steps = static_cast<double>(load.gen_tokens - 1);
  // One sequence of each sampled context, and one whole prompt (its uncached part) in chunks of the
  // step's token budget.
  StepMix batch_of_one;
  for (int k = 0; k < kContextSamples; ++k)
    add_decode(batch_of_one, m, prompt + (k + 0.5) * steps / kContextSamples, 1.0 / kContextSamples);
  // The prompt's chunks, each in a step of its own: a request's prefill adds to the steps it runs
  // in what that chunk costs beside the decode batch (a mixed step) or all of its step (a
  // prefill-first scheduler pauses decoding for it). Averaging a step's share of a prompt into every
  // step instead would have each step touch the experts a whole prompt does.
  std::vector<StepMix> chunks;
  const double cached = std::floor(load.prefix_hit * prompt);
  const double budget = static_cast<double>(std::max<uint64_t>(m.max_batched_tokens, 1));
  for (double a = std::min(cached, prompt - 1); a < prompt; a += budget) {
    chunks.emplace_back();
    add_prefill_chunk(chunks.back(), m, a, std::min(prompt, a + budget));
  }
  const double ranks = std::max<uint32_t>(1, m.layout.dp_attention);
  const bool pauses_decode = m.scheduler == ServingScheduler::kPrefillFirst;
  auto cost = [&](const StepMix& mix, double other_ranks_tokens) {
    StepMix with = mix;
    with.worker_tokens = other_ranks_tokens + step_tokens(m, with);
    return step_cost(m, with, expert_step(m, with.worker_tokens)).time_s;
  };
  // A decode step's mean time at batch n: t = t_decode + (prompts per step) x prompt_cost, with
  // rate x t prompts arriving at the worker per step, so t = t_decode / (1 - rate x prompt_cost);
  // infinite where the prompts alone take the worker's time.
  auto decode_of = [&](double n) {
    StepMix decode;
    add_scaled(decode, batch_of_one, n);
    return decode;
  };
  auto step_at_decode_only = [&](double n) { return cost(decode_of(n), (ranks - 1) * n * m.verify_tokens); };
  auto step_at = [&](double n) {
    const StepMix decode = decode_of(n);
    const double others = (ranks - 1) * n * m.verify_tokens;
    const double t_decode = cost(decode, others);
    if (!prefills) return t_decode;
    // The ranks step together, so every rank's prompt lengthens the worker's step: each rank's
    // decoding waits for the prompts of all of them. A prefill-only step (prefill-first) runs on
    // the rank with the prompt while the others decode beside it.
    double prompt_cost = 0;
    for (const StepMix& c : chunks) {
      StepMix step = c;
      if (!pauses_decode) add_scaled(step, decode, 1);
      prompt_cost += cost(step, others) - (pauses_decode ? t_decode * (1 - 1 / ranks) : t_decode);
    }
    const double busy = rate_per_rank * ranks * prompt_cost;
    return busy < 1 ? t_decode / (1 - busy) : std::numeric_limits<double>::infinity();
  };
  // The largest batch the pool admits: the sequence cap, and the KV pool at the batch's mean length
  // (prompt and all new tokens where the engine reserves them at admission).
  const double mean_tokens = m.admission == KvAdmission::kReserveFull ? prompt + static_cast<double>(load.gen_tokens) : prompt + steps / 2;
  const double per_sequence = request_kv_bytes(m, mean_tokens);
  double cap = static_cast<double>(m.max_sequences);
  if (per_sequence > 0) cap = std::min(cap, m.kv_pool_bytes / per_sequence);
  cap = std::max(cap, 0.0);
  auto excess = [&](double n) { return rate_per_rank * steps * step_at(n) - n; };
  if (excess(cap) >= 0) {
    out.sequences_per_rank = cap;
    out.at_capacity = true;
  } else {
    double lo = 0, hi = cap;
    for (int i = 0; i < kBisections; ++i) {
      const double mid = (lo + hi) / 2;
      (excess(mid) > 0 ? lo : hi) = mid;
    }
    out.sequences_per_rank = (lo + hi) / 2;
  }
  // Past capacity the prompts queue (they would lengthen the steps without bound): a request in
  // the full batch decodes at the batch's own steps.
  out.step_s = out.at_capacity ? step_at_decode_only(out.sequences_per_rank) : step_at(out.sequences_per_rank);
  out.lifetime_s = steps * out.step_s;
  return out;
}

}  // namespace optadvisor
