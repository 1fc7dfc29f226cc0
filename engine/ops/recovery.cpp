#include "engine/ops/recovery.hpp"

#include <fcntl.h>

#include "base/sha256.hpp"
#include "engine/format/keys.hpp"
#include "engine/format/segment.hpp"
#include "engine/graph/verifier.hpp"
#include "engine/journal/journal.hpp"
#include "engine/publish/publisher.hpp"
#include "engine/store/object_store.hpp"
#include "engine/store/store_errors.hpp"
#include "io/file.hpp"
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
                                        const std::optional<Digest>& id) {
  std::string key = keys::currentHead(ns);
  auto got = co_await store.get(key, limits::kHeadBytes);
  if (!got && got.error().status != StoreStatus::missing) co_return storeError(got.error(), key);
  std::optional<Head> current;
  if (got) {
    auto h = decodeHead(got->bytes);
    if (!h) co_return Failure<Error>{Error{h.error().code, key + ": " + h.error().message, key}};
    current = std::move(*h);
  }
  if (!id) {
    if (!current) {
      co_return Failure<Error>{Error{Errc::missing,
                                     key + ": the namespace has no current head (give --head to "
                                           "recover an exact older one)",
                                     key}};
    }
    co_return Chosen{*current, got->etag, true};
  }
  if (current && current->id() == *id) co_return Chosen{*current, got->etag, true};
  std::string copyKey = keys::headCopy(ns, *id);
  auto copy = co_await store.get(copyKey, limits::kHeadBytes);
  if (!copy) co_return storeError(copy.error(), copyKey);
  auto h = decodeHead(copy->bytes, HeadReference{*id, limits::kHeadBytes});
  if (!h) {
    co_return Failure<Error>{Error{h.error().code, copyKey + ": " + h.error().message, copyKey}};
  }
  co_return Chosen{std::move(*h), {}, false};
}

Failure<Error> ioFail(const std::string& what, const std::filesystem::path& p, std::error_code ec) {
  return Failure<Error>{Error{Errc::io, "cannot " + what + " " + p.string() + ": " + ec.message()}};
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
  auto chosen = co_await chooseHead(store, request.ns, request.headId);
  if (!chosen) co_return Failure<Error>{chosen.error()};
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
  if (!graph) co_return Failure<Error>{graph.error()};
  const Manifest& m = graph->manifest;

  // 2. The journal: header, then each segment's body, into a temp file beside the target.
  std::filesystem::create_directories(dir, ec);
  if (ec) co_return ioFail("create", dir, ec);
  auto target = dir / Journal::kFileName;
  auto temp = dir / (std::string(Journal::kFileName) + ".recovering");
  auto cleanup = [&] {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
  };
  auto file = io::File::open(temp, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (!file) co_return ioFail("create", temp, file.error());
  Sha256 hash;
  std::uint64_t at = 0;
  auto put = [&](ByteView bytes) -> Res<void> {
    if (auto w = file->writeAllAt(bytes, at); !w) return ioFail("write", temp, w.error());
    hash.update(bytes);
    at += bytes.size();
    return {};
  };
  if (auto w = put(m.journalHeader); !w) {
    cleanup();
    co_return Failure<Error>{w.error()};
  }
  Recovered out;
  out.head = head;
  out.objects = graph->objects;
  for (const ManifestSegment& s : m.segments) {
    std::string key = keys::segment(request.ns, s.objectSha256);
    if (auto r = budget.reserve(s.objectLength, s.count, 1, key); !r) {
      cleanup();
      co_return Failure<Error>{r.error()};
    }
    auto permit = co_await limits.bytes.acquire(s.objectLength);
    auto object = co_await store.get(key, s.objectLength);
    if (!object) {
      cleanup();
      co_return storeError(object.error(), key);
    }
    // Checked again: the object could have changed between the two reads.
    auto decoded = decodeSegment(object->bytes);
    if (sha256(object->bytes) != s.objectSha256 || !decoded) {
      cleanup();
      co_return Failure<Error>{Error{Errc::corrupt, key + " changed after it was verified", key}};
    }
    auto w = put(ByteView(object->bytes).subspan(limits::kSegmentHeaderBytes));
    if (!w) {
      cleanup();
      co_return Failure<Error>{w.error()};
    }
    ++out.objects;
  }
  if (auto s = file->syncNow(); !s) {
    cleanup();
    co_return ioFail("fsync", temp, s.error());
  }
  if (auto c = file->close(); !c) {
    cleanup();
    co_return ioFail("close", temp, c.error());
  }
  // 3. The written bytes are exactly the head's prefix, or nothing is put in place.
  if (at != head.fields().prefixLength || hash.finish() != head.fields().prefixSha256) {
    cleanup();
    co_return err(Errc::corrupt,
                  "the rebuilt journal differs from head " + toHex(head.id()) + "'s prefix");
  }
  std::filesystem::rename(temp, target, ec);
  if (ec) {
    cleanup();
    co_return ioFail("rename", temp, ec);
  }
  if (auto s = io::syncDirectory(dir); !s) co_return ioFail("fsync", dir, s.error());
  out.bytes = at;

  // 4. It opens as a journal whose end is the head's cutoff.
  auto journal = co_await Journal::open(uring, dir);
  if (!journal) co_return Failure<Error>{journal.error()};
  if ((*journal)->endSequence() != head.fields().prefixSequence) {
    co_return err(Errc::corrupt, "the rebuilt journal ends at sequence " +
                                     std::to_string((*journal)->endSequence()) + ", not " +
                                     std::to_string(head.fields().prefixSequence));
  }
  if (request.writable) {
    PublisherState state;
    state.storeUrl = request.storeUrl;
    state.ns = request.ns;
    state.publisher = head.fields().publisher;
    state.lineage = (*journal)->lineage();
    state.expected = ExpectedHead{head, chosen->etag};
    auto bytes = encodePublisherState(state);
    if (!bytes) co_return Failure<Error>{bytes.error()};
    auto written = co_await io::durableReplace(uring, dir / kPublisherStateFile, *bytes);
    if (!written) co_return ioFail("write", dir / kPublisherStateFile, written.error());
  } else {
    // A pinned read copy publishes nowhere: say so, as a journal-only database does.
    const std::string note = "a read copy of head " + toHex(head.id()) + " (cairn recover)\n";
    auto marked = co_await io::durableReplace(uring, dir / kJournalOnlyFile, asBytes(note));
    if (!marked) co_return ioFail("write", dir / kJournalOnlyFile, marked.error());
  }
  co_return out;
}

}  // namespace cairn
