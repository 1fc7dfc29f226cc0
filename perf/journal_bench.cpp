// cairn_journal_bench: measures cairn::Journal on a real disk and prints one JSON object.
//
//   append  K coroutine appenders on one io_context, each appending N-byte records in a loop;
//           group commit (one pwrite + one fdatasync per batch) is what is measured.
//   prefix  builds (once) a journal of a given size, then times prefix() over all of it —
//           reads and SHA-256 by one CPU-pool thread, on its own ring (io/read_ring.hpp) — with
//           a cold and a warm page cache, and (unless --no-experiments) the reading alone and the
//           previous prefix(): readRange() hashing each chunk on the loop thread itself.
//   syncs   one durable write at a time, blocking pwrite + fdatasync against io_uring write +
//           fdatasync and io_uring write with RWF_DSYNC, and two RWF_DSYNC writes of adjacent
//           ranges in flight together, alternating: the cost of a sync by itself, and whether
//           two outstanding durable writes to one file sync more per second (a diagnostic).
//
// perf/run_journal.sh runs both beside their peers (RocksDB db_bench, fio, openssl speed);
// docs/performance.md explains the numbers.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <array>
#include <bit>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/sha256.hpp"
#include "engine/format/limits.hpp"
#include "engine/journal/journal.hpp"
#include "engine/runtime/async.hpp"
#include "io/file.hpp"
#include "io/uring.hpp"

namespace {

using namespace cairn;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Bounds of the benchmark itself.
constexpr unsigned kMaxAppenders = 65'536;  // Journal's default maxWaitingAppenders
constexpr double kMaxSeconds = 3600;
constexpr std::uint64_t kMaxCreateBytes = std::uint64_t{64} << 30;
constexpr std::uint64_t kBuildRecordBytes = std::uint64_t{1} << 20;  // payload per build record
constexpr unsigned kBuildAppenders = 4;
constexpr std::uint64_t kShaProbeBytes = std::uint64_t{512} << 20;  // in-process SHA-256 probe
constexpr unsigned kMaxPrefixRepeats = 10;
constexpr unsigned kUringEntries = 256;

double secondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// ---------------------------------------------------------------------------------------------
// A tiny JSON object writer: numbers, strings, booleans and nested objects, in insertion order.
class Json {
 public:
  Json& number(std::string_view key, double v) {
    if (!std::isfinite(v)) return raw(key, "null");
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return raw(key, buf);
  }
  Json& count(std::string_view key, std::uint64_t v) { return raw(key, std::to_string(v)); }
  Json& text(std::string_view key, std::string_view v) { return raw(key, quote(v)); }
  Json& flag(std::string_view key, bool v) { return raw(key, v ? "true" : "false"); }
  Json& object(std::string_view key, const Json& inner) { return raw(key, inner.str()); }
  Json& array(std::string_view key, const std::vector<Json>& items) {
    std::string out = "[";
    for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i].str();
    return raw(key, out + "]");
  }
  std::string str() const { return "{" + body_ + "}"; }

 private:
  static std::string quote(std::string_view s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
        out += buf;
      } else {
        out += c;
      }
    }
    return out + "\"";
  }
  Json& raw(std::string_view key, std::string_view value) {
    if (!body_.empty()) body_ += ", ";
    body_ += quote(key) + ": " + std::string(value);
    return *this;
  }
  std::string body_;
};

// ---------------------------------------------------------------------------------------------
// Latencies in a log-linear histogram: 64 sub-buckets per power of two (error under 1.6%), in
// fixed memory however long the run.
class LatencyHistogram {
 public:
  void record(std::uint64_t ns) {
    ++counts_[index(ns)];
    ++total_;
    sum_ += ns;
  }
  std::uint64_t total() const { return total_; }
  double meanMicros() const { return total_ ? double(sum_) / double(total_) / 1e3 : 0; }
  // The value (in microseconds) below which a fraction q of the samples lie.
  double quantileMicros(double q) const {
    if (total_ == 0) return 0;
    auto rank = static_cast<std::uint64_t>(q * double(total_ - 1)) + 1;
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (seen >= rank) return double(midpoint(i)) / 1e3;
    }
    return double(midpoint(kBuckets - 1)) / 1e3;
  }

 private:
  static constexpr int kSubBits = 6;
  static constexpr std::size_t kSub = std::size_t{1} << kSubBits;
  static constexpr std::size_t kBuckets = (64 - kSubBits + 1) * kSub;

  static std::size_t index(std::uint64_t v) {
    if (v < kSub) return static_cast<std::size_t>(v);
    const int msb = 63 - std::countl_zero(v);  // >= kSubBits
    return static_cast<std::size_t>(msb - kSubBits + 1) * kSub +
           ((v >> (msb - kSubBits)) & (kSub - 1));
  }
  static std::uint64_t midpoint(std::size_t i) {
    if (i < kSub) return i;
    const int shift = static_cast<int>(i / kSub) - 1;
    const std::uint64_t low = (kSub + i % kSub) << shift;
    return low + ((std::uint64_t{1} << shift) >> 1);
  }

  std::array<std::uint64_t, kBuckets> counts_{};
  std::uint64_t total_ = 0;
  std::uint64_t sum_ = 0;
};

