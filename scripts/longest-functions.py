#!/usr/bin/env python3
"""The longest functions and initialisers in a tree of Swift sources, by physical lines from
the declaration to its closing brace: scripts/longest-functions.py [DIR] [N] (default Sources, 10).
Braces inside string literals and comments are skipped; nested functions count in their
enclosing one as well as on their own."""
import os, re, sys

root = sys.argv[1] if len(sys.argv) > 1 else "Sources"
most = int(sys.argv[2]) if len(sys.argv) > 2 else 10
decl = re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|private|fileprivate|internal|static|class|final|override|mutating|nonisolated|convenience|required|@discardableResult)\s+)*(func\s+[^\s(<]+|init[?!]?\s*[(<])")


def strip(line, state):
    """The line without comments and string contents; state carries /* */ and \"\"\" across lines."""
    out, i = [], 0
    while i < len(line):
        if state["block"]:
            j = line.find("*/", i)
            if j < 0:
                return "".join(out)
            state["block"], i = False, j + 2
        elif state["multi"]:
            j = line.find('"""', i)
            if j < 0:
                return "".join(out)
            state["multi"], i = False, j + 3
        elif line.startswith("//", i):
            break
        elif line.startswith("/*", i):
            state["block"], i = True, i + 2
        elif line.startswith('"""', i):
            state["multi"], i = True, i + 3
        elif line[i] == '"':
            i += 1
            while i < len(line) and line[i] != '"':
                i += 2 if line[i] == "\\" else 1
            i += 1
        else:
            out.append(line[i])
            i += 1
    return "".join(out)


found = []
for d, _, files in os.walk(root):
    for f in files:
        if not f.endswith(".swift"):
            continue
        path = os.path.join(d, f)
        lines = open(path, encoding="utf-8").read().split("\n")
        state = {"block": False, "multi": False}
        code = [strip(l, state) for l in lines]
        for k, l in enumerate(code):
            m = decl.match(l)
            if not m:
                continue
            depth, opened = 0, False
            for e in range(k, len(code)):
                for ch in code[e]:
                    if ch == "{":
                        depth, opened = depth + 1, True
                    elif ch == "}":
                        depth -= 1
                if opened and depth == 0:
                    name = m.group(1).replace("func ", "").rstrip("(<").strip()
                    found.append((e - k + 1, f"{path}:{k + 1}", name))
                    break
                if not opened and code[e].rstrip().endswith(")") is False and e > k + 8:
                    break  # a protocol requirement: no body
for n, where, name in sorted(found, reverse=True)[:most]:
    print(f"{n:6}  {where}  {name}")
