#include "engine/format/head.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace cairn {
namespace {

Failure<Error> bad(std::string what) { return err(Errc::format, "head: " + std::move(what)); }

bool allZero(const std::uint8_t* p, std::size_t n) {
  return std::all_of(p, p + n, [](std::uint8_t b) { return b == 0; });
}

// Byte offsets of docs/design.md §2.5.
namespace off {
constexpr std::size_t magic = 0, version = 8, flags = 12, ns = 16, publisher = 32, publication = 48,
                      lineage = 64, revision = 96, manifestSha = 104, manifestLen = 136,
                      prefixSeq = 140, prefixLen = 148, prefixSha = 156, predSha = 188,
                      predLen = 220, footer = 224;
}  // namespace off

void putUuid(std::uint8_t* p, const Uuid& u) { std::memcpy(p, u.bytes.data(), 16); }
void putDigest(std::uint8_t* p, const Digest& d) { std::memcpy(p, d.data(), 32); }
Uuid getUuid(const std::uint8_t* p) {
  Uuid u;
  std::memcpy(u.bytes.data(), p, 16);
  return u;
}
Digest getDigest(const std::uint8_t* p) {
  Digest d{};
  std::memcpy(d.data(), p, 32);
  return d;
}

}  // namespace

Res<void> validateHeadFields(const HeadFields& f) {
  if (f.ns.isNil()) return bad("namespace UUID is nil");
  if (f.publisher.isNil()) return bad("publisher UUID is nil");
  if (f.publication.isNil()) return bad("publication UUID is nil");
  if (f.revision < 1 || f.revision > limits::kMaxRevision) {
    return bad("revision " + std::to_string(f.revision) + " is outside 1..INT64_MAX");
  }
  if (f.manifestLength < 1 || f.manifestLength > limits::kMaxManifestBytes) {
    return bad("manifest length " + std::to_string(f.manifestLength) + " is outside 1..1 MiB");
  }
  if (f.prefixSequence > limits::kMaxPrefixFrames) {
    return bad("prefix sequence " + std::to_string(f.prefixSequence) + " exceeds 268435456");
  }
  // No overflow: prefixSequence <= 2^28, so 16 * it + 22 < 2^33.
  std::uint64_t minLength =
      limits::kMinJournalHeaderBytes + limits::kFrameOverheadBytes * f.prefixSequence;
  if (f.prefixLength < minLength || f.prefixLength > limits::kMaxPrefixBytes) {
    return bad("prefix length " + std::to_string(f.prefixLength) + " is outside " +
               std::to_string(minLength) + "..2^53-1 for sequence " +
               std::to_string(f.prefixSequence));
  }
  if (f.prefixSequence == 0) {
    if (f.prefixLength > limits::kMaxJournalHeaderBytes) {
      return bad("an empty prefix is the header alone, at most 65556 bytes");
    }
    if (f.prefixSha256 != f.lineage) return bad("an empty prefix must hash to the lineage id");
  }
  if (f.revision == 1) {
    if (f.predecessor.has_value()) return bad("revision 1 cannot have a predecessor");
  } else {
    if (!f.predecessor.has_value()) return bad("revision above 1 needs a predecessor");
    if (f.predecessor->length != limits::kHeadBytes) return bad("predecessor length is not 256");
  }
  return {};
}

Res<Head> makeHead(const HeadFields& f) {
  if (auto ok = validateHeadFields(f); !ok) return failureOf(ok);
  Head h;
  h.fields_ = f;
  std::uint8_t* p = h.image_.data();
  std::memcpy(p + off::magic, kHeadMagic, 8);
  storeBe32(p + off::version, kHeadVersion);
  storeBe32(p + off::flags, f.predecessor ? 1 : 0);
  putUuid(p + off::ns, f.ns);
  putUuid(p + off::publisher, f.publisher);
  putUuid(p + off::publication, f.publication);
  putDigest(p + off::lineage, f.lineage);
  storeBe64(p + off::revision, f.revision);
  putDigest(p + off::manifestSha, f.manifestSha256);
  storeBe32(p + off::manifestLen, f.manifestLength);
  storeBe64(p + off::prefixSeq, f.prefixSequence);
  storeBe64(p + off::prefixLen, f.prefixLength);
  putDigest(p + off::prefixSha, f.prefixSha256);
  if (f.predecessor) {
    putDigest(p + off::predSha, f.predecessor->id);
    storeBe32(p + off::predLen, f.predecessor->length);
  }
  putDigest(p + off::footer, sha256(ByteView(p, off::footer)));
  h.id_ = sha256(h.image_);
  return h;
}

Digest Head::footer() const { return getDigest(image_.data() + off::footer); }

Res<Head> decodeHead(ByteView image, const std::optional<HeadReference>& expected) {
  if (image.size() != limits::kHeadBytes) {
    return bad("image has " + std::to_string(image.size()) + " bytes, not 256");
  }
  // Work on a private copy: nothing below reads the caller's buffer again.
  Head h;
  std::copy(image.begin(), image.end(), h.image_.begin());
  const std::uint8_t* p = h.image_.data();
  if (std::memcmp(p + off::magic, kHeadMagic, 8) != 0) return bad("magic is not MRDNHEAD");
  if (std::uint32_t v = loadBe32(p + off::version); v != kHeadVersion) {
    return bad("version " + std::to_string(v) + " is not 1");
  }
  std::uint32_t flags = loadBe32(p + off::flags);
  if (flags > 1) return bad("flags " + std::to_string(flags) + " are reserved");
  if (sha256(ByteView(p, off::footer)) != getDigest(p + off::footer)) {
    return bad("footer does not match bytes [0, 224)");
  }

  HeadFields& f = h.fields_;
  f.ns = getUuid(p + off::ns);
  f.publisher = getUuid(p + off::publisher);
  f.publication = getUuid(p + off::publication);
  f.lineage = getDigest(p + off::lineage);
  f.revision = loadBe64(p + off::revision);
  f.manifestSha256 = getDigest(p + off::manifestSha);
  f.manifestLength = loadBe32(p + off::manifestLen);
  f.prefixSequence = loadBe64(p + off::prefixSeq);
  f.prefixLength = loadBe64(p + off::prefixLen);
  f.prefixSha256 = getDigest(p + off::prefixSha);
  std::uint32_t predLength = loadBe32(p + off::predLen);
  if (flags == 0) {
    if (!allZero(p + off::predSha, 32) || predLength != 0) {
      return bad("absent predecessor is not all zero (non-canonical)");
    }
  } else {
    f.predecessor = HeadReference{getDigest(p + off::predSha), predLength};
  }
  if (auto ok = validateHeadFields(f); !ok) return failureOf(ok);

  h.id_ = sha256(h.image_);
  if (expected && (expected->id != h.id_ || expected->length != limits::kHeadBytes)) {
    return err(Errc::reference, "head " + toHex(h.id_) + " is not the expected head " +
                                    toHex(expected->id) + " (length " +
                                    std::to_string(expected->length) + ")");
  }
  return h;
}

}  // namespace cairn
