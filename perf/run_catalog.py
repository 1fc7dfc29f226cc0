#!/usr/bin/env python3
"""perf/run_catalog.py: `cairn serve` under load beside the store's own limit for the same
request pattern, in one run against the same RGW (issue 27, docs/performance.md "The catalog").

    python3 perf/run_catalog.py BUILD/cli/cairn BUILD/perf/cairn_catalog_bench

with the S3_* variables of ../shared/s3/start-rgw.sh set. Each point runs SECONDS (default 10)
with cairn_catalog_bench (C++, one keep-alive connection per worker):

  raw     the store's pattern done directly with cairn's S3 client at the same concurrency: a
          commit is 2 head GETs, 4 PUTs at once and the conditional PUT (of the mean sizes of
          the metadata files, segments and manifests that the catalog's commits at that
          concurrency wrote, from listings of the store before and after them); a load, the 2
          head GETs;
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

The commit and load points and their raw patterns are measured --rounds times in turn (default
3); the summary gives each point's median rate and the median and range of its ratios, each
ratio taken against the raw pattern measured beside it in the same round (the store's own rate
moves by a third from minute to minute on this machine).

Every figure is printed with its ratio to the raw pattern measured in the same round, and the
CPU seconds the machine, the S3 server (radosgw and its Ceph daemons), the catalog processes
and the bench spent on it: on a 2-core machine shared by all of them, the cores are the limit
(the table says when the machine was busy). JSON lines go to --json FILE as well.

Placement (optional, a local RGW only): SERVER_CPUS and CLIENT_CPUS, CPU lists as taskset takes
them (e.g. 0 and 1), pin the store's processes (radosgw and its Ceph daemons, every thread) to
the first, and this script with everything it starts (the catalog processes, the bench) to the
second, so that the store does not share its cores with the catalog, as a store on machines of
its own would not. The raw patterns run under the same placement; at the end the store's
processes may run on every CPU again.
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
from cpu_share import TICK, machine, place_server, server as rgw_jiffies  # noqa: E402

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


def metric_sums(servers, pattern):
    """The servers' /metrics samples that `pattern` matches, summed by its first group (the
    second is the value)."""
    total = {}
    for s in servers:
        for m in re.finditer(pattern, catalog_metrics(s.port), re.M):
            total[m.group(1)] = total.get(m.group(1), 0) + int(float(m.group(2)))
    return total


def commits_by_outcome(servers):
    return metric_sums(servers, r'^cairn_catalog_commits_total\{outcome="(\w+)"\} (\S+)$')


def store_operations(servers):
    """The store operations the servers sent, by kind (every outcome)."""
    return metric_sums(servers,
                       r'^cairn_store_operations_total\{[^}]*op="(\w+)"[^}]*\} (\S+)$')


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
        ops_before = store_operations(servers)
        cpu = Cpu(servers)
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"run_catalog: {label}: {r.stderr}")
        out = json.loads(r.stdout)
        out.update(cpu.stop())
        out["label"] = label
        if servers:
            ops = store_operations(servers)
            done = sum(out["outcomes"].values())
            out["store_ops_per_op"] = {k: (v - ops_before.get(k, 0)) / done
                                       for k, v in ops.items()
                                       if done and v - ops_before.get(k, 0)}
        if mode == "commit":
            after = commits_by_outcome(servers)
            out["server_outcomes"] = {k: after.get(k, 0) - before.get(k, 0) for k in after}
        self.results.append(out)
        return out


def cpu_list(text):
    """The CPUs of a taskset list ("0", "0-1", "0,2-3")."""
    cpus = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def place_store(cpus):
    """Pins every thread of the local store's processes to cpus (a taskset list)."""
    if not place_server(cpus):
        sys.exit("run_catalog: SERVER_CPUS is set but no local RGW process runs")


def ratio(a, b):
    return a / b if b else float("nan")


