// Byte helpers shared by every layer: big-endian integers, hex, base64.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cairn {

using Bytes = std::vector<std::uint8_t>;
using ByteView = std::span<const std::uint8_t>;

inline ByteView asBytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}
inline std::string_view asChars(ByteView b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

inline std::uint16_t loadBe16(const std::uint8_t* p) {
  return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}
inline std::uint32_t loadBe32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}
inline std::uint64_t loadBe64(const std::uint8_t* p) {
  return (std::uint64_t{loadBe32(p)} << 32) | loadBe32(p + 4);
}
inline void storeBe16(std::uint8_t* p, std::uint16_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 8);
  p[1] = static_cast<std::uint8_t>(v);
}
inline void storeBe32(std::uint8_t* p, std::uint32_t v) {
  for (int i = 3; i >= 0; --i, v >>= 8) p[i] = static_cast<std::uint8_t>(v);
}
inline void storeBe64(std::uint8_t* p, std::uint64_t v) {
  for (int i = 7; i >= 0; --i, v >>= 8) p[i] = static_cast<std::uint8_t>(v);
}

std::string toHex(ByteView bytes);
// Lowercase hex only; nullopt for odd length, upper case or any other character.
std::optional<Bytes> fromHex(std::string_view hex);

// RFC 4648 base64, standard alphabet, '=' padding, no line breaks.
std::string toBase64(ByteView bytes);
// Text from outside (a file name, a server's message) made safe to print: printable ASCII
// stays, every other byte becomes \xHH (and a backslash \\), so no control character,
// escape sequence or invalid UTF-8 reaches a terminal or a JSON string.
std::string escapeForDisplay(std::string_view text);
// The length of the valid UTF-8 sequence that starts at text[at] (1 for ASCII; no overlong
// forms, surrogates or code points above U+10FFFF), or 0 if none starts there.
std::size_t utf8SequenceAt(std::string_view text, std::size_t at);
// Text from a server made safe to print and bounded: valid UTF-8 characters stay (so a
// message in any language reads as written), control characters and invalid bytes become
// \xHH, and the result is cut between characters at `maxBytes`, "..." marking a cut.
// With `escapeBackslash` false, a backslash stays as it is (for text already escaped once).
std::string boundedDisplay(std::string_view text, std::size_t maxBytes,
                           bool escapeBackslash = true);
// Canonical input only: padding present, pad bits zero, no whitespace.
std::optional<Bytes> fromBase64(std::string_view text);

}  // namespace cairn
