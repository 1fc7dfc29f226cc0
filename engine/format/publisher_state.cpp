#include "engine/format/publisher_state.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "base/crc32c.hpp"
#include "engine/format/checks.hpp"

namespace cairn {
namespace {

Failure<Error> bad(std::string what) {
  return err(Errc::format, "publisher state: " + std::move(what));
}

// A check on one head, with the head named in the message and the check's own code kept.
Failure<Error> about(const char* head, Error e) {
  e.message = "publisher state: " + std::string(head) + ": " + e.message;
  return Failure<Error>{std::move(e)};
}

constexpr std::uint32_t kHasExpected = 1, kHasPending = 2;
// Magic, version, flags, namespace, publisher, lineage and the URL length: bytes [0, 82).
constexpr std::size_t kFixedBytes = 82;
namespace pst {  // byte offsets of the fixed fields (docs/formats.md)
constexpr std::size_t version = 8, flags = 12, ns = 16, publisher = 32, lineage = 48,
                      urlLength = 80;
static_assert(urlLength + 2 == kFixedBytes);
}  // namespace pst
constexpr std::size_t kCrcBytes = 4;

bool printableUrl(std::string_view url) {
  return std::all_of(url.begin(), url.end(), [](char c) { return c >= 0x21 && c <= 0x7E; });
}

Res<void> checkIdentity(const PublisherState& s) {
  if (s.storeUrl.empty() || s.storeUrl.size() > kMaxStoreUrlBytes) {
    return bad("store URL has " + std::to_string(s.storeUrl.size()) + " bytes, not 1..4096");
  }
  if (!printableUrl(s.storeUrl)) return bad("store URL is not printable ASCII 0x21..0x7E");
  if (s.ns.isNil()) return bad("namespace UUID is nil");
  if (s.publisher.isNil()) return bad("publisher UUID is nil");
  return {};
}

Res<void> checkPrecondition(const PendingIntent& p) {
  switch (p.precondition) {
    case Precondition::ifNoneMatch:
      if (!p.etag.empty()) return bad("If-None-Match intent carries an ETag");
      return {};
    case Precondition::ifMatch:
      if (!isStrongEtag(p.etag)) return bad("If-Match intent's ETag is not one strong tag");
      return {};
  }
  return bad("precondition " + std::to_string(static_cast<int>(p.precondition)) +
             " is neither 1 (If-None-Match) nor 2 (If-Match)");
}

// Genesis is only ever written over an absent head; a successor only replaces the exact head
// the publisher expects, named by the ETag it observed for it.
Res<void> checkIntent(const PublisherState& s) {
  if (s.expected && !isStrongEtag(s.expected->etag)) {
    return bad("expected head's ETag is not one strong entity tag");
  }
  if (!s.pending) return {};
  const PendingIntent& p = *s.pending;
  if (auto ok = checkPrecondition(p); !ok) return ok;
  if (s.expected) {
    if (p.precondition != Precondition::ifMatch) {
      return bad("with an expected head the intent must be If-Match");
    }
    return {};
  }
  if (p.candidate.fields().revision != 1) {
    return bad("without an expected head the candidate must be revision 1");
  }
  if (p.precondition != Precondition::ifNoneMatch) {
    return bad("without an expected head the intent must be If-None-Match");
  }
  return {};
}

Res<void> checkHeads(const PublisherState& s) {
  if (s.expected) {
    auto ok = requireBinding(s.expected->head, s.ns, s.publisher, s.lineage);
    if (!ok) return about("expected head", ok.error());
  }
  if (s.pending) {
    auto ok = requireBinding(s.pending->candidate, s.ns, s.publisher, s.lineage);
    if (!ok) return about("pending candidate", ok.error());
  }
  if (s.expected && s.pending) {
    auto ok = requireSuccessor(s.expected->head, s.pending->candidate);
    if (!ok) return about("pending candidate", ok.error());
  }
  return {};
}

// The rules both directions share, every `format` fault before a binding fault and a binding
// fault before a transition fault, so one state has one answer.
Res<void> validate(const PublisherState& s) {
  if (auto ok = checkIdentity(s); !ok) return ok;
  if (auto ok = checkIntent(s); !ok) return ok;
  return checkHeads(s);
}

// A default-constructed Head holds no valid image: the encoder writes only images that decode
// to exactly the fields the value carries.
Res<void> requireImage(const char* what, const Head& h) {
  auto again = decodeHead(h.image());
  if (!again) return about(what, again.error());
  if (again->fields() != h.fields()) return bad(std::string(what) + ": image and fields differ");
  return {};
}

void append(Bytes& out, ByteView bytes) { out.insert(out.end(), bytes.begin(), bytes.end()); }
void appendBe16(Bytes& out, std::size_t v) {
  std::uint8_t b[2];
  storeBe16(b, static_cast<std::uint16_t>(v));
  append(out, b);
}

// Bounded reads over the body: a length is compared with what is left before it is used.
class Reader {
 public:
  explicit Reader(ByteView bytes) : rest_(bytes) {}
  bool take(std::size_t n, ByteView& out) {
    if (n > rest_.size()) return false;
    out = rest_.first(n);
    rest_ = rest_.subspan(n);
    return true;
  }
  std::size_t left() const { return rest_.size(); }