def line(out, raw=None):
    text = (f"{out['label']:<44} {out['per_second']:>8.1f}/s  p50 {out['p50_ms']:>7.1f} ms  "
            f"p99 {out['p99_ms']:>7.1f} ms")
    if raw:
        out["ratio"] = ratio(out["per_second"], raw["per_second"])
        text += f"  {out['ratio']:>5.2f}x raw"
    text += (f"  cpu: machine {out['machine_cpu_s'] / out['seconds']:.2f}, "
             f"rgw {out['rgw_cpu_s'] / out['seconds']:.2f}, "
             f"serve {out['serve_cpu_s'] / out['seconds']:.2f} cores")
    if out.get("store_ops_per_op"):
        text += "  store ops each: " + " ".join(
            f"{k} {v:.2f}" for k, v in sorted(out["store_ops_per_op"].items()))
    extra = {k: v for k, v in out["outcomes"].items() if k not in ("200", "ok")}
    if extra:
        text += f"  other answers {extra}"
    if out.get("server_outcomes"):
        so = out["server_outcomes"]
        text += (f"  rebased {so.get('rebased', 0)} conflict {so.get('conflict', 0)} "
                 f"unknown {so.get('unknown', 0)}")
    print(text, flush=True)


def object_sizes(store):
    """Every object under the lake's store root: key -> size."""
    r = run("store", "ls", "--json", "--timeout", "900", store, timeout=960)
    if r.returncode != 0:
        sys.exit(f"run_catalog: store ls: {r.stderr}")
    return {o["key"]: o["size"] for o in js(r)["objects"]}


def written_sizes(before, after):
    """The mean size of each kind of object a commit writes, over those written between two
    listings: the metadata files, the log's segments and its manifests (which grow as a run of
    manifests grows to 64 segments, docs/decisions/0048-catalog-log-manifests-come-runs.md)."""
    kinds = {"metadata": [], "segment": [], "manifest": []}
    for key, size in after.items():
        if key in before:
            continue
        if key.endswith(".metadata.json"):
            kinds["metadata"].append(size)
        elif "-segment-" in key:
            kinds["segment"].append(size)
        elif "-manifest-" in key:
            kinds["manifest"].append(size)
    if not all(kinds.values()):
        sys.exit(f"run_catalog: no commit's objects found in the store listing: "
                 f"{ {k: len(v) for k, v in kinds.items()} }")
    return {k: int(statistics.mean(v)) for k, v in kinds.items()}


