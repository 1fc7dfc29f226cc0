#!/usr/bin/env bash
# Model-checks the protocols with spin (docs/model/README.md): the real models must pass
# (safety: assertions and invalid end states; and all_safe, the conjunction of a model's LTL
# formulas); every mutant (one rule removed) must produce a counterexample, both from its
# assertions and from its property's LTL formula alone, so a property that cannot fail is
# caught; and a stronger property that does not hold by design must still fail. Works in a
# scratch directory, removed on exit.
#   CAIRN_MODEL_JOBS=N   pan runs at once (default 2)
#   CAIRN_MODEL_KEEP=1   keep the scratch directory (trails, pan output) and print its path
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
models=$root/docs/model

if ! command -v spin >/dev/null 2>&1; then
  echo "installing: spin" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq \
    --no-install-recommends spin >&2
fi
if ! command -v gcc >/dev/null 2>&1; then
  echo "check-models.sh: gcc is needed to compile pan" >&2
  exit 1
fi

# Bounds of every search. The models bound themselves (their #defines, README "Bounds"), so
# each search is exhaustive; reaching the depth or the memory bound means it was not, and a
# check that was not exhaustive fails.
readonly DEPTH=20000    # pan -m: steps on the search stack (the models need < 400)
readonly MEMLIM=3072    # MiB per pan run (-DMEMLIM); the largest run uses about 930
readonly WORKERS=${CAIRN_MODEL_JOBS:-2}

