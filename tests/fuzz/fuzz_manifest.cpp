// Fuzzes decodeManifest: an accepted manifest re-encodes to exactly the input.
#include <cstdlib>
#include <cstring>

#include "engine/format/manifest.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto m = cairn::decodeManifest(cairn::ByteView(data, size));
  if (!m) return 0;
  auto again = cairn::encodeManifest(*m);
  if (!again || again->size() != size || std::memcmp(again->data(), data, size) != 0) {
    std::abort();
  }
  return 0;
}
