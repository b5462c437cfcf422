#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sets up a fresh Debian 12 machine and builds optadvisor.
#   scripts/dev.sh run    install what building the binary needs, build it (release, no tests), run the
#                         advisor on an example
#   scripts/dev.sh test   install that and what the tests need, build with -Werror, run the whole suite:
#                         g++ release (with the accuracy and speed-budget gates), clang with
#                         AddressSanitizer + UBSan, clang-tidy, and each fuzz target for 30 s
#   scripts/dev.sh fuzz [seconds] [target...]   run the fuzz targets of the clang build (seconds 0: no time
#                         limit; OPTADVISOR_FUZZ_RUNS=N stops each after N executions; tests/fuzz/README.md)
#   scripts/dev.sh tidy   clang-tidy over src/ with the checks in .clang-tidy
#   scripts/dev.sh tsan   the tests of the code that runs on threads (plan's simulations side by side)
#                         and a large plan under ThreadSanitizer (clang 14, which `test` installs; not part of
#                         `test`: about 10 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."

# What building the binary needs, and no more (scripts/dev.sh run).
packages=(build-essential cmake pkg-config libcli11-dev nlohmann-json3-dev libfmt-dev libspdlog-dev)
# What the tests, benchmarks, sanitizer builds, clang-tidy and the fuzz targets add.
# chromium renders the HTML report headless in the html_render test (without it the test skips).
test_packages=(catch2 python3 python3-jsonschema clang-14 libclang-rt-14-dev clang-tidy-14 libbenchmark-dev hyperfine
               file chromium)

install_missing() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing: ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

jobs=$(nproc 2>/dev/null || echo 2)

case "${1:-}" in
  run)
    install_missing
    # The binary alone: no tests (no Catch2 or Python needed), no benchmarks, no fuzz targets.
    cmake --preset release -DOPTADVISOR_BUILD_TESTS=OFF -DOPTADVISOR_BUILD_BENCH=OFF >/dev/null
    cmake --build --preset release -j"$jobs" --target optadvisor >/dev/null
    shift
    if [ $# -eq 0 ]; then set -- --hw rtx5090 --goal latency; fi
    ./build/release/optadvisor "$@"
    ;;
  test)
    packages+=("${test_packages[@]}")
    install_missing
    # g++ 12, release, -Werror: the whole suite, including the accuracy gates and the speed budget.
    cmake --preset ci
    cmake --build --preset ci -j"$jobs"
    ctest --preset ci -j"$jobs"
    # clang 14, -Werror, ASan + UBSan: the same suite must build warning-free and run clean.
    cmake --preset clang
    cmake --build --preset clang -j"$jobs"
    ctest --preset clang -j"$jobs"
    "$0" tidy
    "$0" fuzz "${OPTADVISOR_FUZZ_SECONDS:-30}"
    ;;
  tidy)
    [ -f build/clang/compile_commands.json ] || { echo "build the clang preset first" >&2; exit 2; }
    # Headers are checked through the sources that include them (HeaderFilterRegex in .clang-tidy).
    find src -name '*.cpp' -print0 | sort -z | xargs -0 -n 4 -P "$jobs" clang-tidy-14 -p build/clang --quiet 2>&1 |
      grep -v -E '^[0-9]+ warnings? generated|^Suppressed|^Use -header-filter|^$' > build/clang/tidy.log || true
    if grep -q -E 'error:|warning:' build/clang/tidy.log; then cat build/clang/tidy.log; exit 1; fi
    echo "clang-tidy: clean" >&2
    ;;
  tsan)
    cmake --preset tsan >/dev/null
    cmake --build --preset tsan -j"$jobs" --target optadvisor optadvisor_tests
    export TSAN_OPTIONS=halt_on_error=1
    build/tsan/tests/optadvisor_tests "run-ahead*,*plan*,*capacity*"
    build/tsan/optadvisor plan --hw b200 --model deepseek-v3 --rate 20 --prompt 1024 --gen 1024 --slo-ttft 2 --slo-tpot 0.05 --json >/dev/null
    echo "ThreadSanitizer: clean" >&2
    ;;
  fuzz)
    shift
    seconds="${1:-30}"
    shift || true
    dir=build/clang/tests/fuzz
    [ -d "$dir" ] || { echo "build the clang preset first" >&2; exit 2; }
    targets=("$@")
    if [ ${#targets[@]} -eq 0 ]; then
      for t in "$dir"/fuzz_*; do targets+=("$(basename "$t" | sed 's/^fuzz_//')"); done
    fi
    work=$(mktemp -d)
    # Inputs up to this many bytes per target, so mutations reach the readers' limits: JSON nested
    # past kMaxJsonDepth (256) inside a realistic document, a GGUF string past its 1 MiB bound.
    max_len() {
      case "$1" in
        gguf) echo 1200000 ;;
        hf_config | data_json | rules | bench_import) echo 300000 ;;
        *) echo 65536 ;;
      esac
    }
    run_one() {
      local t="$1" corpus="$work/$1"
      mkdir -p "$corpus"
      cp tests/fuzz/corpus/"$t"/* "$corpus"/ 2>/dev/null || true
      local rc=0
      (cd "$work" && ASAN_OPTIONS=detect_leaks=1 "$OLDPWD/$dir/fuzz_$t" -max_total_time="$seconds" -runs="${OPTADVISOR_FUZZ_RUNS:--1}" -max_len="$(max_len "$t")" \
          -rss_limit_mb=2048 -timeout=10 -malloc_limit_mb=1024 -print_final_stats=1 "$corpus" > "$work/$t.log" 2>&1) || rc=$?
      local runs
      runs=$(grep -E '^stat::number_of_executed_units' "$work/$t.log" | awk '{print $2}')
      echo "fuzz_$t: ${seconds} s limit, ${runs:-?} executions, exit $rc" >&2
      if [ $rc -ne 0 ]; then tail -40 "$work/$t.log" >&2; return 1; fi
    }
    failed=0
    # Two at a time: each target is single-threaded.
    for ((i = 0; i < ${#targets[@]}; i += 2)); do
      run_one "${targets[i]}" & p1=$!
      p2=""
      if [ $((i + 1)) -lt ${#targets[@]} ]; then run_one "${targets[i + 1]}" & p2=$!; fi
      wait $p1 || failed=1
      if [ -n "$p2" ]; then wait "$p2" || failed=1; fi
    done
    rm -rf "$work"
    exit $failed
    ;;
  *)
    echo "usage: scripts/dev.sh run [optadvisor arguments] | test | tidy | tsan | fuzz [seconds] [target...]" >&2
    exit 2
    ;;
esac
