// ReadRing and readSequential: a file read in order by the thread that consumes it.
#include <fcntl.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "io/file.hpp"
#include "io/read_ring.hpp"
#include "tests/io/io_test_support.hpp"

using cairn::Bytes;
using cairn::io::AlignedBuffer;
using cairn::io::allocateAligned;
using cairn::io::File;
using cairn::io::kDirectAlign;
using cairn::io::ReadRing;
using cairn::io::readSequential;
using cairn::io::SequentialRead;
using cairn::io::test::pattern;
using cairn::io::test::TempDir;
using cairn::io::test::writeWholeFile;

namespace {

struct Buffers {
  Buffers(std::size_t count, std::size_t bytes) {
    for (std::size_t i = 0; i < count; ++i) {
      owned.push_back(allocateAligned(bytes));
      raw.push_back(owned.back().get());
    }
  }
  std::vector<AlignedBuffer> owned;
  std::vector<std::uint8_t*> raw;
};

struct Read {
  Bytes bytes;
  std::vector<std::size_t> chunks;  // the size of each chunk passed on
  cairn::io::IoResult<std::uint64_t> result = std::uint64_t{0};
};

// A file of `size` patterned bytes, open through the page cache and with O_DIRECT.
struct PatternFile {
  PatternFile(std::size_t size, std::uint32_t seed) : content(pattern(size, seed)) {
    writeWholeFile(dir / "f", content);
    auto f = File::open(dir / "f", O_RDONLY);
    auto d = File::open(dir / "f", O_RDONLY | O_DIRECT);
    // A file system without O_DIRECT (tmpfs before Linux 6.6): the "direct" descriptor reads
    // through the cache, and the windows and chunks are still those of direct reads.
    if (!d) d = File::open(dir / "f", O_RDONLY);
    REQUIRE((f && d));
    file = std::move(*f);
    direct = std::move(*d);
  }
  TempDir dir;
  Bytes content;
  File file;
  File direct;
};

// Reads [start, end) of `file` (direct reads through `direct` when given), chunk by chunk.
SequentialRead rangeOf(const File& file, const File* direct, std::uint64_t start, std::uint64_t end,
                       std::size_t chunk, const Buffers& buffers, bool fromCache = false) {
  SequentialRead how;
  how.fd = file.fd();
  how.directFd = direct ? direct->fd() : -1;
  how.start = start;
  how.end = end;
  how.chunk = chunk;
  how.cachedChunksFromCache = fromCache;
  how.buffers = buffers.raw;
  return how;
}

Read readAll(ReadRing& ring, const SequentialRead& how) {
  Read r;
  r.result = readSequential(
      how,
      [&](std::span<const std::uint8_t> chunk) {
        r.bytes.insert(r.bytes.end(), chunk.begin(), chunk.end());
        r.chunks.push_back(chunk.size());
      },
      ring);
  return r;
}

}  // namespace

TEST_CASE("ReadRing: this thread's ring overlaps its reads where io_uring is allowed", "[io]") {
  // CI runs where io_uring works (the engine's own loop needs it); the blocking ring is tested
  // below by asking for it.
  CHECK(ReadRing::forThisThread().overlapped());
  CHECK(&ReadRing::forThisThread() == &ReadRing::forThisThread());
  CHECK_FALSE(ReadRing(false).overlapped());
}

TEST_CASE("readSequential: every byte of the range, in order, by every way of reading", "[io]") {
  const bool useIoUring = GENERATE(true, false);
  const bool direct = GENERATE(true, false);
  const bool fromCache = GENERATE(true, false);
  const std::size_t size = 5 * 8192 + 1234;  // ends inside a block
  PatternFile f(size, 7);
  const Bytes& content = f.content;
  File* file = &f.file;
  File* directFile = &f.direct;
  ReadRing ring(useIoUring);
  Buffers buffers(3, 8192);

  struct Range {
    std::uint64_t start, end;
  };
  for (Range range : {Range{0, size}, Range{1, size}, Range{4095, 4097}, Range{8191, 3 * 8192 + 5},
                      Range{100, size - 100}, Range{size - 1, size}, Range{17, 17}}) {
    CAPTURE(useIoUring, direct, fromCache, range.start, range.end);
    const SequentialRead how = rangeOf(*file, direct ? directFile : nullptr, range.start, range.end,
                                       8192, buffers, fromCache);
    Read r = readAll(ring, how);
    REQUIRE(r.result);
    CHECK(*r.result == range.end - range.start);
    CHECK(r.bytes == Bytes(content.begin() + static_cast<std::ptrdiff_t>(range.start),
                           content.begin() + static_cast<std::ptrdiff_t>(range.end)));
    for (std::size_t n : r.chunks) CHECK((n > 0 && n <= 8192));
    CHECK(ring.outstanding() == 0);
  }
}

