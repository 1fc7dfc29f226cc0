// Budgets (docs/design.md §1.5): operation totals reserved before the effect, and in-flight limits
// shared by all work in one engine.
#pragma once

#include <algorithm>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

#include "engine/error.hpp"
#include "engine/runtime/async.hpp"

namespace cairn {

// Totals one operation (a verification, a checkpoint) may consume. Each effect reserves its
// share first; a reservation that does not fit fails closed and reserves nothing. Repeated
// dependencies (the same object fetched for two graphs) are reserved again.
struct BudgetTotals {
  std::uint64_t bytes = 0;
  std::uint64_t records = 0;
  std::uint64_t requests = 0;
};

// Defaults sized for one machine of this class: 64 GiB of object and journal bytes, every
// record a journal can hold twice over (a predecessor and a candidate), a million requests.
inline constexpr BudgetTotals kDefaultOperationBudget{std::uint64_t{64} << 30,
                                                      std::uint64_t{2} * 268'435'456, 1'000'000};

class OperationBudget {
 public:
  explicit OperationBudget(BudgetTotals limits = kDefaultOperationBudget) : limits_(limits) {}

  // Reserves all three amounts or none; Errc::budget names the budget, the amounts and `what`.
  Res<void> reserve(std::uint64_t bytes, std::uint64_t records, std::uint64_t requests,
                    std::string_view what);
  const BudgetTotals& used() const { return used_; }
  const BudgetTotals& limits() const { return limits_; }

 private:
  BudgetTotals limits_;
  BudgetTotals used_;
};

// A FIFO counting semaphore for coroutines on one executor. An acquire larger than the whole
// capacity is clamped to it (it then runs alone), so one big item never deadlocks.
class InFlightLimit {
 public:
  explicit InFlightLimit(std::uint64_t capacity) : capacity_(capacity), available_(capacity) {}

  class Permit {
   public:
    Permit(InFlightLimit* owner, std::uint64_t amount) : owner_(owner), amount_(amount) {}
    Permit(Permit&& o) noexcept : owner_(std::exchange(o.owner_, nullptr)), amount_(o.amount_) {}
    Permit& operator=(Permit&&) = delete;
    ~Permit() {
      if (owner_) owner_->release(amount_);
    }

   private:
    InFlightLimit* owner_;
    std::uint64_t amount_;
  };

  boost::asio::awaitable<Permit> acquire(std::uint64_t amount);
  std::uint64_t capacity() const { return capacity_; }
  std::uint64_t inUse() const { return capacity_ - available_; }
  std::uint64_t peakInUse() const { return peak_; }

 private:
  struct Waiter {
    std::uint64_t amount;
    Signal* signal;
  };
  void release(std::uint64_t amount);
  std::uint64_t capacity_;
  std::uint64_t available_;
  std::uint64_t peak_ = 0;
  std::deque<Waiter> waiters_;
};

// Defaults of the in-flight limits: 256 MiB, which fits 7 segment objects of a little over
// 32 MiB (a segment's target, its header and the rest of its last record): 4 of them
// transferring (transfersAtOnce) and 5 held by one operation (segmentsHeld); and as many
// requests as the S3 client keeps connections.
inline constexpr std::uint64_t kDefaultInFlightBytes = std::uint64_t{256} << 20;
inline constexpr std::uint64_t kDefaultInFlightRequests = 16;

// How many of an operation's transfers of about `itemBytes` each to run at once when `held`
// bytes may be in flight: half of the items that fit, rounded up (at least 1). Transfers that
// share the network progress together and end together: with every held buffer transferring,
// the network idled while the next batch was prepared (docs/decisions/, "Transfers use half
// the byte limit").
inline std::uint64_t transfersAtOnce(std::uint64_t held, std::uint64_t itemBytes) {
  const std::uint64_t fit = held / std::max<std::uint64_t>(1, itemBytes);
  return std::max<std::uint64_t>(1, (fit + 1) / 2);
}

// How many items an operation holds in memory while `transfers` of them transfer: one more,
// the next segment read and hashed before an upload, or the fetched one being checked after a
// download. Preparing or checking one takes a small part of a transfer's time, so more held
// items only cost fresh memory (slow to fault in on some machines), and they took byte limit
// the engine's other operations share (docs/decisions/, "One segment more than transfer").
inline std::uint64_t segmentsHeld(std::uint64_t transfers) { return transfers + 1; }

// The limits shared by everything running in one engine.
struct EngineLimits {
  // Bytes held in memory by reads and requests in flight (segment bodies, journal ranges).
  InFlightLimit bytes{kDefaultInFlightBytes};
  // Object-store requests in flight.
  InFlightLimit requests{kDefaultInFlightRequests};
};

}  // namespace cairn
