// SPDX-License-Identifier: MIT
#include "optadvisor/render/report_serve.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/table.hpp"
#include "base/units.hpp"

namespace optadvisor {
namespace {

std::string ms(double s) { return fmt::format("{:.1f}", s * 1e3); }

std::string load_text(const ServeRequest& r) {
  const std::string who = r.load.concurrency ? fmt::format("closed loop of {} clients", r.load.concurrency)
                                             : fmt::format("Poisson arrivals at {} req/s", format_sig3(r.load.rate_per_s));
  std::string out = fmt::format("{}, prompt {} + gen {} tokens", who, length_text(r.load.prompt_tokens, r.load.prompt_spread),
                                length_text(r.load.gen_tokens, r.load.gen_spread));
  if (r.load.prefix_hit > 0) out += fmt::format(", {:.0f}% of each prompt in the prefix cache", 100 * r.load.prefix_hit);
  return out;
}

std::string slo_text(const ServeRequest& r) {
  std::string out;
  if (r.slo_ttft_s > 0) out += fmt::format("TTFT <= {} ms", ms(r.slo_ttft_s));
  if (r.slo_tpot_s > 0) out += fmt::format("{}TPOT <= {} ms", out.empty() ? "" : " and ", ms(r.slo_tpot_s));
  return out;
}

/// How far the era's answers were from measured runs: on this device where it was measured there,
/// else pooled over the devices it was, which the line names ("" when it never was).
std::string accuracy_text(const PreparedServing& p) {
  const HardwareProfile& hw = *p.base.scenario.hardware;
  const ServingAccuracy* a = p.era ? p.era->accuracy_shown_on(hw.id) : nullptr;
  if (!a) return "";
  auto pct = [](double e) { return fmt::format("{:.0f}%", 100 * e); };
  const std::string errors = fmt::format("TTFT {} (p90 {}), TPOT {} (p90 {})", pct(a->ttft_median_error), pct(a->ttft_p90_error),
                                         pct(a->tpot_median_error), pct(a->tpot_p90_error));
  if (!a->device.empty()) return fmt::format("accuracy: this era's median error on {} measured runs on {}: {}\n", a->runs, hw.id, errors);
  return fmt::format("accuracy: this era was measured on {} only (median error on {} runs: {}); on {} it is extrapolated\n",
                     fmt::join(p.era->accuracy_devices(), " and "), a->runs, errors, hw.id);
}

/// The tokens an iteration takes, per pool.
std::string budget_text(const PreparedServing& p) {
  const std::vector<ServingPool>& pools = p.setup.pools;
  if (pools.size() == 2)
    return fmt::format("prefill {} and decode {} tokens per iteration", pools[0].step.max_batched_tokens, pools[1].step.max_batched_tokens);
  return pools.empty() ? "" : fmt::format("{} tokens per iteration", pools.front().step.max_batched_tokens);
}

std::string header(const PreparedServing& p, const ServeRequest& r, const Style& style) {
  const Scenario& s = p.base.scenario;
  std::string out = style.bold(fmt::format("serve: {} ({}) on {}, {}{}", s.model.name, s.weights.quant_id, s.hardware->name,
                                           s.engine.engine->name, r.engine_version.empty() ? "" : " " + r.engine_version)) +
                    "\n";
  if (r.disaggregated)
    out += fmt::format("disaggregated: prefill {}; decode {}\n", pool_text(r.prefill, true), pool_text(r.decode, true));
  else
    out += fmt::format("aggregated: {}\n", pool_text(r.aggregated, true));
  const EngineServing& serving = s.engine.engine->serving;
  out += fmt::format("KV cache {}; {}; calibration era: {}\n", s.workload.kv_dtype, budget_text(p),
                     p.era ? serving.era_versions(*p.era) : "-");
  if (const Speculation& spec = s.workload.speculation; spec.enabled())
    out += fmt::format("speculative decoding: {}, {} drafted token{} a step, {} verified, {} accepted on average; drafting {} of a plain step\n",
                       spec.method, spec.draft_tokens, spec.draft_tokens == 1 ? "" : "s", format_sig3(spec.verified_tokens()),
                       format_sig3(spec.accepted_tokens), format_sig3(spec.draft_overhead));
  out += accuracy_text(p);
  return out;
}

std::string point_text(const ServeRequest& r, const ServingResult& x, bool markdown) {
  std::string out = fmt::format("load: {}\n\n", load_text(r));
  if (!x.fits) {
    for (const auto& n : x.notes) out += "does not fit: " + n + "\n";
    return out;
  }
  Table t({"", "mean", "p50", "p90", "p99"},
          {Table::Align::kLeft, Table::Align::kRight, Table::Align::kRight, Table::Align::kRight, Table::Align::kRight});
  t.add_row({"TTFT (ms)", ms(x.ttft_s.mean), ms(x.ttft_s.p50), ms(x.ttft_s.p90), ms(x.ttft_s.p99)});
  t.add_row({"TPOT (ms)", ms(x.tpot_s.mean), ms(x.tpot_s.p50), ms(x.tpot_s.p90), ms(x.tpot_s.p99)});
  t.add_row({"E2E (s)", fmt::format("{:.2f}", x.e2e_s.mean), fmt::format("{:.2f}", x.e2e_s.p50), fmt::format("{:.2f}", x.e2e_s.p90),
             fmt::format("{:.2f}", x.e2e_s.p99)});
  out += markdown ? t.to_markdown() : t.to_text();
  out += fmt::format("\nmeasured: {} requests after {} warm-up request{} ({} iterations simulated)", x.measured_requests, x.warmup_requests,
                     x.warmup_requests == 1 ? "" : "s", x.iterations);
  out += fmt::format("\nthroughput: {:.0f} output tok/s ({:.0f} per GPU over {} GPU{}), {:.3g} requests/s\n", x.output_tokens_per_s,
                     x.output_tokens_per_s_per_gpu, x.gpus, x.gpus == 1 ? "" : "s", x.requests_per_s);
  const std::string slo = slo_text(r);
  if (!slo.empty())
    out += fmt::format("goodput: {:.3g} requests/s meet {} ({:.0f}% of requests)\n", x.goodput_requests_per_s, slo, 100 * x.slo_attained);
  out += fmt::format("KV pool: {} tokens per attention rank, {} requests of {}{} tokens; mean decode batch {:.1f}; {} preemptions\n",
                     x.kv_pool_tokens, x.max_batch_in_pool, r.load.lengths_vary() ? "a mean " : "",
                     r.load.prompt_tokens + r.load.gen_tokens, x.mean_decode_batch, x.preemptions);
  out += fmt::format(
      "bound: {} (busy time: memory reads {:.0f}%, compute {:.0f}%, overhead {:.0f}%, communication {:.0f}%; "
      "waiting for KV blocks {:.0f}%)\n",
      to_string(x.bound), 100 * x.bandwidth_share, 100 * x.compute_share, 100 * x.overhead_share, 100 * x.communication_share,
      100 * x.kv_wait_share);
  for (const auto& n : x.notes) out += "note: " + n + "\n";
  return out;
}

std::string sweep_text(const std::vector<ServeRequest>& points, const std::vector<ServingResult>& results, bool markdown) {
  const bool closed = points.front().load.concurrency > 0;
  Table t({closed ? "concurrency" : "rate req/s", "TTFT mean ms", "TTFT p99 ms", "TPOT mean ms", "TPOT p99 ms", "tok/s", "tok/s/GPU",
           "req/s", "goodput req/s", "bound"},
          {Table::Align::kRight, Table::Align::kRight, Table::Align::kRight, Table::Align::kRight, Table::Align::kRight,
           Table::Align::kRight, Table::Align::kRight, Table::Align::kRight, Table::Align::kRight, Table::Align::kLeft});
  for (std::size_t i = 0; i < results.size(); ++i) {
    const ServingResult& x = results[i];
    const std::string load = closed ? std::to_string(points[i].load.concurrency) : format_sig3(points[i].load.rate_per_s);
    if (!x.fits) {
      t.add_row({load, "-", "-", "-", "-", "-", "-", "-", "-", "does not fit"});
      continue;
    }
    t.add_row({load, ms(x.ttft_s.mean), ms(x.ttft_s.p99), ms(x.tpot_s.mean), ms(x.tpot_s.p99), fmt::format("{:.0f}", x.output_tokens_per_s),
               fmt::format("{:.0f}", x.output_tokens_per_s_per_gpu), fmt::format("{:.3g}", x.requests_per_s),
               fmt::format("{:.3g}", x.goodput_requests_per_s), std::string(to_string(x.bound))});
  }
  return markdown ? t.to_markdown() : t.to_text();
}

}  // namespace

std::string layout_text(const ServingLayout& layout) {
  std::string out = fmt::format("tp {}", layout.tp);
  if (layout.pp > 1) out += fmt::format(" pp {}", layout.pp);
  if (layout.dp_attention > 1) out += fmt::format(" dp-attention {}", layout.dp_attention);
  if (layout.ep > 1) out += fmt::format(" ep {}", layout.ep);
  return out;
}

std::string pool_text(const ServePoolRequest& pool, bool gpus_each) {
  std::string out = fmt::format("{} worker{} x {}", pool.workers, pool.workers == 1 ? "" : "s", layout_text(pool.layout));
  if (gpus_each) out += fmt::format(" ({} GPU{} each)", pool.layout.gpus(), pool.layout.gpus() == 1 ? "" : "s");
  return out;
}

std::string render_serve(const PreparedServing& prepared, const ServeRequest& request, const std::vector<ServeRequest>& points,
                         const std::vector<ServingResult>& results, bool sweep, OutputFormat format, const Style& style) {
  const bool markdown = format == OutputFormat::kMarkdown;
  std::string out = header(prepared, request, style);
  for (const auto& n : prepared.notes) out += "note: " + n + "\n";
  out += "\n";
  if (sweep) {
    out += fmt::format("sweep: prompt {} + gen {} tokens{}\n\n", length_text(request.load.prompt_tokens, request.load.prompt_spread),
                       length_text(request.load.gen_tokens, request.load.gen_spread),
                       slo_text(request).empty() ? "" : "; goodput under " + slo_text(request));
    out += sweep_text(points, results, markdown);
  } else {
    out += point_text(points.front(), results.front(), markdown);
  }
  return out;
}

}  // namespace optadvisor
