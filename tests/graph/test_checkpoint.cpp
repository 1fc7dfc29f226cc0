// Checkpoint building on the directory store (verification: tests/graph/test_verifier.cpp).
#include <catch2/catch.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "base/sha256.hpp"
#include "engine/format/keys.hpp"
#include "engine/format/segment.hpp"
#include "engine/graph/checkpoint.hpp"
#include "engine/graph/verifier.hpp"
#include "engine/journal/journal.hpp"
#include "engine/store/directory_store.hpp"
#include "engine/store/intercept_store.hpp"
#include "io/uring.hpp"
#include "tests/graph/graph_test_support.hpp"
#include "tests/io/io_test_support.hpp"

using namespace cairn;
namespace asio = boost::asio;
using io::test::runToCompletion;
using Fixture = test::CheckpointFixture;

TEST_CASE("checkpoint: segments tile the range and close at the target", "[checkpoint]") {
  std::vector<std::uint64_t> ends{24};
  for (int i = 0; i < 100; ++i) ends.push_back(ends.back() + 100);
  auto segs = planSegments(ends, 0, 100, 1000);
  REQUIRE(segs.size() == 10);
  std::uint64_t next = 1;
  for (const auto& s : segs) {
    CHECK(s.firstSequence == next);
    CHECK(s.journalEnd - s.journalStart == 1000);
    CHECK(s.objectLength == 76 + 1000);
    next += s.count;
  }
  auto tail = planSegments(ends, 95, 100, 1000);
  REQUIRE(tail.size() == 1);
  CHECK(tail[0].firstSequence == 96);
  CHECK(tail[0].count == 5);
  CHECK(planSegments(ends, 100, 100, 1000).empty());
}

TEST_CASE("checkpoint: a checkpoint of many records verifies, shallow and deep", "[checkpoint]") {
  Fixture f;
  auto c = f.checkpoint();
  REQUIRE(c.ok());
  CHECK(c->manifest.segments.size() > 5);
  CHECK(c->segmentsWritten == c->manifest.segments.size());
  CHECK(c->manifestWritten);
  CHECK_FALSE(c->manifestReused);
  std::uint64_t objectBytes = c->manifestBytes.size();
  for (const auto& s : c->manifest.segments) objectBytes += s.objectLength;
  CHECK(c->bytesUploaded == objectBytes);
  CHECK(c->manifest.prefix.sequence == 4000);
  auto shallow = f.verify(*c, false, nullptr);
  REQUIRE(shallow.ok());
  auto deep = f.verify(*c, true, f.journal.get());
  REQUIRE(deep.ok());
  CHECK(deep->objects == 1 + c->manifest.segments.size());

  // Installing the same checkpoint again reuses every object (read back and compared).
  auto again = f.checkpoint();
  REQUIRE(again.ok());
  CHECK(again->segmentsWritten == 0);
  CHECK(again->segmentsReused == c->manifest.segments.size());
  CHECK(again->manifestSha256 == c->manifestSha256);
  CHECK_FALSE(again->manifestWritten);
  CHECK(again->manifestReused);
  CHECK(again->bytesUploaded == 0);

  // An incremental checkpoint keeps the previous segments and adds new ones.
  f.appendRecords(500, "more");
  auto next = f.checkpoint(c->manifest);
  REQUIRE(next.ok());
  CHECK(next->manifest.generation == 2);
  CHECK(std::equal(c->manifest.segments.begin(), c->manifest.segments.end(),
                   next->manifest.segments.begin()));
  CHECK(next->segmentsWritten == next->manifest.segments.size() - c->manifest.segments.size());
  CHECK(f.verify(*next, true, f.journal.get()).ok());
  // The older checkpoint still verifies against the longer journal (its prefix is unchanged).
  CHECK(f.verify(*c, true, f.journal.get()).ok());
}

