#include "engine/journal/journal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <exception>
#include <string>

#include "engine/format/publisher_state.hpp"
#include "engine/journal/state_file.hpp"
#include "engine/runtime/async.hpp"
#include "engine/runtime/cpu_pool.hpp"
#include "io/file.hpp"
#include "io/lock.hpp"
#include "io/read_ring.hpp"
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
  // Empties the batch, keeping what its vectors hold allocated.
  void clear() {
    bytes.clear();
    ends.clear();
    waiters.clear();
  }
};

// Names tried for a torn tail's file (journal.torn-OFFSET-SECONDS[-N]).
constexpr int kMaxTornFileAttempts = 16;

Res<void> checkOptions(const JournalOptions& o) {
  if (o.maxBatchBytes == 0 || o.maxBatchBytes > kMaxBatchBytes) {
    return err(Errc::usage, "the journal's batch size must be 1.." +
                                std::to_string(kMaxBatchBytes) +
                                " bytes: a crash may tear at most one batch, and the torn-tail "
                                "rule relies on that bound");
  }
  if (o.prefixSliceBytes == 0) return err(Errc::usage, "the journal's prefix slice is 0 bytes");
  if (o.readOnly && o.cutDamagedTail) {
    return err(Errc::usage, "a read-only journal cuts nothing");
  }
  return {};
}

// What DIR/publisher.state proves acknowledged (nothing without the file). A damaged file is
// an error, never read as absent.
Res<std::optional<AcknowledgedPrefix>> readAcknowledged(const fs::path& dir,
                                                        const Digest& lineage) {
  auto read = readPublisherStateFile(dir);
  if (!read) return failureOf(read);
  if (!*read) return std::optional<AcknowledgedPrefix>{};
  const fs::path path = dir / kPublisherStateFile;
  const PublisherState* state = &**read;
  if (state->lineage != lineage) {
    return err(Errc::binding, path.string() + " belongs to another journal (lineage " +
                                  toHex(state->lineage) + ")");
  }
  std::optional<AcknowledgedPrefix> out;
  auto consider = [&](const Head& h, const char* what) {
    const HeadFields& f = h.fields();
    if (!out || f.prefixLength > out->length) {
      out = AcknowledgedPrefix{
          f.prefixSequence, f.prefixLength,
          path.string() + " (" + what + ", revision " + std::to_string(f.revision) + ")"};
    }
  };
  if (state->expected) consider(state->expected->head, "the expected head");
  if (state->pending) consider(state->pending->candidate, "a pending intent");
  return out;
}

// Why DIR has no journal: an interrupted recovery left its journal unfinished beside (run the
// recovery again: it removes what the interrupted one left), or there never was one.
Failure<Error> noJournal(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / kRecoveringFileName, ec)) {
    return err(Errc::usage, dir.string() + " holds an interrupted recovery (" +
                                kRecoveringFileName +
                                ", no journal): run cairn recover again; it removes what the "
                                "interrupted run left and rebuilds the journal");
  }
  return err(Errc::usage, "no journal in " + dir.string() + " (run cairn init)");
}

// Temporary files of a durable replace (NAME.tmp.PID.N) that a killed process left in the
// directory: under the lock, none is anyone's. Best effort.
void removeStaleTemporaries(const fs::path& dir) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.find(".tmp.") == std::string::npos || !it->is_regular_file(ec)) continue;
    std::error_code ignored;
    fs::remove(it->path(), ignored);
  }
}

// The marker's name for records through `durable` (`length` bytes) durable and durable+1..last
// unknown.
std::string unknownMarkerName(std::uint64_t durable, std::uint64_t length, std::uint64_t last) {
  return std::string(kUnknownFilePrefix) + std::to_string(durable) + "-" + std::to_string(length) +
         "-" + std::to_string(last);
}

// The three numbers of a marker's name (digits only, none beyond 64 bits), or nullopt.
std::optional<std::array<std::uint64_t, 3>> parseUnknownMarker(std::string_view name) {
  std::array<std::uint64_t, 3> out{};
  name.remove_prefix(std::string_view(kUnknownFilePrefix).size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::size_t dash = i + 1 < out.size() ? name.find('-') : name.size();
    const std::string_view digits = name.substr(0, dash);
    if (dash == std::string_view::npos || digits.empty() || digits.size() > 19) return {};
    for (char c : digits) {
      if (c < '0' || c > '9') return {};
      out[i] = out[i] * 10 + static_cast<std::uint64_t>(c - '0');
    }
    name.remove_prefix(std::min(name.size(), dash + 1));
  }
  return out;
}

// The unknown range marked in DIR (docs/decisions/0060-unknown-range-marked-beside-journal.md), or
// nullopt. A marker that does not parse, or a second one, is an error: nothing is judged against a
// marker that cannot be read.
Res<std::optional<UnknownRange>> readUnknownMarker(const fs::path& dir) {
  std::optional<UnknownRange> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(kUnknownFilePrefix, 0) != 0) continue;
    auto n = parseUnknownMarker(name);
    if (!n || (*n)[2] <= (*n)[0] || found) {
      return err(Errc::format, it->path().string() +
                                   (found ? " is a second marker of an unknown range"
                                          : " does not name an unknown range (S-L-U, S < U)") +
                                   "; nothing was changed");
    }
    found = UnknownRange{(*n)[0], (*n)[1], SequenceRange{(*n)[0] + 1, (*n)[2]}, false, it->path()};
  }
  if (ec) return ioError("cannot list " + dir.string(), ec);
  return found;
}

// Marks the unknown range beside the journal: an empty file (no data block to allocate on a
// full disk), then the directory's fsync.
std::error_code markUnknown(const fs::path& dir, const std::string& name) {
  auto f = io::File::open(dir / name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (!f && f.error() != std::errc::file_exists) return f.error();
  if (auto s = io::syncDirectory(dir); !s) return s.error();
  return {};
}

using io::AlignedBuffer;
// makeRoom() writes its zeros from one buffer of this size.
constexpr std::size_t kRoomChunkBytes = std::size_t{1} << 20;
using io::allocateAligned;
constexpr std::uint64_t kDirectAlign = io::kDirectAlign;
constexpr std::uint64_t alignDown(std::uint64_t v) { return v & ~(kDirectAlign - 1); }
constexpr std::uint64_t alignUp(std::uint64_t v) { return alignDown(v + kDirectAlign - 1); }

}  // namespace

