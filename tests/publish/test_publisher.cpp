// Conditional publication (docs/design.md §6.3): every row of the observation table, on the
// directory store and on RGW. The store is wrapped in an InterceptStore that answers with the
// outcome a row needs (uncertain after applying, uncertain without applying, 409, 403) or
// acts between two requests (a concurrent writer, a rollback, a deleted head). Each
// checkpoint runs on a Publisher loaded afresh from the state file, as after a restart.
#include <catch2/catch.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <filesystem>
#include <functional>
#include <vector>

#include "engine/format/keys.hpp"
#include "engine/journal/journal.hpp"
#include "engine/publish/publisher.hpp"
#include "engine/store/intercept_store.hpp"
#include "engine/store/open_store.hpp"
#include "io/uring.hpp"
#include "tests/io/io_test_support.hpp"
#include "tests/net/fault_proxy.hpp"
#include "tests/publish/publish_test_support.hpp"
#include "tests/store/s3_test_env.hpp"

using namespace cairn;
namespace asio = boost::asio;
using io::test::runToCompletion;
using test::Db;
using test::forgedSuccessor;
using test::ProxyAction;
using test::ProxyRequest;
using test::ProxyRule;
using test::World;

namespace {

StoreOutcome answer(StoreStatus status, int http = 0) {
  StoreOutcome o;
  o.status = status;
  o.http = http;
  o.message = "injected by the test";
  return o;
}

bool isHeadPut(StoreOp op) { return op == StoreOp::putIfAbsent || op == StoreOp::putIfMatch; }

void observationTable(const std::optional<std::string>& s3Url) {
  World w(s3Url);
  Db db = w.create("db");
  w.append(db, 300, "first");

  SECTION("genesis, then successors chained through the immutable head copies") {
    auto r1 = w.checkpoint(db);
    REQUIRE(r1.ok());
    CHECK(r1->outcome == PublishOutcome::selected);
    CHECK(r1->head.fields().revision == 1);
    CHECK(!r1->head.fields().predecessor);
    auto again = w.checkpoint(db);
    REQUIRE(again.ok());
    CHECK(again->outcome == PublishOutcome::unchanged);
    w.append(db, 100, "second");
    auto r2 = w.checkpoint(db);
    REQUIRE(r2.ok());
    CHECK(r2->outcome == PublishOutcome::selected);
    CHECK(r2->head.fields().revision == 2);
    CHECK(r2->head.fields().prefixSequence == 400);
    REQUIRE(r2->head.fields().predecessor);
    CHECK(r2->head.fields().predecessor->id == r1->head.id());
    auto copy = w.run(w.inner->get(keys::headCopy(w.ns, r1->head.id()), 256));
    REQUIRE(copy.ok());
    CHECK(Bytes(r1->head.image().begin(), r1->head.image().end()) == copy->bytes);
    auto s = w.state(db);
    REQUIRE(s.expected);
    CHECK(s.expected->head.image() == r2->head.image());
    CHECK(!s.pending);
    auto cur = w.current();
    REQUIRE(cur);
    CHECK(s.expected->etag == cur->etag);  // the ETag the store gave, not one made from content
  }

  SECTION("uncertain after the store applied it: the re-read finds the candidate selected") {
    int puts = 0;
    w.after = [&](StoreOp op, const std::string& key,
                  StoreStatus s) -> std::optional<StoreOutcome> {
      if (key != w.headKey || !isHeadPut(op)) return std::nullopt;
      ++puts;
      REQUIRE(s == StoreStatus::ok);
      return answer(StoreStatus::uncertain);  // the response was "lost"
    };
    auto r = w.checkpoint(db);
    REQUIRE(r.ok());
    CHECK(r->outcome == PublishOutcome::selected);
    CHECK(puts == 1);  // no re-send: the re-read settled it
    auto s = w.state(db);
    CHECK(!s.pending);
    REQUIRE(s.expected);
    CHECK(s.expected->head.image() == r->head.image());
  }

  SECTION("uncertain before applying: re-sent with the same bytes and precondition") {
    std::vector<Bytes> sent;
    w.before = [&](StoreOp op, const std::string& key, ByteView bytes,
                   const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
      if (key != w.headKey || !isHeadPut(op)) co_return std::nullopt;
      sent.emplace_back(bytes.begin(), bytes.end());
      if (sent.size() <= 2) co_return answer(StoreStatus::uncertain);
      co_return std::nullopt;
    };
    auto r = w.checkpoint(db);
    REQUIRE(r.ok());
    REQUIRE(sent.size() == 3);
    CHECK(sent[0] == sent[1]);
    CHECK(sent[1] == sent[2]);
    CHECK(Bytes(r->head.image().begin(), r->head.image().end()) == sent[2]);
  }

  SECTION("uncertain on every try: the intent stays pending and the next run settles it") {
    Bytes proposed;
    w.before = [&](StoreOp op, const std::string& key, ByteView bytes,
                   const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
      if (key != w.headKey || !isHeadPut(op)) co_return std::nullopt;
      proposed.assign(bytes.begin(), bytes.end());
      co_return answer(StoreStatus::uncertain);
    };
    auto r = w.checkpoint(db);
    REQUIRE(!r.ok());
    CHECK(r.error().code == Errc::uncertain);
    auto s = w.state(db);
    REQUIRE(s.pending);
    CHECK(Bytes(s.pending->candidate.image().begin(), s.pending->candidate.image().end()) ==
          proposed);
    CHECK(s.pending->precondition == Precondition::ifNoneMatch);
    CHECK(!w.current());
    // A pending intent blocks new candidates: the next run re-sends exactly the same one.
    w.append(db, 10, "meanwhile");
    std::vector<Bytes> resent;
    w.before = [&](StoreOp op, const std::string& key, ByteView bytes,
                   const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
      if (key == w.headKey && isHeadPut(op)) resent.emplace_back(bytes.begin(), bytes.end());
      co_return std::nullopt;
    };
    auto next = w.checkpoint(db);
    REQUIRE(next.ok());
    CHECK(next->reconciledIntent);
    REQUIRE(resent.size() == 2);
    CHECK(resent[0] == proposed);  // the old candidate first, then one for the new records
    CHECK(next->head.fields().revision == 2);
    CHECK(next->head.fields().prefixSequence == 310);
  }

  SECTION("uncertain under If-Match: re-sent with the same bytes and the same observed ETag") {
    auto r1 = w.checkpoint(db);
    REQUIRE(r1.ok());
    std::string observed = w.current()->etag;
    w.append(db, 20, "second");
    std::vector<std::pair<Bytes, std::string>> sent;
    w.before = [&](StoreOp op, const std::string& key, ByteView bytes,
                   const std::string& etag) -> asio::awaitable<std::optional<StoreOutcome>> {
      if (key != w.headKey || !isHeadPut(op)) co_return std::nullopt;
      REQUIRE(op == StoreOp::putIfMatch);
      sent.emplace_back(Bytes(bytes.begin(), bytes.end()), etag);
      if (sent.size() <= 2) co_return answer(StoreStatus::uncertain);
      co_return std::nullopt;
    };
    auto r = w.checkpoint(db);
    REQUIRE(r.ok());
    REQUIRE(sent.size() == 3);
    for (const auto& [bytes, etag] : sent) {
      CHECK(bytes == sent[0].first);
      CHECK(etag == observed);  // the ETag observed in step 2, every time
    }
    CHECK(r->head.fields().revision == 2);
  }

  SECTION("a pending intent whose graph was damaged meanwhile is not re-sent") {
    w.before = [&](StoreOp op, const std::string& key, ByteView,
                   const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
      if (key == w.headKey && isHeadPut(op)) co_return answer(StoreStatus::uncertain);
      co_return std::nullopt;
    };
    auto r = w.checkpoint(db);
    REQUIRE(!r.ok());
    REQUIRE(r.error().code == Errc::uncertain);
    auto page = w.run(w.inner->list("ns-" + w.ns.compactHex() + "-segment-", "", 1000));
    REQUIRE(page.ok());
    REQUIRE(!page->objects.empty());
    REQUIRE(w.run(w.inner->remove(page->objects.back().key)).ok());
    int puts = 0;
    w.before = [&](StoreOp op, const std::string& key, ByteView,
                   const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
      if (key == w.headKey && isHeadPut(op)) ++puts;
      co_return std::nullopt;
    };
    auto again = w.checkpoint(db);
    REQUIRE(!again.ok());
    CHECK(again.error().code == Errc::missing);
    CHECK(puts == 0);
    CHECK(w.state(db).pending);
    CHECK(!w.current());
  }

  SECTION("a malformed head is a format failure, not absence") {
    REQUIRE(w.run(w.inner->putIfAbsent(w.headKey, Bytes(300, 1))).ok());  // too long
    auto r = w.checkpoint(db);
    REQUIRE(!r.ok());
    CHECK(r.error().code == Errc::format);
    CHECK(!w.state(db).pending);
  }

  SECTION("one publisher: checkpoints in a row and two at once") {
    PublishOptions o;
    o.checkpoint.segmentTargetBytes = 4096;
    Publisher p(w.uring, *db.journal, *w.store, db.dir, w.state(db), w.limits, o);
    for (int round = 1; round <= 3; ++round) {
      auto r = w.run(p.checkpoint());
      REQUIRE(r.ok());
      CHECK(r->head.fields().revision == static_cast<std::uint64_t>(round));
      w.append(db, 30, "round " + std::to_string(round));
    }
    // Two calls at once: the second waits for the first, then publishes nothing new.
    std::optional<Res<PublishResult>> first, second;
    int finished = 0;
    for (auto* slot : {&first, &second}) {
      asio::co_spawn(
          w.context,
          [&, slot]() -> asio::awaitable<void> {
            slot->emplace(co_await p.checkpoint());
            if (++finished == 2) w.context.stop();
          },
          asio::detached);
    }
    w.context.restart();
    w.context.run();
    REQUIRE(finished == 2);
    REQUIRE(first->ok());
    REQUIRE(second->ok());
    CHECK((*first)->outcome == PublishOutcome::selected);
    CHECK((*second)->outcome == PublishOutcome::unchanged);
    CHECK((*second)->head.image() == (*first)->head.image());
    auto s = w.state(db);
    CHECK(!s.pending);
    REQUIRE(s.expected);
    CHECK(Bytes(s.expected->head.image().begin(), s.expected->head.image().end()) ==
          w.current()->bytes);
    CHECK(s.expected->head.fields().revision == 4);
  }

  SECTION("412 after another writer won: refused, evidence kept, nothing adopted") {
    REQUIRE(w.checkpoint(db).ok());
    w.append(db, 20, "second");
    std::optional<Head> forged;
    w.before = [&](StoreOp op, const std::string& key, ByteView,
                   const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
      if (key != w.headKey || op != StoreOp::putIfMatch || forged) co_return std::nullopt;
      // Another writer replaces the head between our read and our conditional PUT.
      auto cur = co_await w.inner->get(w.headKey, 256);
      REQUIRE(cur.ok());
      auto h = decodeHead(cur->bytes);
      REQUIRE(h.ok());
      forged = forgedSuccessor(*h);
      auto put = co_await w.inner->putIfMatch(w.headKey, forged->image(), cur->etag);
      REQUIRE(put.ok());
      co_return std::nullopt;
    };
    auto r = w.checkpoint(db);
    REQUIRE(!r.ok());
    CHECK(r.error().code == Errc::conflict);
    auto s = w.state(db);
    REQUIRE(s.pending);  // the evidence
    REQUIRE(s.expected);
    CHECK(s.expected->head.fields().revision == 1);  // never rebased onto the forged head
    auto cur = w.current();
    REQUIRE(cur);
    CHECK(Bytes(forged->image().begin(), forged->image().end()) == cur->bytes);
    // And it stays refused.
    w.before = {};
    auto again = w.checkpoint(db);
    REQUIRE(!again.ok());
    CHECK(again.error().code == Errc::conflict);
    CHECK(w.current()->bytes == cur->bytes);
  }

  SECTION("409 (or a provider's 500 on a race) with the head unchanged: pending, then re-sent") {
    REQUIRE(w.checkpoint(db).ok());
    w.append(db, 20, "second");
    int answered = 0;
    w.before = [&](StoreOp op, const std::string& key, ByteView,
                   const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
      if (key != w.headKey || op != StoreOp::putIfMatch || answered++ > 0) co_return std::nullopt;
      co_return answer(StoreStatus::conflict, 409);
    };
    auto r = w.checkpoint(db);
    REQUIRE(!r.ok());
    CHECK(r.error().code == Errc::conflict);
    auto s = w.state(db);
    REQUIRE(s.pending);
    CHECK(s.pending->precondition == Precondition::ifMatch);
    auto next = w.checkpoint(db);
    REQUIRE(next.ok());
    CHECK(next->reconciledIntent);
    CHECK(next->head.image() == s.pending->candidate.image());
  }

  SECTION("403 is a failure, not absence: pending, nothing selected") {
    w.before = [&](StoreOp op, const std::string& key, ByteView,
                   const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
      if (key != w.headKey || !isHeadPut(op)) co_return std::nullopt;
      co_return answer(StoreStatus::failure, 403);
    };
    auto r = w.checkpoint(db);
    REQUIRE(!r.ok());
    CHECK(r.error().code == Errc::store);
    CHECK(w.state(db).pending);
    CHECK(!w.current());
  }

  SECTION("a failed head read is a failure, never taken for an uninitialized namespace") {
    w.before = [&](StoreOp op, const std::string& key, ByteView,
                   const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
      if (key == w.headKey && op == StoreOp::get) co_return answer(StoreStatus::failure, 403);
      co_return std::nullopt;
    };
    auto r = w.checkpoint(db);
    REQUIRE(!r.ok());
    CHECK(r.error().code == Errc::store);
    CHECK(!w.state(db).pending);
  }

  SECTION("a deleted head is refused, never re-created") {
    REQUIRE(w.checkpoint(db).ok());
    REQUIRE(w.run(w.inner->remove(w.headKey)).ok());
    w.append(db, 5, "second");
    auto r = w.checkpoint(db);
    REQUIRE(!r.ok());
    CHECK(r.error().code == Errc::conflict);
    CHECK(!w.current());
    CHECK(!w.state(db).pending);
  }

  SECTION("a rollback to an older head is refused") {
    auto r1 = w.checkpoint(db);
    REQUIRE(r1.ok());
    w.append(db, 5, "second");
    REQUIRE(w.checkpoint(db).ok());
    auto cur = w.current();
    REQUIRE(cur);
    REQUIRE(w.run(w.inner->putIfMatch(w.headKey, r1->head.image(), cur->etag)).ok());
    w.append(db, 5, "third");
    auto r = w.checkpoint(db);
    REQUIRE(!r.ok());
    CHECK(r.error().code == Errc::conflict);
  }

  SECTION("a forged successor is refused") {
    auto r1 = w.checkpoint(db);
    REQUIRE(r1.ok());
    auto cur = w.current();
    Head forged = forgedSuccessor(r1->head);
    REQUIRE(w.run(w.inner->putIfMatch(w.headKey, forged.image(), cur->etag)).ok());
    w.append(db, 5, "second");
    auto r = w.checkpoint(db);
    REQUIRE(!r.ok());
    CHECK(r.error().code == Errc::conflict);
    CHECK(w.current()->bytes == Bytes(forged.image().begin(), forged.image().end()));
  }

  SECTION("genesis only when the local state says uninitialized: an existing head is refused") {
    REQUIRE(w.checkpoint(db).ok());
    Db other = w.create("other");
    w.append(other, 5, "other");
    auto r = w.checkpoint(other);
    REQUIRE(!r.ok());
    CHECK(r.error().code == Errc::conflict);
  }

  SECTION("a damaged graph fails closed with the missing object named") {
    auto r1 = w.checkpoint(db);
    REQUIRE(r1.ok());
    auto page = w.run(w.inner->list("ns-" + w.ns.compactHex() + "-segment-", "", 1000));
    REQUIRE(page.ok());
    REQUIRE(!page->objects.empty());
    REQUIRE(w.run(w.inner->remove(page->objects.front().key)).ok());
    w.append(db, 5, "second");
    auto r = w.checkpoint(db);
    REQUIRE(!r.ok());
    CHECK(r.error().code == Errc::missing);
    CHECK(r.error().key == page->objects.front().key);
  }

  SECTION("two publishers with copied state race: one wins, the other refuses and says so") {
    REQUIRE(w.checkpoint(db).ok());
    // B: the same journal and state, copied; each then appends its own records.
    Db b{w.tmp.path() / "copy", nullptr};
    std::filesystem::create_directories(b.dir);
    std::filesystem::copy_file(db.dir / Journal::kFileName, b.dir / Journal::kFileName);
    std::filesystem::copy_file(db.dir / kPublisherStateFile, b.dir / kPublisherStateFile);
    auto jb = w.run(Journal::open(w.uring, b.dir));
    REQUIRE(jb.ok());
    b.journal = std::move(*jb);
    w.append(db, 10, "a");
    w.append(b, 12, "b");
    // A's conditional PUT waits until B has published its whole checkpoint.
    std::optional<Res<PublishResult>> bResult;
    Publisher pb(w.uring, *b.journal, *w.inner, b.dir, w.state(b), w.limits, PublishOptions{});
    w.before = [&](StoreOp op, const std::string& key, ByteView,
                   const std::string&) -> asio::awaitable<std::optional<StoreOutcome>> {
      if (key != w.headKey || op != StoreOp::putIfMatch || bResult) co_return std::nullopt;
      bResult = co_await pb.checkpoint();
      co_return std::nullopt;
    };
    auto a = w.checkpoint(db);
    REQUIRE(bResult);
    REQUIRE(bResult->ok());
    CHECK((*bResult)->head.fields().revision == 2);
    REQUIRE(!a.ok());
    CHECK(a.error().code == Errc::conflict);
    CHECK(w.state(db).pending);  // A keeps its evidence
    auto cur = w.current();
    CHECK(cur->bytes == Bytes((*bResult)->head.image().begin(), (*bResult)->head.image().end()));
    CHECK((*bResult)->head.fields().prefixSequence == 312);
  }

  SECTION("a head whose prefix is not this journal's is refused") {
    REQUIRE(w.checkpoint(db).ok());
    // Same database id (so the same lineage), different first records, the state copied.
    Db twin{w.tmp.path() / "twin", nullptr};
    auto j = w.run(Journal::create(w.uring, twin.dir, u"db"));
    REQUIRE(j.ok());
    twin.journal = std::move(*j);
    std::filesystem::copy_file(db.dir / kPublisherStateFile, twin.dir / kPublisherStateFile);
    w.append(twin, 400, "twin");
    auto r = w.checkpoint(twin);
    REQUIRE(!r.ok());
    CHECK(r.error().code == Errc::diverged);
  }
}

// Conditions not enforced: forwards everything, but says so.
class UnconditionalStore final : public ObjectStore {
 public:
  explicit UnconditionalStore(ObjectStore& inner) : inner_(inner) {}
  asio::awaitable<StoreResult<StoredObject>> get(std::string k, std::uint64_t m) override {
    co_return co_await inner_.get(k, m);
  }
  asio::awaitable<StoreResult<ObjectInfo>> head(std::string k) override {
    co_return co_await inner_.head(k);
  }
  asio::awaitable<StoreResult<std::string>> putIfAbsent(std::string k, ByteView b) override {
    co_return co_await inner_.putIfAbsent(k, b);
  }
  asio::awaitable<StoreResult<std::string>> putIfMatch(std::string k, ByteView b,
                                                       std::string e) override {
    co_return co_await inner_.putIfMatch(k, b, e);
  }
  asio::awaitable<StoreResult<void>> remove(std::string k) override {
    co_return co_await inner_.remove(k);
  }
  asio::awaitable<StoreResult<ListPage>> list(std::string p, std::string c, int m) override {
    co_return co_await inner_.list(p, c, m);
  }
  std::string describe() const override { return "unconditional"; }
  asio::awaitable<StoreResult<void>> requireConditionalWrites() override {
    co_return storeFail(StoreStatus::failure, "the probe found conditions ignored");
  }

