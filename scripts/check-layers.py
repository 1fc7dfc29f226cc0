#!/usr/bin/env python3
"""Checks that every include and every link points down the layering of docs/design.md §1.2.

Usage: python3 scripts/check-layers.py [--verbose]

The table "What may depend on what" in docs/design.md is the data: each row names a layer (a
folder, or a file stem such as `engine/database`) in its first cell and, in its second, the
layers it may use, each in backticks. What a layer may use is that list and, transitively,
what those use. A source file belongs to the longest layer that is a prefix of its path.

Two checks, each failing with one line per violation:
- includes: every `#include "x/y.hpp"` of a file under a layer names a file of the same layer
  or of one it may use;
- links: every `target_link_libraries` of a CMake target built from a layer's files names only
  targets built from the same layer or from one it may use.
Tests, benchmarks, fuzz targets and examples (tests/, perf/, docs/) sit above everything and
are not checked.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE_TITLE = "### 1.2 What may depend on what"
SOURCE_DIRS = ["base", "io", "net", "engine", "catalog", "cli", "include"]
UNCHECKED = ("tests/", "perf/", "docs/", "build")


def read_table():
    """Returns ({layer: set(direct uses)}, {path prefix: layer}) from the design document's
    table. A first cell naming several paths makes them one layer, named by the first."""
    text = open(os.path.join(ROOT, "docs/design.md"), encoding="utf-8").read()
    start = text.index(TABLE_TITLE)
    uses, prefixes = {}, {}
    for line in text[start:].split("\n")[1:]:
        if line.startswith("#"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].startswith("`"):
            continue
        paths = re.findall(r"`([^`]+)`", cells[0])
        uses[paths[0]] = set(re.findall(r"`([^`]+)`", cells[1]))
        for path in paths:
            prefixes[path] = paths[0]
    if not uses:
        sys.exit("check-layers.py: no table under '%s' in docs/design.md" % TABLE_TITLE)
    for layer, used in uses.items():
        unknown = used - set(uses)
        if unknown:
            sys.exit("check-layers.py: layer %s uses unknown layers %s" % (layer, sorted(unknown)))
    return uses, prefixes


def closure(uses):
    allowed = {}
    for layer in uses:
        seen, todo = set(), list(uses[layer])
        while todo:
            u = todo.pop()
            if u not in seen:
                seen.add(u)
                todo.extend(uses[u])
        if layer in seen:
            sys.exit("check-layers.py: the table has a cycle through %s" % layer)
        allowed[layer] = seen
    return allowed


def layer_of(path, prefixes):
    """The layer of the longest prefix of path (a folder, or a file's path without suffix)."""
    best = None
    stem = os.path.splitext(path)[0]
    for prefix in prefixes:
        if stem == prefix or path.startswith(prefix + "/"):
            if best is None or len(prefix) > len(best):
                best = prefix
    return None if best is None else prefixes[best]


def sources():
    for top in SOURCE_DIRS:
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if f.endswith((".cpp", ".hpp", ".ipp")):
                    yield os.path.relpath(os.path.join(dirpath, f), ROOT)


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def check_includes(layers, allowed, problems):
    for path in sources():
        own = layer_of(path, layers)
        if own is None:
            problems.append("%s: in no layer of docs/design.md §1.2" % path)
            continue
        text = open(os.path.join(ROOT, path), encoding="utf-8", errors="replace").read()
        for inc in INCLUDE.findall(text):
            if inc.startswith("cairn/"):  # generated (version.hpp) or the public face
                continue
            target = layer_of(inc, layers)
            if target is None:
                if not os.path.exists(os.path.join(os.path.dirname(os.path.join(ROOT, path)), inc)):
                    problems.append("%s: includes %s, which is in no layer" % (path, inc))
            elif target != own and target not in allowed[own]:
                problems.append("%s (%s) includes %s (%s)" % (path, own, inc, target))


def cmake_targets():
    """{target: (folder of its CMakeLists, [source paths]), links: {target: [targets]}}"""
    targets, links = {}, {}
    for dirpath, _, files in os.walk(ROOT):
        rel = os.path.relpath(dirpath, ROOT)
        if rel.startswith(UNCHECKED) or "/." in "/" + rel:
            continue
        if "CMakeLists.txt" not in files:
            continue
        text = open(os.path.join(dirpath, "CMakeLists.txt"), encoding="utf-8").read()
        text = re.sub(r"#[^\n]*", "", text)
        for m in re.finditer(r"add_(?:library|executable)\(\s*(\w+)([^)]*)\)", text):
            words = m.group(2).split()
            srcs = [w for w in words if w.endswith(".cpp")]
            base = "" if rel == "." else rel + "/"
            targets[m.group(1)] = [os.path.normpath(base + s) for s in srcs]
        for m in re.finditer(r"target_link_libraries\(\s*(\w+)([^)]*)\)", text):
            links.setdefault(m.group(1), []).extend(
                w for w in m.group(2).split() if w not in ("PUBLIC", "PRIVATE", "INTERFACE"))
    return targets, links


def check_links(layers, allowed, problems):
    targets, links = cmake_targets()
    layer_of_target = {}
    for t, srcs in targets.items():
        owned = {layer_of(s, layers) for s in srcs}
        owned.discard(None)
        # A target built from several layers is judged by its highest: the one that may use
        # the others.
        top = [l for l in owned if all(o == l or o in allowed[l] for o in owned)]
        if len(owned) > 1 and not top:
            problems.append("target %s mixes layers that do not use each other: %s" %
                            (t, sorted(owned)))
        if top:
            layer_of_target[t] = top[0]
    for t, deps in links.items():
        own = layer_of_target.get(t)
        if own is None:
            continue
        for d in deps:
            other = layer_of_target.get(d)
            if other is not None and other != own and other not in allowed[own]:
                problems.append("target %s (%s) links %s (%s)" % (t, own, d, other))


def main(argv):
    uses, layers = read_table()
    allowed = closure(uses)
    problems = []
    check_includes(layers, allowed, problems)
    check_links(layers, allowed, problems)
    for p in problems:
        print(p)
    if problems:
        print("check-layers.py: %d dependencies against docs/design.md §1.2" % len(problems))
        return 1
    if "--verbose" in argv:
        print("check-layers.py: %d layers; every include and link points down" % len(layers))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