work=$(mktemp -d "${TMPDIR:-/tmp}/cairn-models.XXXXXX")
runner=""
cleanup() {
  if [ -n "$runner" ]; then kill -- "-$runner" 2>/dev/null || true; fi
  if [ "${CAIRN_MODEL_KEEP:-0}" = 1 ]; then
    echo "check-models.sh: kept $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

# One line per job: name|kind|model|spin -D flags|properties|search
#   kind     check   must pass: "safety" (assertions, invalid end states), or LTL properties
#                    (one compiled pan checks each of them in turn)
#            mutant  must fail twice: its assertions, and its LTL property alone (the model's
#                    assertions compiled away: NO_ASSERTS); the defects the models found in the
#                    code are mutants too, once fixed (README, "Defects found")
#            limit   a stronger property that does not hold, by design: must fail (safety)
#   search   of a failing run: bfs (the shortest counterexample), dfs, or rdfs (depth first
#            with the processes in reverse order: -DREVERSE, where that finds it at once);
#            the LTL runs are depth first, rdfs if so marked
pub=publication.pml
rec=reclamation.pml
cat=catalog.pml
# Reclamation's mutants need one build attempt, not two: a counterexample with fewer attempts
# is one with more (an attempt only adds executions), and it is found in a fifth of the states.
# Two vacuums (the lease) are checked with one attempt too: with two, 28 million states (README,
# "Bounds").
small=-DNBUILD=1
two="-DVACUUMS=2 $small"
job_list=(
  "publication|check|$pub||safety|"
  "publication|check|$pub||all_safe|"
  "publication, one publisher: acked = current|check|$pub|-DSTRICT_ACK -DNO_ZOMBIE|safety|"
  "publication: acked = current, with the zombie|limit|$pub|-DSTRICT_ACK|safety|bfs"
  "NO_REREAD|mutant|$pub|-DMUTANT_NO_REREAD|ack_in_chain|bfs"
  "FRESH_ETAG|mutant|$pub|-DMUTANT_FRESH_ETAG|one_successor|dfs"
  "UNCONDITIONAL|mutant|$pub|-DMUTANT_UNCONDITIONAL|one_successor|bfs"
  "SKIP_RECONCILE|mutant|$pub|-DMUTANT_SKIP_RECONCILE|pending_blocks|bfs"
  "NO_JOURNAL_CHECK|mutant|$pub|-DMUTANT_NO_JOURNAL_CHECK|records_kept|dfs"
  "reclamation|check|$rec||safety|"
  "reclamation|check|$rec||all_safe|"
  "reclamation, two vacuums (the lease)|check|$rec|$two|safety|"
  "reclamation, two vacuums (the lease)|check|$rec|$two|all_safe|"
  "NO_GRACE|mutant|$rec|$small -DMUTANT_NO_GRACE|keeps_relied|bfs"
  "NO_HEAD_AGE|mutant|$rec|$small -DMUTANT_NO_HEAD_AGE|keeps_relied|bfs"
  "NO_WINDOW|mutant|$rec|$small -DMUTANT_NO_WINDOW|keeps_relied|bfs"
  "NO_CANDIDATES|mutant|$rec|$small -DMUTANT_NO_CANDIDATES|keeps_reachable|bfs"
  "NO_REUSE_AGE|mutant|$rec|$small -DMUTANT_NO_REUSE_AGE|keeps_relied|bfs"
  "NO_SETTLE|mutant|$rec|$small -DMUTANT_NO_SETTLE|head_whole|bfs"
  "NO_ABANDON|mutant|$rec|$small -DMUTANT_NO_ABANDON|head_whole|bfs"
  "LISTED_AT_AFTER_WALK (defect D1)|mutant|$rec|$small -DMUTANT_LISTED_AT_AFTER_WALK|head_whole|bfs"
  "NO_LEASE, two vacuums (defect D2)|mutant|$rec|$two -DMUTANT_NO_LEASE|head_whole|rdfs"
  "reclamation, a DELETE stalled (fenced)|check|$rec|-DSTALL|safety|"
  "reclamation, a DELETE stalled (fenced)|check|$rec|-DSTALL|all_safe|"
  "NO_FENCE, a DELETE stalled (defect D3)|mutant|$rec|$small -DSTALL -DMUTANT_NO_FENCE|keeps_reachable|bfs"
  "catalog|check|$cat||safety|"
  "catalog|check|$cat||all_safe|"
  "catalog, no rebase|check|$cat|-DREBASES=0|safety|"
  "409_ON_TIMEOUT|mutant|$cat|-DMUTANT_409_ON_TIMEOUT|no_false_409|bfs"
  "200_ON_TIMEOUT|mutant|$cat|-DMUTANT_200_ON_TIMEOUT|no_false_200|bfs"
  "409_ON_UNREADABLE|mutant|$cat|-DMUTANT_409_ON_UNREADABLE|no_false_409|bfs"
  "NO_IDEMPOTENCY|mutant|$cat|-DMUTANT_NO_IDEMPOTENCY|commits_once|bfs"
  "REBASE_NO_KEYCHECK|mutant|$cat|-DMUTANT_REBASE_NO_KEYCHECK|no_false_409|bfs"
  "NO_RECHECK|mutant|$cat|-DMUTANT_NO_RECHECK|requirements|bfs"
  "UNCONDITIONAL|mutant|$cat|-DMUTANT_UNCONDITIONAL|no_false_200|bfs"
  "IDEM_WINDOW=1 (records outlive the window)|mutant|$cat|-DIDEM_WINDOW=1|commits_once|bfs"
  "REFUSED_IS_LOST, no rebase|mutant|$cat|-DREBASES=0 -DMUTANT_REFUSED_IS_LOST|no_false_503|bfs"
  "RACE_IS_LOST (before D59), no rebase|mutant|$cat|-DREBASES=0 -DMUTANT_RACE_IS_LOST|no_false_503|bfs"
)

# Compiles MODEL with the spin and gcc flags into $dir/$tag/pan.
build_pan() {  # dir tag model "spin flags" "gcc flags"
  local run=$1/$2 model=$3 sflags=$4 cflags=$5
  mkdir -p "$run"
  cp "$models/$model" "$run/"
  # shellcheck disable=SC2086  # the flags are lists of words
  (cd "$run" && spin -a $sflags "$model" >spin.out 2>&1 &&
    gcc -w -DMEMLIM=$MEMLIM -DCOLLAPSE $cflags -o pan pan.c >gcc.out 2>&1)
}

# One search with $dir/$tag/pan; writes "status states depth seconds trail violated" to
# $dir/$out.res. Status: pass; fail (an assertion or, where a claim runs, the claim's own
# assertion failed); incomplete (a bound was reached); error (anything else: a deadlock, an
# index out of range, no pan). Trail: the counterexample's steps, 0 without one; violated:
# the assertion that failed.
pan_run() {  # dir tag out "pan flags"
  local run=$1/$2 res=$1/$3.res pflags=$4
  if [ ! -x "$run/pan" ]; then
    echo "error 0 0 0 0 spin-or-gcc-failed" >"$res"
    return 0
  fi
  (
    cd "$run"
    rm -f ./*.trail
    # shellcheck disable=SC2086
    ./pan -m$DEPTH $pflags >"$3.out" 2>&1 || true
    local errors states depth secs trail violated status
    errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$3.out" | tail -1)
    states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$3.out" | tail -1)
    depth=$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' "$3.out" | tail -1)
    secs=$(sed -n 's/^pan: elapsed time \([0-9.e+-]*\) seconds.*/\1/p' "$3.out" | tail -1)
    violated=$(grep -m1 -o 'assertion violated.*(at depth' "$3.out" |
      sed 's/assertion violated *//; s/ *(at depth//; s/ /_/g' || true)
    trail=0
    if ls ./*.trail >/dev/null 2>&1; then
      trail=$(grep -vc '^-' ./*.trail || true)
      cp ./*.trail "$3.trail"
    fi
    if [ -z "$errors" ] || [ -z "$states" ]; then
      status=error
    elif [ "$errors" != 0 ]; then
      status=error
      if grep -q 'assertion violated' "$3.out" && ! grep -q 'invalid array index' "$3.out"; then
        status=fail
      fi
    elif grep -qE 'reached -DMEMLIM bound|out of memory|max search depth too small' "$3.out" ||
      grep -q 'Search not completed' "$3.out"; then
      status=incomplete
    else
      status=pass
    fi
    states=$(awk -v s="$states" 'BEGIN { printf "%d", s }')  # pan may print 1.2e+07
    echo "$status $states ${depth:-0} ${secs:-0} $trail ${violated:--}" >"$res"
  )
}

run_job() {  # index
  local i=$1
  local name kind model sflags props search
  IFS='|' read -r name kind model sflags props search <<<"${job_list[$i]}"
  local dir=$work/$i
  mkdir -p "$dir"
  local safety="-DSAFETY -DNOCLAIM" order="" ltl_order=""
  case $search in
    bfs) order=-DBFS ;;
    rdfs) order=-DREVERSE ltl_order=-DREVERSE ;;
  esac
  case $kind in
    check)
      if [ "$props" = safety ]; then
        build_pan "$dir" safety "$model" "$sflags" "-O2 $safety" || true
        pan_run "$dir" safety safety ""
      else
        build_pan "$dir" ltl "$model" "$sflags" "-O2" || true
        for prop in $props; do pan_run "$dir" ltl "$prop" "-a -N $prop"; done
      fi
      ;;
    limit)
      build_pan "$dir" assert "$model" "$sflags" "-O1 $safety $order" || true
      pan_run "$dir" assert assert ""
      ;;
    mutant)
      build_pan "$dir" assert "$model" "$sflags" "-O1 $safety $order" || true
      pan_run "$dir" assert assert ""
      # The formula alone: a small search, so the compiler's time matters more than pan's.
      build_pan "$dir" ltl "$model" "$sflags -DNO_ASSERTS" "-O0 $ltl_order" || true
      pan_run "$dir" ltl ltl "-a -N $props"
      ;;
  esac
  touch "$dir/done"
}

export -f build_pan pan_run run_job
export work models DEPTH MEMLIM

# The jobs run WORKERS at a time; results are printed in the list's order as they finish.
serialized=$(printf '%s\n' "${job_list[@]}")
export serialized
started=$SECONDS
# In a process group of their own (setsid), so that an early exit stops exactly them.
seq 0 $((${#job_list[@]} - 1)) | setsid xargs -P "$WORKERS" -I{} bash -c \
  'mapfile -t job_list <<<"$serialized"; run_job "$1"' _ {} &
runner=$!

failures=0
row='%-44s %-7s %-16s %-10s %9s %5s %7ss  %s\n'
printf '%-44s %-7s %-16s %-10s %9s %5s %8s  %s\n' \
  model/mutant kind property result states depth time counterexample
for i in "${!job_list[@]}"; do
  while [ ! -e "$work/$i/done" ]; do
    if ! kill -0 "$runner" 2>/dev/null && [ ! -e "$work/$i/done" ]; then
      echo "check-models.sh: the runner stopped before job $i finished" >&2
      exit 1
    fi
    sleep 0.2
  done
  IFS='|' read -r name kind model sflags props search <<<"${job_list[$i]}"
  case $kind in
    check)
      for prop in $props; do
        read -r status states depth secs trail violated <"$work/$i/$prop.res"
        note=""
        if [ "$status" != pass ]; then
          failures=$((failures + 1))
          note="${violated//_/ } (trail $trail steps)"
        fi
        printf "$row" "$name" "$kind" "$prop" "$status" "$states" "$depth" "$secs" "$note"
      done
      ;;
    limit)
      read -r status states depth secs trail violated <"$work/$i/assert.res"
      verdict=fails
      if [ "$status" != fail ]; then
        verdict="HOLDS?"
        failures=$((failures + 1))
      fi
      printf "$row" "$name" "$kind" "$props" "$verdict" "$states" "$depth" "$secs" \
        "assertion ${violated//_/ }: trail $trail steps ($search)"
      ;;
    mutant)
      read -r a_status a_states a_depth a_secs a_trail a_violated <"$work/$i/assert.res"
      read -r l_status l_states l_depth l_secs l_trail l_violated <"$work/$i/ltl.res"
      if [ "$a_status" = fail ] && [ "$l_status" = fail ]; then
        verdict=caught
      else
        verdict=MISSED
        failures=$((failures + 1))
      fi
      printf "$row" "$name" "$kind" "$props" "$verdict" "$a_states" "$a_depth" "$a_secs" \
        "assertion ${a_violated//_/ }: trail $a_trail steps ($search); LTL alone: $l_trail steps"
      ;;
  esac
done
wait "$runner"
runner=""

echo
echo "model checking: ${#job_list[@]} jobs, $((SECONDS - started)) s with $WORKERS at a time"
if [ "$failures" != 0 ]; then
  echo "check-models.sh: $failures failed: a property, a search that was not exhaustive," \
    "or a mutant or limit without its counterexample" >&2
  exit 1
fi
echo "all properties hold within the bounds; every mutant was caught"