 private:
  ObjectStore& inner_;
};

}  // namespace

TEST_CASE("publication: the observation table on the directory store", "[publisher]") {
  observationTable(std::nullopt);
}

TEST_CASE("publication: the observation table on RGW", "[publisher][s3]") {
  auto url = test::rgwUrlText();
  if (!url) return;
  observationTable(url);
}

TEST_CASE("publication refuses a store that does not enforce conditions", "[publisher]") {
  World w(std::nullopt);
  Db db = w.create("db");
  w.append(db, 10, "x");
  UnconditionalStore unconditional(*w.inner);
  auto r = w.checkpoint(db, &unconditional);
  REQUIRE(!r.ok());
  CHECK(r.error().code == Errc::store);
  CHECK(!w.current());
  CHECK(!w.state(db).pending);  // refused before anything was recorded
  CHECK(w.run(w.inner->list("ns-", "", 10))->objects.empty());  // or uploaded
}

TEST_CASE("a damaged publisher state is an error, never a reset", "[publisher]") {
  World w(std::nullopt);
  Db db = w.create("db");
  w.append(db, 10, "x");
  REQUIRE(w.checkpoint(db).ok());
  auto path = db.dir / kPublisherStateFile;
  Bytes good = io::test::readWholeFile(path);
  for (std::size_t at : {std::size_t{0}, std::size_t{40}, good.size() - 1}) {
    Bytes bad = good;
    bad[at] ^= 0x10;
    io::test::writeWholeFile(path, bad);
    auto s = w.run(loadPublisherState(w.uring, db.dir));
    REQUIRE(!s.ok());
    CHECK(s.error().code == Errc::format);
    CHECK(io::test::readWholeFile(path) == bad);  // left as found, for the operator
  }
  io::test::writeWholeFile(path, Bytes(good.begin(), good.end() - 1));
  CHECK(!w.run(loadPublisherState(w.uring, db.dir)).ok());
}

