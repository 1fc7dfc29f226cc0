// The durable journal (DESIGN.md §2.1, docs/journal.md): one append-only file per database
// directory, group-committed appends acknowledged only after fdatasync, torn-tail recovery on
// open, and a byte-capped prefix reader that overlaps io_uring reads with SHA-256.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "base/bytes.hpp"
#include "base/sha256.hpp"
#include "engine/format/error.hpp"
#include "engine/format/journal_format.hpp"
#include "engine/format/manifest.hpp"
#include "io/error.hpp"

namespace cairn {

namespace io {
class Uring;
}

struct JournalOptions {
  // One batch is one write and one fdatasync. A batch never exceeds this many bytes (unless a
  // single frame is larger), and at most one batch is unsynced at any time, so a crash can
  // damage at most the last kMaxUnsyncedBytes of the file.
  std::uint64_t maxBatchBytes = std::uint64_t{4} << 20;
  // Appenders suspended in append() at once (in the pending batch or waiting for room).
  // One more gets Errc::busy at once instead of queueing without bound.
  std::size_t maxWaitingAppenders = 65'536;
  // Prefix and range reads: bytes per read (rounded up to a multiple of 4,096, at most
  // 1 GiB) and reads kept in flight.
  std::size_t readChunkBytes = std::size_t{1} << 20;
  unsigned readDepth = 4;
  // Reads of at least kMinDirectReadBytes bypass the page cache (O_DIRECT) where the file
  // system allows it; smaller ones (most records) use the cache.
  bool directReads = true;
  // ... except a chunk at least half of whose pages are in the page cache already (a recent
  // append; a file the kernel reclaimed some pages of), which is read through the cache: only
  // its missing pages come from the disk (io::cachedPages). False: every large read is direct
  // (tests of the direct path).
  bool cachedChunksFromCache = true;
};

inline constexpr std::uint64_t kMinDirectReadBytes = std::uint64_t{64} << 10;

// The most bytes a crash can leave unsynced: one batch of maxBatchBytes, or one largest frame.
// A fault closer than this to the end of the file is a torn tail; one farther away is damage.
inline constexpr std::uint64_t kMaxUnsyncedBytes =
    (std::uint64_t{4} << 20) + limits::kFrameOverheadBytes + limits::kMaxPayloadBytes;

class Journal {
 public:
  static constexpr const char* kFileName = "journal";

  // Creates DIR (if needed) and a new journal in it; fails if one exists. Takes the lock.
  static boost::asio::awaitable<Res<std::unique_ptr<Journal>>> create(
      io::Uring& uring, const std::filesystem::path& dir, std::u16string_view databaseId,
      JournalOptions options = {});
  // Opens an existing journal: takes the directory lock (Errc::busy if another owner holds
  // it), checks the header and every frame, and cuts a torn tail.
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
  boost::asio::awaitable<Res<std::uint64_t>> append(ByteView payload);

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
  // Bytes cut from a torn tail when the journal was opened.
  std::uint64_t tornBytesCut() const { return tornBytesCut_; }
  // Statistics of group commit.
  std::uint64_t batchesWritten() const { return batches_; }
  // Whether large reads bypass the page cache (JournalOptions::directReads and a file system
  // that accepts O_DIRECT).
  bool directReads() const;
  // Forgets the hash state prefix() resumes from, so the next prefix() reads from the start
  // (benchmarks time whole passes with it).
  void forgetPrefixProgress() { prefixMemo_.reset(); }

 private:
  struct Impl;
  Journal(io::Uring& uring, JournalOptions options);
  boost::asio::awaitable<void> writeBatches();
  boost::asio::awaitable<Res<void>> scanFrames(std::uint64_t fileSize);
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
  // Reads [start, end) and continues `initial` with its bytes; returns the hash.
  boost::asio::awaitable<Res<Sha256Lane>> hashRange(std::uint64_t start, std::uint64_t end,
                                                    Sha256Lane initial);
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
  std::uint64_t tornBytesCut_ = 0;
  std::uint64_t batches_ = 0;
};

}  // namespace cairn
