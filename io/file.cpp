#include "io/file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "io/uring.hpp"

namespace cairn::io {

// file.hpp declares durableReplace without Asio; it must name the type Asio defines.
static_assert(std::is_same_v<boost::asio::awaitable<IoResult<void>>,
                             boost::asio::awaitable<IoResult<void>, boost::asio::any_io_executor>>);

namespace {

// A call interrupted by a signal is retried at most this many times.
constexpr int kMaxEintrRetries = 16;
// A temp name already taken (a stale temp file of a crashed process with the same pid) is
// skipped at most this many times.
constexpr int kMaxTempNameAttempts = 16;
constexpr std::uint64_t kMaxOffset = std::numeric_limits<off_t>::max();

// Runs call() (a libc call returning -1 and setting errno on failure) again after EINTR.
template <class Call>
auto retryEintr(Call call) {
  auto r = call();
  for (int i = 0; i < kMaxEintrRetries && r == -1 && errno == EINTR; ++i) r = call();
  return r;
}

std::filesystem::path directoryOf(const std::filesystem::path& target) {
  auto dir = target.parent_path();
  return dir.empty() ? std::filesystem::path(".") : dir;
}

// The temp file of one durable replace: removed on destruction unless renamed into place.
class TempFile {
 public:
  static IoResult<TempFile> createBeside(const std::filesystem::path& target, mode_t mode = 0644) {
    static std::atomic<std::uint64_t> counter{0};
    const std::string prefix = target.filename().string() + ".tmp." + std::to_string(::getpid());
    std::error_code last = errnoCode(EEXIST);
    for (int i = 0; i < kMaxTempNameAttempts; ++i) {
      auto path = target.parent_path() / (prefix + "." + std::to_string(counter++));
      auto file = File::open(path, O_WRONLY | O_CREAT | O_EXCL, mode);
      if (file) return TempFile(std::move(path), std::move(*file));
      last = file.error();
      if (last != std::errc::file_exists) break;
    }
    return fail(last);
  }

  TempFile(TempFile&& other) noexcept
      : path_(std::move(other.path_)),
        file_(std::move(other.file_)),
        armed_(std::exchange(other.armed_, false)) {}
  TempFile& operator=(TempFile&&) = delete;
  ~TempFile() {
    if (armed_) ::unlink(path_.c_str());
  }

  File& file() { return file_; }

  // Closes the (synced) temp file and renames it over target; from then on it is not ours.
  IoResult<void> closeAndRenameOver(const std::filesystem::path& target) {
    if (auto closed = file_.close(); !closed) return closed;
    if (::rename(path_.c_str(), target.c_str()) != 0) return fail(lastErrno());
    armed_ = false;
    return {};
  }

 private:
  TempFile(std::filesystem::path path, File file)
      : path_(std::move(path)), file_(std::move(file)) {}

  std::filesystem::path path_;
  File file_;
  bool armed_ = true;
};

}  // namespace

namespace {

class FileCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "cairn.file"; }
  std::string message(int value) const override {
    switch (static_cast<FileErrc>(value)) {
      case FileErrc::symbolicLink:
        return "is a symbolic link (cairn never follows one)";
      case FileErrc::notRegular:
        return "is not a regular file (a FIFO, device, socket or directory)";
    }
    return "unknown file error";
  }
};

// The error for a failed open of `name` in `dirfd` (AT_FDCWD for a path): a symbolic link
// there is named as such, whatever errno the flags made open(2) choose (ELOOP with
// O_NOFOLLOW, ENOTDIR with O_DIRECTORY, EEXIST with O_EXCL).
std::error_code openError(int dirfd, const char* name, int errnoValue) {
  if (errnoValue == ELOOP || errnoValue == ENOTDIR || errnoValue == EEXIST) {
    struct stat st {};
    if (::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
      return fileError(FileErrc::symbolicLink);
    }
  }
  return errnoCode(errnoValue);
}

