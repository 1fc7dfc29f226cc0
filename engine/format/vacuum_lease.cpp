#include "engine/format/vacuum_lease.hpp"

#include <cstring>
#include <limits>
#include <string>

#include "base/crc32c.hpp"

namespace cairn {
namespace {

namespace vls {  // byte offsets (docs/formats.md §6)
constexpr std::size_t version = 8, ns = 12, holder = 28, written = 44, expires = 52, crc = 60;
static_assert(crc + 4 == kVacuumLeaseBytes);
}  // namespace vls

constexpr std::uint64_t kMaxUnixSeconds = std::numeric_limits<std::int64_t>::max();

Failure<Error> bad(std::string what) { return err(Errc::format, "vacuum lease: " + what); }

Res<void> check(const VacuumLease& l) {
  if (l.ns.isNil()) return bad("the namespace is the nil UUID");
  if (l.holder.isNil()) return bad("the holder is the nil UUID");
  if (l.writtenUnixSeconds > kMaxUnixSeconds || l.expiresUnixSeconds > kMaxUnixSeconds) {
    return bad("a time beyond 2^63 - 1 seconds");
  }
  if (l.expiresUnixSeconds <= l.writtenUnixSeconds) {
    return bad("it expires at or before it was written");
  }
  if (l.expiresUnixSeconds - l.writtenUnixSeconds > kMaxVacuumLeaseSeconds) {
    return bad("a term of " + std::to_string(l.expiresUnixSeconds - l.writtenUnixSeconds) +
               " s, over " + std::to_string(kMaxVacuumLeaseSeconds));
  }
  return {};
}

}  // namespace

Res<Bytes> encodeVacuumLease(const VacuumLease& lease) {
  CAIRN_TRY(check(lease));
  Bytes out(kVacuumLeaseBytes);
  std::uint8_t* p = out.data();
  std::memcpy(p, kVacuumLeaseMagic, 8);
  storeBe32(p + vls::version, kVacuumLeaseVersion);
  std::memcpy(p + vls::ns, lease.ns.bytes.data(), 16);
  std::memcpy(p + vls::holder, lease.holder.bytes.data(), 16);
  storeBe64(p + vls::written, lease.writtenUnixSeconds);
  storeBe64(p + vls::expires, lease.expiresUnixSeconds);
  storeBe32(p + vls::crc, crc32c(ByteView(out).first(vls::crc)));
  return out;
}

Res<VacuumLease> decodeVacuumLease(ByteView bytes) {
  if (bytes.size() != kVacuumLeaseBytes) {
    return bad(std::to_string(bytes.size()) + " bytes, not " + std::to_string(kVacuumLeaseBytes));
  }
  const std::uint8_t* p = bytes.data();
  if (std::memcmp(p, kVacuumLeaseMagic, 8) != 0) return bad("magic is not CAIRNVLS");
  if (std::uint32_t v = loadBe32(p + vls::version); v != kVacuumLeaseVersion) {
    return bad("version " + std::to_string(v) + " is not 1");
  }
  if (loadBe32(p + vls::crc) != crc32c(bytes.first(vls::crc))) return bad("CRC32C mismatch");
  VacuumLease l;
  std::memcpy(l.ns.bytes.data(), p + vls::ns, 16);
  std::memcpy(l.holder.bytes.data(), p + vls::holder, 16);
  l.writtenUnixSeconds = loadBe64(p + vls::written);
  l.expiresUnixSeconds = loadBe64(p + vls::expires);
  CAIRN_TRY(check(l));
  return l;
}

}  // namespace cairn
