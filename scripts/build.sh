#!/usr/bin/env bash
# Configures and builds one flavour of cairn into build/ (or build-FLAVOUR/).
#   scripts/build.sh            release (CMAKE_BUILD_TYPE=Release, as users build), into build/
#   scripts/build.sh command    the same build of the `cairn` command alone (no tests, no
#                               benchmarks; what the quickstart needs), into build/
#   scripts/build.sh debian     Debian's package flags (dpkg-buildflags: -O2 -g, fortify,
#                               stack protector, hardening at link), into build-debian/
#   scripts/build.sh asan       ASan+UBSan, into build-asan/
#   scripts/build.sh tsan       TSan, into build-tsan/
#   scripts/build.sh fuzz       libFuzzer targets with clang-14, into build-fuzz/
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:-release}
jobs=${CAIRN_JOBS:-$(nproc)}
# Sanitizer builds: line tables only (-g1; file:line in their reports at a quarter less compile
# time than full -g on two cores) and -Og (docs/decisions/0017-ci-builds-line-tables-only.md), not the -O1 the sanitizers'
# documentation suggests for speed: with ASan+UBSan, GCC 12 compiled
# net/http/http_server.cpp in 107 s at -Og against 164 s at -O1 (UBSan's checks are what made the
# ASan build twice the TSan build: 96 s with ASan alone); with TSan 40 s against 51 s.
sanitizer_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-Og -g1")
# Sanitizer builds are unity builds (docs/decisions/0064-sanitizer-trees-unity-builds-tsan.md): a library's files compile 8 to a
# file and the tests' by folder, so Asio's and Beast's headers are parsed, and their templates
# instrumented and compiled, once per batch instead of once per file (the ASan+UBSan tree: 1,300
# CPU s, about 1,960 one file at a time). The release build stays one file at a time, so an
# error there names its own file.
sanitizer_flags+=(-DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8)
case "$flavour" in
  release) dir=build; args=(-DCMAKE_BUILD_TYPE=Release -DCAIRN_TESTS=ON -DCAIRN_PERF=ON -DCAIRN_EXAMPLES=ON) ;;
  command) dir=build; args=(-DCMAKE_BUILD_TYPE=Release -DCAIRN_TESTS=OFF -DCAIRN_PERF=OFF -DCAIRN_EXAMPLES=OFF) ;;
  debian)
    # As debhelper's cmake build does: CMAKE_BUILD_TYPE=None and the flags from dpkg-buildflags.
    command -v dpkg-buildflags >/dev/null || { echo "build.sh: dpkg-buildflags (dpkg-dev) is missing" >&2; exit 1; }
    dir=build-debian
    args=(-DCMAKE_BUILD_TYPE=None -DCAIRN_PERF=OFF
      "-DCMAKE_CXX_FLAGS=$(dpkg-buildflags --get CXXFLAGS) $(dpkg-buildflags --get CPPFLAGS)"
      "-DCMAKE_EXE_LINKER_FLAGS=$(dpkg-buildflags --get LDFLAGS)") ;;
  asan) dir=build-asan; args=(-DCAIRN_SANITIZE=address -DCAIRN_PERF=OFF "${sanitizer_flags[@]}") ;;
  tsan) dir=build-tsan; args=(-DCAIRN_SANITIZE=thread -DCAIRN_PERF=OFF "${sanitizer_flags[@]}") ;;
  fuzz) dir=build-fuzz; args=(-DCAIRN_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++-14) ;;
  *) echo "usage: scripts/build.sh [release|command|debian|asan|tsan|fuzz]" >&2; exit 2 ;;
esac
cmake -S . -B "$dir" -G Ninja -DCAIRN_WERROR=ON "${args[@]}" >/dev/null
if [ "$flavour" = fuzz ]; then
  cmake --build "$dir" -j "$jobs" --target fuzz_head fuzz_journal_header fuzz_frames \
    fuzz_segment fuzz_manifest fuzz_publisher_state fuzz_vacuum_lease fuzz_sha256_lane \
    fuzz_table_metadata fuzz_commit_request fuzz_log_record fuzz_iceberg_files
elif [ "$flavour" = command ]; then
  cmake --build "$dir" -j "$jobs" --target cairn
else
  cmake --build "$dir" -j "$jobs"
fi
echo "$dir"
