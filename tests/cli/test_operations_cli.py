#!/usr/bin/env python3
"""Operations as an operator runs them, on the directory store and on RGW: vacuum (dry run,
--apply, young objects, pending candidates, interleaved with publication), compaction,
backup then recover, and repair-head.

Usage: test_operations_cli.py /path/to/cairn
RGW needs the S3_* variables of ../shared/s3/start-rgw.sh (required in CI).
"""
import os
import shutil
import tempfile
import threading
import time
import uuid

from cli_support import chain_ok, check, finish, journal_frames, js, records, run, test_stores


def nskey(ns):
    return "ns-" + ns.replace("-", "")


def listed(store, ns):
    return {o["key"]: o for o in js(run("store", "ls", store, nskey(ns) + "-", "--json"))
            .get("objects", [])}


def publish_some(tmp, store, label, rounds=3):
    """A database with a few revisions of small segments; returns (db, ns)."""
    ns = str(uuid.uuid4())
    db = os.path.join(tmp, f"db-{label}")
    r = run("ingest", db, "--store", store, "--namespace", ns, "--segment-mib", "1", "--json",
            stdin=records("base", 12000))
    check(r.returncode == 0, f"{label}: ingest: {r.stderr!r}")
    for i in range(rounds):
        run("append", db, stdin=records(f"round{i}", 3000))
        r = run("checkpoint", db, "--segment-mib", "1", "--json")
        check(r.returncode == 0, f"{label}: checkpoint {i}: {r.stderr!r}")
    return db, ns


def vacuum(store, ns, *extra):
    # Graces below 3600 s are for tests only: the publishers here use --reuse-max-age 5.
    r = run("vacuum", "--store", store, "--namespace", ns, "--json", *extra,
            env={"CAIRN_TEST_UNSAFE_GRACE": "1"})
    return r, js(r)


