// Vacuum when something arrives late: a DELETE delayed past its window (a stopped process, a
// descheduled machine), a current head that does not verify before anything is deleted, and
// a vacuum resumed after its lease was taken over (docs/operations.md, "Reclamation").
#include <catch2/catch.hpp>

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/format/keys.hpp"
#include "engine/graph/heads.hpp"
#include "engine/graph/verifier.hpp"
#include "engine/ops/vacuum.hpp"
#include "engine/ops/vacuum_lease.hpp"
#include "engine/publish/publisher.hpp"
#include "engine/store/intercept_store.hpp"
#include "tests/ops/ops_test_support.hpp"
#include "tests/publish/publish_test_support.hpp"
#include "tests/store/s3_test_env.hpp"

using namespace cairn;
namespace asio = boost::asio;
using test::Db;
using test::World;

namespace {

constexpr std::uint64_t kOneSegment = std::uint64_t{64} << 20;
constexpr std::uint64_t kSmallSegments = 1024;
// The clock of the vacuums and publishers below runs this far ahead: everything written by the
// test is old (grace 50 s, reuse age 25 s).
constexpr std::int64_t kAhead = 100;

std::uint64_t deletedOf(const VacuumReport& r, ObjectClass c) {
  return r.deleted[static_cast<std::size_t>(c)].objects;
}

VacuumOptions oldEverything(std::int64_t ahead = kAhead) {
  VacuumOptions options;
  options.keepRevisions = 1;
  options.apply = true;
  options.now = [ahead] { return unixSecondsNow() + ahead; };
  options.graceSeconds = 50;
  options.publisherReuseMaxAge = std::chrono::seconds(25);
  return options;
}

PublishOptions publishing(std::uint64_t segmentTarget) {
  PublishOptions po;
  po.retryPause = std::chrono::milliseconds(1);
  po.checkpoint.segmentTargetBytes = segmentTarget;
  po.checkpoint.reuseMaxAge = std::chrono::seconds(25);
  po.checkpoint.now = [] { return unixSecondsNow() + kAhead; };
  return po;
}

Res<VerifiedGraph> verifyCurrent(World& w) {
  OperationBudget budget;
  auto seen = w.run(observeHead(*w.inner, w.ns, budget));
  REQUIRE(seen.ok());
  REQUIRE(seen->present());
  return w.run(verifyHeadGraph(*w.inner, *seen->head, nullptr, w.limits, budget, VerifyOptions{}));
}

// A vacuum stalls between its window check and its DELETE of segment X; meanwhile a compaction
// plans X again, finds it old, rewrites it, waits its settle time, confirms it and selects a
// head over it. The DELETE that then arrives must leave X alone.
void lateDeleteOfAReusedSegment(const std::optional<std::string>& s3Url) {
  World w(s3Url);
  Db db = w.create("db");
  w.append(db, 200, "records");
  // Revision 1: one segment, X. Revision 2: the same records in small segments (X unreachable
  // with one revision kept).
  Publisher whole(w.uring, *db.journal, *w.inner, db.dir, w.state(db), w.limits,
                  publishing(kOneSegment));
  auto first = w.run(whole.checkpoint());
  REQUIRE(first.ok());
  REQUIRE(first->segments == 1);
  auto before = test::segmentKeys(w, *w.inner);
  REQUIRE(before.size() == 1);
  const std::string x = *before.begin();
  Publisher small(w.uring, *db.journal, *w.inner, db.dir, w.state(db), w.limits,
                  publishing(kSmallSegments));
  auto second = w.run(small.compact());
  REQUIRE(second.ok());
  REQUIRE(second->segments > 1);
  // The compaction that reuses X, run while vacuum's DELETE of X is held back.
  Publisher again(w.uring, *db.journal, *w.inner, db.dir, w.state(db), w.limits,
                  publishing(kOneSegment));
  std::optional<Res<PublishResult>> third;
  InterceptStore stalled(*w.inner,
                         [&](StoreOp op, const std::string& key, ByteView,
                             const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
                           if (op == StoreOp::remove && key == x && !third) {
                             third = co_await again.compact();
                           }
                           co_return std::nullopt;
                         });
  OperationBudget budget;
  auto report = w.run(vacuumNamespace(stalled, w.ns, oldEverything(), w.limits, budget));
  REQUIRE(third);
  REQUIRE(third->ok());
  CHECK((*third)->objectsRewritten >= 1);  // X was old: rewritten, settled, confirmed
  CHECK((*third)->segments == 1);
  REQUIRE(report.ok());
  // The head the compaction selected reaches X, and X is there.
  CHECK(exists(w, x));
  auto verified = verifyCurrent(w);
  INFO((verified ? std::string() : verified.error().message));
  CHECK(verified.ok());
}

}  // namespace

TEST_CASE("vacuum: a DELETE that arrives late leaves a segment a compaction reused (directory)",
          "[vacuum][late]") {
  lateDeleteOfAReusedSegment(std::nullopt);
}

TEST_CASE("vacuum: a DELETE that arrives late leaves a segment a compaction reused (RGW)",
          "[vacuum][late][s3]") {
  auto url = test::rgwUrlText();
  if (!url) return;
  lateDeleteOfAReusedSegment(url);
}

