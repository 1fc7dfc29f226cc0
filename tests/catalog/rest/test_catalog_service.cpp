// The catalog's pieces below the routes (the lake's directory and a table's history as folds,
// the configuration and its tokens), and the service when a store cannot be trusted: a store
// that does not answer makes the lake not ready (503, never invented metadata), a damaged log
// is refused, not served.
#include <catch2/catch.hpp>

#include <filesystem>

#include "catalog/access/config.hpp"
#include "catalog/lake/directory.hpp"
#include "engine/format/keys.hpp"
#include "tests/catalog/catalog_test_support.hpp"

using namespace cairn;
using namespace cairn::catalog;
using test::CatalogRig;
using test::HttpReply;
using test::httpRequest;

namespace {

const Uuid kT1 = *Uuid::parse("0e2b1d4c-6a8f-4c3e-9b1d-000000000001");
const Uuid kT2 = *Uuid::parse("0e2b1d4c-6a8f-4c3e-9b1d-000000000002");

LakeRecord rec(LakeChange c, std::optional<std::string> key = std::nullopt,
               std::int64_t timeMs = 1000) {
  return LakeRecord{std::move(c), timeMs, std::move(key)};
}

Errc codeOf(const Res<void>& r) { return r.ok() ? Errc::usage : r.error().code; }

}  // namespace

TEST_CASE("lake directory: a fold that checks every change against the state before it",
          "[catalog]") {
  LakeDirectory d;
  CHECK(!d.apply(rec(NamespaceCreated{{"a"}, {}})).ok());  // before lake-created
  REQUIRE(d.apply(rec(LakeCreated{"prod"})).ok());
  CHECK(!d.apply(rec(LakeCreated{"prod"})).ok());  // only first
  REQUIRE(d.apply(rec(NamespaceCreated{{"a"}, {{"k", "v"}}}, "key-1")).ok());
  CHECK(codeOf(d.apply(rec(NamespaceCreated{{"a"}, {}}))) == Errc::conflict);
  REQUIRE(d.apply(rec(NamespaceCreated{{"a", "b", "c"}, {}})).ok());
  // Listing: "a.b" exists only as a parent, and counts as a level.
  CHECK(d.children(std::nullopt) == std::vector<Namespace>{{"a"}});
  CHECK(d.children(Namespace{"a"}) == std::vector<Namespace>{{"a", "b"}});
  CHECK(d.knows({"a", "b"}));
  CHECK(!d.knows({"z"}));
  // Tables: a namespace must exist, a name and a UUID are taken once.
  auto missing = d.check(TableRegistered{{{"z"}, "t"}, kT1, "s3://b/r/t"});
  REQUIRE(!missing.ok());
  CHECK(missing.error().code == Errc::missing);
  CHECK(missing.error().key == kMissingNamespace);
  REQUIRE(d.apply(rec(TableRegistered{{{"a"}, "t"}, kT1, "s3://b/r/t"})).ok());
  CHECK(codeOf(d.apply(rec(TableRegistered{{{"a"}, "t"}, kT2, "s3://b/r/u"}))) == Errc::conflict);
  CHECK(codeOf(d.apply(rec(TableRegistered{{{"a"}, "u"}, kT1, "s3://b/r/u"}))) == Errc::conflict);
  // A namespace with a table, or with a child, is not empty.
  CHECK(codeOf(d.apply(rec(NamespaceDropped{{"a"}}))) == Errc::conflict);
  // Renames and drops name the table by its UUID too.
  auto wrongUuid = d.check(TableDropped{{{"a"}, "t"}, kT2});
  REQUIRE(!wrongUuid.ok());
  CHECK(wrongUuid.error().key == kMissingTable);
  REQUIRE(d.apply(rec(TableRenamed{{{"a"}, "t"}, {{"a", "b", "c"}, "t2"}, kT1})).ok());
  CHECK(d.tableOf(kT1) == TableIdent{{"a", "b", "c"}, "t2"});
  CHECK(d.tablesIn({"a"}).empty());
  REQUIRE(d.apply(rec(TableDropped{{{"a", "b", "c"}, "t2"}, kT1})).ok());
  CHECK(!d.tableOf(kT1));
  // Properties: removals and updates.
  REQUIRE(d.apply(rec(NamespaceUpdated{{"a"}, {{"x", "1"}}, {"k"}, {}})).ok());
  CHECK(d.namespaces.at({"a"}) == Properties{{"x", "1"}});
  // The first record of a key is its result.
  REQUIRE(d.recordFor("key-1") != nullptr);
  CHECK(std::holds_alternative<NamespaceCreated>(d.recordFor("key-1")->change));
  CHECK(d.recordFor("key-2") == nullptr);
}

