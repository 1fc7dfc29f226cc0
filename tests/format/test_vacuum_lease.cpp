// The vacuum lease (docs/formats.md §6) against the independent vectors of
// tests/vectors/make_vectors.py: every valid image encodes and decodes exactly, every listed
// invalid one, every other length and every flipped bit is refused with code format.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "base/bytes.hpp"
#include "engine/error.hpp"
#include "engine/format/uuid.hpp"
#include "engine/format/vacuum_lease.hpp"
#include "tests/format/vector_support.hpp"
#include "tests/vectors/vectors.inc"

namespace {

using namespace cairn;
namespace v = cairn::vectors;
using namespace cairn::vector_test;

VacuumLease leaseOf(const v::VacuumLeaseVector& vec) {
  return VacuumLease{uuid(vec.ns), uuid(vec.holder), vec.writtenUnixSeconds,
                     vec.expiresUnixSeconds};
}

}  // namespace

TEST_CASE("vectors: vacuum leases encode to exactly the image and decode to the fields",
          "[vectors][vacuum]") {
  for (const auto& vec : v::kVacuumLeases) {
    INFO("vacuum lease " << vec.name);
    const Bytes image = hex(vec.imageHex);
    REQUIRE(image.size() == kVacuumLeaseBytes);
    auto encoded = encodeVacuumLease(leaseOf(vec));
    REQUIRE(encoded.ok());
    CHECK(*encoded == image);
    auto decoded = decodeVacuumLease(image);
    REQUIRE(decoded.ok());
    CHECK(*decoded == leaseOf(vec));
  }
}

TEST_CASE("vectors: invalid vacuum leases are refused with code format", "[vectors][vacuum]") {
  for (const auto& b : v::kBadVacuumLeases) {
    INFO("bad vacuum lease " << b.name << " (" << b.why << ")");
    const Bytes input = hex(b.bytes);
    REQUIRE(input.size() == b.length);
    const Bytes copy = input;
    CHECK(codeOf(decodeVacuumLease(input)) == "format");
    CHECK(input == copy);
  }
}

TEST_CASE("vacuum lease: every flipped bit and every other length is refused",
          "[vectors][vacuum]") {
  const Bytes image = hex(v::kVacuumLeases[0].imageHex);
  for (std::size_t bit = 0; bit < image.size() * 8; ++bit) {
    Bytes damaged = image;
    damaged[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
    INFO("bit " << bit);
    CHECK(codeOf(decodeVacuumLease(damaged)) == "format");
  }
  for (std::size_t n = 0; n <= 2 * image.size(); ++n) {
    if (n == image.size()) continue;
    Bytes other(image.begin(),
                image.begin() + static_cast<std::ptrdiff_t>(std::min(n, image.size())));
    other.resize(n, 0);
    INFO("length " << n);
    CHECK(codeOf(decodeVacuumLease(other)) == "format");
  }
}

TEST_CASE("vacuum lease: fields that break a rule are not encoded", "[vectors][vacuum]") {
  VacuumLease good = leaseOf(v::kVacuumLeases[0]);
  REQUIRE(encodeVacuumLease(good).ok());
  auto refused = [](VacuumLease l) { return codeOf(encodeVacuumLease(l)); };
  VacuumLease l = good;
  l.ns = Uuid{};
  CHECK(refused(l) == "format");
  l = good;
  l.holder = Uuid{};
  CHECK(refused(l) == "format");
  l = good;
  l.expiresUnixSeconds = l.writtenUnixSeconds;
  CHECK(refused(l) == "format");
  l = good;
  l.expiresUnixSeconds = l.writtenUnixSeconds + kMaxVacuumLeaseSeconds + 1;
  CHECK(refused(l) == "format");
  l = good;
  l.writtenUnixSeconds = std::uint64_t{1} << 63;
  l.expiresUnixSeconds = l.writtenUnixSeconds + 1;
  CHECK(refused(l) == "format");
}
