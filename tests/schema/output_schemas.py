#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The JSON output contract: data/schema/output/<command>.schema.json.

samples.json lists, per command, representative command lines whose --json output the schema must
accept, plus which objects are maps (keys are data, e.g. dtype -> FLOP/s) and which parts refer to a
data schema. Two modes:

  output_schemas.py --exe BIN check      run every sample and validate its output (the ctest `schemas`)
  output_schemas.py --exe BIN generate   write a schema per command from the samples: objects list
                                         their properties, a property present in every sample is
                                         required, and unknown properties are rejected, so that any
                                         change to the output shows up as a test failure and a diff

Generated schemas are reviewed and committed; bump `schema_version` in the output when a change
removes or retypes a field.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT_DIR = os.path.join(ROOT, "data", "schema", "output")
DRAFT = "https://json-schema.org/draft/2020-12/schema"


def run(exe, argv, scratch):
    argv = [a.replace("@ROOT@", ROOT).replace("@SCRATCH@", scratch) for a in argv]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NO_COLOR": "1", "HOME": scratch, "LC_ALL": "C",
           "XDG_DATA_HOME": os.path.join(scratch, "xdg-data")}
    proc = subprocess.run([exe] + argv, capture_output=True, env=env, cwd=ROOT, timeout=120)
    # validate-data exits 2 with a JSON list of problems, fit 3 with its verdict.
    if proc.returncode not in (0, 2, 3) or not proc.stdout.strip():
        raise RuntimeError(f"optadvisor {' '.join(argv)} exited {proc.returncode}: {proc.stderr.decode()[:500]}")
    return json.loads(proc.stdout)


def json_type(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def infer(values, path, spec):
    """A schema accepting every value in `values` (all found at `path`)."""
    if path in spec.get("refs", {}):
        return {"$ref": spec["refs"][path]}
    types = sorted({json_type(v) for v in values})
    if "integer" in types and "number" in types:
        types.remove("integer")
    schema = {}
    objects = [v for v in values if isinstance(v, dict)]
    arrays = [v for v in values if isinstance(v, list)]
    if objects:
        if path in spec.get("maps", []):
            children = [c for o in objects for c in o.values()]
            schema["additionalProperties"] = infer(children, path + ".*", spec) if children else {}
        else:
            keys = sorted({k for o in objects for k in o})
            schema["properties"] = {k: infer([o[k] for o in objects if k in o], (path + "." if path else "") + k, spec)
                                    for k in keys}
            required = [k for k in keys if all(k in o for o in objects)]
            if required:
                schema["required"] = required
            schema["additionalProperties"] = False
    if arrays:
        items = [x for a in arrays for x in a]
        schema["items"] = infer(items, path + "[]", spec) if items else {}
    if path in spec.get("enums", {}):
        schema["enum"] = spec["enums"][path]
    schema = {"type": types[0] if len(types) == 1 else types, **schema}
    return schema


def load_spec():
    with open(os.path.join(HERE, "samples.json")) as f:
        return json.load(f)


def generate(exe, scratch):
    spec = load_spec()
    os.makedirs(OUT_DIR, exist_ok=True)
    for command, entry in spec["commands"].items():
        docs = [run(exe, argv, scratch) for argv in entry["samples"]]
        schema = infer(docs, "", entry)
        schema["properties"]["schema_version"] = {"const": 1}
        out = {"$schema": DRAFT, "$id": f"https://optadvisor.dev/schema/output/{command}.schema.json",
               "title": entry["title"], "description": entry["description"], **schema}
        with open(os.path.join(OUT_DIR, command + ".schema.json"), "w") as f:
            json.dump(out, f, indent=2, sort_keys=False)
            f.write("\n")
        print(f"wrote {command}.schema.json from {len(docs)} sample(s)")
    return 0


def check(exe, scratch):
    import jsonschema
    from jsonschema import validators
    spec = load_spec()
    failures = 0
    store = {}
    for name in os.listdir(os.path.join(ROOT, "data", "schema")):
        if name.endswith(".schema.json"):
            with open(os.path.join(ROOT, "data", "schema", name)) as f:
                data_schema = json.load(f)
            store["file://" + os.path.join(ROOT, "data", "schema", name)] = data_schema
            store["https://optadvisor.dev/schema/" + name] = data_schema
            if "$id" in data_schema:
                store[data_schema["$id"]] = data_schema
    for command, entry in spec["commands"].items():
        path = os.path.join(OUT_DIR, command + ".schema.json")
        if not os.path.exists(path):
            print(f"[FAIL] {command}: no schema at {path}")
            failures += 1
            continue
        with open(path) as f:
            schema = json.load(f)
        cls = validators.validator_for(schema)
        cls.check_schema(schema)
        resolver = jsonschema.RefResolver(base_uri="file://" + path, referrer=schema, store=store)
        validator = cls(schema, resolver=resolver)
        for argv in entry["samples"] + entry.get("extra_samples", []):
            try:
                doc = run(exe, argv, scratch)
            except (RuntimeError, ValueError) as e:
                print(f"[FAIL] {command}: {e}")
                failures += 1
                continue
            errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
            if doc.get("schema_version") != 1:
                errors.append(f"schema_version is {doc.get('schema_version')!r}")
            status = "ok" if not errors else "FAIL"
            print(f"[{status}] {command}: optadvisor {' '.join(argv)}")
            for e in errors[:5]:
                where = "/".join(str(p) for p in e.path) if hasattr(e, "path") else ""
                print(f"    /{where}: {getattr(e, 'message', e)}")
            failures += 1 if errors else 0
    # Every JSON-producing command must have a schema.
    listed = set(spec["commands"])
    for name in os.listdir(OUT_DIR):
        if name.endswith(".schema.json") and name[:-len(".schema.json")] not in listed:
            print(f"[FAIL] {name} has no samples in tests/schema/samples.json")
            failures += 1
    print(f"{failures} failure(s)")
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("mode", choices=["check", "generate"])
    args = ap.parse_args()
    import tempfile
    scratch = tempfile.mkdtemp(prefix="optadvisor-schema-")
    return generate(args.exe, scratch) if args.mode == "generate" else check(args.exe, scratch)


if __name__ == "__main__":
    sys.exit(main())