// ---------------------------------------------------------------------------------------------
// CPU time of the whole process (every thread, io_uring's io-wq workers included).
struct CpuTimes {
  double user = 0;
  double system = 0;
  static CpuTimes now() {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    auto secs = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) / 1e6; };
    return {secs(u.ru_utime), secs(u.ru_stime)};
  }
  CpuTimes operator-(const CpuTimes& o) const { return {user - o.user, system - o.system}; }
};

Bytes pseudoRandomBytes(std::size_t size, std::uint64_t seed) {
  Bytes out(size);
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& b : out) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = static_cast<std::uint8_t>(x >> 32);
  }
  return out;
}

// Runs body on a fresh io_context with one Uring; returns its exit code.
int runOnLoop(const std::function<asio::awaitable<int>(io::Uring&)>& body) {
  asio::io_context context(1);
  auto uring = io::Uring::create(context, kUringEntries);
  if (!uring) {
    std::fprintf(stderr, "journal_bench: io_uring: %s\n", uring.error().message().c_str());
    return 1;
  }
  int exitCode = 1;
  asio::co_spawn(context, body(**uring), [&](std::exception_ptr e, int code) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        std::fprintf(stderr, "journal_bench: %s\n", ex.what());
      }
      return;
    }
    exitCode = code;
  });
  context.run();
  return exitCode;
}

int fail(const std::string& what, const Error& e) {
  std::fprintf(stderr, "journal_bench: %s: %s\n", what.c_str(), e.message.c_str());
  return 1;
}

Json uringJson(const io::UringStats& s) {
  return Json()
      .count("started", s.started)
      .count("submit_calls", s.submitCalls)
      .count("peak_in_flight", s.peakInFlight)
      .count("peak_waiting", s.peakWaiting);
}

// ---------------------------------------------------------------------------------------------
// append

struct AppendConfig {
  fs::path dir;
  std::size_t valueSize = 256;
  unsigned appenders = 1;
  double seconds = 5;
  std::uint64_t records = 0;  // 0: run for `seconds`
  std::uint64_t maxBatchBytes = JournalOptions{}.maxBatchBytes;
  bool preallocate = JournalOptions{}.preallocate;
  bool directRoom = JournalOptions{}.directRoom;
  bool keep = false;
};

struct AppendRun {
  const AppendConfig& config;
  Clock::time_point deadline;
  std::uint64_t issued = 0;
  std::uint64_t appended = 0;
  LatencyHistogram latency;
  Clock::time_point lastCompletion;
  std::optional<Error> error;

  bool stopping(Clock::time_point now) const {
    if (error) return true;
    if (config.records > 0) return issued >= config.records;
    return now >= deadline;
  }
};

// One clock read per append: an appender issues its next append as soon as the last returns,
// so the end of one is the start of the next (a read costs 40-45 ns on this VM's kvm-clock;
// three per append were a fifth of the loop's time between two batches at 256 appenders).
asio::awaitable<void> appendLoop(Journal& journal, ByteView payload, AppendRun& run) {
  auto start = Clock::now();
  while (!run.stopping(start)) {
    ++run.issued;
    auto r = co_await journal.append(payload);
    const auto end = Clock::now();
    if (!r) {
      run.error = r.error();
      co_return;
    }
    run.latency.record(static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count()));
    ++run.appended;
    run.lastCompletion = end;
    start = end;
  }
}

