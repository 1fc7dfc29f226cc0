#include "io/lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <cstdint>
#include <string>
#include <utility>

namespace cairn::io {
namespace {

// A pid has at most 10 digits (pid_max is at most 2^22); the file holds "PID\n".
constexpr std::size_t kMaxLockFileBytes = 32;

std::filesystem::path lockPath(const std::filesystem::path& dir) {
  return dir / DirectoryLock::kFileName;
}

}  // namespace

IoResult<DirectoryLock> DirectoryLock::acquire(const std::filesystem::path& dir) {
  auto file = File::open(lockPath(dir), O_RDWR | O_CREAT, 0644);
  if (!file) return fail(file.error());
  if (::flock(file->fd(), LOCK_EX | LOCK_NB) != 0) return fail(lastErrno());
  // Locked: the pid is ours to write. Empty first, so no longer old pid leaves digits behind.
  // Only a hint for error messages: a disk that is full (or read-only) keeps the lock without
  // it, so that reading commands still work there.
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (file->truncate(0)) (void)file->writeAllAt(asBytes(pid), 0);
  return DirectoryLock(dir, std::move(*file), /*shared=*/false);
}

IoResult<DirectoryLock> DirectoryLock::acquireShared(const std::filesystem::path& dir) {
  // Read-only: a reader needs no write access, and writes no pid (readers are many).
  auto file = File::open(lockPath(dir), O_RDONLY);
  if (!file && file.error() == std::errc::no_such_file_or_directory) {
    // Never locked before: the file is made as an owner makes it (on a read-only mount this
    // fails, and the reader is refused rather than left unprotected from a writer elsewhere).
    file = File::open(lockPath(dir), O_RDWR | O_CREAT, 0644);
  }
  if (!file) return fail(file.error());
  if (::flock(file->fd(), LOCK_SH | LOCK_NB) != 0) return fail(lastErrno());
  return DirectoryLock(dir, std::move(*file), /*shared=*/true);
}

std::optional<pid_t> DirectoryLock::holder(const std::filesystem::path& dir) {
  auto file = File::open(lockPath(dir), O_RDONLY);
  if (!file) return std::nullopt;
  std::array<std::uint8_t, kMaxLockFileBytes> buffer{};
  auto got = file->readFullAt(buffer, 0);
  if (!got || *got == 0 || *got == buffer.size()) return std::nullopt;
  const auto text = asChars(ByteView(buffer.data(), *got));
  pid_t pid = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), pid);
  const bool wholeLine = end != text.data() && (end == text.data() + text.size() || *end == '\n');
  if (ec != std::errc() || !wholeLine || pid <= 0) return std::nullopt;
  return pid;
}

DirectoryLock& DirectoryLock::operator=(DirectoryLock&& other) noexcept {
  if (this != &other) {
    release();
    dir_ = std::move(other.dir_);
    file_ = std::move(other.file_);
    shared_ = other.shared_;
  }
  return *this;
}

DirectoryLock::~DirectoryLock() { release(); }

void DirectoryLock::release() noexcept {
  if (!file_.isOpen()) return;
  // Still locked here, so emptying cannot erase a successor's pid. Best effort: the pid is
  // only a hint, and closing releases the lock regardless. A reader wrote none.
  if (!shared_) (void)file_.truncate(0);
  (void)file_.close();
}

}  // namespace cairn::io