TEST_CASE("checkpoint: an existing object older than the reuse age is rewritten, not trusted",
          "[checkpoint][vacuum]") {
  Fixture f;
  auto c = f.checkpoint();
  REQUIRE(c.ok());
  std::vector<std::string> keys{keys::manifest(f.ns, c->manifestSha256)};
  for (const auto& s : c->manifest.segments) keys.push_back(keys::segment(f.ns, s.objectSha256));
  // Two hours old: past any vacuum grace a reuse age of ten minutes allows.
  auto old = std::filesystem::file_time_type::clock::now() - std::chrono::hours(2);
  for (const auto& k : keys) std::filesystem::last_write_time(f.objectPath(k), old);
  CheckpointOptions opt;
  opt.rewriteSettle = std::chrono::milliseconds(10);

  SECTION("rewritten: same bytes, fresh modification time") {
    auto again = f.checkpoint(std::nullopt, 64 << 10, opt);
    REQUIRE(again.ok());
    CHECK(again->segmentsReused == 0);
    CHECK(again->objectsRewritten == keys.size());
    CHECK(again->manifestSha256 == c->manifestSha256);
    // The manifest too was uploaded again: neither written afresh nor reused.
    CHECK_FALSE(again->manifestWritten);
    CHECK_FALSE(again->manifestReused);
    CHECK(again->bytesUploaded == c->bytesUploaded);
    for (const auto& k : keys) {
      CHECK(std::filesystem::last_write_time(f.objectPath(k)) >
            std::filesystem::file_time_type::clock::now() - std::chrono::minutes(1));
    }
    CHECK(f.verify(*again, true, f.journal.get()).ok());
  }
  SECTION("young enough: reused as they are") {
    auto recent = std::filesystem::file_time_type::clock::now() - std::chrono::minutes(20);
    for (const auto& k : keys) std::filesystem::last_write_time(f.objectPath(k), recent);
    opt.reuseMaxAge = kMaxReuseMaxAge;  // 30 minutes
    auto again = f.checkpoint(std::nullopt, 64 << 10, opt);
    REQUIRE(again.ok());
    CHECK(again->segmentsReused == c->manifest.segments.size());
    CHECK(again->manifestReused);
    CHECK(again->objectsRewritten == 0);
    CHECK(again->bytesUploaded == 0);
  }
  SECTION("a reuse age above the bound vacuum relies on is refused") {
    opt.reuseMaxAge = kMaxReuseMaxAge + std::chrono::seconds(1);
    auto again = f.checkpoint(std::nullopt, 64 << 10, opt);
    REQUIRE_FALSE(again.ok());
    CHECK(again.error().code == Errc::usage);
  }
  SECTION("deleted right after its rewrite (a vacuum's late DELETE): the checkpoint fails") {
    // A vacuum HEADed the old object just before the rewrite and deletes it just after; the
    // publisher's confirmation after the settle time finds it gone.
    std::string victim = keys.back();
    InterceptStore racing(
        *f.store,
        [&](StoreOp op, const std::string& key, ByteView,
            const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
          if (op == StoreOp::head && key == victim &&
              std::filesystem::last_write_time(f.objectPath(key)) > old + std::chrono::hours(1)) {
            std::filesystem::remove(f.objectPath(key));
          }
          co_return std::nullopt;
        });
    auto again = f.checkpoint(std::nullopt, 64 << 10, opt, &racing);
    REQUIRE(!again.ok());
    CHECK(again.error().code == Errc::store);
    CHECK(again.error().message.find("deleted right after this checkpoint rewrote it") !=
          std::string::npos);
    // The next attempt creates it again.
    auto retry = f.checkpoint(std::nullopt, 64 << 10, opt);
    REQUIRE(retry.ok());
    CHECK(f.verify(*retry, true, f.journal.get()).ok());
  }
}

TEST_CASE("checkpoint: compaction keeps the cutoff in fewer segments", "[checkpoint]") {
  Fixture f;
  auto c = f.checkpoint(std::nullopt, 16 << 10);
  REQUIRE(c.ok());
  f.appendRecords(300, "later");  // beyond the cutoff: not part of the compaction
  CheckpointOptions opt;
  opt.compact = true;
  auto compacted = f.checkpoint(c->manifest, 1 << 20, opt);
  REQUIRE(compacted.ok());
  CHECK(compacted->manifest.prefix.sequence == c->manifest.prefix.sequence);
  CHECK(compacted->manifest.prefix.length == c->manifest.prefix.length);
  CHECK(compacted->manifest.prefix.sha256 == c->manifest.prefix.sha256);
  CHECK(compacted->manifest.generation == 2);
  CHECK(compacted->manifest.segments.size() < c->manifest.segments.size());
  CHECK(f.verify(*compacted, true, f.journal.get()).ok());
  // Compaction needs a previous checkpoint and its exact cutoff.
  CHECK(f.checkpoint(std::nullopt, 1 << 20, opt).error().code == Errc::usage);
}

// The prefix a checkpoint declares, against the SHA-256 of the journal file's first bytes
// (read here, leaving the journal's own hash state alone).
void requireFilePrefix(Fixture& f, const Manifest& m) {
  Bytes file = io::test::readWholeFile(f.dir.path() / "db" / "journal");
  REQUIRE(file.size() >= m.prefix.length);
  CHECK(m.prefix.length == f.journal->offsetAfter(m.prefix.sequence));
  CHECK(m.prefix.sha256 == sha256(ByteView(file).first(m.prefix.length)));
}

