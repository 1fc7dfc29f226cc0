// The durable journal (docs/design.md §4, docs/journal.md): one append-only file per database
// directory, group-committed appends acknowledged only once durable (O_DSYNC writes), torn-tail
// recovery on open, and a byte-capped prefix reader that overlaps io_uring reads with SHA-256.
#pragma once

#include <array>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.hpp"
#include "base/sha256.hpp"
#include "engine/error.hpp"
#include "engine/format/journal_format.hpp"
#include "engine/format/manifest.hpp"
#include "io/error.hpp"
#include "io/lock.hpp"

namespace cairn {

namespace io {
class Uring;
}

struct JournalOptions {
  // One batch is one O_DSYNC write. A batch never exceeds this many bytes (unless a
  // single frame is larger), and at most one batch is unsynced at any time, so a crash can
  // damage at most the last batch (docs/journal.md, "Torn tails"). 1..kMaxBatchBytes: a
  // larger value is refused, since the torn-tail rule relies on that bound.
  std::uint64_t maxBatchBytes = kMaxBatchBytes;
  // To read only: a torn tail is found and reported (tornTail()) but not cut, nothing in the
  // directory is written, and append() is refused. The directory is locked shared: other
  // readers may read beside it, no writer (which could cut a tail or append) until it closes;
  // the directory may be on a read-only mount.
  bool readOnly = false;
  // Cut the first damaged frame and everything after it even where no crash explains the
  // damage (the bytes are kept beside the journal first). Never below the prefix the
  // publisher state proves acknowledged. `cairn journal --cut-damaged-tail` only.
  bool cutDamagedTail = false;
  // Appenders suspended in append() at once (in the pending batch or waiting for room).
  // One more gets Errc::busy at once instead of queueing without bound.
  std::size_t maxWaitingAppenders = 65'536;
  // Prefix and range reads: bytes per read (rounded up to a multiple of 4,096, at most
  // 1 GiB) and reads kept in flight (a range read holds readDepth × readChunkBytes, 8 MiB).
  std::size_t readChunkBytes = std::size_t{1} << 20;
  unsigned readDepth = 8;  // a prefix keeps at most io::ReadRing::kMaxReads (64) in flight
  // A prefix is read and hashed on the CPU pool by one task per slice of the file: a task
  // reads up to the next multiple of this many bytes, then gives its thread back, so other CPU
  // work does not wait for a whole pass while the disk is slower than the hash
  // (docs/decisions/0051-prefix-read-thread-hashes-ring.md).
  std::uint64_t prefixSliceBytes = std::uint64_t{256} << 20;
  // Reads of at least kMinDirectReadBytes bypass the page cache (O_DIRECT) where the file
  // system allows it; smaller ones (most records) use the cache.
  bool directReads = true;
  // ... except a chunk at least half of whose pages are in the page cache already (a recent
  // append; a file the kernel reclaimed some pages of), which is read through the cache: only
  // its missing pages come from the disk (io::cachedPages). False: every large read is direct
  // (tests of the direct path).
  bool cachedChunksFromCache = true;
  // Write zeros ahead of the frames, kJournalRoomBytes at a time, and make them durable, so a
  // batch's O_DSYNC write overwrites written blocks and syncs no metadata (docs/journal.md,
  // "Room"; docs/decisions/0050-journal-writes-zeros-ahead-frames.md). False: each batch extends
  // the file (tests, measurements).
  bool preallocate = true;
  // Write the room's zeros with O_DIRECT where the file system allows it: no copy into the
  // page cache and no writeback, 2-3x faster on this disk
  // (docs/decisions/0052-room-zeros-written-o-direct.md). False: through the page cache
  // (measurements; the fallback where O_DIRECT is refused).
  bool directRoom = true;
  // Tests only: called at named points of create() ("created": the journal is linked into
  // place and not yet opened), to show what another process could do there.
  std::function<void(std::string_view point)> fault;
};

inline constexpr std::uint64_t kMinDirectReadBytes = std::uint64_t{64} << 10;

// The prefix the directory's durable publisher state proves acknowledged: every record of it
// was durable before the state recorded a head (or an intent) covering it. A scan never cuts
// into it, and a journal that ends before it is refused.
struct AcknowledgedPrefix {
  std::uint64_t sequence = 0;
  std::uint64_t length = 0;
  std::string source;  // which record proves it, for messages
};

// What a scan found after the last valid frame (judgeTail) and what became of it.
struct TornTail {
  std::uint64_t offset = 0;        // the end of the last valid frame: where a cut starts
  std::uint64_t bytes = 0;         // its bytes: to the last one that is not zero (the zeros
                                   // after it are the writer's room), or to the file's end
                                   // when cut on request
  std::uint64_t sequence = 0;      // the sequence of the first frame it would cut
  std::string reason;              // judgeTail's reason
  bool crashShaped = true;         // false: cut on request (JournalOptions::cutDamagedTail)
  bool cut = false;                // false: found by a read-only open, left for the next writer
  std::filesystem::path evidence;  // the file the cut bytes were kept in (when cut)
};
// Files holding bytes cut from a journal are named like this, followed by the offset.
inline constexpr const char* kTornTailFilePrefix = "journal.torn-";
// Sequences first..last, both included.
struct SequenceRange {
  std::uint64_t first = 0;
  std::uint64_t last = 0;
  bool operator==(const SequenceRange&) const = default;
};

// The marker of an unknown range (docs/decisions/0060-unknown-range-marked-beside-journal.md): an
// empty file beside the journal, journal.unknown-S-L-U, left when a failed batch could not be cut
// back off the file: records through sequence S (L bytes) are durable, S+1..U are unknown. Empty,
// so that it needs no data block on a full disk: its name is all it says.
inline constexpr const char* kUnknownFilePrefix = "journal.unknown-";
// What a marker says, and what the open did about it.
struct UnknownRange {
  std::uint64_t durableSequence = 0;  // S: the last acknowledged record
  std::uint64_t durableLength = 0;    // L: the journal's length through it
  SequenceRange records;              // S+1..U: reported unknown, never acknowledged
  bool cut = false;  // a writable open cut them off durably and removed the marker; false: a
                     // read-only open presents the journal through S and leaves the rest
  std::filesystem::path marker;
};
// The journal a recovery writes before it puts it in place (engine/ops/recovery.hpp): found
// without a journal beside it, it is what an interrupted recovery left.
inline constexpr const char* kRecoveringFileName = "journal.recovering";

// The directory's lock: exclusive for an owner, shared for a reader (io::DirectoryLock). The
// errors say who holds it (Errc::busy), that DIR is no directory (Errc::usage), or the file
// system's error (Errc::io).
Res<io::DirectoryLock> lockDatabaseDirectory(const std::filesystem::path& dir, bool shared);

// What group commit did since the journal was opened (Database::stats(), --metrics-file).
struct JournalStats {
  // Upper bounds of the batch-size buckets, in records (the last bucket is everything above).
  static constexpr std::array<std::uint64_t, 7> kBatchBounds{1, 4, 16, 64, 256, 1024, 4096};
  std::uint64_t appends = 0;       // records acknowledged durable
  std::uint64_t bytes = 0;         // bytes written for them (their frames)
  std::uint64_t syncs = 0;         // batches: one O_DSYNC write each
  std::uint64_t largestBatch = 0;  // records in the largest batch
  std::array<std::uint64_t, kBatchBounds.size() + 1> batches{};  // by records, per bucket
  double syncSeconds = 0;  // time from each batch's durable write to its end, summed
  // The room (docs/journal.md): zeros written ahead of the frames, and the time it took (part
  // of syncSeconds: the batch that passed the room's end waited for it).
  std::uint64_t roomBytes = 0;
  std::uint64_t roomDirectBytes = 0;  // of roomBytes, written with O_DIRECT
                                      // (docs/decisions/0052-room-zeros-written-o-direct.md)
  double roomSeconds = 0;
};

// Why a writable journal takes no more appends (Journal::failure()): the durable write of a
// batch, or the room it waited for, failed (docs/journal.md, "When a durable write fails";
// docs/decisions/0055-failed-durable-write-cut-back.md). Every record through `durableThrough` is
// durable; the failed batch's appenders got `error`; every other append got Errc::io, its record
// not written.
struct JournalFailure {
  Error error;  // Errc::io: none of the batch is in the journal; Errc::uncertain: unknown
  std::uint64_t durableThrough = 0;  // the last acknowledged sequence
  SequenceRange batch;               // the failed batch's records
  // The batch's records when they may be durable or not: its write reached the file, and
  // cutting the file back to its acknowledged end failed too (a reopen tells which are there).
  // Absent: none of them is in the journal, nor can come back.
  std::optional<SequenceRange> unknown;
};

class Journal {
 public:
  static constexpr const char* kFileName = "journal";