TEST_CASE("lake directory: Idempotency-Keys are kept for the lifetime, then forgotten",
          "[catalog]") {
  LakeDirectory d;
  REQUIRE(d.apply(rec(LakeCreated{"prod"}, std::nullopt, 0)).ok());
  REQUIRE(d.apply(rec(NamespaceCreated{{"a"}, {}}, "old", 0)).ok());
  REQUIRE(d.apply(rec(NamespaceCreated{{"b"}, {}}, "recent", kIdempotencyLifetimeMs)).ok());
  CHECK(d.recordFor("old") != nullptr);  // exactly the lifetime old: kept
  REQUIRE(d.apply(rec(NamespaceCreated{{"c"}, {}}, std::nullopt, kIdempotencyLifetimeMs + 1)).ok());
  CHECK(d.recordFor("old") == nullptr);
  CHECK(d.recordFor("recent") != nullptr);
}

TEST_CASE("lake directory and table history: a record from a clock ahead ends no key early",
          "[catalog]") {
  // The reader's clock is at 1000 s; another process, a day ahead, wrote the newest record.
  constexpr std::int64_t kNow = 1'000'000;
  constexpr std::int64_t kDay = 24LL * 3600 * 1000;
  LakeDirectory d;
  d.readerClockMs = kNow;
  REQUIRE(d.apply(rec(LakeCreated{"prod"}, std::nullopt, kNow - 1000)).ok());
  REQUIRE(d.apply(rec(NamespaceCreated{{"a"}, {}}, "mine", kNow - 1000)).ok());
  REQUIRE(d.apply(rec(NamespaceCreated{{"b"}, {}}, "ahead", kNow + kDay)).ok());
  CHECK(d.recordFor("mine") != nullptr);  // still within the lifetime by the reader's clock
  CHECK(d.recordFor("ahead") != nullptr);
  // The same log read by a reader a day ahead: the records' times hold it back.
  LakeDirectory ahead;
  ahead.readerClockMs = kNow + 2 * kDay;
  REQUIRE(ahead.apply(rec(LakeCreated{"prod"}, std::nullopt, kNow - 1000)).ok());
  REQUIRE(ahead.apply(rec(NamespaceCreated{{"a"}, {}}, "mine", kNow - 1000)).ok());
  REQUIRE(ahead.apply(rec(NamespaceCreated{{"c"}, {}}, std::nullopt, kNow)).ok());
  CHECK(ahead.recordFor("mine") != nullptr);
  // Once the reader's clock too is past the lifetime, the key goes.
  d.readerClockMs = kNow + kIdempotencyLifetimeMs;
  REQUIRE(d.apply(rec(NamespaceCreated{{"c"}, {}}, std::nullopt, kNow + kDay + 1)).ok());
  CHECK(d.recordFor("mine") == nullptr);
  CHECK(d.recordFor("ahead") != nullptr);

  TableHistory h;
  h.readerClockMs = kNow;
  const Digest z{};
  REQUIRE(h.apply(TableCommit{"s3://b/m1", z, 10, std::nullopt, kNow - 1000, "k1"}).ok());
  REQUIRE(
      h.apply(TableCommit{"s3://b/m2", z, 10, std::string("s3://b/m1"), kNow + kDay, "k2"}).ok());
  CHECK(h.commitFor("k1") != nullptr);
}

TEST_CASE("table history: each commit replaces the current metadata file", "[catalog]") {
  TableHistory h;
  const Digest d{};
  // A first commit that replaces a file starts a branch-local log: the fold takes it as the
  // log's base, and a reader refuses it unless the lake log says the log starts there.
  TableHistory forked;
  REQUIRE(forked.apply(TableCommit{"s3://b/m2", d, 10, std::string("s3://b/m1"), 1, {}}).ok());
  CHECK(forked.base == "s3://b/m1");
  auto asMain = expectBase(forked, std::nullopt, "log");
  REQUIRE(!asMain.ok());
  CHECK(asMain.error().code == Errc::corrupt);
  CHECK(!expectBase(forked, std::string("s3://b/m0"), "log").ok());
  CHECK(expectBase(forked, std::string("s3://b/m1"), "log").ok());
  CHECK(!forked.apply(TableCommit{"s3://b/m3", d, 10, std::string("s3://b/m1"), 2, {}}).ok());
  REQUIRE(h.apply(TableCommit{"s3://b/m1", d, 10, std::nullopt, 1, "k1"}).ok());
  CHECK(expectBase(h, std::nullopt, "log").ok());
  CHECK(!expectBase(h, std::string("s3://b/m0"), "log").ok());
  auto fork = h.apply(TableCommit{"s3://b/m3", d, 10, std::string("s3://b/m0"), 2, {}});
  REQUIRE(!fork.ok());
  CHECK(fork.error().code == Errc::corrupt);
  REQUIRE(h.apply(TableCommit{"s3://b/m2", d, 10, std::string("s3://b/m1"), 2, "k2"}).ok());
  CHECK(h.commits == 2);
  CHECK(h.first->metadataLocation == "s3://b/m1");
  CHECK(h.current->metadataLocation == "s3://b/m2");
  REQUIRE(h.commitFor("k1") != nullptr);
  CHECK(h.commitFor("k1")->metadataLocation == "s3://b/m1");
}

