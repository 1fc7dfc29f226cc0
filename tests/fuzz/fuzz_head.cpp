// Fuzzes decodeHead: any input either fails with a typed error or decodes to a head whose
// canonical image is exactly the input.
#include <cstdlib>
#include <cstring>

#include "engine/format/head.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  cairn::Bytes input(data, data + size);
  auto h = cairn::decodeHead(input);
  if (size > 0 && std::memcmp(input.data(), data, size) != 0) std::abort();  // input unchanged
  if (!h) return 0;
  auto again = cairn::makeHead(h->fields());
  if (!again || again->image() != h->image() || again->id() != h->id()) std::abort();
  if (std::memcmp(h->image().data(), data, size) != 0) std::abort();
  return 0;
}
