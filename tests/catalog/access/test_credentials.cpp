// The session policies of the credential classes (catalog/access/credentials.hpp), STS's answers
// read (catalog/access/sts.hpp), and the times it writes.
#include <catch2/catch.hpp>

#include <boost/json.hpp>
#include <string>

#include "catalog/access/credentials.hpp"
#include "catalog/access/sts.hpp"

using namespace cairn;
using namespace cairn::catalog;

namespace {

PolicyScope scope() {
  PolicyScope s;
  s.bucket = "lakes";
  s.lakeRoot = "org/prod";
  s.tableLocation = "org/prod/tables/0e2b1d4c-6a8f-4c3e-9b1d-2f4a6c8e0a1b";
  s.resultsPrefix = "results";
  s.archivePrefix = "archive";
  return s;
}

// The statements of a policy, as (effect, actions, resources, prefix condition).
struct Statement {
  std::string effect;
  std::vector<std::string> actions;
  std::vector<std::string> resources;
  std::string prefix;  // the s3:prefix condition, if any
};

std::vector<Statement> statementsOf(const std::string& policy) {
  auto v = boost::json::parse(policy);
  REQUIRE(v.at("Version").as_string() == "2012-10-17");
  std::vector<Statement> out;
  for (const auto& s : v.at("Statement").as_array()) {
    Statement st;
    st.effect = std::string(s.at("Effect").as_string());
    for (const auto& a : s.at("Action").as_array()) st.actions.emplace_back(a.as_string());
    for (const auto& r : s.at("Resource").as_array()) st.resources.emplace_back(r.as_string());
    if (s.as_object().contains("Condition")) {
      st.prefix = std::string(s.at("Condition").at("StringLike").at("s3:prefix").at(0).as_string());
    }
    out.push_back(std::move(st));
  }
  return out;
}

const std::string kTable =
    "arn:aws:s3:::lakes/org/prod/tables/0e2b1d4c-6a8f-4c3e-9b1d-2f4a6c8e0a1b";

}  // namespace

TEST_CASE("credential policies: each class allows its prefixes and denies the catalog's objects",
          "[catalog][credentials]") {
  auto read = sessionPolicy(CredentialClass::tableRead, scope());
  REQUIRE(read.ok());
  auto s = statementsOf(*read);
  REQUIRE(s.size() == 3);
  CHECK(s[0].effect == "Allow");
  CHECK(s[0].actions == std::vector<std::string>{"s3:GetObject"});
  CHECK(s[0].resources == std::vector<std::string>{kTable + "/*"});
  CHECK(s[1].actions == std::vector<std::string>{"s3:ListBucket"});
  CHECK(s[1].resources == std::vector<std::string>{"arn:aws:s3:::lakes"});
  CHECK(s[1].prefix == "org/prod/tables/0e2b1d4c-6a8f-4c3e-9b1d-2f4a6c8e0a1b/*");
  CHECK(s[2].effect == "Deny");
  CHECK(s[2].actions == std::vector<std::string>{"s3:*"});
  CHECK(s[2].resources == std::vector<std::string>{"arn:aws:s3:::lakes/org/prod/ns-*"});
  // No DeleteObject in any class, and only the write classes put.
  for (auto c : kCredentialClasses) {
    auto p = sessionPolicy(c, scope());
    REQUIRE(p.ok());
    CHECK(p->find("DeleteObject") == std::string::npos);
    CHECK(p->size() <= kMaxSessionPolicyChars);
    const bool puts = p->find("s3:PutObject") != std::string::npos;
    CHECK(puts == (c == CredentialClass::tableWrite || c == CredentialClass::archive));
    // Every Allow names a prefix ending in "/*" or the bucket with a prefix condition.
    for (const auto& st : statementsOf(*p)) {
      if (st.effect != "Allow") continue;
      for (const auto& r : st.resources) {
        CHECK((r.ends_with("/*") || (r == "arn:aws:s3:::lakes" && st.prefix.ends_with("/*"))));
      }
    }
  }
  auto write = statementsOf(*sessionPolicy(CredentialClass::tableWrite, scope()));
  REQUIRE(write.size() == 5);
  CHECK(write[2].resources == std::vector<std::string>{kTable + "/*"});
  CHECK(write[4].effect == "Deny");
  CHECK(write[4].resources == std::vector<std::string>{kTable + "/metadata/*.metadata.json"});
  auto results = statementsOf(*sessionPolicy(CredentialClass::resultRead, scope()));
  CHECK(results[0].resources == std::vector<std::string>{"arn:aws:s3:::lakes/org/prod/results/*"});
  CHECK(results[1].prefix == "org/prod/results/*");
  auto archive = statementsOf(*sessionPolicy(CredentialClass::archive, scope()));
  CHECK(archive[2].resources == std::vector<std::string>{"arn:aws:s3:::lakes/org/prod/archive/*"});
}

