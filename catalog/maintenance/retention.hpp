// Retention (docs/catalog.md, "Retention"): which snapshots and refs of a table expire, by
// Iceberg's rules (apache/iceberg RemoveSnapshots: the table's history.expire.* properties, each
// ref's max-ref-age-ms, max-snapshot-age-ms and min-snapshots-to-keep), never one that the
// catalog holds (a lease or a protection). Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "catalog/iceberg/table_metadata.hpp"
#include "catalog/iceberg/table_update.hpp"
#include "engine/error.hpp"

namespace cairn::catalog {

inline constexpr std::string_view kGcEnabledProperty = "gc.enabled";
inline constexpr std::string_view kMaxSnapshotAgeProperty = "history.expire.max-snapshot-age-ms";
inline constexpr std::string_view kMinSnapshotsToKeepProperty =
    "history.expire.min-snapshots-to-keep";
inline constexpr std::string_view kMaxRefAgeProperty = "history.expire.max-ref-age-ms";
inline constexpr std::int64_t kMaxSnapshotAgeDefault = 5LL * 24 * 3600 * 1000;  // Java's 5 days
inline constexpr std::int64_t kMinSnapshotsToKeepDefault = 1;

struct RetentionPlan {
  std::vector<std::string> refsToRemove;        // refs older than their max-ref-age-ms
  std::vector<std::int64_t> snapshotsToRemove;  // in the table's order
  std::vector<std::int64_t> keptForTheCatalog;  // would expire, but a lease or protection holds it
  bool empty() const { return refsToRemove.empty() && snapshotsToRemove.empty(); }
};

// A catalog branch's retention (docs/catalog.md, "Branches"): where set, it replaces the
// table's history.expire.max-snapshot-age-ms and min-snapshots-to-keep on that branch.
struct RetentionDefaults {
  std::optional<std::int64_t> maxSnapshotAgeMs;
  std::optional<std::int64_t> minSnapshotsToKeep;
};

// Errc::usage when gc.enabled is false (Java refuses to expire then) or a property is not a
// number; otherwise the plan for `m` at `nowMs`, keeping every snapshot in `held`.
Res<RetentionPlan> planRetention(const TableMetadata& m, std::int64_t nowMs,
                                 const std::set<std::int64_t>& held,
                                 const RetentionDefaults& branch = {});

// The commit that carries a plan out: requirements pinning the state the plan was made on (the
// table's UUID and every branch's snapshot, so a concurrent commit makes it fail and the plan is
// made again), and the updates remove-snapshot-ref and remove-snapshots.
CommitTableRequest retentionCommit(const TableMetadata& m, const RetentionPlan& plan);

}  // namespace cairn::catalog
