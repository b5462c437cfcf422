// SPDX-License-Identifier: MIT
// The serving simulation: a discrete-event loop over workers' iterations.
// Each worker runs one iteration at a time on all its attention ranks in
// lockstep (their experts exchange tokens every layer); an iteration's
// composition is fixed when it starts and its effects (tokens, completions,
// preemptions) land when it ends.
#include "optadvisor/analysis/serving.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <queue>
#include <random>

#include <fmt/format.h>

#include "analysis/decode_set.hpp"
#include "analysis/open_loop_start.hpp"

namespace optadvisor {

std::string_view to_string(ServingBound b) {
  switch (b) {
    case ServingBound::kCompute: return "compute";
    case ServingBound::kBandwidth: return "memory-bandwidth";
    case ServingBound::kKvCapacity: return "kv-capacity";
    case ServingBound::kScheduler: return "scheduler";
    case ServingBound::kCommunication: return "communication";
    case ServingBound::kSequenceCap: return "sequence-cap";
    case ServingBound::kApiServer: return "api-server";
  }
  return "memory-bandwidth";
}

namespace {
/// Generated tokens a serving point measures at most.
constexpr uint64_t kPointTokens = 8'000'000;
/// Requests an open loop may warm up with, and the most a lifetime of arrivals measures: a lifetime
/// twice over at a high rate of long generations (100 requests/s living two minutes: 24,000).
/// Decoding costs per iteration and rank, not per token (decode_set.hpp), so this bounds memory
/// (about 100 bytes a request) and the arrivals' bookkeeping, not the decode work.
constexpr uint64_t kMaxWarmupRequests = 200'000;
/// Requests a point measures at least where lengths vary: its percentiles are of a distribution
/// (the p99 from ten requests), not of a fixed length's near-equal values.
constexpr uint64_t kSpreadPointRequests = 1000;
}  // namespace

uint64_t simulated_requests(const ServingLoad& load) {
  if (load.requests) return load.requests;
  // Two cycles of the clients after a warm-up cycle, at least 64 requests (kSpreadPointRequests
  // where lengths vary), and at most about kPointTokens generated tokens per point.
  const uint64_t c = std::max<uint64_t>(load.concurrency, 1);
  const uint64_t wanted = std::max<uint64_t>(2 * c, load.lengths_vary() ? kSpreadPointRequests : 64);
  const uint64_t budget = std::max<uint64_t>(kPointTokens / std::max<uint64_t>(load.gen_tokens, 1), c);
  return std::min(wanted, budget);
}

namespace {

struct Request {
  double arrival = 0;
  double first_token = -1;
  double finish = -1;
  uint64_t prefill_left = 0;  ///< prompt tokens still to compute (all of them again after a preemption)
  uint64_t position = 0;      ///< tokens in this request's KV cache
  uint64_t generated = 0;
  uint32_t prompt = 0;  ///< this request's prompt tokens
  uint32_t gen = 0;     ///< and the tokens it generates
  double allocated_bytes = 0;
  bool measured = false;
};

struct Chunk {
  uint32_t request;
  uint64_t tokens;
};

struct Rank {
  std::deque<uint32_t> waiting;  ///< not admitted yet (no KV blocks)
  std::vector<uint32_t> prefilling;
  DecodeSet running;  ///< decoding, in admission order (the newest is preempted first)
  double used_bytes = 0;
  // The iteration in flight.
  std::vector<Chunk> chunks;
  bool decoding = false;
  bool blocked_by_kv = false;
  bool blocked_by_cap = false;
  uint64_t load() const { return waiting.size() + prefilling.size() + running.size(); }
};

struct Worker {
  const ServingPool* pool = nullptr;
  std::vector<Rank> ranks;
  bool busy = false;
  StepCost last;  ///< the binding rank's cost of the iteration in flight
  ExpertStep experts;  ///< the expert terms of the last iteration's worker tokens
  std::vector<StepMix> mixes;  ///< each rank's mix of the iteration being planned (kept to reuse its memory)
  double last_time = 0;
};

/// What decoding from `from` to `to` tokens adds to request_kv_bytes(): their KV in every full
/// layer, and in the sliding layers while the context is within the window.
double kv_growth_bytes(const StepModel& m, uint64_t from, uint64_t to) {
  const auto w = m.window_tokens;
  const uint64_t sliding = w == 0 ? to - from : std::min(to, w) - std::min(from, w);
  return m.kv_bytes_per_token_full * static_cast<double>(to - from) + m.kv_bytes_per_token_sliding * static_cast<double>(sliding);
}

class Simulation {
 public:
  Simulation(const ServingSetup& setup, const ServingLoad& load)
      : setup_(setup), load_(load), rng_(load.seed), lengths_rng_(load.seed ^ kLengthsSeed) {
    for (const auto& pool : setup.pools) {
      for (uint32_t i = 0; i < pool.workers; ++i) {
        Worker w;
        w.pool = &pool;
        w.ranks.resize(std::max<uint32_t>(1, pool.step.layout.dp_attention));
        for (Rank& r : w.ranks) r.running = DecodeSet(&members_, pool.step);
        (pool.role == ServingRole::kDecode ? decode_workers_ : front_workers_).push_back(workers_.size());
        workers_.push_back(std::move(w));
      }
      result_.gpus += static_cast<uint64_t>(pool.workers) * pool.step.layout.gpus();
    }
    frontend_free_.assign(std::max<std::size_t>(1, front_workers_.size()), 0.0);
    const uint64_t measured = simulated_requests(load);
    warmup_ = load.warmup_requests ? *load.warmup_requests : load.concurrency ? load.concurrency : std::max<uint64_t>(measured / 10, 8);
    measured_end_ = warmup_ + measured;
    measured_count_ = measured;
    // An open loop with no warm-up asked for starts from its steady batch (start_warm); where it
    // has none to start from (one generated token), it warms up for twice the arrivals before the
    // first completion: a lifetime of arrivals fills the system, and since a fuller batch steps
    // slower, lifetimes grow until a second one has passed. At most kMaxWarmupRequests.
    warm_until_completion_ = !load.concurrency && !load.warmup_requests;
    max_warmup_ = warmup_ + std::max(kMaxWarmupCycles * measured, kMaxWarmupRequests);
    // Closed loop: keep C clients busy until the last measured request ends; a warming open loop
    // keeps arriving too (a server that stops receiving speeds up and seems to keep up).
    total_ = measured_end_ + (load.concurrency ? load.concurrency : warm_until_completion_ ? kMaxWarmupCycles * measured : 0);
    requests_.reserve(total_);
  }

