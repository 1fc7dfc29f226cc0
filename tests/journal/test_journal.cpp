// The durable journal: group commit, ordering, bounds, torn-tail recovery, prefix reads.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/sha256.hpp"
#include "engine/journal/journal.hpp"
#include "io/file.hpp"
#include "io/lock.hpp"
#include "io/uring.hpp"
#include "tests/io/io_test_support.hpp"

using namespace cairn;
namespace asio = boost::asio;
using io::test::readWholeFile;
using io::test::runToCompletion;
using io::test::TempDir;

namespace {

struct Fixture {
  TempDir dir;
  asio::io_context context{1};
  io::Uring uring{context, 64};

  std::filesystem::path db() const { return dir.path() / "db"; }
  std::filesystem::path file() const { return db() / Journal::kFileName; }

  // A file of frames only, no room after them (test_journal_room.cpp has the room): the
  // tests here lay out bytes at the file's end and compare the whole file.
  static JournalOptions framesOnly() {
    JournalOptions o;
    o.preallocate = false;
    return o;
  }
  std::unique_ptr<Journal> create(JournalOptions options = framesOnly()) {
    auto j = runToCompletion(context, Journal::create(uring, db(), u"db", options));
    REQUIRE(j.ok());
    return std::move(*j);
  }
  Res<std::unique_ptr<Journal>> open(JournalOptions options = framesOnly()) {
    return runToCompletion(context, Journal::open(uring, db(), options));
  }
  std::uint64_t append(Journal& j, std::string_view payload) {
    auto r = runToCompletion(context, j.append(asBytes(payload)));
    REQUIRE(r.ok());
    return *r;
  }
  // Starts `n` appenders at once; returns each one's result, in start order.
  std::vector<Res<std::uint64_t>> appendConcurrently(Journal& j, int n, std::size_t size = 8) {
    std::vector<std::optional<Res<std::uint64_t>>> results(n);
    std::vector<std::string> payloads(n);
    for (int i = 0; i < n; ++i) {
      payloads[i] = std::to_string(i);
      payloads[i].resize(std::max(size, payloads[i].size()), '.');
      asio::co_spawn(
          context,
          [&, i]() -> asio::awaitable<void> {
            results[i].emplace(co_await j.append(asBytes(payloads[i])));
          },
          asio::detached);
    }
    context.restart();
    context.run();
    std::vector<Res<std::uint64_t>> out;
    for (auto& r : results) {
      REQUIRE(r.has_value());
      out.push_back(std::move(*r));
    }
    return out;
  }
  // The bytes [start, end) as readRange delivers them.
  Bytes readRange(Journal& j, std::uint64_t start, std::uint64_t end) {
    Bytes got;
    auto r = runToCompletion(context, j.readRange(start, end, [&](ByteView chunk) {
      got.insert(got.end(), chunk.begin(), chunk.end());
      return Res<void>{};
    }));
    REQUIRE(r.ok());
    return got;
  }
  // The bytes [start, end) as readRangeInto leaves them in a buffer that held other bytes.
  Bytes readInto(Journal& j, std::uint64_t start, std::uint64_t end) {
    Bytes got(end - start, 0xA5);
    REQUIRE(runToCompletion(context, j.readRangeInto(start, end, got)).ok());
    return got;
  }
  Bytes record(Journal& j, std::uint64_t sequence) {
    auto r = runToCompletion(context, j.record(sequence));
    REQUIRE(r.ok());
    return *r;
  }
};

std::string text(const Bytes& b) { return std::string(asChars(b)); }

void appendRaw(const std::filesystem::path& file, ByteView bytes) {
  Bytes all = readWholeFile(file);
  all.insert(all.end(), bytes.begin(), bytes.end());
  io::test::writeWholeFile(file, all);
}

}  // namespace

TEST_CASE("journal: create writes the exact header and lineage", "[journal]") {
  Fixture f;
  auto j = f.create();
  Bytes file = readWholeFile(f.file());
  CHECK(file == *encodeJournalHeader(u"db"));
  CHECK(j->lineage() == sha256(file));
  CHECK(j->endSequence() == 0);
  CHECK(j->endOffset() == file.size());
  j.reset();
  // A second create on the same directory is refused and leaves the journal alone.
  auto again = runToCompletion(f.context, Journal::create(f.uring, f.db(), u"other"));
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().code == Errc::usage);
  CHECK(readWholeFile(f.file()) == file);
}

