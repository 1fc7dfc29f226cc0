// Catalog logs (engine/storelog/log.hpp): records published as chained head publications, read back
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
#include "tests/storelog/log_test_support.hpp"

using namespace cairn;
using catalog::Appended;
using catalog::LogRead;
using Outcome = catalog::Appended::Outcome;
using test::LogWorld;

namespace {

// A log of n records "r1".."rn", one publication each; the cursor of every revision.
std::vector<catalog::LogCursor> publish(LogWorld& w, int n, catalog::AppendOptions options = {}) {
  std::vector<catalog::LogCursor> cursors;
  std::optional<catalog::LogCursor> at;
  for (int i = 1; i <= n; ++i) {
    at = w.commit(at, "r" + std::to_string(i), options);
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

  // From revision 2: only records 3..5: the head, its manifest (revisions 2..5 are one run,
  // which lists their segments after the base revision 2 shares) and one GET per new segment.
  got.clear();
  auto later = w.read(cursors[1], got);
  REQUIRE(later.ok());
  CHECK(later->state == LogRead::State::extended);
  CHECK(got == records(3, 5));
  CHECK(later->requests == 1 + 1 + 3);

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
  // 2 manifests (revision 12's, whose run lists revisions 2..12, and its base, revision 1's)
  // and 12 segments.
  CHECK(verified->objects == 2 + 12);
  CHECK(verified->manifest.segments.size() == 12);

  // Every object is reachable from the head with every revision kept: nothing to reclaim.
  auto usage = w.run(namespaceUsage(*w.store, w.id.ns, 0, budget));
  REQUIRE(usage.ok());
  std::uint64_t unreachable = 0;
  for (const auto& u : usage->unreachable) unreachable += u.objects;
  CHECK(unreachable == 0);
  // Keeping 2 revisions, the chains still reach every segment: the head copies of revisions
  // 1..10 are unreachable, and the manifests of revisions 2..10 (11's and 12's list their
  // segments again).
  VacuumOptions vacuum;
  vacuum.keepRevisions = 2;
  auto dry = w.run(vacuumNamespace(*w.store, w.id.ns, vacuum, limits, budget));
  REQUIRE(dry.ok());
  std::size_t copies = 0, manifests = 0;
  for (const auto& o : dry->unreachable) {
    if (o.cls == ObjectClass::headCopy) ++copies;
    if (o.cls == ObjectClass::manifest) ++manifests;
  }
  CHECK(copies == 10);
  CHECK(manifests == 9);
  CHECK(dry->unreachable.size() == 10 + 9);

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

TEST_CASE("catalog log: a cold read walks one manifest per run, a warm one reads only what is new",
          "[catalog][log]") {
  LogWorld w;
  constexpr int n = 150;  // revision 1, runs 2..65 and 66..129 (64 each), 130..150
  auto cursors = publish(w, n);
  for (const auto& c : cursors) CHECK(c.manifest.manifest.segments.size() <= 64);
  CHECK(cursors[64].manifest.manifest.segments.size() == 64);
  CHECK(cursors[65].manifest.manifest.segments.size() == 1);
  CHECK(cursors[65].manifest.manifest.base->sha256 == cursors[64].manifest.sha256);

  std::vector<std::string> got;
  auto cold = w.read(std::nullopt, got);
  REQUIRE(cold.ok());
  CHECK(cold->state == LogRead::State::rebuilt);
  CHECK(got == records(1, n));
  // The head, the manifests of revisions 150, 129, 65 and 1, and every segment; a manifest
  // per append would be 150 of them, fetched one after the other.
  CHECK(cold->requests == 1 + 4 + n);

  // From every earlier revision: extended, exactly the records after it, and no manifest
  // below the run the reader is in.
  for (int r = 1; r < n; ++r) {
    INFO("from revision " << r);
    got.clear();
    auto warm = w.read(cursors[r - 1], got);
    REQUIRE(warm.ok());
    CHECK(warm->state == LogRead::State::extended);
    CHECK(got == records(r + 1, n));
    const int bases = r >= 129 ? 0 : (r >= 65 ? 1 : 2);  // run bases walked to reach its own
    CHECK(warm->requests == std::uint64_t(1 + 1 + bases + (n - r)));
    REQUIRE(warm->cursor);
    CHECK(warm->cursor->prefix.finish() == cursors.back().prefix.finish());
  }

  // A log written one manifest per append (runSegments 1, as before runs) and continued in
  // runs reads whole.
  LogWorld old;
  catalog::AppendOptions chained;
  chained.runSegments = 1;
  auto first = publish(old, 5, chained);
  CHECK(first.back().manifest.manifest.segments.size() == 1);
  auto next = old.commit(first.back(), "r6");
  next = old.commit(next, "r7");
  // Revision 5's manifest has a base and one segment: the run goes on from it (5..7 on 4).
  CHECK(next.manifest.manifest.segments.size() == 3);
  got.clear();
  auto whole = old.read(std::nullopt, got);
  REQUIRE(whole.ok());
  CHECK(got == records(1, 7));
  CHECK(whole->requests == 1 + 5 + 7);  // the manifests of 7, 4, 3, 2 and 1
  got.clear();
  auto fromThree = old.read(first[2], got);
  REQUIRE(fromThree.ok());
  CHECK(fromThree->state == LogRead::State::extended);
  CHECK(got == records(4, 7));
}

TEST_CASE("catalog log: a reader whose run forked after the shared base rebuilds the log",
          "[catalog][log]") {
  // Two stores whose logs share revision 1 (the same bytes: the same manifest object) and
  // differ after it. A cursor of the first read against the second reaches revision 1's
  // manifest as the base it knows, but the run lists other segments: the log is read whole.
  LogWorld a, b;
  auto a1 = a.commit(std::nullopt, "r1");
  auto a3 = a.commit(a.commit(a1, "a2"), "a3");
  auto b1 = b.commit(std::nullopt, "r1");
  REQUIRE(a1.manifest.sha256 == b1.manifest.sha256);
  auto b4 = b.commit(b.commit(b.commit(b1, "b2"), "b3"), "b4");
  REQUIRE(a3.manifest.manifest.base->sha256 == b4.manifest.manifest.base->sha256);
  std::vector<std::string> got{"stale"};
  auto r = b.read(a3, got);
  INFO((r ? std::string() : r.error().message));
  REQUIRE(r.ok());
  CHECK(r->state == LogRead::State::rebuilt);
  CHECK(got == std::vector<std::string>{"r1", "b2", "b3", "b4"});
  CHECK(r->cursor->head.id() == b4.head.id());
}

TEST_CASE("catalog log: a warm read checks the base it stops at as a cold read would",
          "[catalog][log]") {
  // Revision 1 is the root; 2..4 are one run on it. A cursor's view of a base that differs from
  // what the stored manifest names (as a damaged or foreign manifest would make it) is refused
  // or read from the root, never extended.
  LogWorld w;
  auto cursors = publish(w, 4);
  REQUIRE(cursors[3].manifest.manifest.base->sha256 == cursors[0].manifest.sha256);
  std::vector<std::string> got;
  auto expectCorrupt = [&](const catalog::LogCursor& from) {
    got.clear();
    auto r = w.read(from, got);
    REQUIRE(!r.ok());
    CHECK(r.error().code == Errc::corrupt);
  };
  SECTION("stopping at the cursor's own manifest") {
    auto from = cursors[0];
    SECTION("named with another length") {
      from.manifest.length += 1;
      expectCorrupt(from);
    }
    SECTION("whose generation is not earlier") {
      from.manifest.manifest.generation = cursors[3].manifest.manifest.generation;
      expectCorrupt(from);
    }
  }
  SECTION("stopping at the cursor's run base") {
    auto from = cursors[1];
    REQUIRE(from.manifest.manifest.base);
    SECTION("named with another length") {
      from.manifest.manifest.base->length += 1;
      expectCorrupt(from);
    }
    SECTION("reached from a manifest not later than the cursor's: read whole") {
      from.manifest.manifest.generation = cursors[3].manifest.manifest.generation;
      auto r = w.read(from, got);
      REQUIRE(r.ok());
      CHECK(r->state == LogRead::State::rebuilt);
      CHECK(got == records(1, 4));
    }
    SECTION("as it is: extended") {
      auto r = w.read(from, got);
      REQUIRE(r.ok());
      CHECK(r->state == LogRead::State::extended);
      CHECK(got == records(3, 4));
    }
  }
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
