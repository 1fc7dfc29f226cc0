// Fuzzes decodePublisherState: any input either fails with one of the three codes the format
// gives, or decodes to a state whose encoding is exactly the input. Each input is also tried
// with its last four bytes replaced by the right CRC32C, so mutations reach the layout and the
// cross-checks behind the CRC instead of stopping at it.
#include <cstdlib>
#include <cstring>

#include "base/crc32c.hpp"
#include "engine/format/publisher_state.hpp"

namespace {

void check(const cairn::Bytes& input) {
  const cairn::Bytes copy = input;
  auto s = cairn::decodePublisherState(input);
  if (input != copy) std::abort();  // input unchanged
  if (!s) {
    cairn::Errc code = s.error().code;
    if (code != cairn::Errc::format && code != cairn::Errc::binding &&
        code != cairn::Errc::transition) {
      std::abort();
    }
    return;
  }
  if (input.size() > cairn::kMaxPublisherStateBytes) std::abort();
  auto again = cairn::encodePublisherState(*s);
  if (!again || *again != input) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  cairn::Bytes input(data, data + size);
  check(input);
  if (size >= 4) {
    std::size_t crcAt = size - 4;
    cairn::storeBe32(input.data() + crcAt, cairn::crc32c(cairn::ByteView(input).first(crcAt)));
    check(input);
  }
  return 0;
}
