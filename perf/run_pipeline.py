#!/usr/bin/env python3
"""perf/run_pipeline.py: the checkpoint pipeline against its peers and the server's ceiling,
in one run, on the same bytes (issue: "the checkpoint pipeline", perf item).

For a journal of MIB MiB of RECORD-byte records (default 1 GiB of 4 KiB):
  1. upload: `cairn checkpoint` (every segment to S3, the manifest, the head) against
     `rclone copy` of the same bytes (the journal cut into SEGMENT_MIB files, as many
     transfers as cairn keeps in flight);
  2. verify: `cairn verify --deep` (every segment fetched, hashed, its frames decoded, the
     prefix rebuilt and compared with the journal read from disk) against
     `restic check --read-data` of a restic repository holding the same journal, and against
     `rclone copy` downloading the files of step 1;
  3. the server's ceiling: cairn_s3_bench's plain PUTs and GETs of the same files (to memory),
     the best of cairn's transfers, rclone's and CEILING connections, so every figure is also
     a ratio to what the server gives; where a peer moved bytes faster than the bench
     (rclone's files, restic's pack files, each over its own bytes), the peer's rate is the
     ceiling;
     The same GETs with each body hashed twice (cairn_s3_bench --hash-twice) are a floor of
     any deep verification of this format: a verifier does at least that with every byte;
     with a CRC32C of every 4 KiB and a comparison with the files (--compare-dir) as well,
     the floor of one that also checks the frames and compares the journal, as it must;
  4. RSS: cairn's peak RSS in both steps, and again for a graph SMALL_MIB MiB large, to show
     it does not grow with the graph (SMALL_MIB should exceed the 256 MiB in flight).
Every step runs ROUNDS times (default 3), in rounds that run each step once in the same
order; each ratio is taken within its round, and the result is the median over the rounds
with its range. Each round checkpoints a fresh copy of the same journal (a new namespace).
CPU and RSS come from /usr/bin/time around each process (start-up included, for cairn and
the peers alike); throughput is bytes over the process's wall time. Absolute figures on a
shared 2-core machine are noise: the ratios measured back to back in one run are the result.

Nothing is deleted until the run ends: RGW frees deleted and overwritten data in the
background a minute or two later (garbage collection, about 1.5 s at 1-1.3 cores per GiB
here), and a purge between rounds landed in a later round's measurements. So the store needs
room for (4 x ROUNDS + 2) copies of the journal: cairn's, rclone's and the two ceiling uploads'
per round, restic's and the small graph's. The same run works against RGW, MinIO or AWS: the
store is the one the S3_* variables name (shared/s3/README.md). For 1 GiB and 3 rounds on the
bundled RGW use bluestore with 24 GiB, and leave two minutes between runs (the last one's
purge). Against MinIO or AWS, also set DIALECT=aws and RCLONE_PROVIDER=Minio (or AWS).
With a local server, SERVER_CPUS=0 CLIENT_CPUS=1 measures as if the server had a machine of
its own: the server's threads on CPU 0, every measured tool on CPU 1 (see below).
On the bundled RGW:
    CAIRN_RGW_STORE=bluestore CAIRN_RGW_STORE_BYTES=$((24 << 30)) \
      bash ../shared/s3/start-rgw.sh > /tmp/rgw.env
    set -a; . /tmp/rgw.env; set +a
    python3 perf/run_pipeline.py build/cli/cairn build-s3perf/perf/cairn_s3_bench
Needs rclone, restic and /usr/bin/time (apt-get install -y rclone restic time).
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import uuid

import cpu_share  # the local server's processes (same directory)
from cpu_share import SERVER

cairn = sys.argv[1] if len(sys.argv) > 1 else "build/cli/cairn"
bench = sys.argv[2] if len(sys.argv) > 2 else "build-s3perf/perf/cairn_s3_bench"
MIB = int(os.environ.get("MIB", "1024"))
SMALL_MIB = int(os.environ.get("SMALL_MIB", "512"))
RECORD = int(os.environ.get("RECORD", "4096"))
SEGMENT_MIB = int(os.environ.get("SEGMENT_MIB", "32"))
# cairn's in-flight byte limit is 256 MiB (EngineLimits::bytes): 7 segment objects of a little
# over 32 MiB fit (at most SEGMENT_MIB, a 76-byte header and the RECORD + 16-byte frame that
# crosses the target), half of them rounded up, 4, transfer at once (transfersAtOnce) and 5
# are held (segmentsHeld). rclone gets 8 transfers, as many 32 MiB files as 256 MiB holds.
TRANSFERS = int(os.environ.get("TRANSFERS", str(max(1, 256 // SEGMENT_MIB))))
CAIRN_TRANSFERS = max(1, ((256 << 20) // ((SEGMENT_MIB << 20) + 76 + RECORD + 16) + 1) // 2)
CEILING = int(os.environ.get("CEILING", "32"))
# The ceiling and floors are measured at cairn's concurrency, rclone's and CEILING, the best
# taken: a server that gives more to fewer connections is not measured below it.
CEILING_CONNECTIONS = sorted({CAIRN_TRANSFERS, TRANSFERS, CEILING})
TIMEOUT = int(os.environ.get("STEP_TIMEOUT", "1800"))
# Rounds of every measured step, each on a fresh copy of the journal: the result is the median
# of each ratio over the rounds (one run on a shared 2-core machine varies by 10-20 %).
ROUNDS = int(os.environ.get("ROUNDS", "3"))
# cairn's S3 dialect (docs/stores.md): rgw for the bundled RGW; aws for MinIO or AWS (auto
# would probe the server once per cairn process, inside the measured time).
DIALECT = os.environ.get("DIALECT", "rgw")
# Placement (optional, a local server only): SERVER_CPUS and CLIENT_CPUS, CPU lists as taskset
# takes them (e.g. 0 and 1), pin the server's processes (radosgw, ceph-osd, ceph-mon, ceph-mgr,
# every thread) to the first and every measured tool to the second, so that the server does
# not share the tools' cores, as a server on its own machine would not. Every tool, the
# ceiling and the floors run under the same placement; the server's is restored at the end.
SERVER_CPUS = os.environ.get("SERVER_CPUS", "")
CLIENT_CPUS = os.environ.get("CLIENT_CPUS", "")

for v in ("S3_ENDPOINT", "S3_BUCKET", "S3_ACCESS_KEY", "S3_SECRET_KEY"):
    if not os.environ.get(v):
        sys.exit(f"run_pipeline.py: {v} is not set (see the docstring)")
for tool in ("rclone", "restic"):
    if not shutil.which(tool):
        sys.exit(f"run_pipeline.py: {tool} is missing (apt-get install -y {tool})")
if not os.path.exists("/usr/bin/time"):
    sys.exit("run_pipeline.py: /usr/bin/time is missing (apt-get install -y time)")
if bool(SERVER_CPUS) != bool(CLIENT_CPUS):
    sys.exit("run_pipeline.py: set SERVER_CPUS and CLIENT_CPUS together, or neither")

endpoint = os.environ["S3_ENDPOINT"]
bucket = os.environ["S3_BUCKET"]
region = os.environ.get("S3_REGION") or "us-east-1"
run_id = f"pipeline-{random.randrange(10**9)}"
env = dict(os.environ)
env.update({
    "AWS_ACCESS_KEY_ID": os.environ["S3_ACCESS_KEY"],
    "AWS_SECRET_ACCESS_KEY": os.environ["S3_SECRET_KEY"],
    "RCLONE_CONFIG_PERF_TYPE": "s3",
    "RCLONE_CONFIG_PERF_PROVIDER": os.environ.get("RCLONE_PROVIDER", "Ceph"),
    "RCLONE_CONFIG_PERF_ACCESS_KEY_ID": os.environ["S3_ACCESS_KEY"],
    "RCLONE_CONFIG_PERF_SECRET_ACCESS_KEY": os.environ["S3_SECRET_KEY"],
    "RCLONE_CONFIG_PERF_REGION": region,
    "RCLONE_CONFIG_PERF_ENDPOINT": endpoint,
    "RESTIC_PASSWORD": "cairn-perf",
})
# rclone fails with a CA-bundle error while AWS_CA_BUNDLE is set; restic honours it.
rclone_env = {k: v for k, v in env.items() if k != "AWS_CA_BUNDLE"}
RCLONE_FLAGS = ["--transfers", str(TRANSFERS), "--checkers", str(TRANSFERS),
                "--s3-upload-concurrency", "1", "--s3-chunk-size", "64M",
                "--s3-upload-cutoff", "64M"]
remote = f"perf:{bucket}/{run_id}"
SEGMENTS = ["--segment-mib", str(SEGMENT_MIB)]


def place_server(cpus):
    """Pins every thread of the server's processes to cpus (a taskset list)."""
    if not cpu_share.place_server(cpus):
        sys.exit("run_pipeline.py: SERVER_CPUS is set but no local server process "
                 f"({', '.join(SERVER)}) runs")


