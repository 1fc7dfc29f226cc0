// Reclamation beside publication (docs/operations.md, "Vacuum and concurrent publication"), on
// the directory store and on RGW: young objects stay whatever is unreachable, and a head that
// moves between vacuum's walk and its first DELETE makes it compute reachability again.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "engine/format/keys.hpp"
#include "engine/format/vacuum_lease.hpp"
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

// Vacuum racing a publisher: the head moves between vacuum's walk and its first DELETE.
void vacuumWhileTheHeadMoves(const std::optional<std::string>& s3Url) {
  World w(s3Url);
  Db db = w.create("db");
  std::vector<Head> heads;
  for (int i = 0; i < 3; ++i) {
    w.append(db, 200, "round " + std::to_string(i));
    auto r = w.checkpoint(db);
    REQUIRE(r.ok());
    heads.push_back(r->head);
  }
  VacuumOptions options;
  options.keepRevisions = 1;
  options.apply = true;

  SECTION("young objects stay, whatever is unreachable") {
    options.graceSeconds = 3600;
    OperationBudget budget;
    auto report = w.run(vacuumNamespace(*w.inner, w.ns, options, w.limits, budget));
    REQUIRE(report.ok());
    CHECK(report->reclaimable[static_cast<std::size_t>(ObjectClass::manifest)].objects == 0);
    CHECK(report->kept[static_cast<std::size_t>(ObjectClass::manifest)].objects == 2);
    CHECK(report->deleted[static_cast<std::size_t>(ObjectClass::manifest)].objects == 0);
    CHECK(report->verified);
  }
  SECTION("the head moves before the first DELETE: reachability is computed again") {
    // Everything counts as old: the clock runs 100 s ahead and the grace is 50 s, so only
    // reachability protects the new head's objects.
    options.now = [] { return unixSecondsNow() + 100; };
    options.graceSeconds = 50;
    options.publisherReuseMaxAge = std::chrono::seconds(25);  // this test's publisher: 25 s
    w.append(db, 200, "during vacuum");
    PublishOptions po;
    po.checkpoint.segmentTargetBytes = 4096;
    po.checkpoint.reuseMaxAge = options.publisherReuseMaxAge;
    Publisher publisher(w.uring, *db.journal, *w.inner, db.dir, w.state(db), w.limits, po);
    std::optional<Head> moved;
    InterceptStore racing(*w.inner,
                          [&](StoreOp op, const std::string&, ByteView,
                              const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
                            if (op == StoreOp::head && !moved) {
                              auto r = co_await publisher.checkpoint();
                              REQUIRE(r.ok());
                              moved = r->head;
                            }
                            co_return std::nullopt;
                          });
    OperationBudget budget;
    auto report = w.run(vacuumNamespace(racing, w.ns, options, w.limits, budget));
    REQUIRE(report.ok());
    REQUIRE(moved);
    CHECK(report->restarts == 1);
    CHECK(report->verified);
    REQUIRE(report->current);
    CHECK(report->current->id() == moved->id());
    // The older revisions' manifests and head copies are gone; the new head's graph is whole,
    // byte for byte, and so is the journal comparison.
    CHECK(report->deleted[static_cast<std::size_t>(ObjectClass::manifest)].objects == 3);
    CHECK(report->deleted[static_cast<std::size_t>(ObjectClass::headCopy)].objects == 3);
    VerifyOptions deep;
    deep.deep = true;
    OperationBudget verifyBudget;
    CHECK(w.run(verifyHeadGraph(*w.inner, *moved, db.journal.get(), w.limits, verifyBudget, deep))
              .ok());
    for (const Head& h : heads) {
      auto copy = w.run(w.inner->head(keys::headCopy(w.ns, h.id())));
      REQUIRE(!copy);
      CHECK(copy.error().status == StoreStatus::missing);
    }
  }
}

}  // namespace

TEST_CASE("vacuum: young objects stay, and a head that moves restarts it (directory)",
          "[publisher][vacuum]") {
  vacuumWhileTheHeadMoves(std::nullopt);
}

TEST_CASE("vacuum: young objects stay, and a head that moves restarts it (RGW)",
          "[publisher][vacuum][s3]") {
  auto url = test::rgwUrlText();
  if (!url) return;
  vacuumWhileTheHeadMoves(url);
}

