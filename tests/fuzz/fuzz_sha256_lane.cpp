// Fuzzes Sha256Lane against OpenSSL's SHA-256: the input is cut into a prefix of each lane and
// pieces fed together (the first two bytes choose the cuts); every digest must equal
// OpenSSL's of the same bytes, with the SHA extensions and through OpenSSL's block function.
#include <cstdlib>

#include "base/sha256.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  cairn::ByteView input(data + 2, size - 2);
  const std::size_t half = input.size() / 2;
  cairn::ByteView x = input.first(half), y = input.subspan(half);
  const std::size_t cutX = data[0] % (x.size() + 1), cutY = data[1] % (y.size() + 1);
  for (bool openSsl : {false, true}) {
    cairn::Sha256Lane::forceOpenSslBlocks(openSsl);
    cairn::Sha256Lane a, b;
    a.update(x.first(cutX));
    b.update(y.first(cutY));
    updateTogether(a, x.subspan(cutX), b, y.subspan(cutY));
    if (a.finish() != cairn::sha256(x) || b.finish() != cairn::sha256(y)) std::abort();
    cairn::Sha256Lane whole;
    whole.update(input);
    if (whole.finish() != cairn::sha256(input)) std::abort();
  }
  cairn::Sha256Lane::forceOpenSslBlocks(false);
  return 0;
}
