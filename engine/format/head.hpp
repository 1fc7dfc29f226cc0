// The 256-byte v1 checkpoint head (docs/design.md §2.5, docs/formats.md §4).
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "base/bytes.hpp"
#include "base/sha256.hpp"
#include "engine/error.hpp"
#include "engine/format/limits.hpp"
#include "engine/format/uuid.hpp"

namespace cairn {

inline constexpr std::uint8_t kHeadMagic[8] = {0x4d, 0x52, 0x44, 0x4e, 0x48, 0x45, 0x41, 0x44};
inline constexpr std::uint32_t kHeadVersion = 1;

// A complete reference to a head image: its id (SHA-256 of all 256 bytes) and its length.
struct HeadReference {
  Digest id{};
  std::uint32_t length = 0;  // 256, or 0 for "absent"
  friend bool operator==(const HeadReference&, const HeadReference&) = default;
};

// The declared fields of a head. Plain value; encodeHead() checks it.
struct HeadFields {
  Uuid ns;
  Uuid publisher;
  Uuid publication;
  Digest lineage{};
  std::uint64_t revision = 0;
  Digest manifestSha256{};
  std::uint32_t manifestLength = 0;
  std::uint64_t prefixSequence = 0;
  std::uint64_t prefixLength = 0;
  Digest prefixSha256{};
  std::optional<HeadReference> predecessor;  // absent for revision 1
  friend bool operator==(const HeadFields&, const HeadFields&) = default;
};

using HeadBytes = std::array<std::uint8_t, limits::kHeadBytes>;

// A decoded, checked head: immutable fields plus its own canonical image. Holds no reference
// to the bytes it was decoded from.
class Head {
 public:
  const HeadFields& fields() const { return fields_; }
  const HeadBytes& image() const { return image_; }
  // SHA-256 of all 256 bytes: the head's identity.
  const Digest& id() const { return id_; }
  // SHA-256 of bytes [0, 224), as stored at offset 224. Not the id.
  Digest footer() const;
  HeadReference reference() const { return {id_, limits::kHeadBytes}; }

 private:
  friend Res<Head> decodeHead(ByteView, const std::optional<HeadReference>&);
  friend Res<Head> makeHead(const HeadFields&);
  HeadFields fields_;
  HeadBytes image_{};
  Digest id_{};
};

// Checks the declarations of docs/formats.md §4 (steps 4-9) on a typed value.
Res<void> validateHeadFields(const HeadFields& f);
// Fresh canonical image; `format` error when the fields break a rule.
Res<Head> makeHead(const HeadFields& f);
inline Res<HeadBytes> encodeHead(const HeadFields& f) {
  auto h = makeHead(f);
  if (!h) return failureOf(h);
  return h->image();
}
// Bounded decode. With `expected`, the image must be exactly that reference (code `reference`).
Res<Head> decodeHead(ByteView image, const std::optional<HeadReference>& expected = std::nullopt);

}  // namespace cairn
