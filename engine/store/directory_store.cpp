#include "engine/store/directory_store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <chrono>
#include <random>
#include <system_error>

#include "base/sha256.hpp"
#include "engine/runtime/async.hpp"
#include "io/file.hpp"
#include "io/uring.hpp"

namespace cairn {

namespace fs = std::filesystem;

namespace {

constexpr const char* kTempDir = ".tmp";
constexpr const char* kLockFile = ".lock";
// The compare-and-swap lock between processes: tries, and the pause between them.
constexpr int kLockAttempts = 2000;
constexpr auto kLockPause = std::chrono::milliseconds(5);
// head() and compare-and-swap read the whole object to derive its ETag: bounded by the
// largest object cairn writes (a segment: 76 bytes + 256 MiB) with room to spare.
constexpr std::uint64_t kMaxObjectBytes = std::uint64_t{1} << 30;
// A temporary name already taken is drawn again at most this many times (64 random bits:
// a collision means a leftover of the same name, not chance).
constexpr int kMaxTempNameAttempts = 16;
// Directory levels a listing descends (keys of at most 1,024 bytes have at most 512).
constexpr int kMaxListDepth = 512;

std::string etagOf(const Digest& digest) { return "\"" + toHex(digest) + "\""; }
std::string etagOf(ByteView bytes) { return etagOf(sha256(bytes)); }

Failure<StoreOutcome> ioFailure(StoreStatus status, const std::string& what,
                                const std::error_code& ec) {
  return storeFail(status, what + ": " + ec.message());
}

Failure<StoreOutcome> badKey(const std::string& key) {
  return storeFail(StoreStatus::failure, "invalid object key \"" + key + "\"");
}

bool isAbsence(const std::error_code& ec) {
  return ec == std::errc::no_such_file_or_directory || ec == std::errc::not_a_directory;
}

// A key that names a symbolic link (or passes through one) or a directory, FIFO or device: a
// permanent answer, not a failure a retry can mend (kNotAnObject).
bool isNotAnObject(const std::error_code& ec) {
  return ec == io::fileError(io::FileErrc::symbolicLink) ||
         ec == io::fileError(io::FileErrc::notRegular);
}

// A key's directory (beneath the root) and its last component.
struct KeyPath {
  fs::path parent;
  std::string name;
};
KeyPath splitKey(const std::string& key) {
  fs::path p(key);
  return {p.parent_path(), p.filename().string()};
}

asio::awaitable<io::IoResult<void>> syncFd(io::Uring& uring, const io::File& f) {
  co_return co_await uring.fsync(f.fd());
}

// Unlinks `name` in `parent` and makes that durable: absent already is done; a failed sync
// leaves the delete uncertain (it may or may not outlive a crash).
asio::awaitable<StoreResult<void>> unlinkDurably(io::Uring& uring, const io::File& parent,
                                                 const std::string& name, const std::string& key) {
  if (::unlinkat(parent.fd(), name.c_str(), 0) != 0) {
    auto e = io::lastErrno();
    if (isAbsence(e)) co_return StoreResult<void>{};
    co_return ioFailure(StoreStatus::failure, "delete " + key, e);
  }
  if (auto s = co_await syncFd(uring, parent); !s) {
    co_return ioFailure(StoreStatus::uncertain, "fsync directory after deleting " + key, s.error());
  }
  co_return StoreResult<void>{};
}

// The entry `name` in `dir`, not followed: what a write may replace or a delete may remove.
// Absent is fine (nullopt error-free); a symbolic link or non-regular file is refused.
io::IoResult<bool> regularOrAbsent(const io::File& dir, const std::string& name) {
  struct stat st {};
  if (::fstatat(dir.fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return false;
    return fail(io::lastErrno());
  }
  if (S_ISLNK(st.st_mode)) return fail(io::fileError(io::FileErrc::symbolicLink));
  if (!S_ISREG(st.st_mode)) return fail(io::fileError(io::FileErrc::notRegular));
  return true;
}

// Collects the regular files below `dir` (whose key prefix is `at`) into `out`: entries whose
// name starts with '.' are the store's own (skipped); a symbolic link or any other kind of
// file is refused.
Result<void, std::string> collect(const io::File& dir, const std::string& at, int depth,
                                  const std::string& prefix, const std::string& continuation,
                                  std::vector<ObjectInfo>& out) {
  if (depth > kMaxListDepth) return Failure<std::string>{"directories nest deeper than keys can"};
  const int copy = ::dup(dir.fd());
  if (copy < 0) return Failure<std::string>{"list: " + io::lastErrno().message()};
  DIR* stream = ::fdopendir(copy);
  if (stream == nullptr) {
    ::close(copy);
    return Failure<std::string>{"list: " + io::lastErrno().message()};
  }
  ::rewinddir(stream);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(stream)) {
    std::string name = e->d_name;
    if (!name.empty() && name.front() != '.') names.push_back(std::move(name));
  }
  ::closedir(stream);
  for (const std::string& name : names) {
    std::string key = at.empty() ? name : at + "/" + name;
    if (!isValidObjectKey(key)) {
      return Failure<std::string>{"the store holds " + escapeForDisplay(key) +
                                  ", whose name is not a valid key: refused"};
    }
    // A subtree that cannot hold a key with the prefix is not entered.
    const std::size_t common = std::min(key.size(), prefix.size());
    if (key.compare(0, common, prefix, 0, common) != 0) continue;
    struct stat st {};
    if (::fstatat(dir.fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;  // removed meanwhile
      return Failure<std::string>{"list " + key + ": " + io::lastErrno().message()};
    }
    if (S_ISLNK(st.st_mode) || (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))) {
      const auto why = io::fileError(S_ISLNK(st.st_mode) ? io::FileErrc::symbolicLink
                                                         : io::FileErrc::notRegular);
      return Failure<std::string>{"the store holds " + key + ", which " + why.message() +
                                  ": refused (remove it from the store's directory)"};
    }
    if (S_ISDIR(st.st_mode)) {
      auto sub = io::openDirectoryBeneath(dir, name, /*create=*/false);
      if (!sub) {
        if (isAbsence(sub.error())) continue;
        return Failure<std::string>{"list " + key + ": " + sub.error().message()};
      }
      if (auto ok = collect(*sub, key, depth + 1, prefix, continuation, out); !ok) return ok;
      continue;
    }
    if (key.size() < prefix.size() || key <= continuation) continue;
    out.push_back(ObjectInfo{key, static_cast<std::uint64_t>(st.st_size), "", st.st_mtim.tv_sec});
  }
  return {};
}

}  // namespace

// A synced temporary file in ROOT/.tmp, locked (flock) while its writer holds it.
struct DirectoryStore::Temp {
  io::File file;
  std::string name;
};

struct DirectoryStore::Impl {
  AsyncMutex casMutex;
  io::File root;   // held open: every key is opened beneath it
  io::File temps;  // ROOT/.tmp, opened (and made) by the first write
  std::mt19937_64 names{std::random_device{}()};
};

DirectoryStore::DirectoryStore(io::Uring& uring, fs::path root)
    : uring_(uring), root_(std::move(root)), impl_(std::make_unique<Impl>()) {}
DirectoryStore::~DirectoryStore() = default;

Result<std::unique_ptr<DirectoryStore>, std::string> DirectoryStore::open(io::Uring& uring,
                                                                          fs::path root,
                                                                          StoreCreation creation) {
  if (creation == StoreCreation::createIfMissing) {
    std::error_code ec;
    fs::create_directories(root, ec);
    if (ec) return Failure<std::string>{"cannot create " + root.string() + ": " + ec.message()};
  }
  auto dir = io::File::open(root, O_RDONLY | O_DIRECTORY);
  if (!dir) {
    if (isAbsence(dir.error())) {
      return Failure<std::string>{"the directory store " + root.string() +
                                  " does not exist (a command that reads never creates one)"};
    }
    return Failure<std::string>{"cannot open " + root.string() + ": " + dir.error().message()};
  }
  std::unique_ptr<DirectoryStore> store(new DirectoryStore(uring, std::move(root)));
  store->impl_->root = std::move(*dir);
  return store;
}

std::string DirectoryStore::describe() const { return "directory " + root_.string(); }

asio::awaitable<StoreResult<StoredObject>> DirectoryStore::get(std::string key,
                                                               std::uint64_t maxBytes) {
  Bytes fresh;  // a named local: GCC 12 mishandles non-trivial temporaries in co_await
  co_return co_await getInto(std::move(key), maxBytes, std::move(fresh));
}

asio::awaitable<StoreResult<StoredObject>> DirectoryStore::getInto(std::string key,
                                                                   std::uint64_t maxBytes,
                                                                   Bytes storage) {
  if (!isValidObjectKey(key)) co_return badKey(key);
  auto f = io::File::openBeneath(impl_->root, key, O_RDONLY);
  if (!f) {
    if (isAbsence(f.error())) co_return storeFail(StoreStatus::missing, key + " does not exist");
    if (isNotAnObject(f.error())) {
      co_return Failure<StoreOutcome>{
          {StoreStatus::failure, key + ": " + f.error().message(), 0, std::string(kNotAnObject)}};
    }
    co_return ioFailure(StoreStatus::failure, key, f.error());
  }
  auto size = f->size();
  if (!size) co_return ioFailure(StoreStatus::failure, "stat " + key, size.error());
  if (*size > maxBytes) {
    co_return storeFail(StoreStatus::failure, key + " has " + std::to_string(*size) +
                                                  " bytes, over the bound of " +
                                                  std::to_string(maxBytes));
  }
  StoredObject out;
  out.bytes = std::move(storage);
  out.bytes.resize(*size);  // (its earlier bytes are read over: only growth is zero-filled)
  auto n = co_await uring_.readFull(f->fd(), out.bytes, 0);
  if (!n) co_return ioFailure(StoreStatus::failure, "read " + key, n.error());
  // Objects are replaced by rename, never changed in place: a short read means that.
  if (*n != *size) co_return storeFail(StoreStatus::failure, key + " changed while being read");
  out.etag = etagOf(out.bytes);
  co_return out;
}

asio::awaitable<StoreResult<ObjectInfo>> DirectoryStore::head(std::string key) {
  if (!isValidObjectKey(key)) co_return badKey(key);
  auto f = io::File::openBeneath(impl_->root, key, O_RDONLY);
  if (!f) {
    if (isAbsence(f.error())) co_return storeFail(StoreStatus::missing, key + " does not exist");
    co_return ioFailure(StoreStatus::failure, key, f.error());
  }
  struct stat st {};
  if (::fstat(f->fd(), &st) != 0) co_return ioFailure(StoreStatus::failure, key, io::lastErrno());
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > kMaxObjectBytes) {
    co_return storeFail(StoreStatus::failure, key + " has " + std::to_string(size) +
                                                  " bytes, over the bound of " +
                                                  std::to_string(kMaxObjectBytes));
  }
  // The ETag is the content's hash: read the object it describes, from this one descriptor.
  Bytes bytes(size);
  auto n = co_await uring_.readFull(f->fd(), bytes, 0);
  if (!n) co_return ioFailure(StoreStatus::failure, "read " + key, n.error());
  if (*n != size) co_return storeFail(StoreStatus::failure, key + " changed while being read");
  co_return ObjectInfo{key, size, etagOf(bytes), st.st_mtim.tv_sec};
}

