// Helpers shared by the graph/ tests (checkpoints and their verification) and the ops/ tests:
// a store that counts the requests reaching it, and a journal with records beside a directory
// store, checkpointed and verified through the engine's calls.
#pragma once

#include <catch2/catch.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/graph/checkpoint.hpp"
#include "engine/graph/verifier.hpp"
#include "engine/journal/journal.hpp"
#include "engine/store/directory_store.hpp"
#include "engine/store/object_store.hpp"
#include "io/uring.hpp"
#include "tests/io/io_test_support.hpp"

namespace cairn::test {

namespace asio = boost::asio;

// Forwards to a store and counts the requests that reach it.
class CountingStore final : public ObjectStore {
 public:
  explicit CountingStore(ObjectStore& inner) : inner_(inner) {}
  int requests = 0;
  asio::awaitable<StoreResult<StoredObject>> get(std::string k, std::uint64_t max) override {
    ++requests;
    co_return co_await inner_.get(k, max);
  }
  asio::awaitable<StoreResult<ObjectInfo>> head(std::string k) override {
    ++requests;
    co_return co_await inner_.head(k);
  }
  asio::awaitable<StoreResult<std::string>> putIfAbsent(std::string k, ByteView b) override {
    ++requests;
    co_return co_await inner_.putIfAbsent(k, b);
  }
  asio::awaitable<StoreResult<std::string>> putIfMatch(std::string k, ByteView b,
                                                       std::string e) override {
    ++requests;
    co_return co_await inner_.putIfMatch(k, b, e);
  }
  asio::awaitable<StoreResult<void>> remove(std::string k) override {
    ++requests;
    co_return co_await inner_.remove(k);
  }
  asio::awaitable<StoreResult<ListPage>> list(std::string p, std::string c, int m) override {
    ++requests;
    co_return co_await inner_.list(p, c, m);
  }
  std::string describe() const override { return inner_.describe(); }
  asio::awaitable<StoreResult<void>> requireConditionalWrites() override {
    co_return co_await inner_.requireConditionalWrites();
  }

 private:
  ObjectStore& inner_;
};

// A journal of `records` records (DIR/db) and a directory store (DIR/store), checkpointed
// with installCheckpoint and verified with verifyManifestGraph.
struct CheckpointFixture {
  io::test::TempDir dir;
  asio::io_context context{1};
  io::Uring uring{context, 128};
  std::unique_ptr<DirectoryStore> store =
      std::move(*DirectoryStore::open(uring, dir.path() / "store", StoreCreation::createIfMissing));
  std::unique_ptr<Journal> journal;
  EngineLimits limits;
  Uuid ns = *Uuid::parse("0b1e7f5c-3a9d-4c2e-8f61-2d4b6a8c0e13");

  explicit CheckpointFixture(int records = 4000, std::u16string id = u"db",
                             std::string tag = "rec") {
    journal = std::move(
        *io::test::runToCompletion(context, Journal::create(uring, dir.path() / "db", id)));
    appendRecords(records, tag);
  }
  // Appends concurrently (group commit keeps this to a few syncs); sequences follow i.
  void appendRecords(int n, const std::string& tag, int start = 0) {
    int failures = 0;
    std::vector<std::string> payloads(n);
    for (int i = 0; i < n; ++i) {
      payloads[i] = tag + std::to_string(start + i) + std::string((start + i) % 300, 'x');
      asio::co_spawn(
          context,
          [&, i]() -> asio::awaitable<void> {
            if (!co_await journal->append(asBytes(payloads[i]))) ++failures;
          },
          asio::detached);
    }
    context.restart();
    context.run();
    REQUIRE(failures == 0);
  }
  Res<InstalledCheckpoint> checkpoint(const std::optional<Manifest>& previous = std::nullopt,
                                      std::uint64_t target = 64 << 10, CheckpointOptions opt = {},
                                      ObjectStore* through = nullptr) {
    OperationBudget budget;
    opt.segmentTargetBytes = target;
    std::uint64_t cutoff =
        opt.compact && previous ? previous->prefix.sequence : journal->endSequence();
    return io::test::runToCompletion(
        context, installCheckpoint(*journal, through ? *through : *store, ns, previous, cutoff,
                                   limits, budget, opt));
  }
  Res<VerifiedGraph> verify(const InstalledCheckpoint& c, bool deep, Journal* j,
                            ObjectStore* through = nullptr,
                            BudgetTotals totals = kDefaultOperationBudget) {
    OperationBudget budget(totals);
    VerifyOptions opt;
    opt.deep = deep;
    return io::test::runToCompletion(
        context, verifyManifestGraph(through ? *through : *store, ns, c.manifestSha256,
                                     c.manifestBytes.size(), std::move(j), limits, budget, opt));
  }
  std::filesystem::path objectPath(const std::string& key) { return dir.path() / "store" / key; }
  Res<Prefix> runPrefix(std::uint64_t sequence) {
    return io::test::runToCompletion(context, journal->prefix(sequence, limits::kMaxPrefixBytes));
  }
};

}  // namespace cairn::test