asio::awaitable<int> runAppend(io::Uring& uring, const AppendConfig& c) {
  const fs::path dir = c.dir / ("cairn-append-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::remove_all(dir, ec);
  JournalOptions options;
  options.maxBatchBytes = c.maxBatchBytes;
  options.preallocate = c.preallocate;
  options.directRoom = c.directRoom;
  auto created = co_await Journal::create(uring, dir, u"bench", options);
  if (!created) co_return fail("create " + dir.string(), created.error());
  std::unique_ptr<Journal> journal = std::move(*created);
  const std::uint64_t startOffset = journal->endOffset();
  const Bytes payload = pseudoRandomBytes(c.valueSize, 1);

  auto executor = co_await asio::this_coro::executor;
  const auto uringBefore = uring.stats();
  const auto cpuBefore = CpuTimes::now();
  const auto start = Clock::now();
  AppendRun run{c, start + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(c.seconds))};
  run.lastCompletion = start;
  unsigned live = c.appenders;
  Signal allDone;
  for (unsigned k = 0; k < c.appenders; ++k) {
    asio::co_spawn(
        executor,
        [&]() -> asio::awaitable<void> {
          co_await appendLoop(*journal, payload, run);
          if (--live == 0) allDone.notify();
        },
        asio::detached);
  }
  co_await allDone.wait();
  const double elapsed = secondsBetween(start, run.lastCompletion);
  const CpuTimes cpu = CpuTimes::now() - cpuBefore;
  const auto uringAfter = uring.stats();
  if (run.error) co_return fail("append", *run.error);

  const std::uint64_t batches = journal->batchesWritten();
  const std::uint64_t journalBytes = journal->endOffset() - startOffset;
  const double appends = double(run.appended);
  io::UringStats delta = uringAfter;
  delta.started -= uringBefore.started;
  delta.submitCalls -= uringBefore.submitCalls;
  Json out;
  out.text("mode", "append")
      .count("value_size", c.valueSize)
      .count("appenders", c.appenders)
      .count("max_batch_bytes", c.maxBatchBytes)
      .flag("room", c.preallocate)
      .text("room_zeros", c.directRoom ? "direct" : "through the cache")
      .number("seconds", elapsed)
      .count("appends", run.appended)
      .number("appends_per_s", appends / elapsed)
      .number("payload_mb_per_s", appends * double(c.valueSize) / elapsed / 1e6)
      .number("journal_mb_per_s", double(journalBytes) / elapsed / 1e6)
      .count("batches", batches)
      .number("syncs_per_s", double(batches) / elapsed)
      .number("records_per_sync", batches ? appends / double(batches) : 0)
      // The share of the time a batch's write + fdatasync was outstanding: what is left is
      // the loop's own work between two batches (the disk idle).
      .number("sync_busy", journal->stats().syncSeconds / elapsed)
      .count("room_bytes", journal->stats().roomBytes)
      .count("room_direct_bytes", journal->stats().roomDirectBytes)
      .number("room_busy", journal->stats().roomSeconds / elapsed)
      .number("write_sync_mean_us",
              batches ? journal->stats().syncSeconds / double(batches) * 1e6 : 0)
      .number("latency_mean_us", run.latency.meanMicros())
      .number("latency_p50_us", run.latency.quantileMicros(0.50))
      .number("latency_p99_us", run.latency.quantileMicros(0.99))
      .number("latency_max_us", run.latency.quantileMicros(1.0))
      .number("cpu_user_s", cpu.user)
      .number("cpu_sys_s", cpu.system)
      .number("cpu_us_per_append", appends ? (cpu.user + cpu.system) / appends * 1e6 : 0)
      .object("uring", uringJson(delta));
  journal.reset();  // releases the directory lock
  if (!c.keep) fs::remove_all(dir, ec);
  std::printf("%s\n", out.str().c_str());
  co_return 0;
}

// ---------------------------------------------------------------------------------------------
// syncs: the cost of one durable append by itself, without group commit. Appends `bytes` and
// makes them durable by four methods that alternate in slices of kSyncSlice so all see the same
// disk (whose sync latency drifts): one at a time, blocking pwrite + fdatasync on the loop
// thread (what fio and RocksDB do), and io_uring write then io_uring fdatasync (what the
// journal did before 2026-12-05), and one io_uring write with RWF_DSYNC (what it does now); and
// two RWF_DSYNC writes of adjacent ranges submitted together (what a journal with two batches
// in flight would do; docs/decisions/0047-batch-made-durable-one-o.md): each pair counts as two
// syncs, each with the pair's latency. It measures the whole path such a journal would take
// (io_uring may run buffered writes to one file one after the other), not the disk alone.

struct SyncConfig {
  fs::path dir;
  std::size_t bytes = 4096;
  double seconds = 4;
  // How the file is prepared: "none" (appends grow it), "keep" (fallocate FALLOC_FL_KEEP_SIZE,
  // as RocksDB does for its WAL: blocks reserved, size still grows) or "written" (zeros written
  // and synced first, so every write overwrites allocated blocks and the size never changes).
  std::string prealloc = "none";
};

// Prepared bytes: zeros written take time, so 256 MiB (the writes wrap around in it); blocks
// reserved by fallocate cost nothing to prepare, so 16 GiB, enough that no write comes back to
// a block an earlier one made written.
constexpr std::uint64_t kSyncPreallocBytes = std::uint64_t{256} << 20;
constexpr std::uint64_t kSyncFallocateBytes = std::uint64_t{16} << 30;

constexpr auto kSyncSlice = std::chrono::milliseconds(500);

