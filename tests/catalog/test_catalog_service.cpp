// The catalog's pieces below the routes (the lake's directory and a table's history as folds,
// the configuration and its tokens), and the service when a store cannot be trusted: a store
// that does not answer makes the lake not ready (503, never invented metadata), a damaged log
// is refused, not served.
#include <catch2/catch.hpp>

#include <filesystem>

#include "catalog/config.hpp"
#include "catalog/directory.hpp"
#include "engine/format/keys.hpp"
#include "tests/catalog/catalog_test_support.hpp"

using namespace cairn;
using namespace cairn::catalog;
using test::CatalogRig;
using test::HttpReply;

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

TEST_CASE("table history: each commit replaces the current metadata file", "[catalog]") {
  TableHistory h;
  const Digest d{};
  CHECK(!h.apply(TableCommit{"s3://b/m2", d, 10, std::string("s3://b/m1"), 1, {}}).ok());
  REQUIRE(h.apply(TableCommit{"s3://b/m1", d, 10, std::nullopt, 1, "k1"}).ok());
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
