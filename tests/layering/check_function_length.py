#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The function-length check: no function body in src/ or bench/ runs over LIMIT lines
(docs/architecture.md, "Long functions"), so that each reads along its own sections.
Functions that only return a static table are listed in TABLES and may be longer.

The scan is textual: string and character literals and // comments are blanked, then a
line that closes a parameter list and opens a brace at namespace depth starts a body.
Usage: check_function_length.py [--root DIR] [--limit N]. Exit 0 when clean, 1 with one
line per function over the limit."""
import argparse
import pathlib
import re
import sys

LIMIT = 80

# (file, function): bodies that are one static initializer list, data rather than logic.
TABLES = {
    ("src/advisor/rules.cpp", "fact_catalog"),    # the facts a rule may test, one line each
    ("src/advisor/transforms.cpp", "entries"),    # the transform table: name, parameters, function
}

STRING = re.compile(r'"(\\.|[^"\\])*"')
CHAR = re.compile(r"'(\\.|[^'\\])*'")
BODY_START = re.compile(r"\)\s*(const)?\s*(noexcept)?\s*(override)?\s*(->\s*[\w:<>,\s]+)?\s*\{")
NAME = re.compile(r"([\w:~]+)\s*\(")
KEYWORDS = {"if", "for", "while", "switch", "catch", "return"}


def blank(line: str) -> str:
    line = STRING.sub('""', line)
    line = CHAR.sub("''", line)
    return re.sub(r"//.*", "", line)


def long_functions(path: pathlib.Path, limit: int):
    lines = path.read_text(encoding="utf-8").split("\n")
    depth = namespace_depth = 0
    start = None
    start_depth = 0
    name = "?"
    in_raw = False
    for i, raw in enumerate(lines):
        # Raw string literals (R"(...)") hold CSS, SVG and shell code: skip their lines.
        if in_raw:
            if ')"' in raw:
                in_raw = False
            continue
        if 'R"(' in raw and ')"' not in raw.split('R"(', 1)[1]:
            in_raw = True
            raw = raw.split('R"(', 1)[0]
        s = blank(raw)
        opens, closes = s.count("{"), s.count("}")
        if start is None and opens and depth == namespace_depth:
            stripped = s.strip()
            if stripped.startswith("namespace") or stripped.startswith("extern"):
                namespace_depth += opens - closes
                depth += opens - closes
                continue
            starts = BODY_START.search(s) or (stripped == "{" and i > 0 and blank(lines[i - 1]).rstrip().endswith(")"))
            if starts:
                j = i
                while j > 0 and "(" not in lines[j]:
                    j -= 1
                m = NAME.search(blank(lines[j]))
                name = m.group(1) if m else "?"
                if name not in KEYWORDS:
                    start, start_depth = i, depth
        depth += opens - closes
        if start is not None and depth <= start_depth:
            length = i - start + 1
            if length > limit:
                yield start + 1, name, length
            start = None
        namespace_depth = min(namespace_depth, depth)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", default=pathlib.Path(__file__).resolve().parents[2], type=pathlib.Path)
    parser.add_argument("--limit", default=LIMIT, type=int)
    args = parser.parse_args()
    root = args.root.resolve()
    problems = []
    for folder in ("src", "bench"):
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in (".cpp", ".hpp"):
                continue
            rel = path.relative_to(root).as_posix()
            for line, name, length in long_functions(path, args.limit):
                if (rel, name.split("::")[-1]) in TABLES:
                    continue
                problems.append(f"{rel}:{line}: {name} is {length} lines (limit {args.limit}); split it along its sections")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
