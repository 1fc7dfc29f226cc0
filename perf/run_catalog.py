#!/usr/bin/env python3
"""perf/run_catalog.py: `cairn serve` under load beside the store's own limit for the same
request pattern, in one run against the same RGW (issue 27, docs/performance.md "The catalog").

    python3 perf/run_catalog.py BUILD/engine/cairn BUILD/perf/cairn_catalog_bench

with the S3_* variables of ../shared/s3/start-rgw.sh set. Each point runs SECONDS (default 10)
with cairn_catalog_bench (C++, one keep-alive connection per worker):

  raw     the store's pattern done directly with cairn's S3 client at the same concurrency: a
          commit is 2 head GETs, 4 PUTs at once and the conditional PUT (sizes those of the
          catalog's own objects, read from the lake after the run); a load, the 2 head GETs;
  commit  set-properties commits through 1 and 2 server processes with 1, 16 and 64
          committers, on independent tables (one per committer) and on one shared table (the
          rebases and 503s counted from the servers' /metrics);
  load    warm loads (each table loaded once before the clock starts) of 1 and of 1,000 tables
          at 16 readers through 1 and 2 processes (the one table against the raw pattern with
          one table head for all workers, as its loads read); cold loads: a fresh process's first load of
          each of the 1,000 tables (16 at once), and of the one table (the median of 5 fresh
          processes).

Before each point every process used answers one request (a namespace list), so that none
starts the clock behind on the lake log: a process that missed many lake changes reads them
all on its next request, one manifest GET per run of up to 64 changes and a segment GET per
change (docs/catalog.md, "Reads, caches and costs"); that cost shows in the cold loads, not in
the steady-state points.

Every figure is printed with its ratio to the raw pattern measured in the same run, and the
CPU seconds the machine, the S3 server (radosgw and its Ceph daemons), the catalog processes
and the bench spent on it: on a 2-core machine shared by all of them, the cores are the limit
(the table says when the machine was busy). JSON lines go to --json FILE as well.
"""
import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "cli"))
sys.path.insert(0, HERE)
from cli_support import CatalogServer, catalog_metrics, js, run, s3_url  # noqa: E402
from cpu_share import TICK, machine, server as rgw_jiffies  # noqa: E402

LAKE = "bench"
SCHEMA = {"type": "struct", "fields": [{"id": 1, "name": "x", "type": "long",
                                        "required": False}]}