def summary(results, rounds):
    """Per point, the median rate and the median and range of its ratios over the rounds (each
    ratio against the raw pattern measured next to it, in the same round)."""
    points = {}
    for r in results:
        points.setdefault(r["label"], []).append(r)
    print(f"\n# over {rounds} round(s): median rate, median ratio to the raw pattern (range)")
    for label, outs in points.items():
        rate = statistics.median(o["per_second"] for o in outs)
        text = f"{label:<44} {rate:>8.1f}/s"
        ratios = [o["ratio"] for o in outs if "ratio" in o]
        if ratios:
            text += (f"  {statistics.median(ratios):>5.2f}x raw"
                     f" ({min(ratios):.2f}-{max(ratios):.2f})")
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
    p.add_argument("--loads-only", action="store_true",
                   help="skip the commit points (the loads, warm and cold, only)")
    p.add_argument("--rounds", type=int, default=3,
                   help="each point and its raw pattern, measured this many times in turn")
    p.add_argument("--json", default="")
    args = p.parse_args()
    if args.rounds < 1:
        p.error("--rounds is at least 1")
    store = s3_url()
    if store is None:
        sys.exit("run_catalog: needs RGW (S3_* variables)")
    server_cpus = os.environ.get("SERVER_CPUS", "")
    client_cpus = os.environ.get("CLIENT_CPUS", "")
    if bool(server_cpus) != bool(client_cpus):
        sys.exit("run_catalog: set SERVER_CPUS and CLIENT_CPUS together, or neither")
    args.placement = ""
    if server_cpus:
        try:
            client = cpu_list(client_cpus)
            cpu_list(server_cpus)
        except ValueError:
            sys.exit("run_catalog: SERVER_CPUS and CLIENT_CPUS are CPU lists (0, 0-1, 0,2-3)")
        if not client <= os.sched_getaffinity(0):
            sys.exit(f"run_catalog: CLIENT_CPUS {client_cpus} is not among this machine's CPUs")
    try:
        if server_cpus:
            place_store(server_cpus)
            os.sched_setaffinity(0, client)  # inherited by all this script starts
            args.placement = (f"store on CPUs {server_cpus}, catalog and bench on CPUs "
                              f"{client_cpus}")
            print(f"# placement: {args.placement}", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            measure(args, store, tmp)
    finally:
        if server_cpus:
            place_store(f"0-{os.cpu_count() - 1}")


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

        if args.loads_only:  # the one table's metadata-log fills (to 100 entries) as commits would
            for i in range(120):
                until_ok(one[0].port, token, "POST", shared[0], {
                    "requirements": [],
                    "updates": [{"action": "set-properties", "updates": {"k": str(i)}}]})
        raw_spread = None
        for rnd in range(1, args.rounds + 1):
            if not args.loads_only:
                print(f"\n# round {rnd} of {args.rounds}: commits (set-properties, no "
                      "requirement)")
            for n in () if args.loads_only else (1, 16, 64):
                outs = []
                listed = object_sizes(store)
                for label, servers in (("1 process", one), ("2 processes", two)):
                    outs.append(bench.run(f"commits, independent, {n}, {label}", "commit", n,
                                          servers, independent[:n]))
                # The raw pattern with the sizes of the objects these commits wrote: metadata
                # files (they grow with the metadata-log, to 100 entries), segments and
                # manifests (0.6 to 12 KB as a run grows).
                sizes = written_sizes(listed, object_sizes(store))
                outs.append(bench.run(f"commits, one shared table, {n}, 1 process", "commit", n,
                                      one, shared))
                raw = bench.run(f"raw commit pattern, {n} workers", "raw-commit", n, extra=[
                    "--metadata-bytes", str(sizes["metadata"]), "--segment-bytes",
                    str(sizes["segment"]), "--manifest-bytes", str(sizes["manifest"]),
                    "--prefix", f"catalog-bench-{uuid.uuid4()}"])
                raw["object_bytes"] = sizes
                print(f"# object sizes of these commits (bytes, mean): {sizes}", flush=True)
                line(raw)
                for out in outs:
                    line(out, raw)

            print(f"\n# round {rnd} of {args.rounds}: loads, 16 readers")
            for t in shared + (many if rnd == 1 else []):
                for s in two:  # warm both processes' caches (the shared table took commits)
                    call(s.port, token, "GET", t)
            for label, tables, flag in (("1 table", shared, ["--one-table"]),
                                        (f"{len(many)} tables", many, [])):
                what = "one table head for all" if flag else "2 head GETs"
                raw = bench.run(f"raw load pattern ({what}), 16 workers", "raw-load", 16,
                                extra=["--prefix", f"catalog-bench-{uuid.uuid4()}", *flag])
                line(raw)
                if not flag:
                    raw_spread = raw
                for plabel, servers in (("1 process", one), ("2 processes", two)):
                    out = bench.run(f"warm loads, {label}, {plabel}", "load", 16, servers,
                                    tables)
                    line(out, raw)
        summary(bench.results, args.rounds)
        raw = raw_spread
        rate, p50, p99 = cold_loads(args, config, token, many)
        print(f"{'cold loads, ' + str(len(many)) + ' tables, fresh process':<44} {rate:>8.1f}/s"
              f"  p50 {p50:>7.1f} ms  p99 {p99:>7.1f} ms  {rate / raw['per_second']:>5.2f}x raw")
        # The metadata file's name starts with the table's commit count (00042-<uuid>...).
        location = call(one[0].port, token, "GET", shared[0])[1]["metadata-location"]
        commits = int(location.rsplit("/", 1)[1].split("-", 1)[0])
        firsts = [cold_loads(args, config, token, shared)[1] for _ in range(5)]
        print(f"{f'cold load, 1 table of {commits} commits, fresh process (x5)':<44} median "
              f"{statistics.median(firsts):.1f} ms (range {min(firsts):.1f}-{max(firsts):.1f})")
        bench.results.append({"label": "cold loads", "per_second": rate, "p50_ms": p50,
                              "p99_ms": p99, "first_load_ms": firsts,
                              "one_table_commits": commits})
    finally:
        for s in two:
            s.stop()
    if args.json:
        with open(args.json, "w") as f:
            if args.placement:
                f.write(json.dumps({"label": "placement", "placement": args.placement}) + "\n")
            for r in bench.results:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