TEST_CASE(
    "lake directory: catalog branches nest 8 deep, fork each table once, and go with "
    "what they hold",
    "[catalog]") {
  const Uuid id1 = *Uuid::parse("b4a2c000-0000-4000-8000-000000000001");
  const Uuid log1 = *Uuid::parse("f0c4e000-0000-4000-8000-000000000001");
  const Uuid log2 = *Uuid::parse("f0c4e000-0000-4000-8000-000000000002");
  const Uuid log3 = *Uuid::parse("f0c4e000-0000-4000-8000-000000000003");
  const Uuid log4 = *Uuid::parse("f0c4e000-0000-4000-8000-000000000004");
  LakeDirectory d;
  REQUIRE(d.apply(rec(LakeCreated{"prod"})).ok());
  REQUIRE(d.apply(rec(NamespaceCreated{{"a"}, {}})).ok());
  REQUIRE(d.apply(rec(TableRegistered{{{"a"}, "t"}, kT1, "s3://b/r/t"})).ok());
  // A branch of a missing parent; then a chain 8 deep, and no 9th level.
  auto orphan = d.check(BranchCreated{"x", id1, std::string("nope"), {}, {}, {}});
  REQUIRE(!orphan.ok());
  CHECK(orphan.error().key == kMissingBranch);
  REQUIRE(d.apply(rec(BranchCreated{"b1", id1, std::nullopt, 5000, {}, {}}, {}, 1000)).ok());
  CHECK(d.branches.at("b1").depth == 1);
  CHECK(d.branches.at("b1").createdMs == 1000);
  CHECK(codeOf(d.apply(rec(BranchCreated{"b1", id1, std::nullopt, {}, {}, {}}))) == Errc::conflict);
  for (int i = 2; i <= 8; ++i) {
    const std::string parent = "b" + std::to_string(i - 1);
    REQUIRE(d.apply(rec(BranchCreated{"b" + std::to_string(i), Uuid::random(), parent, {}, {}, {}}))
                .ok());
  }
  CHECK(d.branches.at("b8").depth == kMaxBranchDepth);
  CHECK(codeOf(d.apply(rec(BranchCreated{"b9", Uuid::random(), std::string("b8"), {}, {}, {}}))) ==
        Errc::usage);
  CHECK(d.childrenOf("b1") == std::vector<std::string>{"b2"});
  // A fork: once per (branch, table), of a registered table, with a log no one else has.
  const BranchForked fork{"b1", kT1, log1, std::nullopt, kT1, 3, "s3://b/r/t/metadata/m3"};
  REQUIRE(d.apply(rec(fork, {}, 2000)).ok());
  REQUIRE(d.forkOf("b1", kT1) != nullptr);
  CHECK(d.forkOf("b1", kT1)->fromRevision == 3);
  CHECK(d.forkOf("b1", kT1)->forkedMs == 2000);
  CHECK(d.forkOf("b2", kT1) == nullptr);
  CHECK(codeOf(d.apply(rec(BranchForked{"b1", kT1, log2, std::nullopt, kT1, 4, "s3://b/m"}))) ==
        Errc::conflict);
  CHECK(codeOf(d.apply(rec(BranchForked{"b2", kT1, log1, std::string("b1"), log1, 1,
                                        "s3://b/m"}))) == Errc::conflict);  // the log is b1's
  CHECK(codeOf(d.apply(rec(BranchForked{"b2", kT2, log2, std::nullopt, kT2, 1, "s3://b/m"}))) ==
        Errc::missing);  // no such table
  // The provenance is the state the branch showed: b2 follows b1, which has a fork.
  CHECK(codeOf(d.apply(rec(BranchForked{"b2", kT1, log2, std::nullopt, kT1, 1, "s3://b/m"}))) ==
        Errc::usage);
  REQUIRE(d.apply(rec(BranchForked{"b2", kT1, log2, std::string("b1"), log1, 1, "s3://b/m"})).ok());
  CHECK(d.stateOf(std::string("b3"), kT1).log == log2);  // b3 follows b2
  CHECK(d.stateOf(std::string("b1"), kT1).base == "s3://b/r/t/metadata/m3");
  CHECK(d.stateOf(std::nullopt, kT1).log == kT1);
  // A branch-local log's UUID is never a table's.
  CHECK(codeOf(d.apply(rec(TableRegistered{{{"a"}, "u"}, log1, "s3://b/r/u"}))) == Errc::conflict);
  // A branch with branches of its own stays; dropping the leaves first works, and takes the
  // forks with them.
  CHECK(codeOf(d.apply(rec(BranchDropped{"b1", id1}))) == Errc::conflict);
  CHECK(codeOf(d.apply(rec(BranchDropped{"b8", id1}))) == Errc::missing);  // another id
  for (int i = 8; i >= 2; --i) {
    const std::string name = "b" + std::to_string(i);
    REQUIRE(d.apply(rec(BranchDropped{name, d.branches.at(name).id})).ok());
  }
  CHECK(d.forkOf("b2", kT1) == nullptr);
  CHECK(d.forkOf("b1", kT1) != nullptr);
  // The name is reusable; a dropped fork's log UUID is not.
  REQUIRE(d.apply(rec(BranchCreated{"b2", Uuid::random(), std::string("b1"), {}, {}, {}})).ok());
  CHECK(codeOf(d.apply(rec(BranchForked{"b2", kT1, log2, std::string("b1"), log1, 2,
                                        "s3://b/m"}))) == Errc::conflict);
  REQUIRE(d.apply(rec(BranchForked{"b2", kT1, log3, std::string("b1"), log1, 2, "s3://b/m"})).ok());
  // A dropped table takes its forks on every branch.
  REQUIRE(d.apply(rec(TableDropped{{{"a"}, "t"}, kT1})).ok());
  CHECK(d.forks.empty());
  REQUIRE(d.apply(rec(TableRegistered{{{"a"}, "t"}, kT1, "s3://b/r/t"})).ok());
  CHECK(d.forkOf("b1", kT1) == nullptr);  // registered again, it follows its parents again
  CHECK(codeOf(d.apply(rec(BranchForked{"b1", kT1, log1, std::nullopt, kT1, 9, "s3://b/m"}))) ==
        Errc::conflict);
  REQUIRE(d.apply(rec(BranchForked{"b1", kT1, log4, std::nullopt, kT1, 9, "s3://b/m"})).ok());
}

