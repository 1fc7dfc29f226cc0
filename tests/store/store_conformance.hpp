// One conformance suite for every ObjectStore backend: the same assertions run against the
// directory store (always) and S3 (against RGW). `prefix` isolates one run's keys.
#pragma once

#include <catch2/catch.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <set>
#include <string>
#include <vector>

#include "engine/store/object_store.hpp"
#include "tests/io/io_test_support.hpp"

namespace cairn::test {

namespace asio = boost::asio;

inline Bytes bytesOf(std::string_view s) {
  ByteView b = asBytes(s);
  return Bytes(b.begin(), b.end());
}

template <class T>
T run(asio::io_context& context, asio::awaitable<T> task) {
  return io::test::runToCompletion(context, std::move(task));
}

// Runs `n` copies of an operation at once; returns each outcome's status.
template <class MakeTask>
std::vector<StoreStatus> race(asio::io_context& context, int n, MakeTask makeTask) {
  std::vector<StoreStatus> statuses(n, StoreStatus::failure);
  for (int i = 0; i < n; ++i) {
    asio::co_spawn(
        context,
        [&, i]() -> asio::awaitable<void> {
          auto r = co_await makeTask(i);
          statuses[i] = r ? StoreStatus::ok : r.error().status;
        },
        asio::detached);
  }
  context.restart();
  context.run();
  return statuses;
}

// Exactly one racer won; every loser was told so (precondition failed or conflict), never ok.
inline void expectOneWinner(const std::vector<StoreStatus>& statuses) {
  int wins = 0;
  for (auto s : statuses) {
    if (s == StoreStatus::ok) {
      ++wins;
    } else {
      CHECK((s == StoreStatus::preconditionFailed || s == StoreStatus::conflict));
    }
  }
  CHECK(wins == 1);
}

inline void checkStrongEtag(const std::string& etag) {
  REQUIRE(etag.size() >= 3);
  CHECK(etag.front() == '"');
  CHECK(etag.back() == '"');
  CHECK(etag.rfind("W/", 0) == std::string::npos);
}

inline void runStoreConformance(ObjectStore& store, asio::io_context& context,
                                const std::string& prefix) {
  const std::string a = prefix + "a.bin";
  Bytes one = bytesOf("first contents");
  Bytes two = bytesOf("second, longer contents");

  SECTION("a missing key is missing, not a failure") {
    auto got = run(context, store.get(prefix + "never-written", 1 << 20));
    REQUIRE_FALSE(got.ok());
    CHECK(got.error().status == StoreStatus::missing);
    auto head = run(context, store.head(prefix + "never-written"));
    REQUIRE_FALSE(head.ok());
    CHECK(head.error().status == StoreStatus::missing);
  }
  SECTION("create-if-absent, then get and head give the bytes and one strong ETag") {
    auto created = run(context, store.putIfAbsent(a, one));
    REQUIRE(created.ok());
    checkStrongEtag(*created);
    auto got = run(context, store.get(a, 1 << 20));
    REQUIRE(got.ok());
    CHECK(got->bytes == one);
    CHECK(got->etag == *created);
    auto head = run(context, store.head(a));
    REQUIRE(head.ok());
    CHECK(head->size == one.size());
    CHECK(head->etag == *created);

    auto again = run(context, store.putIfAbsent(a, two));
    REQUIRE_FALSE(again.ok());
    CHECK(again.error().status == StoreStatus::preconditionFailed);
    CHECK(run(context, store.get(a, 1 << 20))->bytes == one);
  }
  SECTION("create-if-absent with the bytes' SHA-256 writes them, and refuses bytes it misnames") {
    auto created = run(context, store.putIfAbsentHashed(a, one, sha256(one)));
    REQUIRE(created.ok());
    checkStrongEtag(*created);
    CHECK(run(context, store.get(a, 1 << 20))->bytes == one);
    auto exists = run(context, store.putIfAbsentHashed(a, two, sha256(two)));
    REQUIRE_FALSE(exists.ok());
    CHECK(exists.error().status == StoreStatus::preconditionFailed);
    const std::string b = prefix + "b.bin";
    auto misnamed = run(context, store.putIfAbsentHashed(b, one, sha256(two)));
    REQUIRE_FALSE(misnamed.ok());
    CHECK(misnamed.error().status == StoreStatus::failure);
    CHECK(run(context, store.get(b, 1 << 20)).error().status == StoreStatus::missing);
  }
  SECTION("a get into a caller's buffer gives only the object, in that buffer when it fits") {
    REQUIRE(run(context, store.putIfAbsent(a, two)).ok());
    Bytes roomy(100, 0xEE);  // stale contents must not survive
    roomy.reserve(4096);
    const std::uint8_t* memory = roomy.data();
    auto got = run(context, store.getInto(a, 1 << 20, std::move(roomy)));
    REQUIRE(got.ok());
    CHECK(got->bytes == two);
    CHECK(got->bytes.data() == memory);
    auto grown = run(context, store.getInto(a, 1 << 20, Bytes(3, 0xEE)));
    REQUIRE(grown.ok());
    CHECK(grown->bytes == two);
    auto over = run(context, store.getInto(a, two.size() - 1, Bytes(4096, 0xEE)));
    REQUIRE_FALSE(over.ok());
    CHECK(over.error().status == StoreStatus::failure);
  }
  SECTION("a get over the caller's bound is a failure") {
    REQUIRE(run(context, store.putIfAbsent(a, two)).ok());
    auto got = run(context, store.get(a, two.size() - 1));
    REQUIRE_FALSE(got.ok());
    CHECK(got.error().status == StoreStatus::failure);
    CHECK(run(context, store.get(a, two.size())).ok());
  }
  SECTION("put-immutable reuses identical bytes and refuses different ones") {
    auto first = run(context, store.putImmutable(a, one));
    REQUIRE(first.ok());
    auto same = run(context, store.putImmutable(a, one));
    REQUIRE(same.ok());
    CHECK(*same == *first);
    auto different = run(context, store.putImmutable(a, two));
    REQUIRE_FALSE(different.ok());
    CHECK(different.error().status == StoreStatus::failure);
    auto longer = run(context, store.putImmutable(a, bytesOf("first contents, and more")));
    REQUIRE_FALSE(longer.ok());
    CHECK(longer.error().status == StoreStatus::failure);
  }
  SECTION("compare-and-swap replaces only on the current ETag") {
    auto created = run(context, store.putIfAbsent(a, one));
    REQUIRE(created.ok());
    auto swapped = run(context, store.putIfMatch(a, two, *created));
    REQUIRE(swapped.ok());
    checkStrongEtag(*swapped);
    CHECK(*swapped != *created);
    auto got = run(context, store.get(a, 1 << 20));
    CHECK(got->bytes == two);
    CHECK(got->etag == *swapped);
    auto stale = run(context, store.putIfMatch(a, one, *created));
    REQUIRE_FALSE(stale.ok());
    CHECK(stale.error().status == StoreStatus::preconditionFailed);
    CHECK(run(context, store.get(a, 1 << 20))->bytes == two);
    auto absent = run(context, store.putIfMatch(prefix + "absent.bin", one, *created));
    REQUIRE_FALSE(absent.ok());
    CHECK(absent.error().status == StoreStatus::preconditionFailed);
    CHECK(run(context, store.get(prefix + "absent.bin", 1 << 20)).error().status ==
          StoreStatus::missing);
  }
  SECTION("delete removes; deleting a missing key is ok") {
    REQUIRE(run(context, store.putIfAbsent(a, one)).ok());
    REQUIRE(run(context, store.remove(a)).ok());
    CHECK(run(context, store.get(a, 1 << 20)).error().status == StoreStatus::missing);
    CHECK(run(context, store.remove(a)).ok());
  }
  SECTION("list pages through every key of a prefix exactly once, in order") {
    std::set<std::string> written;
    for (int i = 0; i < 11; ++i) {
      std::string key = prefix + "list/k" + std::to_string(100 + i);
      REQUIRE(run(context, store.putIfAbsent(key, one)).ok());
      written.insert(key);
    }
    REQUIRE(run(context, store.putIfAbsent(prefix + "other.bin", one)).ok());
    std::vector<std::string> seen;
    std::string continuation;
    for (int page = 0; page < 20; ++page) {
      auto listed = run(context, store.list(prefix + "list/", continuation, 4));
      REQUIRE(listed.ok());
      CHECK(listed->objects.size() <= 4);
      for (const auto& o : listed->objects) {
        seen.push_back(o.key);
        CHECK(o.size == one.size());
      }
      continuation = listed->continuation;
      if (continuation.empty()) break;
    }
    CHECK(continuation.empty());
    CHECK(std::is_sorted(seen.begin(), seen.end()));
    CHECK(std::set<std::string>(seen.begin(), seen.end()) == written);
    CHECK(seen.size() == written.size());
  }
  SECTION("invalid keys are refused before any I/O") {
    for (std::string bad : {std::string(""), std::string("/abs"), std::string("a/../b"),
                            std::string("a//b"), std::string(".hidden"), std::string("sp ace"),
                            std::string(kMaxObjectKeyBytes + 1, 'k')}) {
      auto r = run(context, store.putIfAbsent(bad, one));
      REQUIRE_FALSE(r.ok());
      CHECK(r.error().status == StoreStatus::failure);
    }
  }
  SECTION("16 concurrent creators: exactly one wins, the rest are refused") {
    // The bodies outlive the race: a coroutine keeps a view of its body until it finishes.
    std::vector<Bytes> bodies;
    for (int i = 0; i < 16; ++i) bodies.push_back(bytesOf("creator " + std::to_string(i)));
    auto statuses = race(context, 16, [&](int i) {
      return store.putIfAbsent(prefix + "race-create.bin", bodies[i]);
    });
    expectOneWinner(statuses);
  }
  SECTION("16 concurrent compare-and-swaps on one observed ETag: exactly one wins") {
    auto created = run(context, store.putIfAbsent(prefix + "race-cas.bin", one));
    REQUIRE(created.ok());
    std::string observed = *created;
    std::vector<Bytes> bodies;
    for (int i = 0; i < 16; ++i) bodies.push_back(bytesOf("swapper " + std::to_string(i)));
    auto statuses = race(context, 16, [&](int i) {
      return store.putIfMatch(prefix + "race-cas.bin", bodies[i], observed);
    });
    expectOneWinner(statuses);
  }
}

}  // namespace cairn::test
