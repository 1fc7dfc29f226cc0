// An ObjectStore that forwards every operation to another and counts them by kind and by
// outcome, and the bytes they moved (Database::stats(), --metrics-file, the command line's
// progress). It adds nothing else, with one option: an admission check that may refuse an
// operation before it is sent (the command line's stop on SIGINT/SIGTERM). Otherwise the same
// answers, the same order, no retries of its own.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "engine/store/object_store.hpp"

namespace cairn {

inline constexpr std::size_t kStoreOps = 9;       // StoreOp's values
inline constexpr std::size_t kStoreStatuses = 7;  // StoreStatus's values

// What a CountingStore counts; several stores may count into one (a command's source and
// target). Touched on the stores' executor only.
struct StoreCounters {
  // operations[op][status]: finished operations of each kind, by the StoreStatus they ended in.
  std::array<std::array<std::uint64_t, kStoreStatuses>, kStoreOps> operations{};
  std::uint64_t bytesWritten = 0;  // bodies of the writes that succeeded
  std::uint64_t bytesRead = 0;     // bodies of the reads that succeeded
};

// Asked before every operation: std::nullopt sends it; an outcome answers in its place (counted
// as that outcome). A refusal must be true of a request never sent: a failure, not uncertain.
using StoreAdmission = std::function<std::optional<StoreOutcome>(StoreOp op)>;

// The counters, and what the transport did under them.
struct StoreStats : StoreCounters {
  // What the transport did under them; absent for a store without one (the directory store).
  std::optional<StoreTransportStats> transport;

  std::uint64_t total() const;
};

class CountingStore final : public ObjectStore {
 public:
  // `counters` shared with other stores, or (null) its own; `admit` empty: everything is sent.
  explicit CountingStore(std::unique_ptr<ObjectStore> inner,
                         std::shared_ptr<StoreCounters> counters = nullptr,
                         StoreAdmission admit = {})
      : inner_(std::move(inner)),
        counters_(counters ? std::move(counters) : std::make_shared<StoreCounters>()),
        admit_(std::move(admit)) {}

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
  boost::asio::awaitable<StoreResult<void>> removeFenced(std::string key,
                                                         DeleteFence fence) override;
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
    ++counters_->operations[static_cast<std::size_t>(op)][static_cast<std::size_t>(status)];
  }
  // The admission's answer, counted, when it refuses `op`.
  std::optional<StoreOutcome> refused(StoreOp op);

  std::unique_ptr<ObjectStore> inner_;
  std::shared_ptr<StoreCounters> counters_;
  StoreAdmission admit_;
};

}  // namespace cairn
