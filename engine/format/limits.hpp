// Every bound of cairn's formats, in one place. docs/formats.md explains each value.
#pragma once

#include <cstdint>

namespace cairn::limits {

inline constexpr std::uint32_t kMaxDatabaseIdUnits = 32'768;
inline constexpr std::uint64_t kMinJournalHeaderBytes = 16 + 2 + 4;
inline constexpr std::uint64_t kMaxJournalHeaderBytes = 16 + 2 * 32'768 + 4;  // 65,556
inline constexpr std::uint64_t kFrameHeaderBytes = 4 + 8;
inline constexpr std::uint64_t kFrameOverheadBytes = kFrameHeaderBytes + 4;  // 16
inline constexpr std::uint32_t kMaxPayloadBytes = 16u << 20;
inline constexpr std::uint64_t kMaxPrefixFrames = 268'435'456;
inline constexpr std::uint64_t kMaxPrefixBytes = (std::uint64_t{1} << 53) - 1;
inline constexpr std::uint32_t kMaxManifestBytes = 1u << 20;
inline constexpr std::uint64_t kSegmentHeaderBytes = 76;
inline constexpr std::uint64_t kMaxSegmentBodyBytes = std::uint64_t{256} << 20;
inline constexpr std::uint64_t kMaxGeneration = (std::uint64_t{1} << 53) - 1;
inline constexpr std::uint64_t kMaxRevision = 0x7FFF'FFFF'FFFF'FFFFull;  // INT64_MAX
inline constexpr std::uint32_t kHeadBytes = 256;
inline constexpr std::uint32_t kHeadFooterOffset = 224;

static_assert(kMaxJournalHeaderBytes == 65'556);
static_assert(kFrameOverheadBytes == 16);

}  // namespace cairn::limits
