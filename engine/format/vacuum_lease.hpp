// The vacuum lease (docs/formats.md §6): the object an applying vacuum holds in its namespace
// (keys::vacuumLease) from before its listing until its last DELETE, so that two vacuums never
// delete at once (docs/operations.md, "One vacuum at a time"). 64 bytes, CRC32C-sealed:
//   0  8  magic "CAIRNVLS"          28 16  holder (the run's random UUID)
//   8  4  version = 1               44  8  written (acquired or renewed), Unix seconds
//  12 16  namespace                 52  8  expires, Unix seconds (written < expires <= +3600)
//                                   60  4  CRC32C of bytes [0, 60)
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/bytes.hpp"
#include "base/result.hpp"
#include "engine/error.hpp"
#include "engine/format/uuid.hpp"

namespace cairn {

inline constexpr std::uint8_t kVacuumLeaseMagic[8] = {'C', 'A', 'I', 'R', 'N', 'V', 'L', 'S'};
inline constexpr std::uint32_t kVacuumLeaseVersion = 1;
inline constexpr std::size_t kVacuumLeaseBytes = 64;
inline constexpr std::uint64_t kMaxVacuumLeaseSeconds = 3600;

struct VacuumLease {
  Uuid ns;
  Uuid holder;
  std::uint64_t writtenUnixSeconds = 0;
  std::uint64_t expiresUnixSeconds = 0;
  friend bool operator==(const VacuumLease&, const VacuumLease&) = default;
};

// Both refuse (Errc::format) a nil namespace or holder, a time beyond 2^63 - 1, and a term
// outside 1..3600 s; decoding also any length but 64, another magic or version, a bad CRC.
Res<Bytes> encodeVacuumLease(const VacuumLease& lease);
Res<VacuumLease> decodeVacuumLease(ByteView bytes);

}  // namespace cairn
