// The directory backend (docs/design.md §3.3): objects are files under a root directory.
//   create-if-absent   write a temp file, fsync, link(2) it to the key (EEXIST: precondition
//                      failed), fsync the key's directory
//   compare-and-swap   under the write lock (an in-process mutex and an flock on ROOT/.lock):
//                      read, compare the ETag, write temp, fsync, rename over the key, fsync
//                      the directory; rewrite and vacuum's fenced delete take the same lock
//   ETag               "\"<SHA-256 of the content, hex>\"": strong, derived from the content
// A failure after the link or rename (the directory fsync) is `uncertain`: the object is
// visible but may not survive a crash.
//
// Every key is opened beneath the root, which the store holds open: no component of a key is
// ever followed through a symbolic link, so nothing outside the root is read, written or
// deleted. An object or directory in the store that is a symbolic link, a FIFO, a device or a
// socket is refused (a failure naming it), never read or written through, and never waited
// on. Temporary files (ROOT/.tmp) carry a random name and an flock while their writer lives;
// those of writers that died are counted and reclaimed by leftovers().
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>

#include "engine/store/object_store.hpp"

namespace cairn {

namespace io {
class Uring;
}

// StoreOutcome::code of a get (status failure) whose key names a directory, a symbolic link or
// a special file: not an object, and no retry makes it one (a permanent answer, not trouble).
inline constexpr std::string_view kNotAnObject = "NotAnObject";

// Whether opening a directory store may create its root: only commands that set a store up
// (init, ingest of a new database, backup's target, store put) do; every other one refuses
// a root that does not exist (a mistyped path is an error, not a new empty store).
enum class StoreCreation : std::uint8_t { existing, createIfMissing };

// A temporary file younger than this is never reclaimed, whether or not its writer holds it:
// between its creation and its flock a writer holds no lock yet.
inline constexpr std::int64_t kMinLeftoverAgeSeconds = 60;

class DirectoryStore final : public ObjectStore {
 public:
  static Result<std::unique_ptr<DirectoryStore>, std::string> open(
      io::Uring& uring, std::filesystem::path root,
      StoreCreation creation = StoreCreation::existing);
  ~DirectoryStore() override;

  boost::asio::awaitable<StoreResult<StoredObject>> get(std::string key,
                                                        std::uint64_t maxBytes) override;
  boost::asio::awaitable<StoreResult<StoredObject>> getInto(std::string key, std::uint64_t maxBytes,
                                                            Bytes storage) override;
  boost::asio::awaitable<StoreResult<ObjectInfo>> head(std::string key) override;
  boost::asio::awaitable<StoreResult<std::string>> putIfAbsent(std::string key,
                                                               ByteView bytes) override;
  boost::asio::awaitable<StoreResult<std::string>> putIfAbsentHashed(std::string key,
                                                                     ByteView bytes,
                                                                     Digest digest) override;
  boost::asio::awaitable<StoreResult<std::string>> putIfMatch(std::string key, ByteView bytes,
                                                              std::string etag) override;
  boost::asio::awaitable<StoreResult<std::string>> rewrite(std::string key,
                                                           ByteView bytes) override;
  boost::asio::awaitable<StoreResult<void>> remove(std::string key) override;
  // Under the write lock: the key is unlinked only if its modification time is still the
  // fence's (a rewrite, which takes the same lock, gives it a later one) and sendBy has not
  // passed; whenever it runs, it never removes an object written after the fence's HEAD.
  boost::asio::awaitable<StoreResult<void>> removeFenced(std::string key,
                                                         DeleteFence fence) override;
  boost::asio::awaitable<StoreResult<ListPage>> list(std::string prefix, std::string continuation,
                                                     int maxKeys) override;
  boost::asio::awaitable<StoreResult<LeftoverUsage>> leftovers(bool reclaim) override;
  std::string describe() const override;
  // Conditions are enforced here, under the store's own lock: always ok.
  boost::asio::awaitable<StoreResult<void>> requireConditionalWrites() override {
    co_return StoreResult<void>{};
  }

  const std::filesystem::path& root() const { return root_; }

 private:
  struct Impl;
  struct Temp;
  struct WriteLock;
  // The store's write lock: the in-process mutex, then the flock on ROOT/.lock (other
  // processes), tried until `until` (or kLockAttempts pauses). Held by compare-and-swap,
  // rewrite and a fenced delete, so each sees the others whole.
  boost::asio::awaitable<StoreResult<WriteLock>> lockWrites(
      std::optional<std::chrono::steady_clock::time_point> until);
  // removeFenced's work, under the write lock.
  boost::asio::awaitable<StoreResult<void>> unlinkIfUnchanged(const std::string& key,
                                                              const DeleteFence& fence);
  DirectoryStore(io::Uring& uring, std::filesystem::path root);
  boost::asio::awaitable<StoreResult<Temp>> writeTemp(ByteView bytes);
  // Create-if-absent by link(2) of a synced temporary file; the ETag is the digest's.
  boost::asio::awaitable<StoreResult<std::string>> create(std::string key, ByteView bytes,
                                                          Digest digest);
  // Write temp, fsync, rename over the key, fsync its directory.
  boost::asio::awaitable<StoreResult<std::string>> replace(const std::string& key, ByteView bytes);

  io::Uring& uring_;
  std::filesystem::path root_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cairn
