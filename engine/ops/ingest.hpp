// The ingest job (docs/embedding.md, docs/operations.md): records from a source appended
// durably, many at once (the journal's group commit shares each fdatasync among them), and
// checkpoints published in the background as the data grows and time passes, one at a time,
// then a final one that covers everything acknowledged. `cairn ingest` is this job on
// standard input.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

#include "base/bytes.hpp"
#include "engine/error.hpp"
#include "engine/journal/journal.hpp"
#include "engine/publish/publisher.hpp"

namespace cairn {

class Database;

struct IngestOptions {
  // A checkpoint after this many payload bytes were acknowledged since the last one, or after
  // this interval; only once the journal holds a record (one never runs ahead of what is
  // durable). Both > 0.
  std::uint64_t checkpointBytes = std::uint64_t{64} << 20;
  std::chrono::milliseconds checkpointInterval{30'000};
  // Appends in flight at once.
  std::size_t maxAppendsInFlight = 4096;
  // How often the time trigger and `progress` run.
  std::chrono::milliseconds tick{500};
};

struct IngestReport {
  std::uint64_t records = 0;       // read from the source and handed to an append
  std::uint64_t bytes = 0;         // their payload bytes
  std::uint64_t bytesDurable = 0;  // payload bytes of acknowledged appends
  std::uint64_t lastSequence = 0;  // the last acknowledged sequence (durable up to it)
  // Records that may be durable or not: the journal's durable write of their batch failed and
  // could not be cut back (JournalFailure::unknown; the failure is then Errc::uncertain).
  std::optional<SequenceRange> unknown;
  std::uint64_t checkpoints = 0;  // selected
  std::optional<PublishResult> lastPublished;
};

// The next record, or std::nullopt at the source's end; an error stops the job.
using RecordSource = std::function<boost::asio::awaitable<Res<std::optional<Bytes>>>()>;

struct IngestHooks {
  std::function<void(const IngestReport&)> progress;  // every tick while the source lasts
  // A background checkpoint whose outcome is unknown: its pending intent is retried by the
  // next checkpoint, and the job goes on.
  std::function<void(const Error&)> retrying;
};

struct IngestOutcome {
  IngestReport report;  // as far as it got: durable up to report.lastSequence
  // What stopped it (the source, an append, a checkpoint). A failed durable write of the
  // journal is the journal's own error (JournalFailure::error): Errc::uncertain when records
  // of it may be durable (report.unknown), which comes before any other failure.
  std::optional<Error> failure;
};

// Runs the job on `db` until the source ends or something fails. A database without a
// publisher only appends. Every task of the job ends before it returns.
boost::asio::awaitable<IngestOutcome> ingest(Database& db, const RecordSource& source,
                                             const IngestOptions& options,
                                             const IngestHooks& hooks = {});

}  // namespace cairn
