// Recovery (engine/ops/recovery.hpp, docs/operations.md): a journal directory rebuilt from a
// verified checkpoint in the store: the current head or an exact head id, as a read copy or
// writable (continuing the namespace); bad requests and damaged graphs leave nothing behind
// but the lock file; the directory is locked from its check to the end, against any writer.
// The command line's side of it: tests/cli/test_publish_cli.py.
#include <catch2/catch.hpp>

#include <algorithm>
#include <boost/asio/awaitable.hpp>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "engine/database.hpp"
#include "engine/format/keys.hpp"
#include "engine/format/publisher_state.hpp"
#include "engine/journal/journal.hpp"
#include "engine/ops/recovery.hpp"
#include "engine/store/intercept_store.hpp"
#include "io/lock.hpp"
#include "tests/io/io_test_support.hpp"
#include "tests/ops/ops_test_support.hpp"

using namespace cairn;
namespace asio = boost::asio;
using test::Db;
using test::Published;

namespace {

const std::vector<int> kRounds{300, 200};

RecoverRequest request(const Published& p, std::optional<Digest> id = std::nullopt,
                       bool writable = false) {
  RecoverRequest r;
  r.storeUrl = p.w.url;
  r.ns = p.w.ns;
  r.headId = id;
  r.writable = writable;
  return r;
}

Res<Recovered> recover(Published& p, const std::filesystem::path& dir, const RecoverRequest& r,
                       ObjectStore* through = nullptr,
                       BudgetTotals totals = kDefaultOperationBudget) {
  OperationBudget budget(totals);
  return p.w.run(
      recoverDatabase(p.w.uring, through ? *through : *p.w.inner, dir, r, p.w.limits, budget));
}

// The payloads of every record of the journal in `dir`, opened as a writer would open it.
std::multiset<std::string> recordsIn(Published& p, const std::filesystem::path& dir,
                                     std::uint64_t expectedEnd) {
  auto journal = p.w.run(Journal::open(p.w.uring, dir));
  REQUIRE(journal.ok());
  REQUIRE((*journal)->endSequence() == expectedEnd);
  CHECK_FALSE((*journal)->tornTail().has_value());
  std::multiset<std::string> payloads;
  for (std::uint64_t s = 1; s <= expectedEnd; ++s) {
    auto record = p.w.run((*journal)->record(s));
    REQUIRE(record.ok());
    payloads.insert(std::string(record->begin(), record->end()));
  }
  return payloads;
}

// The database's journal up to the end of its frames at `length`: what follows is the
// writer's room, zeros only (docs/journal.md, "Room").
Bytes framesOf(const std::filesystem::path& file, std::uint64_t length) {
  Bytes whole = io::test::readWholeFile(file);
  REQUIRE(whole.size() >= length);
  CHECK(std::all_of(whole.begin() + static_cast<std::ptrdiff_t>(length), whole.end(),
                    [](std::uint8_t b) { return b == 0; }));
  whole.resize(length);
  return whole;
}

}  // namespace

TEST_CASE("recovery: the current head rebuilds the journal into a new directory, byte for byte",
          "[ops][recovery]") {
  Published p(std::nullopt, kRounds);
  const Head& head = p.newest();
  const auto dir = p.w.tmp.path() / "recovered";
  auto rec = recover(p, dir, request(p));
  REQUIRE(rec.ok());
  CHECK(rec->head.image() == head.image());
  // Nothing appended since: the frames end at the head's prefix, zeros after them.
  const Bytes original = framesOf(p.db.dir / Journal::kFileName, head.fields().prefixLength);
  CHECK(rec->bytes == original.size());
  CHECK(io::test::readWholeFile(dir / Journal::kFileName) == original);
  // The manifest and every segment verified, then every segment fetched again to be written.
  CHECK(rec->objects == 1 + 2 * p.revisions.back().segments);

  // A read copy: the journal-only marker, no publisher state, no temporary file left.
  CHECK(test::entriesOf(dir) ==
        std::set<std::string>{Journal::kFileName, "LOCK", kJournalOnlyFile});
  // Its records are the database's, every one.
  CHECK(recordsIn(p, dir, 500) == test::payloadsOf(kRounds));
  // It opens as a database that does not publish.
  auto db = p.w.run(Database::open(p.w.uring, dir));
  REQUIRE(db.ok());
  CHECK((*db)->publisherState() == nullptr);
  CHECK((*db)->publisher() == nullptr);
  CHECK((*db)->journal().endSequence() == 500);
}

