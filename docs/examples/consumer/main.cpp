// An embedder's program built against an installed cairn (find_package(cairn), cairn::engine):
// it creates a database that publishes to a directory store, appends records (each
// acknowledged once durable), publishes a checkpoint and checks what it covers.
//   cairn_consumer DIR      (DIR must not exist yet)
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <cairn/engine/database.hpp>
#include <cairn/io/uring.hpp>
#include <cstdio>
#include <filesystem>
#include <string>

namespace asio = boost::asio;

asio::awaitable<int> run(cairn::io::Uring& uring, std::string dir) {
  cairn::PublishTarget target{dir + "/store", cairn::Uuid::random(), cairn::Uuid::random()};
  const std::filesystem::path path = dir + "/db";  // named: no temporary inside co_await
  auto db = co_await cairn::Database::create(uring, path, u"consumer", target);
  if (!db) {
    std::fprintf(stderr, "create: %s\n", db.error().message.c_str());
    co_return 1;
  }
  for (int i = 1; i <= 3; ++i) {
    const std::string record = "record " + std::to_string(i);
    auto sequence = co_await (*db)->append(cairn::asBytes(record));
    if (!sequence) {
      std::fprintf(stderr, "append: %s\n", sequence.error().message.c_str());
      co_return 1;
    }
  }
  auto published = co_await (*db)->checkpoint();
  if (!published) {
    std::fprintf(stderr, "checkpoint: %s\n", published.error().message.c_str());
    co_return 1;
  }
  const auto covered = published->head.fields().prefixSequence;
  std::printf("cairn_consumer: checkpoint covers sequence %llu\n",
              static_cast<unsigned long long>(covered));
  co_return covered == 3 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: cairn_consumer DIR\n");
    return 2;
  }
  asio::io_context context(1);
  auto uring = cairn::io::Uring::create(context);
  if (!uring) {
    std::fprintf(stderr, "io_uring: %s %s\n", uring.error().message().c_str(),
                 cairn::io::Uring::setupRefusal(uring.error()).c_str());
    return 1;
  }
  int code = 1;
  asio::co_spawn(context, run(**uring, argv[1]),
                 [&](std::exception_ptr e, int c) { code = e ? 1 : c; });
  context.run();
  return code;
}
