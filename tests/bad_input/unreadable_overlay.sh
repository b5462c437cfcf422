#!/bin/sh
# SPDX-License-Identifier: MIT
# An overlay folder that cannot be listed is an error naming it (exit 2, one error line), never skipped.
# Root reads every folder, so as root the run drops to nobody (setpriv, util-linux) on a copy of the
# binary in a folder nobody can reach.
set -u
exe="$1"
# Under a sanitizer build, leak checking is left to the other tests: this one only reads an exit code.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export ASAN_OPTIONS
dir=$(mktemp -d) || exit 1
trap 'chmod -R u+rwx "$dir"; rm -rf "$dir"' EXIT
mkdir -p "$dir/overlay/hardware/private"
cp "$exe" "$dir/optadvisor"
chmod 755 "$dir" "$dir/overlay" "$dir/overlay/hardware" "$dir/optadvisor"
chmod 000 "$dir/overlay/hardware/private"
if [ "$(id -u)" -eq 0 ]; then
  command -v setpriv >/dev/null || { echo "setpriv (util-linux) is needed to drop root"; exit 1; }
  out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$dir/optadvisor" --data-dir "$dir/overlay" hw list 2>&1 >/dev/null)
else
  out=$("$dir/optadvisor" --data-dir "$dir/overlay" hw list 2>&1 >/dev/null)
fi
rc=$?
test "$rc" -eq 2 || { echo "exit $rc, want 2: $out"; exit 1; }
test "$(printf '%s\n' "$out" | grep -c '^optadvisor: error:')" -eq 1 || { echo "want one error line on stderr: $out"; exit 1; }
printf '%s\n' "$out" | grep -q "hardware/private.*cannot list directory" || { echo "the message does not name the folder: $out"; exit 1; }
