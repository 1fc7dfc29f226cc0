#!/usr/bin/env bash
# perf/run_s3.sh: cairn's S3Client against rclone, in one run, on the same objects.
#
#   1. writes OBJECTS random files of SIZE_MIB MiB to a temp dir;
#   2. upload:   cairn_s3_bench upload (reads the same files first, untimed) vs rclone copy,
#                both with CONCURRENCY transfers and single PUTs (rclone: cutoff 64M);
#   3. download: cairn_s3_bench download --out-dir (writes files, as rclone does; whole blocks
#                with O_DIRECT from a reused aligned buffer, no page cache) vs rclone copy
#                back to a temp dir (both copies are compared with the source), and cairn to
#                memory vs rclone copy to its in-memory backend (:memory:);
#   4. ceiling:  cairn alone with CEILING_CONCURRENCY connections (plain PUT/GET, to memory),
#                an estimate of what the server gives on this machine;
#   5. prints a markdown table with the ratios; deletes the objects and temp files on exit.
#
# CPU is user+sys seconds: getrusage inside cairn_s3_bench (transfer phase only), and
# /usr/bin/time -f '%U %S' around the whole rclone process (start-up and listing included;
# rclone's wall seconds come from the same /usr/bin/time).
#
# The store comes from the S3_* variables of shared/s3/README.md (S3_ENDPOINT, S3_REGION,
# S3_BUCKET, S3_ACCESS_KEY, S3_SECRET_KEY), so the same run works against RGW, MinIO or AWS:
#   set -a; eval "$(bash ../shared/s3/start-rgw.sh)"; set +a
#   bash perf/run_s3.sh
set -euo pipefail

OBJECTS=${OBJECTS:-64}
SIZE_MIB=${SIZE_MIB:-8}
CONCURRENCY=${CONCURRENCY:-8}
CEILING_CONCURRENCY=${CEILING_CONCURRENCY:-32}
STEP_TIMEOUT=${STEP_TIMEOUT:-900}
HERE=$(cd "$(dirname "$0")/.." && pwd)
BENCH=${BENCH:-$HERE/build-s3perf/perf/cairn_s3_bench}
PROVIDER=${RCLONE_PROVIDER:-Ceph}

for v in S3_BUCKET S3_ACCESS_KEY S3_SECRET_KEY; do
  if [[ -z "${!v:-}" ]]; then
    echo "run_s3.sh: $v is not set (set -a; eval \"\$(bash shared/s3/start-rgw.sh)\"; set +a)" >&2
    exit 2
  fi