  ServingResult run();

 private:
  static constexpr uint64_t kMaxIterations = 50'000'000;  // a bound, never reached by sized loads
  static constexpr uint64_t kMaxWarmupCycles = 4;
  /// Mixed into the seed for the lengths' own stream, so that drawing them leaves the arrivals as they were.
  static constexpr uint64_t kLengthsSeed = 0x9e3779b97f4a7c15ULL;
  /// An open loop's window is measured again, a window longer each time, at most this many times
  /// while its keep-up verdict is in doubt (keep_up_in_doubt).
  static constexpr uint32_t kMaxWindowExtensions = 3;
  /// How many standard deviations of the requests in the system a shortfall of completions must
  /// exceed before the window's verdict stands without measuring longer.
  static constexpr double kKeepUpDoubtSigmas = 3.0;
  /// The API servers' busy share of the measured window from which they, not the GPUs, bind.
  static constexpr double kApiServerBusyShare = 0.9;
  void run_events();
  void run_until_measured(std::exponential_distribution<double>& gap);
  void start_warm();
  /// The measured window's arrivals and the completions over the same span.
  struct WindowCounts {
    double start = 0, last = 0;  ///< the first measured arrival and the last arrival before the end
    double arrivals_per_s = 0;   ///< 0 when the span is empty
    double completed = 0;        ///< completions within [start, last]
  };
  WindowCounts window_counts() const;
  bool keep_up_in_doubt() const;
  void extend_window();
  void measure_latencies(ServingResult& out);
  void measure_rates(ServingResult& out);
  void attribute_time(ServingResult& out);
  double kv_bytes(const StepModel& m, double tokens) const { return request_kv_bytes(m, tokens); }
  /// The prompt tokens a request of `prompt` tokens finds in the prefix cache (one is always computed).
  uint64_t cached_tokens(uint64_t prompt) const {
    const auto cached = static_cast<uint64_t>(std::floor(load_.prefix_hit * static_cast<double>(prompt)));
    return std::min(cached, prompt > 0 ? prompt - 1 : 0);
  }
  /// A new request with its lengths: the load's, or drawn from its spreads.
  Request new_request() {
    Request r;
    r.prompt = static_cast<uint32_t>(draw_length(load_.prompt_tokens, load_.prompt_spread, lengths_rng_));
    r.gen = static_cast<uint32_t>(draw_length(load_.gen_tokens, load_.gen_spread, lengths_rng_));
    return r;
  }
  /// A request found decoding in the steady state: its generated length drawn length-biased.
  Request decoding_request() {
    Request r;
    r.prompt = static_cast<uint32_t>(draw_length(load_.prompt_tokens, load_.prompt_spread, lengths_rng_));
    r.gen = static_cast<uint32_t>(draw_decoding_length(load_.gen_tokens, load_.gen_spread, lengths_rng_));
    return r;
  }
  /// The KV request `q` holding `tokens` takes when admitted: blocks for those tokens and the next
  /// on incremental engines, for its prompt + max new tokens on reserve-full ones; less a cached
  /// prefix of `shared_prefix` tokens, held once by the pool rather than by each request.
  double admission_bytes(const StepModel& m, const Request& q, uint64_t tokens, uint64_t shared_prefix) const {
    double need = m.admission == KvAdmission::kReserveFull ? kv_bytes(m, static_cast<double>(q.prompt) + static_cast<double>(q.gen))
                                                            : kv_bytes(m, static_cast<double>(tokens) + 1);
    if (shared_prefix > 0) need -= kv_bytes(m, static_cast<double>(shared_prefix)) - m.state_bytes_per_sequence;
    return need;
  }
  void issue(double now);
  void dispatch(uint32_t id, const std::vector<std::size_t>& candidates, double now);
  void start(std::size_t w, double now);
  void plan(Rank& r, const ServingPool& pool, double now);
  void fill_prefill(Rank& r, const StepModel& m, uint64_t budget);
  bool admit(Rank& r, const StepModel& m, uint32_t id, bool decode_role);
  void finish_iteration(std::size_t w, double now);
  void complete(uint32_t id, double now);
  void join_decode(Rank& r, uint32_t id);
  void settle(const StepModel& m, uint32_t id, DecodeSet::Where w);
  void push(double t, int kind, std::size_t index) { events_.push({t, seq_++, kind, index}); }