Res<io::DirectoryLock> lockDatabaseDirectory(const fs::path& dir, bool shared) {
  auto lock = shared ? io::DirectoryLock::acquireShared(dir) : io::DirectoryLock::acquire(dir);
  if (lock) return std::move(*lock);
  if (lock.error() == std::errc::resource_unavailable_try_again) {
    auto pid = io::DirectoryLock::holder(dir);
    return err(Errc::busy, dir.string() + " is owned by another process" +
                               (pid ? " (pid " + std::to_string(*pid) + ")" : ""));
  }
  if (lock.error() == std::errc::no_such_file_or_directory) {
    return err(Errc::usage, dir.string() + " is not a database directory");
  }
  return ioError("cannot lock " + (dir / io::DirectoryLock::kFileName).string(), lock.error());
}

struct Journal::Impl {
  std::optional<io::DirectoryLock> lock;
  io::File file;
  // The same file opened with O_DIRECT for large reads (prefixes, segments, the scan on open):
  // they bypass the page cache, so a cold read costs no cache fill and no copy, and a 2 GiB
  // prefix does not evict everything else. Not open where the file system refuses O_DIRECT
  // (tmpfs); reads are then buffered.
  io::File direct;
  // The same file opened with O_DIRECT for makeRoom()'s zeros: written from the disk's side of
  // the page cache they cost no copy and reach the disk 2-3x faster than buffered zeros and
  // their writeback (docs/decisions/0052-room-zeros-written-o-direct.md). Not open where the file
  // system refuses O_DIRECT.
  io::File roomDirect;
  Batch pending;
  // The batch written last, emptied: the next pending batch takes its buffers, so appends fill
  // memory already allocated (a fresh vector grown to 72 KiB per batch cost a page fault per
  // page and a copy per doubling on the loop thread, between two syncs).
  Batch spare;
  std::uint64_t nextSequence = 1;  // sequence the next append gets
  bool scanned = false;            // open() scanned the frames: the records are known
  std::size_t waiting = 0;         // appenders suspended in append()
  bool writing = false;
  std::optional<Error> failed;  // set once a write or sync failed; the journal is then read-only
  // The file's length: frames end at endOffset(), zeros written and made durable by
  // makeRoom() follow up to here (docs/journal.md, "Room").
  std::uint64_t allocatedEnd = 0;
  // After a room found no space: batches ending before this offset write without one.
  std::uint64_t noRoomUntil = 0;
  struct RoomWaiter {
    Signal* signal;
    std::uint64_t frameBytes;
  };
  std::deque<RoomWaiter> roomWaiters;  // appenders waiting, in arrival order
  std::uint64_t reserved = 0;          // room promised to admitted waiters not yet resumed
  // Chunk buffers of finished reads, for the next ones (loop thread only; at most
  // kMaxSpareReadBytes, held for the journal's life). Allocated per read, 1 MiB buffers
  // fragmented the heap: a checkpoint's peak RSS grew with the journal.
  std::vector<AlignedBuffer> spareChunks;

  // A chunk buffer: a kept one, or a new one.
  AlignedBuffer takeChunk(std::size_t chunk) {
    if (spareChunks.empty()) return allocateAligned(chunk);
    AlignedBuffer buffer = std::move(spareChunks.back());
    spareChunks.pop_back();
    return buffer;
  }
  // prefix()'s buffers: readDepth chunks in huge pages (io::ReadBuffers), mapped on the first
  // prefix and kept; one prefix at a time uses them, a concurrent one takes chunk buffers.
  std::optional<io::ReadBuffers> hashBuffers;
  bool hashBuffersBusy = false;

  void keepChunk(AlignedBuffer buffer, std::size_t chunk) {
    if ((spareChunks.size() + 1) * chunk <= kMaxSpareReadBytes) {
      spareChunks.push_back(std::move(buffer));
    }
  }

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
  if (auto valid = checkOptions(options); !valid) co_return failureOf(valid);
  if (options.readOnly) co_return err(Errc::usage, "a journal cannot be created read-only");
  auto headerBytes = encodeJournalHeader(databaseId);
  if (!headerBytes) co_return failureOf(headerBytes);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) co_return ioError("cannot create " + dir.string(), ec);
  auto lock = lockDatabaseDirectory(dir, /*shared=*/false);
  if (!lock) co_return failureOf(lock);
  // What an interrupted recovery left is the next recovery's to remove, never a new
  // journal's to join (its marker or state would bind the new journal to another lineage).
  if (fs::exists(dir / kRecoveringFileName, ec)) co_return noJournal(dir);
  // Nor a marker of an unknown range whose journal is gone
  // (docs/decisions/0060-unknown-range-marked-beside-journal.md): it would name another one.
  auto marked = readUnknownMarker(dir);
  if (!marked) co_return failureOf(marked);
  if (*marked) {
    co_return err(Errc::usage, (*marked)->marker.string() +
                                   " marks an unknown range of a journal that is not there; "
                                   "nothing was created");
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
  if (options.fault) options.fault("created");
  // Opened under the same lock: a journal without the files its creator writes beside it
  // (the publisher state, the journal-only marker) is never seen by another process.
  co_return co_await openLocked(uring, std::move(*lock), options);
}

asio::awaitable<Res<std::unique_ptr<Journal>>> Journal::open(io::Uring& uring, const fs::path& dir,
                                                             JournalOptions options) {
  auto lock = lockDatabaseDirectory(dir, options.readOnly);
  if (!lock) co_return failureOf(lock);
  co_return co_await openLocked(uring, std::move(*lock), options);
}

asio::awaitable<Res<std::unique_ptr<Journal>>> Journal::openLocked(io::Uring& uring,
                                                                   io::DirectoryLock lock,
                                                                   JournalOptions options) {
  const fs::path dir = lock.directory();
  auto j = co_await openUnscannedLocked(uring, std::move(lock), options);
  if (!j) co_return std::move(j);
  Journal& journal = **j;
  // Under the lock: what the publisher state proves acknowledged, before any byte is judged.
  auto acknowledged = readAcknowledged(dir, journal.lineage());
  if (!acknowledged) co_return failureOf(acknowledged);
  journal.acknowledged_ = std::move(*acknowledged);
  if (!options.readOnly) removeStaleTemporaries(dir);
  auto size = journal.fileBytes();
  if (!size) co_return failureOf(size);
  auto marked = readUnknownMarker(dir);
  if (!marked) co_return failureOf(marked);
  if (*marked) {
    auto scanEnd = co_await journal.cutUnknown(**marked, *size);
    if (!scanEnd) co_return failureOf(scanEnd);
    *size = *scanEnd;
  }
  if (auto scanned = co_await journal.scanFrames(*size); !scanned) {
    co_return failureOf(scanned);
  }
  if (auto reached = journal.checkAcknowledgedReached(); !reached) {
    co_return failureOf(reached);
  }
  if (*marked) {
    if (auto settled = journal.settleUnknown(std::move(**marked)); !settled) {
      co_return failureOf(settled);
    }
  }
  journal.impl_->nextSequence = journal.endSequence() + 1;
  journal.impl_->scanned = true;
  auto length = journal.fileBytes();  // after a cut, if there was one
  if (!length) co_return failureOf(length);
  journal.impl_->allocatedEnd = *length;
  co_return std::move(j);
}

