#!/usr/bin/env python3
"""cairn init / append / journal as a user runs them.

Usage: test_journal_cli.py /path/to/cairn
Checks: the prefix hash printed by `cairn journal --json` equals sha256sum of the journal
file; --at gives earlier prefixes; `cairn append` on a directory another process owns exits
non-zero with a clear message and writes nothing; bad input is refused.
"""
import fcntl
import hashlib
import json
import os
import subprocess
import sys
import tempfile

from cli_support import journal_end

cairn = sys.argv[1]
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)


def run(*args, stdin=b""):
    return subprocess.run([cairn, *args], input=stdin, capture_output=True, timeout=120)


with tempfile.TemporaryDirectory() as tmp:
    db = os.path.join(tmp, "db")
    r = run("init", db, "--db-id", "cli-test", "--json")
    check(r.returncode == 0, f"init: {r.stderr!r}")
    init = json.loads(r.stdout)
    header = open(os.path.join(db, "journal"), "rb").read()
    check(init["lineage"] == hashlib.sha256(header).hexdigest(), "lineage is SHA-256 of the header")

    lines = b"".join(b"record %d %s\n" % (i, b"x" * (i % 50)) for i in range(1, 5001))
    r = run("append", db, "--json", stdin=lines)
    check(r.returncode == 0, f"append: {r.stderr!r}")
    check(json.loads(r.stdout) == {"ok": True, "sequence": 5000}, f"append output {r.stdout!r}")

    r = run("journal", db, "--json")
    check(r.returncode == 0, f"journal: {r.stderr!r}")
    j = json.loads(r.stdout)
    data = open(os.path.join(db, "journal"), "rb").read()
    end = journal_end(data)
    check(data[end:].count(0) == len(data) - end, "only zeros (the writer's room) after the frames")
    frames = data[:end]
    check(j["prefix_sha256"] == hashlib.sha256(frames).hexdigest(), "prefix hash == sha256sum")
    check(j["end_sequence"] == 5000 and j["prefix_length"] == len(frames), f"end {j}")
    check(j["lineage"] == init["lineage"], "lineage unchanged")

    # --at: the prefix after record 1 is the header plus one frame of 16 + len(payload) bytes.
    r = run("journal", db, "--json", "--at", "1")
    at1 = json.loads(r.stdout)
    first = len(header) + 16 + len(b"record 1 " + b"x")
    check(at1["prefix_length"] == first, f"--at 1 length {at1}")
    check(at1["prefix_sha256"] == hashlib.sha256(data[:first]).hexdigest(), "--at 1 hash")
    r = run("journal", db, "--json", "--at", "5001")
    check(r.returncode != 0 and b"beyond" in r.stderr, f"--at beyond the end: {r.stderr!r}")

    # Another owner: hold the directory lock as a second process would.
    with open(os.path.join(db, "LOCK"), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        r = run("append", db, stdin=b"should not land\n")
        check(r.returncode == 3, f"append on an owned directory exits 3, got {r.returncode}")
        check(b"owned by another process" in r.stderr, f"clear message: {r.stderr!r}")
        check(len(r.stderr.strip().splitlines()) == 1, "one line on stderr")
    check(open(os.path.join(db, "journal"), "rb").read() == data, "nothing written meanwhile")

    r = run("append", db, stdin=b"after\n")
    check(r.returncode == 0 and r.stdout.strip() == b"5001", f"append after release {r.stdout!r}")

    r = run("init", db, "--db-id", "again")
    check(r.returncode != 0 and b"already exists" in r.stderr, f"second init refused {r.stderr!r}")
    r = run("append", os.path.join(tmp, "nowhere"), stdin=b"x\n")
    check(r.returncode != 0, "append to a missing directory fails")
    r = run("init", os.path.join(tmp, "bad"), "--db-id", "")
    check(r.returncode == 2, f"empty db id is a usage error ({r.returncode})")
    for cmd in (["init"], ["append"], ["journal"], ["head", "decode"], ["store", "ls"],
                ["verify"], ["checkpoint-objects"]):
        r = run(*cmd, "--help")
        check(r.returncode == 0 and b"Usage" in r.stdout, f"{cmd} --help")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
