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
#include "engine/graph/heads.hpp"
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
  if (!read) co_return failureOf(read);
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
  if (!bytes) return failureOf(bytes);
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
  bool launched = false;               // its task was started (the launcher stops at a failure)
  Signal done;                         // the result is in, or it will never be launched
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
      fetch.result.emplace(failureOf(info));
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
    // (docs/decisions/). A new one is not zero-filled first: its pages are touched as the
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

// One verification of a graph (verifyManifestGraph): what it knows so far, and its steps.
class GraphVerification {
 public:
  GraphVerification(ObjectStore& store, const Uuid& ns, Journal* journal, EngineLimits& limits,
                    OperationBudget& budget, const VerifyOptions& options,
                    const ProgressFn& progress)
      : store_(store),
        ns_(ns),
        journal_(journal),
        limits_(limits),
        budget_(budget),
        options_(options),
        report_(progress),
        compare_(journal != nullptr && options.deep),
        buffers_(limits.bytes.capacity()) {}

  // A head the manifest must be bound to (bindManifest) before any segment is requested.
  void bindTo(const Head& head) { head_ = &head; }

  asio::awaitable<Res<VerifiedGraph>> run(const Digest& manifestSha256,
                                          std::uint64_t manifestLength) {
    // 1. The manifest: its bytes are the ones that name it, it decodes, and (for a head's
    // graph) its lineage and prefix are the head's.
    CAIRN_CO_TRY(co_await fetchManifest(manifestSha256, manifestLength));
    // 2. The whole graph's work reserved before the first segment request: a graph larger
    // than the budget fails closed here, having sent nothing more.
    CAIRN_CO_TRY(reserveGraph());
    // 3. The journal's lineage, header and length at the cutoff, before any segment request.
    if (compare_) CAIRN_CO_TRY(checkJournal());
    // 4. Segments fetched concurrently (bounded by the in-flight limits), 5. checked in order.
    TaskGroup tasks(co_await asio::this_coro::executor);
    startFetches(tasks);
    startPrefix();
    for (std::size_t i = 0; i < manifest().segments.size(); ++i) {
      co_await fetches_[i].done.wait();
      if (!fetches_[i].launched) break;  // the launcher stopped after a failure
      co_await checkInOrder(i);
    }
    // 6. Every fetch still holding its bytes is released (so a launcher waiting for permits
    // goes on, sees the failure and stops), then the group is waited for: every task has
    // ended before the frames they reference go away.
    for (auto& fetch : fetches_) fetch.consumed.notify();
    if (auto all = co_await tasks.wait(); !all && !failure_) failure_ = all.error();
    if (failure_) co_return Failure<Error>{*failure_};
    // 7. The rebuilt prefix is the manifest's (and extends the earlier one).
    if (options_.deep) CAIRN_CO_TRY(checkPrefix());
    co_return std::move(out_);
  }

 private:
  const Manifest& manifest() const { return out_.manifest; }

  asio::awaitable<Res<void>> fetchManifest(const Digest& sha, std::uint64_t length) {
    manifestKey_ = keys::manifest(ns_, sha);
    if (length < 1 || length > limits::kMaxManifestBytes) {
      co_return Failure<Error>{
          Error{Errc::format, "manifest length " + std::to_string(length) + " is outside 1..1 MiB",
                manifestKey_}};
    }
    CAIRN_CO_TRY(budget_.reserve(length, 0, 1, manifestKey_));
    std::optional<StoreResult<StoredObject>> fetched;
    {
      auto permit = co_await limits_.requests.acquire(1);
      fetched.emplace(co_await store_.get(manifestKey_, length));
    }
    if (!*fetched) co_return storeError(fetched->error(), manifestKey_);
    const Bytes& bytes = (*fetched)->bytes;
    if (bytes.size() != length || sha256(bytes) != sha) {
      co_return corrupt(manifestKey_, "bytes do not match the SHA-256 and length that name it");
    }
    auto decoded = decodeManifest(bytes);
    if (!decoded) co_return corrupt(manifestKey_, decoded.error().message);
    if (head_) {
      auto bound = bindManifest(*head_, bytes);
      if (!bound) {
        co_return Failure<Error>{Error{bound.error().code, bound.error().message, manifestKey_}};
      }
    }
    out_.objects = 1;
    out_.bytes = length;
    if (decoded->base) {
      // A chained manifest (format 2): its bases, each the exact object its successor names,
      // then verified as one manifest listing every segment of the prefix.
      ManifestLink top{sha, length, *decoded};
      auto chain = co_await fetchManifestChain(store_, ns_, std::move(top), budget_);
      if (!chain) co_return failureOf(chain);
      for (std::size_t i = 1; i < chain->links.size(); ++i) {
        out_.objects += 1;
        out_.bytes += chain->links[i].length;
      }
      out_.manifest = chain->flattened();
    } else {
      out_.manifest = std::move(*decoded);
    }
    progress_.objectsTotal = out_.objects + manifest().segments.size();
    progress_.objectsDone = out_.objects;
    progress_.bytesTotal = out_.bytes;
    for (const auto& s : manifest().segments) {
      progress_.bytesTotal += options_.deep ? s.objectLength : 0;
    }
    progress_.bytesDone = out_.bytes;
    if (report_) report_(progress_);
    co_return Res<void>{};
  }