asio::awaitable<Res<std::unique_ptr<Journal>>> Journal::openUnscanned(io::Uring& uring,
                                                                      const fs::path& dir,
                                                                      JournalOptions options) {
  auto lock = lockDatabaseDirectory(dir, options.readOnly);
  if (!lock) co_return failureOf(lock);
  co_return co_await openUnscannedLocked(uring, std::move(*lock), options);
}

asio::awaitable<Res<std::unique_ptr<Journal>>> Journal::openUnscannedLocked(
    io::Uring& uring, io::DirectoryLock lock, JournalOptions options) {
  if (auto valid = checkOptions(options); !valid) co_return failureOf(valid);
  // A writer owns the directory; a reader shares it with readers only.
  assert(lock.held() && (options.readOnly || !lock.shared()));
  const fs::path dir = lock.directory();
  std::unique_ptr<Journal> j(new Journal(uring, options));
  j->dir_ = dir;
  j->impl_->lock.emplace(std::move(lock));
  auto file = io::File::open(dir / kFileName, (options.readOnly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
  if (!file) {
    if (file.error() == std::errc::no_such_file_or_directory) co_return noJournal(dir);
    co_return ioError("cannot open " + (dir / kFileName).string(), file.error());
  }
  j->impl_->file = std::move(*file);
  if (options.directReads) {
    if (auto direct = io::File::open(dir / kFileName, O_RDONLY | O_DIRECT | O_CLOEXEC)) {
      j->impl_->direct = std::move(*direct);
    }
  }
  if (options.preallocate && options.directRoom && !options.readOnly) {
    if (auto direct = io::File::open(dir / kFileName, O_WRONLY | O_DIRECT | O_CLOEXEC)) {
      j->impl_->roomDirect = std::move(*direct);
    }
  }
  // Header: 16 bytes say how long it is; then the whole of it.
  std::uint8_t first[16];
  auto n = co_await uring.readFull(j->impl_->file.fd(), first, 0);
  if (!n) co_return ioError("read journal header", n.error());
  auto headerLength = journalHeaderLength(ByteView(first, *n));
  if (!headerLength) co_return failureOf(headerLength);
  Bytes headerBytes(*headerLength);
  n = co_await uring.readFull(j->impl_->file.fd(), headerBytes, 0);
  if (!n) co_return ioError("read journal header", n.error());
  headerBytes.resize(*n);
  auto header = decodeJournalHeader(headerBytes);
  if (!header) co_return failureOf(header);
  j->header_ = std::move(*header);
  j->lineage_ = j->header_.lineageId();
  j->ends_.push_back(*headerLength);
  co_return j;
}

// Reads every frame after the header, recording where each ends; what follows the last valid
// frame is judged by handleTail.
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
  co_return co_await handleTail(boundary, fileSize, fault);
}

// The bytes after the last valid frame (docs/journal.md, "Torn tails"):
//   1. inside the acknowledged prefix: an error, nothing cut (only the store has those bytes);
//   2. judged by judgeTail: what a crash cannot leave is an error, nothing cut (unless the
//      operator asked for the cut: cutDamagedTail);
//   3. read-only: reported, left for the next writer;
//   4. kept in a file beside the journal, durably, then cut, durably.
asio::awaitable<Res<void>> Journal::handleTail(std::uint64_t boundary, std::uint64_t fileSize,
                                               const std::optional<Error>& fault) {
  TornTail tail;
  tail.offset = boundary;
  tail.bytes = fileSize - boundary;
  tail.sequence = endSequence() + 1;
  const std::string at = "offset " + std::to_string(boundary) + " (the frame of sequence " +
                         std::to_string(tail.sequence) + ")";
  const std::string found = fault ? fault->message : "the file ends inside the frame";
  if (acknowledged_ && boundary < acknowledged_->length) {
    co_return err(Errc::format,
                  "the journal is damaged at " + at + ": " + found + "; that is inside the " +
                      std::to_string(acknowledged_->length) + " bytes through sequence " +
                      std::to_string(acknowledged_->sequence) + " that " + acknowledged_->source +
                      " proves acknowledged, so nothing was cut; recover the database from the "
                      "store (cairn recover) or restore the journal");
  }
  const std::string refused = "; nothing was cut (cairn journal " + dir_.string() +
                              " --cut-damaged-tail cuts it, keeping the bytes, if what follows "
                              "may be lost)";
  // Where the tail's last byte that is not zero lies, read in chunks (none: zeros only, the
  // writer's room). A tail longer than a torn batch and its room is not read.
  const bool bounded = tail.bytes <= kMaxTailBytes;
  std::optional<std::uint64_t> lastNonZero;
  if (bounded) {
    std::uint64_t chunkAt = boundary;
    auto scanned = co_await readRange(boundary, fileSize, [&](ByteView chunk) -> Res<void> {
      auto last = std::find_if(chunk.rbegin(), chunk.rend(), [](std::uint8_t b) { return b != 0; });
      if (last != chunk.rend()) {
        lastNonZero = chunkAt + static_cast<std::uint64_t>(chunk.rend() - last) - 1;
      }
      chunkAt += chunk.size();
      return {};
    });
    if (!scanned) co_return failureOf(scanned);
    // Zeros only: the writer's room (docs/journal.md, "Room"), the journal's clean end; kept,
    // also by a cut on request.
    if (!lastNonZero) co_return Res<void>{};
  }
  if (options_.cutDamagedTail) {
    tail.crashShaped = false;
    tail.reason = found + ", cut on request";
  } else {
    if (!bounded) {
      co_return err(Errc::format, "the journal is damaged at " + at + ": " + found + "; " +
                                      std::to_string(tail.bytes) +
                                      " bytes follow it, more than a crash can leave unsynced" +
                                      refused);
    }
    // Only the written bytes are judged (to the end of the block holding the last byte that
    // is not zero): at most kMaxTailBytes, usually one batch.
    const std::uint64_t end =
        std::min(fileSize, (*lastNonZero / kCrashBlockBytes + 1) * kCrashBlockBytes);
    Bytes bytes;
    bytes.reserve(static_cast<std::size_t>(end - boundary));
    auto read = co_await readRange(boundary, end, [&](ByteView chunk) -> Res<void> {
      bytes.insert(bytes.end(), chunk.begin(), chunk.end());
      return {};
    });
    if (!read) co_return failureOf(read);
    TailJudgement judged = judgeTail(bytes, boundary, tail.sequence);
    if (!judged.torn) {
      co_return err(Errc::format, "the journal is damaged at " + at + ": " + judged.reason +
                                      "; no crash leaves that" + refused);
    }
    tail.bytes = judged.writtenBytes;
    tail.reason = judged.reason;
  }
  if (options_.readOnly) {
    tornTail_ = std::move(tail);
    co_return Res<void>{};
  }
  auto kept = co_await keepTornBytes(boundary, boundary + tail.bytes);
  if (!kept) co_return failureOf(kept);
  tail.evidence = std::move(*kept);
  if (auto t = impl_->file.truncate(boundary); !t) co_return ioError("truncate", t.error());
  if (auto s = co_await uring_.fsync(impl_->file.fd()); !s) co_return ioError("fsync", s.error());
  tail.cut = true;
  tornTail_ = std::move(tail);
  co_return Res<void>{};
}

// Copies the journal's bytes [from, to) into a new file beside it, durably: the evidence of a
// cut, which is never destroyed.
asio::awaitable<Res<fs::path>> Journal::keepTornBytes(std::uint64_t from, std::uint64_t to) {
  const std::string base = std::string(kTornTailFilePrefix) + std::to_string(from) + "-" +
                           std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                              std::chrono::system_clock::now().time_since_epoch())
                                              .count());
  fs::path path;
  io::File out;
  for (int n = 0; n < kMaxTornFileAttempts && !out.isOpen(); ++n) {
    path = dir_ / (n == 0 ? base : base + "-" + std::to_string(n));
    auto f = io::File::open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (f) {
      out = std::move(*f);
    } else if (f.error() != std::errc::file_exists) {
      co_return ioError("cannot keep the torn tail in " + path.string() + " (nothing was cut)",
                        f.error());
    }
  }
  if (!out.isOpen())
    co_return err(Errc::io, "cannot name a file for the torn tail in " + dir_.string());
  std::uint64_t at = 0;
  auto copied =
      co_await readRangeAsync(from, to, [&](ByteView chunk) -> asio::awaitable<Res<void>> {
        auto w = co_await uring_.write(out.fd(), chunk, at);
        if (!w)
          co_return ioError("cannot keep the torn tail in " + path.string() + " (nothing was cut)",
                            w.error());
        at += chunk.size();
        co_return Res<void>{};
      });
  Res<void> done = copied;
  if (done) {
    if (auto s = co_await uring_.fsync(out.fd()); !s)
      done = ioError("fsync " + path.string(), s.error());
  }
  if (done) {
    if (auto s = io::syncDirectory(dir_); !s) done = ioError("fsync " + dir_.string(), s.error());
  }
  if (!done) {
    std::error_code ignored;
    fs::remove(path, ignored);
    co_return failureOf(done);
  }
  co_return path;
}

