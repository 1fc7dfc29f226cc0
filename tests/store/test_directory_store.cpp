// The directory backend: the shared conformance suite, plus what only a directory shows.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>

#include "base/sha256.hpp"
#include "engine/store/directory_store.hpp"
#include "io/file.hpp"
#include "io/uring.hpp"
#include "tests/store/store_conformance.hpp"

using namespace cairn;
namespace asio = boost::asio;

namespace {
struct DirFixture {
  io::test::TempDir dir;
  asio::io_context context{1};
  io::Uring uring{context, 64};
  std::unique_ptr<DirectoryStore> store =
      std::move(*DirectoryStore::open(uring, dir.path() / "store", StoreCreation::createIfMissing));
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

// Issue 22, defect 7: a symbolic link inside a store was followed: `get` read outside the
// root, `put` and `rm` wrote and deleted outside it, `ls` reported "../outside" keys; a FIFO
// at a key made every reader hang.
TEST_CASE("directory store: links and special files inside it are refused, never followed",
          "[store][directory]") {
  DirFixture f;
  namespace fs = std::filesystem;
  const fs::path root = f.dir.path() / "store";
  const fs::path outside = f.dir.path() / "outside";
  fs::create_directories(outside);
  io::test::writeWholeFile(outside / "target.txt", test::bytesOf("outside the store"));

  SECTION("an object that is a link: get, head, put, rewrite and rm refuse it") {
    fs::create_symlink(outside / "target.txt", root / "linked.bin");
    auto got = test::run(f.context, f.store->get("linked.bin", 1 << 20));
    REQUIRE_FALSE(got.ok());
    CHECK(got.error().status == StoreStatus::failure);
    CHECK(got.error().message.find("symbolic link") != std::string::npos);
    CHECK_FALSE(test::run(f.context, f.store->head("linked.bin")).ok());
    auto put = test::run(f.context, f.store->putIfAbsent("linked.bin", test::bytesOf("x")));
    REQUIRE_FALSE(put.ok());
    CHECK(put.error().status == StoreStatus::preconditionFailed);  // the key is taken
    CHECK_FALSE(test::run(f.context, f.store->rewrite("linked.bin", test::bytesOf("x"))).ok());
    CHECK_FALSE(
        test::run(f.context, f.store->putIfMatch("linked.bin", test::bytesOf("x"), "\"abc\""))
            .ok());
    auto removed = test::run(f.context, f.store->remove("linked.bin"));
    REQUIRE_FALSE(removed.ok());
    CHECK(removed.error().status == StoreStatus::failure);
    CHECK(fs::is_symlink(root / "linked.bin"));
    CHECK(io::test::readWholeFile(outside / "target.txt") == test::bytesOf("outside the store"));
    auto listed = test::run(f.context, f.store->list("", "", 100));
    REQUIRE_FALSE(listed.ok());
    CHECK(listed.error().message.find("linked.bin") != std::string::npos);
  }
  SECTION("a dangling link is never created through") {
    fs::create_symlink(outside / "created.txt", root / "dangling.bin");
    auto put = test::run(f.context, f.store->putIfAbsent("dangling.bin", test::bytesOf("x")));
    REQUIRE_FALSE(put.ok());
    auto rewrite = test::run(f.context, f.store->rewrite("dangling.bin", test::bytesOf("x")));
    REQUIRE_FALSE(rewrite.ok());
    CHECK_FALSE(fs::exists(outside / "created.txt"));
  }
  SECTION("a subdirectory that is a link: nothing beneath it is reached") {
    fs::create_directory_symlink(outside, root / "sub");
    auto got = test::run(f.context, f.store->get("sub/target.txt", 1 << 20));
    REQUIRE_FALSE(got.ok());
    CHECK(got.error().status == StoreStatus::failure);
    auto put = test::run(f.context, f.store->putIfAbsent("sub/new.bin", test::bytesOf("x")));
    REQUIRE_FALSE(put.ok());
    CHECK_FALSE(fs::exists(outside / "new.bin"));
    CHECK_FALSE(test::run(f.context, f.store->remove("sub/target.txt")).ok());
    CHECK(fs::exists(outside / "target.txt"));
    auto listed = test::run(f.context, f.store->list("", "", 100));
    REQUIRE_FALSE(listed.ok());
    CHECK(listed.error().message.find("sub") != std::string::npos);
  }
  SECTION("a FIFO at a key is refused at once, never waited on") {
    REQUIRE(::mkfifo((root / "fifo.bin").c_str(), 0644) == 0);
    auto got = test::run(f.context, f.store->get("fifo.bin", 1 << 20));
    REQUIRE_FALSE(got.ok());
    CHECK(got.error().status == StoreStatus::failure);
    CHECK(got.error().message.find("not a regular file") != std::string::npos);
    CHECK_FALSE(test::run(f.context, f.store->head("fifo.bin")).ok());
    CHECK_FALSE(test::run(f.context, f.store->remove("fifo.bin")).ok());
    CHECK_FALSE(test::run(f.context, f.store->list("", "", 100)).ok());
  }
}

TEST_CASE("directory store: reading never creates a store, and keys name at most 255 bytes a part",
          "[store][directory]") {
  io::test::TempDir dir;
  asio::io_context context{1};
  io::Uring uring{context, 16};
  auto absent = DirectoryStore::open(uring, dir.path() / "typo");
  REQUIRE_FALSE(absent.ok());
  CHECK(absent.error().find("does not exist") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.path() / "typo"));
  auto made = DirectoryStore::open(uring, dir.path() / "new", StoreCreation::createIfMissing);
  REQUIRE(made.ok());
  CHECK(std::filesystem::is_directory(dir.path() / "new"));

