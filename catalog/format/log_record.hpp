// The records of the catalog's logs (docs/formats.md §9): one per journal frame of a lake log
// or a table log. Canonical JSON, strictly read: an accepted record re-encodes to exactly its
// bytes (keys sorted by byte, no whitespace, integers only, Boost.JSON's escapes), so one value
// has one encoding and the independent vectors (tests/vectors/make_vectors.py) can be compared
// byte for byte. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/bytes.hpp"
#include "base/sha256.hpp"
#include "catalog/format/names.hpp"
#include "engine/error.hpp"
#include "engine/format/uuid.hpp"

namespace cairn::catalog {

// A record's bytes; a property key or value; an Idempotency-Key.
inline constexpr std::size_t kMaxRecordBytes = std::size_t{1} << 20;
inline constexpr std::size_t kMaxPropertyKeyBytes = 1024;
inline constexpr std::size_t kMaxPropertyValueBytes = 64 * 1024;
inline constexpr std::size_t kMaxProperties = 10'000;
inline constexpr std::size_t kMaxIdempotencyKeyBytes = 128;
// A location (a table's, or a metadata file's): a URI under the lake's root.
inline constexpr std::size_t kMaxLocationBytes = 2048;

using Properties = std::map<std::string, std::string>;

// ---- the lake log: the lake's directory, as changes ----------------------------------------

struct LakeCreated {
  std::string lake;
  friend bool operator==(const LakeCreated&, const LakeCreated&) = default;
};
struct NamespaceCreated {
  Namespace ns;
  Properties properties;
  friend bool operator==(const NamespaceCreated&, const NamespaceCreated&) = default;
};
struct NamespaceUpdated {
  Namespace ns;
  Properties updates;
  std::vector<std::string> removals;  // keys removed: sorted, unique, none also in updates
  std::vector<std::string> missing;   // keys the request removed that were absent (sorted)
  friend bool operator==(const NamespaceUpdated&, const NamespaceUpdated&) = default;
};
struct NamespaceDropped {
  Namespace ns;
  friend bool operator==(const NamespaceDropped&, const NamespaceDropped&) = default;
};
// A table created or registered: its name, its UUID (its table log's namespace) and location.
struct TableRegistered {
  TableIdent table;
  Uuid uuid;
  std::string location;
  friend bool operator==(const TableRegistered&, const TableRegistered&) = default;
};
// With purgeLocation (a drop with purgeRequested=true): garbage collection deletes the files
// under that location that no retained graph reaches (docs/catalog.md, "Garbage collection").
struct TableDropped {
  TableIdent table;
  Uuid uuid;
  std::optional<std::string> purgeLocation;
  friend bool operator==(const TableDropped&, const TableDropped&) = default;
};
struct TableRenamed {
  TableIdent from;
  TableIdent to;
  Uuid uuid;
  friend bool operator==(const TableRenamed&, const TableRenamed&) = default;
};

// A lease (docs/catalog.md, "Leases"): until it expires or is released, retention and garbage
// collection keep the snapshot, and the files under the prefix, it names.
struct LeaseTaken {
  Uuid lease;
  Uuid table;
  std::int64_t expiresMs = 0;
  std::optional<std::int64_t> snapshotId;
  std::optional<std::string> prefix;  // a location under the table's
  friend bool operator==(const LeaseTaken&, const LeaseTaken&) = default;
};
struct LeaseReleased {
  Uuid lease;
  friend bool operator==(const LeaseReleased&, const LeaseReleased&) = default;
};
// A snapshot retention never expires (and garbage collection keeps), until unprotected.
struct SnapshotProtected {
  Uuid table;
  std::int64_t snapshotId = 0;
  friend bool operator==(const SnapshotProtected&, const SnapshotProtected&) = default;
};
struct SnapshotUnprotected {
  Uuid table;
  std::int64_t snapshotId = 0;
  friend bool operator==(const SnapshotUnprotected&, const SnapshotUnprotected&) = default;
};

// A catalog branch (docs/catalog.md, "Branches"): a table on it follows its parent's state
// until the table's first write there (BranchForked). The id tells a branch from an earlier one
// of the same name.
struct BranchCreated {
  std::string name;
  Uuid id;
  std::optional<std::string> parent;      // none: main
  std::optional<std::int64_t> expiresMs;  // from then on writes are refused
  // Retention of the branch's own table logs (else each table's properties decide).
  std::optional<std::int64_t> maxSnapshotAgeMs;
  std::optional<std::int64_t> minSnapshotsToKeep;
  friend bool operator==(const BranchCreated&, const BranchCreated&) = default;
};
struct BranchDropped {
  std::string name;
  Uuid id;
  friend bool operator==(const BranchDropped&, const BranchDropped&) = default;
};
// A table's first accepted write on a branch: the branch-local table log it published, and
// its provenance: the state it started from (the log, its head's revision, the metadata file),
// which the branch followed until then.
struct BranchForked {
  std::string branch;
  Uuid table;                             // the table's UUID (its main log's namespace)
  Uuid log;                               // the branch-local table log's namespace
  std::optional<std::string> fromBranch;  // whose state it was (none: main)
  Uuid fromLog;
  std::uint64_t fromRevision = 0;
  std::string fromMetadataLocation;
  friend bool operator==(const BranchForked&, const BranchForked&) = default;
};

using LakeChange =
    std::variant<LakeCreated, NamespaceCreated, NamespaceUpdated, NamespaceDropped, TableRegistered,
                 TableDropped, TableRenamed, LeaseTaken, LeaseReleased, SnapshotProtected,
                 SnapshotUnprotected, BranchCreated, BranchDropped, BranchForked>;

// With an Idempotency-Key, the request's digest (requestDigest in operations.hpp): a later
// request with the key is the same request only when its digest is the same. A record written
// before digests were has none (`request-sha256` absent); only a record with a key has one.
struct LakeRecord {
  LakeChange change;
  std::int64_t timeMs = 0;                    // when the catalog accepted it (Unix ms, >= 0)
  std::optional<std::string> idempotencyKey;  // the request's, when it sent one
  std::optional<Digest> requestSha256;        // with the key: the request's digest
  friend bool operator==(const LakeRecord&, const LakeRecord&) = default;
};

// ---- a table log: the table's metadata commits -----------------------------------------------

// One accepted commit: the Iceberg metadata file it selects (immutable), the one it replaced.
struct TableCommit {
  std::string metadataLocation;
  Digest metadataSha256{};
  std::uint64_t metadataLength = 0;
  std::optional<std::string> previousLocation;  // none for the table's first record
  std::int64_t timeMs = 0;
  std::optional<std::string> idempotencyKey;
  std::optional<Digest> requestSha256;  // with the key: the request's digest (as LakeRecord's)
  friend bool operator==(const TableCommit&, const TableCommit&) = default;
};

// The journal header's database id of each log (so a log's lineage names what it is).
std::u16string lakeLogDatabaseId(std::string_view lake);
std::u16string tableLogDatabaseId(const Uuid& table);
// The lake log's namespace UUID, derived from the lake id: the first 16 bytes of
// SHA-256("cairn lake log\0" + lake id), with the version set to 8 and the RFC 9562 variant.
Uuid lakeLogNamespace(std::string_view lake);

// Encoders refuse (Errc::usage) a value that breaks a rule; decoders refuse (Errc::format)
// anything but the canonical encoding of a valid value.
Res<Bytes> encodeLakeRecord(const LakeRecord& r);
Res<LakeRecord> decodeLakeRecord(ByteView bytes);
Res<Bytes> encodeTableCommit(const TableCommit& r);
Res<TableCommit> decodeTableCommit(ByteView bytes);

// Checks shared with request parsing.
Res<void> checkProperties(const Properties& p, std::string_view what);
Res<void> checkIdempotencyKey(std::string_view key);
Res<void> checkLocation(std::string_view location, std::string_view what);

}  // namespace cairn::catalog