def vacuum_basics(tmp, store, label):
    db, ns = publish_some(tmp, store, label)
    entries = chain_ok(store, ns, label)
    before = listed(store, ns)

    # A dry run with the default grace: the older manifests and head copies are unreachable
    # with one revision kept, but young: listed, kept, nothing deleted.
    r, out = vacuum(store, ns, "--keep-revisions", "1")
    check(r.returncode == 0 and out.get("apply") is False, f"{label}: dry run: {r.stderr!r}")
    verdicts = {o["verdict"] for o in out.get("objects", [])}
    check(out.get("objects") and verdicts == {"young"},
          f"{label}: every unreachable object is young under the default grace: {verdicts}")
    check(out["kept"]["manifest"]["objects"] == len(entries) - 1 and
          out["reclaimable"]["total"]["objects"] == 0,
          f"{label}: counts per class: {out.get('kept')}")
    check(listed(store, ns).keys() == before.keys(), f"{label}: a dry run deletes nothing")

    # --apply with a long grace still leaves the young objects alone.
    r, out = vacuum(store, ns, "--keep-revisions", "1", "--apply")
    check(r.returncode == 0 and out["deleted"]["total"]["objects"] == 0 and out.get("verified"),
          f"{label}: young objects survive --apply: {r.stdout!r} {r.stderr!r}")
    check(listed(store, ns).keys() == before.keys(), f"{label}: nothing deleted under grace")

    # Dry run with no grace: the same objects become reclaimable, still nothing deleted. (Ages
    # count from the second after an object's timestamp, so wait until every one is >= 0.)
    time.sleep(2)
    r, out = vacuum(store, ns, "--keep-revisions", "1", "--grace-seconds", "0")
    reclaim = {o["key"] for o in out.get("objects", []) if o["verdict"] == "reclaim"}
    check(r.returncode == 0 and len(reclaim) == 2 * (len(entries) - 1),
          f"{label}: older manifests and head copies are reclaimable: {sorted(reclaim)}")
    check(listed(store, ns).keys() == before.keys(), f"{label}: still a dry run")

    # --apply deletes exactly them; everything reachable stays, and the head verifies.
    r, out = vacuum(store, ns, "--keep-revisions", "1", "--grace-seconds", "0", "--apply")
    check(r.returncode == 0 and out["deleted"]["total"]["objects"] == len(reclaim) and
          out.get("verified") is True, f"{label}: --apply: {r.stdout!r} {r.stderr!r}")
    after = listed(store, ns)
    check(after.keys() == before.keys() - reclaim, f"{label}: exactly the reclaimable are gone")
    r = run("verify", db, "--deep", "--json")
    check(r.returncode == 0, f"{label}: verify --deep after vacuum: {r.stderr!r}")
    r = run("log", "--store", store, "--namespace", ns, "--json")
    check(r.returncode == 0 and js(r).get("history_ends") is True and
          len(js(r).get("entries", [])) == 1, f"{label}: log ends at the retained head: {r.stdout!r}")
    du = js(run("du", "--store", store, "--namespace", ns, "--json"))
    check(du.get("history_ends") is True and du["reclaimable"]["total"]["objects"] == 0,
          f"{label}: du after vacuum: {du}")
    # Publishing continues after a vacuum.
    run("append", db, stdin=records("after-vacuum", 500))
    r = run("checkpoint", db, "--json")
    check(r.returncode == 0 and js(r).get("outcome") == "selected",
          f"{label}: checkpoint after vacuum: {r.stderr!r}")

    # A pending candidate (killed after recording its intent, before the PUT) keeps its whole
    # graph through a vacuum with no grace; the next checkpoint then publishes it.
    run("append", db, stdin=records("pending", 3000))
    r = run("checkpoint", db, "--segment-mib", "1", env={"CAIRN_TEST_FAULT": "after-intent"})
    check(r.returncode == -9, f"{label}: killed after the intent")
    r, out = vacuum(store, ns, "--keep-revisions", "1", "--grace-seconds", "0", "--apply")
    cand = [o for o in out.get("objects", []) if o["verdict"] == "candidate"]
    check(r.returncode == 0 and {o["class"] for o in cand} >= {"head_copy", "manifest", "segment"}
          and not any(o["deleted"] for o in cand),
          f"{label}: the pending candidate's graph is kept: {cand} {r.stderr!r}")
    r = run("checkpoint", db, "--json")
    check(r.returncode == 0 and js(r).get("reconciled_intent") is True,
          f"{label}: the pending candidate is published after the vacuum: {r.stderr!r}")
    r = run("verify", db, "--deep", "--json")
    check(r.returncode == 0, f"{label}: verify --deep after the candidate: {r.stderr!r}")

    # Objects that are not cairn's are never touched.
    r = run("store", "put", store, nskey(ns) + "-notes.txt", stdin=b"operator notes")
    r, out = vacuum(store, ns, "--grace-seconds", "0", "--apply")
    foreign = [o for o in out.get("objects", []) if o["class"] == "other"]
    check(len(foreign) == 1 and foreign[0]["verdict"] == "foreign" and not foreign[0]["deleted"],
          f"{label}: a foreign object is left alone: {foreign}")
    check(run("vacuum", "--store", store, "--namespace", "nope").returncode == 2,
          f"{label}: a bad namespace is a usage error")
    return db, ns


def old_orphans_are_rewritten(tmp, store, label):
    # Directory store only (object ages can be set): a segment uploaded by a checkpoint that
    # died right after uploading it (before its head copy) is an orphan. Made old, a vacuum would reclaim them; the next
    # checkpoint needs exactly those bytes, so it must not trust them: it rewrites them.
    ns = str(uuid.uuid4())
    db = os.path.join(tmp, f"orphans-{label}")
    r = run("ingest", db, "--store", store, "--namespace", ns, "--json", stdin=records("o", 500))
    check(r.returncode == 0, f"{label}: ingest: {r.stderr!r}")
    run("append", db, stdin=records("orphan", 3000))
    r = run("checkpoint", db, "--segment-mib", "1", env={"CAIRN_TEST_FAULT": "after-upload"})
    check(r.returncode == -9, f"{label}: killed after the upload")
    old = time.time() - 7200
    for key in listed(store, ns):
        os.utime(os.path.join(store, key), (old, old))
    r, out = vacuum(store, ns)
    orphans = {o["key"] for o in out.get("objects", []) if o["verdict"] == "reclaim"}
    check(any("-segment-" in k for k in orphans), f"{label}: the orphans are reclaimable: {out}")
    r = run("checkpoint", db, "--segment-mib", "1", "--json")
    res = js(r)
    check(r.returncode == 0 and res.get("objects_rewritten", 0) >= 1 and
          res.get("objects_reused") == 0,
          f"{label}: old existing objects are rewritten, not trusted: {r.stdout!r} {r.stderr!r}")
    # They are reachable now, with fresh times: even a vacuum without grace keeps them.
    r, out = vacuum(store, ns, "--grace-seconds", "0", "--apply")
    unreachable = {o["key"] for o in out.get("objects", [])}
    check(r.returncode == 0 and not (orphans & unreachable) and
          all(os.path.exists(os.path.join(store, k)) for k in orphans if "-segment-" in k),
          f"{label}: the rewritten orphans are reachable and kept: {out.get('deleted')}")
    r = run("verify", db, "--deep", "--json")
    check(r.returncode == 0, f"{label}: the new head verifies: {r.stderr!r}")


