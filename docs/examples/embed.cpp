// Embedding cairn: create a database that publishes to a directory store, append records
// concurrently (each acknowledged once durable), and publish a checkpoint.
//   cairn_example_embed DIR      (DIR must not exist yet)
// Built and run by the test suite (ctest -R example.embed), so it stays true.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <filesystem>
#include <string>

#include <boost/asio/this_coro.hpp>

#include <cairn/engine/database.hpp>
#include <cairn/engine/runtime/async.hpp>
#include <cairn/io/uring.hpp>

namespace asio = boost::asio;

asio::awaitable<int> run(cairn::io::Uring& uring, std::string dir) {
  cairn::PublishTarget target{dir + "/store", cairn::Uuid::random(), cairn::Uuid::random()};
  const std::filesystem::path path = dir + "/db";  // named: no temporary inside co_await
  auto db = co_await cairn::Database::create(uring, path, u"example", target);
  if (!db) {
    std::fprintf(stderr, "create: %s\n", db.error().message.c_str());
    co_return 1;
  }
  // 1,000 appenders at once: the journal's group commit shares each fdatasync among them.
  int pending = 1000, failures = 0;
  auto executor = co_await asio::this_coro::executor;
  cairn::Signal allDone;
  for (int i = 0; i < 1000; ++i) {
    asio::co_spawn(
        executor,
        [&, record = "event " + std::to_string(i)]() -> asio::awaitable<void> {
          auto sequence = co_await (*db)->append(cairn::asBytes(record));
          if (!sequence) ++failures;  // nothing is acknowledged that is not on disk
          if (--pending == 0) allDone.notify();
        },
        asio::detached);
  }
  co_await allDone.wait();
  if (failures != 0) co_return 1;
  // Selected only if the store really holds it; an unknown outcome is an error here and a
  // pending intent that the next checkpoint() reconciles.
  auto published = co_await (*db)->checkpoint();
  if (!published) {
    std::fprintf(stderr, "checkpoint: %s: %s\n",
                 std::string(errcName(published.error().code)).c_str(),
                 published.error().message.c_str());
    co_return 1;
  }
  std::printf("revision %llu covers sequence %llu, head %s\n",
              static_cast<unsigned long long>(published->head.fields().revision),
              static_cast<unsigned long long>(published->head.fields().prefixSequence),
              cairn::toHex(published->head.id()).c_str());
  co_return published->head.fields().prefixSequence == 1000 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: cairn_example_embed DIR\n");
    return 2;
  }
  asio::io_context context(1);
  auto uring = cairn::io::Uring::create(context);
  if (!uring) return 1;
  int code = 1;
  asio::co_spawn(context, run(**uring, argv[1]),
                 [&](std::exception_ptr e, int c) { code = e ? 1 : c; });
  context.run();
  return code;
}
