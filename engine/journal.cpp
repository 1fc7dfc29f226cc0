#include "engine/journal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <deque>
#include <string>

#include "engine/async.hpp"
#include "engine/cpu_pool.hpp"
#include "io/file.hpp"
#include "io/lock.hpp"
#include "io/uring.hpp"

namespace cairn {

namespace fs = std::filesystem;

namespace {

Failure<Error> ioError(const std::string& what, const std::error_code& ec) {
  return err(Errc::io, what + ": " + ec.message());
}

// One group-commit batch: frames appended while the previous batch was being written.
struct Batch {
  Bytes bytes;
  std::vector<std::uint64_t> ends;  // end of each frame, relative to the batch's start
  std::vector<Completion<Res<std::uint64_t>>*> waiters;
  bool empty() const { return ends.empty(); }
};

}  // namespace

struct Journal::Impl {
  std::optional<io::DirectoryLock> lock;
  io::File file;
  Batch pending;
  std::uint64_t nextSequence = 1;  // sequence the next append gets
  std::size_t waiting = 0;         // appenders suspended in append()
  bool writing = false;
  std::optional<Error> failed;  // set once a write or sync failed; the journal is then read-only
  struct RoomWaiter {
    Signal* signal;
    std::uint64_t frameBytes;
  };
  std::deque<RoomWaiter> roomWaiters;  // appenders waiting, in arrival order
  std::uint64_t reserved = 0;          // room promised to admitted waiters not yet resumed

  // Admits waiters in order while the pending batch has room for them (always the first when
  // the batch is empty, so a frame larger than maxBatchBytes still goes alone).
  void admitWaiters(std::uint64_t maxBatchBytes) {
    while (!roomWaiters.empty()) {
      RoomWaiter w = roomWaiters.front();
      std::uint64_t used = pending.bytes.size() + reserved;
      if (used > 0 && used + w.frameBytes > maxBatchBytes) break;
      reserved += w.frameBytes;
      roomWaiters.pop_front();
      w.signal->notify();
    }
  }
  void wakeAllWaiters() {
    for (RoomWaiter& w : roomWaiters) w.signal->notify();
    roomWaiters.clear();
  }
};

Journal::Journal(io::Uring& uring, JournalOptions options)
    : uring_(uring), options_(options), impl_(std::make_unique<Impl>()) {}

Journal::~Journal() = default;

asio::awaitable<Res<std::unique_ptr<Journal>>> Journal::create(io::Uring& uring,
                                                               const fs::path& dir,
                                                               std::u16string_view databaseId,
                                                               JournalOptions options) {
  auto headerBytes = encodeJournalHeader(databaseId);
  if (!headerBytes) co_return Failure<Error>{headerBytes.error()};
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) co_return ioError("cannot create " + dir.string(), ec);
  auto lock = io::DirectoryLock::acquire(dir);
  if (!lock) {
    if (lock.error() == std::errc::resource_unavailable_try_again) {
      auto pid = io::DirectoryLock::holder(dir);
      co_return err(Errc::busy, dir.string() + " is owned by another process" +
                                    (pid ? " (pid " + std::to_string(*pid) + ")" : ""));
    }
    co_return ioError("cannot lock " + dir.string(), lock.error());
  }
  // Write the header to a temporary name, make it durable, then link it into place: the
  // journal appears whole or not at all, and link() refuses to replace an existing one.
  fs::path final = dir / kFileName;
  fs::path temp = dir / (std::string(kFileName) + ".creating");
  fs::remove(temp, ec);
  {
    auto tmp = io::File::open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (!tmp) co_return ioError("cannot create " + temp.string(), tmp.error());
    if (auto w = tmp->writeAllAt(*headerBytes, 0); !w) co_return ioError("write", w.error());
    if (auto s = tmp->syncNow(); !s) co_return ioError("fsync", s.error());
  }
  if (::link(temp.c_str(), final.c_str()) != 0) {
    auto e = io::lastErrno();
    fs::remove(temp, ec);
    if (e == std::errc::file_exists) {
      co_return err(Errc::usage, "a journal already exists in " + dir.string());
    }
    co_return ioError("cannot link " + final.string(), e);
  }
  fs::remove(temp, ec);
  if (auto s = io::syncDirectory(dir); !s) co_return ioError("fsync " + dir.string(), s.error());
  lock->release();
  co_return co_await open(uring, dir, options);
}