TEST_CASE("recovery: an exact head id rebuilds exactly that head's prefix", "[ops][recovery]") {
  Published p(std::nullopt, kRounds);
  const Bytes original = framesOf(p.db.dir / Journal::kFileName, p.newest().fields().prefixLength);

  SECTION("an older head, from its immutable copy") {
    const Head& older = p.head(1);
    const auto dir = p.w.tmp.path() / "older";
    auto rec = recover(p, dir, request(p, older.id()));
    REQUIRE(rec.ok());
    CHECK(rec->head.image() == older.image());
    CHECK(rec->head.fields().revision == 1);
    CHECK(rec->bytes == older.fields().prefixLength);
    CHECK(io::test::readWholeFile(dir / Journal::kFileName) ==
          Bytes(original.begin(),
                original.begin() + static_cast<std::ptrdiff_t>(older.fields().prefixLength)));
    CHECK(recordsIn(p, dir, 300) == test::payloadsOf({300}));
  }
  SECTION("the current head, named by its id") {
    const auto dir = p.w.tmp.path() / "current";
    auto rec = recover(p, dir, request(p, p.newest().id()));
    REQUIRE(rec.ok());
    CHECK(rec->head.image() == p.newest().image());
    CHECK(io::test::readWholeFile(dir / Journal::kFileName) == original);
  }
  SECTION("an older head whose copy is gone is missing, never another head instead") {
    const std::string copy = keys::headCopy(p.w.ns, p.head(1).id());
    REQUIRE(p.w.run(p.w.inner->remove(copy)).ok());
    const auto dir = p.w.tmp.path() / "gone";
    auto rec = recover(p, dir, request(p, p.head(1).id()));
    REQUIRE_FALSE(rec.ok());
    CHECK(rec.error().code == Errc::missing);
    CHECK(rec.error().key == copy);
    CHECK_FALSE(std::filesystem::exists(dir));
  }
}

TEST_CASE("recovery: writable recovery continues the namespace, and the old owner is refused",
          "[ops][recovery]") {
  Published p(std::nullopt, kRounds);
  const Head& head = p.newest();
  Db moved{p.w.tmp.path() / "moved", nullptr};
  auto rec = recover(p, moved.dir, request(p, std::nullopt, /*writable=*/true));
  REQUIRE(rec.ok());
  CHECK(rec->head.image() == head.image());
  CHECK_FALSE(std::filesystem::exists(moved.dir / kJournalOnlyFile));
  // The state of a publisher that expects the current head, with the ETag it was read with.
  PublisherState state = p.w.state(moved);
  CHECK(state.ns == p.w.ns);
  CHECK(state.storeUrl == p.w.url);
  CHECK(state.lineage == p.db.journal->lineage());
  CHECK(state.publisher == head.fields().publisher);
  CHECK_FALSE(state.pending);
  REQUIRE(state.expected);
  CHECK(state.expected->head.image() == head.image());
  auto current = p.w.current();
  REQUIRE(current);
  CHECK(state.expected->etag == current->etag);

  // The new directory appends and publishes the next revision of the same chain.
  auto journal = p.w.run(Journal::open(p.w.uring, moved.dir));
  REQUIRE(journal.ok());
  moved.journal = std::move(*journal);
  p.w.append(moved, 50, "continued");
  auto next = p.w.checkpoint(moved);
  REQUIRE(next.ok());
  CHECK(next->outcome == PublishOutcome::selected);
  CHECK(next->head.fields().revision == 3);
  CHECK(next->head.fields().prefixSequence == 550);
  REQUIRE(next->head.fields().predecessor);
  CHECK(next->head.fields().predecessor->id == head.id());

  // The old owner, coming back, is refused by the head's compare-and-swap.
  p.w.append(p.db, 5, "stale");
  auto stale = p.w.checkpoint(p.db);
  REQUIRE_FALSE(stale.ok());
  CHECK(stale.error().code == Errc::conflict);
  CHECK(p.w.current()->bytes == test::imageOf(next->head));
}

TEST_CASE("recovery: the directory must not exist or be empty", "[ops][recovery]") {
  Published p(std::nullopt, kRounds);
  const auto dir = p.w.tmp.path() / "target";
  std::filesystem::create_directories(dir);

  SECTION("an empty directory is accepted") {
    auto rec = recover(p, dir, request(p));
    REQUIRE(rec.ok());
    CHECK(io::test::readWholeFile(dir / Journal::kFileName) ==
          framesOf(p.db.dir / Journal::kFileName, p.newest().fields().prefixLength));
  }
  SECTION("one that holds anything is refused, and left as it was") {
    io::test::writeWholeFile(dir / "keep", asBytes(std::string_view("mine")));
    auto rec = recover(p, dir, request(p));
    REQUIRE_FALSE(rec.ok());
    CHECK(rec.error().code == Errc::usage);
    CHECK_THAT(rec.error().message, Catch::Contains("not empty"));
    CHECK(test::entriesOf(dir) == std::set<std::string>{"keep"});
    CHECK(io::test::readWholeFile(dir / "keep") == Bytes{'m', 'i', 'n', 'e'});
  }
}