TEST_CASE("checkpoint: the prefix hash is the journal's, extended over the segments or read apart",
          "[checkpoint]") {
  if (!Sha256Lane::interleaves()) {
    WARN(
        "no SHA extensions: every checkpoint reads the prefix apart; the two-lane path is "
        "not exercised here (CI's machines have them)");
  }
  const bool lanes = Sha256Lane::interleaves();
  Fixture f;
  // Where the journal knows a prefix's hash state without reading: the header, and the
  // longest prefix hashed so far.
  auto atZero = f.journal->knownPrefix(0);
  REQUIRE(atZero.has_value());
  CHECK(atZero->finish() == f.runPrefix(0)->sha256);
  CHECK_FALSE(f.journal->knownPrefix(10).has_value());
  auto at10 = f.runPrefix(10);
  REQUIRE(at10.ok());
  REQUIRE(f.journal->knownPrefix(10).has_value());
  CHECK(f.journal->knownPrefix(10)->finish() == at10->sha256);
  CHECK_FALSE(f.journal->knownPrefix(9).has_value());
  f.journal->forgetPrefixProgress();

  // A first checkpoint extends the header's state over its segments' bodies.
  auto first = f.checkpoint();
  REQUIRE(first.ok());
  CHECK(first->prefixWithSegments == lanes);
  REQUIRE(f.journal->knownPrefix(4000).has_value());  // the state it ended with
  CHECK(f.journal->knownPrefix(4000)->finish() == first->manifest.prefix.sha256);
  requireFilePrefix(f, first->manifest);
  // The same cutoff again: no new segment, the prefix from the state the first one left.
  auto same = f.checkpoint(first->manifest);
  REQUIRE(same.ok());
  CHECK_FALSE(same->prefixWithSegments);
  CHECK(same->manifest.prefix == first->manifest.prefix);
  CHECK(same->manifest.segments == first->manifest.segments);
  // The next one in this process extends the state the first one left.
  f.appendRecords(700, "second");
  auto second = f.checkpoint(first->manifest);
  REQUIRE(second.ok());
  CHECK(second->prefixWithSegments == lanes);
  requireFilePrefix(f, second->manifest);
  CHECK(f.verify(*second, true, f.journal.get()).ok());

  // Reopened, the journal knows no state at the cutoff: the prefix is read and hashed apart.
  f.journal.reset();
  f.journal = std::move(*runToCompletion(f.context, Journal::open(f.uring, f.dir.path() / "db")));
  CHECK_FALSE(f.journal->knownPrefix(second->manifest.prefix.sequence).has_value());
  f.appendRecords(300, "third");
  auto third = f.checkpoint(second->manifest);
  REQUIRE(third.ok());
  CHECK_FALSE(third->prefixWithSegments);
  requireFilePrefix(f, third->manifest);
  CHECK(f.verify(*third, true, f.journal.get()).ok());

  // Where two hashes cannot interleave, apart too (each segment hashed in parallel), though
  // the state at the cutoff is known.
  f.appendRecords(300, "fourth");
  REQUIRE(f.journal->knownPrefix(third->manifest.prefix.sequence).has_value());
  Sha256Lane::forceOpenSslBlocks(true);
  auto fourth = f.checkpoint(third->manifest);
  Sha256Lane::forceOpenSslBlocks(false);
  REQUIRE(fourth.ok());
  CHECK_FALSE(fourth->prefixWithSegments);
  requireFilePrefix(f, fourth->manifest);

  // A compaction starts again from the header, with the same prefix.
  CheckpointOptions opt;
  opt.compact = true;
  auto compacted = f.checkpoint(fourth->manifest, 1 << 20, opt);
  REQUIRE(compacted.ok());
  CHECK(compacted->prefixWithSegments == lanes);
  CHECK(compacted->manifest.prefix.sha256 == fourth->manifest.prefix.sha256);
  CHECK(f.verify(*compacted, true, f.journal.get()).ok());
}

TEST_CASE("checkpoint: a journal without records checkpoints its header", "[checkpoint]") {
  Fixture f(0);
  auto c = f.checkpoint();
  REQUIRE(c.ok());
  CHECK(c->manifest.segments.empty());
  CHECK(c->manifest.prefix.sequence == 0);
  requireFilePrefix(f, c->manifest);
  CHECK(f.verify(*c, true, f.journal.get()).ok());
}

