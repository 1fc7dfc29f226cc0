// Small coroutine primitives on Asio for the engine: a one-shot Signal and a Completion that
// carries a value to exactly one waiting coroutine. Both live on one executor's thread.
#pragma once

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
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
      auto h = std::move(*waiter_);
      waiter_.reset();
      asio::post(*executor_, [h = std::move(h)]() mutable { std::move(h)(); });
    }
  }
  void reset() { set_ = false; }
  bool isSet() const { return set_; }

  asio::awaitable<void> wait() {
    if (set_) co_return;
    executor_.emplace(co_await asio::this_coro::executor);
    co_await asio::async_initiate<const asio::use_awaitable_t<>&, void()>(
        [this](auto handler) { waiter_.emplace(std::move(handler)); }, asio::use_awaitable);
  }

 private:
  bool set_ = false;
  std::optional<asio::any_io_executor> executor_;  // the waiter's, where it is resumed
  std::optional<asio::any_completion_handler<void()>> waiter_;
};

// Delivers one value of type T to the coroutine that awaits it (posted, never inline).
template <class T>
class Completion {
 public:
  asio::awaitable<T> wait() {
    if (value_) co_return std::move(*value_);
    executor_.emplace(co_await asio::this_coro::executor);
    co_return co_await asio::async_initiate<const asio::use_awaitable_t<>&, void(T)>(
        [this](auto handler) { waiter_.emplace(std::move(handler)); }, asio::use_awaitable);
  }
  void complete(T value) {
    if (waiter_) {
      auto h = std::move(*waiter_);
      waiter_.reset();
      asio::post(*executor_, [h = std::move(h), v = std::move(value)]() mutable {
        std::move(h)(std::move(v));
      });
    } else {
      value_.emplace(std::move(value));
    }
  }

 private:
  std::optional<T> value_;
  std::optional<asio::any_io_executor> executor_;
  std::optional<asio::any_completion_handler<void(T)>> waiter_;
};

}  // namespace cairn
