// Graph verification on the directory store: checkpoints built by installCheckpoint, checked
// by verifyManifestGraph against their objects, an earlier prefix, the journal and the budget.
#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <string>
#include <utility>

#include "base/sha256.hpp"
#include "engine/format/head.hpp"
#include "engine/format/keys.hpp"
#include "engine/graph/checkpoint.hpp"
#include "engine/graph/verifier.hpp"
#include "engine/journal/journal.hpp"
#include "engine/store/directory_store.hpp"
#include "io/uring.hpp"
#include "tests/graph/graph_test_support.hpp"
#include "tests/io/io_test_support.hpp"

using namespace cairn;
using io::test::runToCompletion;
using test::CountingStore;
using Fixture = test::CheckpointFixture;

TEST_CASE("verification: a graph extends an earlier prefix of its journal, or is refused",
          "[checkpoint]") {
  Fixture f;
  auto earlier = f.runPrefix(1234);
  REQUIRE(earlier.ok());
  auto c = f.checkpoint();
  REQUIRE(c.ok());
  auto check = [&](std::uint64_t length, const Digest& sha) {
    OperationBudget budget;
    VerifyOptions opt;
    opt.deep = true;
    opt.extends = VerifyOptions::Prefix{length, sha};
    return runToCompletion(
        f.context, verifyManifestGraph(*f.store, f.ns, c->manifestSha256, c->manifestBytes.size(),
                                       nullptr, f.limits, budget, opt));
  };
  CHECK(check(earlier->length, earlier->sha256).ok());
  // The whole prefix, and the bare journal header, are prefixes too.
  CHECK(check(c->manifest.prefix.length, c->manifest.prefix.sha256).ok());
  auto none = f.runPrefix(0);
  REQUIRE(none.ok());
  CHECK(check(none->length, none->sha256).ok());
  // Another history: a different hash at the same length, or a length beyond the graph.
  Digest other = earlier->sha256;
  other[0] ^= 1;
  auto forked = check(earlier->length, other);
  REQUIRE(!forked.ok());
  CHECK(forked.error().code == Errc::diverged);
  auto beyond = check(c->manifest.prefix.length + 1, c->manifest.prefix.sha256);
  REQUIRE(!beyond.ok());
  CHECK(beyond.error().code == Errc::diverged);
}

TEST_CASE("checkpoint: every damaged object fails verification with the right error",
          "[checkpoint]") {
  Fixture f;
  auto c = f.checkpoint();
  REQUIRE(c.ok());
  const auto& segs = c->manifest.segments;
  std::string seg1 = keys::segment(f.ns, segs[1].objectSha256);
  std::string seg2 = keys::segment(f.ns, segs[2].objectSha256);
  std::string manifest = keys::manifest(f.ns, c->manifestSha256);
  Errc expected = Errc::corrupt;
  std::string expectedKey = seg1;
  std::string expectedWhy;  // a wrong hash is the error, before what the bytes show
  bool shallowCatches = false;

  SECTION("a deleted segment") {
    std::filesystem::remove(f.objectPath(seg1));
    expected = Errc::missing;
    shallowCatches = true;
  }
  SECTION("a truncated segment") {
    std::filesystem::resize_file(f.objectPath(seg1), segs[1].objectLength - 1);
    shallowCatches = true;
  }
  SECTION("a flipped byte in a segment body") {
    Bytes b = io::test::readWholeFile(f.objectPath(seg1));
    b[b.size() - 7] ^= 0x20;
    io::test::writeWholeFile(f.objectPath(seg1), b);
    expectedWhy = "SHA-256 does not match its key";
  }
  SECTION("a flipped byte in a segment header") {
    Bytes b = io::test::readWholeFile(f.objectPath(seg1));
    b[50] ^= 0x01;
    io::test::writeWholeFile(f.objectPath(seg1), b);
    expectedWhy = "SHA-256 does not match its key";
  }
  SECTION("two segments swapped") {
    Bytes one = io::test::readWholeFile(f.objectPath(seg1));
    Bytes two = io::test::readWholeFile(f.objectPath(seg2));
    io::test::writeWholeFile(f.objectPath(seg1), two);
    io::test::writeWholeFile(f.objectPath(seg2), one);
    shallowCatches = one.size() != two.size();
    if (!shallowCatches) expectedWhy = "SHA-256 does not match its key";
  }
  SECTION("a deleted manifest") {
    std::filesystem::remove(f.objectPath(manifest));
    expected = Errc::missing;
    expectedKey = manifest;
    shallowCatches = true;
  }
  SECTION("a flipped byte in the manifest") {
    Bytes b = io::test::readWholeFile(f.objectPath(manifest));
    b[40] ^= 0x01;
    io::test::writeWholeFile(f.objectPath(manifest), b);
    expectedKey = manifest;
    shallowCatches = true;
  }
  // The same with the object hashed by its fetch, as where two hashes cannot interleave.
  for (bool openSsl : {false, true}) {
    Sha256Lane::forceOpenSslBlocks(openSsl);
    auto deep = f.verify(*c, true, f.journal.get());
    Sha256Lane::forceOpenSslBlocks(false);
    REQUIRE_FALSE(deep.ok());
    CHECK(deep.error().code == expected);
    CHECK(deep.error().key == expectedKey);
    CHECK(deep.error().message.find(expectedWhy) != std::string::npos);
  }
  auto shallow = f.verify(*c, false, nullptr);
  CHECK(shallow.ok() == !shallowCatches);
}

