/*
 * catalog.pml: table commits of the stateless catalog service (docs/design.md §9.1): two
 * requests' handlers at a time in any catalog processes over one table log, with
 * requirements, rebasing on a lost CAS, 200 / 409 / 504 answered as docs/design.md §9.1's commit
 * table says, and Idempotency-Key replay. README, "Steps and the C++ functions", names the
 * C++ function of each step (catalog/ops/operations.cpp, engine/storelog/log.cpp). Checked by
 * scripts/check-models.sh.
 *
 * Actors
 *   Client(1)   a commit whose requirement pins the state it read (assert-ref-snapshot-id,
 *               assert-last-assigned-*: fails once anyone else committed).
 *   Client(2)   a commit whose requirement holds on every state (assert-table-uuid): the
 *               catalog may rebase it onto any new head.
 *               Each client may replay its request once, with the same Idempotency-Key and
 *               the same body, at any moment: after a 504, or when an answer is lost in
 *               flight (a time-out), even while the first request is still being served.
 *   Handler     serves one request; handlers are stateless and run concurrently, in one
 *               catalog process or in two (they share nothing but the store).
 *   Network     a PUT lost before it applied may still arrive later (at most one at a time).
 *
 * Abstractions: the table log's head is a commit id (0: the version the clients loaded);
 * every commit is a new image, so its ETag is its id and never recurs. A commit record holds
 * its predecessor, the request's Idempotency-Key (the client's id) and, for the check, the
 * state the client read. A handler's read-back of the head can fail; the metadata file and
 * the log record are immutable create-if-absent objects, folded into the build step. A
 * handler, like a catalog process, may stop at any step (it is never scheduled again).
 *
 * Answers (docs/design.md §9.1): 200; 409 CommitFailedException only when a requirement fails
 * against a state the handler read; 504 CommitStateUnknownException when the head cannot be
 * read back or the outcome stays unknown; 503 before anything was sent (the head could not be
 * read) or when the rebase bound is spent (nothing this handler sent is or can become part of
 * the history; docs/design.md §9.1 allows no 409 there).
 *
 * Refusals (docs/decisions/0059-small-store-request-bounded-latency.md). A 412 says the precondition did not hold: nothing was
 * written. A lost race (AWS's 409, RGW's 500) is an answer but no such proof: RGW answers 500
 * to a PUT that races another on the same key, such as this handler's own earlier PUT still on
 * its way, and a PUT that applied may come back so (a proxy's answer, a fault here: it costs
 * one of MAXFAULT, as a spurious race refusal does). So only a 412 to the only send of a
 * commit is "lost" from the answer alone; every other answer but 2xx is settled by reading the
 * head: ours in the chain, committed; the predecessor after an unanswered send, sent again or
 * unknown; the predecessor after an answer, or another head, lost. And a rebase (what "lost"
 * leads to) first looks for the request in the chain it read: its own earlier candidates (each
 * request has a key here, so the key's records are they, and another handler's of the key).
 *
 * Mutants, one rule removed each (scripts/check-models.sh expects a counterexample):
 *   MUTANT_409_ON_TIMEOUT      no response to the PUT: 409, no re-read
 *   MUTANT_200_ON_TIMEOUT      no response to the PUT: 200, no re-read
 *   MUTANT_409_ON_UNREADABLE   the head cannot be read back: 409 instead of 504
 *   MUTANT_NO_IDEMPOTENCY      a request is served without looking for its key's record
 *   MUTANT_REBASE_NO_KEYCHECK  after a lost CAS, rebase without looking for the key in the
 *                              new chain (another process may have committed this request)
 *   MUTANT_NO_RECHECK          rebase without re-checking the requirements on the new head
 *   MUTANT_UNCONDITIONAL       the head PUT carries no If-Match
 *   MUTANT_REFUSED_IS_LOST     a refusal while the head still shows the predecessor is taken as a
 *                              lost CAS even after an unanswered send of the same commit (which
 *                              may still land): rebase or 503 instead of 504
 *   MUTANT_RACE_IS_LOST        the rule before docs/decisions/0059-small-store-request-bounded-latency.md: a lost race's answer (409, RGW's 500) to the
 *                              only send is "lost" without reading the head, as a 412 is
 *                              (caught with REBASES=0: the rebase's look for its own candidate
 *                              is the second guard, and no rebase is left to make it)
 */

