#!/usr/bin/env python3
"""perf/run_catalog_memory.py: `cairn serve`'s resident memory against the size of the lake
(issue 27 item 2, docs/performance.md "The catalog").

    python3 perf/run_catalog_memory.py BUILD/cli/cairn [--tables 10000] [--commits 10000]

On a directory store (memory does not depend on the store), three lakes: one of 10 tables, one
of TABLES tables, one whose single table has COMMITS commits (set-properties, so its metadata
file carries the metadata-log's 100 entries). For each lake and each `cache-bytes` setting (16
MiB and the default 256 MiB) a fresh server loads every table three times over; then it prints
the server's resident set (VmRSS) and peak (VmHWM), the table cache's own estimate of what it
holds (cairn_catalog_cache_bytes from /metrics) and its table count. The lake's size should
show only as the cache, up to its bound; the rest is the process and the lake's directory
(kept whole: a few hundred bytes per table, docs/catalog.md).
"""
import argparse
import http.client
import json
import os
import re
import sys
import tempfile
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "cli"))
from cli_support import CatalogServer, catalog_metrics, js, run  # noqa: E402

SCHEMA = {"type": "struct", "fields": [{"id": 1, "name": "x", "type": "long",
                                        "required": False}]}


def call(port, token, method, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
               "Idempotency-Key": str(uuid.uuid4())}
    for _ in range(100):
        conn.request(method, path, body=None if body is None else json.dumps(body),
                     headers=headers)
        r = conn.getresponse()
        raw = r.read()
        if r.status != 503:
            break
        time.sleep(0.02)
    conn.close()
    if r.status != 200:
        sys.exit(f"run_catalog_memory: {method} {path}: {r.status} {raw[:300]!r}")
    return json.loads(raw) if raw else {}


def parallel(items, fn, workers=8):
    todo, lock = list(items), threading.Lock()

    def work():
        while True:
            with lock:
                if not todo:
                    return
                item = todo.pop()
            fn(item)

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def metric(port, name):
    text = catalog_metrics(port)
    m = re.search(rf"^{name}\{{[^}}]*\}} (\S+)$", text, re.M)
    return float(m.group(1)) if m else float("nan")


def make_lake(tmp, name, tables, commits):
    config = os.path.join(tmp, f"{name}.json")
    store = os.path.join(tmp, f"store-{name}")
    if run("lake", "create", "--config", config, "--store", store, "--lake", name,
           "--json").returncode != 0:
        sys.exit("run_catalog_memory: lake create")
    token = js(run("token", "create", "--config", config, "--lake", name, "--role",
                   "read-write", "--json"))["token"]
    server = CatalogServer(config, name)
    started = time.monotonic()
    try:
        call(server.port, token, "POST", f"/v1/{name}/namespaces", {"namespace": ["n"]})
        paths = [f"/v1/{name}/namespaces/n/tables/t{i}" for i in range(tables)]
        parallel(range(tables), lambda i: call(server.port, token, "POST",
                                               f"/v1/{name}/namespaces/n/tables",
                                               {"name": f"t{i}", "schema": SCHEMA}))
        for c in range(commits):
            call(server.port, token, "POST", paths[0], {"requirements": [], "updates": [
                {"action": "set-properties", "updates": {"k": str(c)}}]})
    finally:
        server.stop()
    print(f"# lake {name}: {tables} tables, {commits} commits on the first, made in "
          f"{time.monotonic() - started:.0f} s", flush=True)
    return config, token, paths


def measure(config, token, paths, cache_bytes, label):
    with open(config) as f:
        c = json.load(f)
    c.setdefault("server", {})["cache-bytes"] = cache_bytes
    with open(config, "w") as f:
        json.dump(c, f)
    server = CatalogServer(config, label)
    try:
        pid = server.proc.pid
        idle = status_kib(pid, "VmRSS")
        passes = []
        for _ in range(3):
            t0 = time.monotonic()
            parallel(paths, lambda p: call(server.port, token, "GET", p))
            passes.append(time.monotonic() - t0)
        rss, hwm = status_kib(pid, "VmRSS"), status_kib(pid, "VmHWM")
        cached = metric(server.port, "cairn_catalog_cache_bytes")
        tables = metric(server.port, "cairn_catalog_cache_tables")
    finally:
        server.stop()
    row = {"lake": label, "cache_bytes_setting": cache_bytes, "rss_idle_kib": idle,
           "rss_kib": rss, "hwm_kib": hwm, "cache_estimate_bytes": cached,
           "cached_tables": tables, "pass_seconds": passes}
    print(f"{label:<28} cache-bytes {cache_bytes >> 20:>4} MiB: RSS idle {idle / 1024:6.1f} MiB, "
          f"after loads {rss / 1024:6.1f} MiB (peak {hwm / 1024:6.1f}), cache holds "
          f"{cached / 2**20:6.1f} MiB in {tables:.0f} tables; load passes "
          f"{', '.join(f'{x:.2f}' for x in passes)} s", flush=True)
    return row


def main():
    p = argparse.ArgumentParser()
    p.add_argument("cairn")
    p.add_argument("--tables", type=int, default=10000)
    p.add_argument("--commits", type=int, default=10000)
    p.add_argument("--json", default="")
    args = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        lakes = [("small", 10, 0), ("wide", args.tables, 0), ("deep", 1, args.commits)]
        made = {name: make_lake(tmp, name, t, c) for name, t, c in lakes}
        for cache in (16 << 20, 256 << 20):
            for name, t, c in lakes:
                config, token, paths = made[name]
                rows.append(measure(config, token, paths, cache,
                                    f"{name} ({t} tables, {c} commits)"))
    if args.json:
        with open(args.json, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
