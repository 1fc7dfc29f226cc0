#!/usr/bin/env python3
"""Garbage collection over the verified reachability graph (issue 25): `cairn lake gc` on a
table written with real Avro manifest lists and manifests (python3-avro, Iceberg's format v2
schemas) deletes exactly the unreachable old files; keeps young ones, files under a lease (the
prepared files of a commit that got 504) and metadata files; deletes nothing when a manifest
is missing or damaged, or when a path names the lake's store in a spelling that is no key of
it; and, interleaved with concurrent commits, never deletes a file a committed snapshot
references (every retained snapshot's files are checked after each round). On the directory
store and on RGW (required in CI).

Usage: test_catalog_gc.py /path/to/cairn
"""
import io
import json
import os
import sys
import threading
import time

import avro.datafile
import avro.io
import avro.schema

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_support import catalog_stories, check, js, run  # noqa: E402

GRACE = 5  # seconds: files older than this (and unreachable) are garbage

# Iceberg's format v2 manifest list (manifest_file) and manifest (manifest_entry) schemas, with
# their field ids (the spec's "Manifests" and "Manifest Lists" sections).
MANIFEST_FILE = {
    "type": "record", "name": "manifest_file", "fields": [
        {"name": "manifest_path", "type": "string", "field-id": 500},
        {"name": "manifest_length", "type": "long", "field-id": 501},
        {"name": "partition_spec_id", "type": "int", "field-id": 502},
        {"name": "content", "type": "int", "field-id": 517},
        {"name": "sequence_number", "type": "long", "field-id": 515},
        {"name": "min_sequence_number", "type": "long", "field-id": 516},
        {"name": "added_snapshot_id", "type": "long", "field-id": 503},
        {"name": "added_files_count", "type": "int", "field-id": 504},
        {"name": "existing_files_count", "type": "int", "field-id": 505},
        {"name": "deleted_files_count", "type": "int", "field-id": 506},
        {"name": "added_rows_count", "type": "long", "field-id": 512},
        {"name": "existing_rows_count", "type": "long", "field-id": 513},
        {"name": "deleted_rows_count", "type": "long", "field-id": 514},
        {"name": "partitions", "type": ["null", {"type": "array", "element-id": 508, "items": {
            "type": "record", "name": "r508", "fields": [
                {"name": "contains_null", "type": "boolean", "field-id": 509},
                {"name": "contains_nan", "type": ["null", "boolean"], "field-id": 518},
                {"name": "lower_bound", "type": ["null", "bytes"], "field-id": 510},
                {"name": "upper_bound", "type": ["null", "bytes"], "field-id": 511}]}}],
         "default": None, "field-id": 507},
        {"name": "key_metadata", "type": ["null", "bytes"], "default": None, "field-id": 519}]}
MANIFEST_ENTRY = {
    "type": "record", "name": "manifest_entry", "fields": [
        {"name": "status", "type": "int", "field-id": 0},
        {"name": "snapshot_id", "type": ["null", "long"], "default": None, "field-id": 1},
        {"name": "sequence_number", "type": ["null", "long"], "default": None, "field-id": 3},
        {"name": "file_sequence_number", "type": ["null", "long"], "default": None,
         "field-id": 4},
        {"name": "data_file", "field-id": 2, "type": {
            "type": "record", "name": "r2", "fields": [
                {"name": "content", "type": "int", "field-id": 134},
                {"name": "file_path", "type": "string", "field-id": 100},
                {"name": "file_format", "type": "string", "field-id": 101},
                {"name": "partition", "field-id": 102,
                 "type": {"type": "record", "name": "r102", "fields": []}},
                {"name": "record_count", "type": "long", "field-id": 103},
                {"name": "file_size_in_bytes", "type": "long", "field-id": 104},
                {"name": "column_sizes", "type": ["null", {"type": "array", "items": {
                    "type": "record", "name": "k117_v118", "fields": [
                        {"name": "key", "type": "int", "field-id": 117},
                        {"name": "value", "type": "long", "field-id": 118}]}}],
                 "default": None, "field-id": 108},
                {"name": "split_offsets", "type": ["null", {"type": "array", "items": "long",
                                                            "element-id": 133}],
                 "default": None, "field-id": 132},
                {"name": "sort_order_id", "type": ["null", "int"], "default": None,
                 "field-id": 140}]}}]}