Res<void> Journal::checkAcknowledgedReached() const {
  if (!acknowledged_) return {};
  const AcknowledgedPrefix& a = *acknowledged_;
  if (a.sequence <= endSequence() && offsetAfter(a.sequence) == a.length) return {};
  return err(Errc::diverged,
             "the journal ends at sequence " + std::to_string(endSequence()) + " (" +
                 std::to_string(endOffset()) + " bytes), but " + a.source +
                 " proves the prefix through sequence " + std::to_string(a.sequence) + " (" +
                 std::to_string(a.length) +
                 " bytes) acknowledged: the journal was truncated or replaced; nothing was "
                 "changed, and no sequence is reused (recover the database: cairn recover)");
}

// The records of a marked unknown range were never acknowledged: they may be kept or dropped,
// but durably one or the other before anything reads, publishes or appends after them
// (docs/decisions/0060-unknown-range-marked-beside-journal.md). They are dropped: a truncate needs
// no space, and the durable end the appenders were told stays exact. Never into what the publisher
// state proves acknowledged.
asio::awaitable<Res<std::uint64_t>> Journal::cutUnknown(const UnknownRange& range,
                                                        std::uint64_t fileSize) {
  const std::string marker = range.marker.string();
  if (acknowledged_ && acknowledged_->length > range.durableLength) {
    co_return err(Errc::format, marker + " says the journal is durable through " +
                                    std::to_string(range.durableLength) + " bytes, but " +
                                    acknowledged_->source + " proves " +
                                    std::to_string(acknowledged_->length) +
                                    " acknowledged: the marker is stale; nothing was cut");
  }
  // Also a file that ends at L already is cut and synced: an earlier cut whose sync failed
  // shows its length in the page cache, not on the disk.
  if (options_.readOnly || fileSize < range.durableLength) {
    co_return std::min(fileSize, range.durableLength);
  }
  if (auto t = impl_->file.truncate(range.durableLength); !t) {
    co_return err(Errc::uncertain, "cannot cut the unknown range " + marker + " names: " +
                                       t.error().message() + "; nothing is appended after it");
  }
  if (auto s = co_await uring_.fsync(impl_->file.fd()); !s) {
    co_return err(Errc::uncertain, "cutting the unknown range " + marker +
                                       " names failed: fsync: " + s.error().message() +
                                       "; nothing is appended after it");
  }
  co_return range.durableLength;
}

