// Sha256Lane (base/sha256.hpp): SHA-256 compression with the x86 SHA extensions, one block
// stream or two interleaved, and OpenSSL's block function elsewhere.
#include <openssl/sha.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "base/sha256.hpp"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace cairn {
namespace {

constexpr std::array<std::uint32_t, 8> kInitial = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

// OpenSSL's block function (SHA-NI, AVX2 or portable, as it finds the CPU), reached through
// its low-level interface: with nothing pending, SHA256_Update of whole blocks hashes them in
// place and leaves nothing pending. Deprecated in OpenSSL 3 but kept; only `h` is used.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
void blocksOpenSsl(std::uint32_t* h, const std::uint8_t* p, std::size_t blocks) {
  if (blocks == 0) return;
  SHA256_CTX c;
  SHA256_Init(&c);
  std::memcpy(c.h, h, 32);
  SHA256_Update(&c, p, blocks * 64);
  std::memcpy(h, c.h, 32);
}
#pragma GCC diagnostic pop

#if defined(__x86_64__)
alignas(16) constexpr std::uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define CAIRN_SHA_TARGET __attribute__((target("sha,sse4.1,ssse3")))
#if defined(__clang__)
#define CAIRN_UNROLL _Pragma("unroll")
#else
#define CAIRN_UNROLL _Pragma("GCC unroll 16")
#endif

bool cpuHasSha() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const bool ssse3 = (c & bit_SSSE3) != 0, sse41 = (c & bit_SSE4_1) != 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return ssse3 && sse41 && (b & bit_SHA) != 0;
}
std::atomic<bool> forcedOpenSsl{false};

bool hasSha() {
  static const bool sha = cpuHasSha();
  return sha && !forcedOpenSsl.load(std::memory_order_relaxed);
}

// The state as the instructions hold it: ABEF and CDGH.
struct NiState {
  __m128i abef, cdgh;
};

CAIRN_SHA_TARGET NiState load(const std::uint32_t* h) {
  __m128i abcd = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)), 0xB1);
  __m128i efgh = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + 4)), 0x1B);
  return {_mm_alignr_epi8(abcd, efgh, 8), _mm_blend_epi16(efgh, abcd, 0xF0)};
}

CAIRN_SHA_TARGET void store(std::uint32_t* h, NiState s) {
  __m128i feba = _mm_shuffle_epi32(s.abef, 0x1B);
  __m128i dchg = _mm_shuffle_epi32(s.cdgh, 0xB1);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h), _mm_blend_epi16(feba, dchg, 0xF0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h + 4), _mm_alignr_epi8(dchg, feba, 8));
}

// One quad round: the message words W[i] (scheduled from the four before when i >= 4), then
// four rounds with them.
CAIRN_SHA_TARGET inline void quadRound(int i, __m128i* w, const std::uint8_t* p, __m128i& abef,
                                       __m128i& cdgh) {
  const __m128i kSwap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  if (i < 4) {
    w[i] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i)), kSwap);
  } else {
    __m128i t = _mm_sha256msg1_epu32(w[i - 4], w[i - 3]);
    t = _mm_add_epi32(t, _mm_alignr_epi8(w[i - 1], w[i - 2], 4));
    w[i] = _mm_sha256msg2_epu32(t, w[i - 1]);
  }
  const __m128i m =
      _mm_add_epi32(w[i], _mm_load_si128(reinterpret_cast<const __m128i*>(kRound + 4 * i)));
  cdgh = _mm_sha256rnds2_epu32(cdgh, abef, m);
  abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(m, 0x0E));
}

CAIRN_SHA_TARGET void blocksNi(std::uint32_t* h, const std::uint8_t* p, std::size_t blocks) {
  NiState s = load(h);
  for (; blocks > 0; --blocks, p += 64) {
    __m128i w[16];
    __m128i abef = s.abef, cdgh = s.cdgh;
    CAIRN_UNROLL
    for (int i = 0; i < 16; ++i) quadRound(i, w, p, abef, cdgh);
    s.abef = _mm_add_epi32(s.abef, abef);
    s.cdgh = _mm_add_epi32(s.cdgh, cdgh);
  }
  store(h, s);
}

