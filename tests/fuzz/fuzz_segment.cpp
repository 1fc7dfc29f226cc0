// Fuzzes the segment decoders: a decoded header re-encodes to its 76 bytes; a decoded whole
// segment re-encodes to the whole input.
#include <cstdlib>
#include <cstring>

#include "engine/format/segment.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  cairn::ByteView input(data, size);
  auto h = cairn::decodeSegmentHeader(input);
  if (!h) return 0;
  auto header = cairn::encodeSegmentHeader(*h);
  if (!header || std::memcmp(header->data(), data, header->size()) != 0) std::abort();
  auto whole = cairn::decodeSegment(input);
  if (!whole) return 0;
  if (!(*whole == *h)) std::abort();
  auto again = cairn::encodeSegment(*h, input.subspan(cairn::limits::kSegmentHeaderBytes));
  if (!again || again->size() != size || std::memcmp(again->data(), data, size) != 0) {
    std::abort();
  }
  return 0;
}
