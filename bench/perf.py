#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The speed budget of docs/performance.md.

Whole-process figures (each a median over --runs fresh processes, timed with os.wait4):
  version_ms     `optadvisor --version` (the cost of starting the process at all)
  advisor_ms     `optadvisor --hw rtx5090 --goal latency --json` (load the database, advise, print)
  estimate_ms    `optadvisor estimate --hw rtx5090 --model llama-3.1-8b --json`
  cold_start_ratio = advisor_ms / version_ms        (target <= 1.5)
  advisor_peak_rss_mb (ru_maxrss of the advisor run; target < 20)
In-process figures from bench/optadvisor_perf (Google Benchmark):
  analyze_per_s  analyze() calls per second on one core over the device x model x format x batch sweep
                 (target >= 1e6; a phase's explanation text is written when asked for);
                 analyze_explained_per_s the same with both explanations written out;
                 analyze_numbers_per_s without the warning texts
  prepare_per_s, catalog_load_ms, advise_ms
  search_scenarios_per_s  the capacity planner (search(), llama-3.1-8b, throughput goal, ~28k configurations)
  serve_point_ms, serve_sweep64_ms  one serving point (target <= 10 ms), a 64-point concurrency sweep (<= 300 ms)
  plan_ms, plan_deployments_per_s  `plan` of Llama-3.1-70B on H100s; plan_moe_* of DeepSeek-V3 on B200s, the largest
                 search the planner makes; deployments = aggregated layouts + prefill x decode pairs the search
                 covers (target: 10^4 in <= 2 s, >= 5,000 a second); wall-clock, since plan runs on every core
When hyperfine is installed its figures for the two process timings are recorded too.

  perf.py --exe BIN --perf-exe BIN [--runs N] [--short] [--write FILE] [--check BASELINE]
--check fails (exit 1) when a figure regressed by more than 2x against the baseline, in the best of up to
three measurements (a busy machine only slows figures down): the cold-start
ratio or peak RSS doubled, or a rate halved. In-process times and rates are judged after the machine's
own slowdown: machine_reference_ms (BM_MachineReference, a fixed workload of map look-ups and
floating-point math that does not run this project's code) against the baseline's, when it is slower.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

ADVISOR = ["--hw", "rtx5090", "--goal", "latency", "--json"]
ESTIMATE = ["estimate", "--hw", "rtx5090", "--model", "llama-3.1-8b", "--json"]


def time_process(argv, runs):
    """Median wall time (ms) and max peak RSS (MB) of `runs` fresh processes, output discarded."""
    env = dict(os.environ, NO_COLOR="1")
    times, rss = [], []
    with open(os.devnull, "wb") as null:
        for _ in range(runs):
            start = time.perf_counter()
            proc = subprocess.Popen(argv, stdout=null, stderr=null, env=env)
            _, status, usage = os.wait4(proc.pid, 0)
            times.append((time.perf_counter() - start) * 1e3)
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode not in (0, 3):
                raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}")
            rss.append(usage.ru_maxrss / 1024.0)  # kB on Linux
    return statistics.median(times), max(rss)


def hyperfine(exe, runs):
    if not shutil.which("hyperfine"):
        return None
    out = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"optadvisor-hyperfine-{os.getpid()}.json")
    cmd = ["hyperfine", "--warmup", "3", "--runs", str(runs), "-N", "--export-json", out,
           f"{exe} --version", f"{exe} {' '.join(ADVISOR)}"]
    subprocess.run(cmd, check=True, capture_output=True)
    with open(out) as f:
        results = json.load(f)["results"]
    os.unlink(out)
    return {"version_ms": results[0]["median"] * 1e3, "advisor_ms": results[1]["median"] * 1e3,
            "cold_start_ratio": results[1]["median"] / results[0]["median"]}