Res<void> Journal::settleUnknown(UnknownRange range) {
  if (endSequence() != range.durableSequence || endOffset() != range.durableLength) {
    return err(Errc::format, range.marker.string() + " says records through sequence " +
                                 std::to_string(range.durableSequence) + " (" +
                                 std::to_string(range.durableLength) +
                                 " bytes) are durable, but the journal ends at sequence " +
                                 std::to_string(endSequence()) + " (" +
                                 std::to_string(endOffset()) + " bytes); nothing was changed");
  }
  if (!options_.readOnly) {
    std::error_code ec;
    if (!fs::remove(range.marker, ec) || ec) {
      return ioError("cannot remove " + range.marker.string() + " after its range was cut", ec);
    }
    if (auto s = io::syncDirectory(dir_); !s) {
      return ioError("fsync " + dir_.string() + " after removing " + range.marker.string(),
                     s.error());
    }
    range.cut = true;
  }
  unknownRange_ = std::move(range);
  return {};
}

asio::awaitable<Res<void>> Journal::readRange(std::uint64_t start, std::uint64_t end,
                                              const std::function<Res<void>(ByteView)>& sink) {
  co_return co_await readRangeAsync(
      start, end, [&](ByteView chunk) -> asio::awaitable<Res<void>> { co_return sink(chunk); });
}

asio::awaitable<Res<void>> Journal::readRangeInto(std::uint64_t start, std::uint64_t end,
                                                  std::span<std::uint8_t> into) {
  if (into.size() != end - start) {
    co_return err(Errc::usage, "a buffer of " + std::to_string(into.size()) +
                                   " bytes for a range of " + std::to_string(end - start));
  }
  co_return co_await readChunks(
      start, end,
      [&, at = std::size_t{0}](ByteView chunk) mutable -> asio::awaitable<Res<void>> {
        if (chunk.data() != into.data() + at)
          std::memcpy(into.data() + at, chunk.data(), chunk.size());
        at += chunk.size();
        co_return Res<void>{};
      },
      into.data());
}

// One read of a range in flight: it delivers the bytes [offset, offset + length). A direct
// read covers the aligned window around them (at most one chunk: a chunk is a whole number
// of blocks and the window starts at the block holding `offset`).
struct Journal::ReadSlot {
  AlignedBuffer buffer;  // not zero-filled: every delivered byte is read into
  std::size_t capacity = 0;
  std::uint8_t* into = nullptr;  // a read through the page cache into the caller's buffer
  std::uint64_t offset = 0;
  std::size_t length = 0;
  std::size_t skip = 0;  // bytes of the buffer before `offset` (a direct read's alignment)
  std::optional<io::IoResult<std::size_t>> result;  // bytes available from `offset`
  Signal done;

  ByteView bytes() const {
    return into ? ByteView(into, length) : ByteView(buffer.get() + skip, length);
  }
  // The read's failure, or a journal shorter than the range.
  Res<void> check(std::uint64_t end) const {
    if (!*result) return ioError("read journal at " + std::to_string(offset), result->error());
    if (**result < length) {
      return err(Errc::io, "journal ends at " + std::to_string(offset + **result) + ", before " +
                               std::to_string(end));
    }
    return {};
  }
};

std::size_t Journal::readChunk() const {
  // At least one aligned block, at most what one read operation moves.
  return static_cast<std::size_t>(alignUp(std::clamp<std::uint64_t>(
      options_.readChunkBytes, kDirectAlign, io::Uring::kMaxBytesPerOperation)));
}

bool Journal::readsDirectly(std::uint64_t start, std::uint64_t end) const {
  // Small ranges (most records) are read through the page cache, where a recent append is.
  return impl_->direct.isOpen() && end - start >= kMinDirectReadBytes;
}

void Journal::startRead(const asio::any_io_executor& executor, ReadSlot& slot,
                        std::uint64_t& nextOffset, std::uint64_t end, bool direct,
                        std::function<void()> onDone, std::uint8_t* rangeInto,
                        std::uint64_t rangeStart) {
  const std::size_t chunk = readChunk();
  if (direct && options_.cachedChunksFromCache) {
    // At least half of the chunk's pages cached: through the cache, which reads only the
    // missing ones from the disk (a direct read would read them all) and adds them (and the
    // kernel's read-ahead) to the cache.
    const std::uint64_t length = std::min<std::uint64_t>(end - nextOffset, chunk);
    auto cached = io::cachedPages(impl_->file.fd(), nextOffset, length);
    direct = !cached || cached->cached * 2 < cached->pages;
  }
  slot.offset = nextOffset;
  // A direct read ends on an alignment boundary (or at `end`); a read that starts unaligned
  // (the first, or one after a chunk read from the page cache) covers the window from the
  // block holding its first byte, `skip` bytes before it.
  std::uint64_t stop = direct ? std::min(end, alignDown(nextOffset) + chunk)
                              : std::min<std::uint64_t>(end, nextOffset + chunk);
  slot.length = static_cast<std::size_t>(stop - nextOffset);
  slot.skip = direct ? static_cast<std::size_t>(nextOffset - alignDown(nextOffset)) : 0;
  std::size_t need =
      direct ? static_cast<std::size_t>(alignUp(stop) - alignDown(nextOffset)) : slot.length;
  // Through the page cache into the caller's buffer: the kernel's copy is the only one.
  slot.into = !direct && rangeInto ? rangeInto + (nextOffset - rangeStart) : nullptr;
  if (!slot.into && slot.capacity < need) {
    // need <= chunk. A read of more than half a chunk (a range's middle) takes a whole-chunk
    // buffer, recycled afterwards; a smaller one (a record, a range's ends) its own.
    if (need <= chunk / 2) {
      slot.buffer = allocateAligned(need);
      slot.capacity = need;
    } else {
      slot.buffer = impl_->takeChunk(chunk);
      slot.capacity = chunk;
    }
  }
  slot.result.reset();
  slot.done.reset();
  nextOffset = stop;
  asio::co_spawn(
      executor,
      [this, &slot, need, direct, onDone = std::move(onDone)]() -> asio::awaitable<void> {
        if (direct) {
          slot.result = co_await readDirect(slot.buffer.get(), need, slot.offset - slot.skip,
                                            slot.skip + slot.length);
          if (*slot.result) **slot.result -= std::min(**slot.result, slot.skip);
        } else {
          slot.result = co_await uring_.readFull(
              impl_->file.fd(),
              std::span<std::uint8_t>(slot.into ? slot.into : slot.buffer.get(), slot.length),
              slot.offset);
        }
        slot.done.notify();
        if (onDone) onDone();
      },
      asio::detached);
}

asio::awaitable<Res<void>> Journal::readRangeAsync(
    std::uint64_t start, std::uint64_t end,
    const std::function<asio::awaitable<Res<void>>(ByteView)>& sink) {
  co_return co_await readChunks(start, end, sink, nullptr);
}