TEST_CASE("recovery: bad requests are refused before anything is created", "[ops][recovery]") {
  Published p(std::nullopt, kRounds);
  const auto dir = p.w.tmp.path() / "target";

  SECTION("the nil namespace") {
    RecoverRequest r = request(p);
    r.ns = Uuid{};
    auto rec = recover(p, dir, r);
    REQUIRE_FALSE(rec.ok());
    CHECK(rec.error().code == Errc::usage);
  }
  SECTION("writable from a head that is not the current one") {
    auto rec = recover(p, dir, request(p, p.head(1).id(), /*writable=*/true));
    REQUIRE_FALSE(rec.ok());
    CHECK(rec.error().code == Errc::usage);
    CHECK_THAT(rec.error().message, Catch::Contains("not current"));
  }
  SECTION("an unknown head id") {
    Digest unknown;
    unknown.fill(0xab);
    auto rec = recover(p, dir, request(p, unknown));
    REQUIRE_FALSE(rec.ok());
    CHECK(rec.error().code == Errc::missing);
    CHECK(rec.error().key == keys::headCopy(p.w.ns, unknown));
  }
  SECTION("a namespace without a head") {
    RecoverRequest r = request(p);
    r.ns = Uuid::random();
    auto rec = recover(p, dir, r);
    REQUIRE_FALSE(rec.ok());
    CHECK(rec.error().code == Errc::missing);
    CHECK(rec.error().key == keys::currentHead(r.ns));
  }
  SECTION("a current head that is not a head") {
    RecoverRequest r = request(p);
    r.ns = Uuid::random();
    REQUIRE(p.w.run(p.w.inner->putIfAbsent(keys::currentHead(r.ns), Bytes(100, 7))).ok());
    auto rec = recover(p, dir, r);
    REQUIRE_FALSE(rec.ok());
    CHECK(rec.error().code == Errc::format);
  }
  SECTION("a current head that names another namespace") {
    RecoverRequest r = request(p);
    r.ns = Uuid::random();
    REQUIRE(p.w.run(p.w.inner->putIfAbsent(keys::currentHead(r.ns), p.newest().image())).ok());
    auto rec = recover(p, dir, r);
    REQUIRE_FALSE(rec.ok());
    CHECK(rec.error().code == Errc::binding);
  }
  CHECK_FALSE(std::filesystem::exists(dir));
}

