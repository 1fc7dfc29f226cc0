#!/usr/bin/env python3
"""`cairn head decode` against the independent vectors (tests/vectors/make_vectors.py).

Usage: python3 test_head_decode.py /path/to/cairn

For every head image the vector script emits, runs `cairn head decode --json FILE` and
`cairn head decode --json -` (image on stdin):
  valid images:   exit 0 and stdout is exactly one JSON object: "ok": true and otherwise
                  equal to NAME.json (same key set, same values; integers compared exactly);
  invalid images: non-zero exit, exactly one JSON object on stdout ("ok": false, "error" the
                  expected error code, NAME.err), exactly one line on stderr that names it.
Also checks that `cairn head decode --help` exits 0. Standard library only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_VECTORS = os.path.join(HERE, os.pardir, "vectors", "make_vectors.py")
TIMEOUT = 60


class Tally:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def check(self, ok: bool, what: str, detail: str = "") -> None:
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL {what}" + (f": {detail}" if detail else ""))


def run(cmd: list[str], stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, input=stdin if stdin is not None else b"",
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT)


def exactly_one_object(stdout: bytes):
    """The parsed object, or an error string. Rejects trailing data and non-objects."""
    try:
        text = stdout.decode("utf-8")
    except UnicodeDecodeError as e:
        return None, f"stdout is not UTF-8: {e}"
    try:
        value, end = json.JSONDecoder().raw_decode(text.lstrip())
    except ValueError as e:
        return None, f"stdout is not JSON: {e}: {text[:200]!r}"
    rest = text.lstrip()[end:]
    if rest.strip():
        return None, f"more than one JSON value on stdout: {rest[:100]!r}"
    if not isinstance(value, dict):
        return None, f"stdout is not a JSON object: {text[:200]!r}"
    return value, ""


def compare(got: dict, want: dict) -> str:
    if set(got) != set(want):
        return (f"keys differ: missing {sorted(set(want) - set(got))}, "
                f"extra {sorted(set(got) - set(want))}")
    for k in sorted(want):
        g, w = got[k], want[k]
        # Integers must be JSON integers (not floats, not strings, not booleans).
        if isinstance(w, int) and (not isinstance(g, int) or isinstance(g, bool)):
            return f"{k}: expected the integer {w}, got {g!r}"
        if type(g) is not type(w) or g != w:
            return f"{k}: expected {w!r}, got {g!r}"
    return ""


def check_valid(t: Tally, cairn: str, name: str, path: str, want: dict) -> None:
    image = open(path, "rb").read()
    for how, cmd, stdin in (("file", [cairn, "head", "decode", "--json", path], None),
                            ("stdin", [cairn, "head", "decode", "--json", "-"], image)):
        what = f"{name} ({how})"
        try:
            r = run(cmd, stdin)
        except subprocess.TimeoutExpired:
            t.check(False, what, "timed out")
            continue
        if r.returncode != 0:
            t.check(False, what, f"exit {r.returncode}, stderr: "
                    f"{r.stderr.decode('utf-8', 'replace').strip()[:300]}")
            continue
        got, problem = exactly_one_object(r.stdout)
        if got is None:
            t.check(False, what, problem)
            continue
        if got.pop("ok", None) is not True:
            t.check(False, what, "no \"ok\": true")
            continue
        diff = compare(got, want)
        t.check(diff == "", what, diff)


def check_invalid(t: Tally, cairn: str, name: str, path: str, code: str) -> None:
    image = open(path, "rb").read()
    for how, cmd, stdin in (("file", [cairn, "head", "decode", "--json", path], None),
                            ("stdin", [cairn, "head", "decode", "--json", "-"], image)):
        what = f"{name} ({how}, expecting {code})"
        try:
            r = run(cmd, stdin)
        except subprocess.TimeoutExpired:
            t.check(False, what, "timed out")
            continue
        stderr = r.stderr.decode("utf-8", "replace")
        lines = stderr.splitlines()
        problems = []
        if r.returncode == 0:
            problems.append("exit 0")
        if r.returncode < 0:
            problems.append(f"killed by signal {-r.returncode}")
        got, problem = exactly_one_object(r.stdout)
        if got is None:
            problems.append(f"stdout: {problem}")
        elif got.get("ok") is not False or got.get("error") != code:
            problems.append(f"stdout is not the failure object for {code}: {r.stdout[:200]!r}")
        if len(lines) != 1:
            problems.append(f"{len(lines)} lines on stderr: {stderr[:300]!r}")
        elif code not in lines[0]:
            problems.append(f"stderr does not name {code}: {lines[0][:300]!r}")
        t.check(not problems, what, "; ".join(problems))


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} /path/to/cairn", file=sys.stderr)
        return 2
    cairn = os.path.abspath(argv[1])
    t = Tally()

    r = run([cairn, "head", "decode", "--help"])
    t.check(r.returncode == 0, "head decode --help", f"exit {r.returncode}")
    t.check(bool(r.stdout.strip()), "head decode --help prints usage", "stdout empty")

    with tempfile.TemporaryDirectory(prefix="cairn-head-vectors-") as tmp:
        g = subprocess.run([sys.executable, MAKE_VECTORS, "--emit-dir", tmp],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
        if g.returncode != 0:
            print("make_vectors.py --emit-dir failed:\n" + g.stderr.decode("utf-8", "replace"))
            print(f"{t.passed} passed, {t.failed + 1} failed")
            return 1
        names = sorted(f[:-4] for f in os.listdir(tmp) if f.endswith(".bin"))
        valid = invalid = 0
        for name in names:
            path = os.path.join(tmp, name + ".bin")
            json_path = os.path.join(tmp, name + ".json")
            err_path = os.path.join(tmp, name + ".err")
            if os.path.exists(json_path) == os.path.exists(err_path):
                t.check(False, name, "needs exactly one of NAME.json and NAME.err")
                continue
            if os.path.exists(json_path):
                with open(json_path, encoding="utf-8") as fh:
                    want = json.load(fh)
                check_valid(t, cairn, name, path, want)
                valid += 1
            else:
                with open(err_path, encoding="utf-8") as fh:
                    code = fh.read().strip()
                check_invalid(t, cairn, name, path, code)
                invalid += 1
        t.check(valid >= 10 and invalid >= 10, "vector count",
                f"{valid} valid and {invalid} invalid images")

    print(f"{t.passed} passed, {t.failed} failed")
    return 0 if t.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
