/*
 * reclamation.pml: vacuum beside a publisher (docs/operations.md, "Vacuum and concurrent
 * publication", "One vacuum at a time") as engine/ops/vacuum.cpp (vacuumNamespace),
 * engine/ops/vacuum_lease.cpp (the lease), engine/graph/checkpoint.cpp (installImmutable,
 * settleRewrites) and Publisher::checkpointAlone (the reuse-age abandon) run it, on abstract
 * time. Checked by scripts/check-models.sh; the abstraction, the bounds
 * and the figures are in docs/model/README.md.
 *
 * Actors
 *   Publisher   builds a candidate (at most NBUILD attempts), records the intent and PUTs it
 *               at once or later: an uncertain answer re-sent within the call, or a request
 *               that arrives late (no second look at the graph), or a re-send by the next call
 *               (after verifySelected re-checks the graph).
 *   Vacuum(v)   VACUUMS of them (one by default); each runs vacuumNamespace once, --apply:
 *               it takes the vacuum lease first, or refuses and deletes nothing.
 *   Clock       advances the abstract time t by one tick at any moment, up to TMAX.
 *
 * Objects, content-addressed: the segments S(0..NSEG-1), S(0) existing from t = 0 and
 * reachable from no retained head (an earlier generation's, which a compaction plans again),
 * the others written by no one yet; HC(k), the head copy of candidate k. Every candidate's
 * graph is all the segments and its head copy (its manifest is folded into the segments: it
 * follows the same rules). The current head H0 (revision r) reaches none of them; every
 * candidate has revision r + 1. Retention keeps the current head only (--keep-revisions 1,
 * the least). The head CAS itself is publication.pml's subject: here one publisher, whose
 * PUT always matches.
 *
 * Time: ticks, with the code's inequalities and nothing to spare: WIN < SETTLE,
 * 2 SETTLE <= REUSE, 2 REUSE <= GRACE; WIN = 0 means a DELETE lands in the tick of its batch's
 * HEADs. Vacuum ages count from the next tick (ageOf's "- 1"). A batch's HEADs are one step at
 * the batch's start: a HEAD taken earlier sees older ages, so this allows more deletes.
 *
 * Vacuum takes the clock reading that judges the listing (listedAt) before the listing, as
 * VacuumRun::list does (README, "Defects found": D1 was a reading after the walk). The vacuum
 * lease is a mutex taken atomically before the listing and given back after the last DELETE;
 * a vacuum that finds it held ends at once. It never expires here (expiry and the takeover of
 * a dead vacuum's lease are argued in the README, not modelled), so its renewal before each
 * batch always succeeds: an assertion says so (README, D2: two vacuums at once, without it).
 * The vacuums are alike, so Vacuum(1) asks for the lease only after Vacuum(0) asked: the
 * executions where Vacuum(1) asks first are these with the names swapped.
 *
 * Mutants, one rule removed each (scripts/check-models.sh expects a counterexample):
 *   MUTANT_NO_GRACE       vacuum deletes unreachable objects whatever their age
 *   MUTANT_NO_HEAD_AGE    the HEAD before a DELETE checks existence, not the age again
 *   MUTANT_NO_WINDOW      a DELETE may land any time after its HEAD
 *   MUTANT_NO_CANDIDATES  head copies newer than the current head do not keep their graphs
 *   MUTANT_NO_REUSE_AGE   the publisher relies on an existing object whatever its age
 *   MUTANT_NO_SETTLE      a rewritten object is relied on without the check after settling
 *   MUTANT_NO_ABANDON     a build slower than the reuse age still records its intent
 *   MUTANT_LISTED_AT_AFTER_WALK  listedAt is read after the walk and readHeadCopies (D1)
 *   MUTANT_NO_LEASE       no vacuum lease: with VACUUMS=2, two vacuums run at once (D2)
 *   MUTANT_NO_FENCE       with STALL: the delayed DELETE deletes whatever version is there (D3)
 *
 * STALL: the vacuum process may stop between a DELETE's window check and the store (SIGSTOP,
 * a descheduled machine), so the DELETE lands after any delay while the clock and the
 * publisher go on. It is the directory store's case: its DELETE is fenced (removeFenced,
 * under the store's write lock, which a rewrite takes too): it deletes only the version, the
 * modification time, that the batch's HEAD saw. Without STALL a DELETE lands within WIN of its
 * batch's HEADs: S3's case, where nothing is sent after the window and the whole request is
 * over by its deadline (S3Store::removeFenced).
 */

/* scripts/check-models.sh runs a mutant's LTL check with NO_ASSERTS, so that the formula
 * alone must find the counterexample (spin checks a claim with an assert of its own, which
 * pan -A would switch off too). */
#ifdef NO_ASSERTS
#define assert(e) skip
#endif