TEST_CASE("checkpoint: a journal page damaged after the open never becomes a segment",
          "[checkpoint]") {
  for (bool openSsl : {false, true}) {
    Fixture f;
    {
      // One payload byte of record 3000, changed in the file behind the open journal.
      std::fstream file(f.dir.path() / "db" / "journal",
                        std::ios::in | std::ios::out | std::ios::binary);
      file.seekp(static_cast<std::streamoff>(f.journal->offsetAfter(3000) - 8));
      file.put('!');
    }
    Sha256Lane::forceOpenSslBlocks(openSsl);
    auto c = f.checkpoint();
    Sha256Lane::forceOpenSslBlocks(false);
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().code == Errc::format);
    CHECK(c.error().message.find("does not form valid frames") != std::string::npos);
    // No manifest was written, and every segment that was holds valid frames only.
    int manifests = 0, segments = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(f.dir.path() / "store")) {
      const std::string name = e.path().filename().string();
      if (!e.is_regular_file()) continue;
      manifests += name.find("-manifest-") != std::string::npos;
      if (name.find("-segment-") == std::string::npos) continue;
      ++segments;
      std::ifstream in(e.path(), std::ios::binary);
      Bytes bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      CHECK(decodeSegment(bytes).ok());
    }
    CHECK(manifests == 0);
    CHECK(segments > 0);  // those before the damage (their uploads were under way)
    CHECK(f.limits.bytes.inUse() == 0);
  }
}

TEST_CASE("checkpoint: in-flight bytes stay within the engine limit", "[checkpoint]") {
  Fixture f(6000);
  f.limits.bytes = InFlightLimit(200 << 10);
  auto c = f.checkpoint(std::nullopt, 32 << 10);
  REQUIRE(c.ok());
  CHECK(f.limits.bytes.peakInUse() <= 200 << 10);
  CHECK(f.limits.bytes.inUse() == 0);
  auto v = f.verify(*c, true, f.journal.get());
  REQUIRE(v.ok());
  CHECK(f.limits.bytes.peakInUse() <= 200 << 10);
  CHECK(f.limits.bytes.inUse() == 0);
}

TEST_CASE("transfersAtOnce: half of the items the held bytes fit, rounded up, at least one",
          "[checkpoint]") {
  CHECK(transfersAtOnce(256 << 20, (32 << 20) + 64) == 4);  // 7 fit
  CHECK(transfersAtOnce(256 << 20, 32 << 20) == 4);         // 8 fit
  CHECK(transfersAtOnce(256 << 20, 64 << 20) == 2);
  CHECK(transfersAtOnce(256 << 20, (64 << 20) + 64) == 2);  // 3 fit
  CHECK(transfersAtOnce(256 << 20, 8 << 20) == 16);
  CHECK(transfersAtOnce(32 << 20, 32 << 20) == 1);
  CHECK(transfersAtOnce(1 << 20, 32 << 20) == 1);  // none fits: one still runs
}

TEST_CASE(
    "checkpoint: uploads use half the byte limit and hold one segment more, read meanwhile, "
    "verification downloads likewise",
    "[checkpoint]") {
  Fixture f(6000);
  const std::uint64_t held = 256 << 10;
  f.limits.bytes = InFlightLimit(held);
  // Every PUT and GET is held for 20 ms; how many are in flight at once is counted.
  int puts = 0, peakPuts = 0, gets = 0, peakGets = 0, heads = 0, peakHeads = 0;
  auto counter = [&](StoreOp op) -> std::pair<int*, int*> {
    if (op == StoreOp::putIfAbsent) return {&puts, &peakPuts};
    if (op == StoreOp::get) return {&gets, &peakGets};
    if (op == StoreOp::head) return {&heads, &peakHeads};
    return {nullptr, nullptr};
  };
  InterceptStore paced(
      *f.store,
      [&](StoreOp op, const std::string&, ByteView,
          const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
        auto [now, peak] = counter(op);
        if (now == nullptr) co_return std::nullopt;
        *peak = std::max(*peak, ++*now);
        asio::steady_timer hold(co_await asio::this_coro::executor, std::chrono::milliseconds(20));
        co_await hold.async_wait(asio::use_awaitable);
        co_return std::nullopt;
      },
      [&](StoreOp op, const std::string&, StoreStatus) -> std::optional<StoreOutcome> {
        if (auto [now, peak] = counter(op); now != nullptr) --*now;
        return std::nullopt;
      });
  auto c = f.checkpoint(std::nullopt, 32 << 10, {}, &paced);
  REQUIRE(c.ok());
  REQUIRE(c->manifest.segments.size() >= 20);
  std::uint64_t largest = 0;
  for (const auto& s : c->manifest.segments) largest = std::max(largest, s.objectLength);
  const std::uint64_t at = transfersAtOnce(held, largest);
  REQUIRE(at == 4);  // 7 segments of 32 KiB and a few frames fit
  CHECK(peakPuts == static_cast<int>(at));
  // The next segment was read and hashed meanwhile; no more were (7 fit in the limit).
  CHECK(segmentsHeld(at) == 5);
  CHECK(f.limits.bytes.peakInUse() > at * largest);
  CHECK(f.limits.bytes.peakInUse() <= segmentsHeld(at) * largest);

  f.limits.bytes = InFlightLimit(held);
  auto v = f.verify(*c, true, f.journal.get(), &paced);
  REQUIRE(v.ok());
  CHECK(peakGets == static_cast<int>(at));
  CHECK(f.limits.bytes.peakInUse() > at * largest);
  CHECK(f.limits.bytes.peakInUse() <= segmentsHeld(at) * largest);

  // A shallow verification holds no bodies: its HEADs are bounded by the request limit only.
  peakHeads = 0;
  auto shallow = f.verify(*c, false, nullptr, &paced);
  REQUIRE(shallow.ok());
  CHECK(peakHeads > static_cast<int>(segmentsHeld(at)));
  CHECK(peakHeads <= static_cast<int>(f.limits.requests.capacity()));
}

