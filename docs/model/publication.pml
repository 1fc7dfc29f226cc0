/*
 * publication.pml: the seven-step publication protocol of docs/design.md §6.2 (docs/protocol.md) as
 * engine/publish/publisher.cpp runs it (Publisher::checkpointAlone), against a store whose
 * one mutable head is a compare-and-swap register. Checked by scripts/check-models.sh; the
 * abstraction, the bounds and the figures are in docs/model/README.md.
 *
 * Actors
 *   Publisher(0)  the publisher.
 *   Publisher(1)  a zombie: a copy of publisher 0's directory (same bindings) made at any
 *                 moment, the journal and the state file copied one after the other (a real
 *                 copy is not atomic), which then ingests records of its own.
 *   Network       delivers a conditional PUT whose response was lost before it applied:
 *                 later (if its precondition then holds) or never.
 *   A crash (CRASH_POINT) ends a call between any two of its steps; the next call starts from
 *   the durable state (publisher.state and the journal), everything else forgotten.
 *
 * Abstractions
 *   - A head is an id 1..MAXH (0: the head object is absent). Every proposed head is a
 *     distinct image (a fresh publication UUID), so its strong ETag can be its id: ETags
 *     never recur.
 *   - A journal is a length and one bit per record (0: appended by publisher 0, 1: by the
 *     zombie after its copy); a head's prefix is such a pair. MATCHES (the head's prefix is
 *     the owned journal's prefix at its sequence) stands for verifyAgainstJournal's hash
 *     comparison.
 *   - A candidate's immutable objects (segments, manifest, head copy) are one flag: content-
 *     addressed and never deleted here (deletion is reclamation.pml's subject).
 *   - One store request, or one durable write, is one atomic step, together with the local
 *     decisions that follow it; crashes fall between steps, where the code's fault points
 *     are (before-upload ... before-expected).
 *
 * Mutants, one rule removed each (scripts/check-models.sh expects a counterexample):
 *   MUTANT_NO_REREAD         an uncertain PUT is taken for a success, without a re-read (7)
 *   MUTANT_FRESH_ETAG        If-Match carries an ETag read just before each PUT, not the one
 *                            observed in step 2 (6)
 *   MUTANT_UNCONDITIONAL     the head PUT carries no precondition (6)
 *   MUTANT_SKIP_RECONCILE    a pending intent is not settled first, a new intent replaces it
 *                            (1, 5)
 *   MUTANT_NO_JOURNAL_CHECK  the selected head's prefix is not compared with the owned
 *                            journal (3, verifyAgainstJournal)
 * Options: STRICT_ACK also asserts that the acknowledged head is still the current head at
 * the instant of acknowledgement; NO_ZOMBIE runs publisher 0 alone. STRICT_ACK holds with
 * NO_ZOMBIE and fails with the zombie (README, "Acknowledged, then overtaken").
 */

/* scripts/check-models.sh runs a mutant's LTL check with NO_ASSERTS, so that the formula
 * alone must find the counterexample (spin checks a claim with an assert of its own, which
 * pan -A would switch off too). */
#ifdef NO_ASSERTS
#define assert(e) skip
#endif

#ifndef MAXH
#define MAXH 3        /* heads that may be proposed in one execution */
#endif
#ifndef MAXLEN
#define MAXLEN 2      /* records a journal may hold */
#endif
#ifndef RUNS
#define RUNS 2        /* checkpoint calls per publisher (a crash ends one) */
#endif
#ifndef RETRIES
#define RETRIES 1     /* re-sends of an uncertain PUT in one call (code: uncertainRetries = 3) */
#endif
#ifndef MAXCRASH
#define MAXCRASH 1    /* crashes in one execution, both publishers together */
#endif
#ifndef MAXFAULT
#define MAXFAULT 2    /* lost responses, lost requests and failed reads, together */
#endif

#define ORIGINAL 0
#define ZOMBIE 1

