// Sha256Lane (base/sha256.hpp): the FIPS 180-2 examples, and agreement with OpenSSL's SHA-256
// for every split of the input, alone and advanced two at a time, with the SHA extensions
// and without them.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "base/sha256.hpp"

using namespace cairn;

namespace {

std::string hexOf(const Digest& d) { return toHex(d); }

Digest laneOf(ByteView bytes) {
  Sha256Lane lane;
  lane.update(bytes);
  return lane.finish();
}

Bytes randomBytes(std::mt19937_64& rng, std::size_t n) {
  Bytes out(n);
  for (auto& b : out) b = static_cast<std::uint8_t>(rng());
  return out;
}

// Both paths: the SHA extensions where the CPU has them, and OpenSSL's block function.
struct Paths {
  explicit Paths(bool openSsl) { Sha256Lane::forceOpenSslBlocks(openSsl); }
  ~Paths() { Sha256Lane::forceOpenSslBlocks(false); }
};

}  // namespace

TEST_CASE("Sha256Lane: the FIPS 180-2 examples", "[format][sha256]") {
  if (!Sha256Lane::interleaves()) WARN("no SHA extensions here: only OpenSSL's path is tested");
  for (bool openSsl : {false, true}) {
    Paths paths(openSsl);
    CHECK(hexOf(laneOf(asBytes(std::string("abc")))) ==
          "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(hexOf(laneOf({})) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(hexOf(laneOf(
              asBytes(std::string("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")))) ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    Sha256Lane million;
    const std::string a(1000, 'a');
    for (int i = 0; i < 1000; ++i) million.update(asBytes(a));
    CHECK(hexOf(million.finish()) ==
          "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  }
}

TEST_CASE("Sha256Lane: equal to OpenSSL for every length near a block and any split",
          "[format][sha256]") {
  std::mt19937_64 rng(7);
  const Bytes data = randomBytes(rng, 300);
  for (bool openSsl : {false, true}) {
    Paths paths(openSsl);
    for (std::size_t n = 0; n <= data.size(); ++n) {
      ByteView input = ByteView(data).first(n);
      const Digest want = sha256(input);
      REQUIRE(laneOf(input) == want);
      const std::size_t split = n == 0 ? 0 : rng() % (n + 1);
      Sha256Lane two;
      two.update(input.first(split));
      Sha256Lane copy = two;  // a copy goes on independently
      two.update(input.subspan(split));
      REQUIRE(two.finish() == want);
      REQUIRE(two.finish() == want);  // finish() leaves the lane as it was
      REQUIRE(copy.finish() == sha256(input.first(split)));
    }
  }
}

TEST_CASE("Sha256Lane: two lanes advanced together equal each alone", "[format][sha256]") {
  std::mt19937_64 rng(11);
  const Bytes x = randomBytes(rng, 1 << 20);
  const Bytes y = randomBytes(rng, (1 << 20) + 77);
  for (bool openSsl : {false, true}) {
    Paths paths(openSsl);
    for (int round = 0; round < 200; ++round) {
      // Lanes that already hold some bytes (not at a block boundary), then pieces of
      // different lengths fed together, as a verification feeds an object and the prefix.
      const std::size_t startX = rng() % 200, startY = rng() % 200;
      const std::size_t lengthX = rng() % (round < 100 ? 600 : x.size() - startX - 100);
      const std::size_t lengthY = rng() % (round < 100 ? 600 : y.size() - startY);
      Sha256Lane a, b;
      a.update(ByteView(x).first(startX));
      b.update(ByteView(y).first(startY));
      updateTogether(a, ByteView(x).subspan(startX, lengthX), b,
                     ByteView(y).subspan(startY, lengthY));
      REQUIRE(a.finish() == sha256(ByteView(x).first(startX + lengthX)));
      REQUIRE(b.finish() == sha256(ByteView(y).first(startY + lengthY)));
      // And on, together again.
      updateTogether(a, ByteView(x).subspan(startX + lengthX, 100), b, {});
      REQUIRE(a.finish() == sha256(ByteView(x).first(startX + lengthX + 100)));
      REQUIRE(b.finish() == sha256(ByteView(y).first(startY + lengthY)));
    }
  }
}