// Issue 22, defect 2: an upload that failed without suspending left its permits to be
// released after installCheckpoint had returned (by co_spawn's frame, once the caller could
// have freed the limits): heap corruption in `cairn checkpoint` when the directory store
// could not create its temp file. Each case fails one request at once, without suspending,
// and looks at the limits as soon as the call returns, before the loop runs anything else.
TEST_CASE("checkpoint: a failed upload returns only after every task released what it holds",
          "[checkpoint]") {
  for (int segments : {1, 8}) {
    INFO("segments " << segments);
    Fixture f(2000);
    const std::uint64_t target = f.journal->endOffset() / segments + 1;
    int uploads = 0;
    InterceptStore failing(*f.store,
                           [&](StoreOp op, const std::string&, ByteView,
                               const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
                             if (op == StoreOp::putIfAbsent && ++uploads == segments) {
                               co_return StoreOutcome{StoreStatus::failure,
                                                      "create temp file: Operation not permitted"};
                             }
                             co_return std::nullopt;
                           });
    std::uint64_t bytesHeld = 99, requestsHeld = 99;
    auto attempt = [&]() -> asio::awaitable<Res<InstalledCheckpoint>> {
      OperationBudget budget;
      CheckpointOptions opt;
      opt.segmentTargetBytes = target;
      auto r = co_await installCheckpoint(*f.journal, failing, f.ns, std::nullopt,
                                          f.journal->endSequence(), f.limits, budget, opt);
      bytesHeld = f.limits.bytes.inUse();
      requestsHeld = f.limits.requests.inUse();
      co_return r;
    };
    auto c = runToCompletion(f.context, attempt());
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().message.find("Operation not permitted") != std::string::npos);
    // Nothing of the checkpoint held a permit once it had returned.
    CHECK(bytesHeld == 0);
    CHECK(requestsHeld == 0);

    // The same for a verification whose fetch of its last segment fails.
    auto good = f.checkpoint(std::nullopt, target);
    REQUIRE(good.ok());
    REQUIRE(good->manifest.segments.size() >= static_cast<std::size_t>(segments));
    int gets = 0;
    const int lastGet = 1 + static_cast<int>(good->manifest.segments.size());  // + the manifest
    InterceptStore failingGet(
        *f.store,
        [&](StoreOp op, const std::string&, ByteView,
            const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
          if (op == StoreOp::get && ++gets == lastGet) {
            co_return StoreOutcome{StoreStatus::failure, "read: Input/output error"};
          }
          co_return std::nullopt;
        });
    bytesHeld = requestsHeld = 99;
    auto verify = [&]() -> asio::awaitable<Res<VerifiedGraph>> {
      OperationBudget budget;
      VerifyOptions opt;
      opt.deep = true;
      auto r = co_await verifyManifestGraph(failingGet, f.ns, good->manifestSha256,
                                            good->manifestBytes.size(), f.journal.get(), f.limits,
                                            budget, opt);
      bytesHeld = f.limits.bytes.inUse();
      requestsHeld = f.limits.requests.inUse();
      co_return r;
    };
    auto v = runToCompletion(f.context, verify());
    REQUIRE_FALSE(v.ok());
    CHECK(bytesHeld == 0);
    CHECK(requestsHeld == 0);
  }
}
