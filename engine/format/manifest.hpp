// The manifest object (docs/formats.md §3): canonical (RFC 8785) JSON, at most 1 MiB.
#pragma once

#include <cstdint>
#include <vector>

#include "base/bytes.hpp"
#include "base/sha256.hpp"
#include "engine/format/error.hpp"

namespace cairn {

inline constexpr std::uint32_t kManifestFormat = 1;

struct ManifestSegment {
  std::uint64_t firstSequence = 0;
  std::uint32_t count = 0;
  std::uint64_t journalStart = 0;
  std::uint64_t journalEnd = 0;
  std::uint64_t objectLength = 0;
  Digest objectSha256{};
  friend bool operator==(const ManifestSegment&, const ManifestSegment&) = default;
};

struct Prefix {
  std::uint64_t sequence = 0;
  std::uint64_t length = 0;
  Digest sha256{};
  friend bool operator==(const Prefix&, const Prefix&) = default;
};

struct Manifest {
  std::uint64_t generation = 0;
  Bytes journalHeader;  // the exact journal header image
  Digest lineage{};     // SHA-256 of journalHeader
  Prefix prefix;
  std::vector<ManifestSegment> segments;
  friend bool operator==(const Manifest&, const Manifest&) = default;
};

// Checks every rule of docs/formats.md §3 on a typed value (lineage, tiling, bounds).
Res<void> validateManifest(const Manifest& m);
// Canonical bytes; `usage` error when the value breaks a rule.
Res<Bytes> encodeManifest(const Manifest& m);
// Parses with simdjson, validates, re-encodes and requires identical bytes.
Res<Manifest> decodeManifest(ByteView bytes);

}  // namespace cairn