#ifndef WIN
#define WIN 0       /* a DELETE lands within WIN of its batch (0.5 s to send + 1 s answer) */
#endif
#ifndef SETTLE
#define SETTLE 1    /* kRewriteSettle: a rewrite is checked again this long after */
#endif
#ifndef REUSE
#define REUSE 2     /* CheckpointOptions::reuseMaxAge */
#endif
#ifndef GRACE
#define GRACE 4     /* VacuumOptions::graceSeconds */
#endif
#ifndef TMAX
#define TMAX 7      /* the clock stops here */
#endif
#ifndef NSEG
#define NSEG 2      /* segments in a candidate's graph (1 or 2) */
#endif
#ifndef NBUILD
#define NBUILD 2    /* publisher attempts (a failed one is followed by the next checkpoint) */
#endif
#ifndef VACUUMS
#define VACUUMS 1   /* vacuums started (2: a second one, refused or after the first) */
#endif
#ifndef RESTARTS
#define RESTARTS 1  /* vacuum's walks again after the head moved (code: kMaxRestarts = 5) */
#endif
#ifndef BATCHES
#define BATCHES 2   /* delete batches of a vacuum, all walks together (a closed window: another) */
#endif

#define BIT(x) (1 << (x))
#define SEGS (BIT(NSEG) - 1)
#define HC(k) (NSEG - 1 + (k))               /* object index of candidate k's head copy */
#define NOBJ (NSEG + NBUILD)
#define GRAPHK(k) (SEGS | BIT(HC(k)))        /* the graph of candidate k >= 1 */
#define GRAPH(k) ((k) == 0 -> 0 : GRAPHK(k))  /* 0: H0, whose own objects are not modelled */
#define WHOLE(k) ((exists & GRAPHK(k)) == GRAPHK(k))

/* Vacuum: old = at least GRACE, counted from the next tick (ageOf in engine/ops/vacuum.cpp). */
#ifdef MUTANT_NO_GRACE
#define OLD(now, m) true
#else
#define OLD(now, m) ((now) >= (m) + GRACE + 1)
#endif
/* Publisher: relied on only while younger than the reuse age (installImmutable). */
#ifdef MUTANT_NO_REUSE_AGE
#define YOUNG(now, m) true
#else
#define YOUNG(now, m) ((now) < (m) + REUSE)
#endif

/* The time a HEAD saw, which a fenced DELETE compares (STALL only: elsewhere it would only
 * split states). */
#ifdef STALL
#define NOTE_HEAD(x) hmt[x] = mt[x]
#else
#define NOTE_HEAD(x) skip
#endif

byte t = 0;                  /* abstract time */
byte exists = 1;             /* which objects exist: S(0) only, written at t = 0 */
byte mt[NOBJ];               /* each one's modification time */
byte cur = 0;                /* the current head: 0 = H0, k = candidate k */
byte lease = 0;              /* the vacuum lease: 0 free, v + 1 held by Vacuum(v) */
byte tried = 0;              /* vacuums that asked for the lease (in the order of v) */

/* ---- ghosts ------------------------------------------------------------------------------- */
byte relied = 0;             /* what the build in progress relies on ... */
byte relFrom = 0;            /* ... a build that started then: past relFrom + REUSE it is abandoned
                              * before it records anything, so nothing depends on it any more */
byte pendK = 0;              /* the recorded intent's candidate, until it is selected */
bool delReached = false;     /* a DELETE hit the current head's or a pending intent's graph */
bool delRelied = false;      /* a DELETE hit what a build within its reuse age relies on */
bool headBroken = false;     /* a candidate was selected with an object missing */

inline vacuumDelete(x) {
  if
  :: (GRAPH(cur) | GRAPH(pendK)) & BIT(x) -> delReached = true
  :: else
  fi;
  if
  :: (relied & BIT(x)) && t <= relFrom + REUSE -> delRelied = true
  :: else
  fi;
  exists = exists & ~BIT(x);  /* deleting a missing key is fine: another vacuum came first */
  assert(!delReached);  /* never what a retained head reaches or a pending intent needs */
  assert(!delRelied)    /* never what a publisher relies on */
}

inline selectCandidate(k) {  /* the conditional PUT applies: candidate k is the current head */
  cur = k;
  pendK = 0;
  if
  :: !WHOLE(k) -> headBroken = true
  :: else
  fi;
  assert(!headBroken)  /* the selected head's graph is whole */
}

