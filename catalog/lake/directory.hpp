// What the catalog's logs say, folded: a lake's directory (its namespaces and tables) from the
// lake log, and a table's history from its table log. The same checks judge a request (a
// namespace that exists already is a conflict) and a log being folded (a log whose record
// contradicts the state before it is damaged). Pure.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "catalog/format/log_record.hpp"
#include "catalog/format/names.hpp"
#include "engine/error.hpp"

namespace cairn::catalog {

// Which of a log's Idempotency-Keys are kept, each with its first record: those of records
// accepted within kIdempotencyLifetimeMs (what GET /v1/config advertises as
// idempotency-key-lifetime) of the earlier of the log's newest record and the reader's clock
// (`readerClockMs`), at most kIdempotencyMaxKeys (a table committed to 55 times a second for
// half an hour). A repeated key among them is answered with the first result. The reader's
// clock keeps a record from a process whose clock runs ahead from ending the others' keys
// early (a replay would commit twice); a reader whose clock runs ahead is held back by the
// records' times. Either way keys are kept longer, never shorter.
inline constexpr std::int64_t kIdempotencyLifetimeMs = 30 * 60 * 1000;
inline constexpr std::string_view kIdempotencyLifetime = "PT30M";
inline constexpr std::size_t kIdempotencyMaxKeys = 100'000;

struct TableEntry {
  Uuid uuid;
  std::string location;
  friend bool operator==(const TableEntry&, const TableEntry&) = default;
};

// A lease as the lake log holds it (LeaseTaken, until released or expired).
struct Lease {
  Uuid table;
  std::int64_t takenMs = 0;
  std::int64_t expiresMs = 0;
  std::optional<std::int64_t> snapshotId;
  std::optional<std::string> prefix;
  friend bool operator==(const Lease&, const Lease&) = default;
};
// Live leases at once, and protected snapshots, in a lake (beyond: 409).
inline constexpr std::size_t kMaxLeases = 10'000;
inline constexpr std::size_t kMaxProtectedSnapshots = 100'000;

// A catalog branch as the lake log holds it (BranchCreated, until dropped).
struct Branch {
  Uuid id;
  std::optional<std::string> parent;  // none: main
  std::size_t depth = 1;              // main's branches have 1
  std::int64_t createdMs = 0;
  std::optional<std::int64_t> expiresMs;
  std::optional<std::int64_t> maxSnapshotAgeMs;
  std::optional<std::int64_t> minSnapshotsToKeep;
  friend bool operator==(const Branch&, const Branch&) = default;
};
// A table's branch-local log on a branch (BranchForked), with its provenance.
struct Fork {
  Uuid log;
  std::optional<std::string> fromBranch;
  Uuid fromLog;
  std::uint64_t fromRevision = 0;
  std::string fromMetadataLocation;
  std::int64_t forkedMs = 0;
  friend bool operator==(const Fork&, const Fork&) = default;
};
// Branches, and forked tables, in a lake at once (beyond: 409).
inline constexpr std::size_t kMaxBranches = 1'000;
inline constexpr std::size_t kMaxForks = 100'000;

// Which log holds a table's state on a branch: the fork of the nearest branch up the parents
// that has one, else the table's own log.
struct StateLog {
  Uuid log;
  std::optional<std::string> branch;  // whose log (none: main)
  std::optional<std::string> base;    // where it starts: the fork's provenance
};

class LakeDirectory {
 public:
  std::string lake;  // from the log's first record
  std::map<Namespace, Properties> namespaces;
  std::map<TableIdent, TableEntry> tables;
  // Tables dropped with purge, by UUID (text): their locations, whose unreachable files garbage
  // collection deletes.
  std::map<std::string, std::string> purged;
  // Leases by id (text); those expired by the time of a later record are dropped by it.
  std::map<std::string, Lease> leases;
  std::set<std::pair<std::string, std::int64_t>> protectedSnapshots;  // (table UUID, snapshot)
  std::map<std::string, Branch> branches;                             // by name
  // Forked tables by (branch, table UUID text). A table dropped, or a branch dropped, takes its
  // forks with it.
  std::map<std::pair<std::string, std::string>, Fork> forks;
  std::uint64_t records = 0;  // records folded

  // Whether `change` can be made to this directory: Errc::conflict (a namespace or table
  // that exists, a namespace that is not empty, a table UUID that is registered), Errc::missing
  // (a namespace or table that is not there: `key()` says which kind), Errc::usage (anything
  // else, e.g. lake-created after the first record).
  Res<void> check(const LakeChange& change) const;
  // check() then the change; a failure leaves the directory unchanged.
  Res<void> apply(const LakeRecord& record);

