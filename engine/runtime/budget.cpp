#include "engine/runtime/budget.hpp"

#include <algorithm>

#include "base/assert.hpp"

namespace cairn {

Res<void> OperationBudget::reserve(std::uint64_t bytes, std::uint64_t records,
                                   std::uint64_t requests, std::string_view what) {
  auto over = [&](const char* name, std::uint64_t used, std::uint64_t want, std::uint64_t limit) {
    return err(Errc::budget, std::string(name) + " budget exceeded by " + std::string(what) + ": " +
                                 std::to_string(used) + " used + " + std::to_string(want) +
                                 " wanted > " + std::to_string(limit));
  };
  // Compare without overflow: want > limit - used.
  if (bytes > limits_.bytes - std::min(used_.bytes, limits_.bytes)) {
    return over("byte", used_.bytes, bytes, limits_.bytes);
  }
  if (records > limits_.records - std::min(used_.records, limits_.records)) {
    return over("record", used_.records, records, limits_.records);
  }
  if (requests > limits_.requests - std::min(used_.requests, limits_.requests)) {
    return over("request", used_.requests, requests, limits_.requests);
  }
  used_.bytes += bytes;
  used_.records += records;
  used_.requests += requests;
  CAIRN_ASSERT(used_.bytes <= limits_.bytes && used_.records <= limits_.records &&
               used_.requests <= limits_.requests);
  return {};
}

boost::asio::awaitable<InFlightLimit::Permit> InFlightLimit::acquire(std::uint64_t amount) {
  amount = std::min(amount, capacity_);
  if (waiters_.empty() && available_ >= amount) {
    available_ -= amount;
  } else {
    Signal turn;
    waiters_.push_back({amount, &turn});
    co_await turn.wait();  // release() took our amount from available_ before waking us
  }
  CAIRN_ASSERT(available_ <= capacity_);
  peak_ = std::max(peak_, capacity_ - available_);
  co_return Permit(this, amount);
}

void InFlightLimit::release(std::uint64_t amount) {
  available_ += amount;
  CAIRN_ASSERT(available_ <= capacity_);  // a permit hands back only what it took
  // Wake waiters in order while the first one fits.
  while (!waiters_.empty() && waiters_.front().amount <= available_) {
    Waiter w = waiters_.front();
    waiters_.pop_front();
    available_ -= w.amount;
    w.signal->notify();
  }
}

}  // namespace cairn
