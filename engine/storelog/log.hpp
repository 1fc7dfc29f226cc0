// Catalog logs (docs/design.md §9): a lake log and one table log per table, each a cairn
// namespace without a local journal. Its journal is a header naming the log followed by one
// record per frame (catalog/format/log_record.hpp); every change is a head publication (§6): a
// segment holding the new frames, a chained manifest (docs/formats.md §3.1), the head's immutable
// copy, then the conditional PUT of the head. The manifests come in runs of up to 64 appends: each
// names the run's base (the last manifest of the run before) and lists the run's segments so
// far, so a cold read fetches one manifest per run. Nothing here knows what the records mean:
// the caller folds them.
//
// Reading verifies what it returns: the head's bindings (namespace, the catalog's publisher,
// the log's lineage), the manifest bound to the head, each base the exact object its successor
// names, each segment the exact object its manifest names (SHA-256, header, every frame's CRC
// and sequence), and the rebuilt prefix hash equal to the head's. A reader that already holds a
// verified state (a LogCursor) reads only what was added since: the bases down to the
// manifest it knows (or one of its own run, that lists its segments first), and the new
// segments, hashed on from the SHA-256 state it kept.
//
// Appending answers with what it can prove (docs/design.md §9.1): committed only when the store
// answered the conditional PUT with success or was read back holding the candidate (the head,
// or an ancestor of the head); lost only when the store refused the PUT and the candidate is
// not in the chain read back, or the head moved on without it; unknown when it could not tell.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/sha256.hpp"
#include "engine/format/head.hpp"
#include "engine/format/manifest.hpp"
#include "engine/format/uuid.hpp"
#include "engine/graph/heads.hpp"
#include "engine/runtime/budget.hpp"

namespace cairn {
class ObjectStore;
}

namespace cairn::catalog {

// Which log: its namespace, the publisher binding every catalog process shares (the
// configuration's publisher UUID), and its journal header (whose SHA-256 is the lineage).
struct LogIdentity {
  Uuid ns;
  Uuid publisher;
  Bytes journalHeader;
  Digest lineage{};

  static Res<LogIdentity> make(const Uuid& ns, const Uuid& publisher,
                               std::u16string_view databaseId);
};

// A log's verified state at one head: what a process keeps to read only what is new next time
// and to publish a successor. The records themselves are the caller's fold.
struct LogCursor {
  Head head;
  std::string etag;       // from the response that showed this head: the next CAS's If-Match
  ManifestLink manifest;  // the head's manifest as fetched (a chained one, as it is)
  Sha256Lane prefix;      // SHA-256 state after the prefix's bytes

  std::uint64_t revision() const { return head.fields().revision; }
  std::uint64_t sequence() const { return head.fields().prefixSequence; }
};

// Called for each record in log order (sequence 1, 2, ...); an error stops the read.
using RecordSink = std::function<Res<void>(std::uint64_t sequence, ByteView payload)>;

struct LogRead {
  enum class State : std::uint8_t {
    absent,     // no head: the log does not exist (yet)
    unchanged,  // the head `from` held: no record read
    extended,   // records after `from`'s were read (only they went to the sink)
    rebuilt,    // every record was read from the first (the sink was reset first)
  };
  State state = State::absent;
  std::optional<LogCursor> cursor;  // unless absent
  std::uint64_t requests = 0;       // store requests this read made
};

// Reads the log's current head (one GET) and, when it is not `from`'s, the records after
// `from` (or all of them, after `reset()`, when there is no `from` or the new head does not
// extend it). Errors: the store's (Errc::store, uncertain: nothing can be said), a malformed
// head or a damaged graph (format, corrupt, missing: the log is broken, evidence kept), a head
// of another namespace, publisher or lineage (binding), the budget's.
boost::asio::awaitable<Res<LogRead>> readLog(ObjectStore& store, const LogIdentity& id,
                                             const std::optional<LogCursor>& from,
                                             const RecordSink& sink,
                                             const std::function<void()>& reset,
                                             OperationBudget& budget);

// What one append writes before the head: the records (1..), and other immutable objects the
// records name (a table's metadata file), written create-if-absent (an existing one must hold
// exactly these bytes).
struct LogAppend {
  std::vector<Bytes> records;
  std::vector<std::pair<std::string, Bytes>> objects;
};

struct AppendOptions {
  // A manifest lists at most this many segments: the appends of a run share one base, so a
  // cold read walks one manifest per run (docs/decisions/0048-catalog-log-manifests-come-runs.md).
  // 1 chains every append to the one before.
  std::size_t runSegments = 64;
  // Re-sends of the same PUT (same bytes, same precondition) after an unanswered one, while the
  // head still shows the predecessor.
  int maxResends = 2;
  // How far back from the head read after a refused or unanswered PUT the candidate is looked
  // for among the head copies. Beyond it the outcome is unknown.
  std::uint64_t maxChainCheck = 64;
};

struct Appended {
  enum class Outcome : std::uint8_t {
    committed,  // the candidate is the head, or an ancestor of it
    lost,       // proven not part of the history: another head was selected instead
    unknown,    // could not be told (the head could not be read back, or its history is gone)
  };
  Outcome outcome = Outcome::unknown;
  // committed: the state at the candidate. Its ETag is empty when the candidate was found
  // below a later head: read the log again before the next append.
  std::optional<LogCursor> cursor;
  Head candidate;      // what was proposed
  std::string detail;  // lost, unknown: what was seen
};

// Builds the successor of `at` (none: the log's first head, revision 1) holding `what`,
// writes its immutable objects, and selects it with one conditional PUT (If-Match at's ETag,
// or If-None-Match: * for the first). Errors before the PUT (an immutable object could not be
// written, the budget) mean nothing was selected; after it, every answer is an Appended.
boost::asio::awaitable<Res<Appended>> appendLog(ObjectStore& store, const LogIdentity& id,
                                                const std::optional<LogCursor>& at,
                                                const LogAppend& what, OperationBudget& budget,
                                                const AppendOptions& options = {});

}  // namespace cairn::catalog
