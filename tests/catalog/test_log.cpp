// Catalog logs (catalog/log.hpp): records published as chained head publications, read back
// verified, incrementally; each answer of the store mapped to committed, lost or unknown.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "engine/format/keys.hpp"
#include "engine/graph/verifier.hpp"
#include "engine/ops/backup.hpp"
#include "engine/ops/usage.hpp"
#include "engine/ops/vacuum.hpp"
#include "tests/catalog/log_test_support.hpp"

using namespace cairn;
using catalog::Appended;
using catalog::LogRead;
using Outcome = catalog::Appended::Outcome;
using test::LogWorld;

namespace {

// A log of n records "r1".."rn", one publication each; the cursor of every revision.
std::vector<catalog::LogCursor> publish(LogWorld& w, int n) {
  std::vector<catalog::LogCursor> cursors;
  std::optional<catalog::LogCursor> at;
  for (int i = 1; i <= n; ++i) {
    at = w.commit(at, "r" + std::to_string(i));
    cursors.push_back(*at);
  }
  return cursors;
}

std::vector<std::string> records(int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i <= to; ++i) out.push_back("r" + std::to_string(i));
  return out;
}

}  // namespace

TEST_CASE("catalog log: records are published and read back, all or only the new ones",
          "[catalog][log]") {
  LogWorld w;
  std::vector<std::string> got;
  auto none = w.read(std::nullopt, got);
  REQUIRE(none.ok());
  CHECK(none->state == LogRead::State::absent);

  auto cursors = publish(w, 5);
  CHECK(cursors.back().revision() == 5);
  CHECK(cursors.back().sequence() == 5);
  CHECK(cursors.front().manifest.manifest.format() == 1);
  CHECK(cursors.back().manifest.manifest.format() == 2);

  auto cold = w.read(std::nullopt, got);
  REQUIRE(cold.ok());
  CHECK(cold->state == LogRead::State::rebuilt);
  CHECK(got == records(1, 5));
  REQUIRE(cold->cursor);
  CHECK(cold->cursor->head.id() == cursors.back().head.id());
  // The cursor read cold and the one the appender kept hash the prefix alike.
  CHECK(cold->cursor->prefix.finish() == cursors.back().prefix.finish());

  auto same = w.read(cold->cursor, got);
  REQUIRE(same.ok());
  CHECK(same->state == LogRead::State::unchanged);
  CHECK(same->requests == 1);  // one head GET

  // From revision 2: only records 3..5, with one manifest and one segment GET per revision.
  got.clear();
  auto later = w.read(cursors[1], got);
  REQUIRE(later.ok());
  CHECK(later->state == LogRead::State::extended);
  CHECK(got == records(3, 5));
  CHECK(later->requests == 1 + 3 + 3);

  // A commit on the state read extends it; several records in one append are one revision.
  auto more = w.append(later->cursor, {"r6", "r7"});
  REQUIRE(more.ok());
  REQUIRE(more->outcome == Outcome::committed);
  CHECK(more->cursor->revision() == 6);
  CHECK(more->cursor->sequence() == 7);
  got.clear();
  auto last = w.read(later->cursor, got);
  REQUIRE(last.ok());
  CHECK(got == records(6, 7));
}

TEST_CASE("catalog log: the engine's verification, usage, vacuum and backup work on it",
          "[catalog][log]") {
  LogWorld w;
  auto cursors = publish(w, 12);
  const Head& head = cursors.back().head;
  EngineLimits limits;
  OperationBudget budget;
  VerifyOptions deep;
  deep.deep = true;
  auto verified = w.run(verifyHeadGraph(*w.store, head, nullptr, limits, budget, deep));
  INFO((verified ? std::string() : verified.error().message));
  REQUIRE(verified.ok());
  CHECK(verified->objects == 12 + 12);  // 12 manifests (one chain) and 12 segments
  CHECK(verified->manifest.segments.size() == 12);

  // Every object is reachable from the head with every revision kept: nothing to reclaim.
  auto usage = w.run(namespaceUsage(*w.store, w.id.ns, 0, budget));
  REQUIRE(usage.ok());
  std::uint64_t unreachable = 0;
  for (const auto& u : usage->unreachable) unreachable += u.objects;
  CHECK(unreachable == 0);
  // Keeping 2 revisions, the chain still reaches every manifest and segment: only head copies
  // of older revisions are unreachable.
  VacuumOptions vacuum;
  vacuum.keepRevisions = 2;
  auto dry = w.run(vacuumNamespace(*w.store, w.id.ns, vacuum, limits, budget));
  REQUIRE(dry.ok());
  for (const auto& o : dry->unreachable) CHECK(o.cls == ObjectClass::headCopy);
  CHECK(dry->unreachable.size() == 10);

  // A backup copies the chain and the target verifies deep.
  auto target = std::move(
      *DirectoryStore::open(w.uring, w.dir.path() / "target", StoreCreation::createIfMissing));
  auto copied = w.run(backupNamespace(*w.store, *target, w.id.ns, limits, budget));
  INFO((copied ? std::string() : copied.error().message));
  REQUIRE(copied.ok());
  CHECK(copied->headUpdated);
  std::vector<std::string> got;
  auto there = w.read(std::nullopt, got, target.get());
  REQUIRE(there.ok());
  CHECK(got == records(1, 12));
}