struct SyncMethodStats {
  LatencyHistogram latency;
  double seconds = 0;
  CpuTimes cpu;
  Json json(const char* name) const {
    const double n = double(latency.total());
    return Json()
        .text("method", name)
        .count("syncs", latency.total())
        .number("seconds", seconds)
        .number("syncs_per_s", n / seconds)
        .number("latency_p50_us", latency.quantileMicros(0.50))
        .number("latency_p99_us", latency.quantileMicros(0.99))
        .number("cpu_us_per_sync", n ? (cpu.user + cpu.system) / n * 1e6 : 0);
  }
};

asio::awaitable<int> runSyncs(io::Uring& uring, const SyncConfig& c) {
  const fs::path dir = c.dir / ("cairn-syncs-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path path = dir / "file";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) co_return fail("open " + path.string(), Error{Errc::io, std::strerror(errno)});
  std::optional<std::string> failure;
  if (c.prealloc == "keep") {
    if (::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(kSyncFallocateBytes)) != 0) {
      failure = std::string("fallocate: ") + std::strerror(errno);
    }
  } else if (c.prealloc == "unwritten") {
    if (::fallocate(fd, 0, 0, static_cast<off_t>(kSyncFallocateBytes)) != 0) {
      failure = std::string("fallocate: ") + std::strerror(errno);
    }
  } else if (c.prealloc == "written") {
    const Bytes zeros(std::size_t{1} << 20, 0);
    for (std::uint64_t at = 0; at < kSyncPreallocBytes && !failure; at += zeros.size()) {
      if (::pwrite(fd, zeros.data(), zeros.size(), static_cast<off_t>(at)) !=
          static_cast<ssize_t>(zeros.size())) {
        failure = std::string("prewrite: ") + std::strerror(errno);
      }
    }
  }
  if (!failure && ::fsync(fd) != 0) failure = std::string("fsync: ") + std::strerror(errno);
  const Bytes block = pseudoRandomBytes(c.bytes, 5);
  std::uint64_t offset = 0;
  SyncMethodStats blocking, uringStats, dsyncStats, pairStats, directStats;
  // The O_DIRECT method writes the same bytes rounded up to whole 4 KiB blocks.
  const std::size_t directBytes = (c.bytes + 4095) / 4096 * 4096;
  io::AlignedBuffer aligned = io::allocateAligned(directBytes);
  std::memset(aligned.get(), 0, directBytes);
  std::memcpy(aligned.get(), block.data(), block.size());
  const int directFd = ::open(path.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC);
  const unsigned methods = directFd >= 0 ? 5 : 4;
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(c.seconds));
  for (unsigned method = 0; Clock::now() < end && !failure; method = (method + 1) % methods) {
    SyncMethodStats& stats = method == 0   ? blocking
                             : method == 1 ? uringStats
                             : method == 2 ? dsyncStats
                             : method == 3 ? pairStats
                                           : directStats;
    const auto sliceStart = Clock::now();
    const auto cpuBefore = CpuTimes::now();
    while (Clock::now() - sliceStart < kSyncSlice && !failure) {
      const std::uint64_t prepared =
          c.prealloc == "written" ? kSyncPreallocBytes : kSyncFallocateBytes;
      if (c.prealloc != "none" && offset + 2 * block.size() > prepared) {
        offset = 0;  // stay inside the prepared blocks: every write is an overwrite
      }
      const auto t0 = Clock::now();
      if (method == 4) {
        // O_DIRECT: the block (rounded up to 4 KiB, at a 4 KiB-aligned offset) goes to the
        // device from our buffer, without the page cache or io_uring's worker threads.
        auto w = co_await uring.writeDurable(directFd, std::span(aligned.get(), directBytes),
                                             offset / 4096 * 4096);
        if (!w) failure = w.error().message();
        offset = (offset / 4096 * 4096) + directBytes - block.size();
      } else if (method == 1) {
        auto w = co_await uring.write(fd, block, offset);
        if (w) w = co_await uring.fdatasync(fd);
        if (!w) failure = w.error().message();
      } else if (method == 2) {
        auto w = co_await uring.writeDurable(fd, block, offset);
        if (!w) failure = w.error().message();
      } else if (method == 3) {
        using namespace boost::asio::experimental::awaitable_operators;
        auto first = uring.writeDurable(fd, block, offset);
        auto second = uring.writeDurable(fd, block, offset + block.size());
        auto both = std::move(first) && std::move(second);
        auto [a, b] = co_await std::move(both);
        if (!a) failure = a.error().message();
        if (!b) failure = b.error().message();
        offset += block.size();
        stats.latency.record(static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count()));
      } else if (::pwrite(fd, block.data(), block.size(), static_cast<off_t>(offset)) !=
                     static_cast<ssize_t>(block.size()) ||
                 ::fdatasync(fd) != 0) {
        failure = std::strerror(errno);
      }
      offset += block.size();
      stats.latency.record(static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count()));
    }
    const CpuTimes cpu = CpuTimes::now() - cpuBefore;
    stats.cpu.user += cpu.user;
    stats.cpu.system += cpu.system;
    stats.seconds += secondsBetween(sliceStart, Clock::now());
  }
  ::close(fd);
  if (directFd >= 0) ::close(directFd);
  fs::remove_all(dir, ec);
  if (failure) co_return fail("syncs", Error{Errc::io, *failure});
  Json out;
  out.text("mode", "syncs")
      .count("bytes", c.bytes)
      .text("prealloc", c.prealloc)
      .object("blocking_pwrite_fdatasync", blocking.json("blocking"))
      .object("uring_write_then_fdatasync", uringStats.json("uring"))
      .object("uring_write_dsync", dsyncStats.json("uring_dsync"))
      .object("uring_write_dsync_two_in_flight", pairStats.json("uring_dsync_pairs"))
      .object("uring_direct_dsync", directStats.json("uring_direct_dsync"));
  std::printf("%s\n", out.str().c_str());
  co_return 0;
}