TEST_CASE("checkpoint: a journal with another history fails only the journal comparison",
          "[checkpoint]") {
  Fixture a(300, u"db", "a");
  auto c = a.checkpoint(std::nullopt, 8 << 10);  // several segments
  REQUIRE(c.ok());
  // Same database id (same lineage), different first record: every pure check passes, the
  // graph itself is intact, only the comparison with the actual journal can tell.
  io::test::TempDir other;
  auto b =
      std::move(*runToCompletion(a.context, Journal::create(a.uring, other.path() / "db", u"db")));
  std::swap(a.journal, b);
  a.appendRecords(1, "b");  // "b0": a different first record, of the same length as "a0"
  a.appendRecords(299, "a", 1);
  std::swap(a.journal, b);
  REQUIRE(b->lineage() == a.journal->lineage());
  REQUIRE(b->offsetAfter(300) == a.journal->offsetAfter(300));
  CHECK(a.verify(*c, true, nullptr).ok());
  auto diverged = a.verify(*c, true, b.get());
  REQUIRE_FALSE(diverged.ok());
  CHECK(diverged.error().code == Errc::diverged);
  CHECK(diverged.error().key == keys::segment(a.ns, c->manifest.segments.front().objectSha256));
  // One record different in the middle, or only the last: found in the segment holding it.
  REQUIRE(c->manifest.segments.size() >= 3);
  for (int differing : {150, 299}) {
    io::test::TempDir dir;
    auto j =
        std::move(*runToCompletion(a.context, Journal::create(a.uring, dir.path() / "db", u"db")));
    std::swap(a.journal, j);
    a.appendRecords(differing, "a");
    a.appendRecords(1, "b", differing);  // same length as the record it replaces
    a.appendRecords(299 - differing, "a", differing + 1);
    std::swap(a.journal, j);
    REQUIRE(j->offsetAfter(300) == a.journal->offsetAfter(300));
    auto late = a.verify(*c, true, j.get());
    REQUIRE_FALSE(late.ok());
    CHECK(late.error().code == Errc::diverged);
    const std::uint64_t offset = j->offsetAfter(static_cast<std::uint64_t>(differing));
    std::string key;
    for (const auto& seg : c->manifest.segments) {
      if (seg.journalStart <= offset && offset < seg.journalEnd) {
        key = keys::segment(a.ns, seg.objectSha256);
      }
    }
    CHECK(late.error().key == key);
  }
  // A journal shorter than the checkpoint is also a divergence.
  io::test::TempDir third;
  auto shorter =
      std::move(*runToCompletion(a.context, Journal::create(a.uring, third.path() / "db", u"db")));
  auto tooShort = a.verify(*c, true, shorter.get());
  REQUIRE_FALSE(tooShort.ok());
  CHECK(tooShort.error().code == Errc::diverged);
}