  Res<void> reserveGraph() {
    const Manifest& m = manifest();
    std::uint64_t graphBytes = 0, graphRecords = 0;
    for (const auto& s : m.segments) {
      graphBytes += options_.deep ? s.objectLength : 0;
      graphRecords += options_.deep ? s.count : 0;
    }
    CAIRN_TRY(budget_.reserve(graphBytes, graphRecords, m.segments.size(),
                              "segments of " + manifestKey_));
    if (compare_)
      CAIRN_TRY(budget_.reserve(m.prefix.length, m.prefix.sequence, 0, "journal prefix"));
    return {};
  }

  // The journal is compared byte for byte with the segments (each segment's range is read
  // while its object is in memory): equal bytes have the rebuilt prefix hash, which is
  // checked against the manifest, so the journal is not hashed a third time.
  Res<void> checkJournal() {
    CAIRN_TRY(checkJournalIdentity(*journal_, manifest(), manifestKey_));
    return checkJournalReaches(*journal_, manifest(), manifestKey_);
  }

  // The launcher: a fetch task per segment, each started once the in-flight limits let it.
  // Into buffers reused from segment to segment (no fresh pages after the first few); at most
  // `downloads` GETs at once, and one segment more held: the one being checked meanwhile.
  void startFetches(TaskGroup& tasks) {
    const Manifest& m = manifest();
    std::uint64_t largest = 0;
    for (const auto& s : m.segments) largest = std::max(largest, s.objectLength);
    const std::uint64_t transfers = transfersAtOnce(limits_.bytes.capacity(), largest);
    downloads_.emplace(transfers);
    held_.emplace(segmentsHeld(transfers));
    fetches_ = std::vector<Fetch>(m.segments.size());
    tasks.start([this, &tasks]() -> asio::awaitable<Res<void>> {
      const Manifest& m = manifest();
      for (std::size_t i = 0; i < m.segments.size() && !failure_; ++i) {
        const ManifestSegment& s = m.segments[i];
        // (A shallow verification holds no bodies: its HEADs wait for requests only.)
        auto h = co_await held_->acquire(options_.deep ? 1 : 0);
        auto b = co_await limits_.bytes.acquire(options_.deep ? s.objectLength : 0);
        auto r = co_await limits_.requests.acquire(1);
        if (failure_) break;
        fetches_[i].launched = true;
        tasks.start([this, i, h = std::move(h), b = std::move(b),
                     r = std::move(r)]() mutable -> asio::awaitable<Res<void>> {
          co_await fetchSegment(store_, ns_, manifest(), manifest().segments[i], options_,
                                compare_ ? journal_ : nullptr, buffers_, *downloads_, fetches_[i],
                                failure_);
          fetches_[i].done.notify();
          // The permits are held until this fetch's bytes are checked and dropped.
          co_await fetches_[i].consumed.wait();
          co_return Res<void>{};
        });
      }
      // The fetches it did not launch are done too: the in-order pass stops at the first.
      for (auto& fetch : fetches_) {
        if (!fetch.launched) fetch.done.notify();
      }
      co_return Res<void>{};
    });
  }

  // The prefix hash starts with the journal header; the earlier prefix this graph must
  // extend is checked when the rebuilt bytes reach its length.
  void startPrefix() {
    prefixHash_.update(manifest().journalHeader);
    hashed_ = manifest().journalHeader.size();
    if (options_.extends && options_.extends->length <= hashed_) {
      extendsOk_ =
          options_.extends->length == hashed_ && prefixHash_.finish() == options_.extends->sha256;
    }
  }

  // Segment i, fetched: judged (a wrong hash before anything its fetch found in the bytes),
  // then its bytes dropped and its fetch released.
  asio::awaitable<void> checkInOrder(std::size_t i) {
    const ManifestSegment& seg = manifest().segments[i];
    const std::string key = keys::segment(ns_, seg.objectSha256);
    auto& result = *fetches_[i].result;
    if (!failure_) {
      if (!result) {
        failure_ = co_await fetchFailure(result.error(), key, seg);
      } else if (options_.deep) {
        failure_ = co_await hashInOrder(i, key, result->bytes);
      }
    }
    if (result) {
      out_.bytes += result->bytes.size();
      progress_.bytesDone += result->bytes.size();
      buffers_.give(std::exchange(result->bytes, Bytes{}));  // the permit follows
    }
    fetches_[i].consumed.notify();
    ++out_.objects;
    ++progress_.objectsDone;
    if (report_) report_(progress_);
  }