  // A component of 255 bytes is a key; one of 256 is refused before any I/O, as on S3.
  const std::string longest(255, 'a');
  CHECK(isValidObjectKey(longest));
  CHECK(isValidObjectKey("dir/" + longest));
  CHECK_FALSE(isValidObjectKey(std::string(256, 'a')));
  CHECK_FALSE(isValidObjectKey("dir/" + std::string(256, 'a') + "/x"));
  CHECK(isValidObjectKey(longest + "/" + longest + "/" + longest + "/" + std::string(255, 'b')));
  auto put = test::run(context, (*made)->putIfAbsent(longest, test::bytesOf("x")));
  REQUIRE(put.ok());
  auto refused =
      test::run(context, (*made)->putIfAbsent(std::string(256, 'a'), test::bytesOf("x")));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("invalid object key") != std::string::npos);
}

// Issue 22, defect 3: temporary names were obj.PID.N opened with O_EXCL and never retried, so
// a leftover of a killed run with the same pid (pid 1 in a container) failed every put; and
// leftovers were never reclaimed nor counted.
TEST_CASE("directory store: leftovers of dead writers never block a put and are reclaimed",
          "[store][directory]") {
  DirFixture f;
  namespace fs = std::filesystem;
  const fs::path temps = f.dir.path() / "store" / ".tmp";
  REQUIRE(test::run(f.context, f.store->putIfAbsent("first.bin", test::bytesOf("1"))).ok());
  // What runs of this very pid left behind, under every name the old scheme would pick.
  for (int n = 0; n < 64; ++n) {
    io::test::writeWholeFile(
        temps / ("obj." + std::to_string(::getpid()) + "." + std::to_string(n)), Bytes(1000, 7));
  }
  REQUIRE(test::run(f.context, f.store->putIfAbsent("second.bin", test::bytesOf("2"))).ok());

  // Old enough and held by no one: reclaimable. A young one, and one a live writer holds
  // (its flock), are in use.
  const auto old = fs::file_time_type::clock::now() - std::chrono::minutes(10);
  for (const auto& e : fs::directory_iterator(temps)) fs::last_write_time(e.path(), old);
  io::test::writeWholeFile(temps / "obj.1.young", Bytes(10, 1));
  io::test::writeWholeFile(temps / "obj.1.held", Bytes(10, 1));
  fs::last_write_time(temps / "obj.1.held", old);
  auto held = io::File::open(temps / "obj.1.held", O_RDONLY);
  REQUIRE(held.ok());
  REQUIRE(::flock(held->fd(), LOCK_EX | LOCK_NB) == 0);

  auto counted = test::run(f.context, f.store->leftovers(false));
  REQUIRE(counted.ok());
  CHECK(counted->files == 64);
  CHECK(counted->bytes == 64 * 1000);
  CHECK(counted->reclaimed == 0);
  CHECK(counted->inUse == 2);
  auto reclaimed = test::run(f.context, f.store->leftovers(true));
  REQUIRE(reclaimed.ok());
  CHECK(reclaimed->reclaimed == 64);
  std::set<std::string> left;
  for (const auto& e : fs::directory_iterator(temps)) left.insert(e.path().filename().string());
  CHECK(left == std::set<std::string>{"obj.1.held", "obj.1.young"});
  // Objects are untouched.
  CHECK(test::run(f.context, f.store->get("first.bin", 10)).ok());
  CHECK(test::run(f.context, f.store->get("second.bin", 10)).ok());
}
