// The manifest object (docs/formats.md §3): canonical (RFC 8785) JSON, at most 1 MiB.
// Format 1 lists every segment of the prefix. Format 2 (a chained manifest) names a base
// manifest (its SHA-256 and length, and the prefix it covers) and lists only the segments after
// that prefix, so a publication that adds a little to a long history writes a small manifest
// (the catalog's logs; docs/formats.md §3.1). The format is set by the value: a manifest with a
// base is format 2, one without is format 1, so one value has one encoding.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/bytes.hpp"
#include "base/sha256.hpp"
#include "engine/error.hpp"

namespace cairn {

inline constexpr std::uint32_t kManifestFormat = 1;
inline constexpr std::uint32_t kChainedManifestFormat = 2;

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

// The manifest a chained manifest extends: the object (its SHA-256 and length) and the prefix
// it declares, which this manifest's segments continue.
struct ManifestBase {
  Digest sha256{};
  std::uint64_t length = 0;
  Prefix prefix;
  friend bool operator==(const ManifestBase&, const ManifestBase&) = default;
};

struct Manifest {
  std::uint64_t generation = 0;
  Bytes journalHeader;  // the exact journal header image
  Digest lineage{};     // SHA-256 of journalHeader
  Prefix prefix;
  // Format 2: the base; `segments` then start where its prefix ends (at least one).
  std::optional<ManifestBase> base;
  std::vector<ManifestSegment> segments;  // this manifest's own segments, in journal order
  friend bool operator==(const Manifest&, const Manifest&) = default;

  std::uint32_t format() const { return base ? kChainedManifestFormat : kManifestFormat; }
};

// Checks every rule of docs/formats.md §3 on a typed value (lineage, tiling, bounds).
Res<void> validateManifest(const Manifest& m);
// Canonical bytes; `usage` error when the value breaks a rule.
Res<Bytes> encodeManifest(const Manifest& m);
// Parses with simdjson, validates, re-encodes and requires identical bytes.
Res<Manifest> decodeManifest(ByteView bytes);

}  // namespace cairn