asio::awaitable<Res<std::unique_ptr<Journal>>> Journal::open(io::Uring& uring, const fs::path& dir,
                                                             JournalOptions options) {
  std::unique_ptr<Journal> j(new Journal(uring, options));
  auto lock = io::DirectoryLock::acquire(dir);
  if (!lock) {
    if (lock.error() == std::errc::resource_unavailable_try_again) {
      auto pid = io::DirectoryLock::holder(dir);
      co_return err(Errc::busy, dir.string() + " is owned by another process" +
                                    (pid ? " (pid " + std::to_string(*pid) + ")" : ""));
    }
    if (lock.error() == std::errc::no_such_file_or_directory) {
      co_return err(Errc::usage, dir.string() + " is not a database directory");
    }
    co_return ioError("cannot lock " + dir.string(), lock.error());
  }
  j->impl_->lock.emplace(std::move(*lock));
  auto file = io::File::open(dir / kFileName, O_RDWR | O_CLOEXEC);
  if (!file) {
    if (file.error() == std::errc::no_such_file_or_directory) {
      co_return err(Errc::usage, "no journal in " + dir.string() + " (run cairn init)");
    }
    co_return ioError("cannot open journal", file.error());
  }
  j->impl_->file = std::move(*file);
  auto size = j->impl_->file.size();
  if (!size) co_return ioError("stat journal", size.error());

  // Header: 16 bytes say how long it is; then the whole of it.
  std::uint8_t first[16];
  auto n = co_await uring.readFull(j->impl_->file.fd(), first, 0);
  if (!n) co_return ioError("read journal header", n.error());
  auto headerLength = journalHeaderLength(ByteView(first, *n));
  if (!headerLength) co_return Failure<Error>{headerLength.error()};
  Bytes headerBytes(*headerLength);
  n = co_await uring.readFull(j->impl_->file.fd(), headerBytes, 0);
  if (!n) co_return ioError("read journal header", n.error());
  headerBytes.resize(*n);
  auto header = decodeJournalHeader(headerBytes);
  if (!header) co_return Failure<Error>{header.error()};
  j->header_ = std::move(*header);
  j->lineage_ = j->header_.lineageId();
  j->ends_.push_back(*headerLength);

  if (auto scanned = co_await j->scanFrames(*size); !scanned) {
    co_return Failure<Error>{scanned.error()};
  }
  j->impl_->nextSequence = j->endSequence() + 1;
  co_return j;
}

// Reads every frame after the header, recording where each ends. A fault is a torn tail (cut)
// only when it lies within the last kMaxUnsyncedBytes of the file: at most one batch is ever
// unsynced, so damage farther from the end was acknowledged and is reported, never skipped.
asio::awaitable<Res<void>> Journal::scanFrames(std::uint64_t fileSize) {
  std::uint64_t start = ends_.back();
  FrameScanner scanner(start, 1);
  scanner.onFrame([this](std::uint64_t, std::uint64_t end) { ends_.push_back(end); });
  std::optional<Error> fault;
  auto read = co_await readRange(start, fileSize, [&](ByteView chunk) -> Res<void> {
    auto ok = scanner.feed(chunk);
    if (!ok) fault = ok.error();
    return ok;  // a fault stops the reading
  });
  if (!read && !fault) co_return read;
  std::uint64_t boundary = scanner.boundaryOffset();
  if (boundary == fileSize) co_return Res<void>{};
  if (fileSize - boundary > kMaxUnsyncedBytes) {
    co_return err(Errc::format,
                  "journal damaged before its tail: " +
                      (fault ? fault->message : "frame at offset " + std::to_string(boundary)) +
                      "; " + std::to_string(fileSize - boundary) +
                      " bytes follow it, more than one unsynced batch");
  }
  // The torn tail of the one batch that was never acknowledged: cut it, durably.
  if (auto t = impl_->file.truncate(boundary); !t) co_return ioError("truncate", t.error());
  if (auto s = co_await uring_.fsync(impl_->file.fd()); !s) co_return ioError("fsync", s.error());
  tornBytesCut_ = fileSize - boundary;
  co_return Res<void>{};
}

asio::awaitable<Res<void>> Journal::readRange(std::uint64_t start, std::uint64_t end,
                                              const std::function<Res<void>(ByteView)>& sink) {
  co_return co_await readRangeAsync(
      start, end, [&](ByteView chunk) -> asio::awaitable<Res<void>> { co_return sink(chunk); });
}

