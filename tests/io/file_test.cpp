// File, syncDirectory and the durable-replace protocol.
#include <fcntl.h>
#include <sys/stat.h>

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "io/file.hpp"
#include "io/uring.hpp"
#include "tests/io/io_test_support.hpp"

namespace asio = boost::asio;
using cairn::Bytes;
using cairn::io::durableReplace;
using cairn::io::durableReplaceSync;
using cairn::io::File;
using cairn::io::syncDirectory;
using cairn::io::Uring;
using cairn::io::test::pattern;
using cairn::io::test::readWholeFile;
using cairn::io::test::runToCompletion;
using cairn::io::test::TempDir;
using cairn::io::test::writeWholeFile;

namespace {

ino_t inodeOf(const std::filesystem::path& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_ino;
}

}  // namespace

TEST_CASE("File: open, write, read, size, truncate, sync and close", "[io]") {
  TempDir dir;
  auto opened = File::open(dir / "f", O_RDWR | O_CREAT | O_EXCL);
  REQUIRE(opened.ok());
  File file = std::move(*opened);
  REQUIRE(file.isOpen());
  CHECK((::fcntl(file.fd(), F_GETFD) & FD_CLOEXEC) != 0);

  const Bytes bytes = pattern(3'000);
  REQUIRE(file.writeAllAt(bytes, 100).ok());
  CHECK(file.size().value() == 3'100);
  Bytes back(5'000);
  auto got = file.readFullAt(back, 100);
  REQUIRE(got.ok());
  CHECK(*got == 3'000);  // stops at end of file
  CHECK(Bytes(back.begin(), back.begin() + 3'000) == bytes);

  REQUIRE(file.truncate(10).ok());
  CHECK(file.size().value() == 10);
  REQUIRE(file.syncNow().ok());
  REQUIRE(file.close().ok());
  CHECK(!file.isOpen());
  CHECK(file.close().ok());  // closing twice is a no-op
  CHECK(!file.size().ok());

  auto again = File::open(dir / "f", O_RDWR | O_CREAT | O_EXCL);
  REQUIRE(!again.ok());
  CHECK(again.error() == std::errc::file_exists);
  auto missing = File::open(dir / "missing", O_RDONLY);
  REQUIRE(!missing.ok());
  CHECK(missing.error() == std::errc::no_such_file_or_directory);
}

TEST_CASE("File: moving transfers the descriptor", "[io]") {
  TempDir dir;
  auto opened = File::open(dir / "f", O_RDWR | O_CREAT);
  REQUIRE(opened.ok());
  File a = std::move(*opened);
  const int fd = a.fd();
  File b = std::move(a);
  CHECK(!a.isOpen());
  CHECK(b.fd() == fd);
  File c;
  c = std::move(b);
  CHECK(!b.isOpen());
  CHECK(c.fd() == fd);
  CHECK(c.size().ok());
}

TEST_CASE("syncDirectory: syncs a directory and reports a missing one", "[io]") {
  TempDir dir;
  CHECK(syncDirectory(dir.path()).ok());
  auto missing = syncDirectory(dir / "missing");
  REQUIRE(!missing.ok());
  CHECK(missing.error() == std::errc::no_such_file_or_directory);
  writeWholeFile(dir / "plain", pattern(1));
  auto notDirectory = syncDirectory(dir / "plain");
  REQUIRE(!notDirectory.ok());
  CHECK(notDirectory.error() == std::errc::not_a_directory);
}

TEST_CASE("durableReplace: replaces the target as a new file and leaves no temp files", "[io]") {
  TempDir dir;
  const auto target = dir / "state";
  writeWholeFile(target, pattern(500, 1));
  const ino_t oldInode = inodeOf(target);
  // A reader that opened the old file keeps seeing the old bytes: nothing is written in place.
  auto oldReader = File::open(target, O_RDONLY);
  REQUIRE(oldReader.ok());

  asio::io_context context;
  Uring ring(context, 4);
  const Bytes next = pattern(70'000, 2);
  auto replaced = runToCompletion(context, durableReplace(ring, target, next));
  REQUIRE(replaced.ok());

  CHECK(readWholeFile(target) == next);
  CHECK(inodeOf(target) != oldInode);
  Bytes old(600);
  auto got = oldReader->readFullAt(old, 0);
  REQUIRE(got.ok());
  CHECK(Bytes(old.begin(), old.begin() + *got) == pattern(500, 1));
  CHECK(dir.entries() == std::set<std::string>{"state"});

  // Creating works as well as replacing, and an empty file is a valid content.
  auto created = runToCompletion(context, durableReplace(ring, dir / "fresh", Bytes{}));
  REQUIRE(created.ok());
  CHECK(readWholeFile(dir / "fresh").empty());
  CHECK(dir.entries() == std::set<std::string>{"state", "fresh"});
  CHECK(ring.stats().inFlight == 0);
}

TEST_CASE("durableReplace: a failure removes the temp file and keeps the target", "[io]") {
  TempDir dir;
  asio::io_context context;
  Uring ring(context, 4);
  // Renaming a file over a non-empty directory fails after the temp file is written.
  std::filesystem::create_directory(dir / "target");
  writeWholeFile(dir / "target" / "inside", pattern(3));
  auto overDirectory = runToCompletion(context, durableReplace(ring, dir / "target", pattern(9)));
  REQUIRE(!overDirectory.ok());
  CHECK(overDirectory.error() == std::errc::is_a_directory);
  CHECK(dir.entries() == std::set<std::string>{"target"});
  CHECK(readWholeFile(dir / "target" / "inside") == pattern(3));

  auto missingDirectory =
      runToCompletion(context, durableReplace(ring, dir / "no" / "such", pattern(9)));
  REQUIRE(!missingDirectory.ok());
  CHECK(missingDirectory.error() == std::errc::no_such_file_or_directory);
  CHECK(dir.entries() == std::set<std::string>{"target"});
}

TEST_CASE("durableReplaceSync: replaces, creates, and cleans up after failure", "[io]") {
  TempDir dir;
  const auto target = dir / "config";
  writeWholeFile(target, pattern(10, 1));
  const ino_t oldInode = inodeOf(target);
  REQUIRE(durableReplaceSync(target, pattern(20, 2)).ok());
  CHECK(readWholeFile(target) == pattern(20, 2));
  CHECK(inodeOf(target) != oldInode);
  REQUIRE(durableReplaceSync(dir / "new", pattern(1, 3)).ok());
  CHECK(readWholeFile(dir / "new") == pattern(1, 3));

  std::filesystem::create_directory(dir / "sub");
  writeWholeFile(dir / "sub" / "inside", pattern(3));
  auto overDirectory = durableReplaceSync(dir / "sub", pattern(9));
  REQUIRE(!overDirectory.ok());
  CHECK(overDirectory.error() == std::errc::is_a_directory);
  CHECK(dir.entries() == std::set<std::string>{"config", "new", "sub"});
}

TEST_CASE("cachedPages: counts the range's pages in the page cache", "[io]") {
  TempDir dir;
  auto path = dir.path() / "cached";
  writeWholeFile(path, pattern(1 << 20, 7));
  auto file = File::open(path, O_RDONLY | O_CLOEXEC);
  REQUIRE(file.ok());
  auto all = cairn::io::cachedPages(file->fd(), 0, 1 << 20);
  if (!all) {
    // A kernel before Linux 6.5 (Debian 12's own 6.1): nothing can be known, and the journal
    // then reads every large range directly. CI's kernel has cachestat(2).
    WARN("cachestat(2) is not available: cachedPages always says it cannot tell");
    CHECK_FALSE(cairn::io::cachedPages(file->fd(), 0, 4096).has_value());
    return;
  }
  CHECK(all->cached == 256);
  CHECK(all->pages == 256);
  CHECK(all->all());
  auto none = cairn::io::cachedPages(file->fd(), 0, 0);
  REQUIRE(none);
  CHECK(none->pages == 0);
  CHECK(none->all());
  REQUIRE(::fdatasync(file->fd()) == 0);  // clean pages can be dropped
  REQUIRE(::posix_fadvise(file->fd(), 0, 0, POSIX_FADV_DONTNEED) == 0);
  auto dropped = cairn::io::cachedPages(file->fd(), 0, 1 << 20);
  REQUIRE(dropped);
  if (dropped->cached != 0) {
    WARN("the file system keeps its pages (tmpfs): the counts after a drop are not tested");
    return;
  }
  CHECK_FALSE(dropped->all());
  // Read back pages 2, 3 and 7 alone (no read-ahead): those three are cached again.
  REQUIRE(::posix_fadvise(file->fd(), 0, 0, POSIX_FADV_RANDOM) == 0);
  for (off_t page : {2, 3, 7}) {
    std::uint8_t byte = 0;
    REQUIRE(::pread(file->fd(), &byte, 1, page * 4096) == 1);
  }
  auto some = cairn::io::cachedPages(file->fd(), 0, 1 << 20);
  REQUIRE(some);
  CHECK(some->cached == 3);
  CHECK(some->pages == 256);
  auto unaligned = cairn::io::cachedPages(file->fd(), 4095, 10'000);  // pages 0..3
  REQUIRE(unaligned);
  CHECK(unaligned->cached == 2);
  CHECK(unaligned->pages == 4);
  auto one = cairn::io::cachedPages(file->fd(), 7 * 4096, 4096);
  REQUIRE(one);
  CHECK(one->all());
}