  // Creates DIR (if needed) and a new journal in it; fails if one exists. Takes the lock and
  // keeps it: the journal is opened by the same owner, so no other process comes between its
  // creation and what its creator writes beside it.
  static boost::asio::awaitable<Res<std::unique_ptr<Journal>>> create(
      io::Uring& uring, const std::filesystem::path& dir, std::u16string_view databaseId,
      JournalOptions options = {});
  // Opens an existing journal: takes the directory lock (Errc::busy if another owner holds
  // it), reads what the publisher state proves acknowledged, checks the header and every
  // frame, and cuts a torn tail (docs/journal.md): only what a crash explains, never into
  // the acknowledged prefix, keeping the cut bytes in a file beside the journal. Damage a
  // crash does not explain, or any damage in the acknowledged prefix, is an error naming its
  // offset, and nothing is cut.
  static boost::asio::awaitable<Res<std::unique_ptr<Journal>>> open(
      io::Uring& uring, const std::filesystem::path& dir, JournalOptions options = {});
  // The lock and the header only (lineage() and header() are known); no frame is scanned.
  // The journal knows no records (endSequence() is 0; append() and record() fail), but its
  // bytes can be read with readRange*(): bytes no scan has checked, for a caller that checks
  // them itself (a deep verification compares them with segments whose frames it checked).
  static boost::asio::awaitable<Res<std::unique_ptr<Journal>>> openUnscanned(
      io::Uring& uring, const std::filesystem::path& dir, JournalOptions options = {});
  // Whether its frames were scanned (open()): its records are known.
  bool scanned() const;
  // The file's length now: what an unscanned journal's readers can read.
  Res<std::uint64_t> fileBytes() const;

  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Appends one record; returns its sequence once it and everything before it are durable.
  // Errc::io: the record is not in the journal and never will be (its batch's durable write
  // failed and was cut back off the file, or it was never written). Errc::uncertain: its
  // batch's durable write failed and could not be cut back: it may be durable or not
  // (failure() gives the range). Either way the journal takes no more appends until reopened.
  boost::asio::awaitable<Res<std::uint64_t>> append(ByteView payload);
  // Why the journal stopped taking appends, once a durable write failed (else nullopt).
  const std::optional<JournalFailure>& failure() const { return failure_; }