asio::awaitable<Res<void>> Journal::readRangeAsync(
    std::uint64_t start, std::uint64_t end,
    const std::function<asio::awaitable<Res<void>>(ByteView)>& sink) {
  struct Slot {
    std::unique_ptr<std::uint8_t[]> buffer;  // not zero-filled: every byte is read into
    std::size_t capacity = 0;
    std::uint64_t offset = 0;
    std::size_t length = 0;
    std::optional<io::IoResult<std::size_t>> result;
    Signal done;
  };
  const std::size_t chunk = options_.readChunkBytes;
  const unsigned depth = std::max(1u, options_.readDepth);
  std::vector<Slot> slots(depth);
  auto executor = co_await asio::this_coro::executor;
  int fd = impl_->file.fd();
  std::uint64_t nextOffset = start;  // next byte to request
  unsigned launched = 0;             // reads started and not yet consumed
  auto launch = [&](Slot& slot) {
    slot.offset = nextOffset;
    slot.length = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, end - nextOffset));
    if (slot.capacity < slot.length) {
      slot.buffer.reset(new std::uint8_t[slot.length]);
      slot.capacity = slot.length;
    }
    slot.result.reset();
    slot.done.reset();
    nextOffset += slot.length;
    ++launched;
    asio::co_spawn(
        executor,
        [this, &slot, fd]() -> asio::awaitable<void> {
          slot.result = co_await uring_.readFull(
              fd, std::span<std::uint8_t>(slot.buffer.get(), slot.length), slot.offset);
          slot.done.notify();
        },
        asio::detached);
  };
  for (auto& slot : slots) {
    if (nextOffset < end) launch(slot);
  }
  Res<void> outcome;
  for (std::size_t i = 0; launched > 0; ++i) {
    Slot& slot = slots[i % depth];
    co_await slot.done.wait();
    --launched;
    if (!outcome) continue;  // after a failure, only drain the reads still in flight
    if (!*slot.result) {
      outcome = ioError("read journal at " + std::to_string(slot.offset), slot.result->error());
    } else if (**slot.result != slot.length) {
      outcome = err(Errc::io, "journal ends at " + std::to_string(slot.offset + **slot.result) +
                                  ", before " + std::to_string(end));
    } else {
      outcome = co_await sink(ByteView(slot.buffer.get(), slot.length));
    }
    if (outcome && nextOffset < end) launch(slot);
  }
  co_return outcome;
}

asio::awaitable<Res<Prefix>> Journal::prefix(std::uint64_t sequence, std::uint64_t byteCap) {
  if (sequence > endSequence()) {
    co_return err(Errc::usage, "sequence " + std::to_string(sequence) +
                                   " is beyond the journal's end " + std::to_string(endSequence()));
  }
  std::uint64_t length = ends_[sequence];
  if (length > byteCap) {
    co_return err(Errc::budget, "prefix at sequence " + std::to_string(sequence) + " is " +
                                    std::to_string(length) + " bytes, over the cap of " +
                                    std::to_string(byteCap));
  }
  // Start from the hash state of the longest prefix this process already read from the file
  // at or below `sequence` (the durable bytes below the end never change while we hold the
  // lock), so successive checkpoints read only what was appended since the last one.
  Sha256 hash;
  std::uint64_t from = 0;
  if (prefixMemo_ && prefixMemo_->sequence <= sequence) {
    hash = prefixMemo_->hash.clone();
    from = ends_[prefixMemo_->sequence];
  }
  // Hashing runs on the CPU pool while the next reads are in flight, so the disk, the hash
  // and the loop overlap.
  auto read =
      co_await readRangeAsync(from, length, [&](ByteView chunk) -> asio::awaitable<Res<void>> {
        co_await onCpuPool([&] { hash.update(chunk); });
        co_return Res<void>{};
      });
  if (!read) co_return Failure<Error>{read.error()};
  if (!prefixMemo_ || prefixMemo_->sequence < sequence) {
    prefixMemo_ = PrefixMemo{sequence, hash.clone()};
  }
  co_return Prefix{sequence, length, hash.finish()};
}