TEST_CASE("catalog configuration: read strictly, written back the same, tokens by hash",
          "[catalog]") {
  CatalogConfig c = newConfig();
  c.lakes.push_back(LakeEntry{"prod", "/tmp/store"});
  const std::string token = newToken();
  CHECK(token.size() == 6 + 43);
  CHECK(token.starts_with("cairn_"));
  TokenEntry t;
  t.sha256 = tokenHash(token);
  t.lake = "prod";
  t.role = Role::readWrite;
  t.createdUnixSeconds = 100;
  t.expiresUnixSeconds = 200;
  c.tokens.push_back(t);
  c.server.cacheBytes = 1 << 20;
  const std::string text = serializeConfig(c);
  CHECK(text.find(token) == std::string::npos);  // only its hash is kept
  auto again = parseConfig(text);
  INFO((again ? std::string() : again.error().message));
  REQUIRE(again.ok());
  CHECK(serializeConfig(*again) == text);
  CHECK(again->server.cacheBytes == 1u << 20);

  CHECK(checkToken(*again, token, 150).outcome == TokenCheck::Outcome::accepted);
  CHECK(checkToken(*again, token, 150).entry->lake == "prod");
  CHECK(checkToken(*again, token, 200).outcome == TokenCheck::Outcome::expired);
  CHECK(checkToken(*again, token + "x", 150).outcome == TokenCheck::Outcome::unknown);
  CHECK(checkToken(*again, "", 150).outcome == TokenCheck::Outcome::unknown);

  for (
      const char* bad : {
          R"({"format":1,"publisher":"5e1f0000-0000-4000-8000-0000000000aa","lakez":{}})",
          R"({"format":2,"publisher":"5e1f0000-0000-4000-8000-0000000000aa"})",
          R"({"format":1,"publisher":"00000000-0000-0000-0000-000000000000"})",
          R"({"format":1,"publisher":"5e1f0000-0000-4000-8000-0000000000aa","lakes":{"Prod":{"store":"/x"}}})",
          R"({"format":1,"publisher":"5e1f0000-0000-4000-8000-0000000000aa","tokens":[{"sha256":"00","lake":"prod","role":"read"}]})",
          R"({"format":1,"publisher":"5e1f0000-0000-4000-8000-0000000000aa","server":{"cache-bytes":-1}})",
          R"({"format":1,"publisher":"5e1f0000-0000-4000-8000-0000000000aa","server":{"tls-certificate":"a"}})",
      }) {
    INFO(bad);
    auto r = parseConfig(bad);
    REQUIRE(!r.ok());
    CHECK(r.error().code == Errc::usage);
  }
}