asio::awaitable<Res<void>> Journal::readChunks(
    std::uint64_t start, std::uint64_t end,
    const std::function<asio::awaitable<Res<void>>(ByteView)>& sink, std::uint8_t* into) {
  const unsigned depth = std::max(1u, options_.readDepth);
  const bool direct = readsDirectly(start, end);
  auto executor = co_await asio::this_coro::executor;
  std::vector<ReadSlot> slots(depth);
  std::uint64_t nextOffset = start;  // next byte to request
  unsigned launched = 0;             // reads started and not yet consumed
  auto launch = [&](ReadSlot& slot) {
    ++launched;
    startRead(executor, slot, nextOffset, end, direct, {}, into, start);
  };
  for (auto& slot : slots) {
    if (nextOffset < end) launch(slot);
  }
  Res<void> outcome;
  // A sink's exception is rethrown once no read is in flight: the reads write into the slots
  // (and the kernel into their buffers) until they complete.
  std::exception_ptr thrown;
  for (std::size_t i = 0; launched > 0; ++i) {
    ReadSlot& slot = slots[i % depth];
    co_await slot.done.wait();
    --launched;
    if (!outcome || thrown) continue;  // after a failure, only drain the reads still in flight
    outcome = slot.check(end);
    if (outcome) {
      try {
        outcome = co_await sink(slot.bytes());
      } catch (...) {
        thrown = std::current_exception();
      }
    }
    if (outcome && !thrown && nextOffset < end) launch(slot);
  }
  recycle(slots);
  if (thrown) std::rethrow_exception(thrown);
  co_return outcome;
}

void Journal::recycle(std::vector<ReadSlot>& slots) {
  for (ReadSlot& slot : slots) {
    if (slot.buffer && slot.capacity == readChunk())
      impl_->keepChunk(std::move(slot.buffer), readChunk());
  }
}

// The chunks are read and hashed by a task on the CPU pool, which starts the reads on its own
// thread's ring (io/read_ring.hpp): the loop thread is not woken per chunk, and the hash never
// waits for a round trip through the loop between two chunks. A task reads at most
// prefixSliceBytes and gives its pool thread back: while the disk is slower than the hash, the
// thread waits for it, and other CPU work (a checkpoint's segment hashes) must not wait for a
// whole pass. Memory: the journal's readDepth chunks in huge pages
// (docs/decisions/0051-prefix-read-thread-hashes-ring.md), or chunk buffers while another prefix
// holds those.
asio::awaitable<Res<Sha256Lane>> Journal::hashRange(std::uint64_t start, std::uint64_t end,
                                                    Sha256Lane hash) {
  if (end <= start) co_return std::move(hash);
  const std::size_t chunk = readChunk();
  // No more buffers than chunks (one more: a range that starts unaligned spans one more block).
  const std::uint64_t chunks = (end - start) / chunk + 2;
  const unsigned mostReads = std::clamp(options_.readDepth, 1u, io::ReadRing::kMaxReads);
  const auto depth = static_cast<std::size_t>(std::min<std::uint64_t>(mostReads, chunks));
  if (!impl_->hashBuffers) {
    // Refused (no address space): chunk buffers, as any range read.
    if (auto mapped = io::ReadBuffers::map(mostReads, chunk))
      impl_->hashBuffers = std::move(*mapped);
  }
  // The journal's huge-page buffers if no other prefix holds them, else chunk buffers; given
  // back however the read ends.
  struct Lease {
    Impl& impl;
    std::size_t chunk;
    bool own;
    std::vector<AlignedBuffer> chunks;
    ~Lease() {
      if (own) impl.hashBuffersBusy = false;
      for (auto& buffer : chunks) impl.keepChunk(std::move(buffer), chunk);
    }
  } lease{*impl_, chunk, impl_->hashBuffers && !impl_->hashBuffersBusy, {}};
  std::vector<std::uint8_t*> raw;
  for (std::size_t i = 0; i < depth; ++i) {
    if (lease.own) {
      raw.push_back(impl_->hashBuffers->buffers()[i]);
    } else {
      lease.chunks.push_back(impl_->takeChunk(chunk));
      raw.push_back(lease.chunks.back().get());
    }
  }
  if (lease.own) impl_->hashBuffersBusy = true;
  io::SequentialRead how;
  how.fd = impl_->file.fd();
  how.directFd = readsDirectly(start, end) ? impl_->direct.fd() : -1;
  how.chunk = chunk;
  how.cachedChunksFromCache = options_.cachedChunksFromCache;
  how.buffers = raw;
  // Bounded: each slice reads up to the next multiple of prefixSliceBytes, or fails.
  const std::uint64_t slice = options_.prefixSliceBytes;
  for (std::uint64_t at = start; at < end;) {
    how.start = at;
    how.end = end - at <= slice ? end : std::min(end, (at / slice + 1) * slice);
    io::IoResult<std::uint64_t> got = std::uint64_t{0};
    auto hashing = onCpuPool([&] {
      got = io::readSequential(
          how, [&](std::span<const std::uint8_t> bytes) { hash.update(bytes); },
          io::ReadRing::forThisThread());
    });
    co_await std::move(hashing);
    if (!got) co_return ioError("read journal from " + std::to_string(at), got.error());
    if (*got < how.end - at) {
      co_return err(Errc::io, "journal ends at " + std::to_string(at + *got) + ", before " +
                                  std::to_string(end));
    }
    at = how.end;
  }
  co_return std::move(hash);
}

// One aligned direct read of `capacity` bytes at the aligned `offset`, of which the first
// `wanted` matter: returns how many of the buffer's bytes hold the file's (at least `wanted`
// unless the file is shorter). A short read that ends unaligned (the end of the file) or a
// file system that refuses the direct read finishes through the page cache.
asio::awaitable<io::IoResult<std::size_t>> Journal::readDirect(std::uint8_t* buffer,
                                                               std::size_t capacity,
                                                               std::uint64_t offset,
                                                               std::size_t wanted) {
  std::size_t got = 0;
  // Bounded: every pass reads at least one aligned block, or falls back, or stops.
  while (got < wanted) {
    auto r = co_await uring_.read(
        impl_->direct.fd(), std::span<std::uint8_t>(buffer + got, capacity - got), offset + got);
    if (!r && r.error() != std::errc::invalid_argument) co_return r;
    if (r && *r == 0) break;  // end of file
    if (r && (got + *r) % kDirectAlign == 0) {
      got += *r;
      continue;
    }
    if (r) got += *r;
    if (got >= wanted) break;  // the file ends inside the window, after the wanted bytes
    auto rest = co_await uring_.readFull(
        impl_->file.fd(), std::span<std::uint8_t>(buffer + got, wanted - got), offset + got);
    if (!rest) co_return rest;
    got += *rest;
    break;
  }
  co_return got;
}

