// The segment object (docs/formats.md §2): a 76-byte header, then journal frames byte for byte.
#pragma once

#include <cstdint>

#include "base/bytes.hpp"
#include "base/sha256.hpp"
#include "engine/error.hpp"
#include "engine/format/limits.hpp"

namespace cairn {

inline constexpr char kSegmentMagic[8] = {'C', 'A', 'I', 'R', 'N', 'S', 'E', 'G'};
inline constexpr std::uint32_t kSegmentVersion = 1;

struct SegmentHeader {
  Digest lineage{};
  std::uint64_t firstSequence = 0;
  std::uint32_t count = 0;
  std::uint64_t journalStart = 0;  // [start, end) of the journal file
  std::uint64_t journalEnd = 0;

  std::uint64_t bodyLength() const { return journalEnd - journalStart; }
  std::uint64_t objectLength() const { return limits::kSegmentHeaderBytes + bodyLength(); }
  friend bool operator==(const SegmentHeader&, const SegmentHeader&) = default;
};

// Checks the header's own declarations (ranges, counts, caps); used by encode and decode.
Res<void> validateSegmentHeader(const SegmentHeader& h);

// The 76 header bytes. `usage` error when the header's declarations are invalid.
Res<Bytes> encodeSegmentHeader(const SegmentHeader& h);
// A whole segment object: header + body. The body must be exactly the declared frames.
Res<Bytes> encodeSegment(const SegmentHeader& h, ByteView body);

// Decodes and checks only the first 76 bytes: no frame is touched.
Res<SegmentHeader> decodeSegmentHeader(ByteView first76);
// Decodes the header and checks every frame of a complete object.
Res<SegmentHeader> decodeSegment(ByteView object);

}  // namespace cairn
