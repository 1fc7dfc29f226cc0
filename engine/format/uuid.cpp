#include "engine/format/uuid.hpp"

#include <openssl/rand.h>

#include <algorithm>
#include <stdexcept>

#include "base/bytes.hpp"

namespace cairn {

bool Uuid::isNil() const {
  return std::all_of(bytes.begin(), bytes.end(), [](std::uint8_t b) { return b == 0; });
}

std::string Uuid::compactHex() const { return toHex(ByteView(bytes)); }

std::string Uuid::text() const {
  std::string h = compactHex();
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) +
         "-" + h.substr(20, 12);
}

std::optional<Uuid> Uuid::parse(std::string_view text) {
  if (text.size() != 36) return std::nullopt;
  std::string compact;
  for (std::size_t i = 0; i < text.size(); ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash != (text[i] == '-')) return std::nullopt;
    if (!dash) compact += text[i];
  }
  auto raw = fromHex(compact);
  if (!raw) return std::nullopt;
  Uuid u;
  std::copy(raw->begin(), raw->end(), u.bytes.begin());
  return u;
}

Uuid Uuid::random() {
  Uuid u;
  if (RAND_bytes(u.bytes.data(), static_cast<int>(u.bytes.size())) != 1) {
    throw std::runtime_error("no randomness available for a UUID");
  }
  u.bytes[6] = static_cast<std::uint8_t>((u.bytes[6] & 0x0F) | 0x40);  // version 4
  u.bytes[8] = static_cast<std::uint8_t>((u.bytes[8] & 0x3F) | 0x80);  // RFC 4122 variant
  return u;
}

}  // namespace cairn
