#include "engine/graph/verifier.hpp"

#include <algorithm>
#include <boost/asio/this_coro.hpp>
#include <optional>
#include <vector>

#include "base/buffer_pool.hpp"
#include "engine/format/checks.hpp"
#include "engine/format/journal_format.hpp"
#include "engine/format/keys.hpp"
#include "engine/format/segment.hpp"
#include "engine/journal/journal.hpp"
#include "engine/runtime/async.hpp"
#include "engine/runtime/cpu_pool.hpp"
#include "engine/runtime/task_group.hpp"
#include "engine/store/object_store.hpp"
#include "engine/store/store_errors.hpp"

namespace cairn {

namespace asio = boost::asio;

namespace {

Failure<Error> corrupt(const std::string& key, const std::string& why) {
  return Failure<Error>{Error{Errc::corrupt, key + ": " + why, key}};
}

Res<void> checkLength(const std::string& key, const ManifestSegment& entry, const Bytes& object) {
  if (object.size() != entry.objectLength) {
    return corrupt(key, "has " + std::to_string(object.size()) + " bytes, the manifest says " +
                            std::to_string(entry.objectLength));
  }
  return {};
}

// Checks one fetched segment object against its manifest entry: length, then the header's
// declarations against the entry (before any frame), then every frame. Its hash is checked
// by the in-order pass that also extends the prefix hash (the two hashes run interleaved),
// and takes precedence over what this finds.
Res<void> checkSegment(const std::string& key, const Manifest& m, const ManifestSegment& entry,
                       const Bytes& object) {
  if (auto ok = checkLength(key, entry, object); !ok) return ok;
  auto h = decodeSegmentHeader(object);
  if (!h) return corrupt(key, h.error().message);
  SegmentHeader expected{m.lineage, entry.firstSequence, entry.count, entry.journalStart,
                         entry.journalEnd};
  if (!(*h == expected)) {
    return corrupt(key, "header declares sequences " + std::to_string(h->firstSequence) + "+" +
                            std::to_string(h->count) + " at [" + std::to_string(h->journalStart) +
                            ", " + std::to_string(h->journalEnd) + "), not the manifest's range");
  }
  FrameScanner frames(entry.journalStart, entry.firstSequence);
  if (auto ok = frames.feed(ByteView(object).subspan(limits::kSegmentHeaderBytes)); !ok) {
    return corrupt(key, ok.error().message);
  }
  if (!frames.atBoundary() || frames.framesDone() != entry.count) {
    return corrupt(key, "body does not hold exactly its frames");
  }
  return {};
}

// Reads the segment's range from the journal and compares it with the checked object's body.
asio::awaitable<Res<void>> compareWithJournal(Journal& journal, const std::string& key,
                                              const ManifestSegment& seg, const Bytes& object) {
  ByteView body = ByteView(object).subspan(limits::kSegmentHeaderBytes);
  std::size_t at = 0;
  bool differs = false;
  auto read = co_await journal.readRange(
      seg.journalStart, seg.journalEnd, [&](ByteView chunk) -> Res<void> {
        differs = chunk.size() > body.size() - at ||
                  !std::equal(chunk.begin(), chunk.end(), body.begin() + at);
        if (differs) return err(Errc::diverged, "journal bytes differ");  // stops the read
        at += chunk.size();
        return {};
      });
  if (differs || (read && at != body.size())) {
    co_return Failure<Error>{Error{Errc::diverged,
                                   key + ": the journal's bytes [" +
                                       std::to_string(seg.journalStart) + ", " +
                                       std::to_string(seg.journalEnd) +
                                       ") are not this segment's (another history, or damage)",
                                   key}};
  }
  if (!read) co_return Failure<Error>{read.error()};
  co_return Res<void>{};
}

// The journal's lineage and header bytes are the manifest's: checked before any of its bytes
// are compared.
Res<void> checkJournalIdentity(const Journal& journal, const Manifest& m,
                               const std::string& manifestKey) {
  if (journal.lineage() != m.lineage) {
    return Failure<Error>{
        Error{Errc::diverged, "the checkpoint's lineage is not the journal's", manifestKey}};
  }
  if (journal.header().bytes != m.journalHeader) {  // the bytes the lineage hashes
    return Failure<Error>{
        Error{Errc::diverged, "the checkpoint's journal header is not the journal's", manifestKey}};
  }
  return {};
}

// The journal's prefix at the checkpoint's cutoff is the manifest's (its records known).
Res<void> checkJournalPrefix(const Journal& journal, const Manifest& m,
                             const std::string& manifestKey) {
  if (m.prefix.sequence > journal.endSequence()) {
    return Failure<Error>{
        Error{Errc::diverged,
              "the checkpoint covers sequence " + std::to_string(m.prefix.sequence) +
                  ", beyond the journal's end " + std::to_string(journal.endSequence()),
              manifestKey}};
  }
  if (journal.offsetAfter(m.prefix.sequence) != m.prefix.length) {
    return Failure<Error>{Error{Errc::diverged,
                                "the journal's prefix at sequence " +
                                    std::to_string(m.prefix.sequence) + " has " +
                                    std::to_string(journal.offsetAfter(m.prefix.sequence)) +
                                    " bytes, the checkpoint's " + std::to_string(m.prefix.length),
                                manifestKey}};
  }
  return {};
}

// The journal's prefix reaches the checkpoint's cutoff: for an open journal, its records end
// there exactly; for an unscanned one, its file is at least that long (the comparison checks
// the bytes).
Res<void> checkJournalReaches(const Journal& journal, const Manifest& m,
                              const std::string& manifestKey) {
  if (journal.scanned()) return checkJournalPrefix(journal, m, manifestKey);
  auto bytes = journal.fileBytes();
  if (!bytes) return Failure<Error>{bytes.error()};
  if (*bytes < m.prefix.length) {
    return Failure<Error>{Error{Errc::diverged,
                                "the journal has " + std::to_string(*bytes) +
                                    " bytes, fewer than the checkpoint's prefix of " +
                                    std::to_string(m.prefix.length),
                                manifestKey}};
  }
  return {};
}

struct Fetch {
  std::optional<StoreResult<StoredObject>> result;
  std::optional<Res<void>> check;      // deep: checkSegment's verdict, computed on the CPU pool
  std::optional<Digest> objectSha256;  // hashed by the fetch (where lanes do not interleave)
  Signal done;                         // the result is in
  Signal consumed;  // the consumer has checked it and dropped its bytes: release the permits
};

// One segment's fetch: deep, its GET into a pooled buffer once `downloads` lets it start,
// then its frame checks on the CPU pool and, with `journal`, the comparison with the journal;
// shallow, its HEAD and size. The outcome goes into `fetch` for the in-order pass.
asio::awaitable<void> fetchSegment(ObjectStore& store, const Uuid& ns, const Manifest& m,
                                   const ManifestSegment& seg, const VerifyOptions& options,
                                   Journal* journal, BufferPool& buffers, InFlightLimit& downloads,
                                   Fetch& fetch, const std::optional<Error>& failure) {
  std::string key = keys::segment(ns, seg.objectSha256);
  if (!options.deep) {
    auto info = co_await store.head(key);
    if (!info) {
      fetch.result.emplace(Failure<StoreOutcome>{info.error()});
    } else if (info->size != seg.objectLength) {
      // The consumer's head() names it corrupt.
      fetch.result.emplace(storeFail(StoreStatus::failure, "size " + std::to_string(info->size)));
    } else {
      fetch.result.emplace(StoredObject{Bytes{}, info->etag});
    }
    co_return;
  }
  {
    // The buffer is taken once the GET may start: fewer buffers, fewer fresh pages
    // (docs/decisions.md). A new one is not zero-filled first: its pages are touched as the
    // body arrives, after the request is sent.
    auto download = co_await downloads.acquire(1);
    Bytes storage = buffers.takeForOverwrite(seg.objectLength);
    fetch.result.emplace(co_await store.getInto(key, seg.objectLength, std::move(storage)));
  }
  if (!*fetch.result) co_return;
  // Frame checks of different segments run in parallel; so do their hashes where two cannot
  // interleave on one core (see the in-order pass).
  const Bytes& bytes = (*fetch.result)->bytes;
  co_await onCpuPool([&] {
    fetch.check.emplace(checkSegment(key, m, seg, bytes));
    if (!Sha256Lane::interleaves()) fetch.objectSha256 = sha256(bytes);
  });
  if (journal != nullptr && *fetch.check && !failure) {
    fetch.check.emplace(co_await compareWithJournal(*journal, key, seg, bytes));
  }
}

}  // namespace

asio::awaitable<Res<VerifiedGraph>> verifyManifestGraph(
    ObjectStore& store, const Uuid& ns, const Digest& manifestSha256, std::uint64_t manifestLength,
    Journal* journal, EngineLimits& limits, OperationBudget& budget, const VerifyOptions& options,
    const ProgressFn& progress) {
  VerifiedGraph out;
  std::string manifestKey = keys::manifest(ns, manifestSha256);
  if (manifestLength < 1 || manifestLength > limits::kMaxManifestBytes) {
    co_return Failure<Error>{Error{
        Errc::format, "manifest length " + std::to_string(manifestLength) + " is outside 1..1 MiB",
        manifestKey}};
  }
  if (auto ok = budget.reserve(manifestLength, 0, 1, manifestKey); !ok) {
    co_return Failure<Error>{ok.error()};
  }
  std::optional<StoreResult<StoredObject>> fetched;
  {
    auto permit = co_await limits.requests.acquire(1);
    fetched.emplace(co_await store.get(manifestKey, manifestLength));
  }
  if (!*fetched) co_return storeError(fetched->error(), manifestKey);
  const Bytes& manifestBytes = (*fetched)->bytes;
  if (manifestBytes.size() != manifestLength || sha256(manifestBytes) != manifestSha256) {
    co_return corrupt(manifestKey, "bytes do not match the SHA-256 and length that name it");
  }
  auto manifest = decodeManifest(manifestBytes);
  if (!manifest) co_return corrupt(manifestKey, manifest.error().message);
  out.manifest = std::move(*manifest);
  const Manifest& m = out.manifest;
  out.objects = 1;
  out.bytes = manifestLength;

  VerifyProgress p;
  p.objectsTotal = 1 + m.segments.size();
  p.objectsDone = 1;
  p.bytesTotal = manifestLength;
  for (const auto& s : m.segments) p.bytesTotal += options.deep ? s.objectLength : 0;
  p.bytesDone = manifestLength;
  if (progress) progress(p);

  // Reserve the whole graph's work before the first segment request: a graph larger than the
  // budget fails closed here, having sent nothing more.
  std::uint64_t graphBytes = 0, graphRecords = 0;
  for (const auto& s : m.segments) {
    graphBytes += options.deep ? s.objectLength : 0;
    graphRecords += options.deep ? s.count : 0;
  }
  if (auto ok =
          budget.reserve(graphBytes, graphRecords, m.segments.size(), "segments of " + manifestKey);
      !ok) {
    co_return Failure<Error>{ok.error()};
  }
  if (journal != nullptr && options.deep) {
    if (auto ok = budget.reserve(m.prefix.length, m.prefix.sequence, 0, "journal prefix"); !ok) {
      co_return Failure<Error>{ok.error()};
    }
  }

  auto executor = co_await asio::this_coro::executor;

  // The journal is compared byte for byte with the segments (each segment's range is read
  // while its object is in memory): equal bytes have the rebuilt prefix hash, which is
  // checked against the manifest below, so the journal is not hashed a third time. Its
  // lineage, header and length at the cutoff are checked before any segment request.
  const bool compare = journal != nullptr && options.deep;
  if (compare) {
    Res<void> ok = checkJournalIdentity(*journal, m, manifestKey);
    if (ok) ok = checkJournalReaches(*journal, m, manifestKey);
    if (!ok) co_return Failure<Error>{ok.error()};
  }

  // Segments: fetched concurrently (bounded by the in-flight limits), checked in order, into
  // buffers reused from segment to segment (no fresh pages after the first few). At most
  // `downloads` GETs run at once, and one segment more is held: the one being checked and
  // compared while they run (segmentsHeld).
  BufferPool buffers(limits.bytes.capacity());
  std::uint64_t largest = 0;
  for (const auto& s : m.segments) largest = std::max(largest, s.objectLength);
  const std::uint64_t transfers = transfersAtOnce(limits.bytes.capacity(), largest);
  InFlightLimit downloads(transfers);
  InFlightLimit held(segmentsHeld(transfers));
  std::vector<Fetch> fetches(m.segments.size());
  std::optional<Error> failure;
  // The launcher and every fetch run in this group: a fetch's permits go back before the
  // group counts it finished, and the group is waited for before this frame goes away.
  TaskGroup tasks(executor);
  std::size_t launched = 0;
  Signal launchedMore;
  bool launcherDone = false;
  tasks.start([&]() -> asio::awaitable<Res<void>> {
    for (std::size_t i = 0; i < m.segments.size() && !failure; ++i) {
      const ManifestSegment& s = m.segments[i];
      std::uint64_t bytes = options.deep ? s.objectLength : 0;
      // (A shallow verification holds no bodies: its HEADs wait for requests only.)
      auto h = co_await held.acquire(options.deep ? 1 : 0);
      auto b = co_await limits.bytes.acquire(bytes);
      auto r = co_await limits.requests.acquire(1);
      if (failure) break;
      ++launched;
      launchedMore.notify();
      tasks.start([&, i, h = std::move(h), b = std::move(b),
                   r = std::move(r)]() mutable -> asio::awaitable<Res<void>> {
        co_await fetchSegment(store, ns, m, m.segments[i], options, compare ? journal : nullptr,
                              buffers, downloads, fetches[i], failure);
        fetches[i].done.notify();
        // The permits are held until this fetch's bytes are checked and dropped.
        co_await fetches[i].consumed.wait();
        co_return Res<void>{};
      });
    }
    launcherDone = true;
    launchedMore.notify();
    co_return Res<void>{};
  });

  Sha256Lane prefixHash;
  prefixHash.update(m.journalHeader);
  // The earlier prefix this graph must extend: checked when the rebuilt bytes reach its length.
  std::uint64_t hashed = m.journalHeader.size();
  std::optional<bool> extendsOk;
  if (options.extends && options.extends->length <= hashed) {
    extendsOk = options.extends->length == hashed && prefixHash.finish() == options.extends->sha256;
  }
  for (std::size_t i = 0; i < m.segments.size(); ++i) {
    while (launched <= i && !launcherDone) {
      launchedMore.reset();
      co_await launchedMore.wait();
    }
    if (launched <= i) break;  // the launcher stopped after a failure
    co_await fetches[i].done.wait();
    const ManifestSegment& seg = m.segments[i];
    std::string key = keys::segment(ns, seg.objectSha256);
    auto& result = *fetches[i].result;
    if (!failure) {
      if (!result) {
        failure = storeError(result.error(), key).error;
        if (result.error().status == StoreStatus::failure) {
          // Over the bound, or a wrong size: if the object's size is not the manifest's, the
          // object is corrupt, not the store.
          auto info = co_await store.head(key);
          if (info && info->size != seg.objectLength) {
            failure = Error{Errc::corrupt,
                            key + ": has " + std::to_string(info->size) +
                                " bytes, the manifest says " + std::to_string(seg.objectLength),
                            key};
          }
        }
      } else if (options.deep) {
        // The object's hash and the prefix hash over its body, in one interleaved pass; a
        // wrong hash is reported before anything the fetch found in the bytes.
        const Bytes& object = result->bytes;
        if (auto length = checkLength(key, seg, object); !length) {
          failure = length.error();
        } else {
          ByteView body = ByteView(object).subspan(limits::kSegmentHeaderBytes);
          Digest objectSha256{};
          co_await onCpuPool([&] {
            // The object's hash alongside the prefix's, unless its fetch hashed it already.
            Sha256Lane objectHash;
            const bool hashedAlready = fetches[i].objectSha256.has_value();
            auto extend = [&](ByteView objectPart, ByteView bodyPart) {
              if (hashedAlready) {
                prefixHash.update(bodyPart);
              } else {
                updateTogether(objectHash, objectPart, prefixHash, bodyPart);
              }
            };
            // The earlier prefix ends in this body: its hash is taken where it ends.
            const bool reaches =
                options.extends && !extendsOk && hashed + body.size() >= options.extends->length;
            const std::size_t split = reaches ? options.extends->length - hashed : body.size();
            extend(ByteView(object).first(limits::kSegmentHeaderBytes + split), body.first(split));
            if (reaches) extendsOk = prefixHash.finish() == options.extends->sha256;
            extend(ByteView(object).subspan(limits::kSegmentHeaderBytes + split),
                   body.subspan(split));
            objectSha256 = hashedAlready ? *fetches[i].objectSha256 : objectHash.finish();
            hashed += body.size();
          });
          if (objectSha256 != seg.objectSha256) {
            failure = corrupt(key, "SHA-256 does not match its key").error;
          } else if (!*fetches[i].check) {
            failure = fetches[i].check->error();
          }
        }
      }
    }
    if (result) {
      out.bytes += result->bytes.size();
      p.bytesDone += result->bytes.size();
      buffers.give(std::exchange(result->bytes, Bytes{}));  // the permit follows
    }
    fetches[i].consumed.notify();
    ++out.objects;
    ++p.objectsDone;
    if (progress) progress(p);
  }
  // Every fetch still holding its bytes is released, then every task is waited for before
  // the frames they reference go away.
  while (!launcherDone) {
    launchedMore.reset();
    co_await launchedMore.wait();
  }
  for (std::size_t i = 0; i < launched; ++i) fetches[i].consumed.notify();
  if (auto all = co_await tasks.wait(); !all && !failure) failure = all.error();
  if (failure) co_return Failure<Error>{*failure};

  if (options.deep) {
    if (prefixHash.finish() != m.prefix.sha256) {
      co_return corrupt(manifestKey, "the segments do not rebuild the declared prefix hash");
    }
    if (options.extends && extendsOk != true) {
      co_return Failure<Error>{
          Error{Errc::diverged,
                manifestKey + ": the graph does not extend the earlier prefix (" +
                    std::to_string(options.extends->length) + " bytes, SHA-256 " +
                    toHex(options.extends->sha256) + "): another history",
                manifestKey}};
    }
  }
  co_return out;
}

asio::awaitable<Res<VerifiedGraph>> verifyHeadGraph(ObjectStore& store, const Head& head,
                                                    Journal* journal, EngineLimits& limits,
                                                    OperationBudget& budget,
                                                    const VerifyOptions& options,
                                                    const ProgressFn& progress) {
  const HeadFields& f = head.fields();
  auto graph = co_await verifyManifestGraph(store, f.ns, f.manifestSha256, f.manifestLength,
                                            journal, limits, budget, options, progress);
  if (!graph) co_return graph;
  // The manifest is the one the head names; its lineage and prefix are the head's.
  auto bound = bindManifest(head, *encodeManifest(graph->manifest));
  if (!bound) {
    co_return Failure<Error>{
        Error{bound.error().code, bound.error().message, keys::manifest(f.ns, f.manifestSha256)}};
  }
  co_return graph;
}

}  // namespace cairn
