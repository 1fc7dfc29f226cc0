// The catalog's configuration file (docs/catalog.md, "Configuration"): the publisher UUID
// every `cairn serve` process publishes under, the lakes (an id and the store URL whose root
// is the lake's root), the bearer tokens (only their SHA-256 is kept) and the server's
// options. JSON, read strictly (unknown keys refused, so a typo is an error, not a default).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/sha256.hpp"
#include "catalog/access/credentials.hpp"
#include "engine/error.hpp"
#include "engine/format/uuid.hpp"

namespace cairn::catalog {

// The configuration file's size, at most (checked before it is read).
inline constexpr std::size_t kMaxConfigBytes = std::size_t{16} << 20;

enum class Role : std::uint8_t { read, readWrite };
std::string_view roleName(Role r);  // "read", "read-write"
std::optional<Role> parseRole(std::string_view text);

struct TokenEntry {
  Digest sha256{};  // of the token's text
  std::string lake;
  Role role = Role::read;
  std::int64_t createdUnixSeconds = 0;
  std::optional<std::int64_t> expiresUnixSeconds;
};

// STS for a lake's vended credentials (docs/catalog.md, "Storage credentials").
struct StsSettings {
  std::string roleArn;
  std::string endpoint;  // empty: the store's S3 endpoint (RGW serves STS there)
  std::string region;    // empty: the store's region
  friend bool operator==(const StsSettings&, const StsSettings&) = default;
};

struct LakeEntry {
  std::string id;
  std::string store;               // a store URL (docs/stores.md); its root is the lake's root
  std::optional<StsSettings> sts;  // none: no credentials are vended
  CredentialDurations durations;
  std::string resultsPrefix = "results";  // under the lake's root
  std::string archivePrefix = "archive";  // under the lake's root
};

// Server options with their defaults (docs/catalog.md lists them).
struct ServerSettings {
  std::uint64_t maxBodyBytes = 16u << 20;       // request bodies; beyond: 413
  std::uint64_t maxConnections = 256;           // beyond: the oldest idle one closes, or 503
  std::uint64_t maxConnectionsPerAddress = 64;  // of them from one address; likewise
  std::uint64_t idleTimeoutSeconds = 60;        // a kept-alive connection awaiting a request
  std::uint64_t maxInFlight = 64;               // requests inside handlers; beyond: 503
  std::uint64_t cacheBytes = 256u << 20;        // verified table state and metadata kept
  std::uint64_t commitRebases = 8;  // a commit re-checked on a new head at most this often
  std::optional<std::string> tlsCertificate;  // PEM files: TLS when both are given
  std::optional<std::string> tlsPrivateKey;
};

struct CatalogConfig {
  Uuid publisher;
  std::vector<LakeEntry> lakes;
  std::vector<TokenEntry> tokens;
  ServerSettings server;

  const LakeEntry* lake(std::string_view id) const;
};

// Whether two lakes' store URLs name the same root or one inside the other (the same bucket at
// the same endpoint, or the same directory tree).
bool rootsOverlap(std::string_view storeA, std::string_view storeB);

// A new configuration: a fresh random publisher UUID, nothing else.
CatalogConfig newConfig();

Res<CatalogConfig> parseConfig(std::string_view text);  // Errc::usage naming the field
std::string serializeConfig(const CatalogConfig& config);

// Reads FILE (Errc::missing when it does not exist).
Res<CatalogConfig> loadConfig(const std::filesystem::path& file);

// Changes FILE under an exclusive lock on FILE.lock (another `cairn token create` waits):
// reads it (or starts from `fresh` when it is absent), lets `change` edit it, and writes it
// back by durable replace, mode 0600. Nothing is written when `change` fails.
Res<CatalogConfig> updateConfig(const std::filesystem::path& file,
                                const std::function<Res<void>(CatalogConfig&)>& change,
                                const std::function<CatalogConfig()>& fresh = newConfig);

// A new bearer token: "cairn_" and 43 characters of base64url (32 random bytes).
std::string newToken();
Digest tokenHash(std::string_view token);

// What a presented token is worth (the config's tokens compared in constant time).
struct TokenCheck {
  enum class Outcome : std::uint8_t { accepted, unknown, expired };
  Outcome outcome = Outcome::unknown;
  const TokenEntry* entry = nullptr;  // accepted
};
TokenCheck checkToken(const CatalogConfig& config, std::string_view token, std::int64_t nowSeconds);

}  // namespace cairn::catalog