def avro_bytes(schema, records, codec):
    buf = io.BytesIO()
    writer = avro.datafile.DataFileWriter(buf, avro.io.DatumWriter(),
                                          avro.schema.parse(json.dumps(schema)), codec=codec)
    writer.set_meta("format-version", b"2")
    for r in records:
        writer.append(r)
    writer.flush()
    data = buf.getvalue()
    writer.close()
    return data


class Table:
    """One table's files, written through `cairn store put` at keys under the lake's store."""

    def __init__(self, label, store, location):
        self.label, self.store, self.location = label, store, location
        self.prefix = location[location.index("tables/"):]  # the key of the location
        self.sizes = {}  # key -> size, of every file this test wrote

    def key(self, path):
        return path[path.index("tables/"):]

    def put(self, name, data):
        key = f"{self.prefix}/{name}"
        r = run("store", "put", self.store, key, stdin=data)
        check(r.returncode == 0, f"{self.label}: put {key}: {r.stderr!r}")
        self.sizes[key] = len(data)
        return f"{self.location}/{name}"

    def data(self, name, size=100):
        return self.put(f"data/{name}", os.urandom(size))

    def manifest(self, name, entries, codec="deflate", snapshot=1):
        """entries: (status, content, path); returns (path, length)."""
        records = []
        for status, content, path in entries:
            key = self.key(path)
            records.append({"status": status, "snapshot_id": snapshot, "sequence_number": 1,
                            "file_sequence_number": 1, "data_file": {
                                "content": content, "file_path": path, "file_format": "PARQUET",
                                "partition": {}, "record_count": 10,
                                "file_size_in_bytes": self.sizes.get(key, 100),
                                "column_sizes": [{"key": 1, "value": 40}],
                                "split_offsets": [4], "sort_order_id": 0}})
        data = avro_bytes(MANIFEST_ENTRY, records, codec)
        return self.put(f"metadata/{name}", data), len(data)

    def manifest_list(self, name, manifests, snapshot, codec="null"):
        records = [{"manifest_path": p, "manifest_length": n, "partition_spec_id": 0,
                    "content": content, "sequence_number": 1, "min_sequence_number": 1,
                    "added_snapshot_id": snapshot, "added_files_count": 1,
                    "existing_files_count": 0, "deleted_files_count": 0, "added_rows_count": 10,
                    "existing_rows_count": 0, "deleted_rows_count": 0, "partitions": None,
                    "key_metadata": None}
                   for p, n, content in manifests]
        return self.put(f"metadata/{name}", avro_bytes(MANIFEST_FILE, records, codec))

    def keys(self):
        r = run("store", "ls", self.store, self.prefix + "/", "--json")
        check(r.returncode == 0, f"{self.label}: ls: {r.stderr!r}")
        return set(o["key"] for o in js(r).get("objects", []))


def snapshot(sid, parent, seq, list_path):
    s = {"snapshot-id": sid, "sequence-number": seq, "timestamp-ms": int(time.time() * 1000),
         "schema-id": 0, "manifest-list": list_path, "summary": {"operation": "append"}}
    if parent is not None:
        s["parent-snapshot-id"] = parent
    return s


def commit(server, tok, path, updates, requirements=()):
    return server.call(tok, "POST", path, {"requirements": list(requirements), "updates": updates})


def add_on_main(sid, parent, seq, list_path):
    return [{"action": "add-snapshot", "snapshot": snapshot(sid, parent, seq, list_path)},
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
             "snapshot-id": sid}]


def gc(config, *extra):
    r = run("lake", "gc", "--config", config, "--lake", "g", "--grace-seconds", str(GRACE),
            "--json", *extra)
    return r, js(r)


