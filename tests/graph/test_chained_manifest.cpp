// Chained manifests (format 2, docs/formats.md §3.1) in a graph: verification walks the bases
// and checks each against the reference its successor names; a broken chain fails closed.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "base/sha256.hpp"
#include "engine/format/keys.hpp"
#include "engine/graph/heads.hpp"
#include "engine/graph/verifier.hpp"
#include "tests/graph/graph_test_support.hpp"
#include "tests/io/io_test_support.hpp"

using namespace cairn;
using io::test::runToCompletion;
using Fixture = test::CheckpointFixture;

namespace {

struct Link {
  Manifest manifest;
  Bytes bytes;
  Digest sha256{};
};

// A chained manifest over `base`: `full`'s prefix and generation, its segments after base's.
Link chainOn(const Link& base, const Manifest& full, std::uint64_t generation) {
  Link out;
  out.manifest = full;
  out.manifest.generation = generation;
  out.manifest.base = ManifestBase{base.sha256, base.bytes.size(), base.manifest.prefix};
  out.manifest.segments.clear();
  for (const auto& s : full.segments) {
    if (s.firstSequence > base.manifest.prefix.sequence) out.manifest.segments.push_back(s);
  }
  auto encoded = encodeManifest(out.manifest);
  REQUIRE(encoded.ok());
  out.bytes = *encoded;
  out.sha256 = sha256(out.bytes);
  return out;
}

void put(Fixture& f, const Link& l) {
  auto r =
      runToCompletion(f.context, f.store->putImmutable(keys::manifest(f.ns, l.sha256), l.bytes));
  REQUIRE(r.ok());
}

Res<VerifiedGraph> verify(Fixture& f, const Link& l, bool deep) {
  OperationBudget budget;
  VerifyOptions opt;
  opt.deep = deep;
  return runToCompletion(
      f.context, verifyManifestGraph(*f.store, f.ns, l.sha256, l.bytes.size(),
                                     deep ? f.journal.get() : nullptr, f.limits, budget, opt));
}

// Three checkpoints of one journal (records appended between them) and a chain over them:
// c1 (format 1), c2 on c1, c3 on c2.
struct Chain {
  Fixture f{600};
  Link l1, l2, l3;
  Chain() {
    auto c1 = f.checkpoint(std::nullopt, 8 << 10);
    REQUIRE(c1.ok());
    l1 = Link{c1->manifest, c1->manifestBytes, c1->manifestSha256};
    f.appendRecords(300, "second", 600);
    auto c2 = f.checkpoint(c1->manifest, 8 << 10);
    REQUIRE(c2.ok());
    f.appendRecords(300, "third", 900);
    auto c3 = f.checkpoint(c2->manifest, 8 << 10);
    REQUIRE(c3.ok());
    l2 = chainOn(l1, c2->manifest, 2);
    l3 = chainOn(l2, c3->manifest, 3);
    put(f, l2);
    put(f, l3);
    REQUIRE(l3.manifest.format() == 2);
    REQUIRE(l3.manifest.segments.size() < c3->manifest.segments.size());
  }
};

}  // namespace

TEST_CASE("chained manifests: a graph verifies through its bases, deep and shallow",
          "[checkpoint]") {
  Chain c;
  auto deep = verify(c.f, c.l3, true);
  INFO((deep ? std::string() : deep.error().message));
  REQUIRE(deep.ok());
  // The verified manifest lists every segment of the prefix, as one format-1 manifest would.
  CHECK(!deep->manifest.base);
  CHECK(deep->manifest.prefix == c.l3.manifest.prefix);
  CHECK(deep->manifest.segments.size() == c.l1.manifest.segments.size() +
                                              c.l2.manifest.segments.size() +
                                              c.l3.manifest.segments.size());
  CHECK(deep->objects == 3 + deep->manifest.segments.size());
  auto shallow = verify(c.f, c.l3, false);
  REQUIRE(shallow.ok());
  CHECK(shallow->manifest == deep->manifest);
}

TEST_CASE("chained manifests: a broken chain fails closed, naming the base", "[checkpoint]") {
  Chain c;
  const std::string key2 = keys::manifest(c.f.ns, c.l2.sha256);
  SECTION("a missing base") {
    std::filesystem::remove(c.f.objectPath(key2));
    auto r = verify(c.f, c.l3, false);
    REQUIRE(!r.ok());
    CHECK(r.error().code == Errc::missing);
    CHECK(r.error().key == key2);
  }
  SECTION("a base whose bytes changed") {
    std::filesystem::resize_file(c.f.objectPath(key2), c.l2.bytes.size() - 1);
    auto r = verify(c.f, c.l3, false);
    REQUIRE(!r.ok());
    CHECK(r.error().code == Errc::corrupt);
    CHECK(r.error().key == key2);
  }
  SECTION("a base that declares another prefix than its successor names") {
    // l3' names l1 (a valid manifest of the same journal) as if it held l2's prefix.
    Link wrong = c.l3;
    wrong.manifest.base = ManifestBase{c.l1.sha256, c.l1.bytes.size(), c.l2.manifest.prefix};
    wrong.bytes = *encodeManifest(wrong.manifest);
    wrong.sha256 = sha256(wrong.bytes);
    put(c.f, wrong);
    auto r = verify(c.f, wrong, false);
    REQUIRE(!r.ok());
    CHECK(r.error().code == Errc::corrupt);
    CHECK(r.error().key == keys::manifest(c.f.ns, c.l1.sha256));
  }
  SECTION("a base of the same generation") {
    Link same = chainOn(c.l2, c.l3.manifest, 2);
    put(c.f, same);
    auto r = verify(c.f, same, false);
    REQUIRE(!r.ok());
    CHECK(r.error().code == Errc::corrupt);
    CHECK(r.error().message.find("generation") != std::string::npos);
  }
}

TEST_CASE("chained manifests: a walk stops before a base the caller knows", "[checkpoint]") {
  Chain c;
  OperationBudget budget;
  ManifestLink top{c.l3.sha256, c.l3.bytes.size(), c.l3.manifest};
  auto walked = runToCompletion(
      c.f.context, fetchManifestChain(*c.f.store, c.f.ns, std::move(top), budget,
                                      [&](const Digest& d) { return d == c.l1.sha256; }));
  REQUIRE(walked.ok());
  CHECK(walked->stoppedAtKnown);
  REQUIRE(walked->links.size() == 2);
  CHECK(walked->links[1].sha256 == c.l2.sha256);
  // Only the segments after the known base's prefix.
  auto segs = walked->segments();
  REQUIRE(!segs.empty());
  CHECK(segs.front().firstSequence == c.l1.manifest.prefix.sequence + 1);
  CHECK(segs.back().journalEnd == c.l3.manifest.prefix.length);
}
