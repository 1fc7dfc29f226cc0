// Helpers for the vector tests, written independently of the code under test: hex and UUID
// text to bytes, and the error code and message of a result.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <string_view>

#include "base/bytes.hpp"
#include "base/sha256.hpp"
#include "engine/error.hpp"
#include "engine/format/uuid.hpp"

namespace cairn::vector_test {

inline int nibble(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

inline Bytes hex(std::string_view text) {
  REQUIRE(text.size() % 2 == 0);
  Bytes out;
  out.reserve(text.size() / 2);
  for (std::size_t i = 0; i < text.size(); i += 2) {
    int hi = nibble(text[i]);
    int lo = nibble(text[i + 1]);
    REQUIRE(hi >= 0);
    REQUIRE(lo >= 0);
    out.push_back(static_cast<std::uint8_t>(hi * 16 + lo));
  }
  return out;
}

inline std::string hexOf(ByteView bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (std::uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

inline Digest digest(std::string_view text) {
  Bytes raw = hex(text);
  REQUIRE(raw.size() == 32);
  Digest d{};
  std::copy(raw.begin(), raw.end(), d.begin());
  return d;
}

inline Uuid uuid(std::string_view text) {
  REQUIRE(text.size() == 36);
  std::string compact;
  for (char c : text) {
    if (c != '-') compact.push_back(c);
  }
  Bytes raw = hex(compact);
  REQUIRE(raw.size() == 16);
  Uuid u;
  std::copy(raw.begin(), raw.end(), u.bytes.begin());
  return u;
}

template <class T>
std::string codeOf(const Res<T>& r) {
  return r.ok() ? std::string() : std::string(errcName(r.error().code));
}

template <class T>
std::string messageOf(const Res<T>& r) {
  return r.ok() ? std::string("(ok)") : r.error().message;
}

}  // namespace cairn::vector_test
