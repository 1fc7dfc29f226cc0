#!/usr/bin/env python3
"""Lists the functions of C++ sources that are longer than a bound, longest first.

Usage: python3 scripts/function-lengths.py [--over N] [DIR ...]   (default: 70, engine/)

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


def main(argv):
    over = 70
    dirs = []
    args = iter(argv[1:])
    for a in args:
        if a == "--over":
            over = int(next(args))
        else:
            dirs.append(a)
    dirs = dirs or ["engine"]
    found = []
    for d in dirs:
        for root, _, names in os.walk(d):
            for n in names:
                if n.endswith(".cpp"):
                    p = os.path.join(root, n)
                    found += [(length, p, line, name) for name, line, length in functions(p)]
    found.sort(reverse=True)
    for length, p, line, name in found:
        if length > over:
            print(f"{length:4d}  {p}:{line}  {name}")
    print(f"{sum(1 for f in found if f[0] > over)} functions over {over} lines "
          f"(of {len(found)} in {', '.join(dirs)})")


main(sys.argv)
