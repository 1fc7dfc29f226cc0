// TLS: a throwaway CA and server certificates made with the OpenSSL API, an S3-shaped server
// on loopback over TLS, and the client's verification: it succeeds with the CA configured,
// refuses without it, and refuses a certificate for another host name.

#include <catch2/catch.hpp>
#include <memory>

#include "net/s3/s3_client.hpp"
#include "tests/net/net_test_support.hpp"
#include "tests/net/tls_test_support.hpp"

namespace {

using namespace cairn;
using namespace cairn::net;
using namespace cairn::net::test;
using namespace std::chrono_literals;

S3Config tlsConfig(std::string endpoint, std::string caFile) {
  S3Config c;
  c.endpoint = std::move(endpoint);
  c.bucket = "bkt";
  c.accessKey = "AKIDFAKE";
  c.secretKey = "fake-secret";
  c.caFile = std::move(caFile);
  c.maxAttempts = 2;
  return c;
}

std::string localhostEndpoint(const FakeServer& server) {
  return "https://localhost:" + std::to_string(server.port());
}

}  // namespace

TEST_CASE("TLS: verified with the configured CA, for an IP and a DNS name", "[net][tls]") {
  Pki pki;
  asio::io_context io;
  FakeS3 s3;
  FakeServer server(
      io.get_executor(), [&](const FakeRequest& r) { return s3(r); },
      pki.serverContext("DNS:localhost,IP:127.0.0.1", 2));
  REQUIRE(server.endpoint().starts_with("https://127.0.0.1:"));

  for (const std::string& endpoint : {server.endpoint(), localhostEndpoint(server)}) {
    INFO(endpoint);
    S3Config config = tlsConfig(endpoint, pki.caFile);
    config.payloadSigning = PayloadSigning::unsignedOverTls;
    S3Client client(io.get_executor(), config);
    auto put = runAsync(
        io, client.put("k", asBytes(std::string_view("over tls")), PutCondition::ifNoneMatch));
    REQUIRE(put.outcome.ok());
    CHECK(*server.requests().back().header("x-amz-content-sha256") == "UNSIGNED-PAYLOAD");
    auto got = runAsync(io, client.get("k", 1024));
    REQUIRE(got.outcome.ok());
    CHECK(textOf(got.body) == "over tls");
    CHECK(got.etag == put.etag);
    CHECK(runAsync(io, client.remove("k")).ok());
  }
}

TEST_CASE("TLS: refused without the CA (system trust store)", "[net][tls]") {
  Pki pki;
  asio::io_context io;
  FakeS3 s3;
  FakeServer server(
      io.get_executor(), [&](const FakeRequest& r) { return s3(r); },
      pki.serverContext("DNS:localhost,IP:127.0.0.1", 3));
  S3Client client(io.get_executor(), tlsConfig(server.endpoint(), ""));
  auto put =
      runAsync(io, client.put("k", asBytes(std::string_view("x")), PutCondition::ifNoneMatch));
  CHECK(put.outcome.status == S3Status::failure);  // nothing was sent: not uncertain
  CHECK(put.outcome.http == 0);
  CHECK(put.outcome.message.find("certificate verify failed") != std::string::npos);
  CHECK(server.stats().requests == 0);
  CHECK(s3.objects.empty());
}

TEST_CASE("TLS: refused when the certificate names another host", "[net][tls]") {
  Pki pki;
  asio::io_context io;
  FakeS3 s3;
  FakeServer server(
      io.get_executor(), [&](const FakeRequest& r) { return s3(r); },
      pki.serverContext("DNS:other.invalid", 4));
  SECTION("by IP address") {
    S3Client client(io.get_executor(), tlsConfig(server.endpoint(), pki.caFile));
    auto got = runAsync(io, client.get("k", 1024));
    CHECK(got.outcome.status == S3Status::failure);
    CHECK(got.outcome.message.find("IP address mismatch") != std::string::npos);
  }
  SECTION("by host name") {
    S3Client client(io.get_executor(), tlsConfig(localhostEndpoint(server), pki.caFile));
    auto got = runAsync(io, client.get("k", 1024));
    CHECK(got.outcome.status == S3Status::failure);
    CHECK(got.outcome.message.find("hostname mismatch") != std::string::npos);
  }
  CHECK(server.stats().requests == 0);
}

TEST_CASE("TLS: an unreadable CA file is a configuration error", "[net][tls]") {
  asio::io_context io;
  auto created =
      S3Client::create(io.get_executor(), tlsConfig("https://127.0.0.1:1", "/nonexistent/ca.pem"));
  CHECK_FALSE(created.ok());
}

TEST_CASE("TLS: a client of plain-HTTP endpoints reads its trust store only for a TLS one",
          "[net][tls]") {
  // tlsExpected = false (what S3Client sets for an http:// endpoint): the CA file is not read
  // when the client is made, plain HTTP works without it, and the first TLS connection reads
  // it; an unreadable one fails that request before anything is sent.
  Pki pki;
  asio::io_context io;
  FakeServer plain(io.get_executor(),
                   [](const FakeRequest&) { return FakeReply{httpResponse(200, {}, "plain")}; });
  FakeServer tls(
      io.get_executor(), [](const FakeRequest&) { return FakeReply{httpResponse(200, {}, "tls")}; },
      pki.serverContext("DNS:localhost,IP:127.0.0.1", 5));
  auto get = [&](HttpClient& client, const std::string& endpoint) {
    HttpRequest r;
    r.method = "GET";
    r.target = "/k";
    r.maxResponseBody = 16;
    r.idempotent = true;
    const Endpoint e = parseEndpoint(endpoint).value();
    return runAsync(io, client.request(e, r));
  };

  HttpClientOptions unreadable;
  unreadable.caFile = "/nonexistent/ca.pem";
  unreadable.maxAttempts = 1;
  CHECK_THROWS_WITH(HttpClient(io.get_executor(), unreadable),
                    Catch::Contains("TLS trust store"));  // expected: read at once
  unreadable.tlsExpected = false;
  HttpClient lazyBad(io.get_executor(), unreadable);
  auto r = get(lazyBad, plain.endpoint());
  REQUIRE(r.ok());
  CHECK(textOf(r.value().body) == "plain");
  r = get(lazyBad, tls.endpoint());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == HttpErrorKind::notSent);
  CHECK(r.error().message.find("TLS trust store") != std::string::npos);
  CHECK(tls.stats().requests == 0);

  HttpClientOptions good;
  good.caFile = pki.caFile;
  good.tlsExpected = false;
  HttpClient lazyGood(io.get_executor(), good);
  r = get(lazyGood, plain.endpoint());
  REQUIRE(r.ok());
  r = get(lazyGood, tls.endpoint());  // the trust store is read now
  REQUIRE(r.ok());
  CHECK(textOf(r.value().body) == "tls");
  CHECK(tls.stats().requests == 1);
}