// ---------------------------------------------------------------------------------------------
// prefix

struct PrefixConfig {
  fs::path dir;
  std::uint64_t createBytes = std::uint64_t{2} << 30;
  std::size_t readChunkBytes = JournalOptions{}.readChunkBytes;
  unsigned readDepth = JournalOptions{}.readDepth;
  bool directReads = JournalOptions{}.directReads;
  bool cachedChunksFromCache = JournalOptions{}.cachedChunksFromCache;
  unsigned repeats = 1;
  bool dropCache = true;
  bool experiments = true;
  bool remove = false;
};

// Evicts the journal's pages: drop_caches as root (the whole page cache, as asked of a cold
// run), otherwise POSIX_FADV_DONTNEED on the file (enough for clean pages). Returns the method.
std::string dropPageCache(const fs::path& file) {
  ::sync();
  {
    std::ofstream drop("/proc/sys/vm/drop_caches");
    if (drop && (drop << "3\n").flush()) return "drop_caches";
  }
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "none";
  const int r = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  return r == 0 ? "fadvise_dontneed" : "none";
}

// Reads up to `limit` bytes of the file from its start with pread, 1 MiB at a time, through
// the page cache, passing each piece to `consume`; returns the bytes read (fewer at its end).
Res<std::uint64_t> preadEach(const fs::path& file, std::uint64_t limit,
                             const std::function<void(ByteView)>& consume) {
  auto f = io::File::open(file, O_RDONLY);
  if (!f) return err(Errc::io, "open " + file.string() + ": " + f.error().message());
  Bytes buffer(std::size_t{1} << 20);
  std::uint64_t at = 0;
  // Bounded: every pass reads at least one byte, or stops at the end or an error.
  while (at < limit) {
    const std::size_t want =
        static_cast<std::size_t>(std::min<std::uint64_t>(limit - at, buffer.size()));
    auto got = f->readFullAt(std::span(buffer.data(), want), at);
    if (!got) return err(Errc::io, "read " + file.string() + ": " + got.error().message());
    if (*got == 0) break;
    consume(ByteView(buffer.data(), *got));
    at += *got;
  }
  return at;
}

// Reads the whole file through the page cache, so a warm pass finds it there: a cold pass's
// direct reads leave nothing cached (before this, every "warm" pass found 0 % of the file
// resident and was a second cold pass). Returns false if the file cannot be read.
bool fillPageCache(const fs::path& file) {
  return preadEach(file, std::numeric_limits<std::uint64_t>::max(), [](ByteView) {}).ok();
}

// The fraction of the file's pages in the page cache (mincore), or -1 if it cannot tell.
double residentFraction(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st {};
  double out = -1;
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    const auto size = static_cast<std::size_t>(st.st_size);
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    if (map != MAP_FAILED) {
      const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
      std::vector<unsigned char> pages((size + page - 1) / page);
      if (::mincore(map, size, pages.data()) == 0) {
        std::size_t resident = 0;
        for (unsigned char p : pages) resident += p & 1;
        out = double(resident) / double(pages.size());
      }
      ::munmap(map, size);
    }
  }
  ::close(fd);
  return out;
}