  struct Event {
    double time;
    uint64_t seq;
    int kind;  // 0 worker iteration ends, 1 open-loop arrival, 2 KV transfer lands at the decode pool, 3 request reaches the engine
    std::size_t index;
    bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };

  const ServingSetup& setup_;
  const ServingLoad& load_;
  std::mt19937_64 rng_;
  std::mt19937_64 lengths_rng_;  ///< request lengths (request_lengths.hpp), apart from the arrivals
  std::vector<Worker> workers_;
  std::vector<std::size_t> front_workers_, decode_workers_;
  std::vector<Request> requests_;
  std::vector<DecodeMember> members_;  ///< by request id: where each decoding request stands in its rank's set
  std::vector<uint32_t> finished_;     ///< the requests an iteration completes (kept to reuse its memory)
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  uint64_t seq_ = 0, warmup_ = 0, measured_end_ = 0, total_ = 0, done_measured_ = 0;
  uint64_t measured_count_ = 0, max_warmup_ = 0;
  uint32_t window_extensions_ = 0;
  bool arrival_pending_ = false;  ///< an open loop's next arrival is in the event queue
  bool warm_until_completion_ = false;
  uint64_t warm_target_ = UINT64_MAX;  ///< twice the arrivals before the first completion, once it happened
  double last_arrival_ = 0;
  std::vector<double> frontend_free_;  ///< when each API server is free to take the next request
  bool holding_starts_ = false;  ///< while the first burst is issued: queue it, start the workers after
  double window_start_ = -1, window_tokens_start_ = 0, window_done_start_ = 0;
  double warmup_done_at_ = -1, warmup_done_tokens_ = 0, warmup_done_completions_ = 0;  ///< at the last warm-up completion so far
  double tokens_out_ = 0, completions_ = 0, now_ = 0;
  // Iteration accounting.
  double busy_compute_ = 0, busy_bandwidth_ = 0, busy_overhead_ = 0, busy_comm_ = 0, kv_wait_ = 0, cap_wait_ = 0;
  double decode_batches_ = 0, decode_iterations_ = 0;
  ServingResult result_;
};

void Simulation::issue(double now) {
  if (requests_.size() >= total_) return;
  const uint32_t id = static_cast<uint32_t>(requests_.size());
  Request r = new_request();
  r.arrival = now;
  last_arrival_ = now;
  r.position = cached_tokens(r.prompt);
  r.prefill_left = r.prompt - r.position;
  if (warm_until_completion_ && id >= warmup_ && id < warm_target_ && id < max_warmup_) {
    warmup_ = id + 1;  // still filling: this one warms up too
    // Measure at least a lifetime of arrivals (half the warm-up), so the window's completions
    // tell a growing queue from noise.
    measured_end_ = warmup_ + std::max(measured_count_, warmup_ / 2);
    total_ = measured_end_ + std::max(kMaxWarmupCycles * measured_count_, warmup_);
  }
  r.measured = id >= warmup_ && id < measured_end_;
  requests_.push_back(r);
  members_.emplace_back();
  if (id == warmup_) {
    window_start_ = now;
    window_tokens_start_ = tokens_out_;
    window_done_start_ = completions_;
  }
  if (setup_.frontend_request_s > 0) {
    // Each API server (one per replica or prefill worker) takes requests one at a time: this one
    // reaches the engine once the first server free has handed over those before it.
    double& server = *std::min_element(frontend_free_.begin(), frontend_free_.end());
    server = std::max(now, server) + setup_.frontend_request_s;
    push(server, 3, id);
    return;
  }
  dispatch(id, front_workers_, now);
}

void Simulation::dispatch(uint32_t id, const std::vector<std::size_t>& candidates, double now) {
  // The least-loaded rank of the pool (the first on ties): a router balancing by queue length.
  std::size_t best_w = candidates.front(), best_r = 0;
  uint64_t best = UINT64_MAX;
  for (std::size_t w : candidates)
    for (std::size_t r = 0; r < workers_[w].ranks.size(); ++r)
      if (workers_[w].ranks[r].load() < best) best = workers_[w].ranks[r].load(), best_w = w, best_r = r;
  workers_[best_w].ranks[best_r].waiting.push_back(id);
  if (!workers_[best_w].busy && !holding_starts_) start(best_w, now);
}

bool Simulation::admit(Rank& r, const StepModel& m, uint32_t id, bool decode_role) {
  Request& q = requests_[id];
  if (r.prefilling.size() + r.running.size() >= m.max_sequences) {
    r.blocked_by_cap = true;
    return false;
  }
  const double need = admission_bytes(m, q, q.position + q.prefill_left, !decode_role && q.generated == 0 ? q.position : 0);
  if (r.used_bytes + need > m.kv_pool_bytes && !(r.running.empty() && r.prefilling.empty())) {
    r.blocked_by_kv = true;
    return false;
  }
  q.allocated_bytes = need;
  r.used_bytes += need;
  return true;
}

void Simulation::plan(Rank& r, const ServingPool& pool, double now) {
  const StepModel& m = pool.step;
  r.chunks.clear();
  r.decoding = false;
  r.blocked_by_kv = r.blocked_by_cap = false;
  if (pool.role == ServingRole::kDecode) {
    // KV arrived from a prefill worker: admit what fits, then decode everything.
    // The first token streams once the decode worker holds the request (Dynamo and
    // SGLang PD admit on the decode side), so waiting for a decode slot counts in TTFT.
    while (!r.waiting.empty() && admit(r, m, r.waiting.front(), true)) {
      Request& q = requests_[r.waiting.front()];
      if (q.first_token < 0) q.first_token = now;
      join_decode(r, r.waiting.front());
      r.waiting.pop_front();
    }
    r.decoding = !r.running.empty();
    return;
  }
  auto prefill_pending = [&] {
    if (!r.prefilling.empty()) return true;
    if (r.waiting.empty()) return false;
    return r.prefilling.size() + r.running.size() < m.max_sequences;
  };
  const bool prefill_only = pool.role == ServingRole::kPrefill || (m.scheduler == ServingScheduler::kPrefillFirst && prefill_pending());
  uint64_t budget = m.max_batched_tokens;
  if (!prefill_only && !r.running.empty()) {
    r.decoding = true;
    budget = budget > r.running.size() ? budget - r.running.size() : 0;
  }
  fill_prefill(r, m, budget);
  if (prefill_only && r.chunks.empty() && pool.role == ServingRole::kMixed && !r.running.empty()) {
    // Nothing could be admitted (KV or sequence cap): decode instead.
    r.decoding = true;
  }
}

void Simulation::fill_prefill(Rank& r, const StepModel& m, uint64_t budget) {
  for (uint32_t id : r.prefilling) {
    if (budget == 0) break;
    const uint64_t n = std::min(budget, requests_[id].prefill_left);
    r.chunks.push_back({id, n});
    budget -= n;
  }
  while (budget > 0 && !r.waiting.empty()) {
    const uint32_t id = r.waiting.front();
    if (!admit(r, m, id, false)) break;
    r.waiting.pop_front();
    r.prefilling.push_back(id);
    const uint64_t n = std::min(budget, requests_[id].prefill_left);
    r.chunks.push_back({id, n});
    budget -= n;
  }
}

void Simulation::start(std::size_t w, double now) {
  Worker& worker = workers_[w];
  const StepModel& m = worker.pool->step;
  std::vector<StepMix>& mixes = worker.mixes;
  mixes.assign(worker.ranks.size(), StepMix{});
  double worker_tokens = 0;
  bool any = false;
  for (std::size_t i = 0; i < worker.ranks.size(); ++i) {
    Rank& r = worker.ranks[i];
    plan(r, *worker.pool, now);
    StepMix& mix = mixes[i];
    if (r.decoding) r.running.add_to(mix);
    for (const Chunk& c : r.chunks) {
      const double a = static_cast<double>(requests_[c.request].position);
      add_prefill_chunk(mix, m, a, a + static_cast<double>(c.tokens));
    }
    worker_tokens += step_tokens(m, mix);
    any = any || r.decoding || !r.chunks.empty();
  }
  if (!any) {
    worker.busy = false;
    return;
  }
  StepCost slowest;
  bool kv_blocked = false, cap_blocked = false;
  // Every rank's tokens are at most the worker's, so the ranks share the expert terms; a worker
  // decoding a steady batch steps the same tokens many times over.
  if (worker.experts.worker_tokens != worker_tokens) worker.experts = expert_step(m, worker_tokens);
  for (std::size_t i = 0; i < worker.ranks.size(); ++i) {
    mixes[i].worker_tokens = worker_tokens;
    const StepCost c = step_cost(m, mixes[i], worker.experts);
    if (c.time_s > slowest.time_s) slowest = c;
    kv_blocked = kv_blocked || worker.ranks[i].blocked_by_kv;
    cap_blocked = cap_blocked || worker.ranks[i].blocked_by_cap;
    if (worker.ranks[i].decoding) decode_batches_ += mixes[i].decode_sequences, decode_iterations_ += 1;
  }
  worker.busy = true;
  worker.last = slowest;
  busy_compute_ += slowest.compute_s;
  busy_bandwidth_ += slowest.bandwidth_s;
  busy_overhead_ += slowest.overhead_s;
  busy_comm_ += slowest.communication_s;
  if (kv_blocked) kv_wait_ += slowest.time_s;
  if (cap_blocked) cap_wait_ += slowest.time_s;
  ++result_.iterations;
  push(now + slowest.time_s, 0, w);
}

void Simulation::complete(uint32_t id, double now) {
  Request& q = requests_[id];
  q.finish = now;
  completions_ += 1;
  if (completions_ == 1) warm_target_ = 2 * static_cast<uint64_t>(requests_.size());
  if (q.measured) ++done_measured_;
  if (id < warmup_) warmup_done_at_ = now, warmup_done_tokens_ = tokens_out_, warmup_done_completions_ = completions_;
  if (load_.concurrency) issue(now);  // the client sends its next request
}

void Simulation::join_decode(Rank& r, uint32_t id) {
  const Request& q = requests_[id];
  r.running.join(id, q.position, q.generated, q.gen);
}

/// A request that left its rank's decode set: where it got to, and the KV it grew on the way.
void Simulation::settle(const StepModel& m, uint32_t id, DecodeSet::Where w) {
  Request& q = requests_[id];
  if (m.admission == KvAdmission::kIncremental) q.allocated_bytes += kv_growth_bytes(m, q.position, w.position);
  q.position = w.position;
  q.generated = w.generated;
}

void Simulation::finish_iteration(std::size_t w, double now) {
  Worker& worker = workers_[w];
  const StepModel& m = worker.pool->step;
  const bool disaggregated = worker.pool->role == ServingRole::kPrefill;
  std::vector<uint32_t>& finished = finished_;
  finished.clear();
  for (Rank& r : worker.ranks) {
    // Decode: every running sequence gains a token (and its KV, on incremental engines).
    if (r.decoding) {
      tokens_out_ += static_cast<double>(r.running.size());
      if (m.admission == KvAdmission::kIncremental)
        r.used_bytes += m.kv_bytes_per_token_full * static_cast<double>(r.running.size()) +
                        m.kv_bytes_per_token_sliding * static_cast<double>(r.running.below_window());
      const std::size_t first = finished.size();
      r.running.advance(finished);
      for (std::size_t k = first; k < finished.size(); ++k) {
        settle(m, finished[k], r.running.where(finished[k]));
        r.used_bytes -= requests_[finished[k]].allocated_bytes;
      }
    }
    // Prefill chunks: a finished prompt yields the first token.
    for (const Chunk& c : r.chunks) {
      Request& q = requests_[c.request];
      q.prefill_left -= c.tokens;
      q.position += c.tokens;
      if (q.prefill_left > 0) continue;
      r.prefilling.erase(std::find(r.prefilling.begin(), r.prefilling.end(), c.request));
      if (q.generated == 0) {
        q.generated = 1;
        tokens_out_ += 1;
      }
      if (disaggregated) {
        // The KV cache moves to a decode worker; the first token streams from there.
        r.used_bytes -= q.allocated_bytes;
        q.allocated_bytes = 0;
        const double transfer = setup_.kv_transfer_latency_s +
                                (setup_.kv_transfer_bytes_per_s > 0
                                     ? m.kv_transfer_bytes_per_token * static_cast<double>(q.position) / setup_.kv_transfer_bytes_per_s
                                     : 0.0);
        push(now + transfer, 2, c.request);
        continue;
      }
      if (q.first_token < 0) q.first_token = now;
      if (q.generated >= q.gen) {
        r.used_bytes -= q.allocated_bytes;
        finished.push_back(c.request);
      } else {
        join_decode(r, c.request);
      }
    }
    // Out of blocks: preempt the newest sequence and recompute it later (vLLM V1, SGLang retract).
    while (r.used_bytes > m.kv_pool_bytes && r.running.size() > 1) {
      const uint32_t id = r.running.newest();
      settle(m, id, r.running.leave(id));
      Request& q = requests_[id];
      r.used_bytes -= q.allocated_bytes;
      q.allocated_bytes = 0;
      q.prefill_left = q.position;
      q.position = 0;
      r.waiting.push_front(id);
      ++result_.preemptions;
    }
  }
  for (uint32_t id : finished) complete(id, now);
  start(w, now);
}

/// An open loop with no warm-up asked for starts from its estimated steady state (open_loop_start):
/// each decoding rank already holds its batch, whose generated tokens spread evenly over a
/// lifetime, so that they leave one by one as the arrivals replace them. It warms up for half a
/// lifetime of arrivals after that (the estimate's error relaxes as its requests leave) and
/// measures at least a lifetime of them, as the empty start measured after two (exactly the
/// requests asked for, where a count was).
void Simulation::start_warm() {
  const ServingPool* decoding = nullptr;
  for (const auto& pool : setup_.pools)
    if (pool.role != ServingRole::kPrefill) decoding = &pool;
  std::vector<std::pair<std::size_t, std::size_t>> ranks;  // (worker, rank) of the decoding pool
  for (std::size_t w = 0; w < workers_.size(); ++w)
    if (workers_[w].pool == decoding)
      for (std::size_t r = 0; r < workers_[w].ranks.size(); ++r) ranks.emplace_back(w, r);
  if (!decoding || ranks.empty()) return;
  const double rate_per_rank = load_.rate_per_s / static_cast<double>(ranks.size());
  const OpenLoopStart steady = open_loop_start(*decoding, load_, rate_per_rank, decoding->role == ServingRole::kMixed);
  if (!(steady.lifetime_s > 0) || !std::isfinite(steady.lifetime_s)) return;
  const StepModel& m = decoding->step;
  const auto held = static_cast<uint64_t>(std::floor(steady.sequences_per_rank * static_cast<double>(ranks.size())));
  const bool shares_prefix = decoding->role == ServingRole::kMixed;
  for (uint64_t i = 0; i < held; ++i) {
    const auto id = static_cast<uint32_t>(requests_.size());
    Request q = decoding_request();
    if (q.gen < 2) continue;  // a load of one generated token decodes nothing
    const uint64_t steps = q.gen - 1;
    q.generated = 1 + (2 * i + 1) * steps / (2 * held);  // 1 .. gen - 1, evenly
    q.position = q.prompt + q.generated - 1;
    q.arrival = q.first_token = -steady.step_s * static_cast<double>(q.generated);
    // A request that prefilled on this pool shares the cached prefix; one whose KV came from a prefill worker does not.
    q.allocated_bytes = admission_bytes(m, q, q.position, shares_prefix ? cached_tokens(q.prompt) : 0);
    requests_.push_back(q);
    members_.emplace_back();
    Rank& r = workers_[ranks[i % ranks.size()].first].ranks[ranks[i % ranks.size()].second];
    r.used_bytes += q.allocated_bytes;
    join_decode(r, id);
  }
  warm_until_completion_ = false;
  const double lifetime_arrivals = std::min(load_.rate_per_s * steady.lifetime_s, static_cast<double>(kMaxWarmupRequests));
  const auto settle = static_cast<uint64_t>(std::ceil(lifetime_arrivals / 2));
  const auto lifetime = static_cast<uint64_t>(std::ceil(lifetime_arrivals));
  warmup_ = held + std::max<uint64_t>(settle, 8);
  measured_end_ = warmup_ + (load_.requests ? measured_count_ : std::max(measured_count_, lifetime));
  total_ = measured_end_ + std::max(kMaxWarmupCycles * measured_count_, 2 * lifetime);
  requests_.reserve(total_);
  for (std::size_t w = 0; w < workers_.size(); ++w)
    if (!workers_[w].busy) start(w, 0);
}

void Simulation::run_events() {
  if (load_.concurrency) {
    // The benchmark's clients all send their first request at once (vllm bench serve
    // --max-concurrency, genai-perf, aiperf), so the first iteration holds as many of the
    // prompts as its token budget takes; with fixed lengths the cohorts stay in step.
    holding_starts_ = true;
    for (uint64_t i = 0; i < load_.concurrency && requests_.size() < total_; ++i) issue(0);
    holding_starts_ = false;
    for (std::size_t w : front_workers_)
      if (!workers_[w].busy) start(w, 0);
  } else {
    if (warm_until_completion_) start_warm();
    push(0, 1, 0);
    arrival_pending_ = true;
  }
  std::exponential_distribution<double> gap(std::max(load_.rate_per_s, 1e-9));
  for (;;) {
    run_until_measured(gap);
    if (result_.iterations >= kMaxIterations || !keep_up_in_doubt()) return;
    extend_window();
    if (!arrival_pending_) {
      push(now_ + gap(rng_), 1, 0);
      arrival_pending_ = true;
    }
  }
}

void Simulation::run_until_measured(std::exponential_distribution<double>& gap) {
  while (!events_.empty() && done_measured_ < measured_end_ - warmup_ && result_.iterations < kMaxIterations) {
    const Event e = events_.top();
    events_.pop();
    now_ = e.time;
    if (e.kind == 0) {
      finish_iteration(e.index, now_);
    } else if (e.kind == 1) {
      issue(now_);
      arrival_pending_ = !load_.concurrency && requests_.size() < total_;
      if (arrival_pending_) push(now_ + gap(rng_), 1, 0);
    } else if (e.kind == 3) {
      dispatch(static_cast<uint32_t>(e.index), front_workers_, now_);
    } else {
      Request& q = requests_[e.index];
      if (q.generated >= q.gen) {
        q.first_token = now_;
        complete(static_cast<uint32_t>(e.index), now_);
      } else
        dispatch(static_cast<uint32_t>(e.index), decode_workers_, now_);
    }
  }
}

Simulation::WindowCounts Simulation::window_counts() const {
  WindowCounts w;
  w.start = std::max(window_start_, 0.0);
  w.last = std::min(now_, last_arrival_);
  if (!(w.last > w.start)) return w;
  const auto arrived = static_cast<double>(requests_.size() - warmup_);
  w.arrivals_per_s = (arrived - 1) / (w.last - w.start);
  // Completions and arrivals over the same span: past the last arrival a server drains its
  // queue, and requests that outlive the others would read as falling behind.
  for (const Request& q : requests_) w.completed += q.finish >= w.start && q.finish <= w.last;
  return w;
}

/// An open loop's completions over the window equal its arrivals less the growth of the requests
/// in the system, so a server that keeps up falls short by that count's change between the
/// window's ends: about sqrt(2 N) for N requests in the system (each end's count varies about as
/// a Poisson count of its mean, as in an M/G/infinity system). A shortfall past
/// kServingKeepUpShare but within kKeepUpDoubtSigmas of that is measured again over a longer
/// window, where a growing queue's shortfall grows with the window and the noise does not.
bool Simulation::keep_up_in_doubt() const {
  if (load_.concurrency || load_.requests || window_extensions_ >= kMaxWindowExtensions) return false;
  const WindowCounts w = window_counts();
  const double span = w.last - w.start;
  if (!(span > 0)) return false;
  const double arrivals = w.arrivals_per_s * span;
  if (w.completed >= kServingKeepUpShare * arrivals) return false;
  double sojourn = 0, n = 0;
  for (const Request& q : requests_)
    if (q.measured && q.finish >= 0) sojourn += q.finish - q.arrival, n += 1;
  const double in_system = n > 0 ? w.arrivals_per_s * sojourn / n : 0;  // Little's law
  return arrivals - w.completed <= kKeepUpDoubtSigmas * std::sqrt(2 * in_system);
}

/// Measures as many arrivals again as the first window held, and keeps the arrivals coming while they finish.
void Simulation::extend_window() {
  const uint64_t old_end = measured_end_;
  const uint64_t more = (measured_end_ - warmup_) / (window_extensions_ + 1);
  measured_end_ += more;
  total_ += more;
  for (uint64_t id = old_end; id < std::min<uint64_t>(measured_end_, requests_.size()); ++id) {
    requests_[id].measured = true;
    if (requests_[id].finish >= 0) ++done_measured_;
  }
  ++window_extensions_;
}

/// Mean and percentiles (nearest rank) of `v`, which it sorts.
LatencyStats latency_stats(std::vector<double>& v) {
  LatencyStats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  auto at = [&](double p) {
    return v[std::min(v.size() - 1, static_cast<std::size_t>(std::floor(p * static_cast<double>(v.size() - 1) + 0.5)))];
  };
  s.p50 = at(0.50), s.p90 = at(0.90), s.p99 = at(0.99);
  return s;
}

/// TTFT, TPOT and end-to-end latency of the measured requests, and the share of them within both SLOs.
void Simulation::measure_latencies(ServingResult& out) {
  std::vector<double> ttft, tpot, e2e;
  const double slo_ttft = setup_.slo_ttft_s, slo_tpot = setup_.slo_tpot_s;
  uint64_t good = 0;
  for (const Request& q : requests_) {
    if (!q.measured || q.finish < 0) continue;
    // The API server's own time per request (HTTP, tokenization, streaming) is outside the iterations.
    // A request of one generated token has no time per output token (aiperf leaves it out too).
    const double t1 = q.first_token - q.arrival + setup_.request_overhead_s;
    const double t2 = q.gen > 1 ? (q.finish - q.first_token) / static_cast<double>(q.gen - 1) : 0.0;
    ttft.push_back(t1), e2e.push_back(q.finish - q.arrival + setup_.request_overhead_s);
    if (q.gen > 1) tpot.push_back(t2);
    if ((slo_ttft <= 0 || t1 <= slo_ttft) && (slo_tpot <= 0 || t2 <= slo_tpot)) ++good;
  }
  const std::size_t measured = ttft.size();
  out.ttft_s = latency_stats(ttft), out.tpot_s = latency_stats(tpot), out.e2e_s = latency_stats(e2e);
  out.slo_attained = measured ? static_cast<double>(good) / static_cast<double>(measured) : 0;
}

/// Throughput over the measured window (`out.slo_attained` must be set).
void Simulation::measure_rates(ServingResult& out) {
  out.simulated_requests = requests_.size();
  out.warmup_requests = warmup_;
  out.measured_requests = measured_end_ - warmup_;
  // A closed loop's rates count from the last warm-up request's completion: its window opens as the
  // first of a cohort of clients completes (the request that client sends next is the first
  // measured), and the rest of that cohort complete over the next iterations, before the next
  // cohort's prompts have produced their tokens. From the last of them to the end the loop runs
  // whole cycles of its clients, who keep sending to the end.
  const bool from_warmup = load_.concurrency && warmup_done_at_ >= 0 && now_ > warmup_done_at_;
  const double from = from_warmup ? warmup_done_at_ : std::max(window_start_, 0.0);
  const double span = now_ - from;
  if (span > 0) {
    out.output_tokens_per_s = (tokens_out_ - (from_warmup ? warmup_done_tokens_ : window_tokens_start_)) / span;
    out.requests_per_s = (completions_ - (from_warmup ? warmup_done_completions_ : window_done_start_)) / span;
    const WindowCounts w = window_counts();
    out.arrivals_per_s = w.arrivals_per_s;
    out.keeps_up = w.last > w.start ? w.completed / (w.last - w.start) >= kServingKeepUpShare * out.arrivals_per_s
                                    : out.requests_per_s >= kServingKeepUpShare * out.arrivals_per_s;
  }
  out.output_tokens_per_s_per_gpu = out.gpus ? out.output_tokens_per_s / static_cast<double>(out.gpus) : 0;
  out.goodput_requests_per_s = out.requests_per_s * out.slo_attained;
  out.mean_decode_batch = decode_iterations_ > 0 ? decode_batches_ / decode_iterations_ : 0;
}

/// Where the binding ranks' time went, and the bound that follows.
void Simulation::attribute_time(ServingResult& out) {
  const double busy = busy_compute_ + busy_bandwidth_ + busy_overhead_ + busy_comm_;
  if (busy > 0) {
    out.compute_share = busy_compute_ / busy, out.bandwidth_share = busy_bandwidth_ / busy;
    out.overhead_share = busy_overhead_ / busy, out.communication_share = busy_comm_ / busy;
    out.kv_wait_share = kv_wait_ / busy;
  }
  // The API servers busy for nearly all of the measured window: requests queue for them, not for the GPUs.
  const auto servers = static_cast<double>(frontend_free_.size());
  if (setup_.frontend_request_s > 0 && out.requests_per_s * setup_.frontend_request_s >= kApiServerBusyShare * servers)
    out.bound = ServingBound::kApiServer;
  else if (out.kv_wait_share > 0.5)
    out.bound = ServingBound::kKvCapacity;
  else if (cap_wait_ / std::max(busy, 1e-30) > 0.5)
    out.bound = ServingBound::kSequenceCap;
  else {
    const std::pair<double, ServingBound> parts[] = {{out.bandwidth_share, ServingBound::kBandwidth},
                                                     {out.compute_share, ServingBound::kCompute},
                                                     {out.overhead_share, ServingBound::kScheduler},
                                                     {out.communication_share, ServingBound::kCommunication}};
    out.bound = std::max_element(std::begin(parts), std::end(parts))->second;
  }
}

ServingResult Simulation::run() {
  run_events();
  ServingResult& out = result_;
  measure_latencies(out);
  measure_rates(out);
  attribute_time(out);
  if (result_.iterations >= kMaxIterations) out.notes.push_back("stopped at the iteration bound before every measured request finished");
  if (out.bound == ServingBound::kApiServer) {
    const bool one = frontend_free_.size() == 1;
    const double cap_per_s = static_cast<double>(frontend_free_.size()) / setup_.frontend_request_s;
    out.notes.push_back(fmt::format("the API server{} ({:.3g} ms of serial work per request each) take{} at most {:.3g} requests/s: "
                                    "requests queue for {} rather than for the GPUs (more servers per replica are not modelled)",
                                    one ? "" : "s", 1e3 * setup_.frontend_request_s, one ? "s" : "", cap_per_s, one ? "it" : "them"));
  }
  if (!load_.concurrency && out.requests_per_s > 0 && !out.keeps_up)
    out.notes.push_back(
        fmt::format("the offered rate {:.3g} req/s exceeds what the layout completes ({:.3g} req/s): queues grow and "
                    "TTFT depends on how long the run lasts",
                    load_.rate_per_s, out.requests_per_s));
  return out;
}

}  // namespace

void apply_era(ServingSetup& setup, const ServingEra& era) {
  for (auto& pool : setup.pools) set_era(pool.step, era);
  setup.kv_transfer_bytes_per_s = setup.kv_link_peak_bytes_per_s * era.communication_efficiency;
  setup.kv_transfer_latency_s = era.step_overhead_s;
  setup.request_overhead_s = era.request_overhead_s;
  setup.frontend_request_s = era.frontend_request_s;
}

ServingResult simulate_serving(const ServingSetup& setup, const ServingLoad& load) {
  ServingResult empty;
  for (const auto& pool : setup.pools) empty.gpus += static_cast<uint64_t>(pool.workers) * pool.step.layout.gpus();
  // The pool of every rank must hold at least one whole request (the longest the load draws), or
  // nothing ever runs.
  const double total = static_cast<double>(load.prompt_tokens + load.gen_tokens);
  const auto longest = static_cast<double>(length_range(load.prompt_tokens, load.prompt_spread).max +
                                           length_range(load.gen_tokens, load.gen_spread).max);
  for (const auto& pool : setup.pools) {
    const StepModel& m = pool.step;
    const double one = request_kv_bytes(m, longest);
    if (m.kv_pool_bytes <= 0 || one > m.kv_pool_bytes || pool.workers == 0) {
      empty.fits = false;
      empty.bound = ServingBound::kKvCapacity;
      empty.notes.push_back(load.lengths_vary() ? fmt::format("the weights leave no KV pool that holds the longest request the load draws "
                                                 "({:.0f} tokens of prompt + gen)",
                                                 longest)
                                   : "the weights leave no KV pool that holds one request of prompt + gen tokens");
      return empty;
    }
  }
  Simulation sim(setup, load);
  ServingResult out = sim.run();
  const StepModel& m = setup.pools.back().step;
  const double per_request = request_kv_bytes(m, total);
  out.max_batch_in_pool = static_cast<uint64_t>(std::floor(m.kv_pool_bytes / per_request));
  out.kv_pool_tokens = static_cast<uint64_t>(std::floor(m.kv_pool_bytes / (per_request / total)));
  return out;
}

std::size_t serving_knee(const std::vector<ServingResult>& sweep, bool with_slos) {
  std::size_t knee = 0;
  if (with_slos) {
    double best = -1;
    for (std::size_t i = 0; i < sweep.size(); ++i)
      if (sweep[i].fits && sweep[i].slo_attained >= 0.99 && sweep[i].output_tokens_per_s > best)
        best = sweep[i].output_tokens_per_s, knee = i;
    return knee;
  }
  for (std::size_t i = 0; i + 1 < sweep.size(); ++i) {
    knee = i;
    if (!sweep[i + 1].fits || sweep[i + 1].output_tokens_per_s < 1.10 * sweep[i].output_tokens_per_s) return i;
    knee = i + 1;
  }
  return knee;
}

}  // namespace optadvisor
