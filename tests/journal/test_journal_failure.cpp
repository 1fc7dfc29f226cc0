// A failed durable write (docs/journal.md, "When a durable write fails";
// docs/decisions/0055-failed-durable-write-cut-back.md): whatever of the batch reached the file is
// cut back off it, durably, and the batch's appenders are told it failed (Errc::io); where the cut
// fails too, they are told their records are unknown (Errc::uncertain, with the range), never that
// they failed. A reopen never holds a frame its appender was told had failed.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <cerrno>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "engine/format/journal_format.hpp"
#include "engine/journal/journal.hpp"
#include "io/uring.hpp"
#include "tests/io/io_test_support.hpp"

using namespace cairn;
namespace asio = boost::asio;
namespace fs = std::filesystem;
using io::test::runToCompletion;
using Kind = io::Uring::Operation::Kind;

namespace {

constexpr int kBefore = 5;           // records acknowledged before the fault
constexpr int kAcked = kBefore + 1;  // and the first appender's, in a batch of its own
constexpr int kBatch = 4;            // frames per batch (maxBatchBytes is four frames)
constexpr int kAppenders = 12;       // three batches' worth: the first fails, the others wait
constexpr std::size_t kPayloadBytes = 300;

// How the failing batch's durable write goes wrong.
enum class Fault {
  shortWrite,     // its first frames and half the next are written, then ENOSPC
  quotaShort,     // the same with EDQUOT
  syncFailed,     // all its frames are written, then the O_DSYNC write answers EIO
  fallbackSync,   // O_DSYNC refused (EOPNOTSUPP): the plain write runs, its fdatasync fails
  nothingWritten  // EIO, no byte written
};

struct Failing {
  io::test::TempDir dir;
  asio::io_context context{1};
  io::Uring uring{context, 64};
  std::unique_ptr<Journal> journal;
  int faults = 0;                 // operations the fault answered
  int durableWrites = 0;          // O_DSYNC writes seen
  std::uint64_t wroteFrames = 0;  // whole frames the fault wrote into the file

  fs::path db() const { return dir.path() / "db"; }
  fs::path file() const { return db() / Journal::kFileName; }
  static std::string payload() { return std::string(kPayloadBytes, 'p'); }
  static std::uint64_t frameBytes() { return frameLength(kPayloadBytes); }
  static JournalOptions options(bool room) {
    JournalOptions o;
    o.preallocate = room;
    o.maxBatchBytes = kBatch * frameBytes();
    return o;
  }

  explicit Failing(bool room) {
    journal =
        std::move(*runToCompletion(context, Journal::create(uring, db(), u"db", options(room))));
    for (int i = 0; i < kBefore; ++i) {
      REQUIRE(runToCompletion(context, journal->append(asBytes(payload()))).ok());
    }
  }

