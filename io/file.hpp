// File: an owned file descriptor, and the durable-replace protocol built on it.
//
// durableReplace writes a whole file so that after a crash the target holds either the old
// or the new bytes, never a mix or nothing:
//   1. create a temp file beside the target: TARGET.tmp.PID.N (same directory, so the rename
//      cannot cross file systems), O_EXCL so no one else's temp file is reused;
//   2. write all bytes, fsync the temp file, close it;
//   3. rename the temp file over the target (atomic on POSIX);
//   4. fsync the directory, so the rename itself survives a crash.
// On failure before step 3 the temp file is removed; a failure in step 4 is reported, and
// the target then holds the new bytes but they may not survive a crash.
//
// The blocking calls here (open, rename, ftruncate, close; the blocking syncs) are meant for
// setup code and for small metadata files; the journal's reads, writes and syncs go through
// Uring.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <new>
#include <optional>
#include <span>

#include "base/bytes.hpp"
#include "io/error.hpp"

// Only declared here (no Asio include): callers of durableReplace include io/uring.hpp.
namespace boost::asio {
class any_io_executor;
template <typename T, typename Executor>
class awaitable;
}  // namespace boost::asio

namespace cairn::io {

class Uring;

class File {
 public:
  // Opens with O_CLOEXEC added to flags (open(2) flags: O_RDONLY, O_RDWR | O_CREAT, ...).
  // Without O_DIRECTORY in flags, the path must name a regular file, and its last component
  // is never followed: a symbolic link fails with FileErrc::symbolicLink (a dangling one is
  // never created through), a FIFO, device or socket with FileErrc::notRegular, without
  // blocking (a FIFO is opened non-blocking to look at it). With O_DIRECTORY, the directory
  // the caller named is opened as given.
  static IoResult<File> open(const std::filesystem::path& path, int flags, mode_t mode = 0644);
  // The same for `relative` beneath the directory `root` (held open): no component of
  // `relative` may be a symbolic link, "." or "..", so the result never lies outside root.
  // With O_DIRECTORY the last component must be a directory too.
  static IoResult<File> openBeneath(const File& root, const std::filesystem::path& relative,
                                    int flags, mode_t mode = 0644);

  File() noexcept = default;                   // holds no descriptor
  explicit File(int fd) noexcept : fd_(fd) {}  // adopts fd
  ~File();                                     // closes, ignoring errors: call close() to see them
  File(File&& other) noexcept;
  File& operator=(File&& other) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  int fd() const noexcept { return fd_; }
  bool isOpen() const noexcept { return fd_ >= 0; }

  IoResult<std::uint64_t> size() const;
  IoResult<void> truncate(std::uint64_t length);
  // fsync(2), blocking.
  IoResult<void> syncNow();
  // Blocking positional I/O, for setup code and small files: writeAllAt continues after short
  // writes; readFullAt stops early only at end of file and returns the bytes read.
  IoResult<void> writeAllAt(ByteView bytes, std::uint64_t offset);
  IoResult<std::size_t> readFullAt(std::span<std::uint8_t> buffer, std::uint64_t offset);
  // Closes now and reports close(2)'s error; the descriptor is gone either way.
  IoResult<void> close();

 private:
  int fd_ = -1;
};

// O_DIRECT needs file offsets, lengths and buffers aligned to the device's logical block;
// 4,096 covers 512-byte and 4 KiB devices. An aligned buffer, not zero-filled:
inline constexpr std::size_t kDirectAlign = 4096;
struct AlignedDelete {
  void operator()(std::uint8_t* p) const { ::operator delete[](p, std::align_val_t{kDirectAlign}); }
};
using AlignedBuffer = std::unique_ptr<std::uint8_t[], AlignedDelete>;
inline AlignedBuffer allocateAligned(std::size_t bytes) {
  return AlignedBuffer(
      static_cast<std::uint8_t*>(::operator new[](bytes, std::align_val_t{kDirectAlign})));
}

// How many of the pages that hold the file's bytes [offset, offset + length) are in the page
// cache (cachestat(2), Linux 6.5); nullopt where the kernel cannot tell. Does not block on I/O.
struct CachedPages {
  std::uint64_t cached = 0;  // of `pages`
  std::uint64_t pages = 0;   // the range touches (the page holding the file's end included)
  bool all() const { return cached >= pages; }
};
std::optional<CachedPages> cachedPages(int fd, std::uint64_t offset, std::uint64_t length);

// Opens (and with `create`, makes any missing component of) the directory `relative` beneath
// the directory `root`, never following a symbolic link (FileErrc::symbolicLink) and never
// leaving root. An empty `relative` is root itself (a new descriptor of it).
IoResult<File> openDirectoryBeneath(const File& root, const std::filesystem::path& relative,
                                    bool create);

// Opens dir (O_DIRECTORY) and fsyncs it, so entries created, renamed or removed in it are
// durable. Blocking.
IoResult<void> syncDirectory(const std::filesystem::path& dir);

// The durable-replace protocol above through the ring. bytes must stay valid until the
// returned awaitable completes; target is copied.
boost::asio::awaitable<IoResult<void>, boost::asio::any_io_executor> durableReplace(
    Uring& ring, std::filesystem::path target, ByteView bytes);

// The same protocol with blocking calls, for command-line setup code. The file is created
// with `mode` (less the umask) and never has wider permissions on the way.
IoResult<void> durableReplaceSync(const std::filesystem::path& target, ByteView bytes,
                                  mode_t mode = 0644);

}  // namespace cairn::io
