// TaskGroup: bounded fan-out whose tasks release what they captured before they count as
// finished (engine/runtime/task_group.hpp).
#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <memory>
#include <stdexcept>
#include <vector>

#include "engine/runtime/task_group.hpp"
#include "tests/io/io_test_support.hpp"

using namespace cairn;
namespace asio = boost::asio;
using io::test::runToCompletion;

namespace {

// Records, when destroyed, how many tasks its group still counted as running.
struct Witness {
  TaskGroup* group;
  std::vector<std::size_t>* seen;
  Witness(TaskGroup* g, std::vector<std::size_t>* s) : group(g), seen(s) {}
  Witness(Witness&& o) noexcept : group(std::exchange(o.group, nullptr)), seen(o.seen) {}
  Witness& operator=(Witness&&) = delete;
  ~Witness() {
    if (group) seen->push_back(group->running());
  }
};

asio::awaitable<void> yieldOnce() {
  co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
}

}  // namespace

TEST_CASE("task group: a task's captures are destroyed before it counts as finished",
          "[task_group]") {
  asio::io_context context(1);
  std::vector<std::size_t> seen;
  std::size_t runningAfterWait = 99;
  auto body = [&]() -> asio::awaitable<Res<void>> {
    TaskGroup group(co_await asio::this_coro::executor);
    for (int i = 0; i < 3; ++i) {
      REQUIRE(co_await group.room());
      group.start([w = Witness(&group, &seen)]() -> asio::awaitable<Res<void>> {
        co_await yieldOnce();
        co_return Res<void>{};
      });
    }
    auto all = co_await group.wait();
    runningAfterWait = group.running();
    co_return all;
  };
  auto r = runToCompletion(context, body());
  REQUIRE(r.ok());
  // Each witness saw its own task still counted: 3, 2, 1 running in some order.
  REQUIRE(seen.size() == 3);
  for (std::size_t n : seen) CHECK(n >= 1);
  CHECK(runningAfterWait == 0);
}

TEST_CASE("task group: at most maxRunning tasks run at once", "[task_group]") {
  asio::io_context context(1);
  std::size_t now = 0, peak = 0, done = 0;
  auto body = [&]() -> asio::awaitable<Res<void>> {
    TaskGroup group(co_await asio::this_coro::executor, 3);
    for (int i = 0; i < 20; ++i) {
      REQUIRE(co_await group.room());
      group.start([&]() -> asio::awaitable<Res<void>> {
        peak = std::max(peak, ++now);
        for (int k = 0; k < 3; ++k) co_await yieldOnce();
        --now;
        ++done;
        co_return Res<void>{};
      });
    }
    co_return co_await group.wait();
  };
  REQUIRE(runToCompletion(context, body()).ok());
  CHECK(peak == 3);
  CHECK(done == 20);
}

TEST_CASE("task group: the first failure wins, the rest drain, nothing more starts",
          "[task_group]") {
  asio::io_context context(1);
  int finished = 0;
  bool refused = false;
  auto body = [&]() -> asio::awaitable<Res<void>> {
    TaskGroup group(co_await asio::this_coro::executor, 2);
    group.start([&]() -> asio::awaitable<Res<void>> {
      co_await yieldOnce();
      ++finished;
      co_return err(Errc::store, "first");
    });
    group.start([&]() -> asio::awaitable<Res<void>> {
      for (int k = 0; k < 5; ++k) co_await yieldOnce();
      ++finished;
      co_return err(Errc::io, "second");
    });
    refused = !(co_await group.room());  // room comes only once the first has failed
    CHECK(group.failed());
    co_return co_await group.wait();
  };
  auto r = runToCompletion(context, body());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "first");
  CHECK(refused);
  CHECK(finished == 2);  // the second ran to its end
}

TEST_CASE("task group: an exception escaping a task is the group's failure", "[task_group]") {
  asio::io_context context(1);
  auto body = [&]() -> asio::awaitable<Res<void>> {
    TaskGroup group(co_await asio::this_coro::executor);
    group.start([]() -> asio::awaitable<Res<void>> {
      co_await yieldOnce();
      throw std::runtime_error("allocation failed");
    });
    group.fail(Error{Errc::usage, "the spawner's, recorded first"});
    co_return co_await group.wait();
  };
  auto r = runToCompletion(context, body());
  REQUIRE_FALSE(r.ok());
  // fail() came first: the task was still suspended when the spawner failed.
  CHECK(r.error().message == "the spawner's, recorded first");

  auto thrown = [&]() -> asio::awaitable<Res<void>> {
    TaskGroup group(co_await asio::this_coro::executor);
    group.start([]() -> asio::awaitable<Res<void>> {
      co_await yieldOnce();
      throw std::runtime_error("allocation failed");
    });
    co_return co_await group.wait();
  };
  auto t = runToCompletion(context, thrown());
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().message.find("allocation failed") != std::string::npos);
}
