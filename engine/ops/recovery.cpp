#include "engine/ops/recovery.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <vector>

#include "base/sha256.hpp"
#include "engine/format/keys.hpp"
#include "engine/format/publisher_state.hpp"
#include "engine/format/segment.hpp"
#include "engine/graph/heads.hpp"
#include "engine/graph/verifier.hpp"
#include "engine/journal/journal.hpp"
#include "engine/store/object_store.hpp"
#include "engine/store/store_errors.hpp"
#include "engine/store/store_url.hpp"
#include "io/file.hpp"
#include "io/lock.hpp"
#include "io/uring.hpp"

namespace cairn {

namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace {

struct Chosen {
  Head head;
  std::string etag;  // of the current head object (empty for an immutable copy)
  bool current = false;
};

// The current head, or exactly the head `id` (the current one, or its immutable copy).
asio::awaitable<Res<Chosen>> chooseHead(ObjectStore& store, const Uuid& ns,
                                        const std::optional<Digest>& id, OperationBudget& budget) {
  const std::string key = keys::currentHead(ns);
  auto seen = co_await observeHead(store, ns, budget);
  if (!seen) co_return failureOf(seen);
  if (seen->malformed()) co_return Failure<Error>{Error{Errc::format, seen->damage, key}};
  if (!id) {
    if (seen->missing()) {
      co_return Failure<Error>{Error{Errc::missing,
                                     key + ": the namespace has no current head (give --head to "
                                           "recover an exact older one)",
                                     key}};
    }
    co_return Chosen{*seen->head, seen->etag, true};
  }
  if (seen->head && seen->head->id() == *id) co_return Chosen{*seen->head, seen->etag, true};
  auto copy = co_await readHeadCopy(store, ns, HeadReference{*id, limits::kHeadBytes}, budget);
  if (!copy) co_return failureOf(copy);
  if (!*copy) {
    const std::string copyKey = keys::headCopy(ns, *id);
    co_return Failure<Error>{Error{Errc::missing, copyKey + " does not exist", copyKey}};
  }
  co_return Chosen{std::move(**copy), {}, false};
}

// The head the request names, if the request may recover it.
asio::awaitable<Res<Chosen>> chooseRequested(ObjectStore& store, const RecoverRequest& request,
                                             OperationBudget& budget) {
  if (request.ns.isNil()) co_return err(Errc::usage, "the namespace must not be the nil UUID");
  auto chosen = co_await chooseHead(store, request.ns, request.headId, budget);
  if (!chosen) co_return failureOf(chosen);
  const Head& head = chosen->head;
  if (request.writable && !chosen->current) {
    co_return err(Errc::usage,
                  "writable recovery continues the namespace from its current head; head " +
                      toHex(head.id()) + " is not current");
  }
  if (head.fields().ns != request.ns) {
    co_return err(Errc::binding, "head " + toHex(head.id()) + " belongs to another namespace");
  }
  co_return chosen;
}

Failure<Error> ioFail(const std::string& what, const fs::path& p, std::error_code ec) {
  return Failure<Error>{Error{Errc::io, "cannot " + what + " " + p.string() + ": " + ec.message()}};
}

// Files an interrupted recovery may leave beside its unfinished journal, and the most of them
// the next one removes (more is not what a recovery leaves: the directory is refused).
constexpr std::size_t kMaxLeftovers = 16;

// What a recovery writes before its journal is in place: the journal itself, the marker or
// the publisher state, and the temporaries of their durable replaces.
bool writtenByRecovery(const std::string& name) {
  auto temporaryOf = [&name](const std::string& file) {
    return name.rfind(file + ".tmp.", 0) == 0;  // io::durableReplace's FILE.tmp.PID.N
  };
  return name == kRecoveringFileName || name == kPublisherStateFile || name == kJournalOnlyFile ||
         temporaryOf(kPublisherStateFile) || temporaryOf(kJournalOnlyFile);
}

Failure<Error> notEmpty(const fs::path& dir) {
  return err(Errc::usage, dir.string() + " is not empty: recovery writes a fresh directory");
}

// What DIR holds besides its lock file: nothing (or no DIR), or an interrupted recovery (its
// journal.recovering, no journal, and only names a recovery writes: `leftovers`), or
// anything else (refused).
struct Occupancy {
  bool occupied = false;
  std::vector<fs::path> leftovers;
};
Res<Occupancy> inspect(const fs::path& dir) {
  Occupancy seen;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return seen;
  bool recovering = false;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name == io::DirectoryLock::kFileName) continue;
    if (!writtenByRecovery(name) || seen.leftovers.size() == kMaxLeftovers) {
      seen.occupied = true;
      return seen;
    }
    recovering = recovering || name == kRecoveringFileName;
    seen.leftovers.push_back(it->path());
  }
  if (ec) return ioFail("list", dir, ec);
  seen.occupied = !seen.leftovers.empty() && !recovering;
  return seen;
}