/* scripts/check-models.sh runs a mutant's LTL check with NO_ASSERTS, so that the formula
 * alone must find the counterexample (spin checks a claim with an assert of its own, which
 * pan -A would switch off too). */
#ifdef NO_ASSERTS
#define assert(e) skip
#endif

#ifndef MAXC
#define MAXC 5          /* commits (candidates) proposed in one execution */
#endif
#ifndef REBASES
#define REBASES 1       /* rebases per request */
#endif
#ifndef RESENDS
#define RESENDS 1       /* re-sends of a PUT whose answer was lost and the head unchanged */
#endif
#ifndef REPLAYS
#define REPLAYS 1       /* replays per client */
#endif
#ifndef MAXFAULT
#define MAXFAULT 2      /* lost responses, lost requests, failed reads, together */
#endif
#ifndef IDEM_WINDOW
#define IDEM_WINDOW MAXC  /* records a handler reads back looking for a key: all of them here */
#endif

#define NKEYS 3           /* keys 1 and 2; index 0 unused */
mtype = { P_OK, P_UNKNOWN, P_412, P_RACE };  /* PUT: 2xx; no answer; 412; AWS 409, RGW's 500 */

/* ---- the store: the table log ------------------------------------------------------------- */
byte cur = 0;             /* the head: a commit id (0: the version both clients loaded) */
byte ncommits = 0;
byte cpred[MAXC + 1];
byte ckey[MAXC + 1];      /* its Idempotency-Key */
bool cstrict[MAXC + 1];   /* ghost: its requirement pins the state read ... */
byte cbase[MAXC + 1];     /* ... which was this one */
byte inflC = 0;           /* a PUT lost before it applied, still travelling ... */
byte inflTag = 0;         /* ... and its If-Match */
byte faults = 0;

/* ---- ghosts ------------------------------------------------------------------------------- */
byte commitsOf[NKEYS];    /* commits applied per key */
bool said200[NKEYS];
bool said409[NKEYS];
#define NHANDLERS (2 * (1 + REPLAYS))  /* handler ids: (key - 1) * (1 + REPLAYS) + replay */
byte cowner[MAXC + 1];    /* ghost: the handler that built it (not its _pid: spin reuses them) */
bool said503[NHANDLERS];  /* that handler answered 503 */
bool false503 = false;    /* 503 from a handler whose commit is, or later became, history */
bool false409 = false;    /* 409 for a request that is, or later became, part of the history */
bool false200 = false;    /* 200 for a request not in the history (then, or any time later) */
bool twice = false;       /* a request committed twice */
bool reqBroken = false;   /* a commit applied to a state its requirement does not accept */
byte gx, gn, gk;          /* scratch, always reset */
bool gf;

/* Is a commit with key k in the chain from head h (at most IDEM_WINDOW records back)? */
inline keyInChain(h, k, res) {
  gx = h; gn = 0; res = false;
  do
  :: gx == 0 || gn >= IDEM_WINDOW -> break
  :: gx != 0 && gn < IDEM_WINDOW && ckey[gx] == k -> res = true; break
  :: gx != 0 && gn < IDEM_WINDOW && ckey[gx] != k -> gx = cpred[gx]; gn++
  od;
  gx = 0; gn = 0
}

/* Is a commit built by handler o in the chain from head h? */
inline ownerInChain(h, o, res) {
  gx = h; res = false;
  do
  :: gx == 0 -> break
  :: gx != 0 && cowner[gx] == o -> res = true; break
  :: gx != 0 && cowner[gx] != o -> gx = cpred[gx]
  od;
  gx = 0
}

#ifdef MUTANT_UNCONDITIONAL
#define MATCHES(tag) true
#else
#define MATCHES(tag) (cur == (tag))
#endif