// SHA-256 of a 1 MiB buffer, repeated: this build's hashing speed on one core.
Json shaProbe() {
  const Bytes buffer = pseudoRandomBytes(std::size_t{1} << 20, 7);
  Sha256 hash;
  const auto cpuBefore = CpuTimes::now();
  const auto start = Clock::now();
  for (std::uint64_t done = 0; done < kShaProbeBytes; done += buffer.size()) hash.update(buffer);
  (void)hash.finish();
  const double wall = secondsBetween(start, Clock::now());
  const CpuTimes cpu = CpuTimes::now() - cpuBefore;
  return Json()
      .count("bytes", kShaProbeBytes)
      .number("seconds", wall)
      .number("mb_per_s", double(kShaProbeBytes) / wall / 1e6)
      .number("mb_per_cpu_s", double(kShaProbeBytes) / (cpu.user + cpu.system) / 1e6);
}

// Appends 1 MiB records from a few appenders until the journal holds at least `bytes`.
asio::awaitable<Res<void>> buildJournal(Journal& journal, std::uint64_t bytes) {
  const Bytes payload = pseudoRandomBytes(kBuildRecordBytes, 3);
  const std::uint64_t frame = frameLength(payload.size());
  auto executor = co_await asio::this_coro::executor;
  std::uint64_t planned = journal.endOffset();
  std::optional<Error> error;
  unsigned live = kBuildAppenders;
  Signal done;
  for (unsigned k = 0; k < kBuildAppenders; ++k) {
    asio::co_spawn(
        executor,
        [&]() -> asio::awaitable<void> {
          while (!error && planned < bytes) {
            planned += frame;
            auto r = co_await journal.append(payload);
            if (!r) error = r.error();
          }
          if (--live == 0) done.notify();
        },
        asio::detached);
  }
  co_await done.wait();
  if (error) co_return Failure<Error>{*error};
  co_return Res<void>{};
}

// What one timed pass over the whole journal does.
enum class PassKind {
  prefix,    // Journal::prefix(): reads and SHA-256 on a CPU-pool thread (the product)
  readOnly,  // Journal::readRange() with an empty sink: the reading alone
  loopHash,  // readRange() hashing each chunk on the loop thread: prefix() before 2806cc7
  // The least a pass through the page cache must do: pread of 1 MiB into one buffer and
  // SHA-256 of it, one thread, no ring, no pool (warm: a copy per byte, then its hash).
  floor,
};

const char* passName(PassKind k) {
  switch (k) {
    case PassKind::prefix:
      return "prefix";
    case PassKind::readOnly:
      return "read_only";
    case PassKind::loopHash:
      return "hash_on_loop";
    case PassKind::floor:
      return "floor_pread_hash";
  }
  return "?";
}

// PassKind::floor: the file's first `length` bytes read with pread and hashed.
Res<Digest> preadAndHash(const fs::path& file, std::uint64_t length) {
  Sha256 hash;
  auto read = preadEach(file, length, [&](ByteView piece) { hash.update(piece); });
  if (!read) return Failure<Error>{read.error()};
  if (*read < length) return err(Errc::io, file.string() + " ends before its frames");
  return hash.finish();
}

asio::awaitable<Res<Json>> timePass(io::Uring& uring, Journal& journal, const fs::path& file,
                                    PassKind kind, bool cold, bool dropCache) {
  std::string method = "not_requested";
  if (cold && dropCache) method = dropPageCache(file);
  if (!cold) method = fillPageCache(file) ? "filled" : "fill_failed";
  const double resident = residentFraction(file);
  const std::uint64_t length = journal.endOffset();
  const auto uringBefore = uring.stats();
  const auto cpuBefore = CpuTimes::now();
  const auto start = Clock::now();
  std::optional<Digest> digest;
  if (kind == PassKind::prefix) {
    journal.forgetPrefixProgress();  // a whole pass every time, not a resumed one
    auto p = co_await journal.prefix(journal.endSequence(), limits::kMaxPrefixBytes);
    if (!p) co_return Failure<Error>{p.error()};
    digest = p->sha256;
  } else if (kind == PassKind::floor) {
    auto d = preadAndHash(file, length);
    if (!d) co_return Failure<Error>{d.error()};
    digest = *d;
  } else if (kind == PassKind::readOnly) {
    auto r = co_await journal.readRange(0, length, [](ByteView) -> Res<void> { return {}; });
    if (!r) co_return Failure<Error>{r.error()};
  } else {
    Sha256 hash;
    auto r = co_await journal.readRange(0, length, [&](ByteView chunk) -> Res<void> {
      hash.update(chunk);
      return {};
    });
    if (!r) co_return Failure<Error>{r.error()};
    digest = hash.finish();
  }
  const double wall = secondsBetween(start, Clock::now());
  const CpuTimes cpu = CpuTimes::now() - cpuBefore;
  io::UringStats delta = uring.stats();
  delta.started -= uringBefore.started;
  delta.submitCalls -= uringBefore.submitCalls;
  const double gib = double(length) / double(std::uint64_t{1} << 30);
  Json out;
  out.text("pass", passName(kind))
      .text("cache", cold ? "cold" : "warm")
      .text("cache_drop", method)
      .number("resident_before", resident)
      .count("bytes", length)
      .number("seconds", wall)
      .number("mb_per_s", double(length) / wall / 1e6)
      .number("cpu_user_s", cpu.user)
      .number("cpu_sys_s", cpu.system)
      .number("cpu_s_per_gib", (cpu.user + cpu.system) / gib)
      .number("cpu_utilisation", (cpu.user + cpu.system) / wall)
      .text("sha256", digest ? toHex(*digest) : "");
  // prefix() reads on a CPU-pool thread's own ring (io::ReadRing), not on the loop's.
  if (kind == PassKind::readOnly || kind == PassKind::loopHash) {
    out.object("uring", uringJson(delta));
  }
  co_return out;
}

