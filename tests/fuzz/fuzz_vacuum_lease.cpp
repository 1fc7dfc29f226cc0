// Fuzzes decodeVacuumLease: any input either fails with the format's one code, or decodes to a
// lease whose encoding is exactly the input. Each input is also tried with its CRC32C made
// right (when it has the lease's length), so mutations reach the fields behind the CRC.
#include <cstdlib>

#include "base/crc32c.hpp"
#include "engine/format/vacuum_lease.hpp"

namespace {

void check(const cairn::Bytes& input) {
  const cairn::Bytes copy = input;
  auto lease = cairn::decodeVacuumLease(input);
  if (input != copy) std::abort();  // input unchanged
  if (!lease) {
    if (lease.error().code != cairn::Errc::format) std::abort();
    return;
  }
  if (input.size() != cairn::kVacuumLeaseBytes) std::abort();
  if (lease->expiresUnixSeconds <= lease->writtenUnixSeconds) std::abort();
  auto again = cairn::encodeVacuumLease(*lease);
  if (!again || *again != input) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  cairn::Bytes input(data, data + size);
  check(input);
  if (size == cairn::kVacuumLeaseBytes) {
    constexpr std::size_t crcAt = cairn::kVacuumLeaseBytes - 4;
    cairn::storeBe32(input.data() + crcAt, cairn::crc32c(cairn::ByteView(input).first(crcAt)));
    check(input);
  }
  return 0;
}
