#include "catalog/maintenance/expire.hpp"

#include <map>
#include <set>

#include "catalog/access/config.hpp"
#include "catalog/format/names.hpp"
#include "catalog/lake/lake.hpp"
#include "catalog/maintenance/retention.hpp"
#include "catalog/ops/operations.hpp"

namespace cairn::catalog {

namespace asio = boost::asio;

namespace {

// A table on main (no branch), or on a catalog branch it was written on.
struct Target {
  TableIdent ident;
  std::optional<std::string> branch;
  Uuid uuid;
};

// The snapshots a lease or a protection holds in `table`, at `nowMs`.
std::set<std::int64_t> heldSnapshots(const LakeDirectory& dir, const Uuid& table,
                                     std::int64_t nowMs) {
  std::set<std::int64_t> held;
  for (const auto& [_, lease] : dir.leasesOf(table, nowMs)) {
    if (lease.snapshotId) held.insert(*lease.snapshotId);
  }
  for (auto id : dir.protectedOf(table)) held.insert(id);
  return held;
}

// The snapshots the table's state on main and on each catalog branch it was written on points
// its refs at: retention on main and on every branch keeps them (a branch that still follows
// its parent shows the parent's state, whose refs retention keeps anyway).
asio::awaitable<Outcome<std::set<std::int64_t>>> branchHeldSnapshots(Request& r,
                                                                     const LakeDirectory& dir,
                                                                     const TableIdent& ident,
                                                                     const Uuid& table) {
  std::set<std::int64_t> held;
  std::vector<std::optional<std::string>> states{std::nullopt};  // main, then each fork
  for (const auto& [at, _] : dir.forks) {
    if (at.second == table.text()) states.emplace_back(at.first);
  }
  if (states.size() == 1) co_return held;  // no branch: main's refs are kept by Iceberg's rules
  for (const auto& branch : states) {
    Request on{r.lake, OperationBudget{}, std::nullopt, r.nowMs, r.maxRebases, r.role};
    on.branch = branch;
    auto loaded = co_await loadTable(on, ident);
    if (!loaded) co_return failureOf(loaded);
    for (const auto& [_, ref] : loaded->metadata->metadata.refs) held.insert(ref.snapshotId);
  }
  co_return held;
}

// Each table on main, and on each branch it was written on (its branch-local log).
std::vector<Target> targetsOf(const LakeDirectory& dir, const std::string& only) {
  std::vector<Target> tables;
  for (const auto& [ident, entry] : dir.tables) {
    if (!only.empty() && displayName(ident) != only) continue;
    tables.push_back(Target{ident, std::nullopt, entry.uuid});
    for (const auto& [at, _] : dir.forks) {
      if (at.second == entry.uuid.text()) tables.push_back(Target{ident, at.first, entry.uuid});
    }
  }
  return tables;
}

// One walk of a table's expiry: its state and everything that must not expire.
class TableWalk {
 public:
  TableWalk(Lake& lake, const CatalogConfig& config, const Target& target,
            std::map<std::string, std::set<std::int64_t>>& byBranches, TableExpiry& out)
      : lake_(lake), config_(config), target_(target), byBranches_(byBranches), out_(out) {}

  // One plan and, with `apply`, its commit. True when the table is settled (done, skipped or
  // failed); false when the table changed since the plan was made (plan again).
  asio::awaitable<bool> attempt(bool apply, std::uint64_t& expired) {
    Request r{lake_,
              OperationBudget{},
              std::nullopt,
              unixSecondsNow() * 1000,
              config_.server.commitRebases,
              Role::readWrite};
    r.branch = target_.branch;
    auto loaded = co_await loadTable(r, target_.ident);
    if (!loaded) co_return fail(loaded.error().reason, loaded.error().message);
    auto dir = co_await lake_.directory(r.budget);
    if (!dir) co_return fail("store-unavailable", dir.error().message);
    const TableMetadata& m = loaded->metadata->metadata;
    auto held = co_await holds(r, (*dir)->dir, loaded->uuid);
    if (!held) co_return true;
    RetentionDefaults defaults;
    if (target_.branch && !branchDefaults((*dir)->dir, r.nowMs, defaults)) co_return true;
    auto plan = planRetention(m, r.nowMs, *held, defaults);
    if (!plan) {  // gc.enabled=false, or a retention property that is not a number
      out_.skipped = plan.error().message;
      co_return true;
    }
    record(m, *plan);
    if (!apply || plan->empty()) co_return true;
    r.idempotencyKey = Uuid::random().text();
    auto committed = co_await commitTable(r, target_.ident, retentionCommit(m, *plan));
    if (committed) {
      out_.metadataLocation = committed->metadata->location;
      expired += plan->snapshotsToRemove.size();
      co_return true;
    }
    if (committed.error().status == 409) co_return false;  // changed since the plan: again
    co_return fail(committed.error().reason, committed.error().message);
  }

