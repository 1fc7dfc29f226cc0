// The catalog's operations on one lake (docs/catalog.md, "Routes"), apart from HTTP: each reads
// the lake's logs, checks the request against what it read, and publishes the change with the
// head protocol, answering with what it can prove (docs/design.md §9.1):
//   - a requirement or a name that fails against a state read: 409 / 404 as Iceberg says;
//   - a lost compare-and-swap: read again, re-check, rebase (at most `maxRebases` times, then
//     503: nothing of this request is or can become part of the history);
//   - an outcome that stays unknown: 504 CommitStateUnknownException, never 409 nor 200;
//   - a repeated Idempotency-Key that a recent record of the log holds: the first result.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "catalog/iceberg/table_create.hpp"
#include "catalog/iceberg/table_update.hpp"
#include "catalog/lake/lake.hpp"
#include "engine/runtime/budget.hpp"

namespace cairn::catalog {

// An answer other than success: the HTTP status, the Iceberg error type, the stable reason
// (docs/catalog.md lists every one) and a message for a person.
struct CatalogError {
  int status = 500;
  std::string type;
  std::string reason;
  std::string message;
};
template <class T>
using Outcome = Result<T, CatalogError>;

inline Failure<CatalogError> refuse(int status, std::string type, std::string reason,
                                    std::string message) {
  return Failure<CatalogError>{
      CatalogError{status, std::move(type), std::move(reason), std::move(message)}};
}

// An engine error met while reading or writing the lake's logs, as an answer: the store
// failing or answering late (503 store-unavailable), a log or file that does not verify (503
// log-unverifiable: nothing is served from what cannot be proven), a budget (503).
CatalogError storeTrouble(const Error& e);

// One request's work on one lake.
struct Request {
  Lake& lake;
  OperationBudget budget;
  std::optional<std::string> idempotencyKey;
  std::int64_t nowMs = 0;
  std::uint64_t maxRebases = 8;
  Role role = Role::read;  // the token's
  // The catalog branch the request works on (the prefix LAKE~BRANCH); none: the lake itself.
  std::optional<std::string> branch;
  // Set by commitTable: the attempts that lost a race and were built again (the metrics'
  // "rebased" outcome).
  std::uint64_t rebases = 0;
  // With an Idempotency-Key: the request's digest (its method, path and body), kept
  // in the records it makes; a record of the key with another digest is another request's
  // (422 idempotency-key-reused), never replayed as this one's result.
  std::optional<Digest> requestDigest;
};

boost::asio::awaitable<Outcome<std::shared_ptr<const LakeView>>> readLake(Request& r);

boost::asio::awaitable<Outcome<NamespaceCreated>> createNamespace(Request& r, Namespace ns,
                                                                  Properties properties);
// `removals` and `updates` do not overlap (the caller answers 422 first).
boost::asio::awaitable<Outcome<NamespaceUpdated>> updateNamespace(Request& r, Namespace ns,
                                                                  std::vector<std::string> removals,
                                                                  Properties updates);
boost::asio::awaitable<Outcome<void>> dropNamespace(Request& r, Namespace ns);

struct LoadedTable {
  TableIdent ident;
  Uuid uuid;  // the table's (on a branch too)
  std::shared_ptr<const LoadedMetadata> metadata;
  bool staged = false;  // stage-create: nothing was written, there is no metadata location
};

boost::asio::awaitable<Outcome<LoadedTable>> loadTable(Request& r, const TableIdent& t);

// Time travel (a cairn extension of the load route, `?as-of=`): the metadata current at a
// point in the table's history, read from its table log.
struct AsOf {
  enum class Kind : std::uint8_t {
    version,   // version:N, the table log's Nth commit (1 is the creation)
    time,      // time:MS, the last commit accepted at or before MS (Unix milliseconds)
    snapshot,  // snapshot:ID, the last version whose current snapshot is ID
  };
  Kind kind = Kind::version;
  std::int64_t value = 0;
};
// "version:N", "time:MS" or "snapshot:ID"; 400 otherwise.
Outcome<AsOf> parseAsOf(std::string_view text);
// At most this many metadata files are read to find a snapshot's version.
inline constexpr std::size_t kMaxTimeTravelReads = 64;
boost::asio::awaitable<Outcome<LoadedTable>> loadTableAsOf(Request& r, const TableIdent& t,
                                                           const AsOf& at);
boost::asio::awaitable<Outcome<LoadedTable>> createTable(Request& r, const Namespace& ns,
                                                         const CreateTableRequest& create);
boost::asio::awaitable<Outcome<LoadedTable>> registerTable(Request& r, const TableIdent& t,
                                                           const std::string& metadataLocation);
boost::asio::awaitable<Outcome<LoadedTable>> commitTable(Request& r, const TableIdent& t,
                                                         const CommitTableRequest& commit);
// With `purge`, the drop record names the table's location for garbage collection.
boost::asio::awaitable<Outcome<void>> dropTable(Request& r, const TableIdent& t, bool purge);
boost::asio::awaitable<Outcome<void>> renameTable(Request& r, const TableIdent& from,
                                                  const TableIdent& to);

// Leases and protected snapshots (docs/catalog.md, "Leases"): lake log records.
inline constexpr std::int64_t kMaxLeaseSeconds = 30 * 86'400;
struct LeaseRequest {
  std::int64_t ttlSeconds = 0;  // 1..kMaxLeaseSeconds
  std::optional<std::int64_t> snapshotId;
  std::optional<std::string> prefix;  // a location under the table's
};
struct TakenLease {
  Uuid lease;
  Lease held;
};
boost::asio::awaitable<Outcome<TakenLease>> takeLease(Request& r, const TableIdent& t,
                                                      const LeaseRequest& what);
boost::asio::awaitable<Outcome<void>> releaseLease(Request& r, const TableIdent& t,
                                                   const Uuid& lease);
// protect: the snapshot must be in the table's current metadata.
boost::asio::awaitable<Outcome<void>> protectSnapshot(Request& r, const TableIdent& t,
                                                      std::int64_t snapshotId, bool protect);

// Catalog branches (docs/catalog.md, "Branches"): lake log records.
inline constexpr std::int64_t kMaxBranchTtlSeconds = 10LL * 365 * 86'400;
struct BranchRequest {
  std::string name;
  std::optional<std::string> parent;       // none: main
  std::optional<std::int64_t> ttlSeconds;  // 1..kMaxBranchTtlSeconds
  std::optional<std::int64_t> maxSnapshotAgeMs;
  std::optional<std::int64_t> minSnapshotsToKeep;
};
// The record that holds the branch (the first one, for a repeated Idempotency-Key).
boost::asio::awaitable<Outcome<BranchCreated>> createBranch(Request& r, const BranchRequest& what);
// Refused (409) while the branch has branches of its own.
boost::asio::awaitable<Outcome<void>> dropBranch(Request& r, const std::string& name);
// 404 NotFoundException (reason no-such-branch) unless `r.branch` is none or a branch of the
// lake `view` holds.
Outcome<void> needBranch(const Request& r, const LakeDirectory& dir);

// The file name of a table's metadata version `version`: Iceberg's NNNNN-UUID.metadata.json.
std::string metadataFileName(std::uint64_t version, const Uuid& unique);

}  // namespace cairn::catalog