TEST_CASE("catalog configuration: the file is private from its creation, and bounded before a read",
          "[catalog]") {
  io::test::TempDir dir;
  const auto file = dir.path() / "catalog.json";
  auto made = updateConfig(
      file,
      [](CatalogConfig& c) -> Res<void> {
        c.lakes.push_back(LakeEntry{"prod", "/tmp/store"});
        return {};
      },
      [] { return newConfig(); });
  REQUIRE(made.ok());
  // Whatever the umask lets through, never more than the owner's read and write.
  const auto perms = std::filesystem::status(file).permissions();
  CHECK((perms & (std::filesystem::perms::group_all | std::filesystem::perms::others_all)) ==
        std::filesystem::perms::none);
  // No temporary file is left beside it.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  CHECK(entries == 2);  // the file and its lock
  // A file over the bound is refused by its size.
  std::filesystem::resize_file(file, kMaxConfigBytes + 1);
  auto big = loadConfig(file);
  REQUIRE(!big.ok());
  CHECK(big.error().message.find("over 16 MiB") != std::string::npos);
}

TEST_CASE("catalog service: a store that does not answer makes the lake not ready",
          "[catalog][http-server]") {
  // Nothing listens on port 1: every request to the store fails at once. (Credentials are
  // needed to open an S3 store; any will do for a server that never answers.)
  ::setenv("AWS_ACCESS_KEY_ID", "unused", 0);
  ::setenv("AWS_SECRET_ACCESS_KEY", "unused", 0);
  CatalogRig rig("s3://bucket/root?endpoint=http://127.0.0.1:1&region=us-east-1&timeout_ms=500",
                 /*createLog=*/false);
  CHECK(test::httpRequest(rig.port, "GET", "/healthz").status == 200);
  HttpReply ready = test::httpRequest(rig.port, "GET", "/readyz");
  INFO(ready.body);
  CHECK(ready.status == 503);
  CHECK(ready.errorField("reason") == "lake-not-ready");
  CHECK(ready.errorField("message").find("prod") != std::string::npos);
  CHECK(ready.header("retry-after") == "1");
  HttpReply list = rig.call("GET", "/v1/prod/namespaces");
  INFO(list.body);
  CHECK(list.status == 503);
  CHECK(list.errorField("type") == "ServiceUnavailableException");
  HttpReply create = rig.call("POST", "/v1/prod/namespaces", R"({"namespace":["a"]})");
  CHECK(create.status == 503);
}

TEST_CASE("catalog service: a damaged table log is refused, never served", "[catalog]") {
  io::test::TempDir store;
  const std::string url = (store.path() / "lake").string();
  std::string uuid;
  {
    CatalogRig rig(url);
    REQUIRE(rig.call("POST", "/v1/prod/namespaces", R"({"namespace":["ns"]})").status == 200);
    HttpReply created = rig.call(
        "POST", "/v1/prod/namespaces/ns/tables",
        R"({"name":"t","schema":{"type":"struct","fields":[{"id":1,"name":"a","type":"int","required":false}]}})");
    REQUIRE(created.status == 200);
    uuid = std::string(created.json().at("metadata").at("table-uuid").as_string());
  }
  // Every segment of the table's log loses its last byte.
  const std::string prefix = keys::namespacePrefix(*Uuid::parse(uuid)) + "segment-";
  int damaged = 0;
  for (const auto& e : std::filesystem::directory_iterator(store.path() / "lake")) {
    if (e.path().filename().string().starts_with(prefix)) {
      std::filesystem::resize_file(e.path(), std::filesystem::file_size(e.path()) - 1);
      ++damaged;
    }
  }
  REQUIRE(damaged == 1);
  CatalogRig cold(url);
  HttpReply load = cold.call("GET", "/v1/prod/namespaces/ns/tables/t");
  INFO(load.body);
  CHECK(load.status == 503);
  CHECK(load.errorField("reason") == "log-unverifiable");
  CHECK(load.body.find("\"metadata\"") == std::string::npos);
  // The lake itself still serves.
  CHECK(cold.call("GET", "/v1/prod/namespaces").status == 200);
}

TEST_CASE("catalog service: a table's location is fixed, and never overlaps another's",
          "[catalog]") {
  CHECK(locationsOverlap("s3://b/lake/t", "s3://b/lake/t/"));
  CHECK(locationsOverlap("s3://b/lake/t", "s3a://b/lake/t/inner"));
  CHECK(locationsOverlap("s3n://b/lake/t/inner", "s3://b/lake/t"));
  CHECK(!locationsOverlap("s3://b/lake/t", "s3://b/lake/t2"));
  CHECK(!locationsOverlap("s3://b/lake/t2", "s3://b/lake/t"));
  io::test::TempDir store;
  const std::string root = "file://" + (store.path() / "lake").string();
  CatalogRig rig((store.path() / "lake").string());
  REQUIRE(rig.call("POST", "/v1/prod/namespaces", R"({"namespace":["ns"]})").status == 200);
  auto create = [&](const std::string& name, const std::string& location) {
    return rig.call("POST", "/v1/prod/namespaces/ns/tables",
                    R"({"name":")" + name + R"(","location":")" + location +
                        R"(","schema":{"type":"struct","fields":[]}})");
  };
  REQUIRE(create("a", root + "/data/a").status == 200);
  HttpReply inner = create("b", root + "/data/a/b");
  CHECK(inner.status == 409);
  CHECK(inner.errorField("reason") == "location-overlaps");
  HttpReply outer = create("c", root + "/data");
  CHECK(outer.status == 409);
  CHECK(create("d", root + "/data/a2").status == 200);
  HttpReply atRoot = create("e", root);
  CHECK(atRoot.status == 400);
  CHECK(atRoot.errorField("reason") == "location-outside-lake");
  HttpReply moved =
      rig.call("POST", "/v1/prod/namespaces/ns/tables/a",
               R"({"requirements":[],"updates":[{"action":"set-location","location":")" + root +
                   R"(/data/z"}]})");
  INFO(moved.body);
  CHECK(moved.status == 400);
  CHECK(moved.errorField("reason") == "location-fixed");
}

