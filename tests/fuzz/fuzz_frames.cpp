// Fuzzes FrameScanner: feeding the input whole or in arbitrary chunks gives the same verdict,
// and every accepted run of frames re-encodes to the same bytes. Then judgeTail on what follows
// the accepted frames: what it would cut ends within the 512-byte block of the last byte that
// is not zero, and zeros appended after a tail that ends at a block boundary (the writer's
// room) change neither its verdict nor what it would cut.
#include <cstdlib>
#include <cstring>

#include "engine/format/journal_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  std::size_t chunk = 1 + data[0] % 17;
  cairn::ByteView bytes(data + 1, size - 1);

  cairn::FrameScanner whole(100, 1);
  auto a = whole.feed(bytes);
  cairn::FrameScanner pieces(100, 1);
  cairn::Res<void> b;
  for (std::size_t at = 0; at < bytes.size() && b; at += chunk) {
    b = pieces.feed(bytes.subspan(at, std::min(chunk, bytes.size() - at)));
  }
  if (a.ok() != b.ok()) std::abort();
  if (whole.framesDone() != pieces.framesDone()) std::abort();
  if (whole.boundaryOffset() != pieces.boundaryOffset()) std::abort();

  // Re-encode the accepted frames from their payloads and compare.
  cairn::Bytes again;
  std::size_t at = 0;
  for (std::uint64_t seq = 1; seq <= whole.framesDone(); ++seq) {
    std::uint32_t len = cairn::loadBe32(bytes.data() + at);
    cairn::appendFrame(again, seq, bytes.subspan(at + 12, len));
    at += 16 + len;
  }
  if (at != whole.boundaryOffset() - 100 ||
      (at > 0 && std::memcmp(again.data(), bytes.data(), at) != 0)) {
    std::abort();
  }

  const cairn::ByteView tail = bytes.subspan(at);
  if (tail.empty()) return 0;
  const std::uint64_t at0 = whole.boundaryOffset();
  const auto judged = cairn::judgeTail(tail, at0, whole.nextSequence());
  if (judged.writtenBytes > tail.size()) std::abort();
  std::size_t nonZero = tail.size();
  while (nonZero > 0 && tail[nonZero - 1] == 0) --nonZero;
  if (judged.torn) {
    for (std::size_t i = judged.writtenBytes; i < tail.size(); ++i) {
      if (tail[i] != 0) std::abort();
    }
    if (nonZero > 0 && (judged.writtenBytes < nonZero ||
                        judged.writtenBytes - nonZero >= cairn::kCrashBlockBytes)) {
      std::abort();
    }
  }
  // The tail up to a block boundary, then more zeros: one verdict.
  const std::uint64_t blockEnd = (at0 + tail.size() + cairn::kCrashBlockBytes - 1) /
                                 cairn::kCrashBlockBytes * cairn::kCrashBlockBytes;
  cairn::Bytes aligned(tail.begin(), tail.end());
  aligned.resize(static_cast<std::size_t>(blockEnd - at0), 0);
  const auto first = cairn::judgeTail(aligned, at0, whole.nextSequence());
  cairn::Bytes roomy = aligned;
  roomy.resize(roomy.size() + (1 + std::size_t{data[0]}) * 61, 0);
  const auto padded = cairn::judgeTail(roomy, at0, whole.nextSequence());
  if (padded.torn != first.torn || padded.writtenBytes != first.writtenBytes) std::abort();
  return 0;
}
