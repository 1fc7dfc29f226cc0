// Fuzzes the catalog logs' record decoders (catalog/format/log_record.hpp): the first byte picks
// the lake log's (even) or a table log's (odd); an accepted record re-encodes to exactly the input.
#include <cstdlib>
#include <cstring>

#include "catalog/format/log_record.hpp"

namespace {

template <class Value, class Encode>
void roundTrip(const cairn::Res<Value>& decoded, Encode encode, const std::uint8_t* data,
               std::size_t size) {
  if (!decoded) {
    if (decoded.error().code != cairn::Errc::format) std::abort();
    return;
  }
  auto again = encode(*decoded);
  if (!again || again->size() != size || std::memcmp(again->data(), data, size) != 0) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool lake = (data[0] & 1) == 0;
  cairn::ByteView record(data + 1, size - 1);
  if (lake) {
    roundTrip(cairn::catalog::decodeLakeRecord(record), cairn::catalog::encodeLakeRecord, data + 1,
              size - 1);
  } else {
    roundTrip(cairn::catalog::decodeTableCommit(record), cairn::catalog::encodeTableCommit,
              data + 1, size - 1);
  }
  return 0;
}