def google_benchmark(perf_exe, short):
    min_time = "0.05" if short else "0.5"
    proc = subprocess.run([perf_exe, "--benchmark_format=json", f"--benchmark_min_time={min_time}"],
                          check=True, capture_output=True)
    bench = {b["name"]: b for b in json.loads(proc.stdout)["benchmarks"]}
    return {
        "analyze_per_s": bench["BM_Analyze"]["items_per_second"],
        "analyze_numbers_per_s": bench["BM_AnalyzeNumbers"]["items_per_second"],
        "analyze_explained_per_s": bench["BM_AnalyzeExplained"]["items_per_second"],
        "analyze_sweep_scenarios": int(bench["BM_Analyze"]["scenarios"]),
        "prepare_per_s": bench["BM_PrepareScenario"]["items_per_second"],
        "catalog_load_ms": bench["BM_CatalogLoad"]["cpu_time"],
        "advise_ms": bench["BM_AdviseLatencyRtx5090"]["cpu_time"],
        "search_scenarios": int(bench["BM_SearchThroughput8B"]["scenarios"]),
        "search_ms": bench["BM_SearchThroughput8B"]["cpu_time"],
        "search_scenarios_per_s": bench["BM_SearchThroughput8B"]["items_per_second"],
        "serve_point_ms": bench["BM_ServePointDeepSeekEP"]["cpu_time"],
        "serve_sweep64_ms": bench["BM_ServeSweep64"]["cpu_time"],
        # plan runs on every core: wall-clock time (google-benchmark's UseRealTime)
        "plan_ms": bench["BM_PlanCapacity70B/real_time"]["real_time"],
        "plan_deployments": int(bench["BM_PlanCapacity70B/real_time"]["deployments"]),
        "plan_deployments_per_s": bench["BM_PlanCapacity70B/real_time"]["items_per_second"],
        "plan_moe_ms": bench["BM_PlanCapacityDeepSeekV3/real_time"]["real_time"],
        "plan_moe_deployments": int(bench["BM_PlanCapacityDeepSeekV3/real_time"]["deployments"]),
        "plan_moe_deployments_per_s": bench["BM_PlanCapacityDeepSeekV3/real_time"]["items_per_second"],
        "machine_reference_ms": bench["BM_MachineReference"]["cpu_time"],
    }


def measure(args):
    runs = 10 if args.short else args.runs
    # One untimed run of each warms the page cache.
    time_process([args.exe, "--version"], 1)
    time_process([args.exe] + ADVISOR, 1)
    version_ms, _ = time_process([args.exe, "--version"], runs)
    advisor_ms, advisor_rss = time_process([args.exe] + ADVISOR, runs)
    estimate_ms, _ = time_process([args.exe] + ESTIMATE, runs)
    result = {
        "machine": {"cpus": os.cpu_count(), "uname": " ".join(os.uname()[2:5])},
        "runs": runs,
        "version_ms": version_ms,
        "advisor_ms": advisor_ms,
        "estimate_ms": estimate_ms,
        "cold_start_ratio": advisor_ms / version_ms,
        "advisor_peak_rss_mb": advisor_rss,
    }
    hf = hyperfine(args.exe, runs)
    if hf:
        result["hyperfine"] = hf
    if args.perf_exe:
        result.update(google_benchmark(args.perf_exe, args.short))
    return result


TARGETS = [("cold_start_ratio", "<=", 1.5), ("advisor_peak_rss_mb", "<", 20), ("analyze_per_s", ">=", 1e6),
           ("analyze_numbers_per_s", ">=", 1e6), ("serve_point_ms", "<=", 10), ("serve_sweep64_ms", "<=", 300),
           ("plan_deployments_per_s", ">=", 5e3), ("plan_moe_deployments_per_s", ">=", 5e3)]