  // The prefix at `sequence` (its length and SHA-256). The prefix's length is checked against
  // `byteCap` before any byte is read.
  boost::asio::awaitable<Res<Prefix>> prefix(std::uint64_t sequence, std::uint64_t byteCap);
  // The SHA-256 state after the prefix at `sequence` when it is known without reading the
  // file: at sequence 0 (the header's bytes), or where the longest prefix hashed so far ends.
  std::optional<Sha256Lane> knownPrefix(std::uint64_t sequence) const;
  // Records the state after the prefix at `sequence`, hashed by the caller from this journal's
  // durable bytes (a checkpoint extends it over its segments' bodies as it hashes them);
  // prefix() and knownPrefix() resume from the longest prefix recorded.
  void rememberPrefix(std::uint64_t sequence, const Sha256Lane& hash);
  // Reads journal bytes [start, end) in order, `readDepth` reads in flight, passing each chunk
  // to `sink`; only durable bytes may be read.
  boost::asio::awaitable<Res<void>> readRange(std::uint64_t start, std::uint64_t end,
                                              const std::function<Res<void>(ByteView)>& sink);
  // The same with a sink that may suspend (e.g. to hash on the CPU pool); the reads already
  // in flight continue meanwhile. A sink's failure or exception ends the read once the reads
  // in flight have completed (they write into the read's buffers until then).
  boost::asio::awaitable<Res<void>> readRangeAsync(
      std::uint64_t start, std::uint64_t end,
      const std::function<boost::asio::awaitable<Res<void>>(ByteView)>& sink);
  // Reads journal bytes [start, end) into `into` (exactly that many bytes). Chunks read
  // through the page cache land there directly; direct reads are copied from their aligned
  // buffers.
  boost::asio::awaitable<Res<void>> readRangeInto(std::uint64_t start, std::uint64_t end,
                                                  std::span<std::uint8_t> into);
  // The payload of one durable record.
  boost::asio::awaitable<Res<Bytes>> record(std::uint64_t sequence);

