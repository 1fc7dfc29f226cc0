#include "base/crc32c.hpp"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace cairn {
namespace {

constexpr std::uint32_t kPoly = 0x82F63B78u;

constexpr std::array<std::uint32_t, 256> makeTable() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr auto kTable = makeTable();

std::uint32_t extendPortable(std::uint32_t c, const std::uint8_t* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) c = kTable[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t extendSse42(std::uint32_t c, const std::uint8_t* p,
                                                            std::size_t n) {
  std::uint64_t c64 = c;
  while (n >= 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    c64 = _mm_crc32_u64(c64, w);
    p += 8;
    n -= 8;
  }
  c = static_cast<std::uint32_t>(c64);
  while (n > 0) {
    c = _mm_crc32_u8(c, *p++);
    --n;
  }
  return c;
}
const bool kHaveSse42 = __builtin_cpu_supports("sse4.2");
#endif

}  // namespace

std::uint32_t crc32cExtend(std::uint32_t crc, ByteView bytes) {
  std::uint32_t c = ~crc;
#if defined(__x86_64__)
  if (kHaveSse42) return ~extendSse42(c, bytes.data(), bytes.size());
#endif
  return ~extendPortable(c, bytes.data(), bytes.size());
}

}  // namespace cairn

namespace cairn {
std::uint32_t crc32cExtendPortable(std::uint32_t crc, ByteView bytes) {
  return ~extendPortable(~crc, bytes.data(), bytes.size());
}
}  // namespace cairn
