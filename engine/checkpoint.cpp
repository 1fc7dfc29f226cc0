#include "engine/checkpoint.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <cstring>

#include "engine/cpu_pool.hpp"
#include "engine/format/keys.hpp"
#include "engine/format/segment.hpp"
#include "engine/journal.hpp"
#include "engine/store/object_store.hpp"
#include "engine/store_errors.hpp"

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

// Reads one segment's journal range, builds the object, and installs it create-if-absent.
asio::awaitable<Res<bool /*written*/>> installSegment(Journal& journal, ObjectStore& store,
                                                      const Uuid& ns, const Digest& lineage,
                                                      ManifestSegment& seg) {
  SegmentHeader h{lineage, seg.firstSequence, seg.count, seg.journalStart, seg.journalEnd};
  auto header = encodeSegmentHeader(h);
  if (!header) co_return Failure<Error>{header.error()};
  Bytes object = std::move(*header);
  object.reserve(seg.objectLength);
  auto read = co_await journal.readRange(seg.journalStart, seg.journalEnd,
                                         [&](ByteView chunk) -> Res<void> {
                                           object.insert(object.end(), chunk.begin(), chunk.end());
                                           return {};
                                         });
  if (!read) co_return Failure<Error>{read.error()};
  // The journal was checked frame by frame when it was opened and every append since was
  // written by us; check the body again anyway, so a damaged page never becomes a segment.
  std::optional<Res<SegmentHeader>> checked;
  co_await onCpuPool([&] {
    checked.emplace(decodeSegment(object));
    if (*checked) seg.objectSha256 = sha256(object);
  });
  auto& decoded = *checked;
  if (!decoded) {
    co_return err(Errc::format, "journal range [" + std::to_string(seg.journalStart) + ", " +
                                    std::to_string(seg.journalEnd) +
                                    ") does not form valid frames: " + decoded.error().message);
  }
  std::string key = keys::segment(ns, seg.objectSha256);
  auto created = co_await store.putIfAbsent(key, object);
  if (created) co_return true;
  if (created.error().status != StoreStatus::preconditionFailed) {
    co_return storeError(created.error(), key);
  }
  auto reused = co_await store.putImmutable(key, object);  // reads back and compares
  if (!reused) co_return storeError(reused.error(), key);
  co_return false;
}

}  // namespace

asio::awaitable<Res<InstalledCheckpoint>> installCheckpoint(
    Journal& journal, ObjectStore& store, const Uuid& ns, const std::optional<Manifest>& previous,
    std::uint64_t cutoff, EngineLimits& limits, OperationBudget& budget,
    const CheckpointOptions& options) {
  if (options.segmentTargetBytes < kMinSegmentTargetBytes ||
      options.segmentTargetBytes > kMaxSegmentTargetBytes) {
    co_return err(Errc::usage, "segment target must be 1 byte..64 MiB");
  }
  std::uint64_t from = previous ? previous->prefix.sequence : 0;
  if (cutoff > journal.endSequence() || cutoff < from) {
    co_return err(Errc::usage, "cutoff " + std::to_string(cutoff) + " is outside [" +
                                   std::to_string(from) + ", " +
                                   std::to_string(journal.endSequence()) + "]");
  }
  if (previous && (previous->lineage != journal.lineage() ||
                   previous->prefix.length != journal.offsetAfter(from))) {
    co_return err(Errc::diverged, "the previous checkpoint does not describe this journal");
  }
  std::vector<std::uint64_t> ends(cutoff + 1);
  for (std::uint64_t s = 0; s <= cutoff; ++s) ends[s] = journal.offsetAfter(s);
  std::vector<ManifestSegment> fresh = planSegments(ends, from, cutoff, options.segmentTargetBytes);

  InstalledCheckpoint out;
  std::optional<Error> failure;
  std::size_t running = 0;
  Signal finished;
  auto executor = co_await asio::this_coro::executor;
  for (ManifestSegment& seg : fresh) {
    if (failure) break;
    if (auto ok = budget.reserve(seg.objectLength, seg.count, 1,
                                 "segment " + std::to_string(seg.firstSequence));
        !ok) {
      failure = ok.error();
      break;
    }
    auto bytesPermit = co_await limits.bytes.acquire(seg.objectLength);
    auto requestPermit = co_await limits.requests.acquire(1);
    if (failure) break;
    ++running;
    asio::co_spawn(
        executor,
        [&, &seg = seg, b = std::move(bytesPermit),
         r = std::move(requestPermit)]() -> asio::awaitable<void> {
          auto written = co_await installSegment(journal, store, ns, journal.lineage(), seg);
          if (!written) {
            if (!failure) failure = written.error();
          } else if (*written) {
            ++out.segmentsWritten;
            out.bytesUploaded += seg.objectLength;
          } else {
            ++out.segmentsReused;
          }
          if (--running == 0) finished.notify();
        },
        asio::detached);
  }
  // running can reach 0 (and notify) between spawns, so wait until it is 0 now.
  while (running > 0) {
    finished.reset();
    co_await finished.wait();
  }
  if (failure) co_return Failure<Error>{*failure};

  Manifest& m = out.manifest;
  m.generation = previous ? previous->generation + 1 : 1;
  m.journalHeader = journal.header().bytes;
  m.lineage = journal.lineage();
  if (previous) m.segments = previous->segments;
  m.segments.insert(m.segments.end(), fresh.begin(), fresh.end());
  auto prefix = co_await journal.prefix(cutoff, limits::kMaxPrefixBytes);
  if (!prefix) co_return Failure<Error>{prefix.error()};
  m.prefix = *prefix;
  auto bytes = encodeManifest(m);
  if (!bytes) co_return Failure<Error>{bytes.error()};
  out.manifestBytes = std::move(*bytes);
  out.manifestSha256 = sha256(out.manifestBytes);
  std::string key = keys::manifest(ns, out.manifestSha256);
  if (auto ok = budget.reserve(out.manifestBytes.size(), 0, 1, "manifest"); !ok) {
    co_return Failure<Error>{ok.error()};
  }
  auto installed = co_await store.putImmutable(key, out.manifestBytes);
  if (!installed) co_return storeError(installed.error(), key);
  co_return out;
}

}  // namespace cairn