namespace {

// Three revisions, each adding segments; `onlyNewest` holds those only revision 3 reaches.
struct ThreeRevisions {
  World w{std::nullopt};
  Db db = w.create("db");
  std::vector<Head> heads;
  std::set<std::string> onlyNewest;
  ThreeRevisions() {
    std::set<std::string> before;
    for (int i = 0; i < 3; ++i) {
      before = test::segmentKeys(w, *w.inner);
      w.append(db, 100, "round " + std::to_string(i));
      auto r = w.checkpoint(db);
      REQUIRE(r.ok());
      heads.push_back(r->head);
    }
    for (const auto& k : test::segmentKeys(w, *w.inner)) {
      if (!before.count(k)) onlyNewest.insert(k);
    }
    REQUIRE(!onlyNewest.empty());
  }
  std::string copyOf(std::size_t i) const { return keys::headCopy(w.ns, heads.at(i).id()); }
  std::string manifestOf(std::size_t i) const {
    return keys::manifest(w.ns, heads.at(i).fields().manifestSha256);
  }
};

}  // namespace

TEST_CASE("vacuum: a current head that does not verify stops it before any DELETE", "[vacuum]") {
  ThreeRevisions t;
  // The segment only the current head reaches is lost: the older revisions are the way back.
  std::filesystem::remove(test::objectFile(t.w, *t.onlyNewest.begin()));
  VacuumReport sofar;
  OperationBudget budget;
  auto report =
      t.w.run(vacuumNamespace(*t.w.inner, t.w.ns, oldEverything(), t.w.limits, budget, &sofar));
  REQUIRE_FALSE(report.ok());
  CHECK(report.error().code == Errc::missing);
  CHECK_THAT(report.error().message, Catch::Contains("deleted nothing"));
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(exists(t.w, t.copyOf(i)));
    CHECK(exists(t.w, t.manifestOf(i)));
  }
  for (const auto& v : sofar.unreachable) CHECK_FALSE(v.deleted);
  CHECK(deletedOf(sofar, ObjectClass::headCopy) + deletedOf(sofar, ObjectClass::manifest) == 0);
  // Its lease was given back: a vacuum after the repair runs.
  CHECK_FALSE(exists(t.w, keys::vacuumLease(t.w.ns)));
}

TEST_CASE("vacuum: a failure says what was deleted before it", "[vacuum]") {
  ThreeRevisions t;
  int removes = 0;
  const std::string lease = keys::vacuumLease(t.w.ns);
  InterceptStore secondUnanswered(
      *t.w.inner,
      [&](StoreOp op, const std::string& key, ByteView,
          const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
        if (op == StoreOp::remove && key != lease && ++removes == 2) {
          co_return StoreOutcome{StoreStatus::uncertain, "no answer within the bound", 0};
        }
        co_return std::nullopt;
      });
  VacuumReport sofar;
  OperationBudget budget;
  auto report = t.w.run(
      vacuumNamespace(secondUnanswered, t.w.ns, oldEverything(), t.w.limits, budget, &sofar));
  REQUIRE_FALSE(report.ok());
  CHECK(report.error().code == Errc::uncertain);
  std::vector<std::string> deleted;
  for (const auto& v : sofar.unreachable) {
    if (v.deleted) deleted.push_back(v.key);
  }
  REQUIRE(deleted.size() == 1);
  CHECK_FALSE(exists(t.w, deleted[0]));
  CHECK(deletedOf(sofar, ObjectClass::headCopy) == 1);
}

// A vacuum paused past its lease after its deletes: another vacuum took the lease over and,
// the head having moved on, rightly reclaimed the head the first one walked. The first one,
// resumed, verifies the head that is current, not the one it walked.
TEST_CASE("vacuum: resumed after another vacuum reclaimed its walked head, it verifies the current",
          "[vacuum]") {
  ThreeRevisions t;
  World& w = t.w;
  bool deleting = false;
  std::optional<Res<VacuumReport>> other;
  std::optional<Res<PublishResult>> moved;
  Publisher publisher(w.uring, *t.db.journal, *w.inner, t.db.dir, w.state(t.db), w.limits,
                      publishing(4096));
  w.append(t.db, 100, "while vacuum is paused");
  InterceptStore paused(
      *w.inner,
      [&](StoreOp op, const std::string&, ByteView,
          const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
        if (op == StoreOp::remove) deleting = true;
        if (op != StoreOp::remove && deleting && !other) {
          // Its deletes are done; it is stopped here long enough for its lease to expire.
          moved = co_await publisher.checkpoint();
          REQUIRE(moved->ok());
          VacuumOptions later =
              oldEverything(kAhead + kVacuumLeaseTermSeconds + 2 * kVacuumLeaseSkewSeconds);
          OperationBudget budget;
          other = co_await vacuumNamespace(*w.inner, w.ns, later, w.limits, budget);
        }
        co_return std::nullopt;
      });
  OperationBudget budget;
  auto report = w.run(vacuumNamespace(paused, w.ns, oldEverything(), w.limits, budget));
  REQUIRE(other);
  REQUIRE(other->ok());
  // The other vacuum reclaimed the head the first one walked (revision 3).
  CHECK_FALSE(exists(w, t.copyOf(2)));
  CHECK_FALSE(exists(w, t.manifestOf(2)));
  INFO((report ? std::string() : report.error().message));
  REQUIRE(report.ok());
  CHECK(report->verified);
  CHECK(verifyCurrent(w).ok());
}