proctype Publisher() {
  byte k = 1, x, a, bStart, tw, rewritten;

next_build:  /* Publisher::checkpointAlone, step 4 begins (buildStart) */
  atomic { bStart = t; relFrom = t; x = 0 };
install_next:  /* installImmutable(S(x)) */
  a = 0;
put_if_absent:
  atomic {
    if
    :: !(exists & BIT(x)) ->  /* written */
       exists = exists | BIT(x); mt[x] = t; relied = relied | BIT(x); goto installed
    :: else  /* 412: it exists */
    fi
  };
head_existing:  /* HEAD, then GET and compare: deleted before either, the same retry */
  atomic {
    if
    :: !(exists & BIT(x)) && a < 2 -> a++; goto put_if_absent  /* vanished: create it again */
    :: !(exists & BIT(x)) && a >= 2 -> goto build_failed
    :: (exists & BIT(x)) && YOUNG(t, mt[x]) ->  /* reused: younger than the reuse age */
       relied = relied | BIT(x); goto installed
    :: (exists & BIT(x)) && !YOUNG(t, mt[x]) -> skip  /* too old to rely on: rewrite it */
    fi
  };
rewrite:  /* ObjectStore::rewrite: an unconditional PUT of the same bytes, a fresh mtime */
  atomic {
    exists = exists | BIT(x);
    mt[x] = t;
    tw = t;
#ifdef MUTANT_NO_SETTLE
    relied = relied | BIT(x)
#else
    rewritten = rewritten | BIT(x)
#endif
  };
installed:
  if
  :: x + 1 < NSEG -> x++; goto install_next
  :: else
  fi;

settle:  /* settleRewrites: wait, then every rewritten object must still be there */
  if
  :: rewritten == 0 -> goto head_copy
  :: else
  fi;
end_settle:  /* the clock may stop first: then this build never finishes (a valid end) */
  atomic {
    t >= tw + SETTLE ->
    if
    :: (rewritten & exists) != rewritten -> goto build_failed  /* deleted: fail, record nothing */
    :: else -> relied = relied | rewritten; rewritten = 0
    fi
  };

head_copy:  /* buildCandidate: the immutable copy of the candidate head */
  atomic { exists = exists | BIT(HC(k)); mt[HC(k)] = t; relied = relied | BIT(HC(k)) };

#ifndef MUTANT_NO_ABANDON
abandon_check:  /* a build slower than the reuse age records nothing */
  atomic {
    if
    :: t > bStart + REUSE -> goto build_failed
    :: else
    fi
  };
#endif

record_intent:  /* recordIntent: from here the candidate's graph is a pending intent's */
  atomic { pendK = k; relied = 0 };

  if
  :: atomic { selectCandidate(k) }  /* the PUT: now, after in-call re-sends, or arriving late */
  :: skip ->  /* uncertain: the next call re-verifies the graph (verifySelected), then re-sends */
     atomic {
       if
       :: WHOLE(k) -> selectCandidate(k)
       :: else -> skip  /* fails closed: the intent stays pending */
       fi
     }
  fi;
  goto done;

build_failed:  /* nothing recorded; the next checkpoint builds again */
  atomic {
    relied = 0; rewritten = 0; a = 0; tw = 0; x = 0;
    if
    :: k < NBUILD -> k++
    :: else -> goto done
    fi
  };
  goto next_build;
done:
  skip
}

