#include "catalog/directory.hpp"

#include <algorithm>
#include <climits>
#include <set>

namespace cairn::catalog {

namespace {

Failure<Error> missing(std::string_view kind, const std::string& what) {
  return Failure<Error>{Error{Errc::missing, what, std::string(kind)}};
}

Failure<Error> conflict(const std::string& what) { return err(Errc::conflict, what); }

template <class Record>
void remember(std::map<std::string, Record>& keys,
              std::deque<std::pair<std::int64_t, std::string>>& order,
              const std::optional<std::string>& key, const Record& record,
              std::int64_t readerClockMs) {
  if (key && !keys.count(*key)) {  // the first record with a key is its result
    keys.emplace(*key, record);
    order.emplace_back(record.timeMs, *key);
  }
  // Keys of records older than the lifetime (measured from the earlier of this record, the
  // newest, and the reader's clock) go, and the oldest beyond the count bound.
  const std::int64_t horizon = std::min(record.timeMs, readerClockMs) - kIdempotencyLifetimeMs;
  while (!order.empty() && (order.size() > kIdempotencyMaxKeys || order.front().first < horizon)) {
    keys.erase(order.front().second);
    order.pop_front();
  }
}

// "s3a://b/x/" -> "s3://b/x"
std::string normalLocation(std::string_view l) {
  std::string out(l);
  for (const char* alias : {"s3a://", "s3n://"}) {
    if (out.starts_with(alias)) out = "s3://" + out.substr(6);
  }
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

}  // namespace

bool locationsOverlap(std::string_view a, std::string_view b) {
  const std::string x = normalLocation(a), y = normalLocation(b);
  if (x == y) return true;
  const auto inside = [](const std::string& inner, const std::string& outer) {
    return inner.size() > outer.size() && inner.starts_with(outer) && inner[outer.size()] == '/';
  };
  return inside(x, y) || inside(y, x);
}

Res<void> LakeDirectory::check(const LakeChange& change) const {
  auto needNamespace = [&](const Namespace& ns) -> Res<void> {
    if (!namespaces.count(ns)) {
      return missing(kMissingNamespace, "Namespace does not exist: " + displayName(ns));
    }
    return {};
  };
  auto needTable = [&](const TableIdent& t, const Uuid& uuid) -> Res<void> {
    auto it = tables.find(t);
    if (it == tables.end() || it->second.uuid != uuid) {
      return missing(kMissingTable, "Table does not exist: " + displayName(t));
    }
    return {};
  };
  auto needFree = [&](const TableIdent& t) -> Res<void> {
    if (tables.count(t)) return conflict("Table already exists: " + displayName(t));
    return {};
  };
  if (const auto* c = std::get_if<LakeCreated>(&change)) {
    if (records != 0) return err(Errc::usage, "lake-created is only a log's first record");
    return checkLakeId(c->lake);
  }
  if (records == 0) return err(Errc::usage, "a lake log starts with lake-created");
  if (const auto* c = std::get_if<NamespaceCreated>(&change)) {
    if (namespaces.count(c->ns)) {
      return conflict("Namespace already exists: " + displayName(c->ns));
    }
    return {};
  }
  if (const auto* c = std::get_if<NamespaceUpdated>(&change)) return needNamespace(c->ns);
  if (const auto* c = std::get_if<NamespaceDropped>(&change)) {
    if (auto ok = needNamespace(c->ns); !ok) return ok;
    if (!tablesIn(c->ns).empty() || !children(c->ns).empty()) {
      return conflict("Namespace is not empty: " + displayName(c->ns));
    }
    return {};
  }
  if (const auto* c = std::get_if<TableRegistered>(&change)) {
    if (auto ok = needNamespace(c->table.ns); !ok) return ok;
    if (auto ok = needFree(c->table); !ok) return ok;
    if (auto other = tableOf(c->uuid)) {
      return conflict("Table UUID " + c->uuid.text() + " is registered as " + displayName(*other));
    }
    for (const auto& [ident, entry] : tables) {
      if (locationsOverlap(entry.location, c->location)) {
        return Failure<Error>{Error{Errc::conflict,
                                    "the location " + c->location + " overlaps table " +
                                        displayName(ident) + "'s (" + entry.location + ")",
                                    std::string(kOverlappingLocation)}};
      }
    }
    return {};
  }
  if (const auto* c = std::get_if<TableDropped>(&change)) return needTable(c->table, c->uuid);
  if (const auto* c = std::get_if<LeaseTaken>(&change)) {
    if (!tableOf(c->table))
      return missing(kMissingTable, "Table " + c->table.text() + " is not in the lake");
    if (leases.count(c->lease.text())) return conflict("Lease " + c->lease.text() + " exists");
    if (leases.size() >= kMaxLeases) {
      return conflict("the lake holds " + std::to_string(kMaxLeases) +
                      " leases already: release some first");
    }
    return {};
  }
  if (const auto* c = std::get_if<LeaseReleased>(&change)) {
    if (!leases.count(c->lease.text())) {
      return missing(kMissingLease,
                     "Lease " + c->lease.text() + " is not held (released or expired)");
    }
    return {};
  }
  if (const auto* c = std::get_if<SnapshotProtected>(&change)) {
    if (!tableOf(c->table))
      return missing(kMissingTable, "Table " + c->table.text() + " is not in the lake");
    if (protectedSnapshots.count({c->table.text(), c->snapshotId})) {
      return conflict("Snapshot " + std::to_string(c->snapshotId) + " is protected already");
    }
    if (protectedSnapshots.size() >= kMaxProtectedSnapshots) {
      return conflict("the lake protects " + std::to_string(kMaxProtectedSnapshots) +
                      " snapshots already");
    }
    return {};
  }
  if (const auto* c = std::get_if<SnapshotUnprotected>(&change)) {
    if (!protectedSnapshots.count({c->table.text(), c->snapshotId})) {
      return missing(kMissingSnapshot,
                     "Snapshot " + std::to_string(c->snapshotId) + " is not protected");
    }
    return {};
  }
  if (const auto* c = std::get_if<TableRenamed>(&change)) {
    if (auto ok = needTable(c->from, c->uuid); !ok) return ok;
    if (auto ok = needNamespace(c->to.ns); !ok) return ok;
    return needFree(c->to);
  }
  return err(Errc::usage, "unknown change");
}

Res<void> LakeDirectory::apply(const LakeRecord& record) {
  // Leases expired by this record's time go first: the fold depends on the log alone. A
  // release of a lease that expired meanwhile (checked when the lease was still there) is then
  // a release of nothing, not a contradiction.
  std::erase_if(leases, [&](const auto& l) { return l.second.expiresMs <= record.timeMs; });
  const auto* release = std::get_if<LeaseReleased>(&record.change);
  if (!release || leases.count(release->lease.text())) {
    if (auto ok = check(record.change); !ok) return ok;
  }
  const LakeChange& change = record.change;
  if (const auto* c = std::get_if<LakeCreated>(&change)) {
    lake = c->lake;
  } else if (const auto* c = std::get_if<NamespaceCreated>(&change)) {
    namespaces.emplace(c->ns, c->properties);
  } else if (const auto* c = std::get_if<NamespaceUpdated>(&change)) {
    Properties& p = namespaces.at(c->ns);
    for (const auto& k : c->removals) p.erase(k);
    for (const auto& [k, v] : c->updates) p[k] = v;
  } else if (const auto* c = std::get_if<NamespaceDropped>(&change)) {
    namespaces.erase(c->ns);
  } else if (const auto* c = std::get_if<TableRegistered>(&change)) {
    tables.emplace(c->table, TableEntry{c->uuid, c->location});
  } else if (const auto* c = std::get_if<TableDropped>(&change)) {
    tables.erase(c->table);
    if (c->purgeLocation) purged[c->uuid.text()] = *c->purgeLocation;
  } else if (const auto* c = std::get_if<TableRenamed>(&change)) {
    TableEntry entry = tables.at(c->from);
    tables.erase(c->from);
    tables.emplace(c->to, std::move(entry));
  } else if (const auto* c = std::get_if<LeaseTaken>(&change)) {
    leases.emplace(c->lease.text(),
                   Lease{c->table, record.timeMs, c->expiresMs, c->snapshotId, c->prefix});
  } else if (const auto* c = std::get_if<LeaseReleased>(&change)) {
    leases.erase(c->lease.text());
  } else if (const auto* c = std::get_if<SnapshotProtected>(&change)) {
    protectedSnapshots.emplace(c->table.text(), c->snapshotId);
  } else if (const auto* c = std::get_if<SnapshotUnprotected>(&change)) {
    protectedSnapshots.erase({c->table.text(), c->snapshotId});
  }
  ++records;
  remember(keys_, keyOrder_, record.idempotencyKey, record, readerClockMs);
  return {};
}

std::vector<Namespace> LakeDirectory::children(const std::optional<Namespace>& parent) const {
  const std::size_t depth = parent ? parent->size() : 0;
  std::set<Namespace> out;
  for (const auto& [ns, _] : namespaces) {
    if (ns.size() <= depth) continue;
    if (parent && !isWithin(ns, *parent)) continue;
    out.emplace(ns.begin(), ns.begin() + static_cast<std::ptrdiff_t>(depth + 1));
  }
  return {out.begin(), out.end()};
}

bool LakeDirectory::knows(const Namespace& ns) const {
  if (namespaces.count(ns)) return true;
  auto it = namespaces.lower_bound(ns);
  return it != namespaces.end() && isWithin(it->first, ns);
}

std::vector<TableIdent> LakeDirectory::tablesIn(const Namespace& ns) const {
  std::vector<TableIdent> out;
  for (auto it = tables.lower_bound(TableIdent{ns, ""}); it != tables.end() && it->first.ns == ns;
       ++it) {
    out.push_back(it->first);
  }
  return out;
}

std::optional<TableIdent> LakeDirectory::tableOf(const Uuid& uuid) const {
  for (const auto& [ident, entry] : tables) {
    if (entry.uuid == uuid) return ident;
  }
  return std::nullopt;
}

std::vector<std::pair<std::string, Lease>> LakeDirectory::leasesOf(const Uuid& table,
                                                                   std::int64_t nowMs) const {
  std::vector<std::pair<std::string, Lease>> out;
  for (const auto& [id, lease] : leases) {
    if (lease.table == table && lease.expiresMs > nowMs) out.emplace_back(id, lease);
  }
  return out;
}

std::vector<std::int64_t> LakeDirectory::protectedOf(const Uuid& table) const {
  std::vector<std::int64_t> out;
  for (auto it = protectedSnapshots.lower_bound({table.text(), INT64_MIN});
       it != protectedSnapshots.end() && it->first == table.text(); ++it) {
    out.push_back(it->second);
  }
  return out;
}

const LakeRecord* LakeDirectory::recordFor(const std::string& key) const {
  auto it = keys_.find(key);
  return it == keys_.end() ? nullptr : &it->second;
}

Res<void> TableHistory::apply(const TableCommit& commit) {
  const std::optional<std::string> replaces =
      current ? std::optional<std::string>(current->metadataLocation) : std::nullopt;
  if (commit.previousLocation != replaces) {
    return err(Errc::corrupt, "commit " + std::to_string(commits + 1) + " replaces " +
                                  (commit.previousLocation ? *commit.previousLocation : "nothing") +
                                  ", not the current metadata (" + (replaces ? *replaces : "none") +
                                  ")");
  }
  if (!first) first = commit;
  current = commit;
  ++commits;
  versions.push_back(Version{commit.timeMs, commit.metadataLocation, commit.metadataSha256,
                             commit.metadataLength});
  remember(keys_, keyOrder_, commit.idempotencyKey, commit, readerClockMs);
  return {};
}

std::optional<TableCommit> TableHistory::version(std::uint64_t n) const {
  if (n < 1 || n > versions.size()) return std::nullopt;
  const Version& v = versions[n - 1];
  TableCommit c;
  c.metadataLocation = v.metadataLocation;
  c.metadataSha256 = v.metadataSha256;
  c.metadataLength = v.metadataLength;
  c.timeMs = v.timeMs;
  return c;
}

const TableCommit* TableHistory::commitFor(const std::string& key) const {
  auto it = keys_.find(key);
  return it == keys_.end() ? nullptr : &it->second;
}

}  // namespace cairn::catalog
