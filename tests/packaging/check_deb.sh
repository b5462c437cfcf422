#!/bin/bash
# SPDX-License-Identifier: MIT
# `cpack -G DEB` makes a .deb with the expected files and metadata, its Depends
# computed by dpkg-shlibdeps. Exits 77 (skipped) without the Debian tools.
# Usage: check_deb.sh BUILD_DIR
set -eu
build="$1"
for tool in cpack dpkg-deb dpkg-shlibdeps file; do
  command -v "$tool" > /dev/null || { echo "skip: $tool is not installed"; exit 77; }
done
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cmake --build "$build" --target optadvisor_shell_files > /dev/null
(cd "$build" && cpack -G DEB -B "$out" > "$out/cpack.log" 2>&1) || { cat "$out/cpack.log"; exit 1; }
deb="$(ls "$out"/*.deb)"
failures=0
contents="$(dpkg-deb -c "$deb")"
for f in ./usr/bin/optadvisor ./usr/share/man/man1/optadvisor.1 ./usr/share/bash-completion/completions/optadvisor \
         ./usr/share/zsh/vendor-completions/_optadvisor ./usr/share/fish/vendor_completions.d/optadvisor.fish \
         ./usr/share/doc/optadvisor/README.md; do
  grep -q " $f\$" <<< "$contents" || { echo "FAIL: $f is not in $(basename "$deb")"; failures=$((failures + 1)); }
done
for field in Package Version Architecture Maintainer Depends Description Section; do
  [[ -n $(dpkg-deb -f "$deb" "$field") ]] || { echo "FAIL: no $field field"; failures=$((failures + 1)); }
done
dpkg-deb -f "$deb" Depends | grep -q 'libc6' || { echo "FAIL: Depends lacks libc6: $(dpkg-deb -f "$deb" Depends)"; failures=$((failures + 1)); }
((failures == 0)) || exit 1
echo "$(basename "$deb"): Depends: $(dpkg-deb -f "$deb" Depends)"
