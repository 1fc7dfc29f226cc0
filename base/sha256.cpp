#include "base/sha256.hpp"

#include <openssl/evp.h>

#include <stdexcept>

namespace cairn {

struct Sha256::State {
  EVP_MD_CTX* ctx = nullptr;
  ~State() { EVP_MD_CTX_free(ctx); }
};

namespace {
void checkSsl(int rc) {
  // EVP digest calls fail only on allocation failure or a broken OpenSSL install.
  if (rc != 1) throw std::runtime_error("OpenSSL SHA-256 failed");
}
}  // namespace

Sha256::Sha256() : state_(std::make_unique<State>()) {
  state_->ctx = EVP_MD_CTX_new();
  if (state_->ctx == nullptr) throw std::bad_alloc();
  checkSsl(EVP_DigestInit_ex(state_->ctx, EVP_sha256(), nullptr));
}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(ByteView bytes) {
  if (!bytes.empty()) checkSsl(EVP_DigestUpdate(state_->ctx, bytes.data(), bytes.size()));
}

Digest Sha256::finish() {
  Digest d{};
  unsigned int n = 0;
  checkSsl(EVP_DigestFinal_ex(state_->ctx, d.data(), &n));
  checkSsl(EVP_DigestInit_ex(state_->ctx, EVP_sha256(), nullptr));
  return d;
}

Digest sha256(ByteView bytes) {
  Digest d{};
  unsigned int n = 0;
  checkSsl(EVP_Digest(bytes.data(), bytes.size(), d.data(), &n, EVP_sha256(), nullptr));
  return d;
}

}  // namespace cairn