// A descriptor opened O_NONBLOCK for a non-directory: it must be a regular file; then the
// non-blocking mode goes unless the caller asked for it.
IoResult<File> requireRegular(File file, int requestedFlags) {
  struct stat st {};
  if (::fstat(file.fd(), &st) != 0) return fail(lastErrno());
  if (!S_ISREG(st.st_mode)) return fail(fileError(FileErrc::notRegular));
  if ((requestedFlags & O_NONBLOCK) == 0) {
    const int fl = ::fcntl(file.fd(), F_GETFL);
    if (fl < 0 || ::fcntl(file.fd(), F_SETFL, fl & ~O_NONBLOCK) != 0) return fail(lastErrno());
  }
  return file;
}

// open(2) or openat(2) with cairn's rules (File::open).
IoResult<File> openAt(int dirfd, const char* name, int flags, mode_t mode) {
  const bool directory = (flags & O_DIRECTORY) != 0;
  const int extra = O_CLOEXEC | (directory ? 0 : O_NOFOLLOW | O_NONBLOCK);
  const int fd = retryEintr([&] { return ::openat(dirfd, name, flags | extra, mode); });
  if (fd < 0) return fail(openError(dirfd, name, errno));
  File file(fd);
  if (directory) return file;
  return requireRegular(std::move(file), flags);
}

// A path component beneath a root: not empty, ".", ".." and without a '/'.
bool plainComponent(const std::string& c) { return !c.empty() && c != "." && c != ".."; }

}  // namespace

const std::error_category& fileCategory() {
  static const FileCategory category;
  return category;
}

IoResult<File> File::open(const std::filesystem::path& path, int flags, mode_t mode) {
  return openAt(AT_FDCWD, path.c_str(), flags, mode);
}

IoResult<File> openDirectoryBeneath(const File& root, const std::filesystem::path& relative,
                                    bool create) {
  const int rootCopy =
      retryEintr([&] { return ::openat(root.fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); });
  if (rootCopy < 0) return fail(lastErrno());
  File current(rootCopy);
  for (const auto& part : relative) {
    const std::string name = part.string();
    if (name.empty()) continue;  // a trailing '/'
    if (!plainComponent(name)) return fail(errnoCode(EINVAL));
    const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    int fd = retryEintr([&] { return ::openat(current.fd(), name.c_str(), flags); });
    if (fd < 0 && errno == ENOENT && create) {
      if (::mkdirat(current.fd(), name.c_str(), 0755) != 0 && errno != EEXIST) {
        return fail(lastErrno());
      }
      fd = retryEintr([&] { return ::openat(current.fd(), name.c_str(), flags); });
    }
    if (fd < 0) return fail(openError(current.fd(), name.c_str(), errno));
    current = File(fd);
  }
  return current;
}

IoResult<File> File::openBeneath(const File& root, const std::filesystem::path& relative, int flags,
                                 mode_t mode) {
  const std::string last = relative.filename().string();
  if (!plainComponent(last)) return fail(errnoCode(EINVAL));
  auto parent = openDirectoryBeneath(root, relative.parent_path(), /*create=*/false);
  if (!parent) return parent;
  return openAt(parent->fd(), last.c_str(), flags, mode);
}

File::~File() {
  if (fd_ >= 0) ::close(fd_);
}