bool Journal::directReads() const { return impl_->direct.isOpen(); }

bool Journal::scanned() const { return impl_->scanned; }

Res<std::uint64_t> Journal::fileBytes() const {
  auto size = impl_->file.size();
  if (!size) return ioError("stat journal", size.error());
  return *size;
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
  Sha256Lane hash;
  std::uint64_t from = 0;
  if (prefixMemo_ && prefixMemo_->sequence <= sequence) {
    hash = prefixMemo_->hash;
    from = ends_[prefixMemo_->sequence];
  }
  // Hashing runs on the CPU pool while the next reads are in flight, so the disk, the hash
  // and the loop overlap.
  auto read = co_await hashRange(from, length, hash);
  if (!read) co_return failureOf(read);
  rememberPrefix(sequence, *read);
  co_return Prefix{sequence, length, read->finish()};
}

std::optional<Sha256Lane> Journal::knownPrefix(std::uint64_t sequence) const {
  if (sequence == 0) {
    Sha256Lane hash;
    hash.update(header_.bytes);
    return hash;
  }
  if (prefixMemo_ && prefixMemo_->sequence == sequence) return prefixMemo_->hash;
  return std::nullopt;
}

void Journal::rememberPrefix(std::uint64_t sequence, const Sha256Lane& hash) {
  if (!prefixMemo_ || prefixMemo_->sequence < sequence) prefixMemo_ = PrefixMemo{sequence, hash};
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
  if (!read) co_return failureOf(read);
  FrameScanner check(start, sequence);
  if (auto ok = check.feed(frame); !ok || !check.atBoundary()) {
    co_return err(Errc::format, "record " + std::to_string(sequence) + " is damaged on disk");
  }
  co_return Bytes(frame.begin() + limits::kFrameHeaderBytes, frame.end() - 4);
}