proctype Vacuum(byte v) {
  byte listed, due, elig, reach, prot, walked, listedAt, bStart, x, restarts, batches;
  byte lmt[NOBJ];
  byte hmt[NOBJ];  /* the modification time each eligible object's HEAD saw (its fence) */

acquire_lease:  /* the vacuum lease: a conditional create (If-None-Match: *) */
  atomic {
    tried == v -> tried++;  /* Vacuum(0) first: the vacuums are alike, the order does not matter */
#ifndef MUTANT_NO_LEASE
    if
    :: lease == 0 -> lease = v + 1
    :: else -> goto refused  /* a live lease: another vacuum runs; this one deletes nothing */
    fi
#else
    skip
#endif
  };
start:  /* vacuumNamespace: the listing (VacuumRun::list, forEachObject) first ... */
  atomic {
#ifndef MUTANT_LISTED_AT_AFTER_WALK
    listedAt = t;  /* VacuumRun::list: listedAt = now(), before the first LIST request */
#endif
    listed = exists;
    x = 0;
    do
    :: x < NOBJ ->
       if
       :: exists & BIT(x) -> lmt[x] = mt[x]
       :: else -> lmt[x] = 0
       fi;
       x++
    :: else -> break
    od;
    x = 0
  };
walk:  /* ... the walk after it (retainedGraph, --keep-revisions 1) ... */
  atomic { walked = cur; reach = GRAPH(walked) };
read_head_copies:  /* ... readHeadCopies: a listed head copy newer than the current head */
  atomic {
    prot = 0;
#ifndef MUTANT_NO_CANDIDATES
    x = 1;
    do
    :: x <= NBUILD ->
       if
       :: (listed & exists & BIT(HC(x))) && walked == 0 -> prot = prot | GRAPHK(x)
       :: else
       fi;
       x++
    :: else -> break
    od;
#endif
#ifdef MUTANT_LISTED_AT_AFTER_WALK
    listedAt = t;  /* the code before D1's fix: listedAt = now(), after the walk */
#endif
    /* unreachable, no candidate's, at least GRACE old by listedAt: due */
    due = 0;
    x = 0;
    do
    :: x < NOBJ ->
       if
       :: (listed & ~reach & ~prot & BIT(x)) && OLD(listedAt, lmt[x]) -> due = due | BIT(x)
       :: else
       fi;
       x++
    :: else -> break
    od;
    x = 0
  };

batch:  /* confirm the lease, then HEAD each due object again ... */
  atomic {
#ifndef MUTANT_NO_LEASE
    assert(lease == v + 1);  /* held from before the listing to after the last DELETE */
#endif
    bStart = t; elig = 0; batches++;
    do
    :: x < NOBJ ->
       if
#ifdef MUTANT_NO_HEAD_AGE
       :: (due & exists & BIT(x)) -> elig = elig | BIT(x); NOTE_HEAD(x)
#else
       :: (due & exists & BIT(x)) && OLD(t, mt[x]) -> elig = elig | BIT(x); NOTE_HEAD(x)
#endif
       :: else  /* gone, or young again: a publisher rewrote it */
       fi;
       x++
    :: else -> break
    od;
    x = 0
  };
reread_head:  /* ... then re-read the head: unchanged, or walk again */
  atomic {
    due = elig;
    if
    :: cur != walked && restarts < RESTARTS -> restarts++; goto start
    :: cur != walked && restarts >= RESTARTS -> goto done  /* conflict: it kept moving */
    :: else
    fi;
    x = NOBJ
  };
deletes:  /* removeFenced: each DELETE within the window of its batch, or not sent */
  do
  :: x == 0 -> break
  :: x > 0 ->  /* head copies first, then the segments */
     atomic {
       x--;
       if
       :: !(due & BIT(x)) -> skip
#ifdef MUTANT_NO_WINDOW
       :: due & BIT(x) -> vacuumDelete(x); due = due & ~BIT(x)
#else
#ifdef STALL
       :: (due & BIT(x)) && t <= bStart + WIN -> goto stalled  /* sent: it lands later */
#else
       :: (due & BIT(x)) && t <= bStart + WIN -> vacuumDelete(x); due = due & ~BIT(x)
#endif
       :: (due & BIT(x)) && t > bStart + WIN ->
          x = 0;
          if
          :: batches < BATCHES -> goto batch  /* the window closed: HEAD the rest again */
          :: else -> goto done
          fi
#endif
       fi
     }
  od;
#ifdef STALL
  goto done;
stalled:  /* removeFenced, after any delay: the clock and the publisher ran meanwhile */
  atomic {
#ifdef MUTANT_NO_FENCE
    vacuumDelete(x);
#else
    if
    :: (exists & BIT(x)) && mt[x] == hmt[x] -> vacuumDelete(x)  /* the version judged: gone */
    :: else  /* gone, or written again since its HEAD (a later time): kept */
    fi;
#endif
    due = due & ~BIT(x)
  };
  goto deletes;
#endif
done:  /* the lease given back; the locals forgotten (they would only split states) */
  atomic {
#ifndef MUTANT_NO_LEASE
    assert(lease == v + 1);
    lease = 0;
#endif
    listed = 0; due = 0; elig = 0; reach = 0; prot = 0; walked = 0; listedAt = 0; bStart = 0;
    restarts = 0; batches = 0;
    x = 0;
    do
    :: x < NOBJ -> lmt[x] = 0; hmt[x] = 0; x++
    :: else -> break
    od;
    x = 0
  };
refused:
  skip
}

active proctype Clock() {
end:
  do
  :: atomic { t < TMAX -> t++ }
  od
}

init {
  atomic {
    byte v = 0;
    run Publisher();
    do
    :: v < VACUUMS -> run Vacuum(v); v++
    :: else -> break
    od
  }
}

/* The same properties as LTL formulas (a mutant's LTL run compiles the assertions above away:
 * NO_ASSERTS). */
ltl keeps_reachable { [] !delReached }
ltl keeps_relied    { [] !delRelied }
ltl head_whole      { [] (cur == 0 || (exists & GRAPHK(cur)) == GRAPHK(cur)) }
/* All three at once: one search instead of three for the check (an invariant's conjunction is
 * the conjunction of the invariants); the mutants' runs keep each formula alone. */
ltl all_safe {
  [] (!delReached && !delRelied && (cur == 0 || (exists & GRAPHK(cur)) == GRAPHK(cur)))
}