mtype = { A_OK, A_UNCERTAIN, A_PRECOND, A_RACE };  /* answers to the conditional PUT */
mtype = { J_CANDIDATE, J_PREDECESSOR, J_OTHER };   /* Publisher::judge */

/* ---- the store ---------------------------------------------------------------------------- */
byte cur = 0;                 /* ns-N-current.head: 0 absent, else the id (= its ETag) */
byte nheads = 0;              /* ids handed out so far */
byte hpred[MAXH + 1];         /* predecessor id (0: none, a genesis) */
byte hlen[MAXH + 1];          /* journal prefix: sequence ... */
byte hbits[MAXH + 1];         /* ... and content */
bool installed[MAXH + 1];     /* its segments, manifest and head copy are in the store */

/* ---- each publisher's durable state: publisher.state and the journal ----------------------- */
byte expd[2];                 /* expected head (0: uninitialized) */
byte pend[2];                 /* pending intent: the candidate (0: none) ... */
byte ptag[2];                 /* ... and its precondition: 0 If-None-Match: *, else If-Match */
byte jlen[2];
byte jbits[2];

/* ---- the network and the faults ------------------------------------------------------------ */
byte infl[2];                 /* a PUT lost before it applied, still travelling (0: none) */
byte itag[2];
byte faults = 0;
byte crashes = 0;

/* ---- ghosts: what the properties talk about (the protocol never reads them) ---------------- */
bool acked[MAXH + 1];         /* acknowledged by some publisher */
bool hasSucc[MAXH + 1];       /* some selected head names it as predecessor (index 0: genesis) */
byte ackLen = 0;              /* the longest acknowledged prefix */
byte ackBits = 0;
byte unsettled[2];            /* the recorded intent not yet confirmed (survives crashes) */
bool building[2];             /* from the start of step 4 to the record of step 5 */
bool ackBroken = false;       /* an acknowledged head is not in the chain of the current head */
bool twoSucc = false;         /* a head was given a second successor */
bool recLost = false;         /* a selected or acknowledged prefix drops an acknowledged one */
bool buildPending = false;    /* a candidate was built while an intent was unsettled */
byte gx;                      /* scratch for the ghost computations (always reset to 0) */
byte gh;

#ifdef MUTANT_UNCONDITIONAL
#define COND(t)  true
#else
/* If-None-Match: * (t = 0) or If-Match t */
#define COND(t)  (((t) == 0 && cur == 0) || ((t) != 0 && cur == (t)))
#endif
#define MASK(n)  ((1 << (n)) - 1)
#define EXTENDS(al, ab, bl, bb)  ((al) >= (bl) && (((ab) & MASK(bl)) == (bb)))
#ifdef MUTANT_NO_JOURNAL_CHECK
#define MATCHES(p, h)  (hlen[h] <= jlen[p])
#else
#define MATCHES(p, h)  (hlen[h] <= jlen[p] && ((jbits[p] & MASK(hlen[h])) == hbits[h]))
#endif

/* Is head h in the chain of the current head? (ids grow along a chain: the walk is bounded) */
inline inChain(h, res) {
  gx = cur;
  res = false;
  do
  :: gx == 0 -> break
  :: gx != 0 && gx == h -> res = true; break
  :: gx != 0 && gx != h -> gx = hpred[gx]
  od;
  gx = 0
}

/* After the head changed: is every acknowledged head still in the chain? */
inline recheckAcks() {
  gh = 1;
  do
  :: gh > nheads -> break
  :: gh <= nheads ->
     if
     :: acked[gh] ->
        gx = cur;
        do
        :: gx == 0 -> ackBroken = true; break
        :: gx != 0 && gx == gh -> break
        :: gx != 0 && gx != gh -> gx = hpred[gx]
        od;
        gx = 0
     :: else
     fi;
     gh++
  od;
  gh = 0
}

