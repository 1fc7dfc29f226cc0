#!/usr/bin/env bash
# Installs the Debian 12 packages one use of cairn needs, skipping what is present.
#   scripts/install-deps.sh [PROFILE...]    (default: build)
#     build   build the libraries and the `cairn` command (what scripts/quickstart.sh needs)
#     test    build, plus what the test suite needs (Catch2, the Python checks' modules)
#     ci      test, plus the sanitizer and fuzz toolchain, spin and clang-format (scripts/test.sh)
#     perf    build, plus the peers the benchmarks of perf/ run beside cairn
# docs/operations.md ("Building") gives each profile's download and installed size.
set -euo pipefail

# Boost: the headers and Boost.JSON only (libboost1.81-all-dev would pull in OpenMPI). The
# catalog: Avro C (Iceberg manifests) and zlib (deflate blocks bounded before Avro C reads them).
build=(cmake ninja-build g++ ccache pkg-config python3 libboost1.81-dev libboost-json1.81-dev
  liburing-dev libssl-dev libsimdjson-dev libcli11-dev libpugixml-dev libavro-dev zlib1g-dev)
# python3-avro writes test manifests apart from the code under test; python3-yaml and
# python3-jsonschema check responses against the REST spec's schemas; python3-prometheus-client
# parses the metrics files (a real parser of the format). Node.js 20 and npm (for
# the iceberg-js client) come with the machine (NodeSource's nodejs package): Debian's npm
# package would pull in Debian's older nodejs, so they are checked, not installed.
test=(catch2 python3-avro python3-yaml python3-jsonschema python3-prometheus-client)
# clang-14 and its runtime: the libFuzzer targets; spin: the protocol models.
ci=(clang-14 libclang-rt-14-dev spin clang-format)
perf=(fio rocksdb-tools rclone restic time)

profiles=("$@")
((${#profiles[@]})) || profiles=(build)
packages=("${build[@]}")
want_node=0
for profile in "${profiles[@]}"; do
  case "$profile" in
    build) ;;
    test) packages+=("${test[@]}"); want_node=1 ;;
    ci) packages+=("${test[@]}" "${ci[@]}"); want_node=1 ;;
    perf) packages+=("${perf[@]}") ;;
    *) echo "usage: scripts/install-deps.sh [build|test|ci|perf]..." >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >&2
fi
if ((want_node)); then
  for tool in node npm; do
    command -v "$tool" >/dev/null ||
      echo "install-deps.sh: warning: $tool is missing: the iceberg-js test will fail without it" >&2
  done
fi
