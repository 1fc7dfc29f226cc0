// DirectoryLock: one owner per directory, in this process and across processes.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <optional>

#include "io/lock.hpp"
#include "tests/io/io_test_support.hpp"

using cairn::io::DirectoryLock;
using cairn::io::test::readWholeFile;
using cairn::io::test::TempDir;

namespace {

// Exit codes a forked child reports.
constexpr int kChildRefused = 0;   // acquire failed with EWOULDBLOCK
constexpr int kChildAcquired = 1;  // acquire succeeded
constexpr int kChildOtherError = 2;

// Forks a child that tries to take the lock once (a reader's shared lock when `shared`) and
// reports the outcome as its exit code.
int acquireInChild(const std::filesystem::path& dir, bool shared = false) {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    auto lock = shared ? DirectoryLock::acquireShared(dir) : DirectoryLock::acquire(dir);
    if (lock.ok()) ::_exit(kChildAcquired);
    ::_exit(lock.error() == std::errc::resource_unavailable_try_again ? kChildRefused
                                                                      : kChildOtherError);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

}  // namespace

TEST_CASE("DirectoryLock: a second owner in the same process is refused", "[io]") {
  TempDir dir;
  auto first = DirectoryLock::acquire(dir.path());
  REQUIRE(first.ok());
  CHECK(first->held());
  CHECK(first->directory() == dir.path());
  CHECK(DirectoryLock::holder(dir.path()) == std::optional<pid_t>(::getpid()));

  auto second = DirectoryLock::acquire(dir.path());
  REQUIRE(!second.ok());
  CHECK(second.error() == std::errc::resource_unavailable_try_again);
  // The refused attempt leaves the owner's pid in place.
  CHECK(DirectoryLock::holder(dir.path()) == std::optional<pid_t>(::getpid()));
}

TEST_CASE("DirectoryLock: a forked child is refused while the parent holds the lock", "[io]") {
  TempDir dir;
  {
    auto lock = DirectoryLock::acquire(dir.path());
    REQUIRE(lock.ok());
    CHECK(acquireInChild(dir.path()) == kChildRefused);
  }
  // Released: now a child gets it (and its exit releases it again).
  CHECK(acquireInChild(dir.path()) == kChildAcquired);
  auto after = DirectoryLock::acquire(dir.path());
  CHECK(after.ok());
}

TEST_CASE("DirectoryLock: destruction and release() give the lock up", "[io]") {
  TempDir dir;
  {
    auto lock = DirectoryLock::acquire(dir.path());
    REQUIRE(lock.ok());
  }
  CHECK(DirectoryLock::holder(dir.path()) == std::nullopt);  // emptied on release
  CHECK(readWholeFile(dir / DirectoryLock::kFileName).empty());

  auto again = DirectoryLock::acquire(dir.path());
  REQUIRE(again.ok());
  again->release();
  CHECK(!again->held());
  again->release();  // a no-op the second time

  // Moving hands the lock over; the moved-from object releases nothing.
  auto a = DirectoryLock::acquire(dir.path());
  REQUIRE(a.ok());
  DirectoryLock b = std::move(*a);
  CHECK(!a->held());
  CHECK(b.held());
  CHECK(!DirectoryLock::acquire(dir.path()).ok());
  b.release();
  CHECK(DirectoryLock::acquire(dir.path()).ok());
}

TEST_CASE("DirectoryLock: a missing directory and a garbled pid are reported", "[io]") {
  TempDir dir;
  auto missing = DirectoryLock::acquire(dir / "missing");
  REQUIRE(!missing.ok());
  CHECK(missing.error() == std::errc::no_such_file_or_directory);
  CHECK(DirectoryLock::holder(dir / "missing") == std::nullopt);

  cairn::io::test::writeWholeFile(dir / DirectoryLock::kFileName, cairn::asBytes("12ab\n"));
  CHECK(DirectoryLock::holder(dir.path()) == std::nullopt);
  cairn::io::test::writeWholeFile(dir / DirectoryLock::kFileName, cairn::asBytes("-5\n"));
  CHECK(DirectoryLock::holder(dir.path()) == std::nullopt);
  cairn::io::test::writeWholeFile(dir / DirectoryLock::kFileName, cairn::asBytes("4321\n"));
  CHECK(DirectoryLock::holder(dir.path()) == std::optional<pid_t>(4321));
}

TEST_CASE("DirectoryLock: readers share the lock, and exclude an owner as it excludes them",
          "[io]") {
  TempDir dir;
  auto first = DirectoryLock::acquireShared(dir.path());
  REQUIRE(first.ok());
  CHECK(first->shared());
  auto second = DirectoryLock::acquireShared(dir.path());
  REQUIRE(second.ok());
  CHECK(acquireInChild(dir.path(), /*shared=*/true) == kChildAcquired);
  CHECK(acquireInChild(dir.path()) == kChildRefused);
  auto owner = DirectoryLock::acquire(dir.path());
  REQUIRE(!owner.ok());
  CHECK(owner.error() == std::errc::resource_unavailable_try_again);
  // Readers write no pid (there are many of them, and they may have no write access).
  CHECK(DirectoryLock::holder(dir.path()) == std::nullopt);
  first->release();
  CHECK(!DirectoryLock::acquire(dir.path()).ok());
  second->release();

  auto writer = DirectoryLock::acquire(dir.path());
  REQUIRE(writer.ok());
  CHECK(!writer->shared());
  auto reader = DirectoryLock::acquireShared(dir.path());
  REQUIRE(!reader.ok());
  CHECK(reader.error() == std::errc::resource_unavailable_try_again);
  CHECK(acquireInChild(dir.path(), /*shared=*/true) == kChildRefused);
  // A reader's refused attempt leaves the owner's pid in place.
  CHECK(DirectoryLock::holder(dir.path()) == std::optional<pid_t>(::getpid()));
}

TEST_CASE("DirectoryLock: a reader opens an existing lock file read-only", "[io]") {
  TempDir dir;
  cairn::io::test::writeWholeFile(dir / DirectoryLock::kFileName, cairn::asBytes("4321\n"));
  auto reader = DirectoryLock::acquireShared(dir.path());
  REQUIRE(reader.ok());
  reader->release();
  // Nothing written, nothing emptied: the file is as it was.
  CHECK(readWholeFile(dir / DirectoryLock::kFileName) == cairn::Bytes{'4', '3', '2', '1', '\n'});
  CHECK(DirectoryLock::holder(dir.path()) == std::optional<pid_t>(4321));
}