  // Writes the first `frames` frames of the batch the journal is writing at `offset` (all
  // payloads are alike, so its bytes are known), and `extra` bytes of the next one.
  void writeFrames(int fd, std::uint64_t offset, std::uint64_t frames, std::uint64_t extra) {
    Bytes bytes;
    for (std::uint64_t i = 0; i <= frames; ++i) {
      appendFrame(bytes, journal->endSequence() + 1 + i, asBytes(payload()));
    }
    bytes.resize(frames * frameBytes() + extra);
    if (::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset)) ==
        static_cast<ssize_t>(bytes.size())) {
      wroteFrames = frames;
    }
  }

  // What `fault` answers for one operation; `done` once the durable write has failed.
  int answer(const io::Uring::Operation& op, Fault fault, bool& done) {
    // The first batch (the first appender alone: the writer starts at once) is written; the
    // others queue meanwhile, and the second batch (four frames) is the one that fails.
    if (op.kind == Kind::writeDsync && ++durableWrites == 1) return 0;
    if (op.kind == Kind::fdatasync && fault == Fault::fallbackSync) {
      done = true;
      return EIO;
    }
    if (op.kind != Kind::writeDsync) return 0;
    if (fault == Fault::fallbackSync) return EOPNOTSUPP;  // refused before writing
    done = true;
    if (fault == Fault::shortWrite || fault == Fault::quotaShort) {
      writeFrames(op.fd, op.offset, 2, frameBytes() / 2);
      return fault == Fault::shortWrite ? ENOSPC : EDQUOT;
    }
    if (fault == Fault::syncFailed) writeFrames(op.fd, op.offset, kBatch, 0);
    return EIO;
  }

  // The first durable write from now on fails as `fault` says; `cutFails`: so does the sync
  // of the cut that follows it. `cutLeavesFrames`: the cut leaves the file as it was (as a
  // truncate that failed would, or a page cache that kept the failed write's pages): the
  // batch's frames are written back before the cut's sync fails.
  void install(Fault fault, bool cutFails, bool cutLeavesFrames = false) {
    uring.setFaultForTests([this, fault, cutFails, cutLeavesFrames,
                            done = false](const io::Uring::Operation& op) mutable {
      const bool cut = done && op.kind == Kind::fsync;
      if (cut && cutLeavesFrames) writeFrames(op.fd, journal->endOffset(), kBatch, 0);
      const int e = done ? (cut && cutFails ? EIO : 0) : answer(op, fault, done);
      if (e != 0) ++faults;
      return e;
    });
  }

  // kAppenders appenders at once; each one's result, in start order (= sequence order).
  std::vector<Res<std::uint64_t>> appendConcurrently() {
    std::vector<std::optional<Res<std::uint64_t>>> results(kAppenders);
    const std::string p = payload();
    for (int i = 0; i < kAppenders; ++i) {
      asio::co_spawn(
          context,
          [&, i]() -> asio::awaitable<void> {
            results[i].emplace(co_await journal->append(asBytes(p)));
          },
          asio::detached);
    }
    context.restart();
    context.run();
    std::vector<Res<std::uint64_t>> out;
    for (auto& r : results) {
      REQUIRE(r.has_value());
      out.push_back(std::move(*r));
    }
    return out;
  }

  Res<std::unique_ptr<Journal>> reopen(bool room) {
    journal.reset();
    uring.setFaultForTests({});
    return runToCompletion(context, Journal::open(uring, db(), options(room)));
  }
};

}  // namespace

TEST_CASE("journal failure: a failed durable write is cut back off the file, then it failed",
          "[journal]") {
  const bool room = GENERATE(false, true);
  const Fault fault = GENERATE(Fault::shortWrite, Fault::quotaShort, Fault::syncFailed,
                               Fault::fallbackSync, Fault::nothingWritten);
  CAPTURE(room, static_cast<int>(fault));
  Failing f(room);
  f.install(fault, /*cutFails=*/false);
  auto results = f.appendConcurrently();
  CHECK(f.faults >= 1);
  if (fault == Fault::shortWrite || fault == Fault::quotaShort) CHECK(f.wroteFrames == 2);
  if (fault == Fault::syncFailed) CHECK(f.wroteFrames == kBatch);
  // The first appender acknowledged; every other one told its record failed, none unknown.
  REQUIRE(results[0].ok());
  CHECK(*results[0] == kAcked);
  for (std::size_t i = 1; i < results.size(); ++i) {
    CAPTURE(i);
    REQUIRE_FALSE(results[i].ok());
    CHECK(results[i].error().code == Errc::io);
  }
  CHECK_THAT(results[1].error().message,
             Catch::Contains("records 7..10") && Catch::Contains("none of it is durable"));
  CHECK(f.journal->endSequence() == kAcked);
  // The file ends at the acknowledged end: the batch's bytes (and the room) are gone.
  CHECK(fs::file_size(f.file()) == f.journal->endOffset());
  auto later = runToCompletion(f.context, f.journal->append(asBytes(Failing::payload())));
  REQUIRE_FALSE(later.ok());
  CHECK(later.error().code == Errc::io);
  const std::optional<JournalFailure> failure = f.journal->failure();
  // Reopened: exactly the acknowledged records, nothing torn, the next sequence after them.
  auto reopened = f.reopen(room);
  REQUIRE(reopened.ok());
  CHECK((*reopened)->endSequence() == kAcked);
  CHECK_FALSE((*reopened)->tornTail());
  auto next = runToCompletion(f.context, (*reopened)->append(asBytes(Failing::payload())));
  REQUIRE(next.ok());
  CHECK(*next == kAcked + 1);
  REQUIRE(failure.has_value());
  CHECK(failure->error.code == Errc::io);
  CHECK(failure->durableThrough == kAcked);
  CHECK(failure->batch == SequenceRange{kAcked + 1, kAcked + kBatch});
  CHECK_FALSE(failure->unknown.has_value());
}

