// The S3 backend against a real server (Ceph RGW, tests/store/s3_test_env.hpp): the same
// conformance suite as the directory store, and a checkpoint verified through S3.
#include <catch2/catch.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <cstdlib>
#include <random>

#include "engine/format/keys.hpp"
#include "engine/graph/checkpoint.hpp"
#include "engine/graph/verifier.hpp"
#include "engine/journal/journal.hpp"
#include "engine/store/s3_store.hpp"
#include "io/uring.hpp"
#include "net/s3/s3_client.hpp"
#include "tests/store/s3_test_env.hpp"
#include "tests/store/store_conformance.hpp"

using namespace cairn;
namespace asio = boost::asio;

namespace {

using test::rgwUrl;

struct S3Fixture {
  asio::io_context context{1};
  std::unique_ptr<S3Store> store;
  explicit S3Fixture(const StoreUrl& url) {
    auto s = S3Store::open(context.get_executor(), url);
    REQUIRE(s.ok());
    store = std::move(*s);
  }
};

}  // namespace

TEST_CASE("S3 store conformance (RGW)", "[store][s3]") {
  auto url = rgwUrl();
  if (!url) return;
  S3Fixture f(*url);
  test::runStoreConformance(*f.store, f.context, "conf/");
}

TEST_CASE("S3 store probe finds conditions enforced (RGW)", "[store][s3]") {
  auto url = rgwUrl();
  if (!url) return;
  S3Fixture f(*url);
  auto report = io::test::runToCompletion(f.context, f.store->probe());
  INFO(report.summary());
  CHECK(report.enforced);
  REQUIRE(report.dialect.has_value());
  CHECK(*report.dialect == net::S3Dialect::rgw);
}

TEST_CASE("checkpoint through S3 verifies, and a damaged segment is caught (RGW)",
          "[checkpoint][s3]") {
  auto url = rgwUrl();
  if (!url) return;
  S3Fixture f(*url);
  io::test::TempDir dir;
  io::Uring uring(f.context, 64);
  auto journal = std::move(
      *io::test::runToCompletion(f.context, Journal::create(uring, dir.path() / "db", u"s3")));
  int failures = 0;
  std::vector<std::string> payloads(3000);
  for (int i = 0; i < 3000; ++i) {
    payloads[i] = "record " + std::to_string(i) + std::string(i % 500, 'y');
    asio::co_spawn(
        f.context,
        [&, i]() -> asio::awaitable<void> {
          if (!co_await journal->append(asBytes(payloads[i]))) ++failures;
        },
        asio::detached);
  }
  f.context.restart();
  f.context.run();
  REQUIRE(failures == 0);
  Uuid ns = Uuid::random();
  EngineLimits limits;
  OperationBudget budget;
  CheckpointOptions opt;
  opt.segmentTargetBytes = 64 << 10;
  auto c = io::test::runToCompletion(
      f.context, installCheckpoint(*journal, *f.store, ns, std::nullopt, journal->endSequence(),
                                   limits, budget, opt));
  REQUIRE(c.ok());
  REQUIRE(c->manifest.segments.size() > 3);
  VerifyOptions deep;
  deep.deep = true;
  OperationBudget b2;
  auto v = io::test::runToCompletion(
      f.context, verifyManifestGraph(*f.store, ns, c->manifestSha256, c->manifestBytes.size(),
                                     journal.get(), limits, b2, deep));
  REQUIRE(v.ok());
  CHECK(v->objects == 1 + c->manifest.segments.size());

  // Replace one segment with other bytes (what an operator's mistake or a bad disk does).
  std::string key = keys::segment(ns, c->manifest.segments[2].objectSha256);
  auto current = io::test::runToCompletion(f.context, f.store->get(key, 1 << 30));
  REQUIRE(current.ok());
  Bytes damaged = current->bytes;
  damaged[damaged.size() / 2] ^= 0x01;
  REQUIRE(
      io::test::runToCompletion(f.context, f.store->putIfMatch(key, damaged, current->etag)).ok());
  OperationBudget b3;
  auto bad = io::test::runToCompletion(
      f.context, verifyManifestGraph(*f.store, ns, c->manifestSha256, c->manifestBytes.size(),
                                     journal.get(), limits, b3, deep));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == Errc::corrupt);
  CHECK(bad.error().key == key);
}

TEST_CASE("an embedder's credentials provider is asked at every request (RGW)", "[store][s3]") {
  auto url = rgwUrl();
  if (!url) return;
  const net::SigV4Credentials good{test::env("S3_ACCESS_KEY"), test::env("S3_SECRET_KEY"), ""};
  // With a provider, the environment's keys are not needed (nor used).
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  auto provider = std::make_shared<net::RefreshableCredentials>();
  asio::io_context context{1};
  auto opened = S3Store::open(context.get_executor(), *url, provider);
  ::setenv("AWS_ACCESS_KEY_ID", good.accessKey.c_str(), 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", good.secretKey.c_str(), 1);
  REQUIRE(opened.ok());
  ObjectStore& store = **opened;
  const std::string text = "signed by the provider";
  const ByteView body = asBytes(text);

  // Nothing set yet: the request fails before it is sent.
  auto none = io::test::runToCompletion(context, store.putIfAbsent("provided/a", body));
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().status == StoreStatus::failure);
  CHECK(none.error().message.find("no S3 credentials set yet") != std::string::npos);
  CHECK(none.error().http == 0);

  // A wrong secret: the store refuses the signature, and nothing is written.
  provider->set({good.accessKey, good.secretKey + "x", ""});
  auto wrong = io::test::runToCompletion(context, store.putIfAbsent("provided/a", body));
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.error().http == 403);
  CHECK(wrong.error().message.find(good.secretKey) == std::string::npos);

  // Replaced while the store is open: the next request uses the new keys.
  provider->set(good);
  REQUIRE(io::test::runToCompletion(context, store.putIfAbsent("provided/a", body)).ok());
  auto back = io::test::runToCompletion(context, store.get("provided/a", 1024));
  REQUIRE(back.ok());
  CHECK(std::string(back->bytes.begin(), back->bytes.end()) == text);
}