asio::awaitable<int> runPrefix(io::Uring& uring, const PrefixConfig& c) {
  const fs::path dir = c.dir / "cairn-prefix-journal";
  const fs::path file = dir / Journal::kFileName;
  JournalOptions options;
  options.readChunkBytes = c.readChunkBytes;
  options.readDepth = c.readDepth;
  options.directReads = c.directReads;
  options.cachedChunksFromCache = c.cachedChunksFromCache;

  // Reuse a journal built by an earlier run if it is large enough; otherwise build it.
  std::unique_ptr<Journal> journal;
  double openSeconds = -1;
  double buildSeconds = -1;
  if (fs::exists(file)) {
    const auto start = Clock::now();
    auto opened = co_await Journal::open(uring, dir, options);
    if (opened && (*opened)->endOffset() >= c.createBytes) {
      journal = std::move(*opened);
      openSeconds = secondsBetween(start, Clock::now());
    }
  }
  if (!journal) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    auto created = co_await Journal::create(uring, dir, u"bench", options);
    if (!created) co_return fail("create " + dir.string(), created.error());
    journal = std::move(*created);
    const auto start = Clock::now();
    if (auto built = co_await buildJournal(*journal, c.createBytes); !built) {
      co_return fail("build journal", built.error());
    }
    buildSeconds = secondsBetween(start, Clock::now());
  }

  // Each repeat: the product cold and warm, then (unless --no-experiments) the reading alone
  // (cold), the previous prefix(), hashing on the loop thread (cold and warm), and the floor of
  // a warm pass (pread + SHA-256).
  std::vector<std::pair<PassKind, bool>> passes = {{PassKind::prefix, true},
                                                   {PassKind::prefix, false}};
  if (c.experiments) {
    passes.push_back({PassKind::readOnly, true});
    passes.push_back({PassKind::loopHash, true});
    passes.push_back({PassKind::loopHash, false});
    passes.push_back({PassKind::floor, false});
  }
  std::vector<Json> runs;
  for (unsigned i = 0; i < c.repeats; ++i) {
    for (auto [kind, cold] : passes) {
      auto run = co_await timePass(uring, *journal, file, kind, cold, c.dropCache);
      if (!run) co_return fail(passName(kind), run.error());
      runs.push_back(std::move(*run));
    }
  }
  Json out;
  out.text("mode", "prefix")
      .count("journal_bytes", journal->endOffset())
      .count("records", journal->endSequence())
      .count("read_chunk_bytes", c.readChunkBytes)
      .count("read_depth", c.readDepth)
      .text("reads", journal->directReads() ? "direct" : "buffered")
      .text("cached_chunks", c.cachedChunksFromCache ? "through the cache" : "direct")
      .number("build_seconds", buildSeconds)
      .number("build_mb_per_s",
              buildSeconds > 0 ? double(journal->endOffset()) / buildSeconds / 1e6 : -1)
      .number("open_seconds", openSeconds)
      .object("sha256_in_process", shaProbe())
      .array("runs", runs);
  journal.reset();
  if (c.remove) {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::printf("%s\n", out.str().c_str());
  co_return 0;
}