// Found by docs/model/reclamation.pml (defect D1): an object's age is judged at the listing's
// start. Whatever relies on an object younger than the grace period is recorded (a head copy)
// within the grace period of its write, so a listing that starts after that sees the record;
// judged by a clock read after the walk, an object young when listed looked old, and its head
// copy, written after the listing, was in no one's view.
TEST_CASE("vacuum: an object young when listed stays, however long the walk takes", "[vacuum]") {
  World w(std::nullopt);
  Db db = w.create("db");
  std::vector<Head> heads;
  for (int i = 0; i < 2; ++i) {
    w.append(db, 100, "round " + std::to_string(i));
    auto r = w.checkpoint(db);
    REQUIRE(r.ok());
    heads.push_back(r->head);
  }
  // Revision 1's head copy and manifest are unreachable with one revision kept; both were
  // written 30 s before the listing, and the grace period is 50 s.
  std::int64_t clock = unixSecondsNow();
  const std::string copyKey = keys::headCopy(w.ns, heads[0].id());
  const std::string manifestKey = keys::manifest(w.ns, heads[0].fields().manifestSha256);
  for (const auto& key : {copyKey, manifestKey}) {
    const struct timespec times[2] = {{clock - 30, 0}, {clock - 30, 0}};
    REQUIRE(::utimensat(AT_FDCWD, test::objectFile(w, key).c_str(), times, 0) == 0);
  }
  VacuumOptions options;
  options.keepRevisions = 1;
  options.apply = true;
  options.graceSeconds = 50;
  options.publisherReuseMaxAge = std::chrono::seconds(25);
  options.now = [&] { return clock; };
  // The walk (its first GET, after the listing) takes 40 s.
  bool listed = false;
  bool walked = false;
  InterceptStore slowWalk(*w.inner,
                          [&](StoreOp op, const std::string&, ByteView,
                              const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
                            if (op == StoreOp::list) listed = true;
                            if (op == StoreOp::get && listed && !walked) {
                              walked = true;
                              clock += 40;
                            }
                            co_return std::nullopt;
                          });
  OperationBudget budget;
  auto report = w.run(vacuumNamespace(slowWalk, w.ns, options, w.limits, budget));
  REQUIRE(report.ok());
  REQUIRE(walked);
  CHECK(report->deleted[static_cast<std::size_t>(ObjectClass::manifest)].objects == 0);
  CHECK(report->deleted[static_cast<std::size_t>(ObjectClass::headCopy)].objects == 0);
  CHECK(report->kept[static_cast<std::size_t>(ObjectClass::manifest)].objects == 1);
  CHECK(report->kept[static_cast<std::size_t>(ObjectClass::headCopy)].objects == 1);
  CHECK(w.run(w.inner->head(copyKey)).ok());
  CHECK(w.run(w.inner->head(manifestKey)).ok());
  // A second run, once the clock says they are old when listed, reclaims them.
  auto later = w.run(vacuumNamespace(*w.inner, w.ns, options, w.limits, budget));
  REQUIRE(later.ok());
  CHECK(later->deleted[static_cast<std::size_t>(ObjectClass::manifest)].objects == 1);
  CHECK(later->deleted[static_cast<std::size_t>(ObjectClass::headCopy)].objects == 1);
}

namespace {

// Three checkpoints, everything old by the clock (100 s ahead, grace 50 s): with one revision
// kept, the two older revisions' manifests and head copies are due.
struct OldHistory {
  World w{std::nullopt};
  Db db = w.create("db");
  VacuumOptions options;
  OldHistory() {
    for (int i = 0; i < 3; ++i) {
      w.append(db, 100, "round " + std::to_string(i));
      REQUIRE(w.checkpoint(db).ok());
    }
    options.keepRevisions = 1;
    options.apply = true;
    options.now = [] { return unixSecondsNow() + 100; };
    options.graceSeconds = 50;
    options.publisherReuseMaxAge = std::chrono::seconds(25);
  }
  Res<VacuumReport> vacuum(ObjectStore& through) {
    OperationBudget budget;
    return w.run(vacuumNamespace(through, w.ns, options, w.limits, budget));
  }
  std::uint64_t deleted(const VacuumReport& r, ObjectClass c) {
    return r.deleted[static_cast<std::size_t>(c)].objects;
  }
  bool leaseExists() { return w.run(w.inner->head(keys::vacuumLease(w.ns))).ok(); }
  void putLease(const VacuumLease& lease) {
    auto image = encodeVacuumLease(lease);
    REQUIRE(image.ok());
    REQUIRE(w.run(w.inner->putIfAbsent(keys::vacuumLease(w.ns), *image)).ok());
  }
};

}  // namespace

