// Integration with a real S3 server (Ceph RGW from shared/s3/start-rgw.sh):
//   eval "$(bash ../shared/s3/start-rgw.sh)"; export S3_ENDPOINT S3_ACCESS_KEY ...
// Reads S3_ENDPOINT, S3_ACCESS_KEY, S3_SECRET_KEY, S3_REGION, S3_BUCKET. Without them the
// tests FAIL -- unless CAIRN_ALLOW_NO_S3=1 (and neither CI=true nor CAIRN_REQUIRE_S3=1),
// which turns the failure into a warning. They never skip silently.
// Each run works under its own key prefix, so runs and other users of the server do not meet.

#include <unistd.h>

#include <boost/asio/this_coro.hpp>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <random>
#include <set>

#include "net/http/http_client.hpp"
#include "net/s3/s3_client.hpp"
#include "net/s3/s3_dialect.hpp"
#include "tests/net/net_test_support.hpp"

namespace {

using namespace cairn;
using namespace cairn::net;
using namespace cairn::net::test;
using namespace std::chrono_literals;

constexpr int kRacers = 16;

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// A unique root prefix for this process.
const std::string& runPrefix() {
  static const std::string prefix = [] {
    std::random_device random;
    return "cairn-net-tests/" + std::to_string(::getpid()) + "-" + std::to_string(random()) + "/";
  }();
  return prefix;
}

// The server's configuration, or nullopt after a WARN when running without S3 is allowed.
std::optional<S3Config> rgwConfig(const std::string& subPrefix) {
  S3Config c;
  c.endpoint = env("S3_ENDPOINT");
  c.accessKey = env("S3_ACCESS_KEY");
  c.secretKey = env("S3_SECRET_KEY");
  c.region = env("S3_REGION");
  c.bucket = env("S3_BUCKET");
  if (c.endpoint.empty() || c.accessKey.empty() || c.secretKey.empty() || c.region.empty() ||
      c.bucket.empty()) {
    const bool required = env("CI") == "true" || env("CAIRN_REQUIRE_S3") == "1";
    const std::string help =
        "S3_ENDPOINT, S3_ACCESS_KEY, S3_SECRET_KEY, S3_REGION and S3_BUCKET must be set: "
        "set -a; eval \"$(bash ../shared/s3/start-rgw.sh)\"; set +a";
    if (required || env("CAIRN_ALLOW_NO_S3") != "1") FAIL(help);
    WARN("S3 integration test NOT run (CAIRN_ALLOW_NO_S3=1): " + help);
    return std::nullopt;
  }
  c.rootPrefix = runPrefix() + subPrefix;
  c.dialect = S3Dialect::rgw;
  c.maxConnections = kRacers;
  return c;
}

// Deletes every key under the client's root prefix.
asio::awaitable<int> removeAll(S3Client& client) {
  int removed = 0;
  std::string token;
  for (int page = 0; page < 100; ++page) {
    auto list = co_await client.list("", token, 1000);
    if (!list.outcome.ok()) co_return -1;
    for (const auto& e : list.entries) {
      auto removedOne = co_await client.remove(e.key);
      if (removedOne.ok()) ++removed;
    }
    token = list.continuation;
    if (token.empty()) break;
  }
  co_return removed;
}

struct Rgw {
  explicit Rgw(S3Config c) : config(std::move(c)), client(io.get_executor(), config) {}
  ~Rgw() {
    try {
      runAsync(io, removeAll(client));
    } catch (...) {
    }
  }
  template <class T>
  T run(asio::awaitable<T> task) {
    return runAsync(io, std::move(task));
  }
  S3Object put(const std::string& key, std::string_view body, PutCondition c = PutCondition::none,
               std::string etag = {}) {
    return run(client.put(key, asBytes(body), c, std::move(etag)));
  }

  asio::io_context io;
  S3Config config;
  S3Client client;
};

std::string describe(const S3Outcome& o) {
  return std::string(statusName(o.status)) + " http=" + std::to_string(o.http) + " code=" + o.code +
         " " + o.message;
}

}  // namespace

