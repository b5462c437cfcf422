#!/bin/bash
# SPDX-License-Identifier: MIT
# The completion scripts `optadvisor completion SHELL` prints: each parses in its
# shell (zsh and fish when installed, skipped otherwise), and the bash one
# completes subcommands, option values and catalog ids.
# Usage: check_completions.sh path/to/optadvisor
set -u
exe="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

for shell in bash zsh fish; do
  if ! NO_COLOR=1 "$exe" completion "$shell" > "$work/$shell" 2> "$work/$shell.err"; then
    fail "optadvisor completion $shell exited non-zero: $(cat "$work/$shell.err")"
    continue
  fi
  [[ -s $work/$shell ]] || fail "optadvisor completion $shell printed nothing"
  if command -v "$shell" > /dev/null; then
    "$shell" -n "$work/$shell" || fail "$shell -n rejects the $shell script"
  else
    echo "skip: $shell is not installed"
  fi
done
head -n 1 "$work/zsh" | grep -qx '#compdef optadvisor' || fail "the zsh script does not start with #compdef optadvisor"

# What bash offers for a command line (the last word is the one being completed).
complete_bash() {
  bash -c '
    source "$1"; shift
    COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=()
    _optadvisor
    printf "%s\n" "${COMPREPLY[@]}"' _ "$work/bash" "$@"
}
expect() {  # expect WORD -- COMMAND LINE...
  local want="$1"; shift 2
  complete_bash "$@" | grep -qx -- "$want" || fail "completing '$*' does not offer '$want' (got: $(complete_bash "$@" | tr '\n' ' '))"
}
refuse() {  # refuse WORD -- COMMAND LINE...
  local unwanted="$1"; shift 2
  complete_bash "$@" | grep -qx -- "$unwanted" && fail "completing '$*' offers '$unwanted'"
  return 0
}
expect hw -- optadvisor h
expect detect -- optadvisor hw ''
expect h100-sxm -- optadvisor estimate --hw h100
expect auto -- optadvisor fit --hw a
expect h100-sxm -- optadvisor hw show h100-s
expect llama-3.1-8b -- optadvisor estimate -m llama-3.1-8
expect q4_k_m -- optadvisor size --quant q4_k
expect llama.cpp:metal -- optadvisor estimate --engine llama.cpp:m
expect json -- optadvisor hw list --format ''
expect json -- optadvisor hw list --format = j
expect apple-silicon -- optadvisor hw list --class apple
expect fish -- optadvisor completion f
expect --no-color -- optadvisor hw list --no
expect --quiet -- optadvisor estimate --qu
# A flag takes no value: what follows it is completed as usual.
expect h100-sxm -- optadvisor estimate --json --hw h100-s
# The advisor's options are the main command's, not a subcommand's.
expect --goal -- optadvisor --go
refuse --goal -- optadvisor hw list --go

if ((failures)); then
  echo "$failures failure(s)"
  exit 1
fi
echo "completion scripts ok"