// Found by docs/model/reclamation.pml (defect D2): two vacuums deleting at once can delete an
// object a publisher has just written again, on the strength of a HEAD taken before the other
// vacuum's DELETE. So an applying vacuum holds a lease, and a second one refuses.
TEST_CASE("vacuum: a second vacuum refuses to delete while another holds the lease", "[vacuum]") {
  OldHistory h;
  std::optional<Res<VacuumReport>> second;
  std::optional<Res<VacuumReport>> dryRun;
  InterceptStore first(
      *h.w.inner,
      [&](StoreOp op, const std::string&, ByteView,
          const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
        if (op == StoreOp::head && !second) {
          // The first vacuum is about to delete: a second one starts.
          OperationBudget budget;
          second = co_await vacuumNamespace(*h.w.inner, h.w.ns, h.options, h.w.limits, budget);
          VacuumOptions look = h.options;
          look.apply = false;
          OperationBudget lookBudget;
          dryRun = co_await vacuumNamespace(*h.w.inner, h.w.ns, look, h.w.limits, lookBudget);
        }
        co_return std::nullopt;
      });
  auto report = h.vacuum(first);
  REQUIRE(second);
  REQUIRE_FALSE(second->ok());
  CHECK(second->error().code == Errc::busy);
  CHECK(second->error().key == keys::vacuumLease(h.w.ns));
  CHECK_THAT(second->error().message, Catch::Contains("one vacuum deletes at a time"));
  // A dry run deletes nothing and needs no lease; the lease is not among what it judges.
  REQUIRE(dryRun);
  REQUIRE(dryRun->ok());
  CHECK((*dryRun)->reclaimable[static_cast<std::size_t>(ObjectClass::manifest)].objects == 2);
  CHECK((*dryRun)->kept[static_cast<std::size_t>(ObjectClass::other)].objects == 0);
  // The first vacuum deleted everything due, and removed its lease.
  REQUIRE(report.ok());
  CHECK(h.deleted(*report, ObjectClass::manifest) == 2);
  CHECK(h.deleted(*report, ObjectClass::headCopy) == 2);
  CHECK(report->verified);
  CHECK(report->leaseReleased);
  CHECK_FALSE(h.leaseExists());
}