TEST_CASE("recovery: a damaged graph fails closed, naming the object, and leaves no journal",
          "[ops][recovery]") {
  Published p(std::nullopt, kRounds);
  const auto dir = p.w.tmp.path() / "target";
  const auto segments = test::segmentKeys(p.w, *p.w.inner);
  REQUIRE(segments.size() >= 2);
  const std::string segment = *std::next(segments.begin());

  SECTION("a flipped byte in a segment: refused before anything is written") {
    test::flipByte(test::objectFile(p.w, segment), 100);
    auto rec = recover(p, dir, request(p));
    REQUIRE_FALSE(rec.ok());
    CHECK(rec.error().code == Errc::corrupt);
    CHECK(rec.error().key == segment);
    CHECK_FALSE(std::filesystem::exists(dir));
  }
  SECTION("a deleted manifest") {
    const std::string manifest = keys::manifest(p.w.ns, p.newest().fields().manifestSha256);
    REQUIRE(p.w.run(p.w.inner->remove(manifest)).ok());
    auto rec = recover(p, dir, request(p));
    REQUIRE_FALSE(rec.ok());
    CHECK(rec.error().code == Errc::missing);
    CHECK(rec.error().key == manifest);
    CHECK_FALSE(std::filesystem::exists(dir));
  }
  SECTION("a budget smaller than the graph") {
    auto rec = recover(p, dir, request(p), nullptr, BudgetTotals{1000, 1'000'000, 1'000'000});
    REQUIRE_FALSE(rec.ok());
    CHECK(rec.error().code == Errc::budget);
    CHECK_FALSE(std::filesystem::exists(dir));
  }

  // The segment's second GET is the journal writer's, after the verification.
  std::map<std::string, int> gets;
  auto secondGet = [&](StoreOp op, const std::string& key) {
    return op == StoreOp::get && key == segment && ++gets[key] == 2;
  };
  SECTION("a segment that changes after it was verified: no journal is put in place") {
    InterceptStore changing(
        *p.w.inner,
        [&](StoreOp op, const std::string& key, ByteView,
            const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
          if (secondGet(op, key)) {
            test::flipByte(test::objectFile(p.w, key), -3);
          }
          co_return std::nullopt;
        });
    auto rec = recover(p, dir, request(p), &changing);
    REQUIRE(gets[segment] == 2);
    REQUIRE_FALSE(rec.ok());
    CHECK(rec.error().code == Errc::corrupt);
    CHECK(rec.error().key == segment);
    CHECK_THAT(rec.error().message, Catch::Contains("changed after it was verified"));
    CHECK(test::entriesOf(dir) == std::set<std::string>{"LOCK"});
  }
  SECTION("a store that fails while the journal is written: no journal is put in place") {
    InterceptStore failing(*p.w.inner,
                           [&](StoreOp op, const std::string& key, ByteView,
                               const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
                             if (secondGet(op, key)) {
                               co_return StoreOutcome{StoreStatus::failure, "injected", 403};
                             }
                             co_return std::nullopt;
                           });
    auto rec = recover(p, dir, request(p), &failing);
    REQUIRE(gets[segment] == 2);
    REQUIRE_FALSE(rec.ok());
    CHECK(rec.error().code == Errc::store);
    CHECK(test::entriesOf(dir) == std::set<std::string>{"LOCK"});
  }

  // What recovery wrote is taken away again when a later step fails; what the test put in
  // the way stays, and so does the directory's lock file (removing it could let two owners
  // lock two files).
  SECTION("a journal that appears meanwhile is never replaced, and stays as it was") {
    // (Another process that ignores the lock: the rename would have destroyed its journal.)
    InterceptStore blocking(
        *p.w.inner,
        [&](StoreOp op, const std::string& key, ByteView,
            const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
          if (secondGet(op, key)) {
            io::test::writeWholeFile(dir / Journal::kFileName, asBytes(std::string_view("mine")));
          }
          co_return std::nullopt;
        });
    auto rec = recover(p, dir, request(p), &blocking);
    REQUIRE(gets[segment] == 2);
    REQUIRE_FALSE(rec.ok());
    CHECK(rec.error().code == Errc::busy);
    CHECK(test::entriesOf(dir) == std::set<std::string>{Journal::kFileName, "LOCK"});
    CHECK(io::test::readWholeFile(dir / Journal::kFileName) == Bytes{'m', 'i', 'n', 'e'});
  }
  SECTION("the read-copy marker cannot be written: the journal is taken away again") {
    InterceptStore blocking(
        *p.w.inner,
        [&](StoreOp op, const std::string& key, ByteView,
            const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
          if (secondGet(op, key)) {
            std::filesystem::create_directories(dir / kJournalOnlyFile / "x");
          }
          co_return std::nullopt;
        });
    auto rec = recover(p, dir, request(p), &blocking);
    REQUIRE(gets[segment] == 2);
    REQUIRE_FALSE(rec.ok());
    CHECK(rec.error().code == Errc::io);
    CHECK(test::entriesOf(dir) == std::set<std::string>{kJournalOnlyFile, "LOCK"});
  }
}

