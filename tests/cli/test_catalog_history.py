#!/usr/bin/env python3
"""A table's history through `cairn serve` and the lake commands (issue 25): time travel to every
earlier version returns exactly the metadata current then; leases and protected snapshots are
lake log records that `cairn lake status` shows; `cairn lake expire` plans by Iceberg's rules,
changes nothing without --apply, and with it removes exactly the expired snapshots, never one a
lease or a protection holds. On the directory store and on RGW (required in CI).

Usage: test_catalog_history.py /path/to/cairn
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_support import catalog_stories, check, js, run  # noqa: E402

DAY = 24 * 3600 * 1000


def snapshot(sid, parent, seq, ts, location):
    s = {"snapshot-id": sid, "sequence-number": seq, "timestamp-ms": ts, "schema-id": 0,
         "manifest-list": f"{location}/metadata/snap-{sid}.avro",
         "summary": {"operation": "append"}}
    if parent is not None:
        s["parent-snapshot-id"] = parent
    return s


def story(label, store, config, server, tok):  # noqa: C901 (one story, step by step)
    base = "/v1/h/namespaces/ns/tables"
    table = base + "/t"
    st, _ = server.call(tok, "POST", "/v1/h/namespaces", {"namespace": ["ns"]})
    check(st == 200, f"{label}: namespace")
    schema = {"type": "struct", "fields": [{"id": 1, "name": "a", "type": "int", "required": False}]}
    st, created = server.call(tok, "POST", base, {"name": "t", "schema": schema})
    check(st == 200, f"{label}: create {st} {created}")
    location = created["metadata"]["location"]
    versions = [created]  # the answer of each version, in order
    now = int(time.time() * 1000)
    # Snapshots on main, each a day apart and all old: 101 (9 days) <- 102 (8) <- 103 (7) <- 104
    # (0.5 days); 201 (9 days, unreferenced); 301 tagged "old" (9 days).
    plan = [(101, None, 9 * DAY), (102, 101, 8 * DAY), (103, 102, 7 * DAY), (104, 103, DAY // 2)]
    seq = 0
    for sid, parent, age in plan:
        seq += 1
        st, res = server.call(tok, "POST", table, {"requirements": [], "updates": [
            {"action": "add-snapshot", "snapshot": snapshot(sid, parent, seq, now - age, location)},
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
             "snapshot-id": sid}]})
        check(st == 200, f"{label}: snapshot {sid}: {st} {res}")
        versions.append(res)
    for sid, ref in ((201, None), (301, "old")):
        seq += 1
        updates = [{"action": "add-snapshot", "snapshot": snapshot(sid, None, seq, now - 9 * DAY,
                                                                    location)}]
        if ref:
            updates.append({"action": "set-snapshot-ref", "ref-name": ref, "type": "tag",
                            "snapshot-id": sid})
        st, res = server.call(tok, "POST", table, {"requirements": [], "updates": updates})
        check(st == 200, f"{label}: snapshot {sid}: {st}")
        versions.append(res)

    # 1. Time travel: each version, exactly.
    for n, v in enumerate(versions, start=1):
        st, got = server.call(tok, "GET", f"{table}?as-of=version:{n}")
        check(st == 200 and got.get("metadata-location") == v["metadata-location"]
              and got.get("metadata") == v["metadata"],
              f"{label}: version {n} is exactly the metadata committed then")
    st, got = server.call(tok, "GET", f"{table}?as-of=snapshot:102")
    check(st == 200 and got["metadata"]["current-snapshot-id"] == 102 and
          got.get("metadata-location") == versions[2]["metadata-location"],
          f"{label}: snapshot:102 is version 3: {got.get('metadata-location')}")

    # 2. Holds: a lease on 102 and a protection of 201.
    st, lease = server.call(tok, "POST", table + "/leases", {"ttl-seconds": 600,
                                                             "snapshot-id": 102})
    check(st == 200, f"{label}: lease {st} {lease}")
    st, _ = server.call(tok, "POST", table + "/protected-snapshots", {"snapshot-id": 201})
    check(st == 204, f"{label}: protect {st}")
    r = run("lake", "status", "--config", config, "--lake", "h", "--json")
    status = js(r)
    check(r.returncode == 0 and len(status.get("leases", [])) == 1 and
          status["leases"][0].get("snapshot_id") == 102 and
          status.get("protected_snapshots", [{}])[0].get("snapshot_id") == 201,
          f"{label}: lake status shows the lease and the protection: {r.stdout!r}")

    # 3. Retention: table max age 5 days (Java's default), keep 1. main keeps 104 (young) only:
    # 101 and 103 expire; 102 would, but the lease holds it; 201 is held by its protection; 301
    # stays with its tag.
    r = run("lake", "expire", "--config", config, "--lake", "h", "--json")
    dry = js(r)
    t0 = (dry.get("tables") or [{}])[0]
    check(r.returncode == 0 and sorted(x["snapshot_id"] for x in t0.get("expire", [])) == [101, 103],
          f"{label}: the dry run plans 101 and 103: {r.stdout!r}")
    check(sorted(x["snapshot_id"] for x in t0.get("kept_for_catalog", [])) == [102, 201],
          f"{label}: 102 and 201 are kept for the catalog: {t0}")
    st, now_meta = server.call(tok, "GET", table)
    check(sorted(s["snapshot-id"] for s in now_meta["metadata"]["snapshots"]) ==
          [101, 102, 103, 104, 201, 301], f"{label}: a dry run changes nothing")
    r = run("lake", "expire", "--config", config, "--lake", "h", "--apply", "--json")
    applied = js(r)
    check(r.returncode == 0 and applied.get("snapshots_expired") == 2,
          f"{label}: --apply expires 2: {r.stdout!r}")
    st, after = server.call(tok, "GET", table)
    check(sorted(s["snapshot-id"] for s in after["metadata"]["snapshots"]) ==
          [102, 104, 201, 301], f"{label}: exactly 101 and 103 are gone")
    # The expiry was an ordinary commit: one more version, and time travel still reaches the past.
    st, old = server.call(tok, "GET", f"{table}?as-of=version:2")
    check(st == 200 and [s["snapshot-id"] for s in old["metadata"]["snapshots"]] == [101],
          f"{label}: the past is still there")
    # Released and unprotected, 102 and 201 go on the next run.
    server.call(tok, "DELETE", f"{table}/leases/{lease.get('lease-id')}")
    server.call(tok, "DELETE", f"{table}/protected-snapshots/201")
    r = run("lake", "expire", "--config", config, "--lake", "h", "--apply", "--json")
    check(js(r).get("snapshots_expired") == 2, f"{label}: then 102 and 201 expire: {r.stdout!r}")
    st, last = server.call(tok, "GET", table)
    check(sorted(s["snapshot-id"] for s in last["metadata"]["snapshots"]) == [104, 301],
          f"{label}: what stays: main's 104, the tag's 301")


if __name__ == "__main__":
    catalog_stories("h", story)
