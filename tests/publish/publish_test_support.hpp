// Helpers shared by the publish/ and ops/ tests: databases (a journal and its publisher state)
// publishing to one store, the directory store or RGW, through an InterceptStore whose hooks
// a test changes between steps; each checkpoint runs on a Publisher loaded afresh from the
// state file, as after a restart.
#pragma once

#include <catch2/catch.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "engine/format/head.hpp"
#include "engine/format/keys.hpp"
#include "engine/journal/journal.hpp"
#include "engine/publish/publisher.hpp"
#include "engine/store/intercept_store.hpp"
#include "engine/store/open_store.hpp"
#include "io/uring.hpp"
#include "tests/io/io_test_support.hpp"

namespace cairn::test {

namespace asio = boost::asio;

// One database (journal + publisher state) publishing to a store shared by the test.
struct Db {
  std::filesystem::path dir;
  std::unique_ptr<Journal> journal;
};

struct World {
  io::test::TempDir tmp;
  asio::io_context context{1};
  io::Uring uring{context, 256};
  std::string url;
  std::unique_ptr<ObjectStore> inner;  // the real store
  InterceptStore::Before before;       // the test's hooks, changeable between steps
  InterceptStore::After after;
  std::unique_ptr<InterceptStore> store;
  EngineLimits limits;
  Uuid ns = Uuid::random();
  std::string headKey = keys::currentHead(ns);

  explicit World(std::optional<std::string> s3Url) {
    url = s3Url ? *s3Url : (tmp.path() / "store").string();
    auto opened = openStore(uring, context.get_executor(), url, StoreCreation::createIfMissing);
    REQUIRE(opened.ok());
    inner = std::move(*opened);
    wrap();
  }

  // The test's hooks around `inner` (again after `inner` is replaced).
  void wrap() {
    store = std::make_unique<InterceptStore>(
        *inner,
        [this](StoreOp op, const std::string& key, ByteView bytes,
               const std::string& etag) -> asio::awaitable<std::optional<StoreOutcome>> {
          if (!before) co_return std::nullopt;
          co_return co_await before(op, key, bytes, etag);
        },
        [this](StoreOp op, const std::string& key, StoreStatus s) -> std::optional<StoreOutcome> {
          if (!after) return std::nullopt;
          return after(op, key, s);
        });
  }

  // Runs until `task` is done (not until the context runs dry: a proxy keeps it busy, and
  // work left over, e.g. a delayed request, goes on in later runs).
  template <class T>
  T run(asio::awaitable<T> task) {
    std::optional<T> result;
    std::exception_ptr error;
    asio::co_spawn(
        context, [&]() -> asio::awaitable<void> { result.emplace(co_await std::move(task)); },
        [&](std::exception_ptr e) {
          error = e;
          context.stop();
        });
    context.restart();
    context.run();
    if (error) std::rethrow_exception(error);
    REQUIRE(result);
    return std::move(*result);
  }

  Db create(const std::string& name, std::u16string id = u"db") {
    Db db{tmp.path() / name, nullptr};
    auto j = run(Journal::create(uring, db.dir, id));
    REQUIRE(j.ok());
    db.journal = std::move(*j);
    PublisherState s;
    s.storeUrl = url;
    s.ns = ns;
    s.publisher = *Uuid::parse("7d444840-9dc0-11d1-b245-5ffdce74fad2");
    s.lineage = db.journal->lineage();
    REQUIRE(run(initializePublisher(uring, db.dir, s)).ok());
    return db;
  }

  void append(Db& db, int count, const std::string& tag) {
    int failures = 0, done = 0;
    for (int i = 0; i < count; ++i) {
      asio::co_spawn(
          context,
          [&, p = tag + " " + std::to_string(i)]() -> asio::awaitable<void> {
            auto appended = co_await db.journal->append(asBytes(p));
            if (!appended) ++failures;
            if (++done == count) context.stop();
          },
          asio::detached);
    }
    context.restart();
    context.run();
    REQUIRE(done == count);
    REQUIRE(failures == 0);
  }

  PublisherState state(const Db& db) {
    auto s = run(loadPublisherState(uring, db.dir));
    REQUIRE(s.ok());
    REQUIRE(s->has_value());
    return **s;
  }

  // One checkpoint by a publisher loaded from the state file (as a new process would).
  Res<PublishResult> checkpoint(Db& db, ObjectStore* through = nullptr) {
    PublishOptions o;
    o.retryPause = std::chrono::milliseconds(1);
    o.checkpoint.segmentTargetBytes = 4096;
    Publisher p(uring, *db.journal, through ? *through : *store, db.dir, state(db), limits, o);
    return run(p.checkpoint());
  }

  std::optional<StoredObject> current() {
    auto got = run(inner->get(headKey, limits::kHeadBytes));
    if (!got) {
      REQUIRE(got.error().status == StoreStatus::missing);
      return std::nullopt;
    }
    return *got;
  }
};

// A valid successor of `previous` that this publisher did not write.
inline Head forgedSuccessor(const Head& previous) {
  HeadFields f = previous.fields();
  f.revision += 1;
  f.publication = Uuid::random();
  f.predecessor = previous.reference();
  auto h = makeHead(f);
  REQUIRE(h.ok());
  return *h;
}

}  // namespace cairn::test
