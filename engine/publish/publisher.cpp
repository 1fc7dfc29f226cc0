#include "engine/publish/publisher.hpp"

#include <fcntl.h>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "base/assert.hpp"
#include "engine/format/checks.hpp"
#include "engine/format/keys.hpp"
#include "engine/graph/heads.hpp"
#include "engine/graph/verifier.hpp"
#include "engine/journal/journal.hpp"
#include "engine/journal/state_file.hpp"
#include "engine/store/intercept_store.hpp"
#include "engine/store/object_store.hpp"
#include "engine/store/store_errors.hpp"
#include "io/file.hpp"
#include "io/uring.hpp"

namespace cairn {

namespace asio = boost::asio;

std::string_view publishOutcomeName(PublishOutcome o) {
  switch (o) {
    case PublishOutcome::selected:
      return "selected";
    case PublishOutcome::unchanged:
      return "unchanged";
  }
  return "?";
}

namespace {

std::filesystem::path statePath(const std::filesystem::path& dir) {
  return dir / kPublisherStateFile;
}

std::string describeHead(const Head& h) {
  return "revision " + std::to_string(h.fields().revision) + ", id " + toHex(h.id()) +
         ", publisher " + h.fields().publisher.text() + ", prefix sequence " +
         std::to_string(h.fields().prefixSequence);
}

}  // namespace

// ---- the state file ----------------------------------------------------------------------

asio::awaitable<Res<void>> initializePublisher(io::Uring& uring, const std::filesystem::path& dir,
                                               const PublisherState& state) {
  if (state.expected || state.pending) {
    co_return err(Errc::usage, "a new publisher starts with an uninitialized namespace");
  }
  std::error_code ec;
  if (std::filesystem::exists(statePath(dir), ec)) {
    co_return err(Errc::usage, statePath(dir).string() + " exists: the publisher is configured");
  }
  auto bytes = encodePublisherState(state);
  if (!bytes) co_return failureOf(bytes);
  auto written = co_await io::durableReplace(uring, statePath(dir), *bytes);
  if (!written) {
    co_return err(Errc::io,
                  "cannot write " + statePath(dir).string() + ": " + written.error().message());
  }
  co_return Res<void>{};
}

asio::awaitable<Res<std::optional<PublisherState>>> loadPublisherState(
    io::Uring&, const std::filesystem::path& dir) {
  co_return readPublisherStateFile(dir);
}

// ---- the publisher -------------------------------------------------------------------------

struct Publisher::Observation {
  std::optional<Head> head;  // nullopt: the head object is missing
  std::string etag;          // from the same response as the image
};

Publisher::Publisher(io::Uring& uring, Journal& journal, ObjectStore& store,
                     std::filesystem::path dir, PublisherState state, EngineLimits& limits,
                     PublishOptions options)
    : uring_(uring),
      journal_(journal),
      store_(store),
      dir_(std::move(dir)),
      state_(std::move(state)),
      limits_(limits),
      options_(std::move(options)) {}

Publisher::~Publisher() = default;

void Publisher::fault(std::string_view point) const {
  if (options_.fault) options_.fault(point);
}

asio::awaitable<Res<PublishResult>> Publisher::checkpoint() {
  // One checkpoint at a time per publisher: a second call waits, then finds the first one's
  // head selected (and publishes only what came after it).
  auto turn = co_await checkpointing_.lock();
  co_return co_await checkpointAlone(false);
}

asio::awaitable<Res<PublishResult>> Publisher::compact() {
  auto turn = co_await checkpointing_.lock();
  co_return co_await checkpointAlone(true);
}

asio::awaitable<Res<PublishResult>> Publisher::checkpointAlone(bool compact) {
  if (state_.lineage != journal_.lineage()) {
    co_return err(Errc::binding, "the publisher state is bound to lineage " +
                                     toHex(state_.lineage) + ", the journal is " +
                                     toHex(journal_.lineage()));
  }
  // Publishing needs a store that enforces conditions; find out before anything is recorded.
  if (!conditionsChecked_) {
    auto enforced = co_await store_.requireConditionalWrites();
    if (!enforced) co_return storeError(enforced.error(), store_.describe());
    conditionsChecked_ = true;
  }
  OperationBudget budget(options_.budget);
  PublishResult result;
  // 1. A pending intent is settled before anything new is proposed.
  if (state_.pending) {
    auto settled = co_await reconcilePending(budget);
    if (!settled) co_return failureOf(settled);
    result = *settled;
    result.reconciledIntent = true;
  }
  // 2. Observe the head once: the image and the ETag of one response.
  auto seen = co_await observeHead(budget);
  if (!seen) co_return failureOf(seen);
  // 3. It must be the head this publisher expects, and its graph must match the journal.
  if (auto ok = requireExpected(*seen); !ok) co_return failureOf(ok);
  auto previous = co_await verifySelected(*seen, budget);
  if (!previous) co_return failureOf(previous);
  if (compact && !seen->head) {
    co_return err(Errc::usage, "the namespace has no head yet: nothing to compact");
  }
  if (!compact && seen->head && seen->head->fields().prefixSequence == journal_.endSequence()) {
    result.head = *seen->head;
    if (!result.reconciledIntent) result.outcome = PublishOutcome::unchanged;
    if (*previous) result.segments = (*previous)->segments.size();
    co_return result;
  }
  if (journal_.endSequence() == 0 && !seen->head) {
    co_return err(Errc::usage, "the journal is empty: nothing to publish yet");
  }
  // 4. Build the candidate and install every immutable object it needs. Everything it relies
  // on was younger than the reuse age (or rewritten) when it started; a build slower than that
  // age might be overtaken by a vacuum's grace period, so it is abandoned before any intent.
  const auto buildStart = std::chrono::steady_clock::now();
  auto intent = co_await buildCandidate(*previous, seen->etag, budget, result, compact);
  if (!intent) co_return failureOf(intent);
  if (std::chrono::steady_clock::now() - buildStart > options_.checkpoint.reuseMaxAge) {
    built_.reset();
    co_return err(Errc::budget,
                  "building the candidate took longer than the reuse age (" +
                      std::to_string(options_.checkpoint.reuseMaxAge.count()) +
                      " s): a concurrent vacuum may already reclaim what it relies on; nothing "
                      "was recorded, checkpoint again");
  }
  // 5. Record the intent durably; from here on it blocks every new candidate until settled.
  auto recorded = co_await recordIntent(*intent);
  if (!recorded) co_return failureOf(recorded);
  // 6 and 7. Conditional PUT; reconcile anything but a confirmed success.
  co_return co_await sendAndReconcile(result, budget);
}

// Step 2: the head once, the image and the ETag of one response (engine/graph/heads.hpp); a
// malformed head is an error here (format), never taken for a missing one.
asio::awaitable<Res<Publisher::Observation>> Publisher::observeHead(OperationBudget& budget) {
  auto seen = co_await cairn::observeHead(store_, state_.ns, budget);
  if (!seen) co_return failureOf(seen);
  if (seen->malformed()) {
    const std::string key = keys::currentHead(state_.ns);
    co_return Failure<Error>{Error{Errc::format, seen->damage, key}};
  }
  Observation out;
  out.head = std::move(seen->head);
  out.etag = std::move(seen->etag);
  co_return out;
}

// Step 3, first half: the observation against the durable expected head.
Res<void> Publisher::requireExpected(const Observation& seen) const {
  std::string key = keys::currentHead(state_.ns);
  auto refuse = [&](std::string why) {
    return Failure<Error>{
        Error{Errc::conflict, key + ": " + why + "; refused, nothing written", key}};
  };
  if (!state_.expected) {
    if (!seen.head) return {};  // genesis: the local state independently says uninitialized
    return refuse("the namespace already has a head (" + describeHead(*seen.head) +
                  ") but this database's state says it is uninitialized");
  }
  const Head& expected = state_.expected->head;
  if (!seen.head) {
    return refuse("the head is missing, but this publisher last saw " + describeHead(expected) +
                  " selected (a deleted head is never re-created)");
  }
  if (seen.head->image() == expected.image()) return {};
  std::uint64_t saw = seen.head->fields().revision;
  std::uint64_t exp = expected.fields().revision;
  std::string what = saw > exp   ? "a successor this publisher did not write"
                     : saw < exp ? "an older head (a rollback)"
                                 : "another head at the same revision";
  return refuse("the store holds " + what + " (" + describeHead(*seen.head) +
                "); this publisher expects " + describeHead(expected));
}

// Step 3, second half: the selected graph and its prefix against the owned journal.
asio::awaitable<Res<std::optional<Manifest>>> Publisher::verifySelected(const Observation& seen,
                                                                        OperationBudget& budget) {
  if (!seen.head) co_return std::optional<Manifest>{};
  const Head& head = *seen.head;
  if (auto bound = requireBinding(head, state_.ns, state_.publisher, journal_.lineage()); !bound) {
    co_return failureOf(bound);
  }
  if (verifiedHead_ && *verifiedHead_ == head.id()) co_return verifiedManifest_;
  VerifyOptions shallow;  // manifest bytes and structure, every segment's existence and size
  auto graph = co_await verifyHeadGraph(store_, head, nullptr, limits_, budget, shallow);
  if (!graph) co_return failureOf(graph);
  auto same = co_await verifyAgainstJournal(head);
  if (!same) co_return failureOf(same);
  verifiedHead_ = head.id();
  verifiedManifest_ = graph->manifest;
  co_return std::optional<Manifest>{std::move(graph->manifest)};
}

asio::awaitable<Res<void>> Publisher::verifyAgainstJournal(const Head& head) {
  const HeadFields& f = head.fields();
  if (f.prefixSequence > journal_.endSequence()) {
    co_return err(Errc::diverged, "head " + toHex(head.id()) + " covers sequence " +
                                      std::to_string(f.prefixSequence) +
                                      ", beyond this journal's end " +
                                      std::to_string(journal_.endSequence()));
  }
  auto prefix = co_await journal_.prefix(f.prefixSequence, limits::kMaxPrefixBytes);
  if (!prefix) co_return failureOf(prefix);
  if (prefix->length != f.prefixLength || prefix->sha256 != f.prefixSha256) {
    co_return err(Errc::diverged, "head " + toHex(head.id()) + " declares a prefix at sequence " +
                                      std::to_string(f.prefixSequence) +
                                      " that differs from this journal's");
  }
  co_return Res<void>{};
}

// Step 4.
asio::awaitable<Res<PendingIntent>> Publisher::buildCandidate(
    const std::optional<Manifest>& previous, const std::string& observedEtag,
    OperationBudget& budget, PublishResult& result, bool compact) {
  // Uploads pass the test fault points when a hook is set.
  InterceptStore hooked(
      store_,
      [this](StoreOp op, const std::string&, ByteView,
             const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
        if (op == StoreOp::putIfAbsent) fault("before-upload");
        co_return std::nullopt;
      },
      [this](StoreOp op, const std::string&, StoreStatus) -> std::optional<StoreOutcome> {
        if (op == StoreOp::putIfAbsent) fault("after-upload");
        return std::nullopt;
      });
  ObjectStore& uploads = options_.fault ? static_cast<ObjectStore&>(hooked) : store_;

  CheckpointOptions checkpointOptions = options_.checkpoint;
  checkpointOptions.compact = compact;
  std::uint64_t cutoff = compact ? previous->prefix.sequence : journal_.endSequence();
  auto installed = co_await installCheckpoint(journal_, uploads, state_.ns, previous, cutoff,
                                              limits_, budget, checkpointOptions);
  if (!installed) co_return failureOf(installed);
  result.objectsWritten += installed->segmentsWritten + (installed->manifestWritten ? 1 : 0);
  result.objectsReused += installed->segmentsReused + (installed->manifestReused ? 1 : 0);
  result.objectsRewritten += installed->objectsRewritten;
  result.segments = installed->manifest.segments.size();
  result.bytesUploaded += installed->bytesUploaded;

  HeadFields f;
  f.ns = state_.ns;
  f.publisher = state_.publisher;
  f.publication = Uuid::random();
  f.lineage = journal_.lineage();
  f.manifestSha256 = installed->manifestSha256;
  f.manifestLength = static_cast<std::uint32_t>(installed->manifestBytes.size());
  f.prefixSequence = installed->manifest.prefix.sequence;
  f.prefixLength = installed->manifest.prefix.length;
  f.prefixSha256 = installed->manifest.prefix.sha256;
  PendingIntent intent;
  if (state_.expected) {
    const Head& predecessor = state_.expected->head;
    f.revision = predecessor.fields().revision + 1;
    f.predecessor = predecessor.reference();
    intent.precondition = Precondition::ifMatch;
    intent.etag = observedEtag;  // the ETag observed in step 2, never one rebuilt from content
  } else {
    f.revision = 1;
    intent.precondition = Precondition::ifNoneMatch;
  }
  auto candidate = makeHead(f);
  if (!candidate) co_return failureOf(candidate);
  if (state_.expected) {
    if (auto ok = requireSuccessor(state_.expected->head, *candidate); !ok) {
      co_return failureOf(ok);
    }
  }
  // The immutable copy of every proposed head, so the history can be walked (cairn log).
  CAIRN_CO_TRY(co_await installHeadCopy(uploads, *candidate, budget));
  result.bytesUploaded += limits::kHeadBytes;
  built_ = std::make_pair(candidate->id(), std::move(installed->manifest));
  intent.candidate = std::move(*candidate);
  co_return intent;
}

// Step 5.
asio::awaitable<Res<void>> Publisher::recordIntent(const PendingIntent& intent) {
  CAIRN_ASSERT(!state_.pending);  // step 1 settled any earlier intent
  PublisherState next = state_;
  next.pending = intent;
  fault("before-intent");
  auto saved = co_await saveState(next);
  if (!saved) co_return failureOf(saved);
  fault("after-intent");
  co_return Res<void>{};
}

// Steps 6 and 7: send the recorded intent, then settle what the store says.
asio::awaitable<Res<PublishResult>> Publisher::sendAndReconcile(PublishResult result,
                                                                OperationBudget& budget) {
  const PendingIntent intent = *state_.pending;
  bool unknown = false;  // once an answer was "unknown", later failures leave it unknown
  // Bounded: a re-send happens only after an uncertain answer, at most uncertainRetries times.
  for (int attempt = 0;; ++attempt) {
    // 6. The conditional PUT.
    auto sent = co_await sendIntent(intent, budget);
    if (!sent) co_return unknownIfSent(sent.error(), unknown, intent);
    if (sent->outcome == SelectOutcome::selected) {
      co_return co_await confirmSelected(result, sent->etag, intent);
    }
    unknown = unknown || sent->outcome == SelectOutcome::uncertain;
    // 7. Anything but success: re-read, and judge it against the original intent.
    auto settled = co_await settleAnswer(*sent, intent, result, budget, unknown);
    if (!settled) co_return failureOf(settled);
    if (*settled) co_return std::move(**settled);
    // Still the predecessor after an unknown outcome: the same request again, after a pause.
    if (attempt >= options_.uncertainRetries) {
      co_return stillPending(sent->answer, intent);
    }
    asio::steady_timer pause(co_await asio::this_coro::executor,
                             options_.retryPause * (attempt + 1));
    co_await pause.async_wait(asio::use_awaitable);
  }
}

// Step 6: the recorded intent, sent: If-None-Match: * or If-Match with the originally
// observed ETag; never unconditional, a re-send with the same bytes and precondition.
asio::awaitable<Res<Selection>> Publisher::sendIntent(const PendingIntent& intent,
                                                      OperationBudget& budget) {
  fault("before-put");
  std::optional<std::string> etag;
  if (intent.precondition == Precondition::ifMatch) etag = intent.etag;
  auto sent = co_await putHead(store_, intent.candidate, etag, budget);
  fault("after-put");
  co_return sent;
}

// Step 7's table (docs/protocol.md) for an answer that was not a success, after one re-read:
// the candidate is the head (selected after all: a lost answer), or another head is (refused:
// conflict, evidence kept), or the predecessor still is: a refusal or failure is reported with
// the intent pending, an unknown outcome is worth sending again (nullopt).
asio::awaitable<Res<std::optional<PublishResult>>> Publisher::settleAnswer(
    const Selection& sent, const PendingIntent& intent, const PublishResult& result,
    OperationBudget& budget, bool unknown) {
  const std::string key = keys::currentHead(state_.ns);
  auto seen = co_await observeHead(budget);
  if (!seen) co_return unknownIfSent(seen.error(), unknown, intent);
  switch (judge(*seen, intent)) {
    case Judgement::candidate: {
      CAIRN_CO_TRY(co_await verifySelected(*seen, budget));
      auto confirmed = co_await confirmSelected(result, seen->etag, intent);
      if (!confirmed) co_return failureOf(confirmed);
      co_return std::optional<PublishResult>{std::move(*confirmed)};
    }
    case Judgement::other:
      co_return Failure<Error>{
          Error{Errc::conflict,
                key + ": the conditional PUT was answered " +
                    std::string(storeStatusName(sent.answer.status)) +
                    " and the head is now neither the predecessor nor the candidate (" +
                    (seen->head ? describeHead(*seen->head) : std::string("missing")) +
                    "); the intent for candidate " + toHex(intent.candidate.id()) +
                    " stays pending as evidence",
                key}};
    case Judgement::predecessor:
      break;
  }
  // The store still shows the predecessor. Only an unknown outcome is worth re-sending now;
  // a refusal is reported and the intent stays pending for the operator and the next run.
  if (sent.outcome == SelectOutcome::uncertain) co_return std::optional<PublishResult>{};
  co_return stillPending(sent.answer, intent);
}

// The intent stays pending after an answer that left the predecessor selected.
Failure<Error> Publisher::stillPending(const StoreOutcome& answer,
                                       const PendingIntent& intent) const {
  const std::string key = keys::currentHead(state_.ns);
  Errc code =
      answer.status == StoreStatus::uncertain ? Errc::uncertain
      : answer.status == StoreStatus::preconditionFailed || answer.status == StoreStatus::conflict
          ? Errc::conflict
          : Errc::store;
  Error e = storeError(answer, key).error;
  e.code = code;
  e.message += "; the head still shows the predecessor, so candidate " +
               toHex(intent.candidate.id()) +
               " stays pending: the next checkpoint re-sends it (same bytes, same precondition)";
  return Failure<Error>{std::move(e)};
}

// Once a PUT's answer was unknown, a failure to settle it leaves the outcome unknown too.
Failure<Error> Publisher::unknownIfSent(Error e, bool unknown, const PendingIntent& intent) {
  if (unknown) {
    e.code = Errc::uncertain;
    e.message = "the conditional PUT's outcome is unknown and could not be settled (" + e.message +
                "); candidate " + toHex(intent.candidate.id()) +
                " stays pending for the next checkpoint";
  }
  return Failure<Error>{std::move(e)};
}

// Step 1: a pending intent from an earlier run.
asio::awaitable<Res<PublishResult>> Publisher::reconcilePending(OperationBudget& budget) {
  const PendingIntent intent = *state_.pending;  // a copy: settling replaces the state
  if (intent.candidate.fields().prefixSequence > journal_.endSequence()) {
    co_return err(Errc::diverged, "the pending candidate covers sequence " +
                                      std::to_string(intent.candidate.fields().prefixSequence) +
                                      ", beyond this journal's end " +
                                      std::to_string(journal_.endSequence()));
  }
  auto seen = co_await observeHead(budget);
  if (!seen) co_return failureOf(seen);
  PublishResult result;
  result.outcome = PublishOutcome::selected;
  switch (judge(*seen, intent)) {
    case Judgement::candidate: {
      auto bound = co_await verifySelected(*seen, budget);
      if (!bound) co_return failureOf(bound);
      co_return co_await confirmSelected(result, seen->etag, intent);
    }
    case Judgement::predecessor: {
      // Not applied yet, or still in flight: re-send exactly the same request, once its graph
      // and prefix are proven still whole (objects may have been damaged, the journal
      // replaced, since the intent was recorded). A failure here sends nothing.
      Observation asCandidate;
      asCandidate.head = intent.candidate;
      auto whole = co_await verifySelected(asCandidate, budget);
      if (!whole) co_return failureOf(whole);
      co_return co_await sendAndReconcile(result, budget);
    }
    case Judgement::other:
      break;
  }
  std::string key = keys::currentHead(state_.ns);
  co_return Failure<Error>{
      Error{Errc::conflict,
            key + ": a pending intent (candidate " + toHex(intent.candidate.id()) +
                ") cannot be settled: the head is " +
                (seen->head ? describeHead(*seen->head) : std::string("missing")) +
                ", neither its predecessor nor the candidate; refused, evidence kept",
            key}};
}

Publisher::Judgement Publisher::judge(const Observation& seen, const PendingIntent& intent) const {
  if (seen.head && seen.head->image() == intent.candidate.image()) return Judgement::candidate;
  if (!state_.expected) return seen.head ? Judgement::other : Judgement::predecessor;
  if (seen.head && seen.head->image() == state_.expected->head.image()) {
    return Judgement::predecessor;
  }
  return Judgement::other;
}

// Step 7: the candidate is the current head; persist it as the expected head.
asio::awaitable<Res<PublishResult>> Publisher::confirmSelected(PublishResult result,
                                                               std::string etag,
                                                               const PendingIntent& sent) {
  CAIRN_ASSERT(state_.pending && state_.pending->candidate.image() == sent.candidate.image());
  PublisherState next = state_;
  next.expected = ExpectedHead{next.pending->candidate, std::move(etag)};
  next.pending.reset();
  fault("before-expected");
  auto saved = co_await saveState(next);
  if (!saved) co_return failureOf(saved);
  // A candidate built in this process needs no second look at its graph next time.
  if (built_ && built_->first == state_.expected->head.id()) {
    verifiedHead_ = built_->first;
    verifiedManifest_ = std::move(built_->second);
  }
  built_.reset();
  result.outcome = PublishOutcome::selected;
  result.head = state_.expected->head;
  co_return result;
}

asio::awaitable<Res<void>> Publisher::saveState(const PublisherState& next) {
  auto bytes = encodePublisherState(next);
  if (!bytes) co_return failureOf(bytes);
  auto written = co_await io::durableReplace(uring_, statePath(dir_), *bytes);
  if (!written) {
    // The file holds the old or the new state; this process no longer knows which, so it
    // stops here and the next run reads the file again.
    co_return err(Errc::io,
                  "cannot write " + statePath(dir_).string() + ": " + written.error().message());
  }
  state_ = next;
  co_return Res<void>{};
}

}  // namespace cairn