// Step 2: DIR, created if absent and locked to the end of the recovery (no init, ingest or
// other recovery can write it meanwhile). Under the lock it must still be fresh; what an
// interrupted recovery left is removed.
Res<io::DirectoryLock> claimDirectory(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return ioFail("create", dir, ec);
  auto lock = lockDatabaseDirectory(dir, /*shared=*/false);
  if (!lock) return failureOf(lock);
  auto seen = inspect(dir);
  if (!seen) return failureOf(seen);
  if (seen->occupied) return notEmpty(dir);
  for (const fs::path& leftover : seen->leftovers) {
    if (!fs::remove(leftover, ec) && ec) return ioFail("remove", leftover, ec);
  }
  if (!seen->leftovers.empty()) {
    if (auto s = io::syncDirectory(dir); !s) return ioFail("fsync", dir, s.error());
  }
  return std::move(*lock);
}

// The files this recovery created, each known by the device and inode it had when it was
// made: unless kept, exactly those are removed when it goes out of scope (before the lock is
// released), whichever step failed. A file another process put under the same name is not
// one of them; the lock file and the directory are never removed.
class CreatedFiles {
 public:
  CreatedFiles() = default;
  CreatedFiles(const CreatedFiles&) = delete;
  CreatedFiles& operator=(const CreatedFiles&) = delete;
  ~CreatedFiles() {
    if (kept_) return;
    for (const Entry& e : entries_) {
      struct stat now {};
      if (::lstat(e.path.c_str(), &now) == 0 && now.st_dev == e.dev && now.st_ino == e.ino) {
        std::error_code ignored;
        fs::remove(e.path, ignored);
      }
    }
  }
  // `path` was just created by this recovery.
  Res<void> add(const fs::path& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
      return ioFail("stat", path, std::error_code(errno, std::generic_category()));
    }
    entries_.push_back(Entry{path, st.st_dev, st.st_ino});
    return {};
  }
  // A created file was renamed.
  void renamed(const fs::path& from, const fs::path& to) {
    for (Entry& e : entries_) {
      if (e.path == from) e.path = to;
    }
  }
  void keep() { kept_ = true; }

 private:
  struct Entry {
    fs::path path;
    dev_t dev;
    ino_t ino;
  };
  std::vector<Entry> entries_;  // a handful: the journal and the marker or state
  bool kept_ = false;
};

// Step 3: the journal's bytes (the header from the manifest, then each segment's body) into
// `temp`, fsynced; each segment is fetched again and checked again (it could have changed
// since it was verified). Returns the bytes written, their SHA-256, and their frames, scanned
// as they are written.
struct Written {
  std::uint64_t bytes = 0;
  Digest sha256{};
  std::uint64_t frames = 0;  // whole, valid frames after the header, ending at `bytes`
};
asio::awaitable<Res<Written>> writeJournal(ObjectStore& store, const Uuid& ns, const Manifest& m,
                                           const fs::path& temp, CreatedFiles& created,
                                           EngineLimits& limits, OperationBudget& budget,
                                           Recovered& out) {
  auto file = io::File::open(temp, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (!file) co_return ioFail("create", temp, file.error());
  CAIRN_CO_TRY(created.add(temp));
  Sha256 hash;
  FrameScanner frames(m.journalHeader.size(), 1);
  Written w;
  auto put = [&](ByteView bytes) -> Res<void> {
    if (auto r = file->writeAllAt(bytes, w.bytes); !r) return ioFail("write", temp, r.error());
    hash.update(bytes);
    w.bytes += bytes.size();
    return {};
  };
  CAIRN_CO_TRY(put(m.journalHeader));
  for (const ManifestSegment& s : m.segments) {
    const std::string key = keys::segment(ns, s.objectSha256);
    CAIRN_CO_TRY(budget.reserve(s.objectLength, s.count, 1, key));
    auto permit = co_await limits.bytes.acquire(s.objectLength);
    auto object = co_await store.get(key, s.objectLength);
    if (!object) co_return storeError(object.error(), key);
    if (sha256(object->bytes) != s.objectSha256 || !decodeSegment(object->bytes)) {
      co_return Failure<Error>{Error{Errc::corrupt, key + " changed after it was verified", key}};
    }
    const ByteView body = ByteView(object->bytes).subspan(limits::kSegmentHeaderBytes);
    if (auto scanned = frames.feed(body); !scanned) {
      co_return Failure<Error>{Error{Errc::corrupt, key + ": " + scanned.error().message, key}};
    }
    CAIRN_CO_TRY(put(body));
    ++out.objects;
  }
  if (auto s = file->syncNow(); !s) co_return ioFail("fsync", temp, s.error());
  if (auto c = file->close(); !c) co_return ioFail("close", temp, c.error());
  w.sha256 = hash.finish();
  w.frames = frames.atBoundary() && frames.position() == w.bytes ? frames.framesDone() : 0;
  co_return w;
}

// The written journal is exactly the head's prefix: its length and SHA-256, and whole frames
// that end at the head's cutoff.
Res<void> checkWritten(const Written& w, const Head& head) {
  const HeadFields& f = head.fields();
  if (w.bytes != f.prefixLength || w.sha256 != f.prefixSha256) {
    return err(Errc::corrupt,
               "the rebuilt journal differs from head " + toHex(head.id()) + "'s prefix");
  }
  if (w.frames != f.prefixSequence) {
    return err(Errc::corrupt, "the rebuilt journal ends at sequence " + std::to_string(w.frames) +
                                  ", not " + std::to_string(f.prefixSequence));
  }
  return {};
}

// Step 4: what the directory will be: a continuation of the namespace (the publisher state,
// with the recovered head expected) or a read copy (the journal-only marker). Written before
// the journal is in place, so that a journal is never found without it.
asio::awaitable<Res<void>> markDirectory(io::Uring& uring, const fs::path& dir,
                                         const RecoverRequest& request, const Chosen& chosen,
                                         const Digest& lineage, CreatedFiles& created) {
  const Head& head = chosen.head;
  Bytes bytes;
  fs::path path = dir / kJournalOnlyFile;
  if (!request.writable) {
    const std::string note = "a read copy of head " + toHex(head.id()) + " (cairn recover)\n";
    bytes.assign(note.begin(), note.end());
  } else {
    PublisherState state;
    state.storeUrl = request.storeUrl;
    state.ns = request.ns;
    state.publisher = head.fields().publisher;
    state.lineage = lineage;
    state.expected = ExpectedHead{head, chosen.etag};
    auto encoded = encodePublisherState(state);
    if (!encoded) co_return failureOf(encoded);
    bytes = std::move(*encoded);
    path = dir / kPublisherStateFile;
  }
  auto written = co_await io::durableReplace(uring, path, bytes);
  if (!written) {
    // The replace may have renamed the file into place before its directory's fsync failed:
    // the lock proved `path` absent, so a file there now is this run's, removed with the rest.
    if (::access(path.c_str(), F_OK) == 0) (void)created.add(path);
    co_return ioFail("write", path, written.error());
  }
  co_return created.add(path);
}

// Step 5: the journal put in place, never over one that is there (another process that
// ignored the lock): rename without replacing, or link and unlink where the file system has
// no such rename.
Res<void> putInPlace(const fs::path& from, const fs::path& to) {
  int rc = ::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE);
  if (rc != 0 && (errno == EINVAL || errno == ENOSYS)) {
    rc = ::link(from.c_str(), to.c_str());
    if (rc == 0) ::unlink(from.c_str());
  }
  if (rc == 0) return {};
  const std::error_code ec(errno, std::generic_category());
  if (ec == std::errc::file_exists) {
    return err(Errc::busy, to.string() +
                               " appeared while the journal was rebuilt; it is left "
                               "as it is and the rebuilt one removed");
  }
  return ioFail("rename", from, ec);
}

}  // namespace