def timed(name, argv, environ=env, stdin=None):
    """Runs argv under /usr/bin/time; returns (stdout, wall, cpu, max RSS MiB)."""
    if CLIENT_CPUS:
        argv = ["taskset", "-c", CLIENT_CPUS, *argv]
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        r = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", "-o", t.name, *argv],
                           stdin=stdin, capture_output=True, env=environ, timeout=TIMEOUT)
        if r.returncode != 0:
            sys.exit(f"run_pipeline.py: {name} failed ({r.returncode}): "
                     f"{r.stderr.decode(errors='replace')[-2000:]}")
        wall, user, sys_, rss = t.read().split()[-4:]
    out = (r.stdout.decode(errors="replace"), float(wall), float(user) + float(sys_),
           int(rss) / 1024)
    print(f"# {name}: wall {out[1]:.2f} s, cpu {out[2]:.2f} s, max RSS {out[3]:.0f} MiB",
          file=sys.stderr, flush=True)
    return out


def make_input(path, mib):
    """MIB MiB of RECORD-byte lines of random bytes (any but the newline, which ends a
    record): nothing compresses or deduplicates them, so restic stores and reads the bytes
    everyone else moves. Random letters compressed: restic's zstd stored 895 MiB for a
    1028 MiB journal of them, and its check read 13 % fewer bytes than the others."""
    table = bytes(b if b != 0x0A else 0x0B for b in range(256))
    records = (mib << 20) // RECORD
    batch = 256
    with open(path, "wb") as f:
        for first in range(0, records, batch):
            n = min(batch, records - first)
            letters = os.urandom(n * (RECORD - 1)).translate(table)
            f.write(b"".join(letters[i * (RECORD - 1):(i + 1) * (RECORD - 1)] + b"\n"
                             for i in range(n)))
    return records


