// Fuzzes FrameScanner: feeding the input whole or in arbitrary chunks gives the same verdict,
// and every accepted run of frames re-encodes to the same bytes.
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
  return 0;
}
