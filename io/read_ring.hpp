// ReadRing and readSequential: a file read in order by the thread that consumes its bytes.
//
// Why. A journal's prefix is hashed on a CPU-pool thread while its next chunks are read. When
// those reads belong to the loop's Uring, every completion wakes the loop thread, which hands
// the chunk to the hasher, which hands the buffer back: several system calls and two thread
// wake-ups per chunk, about a tenth of a prefix pass's CPU (docs/perf-log/2026-12-07-prefix.md).
// Here the consuming thread starts the reads itself, on a small ring of its own, and takes their
// completions from the ring's shared memory: when the consumer is slower than the disk, the
// next chunk's completion is already there, and a chunk costs one io_uring_enter (its read's
// submission) and no wake-up of another thread.
//
// Threading. A ReadRing is used by one thread at a time; forThisThread() gives each thread its
// own, set up on first use and kept until the thread exits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "io/error.hpp"

namespace cairn::io {

class ReadRing {
 public:
  // Reads a ring holds at most (started and not yet returned by wait()).
  static constexpr unsigned kMaxReads = 64;

  struct Completion {
    std::uint64_t tag;  // as given to startRead
    long result;        // bytes read, or -errno
  };

  // With an io_uring, or, if `useIoUring` is false or the kernel refuses one, reading with a
  // blocking pread() in startRead(): the same completions, in the order started, without
  // overlap (correct where io_uring is refused, only slower).
  explicit ReadRing(bool useIoUring = true);
  ~ReadRing();
  ReadRing(const ReadRing&) = delete;
  ReadRing& operator=(const ReadRing&) = delete;

  // The calling thread's ring (with io_uring if the kernel allows it).
  static ReadRing& forThisThread();

  bool overlapped() const noexcept;  // reads run in the kernel while the caller works
  unsigned outstanding() const noexcept { return outstanding_; }

  // Registers the buffers the next reads go into (`bytes` each), so a read does not pin and
  // release their pages every time (io_uring_register_buffers). False if the kernel refuses
  // (e.g. RLIMIT_MEMLOCK) or the ring has no io_uring: reads then go into them unregistered.
  // Requires outstanding() == 0; they stay registered until unregisterBuffers().
  bool registerBuffers(std::span<std::uint8_t* const> buffers, std::size_t bytes);
  void unregisterBuffers();

  // Starts a pread of `length` bytes at `offset` into `into`; the buffer must stay valid until
  // its completion is returned. `registered` names the registered buffer `into` lies in, or is
  // -1. Requires outstanding() < kMaxReads.
  void startRead(int fd, std::uint8_t* into, std::size_t length, std::uint64_t offset,
                 std::uint64_t tag, int registered = -1);
  // Submits the reads started since the last call and returns one completion, waiting for it
  // if none is ready. Requires outstanding() > 0. A failure of the ring itself (not of a read)
  // ends the process, as in io::Uring: reads may still be writing into their buffers.
  Completion wait();

 private:
  struct Ring;
  std::unique_ptr<Ring> ring_;   // null: blocking preads
  std::deque<Completion> done_;  // blocking mode: completions not yet returned
  unsigned outstanding_ = 0;
  unsigned unsubmitted_ = 0;
  bool registered_ = false;
};

// Memory for readSequential's buffers: `count` buffers of `bytes` each in one anonymous mapping
// aligned to 2 MiB and marked for transparent huge pages (MADV_HUGEPAGE, where the kernel allows
// them). A buffer in a huge page is one segment for the disk (a 1 MiB direct read into 4 KiB
// pages is two requests on a device that takes 254 segments per request) and one TLB entry for
// the thread that hashes it, not 256 (docs/perf-log/2026-12-07-prefix.md). Zero-filled on first
// touch, as any anonymous mapping.
class ReadBuffers {
 public:
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;
  static IoResult<ReadBuffers> map(std::size_t count, std::size_t bytes);
  ReadBuffers(ReadBuffers&& other) noexcept;
  ReadBuffers& operator=(ReadBuffers&& other) noexcept;
  ~ReadBuffers();

  std::span<std::uint8_t* const> buffers() const { return pointers_; }
  std::size_t bytes() const { return bytes_; }

 private:
  ReadBuffers() = default;
  void release() noexcept;
  void* base_ = nullptr;
  std::size_t mapped_ = 0;
  std::size_t bytes_ = 0;
  std::vector<std::uint8_t*> pointers_;
};

// How readSequential reads a range of one file.
struct SequentialRead {
  int fd = -1;        // the file, read through the page cache
  int directFd = -1;  // the same file opened with O_DIRECT, or -1 (every read through the cache)
  std::uint64_t start = 0, end = 0;
  std::size_t chunk = 0;  // a multiple of kDirectAlign, at most Uring::kMaxBytesPerOperation
  // A chunk of which at least half the pages are cached is read through the cache, which reads
  // only the missing pages from the disk (a direct read would read them all).
  bool cachedChunksFromCache = true;
  // One buffer per read in flight (at most ReadRing::kMaxReads): `chunk` bytes each, aligned to
  // kDirectAlign.
  std::span<std::uint8_t* const> buffers;
};

// Reads [start, end) in order, one chunk per buffer in flight, and passes each chunk's bytes
// to `consume` in order, on the calling thread. A direct read covers the aligned window around
// its chunk; a direct read the file system refuses (EINVAL) or that ends unaligned (the end of
// the file) is finished through the page cache; EINTR and EAGAIN are retried (at most
// Uring::kMaxTransientRetries times a read). Returns the bytes delivered: end - start, or
// fewer if the file ends first. On a read's failure, or if `consume` throws, it waits for every
// read still in flight before it returns the failure or rethrows.
IoResult<std::uint64_t> readSequential(
    const SequentialRead& how, const std::function<void(std::span<const std::uint8_t>)>& consume,
    ReadRing& ring);

}  // namespace cairn::io