TEST_CASE("journal: appends are durable, ordered and readable after reopen", "[journal]") {
  Fixture f;
  auto j = f.create();
  for (int i = 1; i <= 20; ++i) CHECK(f.append(*j, "rec" + std::to_string(i)) == std::uint64_t(i));
  CHECK(f.append(*j, "") == 21);  // empty records are allowed
  j.reset();
  auto reopened = f.open();
  REQUIRE(reopened.ok());
  Journal& r = **reopened;
  CHECK(r.endSequence() == 21);
  CHECK(text(f.record(r, 1)) == "rec1");
  CHECK(text(f.record(r, 20)) == "rec20");
  CHECK(f.record(r, 21).empty());
  CHECK(r.tornBytesCut() == 0);
  Bytes file = readWholeFile(f.file());
  CHECK(r.endOffset() == file.size());
}

TEST_CASE("journal: concurrent appends share syncs and keep arrival order", "[journal]") {
  Fixture f;
  auto j = f.create();
  auto results = f.appendConcurrently(*j, 2000);
  for (std::size_t i = 0; i < results.size(); ++i) {
    REQUIRE(results[i].ok());
    CHECK(*results[i] == i + 1);  // first come, first sequenced
  }
  // Group commit: far fewer batches (one write + one fdatasync each) than appends.
  CHECK(j->batchesWritten() < 100);
  CHECK(text(f.record(*j, 1234)).rfind("1233", 0) == 0);
}

TEST_CASE("journal: batches respect the byte bound and order survives waiting", "[journal]") {
  Fixture f;
  JournalOptions small = Fixture::framesOnly();
  small.maxBatchBytes = 1000;
  auto j = f.create(small);
  auto results = f.appendConcurrently(*j, 300, 100);  // 116-byte frames: 8 per batch at most
  for (std::size_t i = 0; i < results.size(); ++i) {
    REQUIRE(results[i].ok());
    CHECK(*results[i] == i + 1);
  }
  CHECK(j->batchesWritten() >= 300 / 8);
  for (std::uint64_t s = 1; s <= 300; ++s) {
    REQUIRE(j->offsetAfter(s) - j->offsetAfter(s - 1) == 116);
  }
}

TEST_CASE("journal: waiting appenders are bounded", "[journal]") {
  Fixture f;
  JournalOptions opts = Fixture::framesOnly();
  opts.maxWaitingAppenders = 10;
  auto j = f.create(opts);
  auto results = f.appendConcurrently(*j, 25);
  int ok = 0, busy = 0;
  for (auto& r : results) {
    if (r.ok()) {
      ++ok;
    } else if (r.error().code == Errc::busy) {
      ++busy;
    }
  }
  CHECK(ok == 10);
  CHECK(busy == 15);
  CHECK(j->endSequence() == 10);
}

TEST_CASE("journal: a failed durable write is never acknowledged nor retried", "[journal]") {
  Fixture f;
  JournalOptions small = Fixture::framesOnly();
  small.maxBatchBytes = 1000;  // 116-byte frames: 8 per batch, the other appenders wait
  auto j = f.create(small);
  for (int i = 0; i < 5; ++i) f.append(*j, "acknowledged " + std::to_string(i));
  int durableWrites = 0;
  f.uring.setFaultForTests([&](const io::Uring::Operation& op) {
    if (op.kind != io::Uring::Operation::Kind::writeDsync) return 0;
    return ++durableWrites == 2 ? EIO : 0;  // the second batch from here fails
  });
  auto results = f.appendConcurrently(*j, 60, 100);
  std::size_t acknowledged = 0;
  while (acknowledged < results.size() && results[acknowledged].ok()) ++acknowledged;
  CHECK(acknowledged >= 1);
  CHECK(acknowledged <= 8);  // the first batch only
  for (std::size_t i = acknowledged; i < results.size(); ++i) {
    REQUIRE_FALSE(results[i].ok());
    CHECK(results[i].error().code == Errc::io);
    CHECK_THAT(results[i].error().message, Catch::Contains("durable write failed"));
  }
  CHECK(durableWrites == 2);  // nothing written after the failure, nothing retried
  CHECK(j->endSequence() == 5 + acknowledged);
  auto later = runToCompletion(f.context, j->append(asBytes(std::string_view("later"))));
  REQUIRE_FALSE(later.ok());
  CHECK(later.error().code == Errc::io);
  CHECK(durableWrites == 2);
  j.reset();
  f.uring.setFaultForTests({});
  // Reopened: exactly the acknowledged records, and the next sequence after them.
  auto reopened = f.open();
  REQUIRE(reopened.ok());
  CHECK((*reopened)->endSequence() == 5 + acknowledged);
  CHECK_FALSE((*reopened)->tornTail());
  CHECK(f.append(**reopened, "after") == 6 + acknowledged);
}