def jiffies(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except OSError:
        return 0


def rss_kib(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


class Cpu:
    """CPU seconds spent between start and stop: the machine's, RGW's, the servers'."""

    def __init__(self, servers):
        self.pids = [s.proc.pid for s in servers]
        self.m0, self.r0 = machine()[0], rgw_jiffies()
        self.s0 = sum(jiffies(p) for p in self.pids)

    def stop(self):
        return {"machine_cpu_s": (machine()[0] - self.m0) / TICK,
                "rgw_cpu_s": (rgw_jiffies() - self.r0) / TICK,
                "serve_cpu_s": (sum(jiffies(p) for p in self.pids) - self.s0) / TICK}


def call(port, token, method, path, body=None, key=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    if key:
        headers["Idempotency-Key"] = key
    conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
    r = conn.getresponse()
    raw = r.read()
    conn.close()
    return r.status, (json.loads(raw) if raw else {})


def until_ok(port, token, method, path, body=None):
    key = str(uuid.uuid4())
    for _ in range(100):
        status, reply = call(port, token, method, path, body, key)
        if status == 200:
            return reply
        if status not in (503, 504):
            sys.exit(f"run_catalog: {method} {path}: {status} {reply}")
        time.sleep(0.05)
    sys.exit(f"run_catalog: {method} {path}: still {status}")


def create_tables(port, token, ns, names, workers=4):
    until_ok(port, token, "POST", f"/v1/{LAKE}/namespaces", {"namespace": [ns]})
    todo = list(names)
    lock = threading.Lock()

    def work():
        while True:
            with lock:
                if not todo:
                    return
                name = todo.pop()
            until_ok(port, token, "POST", f"/v1/{LAKE}/namespaces/{ns}/tables",
                     {"name": name, "schema": SCHEMA})

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [f"/v1/{LAKE}/namespaces/{ns}/tables/{n}" for n in names]


def commits_by_outcome(servers):
    total = {}
    for s in servers:
        for m in re.finditer(r'^cairn_catalog_commits_total\{outcome="(\w+)"\} (\S+)$',
                             catalog_metrics(s.port), re.M):
            total[m.group(1)] = total.get(m.group(1), 0) + int(float(m.group(2)))
    return total


class Bench:
    def __init__(self, args, token):
        self.args = args
        self.token = token
        self.results = []

    def run(self, label, mode, concurrency, servers=(), tables=(), extra=()):
        cmd = [self.args.bench, mode, "--concurrency", str(concurrency), "--seconds",
               str(self.args.seconds), *extra]
        if servers:
            cmd += ["--endpoints", ",".join(f"127.0.0.1:{s.port}" for s in servers),
                    "--token", self.token, "--tables", ",".join(tables)]
        for s in servers:  # each process catches up with the lake log before the clock starts
            call(s.port, self.token, "GET", f"/v1/{LAKE}/namespaces")
        before = commits_by_outcome(servers) if mode == "commit" else {}
        cpu = Cpu(servers)
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"run_catalog: {label}: {r.stderr}")
        out = json.loads(r.stdout)
        out.update(cpu.stop())
        out["label"] = label
        if mode == "commit":
            after = commits_by_outcome(servers)
            out["server_outcomes"] = {k: after.get(k, 0) - before.get(k, 0) for k in after}
        self.results.append(out)
        return out


def ratio(a, b):
    return a / b if b else float("nan")


def line(out, raw=None):
    text = (f"{out['label']:<44} {out['per_second']:>8.1f}/s  p50 {out['p50_ms']:>7.1f} ms  "
            f"p99 {out['p99_ms']:>7.1f} ms")
    if raw:
        text += f"  {ratio(out['per_second'], raw['per_second']):>5.2f}x raw"
    text += (f"  cpu: machine {out['machine_cpu_s'] / out['seconds']:.2f}, "
             f"rgw {out['rgw_cpu_s'] / out['seconds']:.2f}, "
             f"serve {out['serve_cpu_s'] / out['seconds']:.2f} cores")
    extra = {k: v for k, v in out["outcomes"].items() if k not in ("200", "ok")}
    if extra:
        text += f"  other answers {extra}"
    if out.get("server_outcomes"):
        so = out["server_outcomes"]
        text += (f"  rebased {so.get('rebased', 0)} conflict {so.get('conflict', 0)} "
                 f"unknown {so.get('unknown', 0)}")
    print(text, flush=True)


def cold_loads(args, config, token, tables, workers=16):
    """A fresh process, each table loaded once, `workers` at a time: (rate, p50, p99)."""
    server = CatalogServer(config, "cold")
    lat, lock, todo = [], threading.Lock(), list(tables)
    try:
        start = time.monotonic()

        def work():
            while True:
                with lock:
                    if not todo:
                        return
                    t = todo.pop()
                t0 = time.monotonic()
                status, _ = call(server.port, token, "GET", t)
                if status != 200:
                    sys.exit(f"run_catalog: cold load {t}: {status}")
                with lock:
                    lat.append((time.monotonic() - t0) * 1000)

        threads = [threading.Thread(target=work) for _ in range(min(workers, len(tables)))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - start
    finally:
        server.stop()
    lat.sort()
    return len(lat) / wall, lat[len(lat) // 2], lat[min(len(lat) - 1, int(0.99 * len(lat)))]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("cairn")
    p.add_argument("bench")
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--load-tables", type=int, default=1000)
    p.add_argument("--json", default="")
    args = p.parse_args()
    store = s3_url()
    if store is None:
        sys.exit("run_catalog: needs RGW (S3_* variables)")
    with tempfile.TemporaryDirectory() as tmp:
        measure(args, store, tmp)


def measure(args, store, tmp):
    config = os.path.join(tmp, "catalog.json")
    r = run("lake", "create", "--config", config, "--store", store, "--lake", LAKE, "--json")
    if r.returncode != 0:
        sys.exit(f"run_catalog: lake create: {r.stderr}")
    token = js(run("token", "create", "--config", config, "--lake", LAKE, "--role",
                   "read-write", "--json"))["token"]
    with open(config) as f:
        c = json.load(f)
    c.setdefault("server", {})["max-in-flight"] = 256
    with open(config, "w") as f:
        json.dump(c, f)
    one = [CatalogServer(config, "a")]
    two = one + [CatalogServer(config, "b")]
    bench = Bench(args, token)
    try:
        started = time.monotonic()
        independent = create_tables(one[0].port, token, "ind", [f"t{i}" for i in range(64)])
        shared = create_tables(one[0].port, token, "shared", ["t"])
        many = create_tables(one[0].port, token, "many",
                             [f"t{i}" for i in range(args.load_tables)])
        print(f"setup: {64 + 1 + args.load_tables} tables in {time.monotonic() - started:.0f} s",
              flush=True)

        print("\n# commits (set-properties, no requirement)")
        for n in (1, 16, 64):
            outs = []
            for label, servers in (("1 process", one), ("2 processes", two)):
                outs.append(bench.run(f"commits, independent, {n}, {label}", "commit", n,
                                      servers, independent[:n]))
            outs.append(bench.run(f"commits, one shared table, {n}, 1 process", "commit", n,
                                  one, shared))
            # The raw pattern with the sizes of the catalog's objects: the tables' metadata
            # files now (they grow with the metadata-log, to 100 entries), a commit's segment
            # and manifest (547 and about 790 bytes, measured on a directory store).
            sizes = [len(json.dumps(call(one[0].port, token, "GET", t)[1]["metadata"],
                                    separators=(",", ":"))) for t in independent[:n]]
            raw = bench.run(f"raw commit pattern, {n} workers", "raw-commit", n, extra=[
                "--metadata-bytes", str(int(statistics.mean(sizes))), "--segment-bytes", "547",
                "--manifest-bytes", "790", "--prefix", f"catalog-bench-{uuid.uuid4()}"])
            line(raw)
            for out in outs:
                line(out, raw)

        print("\n# loads, 16 readers")
        raw = bench.run("raw load pattern (2 head GETs), 16 workers", "raw-load", 16,
                        extra=["--prefix", f"catalog-bench-{uuid.uuid4()}"])
        line(raw)
        one_head = bench.run("raw load pattern, one table head for all, 16 workers", "raw-load",
                             16, extra=["--prefix", f"catalog-bench-{uuid.uuid4()}",
                                        "--one-table"])
        line(one_head)
        for label, tables, base in (("1 table", shared, one_head),
                                    (f"{len(many)} tables", many, raw)):
            for s in two:  # warm both processes' caches
                for t in tables:
                    call(s.port, token, "GET", t)
            for plabel, servers in (("1 process", one), ("2 processes", two)):
                out = bench.run(f"warm loads, {label}, {plabel}", "load", 16, servers, tables)
                line(out, base)
        rate, p50, p99 = cold_loads(args, config, token, many)
        print(f"{'cold loads, ' + str(len(many)) + ' tables, fresh process':<44} {rate:>8.1f}/s"
              f"  p50 {p50:>7.1f} ms  p99 {p99:>7.1f} ms  {rate / raw['per_second']:>5.2f}x raw")
        firsts = [cold_loads(args, config, token, shared)[1] for _ in range(5)]
        print(f"{'cold load, 1 table, fresh process (x5)':<44} median "
              f"{statistics.median(firsts):.1f} ms (range {min(firsts):.1f}-{max(firsts):.1f})")
        bench.results.append({"label": "cold loads", "per_second": rate, "p50_ms": p50,
                              "p99_ms": p99, "first_load_ms": firsts})
    finally:
        for s in two:
            s.stop()
    if args.json:
        with open(args.json, "w") as f:
            for r in bench.results:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