def vacuum_during_publication(tmp, store, label):
    # A publisher checkpoints and compacts in a loop while vacuum runs with a 10 s grace and
    # one retained revision. Compactions alternate two segment sizes, so each one needs the
    # segments of the one before last: unreachable meanwhile, relied on again, rewritten once
    # older than the 5 s reuse age, and reclaimed by vacuum once older than the grace. After
    # every vacuum the current head recovers (its whole graph verified byte for byte).
    ns = str(uuid.uuid4())
    db = os.path.join(tmp, f"live-{label}")
    r = run("ingest", db, "--store", store, "--namespace", ns, "--segment-mib", "1", "--json",
            stdin=records("live", 24000))
    check(r.returncode == 0, f"{label}: ingest: {r.stderr!r}")
    stop = threading.Event()
    failures = []
    counts = {"published": 0, "rewritten": 0}

    def publisher():
        i = 0
        while not stop.is_set():
            if i % 4 == 3:
                r = run("append", db, stdin=records(f"live{i}", 300))
                if r.returncode != 0:
                    failures.append(r.stderr)
                r = run("checkpoint", db, "--segment-mib", "1", "--reuse-max-age", "5", "--json")
            else:
                r = run("compact", db, "--segment-mib", str(1 + i % 2), "--reuse-max-age", "5",
                        "--json")
            if r.returncode == 0:
                counts["published"] += 1
                counts["rewritten"] += js(r).get("objects_rewritten", 0)
            elif b"deleted right after this checkpoint rewrote it" in r.stdout:
                # Vacuum judged the object old just before the rewrite and deleted it right
                # after: the publisher noticed before recording anything. Correct; retried.
                counts["caught"] = counts.get("caught", 0) + 1
            else:
                failures.append(r.stdout + r.stderr)
            i += 1

    t = threading.Thread(target=publisher)
    t.start()
    vacuums = deleted = 0
    # Until vacuum deleted and the publisher rewrote something, at most 120 s.
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and (vacuums < 4 or deleted == 0 or
                                               counts["rewritten"] == 0):
            r, out = vacuum(store, ns, "--keep-revisions", "1", "--grace-seconds", "10", "--apply")
            check(r.returncode == 0, f"{label}: vacuum during publication: {r.stderr!r}")
            vacuums += 1
            deleted += out.get("deleted", {}).get("segment", {}).get("objects", 0)
            target = os.path.join(tmp, f"live-rec-{label}-{vacuums}")
            r = run("recover", target, "--store", store, "--namespace", ns, "--json")
            check(r.returncode == 0, f"{label}: the current head recovers after vacuum "
                                     f"{vacuums}: {r.stdout!r} {r.stderr!r}")
            shutil.rmtree(target, ignore_errors=True)
            time.sleep(0.5)
    finally:
        stop.set()
        t.join()
    check(vacuums >= 4 and deleted > 0 and counts["rewritten"] > 0,
          f"{label}: interleaved: {vacuums} vacuums, {deleted} segments deleted, {counts}")
    check(not failures, f"{label}: every checkpoint and compaction succeeded (or caught a concurrent deletion): {failures[:2]}")
    r = run("verify", db, "--deep", "--json")
    check(r.returncode == 0, f"{label}: verify --deep after the interleaving: {r.stderr!r}")