// Two block streams, their quad rounds interleaved: each round waits on the one before in
// its own stream only, so the core runs the other stream's meanwhile.
CAIRN_SHA_TARGET void blocksNi2(std::uint32_t* h1, const std::uint8_t* p1, std::uint32_t* h2,
                                const std::uint8_t* p2, std::size_t blocks) {
  NiState s1 = load(h1), s2 = load(h2);
  for (; blocks > 0; --blocks, p1 += 64, p2 += 64) {
    __m128i w1[16], w2[16];
    __m128i abef1 = s1.abef, cdgh1 = s1.cdgh, abef2 = s2.abef, cdgh2 = s2.cdgh;
    CAIRN_UNROLL
    for (int i = 0; i < 16; ++i) {
      quadRound(i, w1, p1, abef1, cdgh1);
      quadRound(i, w2, p2, abef2, cdgh2);
    }
    s1.abef = _mm_add_epi32(s1.abef, abef1);
    s1.cdgh = _mm_add_epi32(s1.cdgh, cdgh1);
    s2.abef = _mm_add_epi32(s2.abef, abef2);
    s2.cdgh = _mm_add_epi32(s2.cdgh, cdgh2);
  }
  store(h1, s1);
  store(h2, s2);
}
#else
std::atomic<bool> forcedOpenSsl{false};
bool hasSha() { return false; }
#endif

void blocks(std::uint32_t* h, const std::uint8_t* p, std::size_t n) {
#if defined(__x86_64__)
  if (hasSha()) return blocksNi(h, p, n);
#endif
  blocksOpenSsl(h, p, n);
}

void blocksTogether(std::uint32_t* h1, const std::uint8_t* p1, std::uint32_t* h2,
                    const std::uint8_t* p2, std::size_t n) {
#if defined(__x86_64__)
  if (hasSha()) return blocksNi2(h1, p1, h2, p2, n);
#endif
  blocksOpenSsl(h1, p1, n);
  blocksOpenSsl(h2, p2, n);
}

}  // namespace

Sha256Lane::Sha256Lane() : state_(kInitial) {}

bool Sha256Lane::interleaves() { return hasSha(); }

void Sha256Lane::forceOpenSslBlocks(bool on) { forcedOpenSsl.store(on); }

std::size_t Sha256Lane::fill(ByteView bytes) {
  const std::size_t take = std::min(bytes.size(), pending_.size() - pendingBytes_);
  if (take > 0) std::memcpy(pending_.data() + pendingBytes_, bytes.data(), take);
  pendingBytes_ += take;
  if (pendingBytes_ == pending_.size()) {
    blocks(state_.data(), pending_.data(), 1);
    pendingBytes_ = 0;
  }
  return take;
}

void Sha256Lane::update(ByteView bytes) {
  length_ += bytes.size();
  if (pendingBytes_ > 0) bytes = bytes.subspan(fill(bytes));
  const std::size_t whole = bytes.size() / 64;
  blocks(state_.data(), bytes.data(), whole);
  bytes = bytes.subspan(whole * 64);
  if (!bytes.empty()) fill(bytes);
}

void updateTogether(Sha256Lane& a, ByteView x, Sha256Lane& b, ByteView y) {
  // Each to a block boundary, then whole blocks of both together, then the rest of each.
  const std::size_t xBytes = x.size(), yBytes = y.size();
  if (a.pendingBytes_ > 0) x = x.subspan(a.fill(x));
  if (b.pendingBytes_ > 0) y = y.subspan(b.fill(y));
  if (a.pendingBytes_ == 0 && b.pendingBytes_ == 0) {
    const std::size_t both = std::min(x.size(), y.size()) / 64;
    blocksTogether(a.state_.data(), x.data(), b.state_.data(), y.data(), both);
    x = x.subspan(both * 64);
    y = y.subspan(both * 64);
  }
  a.length_ += xBytes - x.size();
  b.length_ += yBytes - y.size();
  a.update(x);
  b.update(y);
}

Digest Sha256Lane::finish() const {
  // The padding: 0x80, zeros to 56 bytes into a block, the length in bits (big-endian).
  std::array<std::uint32_t, 8> h = state_;
  std::uint8_t last[128] = {};
  std::memcpy(last, pending_.data(), pendingBytes_);
  last[pendingBytes_] = 0x80;
  const std::size_t total = pendingBytes_ + 1 + 8 <= 64 ? 64 : 128;
  const std::uint64_t bits = length_ * 8;
  for (int i = 0; i < 8; ++i) last[total - 1 - i] = static_cast<std::uint8_t>(bits >> (8 * i));
  blocks(h.data(), last, total / 64);
  Digest d{};
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 4; ++j) d[4 * i + j] = static_cast<std::uint8_t>(h[i] >> (24 - 8 * j));
  }
  return d;
}

}  // namespace cairn
