#include "catalog/maintenance/retention.hpp"

#include <charconv>
#include <map>
#include <optional>

#include <boost/json.hpp>

namespace cairn::catalog {

namespace {

Res<std::int64_t> propertyInt(const TableMetadata& m, std::string_view key, std::int64_t fallback) {
  auto it = m.properties.find(std::string(key));
  if (it == m.properties.end()) return fallback;
  std::int64_t v = 0;
  const auto& text = it->second;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size()) {
    return err(Errc::usage, std::string(key) + " is not an integer: " + text);
  }
  return v;
}

std::optional<std::int64_t> refField(const SnapshotRef& ref, std::string_view key) {
  if (!ref.json.is_object()) return std::nullopt;
  const auto* v = ref.json.as_object().if_contains(key);
  if (!v || !v->is_int64()) return std::nullopt;
  return v->as_int64();
}

// The snapshot and its ancestors, newest first (a missing parent ends the line).
std::vector<const Snapshot*> ancestors(const TableMetadata& m, std::int64_t id) {
  std::vector<const Snapshot*> out;
  std::set<std::int64_t> seen;
  for (const Snapshot* s = m.snapshot(id); s && seen.insert(s->snapshotId).second;
       s = s->parentSnapshotId ? m.snapshot(*s->parentSnapshotId) : nullptr) {
    out.push_back(s);
  }
  return out;
}

}  // namespace

Res<RetentionPlan> planRetention(const TableMetadata& m, std::int64_t nowMs,
                                 const std::set<std::int64_t>& held,
                                 const RetentionDefaults& branch) {
  if (auto gc = m.properties.find(std::string(kGcEnabledProperty));
      gc != m.properties.end() && gc->second == "false") {
    return err(Errc::usage,
               "gc.enabled is false: snapshots are not expired (deleting files may "
               "corrupt other tables)");
  }
  std::int64_t maxSnapshotAge = 0, minKeep = 0, maxRefAge = 0;
  CAIRN_ASSIGN(maxSnapshotAge, propertyInt(m, kMaxSnapshotAgeProperty, kMaxSnapshotAgeDefault));
  CAIRN_ASSIGN(minKeep, propertyInt(m, kMinSnapshotsToKeepProperty, kMinSnapshotsToKeepDefault));
  CAIRN_ASSIGN(maxRefAge, propertyInt(m, kMaxRefAgeProperty, INT64_MAX));
  if (branch.maxSnapshotAgeMs) maxSnapshotAge = *branch.maxSnapshotAgeMs;
  if (branch.minSnapshotsToKeep) minKeep = *branch.minSnapshotsToKeep;
  const std::int64_t expireOlderThan = nowMs - maxSnapshotAge;

  RetentionPlan plan;
  // Refs: main always; another while its snapshot is younger than its max-ref-age-ms.
  std::map<std::string, const SnapshotRef*> retained;
  for (const auto& [name, ref] : m.refs) {
    if (name == "main") {
      retained.emplace(name, &ref);
      continue;
    }
    const Snapshot* s = m.snapshot(ref.snapshotId);
    const std::int64_t age = refField(ref, "max-ref-age-ms").value_or(maxRefAge);
    if (s && nowMs - s->timestampMs <= age) {
      retained.emplace(name, &ref);
    } else {
      plan.refsToRemove.push_back(name);
    }
  }
  std::set<std::int64_t> keep;
  std::set<std::int64_t> referenced;
  for (const auto& [name, ref] : retained) {
    keep.insert(ref->snapshotId);
    if (ref->type != "branch") {
      referenced.insert(ref->snapshotId);
      continue;
    }
    const auto refMaxAge = refField(*ref, "max-snapshot-age-ms");
    const std::int64_t olderThan = refMaxAge ? nowMs - *refMaxAge : expireOlderThan;
    const std::int64_t min = refField(*ref, "min-snapshots-to-keep").value_or(minKeep);
    std::int64_t kept = 0;
    bool retaining = true;
    for (const Snapshot* s : ancestors(m, ref->snapshotId)) {
      referenced.insert(s->snapshotId);
      if (retaining && (kept < min || s->timestampMs >= olderThan)) {
        keep.insert(s->snapshotId);
        ++kept;
      } else {
        retaining = false;  // the first too old one ends the branch's retained line
      }
    }
  }
  // Snapshots no ref reaches: kept while younger than the table's max age.
  for (const auto& s : m.snapshots) {
    if (!referenced.count(s.snapshotId) && s.timestampMs >= expireOlderThan) {
      keep.insert(s.snapshotId);
    }
  }
  for (const auto& s : m.snapshots) {
    if (keep.count(s.snapshotId)) continue;
    if (held.count(s.snapshotId)) {
      plan.keptForTheCatalog.push_back(s.snapshotId);
      continue;
    }
    plan.snapshotsToRemove.push_back(s.snapshotId);
  }
  return plan;
}

CommitTableRequest retentionCommit(const TableMetadata& m, const RetentionPlan& plan) {
  CommitTableRequest c;
  if (m.tableUuid) {
    TableRequirement uuid;
    uuid.kind = TableRequirement::Kind::assertTableUuid;
    uuid.name = *m.tableUuid;
    c.requirements.push_back(uuid);
  }
  for (const auto& [name, ref] : m.refs) {
    TableRequirement r;
    r.kind = TableRequirement::Kind::assertRefSnapshotId;
    r.name = name;
    r.id = ref.snapshotId;
    c.requirements.push_back(r);
  }
  for (const auto& name : plan.refsToRemove) {
    TableUpdate u;
    u.action = TableUpdate::Action::removeSnapshotRef;
    u.name = name;
    c.updates.push_back(u);
  }
  if (!plan.snapshotsToRemove.empty()) {
    TableUpdate u;
    u.action = TableUpdate::Action::removeSnapshots;
    u.snapshotIds = plan.snapshotsToRemove;
    c.updates.push_back(u);
  }
  return c;
}

}  // namespace cairn::catalog