TEST_CASE("catalog service: time travel returns the metadata current then", "[catalog]") {
  io::test::TempDir store;
  CatalogRig rig((store.path() / "lake").string());
  REQUIRE(rig.call("POST", "/v1/prod/namespaces", R"({"namespace":["ns"]})").status == 200);
  HttpReply created = rig.call("POST", "/v1/prod/namespaces/ns/tables",
                               R"({"name":"t","schema":{"type":"struct","fields":[]}})");
  REQUIRE(created.status == 200);
  const std::string table = "/v1/prod/namespaces/ns/tables/t";
  const std::string location(created.json().at("metadata").at("location").as_string());
  std::vector<std::string> locations{
      std::string(created.json().at("metadata-location").as_string())};
  std::vector<std::int64_t> times;
  // Versions 2..4: a property each; versions 5 and 6: snapshots 100 then 200 on main.
  auto nowMs = [] {
    // Apart from the commits' own times by a few milliseconds on each side.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const auto t = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return t;
  };
  for (int i = 2; i <= 4; ++i) {
    times.push_back(nowMs());
    HttpReply r =
        rig.call("POST", table,
                 R"({"requirements":[],"updates":[{"action":"set-properties","updates":{"v":")" +
                     std::to_string(i) + R"("}}]})");
    REQUIRE(r.status == 200);
    locations.push_back(std::string(r.json().at("metadata-location").as_string()));
  }
  for (std::int64_t sid : {100, 200}) {
    const std::string snap =
        R"({"snapshot-id":)" + std::to_string(sid) + R"(,"sequence-number":)" +
        std::to_string(sid / 100) + R"(,"timestamp-ms":1700000000000,"schema-id":0,)" +
        R"("manifest-list":")" + location + "/metadata/snap-" + std::to_string(sid) +
        R"(.avro","summary":{"operation":"append"})" +
        (sid == 200 ? std::string(R"(,"parent-snapshot-id":100)") : std::string()) + "}";
    HttpReply r = rig.call(
        "POST", table,
        R"({"requirements":[],"updates":[{"action":"add-snapshot","snapshot":)" + snap +
            R"(},{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":)" +
            std::to_string(sid) + "}]}");
    INFO(r.body);
    REQUIRE(r.status == 200);
    locations.push_back(std::string(r.json().at("metadata-location").as_string()));
  }
  auto at = [&](const std::string& asOf) { return rig.call("GET", table + "?as-of=" + asOf); };
  for (std::size_t v = 1; v <= locations.size(); ++v) {
    HttpReply r = at("version:" + std::to_string(v));
    INFO("version " << v << ": " << r.body);
    REQUIRE(r.status == 200);
    CHECK(std::string(r.json().at("metadata-location").as_string()) == locations[v - 1]);
  }
  HttpReply v3 = at("version:3");
  CHECK(v3.json().at("metadata").at("properties").at("v").as_string() == "3");
  CHECK(!v3.header("etag").empty());
  CHECK(v3.header("etag") != rig.call("GET", table).header("etag"));
  // time: the last version accepted at or before the time.
  HttpReply before = at("time:" + std::to_string(times.front()));
  CHECK(before.status == 200);
  CHECK(std::string(before.json().at("metadata-location").as_string()) == locations[0]);
  CHECK(at("time:0").status == 404);
  CHECK(std::string(at("time:9223372036854775807").json().at("metadata-location").as_string()) ==
        locations.back());
  // snapshot: the last version whose current snapshot is it.
  HttpReply s100 = at("snapshot:100");
  INFO(s100.body);
  REQUIRE(s100.status == 200);
  CHECK(std::string(s100.json().at("metadata-location").as_string()) == locations[4]);
  CHECK(s100.json().at("metadata").at("current-snapshot-id").as_int64() == 100);
  CHECK(std::string(at("snapshot:200").json().at("metadata-location").as_string()) == locations[5]);
  CHECK(at("snapshot:999").errorField("reason") == "no-such-snapshot");
  CHECK(at("version:0").status == 404);
  CHECK(at("version:7").errorField("reason") == "no-such-version");
  // The largest id there is, and negative ones, are ids (Iceberg allows them): absent here.
  CHECK(at("snapshot:-9223372036854775808").errorField("reason") == "no-such-snapshot");
  CHECK(at("snapshot:9223372036854775807").errorField("reason") == "no-such-snapshot");
  // Past int64 (19 digits that do not fit, or 20) is refused, never wrapped around.
  for (const char* bad :
       {"v:1", "version:", "version:x", "time:-1", "snapshot", "version:+1",
        "version:9999999999999999999", "time:99999999999999999999", "snapshot:-", "snapshot:--1",
        "snapshot:9223372036854775808", "version:1%20", "version:0x1"}) {
    INFO(bad);
    HttpReply r = at(bad);
    CHECK(r.status == 400);
    CHECK(r.errorField("reason") == "invalid-as-of");
  }
}

