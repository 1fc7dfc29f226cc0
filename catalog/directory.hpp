// What the catalog's logs say, folded: a lake's directory (its namespaces and tables) from the
// lake log, and a table's history from its table log. The same checks judge a request (a
// namespace that exists already is a conflict) and a log being folded (a log whose record
// contradicts the state before it is damaged). Pure.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "catalog/log_record.hpp"
#include "catalog/names.hpp"
#include "engine/format/error.hpp"

namespace cairn::catalog {

// Which of a log's Idempotency-Keys are kept, each with its first record: those of records
// accepted within kIdempotencyLifetimeMs of the log's newest (what GET /v1/config advertises
// as idempotency-key-lifetime), at most kIdempotencyMaxKeys (a table committed to 55 times a
// second for half an hour). A repeated key among them is answered with the first result.
inline constexpr std::int64_t kIdempotencyLifetimeMs = 30 * 60 * 1000;
inline constexpr std::string_view kIdempotencyLifetime = "PT30M";
inline constexpr std::size_t kIdempotencyMaxKeys = 100'000;

struct TableEntry {
  Uuid uuid;
  std::string location;
  friend bool operator==(const TableEntry&, const TableEntry&) = default;
};

class LakeDirectory {
 public:
  std::string lake;  // from the log's first record
  std::map<Namespace, Properties> namespaces;
  std::map<TableIdent, TableEntry> tables;
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
  // The record a recent request with this Idempotency-Key made.
  const LakeRecord* recordFor(const std::string& key) const;
  std::size_t keysKept() const { return keys_.size(); }

 private:
  std::map<std::string, LakeRecord> keys_;
  std::deque<std::pair<std::int64_t, std::string>> keyOrder_;  // (time, key), oldest first
};

// The errors check() gives for something missing carry which kind in Error::key.
inline constexpr std::string_view kMissingNamespace = "namespace";
inline constexpr std::string_view kMissingTable = "table";
// A conflict because a table's location would overlap another's (Error::key).
inline constexpr std::string_view kOverlappingLocation = "location";

// Whether two table locations overlap: the same, or one inside the other (path components;
// s3a:// and s3n:// read as s3://). Tables never overlap: a table's files, and the credentials
// vended for them, must not reach another's.
bool locationsOverlap(std::string_view a, std::string_view b);

class TableHistory {
 public:
  std::optional<TableCommit> first;    // the table's creation
  std::optional<TableCommit> current;  // the last commit: the table's metadata now
  std::uint64_t commits = 0;

  // A commit must replace the current file (the first replaces none); else Errc::corrupt.
  Res<void> apply(const TableCommit& commit);
  const TableCommit* commitFor(const std::string& key) const;
  std::size_t keysKept() const { return keys_.size(); }

 private:
  std::map<std::string, TableCommit> keys_;
  std::deque<std::pair<std::int64_t, std::string>> keyOrder_;  // (time, key), oldest first
};

}  // namespace cairn::catalog
