#!/usr/bin/env python3
"""What a warm prefix pass costs the appends running beside it (docs/decisions/0023-large-journal-reads-bypass-page.md).

A prefix reads chunks the page cache holds through the cache (JournalOptions::
cachedChunksFromCache, the default): a copy per byte, on the CPU. Read directly instead
(`prefix --direct-cached`), the same chunks cost no copy but are read again from the disk,
which the journal's durable writes share. This measures both beside group commit.

Each round runs three variants, alternating, so all see the same disk:

  none    `cairn_journal_bench append` (256 appenders of 256-byte records) alone
  cache   the same, with a second process making four warm prefix passes of a 2 GiB
          journal (the appends run longer than the passes)
  direct  the same, with the passes reading cached chunks directly (--direct-cached)

and prints per variant the appends' syncs/s and latency, and the passes' MB/s and bytes per
CPU second. The prefix journal is built once (2 GiB, kept under --dir for later runs).

  python3 perf/prefix_beside_appends.py --build build --dir /var/tmp/pba [--rounds 3]

The directory must be on the disk under test (never tmpfs).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

VARIANTS = ("none", "cache", "direct")
TIMEOUT_S = 600  # one append run or one set of prefix passes; a hang is a failure


def run_json(argv):
    done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(argv), done.returncode,
                                                   done.stderr.strip()))
    return json.loads(done.stdout)


def warm(path):
    """Reads the whole file once so the passes find it in the page cache."""
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def one_round(bench, base, seconds, variant):
    prefix_dir = os.path.join(base, "prefix")
    append_dir = os.path.join(base, "append")
    warm(os.path.join(prefix_dir, "cairn-prefix-journal", "journal"))
    passes = None
    if variant != "none":
        argv = [bench, "prefix", "--dir", prefix_dir, "--repeats", "2", "--no-drop-cache",
                "--no-experiments"]
        if variant == "direct":
            argv.append("--direct-cached")
        passes = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
    try:
        appends = run_json([bench, "append", "--dir", append_dir, "--value-size", "256",
                            "--appenders", "256", "--seconds", str(seconds)])
        appends_ended = time.monotonic()
        prefix = None
        if passes is not None:
            out, errors = passes.communicate(timeout=TIMEOUT_S)
            if passes.returncode != 0:
                raise RuntimeError("prefix passes failed: " + errors.strip())
            prefix = json.loads(out)
    except BaseException:
        if passes is not None and passes.poll() is None:
            passes.kill()
            passes.wait()
        raise
    result = {"variant": variant, "syncs_per_s": appends["syncs_per_s"],
              "appends_per_s": appends["appends_per_s"],
              "latency_p50_us": appends["latency_p50_us"],
              "latency_p99_us": appends["latency_p99_us"],
              "write_sync_mean_us": appends["write_sync_mean_us"]}
    if prefix is not None:
        runs = prefix["runs"]
        result["prefix_mb_per_s"] = statistics.median(r["mb_per_s"] for r in runs)
        result["prefix_mb_per_cpu_s"] = statistics.median(
            r["bytes"] / 1e6 / (r["cpu_user_s"] + r["cpu_sys_s"]) for r in runs)
        # Passes that outlast the appends ran partly alone: the figures are then not "beside".
        result["passes_within_appends"] = time.monotonic() - appends_ended < 0.5
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build", help="CMake build directory")
    parser.add_argument("--dir", required=True, help="directory on the disk under test")
    parser.add_argument("--rounds", type=int, default=3, choices=range(1, 21))
    parser.add_argument("--seconds", type=float, default=16.0,
                        help="append run length (longer than the four prefix passes)")
    parser.add_argument("--json", help="write every round's results here")
    args = parser.parse_args()
    if not 1 <= args.seconds <= 120:
        parser.error("--seconds must be within 1 and 120")
    bench = os.path.join(args.build, "perf", "cairn_journal_bench")
    if not os.access(bench, os.X_OK):
        parser.error(bench + " is not built")
    os.makedirs(args.dir, exist_ok=True)
    print("building or reusing the 2 GiB prefix journal...", file=sys.stderr)
    run_json([bench, "prefix", "--dir", os.path.join(args.dir, "prefix"), "--repeats", "1",
              "--no-drop-cache", "--no-experiments"])
    results = []
    for r in range(1, args.rounds + 1):
        for variant in VARIANTS:
            result = one_round(bench, args.dir, args.seconds, variant)
            result["round"] = r
            results.append(result)
            line = ("round %d %-6s syncs/s %6.0f  p50 %6.0f us  p99 %6.0f us" %
                    (r, variant, result["syncs_per_s"], result["latency_p50_us"],
                     result["latency_p99_us"]))
            if "prefix_mb_per_s" in result:
                line += "  prefix %5.0f MB/s, %5.0f MB per CPU s" % (
                    result["prefix_mb_per_s"], result["prefix_mb_per_cpu_s"])
                if not result["passes_within_appends"]:
                    line += "  (the passes outlasted the appends: raise --seconds)"
            print(line, flush=True)
    print("\nmedians over %d rounds:" % args.rounds)
    for variant in VARIANTS:
        mine = [x for x in results if x["variant"] == variant]
        line = "  %-6s syncs/s %6.0f  p99 %6.0f us" % (
            variant, statistics.median(x["syncs_per_s"] for x in mine),
            statistics.median(x["latency_p99_us"] for x in mine))
        if variant != "none":
            line += "  prefix %5.0f MB/s, %5.0f MB per CPU s" % (
                statistics.median(x["prefix_mb_per_s"] for x in mine),
                statistics.median(x["prefix_mb_per_cpu_s"] for x in mine))
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rounds": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