TEST_CASE("catalog service: leases and protected snapshots are lake log records", "[catalog]") {
  io::test::TempDir store;
  CatalogRig rig((store.path() / "lake").string());
  REQUIRE(rig.call("POST", "/v1/prod/namespaces", R"({"namespace":["ns"]})").status == 200);
  HttpReply created = rig.call("POST", "/v1/prod/namespaces/ns/tables",
                               R"({"name":"t","schema":{"type":"struct","fields":[]}})");
  REQUIRE(created.status == 200);
  const std::string location(created.json().at("metadata").at("location").as_string());
  const std::string table = "/v1/prod/namespaces/ns/tables/t";
  const std::string snap =
      R"({"snapshot-id":7,"sequence-number":1,"timestamp-ms":1700000000000,"schema-id":0,)"
      R"("manifest-list":")" +
      location + R"(/metadata/snap-7.avro","summary":{"operation":"append"}})";
  REQUIRE(
      rig.call(
             "POST", table,
             R"({"requirements":[],"updates":[{"action":"add-snapshot","snapshot":)" + snap +
                 R"(},{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":7}]})")
          .status == 200);

  // A lease on the prepared files of a commit, and on snapshot 7.
  HttpReply taken =
      rig.call("POST", table + "/leases",
               R"({"ttl-seconds":600,"snapshot-id":7,"prefix":")" + location + R"(/data/prep"})");
  INFO(taken.body);
  REQUIRE(taken.status == 200);
  const std::string id(taken.json().at("lease-id").as_string());
  CHECK(taken.json().at("expires-at-ms").as_int64() > unixSecondsNow() * 1000);
  HttpReply listed = rig.call("GET", table + "/leases");
  REQUIRE(listed.status == 200);
  REQUIRE(listed.json().at("leases").as_array().size() == 1);
  CHECK(listed.json().at("leases").at(0).at("lease-id").as_string() == id);
  CHECK(listed.json().at("leases").at(0).at("snapshot-id").as_int64() == 7);
  // Refusals: a prefix outside the table, nothing protected, a bad ttl, a read token.
  CHECK(rig.call("POST", table + "/leases", R"({"ttl-seconds":60,"prefix":"file:///elsewhere/x"})")
            .errorField("reason") == "prefix-outside-table");
  CHECK(rig.call("POST", table + "/leases", R"({"ttl-seconds":60})").status == 400);
  CHECK(rig.call("POST", table + "/leases", R"({"ttl-seconds":0,"snapshot-id":7})").status == 400);
  HttpReply readOnly = test::httpRequest(rig.port, "POST", table + "/leases",
                                         R"({"ttl-seconds":60,"snapshot-id":7})",
                                         {{"Authorization", "Bearer " + rig.readToken}});
  CHECK(readOnly.status == 403);
  CHECK(test::httpRequest(rig.port, "GET", table + "/leases", {},
                          {{"Authorization", "Bearer " + rig.readToken}})
            .status == 200);
  // Release: once; a second time is 404.
  CHECK(rig.call("DELETE", table + "/leases/" + id).status == 204);
  CHECK(rig.call("DELETE", table + "/leases/" + id).errorField("reason") == "no-such-lease");
  CHECK(rig.call("GET", table + "/leases").json().at("leases").as_array().empty());
  // A lease of one second is gone after it expired (nothing released it).
  REQUIRE(rig.call("POST", table + "/leases", R"({"ttl-seconds":1,"snapshot-id":7})").status ==
          200);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  CHECK(rig.call("GET", table + "/leases").json().at("leases").as_array().empty());

  // Protected snapshots: only an existing one, once; unprotected once.
  CHECK(rig.call("POST", table + "/protected-snapshots", R"({"snapshot-id":8})")
            .errorField("reason") == "no-such-snapshot");
  CHECK(rig.call("POST", table + "/protected-snapshots", R"({"snapshot-id":7})").status == 204);
  CHECK(rig.call("POST", table + "/protected-snapshots", R"({"snapshot-id":7})").status == 409);
  CHECK(rig.call("GET", table + "/leases").json().at("protected-snapshots") ==
        boost::json::parse("[7]"));
  CHECK(rig.call("DELETE", table + "/protected-snapshots/7").status == 204);
  CHECK(rig.call("DELETE", table + "/protected-snapshots/7").errorField("reason") ==
        "no-such-snapshot");
  // The lake log holds them all, folded the same by a cold reader.
  CatalogRig cold((store.path() / "lake").string());
  CHECK(cold.call("GET", table + "/leases").json().at("protected-snapshots").as_array().empty());
}

