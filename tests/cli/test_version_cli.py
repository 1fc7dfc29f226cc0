#!/usr/bin/env python3
"""`cairn --version` (issue 28): "cairn VERSION (REVISION)", exit 0, where VERSION is the
project's (CMakeLists.txt) and REVISION the git commit the binary was built from (`git describe
--always --dirty`), or "unknown" outside a checkout. `--version` goes before any subcommand.

Usage: test_version_cli.py /path/to/cairn
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_support import check, finish, run  # noqa: E402

SOURCE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def main():
    with open(os.path.join(SOURCE, "CMakeLists.txt")) as fh:
        version = re.search(r"project\(cairn VERSION (\d+\.\d+\.\d+)", fh.read())
    check(version is not None, "CMakeLists.txt names the project's version")
    r = run("--version")
    out = r.stdout.decode().strip()
    m = re.fullmatch(r"cairn (\d+\.\d+\.\d+) \(([^()\s]+)\)", out)
    check(r.returncode == 0 and m is not None, f"--version prints one line: {out!r} {r.stderr!r}")
    if not m or not version:
        finish()
        return
    check(m.group(1) == version.group(1), f"the version is the project's: {m.group(1)}")
    revision = m.group(2)
    head = subprocess.run(["git", "-C", SOURCE, "rev-parse", "HEAD"], capture_output=True,
                          text=True)
    if head.returncode == 0:
        # The commit built from, 12 hex digits (more when ambiguous), "-dirty" with local edits.
        commit = revision.removesuffix("-dirty")
        check(re.fullmatch(r"[0-9a-f]{12,40}", commit) is not None and
              head.stdout.strip().startswith(commit),
              f"the revision is a prefix of HEAD ({head.stdout.strip()}): {revision}")
    else:
        check(revision == "unknown", f"outside a checkout the revision is unknown: {revision}")
    # A subcommand's --version is not the program's: a usage error, exit 2.
    r = run("store", "--version")
    check(r.returncode == 2, f"`cairn store --version` is a usage error: {r.returncode}")
    finish()


if __name__ == "__main__":
    main()
