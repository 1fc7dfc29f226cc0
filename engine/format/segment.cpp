#include "engine/format/segment.hpp"

#include <cstring>
#include <string>

#include "engine/format/journal_format.hpp"

namespace cairn {
namespace {

Failure<Error> bad(std::string what) { return err(Errc::format, "segment: " + std::move(what)); }

}  // namespace

Res<void> validateSegmentHeader(const SegmentHeader& h) {
  if (h.firstSequence < 1) return bad("first sequence must be at least 1");
  if (h.count < 1) return bad("frame count must be at least 1");
  // firstSequence + count - 1 <= kMaxPrefixFrames, without overflow.
  if (h.firstSequence > limits::kMaxPrefixFrames ||
      h.count - 1 > limits::kMaxPrefixFrames - h.firstSequence) {
    return bad("sequences " + std::to_string(h.firstSequence) + "+" + std::to_string(h.count) +
               " exceed the frame limit");
  }
  if (h.journalStart < limits::kMinJournalHeaderBytes) {
    return bad("journal start " + std::to_string(h.journalStart) + " is inside the header");
  }
  if (h.journalEnd <= h.journalStart || h.journalEnd > limits::kMaxPrefixBytes) {
    return bad("journal range [" + std::to_string(h.journalStart) + ", " +
               std::to_string(h.journalEnd) + ") is empty or out of bounds");
  }
  std::uint64_t body = h.journalEnd - h.journalStart;
  if (body / limits::kFrameOverheadBytes < h.count) {
    return bad("range of " + std::to_string(body) + " bytes cannot hold " +
               std::to_string(h.count) + " frames");
  }
  if (body > limits::kMaxSegmentBodyBytes) {
    return bad("body of " + std::to_string(body) + " bytes exceeds the " +
               std::to_string(limits::kMaxSegmentBodyBytes >> 20) + " MiB cap");
  }
  return {};
}

namespace seg {  // byte offsets of the segment header's fields (docs/formats.md)
constexpr std::size_t version = 8, lineage = 12, firstSequence = 44, count = 52, journalStart = 56,
                      journalEnd = 64, crc = 72;
static_assert(crc + 4 == limits::kSegmentHeaderBytes);
}  // namespace seg

Res<Bytes> encodeSegmentHeader(const SegmentHeader& h) {
  if (auto ok = validateSegmentHeader(h); !ok) return err(Errc::usage, ok.error().message);
  Bytes out(limits::kSegmentHeaderBytes);
  std::uint8_t* p = out.data();
  std::memcpy(p, kSegmentMagic, 8);
  storeBe32(p + seg::version, kSegmentVersion);
  std::memcpy(p + seg::lineage, h.lineage.data(), 32);
  storeBe64(p + seg::firstSequence, h.firstSequence);
  storeBe32(p + seg::count, h.count);
  storeBe64(p + seg::journalStart, h.journalStart);
  storeBe64(p + seg::journalEnd, h.journalEnd);
  storeBe32(p + seg::crc, crc32c(ByteView(p, seg::crc)));
  return out;
}

Res<SegmentHeader> decodeSegmentHeader(ByteView first76) {
  if (first76.size() < limits::kSegmentHeaderBytes) {
    return bad("header needs " + std::to_string(limits::kSegmentHeaderBytes) + " bytes, have " +
               std::to_string(first76.size()));
  }
  const std::uint8_t* p = first76.data();
  if (std::memcmp(p, kSegmentMagic, 8) != 0) return bad("magic is not CAIRNSEG");
  if (std::uint32_t v = loadBe32(p + seg::version); v != kSegmentVersion) {
    return bad("version " + std::to_string(v) + " is not 1");
  }
  if (loadBe32(p + seg::crc) != crc32c(ByteView(p, seg::crc))) return bad("header CRC32C mismatch");
  SegmentHeader h;
  std::memcpy(h.lineage.data(), p + seg::lineage, 32);
  h.firstSequence = loadBe64(p + seg::firstSequence);
  h.count = loadBe32(p + seg::count);
  h.journalStart = loadBe64(p + seg::journalStart);
  h.journalEnd = loadBe64(p + seg::journalEnd);
  if (auto ok = validateSegmentHeader(h); !ok) return failureOf(ok);
  return h;
}

namespace {
Res<void> checkBody(const SegmentHeader& h, ByteView body) {
  if (body.size() != h.bodyLength()) {
    return bad("body has " + std::to_string(body.size()) + " bytes, header declares " +
               std::to_string(h.bodyLength()));
  }
  FrameScanner scanner(h.journalStart, h.firstSequence);
  if (auto ok = scanner.feed(body); !ok) return bad(ok.error().message);
  if (!scanner.atBoundary()) return bad("body ends inside a frame");
  if (scanner.framesDone() != h.count) {
    return bad("body holds " + std::to_string(scanner.framesDone()) + " frames, header declares " +
               std::to_string(h.count));
  }
  return {};
}
}  // namespace

Res<Bytes> encodeSegment(const SegmentHeader& h, ByteView body) {
  auto header = encodeSegmentHeader(h);
  if (!header) return failureOf(header);
  if (auto ok = checkBody(h, body); !ok) return err(Errc::usage, ok.error().message);
  Bytes out = std::move(*header);
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

Res<SegmentHeader> decodeSegment(ByteView object) {
  auto h = decodeSegmentHeader(object);
  if (!h) return h;
  if (auto ok = checkBody(*h, object.subspan(limits::kSegmentHeaderBytes)); !ok) {
    return failureOf(ok);
  }
  return h;
}

}  // namespace cairn
