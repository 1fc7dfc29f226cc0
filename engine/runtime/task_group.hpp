// TaskGroup: bounded fan-out of coroutines on one executor, with one shared outcome.
//
// Why it exists: a task spawned with co_spawn(executor, lambda, detached) keeps the lambda,
// and so everything it captured (permits of the engine's in-flight limits, buffers, views of
// the spawner's frame), in co_spawn's own frame, which Asio destroys *after* the task's body
// has returned. A task that signalled "done" from its body therefore still released permits
// after its spawner had moved on and freed what they point into: a checkpoint whose upload
// failed corrupted the heap (docs/decisions/, "Fan-out through TaskGroup").
//
// A TaskGroup makes that impossible by construction. start() moves the callable into the
// task's own coroutine frame, and the task counts as finished only in co_spawn's completion
// handler, which Asio runs after that frame (the callable, its captures, the task's locals)
// is destroyed. So when wait() returns, no task of the group touches anything anymore.
//
//   TaskGroup group(executor, 4);                 // at most 4 tasks at once
//   for (auto& item : items) {
//     if (!co_await group.room()) break;          // a task failed: start nothing more
//     group.start([&item, permit = std::move(p)]() -> awaitable<Res<void>> {
//       co_return co_await work(item);
//     });
//   }
//   Res<void> all = co_await group.wait();        // every task ended; the first error wins
//
// The first failure (a task's error, an exception escaping a task, or fail()) wins; the
// other tasks are drained, not interrupted: they run to their end and may look at failed()
// to skip work. One coroutine at a time may be suspended in room() or wait().
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <optional>
#include <utility>

#include "engine/error.hpp"
#include "engine/runtime/async.hpp"

namespace cairn {

class TaskGroup {
 public:
  static constexpr std::size_t kUnbounded = std::numeric_limits<std::size_t>::max();

  // At most `maxRunning` tasks run at once (0 counts as 1); room() waits for one to end.
  explicit TaskGroup(asio::any_io_executor executor, std::size_t maxRunning = kUnbounded)
      : executor_(std::move(executor)), maxRunning_(maxRunning == 0 ? 1 : maxRunning) {}
  // A group is waited for before it goes away: its tasks point into it until they end.
  ~TaskGroup();
  TaskGroup(const TaskGroup&) = delete;
  TaskGroup& operator=(const TaskGroup&) = delete;

  // Waits until fewer than maxRunning tasks run. False when the group has failed: start
  // nothing more.
  asio::awaitable<bool> room();
  // Starts `task`, a callable returning asio::awaitable<Res<void>>, now: after room() said
  // true (or at once in an unbounded group). A plain call, not a co_await: GCC 12 destroys
  // temporaries of a co_await operand that owns a lambda twice (docs/decisions/).
  template <class F>
  void start(F task) {
    if (running_ >= maxRunning_ || failure_) {
      std::fprintf(stderr, "cairn: internal: a task started without room in its group\n");
      std::abort();
    }
    ++running_;
    ++started_;
    asio::co_spawn(executor_, run(std::move(task)),
                   [this](std::exception_ptr thrown, Res<void> outcome) {
                     finished(thrown, std::move(outcome));
                   });
  }

  // Records a failure of the group's own (the spawner's): it wins if it is the first.
  void fail(Error error);
  bool failed() const { return failure_.has_value(); }
  std::size_t running() const { return running_; }
  std::size_t started() const { return started_; }

  // Waits until every started task has finished; returns the first failure, if any.
  asio::awaitable<Res<void>> wait();

 private:
  // The task's frame owns the callable: it is destroyed when this coroutine ends, before
  // co_spawn calls the completion handler.
  template <class F>
  static asio::awaitable<Res<void>> run(F task) {
    co_return co_await task();
  }
  void finished(std::exception_ptr thrown, Res<void> outcome);

  asio::any_io_executor executor_;
  std::size_t maxRunning_;
  std::size_t running_ = 0;
  std::size_t started_ = 0;
  std::optional<Error> failure_;
  Signal room_;  // a task finished: room() may let the next start
  Signal idle_;  // no task runs
};

}  // namespace cairn
