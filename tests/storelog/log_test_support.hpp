// A catalog log over a directory store (and an InterceptStore in front of it for faults), for
// the catalog/ tests.
#pragma once

#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/store/directory_store.hpp"
#include "engine/store/intercept_store.hpp"
#include "engine/storelog/log.hpp"
#include "io/uring.hpp"
#include "tests/io/io_test_support.hpp"

namespace cairn::test {

namespace asio = boost::asio;

struct LogWorld {
  io::test::TempDir dir;
  asio::io_context context{1};
  io::Uring uring{context, 64};
  std::unique_ptr<DirectoryStore> store =
      std::move(*DirectoryStore::open(uring, dir.path() / "store", StoreCreation::createIfMissing));
  InterceptStore::Before before;
  InterceptStore::After after;
  InterceptStore faulty{
      *store,
      [this](StoreOp op, const std::string& key, ByteView bytes,
             const std::string& etag) -> asio::awaitable<std::optional<StoreOutcome>> {
        if (!before) co_return std::nullopt;
        co_return co_await before(op, key, bytes, etag);
      },
      [this](StoreOp op, const std::string& key, StoreStatus s) {
        return after ? after(op, key, s) : std::nullopt;
      }};
  Uuid publisher = *Uuid::parse("5e1f0000-0000-4000-8000-000000000001");
  catalog::LogIdentity id = *catalog::LogIdentity::make(
      *Uuid::parse("7ab1e000-0000-4000-8000-000000000001"), publisher, u"cairn-table:test");

  template <class T>
  T run(asio::awaitable<T> a) {
    return io::test::runToCompletion(context, std::move(a));
  }

  // Reads the log from `from`, collecting the payloads it delivers.
  Res<catalog::LogRead> read(const std::optional<catalog::LogCursor>& from,
                             std::vector<std::string>& got, ObjectStore* through = nullptr) {
    OperationBudget budget;
    return run(catalog::readLog(
        through ? *through : faulty, id, from,
        [&](std::uint64_t, ByteView payload) {
          got.emplace_back(asChars(payload));
          return Res<void>{};
        },
        [&] { got.clear(); }, budget));
  }

  Res<catalog::Appended> append(const std::optional<catalog::LogCursor>& at,
                                std::vector<std::string> records,
                                catalog::AppendOptions options = {}) {
    catalog::LogAppend what;
    for (auto& r : records) {
      ByteView b = asBytes(r);
      what.records.emplace_back(b.begin(), b.end());
    }
    OperationBudget budget;
    return run(catalog::appendLog(faulty, id, at, what, budget, options));
  }

  // Appends and requires it committed; returns the new cursor.
  catalog::LogCursor commit(const std::optional<catalog::LogCursor>& at, std::string record,
                            catalog::AppendOptions options = {}) {
    auto a = append(at, {std::move(record)}, options);
    INFO((a ? a->detail : a.error().message));
    REQUIRE(a.ok());
    REQUIRE(a->outcome == catalog::Appended::Outcome::committed);
    return *a->cursor;
  }
};

}  // namespace cairn::test
