#!/usr/bin/env bash
# perf/check.sh: the performance targets of docs/performance.md, measured and judged in one go.
#
# Runs the quick benchmarks, then prints one line per target (the measured ratio, the target,
# MET or MISSED) and a summary line:
#   journal   perf/run_journal.sh --quick: fio, cairn_journal_bench beside db_bench, prefix
#             passes beside openssl speed (about 3 minutes)
#   S3        perf/run_s3.sh: 64 x 8 MiB, 8 transfers (the goal's own settings, §4.1), against
#             rclone; its ceiling phase is skipped (CEILING_CONCURRENCY=0) (about 1-2 minutes)
#   pipeline  perf/run_pipeline.py MIB=1024 SMALL_MIB=512 ROUNDS=3 (§6.3), with the local
#             server on CPU 0 and every measured tool on CPU 1 (SERVER_CPUS=0 CLIENT_CPUS=1;
#             on shared cores §6.2 shows the verification goal out of reach) (about 8 minutes)
# About 12-15 minutes in all on the 2-core machine. Not part of CI (shared machines are noisy):
# run it before resolving any issue that touches a hot path and put its output in the note.
#
# The S3 and pipeline parts use the store the S3_* variables name (shared/s3/README.md). If
# S3_ENDPOINT is unset, this script starts its own RGW (bluestore, state in CHECK_RGW_DIR,
# default /tmp/cairn-rgw-check, on ports of its own so it never reuses or stops another RGW)
# with shared/s3/start-rgw.sh, and stops and purges it on exit.
#
# Usage: bash perf/check.sh [--build DIR] [--skip-s3] [--json FILE] [--out-dir DIR]
#                           [--from-journal-json FILE] [--from-s3-output FILE]
#                           [--from-pipeline-output FILE]
#   --build     the CMake build directory (default build) holding perf/cairn_journal_bench,
#               perf/cairn_s3_bench and cli/cairn (a Release build)
#   --skip-s3   skip the S3 and pipeline parts: their targets are reported SKIPPED
#   --json      also write every line, with the raw figures, as JSON to FILE
#   --out-dir   where the benchmarks' outputs and logs go (default perf/results/check-<UTC time>)
#   --from-journal-json FILE     judge an existing run_journal.sh JSON instead of running it
#   --from-s3-output FILE        judge the saved stdout of an earlier run_s3.sh
#   --from-pipeline-output FILE  judge the saved stdout of an earlier run_pipeline.py
# Knobs (environment): CHECK_PIPELINE_MIB, CHECK_PIPELINE_SMALL_MIB, CHECK_PIPELINE_ROUNDS;
# SERVER_CPUS/CLIENT_CPUS (set, even empty, to override the placement); CHECK_RGW_DIR,
# CHECK_RGW_PORT; CAIRN_SHARED_DIR (default: the repository's ../shared).
# Exit status: 0 every target that ran was MET; 1 a target was MISSED; 2 usage or set-up error;
# 3 nothing MISSED but some targets SKIPPED.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD="$REPO/build"
SKIP_S3=0
JSON_OUT=""
OUT_DIR=""
FROM_JOURNAL=""
FROM_S3=""
FROM_PIPELINE=""

die() { echo "check.sh: $*" >&2; exit 2; }
usage() { sed -n '2,/^set -euo/p' "$0" | grep '^#' | cut -c3-; }
abspath() { realpath -m -- "$1"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build|--json|--out-dir|--from-journal-json|--from-s3-output|--from-pipeline-output)
      [[ $# -ge 2 && -n $2 ]] || die "$1 needs an argument (see --help)"
      case "$1" in
        --build) BUILD=$(abspath "$2") ;;
        --json) JSON_OUT=$(abspath "$2") ;;
        --out-dir) OUT_DIR=$(abspath "$2") ;;
        --from-journal-json) FROM_JOURNAL=$(abspath "$2") ;;
        --from-s3-output) FROM_S3=$(abspath "$2") ;;
        --from-pipeline-output) FROM_PIPELINE=$(abspath "$2") ;;
      esac
      shift 2 ;;
    --skip-s3) SKIP_S3=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument: $1 (see --help)" ;;
  esac
done
for f in "$FROM_JOURNAL" "$FROM_S3" "$FROM_PIPELINE"; do
  [[ -z $f || -r $f ]] || die "cannot read $f"
