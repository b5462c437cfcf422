#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs optadvisor command lines and compares them with recorded outputs.

cases*.json list {name, args, exit, stdout?, stderr_contains?, stdin?, env?}. stdout files live in
tests/golden/expected/<name>.<txt|json|md>; JSON is compared parsed. Every case also checks the
CLI contract: the exit code, nothing but valid JSON (or nothing) on stdout for --json runs, no stack
trace on stderr, and exactly one 'optadvisor: error:' line on failure.
Set UPDATE_GOLDEN=1 to rewrite the expected files from the current binary.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--cases", required=True, action="append", help="a cases file (repeatable)")
    ap.add_argument("--only", default=None)
    args = ap.parse_args()
    cases = []
    for path in args.cases:
        with open(path) as f:
            cases += json.load(f)
    names = [c["name"] for c in cases]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        print("duplicate case names: " + ", ".join(dupes))
        return 1
    update = os.environ.get("UPDATE_GOLDEN") == "1"
    failures = []
    scratch = tempfile.mkdtemp(prefix="optadvisor-golden-")
    for case in cases:
        if args.only and args.only not in case["name"]:
            continue
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NO_COLOR": "1", "COLUMNS": "120",
               "HOME": scratch, "LC_ALL": "C",
               "XDG_DATA_HOME": os.path.join(scratch, "xdg-data"), "XDG_CONFIG_HOME": os.path.join(scratch, "xdg-config")}
        for k, v in case.get("env", {}).items():
            env[k] = v.replace("@ROOT@", ROOT).replace("@SCRATCH@", scratch)
        argv = [a.replace("@ROOT@", ROOT).replace("@SCRATCH@", scratch) for a in case["args"]]
        proc = subprocess.run([args.exe] + argv, capture_output=True, env=env, cwd=ROOT,
                              input=case.get("stdin", "").encode(), timeout=60)
        # Paths under the checkout print as @ROOT@, so recorded outputs do not depend on where it lives.
        out = proc.stdout.decode("utf-8", "replace").replace(ROOT, "@ROOT@")
        err = proc.stderr.decode("utf-8", "replace").replace(ROOT, "@ROOT@")
        problems = []
        if proc.returncode != case["exit"]:
            problems.append(f"exit {proc.returncode}, expected {case['exit']}")
        is_json = "--json" in argv or ("--format" in argv and argv[argv.index("--format") + 1] == "json")
        if is_json and out.strip():
            try:
                json.loads(out)
            except ValueError as e:
                problems.append(f"stdout is not one valid JSON document: {e}")
        if "Traceback" in err or "terminate called" in err or "Aborted" in err:
            problems.append("stack trace or abort on stderr")
        if case["exit"] == 2 or case["exit"] == 1:
            if err.count("optadvisor: error:") != 1:
                problems.append(f"expected exactly one 'optadvisor: error:' line on stderr, got:\n{err}")
            if not case.get("stdout") and out.strip() and not is_json:
                problems.append(f"expected nothing on stdout on failure, got:\n{out[:500]}")
        for needle in case.get("stderr_contains", []):
            if needle not in err:
                problems.append(f"stderr lacks {needle!r}:\n{err}")
        for needle in case.get("stdout_contains", []):
            if needle not in out:
                problems.append(f"stdout lacks {needle!r}")
        if case.get("stdout"):
            path = os.path.join(HERE, "expected", case["stdout"])
            if update:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write(out)
            elif not os.path.exists(path):
                problems.append(f"missing expected file {path} (run with UPDATE_GOLDEN=1)")
            else:
                with open(path) as f:
                    want = f.read()
                if path.endswith(".json"):
                    same = json.loads(want) == json.loads(out) if out.strip() else False
                else:
                    same = want == out
                if not same:
                    import difflib
                    diff = "".join(difflib.unified_diff(want.splitlines(True), out.splitlines(True),
                                                        "expected", "actual", n=2))
                    problems.append("stdout differs from " + case["stdout"] + ":\n" + diff[:4000])
        status = "ok" if not problems else "FAIL"
        print(f"[{status}] {case['name']}: optadvisor {' '.join(argv)}")
        if problems:
            failures.append(case["name"])
            for p in problems:
                print("    " + p.replace("\n", "\n    "))
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
