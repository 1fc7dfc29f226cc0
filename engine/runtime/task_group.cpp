#include "engine/runtime/task_group.hpp"

namespace cairn {

TaskGroup::~TaskGroup() {
  // Its tasks point into the group (and usually into the frame that owns it) until they end:
  // going away earlier would let them write into freed memory. Never in a correct caller.
  if (running_ != 0) {
    std::fprintf(stderr, "cairn: internal: a task group was destroyed with %zu tasks running\n",
                 running_);
    std::abort();
  }
}

void TaskGroup::fail(Error error) {
  if (!failure_) failure_ = std::move(error);
  room_.notify();  // a spawner waiting for room gives up
}

void TaskGroup::finished(std::exception_ptr thrown, Res<void> outcome) {
  if (thrown) {
    std::string what = "a task ended with an exception";
    try {
      std::rethrow_exception(thrown);
    } catch (const std::exception& e) {
      what += ": ";
      what += e.what();
    } catch (...) {
    }
    if (!failure_) failure_ = Error{Errc::io, what};
  } else if (!outcome && !failure_) {
    failure_ = std::move(outcome).error();
  }
  --running_;
  room_.notify();
  if (running_ == 0) idle_.notify();
}

asio::awaitable<bool> TaskGroup::room() {
  while (running_ >= maxRunning_ && !failure_) {
    room_.reset();
    co_await room_.wait();
  }
  co_return !failure_;
}

asio::awaitable<Res<void>> TaskGroup::wait() {
  while (running_ > 0) {
    idle_.reset();
    co_await idle_.wait();
  }
  if (failure_) co_return Failure<Error>{*failure_};
  co_return Res<void>{};
}

}  // namespace cairn