TEST_CASE("readSequential: a direct read's window starts at the block of its first byte", "[io]") {
  PatternFile f(64 * 1024, 3);
  const Bytes& content = f.content;
  File* file = &f.file;
  File* directFile = &f.direct;
  ReadRing ring;
  Buffers buffers(2, 4 * kDirectAlign);
  const SequentialRead how =
      rangeOf(*file, directFile, 100, content.size(), 4 * kDirectAlign, buffers);
  Read r = readAll(ring, how);
  REQUIRE(r.result);
  CHECK(r.bytes == Bytes(content.begin() + 100, content.end()));
  // Chunks end on chunk boundaries of the file: the first is short by its unaligned start.
  REQUIRE(r.chunks.size() == 4);
  CHECK(r.chunks[0] == 4 * kDirectAlign - 100);
  CHECK(r.chunks[1] == 4 * kDirectAlign);
}

TEST_CASE("readSequential: a file shorter than the range gives what it has", "[io]") {
  const bool useIoUring = GENERATE(true, false);
  const bool direct = GENERATE(true, false);
  PatternFile f(10000, 5);
  const Bytes& content = f.content;
  File* file = &f.file;
  File* directFile = &f.direct;
  ReadRing ring(useIoUring);
  Buffers buffers(4, 4096);
  const SequentialRead how =
      rangeOf(*file, direct ? directFile : nullptr, 10, 40000, 4096, buffers);
  Read r = readAll(ring, how);
  REQUIRE(r.result);
  CHECK(*r.result == 10000 - 10);
  CHECK(r.bytes == Bytes(content.begin() + 10, content.end()));
  CHECK(ring.outstanding() == 0);
}

TEST_CASE("readSequential: a failed read is returned after the reads in flight finish", "[io]") {
  const bool useIoUring = GENERATE(true, false);
  TempDir dir;
  auto directory = File::open(dir.path(), O_RDONLY | O_DIRECTORY);
  REQUIRE(directory);
  ReadRing ring(useIoUring);
  Buffers buffers(4, 4096);
  // read() of a directory: EISDIR.
  const SequentialRead how = rangeOf(*directory, nullptr, 0, 1 << 20, 4096, buffers);
  Read r = readAll(ring, how);
  REQUIRE_FALSE(r.result);
  CHECK(r.result.error() == std::errc::is_a_directory);
  CHECK(r.bytes.empty());
  CHECK(ring.outstanding() == 0);
}

TEST_CASE("readSequential: a consumer's exception is rethrown once no read is in flight", "[io]") {
  const bool useIoUring = GENERATE(true, false);
  PatternFile f(256 * 1024, 9);
  const Bytes& content = f.content;
  File* file = &f.file;
  File* directFile = &f.direct;
  ReadRing ring(useIoUring);
  Buffers buffers(8, 4096);
  const SequentialRead how = rangeOf(*file, directFile, 0, content.size(), 4096, buffers);
  int seen = 0;
  CHECK_THROWS_AS(readSequential(
                      how,
                      [&](std::span<const std::uint8_t>) {
                        if (++seen == 3) throw std::runtime_error("consumer");
                      },
                      ring),
                  std::runtime_error);
  CHECK(seen == 3);
  CHECK(ring.outstanding() == 0);
  // The ring is whole: the next range reads as usual.
  Read r = readAll(ring, how);
  REQUIRE(r.result);
  CHECK(r.bytes == content);
}

TEST_CASE("ReadRing: buffers are registered for one range and released after", "[io]") {
  ReadRing ring;
  Buffers buffers(2, 8192);
  CHECK(ring.registerBuffers(buffers.raw, 8192));  // 16 KiB: far under any RLIMIT_MEMLOCK
  ring.unregisterBuffers();
  // Registered again (a second registration would fail were the first still held).
  CHECK(ring.registerBuffers(buffers.raw, 8192));
  ring.unregisterBuffers();
  CHECK_FALSE(ReadRing(false).registerBuffers(buffers.raw, 8192));
}

TEST_CASE("ReadBuffers: buffers in one mapping aligned for huge pages", "[io]") {
  auto mapped = cairn::io::ReadBuffers::map(3, 8192);
  REQUIRE(mapped);
  auto buffers = mapped->buffers();
  REQUIRE(buffers.size() == 3);
  CHECK(mapped->bytes() == 8192);
  CHECK(reinterpret_cast<std::uintptr_t>(buffers[0]) % cairn::io::ReadBuffers::kHugePage == 0);
  for (std::size_t i = 1; i < 3; ++i) CHECK(buffers[i] == buffers[0] + i * 8192);
  for (std::uint8_t* b : buffers) {
    b[0] = 1;  // writable, to its last byte
    b[8191] = 2;
  }
  auto moved = std::move(*mapped);
  CHECK(moved.buffers().size() == 3);
  CHECK(mapped->buffers().empty());
  CHECK_FALSE(cairn::io::ReadBuffers::map(0, 8192));
  CHECK_FALSE(cairn::io::ReadBuffers::map(2, 100));  // not whole blocks
}
