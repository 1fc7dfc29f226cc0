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
// The crc32 instruction takes 3 cycles and can start one per cycle, so three CRCs of adjacent
// blocks run at once, and are then combined: the register of A || B is the register of A
// carried over len(B) zero bytes, xor the register of B from zero (the update is linear). The
// carry over a fixed number of zeros is a linear map on the 32-bit register, applied through
// four byte tables (Mark Adler's method, as in zlib's crc32_combine). The CRC of every frame
// was 43 % of opening a journal; over 256 MiB of 4 KiB frames this form checks 13.8 GB/s
// here, one stream 9.4 GB/s (docs/performance.md).
using Matrix = std::array<std::uint32_t, 32>;  // GF(2) 32x32: column i is the image of bit i
using ShiftTables = std::array<std::array<std::uint32_t, 256>, 4>;

constexpr std::uint32_t times(const Matrix& m, std::uint32_t v) {
  std::uint32_t sum = 0;
  for (int i = 0; v != 0; ++i, v >>= 1) {
    if (v & 1) sum ^= m[i];
  }
  return sum;
}

constexpr Matrix squared(const Matrix& m) {
  Matrix out{};
  for (int i = 0; i < 32; ++i) out[i] = times(m, m[i]);
  return out;
}

// The tables that carry a register over `zeros` zero bytes (a power of two).
constexpr ShiftTables makeShift(std::size_t zeros) {
  Matrix op{};  // one zero bit: (c >> 1) ^ (c & 1 ? poly : 0)
  op[0] = kPoly;
  for (int i = 1; i < 32; ++i) op[i] = std::uint32_t{1} << (i - 1);
  for (int i = 0; i < 3; ++i) op = squared(op);  // eight bits: one byte
  for (std::size_t n = zeros; n > 1; n >>= 1) op = squared(op);
  ShiftTables t{};
  for (std::uint32_t b = 0; b < 256; ++b) {
    for (int k = 0; k < 4; ++k) t[k][b] = times(op, b << (8 * k));
  }
  return t;
}

constexpr std::size_t kLongBlock = 8192;
constexpr std::size_t kShortBlock = 256;
constexpr std::size_t kTinyBlock = 64;  // a record of 256 B is a frame of 272: 192 B three-way
constexpr ShiftTables kShiftLong = makeShift(kLongBlock);
constexpr ShiftTables kShiftShort = makeShift(kShortBlock);
constexpr ShiftTables kShiftTiny = makeShift(kTinyBlock);

std::uint32_t shift(const ShiftTables& t, std::uint32_t c) {
  return t[0][c & 0xFF] ^ t[1][(c >> 8) & 0xFF] ^ t[2][(c >> 16) & 0xFF] ^ t[3][c >> 24];
}

std::uint64_t load64(const std::uint8_t* p) {
  std::uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}

// The register after 3 * kBlock bytes at p.
template <std::size_t kBlock>
__attribute__((target("sse4.2"))) std::uint32_t extendThree(std::uint32_t c, const std::uint8_t* p,
                                                            const ShiftTables& t) {
  std::uint64_t c0 = c, c1 = 0, c2 = 0;
  for (std::size_t i = 0; i < kBlock; i += 8) {
    c0 = _mm_crc32_u64(c0, load64(p + i));
    c1 = _mm_crc32_u64(c1, load64(p + kBlock + i));
    c2 = _mm_crc32_u64(c2, load64(p + 2 * kBlock + i));
  }
  std::uint32_t r = shift(t, static_cast<std::uint32_t>(c0)) ^ static_cast<std::uint32_t>(c1);
  return shift(t, r) ^ static_cast<std::uint32_t>(c2);
}

__attribute__((target("sse4.2"))) std::uint32_t extendSse42(std::uint32_t c, const std::uint8_t* p,
                                                            std::size_t n) {
  for (; n >= 3 * kLongBlock; p += 3 * kLongBlock, n -= 3 * kLongBlock) {
    c = extendThree<kLongBlock>(c, p, kShiftLong);
  }
  for (; n >= 3 * kShortBlock; p += 3 * kShortBlock, n -= 3 * kShortBlock) {
    c = extendThree<kShortBlock>(c, p, kShiftShort);
  }
  if (n >= 3 * kTinyBlock) {
    c = extendThree<kTinyBlock>(c, p, kShiftTiny);
    p += 3 * kTinyBlock;
    n -= 3 * kTinyBlock;
  }
  std::uint64_t c64 = c;
  while (n >= 8) {
    c64 = _mm_crc32_u64(c64, load64(p));
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