asio::awaitable<StoreResult<DirectoryStore::Temp>> DirectoryStore::writeTemp(ByteView bytes) {
  if (!impl_->temps.isOpen()) {
    auto temps = io::openDirectoryBeneath(impl_->root, kTempDir, /*create=*/true);
    if (!temps) {
      co_return ioFailure(StoreStatus::failure, "open " + (root_ / kTempDir).string(),
                          temps.error());
    }
    impl_->temps = std::move(*temps);
  }
  Temp temp;
  std::error_code last;
  for (int attempt = 0; attempt < kMaxTempNameAttempts && !temp.file.isOpen(); ++attempt) {
    char suffix[17];
    std::snprintf(suffix, sizeof suffix, "%016llx",
                  static_cast<unsigned long long>(impl_->names()));
    temp.name = "obj." + std::to_string(::getpid()) + "." + suffix;
    auto f = io::File::openBeneath(impl_->temps, temp.name, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (f) {
      temp.file = std::move(*f);
    } else {
      last = f.error();
      if (last != std::errc::file_exists) break;
    }
  }
  if (!temp.file.isOpen()) {
    co_return ioFailure(StoreStatus::failure,
                        "create a temporary file in " + (root_ / kTempDir).string(), last);
  }
  // Held until the file is linked or renamed and unlinked: a reclaimer never takes it.
  if (::flock(temp.file.fd(), LOCK_EX | LOCK_NB) != 0) {
    auto e = io::lastErrno();
    ::unlinkat(impl_->temps.fd(), temp.name.c_str(), 0);
    co_return ioFailure(StoreStatus::failure, "lock " + temp.name, e);
  }
  auto wrote = co_await uring_.write(temp.file.fd(), bytes, 0);
  io::IoResult<void> synced = wrote;
  if (wrote) synced = co_await uring_.fsync(temp.file.fd());
  if (!synced) {
    ::unlinkat(impl_->temps.fd(), temp.name.c_str(), 0);
    co_return ioFailure(StoreStatus::failure, "write " + temp.name, synced.error());
  }
  co_return temp;
}

asio::awaitable<StoreResult<std::string>> DirectoryStore::putIfAbsent(std::string key,
                                                                      ByteView bytes) {
  co_return co_await create(std::move(key), bytes, sha256(bytes));
}

// As S3 does with x-amz-content-sha256, bytes that do not match the digest given for them are
// refused. The check is the hash the ETag needs anyway.
asio::awaitable<StoreResult<std::string>> DirectoryStore::putIfAbsentHashed(std::string key,
                                                                            ByteView bytes,
                                                                            Digest digest) {
  if (!isValidObjectKey(key)) co_return badKey(key);
  if (sha256(bytes) != digest) {
    co_return storeFail(StoreStatus::failure,
                        key + ": the bytes do not match the SHA-256 given for them");
  }
  co_return co_await create(std::move(key), bytes, digest);
}

asio::awaitable<StoreResult<std::string>> DirectoryStore::create(std::string key, ByteView bytes,
                                                                 Digest digest) {
  if (!isValidObjectKey(key)) co_return badKey(key);
  KeyPath at = splitKey(key);
  auto parent = io::openDirectoryBeneath(impl_->root, at.parent, /*create=*/true);
  if (!parent) co_return ioFailure(StoreStatus::failure, "directory of " + key, parent.error());
  auto temp = co_await writeTemp(bytes);
  if (!temp) co_return failureOf(temp);
  // link(2) never follows or replaces what is at the key: a symbolic link there is EEXIST.
  int linked = ::linkat(impl_->temps.fd(), temp->name.c_str(), parent->fd(), at.name.c_str(), 0);
  auto linkError = io::lastErrno();
  ::unlinkat(impl_->temps.fd(), temp->name.c_str(), 0);
  if (linked != 0) {
    if (linkError == std::errc::file_exists) {
      co_return storeFail(StoreStatus::preconditionFailed, key + " already exists");
    }
    co_return ioFailure(StoreStatus::failure, "link " + key, linkError);
  }
  if (auto s = co_await syncFd(uring_, *parent); !s) {
    co_return ioFailure(StoreStatus::uncertain, "fsync directory of " + key, s.error());
  }
  co_return etagOf(digest);
}

// Held while alive: the flock is released when `file` closes, then the mutex.
struct DirectoryStore::WriteLock {
  AsyncMutex::Guard guard;
  io::File file;
};

asio::awaitable<StoreResult<DirectoryStore::WriteLock>> DirectoryStore::lockWrites(
    std::optional<std::chrono::steady_clock::time_point> until) {
  // One writer at a time: coroutines of this process queue on the mutex; other processes are
  // excluded by the flock, taken without blocking the thread.
  WriteLock held{co_await impl_->casMutex.lock(), io::File{}};
  auto lockFile = io::File::openBeneath(impl_->root, kLockFile, O_RDWR | O_CREAT, 0644);
  if (!lockFile) co_return ioFailure(StoreStatus::failure, "open lock", lockFile.error());
  asio::steady_timer pause(co_await asio::this_coro::executor);
  for (int attempt = 0;; ++attempt) {
    if (::flock(lockFile->fd(), LOCK_EX | LOCK_NB) == 0) break;
    const bool late = until && std::chrono::steady_clock::now() + kLockPause > *until;
    if (errno != EWOULDBLOCK || attempt + 1 >= kLockAttempts || late) {
      co_return storeFail(
          late ? StoreStatus::preconditionFailed : StoreStatus::failure,
          "cannot take the write lock of " + root_.string() + (late ? " in time" : ""));
    }
    pause.expires_after(kLockPause);
    co_await pause.async_wait(asio::use_awaitable);
  }
  held.file = std::move(*lockFile);
  co_return held;
}

asio::awaitable<StoreResult<std::string>> DirectoryStore::putIfMatch(std::string key,
                                                                     ByteView bytes,
                                                                     std::string etag) {
  if (!isValidObjectKey(key)) co_return badKey(key);
  auto lock = co_await lockWrites(std::nullopt);
  if (!lock) co_return failureOf(lock);
  auto current = co_await get(key, kMaxObjectBytes);
  if (!current) {
    if (current.error().status == StoreStatus::missing) {
      co_return storeFail(StoreStatus::preconditionFailed, key + " does not exist");
    }
    co_return failureOf(current);
  }
  if (current->etag != etag) {
    co_return storeFail(StoreStatus::preconditionFailed,
                        key + " has ETag " + current->etag + ", not " + etag);
  }
  co_return co_await replace(key, bytes);
}

asio::awaitable<StoreResult<std::string>> DirectoryStore::replace(const std::string& key,
                                                                  ByteView bytes) {
  KeyPath at = splitKey(key);
  auto parent = io::openDirectoryBeneath(impl_->root, at.parent, /*create=*/true);
  if (!parent) co_return ioFailure(StoreStatus::failure, "directory of " + key, parent.error());
  // rename(2) replaces a symbolic link itself, not its target; still, what is at the key must
  // be an object (or nothing), never something else of the directory's.
  if (auto existing = regularOrAbsent(*parent, at.name); !existing) {
    co_return ioFailure(StoreStatus::failure, key, existing.error());
  }
  auto temp = co_await writeTemp(bytes);
  if (!temp) co_return failureOf(temp);
  if (::renameat(impl_->temps.fd(), temp->name.c_str(), parent->fd(), at.name.c_str()) != 0) {
    auto e = io::lastErrno();
    ::unlinkat(impl_->temps.fd(), temp->name.c_str(), 0);
    co_return ioFailure(StoreStatus::failure, "rename over " + key, e);
  }
  if (auto s = co_await syncFd(uring_, *parent); !s) {
    co_return ioFailure(StoreStatus::uncertain, "fsync directory of " + key, s.error());
  }
  co_return etagOf(bytes);
}

// Under the write lock: a fenced delete of the key either finished before (the rename then
// creates the object again) or sees the new modification time and leaves it.
asio::awaitable<StoreResult<std::string>> DirectoryStore::rewrite(std::string key, ByteView bytes) {
  if (!isValidObjectKey(key)) co_return badKey(key);
  auto lock = co_await lockWrites(std::nullopt);
  if (!lock) co_return failureOf(lock);
  co_return co_await replace(key, bytes);
}

asio::awaitable<StoreResult<void>> DirectoryStore::remove(std::string key) {
  if (!isValidObjectKey(key)) co_return badKey(key);
  KeyPath at = splitKey(key);
  auto parent = io::openDirectoryBeneath(impl_->root, at.parent, /*create=*/false);
  if (!parent) {
    if (isAbsence(parent.error())) co_return StoreResult<void>{};
    co_return ioFailure(StoreStatus::failure, "delete " + key, parent.error());
  }
  auto existing = regularOrAbsent(*parent, at.name);
  if (!existing) co_return ioFailure(StoreStatus::failure, "delete " + key, existing.error());
  if (!*existing) co_return StoreResult<void>{};
  co_return co_await unlinkDurably(uring_, *parent, at.name, key);
}

asio::awaitable<StoreResult<void>> DirectoryStore::removeFenced(std::string key,
                                                                DeleteFence fence) {
  if (!isValidObjectKey(key)) co_return badKey(key);
  auto lock = co_await lockWrites(fence.sendBy);
  if (!lock) co_return failureOf(lock);
  co_return co_await unlinkIfUnchanged(key, fence);
}

asio::awaitable<StoreResult<void>> DirectoryStore::unlinkIfUnchanged(const std::string& key,
                                                                     const DeleteFence& fence) {
  if (std::chrono::steady_clock::now() > fence.sendBy) {
    co_return storeFail(StoreStatus::preconditionFailed,
                        key + " was not deleted: its DELETE came after its deadline");
  }
  KeyPath at = splitKey(key);
  auto parent = io::openDirectoryBeneath(impl_->root, at.parent, /*create=*/false);
  if (!parent) {
    if (isAbsence(parent.error())) co_return StoreResult<void>{};
    co_return ioFailure(StoreStatus::failure, "delete " + key, parent.error());
  }
  struct stat st {};
  if (::fstatat(parent->fd(), at.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) co_return StoreResult<void>{};
    co_return ioFailure(StoreStatus::failure, "delete " + key, io::lastErrno());
  }
  if (!S_ISREG(st.st_mode)) {
    co_return ioFailure(
        StoreStatus::failure, "delete " + key,
        io::fileError(S_ISLNK(st.st_mode) ? io::FileErrc::symbolicLink : io::FileErrc::notRegular));
  }
  if (st.st_mtim.tv_sec != fence.modifiedUnixSeconds) {
    co_return storeFail(StoreStatus::preconditionFailed,
                        key + " was not deleted: written again since it was judged (modified " +
                            std::to_string(st.st_mtim.tv_sec) + ", not " +
                            std::to_string(fence.modifiedUnixSeconds) + ")");
  }
  co_return co_await unlinkDurably(uring_, *parent, at.name, key);
}

asio::awaitable<StoreResult<ListPage>> DirectoryStore::list(std::string prefix,
                                                            std::string continuation, int maxKeys) {
  maxKeys = std::clamp(maxKeys, 1, kMaxListPage);
  std::vector<ObjectInfo> all;
  if (auto ok = collect(impl_->root, "", 0, prefix, continuation, all); !ok) {
    co_return storeFail(StoreStatus::failure, "list " + root_.string() + ": " + ok.error());
  }
  std::sort(all.begin(), all.end(),
            [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
  ListPage page;
  if (all.size() > static_cast<std::size_t>(maxKeys)) {
    all.resize(maxKeys);
    page.continuation = all.back().key;
  }
  page.objects = std::move(all);
  co_return page;
}

// Temporary files whose writer is gone: no flock on them (a writer holds one from just after
// it creates its file until it has unlinked it), and older than kMinLeftoverAgeSeconds (the
// moment between create and flock).
asio::awaitable<StoreResult<LeftoverUsage>> DirectoryStore::leftovers(bool reclaim) {
  LeftoverUsage usage;
  auto temps = io::openDirectoryBeneath(impl_->root, kTempDir, /*create=*/false);
  if (!temps) {
    if (isAbsence(temps.error())) co_return usage;
    co_return ioFailure(StoreStatus::failure, "open " + (root_ / kTempDir).string(), temps.error());
  }
  std::vector<std::string> names;
  {
    const int copy = ::dup(temps->fd());
    DIR* stream = copy < 0 ? nullptr : ::fdopendir(copy);
    if (stream == nullptr) {
      if (copy >= 0) ::close(copy);
      co_return ioFailure(StoreStatus::failure, "list " + (root_ / kTempDir).string(),
                          io::lastErrno());
    }
    while (dirent* e = ::readdir(stream)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(std::move(name));
    }
    ::closedir(stream);
  }
  const std::int64_t now = unixSecondsNow();
  for (const std::string& name : names) {
    auto f = io::File::openBeneath(*temps, name, O_RDONLY);
    if (!f) {
      if (isAbsence(f.error())) continue;  // linked and removed meanwhile
      ++usage.inUse;                       // not a file of ours to judge
      continue;
    }
    struct stat st {};
    if (::fstat(f->fd(), &st) != 0 || now - st.st_mtim.tv_sec < kMinLeftoverAgeSeconds ||
        ::flock(f->fd(), LOCK_EX | LOCK_NB) != 0) {
      ++usage.inUse;
      continue;
    }
    ++usage.files;
    usage.bytes += static_cast<std::uint64_t>(st.st_size);
    if (reclaim && ::unlinkat(temps->fd(), name.c_str(), 0) == 0) ++usage.reclaimed;
  }
  co_return usage;
}

}  // namespace cairn