TEST_CASE("RGW: put, get, head, delete, and missing versus failure", "[net][s3]") {
  auto config = rgwConfig("basic/");
  if (!config) return;
  Rgw rgw(*config);
  const std::string key = "dir/a b+c%d~e$f.bin";
  const std::string body = "cairn on rgw";

  auto put = rgw.put(key, body);
  INFO(describe(put.outcome));
  REQUIRE(put.outcome.ok());
  CHECK(isStrongEtag(put.etag));

  auto got = rgw.run(rgw.client.get(key, 1024));
  REQUIRE(got.outcome.ok());
  CHECK(textOf(got.body) == body);
  CHECK(got.etag == put.etag);

  auto head = rgw.run(rgw.client.head(key));
  REQUIRE(head.outcome.ok());
  CHECK(head.etag == put.etag);
  CHECK(head.size == body.size());

  CHECK(rgw.run(rgw.client.get(key, body.size() - 1)).outcome.status == S3Status::failure);

  CHECK(rgw.run(rgw.client.remove(key)).ok());
  auto gone = rgw.run(rgw.client.get(key, 1024));
  CHECK(gone.outcome.status == S3Status::missing);
  CHECK(gone.outcome.http == 404);
  CHECK(gone.outcome.code == "NoSuchKey");
  CHECK(rgw.run(rgw.client.head(key)).outcome.status == S3Status::missing);
  CHECK(rgw.run(rgw.client.remove(key)).ok());  // RGW: 204 for a missing key too

  // A missing bucket is a failure, never "missing".
  S3Config noBucket = *config;
  noBucket.bucket = "cairn-no-such-bucket-" + std::to_string(::getpid());
  S3Client other(rgw.io.get_executor(), noBucket);
  auto nbGet = rgw.run(other.get("k", 1024));
  CHECK(nbGet.outcome.status == S3Status::failure);
  CHECK(nbGet.outcome.code == "NoSuchBucket");
  auto nbHead = rgw.run(other.head("k"));
  CHECK(nbHead.outcome.status == S3Status::failure);
  CHECK(nbHead.outcome.code == "NoSuchBucket");
  CHECK(rgw.run(other.list("", "", 10)).outcome.status == S3Status::failure);

  // Wrong credentials: 403, and the secret appears nowhere.
  S3Config wrong = *config;
  wrong.secretKey = "wrong-secret-key-that-must-not-leak";
  S3Client denied(rgw.io.get_executor(), wrong);
  auto d = rgw.run(denied.get("k", 1024));
  CHECK(d.outcome.status == S3Status::failure);
  CHECK(d.outcome.http == 403);
  CHECK(d.outcome.message.find(wrong.secretKey) == std::string::npos);
  CHECK(d.outcome.message.find(config->secretKey) == std::string::npos);
}

