#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sets up a fresh Debian 12 machine and builds optadvisor.
#   scripts/dev.sh run    install what is missing, build a release binary, run the advisor on an example
#   scripts/dev.sh test   install what is missing, build with -Werror, run the whole test suite
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake pkg-config libcli11-dev nlohmann-json3-dev libfmt-dev libspdlog-dev catch2
          libvalijson-dev python3 python3-jsonschema)
test_packages=(clang-14 libclang-rt-14-dev)

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
    cmake --preset release >/dev/null
    cmake --build --preset release -j"$jobs" >/dev/null
    shift
    if [ $# -eq 0 ]; then set -- --hw rtx5090 --goal latency; fi
    ./build/release/optadvisor "$@"
    ;;
  test)
    packages+=("${test_packages[@]}")
    install_missing
    # g++ 12, release, -Werror: the whole suite, including the accuracy gates.
    cmake --preset ci
    cmake --build --preset ci -j"$jobs"
    ctest --preset ci -j"$jobs"
    # clang 14, -Werror: the same suite must build warning-free and pass.
    cmake --preset clang
    cmake --build --preset clang -j"$jobs"
    ctest --preset clang -j"$jobs"
    ;;
  *)
    echo "usage: scripts/dev.sh run [optadvisor arguments] | test" >&2
    exit 2
    ;;
esac