inline applyCommit(c) {
  if
  :: commitsOf[ckey[c]] > 0 -> twice = true
  :: else
  fi;
  commitsOf[ckey[c]]++;
  if
  :: said409[ckey[c]] -> false409 = true
  :: else
  fi;
  if
  :: cstrict[c] && cpred[c] != cbase[c] -> reqBroken = true
  :: else
  fi;
  if
  :: said503[cowner[c]] -> false503 = true
  :: else
  fi;
  cur = c;
  /* every request answered 200 is still in the history */
  gk = 1;
  do
  :: gk >= NKEYS -> break
  :: gk < NKEYS ->
     if
     :: said200[gk] -> keyInChain(cur, gk, gf); if :: !gf -> false200 = true :: else fi
     :: else
     fi;
     gk++
  od;
  gk = 0; gf = false;
  assert(!twice);      /* a replayed key never commits twice */
  assert(!false409);   /* never 409 for a commit that is or may become part of the history */
  assert(!reqBroken);  /* a commit lands only on a state its requirements accept */
  assert(!false200);   /* a 200 stays in the history */
  assert(!false503)    /* nothing a handler sent lands after its 503 */
}

inline say200(k) {
  keyInChain(cur, k, gf);
  if
  :: !gf -> false200 = true
  :: else
  fi;
  said200[k] = true;
  gf = false;
  assert(!false200)    /* never 200 for a commit that is not part of the history */
}

inline say409(k) {
  keyInChain(cur, k, gf);
  if
  :: gf -> false409 = true
  :: else
  fi;
  said409[k] = true;
  gf = false;
  assert(!false409)
}

/* 503: this handler's commits are not in the history and none of them can land later
 * (applyCommit checks that). Another handler of the same key may have committed it: that one
 * answers 200, and a replay with the key finds its record. */
inline say503() {
  ownerInChain(cur, hid, gf);
  if
  :: gf -> false503 = true
  :: else
  fi;
  said503[hid] = true;
  gf = false;
  assert(!false503)
}

/* buildCommit: the new metadata file and log record, immutable and create-if-absent. No one
 * reads them before the head names them, so building is part of the step before the PUT. */
inline buildCommit() {
  if
  :: ncommits < MAXC ->
     ncommits++;
     c = ncommits;
     cpred[c] = h;
     ckey[c] = key;
     cstrict[c] = strict;
     cbase[c] = vread;
     cowner[c] = hid
  :: else -> goto done  /* the model's bound: the handler stops, the client times out */
  fi
}

