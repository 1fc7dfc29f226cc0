// Conditional publication (docs/design.md §6, docs/protocol.md): selects a new checkpoint with one
// conditional PUT on the namespace's head, after recording the intent durably, and
// acknowledges it only once the store is known to hold it. An unknown outcome stays a
// pending intent, reconciled by reading the head, never guessed.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "engine/format/publisher_state.hpp"
#include "engine/graph/checkpoint.hpp"
#include "engine/graph/heads.hpp"
#include "engine/runtime/async.hpp"
#include "engine/runtime/budget.hpp"

namespace cairn {

namespace io {
class Uring;
}
class Journal;
class ObjectStore;

// Test-only fault points (docs/protocol.md): the publisher calls the hook with each name as
// it passes the point; a test hook may kill the process there. Names:
//   before-upload, after-upload      around each immutable object's create-if-absent
//   before-intent, after-intent      around the durable record of the pending intent
//   before-put                       just before the conditional PUT is sent
//   after-put                        the PUT returned, before its answer is acted on
//   before-expected                  before the new expected head is persisted
using FaultHook = std::function<void(std::string_view point)>;

struct PublishOptions {
  CheckpointOptions checkpoint;
  // Operation budget of one checkpoint (both graphs it verifies and everything it installs).
  BudgetTotals budget = kDefaultOperationBudget;
  // An uncertain conditional PUT whose re-read still shows the predecessor is re-sent (same
  // bytes, same precondition) at most this many times, after a growing pause.
  int uncertainRetries = 3;
  std::chrono::milliseconds retryPause{200};
  FaultHook fault;
};

enum class PublishOutcome : std::uint8_t {
  selected,   // the candidate is the current head, confirmed by the store, state persisted
  unchanged,  // nothing new since the current head (which is the expected one)
};
std::string_view publishOutcomeName(PublishOutcome o);

struct PublishResult {
  PublishOutcome outcome = PublishOutcome::unchanged;
  Head head;                      // the current head after the call
  bool reconciledIntent = false;  // a pending intent from earlier was settled first
  std::uint64_t objectsWritten = 0;
  std::uint64_t objectsReused = 0;
  std::uint64_t bytesUploaded = 0;
  std::uint64_t objectsRewritten = 0;  // existing but too old to rely on (docs/operations.md)
  std::uint64_t segments = 0;          // segments in the selected head's manifest
};

// Creates the state file for a new publisher (fails if one exists): the namespace starts
// uninitialized, so the first checkpoint is a genesis (If-None-Match: *).
boost::asio::awaitable<Res<void>> initializePublisher(io::Uring& uring,
                                                      const std::filesystem::path& dir,
                                                      const PublisherState& state);
// Reads and decodes the state file: std::nullopt when there is none (a journal-only
// database); a damaged file is an error, never a reset.
boost::asio::awaitable<Res<std::optional<PublisherState>>> loadPublisherState(
    io::Uring& uring, const std::filesystem::path& dir);

class Publisher {
 public:
  // The journal must be open (it holds the directory lock) and bound to the state's lineage;
  // the store must be the one the state names.
  Publisher(io::Uring& uring, Journal& journal, ObjectStore& store, std::filesystem::path dir,
            PublisherState state, EngineLimits& limits, PublishOptions options = {});
  ~Publisher();

  // The seven steps of docs/design.md §6.2: reconcile a pending intent; observe the head; verify it
  // is the expected one and its graph against the journal; build and install the candidate
  // for the journal's end; record the intent; conditional PUT; reconcile and persist.
  boost::asio::awaitable<Res<PublishResult>> checkpoint();
  // The same steps for compaction: a new generation with the current head's cutoff (identical
  // prefix sequence, length and hash) and every segment planned again at the segment target,
  // so fewer, larger segments; the old ones become reclaimable. A pending intent is settled
  // first; the journal may have grown (the records after the cutoff wait for a checkpoint).
  boost::asio::awaitable<Res<PublishResult>> compact();

  const PublisherState& state() const { return state_; }

 private:
  struct Observation;
  enum class Judgement : std::uint8_t { candidate, predecessor, other };

  boost::asio::awaitable<Res<Observation>> observeHead(OperationBudget& budget);
  Res<void> requireExpected(const Observation& seen) const;
  boost::asio::awaitable<Res<std::optional<Manifest>>> verifySelected(const Observation& seen,
                                                                      OperationBudget& budget);
  boost::asio::awaitable<Res<void>> verifyAgainstJournal(const Head& head);
  boost::asio::awaitable<Res<PendingIntent>> buildCandidate(const std::optional<Manifest>& previous,
                                                            const std::string& observedEtag,
                                                            OperationBudget& budget,
                                                            PublishResult& result, bool compact);
  boost::asio::awaitable<Res<void>> recordIntent(const PendingIntent& intent);
  boost::asio::awaitable<Res<PublishResult>> sendAndReconcile(PublishResult result,
                                                              OperationBudget& budget);
  boost::asio::awaitable<Res<Selection>> sendIntent(const PendingIntent& intent,
                                                    OperationBudget& budget);
  boost::asio::awaitable<Res<std::optional<PublishResult>>> settleAnswer(
      const Selection& sent, const PendingIntent& intent, const PublishResult& result,
      OperationBudget& budget, bool unknown);
  Failure<Error> stillPending(const StoreOutcome& answer, const PendingIntent& intent) const;
  static Failure<Error> unknownIfSent(Error e, bool unknown, const PendingIntent& intent);
  boost::asio::awaitable<Res<PublishResult>> reconcilePending(OperationBudget& budget);
  Judgement judge(const Observation& seen, const PendingIntent& intent) const;
  boost::asio::awaitable<Res<PublishResult>> confirmSelected(PublishResult result, std::string etag,
                                                             const PendingIntent& sent);
  boost::asio::awaitable<Res<PublishResult>> checkpointAlone(bool compact);
  boost::asio::awaitable<Res<void>> saveState(const PublisherState& next);
  void fault(std::string_view point) const;

  io::Uring& uring_;
  Journal& journal_;
  ObjectStore& store_;
  std::filesystem::path dir_;
  PublisherState state_;
  EngineLimits& limits_;
  PublishOptions options_;
  // The head whose graph this process verified (or built) and its manifest: a later
  // checkpoint that finds it still selected need not fetch the graph again.
  std::optional<Digest> verifiedHead_;
  std::optional<Manifest> verifiedManifest_;
  // The candidate built by this process and its manifest, until it is settled.
  std::optional<std::pair<Digest, Manifest>> built_;
  bool conditionsChecked_ = false;
  AsyncMutex checkpointing_;
};

}  // namespace cairn
