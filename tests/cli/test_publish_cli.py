#!/usr/bin/env python3
"""Publication as a user runs it: ingest, checkpoint, status, log, verify, recover; and the
crash matrix.

Usage: test_publish_cli.py /path/to/cairn
Runs on the directory store and on RGW (S3_* from ../shared/s3/start-rgw.sh; without them
this test fails unless CAIRN_ALLOW_NO_S3=1 outside CI).

Crash matrix: for every fault point of the publisher (docs/protocol.md), `cairn checkpoint`
is SIGKILLed there (CAIRN_TEST_FAULT), then: `cairn status` shows the store selecting exactly
the expected (predecessor) head or the pending candidate; the next `cairn checkpoint`
reconciles and succeeds; no acknowledged record is lost (`cairn verify --deep` compares every
byte with the journal); and `cairn log` shows an unbroken chain with no revision skipped.
"""
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid

from cli_support import (cairn, chain_ok, check, finish, journal_frames, js, records, run,
                         test_stores)

POINTS = [
    "before-upload", "after-upload", "before-upload:2", "after-upload:3",
    "before-intent", "after-intent", "before-put", "after-put", "before-expected",
]


def backend(tmp, store, label):
    db = os.path.join(tmp, f"db-{label}")
    # ingest creates the database, publishes on the way and at the end. Half the input goes
    # in, then the test waits (input still open) until a head is in the store: a checkpoint
    # was published during ingestion, not only at the end.
    ns = str(uuid.uuid4())
    p = subprocess.Popen([cairn, "ingest", db, "--store", store, "--namespace", ns,
                          "--checkpoint-mib", "1", "--segment-mib", "1", "--json"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdin.write(records("ingest", 15000))
    p.stdin.flush()
    deadline = time.monotonic() + 120
    published_midway = False
    while time.monotonic() < deadline and p.poll() is None:
        if run("log", "--store", store, "--namespace", ns, "--limit", "1").returncode == 0:
            published_midway = True
            break
        time.sleep(0.1)
    check(published_midway, f"{label}: a checkpoint was published while input was still open")
    stdout, stderr = p.communicate(input=records("ingest-2", 15000), timeout=300)
    check(p.returncode == 0, f"{label}: ingest: {stderr!r}")
    try:
        out = json.loads(stdout)
    except ValueError:
        out = {}
    check(out.get("records") == 30000 and out.get("last_sequence") == 30000,
          f"{label}: ingest counts {out}")
    check(out.get("prefix_sequence") == 30000, f"{label}: the last checkpoint covers every record")
    check(out.get("checkpoints", 0) >= 2, f"{label}: checkpoints during and after ingest {out}")
    check(out.get("namespace") == ns, f"{label}: --namespace was used")
    r = run("verify", db, "--deep", "--json")
    check(r.returncode == 0 and js(r).get("ok") is True, f"{label}: verify --deep: {r.stderr!r}")
    chain_ok(store, ns, label)

    # A second ingest into the same database continues its sequence and its chain.
    r = run("ingest", db, "--json", stdin=records("more", 500))
    check(r.returncode == 0 and js(r).get("last_sequence") == 30500, f"{label}: second ingest")
    r = run("ingest", db, "--store", store + "-other", stdin=b"x\n")
    check(r.returncode == 2, f"{label}: ingest refuses a different --store")

    # store put --if-match with a stale ETag: refused with a clean message (this once crashed
    # with a double free: GCC 12 and co_await inside ?:).
    key = f"ns-{ns.replace('-', '')}-current.head"
    r = run("store", "put", store, key, "--if-match", '"stale"', stdin=b"x" * 256)
    check(r.returncode == 1 and r.stderr.decode().startswith("cairn: store: put ") and
          b"precondition-failed" in r.stderr and len(r.stderr.splitlines()) == 1,
          f"{label}: stale If-Match refused cleanly: {r.stderr!r}")

    # The operation budget and the in-flight limits from the command line: a budget smaller
    # than the new segments fails closed, nothing selected; one segment and one request in
    # flight at a time still publishes.
    before = js(run("status", db, "--json"))
    r = run("append", db, stdin=records("limits", 3000))
    check(r.returncode == 0, f"{label}: append before the limit checks")
    r = run("checkpoint", db, "--budget-bytes", "100000", "--json")
    check(r.returncode == 1 and js(r).get("error") == "budget" and
          b"budget" in r.stderr, f"{label}: a small budget fails closed: {r.stdout!r} {r.stderr!r}")
    check(before.get("store_head") is not None and
          js(run("status", db, "--json")).get("store_head") == before.get("store_head"),
          f"{label}: nothing was selected over the budget")
    r = run("checkpoint", db, "--segment-mib", "1", "--inflight-mib", "1",
            "--inflight-requests", "1", "--json")
    check(r.returncode == 0 and js(r).get("outcome") == "selected" and
          js(r).get("prefix_sequence") == 33500,
          f"{label}: one segment and one request in flight: {r.stdout!r} {r.stderr!r}")
    r = run("checkpoint", db, "--inflight-mib", "0")
    check(r.returncode == 2, f"{label}: --inflight-mib 0 is a usage error")
    r = run("verify", db, "--deep", "--inflight-mib", "1", "--inflight-requests", "1", "--json")
    check(r.returncode == 0 and js(r).get("ok") is True, f"{label}: verify with the least in flight")

    # What the journal says comes first: a directory owned by another process, a journal not
    # of the head's lineage.
    with open(os.path.join(db, "LOCK"), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        r = run("verify", db, "--deep", "--json")
        check(r.returncode == 3 and js(r).get("error") == "busy" and
              b"owned by another process" in r.stderr,
              f"{label}: verify of an owned directory: {r.returncode} {r.stdout!r} {r.stderr!r}")
    other = os.path.join(tmp, f"other-{label}")
    check(run("init", other, "--db-id", "other").returncode == 0, f"{label}: init other")
    check(run("append", other, stdin=records("other", 100)).returncode == 0, f"{label}: append")
    swapped = os.path.join(tmp, f"swapped-{label}")
    shutil.copytree(db, swapped)
    shutil.copyfile(os.path.join(other, "journal"), os.path.join(swapped, "journal"))
    for deep in (["--deep"], []):
        r = run("verify", swapped, *deep, "--json")
        check(r.returncode == 1 and js(r).get("error") == "binding" and js(r).get("key") == key,
              f"{label}: verify {deep} with another lineage's journal: {r.stdout!r} {r.stderr!r}")
    # verify does not scan the journal's frames and never writes it: a journal damaged inside
    # the checkpoint's prefix fails the comparison with the segment that covers the damage;
    # a torn tail after the cutoff is not verify's, and is not cut.
    damaged = os.path.join(tmp, f"damaged-{label}")
    shutil.copytree(db, damaged)
    journal_path = os.path.join(damaged, "journal")
    with open(journal_path, "ab") as f:
        f.write(b"\0\0")  # a torn tail
    before = open(journal_path, "rb").read()
    r = run("verify", damaged, "--deep", "--json")
    check(r.returncode == 0 and js(r).get("ok") is True,
          f"{label}: verify --deep with a torn tail after the cutoff: {r.stdout!r} {r.stderr!r}")
    check(open(journal_path, "rb").read() == before, f"{label}: verify cut nothing")
    with open(journal_path, "r+b") as f:
        f.seek(4096)  # inside the first segment's frames
        byte = f.read(1)
        f.seek(4096)
        f.write(bytes([byte[0] ^ 0x01]))
    before = open(journal_path, "rb").read()
    r = run("verify", damaged, "--deep", "--json")
    check(r.returncode == 1 and js(r).get("error") == "diverged" and
          "-segment-" in js(r).get("key", "") and b"damage" in r.stderr,
          f"{label}: verify --deep of a damaged journal: {r.returncode} {r.stdout!r} {r.stderr!r}")
    check(open(journal_path, "rb").read() == before, f"{label}: the damaged journal is not cut")
    shutil.rmtree(damaged)
    r = run("verify", os.path.join(tmp, f"nowhere-{label}"), "--store", store, "--namespace", ns,
            "--json")
    check(r.returncode == 2 and b"not a database directory" in r.stderr,
          f"{label}: verify of a missing directory: {r.returncode} {r.stderr!r}")

    # checkpoint with nothing new: unchanged, nothing written.
    r = run("checkpoint", db, "--json")
    check(r.returncode == 0 and js(r).get("outcome") == "unchanged", f"{label}: unchanged {r.stdout!r}")

    # The crash matrix.
    sequence = 33500
    for point in POINTS:
        what = f"{label}: killed at {point}"
        r = run("append", db, stdin=records(point, 200))
        sequence += 200
        check(r.returncode == 0, f"{what}: append")
        before = js(run("status", db, "--json"))
        r = run("checkpoint", db, "--segment-mib", "1", env={"CAIRN_TEST_FAULT": point})
        check(r.returncode == -9, f"{what}: the process died at the point (rc {r.returncode}, "
                                  f"{r.stderr!r})")
        st = js(run("status", db, "--json"))
        selected = st.get("selected")
        name = point.split(":")[0]
        # What each point must leave: no intent before it is recorded; once recorded, the
        # store selects the predecessor until the PUT, the candidate after it.
        want_pending = name in ("after-intent", "before-put", "after-put", "before-expected")
        want_selected = "candidate" if name in ("after-put", "before-expected") else "expected"
        check((st.get("pending") is not None) == want_pending,
              f"{what}: pending intent {st.get('pending')!r}, want {want_pending}")
        check(selected == want_selected, f"{what}: the store selects {selected}, want {want_selected}")
        check(st.get("expected", {}).get("id") == before.get("expected", {}).get("id"),
              f"{what}: the expected head is unchanged until reconciled")
        if name == "after-intent":
            # A second crash, this time while the intent is being re-sent.
            r = run("checkpoint", db, env={"CAIRN_TEST_FAULT": "after-put"})
            check(r.returncode == -9, f"{what}: killed again while re-sending")
            check(js(run("status", db, "--json")).get("selected") == "candidate",
                  f"{what}: the re-sent candidate landed")
        r = run("checkpoint", db, "--json")
        res = js(r)
        check(r.returncode == 0 and res.get("outcome") == "selected",
              f"{what}: the next checkpoint succeeds: {r.stdout!r} {r.stderr!r}")
        check(res.get("reconciled_intent") is want_pending,
              f"{what}: reconciled_intent {res.get('reconciled_intent')}")
        check(res.get("prefix_sequence") == sequence, f"{what}: covers everything acknowledged")
        if name == "before-intent":
            # Every object of the candidate was installed before the kill: the next checkpoint
            # builds the same ones and relies on them, the manifest included.
            check(res.get("objects_written") == 0 and res.get("objects_reused", 0) >= 2,
                  f"{what}: the installed objects are reused, not counted as written: {res}")
        st = js(run("status", db, "--json"))
        check(st.get("pending") is None and st.get("selected") == "expected",
              f"{what}: settled: {st}")
        check(st.get("journal_end_sequence") == sequence, f"{what}: no record lost")
    r = run("verify", db, "--deep", "--json")
    check(r.returncode == 0, f"{label}: verify --deep after the crash matrix: {r.stderr!r}")
    entries = chain_ok(store, ns, label + " after the crash matrix")
    check(entries and entries[0]["prefix_sequence"] == sequence, f"{label}: newest entry")

    # du: every object under the namespace is counted once, as reachable or reclaimable.
    listed = js(run("store", "ls", store, f"ns-{ns.replace('-', '')}-", "--json"))
    r = run("du", "--store", store, "--namespace", ns, "--json")
    du = js(r)
    check(r.returncode == 0 and du.get("revisions") == len(entries), f"{label}: du: {r.stderr!r}")
    total = du["reachable"]["total"]["objects"] + du["reclaimable"]["total"]["objects"]
    check(total == listed.get("count"), f"{label}: du counts every object ({total} vs {listed})")
    check(du["reachable"]["manifest"]["objects"] == len(entries) and
          du["reclaimable"]["manifest"]["objects"] == 0 and
          du["reclaimable"]["segment"]["objects"] == 0 and
          du["reachable"]["head"]["objects"] == 1,
          f"{label}: with every head retained only orphaned head copies are reclaimable: {du}")
    r = run("du", "--store", store, "--namespace", ns, "--keep-revisions", "1", "--json")
    one = js(r)
    check(r.returncode == 0 and one["reclaimable"]["manifest"]["objects"] == len(entries) - 1 and
          one["reclaimable"]["segment"]["objects"] == 0 and
          one["reachable"]["head_copy"]["objects"] == 1,
          f"{label}: keeping one revision frees the older manifests and head copies: {one}")

    # Pinned read recovery: the current head, and an exact older head, rebuild byte-identical
    # journal prefixes in fresh directories; never an older head by itself.
    journal = open(os.path.join(db, "journal"), "rb").read()
    r = run("recover", os.path.join(tmp, f"rec-{label}"), "--store", store, "--namespace", ns,
            "--json")
    rec = js(r)
    check(r.returncode == 0 and rec.get("head_id") == entries[0]["id"],
          f"{label}: recover the current head: {r.stdout!r} {r.stderr!r}")
    rebuilt = open(os.path.join(tmp, f"rec-{label}", "journal"), "rb").read()
    check(journal_frames(rebuilt, f"{label}: recovered") == journal[:entries[0]["prefix_length"]]
          and journal_frames(journal, label) == journal[:entries[0]["prefix_length"]],
          f"{label}: the recovered journal's frames are byte-identical")
    oldest = entries[-1]
    r = run("recover", os.path.join(tmp, f"rec-old-{label}"), "--store", store, "--namespace",
            ns, "--head", oldest["id"], "--json")
    check(r.returncode == 0 and js(r).get("revision") == 1, f"{label}: recover --head: {r.stderr!r}")
    old_rebuilt = open(os.path.join(tmp, f"rec-old-{label}", "journal"), "rb").read()
    check(journal_frames(old_rebuilt, f"{label}: recovered --head") ==
          journal[:oldest["prefix_length"]],
          f"{label}: the older head's journal is the exact prefix")
    r = run("recover", os.path.join(tmp, f"rec-{label}"), "--store", store, "--namespace", ns)
    check(r.returncode == 2 and b"not empty" in r.stderr, f"{label}: a non-empty DIR is refused")
    r = run("recover", os.path.join(tmp, f"rec-w-{label}"), "--store", store, "--namespace", ns,
            "--head", oldest["id"], "--writable")
    check(r.returncode == 2 and not os.path.exists(os.path.join(tmp, f"rec-w-{label}")),
          f"{label}: writable recovery only from the current head")
    r = run("recover", os.path.join(tmp, f"rec-x-{label}"), "--store", store, "--namespace", ns,
            "--head", "ab" * 32, "--json")
    check(r.returncode == 1 and js(r).get("error") == "missing",
          f"{label}: an unknown head id is missing, not guessed: {r.stdout!r}")

    # A head changed behind the publisher's back is refused: roll the head back by hand.
    if len(entries) >= 2:
        older = entries[1]["id"]
        key_prefix = f"ns-{ns.replace('-', '')}"
        got = run("store", "get", store, f"{key_prefix}-head-{older}.bin")
        etag = js(run("status", db, "--json")).get("expected", {}).get("etag", "")
        r = run("store", "put", store, f"{key_prefix}-current.head", "--if-match", etag,
                stdin=got.stdout)
        check(r.returncode == 0, f"{label}: rolled the head back by hand: {r.stderr!r}")
        run("append", db, stdin=b"after the rollback\n")
        r = run("checkpoint", db, "--json")
        check(r.returncode == 1 and js(r).get("error") == "conflict",
              f"{label}: a rolled-back head is refused: {r.stdout!r}")


def writable_recovery(tmp, store, label):
    # The old machine publishes; a new machine recovers writable and continues the chain; the
    # old owner, coming back, is refused by the head's compare-and-swap.
    ns = str(uuid.uuid4())
    old = os.path.join(tmp, f"old-{label}")
    r = run("ingest", old, "--store", store, "--namespace", ns, "--json",
            stdin=records("w", 2000))
    check(r.returncode == 0, f"{label}: ingest before writable recovery: {r.stderr!r}")
    new = os.path.join(tmp, f"new-{label}")
    r = run("recover", new, "--store", store, "--namespace", ns, "--writable", "--json")
    check(r.returncode == 0 and js(r).get("writable") is True,
          f"{label}: writable recovery: {r.stderr!r}")
    st = js(run("status", new, "--json"))
    check(st.get("selected") == "expected" and st.get("journal_end_sequence") == 2000,
          f"{label}: the recovered directory expects the current head: {st}")
    r = run("ingest", new, "--json", stdin=records("continued", 300))
    out = js(r)
    check(r.returncode == 0 and out.get("revision") == 2 and out.get("last_sequence") == 2300,
          f"{label}: the new machine continues the chain: {r.stdout!r} {r.stderr!r}")
    run("append", old, stdin=b"the old owner is back\n")
    r = run("checkpoint", old, "--json")
    check(r.returncode == 1 and js(r).get("error") == "conflict",
          f"{label}: the stale owner is refused: {r.stdout!r}")
    chain = run("log", "--store", store, "--namespace", ns, "--json")
    check([e["revision"] for e in js(chain).get("entries", [])] == [2, 1],
          f"{label}: one unbroken chain")
    if label == "directory":
        # A damaged segment: recovery fails closed, naming it, and creates nothing.
        damaged = os.path.join(tmp, "damaged-store")
        shutil.copytree(store, damaged)
        seg = sorted(f for f in os.listdir(damaged) if f.startswith(f"ns-{ns.replace('-', '')}-segment-"))[0]
        with open(os.path.join(damaged, seg), "r+b") as f:
            f.seek(100)
            b = f.read(1)
            f.seek(100)
            f.write(bytes([b[0] ^ 1]))
        target = os.path.join(tmp, "from-damaged")
        r = run("recover", target, "--store", damaged, "--namespace", ns, "--json")
        check(r.returncode == 1 and js(r).get("error") == "corrupt" and js(r).get("key") == seg and
              not os.path.exists(target), f"damaged segment refused: {r.stdout!r}")


with tempfile.TemporaryDirectory() as tmp:
    stores = test_stores(tmp)
    for label, store in stores:
        backend(tmp, store, label)
        writable_recovery(tmp, store, label)

    # Bad input: a clear error, nothing created.
    # (s3://nobucket alone is a store now: its endpoint and region come from AWS's conventions.)
    r = run("init", os.path.join(tmp, "bad"), "--db-id", "x", "--store", "s3://No_Bucket")
    check(r.returncode == 2 and not os.path.exists(os.path.join(tmp, "bad")),
          f"init refuses a bad store URL before creating anything: {r.stderr!r}")
    # A store that cannot be opened (no credentials) is refused before the journal is
    # created: the same init then works once they are set.
    nocreds = os.path.join(tmp, "nocreds")
    url = "s3://cairn-nocreds/p?endpoint=http://127.0.0.1:9&region=us-east-1"
    r = run("init", nocreds, "--db-id", "x", "--store", url,
            env={"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""})
    check(r.returncode == 2 and b"credentials" in r.stderr and not os.path.exists(nocreds),
          f"init without credentials creates nothing: {r.stderr!r}")
    r = run("init", nocreds, "--db-id", "x", "--store", url,
            env={"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"})
    check(r.returncode == 0 and os.path.exists(os.path.join(nocreds, "publisher.state")),
          f"init again with credentials: {r.stderr!r}")
    # `status --offline` reads the local state only: no credentials needed. Online, it needs
    # the store, and says so.
    blank = {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""}
    r = run("status", nocreds, "--offline", "--json", env=blank)
    s = js(r)
    check(r.returncode == 0 and s.get("store") == url and s.get("expected", 0) is None and
          s.get("pending", 0) is None and "selected" not in s,
          f"status --offline without credentials: {r.stdout!r} {r.stderr!r}")
    r = run("status", nocreds, "--json", env=blank)
    check(r.returncode == 2 and b"credentials" in r.stdout + r.stderr,
          f"status without credentials names them: {r.stdout!r} {r.stderr!r}")
    r = run("init", os.path.join(tmp, "bad2"), "--db-id", "x", "--namespace",
            "00000000-0000-0000-0000-000000000000", "--store", os.path.join(tmp, "s"))
    check(r.returncode == 2, "init refuses a nil namespace")
    r = run("checkpoint", os.path.join(tmp, "missing"))
    check(r.returncode != 0 and b"cairn:" in r.stderr, "checkpoint on a missing directory")
    jdb = os.path.join(tmp, "journal-only")
    run("init", jdb, "--db-id", "j")
    run("append", jdb, stdin=b"a\n")
    r = run("checkpoint", jdb)
    check(r.returncode == 2 and b"no store" in r.stderr, f"journal-only: {r.stderr!r}")
    r = run("ingest", os.path.join(tmp, "lp"), "--length-prefixed", "--json",
            stdin=b"\x00\x00\x00\x03abc\x00\x00\x00\x00\x00\x00\x00\x02hi")
    check(r.returncode == 0 and js(r).get("records") == 3, f"length-prefixed ingest: {r.stdout!r}")
    r = run("ingest", os.path.join(tmp, "lp2"), "--length-prefixed", stdin=b"\x00\x00\x00\x09abc")
    check(r.returncode == 2, "a truncated length-prefixed record is refused")

finish()
