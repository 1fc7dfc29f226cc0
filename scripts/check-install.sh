#!/usr/bin/env bash
# Installs a built cairn into a temporary prefix and builds and runs docs/examples/consumer
# against it twice, as an embedder would: with find_package(cairn) and with pkg-config.
#   scripts/check-install.sh [BUILD_DIR]     (default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
jobs=${CAIRN_JOBS:-$(nproc)}
work=$(mktemp -d /tmp/cairn-install.XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/cairn include/cairn/engine/database.hpp include/cairn/net/s3/s3_client.hpp \
  share/man/man1/cairn.1 share/bash-completion/completions/cairn; do
  [[ -e $prefix/$f ]] || { echo "check-install.sh: $f was not installed" >&2; exit 1; }
done
if [[ -e $prefix/include/cairn/cli ]] || [[ -e $prefix/include/net ]]; then
  echo "check-install.sh: headers outside include/cairn, or the command line's" >&2
  exit 1
fi
"$prefix/bin/cairn" --version

echo "== find_package(cairn): docs/examples/consumer"
cmake -S docs/examples/consumer -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/consumer" -j "$jobs" >/dev/null
"$work/consumer/cairn_consumer" "$work/db-cmake"

echo "== pkg-config cairn"
export PKG_CONFIG_PATH=$(dirname "$(find "$prefix" -name cairn.pc)")
echo "cairn $(pkg-config --modversion cairn)"
# shellcheck disable=SC2046 # pkg-config prints several words on purpose
g++ -std=c++20 -o "$work/consumer-pc" docs/examples/consumer/main.cpp $(pkg-config --cflags --libs cairn)
"$work/consumer-pc" "$work/db-pc"
echo "check-install.sh: the installed package builds and runs the consumer"
