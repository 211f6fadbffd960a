#!/usr/bin/env python3
"""Checks the walks of docs/DESIGN.md's "Life of a request" section against the code.

Usage: check_walks.py REPO_ROOT [MARKDOWN_FILE]

MARKDOWN_FILE defaults to REPO_ROOT/docs/DESIGN.md. The section is the one whose "## " heading
says "Life of a request", up to the next "## " heading. Each walk is a "### " heading; each hop
a line of the form

  1. `path/to/file.cc` `Class::Method` — one short sentence.

For every hop: the path exists under REPO_ROOT; the name's last component appears in the file
followed by optional whitespace and "("; and a qualified name `Class::Method` is either defined
in the file ("Class::Method(") or the file declares "class Class" / "struct Class" and has the
method name followed by "(" after that declaration (a method defined inline in a header, or in a
class local to a .cc).
Prints each bad hop as "DESIGN.md:<line>: <path> <name>: <why>" and exits 1 if any hop is bad,
if there are fewer than five walks, or if a walk has fewer than five hops; else exits 0.
Standard library only.
"""

import os
import re
import sys

MIN_WALKS = 5
MIN_HOPS = 5

SECTION_RE = re.compile(r"^##\s+(?:[\d.]+\s+)?Life of a request\b")
H2_RE = re.compile(r"^##\s")
H3_RE = re.compile(r"^###\s+(.*\S)")
# A hop: "N. `path` `name` — sentence" (leading spaces allowed: a list may be indented).
HOP_RE = re.compile(r"^\s*(\d+)\.\s+`([^`]+)`\s+`([^`]+)`\s+\u2014\s+(\S.*)$")
# A line that starts like a hop ("N. `"): checked against HOP_RE so a malformed hop is reported.
HOP_START_RE = re.compile(r"^\s*\d+\.\s+`")
NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_~][A-Za-z0-9_]*)*$")


def read_text(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def find_section(lines):
    """(first, end) line indices of the section's body, or None."""
    start = None
    for i, line in enumerate(lines):
        if start is None:
            if SECTION_RE.match(line):
                start = i + 1
        elif H2_RE.match(line):
            return start, i
    if start is None:
        return None
    return start, len(lines)


def check_hop(root, path, name, cache):
    """None if the hop is good, else why not."""
    if os.path.isabs(path) or ".." in path.split("/"):
        return "the path must be relative to the repository root"
    if not NAME_RE.match(name):
        return "not a function name (Name or Class::Method)"
    full = os.path.join(root, path)
    if not os.path.isfile(full):
        return "no such file"
    if full not in cache:
        cache[full] = read_text(full)
    text = cache[full]
    parts = name.split("::")
    method = parts[-1]
    if not re.search(r"(?<![A-Za-z0-9_])" + re.escape(method) + r"\s*\(", text):
        return "'%s(' does not appear in the file" % method
    if len(parts) == 1:
        return None
    cls = "::".join(parts[:-1])
    if re.search(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"\s*\(", text):
        return None  # defined here: Class::Method(
    short = parts[-2]
    # Inline in the class: "class Class" / "struct Class" (not a forward declaration), and
    # "Method(" after it (an inline method cannot come before its class).
    # (Not "struct Class::Nested", which defines a nested type in a .cc.)
    declared = re.search(r"\b(?:class|struct)\s+(?:[A-Za-z0-9_]+::)*" + re.escape(short) + r"\b(?!\s*;)(?!::)", text)
    if not declared:
        return "neither '%s(' nor 'class %s' / 'struct %s' is in the file" % (name, cls, short)
    if not re.search(r"(?<![A-Za-z0-9_])" + re.escape(method) + r"\s*\(", text[declared.end():]):
        return "'%s(' does not appear after 'class %s' in the file" % (method, short)
    return None


def main(argv):
    if len(argv) not in (2, 3):
        sys.stderr.write("usage: check_walks.py REPO_ROOT [MARKDOWN_FILE]\n")
        return 2
    root = argv[1]
    md = argv[2] if len(argv) == 3 else os.path.join(root, "docs", "DESIGN.md")
    label = os.path.basename(md)
    try:
        lines = read_text(md).splitlines()
    except OSError as e:
        print("%s: cannot read: %s" % (md, e.strerror))
        return 1
    section = find_section(lines)
    if section is None:
        print("%s: no '## Life of a request' section" % label)
        return 1
    first, end = section

    bad = 0
    walks = []  # [heading, line number, hop count]
    cache = {}
    for i in range(first, end):
        line = lines[i]
        lineno = i + 1
        h3 = H3_RE.match(line)
        if h3:
            walks.append([h3.group(1), lineno, 0])
            continue
        if not HOP_START_RE.match(line):
            continue
        m = HOP_RE.match(line)
        if not m:
            print("%s:%d: %s: not a hop of the form: N. `path` `Name` \u2014 sentence"
                  % (label, lineno, line.strip()))
            bad += 1
            continue
        _, path, name, _ = m.groups()
        if not walks:
            print("%s:%d: %s %s: hop before the first walk (### heading)" % (label, lineno, path, name))
            bad += 1
        else:
            walks[-1][2] += 1
        why = check_hop(root, path, name, cache)
        if why is not None:
            print("%s:%d: %s %s: %s" % (label, lineno, path, name, why))
            bad += 1

    if len(walks) < MIN_WALKS:
        print("%s:%d: %d walk(s) (### headings) in the section; at least %d wanted"
              % (label, first, len(walks), MIN_WALKS))
        bad += 1
    for heading, lineno, hops in walks:
        if hops < MIN_HOPS:
            print("%s:%d: walk '%s' has %d hop(s); at least %d wanted" % (label, lineno, heading, hops, MIN_HOPS))
            bad += 1

    if bad:
        return 1
    print("%s: %d walks, %d hops, all found" % (label, len(walks), sum(w[2] for w in walks)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
