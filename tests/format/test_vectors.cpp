// Holds the C++ formats to the independent Python vectors (tests/vectors/make_vectors.py).
// Every expectation below is a literal from tests/vectors/vectors.inc; nothing is derived from
// the code under test. Hex and UUID text are decoded by helpers local to this file, so a fault
// in base/bytes.cpp cannot hide a fault elsewhere.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.hpp"
#include "base/crc32c.hpp"
#include "base/sha256.hpp"
#include "engine/error.hpp"
#include "engine/format/checks.hpp"
#include "engine/format/head.hpp"
#include "engine/format/journal_format.hpp"
#include "engine/format/keys.hpp"
#include "engine/format/limits.hpp"
#include "engine/format/manifest.hpp"
#include "engine/format/segment.hpp"
#include "engine/format/uuid.hpp"

#include "tests/format/vector_support.hpp"
#include "tests/vectors/vectors.inc"

namespace {

using namespace cairn;
namespace v = cairn::vectors;
using namespace cairn::vector_test;

// ---- helpers independent of the code under test ---------------------------------------------

Bytes raw(std::string_view s) { return Bytes(s.begin(), s.end()); }

const v::HeadVector& headVector(std::string_view name) {
  for (const auto& h : v::kHeads) {
    if (h.name == name) return h;
  }
  FAIL("no head vector named " << name);
  return v::kHeads[0];
}

const v::ManifestVector& manifestVector(std::string_view name) {
  for (const auto& m : v::kManifests) {
    if (m.name == name) return m;
  }
  FAIL("no manifest vector named " << name);
  return v::kManifests[0];
}

Head decodedHead(std::string_view name) {
  Bytes image = hex(headVector(name).imageHex);
  auto h = decodeHead(image);
  INFO("head " << name << ": " << messageOf(h));
  REQUIRE(h.ok());
  return *h;
}

HeadFields fieldsOf(const v::HeadVector& h) {
  HeadFields f;
  f.ns = uuid(h.ns);
  f.publisher = uuid(h.publisher);
  f.publication = uuid(h.publication);
  f.lineage = digest(h.lineageHex);
  f.revision = h.revision;
  f.manifestSha256 = digest(h.manifestSha256Hex);
  f.manifestLength = h.manifestLength;
  f.prefixSequence = h.prefixSequence;
  f.prefixLength = h.prefixLength;
  f.prefixSha256 = digest(h.prefixSha256Hex);
  if (h.hasPredecessor) {
    f.predecessor = HeadReference{digest(h.predecessorSha256Hex), h.predecessorLength};
  }
  return f;
}

void checkFields(const HeadFields& got, const v::HeadVector& want) {
  INFO("head " << want.name);
  CHECK(got.ns.text() == std::string(want.ns));
  CHECK(got.publisher.text() == std::string(want.publisher));
  CHECK(got.publication.text() == std::string(want.publication));
  CHECK(hexOf(got.lineage) == want.lineageHex);
  CHECK(got.revision == want.revision);
  CHECK(hexOf(got.manifestSha256) == want.manifestSha256Hex);
  CHECK(got.manifestLength == want.manifestLength);
  CHECK(got.prefixSequence == want.prefixSequence);
  CHECK(got.prefixLength == want.prefixLength);
  CHECK(hexOf(got.prefixSha256) == want.prefixSha256Hex);
  CHECK(got.predecessor.has_value() == want.hasPredecessor);
  if (got.predecessor) {
    CHECK(hexOf(got.predecessor->id) == want.predecessorSha256Hex);
    CHECK(got.predecessor->length == want.predecessorLength);
  }
  CHECK(got == fieldsOf(want));
}

Manifest manifestOf(const v::ManifestVector& m) {
  Manifest out;
  out.generation = m.generation;
  out.journalHeader = hex(m.journalHeaderHex);
  out.lineage = digest(m.lineageHex);
  out.prefix = Prefix{m.prefixSequence, m.prefixLength, digest(m.prefixSha256Hex)};
  for (const auto& s : m.segments) {
    out.segments.push_back(ManifestSegment{s.firstSequence, s.count, s.journalStart, s.journalEnd,
                                           s.objectLength, digest(s.objectSha256Hex)});
  }
  if (m.hasBase) {
    out.base = ManifestBase{
        digest(m.baseSha256Hex), m.baseLength,
        Prefix{m.basePrefixSequence, m.basePrefixLength, digest(m.basePrefixSha256Hex)}};
  }
  return out;
}

// The prefix a manifest vector rebuilds: its base's (found among the vectors by SHA-256 and
// length), or the journal header, then its own segments' bodies. Empty when a segment or a
// base is not among the vectors.
std::optional<Bytes> rebuildPrefix(const v::ManifestVector& mv) {
  Bytes out;
  if (mv.hasBase) {
    auto base = std::find_if(std::begin(v::kManifests), std::end(v::kManifests),
                             [&](const v::ManifestVector& b) {
                               return b.sha256Hex == mv.baseSha256Hex && b.length == mv.baseLength;
                             });
    if (base == std::end(v::kManifests)) return std::nullopt;
    auto prefix = rebuildPrefix(*base);
    if (!prefix) return std::nullopt;
    out = std::move(*prefix);
  } else {
    out = hex(mv.journalHeaderHex);
  }
  for (const auto& seg : mv.segments) {
    auto it =
        std::find_if(std::begin(v::kSegments), std::end(v::kSegments),
                     [&](const v::SegmentVector& s) { return s.sha256Hex == seg.objectSha256Hex; });
    if (it == std::end(v::kSegments)) return std::nullopt;
    Bytes object = hex(it->objectHex);
    CHECK(object.size() == seg.objectLength);
    out.insert(out.end(), object.begin() + 76, object.end());
  }
  return out;
}

SegmentHeader segmentHeaderOf(const v::SegmentVector& s) {
  return SegmentHeader{digest(s.lineageHex), s.firstSequence, s.count, s.journalStart,
                       s.journalEnd};
}

// ---- CRC32C and journals --------------------------------------------------------------------

TEST_CASE("vectors: CRC32C", "[vectors]") {
  bool sawCheck = false;
  for (const auto& c : v::kCrc) {
    INFO("crc vector " << c.name);
    Bytes data = hex(c.dataHex);
    CHECK(crc32c(data) == c.crc);
    CHECK(crc32cExtend(0, data) == c.crc);
    CHECK(crc32cExtendPortable(0, data) == c.crc);
    for (std::size_t cut = 0; cut <= data.size(); ++cut) {
      ByteView all(data);
      CHECK(crc32cExtend(crc32c(all.first(cut)), all.subspan(cut)) == c.crc);
      CHECK(crc32cExtendPortable(crc32cExtendPortable(0, all.first(cut)), all.subspan(cut)) ==
            c.crc);
    }
    if (c.name == "check") {
      sawCheck = true;
      CHECK(c.crc == 0xe3069283u);
      CHECK(crc32c(asBytes("123456789")) == 0xe3069283u);
    }
  }
  CHECK(sawCheck);
}

TEST_CASE("vectors: journal headers encode, decode and name their lineage", "[vectors]") {
  for (const auto& j : v::kJournalHeaders) {
    INFO("journal header " << j.name);
    Bytes want = hex(j.headerHex);
    auto enc = encodeJournalHeader(j.units);
    REQUIRE(enc.ok());
    CHECK(hexOf(*enc) == j.headerHex);

    // Followed by frame bytes: the header alone is decoded.
    Bytes input = want;
    appendFrame(input, 1, asBytes("x"));
    const Bytes copy = input;
    auto dec = decodeJournalHeader(input);
    INFO(messageOf(dec));
    REQUIRE(dec.ok());
    CHECK(input == copy);
    CHECK(dec->databaseId == std::u16string(j.units));
    CHECK(hexOf(dec->bytes) == j.headerHex);
    CHECK(hexOf(dec->lineageId()) == j.lineageHex);
    CHECK(hexOf(sha256(want)) == j.lineageHex);

    auto lin = lineageId(want);
    REQUIRE(lin.ok());
    CHECK(hexOf(*lin) == j.lineageHex);

    auto len = journalHeaderLength(ByteView(want).first(16));
    REQUIRE(len.ok());
    CHECK(*len == want.size());
  }
  // The lineage is never the hash of a display name.
  CHECK(hexOf(sha256(asBytes("db"))) == v::kDisplayNameSha256);
  CHECK(v::kDisplayNameSha256 != v::kJournalHeaders[0].lineageHex);
}

TEST_CASE("vectors: the largest journal header", "[vectors]") {
  std::u16string units;
  for (std::uint32_t i = 0; i < v::kLargestUnits; ++i) {
    units.push_back(static_cast<char16_t>(u'A' + i % 26));
  }
  auto enc = encodeJournalHeader(units);
  REQUIRE(enc.ok());
  CHECK(enc->size() == v::kLargestHeaderLength);
  CHECK(enc->size() == 65'556u);
  CHECK(hexOf(sha256(*enc)) == v::kLargestHeaderSha256);
  CHECK(hexOf(ByteView(*enc).first(16)) == v::kLargestHeaderFirst16);
  CHECK(hexOf(ByteView(*enc).last(4)) == v::kLargestHeaderCrc);

  auto dec = decodeJournalHeader(*enc);
  REQUIRE(dec.ok());
  CHECK(dec->databaseId == units);
  CHECK(hexOf(dec->lineageId()) == v::kLargestHeaderSha256);
  auto lin = lineageId(*enc);
  REQUIRE(lin.ok());
  CHECK(hexOf(*lin) == v::kLargestHeaderSha256);

  // One byte short is refused; one unit more cannot be encoded.
  CHECK(codeOf(decodeJournalHeader(ByteView(*enc).first(enc->size() - 1))) == "format");
  CHECK(codeOf(lineageId(ByteView(*enc).first(enc->size() - 1))) == "format");
  units.push_back(u'A');
  CHECK(codeOf(encodeJournalHeader(units)) == "usage");
  CHECK(codeOf(encodeJournalHeader(u"")) == "usage");
}

TEST_CASE("vectors: invalid journal headers are refused", "[vectors]") {
  for (const auto& b : v::kBadJournalHeaders) {
    INFO("bad journal header " << b.name << " (" << b.why << ")");
    Bytes input = hex(b.bytes);
    REQUIRE(input.size() == b.length);
    const Bytes copy = input;
    CHECK(codeOf(decodeJournalHeader(input)) == "format");
    CHECK(codeOf(lineageId(input)) == "format");
    CHECK(input == copy);
  }
  for (const auto& h : v::kHeaderLengths) {
    INFO("journalHeaderLength " << h.name);
    Bytes first16 = hex(h.first16Hex);
    auto len = journalHeaderLength(first16);
    if (h.length == 0) {
      CHECK(codeOf(len) == "format");
    } else {
      REQUIRE(len.ok());
      CHECK(*len == h.length);
    }
  }
}

TEST_CASE("vectors: frames", "[vectors]") {
  for (const auto& f : v::kFrames) {
    INFO("frame sequence " << f.sequence);
    Bytes payload = hex(f.payloadHex);
    Bytes out = {0xAA};  // appendFrame appends; it must not touch what is there
    appendFrame(out, f.sequence, payload);
    REQUIRE(!out.empty());
    CHECK(out[0] == 0xAA);
    CHECK(hexOf(ByteView(out).subspan(1)) == f.frameHex);
    CHECK(frameLength(payload.size()) == out.size() - 1);
    Bytes frame = hex(f.frameHex);
    CHECK(crc32c(ByteView(frame).first(frame.size() - 4)) == f.crc);
  }
}

void checkJournal(std::span<const std::string_view> records, std::string_view bytesHex,
                  std::span<const v::PrefixVector> prefixes) {
  Bytes want = hex(bytesHex);
  auto header = encodeJournalHeader(u"db");
  REQUIRE(header.ok());
  Bytes built = *header;
  for (std::size_t i = 0; i < records.size(); ++i) {
    appendFrame(built, i + 1, hex(records[i]));
  }
  CHECK(hexOf(built) == bytesHex);
  REQUIRE(prefixes.size() == records.size() + 1);
  for (const auto& p : prefixes) {
    INFO("prefix at sequence " << p.sequence);
    REQUIRE(p.length <= want.size());
    CHECK(hexOf(sha256(ByteView(want).first(p.length))) == p.sha256Hex);
  }
  // The empty prefix is the header alone; its hash is the lineage id.
  CHECK(prefixes[0].length == header->size());
  auto lin = lineageId(*header);
  REQUIRE(lin.ok());
  CHECK(hexOf(*lin) == prefixes[0].sha256Hex);

  // The scanner accepts the frames in any chunking and ends at every prefix boundary.
  ByteView frames = ByteView(want).subspan(header->size());
  for (std::size_t chunk : {std::size_t{1}, std::size_t{3}, std::size_t{7}, frames.size()}) {
    INFO("chunk " << chunk);
    FrameScanner scanner(header->size(), 1);
    for (std::size_t at = 0; at < frames.size(); at += chunk) {
      auto r = scanner.feed(frames.subspan(at, std::min(chunk, frames.size() - at)));
      INFO(messageOf(r));
      REQUIRE(r.ok());
    }
    CHECK(scanner.atBoundary());
    CHECK(scanner.framesDone() == records.size());
    CHECK(scanner.nextSequence() == records.size() + 1);
    CHECK(scanner.boundaryOffset() == want.size());
    CHECK(scanner.position() == want.size());
  }
  // A damaged byte in the last frame's payload is a fault.
  Bytes damaged(frames.begin(), frames.end());
  damaged[damaged.size() - 5] ^= 0x01;
  FrameScanner scanner(header->size(), 1);
  CHECK(codeOf(scanner.feed(damaged)) == "format");
  // A scanner expecting another first sequence refuses frame 1.
  FrameScanner wrongStart(header->size(), 2);
  CHECK(!wrongStart.feed(frames).ok());
}

TEST_CASE("vectors: journals and their prefixes", "[vectors]") {
  SECTION("small journal") {
    checkJournal(v::kJournalRecords, v::kJournalBytes, v::kJournalPrefixes);
  }
  SECTION("journal A") {
    checkJournal(v::kJournalARecords, v::kJournalABytes, v::kJournalAPrefixes);
  }
  SECTION("journal B") {
    checkJournal(v::kJournalBRecords, v::kJournalBBytes, v::kJournalBPrefixes);
  }
  // One lineage: the three journals share the header.
  CHECK(v::kJournalPrefixes[0].sha256Hex == v::kJournalAPrefixes[0].sha256Hex);
  CHECK(v::kJournalAPrefixes[0].sha256Hex == v::kJournalBPrefixes[0].sha256Hex);
  CHECK(v::kJournalPrefixes[0].sha256Hex == v::kJournalHeaders[0].lineageHex);
}

TEST_CASE("vectors: journal tails, torn or damage, and the room after them", "[vectors]") {
  for (const auto& t : v::kTails) {
    INFO("tail " << t.name);
    const Bytes tail = hex(t.tailHex);
    const TailJudgement judged = judgeTail(tail, t.boundary, t.nextSequence);
    INFO(judged.reason);
    CHECK(judged.torn == t.torn);
    if (t.torn) CHECK(judged.writtenBytes == t.writtenBytes);
  }
}

// ---- segments -------------------------------------------------------------------------------

TEST_CASE("vectors: segment objects", "[vectors]") {
  for (const auto& s : v::kSegments) {
    INFO("segment " << s.name);
    Bytes object = hex(s.objectHex);
    SegmentHeader h = segmentHeaderOf(s);
    CHECK(object.size() == s.objectLength);
    CHECK(h.objectLength() == s.objectLength);
    CHECK(hexOf(sha256(object)) == s.sha256Hex);

    auto head = encodeSegmentHeader(h);
    REQUIRE(head.ok());
    CHECK(hexOf(*head) == hexOf(ByteView(object).first(76)));
    ByteView body = ByteView(object).subspan(76);
    auto enc = encodeSegment(h, body);
    REQUIRE(enc.ok());
    CHECK(hexOf(*enc) == s.objectHex);

    const Bytes copy = object;
    auto dh = decodeSegmentHeader(ByteView(object).first(76));
    INFO(messageOf(dh));
    REQUIRE(dh.ok());
    CHECK(*dh == h);
    auto d = decodeSegment(object);
    INFO(messageOf(d));
    REQUIRE(d.ok());
    CHECK(*d == h);
    CHECK(object == copy);
  }
  for (const auto& b : v::kBadSegmentHeaders) {
    INFO("bad segment header " << b.name << " (" << b.why << ")");
    Bytes input = hex(b.bytes);
    REQUIRE(input.size() == b.length);
    const Bytes copy = input;
    CHECK(codeOf(decodeSegmentHeader(input)) == "format");
    CHECK(input == copy);
  }
  for (const auto& b : v::kBadSegments) {
    INFO("bad segment " << b.name << " (" << b.why << ")");
    Bytes input = hex(b.bytes);
    REQUIRE(input.size() == b.length);
    const Bytes copy = input;
    CHECK(codeOf(decodeSegment(input)) == "format");
    CHECK(input == copy);
  }
}

// ---- manifests ------------------------------------------------------------------------------

TEST_CASE("vectors: manifests encode and decode canonically", "[vectors]") {
  for (const auto& mv : v::kManifests) {
    INFO("manifest " << mv.name);
    REQUIRE(mv.json.size() == mv.length);
    Manifest m = manifestOf(mv);
    auto valid = validateManifest(m);
    INFO(messageOf(valid));
    CHECK(valid.ok());
    auto enc = encodeManifest(m);
    INFO(messageOf(enc));
    REQUIRE(enc.ok());
    CHECK(asChars(*enc) == mv.json);
    CHECK(enc->size() == mv.length);
    CHECK(hexOf(sha256(*enc)) == mv.sha256Hex);

    Bytes input = raw(mv.json);
    const Bytes copy = input;
    auto dec = decodeManifest(input);
    INFO(messageOf(dec));
    REQUIRE(dec.ok());
    CHECK(input == copy);
    CHECK(dec->generation == mv.generation);
    CHECK(hexOf(dec->journalHeader) == mv.journalHeaderHex);
    CHECK(hexOf(dec->lineage) == mv.lineageHex);
    CHECK(dec->prefix.sequence == mv.prefixSequence);
    CHECK(dec->prefix.length == mv.prefixLength);
    CHECK(hexOf(dec->prefix.sha256) == mv.prefixSha256Hex);
    CHECK(dec->segments.size() == mv.segments.size());
    CHECK(*dec == m);

    CHECK(dec->base.has_value() == mv.hasBase);
    CHECK(dec->format() == (mv.hasBase ? 2u : 1u));

    // A checkpoint alone rebuilds the prefix: header (or the base's prefix) + every segment
    // body, in order.
    if (auto rebuilt = rebuildPrefix(mv)) {
      CHECK(rebuilt->size() == mv.prefixLength);
      CHECK(hexOf(sha256(*rebuilt)) == mv.prefixSha256Hex);
    }
  }
  // Every chained vector's base is among the vectors, so the loop above rebuilt each one.
  for (const auto& mv : v::kManifests) {
    if (mv.hasBase) CHECK(rebuildPrefix(mv).has_value());
  }
}

TEST_CASE("vectors: non-canonical and invalid manifests are refused", "[vectors]") {
  for (const auto& b : v::kBadManifests) {
    INFO("bad manifest " << b.name << " (" << b.why << ")");
    Bytes input = raw(b.bytes);
    REQUIRE(input.size() == b.length);
    const Bytes copy = input;
    auto r = decodeManifest(input);
    CHECK(codeOf(r) == "format");
    CHECK(input == copy);
  }
  // Above 1 MiB is refused by size, whatever the content.
  Bytes big = raw(manifestVector("m1").json);
  big.resize(limits::kMaxManifestBytes + 1, ' ');
  CHECK(codeOf(decodeManifest(big)) == "format");
  CHECK(!decodeManifest(Bytes{}).ok());
}

// ---- heads ----------------------------------------------------------------------------------

TEST_CASE("vectors: heads encode to exactly the image and decode to exactly the fields",
          "[vectors]") {
  for (const auto& hv : v::kHeads) {
    INFO("head " << hv.name);
    HeadFields f = fieldsOf(hv);
    CHECK(validateHeadFields(f).ok());
    auto enc = encodeHead(f);
    INFO(messageOf(enc));
    REQUIRE(enc.ok());
    CHECK(hexOf(*enc) == hv.imageHex);
    auto made = makeHead(f);
    REQUIRE(made.ok());
    CHECK(hexOf(made->id()) == hv.idHex);
    CHECK(hexOf(made->footer()) == hv.footerHex);

    Bytes input = hex(hv.imageHex);
    const Bytes copy = input;
    auto dec = decodeHead(input);
    INFO(messageOf(dec));
    REQUIRE(dec.ok());
    CHECK(input == copy);
    checkFields(dec->fields(), hv);
    CHECK(hexOf(dec->image()) == hv.imageHex);
    CHECK(hexOf(dec->id()) == hv.idHex);
    CHECK(hexOf(dec->footer()) == hv.footerHex);
    CHECK(hexOf(sha256(input)) == hv.idHex);
    CHECK(hv.idHex != hv.footerHex);
    CHECK(dec->reference() == HeadReference{digest(hv.idHex), 256});

    // With its own complete reference it decodes too.
    auto again = decodeHead(input, HeadReference{digest(hv.idHex), 256});
    INFO(messageOf(again));
    CHECK(again.ok());

    // The decoded head keeps no reference to its input.
    std::fill(input.begin(), input.end(), std::uint8_t{0});
    CHECK(hexOf(dec->image()) == hv.imageHex);
    checkFields(dec->fields(), hv);
  }
}

TEST_CASE("vectors: invalid head images are refused with code format", "[vectors]") {
  for (const auto& b : v::kBadHeads) {
    INFO("bad head " << b.name << " (step " << b.step << ": " << b.why << ")");
    Bytes input = hex(b.imageHex);
    const Bytes copy = input;
    auto r = decodeHead(input);
    CHECK(codeOf(r) == b.code);
    CHECK(codeOf(r) == "format");
    CHECK(input == copy);
    // A reference to exactly these bytes does not make them valid.
    auto withRef = decodeHead(input, HeadReference{sha256(input), 256});
    CHECK(codeOf(withRef) == "format");
  }
}

TEST_CASE("vectors: every head length other than 256 is refused", "[vectors]") {
  Bytes image = hex(headVector("r1").imageHex);
  REQUIRE(image.size() == 256);
  for (std::size_t n = 0; n < 256; ++n) {
    INFO("length " << n);
    CHECK(codeOf(decodeHead(ByteView(image).first(n))) == "format");
  }
  Bytes longer = image;
  longer.push_back(0);
  CHECK(codeOf(decodeHead(longer)) == "format");
  longer.back() = 0xFF;
  CHECK(codeOf(decodeHead(longer)) == "format");
  CHECK(decodeHead(image).ok());
}

TEST_CASE("vectors: every bit and byte flip of a head is refused", "[vectors]") {
  for (std::string_view name : {std::string_view("r1"), std::string_view("r2")}) {
    const Bytes image = hex(headVector(name).imageHex);
    REQUIRE(decodeHead(image).ok());
    std::size_t refused = 0, tried = 0;
    for (std::size_t offset = 0; offset < 256; ++offset) {
      for (int bit = 0; bit <= 8; ++bit) {
        Bytes damaged = image;
        // bit 0..7: one bit; 8: the whole byte complemented.
        damaged[offset] ^= bit < 8 ? static_cast<std::uint8_t>(1u << bit) : std::uint8_t{0xFF};
        const Bytes copy = damaged;
        auto r = decodeHead(damaged);
        ++tried;
        if (codeOf(r) == "format") {
          ++refused;
        } else {
          FAIL_CHECK(name << ": flip at offset " << offset << " bit " << bit
                          << " gave: " << (r.ok() ? std::string("ok") : codeOf(r)));
        }
        CHECK(damaged == copy);
      }
    }
    CHECK(refused == tried);
    CHECK(tried == 256u * 9u);
  }
}

TEST_CASE("vectors: expected references", "[vectors]") {
  for (const auto& c : v::kReferenceCases) {
    INFO("reference case " << c.name);
    Bytes input = hex(c.imageHex);
    const Bytes copy = input;
    auto r = decodeHead(input, HeadReference{digest(c.expectedIdHex), c.expectedLength});
    INFO(messageOf(r));
    CHECK(codeOf(r) == c.code);
    CHECK(input == copy);
  }
  // Without an expected reference the same image decodes.
  CHECK(decodeHead(hex(headVector("r2").imageHex)).ok());
  CHECK(codeOf(decodeHead(hex(headVector("r2").imageHex), decodedHead("r1").reference())) ==
        "reference");
}

TEST_CASE("vectors: head fields that break a rule are not encoded", "[vectors]") {
  const HeadFields r1 = fieldsOf(headVector("r1"));
  const HeadFields r2 = fieldsOf(headVector("r2"));
  auto refused = [](HeadFields f, const char* what) {
    INFO(what);
    CHECK(codeOf(validateHeadFields(f)) == "format");
    CHECK(codeOf(makeHead(f)) == "format");
    CHECK(codeOf(encodeHead(f)) == "format");
  };
  HeadFields f = r1;
  f.revision = 0;
  refused(f, "revision 0");
  f = r2;
  f.revision = limits::kMaxRevision + 1;
  refused(f, "revision INT64_MAX + 1");
  f = r1;
  f.ns = Uuid{};
  refused(f, "nil namespace");
  f = r1;
  f.publisher = Uuid{};
  refused(f, "nil publisher");
  f = r1;
  f.publication = Uuid{};
  refused(f, "nil publication");
  f = r1;
  f.manifestLength = 0;
  refused(f, "manifest length 0");
  f = r1;
  f.manifestLength = limits::kMaxManifestBytes + 1;
  refused(f, "manifest length 1 MiB + 1");
  f = r1;
  f.prefixSequence = limits::kMaxPrefixFrames + 1;
  f.prefixLength = 22 + 16 * f.prefixSequence;
  refused(f, "prefix sequence 268,435,457");
  f = r1;
  f.prefixLength = 22 + 16 * f.prefixSequence - 1;
  refused(f, "prefix length below 22 + 16 s");
  f = r1;
  f.prefixLength = limits::kMaxPrefixBytes + 1;
  refused(f, "prefix length 2^53");
  f = r1;
  f.prefixSequence = 0;
  f.prefixLength = 24;
  refused(f, "empty prefix whose hash is not the lineage");
  f = r1;
  f.predecessor = r2.predecessor;
  refused(f, "revision 1 with a predecessor");
  f = r2;
  f.predecessor.reset();
  refused(f, "revision 2 without a predecessor");
  f = r2;
  f.predecessor->length = 0;
  refused(f, "predecessor length 0");
  f = r2;
  f.predecessor->length = 255;
  refused(f, "predecessor length 255");
}

// ---- pure checks ----------------------------------------------------------------------------

TEST_CASE("vectors: requireBinding", "[vectors]") {
  for (const auto& c : v::kBindingCases) {
    INFO("binding case " << c.name);
    Head h = decodedHead(c.head);
    auto r = requireBinding(h, uuid(c.ns), uuid(c.publisher), digest(c.lineageHex));
    INFO(messageOf(r));
    CHECK(codeOf(r) == c.code);
  }
}

TEST_CASE("vectors: requireSuccessor", "[vectors]") {
  for (const auto& c : v::kSuccessorCases) {
    INFO("successor case " << c.name << ": " << c.previous << " -> " << c.next);
    Head prev = decodedHead(c.previous);
    Head next = decodedHead(c.next);
    auto r = requireSuccessor(prev, next);
    INFO(messageOf(r));
    CHECK(codeOf(r) == c.code);
  }
}

TEST_CASE("vectors: bindManifest", "[vectors]") {
  for (const auto& c : v::kManifestBindingCases) {
    INFO("manifest binding case " << c.name << " (head " << c.head << ")");
    Head h = decodedHead(c.head);
    Bytes input = raw(c.manifest);
    REQUIRE(input.size() == c.length);
    const Bytes copy = input;
    auto r = bindManifest(h, input);
    INFO(messageOf(r));
    CHECK(codeOf(r) == c.code);
    CHECK(input == copy);
    if (r.ok()) {
      auto direct = decodeManifest(input);
      REQUIRE(direct.ok());
      CHECK(*r == *direct);
    }
  }
}

TEST_CASE("vectors: two graphs of one lineage pass every pure check", "[vectors]") {
  // Journals A ("a1", "a2") and B ("b1", "b2", "b3") share one header, so one lineage.
  const Uuid ns = uuid(v::kNamespace);
  const Uuid publisher = uuid(v::kPublisher);
  const Digest lineage = digest(v::kJournalAPrefixes[0].sha256Hex);
  REQUIRE(v::kJournalAPrefixes[0].sha256Hex == v::kJournalBPrefixes[0].sha256Hex);

  struct Graph {
    std::string_view r1, r2, m1, m2;
  };
  const Graph graphs[] = {{"a_r1", "a_r2", "a1", "a2"},
                          {"b_r1", "b_r2", "b1", "b2"},
                          {"a_r1", "splice_b_after_a", "a1", "b2"}};
  for (const auto& g : graphs) {
    INFO("graph " << g.r1 << " -> " << g.r2);
    Head r1 = decodedHead(g.r1);
    Head r2 = decodedHead(g.r2);
    CHECK(requireBinding(r1, ns, publisher, lineage).ok());
    CHECK(requireBinding(r2, ns, publisher, lineage).ok());
    auto succ = requireSuccessor(r1, r2);
    INFO(messageOf(succ));
    CHECK(succ.ok());
    auto m1 = bindManifest(r1, raw(manifestVector(g.m1).json));
    INFO(messageOf(m1));
    CHECK(m1.ok());
    auto m2 = bindManifest(r2, raw(manifestVector(g.m2).json));
    INFO(messageOf(m2));
    CHECK(m2.ok());
  }

  // Only the journal comparison separates them: the first commits differ, so the prefix
  // hashes at sequence 1 differ, and B's revision 1 does not match journal A.
  const Bytes journalA = hex(v::kJournalABytes);
  Head b1 = decodedHead("b_r1");
  Head a1 = decodedHead("a_r1");
  REQUIRE(b1.fields().prefixSequence == 1);
  REQUIRE(a1.fields().prefixSequence == 1);
  CHECK(a1.fields().lineage == b1.fields().lineage);
  CHECK(a1.fields().prefixSha256 != b1.fields().prefixSha256);
  CHECK(hexOf(a1.fields().prefixSha256) == v::kJournalAPrefixes[1].sha256Hex);
  CHECK(hexOf(b1.fields().prefixSha256) == v::kJournalBPrefixes[1].sha256Hex);
  CHECK(hexOf(sha256(ByteView(journalA).first(v::kJournalAPrefixes[1].length))) !=
        hexOf(b1.fields().prefixSha256));
  // The splice follows A's revision 1 but declares B's history at sequence 3, which journal A
  // does not even contain; the pure checks above accepted it all the same.
  Head splice = decodedHead("splice_b_after_a");
  CHECK(splice.fields().predecessor == a1.reference());
  CHECK(hexOf(splice.fields().prefixSha256) == v::kJournalBPrefixes[3].sha256Hex);
  CHECK(splice.fields().prefixSequence > std::size(v::kJournalARecords));
}

TEST_CASE("vectors: object keys and UUID text", "[vectors]") {
  auto ns = Uuid::parse(v::kNamespace);
  REQUIRE(ns.has_value());
  CHECK(*ns == uuid(v::kNamespace));
  CHECK(ns->text() == v::kNamespace);
  CHECK(ns->compactHex() == v::kNamespaceCompact);
  std::string upper(v::kNamespace);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](char c) { return c >= 'a' && c <= 'f' ? static_cast<char>(c - 32) : c; });
  CHECK_FALSE(Uuid::parse(upper).has_value());
  CHECK_FALSE(Uuid::parse(v::kNamespaceCompact).has_value());

  const std::string n(v::kNamespaceCompact);
  const auto& r1 = headVector("r1");
  const auto& m1 = manifestVector("m1");
  CHECK(keys::currentHead(*ns) == "ns-" + n + "-current.head");
  CHECK(keys::headCopy(*ns, digest(r1.idHex)) ==
        "ns-" + n + "-head-" + std::string(r1.idHex) + ".bin");
  CHECK(keys::manifest(*ns, digest(m1.sha256Hex)) ==
        "ns-" + n + "-manifest-" + std::string(m1.sha256Hex) + ".bin");
  const auto& s12 = v::kSegments[0];
  CHECK(keys::segment(*ns, digest(s12.sha256Hex)) ==
        "ns-" + n + "-segment-" + std::string(s12.sha256Hex) + ".bin");
}

}  // namespace