/* The store applies a conditional PUT: head n replaces the current one. The same image again
 * (a mutant's unconditional re-send) changes nothing: no new successor. */
inline applyHead(n) {
  assert(installed[n]);  /* step 4 before step 6: the graph is in the store before selection */
  if
  :: n == cur -> skip
  :: n != cur && hasSucc[hpred[n]] -> twoSucc = true
  :: n != cur && !hasSucc[hpred[n]] -> hasSucc[hpred[n]] = true
  fi;
  if
  :: !EXTENDS(hlen[n], hbits[n], ackLen, ackBits) -> recLost = true
  :: else
  fi;
  cur = n;
  recheckAcks();
  assert(!twoSucc);    /* no head has two successors */
  assert(!recLost);    /* an acknowledged record is never lost */
  assert(!ackBroken)   /* an acknowledged checkpoint stays in the chain */
}

/* The call returns "selected": the acknowledgement. */
inline acknowledge(h, ok) {
  acked[h] = true;
  inChain(h, ok);
  if
  :: !ok -> ackBroken = true
  :: else
  fi;
#ifdef STRICT_ACK
  assert(cur == h);
#endif
  /* Acknowledged prefixes lie on one chain: each extends the other or is extended by it. */
  if
  :: EXTENDS(hlen[h], hbits[h], ackLen, ackBits) -> ackLen = hlen[h]; ackBits = hbits[h]
  :: !EXTENDS(hlen[h], hbits[h], ackLen, ackBits) && !EXTENDS(ackLen, ackBits, hlen[h], hbits[h]) ->
     recLost = true
  :: else
  fi;
  assert(!ackBroken);  /* acknowledged only when selected, and it is in the chain */
  assert(!recLost);
  ok = false
}

/* Step 6: the store's answer to the conditional PUT of head h with precondition t. */
inline put(p, h, t, ans) {
  if
  :: COND(t) -> applyHead(h); ans = A_OK
  :: COND(t) && faults < MAXFAULT ->  /* applied, the answer lost */
     faults++; applyHead(h); ans = A_UNCERTAIN
  :: faults < MAXFAULT && infl[p] == 0 ->  /* lost before it applied: may still arrive */
     faults++; infl[p] = h; itag[p] = t; ans = A_UNCERTAIN
  :: !COND(t) -> ans = A_PRECOND   /* 412 */
  :: !COND(t) -> ans = A_RACE      /* AWS 409 ConditionalRequestConflict, RGW 500 on a lost race */
  fi
}

/* One GET of the head: the image and its ETag from the same response; or a failed read. */
inline observeHead(seen, ok) {
  if
  :: seen = cur; ok = true
  :: faults < MAXFAULT -> faults++; ok = false
  fi
}

/* Publisher::judge */
inline judge(p, seen, cand, j) {
  if
  :: seen != 0 && seen == cand -> j = J_CANDIDATE
  :: else ->
     if
     :: expd[p] == 0 && seen == 0 -> j = J_PREDECESSOR
     :: expd[p] != 0 && seen == expd[p] -> j = J_PREDECESSOR
     :: else -> j = J_OTHER
     fi
  fi
}

/* A crash instead of the step that follows: the call ends. */
#define CRASH_POINT \
  if \
  :: crashes < MAXCRASH -> crashes++; building[p] = false; goto crashed \
  :: true \
  fi