def compaction(tmp, store, label, db, ns):
    before = js(run("status", db, "--json"))
    r = run("verify", db, "--deep", "--json")
    check(r.returncode == 0, f"{label}: verify before compaction")
    segments_before = js(r).get("objects", 0) - 1
    r = run("compact", db, "--json")
    out = js(r)
    check(r.returncode == 0 and out.get("outcome") == "selected", f"{label}: compact: {r.stderr!r}")
    exp = before.get("expected", {})
    check(out.get("prefix_sequence") == exp.get("prefix_sequence") and
          out.get("prefix_length") == exp.get("prefix_length"),
          f"{label}: compaction keeps the cutoff: {out} vs {exp}")
    check(out.get("segments", 0) < segments_before and out.get("segments") == 1,
          f"{label}: fewer segments: {segments_before} -> {out.get('segments')}")
    r = run("verify", db, "--deep", "--json")
    check(r.returncode == 0 and js(r).get("objects") == 2, f"{label}: verify after: {r.stdout!r}")
    log = js(run("log", "--store", store, "--namespace", ns, "--json", "--limit", "2"))
    e = log.get("entries", [])
    check(len(e) == 2 and e[0]["prefix_sequence"] == e[1]["prefix_sequence"] and
          e[0]["manifest_sha256"] != e[1]["manifest_sha256"],
          f"{label}: a new generation with the same prefix: {e}")
    time.sleep(2)  # every object at least a second old (ages count from the next second)
    r, out = vacuum(store, ns, "--keep-revisions", "1", "--grace-seconds", "0")
    check(out.get("reclaimable", {}).get("segment", {}).get("objects") == segments_before,
          f"{label}: the old segments become reclaimable: {out.get('reclaimable')}")
    run("append", db, stdin=records("after-compact", 100))
    r = run("checkpoint", db, "--json")
    check(r.returncode == 0 and js(r).get("segments") == 2, f"{label}: checkpoints continue")


def backup_and_recover(tmp, store, label, db, ns, target, target_label):
    what = f"{label} -> {target_label}"
    r = run("backup", "--store", store, "--namespace", ns, "--to", target, "--json")
    out = js(r)
    check(r.returncode == 0 and out.get("head_updated") is True and out.get("objects_copied", 0) >= 3,
          f"{what}: backup: {r.stdout!r} {r.stderr!r}")
    r = run("backup", "--store", store, "--namespace", ns, "--to", target, "--json")
    again = js(r)
    check(r.returncode == 0 and again.get("objects_copied") == 0 and
          again.get("head_updated") is False, f"{what}: a second backup copies nothing: {again}")
    run("append", db, stdin=records("incremental", 2000))
    run("checkpoint", db)
    r = run("backup", "--store", store, "--namespace", ns, "--to", target, "--json")
    inc = js(r)
    check(r.returncode == 0 and 1 <= inc.get("objects_copied", 0) <= 3 and
          inc.get("objects_present", 0) >= 1 and inc.get("head_updated") is True,
          f"{what}: incremental backup copies only what is new: {inc}")
    rec = os.path.join(tmp, f"from-backup-{label}-{target_label}")
    r = run("recover", rec, "--store", target, "--namespace", ns, "--json")
    check(r.returncode == 0 and js(r).get("head_id") == inc.get("head_id"),
          f"{what}: recover from the backup: {r.stderr!r}")
    with open(os.path.join(db, "journal"), "rb") as a, open(os.path.join(rec, "journal"), "rb") as b:
        check(journal_frames(a.read(), what) == journal_frames(b.read(), f"{what}: recovered"),
              f"{what}: the journal recovered from the backup is identical")
    # A damaged object in the target is found by the next backup's verification; so is a
    # damaged head copy (which no graph verification reads).
    if target_label == "directory":
        copy = os.path.join(target, nskey(ns) + f"-head-{inc['head_id']}.bin")
        good = open(copy, "rb").read()
        open(copy, "wb").write(good[:100] + bytes([good[100] ^ 1]) + good[101:])
        r = run("backup", "--store", store, "--namespace", ns, "--to", target, "--json")
        check(r.returncode == 1 and js(r).get("error") == "corrupt",
              f"{what}: a damaged head copy in the target fails the backup: {r.stdout!r}")
        open(copy, "wb").write(good)
        seg = sorted(k for k in listed(target, ns) if "-segment-" in k)[0]
        path = os.path.join(target, seg)
        data = bytearray(open(path, "rb").read())
        data[-3] ^= 1
        open(path, "wb").write(bytes(data))
        run("append", db, stdin=b"one more\n")
        run("checkpoint", db)
        r = run("backup", "--store", store, "--namespace", ns, "--to", target, "--json")
        check(r.returncode == 1 and js(r).get("error") == "corrupt" and js(r).get("key") == seg,
              f"{what}: a damaged object in the target fails the backup: {r.stdout!r}")


