#!/usr/bin/env bash
# Runs cairn's whole test suite, as CI does: installs what is missing, checks formatting, the
# layering and the function-length ratchet, model-checks the protocols (spin; in the quick loop too), then builds and runs the tests in
# the release (CMAKE_BUILD_TYPE=Release) build, installs it and builds an embedder's project
# against the installed package, runs the tests in the ASan+UBSan and TSan builds, and runs
# every fuzz target briefly. Fails on the first failing step.
#   CAIRN_TEST_QUICK=1  only the release build (for a fast local loop)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bash scripts/install-deps.sh ci

started=$SECONDS
step() { printf '\n==== %s (at %d s) ====\n' "$*" $((SECONDS - started)); }
jobs=${CAIRN_JOBS:-$(nproc)}

# The S3 integration tests run against a real server: Ceph RGW on loopback, started here and
# stopped on exit (they fail, never skip, without it).
step "start the S3 server (Ceph RGW)"
shared=${CAIRN_SHARED_DIR:-$root/../shared}
[[ -f $shared/s3/start-rgw.sh ]] || {
  echo "test.sh: $shared/s3/start-rgw.sh not found (the shared directory beside the repository, or CAIRN_SHARED_DIR)" >&2
  exit 1
}
# A failed start stops the run here (eval of a failed command substitution would not). STS
# accepts credentials of 1 s and more, so the catalog's tests can watch vended ones expire.
rgw_env=$(CAIRN_RGW_STS_MIN_DURATION=1 bash "$shared/s3/start-rgw.sh") ||
  { echo "test.sh: the S3 server did not start" >&2; exit 1; }
eval "$rgw_env"
export S3_ENDPOINT S3_ACCESS_KEY S3_SECRET_KEY S3_REGION S3_BUCKET S3_STS_ENDPOINT S3_ROLE_ARN
export CAIRN_REQUIRE_S3=1
trap 'bash "$shared/s3/stop-rgw.sh" --purge >/dev/null 2>&1 || true' EXIT

step "clang-format"
mapfile -t sources < <(git ls-files '*.cpp' '*.hpp' 2>/dev/null || find base io net engine catalog cli tests perf -name '*.[ch]pp')
clang-format --dry-run -Werror "${sources[@]}"

step "the layering (docs/design.md §1.2) and the function-length ratchet"
python3 scripts/check-layers.py --verbose
python3 scripts/function-lengths.py --ratchet scripts/long-functions.txt

step "model checking (spin)"
bash scripts/check-models.sh

run_ctest() {  # dir [ctest args...]
  local dir=$1
  shift
  (cd "$root/$dir" && ctest --output-on-failure -j "$jobs" "$@")
}

step "release build and tests"
bash scripts/build.sh release
run_ctest build

step "install into a temporary prefix; build and run docs/examples/consumer against it"
bash scripts/check-install.sh build

if [ "${CAIRN_TEST_QUICK:-0}" != 1 ]; then
  step "ASan+UBSan build and tests"
  bash scripts/build.sh asan
  # cli.test_head_decode starts the binary for each of about 200 head images (147 s under
  # ASan); the decoder is pure code that the vector tests run in-process under ASan on every
  # one of those images, and the fuzz run covers it too. The release run keeps the CLI test.
  # cli.test_options_cli runs here, its `ulimit -n` runs too (a command no longer starts with
  # too few descriptors, where UBSan's vptr check, short of a pipe, misreported: decision D63).
  # Its walk of every numeric option of every command gives each the values just outside the
  # range and two malformed ones here (CAIRN_TEST_OPTION_VALUES=edges), every malformed value
  # in the release run: about a thousand ASan starts fewer.
  CAIRN_TEST_OPTION_VALUES=edges \
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    run_ctest build-asan -E '^cli\.test_head_decode$'

  step "TSan build and tests"
  bash scripts/build.sh tsan
  # The command-line tests start the binary hundreds of times (single-threaded commands; the
  # option layer's walk of every option, about a thousand starts); the release and ASan runs
  # cover them, and the TSan run keeps every unit test of the same code. The TSan tree does not
  # build the C++ tests whose runs start no thread (CAIRN_THREADLESS_TESTS in
  # tests/CMakeLists.txt: codecs, checks, single-threaded file I/O; the ASan+UBSan run has
  # them; docs/decisions/0064-sanitizer-trees-unity-builds-tsan.md).
  TSAN_OPTIONS=halt_on_error=1 run_ctest build-tsan -E '^cli\.test_(head_decode|operations_cli|publish_cli|options_cli)$'

  step "fuzz smoke run"
  bash scripts/build.sh fuzz
  run_ctest build-fuzz -R '^fuzz\.'
fi
step "all tests passed"