done
[[ -x "$BENCH" ]] || { echo "run_s3.sh: build $BENCH first (target cairn_s3_bench)" >&2; exit 2; }
command -v rclone >/dev/null || { echo "run_s3.sh: rclone missing (apt-get install -y rclone)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "run_s3.sh: /usr/bin/time missing (apt-get install -y time)" >&2; exit 2; }

export RCLONE_CONFIG_CAIRNS3_TYPE=s3
export RCLONE_CONFIG_CAIRNS3_PROVIDER=$PROVIDER
export RCLONE_CONFIG_CAIRNS3_ACCESS_KEY_ID=$S3_ACCESS_KEY
export RCLONE_CONFIG_CAIRNS3_SECRET_ACCESS_KEY=$S3_SECRET_KEY
export RCLONE_CONFIG_CAIRNS3_REGION=${S3_REGION:-us-east-1}
if [[ -n "${S3_ENDPOINT:-}" ]]; then export RCLONE_CONFIG_CAIRNS3_ENDPOINT=$S3_ENDPOINT; fi
# Single PUTs like cairn: no multipart below 64 MiB, one part stream per transfer.
RCLONE_FLAGS=(--transfers "$CONCURRENCY" --checkers "$CONCURRENCY" --s3-upload-concurrency 1
  --s3-chunk-size 64M --s3-upload-cutoff 64M)

RUN=s3bench-$(date +%Y%m%d%H%M%S)-$$
REMOTE=cairns3:$S3_BUCKET/$RUN
TMP=$(mktemp -d "${TMPDIR:-/tmp}/cairn-s3bench.XXXXXX")
mkdir -p "$TMP/src" "$TMP/cairn-dl" "$TMP/rclone-dl" "$TMP/json"

# rclone is always run with AWS_CA_BUNDLE unset: it fails on that variable (CA-bundle error).
cleanup() {
  local rc=$?
  timeout 300 env -u AWS_CA_BUNDLE rclone delete "$REMOTE" >/dev/null 2>&1 || true
  rm -rf "$TMP"
  exit $rc
}
trap cleanup EXIT

echo "# run_s3.sh: $OBJECTS x $SIZE_MIB MiB, concurrency $CONCURRENCY, prefix $RUN" >&2
echo "# uptime: $(uptime)" >&2
for ((i = 0; i < OBJECTS; i++)); do
  head -c $((SIZE_MIB * 1024 * 1024)) /dev/urandom >"$TMP/src/$(printf 'obj-%04d' "$i")"
done

bench() {  # name, then cairn_s3_bench arguments
  local name=$1
  shift
  timeout "$STEP_TIMEOUT" "$BENCH" "$@" --objects "$OBJECTS" --size "${SIZE_MIB}MiB" >"$TMP/json/$name.json"
  cat "$TMP/json/$name.json" >&2
}
rclone_timed() {  # name, then rclone arguments
  local name=$1
  shift
  /usr/bin/time -f '%e %U %S' -o "$TMP/json/$name.time" \
    timeout "$STEP_TIMEOUT" env -u AWS_CA_BUNDLE rclone "$@" "${RCLONE_FLAGS[@]}"
  echo "rclone $name: wall user sys = $(cat "$TMP/json/$name.time")" >&2
}

sync
bench cairn_up upload --concurrency "$CONCURRENCY" --prefix "$RUN/cairn" --source-dir "$TMP/src"
rclone_timed rclone_up copy "$TMP/src" "$REMOTE/rclone"
bench cairn_down_files download --concurrency "$CONCURRENCY" --prefix "$RUN/cairn" --out-dir "$TMP/cairn-dl"
rclone_timed rclone_down copy "$REMOTE/rclone" "$TMP/rclone-dl"
bench cairn_down_mem download --concurrency "$CONCURRENCY" --prefix "$RUN/cairn"
# rclone's in-memory backend as the destination: the same GETs with no file system behind them.
rclone_timed rclone_down_mem copy "$REMOTE/rclone" :memory:dl
diff -r -q "$TMP/src" "$TMP/cairn-dl" >&2 || { echo "run_s3.sh: cairn's copy differs" >&2; exit 1; }
diff -r -q "$TMP/src" "$TMP/rclone-dl" >&2 || { echo "run_s3.sh: rclone's copy differs" >&2; exit 1; }
rm -rf "$TMP/cairn-dl" "$TMP/rclone-dl"
# cairn's share of a download to files spent writing them: the same writes with no network.
mkdir -p "$TMP/floor"
bench files_floor write --concurrency "$CONCURRENCY" --prefix "$RUN/none" --source-dir "$TMP/src" \
  --out-dir "$TMP/floor"
rm -rf "$TMP/floor"
# Free the comparison objects before the ceiling phase (RGW memstore keeps them in RAM).
timeout 300 env -u AWS_CA_BUNDLE rclone delete "$REMOTE" >/dev/null 2>&1 || true
if [[ "$CEILING_CONCURRENCY" -gt 0 ]]; then
  bench ceil_up upload --concurrency "$CEILING_CONCURRENCY" --prefix "$RUN/ceiling" --source-dir "$TMP/src"
  bench ceil_down download --concurrency "$CEILING_CONCURRENCY" --prefix "$RUN/ceiling"
fi

python3 - "$TMP/json" "$OBJECTS" "$SIZE_MIB" "$CONCURRENCY" "$CEILING_CONCURRENCY" <<'EOF'
import json, os, sys
d, objects, size_mib, conc, ceil = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
mib = objects * size_mib
gib = mib / 1024.0
def cairn(name):
    p = os.path.join(d, name + ".json")
    if not os.path.exists(p): return None
    j = json.load(open(p))
    return (j["mib_per_s"], j["cpu_seconds_per_gib"], j["seconds"], j["cpu_seconds"])
def rcl(name):
    wall, user, sys_ = (float(x) for x in open(os.path.join(d, name + ".time")).read().split()[:3])
    return (mib / wall, (user + sys_) / gib, wall, user + sys_)
rows = [
  ("upload (PUT)", cairn("cairn_up"), rcl("rclone_up")),
  ("download to files (GET)", cairn("cairn_down_files"), rcl("rclone_down")),
  ("download to memory (rclone: :memory: backend)", cairn("cairn_down_mem"), rcl("rclone_down_mem")),
]
print(f"| {objects} x {size_mib} MiB, {conc} transfers | cairn MiB/s | rclone MiB/s | throughput cairn/rclone "
      f"| cairn CPU s/GiB | rclone CPU s/GiB | CPU/GiB cairn/rclone |")
print("|---|---:|---:|---:|---:|---:|---:|")
for name, c, r in rows:
    print(f"| {name} | {c[0]:.1f} | {r[0]:.1f} | {c[0]/r[0]:.2f} | {c[1]:.2f} | {r[1]:.2f} | {c[1]/r[1]:.2f} |")
floor = cairn("files_floor")
if floor:
    print(f"| cairn's file writes alone (no network; O_DIRECT from a reused buffer) | {floor[0]:.1f} "
          f"| | | {floor[1]:.2f} | | |")
for name, key in (("PUT", "ceil_up"), ("GET to memory", "ceil_down")):
    c = cairn(key)
    if c:
        print(f"| ceiling: cairn {name}, {ceil} connections | {c[0]:.1f} | | | {c[1]:.2f} | | |")
EOF