asio::awaitable<Res<Recovered>> recoverDatabase(io::Uring& uring, ObjectStore& store,
                                                const fs::path& dir, const RecoverRequest& request,
                                                EngineLimits& limits, OperationBudget& budget) {
  auto fault = [&](std::string_view point) {
    if (request.fault) request.fault(point);
  };
  // An occupied directory is refused before anything is fetched (and checked again, under
  // its lock, before anything is written).
  auto early = inspect(dir);
  if (!early) co_return failureOf(early);
  if (early->occupied) co_return notEmpty(dir);
  // The store's recorded form (absolute), and never one that overlaps the directory.
  auto storeUrl = recordedStoreUrl(request.storeUrl, dir);
  if (!storeUrl) co_return err(Errc::usage, storeUrl.error());
  auto chosen = co_await chooseRequested(store, request, budget);
  if (!chosen) co_return failureOf(chosen);
  const Head& head = chosen->head;
  // 1. The whole graph, every byte, before anything is written.
  VerifyOptions deep;
  deep.deep = true;
  auto graph = co_await verifyHeadGraph(store, head, nullptr, limits, budget, deep);
  if (!graph) co_return failureOf(graph);
  // 2. The directory, locked from here to the end. Declared before `created`, so that what
  // this run created is removed while the lock is still held.
  auto lock = claimDirectory(dir);
  if (!lock) co_return failureOf(lock);
  fault("claimed");
  CreatedFiles created;
  const auto target = dir / Journal::kFileName;
  const auto temp = dir / kRecoveringFileName;
  Recovered out;
  out.head = head;
  out.objects = graph->objects;
  // 3. The journal, beside its place; exactly the head's prefix, or it goes no further.
  auto written =
      co_await writeJournal(store, request.ns, graph->manifest, temp, created, limits, budget, out);
  if (!written) co_return failureOf(written);
  CAIRN_CO_TRY(checkWritten(*written, head));
  out.bytes = written->bytes;
  fault("written");
  // 4. What the directory is.
  const Digest lineage = sha256(graph->manifest.journalHeader);
  RecoverRequest recorded = request;
  recorded.storeUrl = std::move(*storeUrl);
  CAIRN_CO_TRY(co_await markDirectory(uring, dir, recorded, *chosen, lineage, created));
  fault("marked");
  // 5. The journal in place: from here the directory is a recovered one.
  CAIRN_CO_TRY(putInPlace(temp, target));
  created.renamed(temp, target);
  if (auto s = io::syncDirectory(dir); !s) co_return ioFail("fsync", dir, s.error());
  created.keep();
  co_return out;
}

}  // namespace cairn
