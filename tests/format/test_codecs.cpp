// Round trips and fault cases of the codecs, complementing the independent vectors.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "base/bytes.hpp"
#include "base/crc32c.hpp"
#include "engine/format/checks.hpp"
#include "engine/format/journal_format.hpp"
#include "engine/format/keys.hpp"
#include "engine/format/manifest.hpp"
#include "engine/format/segment.hpp"

using namespace cairn;

namespace {

Bytes bytesOf(std::string_view s) {
  ByteView b = asBytes(s);
  return Bytes(b.begin(), b.end());
}

// A journal image with `n` records "r1".."rN" for the database id "db".
Bytes journalOf(int n) {
  Bytes j = *encodeJournalHeader(u"db");
  for (int i = 1; i <= n; ++i) appendFrame(j, i, bytesOf("r" + std::to_string(i)));
  return j;
}

}  // namespace

TEST_CASE("hex is lowercase and strict", "[format]") {
  CHECK(toHex(bytesOf("\x01\xab")) == "01ab");
  CHECK(fromHex("01ab") == bytesOf("\x01\xab"));
  CHECK_FALSE(fromHex("01AB").has_value());
  CHECK_FALSE(fromHex("0").has_value());
  CHECK_FALSE(fromHex("zz").has_value());
}

TEST_CASE("base64 round trips and refuses non-canonical text", "[format]") {
  for (std::string s : {"", "f", "fo", "foo", "foob", "fooba", "foobar"}) {
    std::string text = toBase64(bytesOf(s));
    CHECK(fromBase64(text) == bytesOf(s));
  }
  CHECK(toBase64(bytesOf("foobar")) == "Zm9vYmFy");
  CHECK(toBase64(bytesOf("fo")) == "Zm8=");
  CHECK_FALSE(fromBase64("Zm8").has_value());       // missing padding
  CHECK_FALSE(fromBase64("Zm9=").has_value());      // non-zero pad bits
  CHECK_FALSE(fromBase64("Zg=a").has_value());      // data after padding
  CHECK_FALSE(fromBase64("Zm8=Zm8=").has_value());  // padding before the end
  CHECK_FALSE(fromBase64("Zm 8").has_value());
  CHECK_FALSE(fromBase64("Zm8-").has_value());  // URL alphabet
}

TEST_CASE("CRC32C hardware and table forms agree", "[format]") {
  CHECK(crc32c(asBytes("123456789")) == 0xE3069283u);
  CHECK(crc32cExtendPortable(0, asBytes("123456789")) == 0xE3069283u);
  std::mt19937 rng(7);
  Bytes data(4099);
  for (auto& b : data) b = static_cast<std::uint8_t>(rng());
  for (std::size_t cut : {0u, 1u, 7u, 8u, 9u, 4000u, 4099u}) {
    ByteView all(data);
    std::uint32_t whole = crc32c(all);
    CHECK(crc32cExtend(crc32c(all.first(cut)), all.subspan(cut)) == whole);
    CHECK(crc32cExtendPortable(crc32cExtendPortable(0, all.first(cut)), all.subspan(cut)) == whole);
  }
}