TEST_CASE("journal failure: a batch that cannot be cut back is unknown, with its range",
          "[journal]") {
  // The short write leaves two frames of the batch in the file, and the sync of the cut that
  // would remove them fails: whether they are durable is unknown, and said so, with the range;
  // the appenders of the batches after it were never written, and are told they failed.
  const bool room = GENERATE(false, true);
  const Fault fault = GENERATE(Fault::shortWrite, Fault::syncFailed);
  CAPTURE(room, static_cast<int>(fault));
  Failing f(room);
  f.install(fault, /*cutFails=*/true);
  auto results = f.appendConcurrently();
  for (std::size_t i = 0; i < results.size(); ++i) {
    CAPTURE(i);
    if (i == 0) {
      CHECK(results[i].ok());
      continue;
    }
    REQUIRE_FALSE(results[i].ok());
    if (i <= static_cast<std::size_t>(kBatch)) {
      CHECK(results[i].error().code == Errc::uncertain);
      CHECK_THAT(results[i].error().message,
                 Catch::Contains("records 7..10 may be durable or not") &&
                     Catch::Contains("records through sequence 6 are durable"));
    } else {
      CHECK(results[i].error().code == Errc::io);
      CHECK_THAT(results[i].error().message, Catch::Contains("this record was not written"));
    }
  }
  REQUIRE(f.journal->failure().has_value());
  const JournalFailure& failure = *f.journal->failure();
  CHECK(failure.error.code == Errc::uncertain);
  CHECK(failure.durableThrough == kAcked);
  CHECK(failure.unknown == SequenceRange{kAcked + 1, kAcked + kBatch});
  CHECK_THAT(failure.error.message, Catch::Contains("marked in"));
  // The range was marked, and the reopen cut it off: the acknowledged records only
  // (docs/decisions/0060-unknown-range-marked-beside-journal.md).
  auto reopened = f.reopen(room);
  REQUIRE(reopened.ok());
  CHECK((*reopened)->endSequence() == kAcked);
  REQUIRE((*reopened)->unknownRange().has_value());
  CHECK((*reopened)->unknownRange()->cut);
  CHECK((*reopened)->unknownRange()->records == SequenceRange{kAcked + 1, kAcked + kBatch});
}

TEST_CASE("journal failure: a batch whose room failed was not written, and failed", "[journal]") {
  // The room's fdatasync fails: the batch waiting for it was never written (no durable write
  // was sent), so its records failed; nothing is cut, and a reopen holds the acknowledged ones.
  Failing f(/*room=*/true);
  int durableWrites = 0;
  f.uring.setFaultForTests([&](const io::Uring::Operation& op) {
    if (op.kind == Kind::writeDsync) ++durableWrites;
    return op.kind == Kind::fdatasync ? EIO : 0;
  });
  // One record of 3 MiB at a time until one needs the next room.
  std::optional<Error> error;
  for (int i = 0; i < 8 && !error; ++i) {
    auto r = runToCompletion(f.context, f.journal->append(asBytes(std::string(3 << 20, 'r'))));
    if (!r.ok()) error = r.error();
  }
  REQUIRE(error);
  CHECK(error->code == Errc::io);
  CHECK_THAT(error->message, Catch::Contains("room") && Catch::Contains("not written"));
  REQUIRE(f.journal->failure().has_value());
  CHECK(f.journal->failure()->error.code == Errc::io);
  CHECK_FALSE(f.journal->failure()->unknown.has_value());
  const std::uint64_t durable = f.journal->endSequence();
  CHECK(f.journal->failure()->durableThrough == durable);
  CHECK(durableWrites == static_cast<int>(durable) - kBefore);  // the failed one was not sent
  auto reopened = f.reopen(true);
  REQUIRE(reopened.ok());
  CHECK((*reopened)->endSequence() == durable);
}

