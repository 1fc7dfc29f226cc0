// CRC32C (Castagnoli), unmasked: reflected polynomial 0x82F63B78, init and final xor 0xFFFFFFFF.
#pragma once

#include <cstdint>

#include "base/bytes.hpp"

namespace cairn {

// Portable table form, exposed so tests cover it on machines with SSE4.2 too.
std::uint32_t crc32cExtendPortable(std::uint32_t crc, ByteView bytes);

// Incremental form: crc32cExtend(crc32cExtend(0, a), b) == crc32c(a || b).
std::uint32_t crc32cExtend(std::uint32_t crc, ByteView bytes);
inline std::uint32_t crc32c(ByteView bytes) { return crc32cExtend(0, bytes); }

}  // namespace cairn