TEST_CASE("credential policies: nothing that could widen a policy is put in one",
          "[catalog][credentials]") {
  for (const char* bad : {"org/prod/tables/a*", "org/prod/tables/a?b", "org/prod/tables/${*}",
                          "org/prod/tables/a b", "org/prod/tables/a%2A", "org/prod/tables/"}) {
    INFO(bad);
    PolicyScope s = scope();
    s.tableLocation = bad;
    auto p = sessionPolicy(CredentialClass::tableRead, s);
    REQUIRE(!p.ok());
    CHECK(p.error().code == Errc::usage);
  }
  PolicyScope root = scope();
  root.tableLocation = "org/prod";  // the lake's root is no table's location
  CHECK(!sessionPolicy(CredentialClass::tableRead, root).ok());
  PolicyScope outside = scope();
  outside.tableLocation = "org/other/t";
  CHECK(!sessionPolicy(CredentialClass::tableRead, outside).ok());
  PolicyScope noResults = scope();
  noResults.resultsPrefix.clear();
  CHECK(!sessionPolicy(CredentialClass::resultRead, noResults).ok());
  // Over the size bound: refused, never cut.
  auto big = sessionPolicy(CredentialClass::tableWrite, scope(), 100);
  REQUIRE(!big.ok());
  CHECK(big.error().message.find("characters") != std::string::npos);
  // A lake at the bucket's root.
  PolicyScope top = scope();
  top.lakeRoot = "";
  top.tableLocation = "tables/t";
  auto p = sessionPolicy(CredentialClass::tableRead, top);
  REQUIRE(p.ok());
  CHECK(p->find("\"arn:aws:s3:::lakes/ns-*\"") != std::string::npos);
}

TEST_CASE("STS: answers read, times parsed, errors without secrets", "[catalog][credentials]") {
  CHECK(parseIsoTimeMs("2026-12-01T18:37:00Z") == std::int64_t{1796150220000});
  CHECK(parseIsoTimeMs("2026-12-01T18:37:00.691924117Z") == std::int64_t{1796150220691});
  CHECK(parseIsoTimeMs("2026-12-01T18:37:00.5Z") == std::int64_t{1796150220500});
  CHECK(!parseIsoTimeMs("2026-12-01 18:37:00Z"));
  CHECK(!parseIsoTimeMs("2026-12-01T18:37:00"));
  CHECK(!parseIsoTimeMs("2026-13-01T18:37:00Z"));
  CHECK(!parseIsoTimeMs("2026-12-01T18:37:00.Z"));

  const std::string ok =
      "<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>AKID</AccessKeyId>"
      "<SecretAccessKey>SECRET</SecretAccessKey><SessionToken>TOKEN</SessionToken>"
      "<Expiration>2026-12-01T18:37:00Z</Expiration></Credentials></AssumeRoleResult>"
      "</AssumeRoleResponse>";
  auto c = parseAssumeRoleResponse(200, ok);
  REQUIRE(c.ok());
  CHECK(c->accessKeyId == "AKID");
  CHECK(c->sessionToken == "TOKEN");
  CHECK(c->expiresAtMs == 1796150220000);
  auto refused = parseAssumeRoleResponse(
      400,
      "<ErrorResponse><Error><Code>PackedPolicyTooLarge</Code><Message>too big</Message>"
      "</Error></ErrorResponse>");
  REQUIRE(!refused.ok());
  CHECK(refused.error().find("PackedPolicyTooLarge") != std::string::npos);
  auto partial = parseAssumeRoleResponse(200, "<AssumeRoleResponse/>");
  CHECK(!partial.ok());
  auto garbage = parseAssumeRoleResponse(200, "not xml");
  CHECK(!garbage.ok());
}
