// A throwaway PKI for the TLS tests, made with the OpenSSL API: a CA, server certificates it
// signs (in memory for an Asio context, or as PEM files for a server that reads files).
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "tests/net/net_test_support.hpp"

namespace cairn::net::test {

using Key = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using Cert = std::unique_ptr<X509, decltype(&X509_free)>;

inline Key newKey() {
  Key key(EVP_EC_gen("P-256"), EVP_PKEY_free);
  REQUIRE(key);
  return key;
}

inline void addExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  REQUIRE(ext != nullptr);
  REQUIRE(X509_add_ext(cert, ext, -1) == 1);
  X509_EXTENSION_free(ext);
}

// A CA certificate (issuer == nullptr) or a server certificate for subjectAltName `san`.
inline Cert makeCert(EVP_PKEY* key, const char* commonName, X509* issuer, EVP_PKEY* issuerKey,
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

  // A certificate for `san` and its key, as PEM files in this PKI's directory.
  struct Files {
    std::string certificate;
    std::string key;
  };
  Files writeServerFiles(const char* san, long serial) {
    Key key = newKey();
    Cert cert = makeCert(key.get(), "cairn test server", ca.get(), caKey.get(), san, serial);
    Files files{(dir / ("server-" + std::to_string(serial) + ".pem")).string(),
                (dir / ("server-" + std::to_string(serial) + ".key")).string()};
    BIO* out = BIO_new_file(files.certificate.c_str(), "w");
    REQUIRE(out != nullptr);
    REQUIRE(PEM_write_bio_X509(out, cert.get()) == 1);
    BIO_free(out);
    out = BIO_new_file(files.key.c_str(), "w");
    REQUIRE(out != nullptr);
    REQUIRE(PEM_write_bio_PrivateKey(out, key.get(), nullptr, nullptr, 0, nullptr, nullptr) == 1);
    BIO_free(out);
    return files;
  }

  TempDir dir;
  Key caKey;
  Cert ca;
  std::string caFile;
};

}  // namespace cairn::net::test
