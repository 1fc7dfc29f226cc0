// A store that forwards to another and lets a hook see, replace or follow every request.
// The publisher uses it for its test-only fault points (docs/protocol.md, "Fault points");
// the tests use it to answer with the outcomes of docs/design.md §6.3's observation table
// (uncertain after applying, conflict, failure) and to act between two requests.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "engine/store/object_store.hpp"

namespace cairn {

class InterceptStore final : public ObjectStore {
 public:
  // Before a request: may do anything (including other requests) and may answer in the
  // request's place by returning an outcome; std::nullopt forwards it. `etag` is putIfMatch's
  // precondition (empty for every other request).
  using Before = std::function<boost::asio::awaitable<std::optional<StoreOutcome>>(
      StoreOp op, const std::string& key, ByteView bytes, const std::string& etag)>;
  // After a forwarded request: sees its status and may turn it into another outcome (e.g. an
  // applied write whose answer is "lost": uncertain).
  using After =
      std::function<std::optional<StoreOutcome>(StoreOp op, const std::string& key, StoreStatus)>;

  explicit InterceptStore(ObjectStore& inner, Before before = {}, After after = {})
      : inner_(inner), before_(std::move(before)), after_(std::move(after)) {}

  boost::asio::awaitable<StoreResult<StoredObject>> get(std::string key,
                                                        std::uint64_t maxBytes) override {
    ByteView none;
    std::optional<StoreOutcome> early = co_await intercept(StoreOp::get, key, none, noEtag_);
    if (early) co_return Failure<StoreOutcome>{*early};
    auto r = co_await inner_.get(key, maxBytes);
    if (auto o = follow(StoreOp::get, key, r)) co_return Failure<StoreOutcome>{*o};
    co_return r;
  }
  boost::asio::awaitable<StoreResult<ObjectInfo>> head(std::string key) override {
    ByteView none;
    std::optional<StoreOutcome> early = co_await intercept(StoreOp::head, key, none, noEtag_);
    if (early) co_return Failure<StoreOutcome>{*early};
    auto r = co_await inner_.head(key);
    if (auto o = follow(StoreOp::head, key, r)) co_return Failure<StoreOutcome>{*o};
    co_return r;
  }
  boost::asio::awaitable<StoreResult<std::string>> putIfAbsent(std::string key,
                                                               ByteView bytes) override {
    std::optional<StoreOutcome> early =
        co_await intercept(StoreOp::putIfAbsent, key, bytes, noEtag_);
    if (early) co_return Failure<StoreOutcome>{*early};
    auto r = co_await inner_.putIfAbsent(key, bytes);
    if (auto o = follow(StoreOp::putIfAbsent, key, r)) co_return Failure<StoreOutcome>{*o};
    co_return r;
  }
  boost::asio::awaitable<StoreResult<std::string>> putIfMatch(std::string key, ByteView bytes,
                                                              std::string etag) override {
    std::optional<StoreOutcome> early = co_await intercept(StoreOp::putIfMatch, key, bytes, etag);
    if (early) co_return Failure<StoreOutcome>{*early};
    auto r = co_await inner_.putIfMatch(key, bytes, std::move(etag));
    if (auto o = follow(StoreOp::putIfMatch, key, r)) co_return Failure<StoreOutcome>{*o};
    co_return r;
  }
  boost::asio::awaitable<StoreResult<std::string>> rewrite(std::string key,
                                                           ByteView bytes) override {
    std::optional<StoreOutcome> early = co_await intercept(StoreOp::rewrite, key, bytes, noEtag_);
    if (early) co_return Failure<StoreOutcome>{*early};
    auto r = co_await inner_.rewrite(key, bytes);
    if (auto o = follow(StoreOp::rewrite, key, r)) co_return Failure<StoreOutcome>{*o};
    co_return r;
  }
  boost::asio::awaitable<StoreResult<void>> remove(std::string key) override {
    ByteView none;
    std::optional<StoreOutcome> early = co_await intercept(StoreOp::remove, key, none, noEtag_);
    if (early) co_return Failure<StoreOutcome>{*early};
    auto r = co_await inner_.remove(key);
    if (auto o = follow(StoreOp::remove, key, r)) co_return Failure<StoreOutcome>{*o};
    co_return r;
  }
  boost::asio::awaitable<StoreResult<void>> removeFenced(std::string key,
                                                         DeleteFence fence) override {
    ByteView none;
    std::optional<StoreOutcome> early = co_await intercept(StoreOp::remove, key, none, noEtag_);
    if (early) co_return Failure<StoreOutcome>{*early};
    auto r = co_await inner_.removeFenced(key, fence);
    if (auto o = follow(StoreOp::remove, key, r)) co_return Failure<StoreOutcome>{*o};
    co_return r;
  }
  boost::asio::awaitable<StoreResult<ListPage>> list(std::string prefix, std::string continuation,
                                                     int maxKeys) override {
    ByteView none;
    std::optional<StoreOutcome> early = co_await intercept(StoreOp::list, prefix, none, noEtag_);
    if (early) co_return Failure<StoreOutcome>{*early};
    auto r = co_await inner_.list(prefix, continuation, maxKeys);
    if (auto o = follow(StoreOp::list, prefix, r)) co_return Failure<StoreOutcome>{*o};
    co_return r;
  }
  std::string describe() const override { return inner_.describe(); }
  boost::asio::awaitable<StoreResult<void>> requireConditionalWrites() override {
    co_return co_await inner_.requireConditionalWrites();
  }

 private:
  boost::asio::awaitable<std::optional<StoreOutcome>> intercept(StoreOp op, const std::string& key,
                                                                ByteView bytes,
                                                                const std::string& etag) {
    if (!before_) co_return std::nullopt;
    co_return co_await before_(op, key, bytes, etag);
  }
  template <class R>
  std::optional<StoreOutcome> follow(StoreOp op, const std::string& key, const R& r) {
    if (!after_) return std::nullopt;
    return after_(op, key, r ? StoreStatus::ok : r.error().status);
  }

  ObjectStore& inner_;
  const std::string noEtag_;
  Before before_;
  After after_;
};

}  // namespace cairn
