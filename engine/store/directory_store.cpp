#include "engine/store/directory_store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <chrono>
#include <system_error>

#include "base/sha256.hpp"
#include "engine/async.hpp"
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

std::string etagOf(const Digest& digest) { return "\"" + toHex(digest) + "\""; }
std::string etagOf(ByteView bytes) { return etagOf(sha256(bytes)); }

Failure<StoreOutcome> ioFailure(StoreStatus status, const std::string& what,
                                const std::error_code& ec) {
  return storeFail(status, what + ": " + ec.message());
}

Failure<StoreOutcome> badKey(const std::string& key) {
  return storeFail(StoreStatus::failure, "invalid object key \"" + key + "\"");
}

// fsyncs a directory through the ring.
asio::awaitable<io::IoResult<void>> syncDir(io::Uring& uring, const fs::path& dir) {
  auto d = io::File::open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (!d) co_return Failure<std::error_code>{d.error()};
  co_return co_await uring.fsync(d->fd());
}

}  // namespace

struct DirectoryStore::Impl {
  AsyncMutex casMutex;
  std::atomic<std::uint64_t> tempCounter{0};
};

DirectoryStore::DirectoryStore(io::Uring& uring, fs::path root)
    : uring_(uring), root_(std::move(root)), impl_(std::make_unique<Impl>()) {}
DirectoryStore::~DirectoryStore() = default;

