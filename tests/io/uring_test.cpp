// Uring: file operations through io_uring, awaited on an Asio io_context.
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstddef>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "io/file.hpp"
#include "io/uring.hpp"
#include "tests/io/io_test_support.hpp"

namespace asio = boost::asio;
using cairn::Bytes;
using cairn::io::File;
using cairn::io::IoResult;
using cairn::io::Uring;
using cairn::io::test::pattern;
using cairn::io::test::runToCompletion;
using cairn::io::test::TempDir;
using cairn::io::test::writeWholeFile;

namespace {

File openOrFail(const std::filesystem::path& path, int flags) {
  auto file = File::open(path, flags);
  REQUIRE(file.ok());
  return std::move(*file);
}

// Record i of the many-reads file: eight bytes of i, big-endian, then eight of ~i.
constexpr std::size_t kRecordBytes = 16;
Bytes record(std::uint64_t i) {
  Bytes bytes(kRecordBytes);
  cairn::storeBe64(bytes.data(), i);
  cairn::storeBe64(bytes.data() + 8, ~i);
  return bytes;
}

}  // namespace

namespace {
// Pages of [0, length) of the file that are dirty or under writeback (cachestat(2), Linux 6.5);
// nullopt where the kernel lacks the call.
std::optional<std::uint64_t> unsyncedPages(int fd, std::uint64_t length) {
  struct Range {
    std::uint64_t off, len;
  } range{0, length};
  struct Stat {
    std::uint64_t cache, dirty, writeback, evicted, recentlyEvicted;
  } stat{};
  constexpr long kCachestat = 451;  // x86_64 and the generic table
  if (::syscall(kCachestat, fd, &range, &stat, 0) != 0) return std::nullopt;
  return stat.dirty + stat.writeback;
}
}  // namespace