TEST_CASE("catalog log: a lost race is lost, a lost answer is settled by reading back",
          "[catalog][log]") {
  LogWorld w;
  auto start = w.commit(std::nullopt, "r1");

  SECTION("two appenders on one state: one commits, the other is lost") {
    auto a = w.append(start, {"a"});
    REQUIRE(a.ok());
    CHECK(a->outcome == Outcome::committed);
    auto b = w.append(start, {"b"});
    REQUIRE(b.ok());
    CHECK(b->outcome == Outcome::lost);
    std::vector<std::string> got;
    REQUIRE(w.read(std::nullopt, got).ok());
    CHECK(got == std::vector<std::string>{"r1", "a"});
  }
  SECTION("the PUT applied, its answer lost: committed after reading back") {
    w.after = [](StoreOp op, const std::string& key, StoreStatus s) -> std::optional<StoreOutcome> {
      if (op == StoreOp::putIfMatch && key.ends_with("current.head") && s == StoreStatus::ok) {
        return StoreOutcome{StoreStatus::uncertain, "answer lost"};
      }
      return std::nullopt;
    };
    auto a = w.append(start, {"a"});
    REQUIRE(a.ok());
    CHECK(a->outcome == Outcome::committed);
    CHECK(!a->cursor->etag.empty());
  }
  SECTION("the PUT lost before it applied: the same bytes again, then committed") {
    int dropped = 0;
    w.before = [&](StoreOp op, const std::string& key, ByteView,
                   const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
      if (op == StoreOp::putIfMatch && key.ends_with("current.head") && dropped < 2) {
        ++dropped;
        co_return StoreOutcome{StoreStatus::uncertain, "request lost"};
      }
      co_return std::nullopt;
    };
    auto a = w.append(start, {"a"});
    REQUIRE(a.ok());
    CHECK(a->outcome == Outcome::committed);
    CHECK(dropped == 2);
  }
  SECTION("every PUT lost before it applied: unknown, never lost") {
    w.before = [&](StoreOp op, const std::string& key, ByteView,
                   const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
      if (op == StoreOp::putIfMatch && key.ends_with("current.head")) {
        co_return StoreOutcome{StoreStatus::uncertain, "request lost"};
      }
      co_return std::nullopt;
    };
    auto a = w.append(start, {"a"});
    REQUIRE(a.ok());
    CHECK(a->outcome == Outcome::unknown);
  }
  SECTION("the answer lost and the head unreadable: unknown") {
    bool putDone = false;
    w.before = [&](StoreOp op, const std::string& key, ByteView,
                   const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
      if (putDone && op == StoreOp::get && key.ends_with("current.head")) {
        co_return StoreOutcome{StoreStatus::failure, "unreachable"};
      }
      co_return std::nullopt;
    };
    w.after = [&](StoreOp op, const std::string& key, StoreStatus) -> std::optional<StoreOutcome> {
      if (op == StoreOp::putIfMatch && key.ends_with("current.head")) {
        putDone = true;
        return StoreOutcome{StoreStatus::uncertain, "answer lost"};
      }
      return std::nullopt;
    };
    auto a = w.append(start, {"a"});
    REQUIRE(a.ok());
    CHECK(a->outcome == Outcome::unknown);
  }
  SECTION("the answer lost, and another commit landed on top of it: committed, an ancestor") {
    w.after = [&](StoreOp op, const std::string& key,
                  StoreStatus s) -> std::optional<StoreOutcome> {
      if (op == StoreOp::putIfMatch && key.ends_with("current.head") && s == StoreStatus::ok) {
        return StoreOutcome{StoreStatus::uncertain, "answer lost"};
      }
      return std::nullopt;
    };
    bool stacked = false;
    w.before = [&](StoreOp op, const std::string& key, ByteView,
                   const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
      // After our PUT applied, and before we read back, another appender commits on top.
      if (!stacked && op == StoreOp::get && key.ends_with("current.head")) {
        std::vector<std::string> ignored;
        OperationBudget budget;
        // Named arguments only: GCC 12 destroys a temporary made in a co_await operand twice.
        const std::optional<catalog::LogCursor> none;
        const catalog::RecordSink noSink;
        const std::function<void()> noReset;
        auto now = co_await catalog::readLog(*w.store, w.id, none, noSink, noReset, budget);
        if (now.ok() && now->cursor && now->cursor->revision() == 2) {
          stacked = true;
          catalog::LogAppend other;
          other.records.push_back(Bytes{'x'});
          co_await catalog::appendLog(*w.store, w.id, now->cursor, other, budget);
        }
      }
      co_return std::nullopt;
    };
    auto a = w.append(start, {"a"});
    REQUIRE(a.ok());
    CHECK(stacked);
    CHECK(a->outcome == Outcome::committed);
    CHECK(a->cursor->etag.empty());
  }
  SECTION("the answer lost, and another head took the revision: lost") {
    w.before = [&](StoreOp op, const std::string& key, ByteView,
                   const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
      if (op == StoreOp::putIfMatch && key.ends_with("current.head")) {
        // Another appender wins first; this PUT is then refused, and its answer lost.
        OperationBudget budget;
        catalog::LogAppend other;
        other.records.push_back(Bytes{'x'});
        w.before = {};
        co_await catalog::appendLog(*w.store, w.id, start, other, budget);
        co_return StoreOutcome{StoreStatus::uncertain, "request lost"};
      }
      co_return std::nullopt;
    };
    auto a = w.append(start, {"a"});
    REQUIRE(a.ok());
    CHECK(a->outcome == Outcome::lost);
  }
}

