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
  return StoreStats{{*counters_}, inner_->transportStats()};
}

std::optional<StoreOutcome> CountingStore::refused(StoreOp op) {
  if (!admit_) return std::nullopt;
  std::optional<StoreOutcome> answer = admit_(op);
  if (answer) {
    ++counters_->operations[static_cast<std::size_t>(op)][static_cast<std::size_t>(answer->status)];
  }
  return answer;
}

// Each operation asks the admission, awaits the inner one into a named local (GCC 12 and
// temporaries in co_await), counts it, and returns it unchanged (moved: a get may hold a
// segment's bytes).
asio::awaitable<StoreResult<StoredObject>> CountingStore::get(std::string key,
                                                              std::uint64_t maxBytes) {
  if (auto no = refused(StoreOp::get)) co_return Failure<StoreOutcome>{std::move(*no)};
  auto r = co_await inner_->get(std::move(key), maxBytes);
  count(StoreOp::get, r);
  if (r) counters_->bytesRead += r->bytes.size();
  co_return std::move(r);
}

asio::awaitable<StoreResult<StoredObject>> CountingStore::getInto(std::string key,
                                                                  std::uint64_t maxBytes,
                                                                  Bytes storage) {
  if (auto no = refused(StoreOp::get)) co_return Failure<StoreOutcome>{std::move(*no)};
  auto r = co_await inner_->getInto(std::move(key), maxBytes, std::move(storage));
  count(StoreOp::get, r);
  if (r) counters_->bytesRead += r->bytes.size();
  co_return std::move(r);
}

asio::awaitable<StoreResult<ObjectInfo>> CountingStore::head(std::string key) {
  if (auto no = refused(StoreOp::head)) co_return Failure<StoreOutcome>{std::move(*no)};
  auto r = co_await inner_->head(std::move(key));
  count(StoreOp::head, r);
  co_return std::move(r);
}

asio::awaitable<StoreResult<std::string>> CountingStore::putIfAbsent(std::string key,
                                                                     ByteView bytes) {
  if (auto no = refused(StoreOp::putIfAbsent)) co_return Failure<StoreOutcome>{std::move(*no)};
  auto r = co_await inner_->putIfAbsent(std::move(key), bytes);
  count(StoreOp::putIfAbsent, r);
  if (r) counters_->bytesWritten += bytes.size();
  co_return std::move(r);
}

asio::awaitable<StoreResult<std::string>> CountingStore::putIfAbsentHashed(std::string key,
                                                                           ByteView bytes,
                                                                           Digest sha256) {
  if (auto no = refused(StoreOp::putIfAbsent)) co_return Failure<StoreOutcome>{std::move(*no)};
  auto r = co_await inner_->putIfAbsentHashed(std::move(key), bytes, sha256);
  count(StoreOp::putIfAbsent, r);
  if (r) counters_->bytesWritten += bytes.size();
  co_return std::move(r);
}

asio::awaitable<StoreResult<std::string>> CountingStore::putIfMatch(std::string key, ByteView bytes,
                                                                    std::string etag) {
  if (auto no = refused(StoreOp::putIfMatch)) co_return Failure<StoreOutcome>{std::move(*no)};
  auto r = co_await inner_->putIfMatch(std::move(key), bytes, std::move(etag));
  count(StoreOp::putIfMatch, r);
  if (r) counters_->bytesWritten += bytes.size();
  co_return std::move(r);
}

asio::awaitable<StoreResult<std::string>> CountingStore::rewrite(std::string key, ByteView bytes) {
  if (auto no = refused(StoreOp::rewrite)) co_return Failure<StoreOutcome>{std::move(*no)};
  auto r = co_await inner_->rewrite(std::move(key), bytes);
  count(StoreOp::rewrite, r);
  if (r) counters_->bytesWritten += bytes.size();
  co_return std::move(r);
}

asio::awaitable<StoreResult<void>> CountingStore::remove(std::string key) {
  if (auto no = refused(StoreOp::remove)) co_return Failure<StoreOutcome>{std::move(*no)};
  auto r = co_await inner_->remove(std::move(key));
  count(StoreOp::remove, r);
  co_return std::move(r);
}

asio::awaitable<StoreResult<void>> CountingStore::removeFenced(std::string key, DeleteFence fence) {
  if (auto no = refused(StoreOp::remove)) co_return Failure<StoreOutcome>{std::move(*no)};
  auto r = co_await inner_->removeFenced(std::move(key), fence);
  count(StoreOp::remove, r);
  co_return std::move(r);
}

asio::awaitable<StoreResult<ListPage>> CountingStore::list(std::string prefix,
                                                           std::string continuation, int maxKeys) {
  if (auto no = refused(StoreOp::list)) co_return Failure<StoreOutcome>{std::move(*no)};
  auto r = co_await inner_->list(std::move(prefix), std::move(continuation), maxKeys);
  count(StoreOp::list, r);
  co_return std::move(r);
}

asio::awaitable<StoreResult<LeftoverUsage>> CountingStore::leftovers(bool reclaim) {
  if (auto no = refused(StoreOp::leftovers)) co_return Failure<StoreOutcome>{std::move(*no)};
  auto r = co_await inner_->leftovers(reclaim);
  count(StoreOp::leftovers, r);
  co_return std::move(r);
}

asio::awaitable<StoreResult<void>> CountingStore::requireConditionalWrites() {
  if (auto no = refused(StoreOp::probe)) co_return Failure<StoreOutcome>{std::move(*no)};
  auto r = co_await inner_->requireConditionalWrites();
  count(StoreOp::probe, r);
  co_return std::move(r);
}

}  // namespace cairn
