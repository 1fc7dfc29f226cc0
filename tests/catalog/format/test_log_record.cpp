// The catalog logs' records against the independent vectors (tests/vectors/make_vectors.py):
// each valid vector decodes to the value written out below and encodes back to its bytes;
// each invalid one is refused with code format.
#include <catch2/catch.hpp>

#include <limits>
#include <map>
#include <string>
#include <string_view>

#include "catalog/format/log_record.hpp"
#include "tests/format/vector_support.hpp"
#include "tests/vectors/vectors.inc"

using namespace cairn;
using namespace cairn::catalog;
namespace v = cairn::vectors;

namespace {

constexpr std::int64_t T = 1'764'633'600'123;
const Uuid kTable = *Uuid::parse("0e2b1d4c-6a8f-4c3e-9b1d-2f4a6c8e0a1b");
const std::string kLoc = "s3://cairn-test/lakes/prod/tables/0e2b1d4c-6a8f-4c3e-9b1d-2f4a6c8e0a1b";

std::map<std::string, LakeRecord> lakeRecords() {
  std::map<std::string, LakeRecord> m;
  m["lake_created"] = LakeRecord{LakeCreated{"prod"}, T, std::nullopt};
  m["namespace_created"] =
      LakeRecord{NamespaceCreated{{"sales", "eu"},
                                  {{"owner", "ana"},
                                   {"comment", "line 1\nline 2\t\"quoted\" \xc3\xa9\xe4\xb8\xad"},
                                   {"z\xc3\xa9", "\x01"},
                                   {"A", ""}}},
                 T + 1, "0191e5c2-7a3b-7cde-8f01-23456789abcd"};
  m["namespace_updated"] =
      LakeRecord{NamespaceUpdated{{"sales"}, {{"owner", "bo"}}, {"a", "b", "comment"}, {"nope"}},
                 T + 2, std::nullopt};
  m["namespace_dropped"] = LakeRecord{NamespaceDropped{{"tmp"}}, 0, std::nullopt};
  m["table_registered"] =
      LakeRecord{TableRegistered{{{"sales"}, "orders"}, kTable, kLoc}, T + 3, "k-1"};
  m["table_dropped"] =
      LakeRecord{TableDropped{{{"sales"}, "orders"}, kTable, std::nullopt}, T + 4, std::nullopt};
  m["table_dropped_purge"] =
      LakeRecord{TableDropped{{{"sales"}, "orders"}, kTable, kLoc}, T + 4, "k-drop"};
  m["table_renamed"] =
      LakeRecord{TableRenamed{{{"sales"}, "orders"}, {{"sales", "eu"}, "orders_v2"}, kTable}, T + 5,
                 std::nullopt};
  const Uuid lease1 = *Uuid::parse("5ea5e000-0000-4000-8000-000000000001");
  const Uuid lease2 = *Uuid::parse("5ea5e000-0000-4000-8000-000000000002");
  m["lease_taken"] = LakeRecord{
      LeaseTaken{lease1, kTable, T + 3'600'000, -7, kLoc + "/data/prepared"}, T + 8, "k-2"};
  m["lease_taken_snapshot"] = LakeRecord{
      LeaseTaken{lease2, kTable, 1, std::numeric_limits<std::int64_t>::max(), std::nullopt}, T + 9,
      std::nullopt};
  m["lease_released"] = LakeRecord{LeaseReleased{lease1}, T + 10, std::nullopt};
  m["snapshot_protected"] = LakeRecord{SnapshotProtected{kTable, 123}, T + 11, std::nullopt};
  m["snapshot_unprotected"] = LakeRecord{
      SnapshotUnprotected{kTable, std::numeric_limits<std::int64_t>::min()}, T + 12, std::nullopt};
  const Uuid branch1 = *Uuid::parse("b4a2c000-0000-4000-8000-000000000001");
  const Uuid branch2 = *Uuid::parse("b4a2c000-0000-4000-8000-000000000002");
  const Uuid log1 = *Uuid::parse("f0c4e000-0000-4000-8000-000000000001");
  const Uuid log2 = *Uuid::parse("f0c4e000-0000-4000-8000-000000000002");
  const std::string mloc =
      kLoc + "/metadata/00002-1a2b3c4d-0000-4000-8000-000000000002.metadata.json";
  m["branch_created"] = LakeRecord{
      BranchCreated{"dev", branch1, std::nullopt, std::nullopt, std::nullopt, std::nullopt}, T + 13,
      std::nullopt};
  m["branch_created_all"] = LakeRecord{
      BranchCreated{"feature-2_x", branch2, std::string("dev"), T + 86'400'000, 604'800'000, 10},
      T + 14, "k-branch"};
  m["branch_dropped"] = LakeRecord{BranchDropped{"dev", branch1}, T + 15, std::nullopt};
  m["branch_forked"] =
      LakeRecord{BranchForked{"dev", kTable, log1, std::nullopt, kTable,
                              std::uint64_t(std::numeric_limits<std::int64_t>::max()), mloc},
                 T + 16, std::nullopt};
  m["branch_forked_nested"] =
      LakeRecord{BranchForked{"feature-2_x", kTable, log2, std::string("dev"), log1, 1, mloc},
                 T + 17, std::nullopt};
  // With the digest of the request the key binds.
  m["namespace_created_request"] = LakeRecord{NamespaceCreated{{"sales"}, {}}, T + 18, "k-ns",
                                              sha256(asBytes(std::string_view("cairn request 1")))};
  return m;
}

std::map<std::string, TableCommit> tableCommits() {
  const std::string prev =
      kLoc + "/metadata/00001-1a2b3c4d-0000-4000-8000-000000000001.metadata.json";
  const std::string next =
      kLoc + "/metadata/00002-1a2b3c4d-0000-4000-8000-000000000002.metadata.json";
  const Digest d = sha256(asBytes(std::string_view("metadata")));
  std::map<std::string, TableCommit> m;
  m["commit_first"] = TableCommit{prev, d, 1234, std::nullopt, T + 6, std::nullopt};
  m["commit_next"] =
      TableCommit{next, d, 67108864, prev, T + 7, "0191e5c2-7a3b-7cde-8f01-23456789abce"};
  m["commit_request"] = TableCommit{
      next, d, 99, prev, T + 19, "k-commit", sha256(asBytes(std::string_view("request")))};
  return m;
}

ByteView bytesOf(std::string_view s) { return asBytes(s); }

}  // namespace

