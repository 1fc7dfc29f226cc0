// SHA-256 through OpenSSL's EVP interface (uses the CPU's SHA extensions when present).
#pragma once

#include <array>
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
  // An independent hash in the same state (the same bytes fed so far).
  Sha256 clone() const;
  // Finishes this hash; the object is reset and can be used again.
  Digest finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

Digest sha256(ByteView bytes);

inline std::string toHex(const Digest& d) { return toHex(ByteView(d)); }

}  // namespace cairn