def database(tmp, mib, tag):
    """A database of `mib` MiB with a store namespace, its journal appended; returns DIR."""
    db = os.path.join(tmp, f"db-{tag}")
    src = os.path.join(tmp, f"input-{tag}")
    make_input(src, mib)
    init(db, tag)
    with open(src, "rb") as f:
        subprocess.run([cairn, "append", db], stdin=f, check=True, env=env,
                       stdout=subprocess.DEVNULL)
    os.remove(src)
    return db


def init(db, tag):
    """`cairn init` of DIR with its own store prefix and a new namespace."""
    store = (f"s3://{bucket}/{run_id}/cairn-{tag}?endpoint={endpoint}&region={region}"
             f"&dialect={DIALECT}")
    subprocess.run([cairn, "init", db, "--db-id", "perf", "--store", store,
                    "--namespace", str(uuid.uuid4())], check=True, env=env,
                   stdout=subprocess.DEVNULL)


def clone(tmp, journal, tag):
    """A new database holding a copy of `journal` (same bytes, same lineage) with its own
    store prefix and namespace: each round checkpoints the same journal afresh."""
    db = os.path.join(tmp, f"db-{tag}")
    init(db, tag)
    shutil.copyfile(journal, os.path.join(db, "journal"))
    subprocess.run(["sync"], check=True)
    return db


def rate(mib, seconds):
    return mib / seconds if seconds > 0 else float("nan")