done

if [[ -x /usr/bin/python3 ]]; then PY=/usr/bin/python3; else PY=$(command -v python3 || true); fi
[[ -n $PY ]] || die "python3 is missing (apt-get install -y python3)"
command -v timeout >/dev/null || die "timeout is missing (apt-get install -y coreutils)"

# What runs: a part is run unless it is judged from a file or skipped.
RUN_JOURNAL=0; RUN_S3=0; RUN_PIPELINE=0
[[ -n $FROM_JOURNAL ]] || RUN_JOURNAL=1
if [[ $SKIP_S3 == 0 ]]; then
  [[ -n $FROM_S3 ]] || RUN_S3=1
  [[ -n $FROM_PIPELINE ]] || RUN_PIPELINE=1
fi

# --- what the runs need: fail now, with what to build or install, rather than minutes later ---
missing=()
need_bin() {  # path, cmake target
  [[ -x $1 ]] || missing+=("$1 (cmake --build $BUILD --target $2)")
}
need_tool() {  # command, how to get it
  command -v "$1" >/dev/null || missing+=("$1 ($2)")
}
if [[ $RUN_JOURNAL == 1 ]]; then
  need_bin "$BUILD/perf/cairn_journal_bench" cairn_journal_bench
  need_tool fio "apt-get install -y fio"
  command -v rocksdb_db_bench >/dev/null || command -v db_bench >/dev/null ||
    missing+=("db_bench (apt-get install -y rocksdb-tools)")
  need_tool openssl "apt-get install -y openssl"
fi
if [[ $RUN_S3 == 1 || $RUN_PIPELINE == 1 ]]; then
  need_bin "$BUILD/perf/cairn_s3_bench" cairn_s3_bench
  need_tool rclone "apt-get install -y rclone"
  [[ -x /usr/bin/time ]] || missing+=("/usr/bin/time (apt-get install -y time)")
fi
if [[ $RUN_PIPELINE == 1 ]]; then
  need_bin "$BUILD/cli/cairn" cairn
  need_tool restic "apt-get install -y restic"
  need_tool taskset "apt-get install -y util-linux"
fi
SHARED=${CAIRN_SHARED_DIR:-$REPO/../shared}
if [[ ($RUN_S3 == 1 || $RUN_PIPELINE == 1) && -z ${S3_ENDPOINT:-} && ! -f $SHARED/s3/start-rgw.sh ]]; then
  missing+=("$SHARED/s3/start-rgw.sh (S3_ENDPOINT is unset: set the S3_* variables of a running store, or CAIRN_SHARED_DIR)")
fi
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "check.sh: missing:" >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 2
fi
WARNINGS=()
if [[ $((RUN_JOURNAL + RUN_S3 + RUN_PIPELINE)) -gt 0 && -f $BUILD/CMakeCache.txt ]]; then
  build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
  case "$build_type" in
    Release|RelWithDebInfo) ;;
    *) WARNINGS+=("$BUILD is a '${build_type:-default}' build, not Release: figures will be low") ;;
  esac