TEST_CASE("journal: a record over the payload cap is refused", "[journal]") {
  Fixture f;
  auto j = f.create();
  std::string big(limits::kMaxPayloadBytes + 1, 'x');
  auto r = runToCompletion(f.context, j->append(asBytes(big)));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::usage);
  CHECK(j->endSequence() == 0);
}

TEST_CASE("journal: prefix hash equals the file's bytes, cap checked before reading", "[journal]") {
  Fixture f;
  JournalOptions opts = Fixture::framesOnly();
  opts.readChunkBytes = 4096;  // many reads in flight over a small file
  auto j = f.create(opts);
  auto results = f.appendConcurrently(*j, 3000, 50);
  Bytes file = readWholeFile(f.file());
  for (std::uint64_t s :
       {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{1500}, std::uint64_t{3000}}) {
    auto p = runToCompletion(f.context, j->prefix(s, limits::kMaxPrefixBytes));
    REQUIRE(p.ok());
    CHECK(p->sequence == s);
    CHECK(p->length == j->offsetAfter(s));
    CHECK(p->sha256 == sha256(ByteView(file).first(p->length)));
  }
  auto before = f.uring.stats().started;
  auto capped = runToCompletion(f.context, j->prefix(3000, file.size() - 1));
  REQUIRE_FALSE(capped.ok());
  CHECK(capped.error().code == Errc::budget);
  CHECK(f.uring.stats().started == before);  // nothing was read
  auto exact = runToCompletion(f.context, j->prefix(3000, file.size()));
  CHECK(exact.ok());
  auto beyond = runToCompletion(f.context, j->prefix(3001, limits::kMaxPrefixBytes));
  CHECK(beyond.error().code == Errc::usage);
}

TEST_CASE("journal: prefixes read at once, one in the journal's buffers, one in chunk buffers",
          "[journal]") {
  Fixture f;
  JournalOptions opts = Fixture::framesOnly();
  opts.readChunkBytes = 64 << 10;      // several chunks per prefix,
  opts.cachedChunksFromCache = false;  // each read direct (where the file system allows),
  opts.prefixSliceBytes = 100'000;     // and about 8 pool tasks per prefix (unaligned slices)
  auto j = f.create(opts);
  for (int round = 0; round < 4; ++round) {
    for (auto& r : f.appendConcurrently(*j, 100, 2000 + 17 * round)) REQUIRE(r.ok());
  }
  const Bytes file = readWholeFile(f.file());
  // Four at once, over different lengths; none resumes another's hash (the memo is forgotten).
  const std::uint64_t sequences[] = {400, 399, 250, 1};
  std::vector<std::optional<Res<Prefix>>> got(4);
  for (std::size_t i = 0; i < 4; ++i) {
    asio::co_spawn(
        f.context,
        [&, i]() -> asio::awaitable<void> {
          got[i].emplace(co_await j->prefix(sequences[i], limits::kMaxPrefixBytes));
        },
        asio::detached);
  }
  j->forgetPrefixProgress();
  f.context.restart();
  f.context.run();
  for (std::size_t i = 0; i < 4; ++i) {
    REQUIRE(got[i].has_value());
    REQUIRE(got[i]->ok());
    CHECK((*got[i])->sha256 == sha256(ByteView(file).first(j->offsetAfter(sequences[i]))));
  }
  // And again, alone, after them.
  j->forgetPrefixProgress();
  auto again = runToCompletion(f.context, j->prefix(400, limits::kMaxPrefixBytes));
  REQUIRE(again.ok());
  CHECK(again->sha256 == sha256(ByteView(file).first(j->offsetAfter(400))));
}

// Whether the file system under `dir` accepts O_DIRECT (tmpfs does not).
bool acceptsDirectIo(const std::filesystem::path& dir) {
  auto probe = dir / "direct-probe";
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_DIRECT | O_CLOEXEC, 0644);
  if (fd >= 0) ::close(fd);
  std::filesystem::remove(probe);
  return fd >= 0;
}

