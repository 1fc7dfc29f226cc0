// SHA-256 through OpenSSL's EVP interface (uses the CPU's SHA extensions when present), and
// Sha256Lane, for two hashes of large inputs at once.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/bytes.hpp"

namespace cairn {

using Digest = std::array<std::uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(ByteView bytes);
  // Finishes this hash; the object is reset and can be used again.
  Digest finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

Digest sha256(ByteView bytes);

// SHA-256 whose state is held here rather than in OpenSSL, so that two hashes can advance
// together: updateTogether() interleaves the blocks of both on one core with the CPU's SHA
// extensions (x86 SHA-NI), where one hash alone waits on each round's latency (on this
// machine, 1.4-1.8 times the throughput of hashing them in turn: docs/performance.md).
// Without the extensions every block goes through OpenSSL's block function. A copy is an
// independent hash in the same state.
class Sha256Lane {
 public:
  Sha256Lane();
  void update(ByteView bytes);
  // The digest of the bytes so far; the lane is unchanged and can go on.
  Digest finish() const;
  // Whether updateTogether() interleaves (the CPU has the SHA extensions).
  static bool interleaves();
  // For tests: every block through OpenSSL's block function, as on a CPU without them.
  static void forceOpenSslBlocks(bool on);

  // a.update(x) and b.update(y), with their blocks interleaved.
  friend void updateTogether(Sha256Lane& a, ByteView x, Sha256Lane& b, ByteView y);

 private:
  // Takes bytes into the pending block; returns how many it took. Hashes the block once full.
  std::size_t fill(ByteView bytes);

  std::array<std::uint32_t, 8> state_;
  std::array<std::uint8_t, 64> pending_{};
  std::size_t pendingBytes_ = 0;
  std::uint64_t length_ = 0;  // bytes fed in all
};

inline std::string toHex(const Digest& d) { return toHex(ByteView(d)); }

}  // namespace cairn
