// Small coroutine primitives on Asio for the engine: a one-shot Signal and a Completion that
// carries a value to exactly one waiting coroutine. Both live on one executor's thread.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <deque>
#include <optional>
#include <utility>

namespace cairn {

namespace asio = boost::asio;

// Wakes one waiter once notified; a wait after notify() returns at once. reset() re-arms it.
class Signal {
 public:
  void notify() {
    set_ = true;
    if (waiter_) {
      Handler h = std::move(*waiter_);
      waiter_.reset();
      const auto executor = h.get_executor();
      asio::post(executor, [h = std::move(h)]() mutable { std::move(h)(); });
    }
  }
  void reset() { set_ = false; }
  bool isSet() const { return set_; }

  asio::awaitable<void> wait() {
    if (set_) co_return;
    co_await asio::async_initiate<const asio::use_awaitable_t<>&, void()>(
        [this](Handler handler) { waiter_.emplace(std::move(handler)); }, asio::use_awaitable);
  }

 private:
  // The suspended coroutine itself (no type erasure: no allocation per wait); it is resumed on
  // its own executor.
  using Handler = asio::async_result<asio::use_awaitable_t<>, void()>::handler_type;
  bool set_ = false;
  std::optional<Handler> waiter_;
};

// Delivers one value of type T to the coroutine that awaits it (posted, never inline).
template <class T>
class Completion {
 public:
  // Not a coroutine of its own (one frame fewer per wait): a value delivered before the wait
  // is posted to the waiter like one delivered after.
  asio::awaitable<T> wait() {
    return asio::async_initiate<const asio::use_awaitable_t<>&, void(T)>(
        [this](Handler handler) {
          if (value_) {
            T v = std::move(*value_);
            value_.reset();
            resume(std::move(handler), std::move(v));
          } else {
            waiter_.emplace(std::move(handler));
          }
        },
        asio::use_awaitable);
  }
  void complete(T value) {
    if (waiter_) {
      Handler h = std::move(*waiter_);
      waiter_.reset();
      resume(std::move(h), std::move(value));
    } else {
      value_.emplace(std::move(value));
    }
  }

 private:
  using Handler = typename asio::async_result<asio::use_awaitable_t<>, void(T)>::handler_type;
  static void resume(Handler h, T value) {
    const auto executor = h.get_executor();
    asio::post(executor,
               [h = std::move(h), v = std::move(value)]() mutable { std::move(h)(std::move(v)); });
  }
  std::optional<T> value_;
  std::optional<Handler> waiter_;
};

// A mutex for coroutines on one executor: lock() waits in FIFO order without blocking the
// thread. Use through AsyncMutex::Guard.
class AsyncMutex {
 public:
  class Guard {
   public:
    explicit Guard(AsyncMutex* m) : m_(m) {}
    Guard(Guard&& o) noexcept : m_(std::exchange(o.m_, nullptr)) {}
    Guard& operator=(Guard&&) = delete;
    ~Guard() {
      if (m_) m_->unlock();
    }

   private:
    AsyncMutex* m_;
  };

  asio::awaitable<Guard> lock() {
    if (locked_) {
      Signal turn;
      waiters_.push_back(&turn);
      co_await turn.wait();  // unlock() hands the mutex over: locked_ stays true
    } else {
      locked_ = true;
    }
    co_return Guard(this);
  }

 private:
  void unlock() {
    if (waiters_.empty()) {
      locked_ = false;
      return;
    }
    Signal* next = waiters_.front();
    waiters_.pop_front();
    next->notify();
  }
  bool locked_ = false;
  std::deque<Signal*> waiters_;
};

}  // namespace cairn