  const JournalHeader& header() const { return header_; }
  Digest lineage() const { return lineage_; }
  // Durable state: the last acknowledged sequence and the byte length of its prefix.
  std::uint64_t endSequence() const { return ends_.size() - 1; }
  std::uint64_t endOffset() const { return ends_.back(); }
  // Offset just after frame `sequence` (sequence 0: the header's length).
  std::uint64_t offsetAfter(std::uint64_t sequence) const { return ends_.at(sequence); }
  // What the open found after the last valid frame, and whether it cut it.
  const std::optional<TornTail>& tornTail() const { return tornTail_; }
  // Bytes cut from a torn tail when the journal was opened.
  std::uint64_t tornBytesCut() const { return tornTail_ && tornTail_->cut ? tornTail_->bytes : 0; }
  // The unknown range a marker named when the journal was opened
  // (docs/decisions/0060-unknown-range-marked-beside-journal.md); nullopt: none.
  const std::optional<UnknownRange>& unknownRange() const { return unknownRange_; }
  // What the publisher state proved acknowledged when the journal was opened.
  const std::optional<AcknowledgedPrefix>& acknowledged() const { return acknowledged_; }
  // Statistics of group commit.
  std::uint64_t batchesWritten() const { return stats_.syncs; }
  const JournalStats& stats() const { return stats_; }
  // Whether large reads bypass the page cache (JournalOptions::directReads and a file system
  // that accepts O_DIRECT).
  bool directReads() const;
  // Forgets the hash state prefix() resumes from, so the next prefix() reads from the start
  // (benchmarks time whole passes with it).
  void forgetPrefixProgress() { prefixMemo_.reset(); }