fi

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
[[ -n $OUT_DIR ]] || OUT_DIR="$REPO/perf/results/check-$STAMP"
if [[ $((RUN_JOURNAL + RUN_S3 + RUN_PIPELINE)) -gt 0 ]]; then mkdir -p "$OUT_DIR"; else OUT_DIR=""; fi
log() { printf '%s  %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
for w in "${WARNINGS[@]}"; do log "warning: $w"; done

# --- bounded runs; INT/TERM stop the running benchmark (its timeout's process group) ---------
CURRENT_PID=""
RGW_DIR=${CHECK_RGW_DIR:-/tmp/cairn-rgw-check}
RGW_STARTED=0
stop_rgw() {
  if [[ $RGW_STARTED == 1 ]]; then
    RGW_STARTED=0
    log "stopping the RGW this script started ($RGW_DIR)"
    CAIRN_RGW_DIR=$RGW_DIR timeout 120 bash "$SHARED/s3/stop-rgw.sh" --purge \
      >>"$OUT_DIR/rgw.log" 2>&1 || log "stop-rgw.sh failed: see $OUT_DIR/rgw.log"
  fi
}
# shellcheck disable=SC2317  # called by the trap below
on_signal() {
  trap - INT TERM
  if [[ -n $CURRENT_PID ]]; then
    log "interrupted: stopping the running benchmark (pid $CURRENT_PID)"
    kill -TERM "$CURRENT_PID" 2>/dev/null || true
    wait "$CURRENT_PID" 2>/dev/null || true
  fi
  exit 2
}
trap stop_rgw EXIT
trap on_signal INT TERM

# Runs a command under `timeout`, stdout and stderr to files; returns its exit status.
bounded() {  # seconds, stdout file, stderr file, command...
  local limit=$1 out=$2 err=$3 rc=0
  shift 3
  timeout --kill-after=30 "$limit" "$@" >"$out" 2>"$err" &
  CURRENT_PID=$!
  wait "$CURRENT_PID" || rc=$?
  CURRENT_PID=""
  return "$rc"
}
# The outcome of each part, for the report: ran / failed / from-file / skipped, its output
# file, its log, its wall seconds and, when it failed, why.
declare -A STATUS FILE LOG SECONDS_TAKEN ERROR
part() {  # name, timeout, stdout file, stderr file, command...
  local name=$1 limit=$2 out=$3 err=$4 rc=0 t0=$SECONDS
  shift 4
  log "$name: running (timeout ${limit}s; log $err)"
  bounded "$limit" "$out" "$err" "$@" || rc=$?
  SECONDS_TAKEN[$name]=$((SECONDS - t0))
  LOG[$name]=$err
  if [[ $rc == 0 ]]; then
    STATUS[$name]=ran
    log "$name: done in ${SECONDS_TAKEN[$name]} s"
  else
    STATUS[$name]=failed
    if [[ $rc == 124 || $rc == 137 ]]; then ERROR[$name]="timed out after ${limit} s"
    else ERROR[$name]="exited with status $rc: $(grep -v '^\s*$' "$err" | tail -1 | cut -c1-200)"; fi
    log "$name: FAILED (${ERROR[$name]}); see $err"
  fi
}

# --- journal -----------------------------------------------------------------------------------
if [[ $RUN_JOURNAL == 1 ]]; then
  FILE[journal]="$OUT_DIR/journal.json"
  part journal 900 "$OUT_DIR/journal.txt" "$OUT_DIR/journal.log" \
    bash "$REPO/perf/run_journal.sh" --quick --build "$BUILD" --out "${FILE[journal]}"
else
  STATUS[journal]=from-file; FILE[journal]=$FROM_JOURNAL
fi

# --- the S3 store: the S3_* variables, or an RGW of our own --------------------------------------
PLACEMENT=""
SETUP_ERROR=""
if [[ $RUN_S3 == 1 || $RUN_PIPELINE == 1 ]]; then
  if [[ -z ${S3_ENDPOINT:-} ]]; then
    rounds=${CHECK_PIPELINE_ROUNDS:-3}
    mib=${CHECK_PIPELINE_MIB:-1024}
    small=${CHECK_PIPELINE_SMALL_MIB:-512}
    # run_pipeline.py keeps (4 x ROUNDS + 2) copies of the journal until it ends; run_s3.sh
    # writes 2 x 512 MiB. A full OSD hangs requests rather than failing them: leave room.
    store_mib=$(( ((4 * rounds + 2) * mib + small + 2048) * 3 / 2 ))
    (( store_mib >= 24 * 1024 )) || store_mib=$((24 * 1024))
    log "starting RGW (bluestore, $((store_mib / 1024)) GiB, state $RGW_DIR)"
    RGW_STARTED=1  # so that a half-started cluster is stopped too
    # A fresh cluster: a leftover of an earlier check (ours alone: our own directory) is purged.
    CAIRN_RGW_DIR=$RGW_DIR bash "$SHARED/s3/stop-rgw.sh" --purge >"$OUT_DIR/rgw.log" 2>&1 || true
    rgw_env=$(CAIRN_RGW_DIR=$RGW_DIR CAIRN_RGW_PORT=${CHECK_RGW_PORT:-7590} \
      CAIRN_RGW_MON_PORT=${CHECK_RGW_MON_PORT:-40889} \
      CAIRN_RGW_OSD_PORTS=${CHECK_RGW_OSD_PORTS:-7310-7470} CAIRN_RGW_STORE=bluestore \
      CAIRN_RGW_STORE_BYTES=$((store_mib << 20)) \
      timeout 600 bash "$SHARED/s3/start-rgw.sh" 2>>"$OUT_DIR/rgw.log") || rgw_env=""
    if [[ -n $rgw_env ]]; then
      set -a
      eval "$rgw_env"
      set +a
    else
      # A set-up error: the S3 parts cannot run; the journal's results are still reported.
      SETUP_ERROR="the S3 server did not start"
      log "$SETUP_ERROR: see $OUT_DIR/rgw.log"
      for name in s3 pipeline; do
        if [[ $name == s3 && $RUN_S3 == 1 ]] || [[ $name == pipeline && $RUN_PIPELINE == 1 ]]; then
          STATUS[$name]=failed; ERROR[$name]="not run: $SETUP_ERROR"; LOG[$name]="$OUT_DIR/rgw.log"
        fi
      done
      RUN_S3=0; RUN_PIPELINE=0
    fi
  else
    log "using the store of S3_ENDPOINT=$S3_ENDPOINT (it needs room for" \
      "$(( 4 * ${CHECK_PIPELINE_ROUNDS:-3} + 2 )) copies of a ${CHECK_PIPELINE_MIB:-1024} MiB journal)"
  fi
  # The placement of §6.2 runs C and D: the local server on CPU 0, the measured tools on CPU 1.
  if [[ -z $SETUP_ERROR && -z ${SERVER_CPUS+x} && -z ${CLIENT_CPUS+x} ]]; then
    case "$S3_ENDPOINT" in
      *://127.*|*://localhost[:/]*|*://localhost|*://\[::1\]*) local_store=1 ;;
      *) local_store=0 ;;
    esac
    if [[ $local_store == 1 ]] && pgrep -x radosgw >/dev/null && [[ $(nproc) -ge 2 ]]; then
      export SERVER_CPUS=0 CLIENT_CPUS=1
    else
      export SERVER_CPUS="" CLIENT_CPUS=""
    fi
  fi
  if [[ -n ${SERVER_CPUS:-} ]]; then
    PLACEMENT="server on CPUs $SERVER_CPUS, tools on CPUs $CLIENT_CPUS"
  elif [[ -z $SETUP_ERROR ]]; then
    PLACEMENT="shared cores"
  fi
