#include "engine/ops/ingest.hpp"

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "engine/database.hpp"
#include "engine/runtime/task_group.hpp"

namespace cairn {

namespace asio = boost::asio;

namespace {

using Clock = std::chrono::steady_clock;

// Worth another try at the next checkpoint: an unknown outcome (a pending intent records the
// attempt, the next checkpoint reconciles it). Everything else, store failures included (a
// 403 or a missing bucket is not transient), stops the job; what was acknowledged stays
// durable.
bool transient(const Error& e) { return e.code == Errc::uncertain; }

// One run of the job: what its tasks share (all on the loop thread).
class IngestRun {
 public:
  IngestRun(Database& db, const IngestOptions& options, const IngestHooks& hooks,
            asio::any_io_executor executor)
      : db_(db),
        options_(options),
        hooks_(hooks),
        appends_(executor, std::max<std::size_t>(1, options.maxAppendsInFlight)),
        checkpoints_(executor, 1),
        ticker_(executor, 1),
        tick_(executor) {
    report.lastSequence = db.journal().endSequence();
  }

  IngestReport report;

  // 1. The source into appends, checkpoints in the background, the ticker beside them;
  // 2. every task ended; 3. the final checkpoint.
  asio::awaitable<std::optional<Error>> run(const RecordSource& source) {
    ticker_.start([this]() { return tickUntilDone(); });
    Res<void> input = co_await feed(source);
    Res<void> appended = co_await appends_.wait();
    inputDone_ = true;
    tick_.cancel();
    (void)co_await ticker_.wait();
    Res<void> published = co_await checkpoints_.wait();
    const std::optional<JournalFailure>& journal = db_.journal().failure();
    if (journal) report.unknown = journal->unknown;
    if (journal && journal->unknown) co_return journal->error;  // never called a failure
    if (!input) co_return input.error();
    if (journal) co_return journal->error;  // the failed batch's, not a later append's refusal
    if (!appended) co_return appended.error();
    if (!published) co_return published.error();
    if (!db_.publisher()) co_return std::nullopt;
    auto last = co_await db_.checkpoint();
    if (!last) co_return last.error();  // an unknown outcome too: the source is done
    if (last->outcome == PublishOutcome::selected) ++report.checkpoints;
    report.lastPublished = *last;
    co_return std::nullopt;
  }

 private:
  // Reads the source until it ends or any group fails.
  asio::awaitable<Res<void>> feed(const RecordSource& source) {
    while (!checkpoints_.failed()) {
      auto record = co_await source();
      if (!record) co_return failureOf(record);
      if (!*record) co_return Res<void>{};
      if (!co_await appends_.room()) co_return Res<void>{};  // an append failed: its error wins
      ++report.records;
      report.bytes += (*record)->size();
      appends_.start([this, payload = std::move(**record)]() -> asio::awaitable<Res<void>> {
        auto r = co_await db_.append(payload);
        if (!r) co_return failureOf(r);
        report.lastSequence = std::max(report.lastSequence, *r);
        report.bytesDurable += payload.size();
        co_return Res<void>{};
      });
      startCheckpointIfDue();
    }
    co_return Res<void>{};
  }

  // A background checkpoint when one is due (after checkpointBytes of acknowledged records,
  // or checkpointInterval), only when the journal holds a record, one at a time.
  void startCheckpointIfDue() {
    if (!db_.publisher() || checkpoints_.running() > 0 || checkpoints_.failed()) return;
    if (db_.journal().endSequence() == 0) return;
    const bool bytesDue =
        report.bytesDurable - durableAtLastCheckpoint_ >= options_.checkpointBytes;
    const bool timeDue = Clock::now() - lastCheckpointAt_ >= options_.checkpointInterval;
    if (!bytesDue && !timeDue) return;
    lastCheckpointAt_ = Clock::now();
    durableAtLastCheckpoint_ = report.bytesDurable;
    checkpoints_.start([this]() { return checkpointOnce(); });
  }

  asio::awaitable<Res<void>> checkpointOnce() {
    auto r = co_await db_.checkpoint();
    if (r) {
      if (r->outcome == PublishOutcome::selected) ++report.checkpoints;
      report.lastPublished = *r;
      co_return Res<void>{};
    }
    if (!transient(r.error())) co_return failureOf(r);
    if (hooks_.retrying) hooks_.retrying(r.error());
    co_return Res<void>{};
  }

  // The time trigger and the progress hook, until the source is done.
  asio::awaitable<Res<void>> tickUntilDone() {
    while (!inputDone_) {
      tick_.expires_after(options_.tick);
      boost::system::error_code ec;
      co_await tick_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (inputDone_) break;
      startCheckpointIfDue();
      if (hooks_.progress) hooks_.progress(report);
    }
    co_return Res<void>{};
  }

  Database& db_;
  const IngestOptions& options_;
  const IngestHooks& hooks_;
  TaskGroup appends_;
  TaskGroup checkpoints_;
  TaskGroup ticker_;
  asio::steady_timer tick_;
  bool inputDone_ = false;
  std::uint64_t durableAtLastCheckpoint_ = 0;
  Clock::time_point lastCheckpointAt_ = Clock::now();
};

}  // namespace

asio::awaitable<IngestOutcome> ingest(Database& db, const RecordSource& source,
                                      const IngestOptions& options, const IngestHooks& hooks) {
  IngestOutcome out;
  if (options.checkpointBytes == 0 || options.checkpointInterval.count() <= 0) {
    out.failure = Error{Errc::usage, "the checkpoint size and interval must be > 0"};
    co_return out;
  }
  IngestRun run(db, options, hooks, co_await asio::this_coro::executor);
  out.failure = co_await run.run(source);
  out.report = run.report;
  co_return out;
}

}  // namespace cairn
