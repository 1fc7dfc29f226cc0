#include <catch2/catch.hpp>

#include <filesystem>

#include "engine/store/store_url.hpp"

using namespace cairn;

TEST_CASE("store URLs: directories and file URLs", "[store][url]") {
  auto plain = parseStoreUrl("/var/lib/cairn/store");
  REQUIRE(plain.ok());
  CHECK(plain->kind == StoreUrl::Kind::directory);
  CHECK(plain->directory == "/var/lib/cairn/store");
  // A relative path is made absolute against the working directory when it is parsed.
  auto relative = parseStoreUrl("store");
  REQUIRE(relative.ok());
  CHECK(relative->directory == std::filesystem::current_path() / "store");
  auto file = parseStoreUrl("file:///srv/store");
  REQUIRE(file.ok());
  CHECK(file->directory == "/srv/store");
  CHECK_FALSE(parseStoreUrl("file://relative").ok());
  CHECK_FALSE(parseStoreUrl("").ok());
  CHECK_FALSE(parseStoreUrl("gs://bucket").ok());
}

TEST_CASE("store URLs: every scheme is parsed or refused, a path is made absolute",
          "[store][url]") {
  const auto here = std::filesystem::current_path();
  // file: without an authority, and with an empty one; the path lexically normal.
  for (const char* url :
       {"file:/srv/store", "file:///srv/store/", "file:/srv/x/../store", "/srv//store/."}) {
    auto parsed = parseStoreUrl(url);
    REQUIRE(parsed.ok());
    CHECK(parsed->kind == StoreUrl::Kind::directory);
    CHECK(parsed->directory == "/srv/store");
  }
  auto dotted = parseStoreUrl("./a:b/../c");
  REQUIRE(dotted.ok());
  CHECK(dotted->directory == here / "c");
  // A scheme other than file: and s3://, a host, a relative file path: refused, never a
  // directory named "file:" or "c:" in the working directory.
  for (const char* url : {"file:relative", "file://host/srv", "file://", "file:", "c:x",
                          "ftp://host/x", "S3://bucket", "s3:bucket", "a+b.c-d:x"}) {
    INFO(url);
    CHECK_FALSE(parseStoreUrl(url).ok());
  }
}

TEST_CASE("store URLs: the recorded form is absolute and never overlaps the database",
          "[store][url]") {
  const auto here = std::filesystem::current_path();
  auto recorded = recordedStoreUrl("store", "db");
  REQUIRE(recorded.ok());
  CHECK(*recorded == (here / "store").string());
  auto s3 = recordedStoreUrl("s3://bucket/root?region=us-east-1", "db");
  REQUIRE(s3.ok());
  CHECK(*s3 == "s3://bucket/root?region=us-east-1");
  // The store is the database directory, lies inside it, or holds it: refused.
  for (auto [store, db] :
       {std::pair{"db", "db"}, std::pair{"db/store", "db"}, std::pair{"x", "x/y/db"},
        std::pair{"x/y/..", "./x/db/"}, std::pair{"/", "db"}}) {
    INFO(store << " " << db);
    auto refused = recordedStoreUrl(store, db);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().find("overlap") != std::string::npos);
  }
  // Siblings and a shared prefix of the name are not an overlap.
  CHECK(recordedStoreUrl("dbstore", "db").ok());
  CHECK(recordedStoreUrl("a/store", "a/db").ok());
}

