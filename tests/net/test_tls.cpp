// TLS: a throwaway CA and server certificates made with the OpenSSL API, an S3-shaped server
// on loopback over TLS, and the client's verification: it succeeds with the CA configured,
// refuses without it, and refuses a certificate for another host name.

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <catch2/catch.hpp>
#include <memory>

#include "net/s3_client.hpp"
#include "tests/net/net_test_support.hpp"

namespace {

using namespace cairn;
using namespace cairn::net;
using namespace cairn::net::test;
using namespace std::chrono_literals;

using Key = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using Cert = std::unique_ptr<X509, decltype(&X509_free)>;

Key newKey() {
  Key key(EVP_EC_gen("P-256"), EVP_PKEY_free);
  REQUIRE(key);
  return key;
}

void addExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  REQUIRE(ext != nullptr);
  REQUIRE(X509_add_ext(cert, ext, -1) == 1);
  X509_EXTENSION_free(ext);
}

// A CA certificate (issuer == nullptr) or a server certificate for subjectAltName `san`.
Cert makeCert(EVP_PKEY* key, const char* commonName, X509* issuer, EVP_PKEY* issuerKey,
              const char* san, long serial) {
  Cert cert(X509_new(), X509_free);
  X509* c = cert.get();
  REQUIRE(X509_set_version(c, 2) == 1);
  ASN1_INTEGER_set(X509_get_serialNumber(c), serial);
  X509_gmtime_adj(X509_getm_notBefore(c), -3600);
  X509_gmtime_adj(X509_getm_notAfter(c), 24 * 3600);
  REQUIRE(X509_set_pubkey(c, key) == 1);
  X509_NAME* name = X509_get_subject_name(c);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(commonName), -1, -1, 0);
  REQUIRE(X509_set_issuer_name(c, issuer ? X509_get_subject_name(issuer) : name) == 1);
  X509* signer = issuer ? issuer : c;
  if (issuer == nullptr) {
    addExtension(c, signer, NID_basic_constraints, "critical,CA:TRUE");
    addExtension(c, signer, NID_key_usage, "critical,keyCertSign,cRLSign");
    addExtension(c, signer, NID_subject_key_identifier, "hash");
  } else {
    addExtension(c, signer, NID_basic_constraints, "critical,CA:FALSE");
    addExtension(c, signer, NID_key_usage, "critical,digitalSignature");
    addExtension(c, signer, NID_ext_key_usage, "serverAuth");
    addExtension(c, signer, NID_subject_alt_name, san);
  }
  REQUIRE(X509_sign(c, issuerKey, EVP_sha256()) > 0);
  return cert;
}

// The CA (written to a PEM file for the client) and two server identities it signed.
struct Pki {
  Pki()
      : caKey(newKey()),
        ca(makeCert(caKey.get(), "cairn test CA", nullptr, caKey.get(), nullptr, 1)) {
    caFile = (dir / "ca.pem").string();
    BIO* out = BIO_new_file(caFile.c_str(), "w");
    REQUIRE(out != nullptr);
    REQUIRE(PEM_write_bio_X509(out, ca.get()) == 1);
    BIO_free(out);
  }

  // A TLS server context presenting a fresh certificate for `san`.
  std::shared_ptr<asio::ssl::context> serverContext(const char* san, long serial) {
    Key key = newKey();
    Cert cert = makeCert(key.get(), "cairn test server", ca.get(), caKey.get(), san, serial);
    auto context = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
    REQUIRE(SSL_CTX_use_certificate(context->native_handle(), cert.get()) == 1);
    REQUIRE(SSL_CTX_use_PrivateKey(context->native_handle(), key.get()) == 1);
    return context;
  }

  TempDir dir;
  Key caKey;
  Cert ca;
  std::string caFile;
};

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