 private:
  struct Impl;
  Journal(io::Uring& uring, JournalOptions options);
  // open() and openUnscanned() of the directory `lock` holds (shared only to read).
  static boost::asio::awaitable<Res<std::unique_ptr<Journal>>> openLocked(io::Uring& uring,
                                                                          io::DirectoryLock lock,
                                                                          JournalOptions options);
  static boost::asio::awaitable<Res<std::unique_ptr<Journal>>> openUnscannedLocked(
      io::Uring& uring, io::DirectoryLock lock, JournalOptions options);
  boost::asio::awaitable<void> writeBatches();
  // A batch's durable write at `at` (after its room, when it needs one) and whether any of its
  // bytes may have reached the file (false: the room failed, the batch was not written).
  struct BatchWrite {
    io::IoResult<void> result;
    bool started = false;
  };
  boost::asio::awaitable<BatchWrite> writeBatch(Bytes& frames, std::uint64_t at);
  // After the batch `batch` at `at` failed: the file cut back to `at`, durably, or the batch
  // unknown; returns what the batch's appenders get
  // (docs/decisions/0055-failed-durable-write-cut-back.md).
  boost::asio::awaitable<Error> failBatch(std::uint64_t at, SequenceRange batch,
                                          const BatchWrite& write);
  boost::asio::awaitable<io::IoResult<void>> cutBack(std::uint64_t at);
  // Marks the batch's records unknown beside the journal (kUnknownFilePrefix,
  // docs/decisions/0060-unknown-range-marked-beside-journal.md), the cut back to `at` having
  // failed; returns what the appenders are told of it.
  std::string markUnknownText(std::uint64_t at, SequenceRange batch);
  boost::asio::awaitable<io::IoResult<bool>> makeRoom(std::uint64_t from, std::uint64_t need);
  void noteBatch(std::uint64_t records, std::uint64_t bytes, double seconds);
  boost::asio::awaitable<Res<void>> scanFrames(std::uint64_t fileSize);
  boost::asio::awaitable<Res<void>> handleTail(std::uint64_t boundary, std::uint64_t fileSize,
                                               const std::optional<Error>& fault);
  Res<void> checkAcknowledgedReached() const;
  // Before the scan: a writable open cuts the marked unknown range off, durably
  // (docs/decisions/0060-unknown-range-marked-beside-journal.md); returns how far the scan reads (a
  // read-only open reads through the durable end only).
  boost::asio::awaitable<Res<std::uint64_t>> cutUnknown(const UnknownRange& range,
                                                        std::uint64_t fileSize);
  // After the scan: the journal ends where the marker says; a writer removes it durably.
  Res<void> settleUnknown(UnknownRange range);
  boost::asio::awaitable<Res<std::filesystem::path>> keepTornBytes(std::uint64_t from,
                                                                   std::uint64_t to);
  struct ReadSlot;
  // readRangeAsync; with `into` (room for end - start bytes), chunks read through the page
  // cache are read into it, at their offset from `start`, and the sink gets views of it.
  boost::asio::awaitable<Res<void>> readChunks(
      std::uint64_t start, std::uint64_t end,
      const std::function<boost::asio::awaitable<Res<void>>(ByteView)>& sink, std::uint8_t* into);
  std::size_t readChunk() const;
  bool readsDirectly(std::uint64_t start, std::uint64_t end) const;
  // Keeps the chunk buffers of finished reads for the next reads (at most
  // kMaxSpareReadBytes: the reads of 8 concurrent ranges at the default depth and chunk).
  void recycle(std::vector<ReadSlot>& slots);
  static constexpr std::size_t kMaxSpareReadBytes = std::size_t{32} << 20;
  void startRead(const boost::asio::any_io_executor& executor, ReadSlot& slot,
                 std::uint64_t& nextOffset, std::uint64_t end, bool direct,
                 std::function<void()> onDone, std::uint8_t* rangeInto = nullptr,
                 std::uint64_t rangeStart = 0);
  // Reads [start, end) and continues `hash` with its bytes; returns the hash.
  boost::asio::awaitable<Res<Sha256Lane>> hashRange(std::uint64_t start, std::uint64_t end,
                                                    Sha256Lane hash);
  boost::asio::awaitable<io::IoResult<std::size_t>> readDirect(std::uint8_t* buffer,
                                                               std::size_t capacity,
                                                               std::uint64_t offset,
                                                               std::size_t wanted);

  io::Uring& uring_;
  JournalOptions options_;
  std::unique_ptr<Impl> impl_;
  JournalHeader header_;
  Digest lineage_{};
  std::vector<std::uint64_t> ends_;  // ends_[s]: offset after frame s; ends_[0]: header length
  // The hash state after the longest prefix read so far (prefix() resumes from it).
  struct PrefixMemo {
    std::uint64_t sequence;
    Sha256Lane hash;
  };
  std::optional<PrefixMemo> prefixMemo_;
  std::optional<TornTail> tornTail_;
  std::optional<AcknowledgedPrefix> acknowledged_;
  std::optional<UnknownRange> unknownRange_;
  std::optional<JournalFailure> failure_;
  std::filesystem::path dir_;
  JournalStats stats_;
};

}  // namespace cairn