proctype Publisher(byte p) {
  byte seen, cand, tag, att, runs;
  mtype ans, j;
  bool reconciling, ok;

  /* The zombie is a copy of publisher 0's directory made at any moment; cp copies the two
   * files one after the other, in either order. */
  if
  :: p == ZOMBIE ->
     if
     :: d_step { jlen[1] = jlen[0]; jbits[1] = jbits[0] };
        d_step { expd[1] = expd[0]; pend[1] = pend[0]; ptag[1] = ptag[0]; unsettled[1] = pend[0] }
     :: d_step { expd[1] = expd[0]; pend[1] = pend[0]; ptag[1] = ptag[0]; unsettled[1] = pend[0] };
        d_step { jlen[1] = jlen[0]; jbits[1] = jbits[0] }
     fi
  :: else
  fi;

next_call:  /* Publisher::checkpoint */
  atomic {
    if
    :: runs < RUNS -> runs++
    :: else -> goto done
    fi;
    /* Records appended since the last call (each durable before it was acknowledged). The
     * cutoff is taken in step 4, so appends during a call add nothing the model needs. */
    do
    :: jlen[p] < MAXLEN -> jbits[p] = jbits[p] | (p << jlen[p]); jlen[p]++
    :: break
    od;
    if
    :: pend[p] != 0 -> goto step1_reconcile
    :: else -> goto step2_observe
    fi
  };

step1_reconcile:  /* Publisher::reconcilePending: GET the head, judge it against the intent */
  atomic {
    CRASH_POINT;
#ifdef MUTANT_SKIP_RECONCILE
    goto step2_observe;
#endif
    reconciling = true;
    cand = pend[p];
    tag = ptag[p];
    if
    :: hlen[cand] > jlen[p] -> goto finish  /* diverged: beyond the journal's end */
    :: else
    fi;
    observeHead(seen, ok);
    if
    :: !ok -> goto finish
    :: else
    fi;
    judge(p, seen, cand, j);
    if
    :: j == J_CANDIDATE && MATCHES(p, seen) -> goto confirm   /* verifySelected, then settle */
    :: j == J_PREDECESSOR && MATCHES(p, cand) -> goto send    /* re-verified, then re-sent */
    :: else -> goto finish  /* diverged, or another head: refused, the intent kept as evidence */
    fi
  };

step2_observe:  /* step 2, Publisher::observeHead; step 3, requireExpected and verifySelected */
  atomic {
    CRASH_POINT;
    reconciling = false;
    observeHead(seen, ok);
    if
    :: !ok -> goto finish
    :: else -> tag = seen  /* the strong ETag from that same response */
    fi;
    if
    :: expd[p] == 0 && seen != 0 -> goto finish  /* a head, but the state says uninitialized */
    :: expd[p] != 0 && seen != expd[p] -> goto finish  /* missing, rolled back, or foreign */
    :: seen != 0 && !MATCHES(p, seen) -> goto finish  /* diverged from the owned journal */
    :: seen != 0 && hlen[seen] == jlen[p] -> goto finish  /* unchanged: nothing to publish */
    :: seen == 0 && jlen[p] == 0 -> goto finish  /* the journal is empty */
    :: else
    fi;
    /* Step 4 starts: until step 5 the publisher is building a candidate. */
    building[p] = true;
    if
    :: unsettled[p] != 0 -> buildPending = true
    :: else
    fi;
    assert(!buildPending)  /* a pending intent blocks every new candidate until settled */
  };

step4_build:  /* Publisher::buildCandidate: installCheckpoint, then the head copy */
  atomic {
    CRASH_POINT;
    if
    :: nheads < MAXH ->
       nheads++;
       cand = nheads;
       hpred[cand] = expd[p];  /* the successor rules: predecessor = the expected head */
       hlen[cand] = jlen[p];
       hbits[cand] = jbits[p];
       installed[cand] = true  /* create-if-absent; content-addressed, so equal when present */
    :: else -> building[p] = false; goto finish  /* the model's bound, not the protocol's */
    fi
  };

step5_record:  /* Publisher::recordIntent */
  atomic {
    CRASH_POINT;
#ifndef MUTANT_SKIP_RECONCILE
    assert(pend[p] == 0);
#endif
    pend[p] = cand;
    if
    :: expd[p] == 0 -> ptag[p] = 0  /* If-None-Match: * only when the state says uninitialized */
    :: else -> ptag[p] = tag        /* If-Match with the ETag observed in step 2 */
    fi;
    tag = ptag[p];
    unsettled[p] = cand;
    building[p] = false
  };

send:  /* Publisher::sendAndReconcile, step 6: the conditional PUT */
  att = 0;
put_again:
  atomic {
    CRASH_POINT;
#ifdef MUTANT_FRESH_ETAG
    if
    :: expd[p] != 0 -> tag = cur  /* an ETag read again just before the PUT */
    :: else
    fi;
#endif
    put(p, cand, tag, ans);
    if
    :: ans == A_OK -> goto confirm
    :: ans == A_RACE -> ans = A_PRECOND  /* one handling: Errc::conflict, re-read and judge */
    :: else
    fi;
#ifdef MUTANT_NO_REREAD
    if
    :: ans == A_UNCERTAIN -> goto confirm
    :: else
    fi;
#endif
    skip
  };

reread:  /* step 7 after anything but success: re-read, judge against the original intent */
  atomic {
    CRASH_POINT;
    observeHead(seen, ok);
    if
    :: !ok -> goto finish  /* unknown: the intent stays pending */
    :: else
    fi;
    judge(p, seen, cand, j);
    if
    :: j == J_CANDIDATE && MATCHES(p, seen) -> goto confirm
    :: j == J_PREDECESSOR && ans == A_UNCERTAIN && att < RETRIES ->
       att++; goto put_again  /* the same bytes and the same precondition */
    :: else -> goto finish  /* refused, another head, or still unknown: the intent stays */
    fi
  };

confirm:  /* Publisher::confirmSelected: persist the new expected head ... */
  atomic {
    CRASH_POINT;
    assert(pend[p] == cand);
    expd[p] = cand;
    pend[p] = 0;
    ptag[p] = 0;
    unsettled[p] = 0
  };
  atomic {  /* ... and only then acknowledge */
    CRASH_POINT;
    acknowledge(cand, ok);
    if
    :: reconciling -> goto step2_observe  /* the settled intent first, then the new records */
    :: else -> goto finish
    fi
  };

finish:
crashed:
  skip;
  d_step {
    seen = 0; cand = 0; tag = 0; att = 0; ans = 0; j = 0; reconciling = false; ok = false
  };
  goto next_call;
done:
  skip
}

