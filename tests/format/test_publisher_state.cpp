// Holds the publisher state file (engine/format/publisher_state.hpp, docs/formats.md §5) to
// the independent Python vectors (tests/vectors/make_vectors.py), then checks round trips,
// every truncation and every bit flip, and that the encoder refuses what the decoder refuses.
// Hex and UUID text are decoded by helpers local to this file, as in test_vectors.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/bytes.hpp"
#include "engine/error.hpp"
#include "engine/format/head.hpp"
#include "engine/format/publisher_state.hpp"
#include "engine/format/uuid.hpp"

#include "tests/format/vector_support.hpp"
#include "tests/vectors/vectors.inc"

namespace {

using namespace cairn;
namespace v = cairn::vectors;
using namespace cairn::vector_test;

// ---- helpers independent of the code under test ---------------------------------------------

const v::HeadVector& headVector(std::string_view name) {
  for (const auto& h : v::kHeads) {
    if (h.name == name) return h;
  }
  FAIL("no head vector named " << name);
  return v::kHeads[0];
}

const v::PublisherStateVector& stateVector(std::string_view name) {
  for (const auto& s : v::kPublisherStates) {
    if (s.name == name) return s;
  }
  FAIL("no publisher state vector named " << name);
  return v::kPublisherStates[0];
}

Head decodedHead(std::string_view name) {
  auto h = decodeHead(hex(headVector(name).imageHex));
  INFO("head " << name << ": " << messageOf(h));
  REQUIRE(h.ok());
  return *h;
}

// The typed value the script describes, built without decodePublisherState.
PublisherState stateOf(const v::PublisherStateVector& sv) {
  PublisherState s;
  s.storeUrl = std::string(sv.storeUrl);
  s.ns = uuid(sv.ns);
  s.publisher = uuid(sv.publisher);
  s.lineage = digest(sv.lineageHex);
  if (!sv.expectedHead.empty()) {
    s.expected = ExpectedHead{decodedHead(sv.expectedHead), std::string(sv.expectedEtag)};
  }
  if (!sv.candidateHead.empty()) {
    s.pending =
        PendingIntent{decodedHead(sv.candidateHead), static_cast<Precondition>(sv.precondition),
                      std::string(sv.pendingEtag)};
  }
  return s;
}

PublisherState stateOf(std::string_view name) { return stateOf(stateVector(name)); }

void checkState(const PublisherState& got, const v::PublisherStateVector& want) {
  INFO("publisher state " << want.name);
  CHECK(got.storeUrl == want.storeUrl);
  CHECK(got.ns.text() == std::string(want.ns));
  CHECK(got.publisher.text() == std::string(want.publisher));
  CHECK(hexOf(got.lineage) == want.lineageHex);
  REQUIRE(got.expected.has_value() == !want.expectedHead.empty());
  if (got.expected) {
    CHECK(hexOf(got.expected->head.image()) == headVector(want.expectedHead).imageHex);
    CHECK(got.expected->etag == want.expectedEtag);
  }
  REQUIRE(got.pending.has_value() == !want.candidateHead.empty());
  if (got.pending) {
    CHECK(hexOf(got.pending->candidate.image()) == headVector(want.candidateHead).imageHex);
    CHECK(static_cast<int>(got.pending->precondition) == want.precondition);
    CHECK(got.pending->etag == want.pendingEtag);
  }
}

// ---- the independent vectors ----------------------------------------------------------------

TEST_CASE("publisher state: vectors decode to the script's fields and re-encode exactly",
          "[publisher_state]") {
  bool sawLargest = false;
  for (const auto& sv : v::kPublisherStates) {
    INFO("publisher state " << sv.name);
    Bytes input = hex(sv.imageHex);
    const Bytes copy = input;
    CHECK(input.size() <= kMaxPublisherStateBytes);
    sawLargest = sawLargest || input.size() == kMaxPublisherStateBytes;

    auto dec = decodePublisherState(input);
    INFO(messageOf(dec));
    REQUIRE(dec.ok());
    CHECK(input == copy);
    checkState(*dec, sv);
    auto again = encodePublisherState(*dec);
    INFO(messageOf(again));
    REQUIRE(again.ok());
    CHECK(hexOf(*again) == sv.imageHex);

    // The value built from the script's fields encodes to the same bytes.
    auto enc = encodePublisherState(stateOf(sv));
    INFO(messageOf(enc));
    REQUIRE(enc.ok());
    CHECK(hexOf(*enc) == sv.imageHex);

    // The decoded state keeps no reference to its input.
    std::fill(input.begin(), input.end(), std::uint8_t{0});
    checkState(*dec, sv);
  }
  CHECK(sawLargest);
  CHECK(kMaxPublisherStateBytes == v::kPublisherStateMaxBytes);
}

TEST_CASE("publisher state: invalid vectors are refused with the script's code",
          "[publisher_state]") {
  std::size_t binding = 0, transition = 0;
  for (const auto& b : v::kBadPublisherStates) {
    INFO("bad publisher state " << b.name << " (" << b.why << ")");
    Bytes input = hex(b.imageHex);
    const Bytes copy = input;
    auto r = decodePublisherState(input);
    INFO(messageOf(r));
    CHECK(codeOf(r) == b.code);
    CHECK(input == copy);
    binding += b.code == "binding";
    transition += b.code == "transition";
  }
  // The cross-checks keep the heads' own codes; everything else is `format`.
  CHECK(binding > 0);
  CHECK(transition > 0);
}

TEST_CASE("publisher state: every truncation and every appended byte is refused",
          "[publisher_state]") {
  for (std::string_view name : v::kPublisherStatesTruncated) {
    const Bytes image = hex(stateVector(name).imageHex);
    REQUIRE(decodePublisherState(image).ok());
    for (std::size_t n = 0; n < image.size(); ++n) {
      auto r = decodePublisherState(ByteView(image).first(n));
      if (codeOf(r) != "format") FAIL_CHECK(name << ": length " << n << " gave " << codeOf(r));
    }
    for (std::uint8_t extra : {std::uint8_t{0}, std::uint8_t{0xFF}}) {
      Bytes longer = image;
      longer.push_back(extra);
      CHECK(codeOf(decodePublisherState(longer)) == "format");
    }
  }
}

TEST_CASE("publisher state: every bit and byte flip is refused", "[publisher_state]") {
  for (const auto& sv : v::kPublisherStates) {
    const Bytes image = hex(sv.imageHex);
    REQUIRE(decodePublisherState(image).ok());
    std::size_t refused = 0, tried = 0;
    for (std::size_t offset = 0; offset < image.size(); ++offset) {
      for (int bit = 0; bit <= 8; ++bit) {
        Bytes damaged = image;
        // bit 0..7: one bit; 8: the whole byte complemented (a burst the CRC always catches).
        damaged[offset] ^= bit < 8 ? static_cast<std::uint8_t>(1u << bit) : std::uint8_t{0xFF};
        auto r = decodePublisherState(damaged);
        ++tried;
        if (codeOf(r) == "format") {
          ++refused;
        } else {
          FAIL_CHECK(sv.name << ": flip at offset " << offset << " bit " << bit
                             << " gave: " << (r.ok() ? std::string("ok") : codeOf(r)));
        }
      }
    }
    CHECK(refused == tried);
    CHECK(tried == image.size() * 9);
  }
}

// ---- round trips and the encoder's checks ---------------------------------------------------

TEST_CASE("publisher state: values round trip", "[publisher_state]") {
  PublisherState s = stateOf("successor_pending");
  SECTION("every combination of parts") {
    for (bool withExpected : {false, true}) {
      for (bool withPending : {false, true}) {
        PublisherState t = s;
        if (!withExpected) {
          t.expected.reset();
          if (withPending) t.pending = stateOf("genesis_pending").pending;
        }
        if (!withPending) t.pending.reset();
        auto enc = encodePublisherState(t);
        INFO(withExpected << withPending << ": " << messageOf(enc));
        REQUIRE(enc.ok());
        CHECK(enc->size() == 82 + t.storeUrl.size() +
                                 (withExpected ? 256 + 2 + t.expected->etag.size() : 0) +
                                 (withPending ? 256 + 3 + t.pending->etag.size() : 0) + 4);
        auto dec = decodePublisherState(*enc);
        INFO(messageOf(dec));
        REQUIRE(dec.ok());
        CHECK(dec->storeUrl == t.storeUrl);
        CHECK(dec->ns == t.ns);
        CHECK(dec->publisher == t.publisher);
        CHECK(dec->lineage == t.lineage);
        CHECK(dec->expected.has_value() == withExpected);
        CHECK(dec->pending.has_value() == withPending);
        auto again = encodePublisherState(*dec);
        REQUIRE(again.ok());
        CHECK(*again == *enc);
      }
    }
  }
  SECTION("URL and ETag bytes are kept exactly") {
    s.storeUrl = std::string(kMaxStoreUrlBytes, '~');
    s.expected->etag = "\"" + std::string(kMaxEtagBytes - 2, '\x80') + "\"";
    s.pending->etag = "\"\"";
    auto enc = encodePublisherState(s);
    INFO(messageOf(enc));
    REQUIRE(enc.ok());
    auto dec = decodePublisherState(*enc);
    REQUIRE(dec.ok());
    CHECK(dec->storeUrl == s.storeUrl);
    CHECK(dec->expected->etag == s.expected->etag);
    CHECK(dec->pending->etag == "\"\"");
  }
}

TEST_CASE("publisher state: isStrongEtag", "[publisher_state]") {
  CHECK(isStrongEtag("\"\""));
  CHECK(isStrongEtag("\"abc\""));
  CHECK(isStrongEtag("\"!#~\x80\xff\""));
  CHECK(isStrongEtag("\"" + std::string(kMaxEtagBytes - 2, 'a') + "\""));
  CHECK_FALSE(isStrongEtag("\"" + std::string(kMaxEtagBytes - 1, 'a') + "\""));
  CHECK_FALSE(isStrongEtag(""));
  CHECK_FALSE(isStrongEtag("\""));
  CHECK_FALSE(isStrongEtag("W/\"x\""));
  CHECK_FALSE(isStrongEtag("x"));
  CHECK_FALSE(isStrongEtag("\"a\"b\""));
  CHECK_FALSE(isStrongEtag("\"a b\""));
  CHECK_FALSE(isStrongEtag("\"\x7f\""));
  CHECK_FALSE(isStrongEtag(std::string_view("\"\0\"", 3)));
  CHECK_FALSE(isStrongEtag("\"abc"));
  CHECK_FALSE(isStrongEtag("abc\""));
  CHECK_FALSE(isStrongEtag("*"));
}

TEST_CASE("publisher state: the encoder refuses what the decoder refuses", "[publisher_state]") {
  const PublisherState successor = stateOf("successor_pending");
  const PublisherState genesis = stateOf("genesis_pending");
  auto refused = [](const PublisherState& s, std::string_view code, const char* what) {
    INFO(what);
    auto r = encodePublisherState(s);
    INFO(messageOf(r));
    CHECK(codeOf(r) == code);
  };
  auto with = [](PublisherState s, auto change) {
    change(s);
    return s;
  };
  REQUIRE(encodePublisherState(successor).ok());
  REQUIRE(encodePublisherState(genesis).ok());

  refused(with(successor, [](auto& s) { s.storeUrl.clear(); }), "format", "empty URL");
  refused(with(successor, [](auto& s) { s.storeUrl.assign(kMaxStoreUrlBytes + 1, 'a'); }), "format",
          "4097-byte URL");
  refused(with(successor, [](auto& s) { s.storeUrl = "s3://a b"; }), "format", "URL space");
  refused(with(successor, [](auto& s) { s.storeUrl = "s3://\x7f"; }), "format", "URL DEL");
  refused(with(successor, [](auto& s) { s.storeUrl = "s3://\xc3\xa9"; }), "format",
          "URL non-ASCII");
  refused(with(successor, [](auto& s) { s.ns = Uuid{}; }), "format", "nil namespace");
  refused(with(successor, [](auto& s) { s.publisher = Uuid{}; }), "format", "nil publisher");
  refused(with(successor, [](auto& s) { s.expected->etag = "W/\"x\""; }), "format",
          "weak expected ETag");
  refused(with(successor, [](auto& s) { s.expected->etag.clear(); }), "format",
          "empty expected ETag");
  refused(
      with(successor,
           [](auto& s) { s.expected->etag = "\"" + std::string(kMaxEtagBytes - 1, 'a') + "\""; }),
      "format", "1025-byte expected ETag");
  refused(with(successor, [](auto& s) { s.expected->head = Head{}; }), "format",
          "default-constructed expected head");
  refused(with(genesis, [](auto& s) { s.pending->candidate = Head{}; }), "format",
          "default-constructed candidate");
  refused(with(genesis, [](auto& s) { s.pending->precondition = static_cast<Precondition>(0); }),
          "format", "precondition 0");
  refused(with(genesis, [](auto& s) { s.pending->precondition = static_cast<Precondition>(3); }),
          "format", "precondition 3");
  refused(with(genesis, [](auto& s) { s.pending->etag = "\"x\""; }), "format",
          "If-None-Match with an ETag");
  refused(with(successor, [](auto& s) { s.pending->etag.clear(); }), "format",
          "If-Match without an ETag");
  refused(with(successor, [](auto& s) { s.pending->etag = "x"; }), "format",
          "If-Match with an unquoted ETag");
  refused(with(genesis,
               [](auto& s) {
                 s.pending->precondition = Precondition::ifMatch;
                 s.pending->etag = "\"x\"";
               }),
          "format", "If-Match without an expected head");
  refused(with(successor,
               [](auto& s) {
                 s.pending->precondition = Precondition::ifNoneMatch;
                 s.pending->etag.clear();
               }),
          "format", "If-None-Match over an expected head");
  refused(with(genesis, [](auto& s) { s.pending->candidate = decodedHead("r2"); }), "format",
          "revision 2 candidate without an expected head");
  refused(with(successor, [](auto& s) { s.pending->candidate = decodedHead("r2_skip_revision"); }),
          "transition", "candidate skips a revision");
  refused(with(successor, [](auto& s) { s.pending->candidate = decodedHead("r1"); }), "transition",
          "candidate is the expected head");
  refused(with(successor, [](auto& s) { s.ns = uuid(v::kNamespaceOther); }), "binding",
          "state of another namespace");
  refused(with(successor, [](auto& s) { s.publisher = uuid(v::kPublisherOther); }), "binding",
          "state of another publisher");
  refused(with(successor, [](auto& s) { s.lineage = digest(v::kDisplayNameSha256); }), "binding",
          "state of another lineage");
  refused(with(successor, [](auto& s) { s.expected->head = decodedHead("r2_other_namespace"); }),
          "binding", "expected head of another namespace");
  refused(with(genesis, [](auto& s) { s.pending->candidate = decodedHead("r1_other_lineage"); }),
          "binding", "candidate of another lineage");
}

}  // namespace