  // The namespaces one level below `parent` (the top level without one), each once, in order;
  // a level that exists only as the parent of a deeper namespace counts.
  std::vector<Namespace> children(const std::optional<Namespace>& parent) const;
  // Whether `ns` exists or is the parent of a namespace that does.
  bool knows(const Namespace& ns) const;
  std::vector<TableIdent> tablesIn(const Namespace& ns) const;
  // The table registered under `uuid`, if any.
  std::optional<TableIdent> tableOf(const Uuid& uuid) const;
  // The leases of a table live at `nowMs`, and its protected snapshots.
  std::vector<std::pair<std::string, Lease>> leasesOf(const Uuid& table, std::int64_t nowMs) const;
  std::vector<std::int64_t> protectedOf(const Uuid& table) const;
  // The fork of `table` on `branch`, if the table was written there.
  const Fork* forkOf(const std::string& branch, const Uuid& table) const;
  // Where `table`'s state on `branch` (none: main) is held (bounded by kMaxBranchDepth).
  StateLog stateOf(const std::optional<std::string>& branch, const Uuid& table) const;
  // The branches whose parent is `branch`.
  std::vector<std::string> childrenOf(const std::string& branch) const;
  // The record a recent request with this Idempotency-Key made.
  const LakeRecord* recordFor(const std::string& key) const;
  std::size_t keysKept() const { return keys_.size(); }
  // The reader's clock (Unix ms) when it folds records: bounds which keys expire (above).
  std::int64_t readerClockMs = std::numeric_limits<std::int64_t>::max();

 private:
  Res<void> checkBranch(const LakeChange& change) const;
  template <class Pred>
  void dropForks(Pred pred) {
    for (auto it = forks.begin(); it != forks.end();) {
      if (pred(*it)) {
        it = forks.erase(it);
      } else {
        ++it;
      }
    }
  }
  std::map<std::string, LakeRecord> keys_;
  std::deque<std::pair<std::int64_t, std::string>> keyOrder_;  // (time, key), oldest first
  // Every log UUID the log ever named: tables registered, forks' logs. A fork's log is never
  // one of them again, and no table takes a fork's (a log has one lineage).
  std::set<std::string> tableLogsEver_;
  std::set<std::string> forkLogsEver_;
};

// The errors check() gives for something missing carry which kind in Error::key.
inline constexpr std::string_view kMissingNamespace = "namespace";
inline constexpr std::string_view kMissingTable = "table";
// A conflict because a table's location would overlap another's (Error::key).
inline constexpr std::string_view kOverlappingLocation = "location";
inline constexpr std::string_view kMissingLease = "lease";
inline constexpr std::string_view kMissingSnapshot = "snapshot";
inline constexpr std::string_view kMissingBranch = "branch";
// A conflict with one of the lake's bounds (kMaxBranches, kMaxForks): Error::key.
inline constexpr std::string_view kLakeBound = "bound";
// A table log that does not start where the lake log says (expectBase: Error::key).
inline constexpr std::string_view kOtherBase = "base";

// Whether two table locations overlap: the same, or one inside the other (path components;
// s3a:// and s3n:// read as s3://). Tables never overlap: a table's files, and the credentials
// vended for them, must not reach another's.
bool locationsOverlap(std::string_view a, std::string_view b);

class TableHistory {
 public:
  // A branch-local log's first commit replaces the metadata the fork started from (its
  // provenance, BranchForked): that location. A main log's first commit replaces nothing.
  // The fold takes what the first record says; whoever reads a log checks it against the lake
  // log (expectBase).
  std::optional<std::string> base;
  std::optional<TableCommit> first;    // the table's creation
  std::optional<TableCommit> current;  // the last commit: the table's metadata now
  std::uint64_t commits = 0;
  // Every commit, oldest first (version N is versions[N - 1]): what time travel resolves.
  struct Version {
    std::int64_t timeMs = 0;
    std::string metadataLocation;
    Digest metadataSha256{};
    std::uint64_t metadataLength = 0;
  };
  std::vector<Version> versions;
  // The commit of version N (1-based) as a TableCommit (what Lake::metadata reads).
  std::optional<TableCommit> version(std::uint64_t n) const;

  // A commit must replace the current file (the first: `base`, which it sets); else
  // Errc::corrupt.
  Res<void> apply(const TableCommit& commit);
  const TableCommit* commitFor(const std::string& key) const;
  std::size_t keysKept() const { return keys_.size(); }
  // The reader's clock (Unix ms) when it folds records: bounds which keys expire (above).
  std::int64_t readerClockMs = std::numeric_limits<std::int64_t>::max();

 private:
  std::map<std::string, TableCommit> keys_;
  std::deque<std::pair<std::int64_t, std::string>> keyOrder_;  // (time, key), oldest first
};

// Errc::corrupt unless `h` starts where the lake log says its log starts (`base`: a fork's
// from-metadata-location, none for a main log).
Res<void> expectBase(const TableHistory& h, const std::optional<std::string>& base,
                     std::string_view log);

}  // namespace cairn::catalog