TEST_CASE("recovery: a database made in the directory while it runs is refused, never replaced",
          "[ops][recovery]") {
  Published p(std::nullopt, kRounds);
  const auto dir = p.w.tmp.path() / "target";
  const auto segments = test::segmentKeys(p.w, *p.w.inner);
  const std::string segment = *segments.begin();
  // While the journal is written (the segment's second GET, after the verification), another
  // process runs `init DIR` and appends: an acknowledged record must never be lost.
  bool keepOpen = false;  // like `ingest`: the writer stays open across the recovery's end
  std::unique_ptr<Database> live;
  std::optional<Error> refused;
  std::uint64_t acknowledged = 0;
  int gets = 0;
  InterceptStore racing(
      *p.w.inner,
      [&](StoreOp op, const std::string& key, ByteView,
          const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
        if (op != StoreOp::get || key != segment || ++gets != 2) co_return std::nullopt;
        auto db = co_await Database::create(p.w.uring, dir, u"live", std::nullopt);
        if (!db) {
          refused = db.error();
          co_return std::nullopt;
        }
        auto seq = co_await (*db)->append(asBytes(std::string_view("live record")));
        if (seq) acknowledged = *seq;
        if (keepOpen) live = std::move(*db);
        co_return std::nullopt;
      });
  SECTION("init and append, then closed") {}
  SECTION("a writer that stays open (ingest)") { keepOpen = true; }
  auto rec = recover(p, dir, request(p), &racing);
  REQUIRE(gets >= 2);
  if (live) {  // what the writer acknowledges after the recovery must be in DIR's journal too
    auto more = p.w.run(live->append(asBytes(std::string_view("live record"))));
    if (more) acknowledged = *more;
    live.reset();
  }
  // Every record the racing writer was told is durable is in the directory's journal.
  if (acknowledged > 0) {
    auto journal = p.w.run(Journal::open(p.w.uring, dir));
    REQUIRE(journal.ok());
    REQUIRE((*journal)->endSequence() >= acknowledged);
    auto last = p.w.run((*journal)->record(acknowledged));
    REQUIRE(last.ok());
    CHECK(std::string(last->begin(), last->end()) == "live record");
  }
  // It was refused: the recovery held the directory from its check to its end.
  CHECK(acknowledged == 0);
  REQUIRE(refused);
  CHECK(refused->code == Errc::busy);
  REQUIRE(rec.ok());
  CHECK(test::entriesOf(dir) ==
        std::set<std::string>{Journal::kFileName, "LOCK", kJournalOnlyFile});
  CHECK(recordsIn(p, dir, 500) == test::payloadsOf(kRounds));
}

TEST_CASE("recovery: a directory another process owns is refused before anything is written",
          "[ops][recovery]") {
  Published p(std::nullopt, kRounds);
  const auto dir = p.w.tmp.path() / "target";
  std::filesystem::create_directories(dir);
  auto held = io::DirectoryLock::acquire(dir);
  REQUIRE(held.ok());
  auto rec = recover(p, dir, request(p));
  REQUIRE_FALSE(rec.ok());
  CHECK(rec.error().code == Errc::busy);
  CHECK(test::entriesOf(dir) == std::set<std::string>{"LOCK"});
}

TEST_CASE("recovery: what an interrupted recovery left is said, and removed by the next one",
          "[ops][recovery]") {
  Published p(std::nullopt, kRounds);
  const auto dir = p.w.tmp.path() / "target";
  std::filesystem::create_directories(dir);
  // A recovery killed after it wrote the state, before its journal was in place.
  REQUIRE(io::DirectoryLock::acquire(dir).ok());
  io::test::writeWholeFile(dir / kRecoveringFileName, Bytes(1000, 7));
  io::test::writeWholeFile(dir / kPublisherStateFile, Bytes(10, 1));
  io::test::writeWholeFile(dir / (std::string(kJournalOnlyFile) + ".tmp.123.0"), Bytes(3, 1));

  // Every command that opens the directory says what it is.
  auto opened = p.w.run(Database::open(p.w.uring, dir));
  REQUIRE_FALSE(opened.ok());
  CHECK_THAT(opened.error().message, Catch::Contains("interrupted recovery"));
  CHECK_THAT(opened.error().message, Catch::Contains("cairn recover again"));

  SECTION("the next recovery removes it and rebuilds the journal") {
    auto rec = recover(p, dir, request(p));
    REQUIRE(rec.ok());
    CHECK(test::entriesOf(dir) ==
          std::set<std::string>{Journal::kFileName, "LOCK", kJournalOnlyFile});
    CHECK(recordsIn(p, dir, 500) == test::payloadsOf(kRounds));
  }
  SECTION("beside anything a recovery does not write, the directory is refused as it is") {
    io::test::writeWholeFile(dir / "keep", asBytes(std::string_view("mine")));
    auto rec = recover(p, dir, request(p));
    REQUIRE_FALSE(rec.ok());
    CHECK_THAT(rec.error().message, Catch::Contains("not empty"));
    CHECK(test::entriesOf(dir).size() == 5);
  }
  SECTION("a journal is never taken for what an interrupted recovery left") {
    io::test::writeWholeFile(dir / Journal::kFileName, asBytes(std::string_view("mine")));
    auto rec = recover(p, dir, request(p));
    REQUIRE_FALSE(rec.ok());
    CHECK_THAT(rec.error().message, Catch::Contains("not empty"));
    CHECK(io::test::readWholeFile(dir / Journal::kFileName) == Bytes{'m', 'i', 'n', 'e'});
  }
}
