#include "engine/store/counting_store.hpp"

namespace cairn {

namespace asio = boost::asio;

static_assert(static_cast<std::size_t>(StoreOp::probe) + 1 == kStoreOps);
static_assert(static_cast<std::size_t>(StoreStatus::undetermined) + 1 == kStoreStatuses);

std::string_view storeOpName(StoreOp op) {
  switch (op) {
    case StoreOp::get:
      return "get";
    case StoreOp::head:
      return "head";
    case StoreOp::putIfAbsent:
      return "put_if_absent";
    case StoreOp::putIfMatch:
      return "put_if_match";
    case StoreOp::rewrite:
      return "rewrite";
    case StoreOp::remove:
      return "remove";
    case StoreOp::list:
      return "list";
    case StoreOp::leftovers:
      return "leftovers";
    case StoreOp::probe:
      return "probe";
  }
  return "unknown";
}

std::uint64_t StoreStats::total() const {
  std::uint64_t n = 0;
  for (const auto& byStatus : operations) {
    for (std::uint64_t c : byStatus) n += c;
  }
  return n;
}

StoreStats CountingStore::stats() const {
  StoreStats s;
  s.operations = counts_;
  s.transport = inner_->transportStats();
  return s;
}

// Each operation awaits the inner one into a named local (GCC 12 and temporaries in co_await),
// counts it, and returns it unchanged (moved: a get may hold a segment's bytes).
asio::awaitable<StoreResult<StoredObject>> CountingStore::get(std::string key,
                                                              std::uint64_t maxBytes) {
  auto r = co_await inner_->get(std::move(key), maxBytes);
  count(StoreOp::get, r);
  co_return std::move(r);
}

asio::awaitable<StoreResult<StoredObject>> CountingStore::getInto(std::string key,
                                                                  std::uint64_t maxBytes,
                                                                  Bytes storage) {
  auto r = co_await inner_->getInto(std::move(key), maxBytes, std::move(storage));
  count(StoreOp::get, r);
  co_return std::move(r);
}

asio::awaitable<StoreResult<ObjectInfo>> CountingStore::head(std::string key) {
  auto r = co_await inner_->head(std::move(key));
  count(StoreOp::head, r);
  co_return std::move(r);
}

asio::awaitable<StoreResult<std::string>> CountingStore::putIfAbsent(std::string key,
                                                                     ByteView bytes) {
  auto r = co_await inner_->putIfAbsent(std::move(key), bytes);
  count(StoreOp::putIfAbsent, r);
  co_return std::move(r);
}

asio::awaitable<StoreResult<std::string>> CountingStore::putIfAbsentHashed(std::string key,
                                                                           ByteView bytes,
                                                                           Digest sha256) {
  auto r = co_await inner_->putIfAbsentHashed(std::move(key), bytes, sha256);
  count(StoreOp::putIfAbsent, r);
  co_return std::move(r);
}

asio::awaitable<StoreResult<std::string>> CountingStore::putIfMatch(std::string key, ByteView bytes,
                                                                    std::string etag) {
  auto r = co_await inner_->putIfMatch(std::move(key), bytes, std::move(etag));
  count(StoreOp::putIfMatch, r);
  co_return std::move(r);
}

asio::awaitable<StoreResult<std::string>> CountingStore::rewrite(std::string key, ByteView bytes) {
  auto r = co_await inner_->rewrite(std::move(key), bytes);
  count(StoreOp::rewrite, r);
  co_return std::move(r);
}

asio::awaitable<StoreResult<void>> CountingStore::remove(std::string key) {
  auto r = co_await inner_->remove(std::move(key));
  count(StoreOp::remove, r);
  co_return std::move(r);
}

asio::awaitable<StoreResult<void>> CountingStore::removeWithin(std::string key,
                                                               std::chrono::milliseconds timeout) {
  auto r = co_await inner_->removeWithin(std::move(key), timeout);
  count(StoreOp::remove, r);
  co_return std::move(r);
}

asio::awaitable<StoreResult<ListPage>> CountingStore::list(std::string prefix,
                                                           std::string continuation, int maxKeys) {
  auto r = co_await inner_->list(std::move(prefix), std::move(continuation), maxKeys);
  count(StoreOp::list, r);
  co_return std::move(r);
}

asio::awaitable<StoreResult<LeftoverUsage>> CountingStore::leftovers(bool reclaim) {
  auto r = co_await inner_->leftovers(reclaim);
  count(StoreOp::leftovers, r);
  co_return std::move(r);
}

asio::awaitable<StoreResult<void>> CountingStore::requireConditionalWrites() {
  auto r = co_await inner_->requireConditionalWrites();
  count(StoreOp::probe, r);
  co_return std::move(r);
}

}  // namespace cairn