TEST_CASE("store URLs: s3 with endpoint, region, dialect and root", "[store][url]") {
  auto u = parseStoreUrl(
      "s3://cairn-test/tables/t1/?endpoint=http%3A%2F%2F127.0.0.1%3A7480&region=eu-west-1"
      "&dialect=rgw");
  REQUIRE(u.ok());
  CHECK(u->kind == StoreUrl::Kind::s3);
  CHECK(u->bucket == "cairn-test");
  CHECK(u->root == "tables/t1");
  CHECK(u->endpoint == "http://127.0.0.1:7480");
  CHECK(u->region == "eu-west-1");
  CHECK(u->dialect == "rgw");
  CHECK_FALSE(u->virtualHost);
  auto plainEndpoint = parseStoreUrl("s3://bkt?endpoint=https://s3.example.com&addressing=virtual");
  REQUIRE(plainEndpoint.ok());
  CHECK(plainEndpoint->endpoint == "https://s3.example.com");
  CHECK(plainEndpoint->virtualHost);
  CHECK(plainEndpoint->root.empty());

  // What the URL leaves open is left empty here, for resolveStoreUrl (test_aws_config.cpp).
  auto open = parseStoreUrl("s3://bkt");
  REQUIRE(open.ok());
  CHECK(open->endpoint.empty());
  CHECK(open->region.empty());
  CHECK(open->addressing == "auto");
  CHECK(u->endpointSource == "url");
  CHECK(u->regionSource == "url");
  CHECK_FALSE(parseStoreUrl("s3://B?endpoint=http://h").ok());                  // bucket case
  CHECK_FALSE(parseStoreUrl("s3://bkt?endpoint=ftp://h").ok());                 // scheme
  CHECK_FALSE(parseStoreUrl("s3://bkt?endpoint=http://h&dialect=minio").ok());  // dialect
  CHECK_FALSE(parseStoreUrl("s3://bkt?endpoint=http://h&secret=x").ok());       // unknown
  CHECK_FALSE(parseStoreUrl("s3://bkt/../x?endpoint=http://h").ok());           // root
  CHECK_FALSE(parseStoreUrl("s3://bkt?endpoint=http://h&region=%zz").ok());     // encoding

  CHECK(u->requestTimeoutMs == 60'000);
  auto timed = parseStoreUrl("s3://bkt?endpoint=http://h&timeout_ms=1500");
  REQUIRE(timed.ok());
  CHECK(timed->requestTimeoutMs == 1500);
  for (const char* bad : {"99", "3600001", "", "1e3", "-5", "10000000", "12a"}) {
    INFO(bad);
    CHECK_FALSE(parseStoreUrl(std::string("s3://bkt?endpoint=http://h&timeout_ms=") + bad).ok());
  }

  CHECK_FALSE(u->connections.has_value());  // the opener's default
  for (const auto& [text, n] : std::vector<std::pair<std::string, std::size_t>>{
           {"1", 1}, {"64", 64}, {"1024", 1024}, {"0064", 64}}) {
    auto pooled = parseStoreUrl("s3://bkt?endpoint=http://h&connections=" + text);
    REQUIRE(pooled.ok());
    CHECK(pooled->connections == n);
  }
  for (const char* bad : {"0", "1025", "", "x", "-1", "99999", "8 ", "1e2"}) {
    INFO(bad);
    auto pooled = parseStoreUrl(std::string("s3://bkt?endpoint=http://h&connections=") + bad);
    REQUIRE_FALSE(pooled.ok());
    CHECK_THAT(pooled.error(), Catch::Contains("connections"));
  }
}

// Issue 22, defect 9: `&region=us-east-1%0d%0aX-Injected:%201` was percent-decoded into the
// Authorization header, and the server received an extra header line; a repeated parameter
// silently won over the first.
TEST_CASE("store URL: parameters are validated, never injected, never given twice", "[store]") {
  const std::string base = "s3://bkt?endpoint=http://127.0.0.1:7480";
  for (const char* bad :
       {"&region=us-east-1%0d%0aX-Injected:%201", "&region=us%0a", "&region=us%00east",
        "&region=us%7f", "&region=us%20east", "&region=us/east", "&region=",
        "&region=" /* 65 */
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "&ca=/etc/ssl/x%0d%0a", "&dialect=rgw%0a", "&addressing=path%0d", "&timeout_ms=1000%0a",
        "&region=us-east-1&region=eu-west-1", "&dialect=rgw&dialect=aws",
        "&timeout_ms=1000&timeout_ms=2000", "&connections=8%0a", "&connections=2&connections=3"}) {
    INFO(bad);
    auto u = parseStoreUrl(base + bad);
    REQUIRE_FALSE(u.ok());
    // The message never carries the raw control characters either.
    for (char c : u.error()) CHECK(static_cast<unsigned char>(c) >= 0x20);
  }
  CHECK_THAT(parseStoreUrl(base + "&region=a&region=b").error(), Catch::Contains("twice"));
  CHECK_FALSE(parseStoreUrl("s3://bkt?endpoint=http://127.0.0.1:7480&endpoint=http://h").ok());
  // The endpoint's host goes into the Host header: nothing but a host.
  for (const char* bad : {"http://h%0d%0aX-Injected:1", "http://h%0a", "http://h%20x",
                          "http://h:80%0a", "http://[::1%0a]:80", "http://h\"x", "http://h,x"}) {
    INFO(bad);
    CHECK_FALSE(parseStoreUrl(std::string("s3://bkt?endpoint=") + bad).ok());
  }
  for (const char* good : {"http://127.0.0.1:7480", "https://s3.eu-west-1.amazonaws.com",
                           "http://[::1]:9000", "http://minio_1:9000"}) {
    INFO(good);
    CHECK(parseStoreUrl(std::string("s3://bkt?endpoint=") + good).ok());
  }
  for (const char* region : {"us-east-1", "auto", "garage", "de_fra_1"}) {
    INFO(region);
    CHECK(parseStoreUrl(base + "&region=" + region).ok());
  }
}