/* A request lost before it applied may still arrive, and applies if its precondition holds
 * then; or it never arrives. */
active proctype Network() {
end:
  do
  :: atomic { infl[0] != 0 && COND(itag[0]) -> applyHead(infl[0]); infl[0] = 0; itag[0] = 0 }
  :: atomic { infl[1] != 0 && COND(itag[1]) -> applyHead(infl[1]); infl[1] = 0; itag[1] = 0 }
  :: atomic { infl[0] != 0 -> infl[0] = 0; itag[0] = 0 }
  :: atomic { infl[1] != 0 -> infl[1] = 0; itag[1] = 0 }
  od
}

init {
  /* Both start as an initialized publisher with an empty journal; the namespace has no head.
   * The zombie's own state is overwritten by its copy before it runs a call. */
  atomic {
    run Publisher(ORIGINAL);
#ifndef NO_ZOMBIE
    run Publisher(ZOMBIE)
#endif
  }
}

/* The same properties as LTL formulas over the ghost state (a mutant's LTL run compiles the
 * assertions above away: NO_ASSERTS). */
ltl ack_in_chain   { [] !ackBroken }
ltl one_successor  { [] !twoSucc }
ltl pending_blocks {
  [] ((unsettled[0] != 0 -> !building[0]) && (unsettled[1] != 0 -> !building[1]))
}
ltl records_kept   { [] !recLost }
/* All four at once: one search instead of four for the check (an invariant's conjunction is
 * the conjunction of the invariants); the mutants' runs keep each formula alone. */
ltl all_safe {
  [] (!ackBroken && !twoSucc && !recLost &&
      (unsettled[0] != 0 -> !building[0]) && (unsettled[1] != 0 -> !building[1]))
}
