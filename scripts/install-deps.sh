#!/usr/bin/env bash
# Installs the Debian 12 packages cairn needs to build and test, skipping what is present.
set -euo pipefail

# Boost: the headers and Boost.JSON only (libboost1.81-all-dev would pull in OpenMPI).
# The catalog: Avro C (Iceberg manifests) and zlib (deflate blocks bounded before Avro C reads
# them), python3-avro (test manifests written apart), python3-prometheus-client (a real parser
# of the metrics format), python3-yaml and python3-jsonschema (responses checked against the
# REST spec's schemas); spin: the protocol models. Node.js 20 and npm (for the iceberg-js
# client) come with the machine (NodeSource's nodejs package): Debian's npm package would pull
# in Debian's older nodejs, so they are checked, not installed.
packages=(
  cmake ninja-build g++ ccache pkg-config python3 clang-format
  libboost1.81-dev libboost-json1.81-dev liburing-dev libssl-dev libsimdjson-dev catch2
  libcli11-dev libpugixml-dev libfmt-dev libspdlog-dev libbenchmark-dev clang-14
  libclang-rt-14-dev spin libavro-dev zlib1g-dev python3-avro python3-prometheus-client
  python3-yaml python3-jsonschema
)
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
for tool in node npm; do
  command -v "$tool" >/dev/null ||
    echo "install-deps.sh: warning: $tool is missing: the iceberg-js test will fail without it" >&2
done