TEST_CASE("Uring: writeDurable is one O_DSYNC write per chunk: nothing left dirty", "[io]") {
  TempDir dir;
  asio::io_context context;
  Uring ring(context, 8);
  File plain = openOrFail(dir / "plain", O_RDWR | O_CREAT);
  File durable = openOrFail(dir / "durable", O_RDWR | O_CREAT);
  const Bytes bytes = pattern(300'000, 3);
  std::uint64_t startedForDurable = 0;
  auto outcome = runToCompletion(context, [&]() -> asio::awaitable<std::string> {
    if (!(co_await ring.write(plain.fd(), bytes, 0))) co_return "write";
    const auto before = ring.stats().started;
    if (!(co_await ring.writeDurable(durable.fd(), bytes, 0))) co_return "writeDurable";
    startedForDurable = ring.stats().started - before;
    Bytes back(bytes.size());
    auto got = co_await ring.readFull(durable.fd(), back, 0);
    if (!got || *got != bytes.size() || back != bytes) co_return "read back";
    co_return "";
  }());
  REQUIRE(outcome == "");
  CHECK(startedForDurable == 1);  // one operation: no separate fdatasync
  const auto plainDirty = unsyncedPages(plain.fd(), bytes.size());
  const auto durableDirty = unsyncedPages(durable.fd(), bytes.size());
  if (!plainDirty || !durableDirty) {
    WARN("cachestat(2) is missing (Linux < 6.5): the dirty-page check is not made");
    return;
  }
  // The probe sees a plain write's pages as not yet synced, and none of the durable one's.
  CHECK(*plainDirty > 0);
  CHECK(*durableDirty == 0);
}

TEST_CASE("Uring: write, fdatasync, fsync and read round trip", "[io]") {
  TempDir dir;
  asio::io_context context;
  Uring ring(context, 8);
  File file = openOrFail(dir / "data", O_RDWR | O_CREAT);
  const Bytes first = pattern(100'000, 1);
  const Bytes second = pattern(5'000, 2);

  auto outcome = runToCompletion(context, [&]() -> asio::awaitable<std::string> {
    if (!(co_await ring.write(file.fd(), first, 0))) co_return "write";
    if (!(co_await ring.write(file.fd(), second, 200'000))) co_return "write at offset";
    if (!(co_await ring.fdatasync(file.fd()))) co_return "fdatasync";
    if (!(co_await ring.fsync(file.fd()))) co_return "fsync";

    Bytes back(first.size());
    auto got = co_await ring.readFull(file.fd(), back, 0);
    if (!got || *got != first.size() || back != first) co_return "readFull";
    Bytes tail(second.size());
    auto one = co_await ring.read(file.fd(), tail, 200'000);
    if (!one || *one != second.size() || tail != second) co_return "read at offset";
    // The gap between the two writes reads as zeros.
    Bytes gap(1'000, 0xff);
    auto hole = co_await ring.readFull(file.fd(), gap, 150'000);
    if (!hole || *hole != gap.size() || gap != Bytes(1'000, 0)) co_return "hole";
    co_return "ok";
  }());
  CHECK(outcome == "ok");
  CHECK(file.size().value() == 205'000);
  const auto stats = ring.stats();
  CHECK(stats.inFlight == 0);
  CHECK(stats.waiting == 0);
  CHECK(stats.completed == stats.started);
}

TEST_CASE("Uring: 2,000 concurrent reads on a 4-entry ring each complete once, correctly", "[io]") {
  constexpr std::size_t kReads = 2'000;
  TempDir dir;
  Bytes contents;
  for (std::uint64_t i = 0; i < kReads; ++i) {
    const Bytes r = record(i);
    contents.insert(contents.end(), r.begin(), r.end());
  }
  writeWholeFile(dir / "records", contents);
  File file = openOrFail(dir / "records", O_RDONLY);

  asio::io_context context;
  Uring ring(context, 4);
  REQUIRE(ring.capacity() == 4);
  std::vector<int> completions(kReads, 0);
  std::vector<int> correct(kReads, 0);
  for (std::size_t i = 0; i < kReads; ++i) {
    asio::co_spawn(
        context,
        [&, i]() -> asio::awaitable<void> {
          Bytes buffer(kRecordBytes);
          auto got = co_await ring.read(file.fd(), buffer, i * kRecordBytes);
          ++completions[i];
          if (got && *got == kRecordBytes && buffer == record(i)) ++correct[i];
        },
        asio::detached);
  }
  context.run();

  CHECK(std::count(completions.begin(), completions.end(), 1) == kReads);
  CHECK(std::count(correct.begin(), correct.end(), 1) == kReads);
  const auto stats = ring.stats();
  CHECK(stats.started == kReads);
  CHECK(stats.completed == kReads);
  CHECK(stats.inFlight == 0);
  CHECK(stats.waiting == 0);
  CHECK(stats.peakInFlight == 4);  // never more than the ring holds
  CHECK(stats.peakWaiting > 0);    // the rest waited instead of failing
  CHECK(stats.submitCalls < kReads);
}

TEST_CASE("Uring: operations started in one loop turn share one submission", "[io]") {
  constexpr std::size_t kReads = 64;
  TempDir dir;
  writeWholeFile(dir / "data", pattern(kReads * 512));
  File file = openOrFail(dir / "data", O_RDONLY);
  asio::io_context context;
  Uring ring(context, kReads);
  int ok = 0;
  for (std::size_t i = 0; i < kReads; ++i) {
    asio::co_spawn(
        context,
        [&, i]() -> asio::awaitable<void> {
          Bytes buffer(512);
          auto got = co_await ring.read(file.fd(), buffer, i * 512);
          if (got && *got == 512) ++ok;
        },
        asio::detached);
  }
  context.run();
  CHECK(ok == static_cast<int>(kReads));
  CHECK(ring.stats().submitCalls == 1);
}

TEST_CASE("Uring: several 1 MiB reads in flight", "[io]") {
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  constexpr std::size_t kChunks = 4;
  TempDir dir;
  const Bytes contents = pattern(kChunk * kChunks, 7);
  writeWholeFile(dir / "journal", contents);
  File file = openOrFail(dir / "journal", O_RDONLY);
  asio::io_context context;
  Uring ring(context, 8);
  std::vector<Bytes> chunks(kChunks, Bytes(kChunk));
  int full = 0;
  for (std::size_t i = 0; i < kChunks; ++i) {
    asio::co_spawn(
        context,
        [&, i]() -> asio::awaitable<void> {
          auto got = co_await ring.readFull(file.fd(), chunks[i], i * kChunk);
          if (got && *got == kChunk) ++full;
        },
        asio::detached);
  }
  context.run();
  CHECK(full == static_cast<int>(kChunks));
  for (std::size_t i = 0; i < kChunks; ++i) {
    CHECK(std::equal(chunks[i].begin(), chunks[i].end(), contents.begin() + i * kChunk));
  }
  CHECK(ring.stats().peakInFlight == kChunks);
}

TEST_CASE("Uring: reads at end of file are short or empty", "[io]") {
  TempDir dir;
  writeWholeFile(dir / "ten", pattern(10));
  File file = openOrFail(dir / "ten", O_RDONLY);
  asio::io_context context;
  Uring ring(context, 4);
  Bytes buffer(10);

  auto atEnd = runToCompletion(context, ring.read(file.fd(), buffer, 10));
  REQUIRE(atEnd.ok());
  CHECK(*atEnd == 0);
  auto pastEnd = runToCompletion(context, ring.read(file.fd(), buffer, 1'000));
  REQUIRE(pastEnd.ok());
  CHECK(*pastEnd == 0);
  auto shortRead = runToCompletion(context, ring.read(file.fd(), buffer, 4));
  REQUIRE(shortRead.ok());
  CHECK(*shortRead == 6);
  Bytes big(100);
  auto full = runToCompletion(context, ring.readFull(file.fd(), big, 0));
  REQUIRE(full.ok());
  CHECK(*full == 10);
  CHECK(Bytes(big.begin(), big.begin() + 10) == pattern(10));
  auto empty = runToCompletion(context, ring.readFull(file.fd(), std::span<std::uint8_t>(), 0));
  REQUIRE(empty.ok());
  CHECK(*empty == 0);
}

TEST_CASE("Uring: failures come back as error codes", "[io]") {
  TempDir dir;
  writeWholeFile(dir / "data", pattern(64));
  asio::io_context context;
  Uring ring(context, 4);
  Bytes buffer(16);

  auto negative = runToCompletion(context, ring.read(-1, buffer, 0));
  REQUIRE(!negative.ok());
  CHECK(negative.error() == std::errc::bad_file_descriptor);

  int closedFd = -1;
  {
    File file = openOrFail(dir / "data", O_RDONLY);
    closedFd = file.fd();
    REQUIRE(file.close().ok());
  }
  auto closed = runToCompletion(context, ring.read(closedFd, buffer, 0));
  REQUIRE(!closed.ok());
  CHECK(closed.error() == std::errc::bad_file_descriptor);

  auto syncBad = runToCompletion(context, ring.fsync(-1));
  REQUIRE(!syncBad.ok());
  CHECK(syncBad.error() == std::errc::bad_file_descriptor);
  auto datasyncBad = runToCompletion(context, ring.fdatasync(-1));
  REQUIRE(!datasyncBad.ok());
  CHECK(datasyncBad.error() == std::errc::bad_file_descriptor);
  const Bytes some = pattern(100, 4);
  auto durableBad = runToCompletion(context, ring.writeDurable(-1, some, 0));
  REQUIRE(!durableBad.ok());
  CHECK(durableBad.error() == std::errc::bad_file_descriptor);

  File readOnly = openOrFail(dir / "data", O_RDONLY);
  auto writeReadOnly = runToCompletion(context, ring.write(readOnly.fd(), buffer, 0));
  REQUIRE(!writeReadOnly.ok());
  CHECK(writeReadOnly.error() == std::errc::bad_file_descriptor);

  File directory = openOrFail(dir.path(), O_RDONLY | O_DIRECTORY);
  auto readDirectory = runToCompletion(context, ring.read(directory.fd(), buffer, 0));
  REQUIRE(!readDirectory.ok());
  CHECK(readDirectory.error() == std::errc::is_a_directory);

  // An offset the kernel would take as "the file position" is refused before submission.
  auto hugeOffset = runToCompletion(
      context, ring.read(readOnly.fd(), buffer, std::numeric_limits<std::uint64_t>::max()));
  REQUIRE(!hugeOffset.ok());
  CHECK(hugeOffset.error() == std::errc::invalid_argument);

  // The ring still works after the failures.
  auto good = runToCompletion(context, ring.readFull(readOnly.fd(), buffer, 0));
  REQUIRE(good.ok());
  CHECK(*good == buffer.size());
  CHECK(ring.stats().inFlight == 0);
}

TEST_CASE("Uring: a failing operation in a batch does not hold back the others", "[io]") {
  TempDir dir;
  writeWholeFile(dir / "data", pattern(4096));
  File file = openOrFail(dir / "data", O_RDONLY);
  asio::io_context context;
  Uring ring(context, 8);
  int badFd = 0;
  int good = 0;
  for (int i = 0; i < 6; ++i) {
    const int fd = (i % 2 == 0) ? -1 : file.fd();
    asio::co_spawn(
        context,
        [&, fd]() -> asio::awaitable<void> {
          Bytes buffer(512);
          auto got = co_await ring.read(fd, buffer, 0);
          if (!got && got.error() == std::errc::bad_file_descriptor) ++badFd;
          if (got && *got == 512) ++good;
        },
        asio::detached);
  }
  context.run();
  CHECK(badFd == 3);
  CHECK(good == 3);
}

TEST_CASE("Uring: EINTR and EAGAIN are retried, a bounded number of times", "[io]") {
  TempDir dir;
  const Bytes contents = pattern(4096, 7);
  writeWholeFile(dir / "data", contents);
  File file = openOrFail(dir / "data", O_RDWR);
  asio::io_context context;
  Uring ring(context, 4);
  using Kind = Uring::Operation::Kind;
  const int transient = GENERATE(EINTR, EAGAIN);

  // Refused kMaxTransientRetries times, then let through: the read succeeds, whole.
  unsigned attempts = 0;
  ring.setFaultForTests([&](const Uring::Operation& op) {
    if (op.kind != Kind::read) return 0;
    return ++attempts <= Uring::kMaxTransientRetries ? transient : 0;
  });
  Bytes back(contents.size());
  const auto before = ring.stats();
  auto got = runToCompletion(context, ring.read(file.fd(), back, 0));
  REQUIRE(got.ok());
  CHECK(*got == contents.size());
  CHECK(back == contents);
  CHECK(attempts == Uring::kMaxTransientRetries + 1);
  CHECK(ring.stats().started - before.started == Uring::kMaxTransientRetries + 1);

  // Refused every time: the operation runs 1 + kMaxTransientRetries times, then fails with it.
  attempts = 0;
  ring.setFaultForTests([&](const Uring::Operation& op) {
    if (op.kind != Kind::fdatasync) return 0;
    ++attempts;
    return transient;
  });
  auto synced = runToCompletion(context, ring.fdatasync(file.fd()));
  REQUIRE_FALSE(synced.ok());
  CHECK(synced.error() == std::error_code(transient, std::system_category()));
  CHECK(attempts == Uring::kMaxTransientRetries + 1);

  // Any other errno is not retried.
  attempts = 0;
  ring.setFaultForTests([&](const Uring::Operation& op) {
    if (op.kind != Kind::writeDsync) return 0;
    ++attempts;
    return EIO;
  });
  auto durable = runToCompletion(context, ring.writeDurable(file.fd(), contents, 0));
  REQUIRE_FALSE(durable.ok());
  CHECK(durable.error() == std::errc::io_error);
  CHECK(attempts == 1);

  ring.setFaultForTests({});
  const auto stats = ring.stats();
  CHECK(stats.inFlight == 0);
  CHECK(stats.waiting == 0);
  CHECK(stats.completed == stats.started - 2 * Uring::kMaxTransientRetries);  // two retried 8 times
}

TEST_CASE("Uring: a coroutine awaits file reads and an Asio timer on one io_context", "[io]") {
  using namespace std::chrono_literals;
  TempDir dir;
  const Bytes contents = pattern(4096, 3);
  writeWholeFile(dir / "data", contents);
  File file = openOrFail(dir / "data", O_RDONLY);
  asio::io_context context;
  Uring ring(context, 4);
  std::vector<std::string> events;

  // One coroutine alternates timers and reads; another waits on a longer timer meanwhile.
  asio::co_spawn(
      context,
      [&]() -> asio::awaitable<void> {
        asio::steady_timer timer(context);
        for (int i = 0; i < 3; ++i) {
          timer.expires_after(1ms);
          co_await timer.async_wait(asio::use_awaitable);
          Bytes buffer(1024);
          auto got = co_await ring.readFull(file.fd(), buffer, 1024 * i);
          const bool right = got && *got == 1024 &&
                             std::equal(buffer.begin(), buffer.end(), contents.begin() + 1024 * i);
          events.push_back(right ? "read" : "bad read");
        }
      },
      asio::detached);
  asio::co_spawn(
      context,
      [&]() -> asio::awaitable<void> {
        asio::steady_timer timer(context, 100ms);
        co_await timer.async_wait(asio::use_awaitable);
        events.push_back("timer");
      },
      asio::detached);
  const auto started = std::chrono::steady_clock::now();
  context.run();

  CHECK(std::chrono::steady_clock::now() - started >= 100ms);
  CHECK(events == std::vector<std::string>{"read", "read", "read", "timer"});
}

TEST_CASE("Uring: destroying a ring with operations in flight completes each once", "[io]") {
  constexpr int kReads = 16;
  TempDir dir;
  const Bytes contents = pattern(kReads * 256, 5);
  writeWholeFile(dir / "data", contents);
  File file = openOrFail(dir / "data", O_RDONLY);
  asio::io_context context;
  auto ring = std::make_unique<Uring>(context, 4);
  int completions = 0;
  int correct = 0;
  int cancelled = 0;
  for (int i = 0; i < kReads; ++i) {
    asio::co_spawn(
        context,
        [&, i, &ringRef = *ring]() -> asio::awaitable<void> {
          Bytes buffer(256);
          auto got = co_await ringRef.read(file.fd(), buffer, i * 256);
          ++completions;
          if (got && *got == 256 &&
              std::equal(buffer.begin(), buffer.end(), contents.begin() + i * 256)) {
            ++correct;
          }
          if (!got && got.error() == std::errc::operation_canceled) ++cancelled;
        },
        asio::detached);
  }
  // Run until the first batch has been submitted: 4 in the kernel, 12 waiting for a slot.
  while (ring->stats().submitCalls == 0) REQUIRE(context.run_one() == 1);
  REQUIRE(ring->stats().inFlight == 4);
  REQUIRE(ring->stats().waiting == kReads - 4);

  ring.reset();  // waits for the 4 submitted reads, cancels the 12 waiting ones
  context.run();
  CHECK(completions == kReads);
  CHECK(correct == 4);
  CHECK(cancelled == kReads - 4);
}

TEST_CASE("Uring: create reports a refused setup as an error code", "[io]") {
  asio::io_context context;
  auto zero = Uring::create(context, 0);
  REQUIRE(!zero.ok());
  CHECK(zero.error() == std::errc::invalid_argument);
  auto tooMany = Uring::create(context, Uring::kMaxEntries + 1);
  REQUIRE(!tooMany.ok());
  CHECK(tooMany.error() == std::errc::invalid_argument);
  auto fine = Uring::create(context, 2);
  REQUIRE(fine.ok());
  CHECK((*fine)->capacity() == 2);
  CHECK_THROWS_AS(Uring(context, 0), std::system_error);
}

namespace {

// What setting up a ring showed on a thread whose io_uring_setup answers errnoValue, as under a
// container's seccomp profile (the filter binds that thread only, and ends with it). Catch2's
// assertions stay on the test's thread.
struct RefusedSetup {
  bool filterInstalled = false;
  bool created = false;
  int createError = 0;
  std::string refusal;
  bool constructed = false;
  int thrownError = 0;
  std::string thrownWhat;
};

RefusedSetup setUpRingUnderFilter(int errnoValue) {
  RefusedSetup seen;
  std::thread thread([&] {
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
        BPF_STMT(BPF_RET | BPF_K,
                 SECCOMP_RET_ERRNO | (static_cast<unsigned>(errnoValue) & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog program{static_cast<unsigned short>(std::size(filter)), filter};
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
      return;
    }
    seen.filterInstalled = true;
    asio::io_context context;
    auto ring = Uring::create(context, 8);
    seen.created = ring.ok();
    if (!ring.ok()) {
      seen.createError = ring.error().value();
      seen.refusal = Uring::setupRefusal(ring.error());
    }
    try {
      Uring direct(context, 8);
      seen.constructed = true;
    } catch (const std::system_error& e) {
      seen.thrownError = e.code().value();
      seen.thrownWhat = e.what();
    }
  });
  thread.join();
  return seen;
}

std::string ioUringDisabledSetting() {
  std::ifstream in("/proc/sys/kernel/io_uring_disabled");
  std::string value;
  in >> value;
  return value;
}

}  // namespace

TEST_CASE("Uring: a ring refused by seccomp or the kernel names the cause and the fix", "[io]") {
  // Refused by a seccomp filter on a thread of its own: the errno comes back, and the message
  // is the one for this system's setting of kernel.io_uring_disabled.
  const std::string setting = ioUringDisabledSetting();
  for (int refused : {EPERM, ENOSYS}) {
    CAPTURE(refused);
    const RefusedSetup seen = setUpRingUnderFilter(refused);
    REQUIRE(seen.filterInstalled);
    REQUIRE(!seen.created);
    CHECK(seen.createError == refused);
    const std::error_code code(refused, std::system_category());
    CHECK(seen.refusal == Uring::setupRefusal(code, setting));
    CHECK(!seen.constructed);
    CHECK(seen.thrownError == refused);
    CHECK(std::string(seen.thrownWhat).find(seen.refusal) != std::string::npos);
    if (setting.empty() || setting == "0") {
      CHECK(seen.refusal.find("seccomp profile") != std::string::npos);
      CHECK(seen.refusal.find("io_uring_setup") != std::string::npos);
    }
  }
  // Each cause, by the setting and the errno.
  const std::error_code eperm(EPERM, std::system_category());
  const std::error_code enosys(ENOSYS, std::system_category());
  const std::error_code eacces(EACCES, std::system_category());
  const std::error_code enomem(ENOMEM, std::system_category());
  CHECK(Uring::setupRefusal(eperm, "0").find("seccomp profile") != std::string::npos);
  CHECK(Uring::setupRefusal(eperm, "").find("seccomp profile") != std::string::npos);
  CHECK(Uring::setupRefusal(enosys, "0").find("CONFIG_IO_URING") != std::string::npos);
  CHECK(Uring::setupRefusal(eacces, "0").find("SELinux") != std::string::npos);
  const std::string two = Uring::setupRefusal(eperm, "2");
  CHECK(two.find("kernel.io_uring_disabled is 2 (no process may use it)") != std::string::npos);
  CHECK(two.find("sysctl kernel.io_uring_disabled=0") != std::string::npos);
  CHECK(Uring::setupRefusal(eperm, "1").find("kernel.io_uring_group") != std::string::npos);
  CHECK(Uring::setupRefusal(enomem, "0").find("RLIMIT_MEMLOCK") != std::string::npos);
  // Other errors are not refusals.
  CHECK(Uring::setupRefusal(std::error_code(EINVAL, std::system_category()), "0").empty());
  CHECK(Uring::setupRefusal(std::make_error_code(std::errc::permission_denied), "2").empty());
}
