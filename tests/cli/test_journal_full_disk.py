#!/usr/bin/env python3
"""`cairn append` and `cairn ingest` on a disk that fills up (docs/journal.md, "When a durable
write fails"; docs/decisions/0055-failed-durable-write-cut-back.md).

Usage: test_journal_full_disk.py /path/to/cairn
Checks, on a 1 MiB tmpfs (mounting it needs root: CI runs as root): the append that fills the
disk exits 1 (`io`), says on stderr and in its one JSON object up to which sequence the records
are durable and that none is unknown; the journal then holds exactly those records (the part
of the failed batch the disk took was cut back off the file), also after space is freed, and
the next append continues right after them. The same for `ingest` on a journal-only directory.
And the marker of an unknown range (docs/decisions/0060-unknown-range-marked-beside-journal.md: what a failed write leaves when its cut fails too):
it can be made on the full disk (an empty file), the reading commands present the journal
through its durable end only and `status` names it, and the next `append` cuts the range off
and continues right after the durable records.
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


def empty_file_on_full_disk(full):
    """What a failed cut's marker needs (docs/decisions/0060-unknown-range-marked-beside-journal.md): an empty file is made where no block is left."""
    probe = os.path.join(full, "journal.unknown-probe")
    error = None
    try:
        open(probe, "x").close()
    except OSError as e:
        error = e
    check(error is None and os.path.exists(probe), f"an empty file on the full disk: {error}")
    if os.path.exists(probe):
        os.remove(probe)


def append_fills_the_disk(full):
    db = os.path.join(full, "db")
    r = run("init", db, "--db-id", "full")
    check(r.returncode == 0, f"init on tmpfs: {r.stderr!r}")
    r = run("append", db, "--json", stdin=lines(1, 2000))
    check(r.returncode == 0 and js(r).get("sequence") == 2000, f"append that fits: {r.stdout!r}")
    r = run("append", db, "--json", stdin=lines(2001, 20000))
    durable = failed_write("append", r, 2000)
    holds_exactly("append, disk full", db, durable)
    empty_file_on_full_disk(full)
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


def marked_unknown_range(tmp):
    """Records 6..8 lie in the file as a failed write's pages in the page cache would after its
    cut failed, marked unknown beside the journal: no reader presents them, `status` names the
    marker, and `append` cuts them off (none persists) and continues at 6."""
    db = os.path.join(tmp, "marked")
    r = run("init", db, "--db-id", "marked")
    check(r.returncode == 0, f"init: {r.stderr!r}")
    run("append", db, stdin=lines(1, 5))
    durable_length = journal_json(db).get("end_length")
    run("append", db, stdin=lines(6, 3))
    size = os.path.getsize(os.path.join(db, "journal"))
    marker = os.path.join(db, f"journal.unknown-5-{durable_length}-8")
    open(marker, "x").close()
    j = journal_json(db)
    check(j.get("end_sequence") == 5 and j.get("end_length") == durable_length,
          f"journal presents the durable records only: {j}")
    r = run("status", db, "--offline", "--json")
    st = js(r)
    check(r.returncode == 0 and st.get("journal_end_sequence") == 5, f"status: {st} {r.stderr!r}")
    check(st.get("unknown_range") == {"first": 6, "last": 8, "durable_sequence": 5,
                                      "durable_length": durable_length,
                                      "marker": os.path.basename(marker)},
          f"status names the marker: {st}")
    check(os.path.getsize(os.path.join(db, "journal")) == size and os.path.exists(marker),
          "the readers changed nothing")
    r = run("append", db, "--json", stdin=b"after the unknown range\n")
    check(r.returncode == 0 and js(r).get("sequence") == 6,
          f"append cuts the range off and continues at 6: {r.stdout!r} {r.stderr!r}")
    check(b"records 6 to 8, reported unknown" in r.stderr, f"append says what it cut: {r.stderr!r}")
    check(not os.path.exists(marker), "the marker is removed once the range is cut")
    check(run("status", db, "--offline", "--json").returncode == 0, "status after the cut")
    check(js(run("status", db, "--offline", "--json")).get("unknown_range", 0) is None,
          "no unknown range after the cut")


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
        marked_unknown_range(tmp)
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