TEST_CASE("journal: direct and buffered reads give the same prefixes and ranges", "[journal]") {
  Fixture f;
  JournalOptions opts = Fixture::framesOnly();
  opts.readChunkBytes = 5000;  // rounded up to 8,192 for direct reads; many reads in flight
  auto j = f.create(opts);
  // Odd record sizes, so no frame boundary is aligned; about 600 KiB in all.
  for (int round = 0; round < 6; ++round) {
    auto results = f.appendConcurrently(*j, 100, 977 + 31 * round);
    for (auto& r : results) REQUIRE(r.ok());
  }
  Bytes file = readWholeFile(f.file());
  const bool direct = acceptsDirectIo(f.dir.path());
  CHECK(j->directReads() == direct);
  INFO("direct reads: " << direct);
  j.reset();

  // Direct reads always; direct reads except for chunks mostly in the page cache (the
  // default), first with every chunk cached, then with every other 16 KiB dropped from the
  // cache so that cached and direct chunks alternate (a direct read then follows an
  // unaligned buffered one); and buffered reads.
  struct Mode {
    bool direct, fromCache, evictHalf;
  };
  for (auto m : {Mode{true, false, false}, Mode{true, true, false}, Mode{true, true, true},
                 Mode{false, false, false}}) {
    JournalOptions o = opts;
    o.directReads = m.direct;
    o.cachedChunksFromCache = m.fromCache;
    INFO("direct: " << m.direct << ", cached chunks from the cache: " << m.fromCache
                    << ", half evicted: " << m.evictHalf);
    const bool useDirect = m.direct;
    if (m.evictHalf) {
      int fd = ::open(f.file().c_str(), O_RDONLY | O_CLOEXEC);
      REQUIRE(fd >= 0);
      REQUIRE(::fdatasync(fd) == 0);  // clean pages can be dropped
      for (std::uint64_t at = 0; at < file.size(); at += 32768) {
        REQUIRE(::posix_fadvise(fd, static_cast<off_t>(at), 16384, POSIX_FADV_DONTNEED) == 0);
      }
      auto cached = io::cachedPages(fd, 0, file.size());
      CHECK((!cached || !cached->all()));
      ::close(fd);
    }
    auto opened = f.open(o);
    REQUIRE(opened.ok());
    auto& jj = **opened;
    CHECK(jj.directReads() == (useDirect && direct));
    // Increasing sequences: each prefix resumes from the last one's unaligned end.
    for (std::uint64_t s : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{70},
                            std::uint64_t{71}, std::uint64_t{333}, std::uint64_t{600}}) {
      auto p = runToCompletion(f.context, jj.prefix(s, limits::kMaxPrefixBytes));
      REQUIRE(p.ok());
      CHECK(p->length == jj.offsetAfter(s));
      CHECK(p->sha256 == sha256(ByteView(file).first(p->length)));
    }
    // A whole pass again from the start, and ranges that start and end unaligned.
    jj.forgetPrefixProgress();
    auto whole = runToCompletion(f.context, jj.prefix(600, limits::kMaxPrefixBytes));
    REQUIRE(whole.ok());
    CHECK(whole->sha256 == sha256(file));
    for (auto [start, end] : {std::pair<std::uint64_t, std::uint64_t>{4095, 4097 + 70'000},
                              {12'345, file.size()},
                              {0, file.size()},
                              {100, 300}}) {
      const Bytes expected(file.begin() + static_cast<std::ptrdiff_t>(start),
                           file.begin() + static_cast<std::ptrdiff_t>(end));
      CHECK(f.readRange(jj, start, end) == expected);
      // Read into a caller's buffer: cached chunks in place, direct ones copied there.
      CHECK(f.readInto(jj, start, end) == expected);
    }
    Bytes small(10);
    auto wrongSize = runToCompletion(f.context, jj.readRangeInto(0, 11, small));
    REQUIRE_FALSE(wrongSize.ok());
    CHECK(wrongSize.error().code == Errc::usage);
    // A range beyond the file's end is an error, not a short success.
    auto past = runToCompletion(
        f.context, jj.readRange(0, file.size() + 100'000, [](ByteView) { return Res<void>{}; }));
    REQUIRE_FALSE(past.ok());
    CHECK(past.error().code == Errc::io);
  }
}

TEST_CASE("journal: a sink that throws ends the range read once no read is in flight",
          "[journal]") {
  // Reads are in flight into the read's own slots when a sink throws: the exception leaves
  // only after they complete (before, they completed into the freed frame).
  for (bool direct : {false, true}) {
    Fixture f;
    JournalOptions options = Fixture::framesOnly();
    options.readChunkBytes = 4096;
    options.readDepth = 8;
    options.directReads = direct;
    options.cachedChunksFromCache = false;
    auto j = f.create(options);
    for (int i = 0; i < 100; ++i) f.append(*j, std::string(1000, static_cast<char>('a' + i % 26)));
    const Bytes file = readWholeFile(f.file());
    int calls = 0;
    const std::function<asio::awaitable<Res<void>>(ByteView)> throwing =
        [&](ByteView) -> asio::awaitable<Res<void>> {
      if (++calls == 2) throw std::runtime_error("the sink failed");
      co_return Res<void>{};
    };
    CHECK_THROWS_AS(runToCompletion(f.context, j->readRangeAsync(0, file.size(), throwing)),
                    std::runtime_error);
    CHECK(calls == 2);
    CHECK(f.readRange(*j, 0, file.size()) == file);  // and the journal reads on
  }
}

// A chunk at least half of whose pages are in the page cache is read through the cache: the
// kernel reads only its missing pages from the disk, and they are cached afterwards. A chunk
// mostly out of the cache is read directly and stays out of it. (Found on a 1 GiB journal the
// kernel had reclaimed 3 % of, scattered: a third of its 1 MiB chunks missed a few pages, were
// read whole from the disk, and a deep verification read 1.7 GiB from the disk, not 1.0.)
TEST_CASE("journal: a chunk mostly in the page cache is read through it", "[journal]") {
  Fixture f;
  if (!acceptsDirectIo(f.dir.path())) {
    WARN("the file system refuses O_DIRECT: every read is buffered");
    return;
  }
  JournalOptions opts = Fixture::framesOnly();
  opts.readChunkBytes = 64 << 10;  // 16 pages
  auto j = f.create(opts);
  for (int round = 0; round < 4; ++round) {
    for (auto& r : f.appendConcurrently(*j, 100, 1500)) REQUIRE(r.ok());
  }
  Bytes file = readWholeFile(f.file());
  REQUIRE(file.size() > 8 * opts.readChunkBytes);
  constexpr std::uint64_t kPage = 4096;
  const std::uint64_t chunk = opts.readChunkBytes;
  const std::uint64_t chunks = file.size() / chunk;  // whole chunks; the tail is left cached

  // Out of the cache: 9 of the first chunk's 16 pages (7 cached: under half, read directly),
  // 8 of the second's (8 cached: half, read through the cache), and one page, the sixth, of
  // every later whole chunk. Pages read back one by one, without read-ahead, so that exactly
  // those are cached.
  int fd = ::open(f.file().c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(::fdatasync(fd) == 0);
  REQUIRE(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
  auto dropped = io::cachedPages(fd, 0, file.size());
  if (!dropped || dropped->cached != 0) {
    ::close(fd);
    // Before Linux 6.5 nothing can be known, and every large read is direct; on tmpfs the
    // pages cannot be dropped. CI runs on ext4 with cachestat(2).
    WARN("cachestat(2) is not available, or the pages cannot be dropped: not tested here");
    return;
  }
  REQUIRE(::posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM) == 0);
  const std::uint64_t perChunk = chunk / kPage;
  auto missing = [&](std::uint64_t page) {
    if (page < perChunk) return page >= 7;
    if (page < 2 * perChunk) return page % perChunk >= 8;
    return page < chunks * perChunk && page % perChunk == 5;
  };
  const std::uint64_t pages = (file.size() + kPage - 1) / kPage;
  for (std::uint64_t page = 0; page < pages; ++page) {
    std::uint8_t byte = 0;
    if (!missing(page)) REQUIRE(::pread(fd, &byte, 1, static_cast<off_t>(page * kPage)) == 1);
  }
  auto cachedIn = [&](std::uint64_t c) {
    auto cached = io::cachedPages(fd, c * chunk, chunk);
    REQUIRE(cached);
    REQUIRE(cached->pages == perChunk);
    return cached->cached;
  };
  REQUIRE(cachedIn(0) == 7);
  REQUIRE(cachedIn(1) == 8);
  for (std::uint64_t c = 2; c < chunks; ++c) REQUIRE(cachedIn(c) == perChunk - 1);

  CHECK(f.readRange(*j, 0, file.size()) == file);
  CHECK(f.readInto(*j, 0, file.size()) == file);  // cached and direct chunks, into one buffer
  // The chunks at least half cached were read through the cache: their missing pages are
  // back. The first was read directly: still 7 pages of 16 (nothing before it reads ahead
  // into it).
  for (std::uint64_t c = 1; c < chunks; ++c) {
    INFO("chunk " << c);
    CHECK(cachedIn(c) == perChunk);
  }
  CHECK(cachedIn(0) == 7);
  ::close(fd);
}

// A direct read's aligned window can reach past the end of the file while appends extend it:
// the read then comes back short and unaligned, after the wanted bytes. Found by the ingest
// CLI test as heap corruption: the rest was read into a span of (wanted - got) bytes, which
// had wrapped around, so the kernel wrote the appended bytes past the buffer.
TEST_CASE("journal: direct reads of a tail while appends extend the file", "[journal]") {
  Fixture f;
  JournalOptions opts = Fixture::framesOnly();
  opts.readChunkBytes = 8192;
  opts.cachedChunksFromCache = false;  // the tail was just written: it is in the page cache
  auto j = f.create(opts);
  for (auto& r : f.appendConcurrently(*j, 40, 2001)) REQUIRE(r.ok());
  std::size_t reads = 0;
  for (int round = 0; round < 150; ++round) {
    const std::uint64_t end = j->endOffset() - 1;  // the window's last block reaches the EOF
    const std::uint64_t start = end - kMinDirectReadBytes - 123;
    Bytes got;
    std::optional<Res<void>> read;
    asio::co_spawn(
        f.context,
        [&]() -> asio::awaitable<void> {
          read.emplace(co_await j->readRange(start, end, [&](ByteView chunk) {
            got.insert(got.end(), chunk.begin(), chunk.end());
            return Res<void>{};
          }));
        },
        asio::detached);
    for (auto& r : f.appendConcurrently(*j, 8, 1999 + round % 7)) REQUIRE(r.ok());
    REQUIRE(read.has_value());
    REQUIRE(read->ok());
    Bytes file = readWholeFile(f.file());
    REQUIRE(got == Bytes(file.begin() + static_cast<std::ptrdiff_t>(start),
                         file.begin() + static_cast<std::ptrdiff_t>(end)));
    ++reads;
  }
  CHECK(reads == 150);
}

TEST_CASE("journal: a prefix over a file cut short from outside fails, then works again",
          "[journal]") {
  Fixture f;
  JournalOptions opts = Fixture::framesOnly();
  opts.readChunkBytes = 4096;  // many chunks in flight and in the hasher when the read fails
  opts.readDepth = 8;
  const std::uint64_t slice = GENERATE(std::uint64_t{256} << 20, std::uint64_t{50'000});
  opts.prefixSliceBytes = slice;  // one pool task, or a cut inside the fourth of several
  auto j = f.create(opts);
  for (auto& r : f.appendConcurrently(*j, 200, 1500)) REQUIRE(r.ok());
  Bytes file = readWholeFile(f.file());
  std::filesystem::resize_file(f.file(), file.size() / 2);
  auto cut = runToCompletion(f.context, j->prefix(j->endSequence(), limits::kMaxPrefixBytes));
  REQUIRE_FALSE(cut.ok());
  CHECK(cut.error().code == Errc::io);
  CHECK(cut.error().message.find("journal ends at " + std::to_string(file.size() / 2) +
                                 ", before " + std::to_string(file.size())) != std::string::npos);
  // The journal's state is untouched: with the bytes back, the same prefix is right.
  io::test::writeWholeFile(f.file(), file);
  auto whole = runToCompletion(f.context, j->prefix(j->endSequence(), limits::kMaxPrefixBytes));
  REQUIRE(whole.ok());
  CHECK(whole->sha256 == sha256(file));
}

TEST_CASE("journal: a torn last frame is cut on open", "[journal]") {
  Fixture f;
  auto j = f.create();
  for (int i = 1; i <= 5; ++i) f.append(*j, "r" + std::to_string(i));
  j.reset();
  Bytes good = readWholeFile(f.file());
  std::uint64_t expectedEnd = 5;

  SECTION("incomplete frame") {
    Bytes frame;
    appendFrame(frame, 6, asBytes("unacknowledged"));
    appendRaw(f.file(), ByteView(frame).first(frame.size() - 3));
  }
  // Zeros only after the last frame: the writer's room (docs/journal.md, "Room"), whether a
  // header's first bytes or a frame's blocks never reached the disk: kept, nothing cut.
  bool zerosOnly = false;
  SECTION("a few bytes of a frame header, zeros") {
    appendRaw(f.file(), Bytes{0, 0});
    zerosOnly = true;
  }
  SECTION("a frame whose blocks were never written (zeros)") {
    appendRaw(f.file(), Bytes(700, 0));
    zerosOnly = true;
  }
  SECTION("several frames of a batch, the middle one's block never written") {
    // Frame 6 of the unsynced batch survived whole: keeping it is allowed (it was never
    // acknowledged, and an unacknowledged record may or may not survive a crash).
    Bytes batch;
    for (int s = 6; s <= 8; ++s) appendFrame(batch, s, Bytes(600, 'b'));
    const std::uint64_t base = good.size();
    const std::uint64_t frame7 = base + 616;
    const std::uint64_t hole = (frame7 + 511) / 512 * 512;  // a sector inside frame 7
    std::fill(batch.begin() + static_cast<std::ptrdiff_t>(hole - base),
              batch.begin() + static_cast<std::ptrdiff_t>(hole - base + 512), 0);
    appendRaw(f.file(), batch);
    good.insert(good.end(), batch.begin(), batch.begin() + 616);
    expectedEnd = 6;
  }
  const Bytes crashed = readWholeFile(f.file());
  auto reopened = f.open();
  REQUIRE(reopened.ok());
  CHECK((*reopened)->endSequence() == expectedEnd);
  if (zerosOnly) {
    CHECK((*reopened)->tornBytesCut() == 0);
    CHECK(readWholeFile(f.file()) == crashed);
  } else {
    CHECK((*reopened)->tornBytesCut() > 0);
    CHECK(readWholeFile(f.file()) == good);
  }
  CHECK(f.append(**reopened, "next") == expectedEnd + 1);
}

TEST_CASE("journal: a complete last frame with a wrong CRC is damage, not a torn tail",
          "[journal]") {
  // A crash leaves bytes unwritten (zeros) or a write cut short; it does not flip bits.
  Fixture f;
  auto j = f.create();
  for (int i = 1; i <= 5; ++i) f.append(*j, "r" + std::to_string(i));
  j.reset();
  SECTION("a new frame") {
    Bytes frame;
    appendFrame(frame, 6, asBytes("unacknowledged"));
    frame.back() ^= 1;
    appendRaw(f.file(), frame);
  }
  SECTION("a flipped byte in the middle one of three") {
    Bytes batch;
    for (int s = 6; s <= 8; ++s) appendFrame(batch, s, asBytes("batch"));
    batch[21 + 13] ^= 0xFF;  // inside frame 7's payload
    appendRaw(f.file(), batch);
  }
  Bytes before = readWholeFile(f.file());
  auto reopened = f.open();
  REQUIRE_FALSE(reopened.ok());
  CHECK(reopened.error().code == Errc::format);
  CHECK_THAT(reopened.error().message, Catch::Contains("nothing was cut"));
  CHECK(readWholeFile(f.file()) == before);
}

TEST_CASE("journal: damage before the tail is an error that names the offset", "[journal]") {
  Fixture f;
  auto j = f.create();
  std::string mib(1 << 20, 'z');
  f.append(*j, "first");
  for (int i = 0; i < 22; ++i) f.append(*j, mib);  // > kMaxTornTailBytes after record 1
  std::uint64_t firstFrame = j->offsetAfter(0);
  j.reset();
  Bytes file = readWholeFile(f.file());
  file[firstFrame + 12] ^= 0x01;  // record 1's payload
  io::test::writeWholeFile(f.file(), file);
  auto reopened = f.open();
  REQUIRE_FALSE(reopened.ok());
  CHECK(reopened.error().code == Errc::format);
  CHECK_THAT(reopened.error().message, Catch::Contains("offset " + std::to_string(firstFrame)));
  CHECK(readWholeFile(f.file()) == file);  // nothing was cut
}

TEST_CASE("journal: a damaged header is an error", "[journal]") {
  Fixture f;
  f.create().reset();
  Bytes file = readWholeFile(f.file());
  file[17] ^= 1;
  io::test::writeWholeFile(f.file(), file);
  auto reopened = f.open();
  REQUIRE_FALSE(reopened.ok());
  CHECK(reopened.error().code == Errc::format);
}

TEST_CASE("journal: a second owner is refused while the first holds the directory", "[journal]") {
  Fixture f;
  auto j = f.create();
  auto second = f.open();
  REQUIRE_FALSE(second.ok());
  CHECK(second.error().code == Errc::busy);
  j.reset();
  CHECK(f.open().ok());
}

TEST_CASE("journal: creation is one locked step: no one comes between the journal and its creator",
          "[journal]") {
  // Another `init`, or a `status`, trying the directory just after the journal is linked into
  // place: it must find the directory owned, and the creator must keep it (a creator that
  // lost it failed "busy" and left a journal without the files written beside it).
  Fixture f;
  JournalOptions options = Fixture::framesOnly();
  std::optional<io::IoResult<io::DirectoryLock>> other;
  options.fault = [&](std::string_view point) {
    if (point == "created") other.emplace(io::DirectoryLock::acquire(f.db()));
  };
  auto created = runToCompletion(f.context, Journal::create(f.uring, f.db(), u"db", options));
  REQUIRE(other);
  CHECK_FALSE(other->ok());
  REQUIRE(created.ok());
  CHECK(f.append(**created, "first") == 1);
}

TEST_CASE("journal: readers share the directory, and no writer comes while one reads",
          "[journal]") {
  Fixture f;
  auto j = f.create();
  f.append(*j, "r1");
  j.reset();
  JournalOptions ro = Fixture::framesOnly();
  ro.readOnly = true;
  auto first = f.open(ro);
  REQUIRE(first.ok());
  auto second = f.open(ro);  // `status` beside `journal`, or two of them
  REQUIRE(second.ok());
  CHECK((*second)->endSequence() == 1);
  // A writer (which could cut a tail or append under a reader's scan) waits for both.
  auto writer = f.open();
  REQUIRE_FALSE(writer.ok());
  CHECK(writer.error().code == Errc::busy);
  first->reset();
  CHECK_FALSE(f.open().ok());
  second->reset();
  auto owner = f.open();
  REQUIRE(owner.ok());
  // And while the writer owns the directory, a reader is refused.
  auto reader = f.open(ro);
  REQUIRE_FALSE(reader.ok());
  CHECK(reader.error().code == Errc::busy);
}

TEST_CASE("journal: opened without its frames scanned, its bytes are read and nothing else",
          "[journal]") {
  Fixture f;
  auto j = f.create();
  for (int i = 1; i <= 5; ++i) f.append(*j, "r" + std::to_string(i));
  j.reset();
  Bytes file = readWholeFile(f.file());

  auto opened = runToCompletion(f.context, Journal::openUnscanned(f.uring, f.db()));
  REQUIRE(opened.ok());
  Journal& u = **opened;
  CHECK_FALSE(u.scanned());
  CHECK(u.lineage() == sha256(ByteView(file).first(u.offsetAfter(0))));
  CHECK(u.header().bytes == *encodeJournalHeader(u"db"));
  CHECK(u.endSequence() == 0);  // no records known
  CHECK(u.fileBytes().ok());
  CHECK(*u.fileBytes() == file.size());
  // The bytes can be read (no scan has checked them) ...
  CHECK(f.readRange(u, 0, file.size()) == file);
  // ... but nothing may be appended, and no record is known.
  auto early = runToCompletion(f.context, u.append(asBytes("too early")));
  REQUIRE_FALSE(early.ok());
  CHECK(early.error().code == Errc::usage);
  CHECK_FALSE(runToCompletion(f.context, u.record(1)).ok());
  CHECK(readWholeFile(f.file()) == file);  // nothing written
  // The directory is owned meanwhile; once released, open() scans and finds every record.
  auto second = f.open();
  REQUIRE_FALSE(second.ok());
  CHECK(second.error().code == Errc::busy);
  opened->reset();
  auto reopened = f.open();
  REQUIRE(reopened.ok());
  CHECK((*reopened)->scanned());
  CHECK((*reopened)->endSequence() == 5);
  CHECK(f.append(**reopened, "r6") == 6);
}