def repair(tmp, store, label, db, ns):
    entries = chain_ok_or_tail(store, ns)
    current, older = entries[0]["id"], entries[1]["id"]
    head_key = nskey(ns) + "-current.head"
    r = run("repair-head", "--store", store, "--namespace", ns, "--to", older, "--json")
    check(r.returncode == 1 and js(r).get("error") == "conflict",
          f"{label}: a healthy head is not replaced without --force: {r.stdout!r}")
    r = run("repair-head", "--store", store, "--namespace", ns, "--to", "ab" * 32, "--json")
    check(r.returncode == 1 and js(r).get("error") == "missing",
          f"{label}: an unknown target is refused: {r.stdout!r}")
    # Tear the head: 100 bytes of garbage, replacing it by compare-and-swap.
    etag = js(run("status", db, "--json")).get("expected", {}).get("etag", "")
    r = run("store", "put", store, head_key, "--if-match", etag, stdin=os.urandom(100))
    check(r.returncode == 0, f"{label}: tore the head: {r.stderr!r}")
    r = run("checkpoint", db, "--json")
    check(r.returncode == 1 and js(r).get("error") == "format",
          f"{label}: a torn head stops publication: {r.stdout!r}")
    # An unverifiable target (its manifest deleted) is refused, and nothing changes.
    torn = run("store", "get", store, head_key).stdout
    older_manifest = nskey(ns) + f"-manifest-{entries[1]['manifest_sha256']}.bin"
    r = run("store", "rm", store, older_manifest)
    check(r.returncode == 0, f"{label}: removed the older head's manifest: {r.stderr!r}")
    r = run("repair-head", "--store", store, "--namespace", ns, "--to", older, "--json")
    check(r.returncode == 1 and js(r).get("error") == "missing" and
          js(r).get("key") == older_manifest,
          f"{label}: an unverifiable target is refused: {r.stdout!r}")
    check(run("store", "get", store, head_key).stdout == torn,
          f"{label}: the refused repair changed nothing")
    # The runbook: re-point at the publisher's expected head; publication continues.
    r = run("repair-head", "--store", store, "--namespace", ns, "--to", current, "--json")
    out = js(r)
    check(r.returncode == 0 and out.get("before") == "damaged" and out.get("replaced") is True,
          f"{label}: repair-head: {r.stdout!r} {r.stderr!r}")
    run("append", db, stdin=records("after-repair", 100))
    r = run("checkpoint", db, "--json")
    check(r.returncode == 0 and js(r).get("outcome") == "selected",
          f"{label}: publication continues after the repair: {r.stderr!r}")
    # --force replaces even a healthy head (the operator's explicit rollback).
    newest = js(run("status", db, "--json")).get("expected", {}).get("id")
    r = run("repair-head", "--store", store, "--namespace", ns, "--to", current, "--force",
            "--json")
    check(r.returncode == 0 and js(r).get("before") == "healthy",
          f"{label}: --force replaces a healthy head: {r.stdout!r}")
    r = run("repair-head", "--store", store, "--namespace", ns, "--to", newest, "--force", "--json")
    check(r.returncode == 0, f"{label}: and back: {r.stderr!r}")


def chain_ok_or_tail(store, ns):
    r = run("log", "--store", store, "--namespace", ns, "--json", "--limit", "2")
    return js(r).get("entries", [])


with tempfile.TemporaryDirectory() as tmp:
    stores = test_stores(tmp)
    for label, store in stores:
        print(f"-- {label}", flush=True)
        db, ns = vacuum_basics(tmp, store, label)
        compaction(tmp, store, label, db, ns)
        for target_label, target in stores:
            if target_label == "directory":
                dest = os.path.join(tmp, f"backup-of-{label}")
            else:
                path, query = target.split("?", 1)
                dest = f"{path}-backup-of-{label}?{query}"

            backup_and_recover(tmp, store, label, db, ns, dest, target_label)
        repair(tmp, store, label, db, ns)
        vacuum_during_publication(tmp, store, label)
    old_orphans_are_rewritten(tmp, stores[0][1], "directory")

finish()
