// What Database::append and the ingest job tell a caller when the journal's durable write fails
// (docs/embedding.md; docs/decisions/0055-failed-durable-write-cut-back.md): the records failed
// (Errc::io) when the write was cut back off the file, unknown (Errc::uncertain, with their range)
// when it could not be.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <cerrno>
#include <filesystem>
#include <optional>
#include <string>

#include "engine/database.hpp"
#include "engine/format/journal_format.hpp"
#include "engine/ops/ingest.hpp"
#include "io/uring.hpp"
#include "tests/io/io_test_support.hpp"

using namespace cairn;
namespace asio = boost::asio;
using io::test::runToCompletion;
using Kind = io::Uring::Operation::Kind;

namespace {

constexpr int kBefore = 3;    // records acknowledged before the fault
constexpr int kRecords = 40;  // the ingest's source
const std::string kPayload(100, 'i');

struct Db {
  io::test::TempDir dir;
  asio::io_context context{1};
  io::Uring uring{context, 64};
  std::unique_ptr<Database> db;

  Db() {
    DatabaseOptions options;
    options.journal.preallocate = false;
    // Journal-only (no store): appends alone.
    db = std::move(*runToCompletion(
        context, Database::create(uring, dir.path() / "db", u"db", std::nullopt, options)));
    for (int i = 0; i < kBefore; ++i) {
      REQUIRE(runToCompletion(context, db->append(asBytes(kPayload))).ok());
    }
  }

  // The next durable write writes its batch's first frame, then answers ENOSPC (a disk that
  // filled up inside it); `cutFails`: the sync of the cut back answers EIO.
  void fillTheDisk(bool cutFails) {
    uring.setFaultForTests([this, cutFails, done = false](const io::Uring::Operation& op) mutable {
      if (done) return op.kind == Kind::fsync && cutFails ? EIO : 0;
      if (op.kind != Kind::writeDsync) return 0;
      done = true;
      Bytes frame;
      appendFrame(frame, db->journal().endSequence() + 1, asBytes(kPayload));
      if (::pwrite(op.fd, frame.data(), frame.size(), static_cast<off_t>(op.offset)) !=
          static_cast<ssize_t>(frame.size())) {
        return EIO;
      }
      return ENOSPC;
    });
  }

  IngestOutcome ingestRecords() {
    int left = kRecords;
    RecordSource source = [&]() -> asio::awaitable<Res<std::optional<Bytes>>> {
      if (left-- == 0) co_return std::optional<Bytes>{};
      co_return std::optional<Bytes>{Bytes(kPayload.begin(), kPayload.end())};
    };
    return runToCompletion(context, ingest(*db, source, IngestOptions{}));
  }

  std::uint64_t reopenedEnd() {
    db.reset();
    uring.setFaultForTests({});
    auto again = runToCompletion(context, Database::open(uring, dir.path() / "db"));
    REQUIRE(again.ok());
    return (*again)->journal().endSequence();
  }
};

}  // namespace

TEST_CASE("database append: a durable write cut back failed, one not cut back is unknown",
          "[engine]") {
  const bool cutFails = GENERATE(false, true);
  CAPTURE(cutFails);
  Db d;
  d.fillTheDisk(cutFails);
  auto r = runToCompletion(d.context, d.db->append(asBytes(kPayload)));
  REQUIRE_FALSE(r.ok());
  REQUIRE(d.db->appendFailure().has_value());
  const JournalFailure& failure = *d.db->appendFailure();
  CHECK(failure.durableThrough == kBefore);
  CHECK(failure.batch == SequenceRange{kBefore + 1, kBefore + 1});
  if (cutFails) {
    CHECK(r.error().code == Errc::uncertain);
    CHECK(failure.unknown == SequenceRange{kBefore + 1, kBefore + 1});
  } else {
    CHECK(r.error().code == Errc::io);
    CHECK_FALSE(failure.unknown.has_value());
  }
  const std::uint64_t end = d.reopenedEnd();
  if (cutFails) {
    CHECK((end == kBefore || end == kBefore + 1));  // unknown: either is true
  } else {
    CHECK(end == kBefore);  // failed: the frame written before ENOSPC is not there
  }
}

TEST_CASE("ingest: a failed durable write's records are reported failed or unknown", "[engine]") {
  const bool cutFails = GENERATE(false, true);
  CAPTURE(cutFails);
  Db d;
  d.fillTheDisk(cutFails);
  IngestOutcome out = d.ingestRecords();
  REQUIRE(out.failure.has_value());
  CHECK(out.report.lastSequence == kBefore);  // nothing acknowledged after the fault
  REQUIRE(d.db->appendFailure().has_value());
  const SequenceRange batch = d.db->appendFailure()->batch;
  CHECK(batch.first == kBefore + 1);
  if (cutFails) {
    CHECK(out.failure->code == Errc::uncertain);
    CHECK(out.report.unknown == batch);
    CHECK_THAT(out.failure->message, Catch::Contains("may be durable or not"));
  } else {
    CHECK(out.failure->code == Errc::io);
    CHECK_FALSE(out.report.unknown.has_value());
    CHECK_THAT(out.failure->message, Catch::Contains("none of it is durable"));
  }
  const std::uint64_t end = d.reopenedEnd();
  if (cutFails) {
    CHECK(end >= kBefore);
    CHECK(end <= batch.last);
  } else {
    CHECK(end == kBefore);
  }
}