TEST_CASE("verification: an unscanned journal is compared, never scanned or written",
          "[checkpoint]") {
  Fixture f(4000);
  auto c = f.checkpoint(std::nullopt, 16 << 10);
  REQUIRE(c.ok());
  REQUIRE(c->manifest.segments.size() >= 8);
  CountingStore counting(*f.store);
  const auto dir = f.dir.path() / "db";
  const auto file = dir / Journal::kFileName;
  const Bytes intact = io::test::readWholeFile(file);
  // The journal's file set to `bytes` and reopened in its first half only (lock and header).
  auto reopen = [&](const Bytes& bytes) {
    f.journal.reset();
    io::test::writeWholeFile(file, bytes);
    auto u = runToCompletion(f.context, Journal::openUnscanned(f.uring, dir));
    REQUIRE(u.ok());
    f.journal = std::move(*u);
  };

  reopen(intact);
  auto ok = f.verify(*c, true, f.journal.get(), &counting);
  REQUIRE(ok.ok());
  CHECK(ok->objects == 1 + c->manifest.segments.size());
  CHECK_FALSE(f.journal->scanned());
  CHECK(f.limits.bytes.inUse() == 0);
  Sha256Lane::forceOpenSslBlocks(true);  // each object hashed by its fetch
  auto notInterleaved = f.verify(*c, true, f.journal.get());
  Sha256Lane::forceOpenSslBlocks(false);
  CHECK(notInterleaved.ok());
  CHECK(f.verify(*c, false, f.journal.get()).ok());  // shallow: compares nothing

  // What follows the cutoff, even a torn tail, is not the verification's: nothing is cut.
  Bytes torn = intact;
  torn.push_back(0);
  torn.push_back(0);
  reopen(torn);
  CHECK(f.verify(*c, true, f.journal.get()).ok());
  CHECK(io::test::readWholeFile(file) == torn);

  // A byte flipped inside the first segment's range: the comparison finds it, and the
  // journal is left as it is.
  Bytes damaged = intact;
  damaged[c->manifest.segments.front().journalStart + 100] ^= 0x01;
  reopen(damaged);
  auto wrong = f.verify(*c, true, f.journal.get());
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.error().code == Errc::diverged);
  CHECK(wrong.error().key == keys::segment(f.ns, c->manifest.segments.front().objectSha256));
  CHECK_THAT(wrong.error().message, Catch::Contains("damage"));
  CHECK(io::test::readWholeFile(file) == damaged);
  CHECK(f.limits.bytes.inUse() == 0);

  // A journal shorter than the checkpoint's prefix: refused before any segment request.
  // (The file is longer than its frames: the writer's room of zeros follows them.)
  REQUIRE(intact.size() >= c->manifest.prefix.length);
  reopen(Bytes(intact.begin(),
               intact.begin() + static_cast<std::ptrdiff_t>(c->manifest.prefix.length) - 10));
  counting.requests = 0;
  auto tooShort = f.verify(*c, true, f.journal.get(), &counting);
  REQUIRE_FALSE(tooShort.ok());
  CHECK(tooShort.error().code == Errc::diverged);
  CHECK(tooShort.error().key == keys::manifest(f.ns, c->manifestSha256));
  CHECK(counting.requests == 1);  // the manifest only

  // A journal of another lineage: refused before any segment request.
  Fixture another(0, u"another");
  counting.requests = 0;
  auto foreign = f.verify(*c, true, another.journal.get(), &counting);
  REQUIRE_FALSE(foreign.ok());
  CHECK(foreign.error().code == Errc::diverged);
  CHECK(counting.requests == 1);

  // A graph without segments compares no bytes; the journal's header is still its prefix.
  Fixture empty(0);
  auto none = empty.checkpoint();
  REQUIRE(none.ok());
  REQUIRE(none->manifest.segments.empty());
  empty.journal.reset();
  auto unscanned =
      runToCompletion(empty.context, Journal::openUnscanned(empty.uring, empty.dir.path() / "db"));
  REQUIRE(unscanned.ok());
  CHECK(empty.verify(*none, true, unscanned->get()).ok());
  auto emptyForeign = empty.verify(*none, true, another.journal.get());
  REQUIRE_FALSE(emptyForeign.ok());
  CHECK(emptyForeign.error().code == Errc::diverged);
}

