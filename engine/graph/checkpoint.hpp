// Checkpoint building (docs/design.md §5.4): cut the journal since the previous checkpoint into
// segments, install every immutable segment and the manifest concurrently under the engine's
// in-flight limits and the operation's budget.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/format/manifest.hpp"
#include "engine/format/uuid.hpp"
#include "engine/runtime/budget.hpp"

namespace cairn {

class Journal;
class ObjectStore;

// After a rewrite a publisher waits this long before it confirms the object is still there:
// longer than vacuum's HEAD-to-DELETE window and DELETE timeout together (engine/ops/vacuum.hpp).
inline constexpr std::chrono::milliseconds kRewriteSettle{2000};
// The smallest reuse age: a publication must outlast at least two settle waits.
inline constexpr std::chrono::seconds kMinReuseMaxAge{5};
// The largest reuse age a publisher accepts. Vacuum's grace must be at least twice every
// publisher's reuse age; bounding it here lets vacuum refuse every grace that some accepted
// publisher could make unsafe (VacuumOptions::publisherReuseMaxAge).
inline constexpr std::chrono::seconds kMaxReuseMaxAge{1800};

struct CheckpointOptions {
  // A segment closes at the first frame boundary at or after this many body bytes.
  std::uint64_t segmentTargetBytes = std::uint64_t{32} << 20;
  // Compaction: plan every segment again from sequence 0 (the cutoff must equal the previous
  // checkpoint's), so the new manifest has fewer, larger segments and the same prefix.
  bool compact = false;
  // An object that already exists is relied on only while it is younger than this; an older
  // one is rewritten with the same bytes, so a concurrent vacuum's grace period covers it
  // again. kMinReuseMaxAge..kMaxReuseMaxAge (at most half of every vacuum's grace,
  // docs/operations.md), and at least twice rewriteSettle. A publication that takes longer than
  // this from its first upload to its intent is abandoned.
  std::chrono::seconds reuseMaxAge{600};
  std::chrono::milliseconds rewriteSettle = kRewriteSettle;
  // Seconds since the epoch; the system clock unless a test sets it.
  std::function<std::int64_t()> now;
};
inline constexpr std::uint64_t kMinSegmentTargetBytes = 1;
inline constexpr std::uint64_t kMaxSegmentTargetBytes = std::uint64_t{64} << 20;

struct InstalledCheckpoint {
  Manifest manifest;
  Bytes manifestBytes;
  Digest manifestSha256{};
  std::uint64_t segmentsWritten = 0;
  std::uint64_t segmentsReused = 0;    // already present with identical bytes
  bool manifestWritten = false;        // created by this call
  bool manifestReused = false;         // already present with identical bytes
  std::uint64_t objectsRewritten = 0;  // present, identical, but too old to rely on: rewritten
  std::uint64_t bytesUploaded = 0;     // segments and manifest, written or rewritten
  // The prefix hash was extended over the new segments' bodies as they were hashed, from the
  // state the journal knew at the first one: the journal was not read a second time.
  bool prefixWithSegments = false;
};

// Journal cut points: the segments covering frames (fromSequence, toSequence], given the
// offset after each frame. Pure; exposed for tests.
std::vector<ManifestSegment> planSegments(const std::vector<std::uint64_t>& frameEnds,
                                          std::uint64_t fromSequence, std::uint64_t toSequence,
                                          std::uint64_t targetBytes);

// Installs the checkpoint of `journal` at `cutoff` (0 < cutoff <= endSequence, or a cutoff
// equal to the previous one for an unchanged prefix). The manifest keeps `previous`'s
// segments and appends new ones for the frames after it; its generation is previous + 1.
boost::asio::awaitable<Res<InstalledCheckpoint>> installCheckpoint(
    Journal& journal, ObjectStore& store, const Uuid& ns, const std::optional<Manifest>& previous,
    std::uint64_t cutoff, EngineLimits& limits, OperationBudget& budget,
    const CheckpointOptions& options);

}  // namespace cairn