fi

# --- S3 client against rclone (§4) ---------------------------------------------------------------
# run_s3.sh runs rclone with AWS_CA_BUNDLE unset itself (rclone fails on it with a CA-bundle
# error); so does run_pipeline.py. This script never calls rclone.
if [[ $RUN_S3 == 1 ]]; then
  FILE[s3]="$OUT_DIR/s3.md"
  part s3 900 "${FILE[s3]}" "$OUT_DIR/s3.log" \
    env OBJECTS=64 SIZE_MIB=8 CONCURRENCY=8 CEILING_CONCURRENCY=0 STEP_TIMEOUT=300 \
    BENCH="$BUILD/perf/cairn_s3_bench" bash "$REPO/perf/run_s3.sh"
elif [[ $SKIP_S3 == 1 ]]; then
  STATUS[s3]=skipped
elif [[ -n $FROM_S3 ]]; then
  STATUS[s3]=from-file; FILE[s3]=$FROM_S3
fi

# --- checkpoint pipeline (§6) --------------------------------------------------------------------
if [[ $RUN_PIPELINE == 1 ]]; then
  FILE[pipeline]="$OUT_DIR/pipeline.md"
  part pipeline 2400 "${FILE[pipeline]}" "$OUT_DIR/pipeline.log" \
    env MIB="${CHECK_PIPELINE_MIB:-1024}" SMALL_MIB="${CHECK_PIPELINE_SMALL_MIB:-512}" \
    ROUNDS="${CHECK_PIPELINE_ROUNDS:-3}" STEP_TIMEOUT=600 \
    "$PY" "$REPO/perf/run_pipeline.py" "$BUILD/cli/cairn" "$BUILD/perf/cairn_s3_bench"
elif [[ $SKIP_S3 == 1 ]]; then
  STATUS[pipeline]=skipped
elif [[ -n $FROM_PIPELINE ]]; then
  STATUS[pipeline]=from-file; FILE[pipeline]=$FROM_PIPELINE
fi
stop_rgw

# --- judge ---------------------------------------------------------------------------------------
COMMIT=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -n $(git -C "$REPO" status --porcelain --untracked-files=no 2>/dev/null) ]]; then
  COMMIT="$COMMIT+uncommitted"
