#!/usr/bin/env python3
"""perf/run_catalog_cold.py: the first load of one long table by a fresh `cairn serve` (issue 27,
docs/performance.md "The catalog", docs/decisions/0048-catalog-log-manifests-come-runs.md).

    python3 perf/run_catalog_cold.py BUILD/cli/cairn [OTHER/cairn ...] [--commits 1300]
                                     [--rounds 5] [--json FILE]

with the S3_* variables of ../shared/s3/start-rgw.sh set. For each binary: a lake of its own on
RGW with one table of COMMITS set-properties commits, made by that binary (so its log has that
binary's manifest layout); then ROUNDS rounds, each starting one fresh process of every binary in
turn (so drift in the store's speed meets them alike) that lists the namespaces (the lake log)
and then loads the table once, timed; and a second, warm load. Printed per binary: the median
and all cold loads, the store GETs of the cold load (from /metrics,
cairn_store_operations_total), and the warm load. To compare with one manifest per commit,
build a second binary with engine/storelog/log.hpp's `AppendOptions::runSegments` set to 1.
"""
import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "cli"))
import cli_support  # noqa: E402
from cli_support import (CatalogServer, catalog_call, catalog_metrics, js, run,  # noqa: E402
                         s3_url)

SCHEMA = {"type": "struct", "fields": [{"id": 1, "name": "x", "type": "long",
                                        "required": False}]}
GETS = re.compile(r'^cairn_store_operations_total\{[^}]*op="get"[^}]*\}\s+(\S+)$', re.M)


def store_gets(port):
    return sum(float(v) for v in GETS.findall(catalog_metrics(port)))


def checked(what, status):
    if status != 200:
        sys.exit(f"run_catalog_cold: {what}: {status}")


def make_lake(tmp, binary, index, commits):
    cli_support.cairn = binary
    lake = f"cold{index}{uuid.uuid4().hex[:8]}"
    config = os.path.join(tmp, f"{lake}.json")
    r = run("lake", "create", "--config", config, "--store", s3_url(), "--lake", lake, "--json")
    if r.returncode != 0:
        sys.exit(f"run_catalog_cold: lake create: {r.stderr}")
    token = js(run("token", "create", "--config", config, "--lake", lake, "--role",
                   "read-write", "--json"))["token"]
    path = f"/v1/{lake}/namespaces/n/tables/t"
    server = CatalogServer(config, "make")
    try:
        for p, body in ((f"/v1/{lake}/namespaces", {"namespace": ["n"]}),
                        (f"/v1/{lake}/namespaces/n/tables", {"name": "t", "schema": SCHEMA})):
            checked(f"POST {p}", catalog_call(server.port, token, "POST", p, body)[0])
        started = time.monotonic()
        for c in range(commits):
            checked(f"commit {c}", catalog_call(server.port, token, "POST", path, {
                "requirements": [], "updates": [
                    {"action": "set-properties", "updates": {"k": str(c)}}]})[0])
    finally:
        server.stop()
    print(f"# {binary}: {commits} commits in {time.monotonic() - started:.1f} s", flush=True)
    return {"binary": binary, "config": config, "token": token, "lake": lake, "path": path,
            "cold_s": [], "gets": [], "warm_s": []}


def one_round(t):
    cli_support.cairn = t["binary"]
    server = CatalogServer(t["config"], "cold")
    try:
        checked("list", catalog_call(server.port, t["token"], "GET",
                                     f"/v1/{t['lake']}/namespaces")[0])
        before = store_gets(server.port)
        t0 = time.monotonic()
        checked("cold load", catalog_call(server.port, t["token"], "GET", t["path"])[0])
        cold = time.monotonic() - t0
        gets = store_gets(server.port) - before
        t0 = time.monotonic()
        checked("warm load", catalog_call(server.port, t["token"], "GET", t["path"])[0])
        warm = time.monotonic() - t0
    finally:
        server.stop()
    t["cold_s"].append(cold)
    t["gets"].append(gets)
    t["warm_s"].append(warm)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("cairn", nargs="+")
    p.add_argument("--commits", type=int, default=1300)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json", default="")
    args = p.parse_args()
    if s3_url() is None:
        sys.exit("run_catalog_cold: needs RGW (S3_* variables)")
    with tempfile.TemporaryDirectory() as tmp:
        lakes = [make_lake(tmp, b, i, args.commits) for i, b in enumerate(args.cairn)]
        for _ in range(args.rounds):
            for t in lakes:
                one_round(t)
    for t in lakes:
        cold = sorted(t["cold_s"])
        print(f"{t['binary']}: cold load of 1 table of {args.commits} commits: median "
              f"{statistics.median(cold) * 1000:.0f} ms (all "
              f"{', '.join(f'{x * 1000:.0f}' for x in cold)}), "
              f"{statistics.median(t['gets']):.0f} store GETs; warm load "
              f"{statistics.median(t['warm_s']) * 1000:.1f} ms", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            for t in lakes:
                f.write(json.dumps({k: t[k] for k in ("binary", "cold_s", "gets", "warm_s")})
                        + "\n")


if __name__ == "__main__":
    main()
