#!/usr/bin/env python3
"""Checks the two maps of the code, README.md's "Layout" table and docs/DESIGN.md's "Code layout"
block, against the tree.

Usage: check_maps.py REPO_ROOT

Each map is a list of entries: a path (a folder, "src/", or a file, "proto/basalt.proto") and its
description. In README.md the entries are the rows of the table under "## Layout" (the path is
the first column, in backticks); in DESIGN.md they are the lines of the fenced block under the
"Code layout" heading whose text starts with one or more paths ending in "/" ("common/", or
"base/ schema/ transactions/"): at the line's start a path is the repository's, indented it is
under the last one that was not; a line that starts with a word continues the entry above it.

Both maps must hold, the same rules for each:
  - every path a map names exists: an entry's paths, and in a description each `name/` (or
    `a/b`) in backticks, under the entry's folder or the repository root;
  - every folder the maps cover is named: the repository's top-level folders, and the folders of
    src/, src/tools/, proto/ and tests/. A folder is named by an entry of its own path, by an
    entry of a path below it, or, as one of a folder's parts, by its name as a word in that
    folder's description ("crash" in tests/'s).
Prints each fault as "FILE: what" and exits 1 if there is any; else prints a line per map and
exits 0. Standard library only.
"""

import os
import re
import sys

COVERED_PARENTS = ["src", "src/tools", "proto", "tests"]
PATH_TOKEN = re.compile(r"^[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*/$")
BACKTICKED = re.compile(r"`([^`\s]+)`")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")


def readme_entries(lines):
    """[(path, description)] from the table under "## Layout"."""
    entries, inside = [], False
    for line in lines:
        if line.startswith("## "):
            inside = line.strip() == "## Layout"
            continue
        if not inside or not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        path = cells[0].strip("`")
        entries.append(([path], " ".join(cells[1:])))
    return entries


def design_entries(lines):
    """[(paths, description)] from the fenced block under the "Code layout" heading."""
    start = None
    for i, line in enumerate(lines):
        if re.match(r"^##\s+(?:[\d.]+\s+)?Code layout\b", line):
            start = i
            break
    if start is None:
        return None
    i = start + 1
    while i < len(lines) and not lines[i].startswith("```"):
        i += 1
    entries, top = [], ""
    for line in lines[i + 1:]:
        if line.startswith("```"):
            break
        indent = len(line) - len(line.lstrip(" "))
        words = line.split()
        paths = []
        while words and PATH_TOKEN.match(words[0]):
            paths.append(words.pop(0))
        if not paths:
            if entries:
                entries[-1] = (entries[-1][0], entries[-1][1] + " " + line.strip())
            continue
        if indent == 0:
            top = paths[0]
        else:
            paths = [top + p for p in paths]
        entries.append((paths, " ".join(words)))
    return entries


def check(root, name, entries):
    faults = []
    named = set()  # folders named, without the trailing "/"
    parts_named = {}  # folder -> words of its description
    for paths, desc in entries:
        for p in paths:
            full = os.path.join(root, p)
            if not os.path.exists(full):
                faults.append(f"{name}: {p} does not exist")
            folder = p.rstrip("/") if p.endswith("/") else os.path.dirname(p)
            while folder:
                named.add(folder)
                folder = os.path.dirname(folder)
            if p.endswith("/"):
                parts_named.setdefault(p.rstrip("/"), set()).update(re.findall(r"[A-Za-z0-9_.-]+", desc))
            base = p if p.endswith("/") else os.path.dirname(p) + "/"
            for token in BACKTICKED.findall(desc):
                if "/" not in token or token.startswith("/") or ":" in token or "<" in token:
                    continue
                token = token.rstrip(".,;")
                if not (os.path.exists(os.path.join(root, base, token)) or os.path.exists(os.path.join(root, token))):
                    faults.append(f"{name}: `{token}` (in the entry of {p}) does not exist")
    folders = [d for d in os.listdir(root)
               if os.path.isdir(os.path.join(root, d)) and not d.startswith(".") and not d.startswith("build")]
    for parent in COVERED_PARENTS:
        if os.path.isdir(os.path.join(root, parent)):
            folders += [f"{parent}/{d}" for d in os.listdir(os.path.join(root, parent))
                        if os.path.isdir(os.path.join(root, parent, d))]
    for f in sorted(folders):
        if f in named:
            continue
        parent, base = os.path.dirname(f), os.path.basename(f)
        if parent and base in parts_named.get(parent, set()):
            continue
        faults.append(f"{name}: the folder {f}/ is not in the map")
    return faults


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    root = sys.argv[1]
    faults = []
    readme = readme_entries(read(os.path.join(root, "README.md")))
    design = design_entries(read(os.path.join(root, "docs", "DESIGN.md")))
    if not readme:
        faults.append("README.md: no \"## Layout\" table")
    else:
        faults += check(root, "README.md", readme)
    if not design:
        faults.append("docs/DESIGN.md: no \"Code layout\" block")
    else:
        faults += check(root, "docs/DESIGN.md", design)
    for f in faults:
        print(f)
    if faults:
        return 1
    print(f"README.md: {len(readme)} entries, every folder mapped")
    print(f"docs/DESIGN.md: {len(design)} entries, every folder mapped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
