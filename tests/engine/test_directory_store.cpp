// The directory backend: the shared conformance suite, plus what only a directory shows.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include "base/sha256.hpp"
#include "engine/store/directory_store.hpp"
#include "io/uring.hpp"
#include "tests/engine/store_conformance.hpp"

using namespace cairn;
namespace asio = boost::asio;

namespace {
struct DirFixture {
  io::test::TempDir dir;
  asio::io_context context{1};
  io::Uring uring{context, 64};
  std::unique_ptr<DirectoryStore> store =
      std::move(*DirectoryStore::open(uring, dir.path() / "store"));
};
}  // namespace

TEST_CASE("directory store conformance", "[store][directory]") {
  DirFixture f;
  test::runStoreConformance(*f.store, f.context, "conf/");
}

TEST_CASE("directory store leaves no temporary files and derives ETags from content",
          "[store][directory]") {
  DirFixture f;
  Bytes b = test::bytesOf("x");
  auto etag = test::run(f.context, f.store->putIfAbsent("k.bin", b));
  REQUIRE(etag.ok());
  CHECK(*etag == "\"" + toHex(sha256(b)) + "\"");
  REQUIRE_FALSE(test::run(f.context, f.store->putIfAbsent("k.bin", b)).ok());
  CHECK(io::test::readWholeFile(f.dir.path() / "store" / "k.bin") == b);
  CHECK(std::filesystem::is_empty(f.dir.path() / "store" / ".tmp"));
  auto listed = test::run(f.context, f.store->list("", "", 100));
  REQUIRE(listed.ok());
  REQUIRE(listed->objects.size() == 1);  // .tmp and .lock are not objects
  CHECK(listed->objects[0].key == "k.bin");
}

TEST_CASE("directory store compare-and-swap excludes another process", "[store][directory]") {
  DirFixture f;
  auto created = test::run(f.context, f.store->putIfAbsent("head", test::bytesOf("v0")));
  REQUIRE(created.ok());
  // Two processes race 20 rounds of read-then-swap on the same key; every successful swap
  // must have seen the value the previous successful swap wrote, so the final counter equals
  // the number of wins in both processes.
  int pipeFd[2];
  REQUIRE(::pipe(pipeFd) == 0);
  auto worker = [&](const char* who) {
    asio::io_context context(1);
    io::Uring uring(context, 16);
    auto store = std::move(*DirectoryStore::open(uring, f.dir.path() / "store"));
    int wins = 0;
    for (int i = 0; i < 20; ++i) {
      auto got = test::run(context, store->get("head", 1024));
      if (!got) continue;
      std::string next = std::string(asChars(got->bytes)) + who;
      auto swapped = test::run(context, store->putIfMatch("head", asBytes(next), got->etag));
      if (swapped) ++wins;
    }
    return wins;
  };
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int wins = worker("c");
    ::_exit(wins);
  }
  int parentWins = worker("p");
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  int childWins = WEXITSTATUS(status);
  auto final = test::run(f.context, f.store->get("head", 1024));
  REQUIRE(final.ok());
  CHECK(final->bytes.size() == 2 + static_cast<std::size_t>(parentWins + childWins));
  CHECK(parentWins + childWins >= 20);
}