proctype Handler(byte key; bool strict; byte vread; byte hid) {
  byte h, h2, c, rebases, resends;
  mtype ans;
  bool found;
  bool unans;  /* a send of the current commit went unanswered (appendLog's everUnanswered) */

load:  /* loadTable: GET the table log's head (one response: the image and its ETag). A read
        * that fails here answers 503 and sends nothing: the same as a handler that stops,
        * which the model has anyway (a handler may never be scheduled again). */
  atomic {
    h = cur;
#ifndef MUTANT_NO_IDEMPOTENCY
    /* findIdempotencyRecord: a recent record of this key: the first result, no second commit */
    keyInChain(h, key, found);
    if
    :: found -> say200(key); goto done
    :: else
    fi;
#endif
    /* checkRequirements against the state read */
    if
    :: strict && h != vread -> say409(key); goto done
    :: else
    fi;
    buildCommit()
  };


put:  /* putHead: If-Match the ETag of the head the requirements were checked on */
  atomic {
    if
    :: MATCHES(h) -> applyCommit(c); ans = P_OK
    :: MATCHES(h) && faults < MAXFAULT -> faults++; applyCommit(c); ans = P_UNKNOWN
    :: MATCHES(h) && faults < MAXFAULT -> faults++; applyCommit(c); ans = P_RACE  /* applied */
    :: faults < MAXFAULT && inflC == 0 -> faults++; inflC = c; inflTag = h; ans = P_UNKNOWN
    :: !MATCHES(h) -> ans = P_412
    :: faults < MAXFAULT -> faults++; ans = P_RACE  /* a race's 409 or 500, or a spurious one */
    fi;
    if
    :: ans == P_UNKNOWN -> unans = true
    :: else
    fi;
    if
    :: ans == P_OK -> say200(key); goto done
    :: else
    fi;
#ifdef MUTANT_409_ON_TIMEOUT
    if
    :: ans == P_UNKNOWN -> say409(key); goto done
    :: else
    fi;
#endif
#ifdef MUTANT_200_ON_TIMEOUT
    if
    :: ans == P_UNKNOWN -> say200(key); goto done
    :: else
    fi;
#endif
    skip
  };

reread:  /* appendLog's settling: read the head back, judge by the chain (docs/decisions/0059-small-store-request-bounded-latency.md) */
  atomic {
    if
    :: faults < MAXFAULT -> faults++;
#ifdef MUTANT_409_ON_UNREADABLE
       say409(key);
#endif
       goto done  /* 504 CommitStateUnknownException */
    :: h2 = cur
    fi;
    /* appendLog: a 412 to the only send proves that nothing was written: "lost" from the answer
     * alone, and the read above is the rebase's (commitTable reads the head to rebase) */
    if
    :: ans == P_412 && !unans -> goto lost
#ifdef MUTANT_RACE_IS_LOST
    :: ans == P_RACE && !unans -> goto lost
#endif
    :: else
    fi;
    keyInChain(h2, key, found);  /* ours (the head, or an ancestor of it): committed */
    if
    :: found -> say200(key); goto done
    :: else
    fi;
    if
    :: ans == P_UNKNOWN && h2 == h ->  /* still the predecessor: unknown */
       if
       :: resends < RESENDS -> resends++; goto put  /* the same bytes, the same If-Match */
       :: else -> goto done  /* 504 */
       fi
    :: else
    fi;
#ifndef MUTANT_REFUSED_IS_LOST
    if
    :: ans != P_UNKNOWN && unans && h2 == h -> goto done  /* 504: the unanswered one may land */
    :: else  /* an answered race and the head unchanged, or another head: proven lost */
    fi;
#endif
lost:  /* commitTable on "lost": 503 when its rebase bound is spent (nothing of ours can land);
        * else rebase: look for the request in the chain read first */
    if
    :: rebases >= REBASES -> say503(); goto done
    :: else
    fi;
#ifndef MUTANT_REBASE_NO_KEYCHECK
    keyInChain(h2, key, found);  /* its own earlier candidate, or the key's record: 200 */
    if
    :: found -> say200(key); goto done
    :: else
    fi;
#endif
#ifndef MUTANT_NO_RECHECK
    if
    :: strict && h2 != vread -> say409(key); goto done  /* fails against the state read */
    :: else
    fi;
#endif
    rebases++; h = h2; unans = false; buildCommit(); goto put  /* rebase */
  };
done:
  skip;
  /* Forget everything (a finished handler's locals would only split states). */
  d_step {
    h = 0; h2 = 0; c = 0; rebases = 0; resends = 0; ans = 0; found = false; unans = false;
    vread = 0
  }
}

proctype Client(byte key; bool strict) {
  byte vread, replays;
  atomic { vread = cur; run Handler(key, strict, vread, (key - 1) * (1 + REPLAYS)) };  /* load, send */
  do
  :: replays < REPLAYS ->  /* the same request again */
     replays++; run Handler(key, strict, vread, (key - 1) * (1 + REPLAYS) + replays)
  :: break
  od
}

active proctype Network() {
end:
  do
  :: atomic { inflC != 0 && MATCHES(inflTag) -> applyCommit(inflC); inflC = 0; inflTag = 0 }
  :: atomic { inflC != 0 -> inflC = 0; inflTag = 0 }  /* it never arrives */
  od
}

init {
  atomic {
    run Client(1, true);
    run Client(2, false)
  }
}

/* The same properties as LTL formulas (a mutant's LTL run compiles the assertions above away:
 * NO_ASSERTS). */
ltl no_false_409  { [] !false409 }
ltl no_false_200  { [] !false200 }
ltl commits_once  { [] !twice }
ltl requirements  { [] !reqBroken }
ltl no_false_503  { [] !false503 }
/* All five at once: one search instead of five for the check (an invariant's conjunction is
 * the conjunction of the invariants); the mutants' runs keep each formula alone. */
ltl all_safe { [] (!false409 && !false200 && !twice && !reqBroken && !false503) }