TEST_CASE("vacuum: an expired lease is taken over, a live or unreadable one is not", "[vacuum]") {
  OldHistory h;
  const std::int64_t now = h.options.now();
  VacuumLease theirs{h.w.ns, Uuid::random(), 0, 0};
  SECTION("expired longer ago than the clock skew: taken over") {
    theirs.writtenUnixSeconds = static_cast<std::uint64_t>(now - 200);
    theirs.expiresUnixSeconds = static_cast<std::uint64_t>(now - kVacuumLeaseSkewSeconds - 1);
    h.putLease(theirs);
    auto report = h.vacuum(*h.w.inner);
    REQUIRE(report.ok());
    CHECK(h.deleted(*report, ObjectClass::manifest) == 2);
    CHECK(report->leaseReleased);
    CHECK_FALSE(h.leaseExists());
  }
  SECTION("expired, but within the clock skew: busy, nothing deleted") {
    theirs.writtenUnixSeconds = static_cast<std::uint64_t>(now - 120);
    theirs.expiresUnixSeconds = static_cast<std::uint64_t>(now - kVacuumLeaseSkewSeconds + 5);
    h.putLease(theirs);
    auto report = h.vacuum(*h.w.inner);
    REQUIRE_FALSE(report.ok());
    CHECK(report.error().code == Errc::busy);
    CHECK_THAT(report.error().message, Catch::Contains(theirs.holder.text()));
    CHECK(h.w.run(h.w.inner->get(keys::vacuumLease(h.w.ns), 64))->bytes ==
          *encodeVacuumLease(theirs));
  }
  SECTION("an object there that is not a lease: refused, nothing deleted, left alone") {
    REQUIRE(h.w.run(h.w.inner->putIfAbsent(keys::vacuumLease(h.w.ns), Bytes(64, 0x5a))).ok());
    auto report = h.vacuum(*h.w.inner);
    REQUIRE_FALSE(report.ok());
    CHECK(report.error().code == Errc::format);
    CHECK(h.w.run(h.w.inner->get(keys::vacuumLease(h.w.ns), 64))->bytes == Bytes(64, 0x5a));
  }
  SECTION("another namespace's lease: refused") {
    theirs.ns = Uuid::random();
    theirs.writtenUnixSeconds = 1;
    theirs.expiresUnixSeconds = 2;
    h.putLease(theirs);
    auto report = h.vacuum(*h.w.inner);
    REQUIRE_FALSE(report.ok());
    CHECK(report.error().code == Errc::format);
  }
  // Whatever was refused, every manifest is still there.
  OperationBudget budget;
  VacuumOptions look = h.options;
  look.apply = false;
  auto after = h.w.run(vacuumNamespace(*h.w.inner, h.w.ns, look, h.w.limits, budget));
  REQUIRE(after.ok());
  CHECK(after->reachable[static_cast<std::size_t>(ObjectClass::manifest)].objects +
            after->reclaimable[static_cast<std::size_t>(ObjectClass::manifest)].objects ==
        (h.leaseExists() ? 3u : 1u));
}

TEST_CASE("vacuum: a vacuum whose lease was taken over stops before its next DELETE", "[vacuum]") {
  OldHistory h;
  bool takenOver = false;
  InterceptStore racing(*h.w.inner,
                        [&](StoreOp op, const std::string&, ByteView,
                            const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
                          if (op == StoreOp::list && !takenOver) {
                            // Another vacuum replaces the lease (this one was paused too long).
                            const std::string key = keys::vacuumLease(h.w.ns);
                            auto current = co_await h.w.inner->get(key, 64);
                            REQUIRE(current.ok());
                            VacuumLease other{h.w.ns, Uuid::random(), 1, 60};
                            auto put = co_await h.w.inner->putIfMatch(
                                key, *encodeVacuumLease(other), current->etag);
                            REQUIRE(put.ok());
                            takenOver = true;
                          }
                          co_return std::nullopt;
                        });
  auto report = h.vacuum(racing);
  REQUIRE(takenOver);
  REQUIRE_FALSE(report.ok());
  CHECK(report.error().code == Errc::conflict);
  CHECK_THAT(report.error().message, Catch::Contains("no longer this vacuum's lease"));
  // Nothing was deleted, and the other vacuum's lease was left alone.
  VacuumOptions look = h.options;
  look.apply = false;
  OperationBudget budget;
  auto after = h.w.run(vacuumNamespace(*h.w.inner, h.w.ns, look, h.w.limits, budget));
  REQUIRE(after.ok());
  CHECK(after->reclaimable[static_cast<std::size_t>(ObjectClass::manifest)].objects == 2);
  CHECK(h.leaseExists());
}

TEST_CASE("vacuum: a vacuum stopped by an unanswered DELETE leaves its lease to expire",
          "[vacuum]") {
  OldHistory h;
  const std::string lease = keys::vacuumLease(h.w.ns);
  InterceptStore unanswered(
      *h.w.inner,
      [&](StoreOp op, const std::string& key, ByteView,
          const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
        if (op == StoreOp::remove && key != lease) {
          co_return StoreOutcome{StoreStatus::uncertain, "no answer within the bound", 0};
        }
        co_return std::nullopt;
      });
  auto report = h.vacuum(unanswered);
  REQUIRE_FALSE(report.ok());
  CHECK(report.error().code == Errc::uncertain);
  // The DELETE may still land: no other vacuum may start before the lease expires.
  CHECK(h.leaseExists());
  auto second = h.vacuum(*h.w.inner);
  REQUIRE_FALSE(second.ok());
  CHECK(second.error().code == Errc::busy);
}
