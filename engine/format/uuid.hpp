// A 16-byte UUID: most- then least-significant 64-bit halves, big-endian on the wire.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cairn {

struct Uuid {
  std::array<std::uint8_t, 16> bytes{};

  bool isNil() const;
  // 8-4-4-4-12 lowercase.
  std::string text() const;
  // 32 lowercase hex digits, the namespace form used in object keys.
  std::string compactHex() const;
  // Accepts the canonical 8-4-4-4-12 lowercase form only.
  static std::optional<Uuid> parse(std::string_view text);
  // A random version-4 UUID from the OS's CSPRNG.
  static Uuid random();

  friend bool operator==(const Uuid&, const Uuid&) = default;
};

}  // namespace cairn