  bool fail(const std::string& code, const std::string& reason) {
    out_.errorCode = code;
    out_.errorReason = reason;
    return true;
  }

 private:
  // Leases, protections, and the refs of the table's states on its branches (read once).
  asio::awaitable<std::optional<std::set<std::int64_t>>> holds(Request& r, const LakeDirectory& dir,
                                                               const Uuid& uuid) {
    std::set<std::int64_t> held = heldSnapshots(dir, uuid, r.nowMs);
    auto known = byBranches_.find(target_.uuid.text());
    if (known == byBranches_.end()) {
      auto read = co_await branchHeldSnapshots(r, dir, target_.ident, target_.uuid);
      if (!read) {
        fail(read.error().reason, read.error().message);
        co_return std::nullopt;
      }
      known = byBranches_.emplace(target_.uuid.text(), std::move(*read)).first;
    }
    held.insert(known->second.begin(), known->second.end());
    co_return held;
  }

  // The branch's retention defaults; false (skipped) when the branch has expired.
  bool branchDefaults(const LakeDirectory& dir, std::int64_t nowMs, RetentionDefaults& out) {
    auto b = dir.branches.find(*target_.branch);
    if (b == dir.branches.end()) return true;
    out = RetentionDefaults{b->second.maxSnapshotAgeMs, b->second.minSnapshotsToKeep};
    if (b->second.expiresMs && *b->second.expiresMs <= nowMs) {
      out_.skipped = "the branch expired: it is read-only until dropped";
      return false;
    }
    return true;
  }

  void record(const TableMetadata& m, const RetentionPlan& plan) {
    out_.planned = true;
    out_.snapshots = m.snapshots.size();
    out_.expire = {plan.snapshotsToRemove.begin(), plan.snapshotsToRemove.end()};
    out_.removeRefs = {plan.refsToRemove.begin(), plan.refsToRemove.end()};
    out_.keptForCatalog = {plan.keptForTheCatalog.begin(), plan.keptForTheCatalog.end()};
  }

  Lake& lake_;
  const CatalogConfig& config_;
  const Target& target_;
  std::map<std::string, std::set<std::int64_t>>& byBranches_;
  TableExpiry& out_;
};

}  // namespace

asio::awaitable<Res<ExpireReport>> expireLake(Lake& lake, const CatalogConfig& config,
                                              const ExpireSettings& settings) {
  OperationBudget budget;
  auto view = co_await lake.directory(budget);
  if (!view) co_return failureOf(view);
  const std::vector<Target> tables = targetsOf((*view)->dir, settings.table);
  if (!settings.table.empty() && tables.empty()) {
    co_return err(Errc::usage, "no table " + settings.table + " in lake " + lake.id());
  }
  ExpireReport report;
  std::map<std::string, std::set<std::int64_t>> byBranches;  // by table UUID, read once
  for (std::size_t i = 0; i < tables.size(); ++i) {
    const Target& target = tables[i];
    TableExpiry& t = report.tables.emplace_back();
    t.table = displayName(target.ident);
    t.branch = target.branch;
    const std::string name = t.table + (target.branch ? " on " + *target.branch : "");
    if (settings.beforeTable && settings.beforeTable(name, i, tables.size())) {
      report.tables.pop_back();
      break;
    }
    TableWalk walk(lake, config, target, byBranches, t);
    bool settled = false;
    for (int attempt = 0; attempt < kExpireAttempts && !settled; ++attempt) {
      settled = co_await walk.attempt(settings.apply, report.expired);
    }
    if (!settled) {
      walk.fail("contention", "the table changed under each of " + std::to_string(kExpireAttempts) +
                                  " plans; run it again");
    }
    if (t.errorCode) ++report.failed;
    if (settings.afterTable) settings.afterTable(t);
  }
  co_return report;
}

}  // namespace cairn::catalog
