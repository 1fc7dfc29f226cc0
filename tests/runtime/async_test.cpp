// Signal and Completion (engine/runtime/async.hpp): a waiter is resumed once, on its own
// executor, after the notifier returns (posted, never inline), whether the value came before or
// after the wait; a waiter still suspended when its Signal or Completion is destroyed is
// released (the sanitizer builds find a leak or a use after free).
#include <catch2/catch.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <memory>
#include <string>
#include <vector>

#include "engine/runtime/async.hpp"

using namespace cairn;
namespace asio = boost::asio;

TEST_CASE("Completion: a value given after the wait reaches the waiter, posted", "[runtime]") {
  asio::io_context context;
  Completion<std::string> done;
  std::vector<std::string> events;
  asio::co_spawn(
      context,
      [&]() -> asio::awaitable<void> {
        events.push_back("waiting");
        std::string v = co_await done.wait();
        events.push_back("got " + v);
      },
      asio::detached);
  asio::post(context, [&] {
    done.complete("seven");
    events.push_back("completed");  // before the waiter runs: never resumed inline
  });
  context.run();
  REQUIRE(events == std::vector<std::string>{"waiting", "completed", "got seven"});
}

TEST_CASE("Completion: a value given before the wait is delivered by the wait", "[runtime]") {
  asio::io_context context;
  Completion<int> done;
  done.complete(42);
  std::vector<std::string> events;
  asio::co_spawn(
      context,
      [&]() -> asio::awaitable<void> {
        // Queued before the wait: it runs first only if the wait's value is posted too.
        asio::post(context, [&] { events.push_back("queued before the wait"); });
        int got = co_await done.wait();
        events.push_back("got " + std::to_string(got));
      },
      asio::detached);
  context.run();
  REQUIRE(events == std::vector<std::string>{"queued before the wait", "got 42"});
}

TEST_CASE("Completion and Signal: waiters left suspended are released with them", "[runtime]") {
  auto witness = std::make_shared<int>(-1);  // a released waiter must not be given a value
  {
    asio::io_context context;
    auto done = std::make_unique<Completion<int>>();
    auto signal = std::make_unique<Signal>();
    asio::co_spawn(
        context, [&, keep = witness]() -> asio::awaitable<void> { *keep = co_await done->wait(); },
        asio::detached);
    asio::co_spawn(
        context, [&, keep = witness]() -> asio::awaitable<void> { co_await signal->wait(); },
        asio::detached);
    context.poll();  // both suspend (their work keeps run() from returning): nothing resumes them
    REQUIRE(context.poll() == 0);
    REQUIRE(witness.use_count() == 3);
    done.reset();
    signal.reset();
    context.poll();  // Asio destroys the frames of an abandoned coroutine on its executor
    REQUIRE(witness.use_count() == 1);
  }
  REQUIRE(*witness == -1);
}

TEST_CASE("Signal: notify before or after the wait, and reset re-arms it", "[runtime]") {
  asio::io_context context;
  Signal signal;
  std::vector<std::string> events;
  signal.notify();
  asio::co_spawn(
      context,
      [&]() -> asio::awaitable<void> {
        co_await signal.wait();  // already set: returns at once
        events.push_back("first");
        signal.reset();
        co_await signal.wait();
        events.push_back("second");
      },
      asio::detached);
  asio::post(context, [&] {
    events.push_back("notify");
    signal.notify();
    events.push_back("notified");
  });
  context.run();
  REQUIRE(events == std::vector<std::string>{"first", "notify", "notified", "second"});
  REQUIRE(signal.isSet());
}
