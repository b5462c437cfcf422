#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layering test: every #include in src/ and include/ must follow the dependency
table of docs/architecture.md, public headers must not include internal ones, and
render/ never calls the functions that compute (it renders results).

Usage: check_layering.py [--root DIR]. Exit 0 when clean, 1 with one line per violation."""
import argparse
import pathlib
import re
import sys

AREAS = ["base", "catalog", "readers", "analysis", "advisor", "planner", "calibrate", "render", "cli"]

# Area -> the areas it may include (itself always). The table in docs/architecture.md.
MAY_USE = {
    "base": set(),
    "catalog": {"base"},
    "readers": {"catalog", "base"},
    "analysis": {"readers", "catalog", "base"},
    "advisor": {"analysis", "readers", "catalog", "base"},
    "planner": {"analysis", "readers", "catalog", "base"},
    "calibrate": {"analysis", "readers", "catalog", "base"},
    "render": {"base", "catalog", "readers", "analysis", "advisor", "planner", "calibrate"},
    "cli": set(AREAS) - {"cli"},
}

# Third-party libraries that only the command line may use (logging, argument parsing).
CLI_ONLY_LIBS = ("spdlog/", "CLI/")

# Functions that compute; render/ receives their results and never calls them.
COMPUTING_CALLS = re.compile(r"\b(prepare_scenario|prepare_training|analyze|analyze_training|advise|"
                             r"build_playbook|run_search|search_configurations|compare_scenarios)\s*\(")

# Today's known violations, each to be removed by the refactor that fixes it; the list must end empty.
ALLOWED = {
}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def area_of_file(root: pathlib.Path, path: pathlib.Path):
    rel = path.relative_to(root).parts
    if rel[0] == "src" and len(rel) >= 3:
        return rel[1]
    if rel[0] == "include" and len(rel) >= 4 and rel[1] == "optadvisor":
        return rel[2]
    return None


def area_of_include(target: str):
    parts = target.split("/")
    if parts[0] == "optadvisor" and len(parts) >= 3:
        return parts[1], True
    if parts[0] in AREAS and len(parts) >= 2:
        return parts[0], False
    return None, None


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=str(pathlib.Path(__file__).resolve().parents[2]))
    args = ap.parse_args()
    root = pathlib.Path(args.root)
    problems = []
    files = sorted(list((root / "src").rglob("*.[ch]pp")) + list((root / "include").rglob("*.hpp")))
    for path in files:
        area = area_of_file(root, path)
        rel = path.relative_to(root)
        if area not in AREAS:
            problems.append(f"{rel}: not in an area folder ({', '.join(AREAS)})")
            continue
        public = rel.parts[0] == "include"
        text = path.read_text(encoding="utf-8")
        for m in INCLUDE.finditer(text):
            kind, target = m.group(1), m.group(2)
            line = text.count("\n", 0, m.start()) + 1
            if kind == "<":
                if area != "cli" and target.startswith(CLI_ONLY_LIBS):
                    problems.append(f"{rel}:{line}: <{target}> is for the command line only")
                continue
            dep, dep_public = area_of_include(target)
            if dep is None:
                # A header beside the file (src/cli/common.hpp from src/cli/).
                if not (path.parent / target).exists():
                    problems.append(f"{rel}:{line}: \"{target}\" is neither an area header nor beside the file")
                continue
            if dep not in AREAS:
                problems.append(f"{rel}:{line}: \"{target}\" names no area")
                continue
            if public and not dep_public:
                problems.append(f"{rel}:{line}: public header includes internal \"{target}\"")
            if dep != area and dep not in MAY_USE[area] and (str(rel), target) not in ALLOWED:
                problems.append(f"{rel}:{line}: {area} may not use {dep} (\"{target}\")")
        if area == "render":
            for m in COMPUTING_CALLS.finditer(strip_comments(text)):
                problems.append(f"{rel}: render calls {m.group(1)}() (renderers never compute)")
    for p in problems:
        print(p)
    print(f"layering: {len(files)} files, {len(problems)} violations", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