asio::awaitable<Res<std::uint64_t>> Journal::append(ByteView payload) {
  Impl& s = *impl_;
  if (s.failed) co_return Failure<Error>{*s.failed};
  if (!s.scanned) co_return err(Errc::usage, "the journal was opened without its frames scanned");
  if (options_.readOnly) co_return err(Errc::usage, "the journal was opened to read only");
  if (payload.size() > limits::kMaxPayloadBytes) {
    co_return err(Errc::usage, "record of " + std::to_string(payload.size()) +
                                   " bytes exceeds the cap of " +
                                   std::to_string(limits::kMaxPayloadBytes) + " bytes");
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

void Journal::noteBatch(std::uint64_t records, std::uint64_t bytes, double seconds) {
  stats_.appends += records;
  stats_.bytes += bytes;
  ++stats_.syncs;
  stats_.largestBatch = std::max(stats_.largestBatch, records);
  stats_.syncSeconds += seconds;
  std::size_t bucket = 0;
  while (bucket < JournalStats::kBatchBounds.size() &&
         records > JournalStats::kBatchBounds[bucket]) {
    ++bucket;
  }
  ++stats_.batches[bucket];
}

// The group-commit writer: while frames are pending, take them all as one batch, write it
// and make it durable with one O_DSYNC write (RWF_DSYNC: one io_uring operation, where a
// write and an fdatasync took two and cost 4-10 % of the disk's sync rate,
// docs/performance.md §3), then acknowledge every appender in it. Appends that arrive
// meanwhile form the next batch. At most one batch is unsynced.
asio::awaitable<void> Journal::writeBatches() {
  Impl& s = *impl_;
  while (!s.pending.empty() && !s.failed) {
    Batch batch = std::exchange(s.pending, std::exchange(s.spare, Batch{}));
    s.admitWaiters(options_.maxBatchBytes);

    const std::uint64_t at = endOffset();
    const std::uint64_t first = endSequence() + 1;
    const auto started = std::chrono::steady_clock::now();
    const BatchWrite wrote = co_await writeBatch(batch.bytes, at);
    if (!wrote.result) {
      const SequenceRange records{first, first + batch.ends.size() - 1};
      const Error error = co_await failBatch(at, records, wrote);
      for (auto* w : batch.waiters) w->complete(Failure<Error>{error});
      break;
    }
    for (std::uint64_t end : batch.ends) ends_.push_back(at + end);
    noteBatch(batch.ends.size(), batch.bytes.size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    for (std::size_t i = 0; i < batch.waiters.size(); ++i) batch.waiters[i]->complete(first + i);
    batch.clear();
    s.spare = std::move(batch);
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

// Makes room when the batch passes the room's end (docs/journal.md, "Room"), then writes the
// batch's frames durably at `at`.
asio::awaitable<Journal::BatchWrite> Journal::writeBatch(Bytes& frames, std::uint64_t at) {
  Impl& s = *impl_;
  const std::uint64_t end = at + frames.size();
  if (options_.preallocate && end > s.allocatedEnd && end > s.noRoomUntil) {
    auto room = co_await makeRoom(at, end);
    if (!room) co_return BatchWrite{Failure<std::error_code>{room.error()}, false};
    // No space for a room: this batch and those of the next room's worth extend the file as
    // they would without one (a batch that does not fit fails, and is cut back: failBatch).
    if (!*room) s.noRoomUntil = end + kJournalRoomBytes;
  }
  // Inside the room, the write runs on to the end of its last page with the zeros that are
  // there already: a page written whole is not read from the disk first (a room written
  // directly is not in the page cache; a read per batch cost 50 us,
  // docs/decisions/0052-room-zeros-written-o-direct.md).
  const std::size_t framesBytes = frames.size();
  if (end <= s.allocatedEnd) {
    frames.resize(framesBytes + (std::min(alignUp(end), s.allocatedEnd) - end), 0);
  }
  BatchWrite wrote{co_await uring_.writeDurable(s.file.fd(), frames, at), true};
  frames.resize(framesBytes);
  if (wrote.result) s.allocatedEnd = std::max(s.allocatedEnd, end);
  co_return wrote;
}

namespace {

std::string recordsText(const SequenceRange& r) {
  if (r.first == r.last) return "record " + std::to_string(r.first);
  return "records " + std::to_string(r.first) + ".." + std::to_string(r.last);
}

}  // namespace

// Marks the failed batch's records unknown beside the journal
// (docs/decisions/0060-unknown-range-marked-beside-journal.md); says what became of it.
std::string Journal::markUnknownText(std::uint64_t at, SequenceRange batch) {
  const std::string name = unknownMarkerName(endSequence(), at, batch.last);
  if (std::error_code e = markUnknown(dir_, name)) {
    return "marking them in " + (dir_ / name).string() + " failed too: " + e.message() +
           "; a reopen before a restart may read them from the page cache: restart, then "
           "verify the journal before appending";
  }
  return "marked in " + (dir_ / name).string() +
         ": the next writable open cuts them off, so none of them persists";
}

// A failed durable write leaves the page cache's state unknown (as a failed fsync does): it is
// never retried, nothing is acknowledged after it, and the journal takes no more appends. What
// of the batch reached the file (a short write on a full disk: its first frames; a write whose
// sync failed: all of it) may be durable or not, so the journal makes its own state true: the
// file is cut back to `at`, the acknowledged end, and the cut made durable; then none of the
// batch can persist, and its appenders are told it failed (Errc::io). Where the cut fails too,
// they are told their records are unknown (Errc::uncertain, with the range), never that they
// failed (docs/decisions/0055-failed-durable-write-cut-back.md). A batch whose room failed was
// never written: it failed.
asio::awaitable<Error> Journal::failBatch(std::uint64_t at, SequenceRange batch,
                                          const BatchWrite& write) {
  Impl& s = *impl_;
  const std::string cause =
      (write.started
           ? "journal durable write failed at offset " + std::to_string(at)
           : "the journal's room for the batch at offset " + std::to_string(at) + " failed") +
      ": " + write.result.error().message();
  // Set before the cut's sync: an append that arrives meanwhile is refused, never written.
  s.failed = Error{Errc::io, cause +
                                 "; the journal takes no append until it is reopened, and "
                                 "this record was not written"};
  const std::string records = recordsText(batch);
  const std::string durable = "records through sequence " + std::to_string(endSequence()) +
                              " are durable; reopen the journal to append";
  failure_ = JournalFailure{Error{Errc::io, cause + "; " + records + " not written; " + durable},
                            endSequence(), batch, std::nullopt};
  if (!write.started) co_return failure_->error;
  auto cut = co_await cutBack(at);
  if (cut) {
    failure_->error.message =
        cause + "; " + records + " cut back off the journal (none of it is durable); " + durable;
  } else {
    failure_->unknown = batch;
    failure_->error =
        Error{Errc::uncertain, cause + ", and cutting the journal back to offset " +
                                   std::to_string(at) + " failed too: " + cut.error().message() +
                                   "; " + records + " may be durable or not (" +
                                   markUnknownText(at, batch) + "); " + durable};
  }
  co_return failure_->error;
}

// Cuts the file back to `at` (the end of the acknowledged frames) and makes the cut durable:
// whatever of a failed batch reached the file is gone, also after a crash. The room after it
// goes too (the next writer makes it again), as with a torn tail's cut.
asio::awaitable<io::IoResult<void>> Journal::cutBack(std::uint64_t at) {
  Impl& s = *impl_;
  if (auto cut = s.file.truncate(at); !cut) co_return cut;
  s.allocatedEnd = at;
  co_return co_await uring_.fsync(s.file.fd());
}

// Writes zeros from the file's end (never before `from`, the end of the frames) to the next
// multiple of kJournalRoomBytes past `need` and makes them durable: the batches that follow
// overwrite written blocks, and their O_DSYNC writes change no metadata (the size, the block
// map): 4,209-5,192 durable writes of 68 KiB a second against 2,836-4,212 for appends, and in
// the journal 2,086-2,260 batches against 1,854-2,160
// (docs/decisions/0050-journal-writes-zeros-ahead-frames.md). A crash leaves zeros after the last
// frame; open() reads them as the journal's room, not as a torn tail. False: a write found no space
// (ENOSPC, EDQUOT), and the zeros written are cut off again; the caller writes its batch without a
// room. A failed sync is an error, never retried.
asio::awaitable<io::IoResult<bool>> Journal::makeRoom(std::uint64_t from, std::uint64_t need) {
  Impl& s = *impl_;
  static const AlignedBuffer zeros = [] {
    AlignedBuffer b = allocateAligned(kRoomChunkBytes);
    std::fill_n(b.get(), kRoomChunkBytes, std::uint8_t{0});
    return b;
  }();
  const auto started = std::chrono::steady_clock::now();
  const std::uint64_t start = std::max(s.allocatedEnd, from);
  const std::uint64_t target = (need / kJournalRoomBytes + 1) * kJournalRoomBytes;
  // Direct from the first whole page (the part of a page before it goes through the cache,
  // where that page is); buffered where O_DIRECT is refused.
  const std::uint64_t directFrom = s.roomDirect.isOpen() ? alignUp(start) : target;
  std::uint64_t directBytes = 0;
  for (std::uint64_t at = start; at < target;) {
    const bool direct = at >= directFrom;
    const std::uint64_t stop = direct ? target : std::min(target, directFrom);
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(stop - at, kRoomChunkBytes));
    auto wrote = co_await uring_.write(direct ? s.roomDirect.fd() : s.file.fd(),
                                       ByteView(zeros.get(), n), at);
    if (!wrote && direct && wrote.error() == std::errc::invalid_argument) {
      // The file system took O_DIRECT at open but refuses this write: the whole room again,
      // through the cache (zeros over the zeros written so far), as with directRoom = false.
      s.roomDirect = io::File{};
      auto again = co_await makeRoom(from, need);
      co_return again;
    }
    if (!wrote) {
      if (wrote.error() == std::errc::no_space_on_device ||
          wrote.error() == std::error_code(EDQUOT, std::system_category())) {
        // Only zeros written by this call lie beyond `start`: give their space back.
        (void)s.file.truncate(start);
        co_return false;
      }
      co_return Failure<std::error_code>{wrote.error()};
    }
    if (direct) directBytes += n;
    at += n;
  }
  auto synced = co_await uring_.fdatasync(s.file.fd());
  if (!synced) co_return Failure<std::error_code>{synced.error()};
  s.allocatedEnd = target;
  stats_.roomBytes += target - start;
  stats_.roomDirectBytes += directBytes;
  stats_.roomSeconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  co_return true;
}

}  // namespace cairn
