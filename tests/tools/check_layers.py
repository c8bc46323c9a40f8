#!/usr/bin/env python3
"""The layering check: every #include of the product follows the arrows.

Each folder of the product may include only itself and the folders it is
allowed to reach (ALLOWED below; docs/architecture.md, "Layers", draws
them), and of a folder with a public face (FACES) only that face. And no two units include each other, directly or round a loop: a unit
is a header and its source file (query/exec/raw.h and raw.cc). tests/ and
bench/ may include anything.

Run from the repository root: python3 tests/tools/check_layers.py
Exit status 1, with each wrong include and each loop named, when a rule is
broken.
"""

import os
import re
import subprocess
import sys

QUERY = ["query/syntax", "query/promql", "query/runtime", "query/promeval", "query/plan",
         "query/exec", "query/fleet"]

# Folder -> the folders its files may include (besides their own).
ALLOWED = {
    "storage": [],
    "engine": ["storage"],
    "ingest": ["engine", "storage"],
    "query/syntax": ["storage"],
    "query/promql": ["query/syntax", "storage"],
    "query/runtime": ["query/syntax", "engine", "storage"],
    "query/promeval": ["query/promql", "query/runtime", "query/syntax", "engine", "storage"],
    "query/plan": ["query/runtime", "query/syntax", "engine", "storage"],
    "query/exec": ["query/plan", "query/runtime", "query/syntax", "engine", "storage"],
    "query/fleet": ["query/exec", "query/plan", "query/runtime", "query/syntax", "engine", "storage"],
    "query": QUERY + ["engine", "storage"],
    "server": ["query"] + QUERY + ["ingest", "engine", "storage"],
    "shell": ["server", "query"] + QUERY + ["ingest", "engine", "storage"],
}

# Folder -> the only headers of it that files outside it may include: its
# public face. The engine's is engine/gpulse.h; the rest is behind it.
FACES = {
    "engine": ["engine/gpulse.h"],
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def product_files():
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "*.h", "*.cc"],
                         check=True, capture_output=True, text=True).stdout.split()
    return [f for f in out if f.split("/")[0] in {"storage", "engine", "ingest", "query",
                                                  "server", "shell"}]


def includes(path):
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield number, m.group(1)


def main():
    files = product_files()
    known = set(files)
    errors = []
    unit_edges = {}
    for path in files:
        folder = os.path.dirname(path)
        unit = os.path.splitext(path)[0]
        unit_edges.setdefault(unit, set())
        for number, target in includes(path):
            if target not in known:
                continue  # a system or library header
            to = os.path.dirname(target)
            if to != folder and to not in ALLOWED.get(folder, []):
                errors.append(f"{path}:{number}: includes {target}, but {folder}/ may not "
                              f"reach {to}/ (tests/tools/check_layers.py, ALLOWED)")
            face = FACES.get(to)
            if face is not None and to != folder and target not in face:
                errors.append(f"{path}:{number}: includes {target}, behind the face of {to}/ "
                              f"(outside it, include only {', '.join(face)})")
            to_unit = os.path.splitext(target)[0]
            if to_unit != unit:
                unit_edges[unit].add(to_unit)

    # Loops between units: a depth-first search that reports each back edge's cycle.
    state = {}
    stack = []

    def visit(u):
        state[u] = 1
        stack.append(u)
        for v in sorted(unit_edges.get(u, ())):
            if state.get(v) == 1:
                cycle = stack[stack.index(v):] + [v]
                errors.append("include loop: " + " -> ".join(cycle))
            elif v not in state:
                visit(v)
        stack.pop()
        state[u] = 2

    sys.setrecursionlimit(10000)
    for u in sorted(unit_edges):
        if u not in state:
            visit(u)

    for e in errors:
        print(e)
    if errors:
        return 1
    print(f"layers: {len(files)} files, every include follows the arrows, no include loop")
    return 0


if __name__ == "__main__":
    sys.exit(main())