TEST_CASE("log records: every vector decodes to its value and encodes to its bytes",
          "[catalog][vectors]") {
  auto lake = lakeRecords();
  auto table = tableCommits();
  std::size_t seen = 0;
  for (const auto& r : v::kLogRecords) {
    INFO("record " << r.name);
    REQUIRE(r.bytes.size() == r.length);
    if (r.kind == "lake") {
      REQUIRE(lake.count(std::string(r.name)));
      const LakeRecord& want = lake.at(std::string(r.name));
      auto got = decodeLakeRecord(bytesOf(r.bytes));
      INFO((got ? std::string() : got.error().message));
      REQUIRE(got.ok());
      CHECK(*got == want);
      auto enc = encodeLakeRecord(want);
      REQUIRE(enc.ok());
      CHECK(asChars(*enc) == r.bytes);
      CHECK(!decodeTableCommit(bytesOf(r.bytes)).ok());
    } else {
      REQUIRE(table.count(std::string(r.name)));
      const TableCommit& want = table.at(std::string(r.name));
      auto got = decodeTableCommit(bytesOf(r.bytes));
      INFO((got ? std::string() : got.error().message));
      REQUIRE(got.ok());
      CHECK(*got == want);
      auto enc = encodeTableCommit(want);
      REQUIRE(enc.ok());
      CHECK(asChars(*enc) == r.bytes);
      CHECK(!decodeLakeRecord(bytesOf(r.bytes)).ok());
    }
    ++seen;
  }
  CHECK(seen == lake.size() + table.size());
}

TEST_CASE("log records: invalid and non-canonical records are refused", "[catalog][vectors]") {
  for (const auto& b : v::kBadLogRecords) {
    INFO("bad record " << b.name << " (" << b.why << ")");
    REQUIRE(b.bytes.size() == b.length);
    if (b.kind == "lake") {
      auto r = decodeLakeRecord(bytesOf(b.bytes));
      REQUIRE(!r.ok());
      CHECK(r.error().code == Errc::format);
    } else {
      auto r = decodeTableCommit(bytesOf(b.bytes));
      REQUIRE(!r.ok());
      CHECK(r.error().code == Errc::format);
    }
  }
  // The encoders refuse the same values (usage), so nothing writes what a reader refuses.
  auto bad = lakeRecords().at("table_renamed");
  std::get<TableRenamed>(bad.change).to = std::get<TableRenamed>(bad.change).from;
  auto enc = encodeLakeRecord(bad);
  REQUIRE(!enc.ok());
  CHECK(enc.error().code == Errc::usage);
  auto commit = tableCommits().at("commit_first");
  commit.metadataLength = 0;
  REQUIRE(!encodeTableCommit(commit).ok());
}

TEST_CASE("log records: a lake's log namespace is derived from its id", "[catalog][vectors]") {
  for (const auto& l : v::kLakeNamespaces) {
    INFO("lake " << l.lake);
    CHECK(lakeLogNamespace(l.lake).text() == l.ns);
  }
}
