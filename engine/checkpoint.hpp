// Checkpoint building (DESIGN.md §2.2-§3): cut the journal since the previous checkpoint into
// segments, install every immutable segment and the manifest concurrently under the engine's
// in-flight limits and the operation's budget.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/budget.hpp"
#include "engine/format/manifest.hpp"
#include "engine/format/uuid.hpp"

namespace cairn {

class Journal;
class ObjectStore;

struct CheckpointOptions {
  // A segment closes at the first frame boundary at or after this many body bytes.
  std::uint64_t segmentTargetBytes = std::uint64_t{32} << 20;
};
inline constexpr std::uint64_t kMinSegmentTargetBytes = 1;
inline constexpr std::uint64_t kMaxSegmentTargetBytes = std::uint64_t{64} << 20;

struct InstalledCheckpoint {
  Manifest manifest;
  Bytes manifestBytes;
  Digest manifestSha256{};
  std::uint64_t segmentsWritten = 0;
  std::uint64_t segmentsReused = 0;  // already present with identical bytes
  std::uint64_t bytesUploaded = 0;
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