fi
meta=()
for name in journal s3 pipeline; do
  meta+=("$name" "${STATUS[$name]:-}" "${FILE[$name]:-}" "${LOG[$name]:-}"
         "${SECONDS_TAKEN[$name]:-}" "${ERROR[$name]:-}")
done
rc=0
CHECK_COMMIT=$COMMIT CHECK_STARTED=$STARTED CHECK_BUILD=$BUILD CHECK_PLACEMENT=$PLACEMENT \
  CHECK_OUT_DIR=$OUT_DIR CHECK_JSON=$JSON_OUT CHECK_WARNINGS="$(printf '%s\n' "${WARNINGS[@]}")" \
  "$PY" - "${meta[@]}" <<'PY' || rc=$?
import datetime, json, math, os, re, statistics, sys

env = os.environ
parts = {}
args = sys.argv[1:]
for i in range(0, len(args), 6):
    name, status, path, log, seconds, error = args[i:i + 6]
    parts[name] = {"status": status, "file": path or None, "log": log or None,
                   "seconds": int(seconds) if seconds else None, "error": error or None}

lines = []  # one dict per target


def add(group, section, description, value, op, target, reason=None, unit="", extra=None):
    """One target. value None means not measured: MISSED with `reason` (or SKIPPED)."""
    line = {"group": group, "section": section, "description": description, "measured": value,
            "op": op, "target": target, "unit": unit, "reason": reason}
    if extra:
        line.update(extra)
    if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value)):
        line["measured"], value, line["reason"] = None, None, f"not a number ({value})"
    if line.get("status") == "SKIPPED":
        pass
    elif value is None:
        line["status"] = "MISSED"
        line["reason"] = line["reason"] or "not measured"
    else:
        ok = {">=": value >= target, ">": value > target, "<=": value <= target,
              "<": value < target}[op]
        line["status"] = "MET" if ok else "MISSED"
    lines.append(line)


def run_problem(name, what):
    """Why a part's figures are missing, or None if its output can be read."""
    p = parts[name]
    if p["status"] == "failed":
        return f"{what} {p['error']} (log: {p['log']})"
    if not p["file"] or not os.path.exists(p["file"]):
        return f"{what} wrote no output ({p['file']})"
    return None


# --- §3 journal: run_journal.sh's JSON ------------------------------------------------------------
def journal():
    # (section, description, where in the JSON, op, target, unit)
    prefix_targets = [
        # §3.1 (the issue raises the prefix target of §3.1 from 85 % to 90 %)
        ("§3.1", "journal: cold prefix / min(disk read, SHA-256 on one core)", "ratio_cold", ">=", 0.90),
        # §3.1 (issue): the same, warm page cache
        ("§3.1", "journal: warm prefix / min(disk read, SHA-256 on one core)", "ratio_warm", ">=", 0.90),
        # §3.1 (issue): bytes per CPU second of the whole process against openssl's one core
        ("§3.1", "journal: cold prefix CPU efficiency vs openssl SHA-256", "cpu_efficiency_cold", ">=", 0.90),
        ("§3.1", "journal: warm prefix CPU efficiency vs openssl SHA-256", "cpu_efficiency_warm", ">=", 0.90),
    ]
    append_targets = [
        # §3.2 "ahead of db_bench --sync=1 at 16 appenders", raised by the issue to 3x
        ("§3.2", "journal: append 256 B, 16 appenders / db_bench --sync=1", 256, 16, ">=", 3.0),
        ("§3.2", "journal: append 4 KiB, 16 appenders / db_bench --sync=1", 4096, 16, ">=", 3.0),
        # §3.2 ">= 10x db_bench at 256 appenders, 256-byte values"
        ("§3.2", "journal: append 256 B, 256 appenders / db_bench --sync=1", 256, 256, ">=", 10.0),
        # §3.2 "ahead at 256 appenders" (4 KiB: the disk's bandwidth is the limit)
        ("§3.2", "journal: append 4 KiB, 256 appenders / db_bench --sync=1", 4096, 256, ">", 1.0),
    ]
    # §3 (issue): group commit's fdatasync rate against fio's at the same bytes per fdatasync
    gc_target = ("§3.1", "journal: group commit fdatasync/s / fio's at same bytes (256 B x 256)",
                 ">=", 0.80)
    problem = run_problem("journal", "run_journal.sh")
    data = None
    if problem is None:
        try:
            with open(parts["journal"]["file"]) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            problem = f"cannot read the journal JSON: {e}"
    if data is not None:
        parts["journal"]["quick"] = data.get("env", {}).get("quick")
    prefix = (data or {}).get("prefix") or {}
    for section, desc, key, op, target in prefix_targets:
        value, reason = prefix.get(key), problem
        if problem is None and value is None:
            reason = f"prefix.{key} absent from the journal JSON (a run_journal.sh without it)"
        add("journal", section, desc, value, op, target, reason)
    rows = {(r.get("value_size"), r.get("threads")): r for r in (data or {}).get("append") or []}
    for section, desc, size, threads, op, target in append_targets:
        row = rows.get((size, threads))
        value, reason = (row or {}).get("ratio_cairn_over_db_bench"), problem
        if problem is None and row is None:
            reason = f"no append row for {size} B x {threads} in the journal JSON"
        elif problem is None and value is None:
            reason = "db_bench gave no ops/s for this row (see its raw output)"
        extra = {"ratios_per_repeat": row.get("ratios_per_repeat")} if row else None
        add("journal", section, desc, value, op, target, reason, "x", extra)
    gc = (data or {}).get("group_commit")
    section, desc, op, target = gc_target
    reason = problem
    if problem is None and not isinstance(gc, dict):
        reason = "group_commit absent from the journal JSON (a run_journal.sh without it)"
    elif problem is None and gc.get("ratio") is None:
        reason = "group_commit.ratio absent from the journal JSON"
    extra = None
    if isinstance(gc, dict):
        extra = {k: gc.get(k) for k in ("bytes_per_sync", "cairn_syncs_per_s", "fio_syncs_per_s")}
    add("journal", section, desc, (gc or {}).get("ratio") if isinstance(gc, dict) else None,
        op, target, reason, "", extra)