def retained_files_exist(label, server, tok, path, t, what, others=()):
    """Every file every snapshot of the current metadata reaches exists (read back through the
    test's own Avro reader); files may lie under the locations of `others` too."""
    st, meta = server.call(tok, "GET", path)
    present = t.keys()
    for o in others:
        present |= o.keys()
    missing = []
    for s in meta["metadata"].get("snapshots", []):
        lkey = t.key(s["manifest-list"])
        if lkey not in present:
            missing.append(lkey)
            continue
        lbytes = run("store", "get", t.store, lkey).stdout
        for m in avro.datafile.DataFileReader(io.BytesIO(lbytes), avro.io.DatumReader()):
            mkey = t.key(m["manifest_path"])
            if mkey not in present:
                missing.append(mkey)
                continue
            mbytes = run("store", "get", t.store, mkey).stdout
            for e in avro.datafile.DataFileReader(io.BytesIO(mbytes), avro.io.DatumReader()):
                fkey = t.key(e["data_file"]["file_path"])
                if e["status"] != 2 and fkey not in present:
                    missing.append(fkey)
    check(st == 200 and not missing, f"{label}: {what}: every retained file exists: {missing}")


def story(label, store, config, server, tok):  # noqa: C901 (one story, step by step)
    base = "/v1/g/namespaces/ns/tables"
    path = base + "/t"
    check(server.call(tok, "POST", "/v1/g/namespaces", {"namespace": ["ns"]})[0] == 200,
          f"{label}: namespace")
    schema = {"type": "struct", "fields": [{"id": 1, "name": "a", "type": "int", "required": False}]}
    st, created = server.call(tok, "POST", base, {
        "name": "t", "schema": schema,
        "properties": {"write.metadata.previous-versions-max": "1"}})
    check(st == 200, f"{label}: create {st} {created}")
    t = Table(label, store, created["metadata"]["location"])

    # Snapshot 1: list L1 -> manifest M1 -> D1. Snapshot 2: list L2 -> M1, M2 (D2 added) and
    # M3 (D0 deleted: its file is gone, which a deleted entry allows), plus a delete file.
    # A second table, p, dropped with purge: its files go, except one t references (pd2).
    st, pc = server.call(tok, "POST", base, {"name": "p", "schema": schema})
    check(st == 200, f"{label}: create p {st}")
    p = Table(label, store, pc["metadata"]["location"])
    pd1, pd2 = p.data("pd1.parquet"), p.data("pd2.parquet")
    pm = p.manifest("pm.avro", [(1, 0, pd1), (1, 0, pd2)])
    pl = p.manifest_list("snap-7.avro", [(pm[0], pm[1], 0)], 7)
    st, _ = commit(server, tok, base + "/p", add_on_main(7, None, 1, pl))
    check(st == 200, f"{label}: p's snapshot committed: {st}")

    d1, d2 = t.data("d1.parquet"), t.data("d2.parquet")
    t.sizes[p.key(pd2)] = p.sizes[p.key(pd2)]
    pos = t.data("pos-delete-1.parquet")
    m1 = t.manifest("m1.avro", [(1, 0, d1)])
    m2 = t.manifest("m2.avro", [(1, 0, d2), (1, 0, pd2)], codec="null")
    m3 = t.manifest("m3.avro", [(2, 0, f"{t.location}/data/d0.parquet"), (1, 1, pos)])
    l1 = t.manifest_list("snap-1.avro", [(m1[0], m1[1], 0)], 1)
    l2 = t.manifest_list("snap-2.avro", [(m1[0], m1[1], 0), (m2[0], m2[1], 0),
                                         (m3[0], m3[1], 1)], 2, codec="deflate")
    # Garbage, old by the time gc runs: a data file and a manifest no snapshot names.
    orphan = t.data("orphan.parquet")
    orphan_manifest = t.manifest("orphan-m.avro", [(1, 0, orphan)])[0]
    # The prepared files of a commit that got 504, under a lease.
    prepared = t.data("attempt-504/p1.parquet")
    st, lease = server.call(tok, "POST", path + "/leases", {
        "ttl-seconds": 3600, "prefix": f"{t.location}/data/attempt-504"})
    check(st == 200, f"{label}: a lease on the prepared files: {st} {lease}")

    st, _ = commit(server, tok, path, add_on_main(1, None, 1, l1))
    check(st == 200, f"{label}: snapshot 1 committed: {st}")
    st, _ = commit(server, tok, path, add_on_main(2, 1, 2, l2))
    check(st == 200, f"{label}: snapshot 2 committed: {st}")
    # Expire snapshot 1 (an ordinary commit), then one more commit: with
    # previous-versions-max = 1, no retained version has snapshot 1 any more, so its manifest
    # list L1 is unreachable (M1 and D1 stay: snapshot 2 names them).
    st, _ = commit(server, tok, path, [{"action": "remove-snapshots", "snapshot-ids": [1]}])
    check(st == 200, f"{label}: snapshot 1 expired: {st}")
    st, _ = commit(server, tok, path, [{"action": "set-properties", "updates": {"x": "1"}}])
    check(st == 200, f"{label}: one more version: {st}")
    st, _ = server.call(tok, "DELETE", base + "/p?purgeRequested=true")
    check(st == 204, f"{label}: drop p with purge: {st}")

    time.sleep(GRACE + 1.5)
    young = t.data("young.parquet")  # unreachable too, but within the grace period

    # The dry run: exactly L1, the orphan and its manifest; the young file and the lease's kept.
    before = t.keys() | p.keys()
    r, dry = gc(config)
    expected = sorted(t.key(f) for f in (l1, orphan, orphan_manifest, pd1, pm[0], pl))
    check(dry.get("purged_tables") == 1 and dry.get("tables") == 1,
          f"{label}: one live table walked, one purged location listed: {dry}")
    check(r.returncode == 0 and dry.get("ok") is True,
          f"{label}: gc dry run: {r.returncode} {r.stdout!r} {r.stderr!r}")
    check(sorted(k["key"] for k in dry.get("candidate_keys", [])) == expected,
          f"{label}: the candidates are exactly {expected}: {dry.get('candidate_keys')}")
    check(dry.get("kept", {}).get("young", {}).get("files") == 1 and
          dry.get("kept", {}).get("leased", {}).get("files") == 1,
          f"{label}: one young file and one leased file kept: {dry.get('kept')}")
    check(dry.get("kept", {}).get("metadata", {}).get("files", 0) >= 2,
          f"{label}: the metadata files are never candidates: {dry.get('kept')}")
    reach = dry.get("reachable", {})
    check(reach.get("data", {}).get("files") == 3 and reach.get("delete", {}).get("files") == 1
          and reach.get("deleted-entry", {}).get("files") == 1
          and reach.get("manifest", {}).get("files") == 3
          and reach.get("manifest-list", {}).get("files") == 1,
          f"{label}: reachable by class: {reach}")
    check(dry.get("candidates", {}).get("metadata-avro", {}).get("files") == 4 and
          dry.get("candidates", {}).get("data", {}).get("files") == 2,
          f"{label}: candidates by class: {dry.get('candidates')}")
    check(t.keys() | p.keys() == before, f"{label}: a dry run deletes nothing")
    print(f"  {label}: dry run: {json.dumps({k: dry.get(k) for k in ('reachable', 'kept', 'candidates')})}")

    # A missing manifest, then a damaged one: the walk fails, nothing is deleted.
    m2key = t.key(m2[0])
    m2bytes = run("store", "get", store, m2key).stdout
    check(run("store", "rm", store, m2key).returncode == 0, f"{label}: rm M2")
    for what in ("missing", "damaged"):
        if what == "damaged":
            check(run("store", "put", store, m2key,
                      stdin=b"Obj\x01" + os.urandom(len(m2bytes) - 4)).returncode == 0,
                  f"{label}: damage M2")
        now = t.keys()
        r, out = gc(config, "--apply")
        check(r.returncode != 0 and out.get("ok") is False and
              out.get("deleted", {}).get("files") == 0,
              f"{label}: a {what} manifest fails the walk: {r.returncode} {r.stdout!r}")
        check(t.keys() == now, f"{label}: a {what} manifest: nothing is deleted")
    run("store", "rm", store, m2key)
    check(run("store", "put", store, m2key, stdin=m2bytes).returncode == 0,
          f"{label}: M2 restored")

    # --apply: exactly the candidates go, and the walk after the deletes holds. The young file
    # is written again first: the steps above may have taken longer than the grace period (they
    # do under the sanitizers), and its youth is what this checks.
    run("store", "rm", store, t.key(young))
    young = t.data("young.parquet")
    r, applied = gc(config, "--apply")
    check(r.returncode == 0 and applied.get("ok") is True and applied.get("rewalked") is True,
          f"{label}: gc --apply: {r.returncode} {r.stdout!r} {r.stderr!r}")
    after = t.keys() | p.keys()
    check(before - after == set(expected) and t.key(young) in after and t.key(prepared) in after
          and p.key(pd2) in after,
          f"{label}: exactly the candidates were deleted: {sorted(before - after)}")
    check(applied.get("deleted", {}).get("files") == 6, f"{label}: 6 deleted: {applied}")
    check(any(k.endswith(".metadata.json") for k in p.keys()),
          f"{label}: the purged table's metadata files stay (vacuum's rules): {p.keys()}")
    print(f"  {label}: applied: deleted {applied.get('deleted')}")
    retained_files_exist(label, server, tok, path, t, "after gc --apply", [p])

    # A path that points into the lake's store under another spelling: nothing is deleted.
    spelled = t.location.replace("://", ":/", 1) if t.location.startswith("file://") else \
        t.location.replace("/tables/", "//tables/", 1)
    odd = t.manifest("odd-m.avro", [(1, 0, f"{spelled}/data/d2.parquet")])
    odd_list = t.manifest_list("snap-3.avro", [(odd[0], odd[1], 0)], 3)
    st, _ = commit(server, tok, path, add_on_main(3, 2, 3, odd_list))
    check(st == 200, f"{label}: snapshot 3 (an odd spelling) committed: {st}")
    orphan2 = t.data("orphan-2.parquet")
    time.sleep(GRACE + 1.5)
    now = t.keys()
    r, out = gc(config, "--apply")
    check(r.returncode != 0 and "names no key" in out.get("reason", "") and t.keys() == now and
          t.key(orphan2) in now,
          f"{label}: a mismatched spelling fails the walk, nothing deleted: {r.stdout!r}")
    st, _ = commit(server, tok, path, [
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 2},
        {"action": "remove-snapshots", "snapshot-ids": [3]}])
    check(st == 200, f"{label}: snapshot 3 removed: {st}")
    st, _ = commit(server, tok, path, [{"action": "set-properties", "updates": {"x": "2"}}])

    # Concurrent commits: a writer adds snapshots (fresh files, committed at once) while gc
    # --apply runs round after round; after each round every retained file exists.
    stop = threading.Event()
    committed = []

    def writer():
        sid, parent = 10, 2
        while not stop.is_set():
            d = t.data(f"w{sid}.parquet")
            m = t.manifest(f"w{sid}-m.avro", [(1, 0, d)], snapshot=sid)
            lst = t.manifest_list(f"snap-{sid}.avro", [(m[0], m[1], 0)], sid)
            st, _ = commit(server, tok, path, add_on_main(sid, parent, sid, lst))
            if st == 200:
                committed.append(sid)
                parent = sid
            sid += 1

    th = threading.Thread(target=writer)
    th.start()
    rounds = 0
    try:
        for _ in range(4):
            r, out = gc(config, "--apply")
            rounds += 1
            check(r.returncode == 0 and out.get("rewalked") is True,
                  f"{label}: round {rounds}: {r.returncode} {r.stdout!r} {r.stderr!r}")
            retained_files_exist(label, server, tok, path, t, f"round {rounds}", [p])
            time.sleep(0.5)
    finally:
        stop.set()
        th.join(60)
    check(len(committed) >= 2, f"{label}: the writer committed meanwhile: {committed}")
    print(f"  {label}: {rounds} rounds beside {len(committed)} commits")


if __name__ == "__main__":
    catalog_stories("g", story)