Result<std::unique_ptr<DirectoryStore>, std::string> DirectoryStore::open(io::Uring& uring,
                                                                          fs::path root) {
  std::error_code ec;
  fs::create_directories(root / kTempDir, ec);
  if (ec) return Failure<std::string>{"cannot create " + root.string() + ": " + ec.message()};
  return std::unique_ptr<DirectoryStore>(new DirectoryStore(uring, std::move(root)));
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
  auto f = io::File::open(root_ / key, O_RDONLY | O_CLOEXEC);
  if (!f) {
    if (f.error() == std::errc::no_such_file_or_directory ||
        f.error() == std::errc::not_a_directory) {
      co_return storeFail(StoreStatus::missing, key + " does not exist");
    }
    co_return ioFailure(StoreStatus::failure, "open " + key, f.error());
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
  if (*n != *size) co_return storeFail(StoreStatus::failure, key + " changed while being read");
  // One more byte would mean the file grew: objects are replaced by rename, never extended.
  out.etag = etagOf(out.bytes);
  co_return out;
}

asio::awaitable<StoreResult<ObjectInfo>> DirectoryStore::head(std::string key) {
  if (!isValidObjectKey(key)) co_return badKey(key);
  auto object = co_await get(key, kMaxObjectBytes);
  if (!object) co_return Failure<StoreOutcome>{object.error()};
  struct stat st {};
  ObjectInfo info{key, object->bytes.size(), object->etag, 0};
  if (::stat((root_ / key).c_str(), &st) == 0) info.modifiedUnixSeconds = st.st_mtim.tv_sec;
  co_return info;
}

asio::awaitable<StoreResult<fs::path>> DirectoryStore::writeTemp(ByteView bytes) {
  fs::path temp =
      root_ / kTempDir /
      ("obj." + std::to_string(::getpid()) + "." + std::to_string(++impl_->tempCounter));
  auto f = io::File::open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (!f) co_return ioFailure(StoreStatus::failure, "create " + temp.string(), f.error());
  auto wrote = co_await uring_.write(f->fd(), bytes, 0);
  io::IoResult<void> synced = wrote;
  if (wrote) synced = co_await uring_.fsync(f->fd());
  if (!synced) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    co_return ioFailure(StoreStatus::failure, "write " + temp.string(), synced.error());
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
  fs::path target = root_ / key;
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  if (ec) co_return ioFailure(StoreStatus::failure, "create directory for " + key, ec);
  auto temp = co_await writeTemp(bytes);
  if (!temp) co_return Failure<StoreOutcome>{temp.error()};
  int linked = ::link(temp->c_str(), target.c_str());
  auto linkError = io::lastErrno();
  fs::remove(*temp, ec);
  if (linked != 0) {
    if (linkError == std::errc::file_exists) {
      co_return storeFail(StoreStatus::preconditionFailed, key + " already exists");
    }
    co_return ioFailure(StoreStatus::failure, "link " + key, linkError);
  }
  if (auto s = co_await syncDir(uring_, target.parent_path()); !s) {
    co_return ioFailure(StoreStatus::uncertain, "fsync directory of " + key, s.error());
  }
  co_return etagOf(digest);
}

asio::awaitable<StoreResult<std::string>> DirectoryStore::putIfMatch(std::string key,
                                                                     ByteView bytes,
                                                                     std::string etag) {
  if (!isValidObjectKey(key)) co_return badKey(key);
  // One writer at a time: coroutines of this process queue on the mutex; other processes are
  // excluded by the flock, taken without blocking the thread.
  auto guard = co_await impl_->casMutex.lock();
  auto lockFile = io::File::open(root_ / kLockFile, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (!lockFile) co_return ioFailure(StoreStatus::failure, "open lock", lockFile.error());
  asio::steady_timer pause(co_await asio::this_coro::executor);
  for (int attempt = 0;; ++attempt) {
    if (::flock(lockFile->fd(), LOCK_EX | LOCK_NB) == 0) break;
    if (errno != EWOULDBLOCK || attempt + 1 >= kLockAttempts) {
      co_return storeFail(StoreStatus::failure,
                          "cannot take the compare-and-swap lock of " + root_.string());
    }
    pause.expires_after(kLockPause);
    co_await pause.async_wait(asio::use_awaitable);
  }
  // The flock is released when lockFile closes, at the end of this scope.
  auto current = co_await get(key, kMaxObjectBytes);
  if (!current) {
    if (current.error().status == StoreStatus::missing) {
      co_return storeFail(StoreStatus::preconditionFailed, key + " does not exist");
    }
    co_return Failure<StoreOutcome>{current.error()};
  }
  if (current->etag != etag) {
    co_return storeFail(StoreStatus::preconditionFailed,
                        key + " has ETag " + current->etag + ", not " + etag);
  }
  co_return co_await replace(key, bytes);
}

asio::awaitable<StoreResult<std::string>> DirectoryStore::replace(const std::string& key,
                                                                  ByteView bytes) {
  auto temp = co_await writeTemp(bytes);
  if (!temp) co_return Failure<StoreOutcome>{temp.error()};
  fs::path target = root_ / key;
  if (::rename(temp->c_str(), target.c_str()) != 0) {
    auto e = io::lastErrno();
    std::error_code ignored;
    fs::remove(*temp, ignored);
    co_return ioFailure(StoreStatus::failure, "rename over " + key, e);
  }
  if (auto s = co_await syncDir(uring_, target.parent_path()); !s) {
    co_return ioFailure(StoreStatus::uncertain, "fsync directory of " + key, s.error());
  }
  co_return etagOf(bytes);
}

asio::awaitable<StoreResult<std::string>> DirectoryStore::rewrite(std::string key, ByteView bytes) {
  if (!isValidObjectKey(key)) co_return badKey(key);
  std::error_code ec;
  fs::create_directories((root_ / key).parent_path(), ec);
  if (ec) co_return ioFailure(StoreStatus::failure, "create directory for " + key, ec);
  co_return co_await replace(key, bytes);
}

asio::awaitable<StoreResult<void>> DirectoryStore::remove(std::string key) {
  if (!isValidObjectKey(key)) co_return badKey(key);
  fs::path target = root_ / key;
  if (::unlink(target.c_str()) != 0) {
    auto e = io::lastErrno();
    if (e == std::errc::no_such_file_or_directory || e == std::errc::not_a_directory) {
      co_return StoreResult<void>{};
    }
    co_return ioFailure(StoreStatus::failure, "delete " + key, e);
  }
  if (auto s = co_await syncDir(uring_, target.parent_path()); !s) {
    co_return ioFailure(StoreStatus::uncertain, "fsync directory after deleting " + key, s.error());
  }
  co_return StoreResult<void>{};
}

asio::awaitable<StoreResult<ListPage>> DirectoryStore::list(std::string prefix,
                                                            std::string continuation, int maxKeys) {
  maxKeys = std::clamp(maxKeys, 1, kMaxListPage);
  std::vector<ObjectInfo> all;
  std::error_code ec;
  fs::recursive_directory_iterator it(root_, ec), end;
  if (ec) co_return ioFailure(StoreStatus::failure, "list " + root_.string(), ec);
  for (; it != end; it.increment(ec)) {
    if (ec) co_return ioFailure(StoreStatus::failure, "list " + root_.string(), ec);
    std::string name = it->path().filename().string();
    if (!name.empty() && name.front() == '.') {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file()) continue;
    std::string key = fs::relative(it->path(), root_).generic_string();
    if (key.compare(0, prefix.size(), prefix) != 0 || key <= continuation) continue;
    struct stat st {};
    if (::stat(it->path().c_str(), &st) != 0) continue;  // removed meanwhile
    all.push_back(ObjectInfo{key, static_cast<std::uint64_t>(st.st_size), "", st.st_mtim.tv_sec});
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

}  // namespace cairn