# --- §4 S3 client against rclone: run_s3.sh's markdown table --------------------------------------
def s3():
    # §4.1: "at least rclone's throughput at no more than half its CPU per GiB, on the same 64
    # objects of 8 MiB with 8 transfers each", on every row of §4.2.
    rows = [("upload (PUT)", "upload (PUT)"),
            ("download to files (GET)", "download to files"),
            ("download to memory", "download to memory")]
    skipped = parts["s3"]["status"] == "skipped"
    problem = None if skipped else run_problem("s3", "run_s3.sh")
    table = {}
    if not skipped and problem is None:
        with open(parts["s3"]["file"]) as f:
            for line in f:
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                if len(cells) == 7:
                    table[cells[0]] = cells
        if not any(k.startswith(rows[0][0]) for k in table):
            problem = f"no result table in {parts['s3']['file']}"
    for key, label in rows:
        cells = next((v for k, v in table.items() if k.startswith(key)), None)
        thr = cpu = None
        reason = problem or (None if cells else f"no row '{key}' in the run_s3.sh table")
        if cells:
            try:  # from the MiB/s and CPU s/GiB columns (more digits than the ratio columns)
                thr = float(cells[1]) / float(cells[2])
                cpu = float(cells[4]) / float(cells[5])
            except (ValueError, ZeroDivisionError) as e:
                reason = f"cannot read the row '{key}': {e}"
        extra = {"status": "SKIPPED", "reason": "--skip-s3"} if skipped else None
        raw = {"row": cells} if cells else None
        # §4.1: throughput at least rclone's
        add("s3", "§4.1", f"s3: {label}: throughput cairn / rclone", thr, ">=", 1.0, reason, "x",
            extra or raw)
        # §4.1: CPU per GiB at most half of rclone's
        add("s3", "§4.1", f"s3: {label}: CPU per GiB cairn / rclone", cpu, "<=", 0.5, reason, "x",
            extra or raw)


# --- §6 checkpoint pipeline: run_pipeline.py's per-round table -----------------------------------
ROW = re.compile(r"^\| (?P<round>\d+) \| (?P<step>upload \(checkpoint\)|verify --deep) \| "
                 r"(?P<mine>\S+) \| (?P<peer>[a-z ]+?) (?P<theirs>\S+) \| (?P<ratio>\S+)x \| "
                 r"(?P<pct>\S+)% of (?P<ceiling>\S+) \((?P<who>[^)]*)\) \| (?P<cpu>\S+) \| "
                 r"(?P<peer_cpu>\S+) \| (?P<rss>\S+) \|$")
