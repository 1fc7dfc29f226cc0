#!/usr/bin/env python3
"""`cairn vacuum --apply` on a namespace whose current head does not verify: it deletes nothing
(the older revisions are the way back with `repair-head --to`), and its failure's one JSON
object says what it deleted. On the directory store and on RGW.

Usage: test_vacuum_cli.py /path/to/cairn
RGW needs the S3_* variables of ../shared/s3/start-rgw.sh (required in CI).
"""
import os
import tempfile
import uuid

from cli_support import check, finish, js, records, run, test_stores


def nskey(ns):
    return "ns-" + ns.replace("-", "")


def listed(store, ns):
    return {o["key"] for o in js(run("store", "ls", store, nskey(ns) + "-", "--json"))
            .get("objects", [])}


def vacuum(store, ns, *extra):
    # A grace of 0 s is for tests only: no publisher runs beside this vacuum.
    r = run("vacuum", "--store", store, "--namespace", ns, "--json", *extra,
            env={"CAIRN_TEST_UNSAFE_GRACE": "1"})
    return r, js(r)


def broken_current_head(tmp, store, label):
    ns = str(uuid.uuid4())
    db = os.path.join(tmp, f"db-{label}")
    r = run("ingest", db, "--store", store, "--namespace", ns, "--segment-mib", "1", "--json",
            stdin=records("base", 3000))
    check(r.returncode == 0, f"{label}: ingest: {r.stderr!r}")
    before = set()
    for i in range(2):
        before = listed(store, ns)
        run("append", db, stdin=records(f"round{i}", 3000))
        r = run("checkpoint", db, "--segment-mib", "1", "--json")
        check(r.returncode == 0, f"{label}: checkpoint {i}: {r.stderr!r}")
    entries = js(run("log", "--store", store, "--namespace", ns, "--json")).get("entries", [])
    check(len(entries) == 3, f"{label}: three revisions: {entries}")
    # The segment only the current head reaches is lost.
    newest = sorted(k for k in listed(store, ns) - before if "-segment-" in k)
    check(len(newest) >= 1, f"{label}: the last checkpoint wrote a segment: {newest}")
    r = run("store", "rm", store, newest[0])
    check(r.returncode == 0, f"{label}: removed {newest[0]}: {r.stderr!r}")
    kept = listed(store, ns)

    r, out = vacuum(store, ns, "--keep-revisions", "1", "--grace-seconds", "0", "--apply")
    check(r.returncode == 1 and out.get("ok") is False and out.get("error") == "missing",
          f"{label}: vacuum fails on a current head that does not verify: {r.stdout!r}")
    check("deleted nothing" in out.get("reason", ""), f"{label}: it says so: {out}")
    check(out.get("deleted", {}).get("total", {}).get("objects") == 0 and
          out.get("deleted_objects") == [],
          f"{label}: the failure's JSON says what was deleted (nothing): {r.stdout!r}")
    check(r.stdout.count(b"\n") == 1, f"{label}: exactly one JSON object: {r.stdout!r}")
    check(r.stderr.startswith(b"cairn: missing: "), f"{label}: the error line: {r.stderr!r}")
    check(listed(store, ns) == kept, f"{label}: every object is still there")

    # The older revision is the way back, and after the repair vacuum runs.
    r = run("repair-head", "--store", store, "--namespace", ns, "--to", entries[1]["id"],
            "--force", "--json")
    check(r.returncode == 0, f"{label}: repair-head --to the older revision: {r.stdout!r}")
    r, out = vacuum(store, ns, "--keep-revisions", "1", "--grace-seconds", "0", "--apply")
    check(r.returncode == 0 and out.get("verified") is True,
          f"{label}: vacuum after the repair: {r.stdout!r} {r.stderr!r}")


with tempfile.TemporaryDirectory() as tmp:
    for label, store in test_stores(tmp):
        broken_current_head(tmp, store, label)
finish()