TEST_CASE("RGW: a large object, and a presigned GET", "[net][s3]") {
  auto config = rgwConfig("large/");
  if (!config) return;
  Rgw rgw(*config);
  Bytes big(16 * 1024 * 1024);
  for (std::size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<std::uint8_t>(i * 131 + (i >> 13));
  PutOptions options;
  options.sha256 = sha256(big);
  auto put = rgw.run(rgw.client.put("big.bin", big, options));
  REQUIRE(put.outcome.ok());
  auto got = rgw.run(rgw.client.get("big.bin", big.size()));
  REQUIRE(got.outcome.ok());
  CHECK(got.body == big);
  CHECK(rgw.client.httpStats().connectionsOpened == 1);

  const std::string url = rgw.client.presignedUrl("GET", "big.bin", std::chrono::seconds(60));
  const auto pathStart = url.find('/', url.find("://") + 3);
  HttpClient http(rgw.io.get_executor(), {});
  HttpRequest request;
  request.method = "GET";
  request.target = url.substr(pathStart);
  request.maxResponseBody = big.size();
  auto presigned = rgw.run(http.request(parseEndpoint(url.substr(0, pathStart)).value(), request));
  REQUIRE(presigned.ok());
  CHECK(presigned.value().status == 200);
  CHECK(presigned.value().body == big);
}

TEST_CASE("RGW: ListObjectsV2 with continuation", "[net][s3]") {
  auto config = rgwConfig("list/");
  if (!config) return;
  Rgw rgw(*config);
  std::set<std::string> keys;
  for (int i = 0; i < 7; ++i) keys.insert("p/key " + std::to_string(i) + (i % 2 ? "+x" : "%y"));
  for (const auto& k : keys) REQUIRE(rgw.put(k, k).outcome.ok());
  REQUIRE(rgw.put("q/outside", "x").outcome.ok());

  std::vector<std::string> listed;
  std::string token;
  int pages = 0;
  do {
    auto page = rgw.run(rgw.client.list("p/", token, 3));
    INFO(describe(page.outcome));
    REQUIRE(page.outcome.ok());
    CHECK(page.entries.size() <= 3);
    for (const auto& e : page.entries) {
      listed.push_back(e.key);
      CHECK(e.size == e.key.size());
    }
    token = page.continuation;
    REQUIRE(++pages <= 5);
  } while (!token.empty());
  CHECK(pages == 3);
  CHECK(std::set<std::string>(listed.begin(), listed.end()) == keys);
  CHECK(std::is_sorted(listed.begin(), listed.end()));
}

// kRacers concurrent conditional PUTs of distinct bodies to one key: exactly one wins, every
// other is refused (412, or a lost race reported as conflict), and the stored object is the
// winner's, with the winner's ETag. The tally of answers goes to the test log.
void race(Rgw& rgw, const std::string& key, PutCondition condition, const std::string& etag,
          int round) {
  std::vector<std::string> bodies;
  for (int i = 0; i < kRacers; ++i) {
    bodies.push_back(key + " round " + std::to_string(round) + " by writer " + std::to_string(i));
  }
  std::vector<asio::awaitable<S3Object>> tasks;
  for (int i = 0; i < kRacers; ++i) {
    tasks.push_back(rgw.client.put(key, asBytes(bodies[i]), condition, etag));
  }
  auto results = rgw.run(whenAll(std::move(tasks)));
  int winners = 0;
  int winner = -1;
  std::map<std::string, int> tally;
  for (int i = 0; i < kRacers; ++i) {
    const auto& o = results[i].outcome;
    ++tally[std::string(statusName(o.status)) + "/" + std::to_string(o.http) + "/" + o.code];
    CHECK((o.ok() || o.status == S3Status::preconditionFailed || o.status == S3Status::conflict));
    if (o.ok()) {
      ++winners;
      winner = i;
    }
  }
  std::string summary;
  for (const auto& [answer, n] : tally) summary += answer + " x" + std::to_string(n) + "  ";
  UNSCOPED_INFO(key << " round " << round << ": " << summary);
  REQUIRE(winners == 1);
  auto stored = rgw.run(rgw.client.get(key, 1024));
  REQUIRE(stored.outcome.ok());
  CHECK(textOf(stored.body) == bodies[winner]);
  CHECK(stored.etag == results[winner].etag);
}

TEST_CASE("RGW: 16 racing If-None-Match: * writers, exactly one wins", "[net][s3]") {
  auto config = rgwConfig("race-create/");
  if (!config) return;
  Rgw rgw(*config);
  for (int round = 0; round < 3; ++round) {
    race(rgw, "head-" + std::to_string(round), PutCondition::ifNoneMatch, {}, round);
  }
}

TEST_CASE("RGW: 16 racing If-Match writers on one observed ETag, exactly one wins", "[net][s3]") {
  auto config = rgwConfig("race-cas/");
  if (!config) return;
  Rgw rgw(*config);
  REQUIRE(rgw.put("head", "revision 0", PutCondition::ifNoneMatch).outcome.ok());
  for (int round = 1; round <= 3; ++round) {
    auto observed = rgw.run(rgw.client.get("head", 1024));
    REQUIRE(observed.outcome.ok());
    race(rgw, "head", PutCondition::ifMatch, observed.etag, round);
  }
}

TEST_CASE("RGW: the quoted If-Match form is refused (the reason for the rgw dialect)",
          "[net][s3]") {
  auto config = rgwConfig("quoted/");
  if (!config) return;
  Rgw rgw(*config);
  auto created = rgw.put("k", "one", PutCondition::ifNoneMatch);
  REQUIRE(created.outcome.ok());
  S3Config awsStyle = *config;
  awsStyle.dialect = S3Dialect::aws;
  S3Client aws(rgw.io.get_executor(), awsStyle);
  auto quoted =
      rgw.run(aws.put("k", asBytes(std::string_view("two")), PutCondition::ifMatch, created.etag));
  CHECK(quoted.outcome.status == S3Status::preconditionFailed);
  auto bare = rgw.put("k", "two", PutCondition::ifMatch, created.etag);
  CHECK(bare.outcome.ok());
  auto stale = rgw.put("k", "three", PutCondition::ifMatch, created.etag);
  CHECK(stale.outcome.status == S3Status::preconditionFailed);
  auto absent = rgw.put("absent", "x", PutCondition::ifMatch, created.etag);
  CHECK(absent.outcome.status == S3Status::preconditionFailed);
}

TEST_CASE("RGW: the condition probe reports enforced, dialect rgw", "[net][s3]") {
  auto config = rgwConfig("probe/");
  if (!config) return;
  config->dialect = S3Dialect::aws;  // the probe must find the dialect by itself
  Rgw rgw(*config);
  auto report = rgw.run(probeConditions(rgw.client, "scratch/"));
  INFO(report.summary());
  CHECK(report.enforced);
  REQUIRE(report.dialect.has_value());
  CHECK(*report.dialect == S3Dialect::rgw);
  CHECK(report.cleanedUp);
  auto left = rgw.run(rgw.client.list("scratch/", "", 10));
  REQUIRE(left.outcome.ok());
  CHECK(left.entries.empty());
}