RSS = re.compile(r"cairn max RSS for a (\d+) MiB graph: checkpoint (\d+) MiB, verify (\d+) MiB; "
                 r"for (\d+) MiB: checkpoint (\d+) MiB, verify (\d+) MiB")


def pipeline():
    placement = env.get("CHECK_PLACEMENT") or ""
    skipped = parts["pipeline"]["status"] == "skipped"
    problem = None if skipped else run_problem("pipeline", "run_pipeline.py")
    rows, rss, setup = [], None, None
    if not skipped and problem is None:
        with open(parts["pipeline"]["file"]) as f:
            for line in f:
                line = line.rstrip("\n")
                m = ROW.match(line)
                if m:
                    rows.append(m.groupdict())
                elif RSS.search(line):
                    rss = [int(x) for x in RSS.search(line).groups()]
                elif " MiB journal of " in line and setup is None:
                    setup = line.strip()
        if not rows:
            problem = f"no per-round table in {parts['pipeline']['file']}"
    parts["pipeline"]["setup"] = setup

    def series(step, peer, fn):
        out = []
        for r in rows:
            if r["step"] == step and r["peer"] == peer:
                try:
                    out.append(fn(r))
                except (ValueError, ZeroDivisionError):
                    out.append(float("nan"))
        return out

    f = float
    targets = [
        # §6.1 goals: "upload and verification within 10 % of the server's ceiling"
        ("§6.1", "pipeline: checkpoint upload / server ceiling", "upload (checkpoint)", "rclone up",
         lambda r: f(r["mine"]) / f(r["ceiling"]), ">=", 0.90, ""),
        ("§6.1", "pipeline: verify --deep / server ceiling", "verify --deep", "restic check",
         lambda r: f(r["mine"]) / f(r["ceiling"]), ">=", 0.90, ""),
        # §6.1: "verification at 2x restic check --read-data"
        ("§6.1", "pipeline: verify --deep / restic check --read-data", "verify --deep",
         "restic check", lambda r: f(r["mine"]) / f(r["theirs"]), ">=", 2.0, "x"),
        # §6.1: "less CPU per GiB than every peer"
        ("§6.1", "pipeline: checkpoint CPU per GiB / rclone upload's", "upload (checkpoint)",
         "rclone up", lambda r: f(r["cpu"]) / f(r["peer_cpu"]), "<", 1.0, "x"),
        ("§6.1", "pipeline: verify CPU per GiB / restic check's", "verify --deep", "restic check",
         lambda r: f(r["cpu"]) / f(r["peer_cpu"]), "<", 1.0, "x"),
        ("§6.1", "pipeline: verify CPU per GiB / rclone download's", "verify --deep",
         "rclone down", lambda r: f(r["cpu"]) / f(r["peer_cpu"]), "<", 1.0, "x"),
    ]
    where = f" ({placement})" if placement and placement != "shared cores" else ""
    for section, desc, step, peer, fn, op, target, unit in targets:
        values = [] if problem or skipped else series(step, peer, fn)
        reason = problem or (None if values else f"no '{step}' rows against {peer}")
        value = statistics.median(values) if values else None
        extra = {"per_round": values}
        if len(values) > 1:
            extra["display"] = f"{value:.3f}{unit} [{min(values):.2f}-{max(values):.2f}]"
        if skipped:
            extra = {"status": "SKIPPED", "reason": "--skip-s3"}
        add("pipeline", section, desc + (where if "ceiling" in desc else ""), value, op, target,
            reason, unit, extra)
    # §6.1: "memory independent of the graph's size": the peak RSS for the MIB graph within
    # 10 % of that for the SMALL_MIB one (§6.2: 182-187 against 177-181 MiB).
    for i, what in ((1, "checkpoint"), (2, "verify --deep")):
        value, reason = None, problem
        if not skipped and problem is None:
            if rss is None:
                reason = "no RSS line in the run_pipeline.py output"
            else:
                value = rss[i + 3] / rss[i] if rss[i] else None
        extra = {"status": "SKIPPED", "reason": "--skip-s3"} if skipped else (
            {"rss_mib": {f"{rss[0]} MiB graph": rss[i], f"{rss[3]} MiB graph": rss[i + 3]}}
            if rss else None)
        sizes = f"{rss[3]} / {rss[0]} MiB" if rss else "MIB / SMALL_MIB"
        add("pipeline", "§6.1", f"pipeline: {what} peak RSS, graph of {sizes}", value, "<=", 1.10,
            reason, "x", extra)


