#!/bin/bash
# SPDX-License-Identifier: MIT
# `cmake --install` puts the binary, the man page, the bash/zsh/fish completions
# and the docs where packages expect them, and the installed program runs.
# Usage: check_install.sh BUILD_DIR
set -eu
build="$1"
prefix="$(mktemp -d)"
trap 'rm -rf "$prefix"' EXIT
cmake --build "$build" --target optadvisor_shell_files > /dev/null
cmake --install "$build" --prefix "$prefix" > /dev/null
failures=0
for f in bin/optadvisor share/man/man1/optadvisor.1 share/bash-completion/completions/optadvisor \
         share/zsh/vendor-completions/_optadvisor share/fish/vendor_completions.d/optadvisor.fish \
         share/doc/optadvisor/README.md; do
  [[ -s $prefix/$f ]] || { echo "FAIL: $f is not installed"; failures=$((failures + 1)); }
done
"$prefix/bin/optadvisor" --version | grep -q '^optadvisor ' || { echo "FAIL: the installed binary does not run"; failures=$((failures + 1)); }
if command -v groff > /dev/null; then
  warnings="$(LC_ALL=C groff -man -Tutf8 -ww "$prefix/share/man/man1/optadvisor.1" 2>&1 > /dev/null)"
  [[ -z $warnings ]] || { echo "FAIL: groff warns about the man page: $warnings"; failures=$((failures + 1)); }
fi
grep -q '^\.SS "optadvisor hw detect"' "$prefix/share/man/man1/optadvisor.1" ||
  { echo "FAIL: the man page does not list 'hw detect'"; failures=$((failures + 1)); }
((failures == 0)) || exit 1
echo "install ok: $(cd "$prefix" && find . -type f | sort | tr '\n' ' ')"
