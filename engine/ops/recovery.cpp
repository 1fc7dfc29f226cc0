#include "engine/ops/recovery.hpp"

#include <fcntl.h>

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

Failure<Error> ioFail(const std::string& what, const std::filesystem::path& p, std::error_code ec) {
  return Failure<Error>{Error{Errc::io, "cannot " + what + " " + p.string() + ": " + ec.message()}};
}

// Removes the files it names when it goes out of scope, unless disarmed: nothing of a failed
// recovery stays behind, whichever step failed, before the journal is in place or after.
// Only the names recovery writes are removed, never anything else found in the directory.
class RemoveUnlessKept {
 public:
  explicit RemoveUnlessKept(std::vector<std::filesystem::path> paths) : paths_(std::move(paths)) {}
  ~RemoveUnlessKept() {
    if (!armed_) return;
    for (const auto& path : paths_) {
      std::error_code ignored;
      if (!std::filesystem::is_directory(std::filesystem::symlink_status(path, ignored))) {
        std::filesystem::remove(path, ignored);
      }
    }
  }
  RemoveUnlessKept(const RemoveUnlessKept&) = delete;
  RemoveUnlessKept& operator=(const RemoveUnlessKept&) = delete;
  void keep() { armed_ = false; }

 private:
  std::vector<std::filesystem::path> paths_;
  bool armed_ = true;
};

// Step 2: the journal's bytes (the header from the manifest, then each segment's body) into
// `temp`, fsynced; each segment is fetched again and checked again (it could have changed
// since it was verified). Returns the bytes written and their SHA-256.
struct Written {
  std::uint64_t bytes = 0;
  Digest sha256{};
};
asio::awaitable<Res<Written>> writeJournal(ObjectStore& store, const Uuid& ns, const Manifest& m,
                                           const std::filesystem::path& temp, EngineLimits& limits,
                                           OperationBudget& budget, Recovered& out) {
  auto file = io::File::open(temp, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (!file) co_return ioFail("create", temp, file.error());
  Sha256 hash;
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
    CAIRN_CO_TRY(put(ByteView(object->bytes).subspan(limits::kSegmentHeaderBytes)));
    ++out.objects;
  }
  if (auto s = file->syncNow(); !s) co_return ioFail("fsync", temp, s.error());
  if (auto c = file->close(); !c) co_return ioFail("close", temp, c.error());
  w.sha256 = hash.finish();
  co_return w;
}

// Step 5: what the directory is now: a continuation of the namespace (the publisher state,
// with the recovered head expected) or a read copy (the journal-only marker).
asio::awaitable<Res<void>> markDirectory(io::Uring& uring, const std::filesystem::path& dir,
                                         const RecoverRequest& request, const Chosen& chosen,
                                         const Digest& lineage) {
  const Head& head = chosen.head;
  if (!request.writable) {
    const std::string note = "a read copy of head " + toHex(head.id()) + " (cairn recover)\n";
    auto marked = co_await io::durableReplace(uring, dir / kJournalOnlyFile, asBytes(note));
    if (!marked) co_return ioFail("write", dir / kJournalOnlyFile, marked.error());
    co_return Res<void>{};
  }
  PublisherState state;
  state.storeUrl = request.storeUrl;
  state.ns = request.ns;
  state.publisher = head.fields().publisher;
  state.lineage = lineage;
  state.expected = ExpectedHead{head, chosen.etag};
  auto bytes = encodePublisherState(state);
  if (!bytes) co_return failureOf(bytes);
  auto written = co_await io::durableReplace(uring, dir / kPublisherStateFile, *bytes);
  if (!written) co_return ioFail("write", dir / kPublisherStateFile, written.error());
  co_return Res<void>{};
}

}  // namespace

asio::awaitable<Res<Recovered>> recoverDatabase(io::Uring& uring, ObjectStore& store,
                                                const std::filesystem::path& dir,
                                                const RecoverRequest& request, EngineLimits& limits,
                                                OperationBudget& budget) {
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_empty(dir, ec)) {
    co_return err(Errc::usage, dir.string() + " is not empty: recovery writes a fresh directory");
  }
  if (request.ns.isNil()) co_return err(Errc::usage, "the namespace must not be the nil UUID");
  // The store's recorded form (absolute), and never one that overlaps the directory.
  auto storeUrl = recordedStoreUrl(request.storeUrl, dir);
  if (!storeUrl) co_return err(Errc::usage, storeUrl.error());
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
  // 1. The whole graph, every byte, before anything is written.
  VerifyOptions deep;
  deep.deep = true;
  auto graph = co_await verifyHeadGraph(store, head, nullptr, limits, budget, deep);
  if (!graph) co_return failureOf(graph);
  // 2. The journal, into a temp file beside the target (removed on any failure).
  std::filesystem::create_directories(dir, ec);
  if (ec) co_return ioFail("create", dir, ec);
  const auto target = dir / Journal::kFileName;
  const auto temp = dir / (std::string(Journal::kFileName) + ".recovering");
  // Declared before the journal is opened, so that the journal is closed when it removes.
  RemoveUnlessKept guard({temp, target, dir / io::DirectoryLock::kFileName, dir / kJournalOnlyFile,
                          dir / kPublisherStateFile});
  Recovered out;
  out.head = head;
  out.objects = graph->objects;
  auto written =
      co_await writeJournal(store, request.ns, graph->manifest, temp, limits, budget, out);
  if (!written) co_return failureOf(written);
  // 3. The written bytes are exactly the head's prefix, or nothing is put in place.
  if (written->bytes != head.fields().prefixLength ||
      written->sha256 != head.fields().prefixSha256) {
    co_return err(Errc::corrupt,
                  "the rebuilt journal differs from head " + toHex(head.id()) + "'s prefix");
  }
  std::filesystem::rename(temp, target, ec);
  if (ec) co_return ioFail("rename", temp, ec);
  if (auto s = io::syncDirectory(dir); !s) co_return ioFail("fsync", dir, s.error());
  out.bytes = written->bytes;
  // 4. It opens as a journal whose end is the head's cutoff.
  auto journal = co_await Journal::open(uring, dir);
  if (!journal) co_return failureOf(journal);
  if ((*journal)->endSequence() != head.fields().prefixSequence) {
    co_return err(Errc::corrupt, "the rebuilt journal ends at sequence " +
                                     std::to_string((*journal)->endSequence()) + ", not " +
                                     std::to_string(head.fields().prefixSequence));
  }
  // 5. What the directory is now.
  RecoverRequest recorded = request;
  recorded.storeUrl = std::move(*storeUrl);
  CAIRN_CO_TRY(co_await markDirectory(uring, dir, recorded, *chosen, (*journal)->lineage()));
  guard.keep();
  co_return out;
}

}  // namespace cairn
