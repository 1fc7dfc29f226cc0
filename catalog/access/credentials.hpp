// Storage access the catalog hands out (docs/catalog.md, "Storage credentials"): one class of
// credentials per kind of operation, each an STS session policy built for one request, limited
// to the lake's root and the table's location, never able to touch the catalog's own objects
// (`ns-*`) or write a table's metadata files. Pure: the policies and the answers' shapes; the
// STS call is catalog/access/sts.hpp's.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/error.hpp"

namespace cairn::catalog {

enum class CredentialClass : std::uint8_t {
  tableRead,   // GetObject on the table's location; ListBucket limited to it
  tableWrite,  // tableRead, and PutObject there (not the metadata files: the catalog's)
  resultRead,  // GetObject and ListBucket on the lake's results prefix
  archive,     // tableRead, and PutObject on the lake's archive prefix
};
std::string_view credentialClassName(CredentialClass c);  // "table-read", ...
std::optional<CredentialClass> parseCredentialClass(std::string_view text);
inline constexpr CredentialClass kCredentialClasses[] = {
    CredentialClass::tableRead, CredentialClass::tableWrite, CredentialClass::resultRead,
    CredentialClass::archive};

// Where a policy reaches, as object keys in one bucket (no leading or trailing '/').
struct PolicyScope {
  std::string bucket;
  std::string lakeRoot;       // the lake's root prefix ("" for a lake at the bucket's root)
  std::string tableLocation;  // the table's prefix (table classes)
  std::string resultsPrefix;  // the lake's results prefix, under lakeRoot (result-read)
  std::string archivePrefix;  // the lake's archive prefix, under lakeRoot (archive)
};

// The session policy's largest size: RGW takes at most 2,048 characters (AWS limits the packed
// size, which a policy this size is well within).
inline constexpr std::size_t kMaxSessionPolicyChars = 2048;

// The policy of `c` for `scope`: compact JSON, every prefix ending in '/', an explicit Deny of
// every action on the lake's `ns-*` objects (and, for a class that writes, of PutObject on the
// table's `*.metadata.json`). A key part holding anything but [A-Za-z0-9._-/] (so an IAM
// wildcard `*`, `?`, or `$`) is refused rather than escaped: RGW has no escapes for them, and
// no key a lake holds needs one. Errc::usage for a scope that cannot be put in a policy, or a
// policy over `maxChars`.
Res<std::string> sessionPolicy(CredentialClass c, const PolicyScope& scope,
                               std::size_t maxChars = kMaxSessionPolicyChars);

// Durations per class (seconds). STS bounds them too (AWS and RGW: 900..3600 by default, the
// role's maximum); a duration it refuses makes vending fail with its reason.
inline constexpr std::uint64_t kMinCredentialSeconds = 1;
inline constexpr std::uint64_t kMaxCredentialSeconds = 43'200;
struct CredentialDurations {
  std::uint32_t tableRead = 3600;
  std::uint32_t tableWrite = 3600;
  std::uint32_t resultRead = 3600;
  std::uint32_t archive = 900;
  std::uint32_t of(CredentialClass c) const;
  void set(CredentialClass c, std::uint32_t seconds);
  friend bool operator==(const CredentialDurations&, const CredentialDurations&) = default;
};

// A results or archive prefix: key characters only, no leading or trailing '/', not "ns-*".
Res<void> checkLakePrefix(std::string_view prefix);

// Temporary credentials (AssumeRole's answer).
struct SessionCredentials {
  std::string accessKeyId;
  std::string secretAccessKey;  // never logged
  std::string sessionToken;     // never logged
  std::int64_t expiresAtMs = 0;
};

// Parses an ISO 8601 UTC time as STS writes it ("2026-12-01T18:37:00Z", or with a fraction of
// any length, "2026-12-01T18:37:00.691924117Z") into Unix milliseconds.
std::optional<std::int64_t> parseIsoTimeMs(std::string_view text);

}  // namespace cairn::catalog
