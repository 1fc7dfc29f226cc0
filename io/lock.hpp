// DirectoryLock: one process owns a database directory at a time (docs/design.md §4.1).
//
// The lock is an exclusive, non-blocking flock(2) on DIR/LOCK (created if absent; a symbolic
// link there is refused, never followed). flock belongs to the open file description, so a
// second acquire conflicts whether it comes from another process or from this one (each
// acquire opens the file anew). After locking, the owner writes its pid into the file for
// error messages (best effort: on a full disk the lock is held without it); on release it
// empties the file and closes it, which drops the lock. The file itself stays: removing it could
// let two owners lock two different inodes.
//
// Readers take a shared lock instead (acquireShared): any number of them at once, none while
// an owner holds the exclusive lock, and no owner while one of them reads. A reader opens the
// file read-only and writes nothing, so it works on a read-only mount (docs/operations.md,
// "Read-only directories"); it creates the file only where none exists yet.
//
// A forked child inherits the descriptor and with it the lock, until the child closes it or
// exits; the descriptor is O_CLOEXEC, so exec drops it.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>

#include "io/error.hpp"
#include "io/file.hpp"

namespace cairn::io {

class DirectoryLock {
 public:
  static constexpr const char* kFileName = "LOCK";

  // Fails with std::errc::resource_unavailable_try_again (EWOULDBLOCK) when another owner
  // holds the lock, or with the error of opening DIR/LOCK.
  static IoResult<DirectoryLock> acquire(const std::filesystem::path& dir);
  // A reader's shared lock: fails with EWOULDBLOCK while an owner holds the exclusive lock.
  static IoResult<DirectoryLock> acquireShared(const std::filesystem::path& dir);
  // The pid written by the current owner, for error messages; nullopt when the file is
  // missing, empty or not a pid. Advisory only: the owner may be gone by the time it is read.
  static std::optional<pid_t> holder(const std::filesystem::path& dir);

  DirectoryLock(DirectoryLock&& other) noexcept = default;
  DirectoryLock& operator=(DirectoryLock&& other) noexcept;
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;
  ~DirectoryLock();

  const std::filesystem::path& directory() const noexcept { return dir_; }
  bool held() const noexcept { return file_.isOpen(); }
  bool shared() const noexcept { return shared_; }
  // Releases now (what the destructor does); a no-op when not held.
  void release() noexcept;

 private:
  DirectoryLock(std::filesystem::path dir, File file, bool shared)
      : dir_(std::move(dir)), file_(std::move(file)), shared_(shared) {}

  std::filesystem::path dir_;
  File file_;
  bool shared_ = false;
};

}  // namespace cairn::io