TEST_CASE("catalog log: damage and foreign heads fail closed", "[catalog][log]") {
  LogWorld w;
  auto cursors = publish(w, 3);
  std::vector<std::string> got;
  SECTION("a segment's bytes changed") {
    const auto& seg = cursors[1].manifest.manifest.segments.front();
    auto path = w.dir.path() / "store" / keys::segment(w.id.ns, seg.objectSha256);
    std::filesystem::resize_file(path, std::filesystem::file_size(path) - 1);
    auto r = w.read(std::nullopt, got);
    REQUIRE(!r.ok());
    CHECK(r.error().code == Errc::corrupt);
  }
  SECTION("a base manifest gone") {
    std::filesystem::remove(w.dir.path() / "store" /
                            keys::manifest(w.id.ns, cursors[0].manifest.sha256));
    auto r = w.read(std::nullopt, got);
    REQUIRE(!r.ok());
    CHECK(r.error().code == Errc::missing);
    // A reader that already holds revision 1 needs nothing below it.
    auto later = w.read(cursors[0], got);
    REQUIRE(later.ok());
    CHECK(later->state == LogRead::State::extended);
  }
  SECTION("another publisher's head") {
    auto other = w.id;
    other.publisher = *Uuid::parse("5e1f0000-0000-4000-8000-000000000002");
    OperationBudget budget;
    auto r = w.run(catalog::readLog(w.faulty, other, std::nullopt, {}, {}, budget));
    REQUIRE(!r.ok());
    CHECK(r.error().code == Errc::binding);
  }
  SECTION("another log's lineage") {
    auto other = *catalog::LogIdentity::make(w.id.ns, w.publisher, u"cairn-table:other");
    OperationBudget budget;
    auto r = w.run(catalog::readLog(w.faulty, other, std::nullopt, {}, {}, budget));
    REQUIRE(!r.ok());
    CHECK(r.error().code == Errc::binding);
  }
}
