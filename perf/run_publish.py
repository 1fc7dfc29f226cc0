#!/usr/bin/env python3
"""perf/run_publish.py: what publication costs, measured against cairn's own journal-only path.

1. Ingest throughput: the same generated input (MIB MiB of ~1 KiB lines) through
   `cairn ingest` three times in one run: journal only (no store), with a checkpoint every
   64 MiB to a directory store, and (with S3_* set) every 64 MiB to S3 (RGW). The figure is
   the ratio of each to the journal-only run: what publishing as you go costs.
2. Checkpoint latency: ROUNDS rounds of (append 100 records, `cairn checkpoint`) on S3; p50
   and p99 of the checkpoint's own `seconds` (process start excluded, opening the database
   and reconciling included), with the requests one small checkpoint makes.

   set -a; eval "$(bash ../shared/s3/start-rgw.sh)"; set +a
   python3 perf/run_publish.py build/cli/cairn
Prints a markdown table. Absolute times on a shared 2-core machine are noise; the ratios of
runs made back to back on the same input are the result.
"""
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

cairn = sys.argv[1] if len(sys.argv) > 1 else "build/cli/cairn"
MIB = int(os.environ.get("MIB", "256"))
ROUNDS = int(os.environ.get("ROUNDS", "40"))
# DIALECT=auto (default) makes every `cairn checkpoint` process probe the store's conditions
# once; DIALECT=rgw states it and skips the probe.


def s3_url():
    if not os.environ.get("S3_ENDPOINT"):
        return None
    os.environ["AWS_ACCESS_KEY_ID"] = os.environ["S3_ACCESS_KEY"]
    os.environ["AWS_SECRET_ACCESS_KEY"] = os.environ["S3_SECRET_KEY"]
    root = f"cairn-perf-{random.randrange(10**12)}"
    return (f"s3://{os.environ['S3_BUCKET']}/{root}?endpoint={os.environ['S3_ENDPOINT']}"
            f"&region={os.environ.get('S3_REGION') or 'us-east-1'}"
            f"&dialect={os.environ.get('DIALECT', 'auto')}")


def ingest(tmp, name, data, store):
    args = [cairn, "ingest", os.path.join(tmp, name), "--json", "--checkpoint-mib", "64",
            "--checkpoint-seconds", "3600"]
    if store:
        args += ["--store", store]
    with open(data, "rb") as f:
        t = time.monotonic()
        r = subprocess.run(args, stdin=f, capture_output=True, timeout=3600)
        wall = time.monotonic() - t
    if r.returncode != 0:
        sys.exit(f"{name}: {r.stderr.decode()}")
    out = json.loads(r.stdout)
    return out, wall


with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR", "/tmp")) as tmp:
    data = os.path.join(tmp, "input")
    line = ("x" * 1000).encode()
    with open(data, "wb") as f:
        for i in range((MIB << 20) // 1024):
            f.write(b"%08d " % i + line[:1014] + b"\n")
    size = os.path.getsize(data)
    rows = []
    base, base_wall = ingest(tmp, "journal-only", data, None)
    rows.append(("journal only", base, base_wall))
    d, d_wall = ingest(tmp, "directory", data, os.path.join(tmp, "store"))
    rows.append(("checkpoint every 64 MiB, directory store", d, d_wall))
    url = s3_url()
    if url:
        s, s_wall = ingest(tmp, "s3", data, url)
        rows.append(("checkpoint every 64 MiB, S3 (RGW)", s, s_wall))
    print(f"\n### Ingest, {size / 2**20:.0f} MiB of 1 KiB lines\n")
    print("| run | MiB/s | checkpoints | ratio to journal only |")
    print("|---|---|---|---|")
    for name, out, wall in rows:
        rate = size / 2**20 / out["seconds"]
        print(f"| {name} | {rate:.1f} | {out['checkpoints']} | "
              f"{base['seconds'] / out['seconds']:.2f} |")

    if url:
        db = os.path.join(tmp, "latency")
        r = subprocess.run([cairn, "init", db, "--db-id", "latency", "--store", url],
                           capture_output=True)
        if r.returncode != 0:
            sys.exit(r.stderr.decode())
        seconds = []
        for k in range(ROUNDS):
            batch = "".join(f"round {k} record {i}\n" for i in range(100)).encode()
            subprocess.run([cairn, "append", db], input=batch, capture_output=True, check=True)
            r = subprocess.run([cairn, "checkpoint", db, "--json"], capture_output=True)
            out = json.loads(r.stdout)
            if r.returncode != 0 or out.get("outcome") != "selected":
                sys.exit(f"checkpoint {k}: {r.stdout!r} {r.stderr!r}")
            seconds.append(out["seconds"])
        seconds.sort()
        p50 = statistics.median(seconds)
        p99 = seconds[min(len(seconds) - 1, int(round(0.99 * (len(seconds) - 1))))]
        print(f"\n### Small checkpoint on S3 (100 records each, {ROUNDS} rounds)\n")
        print("| p50 ms | p99 ms | min ms |")
        print("|---|---|---|")
        print(f"| {p50 * 1000:.1f} | {p99 * 1000:.1f} | {seconds[0] * 1000:.1f} |")
