#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The bad-input table: tests/bad_input/cases.json.

Every case is a command line that must fail cleanly: the exact exit code (2 unless the case says
otherwise), nothing at all on stdout (no partial JSON), exactly one 'optadvisor: error:' line on stderr
plus at most one 'hint:' line, no stack trace or sanitizer report, and the case's key words in the
message. Fixtures that cannot live in the repository (empty, unreadable, truncated and corrupt files,
directories passed as files, overlays with wrong units) are made in a scratch directory first.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CRASH_MARKERS = ["Traceback", "terminate called", "Aborted", "Segmentation fault", "AddressSanitizer",
                 "runtime error:", "LeakSanitizer", "what():"]


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def make_fixtures(scratch):
    os.makedirs(os.path.join(scratch, "a-directory"))
    for name in ("empty.json", "empty.gguf"):
        open(os.path.join(scratch, name), "wb").close()
    with open(os.path.join(ROOT, "tests", "data", "hf", "llama-3.1-8b.json")) as f:
        config = json.load(f)
    config["num_hidden_layers"] = "32"
    with open(os.path.join(scratch, "wrong-type-config.json"), "w") as f:
        json.dump(config, f)
    with open(os.path.join(scratch, "garbage.json"), "w") as f:
        f.write("{not json")
    unreadable = os.path.join(scratch, "unreadable.json")
    with open(unreadable, "w") as f:
        f.write("{not json either")  # fails to parse when the process can read it anyway (root)
    os.chmod(unreadable, 0)
    # GGUF v3: magic, version, tensor count, metadata count, then key/value pairs.
    header = b"GGUF" + struct.pack("<I", 3) + struct.pack("<QQ", 1, 2)
    kv = gguf_string("general.architecture") + struct.pack("<I", 8) + gguf_string("llama")
    with open(os.path.join(scratch, "truncated.gguf"), "wb") as f:
        f.write(header + kv[: len(kv) // 2])
    with open(os.path.join(scratch, "huge-count.gguf"), "wb") as f:
        f.write(b"GGUF" + struct.pack("<I", 3) + struct.pack("<QQ", 2**62, 2**62) + kv)
    # Numbers too large for a double (found by fuzzing: they were "internal failure", exit 1).
    with open(os.path.join(scratch, "overflow-config.json"), "w") as f:
        f.write(json.dumps(config).replace('"num_hidden_layers": "32"', '"num_hidden_layers": 1e999'))
    with open(os.path.join(ROOT, "tests", "data", "calibration", "llama-bench-rtx4090.json")) as f:
        bench = f.read()
    with open(os.path.join(scratch, "overflow-bench.json"), "w") as f:
        f.write(bench.replace('"avg_ts": ', '"avg_ts": 418186e1815 + 0 * ', 1).replace(" + 0 * ", ", \"x\": ", 1))
    # n_prompt + n_gen overflowed int64 (UBSan) before the token counts were range-checked.
    with open(os.path.join(scratch, "huge-tokens-bench.json"), "w") as f:
        f.write(bench.replace('"n_prompt": 512', '"n_prompt": 9223372036854775807', 1))
    # Hostile inputs: nesting 50,000 deep (a recursive dump or copy would overflow the stack),
    # absurd dimensions, a FIFO and an oversized file where a regular file belongs.
    deep = "[" * 50000 + "]" * 50000
    with open(os.path.join(scratch, "deep-config.json"), "w") as f:
        f.write('{"model_type": "llama", "x": ' + deep + "}")
    with open(os.path.join(scratch, "deep-bench.json"), "w") as f:
        f.write(deep)
    os.makedirs(os.path.join(scratch, "overlay-deep", "rules"))
    with open(os.path.join(scratch, "overlay-deep", "rules", "deep.json"), "w") as f:
        f.write('{"id": ' + deep + "}")
    for name, key, value in (("wide-config.json", "intermediate_size", 2**60),
                             ("layers-config.json", "num_hidden_layers", 10**15),
                             ("million-layers-config.json", "num_hidden_layers", 10**6)):
        c = dict(config, num_hidden_layers=32)
        c[key] = value
        with open(os.path.join(scratch, name), "w") as f:
            json.dump(c, f)
    c = dict(config, num_hidden_layers=10000, hidden_size=2**24, intermediate_size=2**24,
             num_attention_heads=2**16, num_key_value_heads=2**16, head_dim=256)
    with open(os.path.join(scratch, "overflow-params-config.json"), "w") as f:
        json.dump(c, f)
    os.mkfifo(os.path.join(scratch, "fifo.json"))
    os.makedirs(os.path.join(scratch, "overlay-fifo", "hardware"))
    os.mkfifo(os.path.join(scratch, "overlay-fifo", "hardware", "fifo.json"))
    os.makedirs(os.path.join(scratch, "overlay-huge", "hardware"))
    with open(os.path.join(scratch, "overlay-huge", "hardware", "huge.json"), "wb") as f:
        f.truncate(65 * 2**20)  # sparse: 65 MiB of zero bytes, never written
    with open(os.path.join(scratch, "huge-bench.json"), "wb") as f:
        f.truncate(65 * 2**20)
    os.makedirs(os.path.join(scratch, "out-dir"))
    os.mkfifo(os.path.join(scratch, "out-fifo"))
    # GGUF tensor tables: too many tensors, a name past 1 kB, overlapping tensors.
    v3 = b"GGUF" + struct.pack("<I", 3)
    with open(os.path.join(scratch, "many-tensors.gguf"), "wb") as f:
        f.write(v3 + struct.pack("<QQ", 65537, 0) + b"\0" * (65537 * 24))
    def tensor(name, offset):
        return gguf_string(name) + struct.pack("<I", 1) + struct.pack("<Q", 32) + struct.pack("<I", 0) + struct.pack("<Q", offset)
    with open(os.path.join(scratch, "long-name.gguf"), "wb") as f:
        f.write(v3 + struct.pack("<QQ", 1, 0) + tensor("t" * 1025, 0) + b"\0" * 2048)
    body = v3 + struct.pack("<QQ", 2, 1) + kv + tensor("token_embd.weight", 0) + tensor("output_norm.weight", 0)
    with open(os.path.join(scratch, "overlap.gguf"), "wb") as f:
        f.write(body + b"\0" * (64 - len(body) % 32 + 256))

    # Overlays: a profile with a bandwidth written as text with units, one with a wrong type.
    profile_path = os.path.join(ROOT, "data", "hardware", "consumer-gpu", "rtx4090.json")
    with open(profile_path) as f:
        profile = json.load(f)
    for folder, name, edit in (("overlay-units", "lab-gpu", ("bandwidth_bytes_per_s", "1008 GB/s")),
                               ("overlay-type", "lab-gpu2", ("capacity_bytes", True)),
                               ("overlay-overflow", "lab-gpu3", ("capacity_bytes", 24e9))):
        p = json.loads(json.dumps(profile))
        p["id"] = name
        p["name"] = "Lab GPU " + name
        p.pop("aliases", None)
        p.pop("default_for", None)
        p["memory"][edit[0]] = edit[1]
        os.makedirs(os.path.join(scratch, folder, "hardware"))
        with open(os.path.join(scratch, folder, "hardware", name + ".json"), "w") as f:
            text = json.dumps(p)
            if folder == "overlay-overflow":
                text = text.replace("24000000000.0", "24e999")
            f.write(text)


def run_case(exe, case, scratch):
    argv = [a.replace("@ROOT@", ROOT).replace("@SCRATCH@", scratch) for a in case["args"]]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NO_COLOR": "1", "HOME": scratch, "LC_ALL": "C",
           "XDG_DATA_HOME": os.path.join(scratch, "xdg-data")}
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    proc = subprocess.run([exe] + argv, capture_output=True, env=env, cwd=scratch, timeout=60)
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    problems = []
    want = case.get("exit", 2)
    if proc.returncode != want:
        problems.append(f"exit {proc.returncode}, expected {want}")
    if out:
        problems.append(f"stdout is not empty:\n{out[:400]}")
    lines = [l for l in err.splitlines() if l.strip()]
    errors = [l for l in lines if l.startswith("optadvisor: error:")]
    hints = [l for l in lines if l.startswith("hint:")]
    if len(errors) != 1:
        problems.append(f"expected one 'optadvisor: error:' line, got {len(errors)}")
    if len(hints) > 1 or len(lines) != len(errors) + len(hints):
        problems.append("stderr has more than the error line and one hint")
    for marker in CRASH_MARKERS:
        if marker in err:
            problems.append(f"crash marker {marker!r} on stderr")
    for word in case["words"]:
        if word.lower() not in err.lower():
            problems.append(f"message lacks {word!r}")
    return argv, err, problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--cases", default=os.path.join(HERE, "cases.json"))
    args = ap.parse_args()
    args.exe = os.path.abspath(args.exe)
    with open(args.cases) as f:
        cases = json.load(f)
    scratch = tempfile.mkdtemp(prefix="optadvisor-bad-input-")
    try:
        make_fixtures(scratch)
        failures = 0
        for case in cases:
            argv, err, problems = run_case(args.exe, case, scratch)
            print(f"[{'ok' if not problems else 'FAIL'}] {case['name']}: optadvisor {' '.join(argv)}")
            if problems:
                failures += 1
                for p in problems:
                    print("    " + p.replace("\n", "\n    "))
                print("    stderr: " + err.strip().replace("\n", "\n            "))
        print(f"{len(cases)} case(s), {failures} failure(s)")
        return 1 if failures else 0
    finally:
        os.chmod(os.path.join(scratch, "unreadable.json"), 0o600)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