TEST_CASE("checkpoint: a budget smaller than the graph fails before the request is sent",
          "[checkpoint]") {
  Fixture f;
  auto c = f.checkpoint();
  REQUIRE(c.ok());
  CountingStore counting(*f.store);
  BudgetTotals small = kDefaultOperationBudget;
  small.bytes = c->manifestBytes.size() + c->manifest.segments[0].objectLength;
  auto r = f.verify(*c, true, f.journal.get(), &counting, small);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::budget);
  CHECK(counting.requests == 1);  // the manifest only

  BudgetTotals fewRequests = kDefaultOperationBudget;
  fewRequests.requests = 2;
  counting.requests = 0;
  auto r2 = f.verify(*c, false, nullptr, &counting, fewRequests);
  REQUIRE_FALSE(r2.ok());
  CHECK(r2.error().code == Errc::budget);
  CHECK(counting.requests == 1);

  // A checkpoint whose budget is too small installs nothing beyond what it reserved.
  OperationBudget tiny(BudgetTotals{1000, 1'000'000, 1'000'000});
  CheckpointOptions opt;
  auto installed =
      runToCompletion(f.context, installCheckpoint(*f.journal, counting, f.ns, std::nullopt,
                                                   f.journal->endSequence(), f.limits, tiny, opt));
  REQUIRE_FALSE(installed.ok());
  CHECK(installed.error().code == Errc::budget);
}

TEST_CASE("verification: a head is bound to its manifest before any segment is requested",
          "[checkpoint][verify]") {
  Fixture f(2000);
  auto c = f.checkpoint();
  REQUIRE(c.ok());
  REQUIRE(c->manifest.segments.size() >= 2);
  HeadFields fields;
  fields.ns = f.ns;
  fields.publisher = Uuid::random();
  fields.publication = Uuid::random();
  fields.lineage = c->manifest.lineage;
  fields.revision = 1;
  fields.manifestSha256 = c->manifestSha256;
  fields.manifestLength = static_cast<std::uint32_t>(c->manifestBytes.size());
  fields.prefixSequence = c->manifest.prefix.sequence;
  fields.prefixLength = c->manifest.prefix.length;
  fields.prefixSha256 = c->manifest.prefix.sha256;

  auto verifyHead = [&](const Head& head, ObjectStore& through) {
    OperationBudget budget;
    VerifyOptions deep;
    deep.deep = true;
    return runToCompletion(f.context,
                           verifyHeadGraph(through, head, nullptr, f.limits, budget, deep));
  };
  SECTION("the head that names the manifest verifies") {
    auto head = makeHead(fields);
    REQUIRE(head.ok());
    CountingStore counting(*f.store);
    auto graph = verifyHead(*head, counting);
    REQUIRE(graph.ok());
    CHECK(counting.requests == static_cast<int>(1 + c->manifest.segments.size()));
  }
  SECTION("a head whose prefix is not the manifest's is refused after one request") {
    fields.prefixSequence -= 1;
    auto head = makeHead(fields);
    REQUIRE(head.ok());
    CountingStore counting(*f.store);
    auto graph = verifyHead(*head, counting);
    REQUIRE_FALSE(graph.ok());
    CHECK(graph.error().code == Errc::manifest);
    CHECK(graph.error().key == keys::manifest(f.ns, c->manifestSha256));
    CHECK_THAT(graph.error().message, Catch::Contains("prefix differs"));
    CHECK(counting.requests == 1);
  }
  SECTION("a head of another lineage is refused after one request") {
    fields.lineage[0] ^= 1;
    auto head = makeHead(fields);
    REQUIRE(head.ok());
    CountingStore counting(*f.store);
    auto graph = verifyHead(*head, counting);
    REQUIRE_FALSE(graph.ok());
    CHECK(graph.error().code == Errc::manifest);
    CHECK(counting.requests == 1);
  }
}
