// Garbage collection of a lake's table files (docs/catalog.md, "Garbage collection"): a file
// is deleted only when a verified walk of every retained graph proves no one can reach it.
//
// The walk: the lake directory (its log, verified) names the live tables; each table log
// (verified) names its versions; a table retains its current version and every version its
// current metadata's metadata-log still names (Iceberg's write.metadata.previous-versions-max);
// each retained metadata file (its SHA-256 checked against the log) names snapshots, whose
// manifest lists name manifests, which name data and delete files (Avro, catalog/
// iceberg_files.hpp); statistics files are named by the metadata. Every live file reached must
// exist with the size its parent records. Any failure of the walk (a missing or damaged file,
// a store error, a path that names the lake's store but no key in it, a held snapshot no
// retained version has) deletes nothing.
//
// Candidates: the objects under a live table's location, or the location of a table dropped
// with purgeRequested=true, that no retained graph reaches (the reachable set is the whole
// lake's, so a file another table references is kept), older than the grace period, under no
// live lease's prefix; never a metadata file (*.metadata.json, the table logs' own: vacuum's
// rules reclaim those) nor a catalog object (ns-*).
//
// With `apply`: each table is read again just before the deletes and a table that moved has
// its new versions walked (what they reach stops being a candidate); then the candidates are
// deleted and the whole walk runs again, which must find every reachable file.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "catalog/lake/lake.hpp"
#include "engine/error.hpp"
#include "engine/runtime/budget.hpp"

namespace cairn::catalog {

inline constexpr std::int64_t kGcDefaultGraceSeconds = 3 * 24 * 3600;  // Java's orphan default
inline constexpr std::size_t kGcMaxReachableFiles = 10'000'000;
inline constexpr std::size_t kGcMaxListedObjects = 10'000'000;

struct GcOptions {
  std::int64_t graceSeconds = kGcDefaultGraceSeconds;
  bool apply = false;
  std::int64_t nowUnixSeconds = 0;  // the clock the grace period is measured by
  // Called after each table's walk and each batch of deletes (for progress on a terminal).
  std::function<void(const std::string&)> progress;
};

struct GcCount {
  std::uint64_t files = 0;
  std::uint64_t bytes = 0;
  void add(std::uint64_t size) {
    ++files;
    bytes += size;
  }
};

struct GcReport {
  std::uint64_t tables = 0;        // live tables walked
  std::uint64_t branchLogs = 0;    // their branch-local logs walked (forks on catalog branches)
  std::uint64_t purgedTables = 0;  // dropped with purge: their locations listed, nothing walked
  std::uint64_t versions = 0;      // retained metadata versions walked
  // Reachable files by class: "manifest-list", "manifest", "data", "delete", "statistics",
  // "deleted-entry" (a manifest's deleted entry: kept, need not exist), and "outside" (named by
  // a retained graph, not in the lake's store: never touched).
  std::map<std::string, GcCount> reachable;
  GcCount listed;  // objects under the live tables' locations
  // Not deleted although no graph reaches them: "young" (within the grace period), "leased"
  // (under a live lease's prefix), "metadata" (*.metadata.json: vacuum's), "moved" (reached
  // by a version committed during the run).
  std::map<std::string, GcCount> kept;
  // Unreachable, old enough, unleased, by class: "metadata-avro" (*.avro under metadata/:
  // manifests and manifest lists), "metadata-other", "data" (anything else).
  std::map<std::string, GcCount> candidates;
  std::vector<std::string> candidateKeys;  // in key order
  GcCount deleted;                         // with apply
  bool rewalked = false;                   // with apply: the walk after the deletes held
};

// Errc of the first failure: the walk's (nothing was deleted), or with `apply`, a delete's
// or the second walk's (the report says what was deleted before it).
boost::asio::awaitable<Result<GcReport, std::pair<Error, GcReport>>> collectGarbage(
    Lake& lake, const GcOptions& options, OperationBudget& budget);

}  // namespace cairn::catalog