 private:
  ByteView rest_;
};

Res<Head> readHead(Reader& r, const char* what) {
  ByteView image;
  if (!r.take(limits::kHeadBytes, image)) return bad(std::string(what) + " is truncated");
  auto h = decodeHead(image);
  if (!h) return about(what, h.error());
  return h;
}

// A 16-bit length in [min, max], then that many bytes.
Res<std::string> readText(Reader& r, std::size_t min, std::size_t max, const char* what) {
  ByteView raw;
  if (!r.take(2, raw)) return bad(std::string(what) + " length is truncated");
  std::size_t n = loadBe16(raw.data());
  if (n < min || n > max) {
    return bad(std::string(what) + " length " + std::to_string(n) + " is outside " +
               std::to_string(min) + ".." + std::to_string(max));
  }
  if (!r.take(n, raw)) return bad(std::string(what) + " is truncated");
  return std::string(asChars(raw));
}

Res<ExpectedHead> readExpected(Reader& r) {
  auto head = readHead(r, "expected head");
  if (!head) return failureOf(head);
  auto etag = readText(r, 1, kMaxEtagBytes, "expected head's ETag");
  if (!etag) return failureOf(etag);
  return ExpectedHead{std::move(*head), std::move(*etag)};
}

Res<PendingIntent> readPending(Reader& r) {
  auto candidate = readHead(r, "pending candidate");
  if (!candidate) return failureOf(candidate);
  ByteView pre;
  if (!r.take(1, pre)) return bad("precondition is truncated");
  auto etag = readText(r, 0, kMaxEtagBytes, "precondition's ETag");
  if (!etag) return failureOf(etag);
  // Any byte is kept here; validate() refuses all but 1 and 2.
  return PendingIntent{std::move(*candidate), static_cast<Precondition>(pre[0]), std::move(*etag)};
}

}  // namespace

bool isStrongEtag(std::string_view etag) {
  if (etag.size() < 2 || etag.size() > kMaxEtagBytes) return false;
  if (etag.front() != '"' || etag.back() != '"') return false;
  return std::all_of(etag.begin() + 1, etag.end() - 1, [](char c) {
    auto b = static_cast<unsigned char>(c);
    return b == 0x21 || (b >= 0x23 && b <= 0x7E) || b >= 0x80;
  });
}

Res<Bytes> encodePublisherState(const PublisherState& s) {
  if (s.expected) {
    if (auto ok = requireImage("expected head", s.expected->head); !ok) {
      return failureOf(ok);
    }
  }
  if (s.pending) {
    if (auto ok = requireImage("pending candidate", s.pending->candidate); !ok) {
      return failureOf(ok);
    }
  }
  if (auto ok = validate(s); !ok) return failureOf(ok);

  Bytes out(kFixedBytes);
  std::uint8_t* p = out.data();
  std::memcpy(p, kPublisherStateMagic, 8);
  storeBe32(p + pst::version, kPublisherStateVersion);
  storeBe32(p + pst::flags, (s.expected ? kHasExpected : 0) | (s.pending ? kHasPending : 0));
  std::memcpy(p + pst::ns, s.ns.bytes.data(), 16);
  std::memcpy(p + pst::publisher, s.publisher.bytes.data(), 16);
  std::memcpy(p + pst::lineage, s.lineage.data(), 32);
  storeBe16(p + pst::urlLength, static_cast<std::uint16_t>(s.storeUrl.size()));
  append(out, asBytes(s.storeUrl));
  if (s.expected) {
    append(out, s.expected->head.image());
    appendBe16(out, s.expected->etag.size());
    append(out, asBytes(s.expected->etag));
  }
  if (s.pending) {
    append(out, s.pending->candidate.image());
    out.push_back(static_cast<std::uint8_t>(s.pending->precondition));
    appendBe16(out, s.pending->etag.size());
    append(out, asBytes(s.pending->etag));
  }
  std::uint8_t crc[4];
  storeBe32(crc, crc32c(out));
  append(out, crc);
  return out;
}

Res<PublisherState> decodePublisherState(ByteView bytes) {
  if (bytes.size() < kFixedBytes + 1 + kCrcBytes || bytes.size() > kMaxPublisherStateBytes) {
    return bad("file has " + std::to_string(bytes.size()) + " bytes, outside " +
               std::to_string(kFixedBytes + 1 + kCrcBytes) + ".." +
               std::to_string(kMaxPublisherStateBytes));
  }
  const std::uint8_t* p = bytes.data();
  if (std::memcmp(p, kPublisherStateMagic, 8) != 0) return bad("magic is not CAIRNPST");
  if (std::uint32_t v = loadBe32(p + pst::version); v != kPublisherStateVersion) {
    return bad("version " + std::to_string(v) + " is not 1");
  }
  std::uint32_t flags = loadBe32(p + pst::flags);
  if ((flags & ~(kHasExpected | kHasPending)) != 0) {
    return bad("flags " + std::to_string(flags) + " set reserved bits");
  }
  // The CRC is the last four bytes whatever the layout says; checking it first reports a torn
  // or damaged file as such rather than as whichever field the damage hit.
  std::size_t crcAt = bytes.size() - kCrcBytes;
  if (loadBe32(p + crcAt) != crc32c(bytes.first(crcAt))) return bad("CRC32C mismatch");

  PublisherState s;
  std::memcpy(s.ns.bytes.data(), p + pst::ns, 16);
  std::memcpy(s.publisher.bytes.data(), p + pst::publisher, 16);
  std::memcpy(s.lineage.data(), p + pst::lineage, 32);
  Reader r(bytes.first(crcAt).subspan(pst::urlLength));  // from the URL length to the CRC
  auto url = readText(r, 1, kMaxStoreUrlBytes, "store URL");
  if (!url) return failureOf(url);
  s.storeUrl = std::move(*url);
  if (flags & kHasExpected) {
    auto e = readExpected(r);
    if (!e) return failureOf(e);
    s.expected = std::move(*e);
  }
  if (flags & kHasPending) {
    auto i = readPending(r);
    if (!i) return failureOf(i);
    s.pending = std::move(*i);
  }
  // Exact: no byte between the last field and the CRC, so one state has one image.
  if (r.left() != 0) {
    return bad(std::to_string(r.left()) + " bytes after the last field the flags declare");
  }
  if (auto ok = validate(s); !ok) return failureOf(ok);
  return s;
}

}  // namespace cairn