def fastest(results, keys):
    """The server's ceiling: the fastest plain transfer of these bytes in this round (the
    bench's parallel PUTs or GETs, or a peer's, when a peer got more out of the server)."""
    best = max(keys, key=lambda k: rate(results[k][0], results[k][1]))
    return best, rate(results[best][0], results[best][1])


def figures(results, key, peer, limits):
    mib, wall, cpu, rss = results[key]
    pmib, pwall, pcpu, _ = results[peer]
    who, ceiling = fastest(results, limits)
    mine, theirs = rate(mib, wall), rate(pmib, pwall)
    return {"mine": mine, "theirs": theirs, "ratio": mine / theirs, "ceiling": ceiling,
            "who": who, "of_ceiling": mine / ceiling, "cpu": cpu / (mib / 1024),
            "peer_cpu": pcpu / (pmib / 1024), "rss": rss}


UP_LIMITS = ["ceiling_upload", "rclone_up"]
DOWN_LIMITS = ["ceiling_download", "rclone_down", "restic_read"]


def round_summary(r, results):
    """One line per round as soon as it ends: a run stopped later keeps its rounds."""
    up = figures(results, "cairn_up", "rclone_up", UP_LIMITS)
    verify = figures(results, "cairn_verify", "restic_check", DOWN_LIMITS)
    floor = rate(*results["checking_floor"][:2])
    return (f"# round {r + 1}: upload {up['ratio']:.2f}x rclone, {up['of_ceiling']:.0%} of the "
            f"ceiling; verify {verify['ratio']:.2f}x restic, {verify['of_ceiling']:.0%} of the "
            f"ceiling; checking floor {floor / verify['ceiling']:.0%} of the ceiling, "
            f"{floor / rate(*results['restic_check'][:2]):.2f}x restic; verify "
            f"{verify['mine'] / floor:.0%} of the floor")


def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


