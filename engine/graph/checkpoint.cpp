#include "engine/graph/checkpoint.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstring>

#include "base/assert.hpp"
#include "base/buffer_pool.hpp"
#include "base/sha256.hpp"
#include "engine/format/keys.hpp"
#include "engine/format/segment.hpp"
#include "engine/journal/journal.hpp"
#include "engine/runtime/cpu_pool.hpp"
#include "engine/runtime/task_group.hpp"
#include "engine/store/object_store.hpp"
#include "engine/store/store_errors.hpp"

namespace cairn {

namespace asio = boost::asio;

std::vector<ManifestSegment> planSegments(const std::vector<std::uint64_t>& ends,
                                          std::uint64_t fromSequence, std::uint64_t toSequence,
                                          std::uint64_t targetBytes) {
  std::vector<ManifestSegment> out;
  std::uint64_t first = fromSequence + 1;
  for (std::uint64_t s = first; s <= toSequence; ++s) {
    std::uint64_t start = ends[first - 1];
    std::uint64_t body = ends[s] - start;
    bool last = s == toSequence;
    // Close at the target, or before the frame that would take the body past the cap.
    bool nextWouldOverflow = !last && ends[s + 1] - start > limits::kMaxSegmentBodyBytes;
    if (body >= targetBytes || last || nextWouldOverflow) {
      ManifestSegment seg;
      seg.firstSequence = first;
      seg.count = static_cast<std::uint32_t>(s - first + 1);
      seg.journalStart = start;
      seg.journalEnd = ends[s];
      seg.objectLength = limits::kSegmentHeaderBytes + body;
      out.push_back(seg);
      first = s + 1;
    }
  }
  return out;
}

namespace {

enum class Installed : std::uint8_t { written, reused, rewritten };

std::int64_t nowSeconds(const CheckpointOptions& options) {
  return options.now ? options.now() : unixSecondsNow();
}

// Create-if-absent; an existing object must be byte-identical, and is relied on only while it
// is younger than the reuse age: an older one is rewritten (docs/operations.md, "Vacuum and
// concurrent publication"). `digest` is the bytes' SHA-256, which names the key.
asio::awaitable<Res<Installed>> installImmutable(ObjectStore& store, const std::string& key,
                                                 ByteView bytes, const Digest& digest,
                                                 const CheckpointOptions& options) {
  for (int attempt = 0;; ++attempt) {
    auto created = co_await store.putIfAbsentHashed(key, bytes, digest);
    if (created) co_return Installed::written;
    if (created.error().status != StoreStatus::preconditionFailed) {
      co_return storeError(created.error(), key);
    }
    // An object deleted between two of these requests (by a vacuum: it was old and
    // unreachable) is created again, a bounded number of times.
    auto vanished = [&](const StoreOutcome& o) {
      return o.status == StoreStatus::missing && attempt < 2;
    };
    auto info = co_await store.head(key);
    if (!info && vanished(info.error())) continue;
    if (!info) co_return storeError(info.error(), key);
    if (info->size != bytes.size()) {
      co_return err(Errc::corrupt, key + " exists with different content (" +
                                       std::to_string(info->size) + " bytes, not " +
                                       std::to_string(bytes.size()) + ")");
    }
    auto existing = co_await store.get(key, bytes.size());
    if (!existing && vanished(existing.error())) continue;
    if (!existing) co_return storeError(existing.error(), key);
    if (!std::equal(bytes.begin(), bytes.end(), existing->bytes.begin(), existing->bytes.end())) {
      co_return err(Errc::corrupt, key + " exists with different content (SHA-256 " +
                                       toHex(sha256(existing->bytes)) + ")");
    }
    std::int64_t age = nowSeconds(options) - info->modifiedUnixSeconds;
    if (info->modifiedUnixSeconds != 0 && age < options.reuseMaxAge.count()) {
      co_return Installed::reused;
    }
    auto rewritten = co_await store.rewrite(key, bytes);
    if (!rewritten) co_return storeError(rewritten.error(), key);
    co_return Installed::rewritten;
  }
}

// Reads one segment's journal range into a buffer from `buffers`, behind its header.
asio::awaitable<Res<Bytes>> readSegment(Journal& journal, const Digest& lineage,
                                        const ManifestSegment& seg, BufferPool& buffers) {
  SegmentHeader h{lineage, seg.firstSequence, seg.count, seg.journalStart, seg.journalEnd};
  auto header = encodeSegmentHeader(h);
  if (!header) co_return failureOf(header);
  // Every byte is written below: the header, then the range (read into place).
  Bytes object = buffers.takeSized(seg.objectLength);
  std::copy(header->begin(), header->end(), object.begin());
  auto read = co_await journal.readRangeInto(
      seg.journalStart, seg.journalEnd,
      std::span<std::uint8_t>(object).subspan(limits::kSegmentHeaderBytes));
  if (!read) {
    buffers.give(std::move(object));
    co_return failureOf(read);
  }
  co_return object;
}

// Checks a segment built by readSegment and names it by its SHA-256. With `prefix`, its body
// also extends that hash, the two interleaved on one core (Sha256Lane). CPU work.
Res<void> checkAndName(ManifestSegment& seg, ByteView object, Sha256Lane* prefix) {
  // The journal was checked frame by frame when it was opened and every append since was
  // written by us; check the body again anyway, so a damaged page never becomes a segment.
  auto decoded = decodeSegment(object);
  if (!decoded) {
    return err(Errc::format, "journal range [" + std::to_string(seg.journalStart) + ", " +
                                 std::to_string(seg.journalEnd) +
                                 ") does not form valid frames: " + decoded.error().message);
  }
  if (prefix) {
    Sha256Lane objectHash;
    updateTogether(objectHash, object, *prefix, object.subspan(limits::kSegmentHeaderBytes));
    seg.objectSha256 = objectHash.finish();
  } else {
    seg.objectSha256 = sha256(object);
  }
  return {};
}

// checkAndName on the CPU pool; an exception there (an allocation's) becomes this segment's
// error, so the checkpoint still waits for its uploads before it returns.
asio::awaitable<Res<void>> checkAndNameOnPool(ManifestSegment& seg, ByteView object,
                                              Sha256Lane* prefix) {
  std::optional<Res<void>> named;
  co_await onCpuPool([&] {
    try {
      named.emplace(checkAndName(seg, object, prefix));
    } catch (const std::exception& e) {
      named.emplace(
          err(Errc::io, "segment " + std::to_string(seg.firstSequence) + ": " + e.what()));
    }
  });
  co_return std::move(*named);
}

// Installs a checked segment create-if-absent, once `uploads` and the engine's request limit
// let it send.
asio::awaitable<Res<Installed>> uploadSegment(ObjectStore& store, const Uuid& ns,
                                              const ManifestSegment& seg, ByteView object,
                                              InFlightLimit& uploads, EngineLimits& limits,
                                              const CheckpointOptions& options) {
  auto upload = co_await uploads.acquire(1);
  auto request = co_await limits.requests.acquire(1);
  co_return co_await installImmutable(store, keys::segment(ns, seg.objectSha256), object,
                                      seg.objectSha256, options);
}

// Objects rewritten by this checkpoint: after the settle time, each must still be there (a
// vacuum that HEADed one just before its rewrite issues its DELETE within half of that time).
// One that is gone fails this checkpoint before anything is recorded; the next one creates it.
asio::awaitable<Res<void>> settleRewrites(ObjectStore& store,
                                          const std::vector<std::string>& rewritten,
                                          const CheckpointOptions& options) {
  if (rewritten.empty()) co_return Res<void>{};
  asio::steady_timer settle(co_await asio::this_coro::executor, options.rewriteSettle);
  co_await settle.async_wait(asio::use_awaitable);
  for (const auto& key : rewritten) {
    auto info = co_await store.head(key);
    if (info) continue;
    if (info.error().status == StoreStatus::missing) {
      co_return err(Errc::store, key +
                                     " was deleted right after this checkpoint rewrote it (a "
                                     "concurrent vacuum); nothing was recorded, checkpoint again");
    }
    co_return storeError(info.error(), key);
  }
  co_return Res<void>{};
}

// Counts one installed segment in the checkpoint's result.
void countInstalled(InstalledCheckpoint& out, std::vector<std::string>& rewritten, const Uuid& ns,
                    const ManifestSegment& seg, Installed installed) {
  switch (installed) {
    case Installed::written:
      ++out.segmentsWritten;
      out.bytesUploaded += seg.objectLength;
      break;
    case Installed::reused:
      ++out.segmentsReused;
      break;
    case Installed::rewritten:
      ++out.objectsRewritten;
      out.bytesUploaded += seg.objectLength;
      rewritten.push_back(keys::segment(ns, seg.objectSha256));
      break;
  }
}

// Reads the new segments in order and starts each one's upload in `tasks`. Uploads run at
// most `uploads` at once, and one segment more is held: the next one, read and hashed while
// they run (segmentsHeld). Segment bodies are built in buffers reused from segment to
// segment (no fresh pages after the first few). With `prefix`, each body extends it here, in
// order; otherwise the segments are hashed in parallel by their upload tasks. Returns the
// first failure of the reading side; the tasks' own failures are the group's.
asio::awaitable<Res<void>> uploadSegments(Journal& journal, ObjectStore& store, const Uuid& ns,
                                          std::vector<ManifestSegment>& fresh, Sha256Lane* prefix,
                                          EngineLimits& limits, OperationBudget& budget,
                                          const CheckpointOptions& options, TaskGroup& tasks,
                                          InstalledCheckpoint& out,
                                          std::vector<std::string>& rewritten) {
  // The pool and the limits below outlive every task: the caller waits for the group, and a
  // task releases what it holds before the group counts it finished.
  struct Shared {
    explicit Shared(std::uint64_t bytes, std::uint64_t transfers)
        : buffers(bytes), uploads(transfers), held(segmentsHeld(transfers)) {}
    BufferPool buffers;
    InFlightLimit uploads;
    InFlightLimit held;
  };
  auto shared = std::make_shared<Shared>(
      limits.bytes.capacity(),
      transfersAtOnce(limits.bytes.capacity(),
                      options.segmentTargetBytes + limits::kSegmentHeaderBytes));
  for (ManifestSegment& seg : fresh) {
    if (tasks.failed()) break;
    if (auto ok = budget.reserve(seg.objectLength, seg.count, 1,
                                 "segment " + std::to_string(seg.firstSequence));
        !ok) {
      co_return failureOf(ok);
    }
    auto heldPermit = co_await shared->held.acquire(1);
    auto bytesPermit = co_await limits.bytes.acquire(seg.objectLength);
    if (tasks.failed()) break;
    std::optional<Res<Bytes>> read;
    try {
      read.emplace(co_await readSegment(journal, journal.lineage(), seg, shared->buffers));
    } catch (const std::exception& e) {  // an allocation's
      read.emplace(err(Errc::io, "segment " + std::to_string(seg.firstSequence) + ": " + e.what()));
    }
    if (!*read) co_return failureOf(*read);
    Bytes object = std::move(**read);
    if (prefix) {
      auto named = co_await checkAndNameOnPool(seg, object, prefix);
      if (!named) {
        shared->buffers.give(std::move(object));
        co_return failureOf(named);
      }
    }
    if (!co_await tasks.room()) break;
    tasks.start([&, shared, &seg = seg, object = std::move(object), h = std::move(heldPermit),
                 b = std::move(bytesPermit),
                 hashHere = prefix == nullptr]() mutable -> asio::awaitable<Res<void>> {
      Res<void> named;
      if (hashHere) named = co_await checkAndNameOnPool(seg, object, nullptr);
      Res<Installed> installed = Failure<Error>{Error{Errc::io, "not installed"}};
      if (named) {
        installed =
            co_await uploadSegment(store, ns, seg, object, shared->uploads, limits, options);
      }
      shared->buffers.give(std::move(object));
      if (!named) co_return failureOf(named);
      if (!installed) co_return failureOf(installed);
      countInstalled(out, rewritten, ns, seg, *installed);
      co_return Res<void>{};
    });
  }
  co_return Res<void>{};
}

// The new segments of a checkpoint at `cutoff`, after every argument is checked.
Res<std::vector<ManifestSegment>> planCheckpoint(const Journal& journal,
                                                 const std::optional<Manifest>& previous,
                                                 std::uint64_t cutoff,
                                                 const CheckpointOptions& options) {
  if (options.segmentTargetBytes < kMinSegmentTargetBytes ||
      options.segmentTargetBytes > kMaxSegmentTargetBytes) {
    return err(Errc::usage, "segment target must be 1 byte..64 MiB");
  }
  if (options.reuseMaxAge > kMaxReuseMaxAge) {
    return err(Errc::usage, "the reuse age must be at most " +
                                std::to_string(kMaxReuseMaxAge.count()) +
                                " s (vacuum's grace period relies on that bound)");
  }
  if (options.reuseMaxAge < 2 * options.rewriteSettle) {
    return err(Errc::usage, "the reuse age must be at least twice the rewrite settle time (" +
                                std::to_string(2 * options.rewriteSettle.count()) + " ms)");
  }
  const std::uint64_t from = previous ? previous->prefix.sequence : 0;
  if (options.compact && (!previous || cutoff != from)) {
    return err(Errc::usage, "compaction keeps the previous checkpoint's cutoff");
  }
  if (cutoff > journal.endSequence() || cutoff < from) {
    return err(Errc::usage, "cutoff " + std::to_string(cutoff) + " is outside [" +
                                std::to_string(from) + ", " +
                                std::to_string(journal.endSequence()) + "]");
  }
  if (previous && (previous->lineage != journal.lineage() ||
                   previous->prefix.length != journal.offsetAfter(from))) {
    return err(Errc::diverged, "the previous checkpoint does not describe this journal");
  }
  if (journal.offsetAfter(cutoff) > limits::kMaxPrefixBytes) {  // as Journal::prefix says it
    return err(Errc::budget, "prefix at sequence " + std::to_string(cutoff) + " is " +
                                 std::to_string(journal.offsetAfter(cutoff)) +
                                 " bytes, over the cap of " +
                                 std::to_string(limits::kMaxPrefixBytes));
  }
  std::vector<std::uint64_t> ends(cutoff + 1);
  for (std::uint64_t s = 0; s <= cutoff; ++s) ends[s] = journal.offsetAfter(s);
  return planSegments(ends, options.compact ? 0 : from, cutoff, options.segmentTargetBytes);
}

// The prefix hash's state at the first new segment's start, where the journal knows it (its
// header: a first checkpoint or a compaction; or the cutoff of this process's previous
// checkpoint): each new body then extends it while its object is hashed, in order, the two
// interleaved on one core (no second read of the journal, and less CPU than two hashes).
// Without it (or without the SHA extensions, where the two would only run one after the
// other) the prefix is read and hashed from the journal while the segments upload.
std::optional<Sha256Lane> prefixAlongSegments(const Journal& journal,
                                              const std::vector<ManifestSegment>& fresh,
                                              std::uint64_t cutoff) {
  auto lane = journal.knownPrefix(fresh.empty() ? cutoff : fresh.front().firstSequence - 1);
  if (lane && !fresh.empty() && !Sha256Lane::interleaves()) lane.reset();
  return lane;
}

// The manifest: the previous segments (unless compacting) and the new ones, the prefix;
// encoded, named by its hash and installed like every immutable object.
asio::awaitable<Res<void>> installManifest(Journal& journal, ObjectStore& store, const Uuid& ns,
                                           const std::optional<Manifest>& previous,
                                           const std::vector<ManifestSegment>& fresh,
                                           const Prefix& prefix, OperationBudget& budget,
                                           const CheckpointOptions& options,
                                           InstalledCheckpoint& out,
                                           std::vector<std::string>& rewritten) {
  Manifest& m = out.manifest;
  m.generation = previous ? previous->generation + 1 : 1;
  m.journalHeader = journal.header().bytes;
  m.lineage = journal.lineage();
  if (previous && !options.compact) m.segments = previous->segments;
  m.segments.insert(m.segments.end(), fresh.begin(), fresh.end());
  m.prefix = prefix;
  auto bytes = encodeManifest(m);
  if (!bytes) co_return failureOf(bytes);
  out.manifestBytes = std::move(*bytes);
  out.manifestSha256 = sha256(out.manifestBytes);
  const std::string key = keys::manifest(ns, out.manifestSha256);
  CAIRN_CO_TRY(budget.reserve(out.manifestBytes.size(), 0, 1, "manifest"));
  auto installed =
      co_await installImmutable(store, key, out.manifestBytes, out.manifestSha256, options);
  if (!installed) co_return failureOf(installed);
  if (*installed == Installed::reused) {
    out.manifestReused = true;
    co_return Res<void>{};
  }
  out.manifestWritten = *installed == Installed::written;
  out.bytesUploaded += out.manifestBytes.size();
  if (*installed == Installed::rewritten) {
    ++out.objectsRewritten;
    rewritten.push_back(key);
  }
  co_return Res<void>{};
}

}  // namespace

asio::awaitable<Res<InstalledCheckpoint>> installCheckpoint(
    Journal& journal, ObjectStore& store, const Uuid& ns, const std::optional<Manifest>& previous,
    std::uint64_t cutoff, EngineLimits& limits, OperationBudget& budget,
    const CheckpointOptions& options) {
  // 1. The arguments, and the new segments' plan.
  auto planned = planCheckpoint(journal, previous, cutoff, options);
  if (!planned) co_return failureOf(planned);
  std::vector<ManifestSegment>& fresh = *planned;
  InstalledCheckpoint out;
  std::vector<std::string> rewritten;
  // 2. The prefix hash and the segment uploads, every task in one group: each one's permits
  // and buffer are released before the group counts it finished, and every path waits for the
  // group before this frame goes away (engine/runtime/task_group.hpp).
  TaskGroup tasks(co_await asio::this_coro::executor);
  std::optional<Sha256Lane> prefixLane = prefixAlongSegments(journal, fresh, cutoff);
  std::optional<Prefix> prefix;
  if (!prefixLane) {
    tasks.start([&]() -> asio::awaitable<Res<void>> {
      auto hashed = co_await journal.prefix(cutoff, limits::kMaxPrefixBytes);
      if (!hashed) co_return failureOf(hashed);
      prefix = *hashed;
      co_return Res<void>{};
    });
  }
  auto uploaded =
      co_await uploadSegments(journal, store, ns, fresh, prefixLane ? &*prefixLane : nullptr,
                              limits, budget, options, tasks, out, rewritten);
  if (!uploaded) tasks.fail(uploaded.error());
  CAIRN_CO_TRY(co_await tasks.wait());
  if (prefixLane) {
    journal.rememberPrefix(cutoff, *prefixLane);  // the next checkpoint extends it
    prefix = Prefix{cutoff, journal.offsetAfter(cutoff), prefixLane->finish()};
    out.prefixWithSegments = !fresh.empty();
  }
  // The prefix a manifest declares ends where the journal's frame `cutoff` ends (the
  // verifier checks the same from the other side: checkJournalPrefix).
  CAIRN_ASSERT(prefix && prefix->sequence == cutoff &&
               prefix->length == journal.offsetAfter(cutoff));
  // 3. The manifest; 4. the objects rewritten here, confirmed after the settle time.
  CAIRN_CO_TRY(co_await installManifest(journal, store, ns, previous, fresh, *prefix, budget,
                                        options, out, rewritten));
  CAIRN_CO_TRY(co_await settleRewrites(store, rewritten, options));
  co_return out;
}

}  // namespace cairn
