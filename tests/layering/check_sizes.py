#!/usr/bin/env python3
"""Checks that no source file holds too much (issue 48's house rules, docs/STYLE.md):

  - a non-test source file has at most 1,000 lines;
  - a function has at most 150 lines, but for the tables of settings and commands named in
    TABLES below (a flag's or a command's row each, read as one list).

The files are the .h and .cc files of vocab/, common/, proto/, storage/, transport/, client/ and
src/, but for tests (*_test.cc, and the suites under tests/).

A function is found as a C++ reader would: comments, strings and raw strings are blanked, then a
"{" at namespace or class scope whose text since the last ";", "{" or "}" (preprocessor lines
left out) holds a "(" (or ends a constructor's initialiser list) opens one, and its matching "}" ends it; braces inside it (blocks,
lambdas, initialiser lists) belong to it. A function is counted from its "{" to its "}".

Usage: check_sizes.py REPO_ROOT. Prints each fault as "path:line: what" and exits 1 if there is
any; else prints the largest file and function and exits 0. Standard library only.
"""

import os
import re
import sys

MAX_FILE_LINES = 1000
MAX_FUNCTION_LINES = 150
DIRS = ["vocab", "common", "proto", "storage", "transport", "client", "src"]
# (path, name): a table read as one list, its rows a setting's or a command's each.
TABLES = {
    ("src/base/config.cc", "Settings"),
    ("src/tools/shell/commands.cc", "Specs"),
}
SCOPE = re.compile(r"^(?:template\s*<.*>\s*)?(?:class|struct|union|enum(?:\s+class)?)\b|^namespace\b|^extern\s")


def blank(src):
    """`src` with comments, string and character literals blanked (newlines kept)."""
    out, i, n = [], 0, len(src)
    while i < n:
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
            continue
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
            continue
        m = re.match(r'R"([^(\s]*)\(', src[i:i + 20])
        if m and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            end = ")" + m.group(1) + '"'
            j = src.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
            continue
        c = src[i]
        if c == '"' or (c == "'" and not (i > 0 and (src[i - 1].isalnum()))):
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * max(0, j - i - 2) + (c if j - i >= 2 else ""))
            i = j
            continue
        if c == "#" and (i == 0 or src[i - 1] == "\n"):  # a preprocessor line (and its continuations)
            j = i
            while True:
                k = src.find("\n", j)
                k = n if k < 0 else k
                if k > 0 and src[k - 1] == "\\":
                    j = k + 1
                    continue
                break
            out.append(re.sub(r"[^\n]", " ", src[i:k]))
            i = k
            continue
        out.append(c)
        i += 1
    return "".join(out)


def functions(text):
    """[(first line, lines, name)] of the functions at namespace or class scope."""
    stack, found, last, line = [], [], 0, 1
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
        if c not in "{};":
            continue
        head = " ".join(text[last:i].split())
        last = i + 1
        if c == ";":
            continue
        if c == "}":
            if stack:
                kind, start, name = stack.pop()
                if kind == "function" and not any(k == "function" for k, _, _ in stack):
                    found.append((start, line - start + 1, name))
            continue
        if any(k in ("function", "block") for k, _, _ in stack):
            stack.append(("block", line, ""))
        elif SCOPE.match(head) and "(" not in head.split(":")[0]:
            stack.append(("scope", line, ""))
        elif "(" in head or head.endswith(")") or head == "":
            m = re.search(r"([~A-Za-z_][A-Za-z0-9_:]*)\s*\(", head)
            stack.append(("function", line, m.group(1).split("::")[-1] if m else "?"))
        else:
            stack.append(("block", line, ""))  # an initialiser: a table of values
    return found


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().split("\n\n")[-1], file=sys.stderr)
        return 2
    root = sys.argv[1]
    faults, biggest_file, biggest_fn = [], (0, ""), (0, "")
    for d in DIRS:
        for dirpath, _, names in os.walk(os.path.join(root, d)):
            for n in sorted(names):
                if not (n.endswith(".h") or n.endswith(".cc")) or n.endswith("_test.cc"):
                    continue
                path = os.path.join(dirpath, n)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as f:
                    src = f.read()
                lines = src.count("\n")
                biggest_file = max(biggest_file, (lines, rel))
                if lines > MAX_FILE_LINES:
                    faults.append(f"{rel}:1: {lines} lines (at most {MAX_FILE_LINES} in a non-test source file)")
                for start, length, name in functions(blank(src)):
                    if (rel, name) in TABLES:
                        continue
                    biggest_fn = max(biggest_fn, (length, f"{rel}:{start} {name}"))
                    if length > MAX_FUNCTION_LINES:
                        faults.append(f"{rel}:{start}: {name} is {length} lines (at most {MAX_FUNCTION_LINES}; a "
                                      "table of settings or commands goes in TABLES)")
    for f in faults:
        print(f)
    if faults:
        return 1
    print(f"sizes: the largest file {biggest_file[1]} ({biggest_file[0]} lines), the longest function "
          f"{biggest_fn[1]} ({biggest_fn[0]} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