def report(result):
    for key, value in result.items():
        if isinstance(value, dict):
            continue
        print(f"{key:28} {value:,.3f}" if isinstance(value, float) else f"{key:28} {value}")
    for key, op, target in TARGETS:
        if key not in result:
            continue
        met = result[key] <= target if op == "<=" else result[key] < target if op == "<" else result[key] >= target
        print(f"target {key} {op} {target:g}: {'met' if met else 'MISSED'} ({result[key]:,.3f})")


CHECK_ATTEMPTS = 3
LOWER_IS_BETTER = ("version_ms", "advisor_ms", "estimate_ms", "cold_start_ratio", "advisor_peak_rss_mb", "serve_point_ms",
                   "serve_sweep64_ms", "catalog_load_ms", "advise_ms", "search_ms", "plan_ms", "plan_moe_ms", "machine_reference_ms")


def best_of(a, b):
    """Each figure's better value of two measurements (lower times, higher rates)."""
    out = dict(a)
    for key, value in b.items():
        if key not in out or not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        out[key] = min(out[key], value) if key in LOWER_IS_BETTER else max(out[key], value)
    return out


def machine_slowdown(result, baseline):
    """How many times slower this machine runs the reference workload than the baseline's did (at least
    1: a faster machine never tightens the check); 1 when either lacks the figure."""
    now, then = result.get("machine_reference_ms"), baseline.get("machine_reference_ms")
    return max(1.0, now / then) if now and then else 1.0


def check(result, baseline, rate_factor=2.0):
    problems = []
    slow = machine_slowdown(result, baseline)
    # Lower is better: a doubling fails (in-process times after the machine's slowdown; the ratio and
    # the RSS do not depend on the machine's speed).
    for key in ("cold_start_ratio", "advisor_peak_rss_mb", "serve_point_ms", "serve_sweep64_ms", "plan_ms", "plan_moe_ms"):
        scale = 1.0 if key in ("cold_start_ratio", "advisor_peak_rss_mb") else slow
        if key in baseline and key in result and result[key] > 2 * baseline[key] * scale:
            problems.append(f"{key} {result[key]:.3f} is more than 2x the baseline {baseline[key]:.3f}"
                            + (f" x the machine's slowdown {scale:.2f}" if scale > 1 else ""))
    # Higher is better: halving fails.
    for key in ("analyze_per_s", "analyze_numbers_per_s", "prepare_per_s", "search_scenarios_per_s"):
        if key in baseline and key in result and result[key] < baseline[key] / (rate_factor * slow):
            problems.append(f"{key} {result[key]:,.0f} is less than 1/{rate_factor:g} of the baseline {baseline[key]:,.0f}"
                            + (f" / the machine's slowdown {slow:.2f}" if slow > 1 else ""))
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exe", required=True)
    ap.add_argument("--perf-exe", default=None)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--short", action="store_true", help="few runs, short benchmark times (CI)")
    ap.add_argument("--write", default=None, help="write the figures as JSON")
    ap.add_argument("--check", default=None, help="fail on a 2x regression against this baseline JSON")
    ap.add_argument("--rate-factor", type=float, default=2.0,
                    help="with --check: how many times slower than the baseline an in-process rate may be (default 2)")
    args = ap.parse_args()
    result = measure(args)
    report(result)
    if args.write:
        with open(args.write, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
    if args.check:
        with open(args.check) as f:
            baseline = json.load(f)
        # A shared machine only ever makes a figure worse, never better: on a failed check, measure
        # again (at most CHECK_ATTEMPTS in all) and judge each figure by its best attempt.
        problems = check(result, baseline, args.rate_factor)
        attempt = 1
        while problems and attempt < CHECK_ATTEMPTS:
            attempt += 1
            print(f"check failed ({len(problems)} figure(s)); attempt {attempt} of {CHECK_ATTEMPTS}, keeping each figure's best")
            result = best_of(result, measure(args))
            problems = check(result, baseline, args.rate_factor)
        if attempt > 1:
            report(result)
        for p in problems:
            print("REGRESSION: " + p)
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
