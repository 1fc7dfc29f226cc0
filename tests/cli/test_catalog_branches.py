#!/usr/bin/env python3
"""Catalog branches through `cairn serve` (issue 25): a branch follows its parent until a table's
first write on it, then diverges, and main never changes from branch writes; branches of
branches follow their parent recursively and record where they forked; names, depth, TTL and
structure changes on a branch are refused with their reasons; `GET /v1/config?warehouse=LAKE~B`
resolves a branch as a catalog; a repeated Idempotency-Key on a branch's first write commits once;
of two racing first writes with the same requirement one lands and one gets 409; retention keeps
what a branch's refs hold and follows the branch's own policy; garbage collection (real Avro
manifests) keeps the files only a branch reaches, and frees them once the branch is dropped. On
the directory store and on RGW (required in CI).

Usage: test_catalog_branches.py /path/to/cairn
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_support import catalog_stories, check, js, run  # noqa: E402
from test_catalog_gc import Table  # noqa: E402

DAY = 24 * 3600 * 1000
LAKE = "b"
GRACE = 2


def snap(sid, parent, seq, ts, list_path):
    s = {"snapshot-id": sid, "sequence-number": seq, "timestamp-ms": ts, "schema-id": 0,
         "manifest-list": list_path, "summary": {"operation": "append"}}
    if parent is not None:
        s["parent-snapshot-id"] = parent
    return s


def on_main(sid, parent, seq, ts, list_path):
    return [{"action": "add-snapshot", "snapshot": snap(sid, parent, seq, ts, list_path)},
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
             "snapshot-id": sid}]


def story(label, store, config, server, tok):  # noqa: C901 (one story, step by step)
    call = server.call
    ro = js(run("token", "create", "--config", config, "--lake", LAKE, "--role", "read",
                "--json")).get("token", "")
    time.sleep(1.2)  # the server reads its configuration again at most once a second
    lake_tables = f"/v1/{LAKE}/namespaces/ns/tables"

    def tables(branch):
        return f"/v1/{LAKE}~{branch}/namespaces/ns/tables"

    def load(branch=None):
        st, got = call(tok, "GET", (tables(branch) if branch else lake_tables) + "/t")
        check(st == 200, f"{label}: load t on {branch or 'main'}: {st} {got}")
        return got

    def commit(branch, updates, requirements=(), headers=None):
        path = (tables(branch) if branch else lake_tables) + "/t"
        return call(tok, "POST", path, {"requirements": list(requirements), "updates": updates},
                    headers)

    def branch(name, **extra):
        body = {"name": name}
        body.update(extra)
        return call(tok, "POST", f"/v1/{LAKE}/branches", body)

    check(call(tok, "POST", f"/v1/{LAKE}/namespaces", {"namespace": ["ns"]})[0] == 200,
          f"{label}: namespace")
    schema = {"type": "struct", "fields": [{"id": 1, "name": "a", "type": "int", "required": False}]}
    st, created = call(tok, "POST", lake_tables, {"name": "t", "schema": schema})
    check(st == 200, f"{label}: create {st} {created}")
    t = Table(label, store, created["metadata"]["location"])
    now = int(time.time() * 1000)
    # main: 101 (9 days) <- 102 (8) <- 103 (7) <- 104 (half a day); each snapshot's manifest
    # list names one manifest naming one data file of its own.
    files = {}

    def snapshot_files(sid):
        d = t.data(f"d{sid}.parquet")
        m = t.manifest(f"m{sid}.avro", [(1, 0, d)], snapshot=sid)
        lst = t.manifest_list(f"snap-{sid}.avro", [(m[0], m[1], 0)], sid)
        files[sid] = [t.key(d), t.key(m[0]), t.key(lst)]
        return lst

    for seq, (sid, parent, age) in enumerate(((101, None, 9 * DAY), (102, 101, 8 * DAY),
                                              (103, 102, 7 * DAY)), start=1):
        st, res = commit(None, on_main(sid, parent, seq, now - age, snapshot_files(sid)))
        check(st == 200, f"{label}: snapshot {sid} on main: {st} {res}")

    # 1. A branch of main, made by a read-write token only; its names and limits.
    st, _ = call(ro, "POST", f"/v1/{LAKE}/branches", {"name": "dev"})
    check(st == 403, f"{label}: a read-only token cannot create a branch: {st}")
    st, dev = branch("dev", **{"min-snapshots-to-keep": 10})
    check(st == 200 and dev.get("name") == "dev" and dev.get("parent") is None and
          dev.get("depth") == 1 and dev.get("forked-tables") == [] and not dev.get("expired"),
          f"{label}: branch dev of main: {st} {dev}")
    st, again = branch("dev")
    check(st == 409 and again["error"]["reason"] == "already-exists", f"{label}: dev twice: {st}")
    for bad in ("main", "Dev", "a~b", "-x", "x" * 65, ""):
        st, res = branch(bad)
        check(st == 400 and res["error"]["reason"] == "invalid-branch",
              f"{label}: branch name {bad!r} refused: {st} {res}")
    st, res = branch("orphan", parent="nope")
    check(st == 404 and res["error"]["reason"] == "no-such-branch",
          f"{label}: a branch of a missing parent: {st} {res}")

    # 2. config resolves LAKE~BRANCH; an unknown branch is 404, another lake 403.
    st, cfg = call(tok, "GET", f"/v1/config?warehouse={LAKE}~dev")
    check(st == 200 and cfg["overrides"]["prefix"] == f"{LAKE}~dev",
          f"{label}: config resolves the branch: {st} {cfg}")
    st, res = call(tok, "GET", f"/v1/config?warehouse={LAKE}~nope")
    check(st == 404 and res["error"]["reason"] == "no-such-branch", f"{label}: config ~nope: {st}")
    st, _ = call(tok, "GET", "/v1/config?warehouse=other~dev")
    check(st == 403, f"{label}: config of another lake's branch: {st}")
    st, res = call(tok, "GET", tables("nope") + "/t")
    check(st == 404 and res["error"]["reason"] == "no-such-branch", f"{label}: load on ~nope: {st}")

    # 3. Until its first write, dev follows main, also when main moves on.
    main3 = load()
    check(load("dev")["metadata-location"] == main3["metadata-location"],
          f"{label}: dev shows main's state")
    st, listed = call(tok, "GET", tables("dev"))
    check(st == 200 and listed["identifiers"] == [{"namespace": ["ns"], "name": "t"}],
          f"{label}: dev lists main's tables: {listed}")
    st, _ = commit(None, on_main(104, 103, 4, now - DAY // 2, snapshot_files(104)))
    check(st == 200, f"{label}: snapshot 104 on main")
    main4 = load()
    check(load("dev")["metadata-location"] == main4["metadata-location"],
          f"{label}: dev follows main to 104")

    # 4. The first write on dev: a branch-local log; main does not change.
    st, b1 = commit("dev", on_main(501, 104, 5, now, snapshot_files(501)),
                    [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 104}])
    check(st == 200 and b1["metadata"]["current-snapshot-id"] == 501,
          f"{label}: the first write on dev: {st} {b1}")
    check(load()["metadata-location"] == main4["metadata-location"],
          f"{label}: main is unchanged by dev's write")
    check(load("dev")["metadata-location"] == b1["metadata-location"], f"{label}: dev shows it")
    st, dev = call(tok, "GET", f"/v1/{LAKE}/branches/dev")
    forked = dev.get("forked-tables", [])
    check(st == 200 and len(forked) == 1 and
          forked[0]["table-uuid"] == created["metadata"]["table-uuid"] and
          forked[0]["from-branch"] is None and
          forked[0]["from-metadata-location"] == main4["metadata-location"],
          f"{label}: the fork's provenance is main's state it started from: {dev}")
    # main moves on; dev does not follow any more.
    st, _ = commit(None, [{"action": "set-properties", "updates": {"on": "main"}}])
    check(st == 200, f"{label}: main moves on")
    check(load("dev")["metadata-location"] == b1["metadata-location"],
          f"{label}: dev diverged: main's commits no longer show")
    check(load()["metadata"]["properties"].get("on") == "main" and
          load("dev")["metadata"]["properties"].get("on") is None,
          f"{label}: each has its own state")
    # Time travel on dev: its own versions.
    st, v1 = call(tok, "GET", tables("dev") + "/t?as-of=version:1")
    check(st == 200 and v1["metadata-location"] == b1["metadata-location"],
          f"{label}: dev's version 1 is its first write: {st}")

    # 5. A branch of dev follows dev (not main), then forks from dev.
    st, feat = branch("feature", parent="dev")
    check(st == 200 and feat.get("depth") == 2 and feat.get("parent") == "dev",
          f"{label}: feature of dev: {st} {feat}")
    check(load("feature")["metadata-location"] == b1["metadata-location"],
          f"{label}: feature follows dev")
    st, f1 = commit("feature", [{"action": "set-properties", "updates": {"on": "feature"}}])
    check(st == 200, f"{label}: the first write on feature: {st}")
    st, feat = call(tok, "GET", f"/v1/{LAKE}/branches/feature")
    fk = feat["forked-tables"][0]
    check(fk["from-branch"] == "dev" and fk["from-metadata-location"] == b1["metadata-location"],
          f"{label}: feature forked from dev's state: {fk}")
    check(load("dev")["metadata-location"] == b1["metadata-location"] and
          load()["metadata"]["properties"].get("on") == "main",
          f"{label}: feature's write changes neither dev nor main")

    # 6. Depth: 8 deep at most.
    parent = "feature"
    for depth in range(3, 9):
        st, res = branch(f"deep{depth}", parent=parent)
        check(st == 200 and res.get("depth") == depth, f"{label}: depth {depth}: {st} {res}")
        parent = f"deep{depth}"
    check(load("deep8")["metadata"]["properties"].get("on") == "feature",
          f"{label}: 8 deep, the table follows feature's state")
    st, res = branch("deep9", parent=parent)
    check(st == 400 and res["error"]["reason"] == "branch-too-deep",
          f"{label}: a 9th level is refused: {st} {res}")

    # 7. On a branch, only tables are loaded and committed to.
    for method, path, body in (
            ("POST", f"/v1/{LAKE}~dev/namespaces", {"namespace": ["x"]}),
            ("POST", tables("dev"), {"name": "u", "schema": schema}),
            ("DELETE", tables("dev") + "/t", None),
            ("POST", tables("dev") + "/t/leases", {"ttl-seconds": 60, "snapshot-id": 501}),
            ("POST", f"/v1/{LAKE}~dev/branches", {"name": "x"}),
            ("POST", f"/v1/{LAKE}~dev/namespaces/ns/register",
             {"name": "r", "metadata-location": main4["metadata-location"]}),
            ("POST", f"/v1/{LAKE}~dev/tables/rename",
             {"source": {"namespace": ["ns"], "name": "t"},
              "destination": {"namespace": ["ns"], "name": "t2"}}),
            ("POST", f"/v1/{LAKE}~dev/namespaces/ns/properties", {"updates": {"a": "b"}}),
            ("DELETE", f"/v1/{LAKE}~dev/namespaces/ns", None)):
        st, res = call(tok, method, path, body)
        check(st == 406 and res["error"]["reason"] == "not-on-branch",
              f"{label}: {method} {path} on a branch: {st} {res}")
    st, _ = call(tok, "PUT", tables("dev") + "/t", {})
    check(st == 405, f"{label}: a method the route does not serve is 405 on a branch too: {st}")
    st, _ = call(ro, "POST", tables("dev") + "/t", {"requirements": [], "updates": []})
    check(st == 403, f"{label}: a read-only token cannot commit on a branch: {st}")
    st, res = call(tok, "DELETE", f"/v1/{LAKE}/branches/dev")
    check(st == 409 and res["error"]["reason"] == "branch-has-branches",
          f"{label}: dev has branches of its own: {st} {res}")

    # 8. A repeated Idempotency-Key on a first write commits once.
    check(branch("k")[0] == 200, f"{label}: branch k")
    key = {"Idempotency-Key": "0190b9e2-9d41-7c3e-a2b4-4f7c8e1d2a3b"}
    upd = [{"action": "set-properties", "updates": {"on": "k"}}]
    st1, k1 = commit("k", upd, headers=key)
    st2, k2 = commit("k", upd, headers=key)
    check(st1 == 200 and st2 == 200 and k1["metadata-location"] == k2["metadata-location"],
          f"{label}: the same key answers the first result: {st1} {st2}")
    st, kv = call(tok, "GET", tables("k") + "/t?as-of=version:2")
    check(st == 404, f"{label}: k's log holds one commit: {st}")

    # 9. Two racing first writes on one branch with the same requirement: one lands, one 409.
    check(branch("race")[0] == 200, f"{label}: branch race")
    main_now = load()["metadata"]["current-snapshot-id"]

    def racing(request):
        """request(i) by two threads released at once; the answers."""
        results, start = [], threading.Barrier(2)

        def run_one(i):
            start.wait()
            results.append(request(i))
        threads = [threading.Thread(target=run_one, args=(i,)) for i in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        return results

    # Both requirements hold for both; the race is on the branch-local log.
    results = racing(lambda i: commit(
        "race", [{"action": "set-properties", "updates": {"w": str(i)}}],
        [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": main_now},
         {"type": "assert-last-assigned-field-id", "last-assigned-field-id": 1}]))
    codes = sorted(r[0] for r in results)
    check(all(c == 200 for c in codes), f"{label}: both racers land (no requirement conflicts, "
          f"the loser rebases onto the winner's fork): {codes}")
    st, race = call(tok, "GET", f"/v1/{LAKE}/branches/race")
    check(len(race["forked-tables"]) == 1, f"{label}: one branch-local log: {race}")
    st, v2 = call(tok, "GET", tables("race") + "/t?as-of=version:2")
    check(st == 200, f"{label}: the second racer committed onto the first's log: {st}")
    # With a requirement that only one can meet: one 409.
    check(branch("race2")[0] == 200, f"{label}: branch race2")
    last_updated = load()["metadata"]["last-updated-ms"]
    results = racing(lambda i: commit(
        "race2", on_main(600 + i, 104, 10, last_updated, f"{t.location}/metadata/snap-104.avro"),
        [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": main_now}]))
    codes = sorted(r[0] for r in results)
    check(codes == [200, 409], f"{label}: of two first writes asserting main={main_now}, one "
          f"lands and one gets 409: {codes} {[r[1].get('error') for r in results]}")

    # 10. TTL: an expired branch refuses writes and is reported.
    check(branch("short", **{"ttl-seconds": 1})[0] == 200, f"{label}: branch short")
    time.sleep(1.5)
    st, res = commit("short", upd)
    check(st == 403 and res["error"]["reason"] == "branch-expired",
          f"{label}: an expired branch refuses writes: {st} {res}")
    check(load("short")["metadata-location"] == load()["metadata-location"],
          f"{label}: it is still read")
    r = run("lake", "status", "--config", config, "--lake", LAKE, "--json")
    by_name = {b["branch"]: b for b in js(r).get("branches", [])}
    check(r.returncode == 0 and by_name.get("short", {}).get("expired") is True and
          by_name.get("dev", {}).get("forked_tables") == 1 and
          by_name.get("deep8", {}).get("depth") == 8,
          f"{label}: lake status reports the branches: {r.stdout!r}")

    # 11. Retention. pin rolls t back to 102 on its branch: main must keep 102 (a branch's ref
    # holds it); main expires 101 and 103 (older than 5 days, beyond min 1). dev keeps all
    # (its min-snapshots-to-keep is 10).
    check(branch("pin")[0] == 200, f"{label}: branch pin")
    st, _ = commit("pin", [{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                            "snapshot-id": 102}])
    check(st == 200, f"{label}: pin rolls back to 102: {st}")
    r = run("lake", "expire", "--config", config, "--lake", LAKE, "--json")
    plans = js(r).get("tables", [])
    main_plan = [p for p in plans if "branch" not in p][0]
    dev_plan = [p for p in plans if p.get("branch") == "dev"][0]
    short_plan = [p for p in plans if p.get("branch") == "short"]
    check(r.returncode == 0 and
          sorted(x["snapshot_id"] for x in main_plan.get("expire", [])) == [101, 103] and
          [x["snapshot_id"] for x in main_plan.get("kept_for_catalog", [])] == [102],
          f"{label}: main expires 101 and 103, keeps 102 for pin: {main_plan}")
    check(dev_plan.get("expire") == [], f"{label}: dev's policy keeps everything: {dev_plan}")
    check(short_plan == [], f"{label}: short never forked t: not planned")
    r = run("lake", "expire", "--config", config, "--lake", LAKE, "--table", "ns.t", "--apply",
            "--json")
    check(r.returncode == 0, f"{label}: expire --apply: {r.stdout!r} {r.stderr!r}")
    main_snaps = sorted(s["snapshot-id"] for s in load()["metadata"]["snapshots"])
    dev_snaps = sorted(s["snapshot-id"] for s in load("dev")["metadata"]["snapshots"])
    check(101 not in main_snaps and 103 not in main_snaps and 102 in main_snaps,
          f"{label}: main after expire: {main_snaps}")
    check(dev_snaps == [101, 102, 103, 104, 501], f"{label}: dev untouched: {dev_snaps}")

    # 12. Garbage collection: 501's files are reachable from dev's and feature's logs only: kept
    # while those branches live. A lease on main's current snapshot (held on main's own log)
    # does not trouble the walk of the branch-local logs.
    # 105 is main's only: no branch-local log has it.
    st, _ = commit(None, on_main(105, 104, 20, int(time.time() * 1000), snapshot_files(105)))
    check(st == 200, f"{label}: snapshot 105 on main: {st}")
    st, lease = call(tok, "POST", lake_tables + "/t/leases", {"ttl-seconds": 600, "snapshot-id": 105})
    check(st == 200, f"{label}: a lease on main's current snapshot: {st} {lease}")
    time.sleep(GRACE + 1)

    def gc(*extra):
        r = run("lake", "gc", "--config", config, "--lake", LAKE, "--grace-seconds", str(GRACE),
                "--json", *extra)
        return r, js(r)

    r, dry = gc()
    branch_only = set(files[501])
    check(r.returncode == 0 and dry.get("branch_logs") == 6 and
          not branch_only & set(k["key"] for k in dry.get("candidate_keys", [])),
          f"{label}: gc keeps what only branches reach: {r.stdout[:800]!r}")
    # Drop every branch that holds 501 (feature's chain first, then dev): 501's files go.
    for name in ["deep8", "deep7", "deep6", "deep5", "deep4", "deep3", "feature", "dev"]:
        st, _ = call(tok, "DELETE", f"/v1/{LAKE}/branches/{name}")
        check(st == 204, f"{label}: drop {name}: {st}")
    st, _ = call(tok, "GET", tables("dev") + "/t")
    check(st == 404, f"{label}: a dropped branch is gone: {st}")
    r, applied = gc("--apply")
    deleted = set(k["key"] for k in applied.get("candidate_keys", []))
    check(r.returncode == 0 and set(files[501]) <= deleted and
          not (set(files[101]) | set(files[102]) | set(files[104])) & deleted,
          f"{label}: after the drops gc frees 501's files and keeps what main's and pin's "
          f"retained versions reach: {sorted(deleted)}")
    present = t.keys()
    check(all(k in present for k in files[102] + files[104] + files[101]),
          f"{label}: what main and pin reach is all there")


if __name__ == "__main__":
    catalog_stories(LAKE, story)
