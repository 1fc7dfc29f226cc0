// An ObjectStore that forwards every operation to another and counts them by kind and by
// outcome (Database::stats(), --metrics-file). It adds nothing else: the same answers, the
// same order, no retries of its own.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>

#include "engine/store/object_store.hpp"

namespace cairn {

inline constexpr std::size_t kStoreOps = 9;       // StoreOp's values
inline constexpr std::size_t kStoreStatuses = 7;  // StoreStatus's values

struct StoreStats {
  // operations[op][status]: finished operations of each kind, by the StoreStatus they ended in.
  std::array<std::array<std::uint64_t, kStoreStatuses>, kStoreOps> operations{};
  // What the transport did under them; absent for a store without one (the directory store).
  std::optional<StoreTransportStats> transport;

  std::uint64_t total() const;
};

class CountingStore final : public ObjectStore {
 public:
  explicit CountingStore(std::unique_ptr<ObjectStore> inner) : inner_(std::move(inner)) {}

  StoreStats stats() const;
  ObjectStore& inner() { return *inner_; }

  boost::asio::awaitable<StoreResult<StoredObject>> get(std::string key,
                                                        std::uint64_t maxBytes) override;
  boost::asio::awaitable<StoreResult<StoredObject>> getInto(std::string key, std::uint64_t maxBytes,
                                                            Bytes storage) override;
  boost::asio::awaitable<StoreResult<ObjectInfo>> head(std::string key) override;
  boost::asio::awaitable<StoreResult<std::string>> putIfAbsent(std::string key,
                                                               ByteView bytes) override;
  boost::asio::awaitable<StoreResult<std::string>> putIfAbsentHashed(std::string key,
                                                                     ByteView bytes,
                                                                     Digest sha256) override;
  boost::asio::awaitable<StoreResult<std::string>> putIfMatch(std::string key, ByteView bytes,
                                                              std::string etag) override;
  boost::asio::awaitable<StoreResult<std::string>> rewrite(std::string key,
                                                           ByteView bytes) override;
  boost::asio::awaitable<StoreResult<void>> remove(std::string key) override;
  boost::asio::awaitable<StoreResult<void>> removeWithin(
      std::string key, std::chrono::milliseconds timeout) override;
  boost::asio::awaitable<StoreResult<ListPage>> list(std::string prefix, std::string continuation,
                                                     int maxKeys) override;
  boost::asio::awaitable<StoreResult<LeftoverUsage>> leftovers(bool reclaim) override;
  std::string describe() const override { return inner_->describe(); }
  boost::asio::awaitable<StoreResult<void>> requireConditionalWrites() override;
  std::optional<StoreTransportStats> transportStats() const override {
    return inner_->transportStats();
  }

 private:
  template <class T>
  void count(StoreOp op, const StoreResult<T>& result) {
    const StoreStatus status = result.ok() ? StoreStatus::ok : result.error().status;
    ++counts_[static_cast<std::size_t>(op)][static_cast<std::size_t>(status)];
  }

  std::unique_ptr<ObjectStore> inner_;
  std::array<std::array<std::uint64_t, kStoreStatuses>, kStoreOps> counts_{};
};

}  // namespace cairn