with tempfile.TemporaryDirectory(prefix="cairn-pipeline-") as tmp:
    rounds = []
    if SERVER_CPUS:
        place_server(SERVER_CPUS)
        print(f"# placement: server on CPUs {SERVER_CPUS}, tools on CPUs {CLIENT_CPUS}",
              file=sys.stderr, flush=True)
    try:
        # The graph-size check first (small), then the measured rounds.
        small = database(tmp, SMALL_MIB, "small")
        _, _, _, rss_small_up = timed("cairn checkpoint (small)",
                                      [cairn, "checkpoint", small, *SEGMENTS, "--json"])
        _, _, _, rss_small_verify = timed("cairn verify --deep (small)",
                                          [cairn, "verify", small, "--deep", "--json"])
        shutil.rmtree(small)

        base = database(tmp, MIB, "base")
        journal = os.path.join(base, "journal")
        journal_mib = os.path.getsize(journal) / (1 << 20)

        # The same bytes as files for rclone and the ceiling: the journal cut like segments.
        files = os.path.join(tmp, "files")
        os.makedirs(files)
        with open(journal, "rb") as f:
            i = 0
            while chunk := f.read(SEGMENT_MIB << 20):
                with open(os.path.join(files, f"obj-{i:04d}"), "wb") as g:
                    g.write(chunk)
                i += 1
        objects = i
        size = f"{SEGMENT_MIB}MiB"
        last = os.path.getsize(os.path.join(files, f"obj-{objects - 1:04d}"))
        full = objects if last == SEGMENT_MIB << 20 else objects - 1

        repo = f"s3:{endpoint}/{bucket}/{run_id}/restic"
        subprocess.run(["restic", "-r", repo, "init"], check=True, env=env,
                       capture_output=True, timeout=TIMEOUT)
        subprocess.run(["restic", "-r", repo, "backup", journal], check=True, env=env,
                       capture_output=True, timeout=TIMEOUT)
        # What `restic check --read-data` reads: the repository's pack files. Its rate as a
        # candidate for the server's ceiling is taken over these bytes, not the journal's.
        sized = subprocess.run(["rclone", "size", "--json", f"{remote}/restic/data"],
                               check=True, env=rclone_env, capture_output=True, timeout=TIMEOUT)
        restic_mib = json.loads(sized.stdout)["bytes"] / (1 << 20)
        print(f"# restic repository: {restic_mib:.0f} MiB of pack files for "
              f"{journal_mib:.0f} MiB of journal", file=sys.stderr, flush=True)

        # Each round runs every step once, in the same order, on a copy of the journal with
        # its own namespace; each ratio is taken within its round.
        for r in range(ROUNDS):
            print(f"# round {r + 1} of {ROUNDS}", file=sys.stderr, flush=True)
            results = {}
            db = clone(tmp, journal, f"r{r}")
            out, wall, cpu, rss = timed("cairn checkpoint",
                                        [cairn, "checkpoint", db, *SEGMENTS, "--json"])
            cp = json.loads(out)
            results["cairn_up"] = (journal_mib, wall, cpu, rss)
            _, wall, cpu, rss = timed("rclone copy (upload)",
                                      ["rclone", "copy", files, f"{remote}/rclone-r{r}",
                                       *RCLONE_FLAGS], environ=rclone_env)
            results["rclone_up"] = (journal_mib, wall, cpu, rss)

            out, wall, cpu, rss = timed("cairn verify --deep",
                                        [cairn, "verify", db, "--deep", "--json"])
            results["cairn_verify"] = (journal_mib, wall, cpu, rss)
            down = os.path.join(tmp, "down")
            _, wall, cpu, rss = timed("rclone copy (download)",
                                      ["rclone", "copy", f"{remote}/rclone-r{r}", down,
                                       *RCLONE_FLAGS], environ=rclone_env)
            results["rclone_down"] = (journal_mib, wall, cpu, rss)
            shutil.rmtree(down)
            _, wall, cpu, rss = timed("restic check --read-data",
                                      ["restic", "-r", repo, "check", "--read-data"])
            results["restic_check"] = (journal_mib, wall, cpu, rss)
            results["restic_read"] = (restic_mib, wall, cpu, rss)

            # The server's ceiling on the same files: many parallel plain PUTs and GETs, the
            # best of cairn's transfers, rclone's and CEILING connections. Then two floors of any
            # deep verification: the same GETs, each body hashed twice (the object's SHA-256
            # and the prefix's, two interleaved lanes) and nothing else; and that with a
            # CRC32C of every 4 KiB and a comparison with the file's bytes (mapped, no copy).
            for name, mode, extra in (("ceiling_upload", "upload", ["--source-dir", files]),
                                      ("ceiling_download", "download", []),
                                      ("hashing_floor", "download", ["--hash-twice"]),
                                      ("checking_floor", "download",
                                       ["--hash-twice", "--compare-dir", files])):
                best = None
                for conc in CEILING_CONNECTIONS:
                    argv = [bench, mode, "--objects", str(full), "--size", size,
                            "--concurrency", str(conc),
                            "--prefix", f"{run_id}/ceiling-r{r}-x{conc}", *extra]
                    out, _, _, _ = timed(f"{name.replace('_', ' ')} x{conc}", argv)
                    j = json.loads(out)
                    if best is None or j["mib_per_s"] > best["mib_per_s"]:
                        best = j
                results[name] = (best["bytes"] / (1 << 20), best["seconds"],
                                 best["cpu_seconds"], 0)
            rounds.append(results)
            print(round_summary(r, results), file=sys.stderr, flush=True)
            shutil.rmtree(db)
        shutil.rmtree(files)
    finally:
        subprocess.run(["rclone", "purge", f"perf:{bucket}/{run_id}"], env=rclone_env,
                       capture_output=True, timeout=TIMEOUT)
        if SERVER_CPUS:
            place_server(f"0-{os.cpu_count() - 1}")

    steps = [("upload (checkpoint)", "cairn_up", "rclone_up", UP_LIMITS),
             ("verify --deep", "cairn_verify", "restic_check", DOWN_LIMITS),
             ("verify --deep", "cairn_verify", "rclone_down", DOWN_LIMITS)]

    print(f"\n{journal_mib:.0f} MiB journal of {RECORD}-byte records, {objects} objects of "
          f"{SEGMENT_MIB} MiB, {TRANSFERS} rclone transfers, ceiling: the best of "
          f"{'/'.join(map(str, CEILING_CONNECTIONS))} "
          f"connections; checkpoint wrote {cp.get('objects_written')} objects; "
          f"{ROUNDS} round(s)" +
          (f"; server on CPUs {SERVER_CPUS}, tools on CPUs {CLIENT_CPUS}" if SERVER_CPUS else "")
          + "\n")
    print("| round | step | cairn MiB/s | peer MiB/s | cairn/peer | cairn vs server ceiling | "
          "cairn CPU s/GiB | peer CPU s/GiB | cairn max RSS MiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r, results in enumerate(rounds):
        for label, key, peer, limits in steps:
            f = figures(results, key, peer, limits)
            print(f"| {r + 1} | {label} | {f['mine']:.0f} | {peer.replace('_', ' ')} "
                  f"{f['theirs']:.0f} | {f['ratio']:.2f}x | {f['of_ceiling']:.0%} of "
                  f"{f['ceiling']:.0f} ({f['who'].replace('_', ' ')}) | {f['cpu']:.1f} | "
                  f"{f['peer_cpu']:.1f} | {f['rss']:.0f} |")
    if len(rounds) > 1:
        print("\nMedian over the rounds (each ratio taken within its round), with the range:\n")
        print("| step | cairn/peer | cairn vs server ceiling | cairn CPU s/GiB | "
              "peer CPU s/GiB |")
        print("|---|---|---|---|---|")
        for label, key, peer, limits in steps:
            fs = [figures(results, key, peer, limits) for results in rounds]

            def span(name, fmt):
                v = [f[name] for f in fs]
                return f"{fmt(median(v))} ({fmt(min(v))}-{fmt(max(v))})"

            print(f"| {label} vs {peer.replace('_', ' ')} | "
                  f"{span('ratio', lambda x: f'{x:.2f}x')} | "
                  f"{span('of_ceiling', lambda x: f'{x:.0%}')} | "
                  f"{span('cpu', lambda x: f'{x:.1f}')} | "
                  f"{span('peer_cpu', lambda x: f'{x:.1f}')} |")
    # The floors: what GETs that only hash each byte twice (and then also check and compare
    # it) reach, against the same ceiling and restic. If a floor is below a goal, no
    # verifier of this format that does that much can meet the goal on this machine.
    for key, what in (("hashing_floor", "GETs whose bodies are only hashed twice"),
                      ("checking_floor", "GETs whose bodies are hashed twice, CRC32C'd per "
                                         "4 KiB and compared with the files")):
        print(f"\nFloor: {what}, per round:\n")
        print("| round | floor MiB/s | floor vs server ceiling | floor / restic | "
              "cairn verify / floor | floor CPU s/GiB |")
        print("|---|---|---|---|---|---|")
        floors = []
        for r, results in enumerate(rounds):
            fmib, fwall, fcpu, _ = results[key]
            floor = rate(fmib, fwall)
            _, ceiling = fastest(results, DOWN_LIMITS)
            restic = rate(*results["restic_check"][:2])
            verify = rate(*results["cairn_verify"][:2])
            floors.append((floor / ceiling, floor / restic, verify / floor))
            print(f"| {r + 1} | {floor:.0f} | {floor / ceiling:.0%} | {floor / restic:.2f}x | "
                  f"{verify / floor:.0%} | {fcpu / (fmib / 1024):.1f} |")
        if len(rounds) > 1:
            cols = list(zip(*floors))
            print(f"| median | | {median(cols[0]):.0%} | {median(cols[1]):.2f}x | "
                  f"{median(cols[2]):.0%} | |")
    print(f"\ncairn max RSS for a {SMALL_MIB} MiB graph: checkpoint {rss_small_up:.0f} MiB, "
          f"verify {rss_small_verify:.0f} MiB; for {journal_mib:.0f} MiB: checkpoint "
          f"{max(r['cairn_up'][3] for r in rounds):.0f} MiB, verify "
          f"{max(r['cairn_verify'][3] for r in rounds):.0f} MiB (the most of any round)")