namespace {

// What the server sends within `patience` to bytes written on a fresh connection (until it
// closes or the time is up).
std::string exchange(std::uint16_t port, const std::string& bytes,
                     std::chrono::milliseconds patience) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in where{};
  where.sin_family = AF_INET;
  where.sin_port = htons(port);
  where.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&where), sizeof where) == 0);
  REQUIRE(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == ssize_t(bytes.size()));
  std::string received;
  const auto until = std::chrono::steady_clock::now() + patience;
  for (auto now = std::chrono::steady_clock::now(); now < until;
       now = std::chrono::steady_clock::now()) {
    pollfd p{fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - now);
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char chunk[4096];
    const auto n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) break;
    received.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return received;
}

}  // namespace

TEST_CASE("catalog service: a request without a valid token gets 401 before its body is read",
          "[catalog][http-server]") {
  io::test::TempDir store;
  CatalogRig rig((store.path() / "lake").string());
  const std::string head =
      "POST /v1/prod/namespaces HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
      "Content-Length: 100000\r\n";
  const std::string token = GENERATE(std::string(), std::string("Authorization: Bearer nope\r\n"),
                                     std::string("Authorization: Basic dXNlcjpwYXNz\r\n"));
  INFO(token);
  SECTION("Expect: 100-continue: no 100, a 401") {
    const std::string got =
        exchange(rig.port, head + token + "Expect: 100-continue\r\n\r\n", std::chrono::seconds(3));
    CHECK(got.starts_with("HTTP/1.1 401 "));
    CHECK(got.find("100 Continue") == std::string::npos);
    CHECK(got.find("Connection: close") != std::string::npos);
  }
  SECTION("a body announced and not sent: the 401 comes without it") {
    const std::string got = exchange(rig.port, head + token + "\r\n", std::chrono::seconds(3));
    CHECK(got.starts_with("HTTP/1.1 401 "));
  }
}

TEST_CASE("catalog service: the bearer scheme is case-insensitive", "[catalog][http-server]") {
  io::test::TempDir store;
  CatalogRig rig((store.path() / "lake").string());
  const std::string scheme = GENERATE(std::string("Bearer"), std::string("bearer"),
                                      std::string("BEARER"), std::string("bEaReR"));
  INFO(scheme);
  const HttpReply reply = httpRequest(rig.port, "GET", "/v1/config", {},
                                      {{"Authorization", scheme + " " + rig.readToken}});
  CHECK(reply.status == 200);
  const HttpReply spaced = httpRequest(rig.port, "GET", "/v1/config", {},
                                       {{"Authorization", scheme + "   " + rig.readToken}});
  CHECK(spaced.status == 200);
}

TEST_CASE("catalog configuration: the connection bounds and the idle timeout are settings",
          "[catalog]") {
  const std::string publisher = R"("publisher":"5e1f0000-0000-4000-8000-0000000000aa")";
  auto defaults = parseConfig(R"({"format":1,)" + publisher + "}");
  REQUIRE(defaults.ok());
  CHECK(defaults->server.idleTimeoutSeconds == 60);
  CHECK(defaults->server.maxConnectionsPerAddress == 64);
  auto set =
      parseConfig(R"({"format":1,)" + publisher +
                  R"(,"server":{"idle-timeout-seconds":5,"max-connections-per-address":3}})");
  INFO((set ? std::string() : set.error().message));
  REQUIRE(set.ok());
  CHECK(set->server.idleTimeoutSeconds == 5);
  CHECK(set->server.maxConnectionsPerAddress == 3);
  auto again = parseConfig(serializeConfig(*set));
  REQUIRE(again.ok());
  CHECK(again->server.idleTimeoutSeconds == 5);
  CHECK(again->server.maxConnectionsPerAddress == 3);
  for (const char* bad : {R"("idle-timeout-seconds":0)", R"("idle-timeout-seconds":3601)",
                          R"("max-connections-per-address":0)"}) {
    INFO(bad);
    auto r = parseConfig(R"({"format":1,)" + publisher + R"(,"server":{)" + bad + "}}");
    REQUIRE(!r.ok());
    CHECK(r.error().code == Errc::usage);
  }
}
