#!/usr/bin/env python3
"""`cairn append` and `cairn ingest` on a disk that fills up (docs/journal.md, "When a durable
write fails"; docs/decisions.md D55).

Usage: test_journal_full_disk.py /path/to/cairn
Checks, on a 1 MiB tmpfs (mounting it needs root: CI runs as root): the append that fills the
disk exits 1 (`io`), says on stderr and in its one JSON object up to which sequence the records
are durable and that none is unknown; the journal then holds exactly those records (the part
of the failed batch the disk took was cut back off the file), also after space is freed, and
the next append continues right after them. The same for `ingest` on a journal-only directory.
"""
import os
import subprocess
import sys
import tempfile

from cli_support import check, finish, js, run

MIB = 1 << 20


def lines(first, count, width=100):
    return b"".join(b"r%07d %s\n" % (i, b"x" * width) for i in range(first, first + count))


def journal_json(db):
    r = run("journal", db, "--json")
    check(r.returncode == 0, f"journal --json: {r.stderr!r}")
    return js(r)


def failed_write(what, r, before):
    """The command that filled the disk: exit 1, one JSON object saying how far it is durable."""
    out = js(r)
    check(r.returncode == 1, f"{what}: exit 1 on a full disk, got {r.returncode}: {r.stderr!r}")
    check(len(r.stdout.strip().splitlines()) == 1, f"{what}: one JSON object: {r.stdout!r}")
    check(out.get("ok") is False and out.get("error") == "io" and out.get("exit") == 1,
          f"{what}: error io: {out}")
    check("unknown" in out and out["unknown"] is None, f"{what}: no record unknown: {out}")
    durable = out.get("durable_sequence", -1)
    check(durable >= before, f"{what}: durable through at least {before}: {out}")
    check(b"records up to sequence %d are durable" % durable in r.stderr,
          f"{what}: stderr says how far: {r.stderr!r}")
    check(b"may be durable or not" not in r.stderr, f"{what}: nothing unknown: {r.stderr!r}")
    return durable


def holds_exactly(what, db, durable):
    """The journal holds the reported records and nothing after them (no torn tail either)."""
    j = journal_json(db)
    check(j.get("end_sequence") == durable,
          f"{what}: the journal holds exactly the {durable} reported records: {j}")
    check(j.get("torn_tail") is None, f"{what}: nothing torn after them: {j}")
    size = os.path.getsize(os.path.join(db, "journal"))
    check(size == j.get("end_length"), f"{what}: the file ends at the last frame: {size}, {j}")


def append_fills_the_disk(full):
    db = os.path.join(full, "db")
    r = run("init", db, "--db-id", "full")
    check(r.returncode == 0, f"init on tmpfs: {r.stderr!r}")
    r = run("append", db, "--json", stdin=lines(1, 2000))
    check(r.returncode == 0 and js(r).get("sequence") == 2000, f"append that fits: {r.stdout!r}")
    r = run("append", db, "--json", stdin=lines(2001, 20000))
    durable = failed_write("append", r, 2000)
    holds_exactly("append, disk full", db, durable)
    # Space freed: still exactly those, and the next record comes right after them.
    subprocess.run(["mount", "-o", "remount,size=8m", full], check=True)
    holds_exactly("append, space freed", db, durable)
    r = run("append", db, "--json", stdin=b"after the full disk\n")
    check(r.returncode == 0 and js(r).get("sequence") == durable + 1,
          f"append after space was freed continues at {durable + 1}: {r.stdout!r} {r.stderr!r}")
    return db


def ingest_fills_the_disk(full):
    db = os.path.join(full, "ingest")
    r = run("ingest", db, "--db-id", "full-ingest", "--json", stdin=lines(1, 1000))
    check(r.returncode == 0 and js(r).get("last_sequence") == 1000, f"ingest: {r.stdout!r}")
    r = run("ingest", db, "--json", stdin=lines(1001, 20000))
    durable = failed_write("ingest", r, 1000)
    holds_exactly("ingest, disk full", db, durable)


def main():
    tmp = tempfile.mkdtemp(prefix="cairn-full-")
    full = os.path.join(tmp, "full")
    os.makedirs(full)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", full],
                             capture_output=True)
    if mounted.returncode != 0:
        # Never a silent pass: the test runs as root, as CI does.
        check(False, f"mount a 1 MiB tmpfs (needs root): {mounted.stderr!r}")
        finish()
    try:
        db = append_fills_the_disk(full)
        subprocess.run(["rm", "-rf", db], check=True)
        subprocess.run(["mount", "-o", "remount,size=1m", full], check=True)
        ingest_fills_the_disk(full)
    finally:
        subprocess.run(["umount", full], capture_output=True)
        subprocess.run(["rm", "-rf", tmp], capture_output=True)
    finish()


if __name__ == "__main__":
    main()