namespace {

bool isHeadPutRequest(const ProxyRequest& r) {
  return r.method() == boost::beast::http::verb::put &&
         std::string(r.target()).find("-current.head") != std::string::npos;
}
bool isHeadGetRequest(const ProxyRequest& r) {
  return r.method() == boost::beast::http::verb::get &&
         std::string(r.target()).find("-current.head") != std::string::npos;
}

std::string s3ErrorReply(int status, const std::string& code) {
  std::string body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>" + code +
                     "</Code><Message>injected by the proxy</Message></Error>";
  return "HTTP/1.1 " + std::to_string(status) +
         " Status\r\nContent-Type: application/xml\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

// RGW behind the fault proxy: the publisher talks through the proxy (request timeout 1 s),
// the test inspects the store directly.
struct ProxiedRgw {
  std::optional<World> world;
  std::optional<test::FaultProxy> proxy;
  std::unique_ptr<ObjectStore> direct;
  ProxyRule rule;  // changeable between steps

  explicit ProxiedRgw(const std::string& rgw) {
    // rgw: s3://BUCKET/ROOT?endpoint=http://HOST:PORT&region=R
    auto url = parseStoreUrl(rgw);
    REQUIRE(url.ok());
    std::string hostPort = url->endpoint.substr(std::string("http://").size());
    auto colon = hostPort.rfind(':');
    REQUIRE(colon != std::string::npos);
    // The proxy runs on the world's io_context, so the world comes first (opened directly
    // on RGW); then its store is re-pointed through the proxy and the direct one kept.
    world.emplace(std::optional<std::string>(rgw));
    proxy.emplace(world->context.get_executor(), hostPort.substr(0, colon),
                  static_cast<std::uint16_t>(std::stoi(hostPort.substr(colon + 1))),
                  [this](const ProxyRequest& r) { return rule ? rule(r) : ProxyAction{}; });
    direct = std::move(world->inner);
    std::string through = "s3://" + url->bucket + "/" + url->root +
                          "?endpoint=" + proxy->endpoint() + "&region=" + url->region +
                          "&dialect=rgw&timeout_ms=1000";
    auto opened = openStore(world->uring, world->context.get_executor(), through);
    REQUIRE(opened.ok());
    world->inner = std::move(*opened);
    world->url = through;
    world->wrap();
  }
};

}  // namespace

TEST_CASE("publication through a faulty connection to RGW", "[publisher][s3]") {
  auto rgw = test::rgwUrlText();
  if (!rgw) return;
  ProxiedRgw p(*rgw);
  World& w = *p.world;
  Db db = w.create("db");
  w.append(db, 200, "first");
  auto currentImage = [&]() -> Bytes {
    auto got = w.run(p.direct->get(w.headKey, 256));
    REQUIRE(got.ok());
    return got->bytes;
  };
  auto imageOf = [](const Head& h) { return Bytes(h.image().begin(), h.image().end()); };
  int headPuts = 0;

  SECTION("the response to the conditional PUT is lost after the server applied it") {
    p.rule = [&](const ProxyRequest& r) {
      ProxyAction a;
      if (isHeadPutRequest(r) && headPuts++ == 0) a.kind = ProxyAction::Kind::dropResponse;
      return a;
    };
    auto r = w.checkpoint(db);
    REQUIRE(r.ok());
    CHECK(r->outcome == PublishOutcome::selected);
    CHECK(headPuts == 1);  // settled by the re-read, not by sending again
    CHECK(currentImage() == imageOf(r->head));
    CHECK(!w.state(db).pending);
  }

  SECTION("the connection is reset before the PUT reaches the server") {
    p.rule = [&](const ProxyRequest& r) {
      ProxyAction a;
      if (isHeadPutRequest(r) && headPuts++ == 0) a.kind = ProxyAction::Kind::resetBeforeForward;
      return a;
    };
    auto r = w.checkpoint(db);
    REQUIRE(r.ok());
    CHECK(headPuts == 2);  // re-sent once, same bytes (the store took it under If-None-Match)
    CHECK(currentImage() == imageOf(r->head));
  }

  SECTION("the PUT is delayed past the timeout and lands after the re-send") {
    REQUIRE(w.checkpoint(db).ok());  // revision 1, so the delayed PUT carries If-Match
    w.append(db, 50, "second");
    p.rule = [&](const ProxyRequest& r) {
      ProxyAction a;
      if (isHeadPutRequest(r) && headPuts++ == 0) a.delay = std::chrono::milliseconds(1600);
      return a;
    };
    auto r = w.checkpoint(db);
    REQUIRE(r.ok());
    CHECK(r->head.fields().revision == 2);
    // Let the late request land; it must change nothing (its If-Match no longer holds, or it
    // wrote the very same bytes).
    w.run([&]() -> asio::awaitable<int> {
      asio::steady_timer settle(w.context, std::chrono::milliseconds(2500));
      co_await settle.async_wait(asio::use_awaitable);
      co_return 0;
    }());
    CHECK(headPuts >= 2);
    CHECK(currentImage() == imageOf(r->head));
    auto again = w.checkpoint(db);
    REQUIRE(again.ok());
    CHECK(again->outcome == PublishOutcome::unchanged);
  }

  SECTION("503 on the conditional PUT: unknown, re-read, re-sent") {
    p.rule = [&](const ProxyRequest& r) {
      ProxyAction a;
      if (isHeadPutRequest(r) && headPuts++ == 0) {
        a.kind = ProxyAction::Kind::answer;
        a.reply = s3ErrorReply(503, "SlowDown");
      }
      return a;
    };
    auto r = w.checkpoint(db);
    REQUIRE(r.ok());
    CHECK(headPuts == 2);
    CHECK(currentImage() == imageOf(r->head));
  }

  for (auto [status, code] :
       {std::pair{500, "UnknownError"}, std::pair{409, "ConditionalRequestConflict"},
        std::pair{412, "PreconditionFailed"}}) {
    DYNAMIC_SECTION(status << " " << code
                           << " with the head unchanged: refused now, re-sent next time") {
      p.rule = [&, status = status, code = std::string(code)](const ProxyRequest& r) {
        ProxyAction a;
        if (isHeadPutRequest(r) && headPuts++ == 0) {
          a.kind = ProxyAction::Kind::answer;
          a.reply = s3ErrorReply(status, code);
        }
        return a;
      };
      auto r = w.checkpoint(db);
      REQUIRE(!r.ok());
      CHECK(r.error().code == Errc::conflict);
      auto s = w.state(db);
      REQUIRE(s.pending);
      auto missing = w.run(p.direct->get(w.headKey, 256));
      CHECK((!missing && missing.error().status == StoreStatus::missing));
      auto next = w.checkpoint(db);
      REQUIRE(next.ok());
      CHECK(next->reconciledIntent);
      CHECK(next->head.image() == s.pending->candidate.image());
      CHECK(currentImage() == imageOf(next->head));
    }
  }

  SECTION("a truncated head GET is a failure, never taken for an empty namespace") {
    p.rule = [&](const ProxyRequest& r) {
      ProxyAction a;
      if (isHeadPutRequest(r)) ++headPuts;
      if (isHeadGetRequest(r)) a.kind = ProxyAction::Kind::truncateBody;
      return a;
    };
    REQUIRE(w.run(p.direct->putIfAbsent(w.headKey, Bytes(256, 7))).ok());  // something to GET
    auto r = w.checkpoint(db);
    REQUIRE(!r.ok());
    CHECK(r.error().code == Errc::store);
    CHECK(headPuts == 0);
  }
}
