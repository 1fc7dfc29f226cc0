#!/usr/bin/env python3
"""Lists the functions of C++ sources that are longer than a bound, longest first.

Usage: python3 scripts/function-lengths.py [--over N] [DIR ...]   (default: 70, engine/)
       python3 scripts/function-lengths.py --ratchet FILE [--write]

With --ratchet, the bound is 70 and the directories are the sources' (base io net engine
catalog cli); FILE lists, one per line as `LENGTH PATH NAME`, the functions allowed to be longer
(the option registrations, data tables and what is still to be split). The check fails on a
function over the bound that FILE does not list, on a listed one that grew, and on a listed one
that shrank or is gone (the list only shrinks: write it again with --write). --write writes
FILE from the tree as it is.

A function is a definition whose body opens at the end of its signature and closes with a
brace at the signature's indentation (the layout clang-format gives this project). The length
counts the lines from the signature's first line to the closing brace. Lambdas and classes
are not functions here; a function's lambdas count as its own lines.
"""
import os
import re
import sys

SIGNATURE_END = re.compile(r"\)\s*(const\s*)?(noexcept\s*)?(override\s*)?(->\s*[^{]+)?\{\s*$")
NOT_A_FUNCTION = re.compile(r"^\s*(if|for|while|switch|catch|else|do|return|case)\b|[=,]\s*\[|\[[&=\w, *]*\]\s*\(")


def functions(path):
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if SIGNATURE_END.search(line) and not NOT_A_FUNCTION.search(line) and "(" in line or (
                SIGNATURE_END.search(line) and not NOT_A_FUNCTION.search(line)):
            # The signature starts at the first line above at the same indentation that does not
            # continue an earlier one.
            indent = len(line) - len(line.lstrip())
            start = i
            while start > 0 and "(" not in lines[start] and lines[start - 1].strip():
                start -= 1
            while start > 0 and lines[start - 1].strip() and not lines[start - 1].rstrip().endswith(
                    (";", "{", "}", ":")) and not lines[start - 1].lstrip().startswith(("//", "#")):
                start -= 1
            head_indent = len(lines[start]) - len(lines[start].lstrip())
            if head_indent > 2 or NOT_A_FUNCTION.search(lines[start]):
                i += 1
                continue
            closing = " " * head_indent + "}"
            j = i + 1
            while j < len(lines) and not (lines[j].startswith(closing) and
                                          len(lines[j]) - len(lines[j].lstrip()) == head_indent):
                j += 1
            name = re.search(r"([\w:~]+)\s*\(", " ".join(lines[start:i + 1]))
            yield (name.group(1) if name else "?"), start + 1, j - start + 1
            i = j
        i += 1


RATCHET_BOUND = 70
RATCHET_DIRS = ["base", "io", "net", "engine", "catalog", "cli"]


def scan(dirs):
    found = []
    for d in dirs:
        for root, _, names in os.walk(d):
            for n in names:
                if n.endswith(".cpp"):
                    p = os.path.join(root, n)
                    found += [(length, p, line, name) for name, line, length in functions(p)]
    found.sort(reverse=True)
    return found


def ratchet(path, write):
    """Compares the functions over the bound with the list in path; returns the exit code."""
    over = [(length, p, name) for length, p, _, name in scan(RATCHET_DIRS) if length > RATCHET_BOUND]
    if write:
        with open(path, "w", encoding="utf-8") as f:
            f.write("# Functions allowed over %d lines (scripts/function-lengths.py --ratchet):\n"
                    "# LENGTH PATH NAME. The list only shrinks.\n" % RATCHET_BOUND)
            for length, p, name in sorted(over, key=lambda x: (x[1], x[2])):
                f.write("%d %s %s\n" % (length, p, name))
        print("function-lengths.py: wrote %d functions to %s" % (len(over), path))
        return 0
    allowed = {}
    for line in open(path, encoding="utf-8"):
        if line.strip() and not line.startswith("#"):
            length, p, name = line.split()
            allowed[(p, name)] = int(length)
    problems = []
    seen = set()
    for length, p, name in over:
        key = (p, name)
        if key in seen:
            continue
        seen.add(key)
        if key not in allowed:
            problems.append("%s: %s has %d lines (bound %d): split it" % (p, name, length, RATCHET_BOUND))
        elif length > allowed[key]:
            problems.append("%s: %s grew from %d to %d lines" % (p, name, allowed[key], length))
        elif length < allowed[key]:
            problems.append("%s: %s shrank to %d lines: lower its entry in %s" % (p, name, length, path))
    for key in allowed:
        if key not in seen:
            problems.append("%s: %s is no longer over %d lines: remove it from %s" %
                            (key[0], key[1], RATCHET_BOUND, path))
    for p in problems:
        print(p)
    if problems:
        print("function-lengths.py: %d against the ratchet %s" % (len(problems), path))
        return 1
    print("function-lengths.py: %d functions over %d lines, all listed" % (len(seen), RATCHET_BOUND))
    return 0


def main(argv):
    over = 70
    dirs = []
    args = iter(argv[1:])
    for a in args:
        if a == "--over":
            over = int(next(args))
        elif a == "--ratchet":
            return ratchet(next(args), "--write" in argv)
        elif a == "--write":
            pass
        else:
            dirs.append(a)
    dirs = dirs or ["engine"]
    found = scan(dirs)
    for length, p, line, name in found:
        if length > over:
            print(f"{length:4d}  {p}:{line}  {name}")
    print(f"{sum(1 for f in found if f[0] > over)} functions over {over} lines "
          f"(of {len(found)} in {', '.join(dirs)})")


sys.exit(main(sys.argv))
