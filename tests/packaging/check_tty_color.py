#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Colour only on a terminal: stdout and stderr carry no escape sequence with NO_COLOR,
with --no-color, or when not a terminal; on a terminal stdout is styled. Runs the
program on a pseudo-terminal. Usage: check_tty_color.py path/to/optadvisor"""
import os
import pty
import subprocess
import sys

EXE = sys.argv[1]
ARGS = ["hw", "show", "h100-sxm"]
# -v makes the run log to stderr too, and an unknown device is an error line on stderr.
ERR_ARGS = ["-v", "hw", "show", "no-such-device"]


def run(args, env_extra, tty):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TERM": "xterm-256color", "LC_ALL": "C"}
    env.update(env_extra)
    if not tty:
        p = subprocess.run([EXE] + args, env=env, capture_output=True)
        return p.stdout + p.stderr
    leader, follower = pty.openpty()
    p = subprocess.Popen([EXE] + args, env=env, stdin=follower, stdout=follower, stderr=follower)
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the program closed the terminal
            break
        if not chunk:
            break
        out += chunk
    p.wait()
    os.close(leader)
    return out


def main():
    failures = []

    def check(name, output, want_escapes):
        has = b"\x1b[" in output
        if has != want_escapes:
            failures.append(f"{name}: escape sequences {'missing' if want_escapes else 'present'}:\n{output[:400]!r}")

    check("terminal", run(ARGS, {}, tty=True), True)
    check("terminal with NO_COLOR=1", run(ARGS, {"NO_COLOR": "1"}, tty=True), False)
    check("terminal with --no-color", run(["--no-color"] + ARGS, {}, tty=True), False)
    check("pipe", run(ARGS, {}, tty=False), False)
    check("stderr on a terminal with NO_COLOR=1", run(ERR_ARGS, {"NO_COLOR": "1"}, tty=True), False)
    check("stderr on a terminal with --no-color", run(["--no-color"] + ERR_ARGS, {}, tty=True), False)
    check("stderr on a pipe", run(ERR_ARGS, {}, tty=False), False)
    # An empty NO_COLOR does not count (no-color.org).
    check("terminal with NO_COLOR empty", run(ARGS, {"NO_COLOR": ""}, tty=True), True)
    for f in failures:
        print("FAIL: " + f)
    print("colour checks ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