namespace {

// The files beside the journal that mark an unknown range (journal.unknown-...).
std::vector<std::string> unknownMarkersIn(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("journal.unknown", 0) == 0) out.push_back(name);
  }
  return out;
}

}  // namespace

TEST_CASE(
    "journal failure: an unknown range is cut back durably before a reopen reads or "
    "appends after it",
    "[journal]") {
  // The batch's write fails, and so does the cut that would remove it, which leaves its four
  // whole frames in the file: what a reopen in the same boot reads when the kernel kept the
  // failed write's pages. They were reported unknown, never acknowledged: no reopen presents
  // them as records, and the first writable one cuts them off durably (truncate, fsync) before
  // anything is appended after them, so "unknown" resolves to "not persisted".
  const bool room = GENERATE(false, true);
  CAPTURE(room);
  Failing f(room);
  f.install(Fault::syncFailed, /*cutFails=*/true, /*cutLeavesFrames=*/true);
  auto results = f.appendConcurrently();
  REQUIRE(results[0].ok());
  REQUIRE_FALSE(results[1].ok());
  CHECK(results[1].error().code == Errc::uncertain);
  CHECK_THAT(results[1].error().message,
             Catch::Contains("marked in") && Catch::Contains("the next writable open cuts them"));
  REQUIRE(f.journal->failure().has_value());
  CHECK(f.journal->failure()->unknown == SequenceRange{kAcked + 1, kAcked + kBatch});
  const std::uint64_t ackedEnd = f.journal->endOffset();
  CHECK(fs::file_size(f.file()) >= ackedEnd + kBatch * Failing::frameBytes());
  // The range is marked beside the journal.
  CHECK(unknownMarkersIn(f.db()).size() == 1);
  f.journal.reset();
  f.uring.setFaultForTests({});

  // A reader in the same boot: the acknowledged records only, the file left as it is.
  JournalOptions readOnly = Failing::options(room);
  readOnly.readOnly = true;
  {
    auto reader = runToCompletion(f.context, Journal::open(f.uring, f.db(), readOnly));
    REQUIRE(reader.ok());
    CHECK((*reader)->endSequence() == kAcked);
    CHECK((*reader)->endOffset() == ackedEnd);
  }
  CHECK(fs::file_size(f.file()) >= ackedEnd + kBatch * Failing::frameBytes());

  // A writer whose cut fails again opens nothing: the range stays marked.
  f.uring.setFaultForTests(
      [](const io::Uring::Operation& op) { return op.kind == Kind::fsync ? EIO : 0; });
  {
    auto refused =
        runToCompletion(f.context, Journal::open(f.uring, f.db(), Failing::options(room)));
    CHECK_FALSE(refused.ok());
  }
  CHECK(unknownMarkersIn(f.db()).size() == 1);

  // A writer: the cut first, made durable (an fsync before any write), then the next sequence
  // is the one after the acknowledged records.
  std::vector<Kind> kinds;
  f.uring.setFaultForTests([&](const io::Uring::Operation& op) {
    kinds.push_back(op.kind);
    return 0;
  });
  auto writer = runToCompletion(f.context, Journal::open(f.uring, f.db(), Failing::options(room)));
  REQUIRE(writer.ok());
  CHECK((*writer)->endSequence() == kAcked);
  CHECK_FALSE((*writer)->tornTail());
  CHECK(fs::file_size(f.file()) == ackedEnd);
  CHECK(std::find(kinds.begin(), kinds.end(), Kind::fsync) != kinds.end());
  CHECK(unknownMarkersIn(f.db()).empty());
  auto next = runToCompletion(f.context, (*writer)->append(asBytes(Failing::payload())));
  REQUIRE(next.ok());
  CHECK(*next == kAcked + 1);
}