  // Over the bound, or a wrong size: if the object's size is not the manifest's, the object
  // is corrupt, not the store.
  asio::awaitable<std::optional<Error>> fetchFailure(const StoreOutcome& o, const std::string& key,
                                                     const ManifestSegment& seg) {
    Error e = storeError(o, key).error;
    if (o.status == StoreStatus::failure) {
      auto info = co_await store_.head(key);
      if (info && info->size != seg.objectLength) {
        e = Error{Errc::corrupt,
                  key + ": has " + std::to_string(info->size) + " bytes, the manifest says " +
                      std::to_string(seg.objectLength),
                  key};
      }
    }
    co_return e;
  }

  // The object's hash and the prefix hash over its body, in one interleaved pass (unless its
  // fetch hashed the object already); the earlier prefix's hash is taken where it ends.
  asio::awaitable<std::optional<Error>> hashInOrder(std::size_t i, const std::string& key,
                                                    const Bytes& object) {
    const ManifestSegment& seg = manifest().segments[i];
    if (auto length = checkLength(key, seg, object); !length) co_return length.error();
    ByteView body = ByteView(object).subspan(limits::kSegmentHeaderBytes);
    Digest objectSha256{};
    co_await onCpuPool([&] {
      Sha256Lane objectHash;
      const bool hashedAlready = fetches_[i].objectSha256.has_value();
      auto extend = [&](ByteView objectPart, ByteView bodyPart) {
        if (hashedAlready) {
          prefixHash_.update(bodyPart);
        } else {
          updateTogether(objectHash, objectPart, prefixHash_, bodyPart);
        }
      };
      const bool reaches =
          options_.extends && !extendsOk_ && hashed_ + body.size() >= options_.extends->length;
      const std::size_t split = reaches ? options_.extends->length - hashed_ : body.size();
      extend(ByteView(object).first(limits::kSegmentHeaderBytes + split), body.first(split));
      if (reaches) extendsOk_ = prefixHash_.finish() == options_.extends->sha256;
      extend(ByteView(object).subspan(limits::kSegmentHeaderBytes + split), body.subspan(split));
      objectSha256 = hashedAlready ? *fetches_[i].objectSha256 : objectHash.finish();
      hashed_ += body.size();
    });
    if (objectSha256 != seg.objectSha256) {
      co_return corrupt(key, "SHA-256 does not match its key").error;
    }
    if (!*fetches_[i].check) co_return fetches_[i].check->error();
    co_return std::nullopt;
  }

  Res<void> checkPrefix() {
    if (prefixHash_.finish() != manifest().prefix.sha256) {
      return corrupt(manifestKey_, "the segments do not rebuild the declared prefix hash");
    }
    if (options_.extends && extendsOk_ != true) {
      return Failure<Error>{
          Error{Errc::diverged,
                manifestKey_ + ": the graph does not extend the earlier prefix (" +
                    std::to_string(options_.extends->length) + " bytes, SHA-256 " +
                    toHex(options_.extends->sha256) + "): another history",
                manifestKey_}};
    }
    return {};
  }

  ObjectStore& store_;
  const Uuid& ns_;
  Journal* journal_;
  EngineLimits& limits_;
  OperationBudget& budget_;
  const VerifyOptions& options_;
  const ProgressFn& report_;  // told after each object
  const bool compare_;
  const Head* head_ = nullptr;
  std::string manifestKey_;
  VerifiedGraph out_;
  VerifyProgress progress_;
  BufferPool buffers_;
  std::optional<InFlightLimit> downloads_;
  std::optional<InFlightLimit> held_;
  std::vector<Fetch> fetches_;
  std::optional<Error> failure_;
  Sha256Lane prefixHash_;
  std::uint64_t hashed_ = 0;
  std::optional<bool> extendsOk_;
};

}  // namespace

asio::awaitable<Res<VerifiedGraph>> verifyManifestGraph(
    ObjectStore& store, const Uuid& ns, const Digest& manifestSha256, std::uint64_t manifestLength,
    Journal* journal, EngineLimits& limits, OperationBudget& budget, const VerifyOptions& options,
    const ProgressFn& progress) {
  GraphVerification verification(store, ns, journal, limits, budget, options, progress);
  co_return co_await verification.run(manifestSha256, manifestLength);
}

asio::awaitable<Res<VerifiedGraph>> verifyHeadGraph(ObjectStore& store, const Head& head,
                                                    Journal* journal, EngineLimits& limits,
                                                    OperationBudget& budget,
                                                    const VerifyOptions& options,
                                                    const ProgressFn& progress) {
  const HeadFields& f = head.fields();
  GraphVerification verification(store, f.ns, journal, limits, budget, options, progress);
  verification.bindTo(head);
  co_return co_await verification.run(f.manifestSha256, f.manifestLength);
}

}  // namespace cairn