File::File(File&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

File& File::operator=(File&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

IoResult<std::uint64_t> File::size() const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return fail(lastErrno());
  return static_cast<std::uint64_t>(st.st_size);
}

IoResult<void> File::truncate(std::uint64_t length) {
  if (length > kMaxOffset) return fail(errnoCode(EINVAL));
  if (retryEintr([&] { return ::ftruncate(fd_, static_cast<off_t>(length)); }) != 0) {
    return fail(lastErrno());
  }
  return {};
}

IoResult<void> File::syncNow() {
  if (retryEintr([&] { return ::fsync(fd_); }) != 0) return fail(lastErrno());
  return {};
}

IoResult<void> File::writeAllAt(ByteView bytes, std::uint64_t offset) {
  if (offset > kMaxOffset || bytes.size() > kMaxOffset - offset) return fail(errnoCode(EINVAL));
  std::size_t done = 0;
  // Bounded: every pass writes at least one byte or fails.
  while (done < bytes.size()) {
    const auto n = retryEintr([&] {
      return ::pwrite(fd_, bytes.data() + done, bytes.size() - done,
                      static_cast<off_t>(offset + done));
    });
    if (n < 0) return fail(lastErrno());
    if (n == 0) return fail(errnoCode(EIO));  // no progress on a non-empty write
    done += static_cast<std::size_t>(n);
  }
  return {};
}

IoResult<std::size_t> File::readFullAt(std::span<std::uint8_t> buffer, std::uint64_t offset) {
  if (offset > kMaxOffset || buffer.size() > kMaxOffset - offset) return fail(errnoCode(EINVAL));
  std::size_t done = 0;
  // Bounded: every pass reads at least one byte or stops.
  while (done < buffer.size()) {
    const auto n = retryEintr([&] {
      return ::pread(fd_, buffer.data() + done, buffer.size() - done,
                     static_cast<off_t>(offset + done));
    });
    if (n < 0) return fail(lastErrno());
    if (n == 0) break;  // end of file
    done += static_cast<std::size_t>(n);
  }
  return done;
}

IoResult<void> File::close() {
  if (fd_ < 0) return {};
  // Never retried: on Linux the descriptor is released even when close reports EINTR.
  const int r = ::close(std::exchange(fd_, -1));
  if (r != 0) return fail(lastErrno());
  return {};
}

std::optional<CachedPages> cachedPages(int fd, std::uint64_t offset, std::uint64_t length) {
  // The kernel's structures (include/uapi/linux/mman.h); Debian 12's headers predate them.
  struct Range {
    std::uint64_t offset, length;
  };
  struct Stat {
    std::uint64_t cache, dirty, writeback, evicted, recentlyEvicted;
  };
  constexpr long kCachestat = 451;  // x86_64, arm64 and the other asm-generic architectures
  static const auto kPage = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  if (length == 0) return CachedPages{};
  Range range{offset, length};
  Stat stat{};
  if (::syscall(kCachestat, fd, &range, &stat, 0) != 0) return std::nullopt;
  // Pages the range touches (cachestat counts whole pages, the file's end included).
  const std::uint64_t pages = (offset + length + kPage - 1) / kPage - offset / kPage;
  return CachedPages{std::min(stat.cache, pages), pages};
}

IoResult<void> syncDirectory(const std::filesystem::path& dir) {
  auto file = File::open(dir, O_RDONLY | O_DIRECTORY);
  if (!file) return fail(file.error());
  if (auto synced = file->syncNow(); !synced) return synced;
  return file->close();
}

boost::asio::awaitable<IoResult<void>, boost::asio::any_io_executor> durableReplace(
    Uring& ring, std::filesystem::path target, ByteView bytes) {
  auto temp = TempFile::createBeside(target);
  if (!temp) co_return fail(temp.error());
  const int fd = temp->file().fd();
  if (auto written = co_await ring.write(fd, bytes, 0); !written) co_return written;
  if (auto synced = co_await ring.fsync(fd); !synced) co_return synced;
  if (auto renamed = temp->closeAndRenameOver(target); !renamed) co_return renamed;

  auto dir = File::open(directoryOf(target), O_RDONLY | O_DIRECTORY);
  if (!dir) co_return fail(dir.error());
  if (auto synced = co_await ring.fsync(dir->fd()); !synced) co_return synced;
  co_return dir->close();
}

IoResult<void> durableReplaceSync(const std::filesystem::path& target, ByteView bytes,
                                  mode_t mode) {
  auto temp = TempFile::createBeside(target, mode);
  if (!temp) return fail(temp.error());
  if (auto written = temp->file().writeAllAt(bytes, 0); !written) return written;
  if (auto synced = temp->file().syncNow(); !synced) return synced;
  if (auto renamed = temp->closeAndRenameOver(target); !renamed) return renamed;
  return syncDirectory(directoryOf(target));
}

}  // namespace cairn::io