asio::awaitable<Res<Bytes>> Journal::record(std::uint64_t sequence) {
  if (sequence < 1 || sequence > endSequence()) {
    co_return err(Errc::usage, "no record " + std::to_string(sequence));
  }
  std::uint64_t start = ends_[sequence - 1];
  Bytes frame;
  auto read = co_await readRange(start, ends_[sequence], [&](ByteView chunk) -> Res<void> {
    frame.insert(frame.end(), chunk.begin(), chunk.end());
    return {};
  });
  if (!read) co_return Failure<Error>{read.error()};
  FrameScanner check(start, sequence);
  if (auto ok = check.feed(frame); !ok || !check.atBoundary()) {
    co_return err(Errc::format, "record " + std::to_string(sequence) + " is damaged on disk");
  }
  co_return Bytes(frame.begin() + limits::kFrameHeaderBytes, frame.end() - 4);
}

asio::awaitable<Res<std::uint64_t>> Journal::append(ByteView payload) {
  Impl& s = *impl_;
  if (s.failed) co_return Failure<Error>{*s.failed};
  if (payload.size() > limits::kMaxPayloadBytes) {
    co_return err(Errc::usage,
                  "record of " + std::to_string(payload.size()) + " bytes exceeds the 16 MiB cap");
  }
  if (s.waiting >= options_.maxWaitingAppenders) {
    co_return err(Errc::busy, "too many appenders waiting (" + std::to_string(s.waiting) + ")");
  }
  if (s.nextSequence > limits::kMaxPrefixFrames) {
    co_return err(Errc::usage, "the journal holds the most frames it can (268435456)");
  }
  ++s.waiting;
  std::uint64_t frame = frameLength(payload.size());
  // First come, first sequenced: an appender waits while others wait before it or while the
  // pending batch has no room; the writer admits waiters in order, reserving their room.
  bool mustWait = !s.roomWaiters.empty() || s.reserved > 0 ||
                  (!s.pending.empty() && s.pending.bytes.size() + frame > options_.maxBatchBytes);
  if (mustWait) {
    Signal room;
    s.roomWaiters.push_back({&room, frame});
    co_await room.wait();
    s.reserved -= frame;
    if (s.failed) {
      --s.waiting;
      co_return Failure<Error>{*s.failed};
    }
  }
  std::uint64_t sequence = s.nextSequence++;
  appendFrame(s.pending.bytes, sequence, payload);
  s.pending.ends.push_back(s.pending.bytes.size());
  Completion<Res<std::uint64_t>> done;
  s.pending.waiters.push_back(&done);
  if (!s.writing) {
    s.writing = true;
    asio::co_spawn(co_await asio::this_coro::executor, writeBatches(), asio::detached);
  }
  auto result = co_await done.wait();
  --s.waiting;
  co_return result;
}

// The group-commit writer: while frames are pending, take them all as one batch, write it
// with one pwrite and make it durable with one fdatasync, then acknowledge every appender in
// it. Appends that arrive meanwhile form the next batch. At most one batch is unsynced.
asio::awaitable<void> Journal::writeBatches() {
  Impl& s = *impl_;
  while (!s.pending.empty() && !s.failed) {
    Batch batch = std::move(s.pending);
    s.pending = Batch{};
    s.admitWaiters(options_.maxBatchBytes);

    std::uint64_t at = endOffset();
    auto wrote = co_await uring_.write(s.file.fd(), batch.bytes, at);
    io::IoResult<void> synced = wrote;
    if (wrote) synced = co_await uring_.fdatasync(s.file.fd());
    if (!synced) {
      // fsync failure leaves the page cache's state unknown: never retry, never acknowledge.
      s.failed =
          Error{Errc::io, "journal write or fdatasync failed at offset " + std::to_string(at) +
                              ": " + synced.error().message() + "; reopen the journal to recover"};
      for (auto* w : batch.waiters) w->complete(Failure<Error>{*s.failed});
      break;
    }
    std::uint64_t first = endSequence() + 1;
    for (std::uint64_t end : batch.ends) ends_.push_back(at + end);
    ++batches_;
    for (std::size_t i = 0; i < batch.waiters.size(); ++i) batch.waiters[i]->complete(first + i);
    // Let the appenders just acknowledged run (their resumptions are queued behind us) before
    // cutting the next batch: an appender in a loop appends again and joins that batch, so a
    // sync carries every waiting appender rather than alternating halves (measured: K/2
    // records per sync without this, K with it).
    co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
  }
  if (s.failed) {
    for (auto* w : s.pending.waiters) w->complete(Failure<Error>{*s.failed});
    s.pending = Batch{};
    s.wakeAllWaiters();
  }
  s.writing = false;
}

}  // namespace cairn