for name, fn in (("journal", journal), ("s3", s3), ("pipeline", pipeline)):
    try:
        fn()
    except Exception as e:  # a parser bug must not hide the other parts' results
        add(name, "-", f"{name}: evaluation", None, ">=", 0, f"check.sh could not judge it: {e!r}")


def shown(v, unit):
    if v is None:
        return "n/a"
    return (f"{v:.3f}" if abs(v) < 10 else f"{v:.2f}") + unit


rows = []
for line in lines:
    measured = line.get("display") or shown(line["measured"], line["unit"])
    if line["status"] == "SKIPPED":
        measured = "-"
    target = f"{line['op']} {line['target']:.2f}{line['unit']}"
    status = line["status"] + (f": {line['reason']}" if line["status"] != "MET" and line["reason"] else "")
    line["line"] = [f"{line['section']} {line['description']}", measured, target, status]
    rows.append(line["line"])
hdr = ["target", "measured", "target", "result"]
widths = [max(len(r[i]) for r in rows + [hdr]) for i in range(3)]
print(f"perf/check.sh at {env['CHECK_COMMIT']}, started {env['CHECK_STARTED']}, "
      f"build {env['CHECK_BUILD']}" + (f"; pipeline: {env['CHECK_PLACEMENT']}" if env.get("CHECK_PLACEMENT") else ""))
for name, p in parts.items():
    bits = [p["status"]]
    if p["seconds"] is not None:
        bits.append(f"{p['seconds']} s")
    if p["file"] and p["status"] != "skipped":
        bits.append(p["file"])
    if p.get("quick") not in (None, "1"):
        bits.append("a full run, not --quick")
    if p.get("setup"):
        bits.append(p["setup"])
    print(f"  {name}: " + ", ".join(bits))
for w in filter(None, env.get("CHECK_WARNINGS", "").splitlines()):
    print(f"  warning: {w}")
print()
print(f"{hdr[0]:<{widths[0]}} | {hdr[1]:>{widths[1]}} | {hdr[2]:<{widths[2]}} | {hdr[3]}")
print("-" * (sum(widths) + 9 + len(hdr[3])))
for r in rows:
    print(f"{r[0]:<{widths[0]}} | {r[1]:>{widths[1]}} | {r[2]:<{widths[2]}} | {r[3]}")
count = {s: sum(1 for x in lines if x["status"] == s) for s in ("MET", "MISSED", "SKIPPED")}
code = 1 if count["MISSED"] else 3 if count["SKIPPED"] else 0
with open("/proc/loadavg") as f:
    load = " ".join(f.read().split()[:3])
finished = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
print(f"\nsummary: {count['MET']} MET, {count['MISSED']} MISSED, {count['SKIPPED']} SKIPPED of "
      f"{len(lines)} targets; exit {code} (finished {finished}, load {load})")
if env.get("CHECK_JSON"):
    doc = {"commit": env["CHECK_COMMIT"], "started": env["CHECK_STARTED"], "finished": finished,
           "build": env["CHECK_BUILD"], "placement": env.get("CHECK_PLACEMENT") or None,
           "out_dir": env.get("CHECK_OUT_DIR") or None, "load_at_end": load,
           "warnings": [w for w in env.get("CHECK_WARNINGS", "").splitlines() if w],
           "runs": parts, "targets": lines,
           "summary": {**{k.lower(): v for k, v in count.items()}, "total": len(lines)},
           "exit_code": code}
    def finite(v):  # strict JSON: NaN and infinities become null
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict):
            return {k: finite(x) for k, x in v.items()}
        if isinstance(v, list):
            return [finite(x) for x in v]
        return v
    with open(env["CHECK_JSON"], "w") as f:
        json.dump(finite(doc), f, indent=2, ensure_ascii=False)
        f.write("\n")
    print(f"JSON: {env['CHECK_JSON']}")
sys.exit(code)
PY
if [[ -n $SETUP_ERROR ]]; then
  echo "check.sh: set-up error: $SETUP_ERROR (see $OUT_DIR/rgw.log)" >&2
  exit 2
fi
exit "$rc"