// "2GiB", "512MiB", "64k", "1000" → bytes; nullopt if malformed or over the bound.
std::optional<std::uint64_t> parseBytes(const std::string& text) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::string unit = text.substr(used);
  for (auto& ch : unit) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  double scale = 1;
  if (unit == "" || unit == "b") {
    scale = 1;
  } else if (unit == "k" || unit == "kib") {
    scale = 1024.0;
  } else if (unit == "m" || unit == "mib") {
    scale = 1024.0 * 1024;
  } else if (unit == "g" || unit == "gib") {
    scale = 1024.0 * 1024 * 1024;
  } else if (unit == "kb") {
    scale = 1e3;
  } else if (unit == "mb") {
    scale = 1e6;
  } else if (unit == "gb") {
    scale = 1e9;
  } else {
    return std::nullopt;
  }
  const double bytes = value * scale;
  if (!(bytes >= 0) || bytes > double(kMaxCreateBytes)) return std::nullopt;
  return static_cast<std::uint64_t>(bytes);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cairn journal benchmarks (JSON on stdout; see docs/performance.md)"};
  app.require_subcommand(1);

  AppendConfig append;
  auto* appendCmd = app.add_subcommand("append", "group-commit append throughput and latency");
  appendCmd->add_option("--dir", append.dir, "directory on the disk under test")->required();
  appendCmd->add_option("--value-size", append.valueSize, "payload bytes per record")
      ->check(CLI::Range(std::size_t{0}, std::size_t{limits::kMaxPayloadBytes}));
  appendCmd->add_option("--appenders", append.appenders, "concurrent coroutine appenders")
      ->check(CLI::Range(1u, kMaxAppenders));
  appendCmd->add_option("--seconds", append.seconds, "run length")
      ->check(CLI::Range(0.01, kMaxSeconds));
  appendCmd->add_option("--records", append.records, "stop after this many records instead");
  appendCmd->add_option("--max-batch-bytes", append.maxBatchBytes, "JournalOptions::maxBatchBytes")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 30));
  appendCmd->add_flag(
      "--no-room", [&](std::int64_t) { append.preallocate = false; },
      "batches extend the file (JournalOptions::preallocate = false)");
  appendCmd->add_flag(
      "--buffered-room", [&](std::int64_t) { append.directRoom = false; },
      "the room's zeros through the page cache (JournalOptions::directRoom = false)");
  appendCmd->add_flag("--keep", append.keep, "keep the journal directory");

  PrefixConfig prefix;
  std::string createBytes = "2GiB";
  auto* prefixCmd = app.add_subcommand("prefix", "prefix read + SHA-256 throughput");
  prefixCmd->add_option("--dir", prefix.dir, "directory on the disk under test")->required();
  prefixCmd->add_option("--create-bytes", createBytes, "journal size to build (e.g. 2GiB)");
  prefixCmd->add_option("--read-chunk", prefix.readChunkBytes, "JournalOptions::readChunkBytes")
      ->check(CLI::Range(std::size_t{4096}, std::size_t{256} << 20));
  prefixCmd->add_option("--read-depth", prefix.readDepth, "JournalOptions::readDepth")
      ->check(CLI::Range(1u, 64u));
  prefixCmd->add_flag(
      "--buffered", [&](std::int64_t) { prefix.directReads = false; },
      "read through the page cache (JournalOptions::directReads = false)");
  prefixCmd->add_flag(
      "--direct-cached", [&](std::int64_t) { prefix.cachedChunksFromCache = false; },
      "read cached chunks directly too (JournalOptions::cachedChunksFromCache = false)");
  prefixCmd->add_option("--repeats", prefix.repeats, "cold+warm pairs")
      ->check(CLI::Range(1u, kMaxPrefixRepeats));
  prefixCmd->add_flag(
      "--no-drop-cache", [&](std::int64_t) { prefix.dropCache = false; },
      "do not evict the page cache before the cold run");
  prefixCmd->add_flag(
      "--no-experiments", [&](std::int64_t) { prefix.experiments = false; },
      "only the product's prefix(), cold and warm");
  prefixCmd->add_flag("--remove", prefix.remove, "remove the journal afterwards");

  SyncConfig syncs;
  auto* syncsCmd = app.add_subcommand(
      "syncs",
      "durable writes one at a time (blocking syscalls, io_uring) and two at a time, alternating");
  syncsCmd->add_option("--dir", syncs.dir, "directory on the disk under test")->required();
  syncsCmd->add_option("--bytes", syncs.bytes, "bytes per write")
      ->check(CLI::Range(std::size_t{1}, std::size_t{16} << 20));
  syncsCmd->add_option("--seconds", syncs.seconds, "run length (all methods together)")
      ->check(CLI::Range(0.5, kMaxSeconds));
  syncsCmd
      ->add_option("--prealloc", syncs.prealloc,
                   "none, keep (fallocate, size kept), unwritten (fallocate) or written")
      ->check(CLI::IsMember({"none", "keep", "unwritten", "written"}));

  CLI11_PARSE(app, argc, argv);

  if (*appendCmd) return runOnLoop([&](io::Uring& u) { return runAppend(u, append); });
  if (*syncsCmd) return runOnLoop([&](io::Uring& u) { return runSyncs(u, syncs); });
  auto bytes = parseBytes(createBytes);
  if (!bytes) {
    std::fprintf(stderr, "journal_bench: --create-bytes: cannot parse %s\n", createBytes.c_str());
    return 2;
  }
  prefix.createBytes = *bytes;
  return runOnLoop([&](io::Uring& u) { return runPrefix(u, prefix); });
}