TEST_CASE("CRC32C: the three-way hardware form agrees with the table form at every length",
          "[format]") {
  // Lengths around the 3 x 64, 3 x 256 and 3 x 8192 byte rounds of the interleaved form, at every
  // alignment, and incremental extension across them.
  std::mt19937 rng(11);
  Bytes data(100'008);
  for (auto& b : data) b = static_cast<std::uint8_t>(rng());
  std::vector<std::size_t> lengths;
  for (std::size_t n = 0; n <= 1600; ++n) lengths.push_back(n);
  for (std::size_t n : {4096u, 4099u, 8191u, 8192u, 24575u, 24576u, 24577u, 25343u, 25344u, 25345u,
                        49152u, 50000u, 99999u, 100000u}) {
    lengths.push_back(n);
  }
  for (std::size_t offset = 0; offset < 8; ++offset) {
    for (std::size_t n : lengths) {
      ByteView v = ByteView(data).subspan(offset, n);
      INFO("offset " << offset << ", length " << n);
      REQUIRE(crc32c(v) == crc32cExtendPortable(0, v));
    }
  }
  ByteView all = ByteView(data).first(60'000);
  std::uint32_t whole = crc32cExtendPortable(0, all);
  for (std::size_t cut : {1u, 768u, 24576u, 30001u}) {
    CHECK(crc32cExtend(crc32cExtend(0, all.first(cut)), all.subspan(cut)) == whole);
  }
}

TEST_CASE("UUID text is canonical lowercase only", "[format]") {
  auto u = Uuid::parse("0b1e7f5c-1d2e-4f30-8a4b-5c6d7e8f9012");
  REQUIRE(u.has_value());
  CHECK(u->text() == "0b1e7f5c-1d2e-4f30-8a4b-5c6d7e8f9012");
  CHECK(u->compactHex() == "0b1e7f5c1d2e4f308a4b5c6d7e8f9012");
  CHECK_FALSE(Uuid::parse("0B1E7F5C-1D2E-4F30-8A4B-5C6D7E8F9012").has_value());
  CHECK_FALSE(Uuid::parse("0b1e7f5c1d2e4f308a4b5c6d7e8f9012").has_value());
  CHECK_FALSE(Uuid::parse("0b1e7f5c-1d2e-4f30-8a4b-5c6d7e8f901").has_value());
  Uuid r = Uuid::random();
  CHECK_FALSE(r.isNil());
  CHECK((r.bytes[6] >> 4) == 4);
  CHECK(keys::currentHead(*u) == "ns-0b1e7f5c1d2e4f308a4b5c6d7e8f9012-current.head");
}

TEST_CASE("journal header encodes the exact code units and rejects faults", "[format]") {
  std::u16string id = u"db";
  id.push_back(char16_t(0xD800));  // an unpaired surrogate is a valid code unit
  auto bytes = encodeJournalHeader(id);
  REQUIRE(bytes.ok());
  CHECK(bytes->size() == 16 + 2 * 3 + 4);
  auto h = decodeJournalHeader(*bytes);
  REQUIRE(h.ok());
  CHECK(h->databaseId == id);
  CHECK(encodeJournalHeader(u"").error().code == Errc::usage);
  CHECK(encodeJournalHeader(std::u16string(32'769, u'x')).error().code == Errc::usage);
  auto largest = encodeJournalHeader(std::u16string(32'768, u'x'));
  REQUIRE(largest.ok());
  CHECK(largest->size() == limits::kMaxJournalHeaderBytes);

  for (std::size_t i = 0; i < bytes->size(); ++i) {
    Bytes bad = *bytes;
    bad[i] ^= 0x01;
    CHECK(decodeJournalHeader(bad).error().code == Errc::format);
  }
  for (std::size_t n = 0; n < bytes->size(); ++n) {
    CHECK_FALSE(decodeJournalHeader(ByteView(*bytes).first(n)).ok());
  }
}

TEST_CASE("frame scanner accepts any chunking and names the faulty frame", "[format]") {
  Bytes j = journalOf(50);
  std::uint64_t headerLength = 16 + 4 + 4;
  ByteView frames = ByteView(j).subspan(headerLength);
  for (std::size_t chunk : {1u, 3u, 12u, 16u, 17u, 1000u}) {
    FrameScanner s(headerLength, 1);
    for (std::size_t at = 0; at < frames.size(); at += chunk) {
      REQUIRE(s.feed(frames.subspan(at, std::min(chunk, frames.size() - at))).ok());
    }
    CHECK(s.atBoundary());
    CHECK(s.framesDone() == 50);
    CHECK(s.boundaryOffset() == j.size());
  }

  SECTION("a flipped payload byte fails at that frame's offset") {
    Bytes bad = j;
    std::uint64_t third = headerLength + 2 * (16 + 2);  // frames r1, r2 are 18 bytes each
    bad[third + 12] ^= 0x40;
    FrameScanner s(headerLength, 1);
    auto r = s.feed(ByteView(bad).subspan(headerLength));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::format);
    CHECK(r.error().message.find("offset " + std::to_string(third)) != std::string::npos);
    CHECK(s.framesDone() == 2);
    CHECK(s.boundaryOffset() == third);
  }
  SECTION("a sequence gap and an over-cap length are faults") {
    Bytes gap = *encodeJournalHeader(u"db");
    appendFrame(gap, 1, bytesOf("a"));
    appendFrame(gap, 3, bytesOf("b"));
    FrameScanner s(headerLength, 1);
    CHECK_FALSE(s.feed(ByteView(gap).subspan(headerLength)).ok());
    CHECK(s.framesDone() == 1);

    std::uint8_t huge[12];
    storeBe32(huge, limits::kMaxPayloadBytes + 1);
    storeBe64(huge + 4, 1);
    FrameScanner t(headerLength, 1);
    CHECK_FALSE(t.feed(ByteView(huge, 12)).ok());
  }
  SECTION("a torn tail is not a boundary") {
    FrameScanner s(headerLength, 1);
    REQUIRE(s.feed(frames.first(frames.size() - 3)).ok());
    CHECK_FALSE(s.atBoundary());
    CHECK(s.framesDone() == 49);
  }
}

TEST_CASE("segments round trip and their header is checked before any frame", "[format]") {
  Bytes j = journalOf(10);
  Digest lineage = sha256(ByteView(j).first(24));
  SegmentHeader h{lineage, 1, 10, 24, j.size()};
  auto object = encodeSegment(h, ByteView(j).subspan(24));
  REQUIRE(object.ok());
  CHECK(object->size() == h.objectLength());
  auto back = decodeSegment(*object);
  REQUIRE(back.ok());
  CHECK(*back == h);
  CHECK(decodeSegmentHeader(ByteView(*object).first(76)).ok());

  // Wrong declarations are refused by the encoder as usage errors.
  CHECK(encodeSegment(SegmentHeader{lineage, 2, 10, 24, j.size()}, ByteView(j).subspan(24))
            .error()
            .code == Errc::usage);
  CHECK(encodeSegment(SegmentHeader{lineage, 1, 9, 24, j.size()}, ByteView(j).subspan(24))
            .error()
            .code == Errc::usage);
  // A body byte flipped: the header still decodes, the whole object does not.
  Bytes bad = *object;
  bad[100] ^= 1;
  CHECK(decodeSegmentHeader(bad).ok());
  CHECK(decodeSegment(bad).error().code == Errc::format);
  // Truncated object.
  CHECK_FALSE(decodeSegment(ByteView(*object).first(object->size() - 1)).ok());
  // Header faults: every byte of the header flipped is refused by the header decoder.
  for (std::size_t i = 0; i < 76; ++i) {
    Bytes f = *object;
    f[i] ^= 0x80;
    CHECK_FALSE(decodeSegmentHeader(f).ok());
  }
  // Declarations beyond the limits.
  CHECK_FALSE(validateSegmentHeader({lineage, limits::kMaxPrefixFrames, 2, 24, 1000}).ok());
  CHECK_FALSE(
      validateSegmentHeader({lineage, 1, 1, 24, 24 + limits::kMaxSegmentBodyBytes + 1}).ok());
  CHECK_FALSE(validateSegmentHeader({lineage, 1, 1, 10, 40}).ok());
}

TEST_CASE("manifests round trip and tiling is enforced", "[format]") {
  Bytes j = journalOf(10);
  Bytes header(j.begin(), j.begin() + 24);
  std::uint64_t mid = 24 + 5 * 18;  // after r1..r5 (18 bytes each)
  std::uint64_t end = j.size();
  Manifest m;
  m.generation = 3;
  m.journalHeader = header;
  m.lineage = sha256(header);
  m.prefix = {10, end, sha256(j)};
  m.segments = {{1, 5, 24, mid, 76 + mid - 24, sha256(asBytes("a"))},
                {6, 5, mid, end, 76 + end - mid, sha256(asBytes("b"))}};
  auto bytes = encodeManifest(m);
  REQUIRE(bytes.ok());
  auto back = decodeManifest(*bytes);
  REQUIRE(back.ok());
  CHECK(*back == m);

  auto refused = [](Manifest x) { return encodeManifest(x).error().code == Errc::usage; };
  Manifest gap = m;
  gap.segments[1].journalStart += 1;
  gap.segments[1].objectLength -= 1;
  CHECK(refused(gap));
  Manifest overlapSeq = m;
  overlapSeq.segments[1].firstSequence = 5;
  CHECK(refused(overlapSeq));
  Manifest shortPrefix = m;
  shortPrefix.prefix.length -= 1;
  CHECK(refused(shortPrefix));
  Manifest badLineage = m;
  badLineage.lineage[0] ^= 1;
  CHECK(refused(badLineage));
  Manifest badLength = m;
  badLength.segments[0].objectLength += 1;
  CHECK(refused(badLength));
  Manifest zeroGeneration = m;
  zeroGeneration.generation = 0;
  CHECK(refused(zeroGeneration));

  Manifest empty;
  empty.generation = 1;
  empty.journalHeader = header;
  empty.lineage = sha256(header);
  empty.prefix = {0, 24, sha256(header)};
  CHECK(encodeManifest(empty).ok());
  empty.prefix.sha256[0] ^= 1;
  CHECK(refused(empty));

  SECTION("non-canonical spellings of a valid manifest are refused") {
    std::string text(asChars(*bytes));
    auto variant = [&](std::string from, std::string to) {
      std::string t = text;
      t.replace(t.find(from), from.size(), to);
      return decodeManifest(asBytes(t));
    };
    CHECK_FALSE(variant("\"generation\":3", "\"generation\":03").ok());
    CHECK_FALSE(variant("\"generation\":3", "\"generation\":3.0").ok());
    CHECK_FALSE(variant("\"generation\":3", "\"generation\": 3").ok());
    CHECK_FALSE(variant("{\"format\":1,", "{\"format\":1,\"format\":1,").ok());
    CHECK_FALSE(variant("\"lineage\"", "\"line\\u0061ge\"").ok());
    CHECK_FALSE(decodeManifest(asBytes(text + "\n")).ok());
    CHECK(decodeManifest(asBytes(text)).ok());
  }
  SECTION("over 1 MiB is refused before parsing") {
    Bytes big(limits::kMaxManifestBytes + 1, ' ');
    auto r = decodeManifest(big);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("1 MiB") != std::string::npos);
  }
}

TEST_CASE("heads round trip and the id differs from the footer", "[format]") {
  Bytes j = journalOf(3);
  HeadFields f;
  f.ns = *Uuid::parse("0b1e7f5c-1d2e-4f30-8a4b-5c6d7e8f9012");
  f.publisher = *Uuid::parse("11111111-2222-4333-8444-555555555555");
  f.publication = *Uuid::parse("66666666-7777-4888-9999-aaaaaaaaaaaa");
  f.lineage = *lineageId(ByteView(j).first(24));
  f.revision = 1;
  f.manifestSha256 = sha256(asBytes("m"));
  f.manifestLength = 100;
  f.prefixSequence = 3;
  f.prefixLength = j.size();
  f.prefixSha256 = sha256(j);
  auto h = makeHead(f);
  REQUIRE(h.ok());
  CHECK(h->id() != h->footer());
  CHECK(h->id() == sha256(h->image()));
  Bytes image(h->image().begin(), h->image().end());
  Bytes copy = image;
  auto d = decodeHead(image, h->reference());
  REQUIRE(d.ok());
  CHECK(d->fields() == f);
  CHECK(image == copy);
  image[0] = 0;  // the decoded head holds no reference to the input
  CHECK(d->image() == h->image());

  HeadReference wrong = h->reference();
  wrong.id[31] ^= 1;
  CHECK(decodeHead(copy, wrong).error().code == Errc::reference);

  HeadFields g = f;
  g.revision = 2;
  g.publication = *Uuid::parse("66666666-7777-4888-9999-bbbbbbbbbbbb");
  g.predecessor = h->reference();
  auto next = makeHead(g);
  REQUIRE(next.ok());
  CHECK(requireSuccessor(*h, *next).ok());
  CHECK(requireSuccessor(*next, *h).error().code == Errc::transition);
  CHECK(requireBinding(*h, f.ns, f.publisher, f.lineage).ok());
  CHECK(requireBinding(*h, f.publisher, f.publisher, f.lineage).error().code == Errc::binding);
}
