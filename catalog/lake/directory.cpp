#include "catalog/lake/directory.hpp"

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
    if (forkLogsEver_.count(c->uuid.text())) {
      return conflict("Table UUID " + c->uuid.text() + " is a branch-local log's");
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
  return checkBranch(change);
}

Res<void> LakeDirectory::checkBranch(const LakeChange& change) const {
  auto needBranch = [&](const std::string& name) -> Res<void> {
    if (!branches.count(name)) return missing(kMissingBranch, "Branch does not exist: " + name);
    return {};
  };
  if (const auto* c = std::get_if<BranchCreated>(&change)) {
    if (branches.count(c->name)) return conflict("Branch already exists: " + c->name);
    if (branches.size() >= kMaxBranches) {
      return Failure<Error>{Error{
          Errc::conflict,
          "the lake holds " + std::to_string(kMaxBranches) + " branches already: drop some first",
          std::string(kLakeBound)}};
    }
    if (c->parent) {
      if (auto ok = needBranch(*c->parent); !ok) return ok;
      if (branches.at(*c->parent).depth >= kMaxBranchDepth) {
        return err(Errc::usage, "a branch of " + *c->parent + " would be " +
                                    std::to_string(kMaxBranchDepth + 1) +
                                    " deep: branches nest at most " +
                                    std::to_string(kMaxBranchDepth) + " deep");
      }
    }
    return {};
  }
  if (const auto* c = std::get_if<BranchDropped>(&change)) {
    auto it = branches.find(c->name);
    if (it == branches.end() || it->second.id != c->id) {
      return missing(kMissingBranch, "Branch does not exist: " + c->name);
    }
    if (auto children = childrenOf(c->name); !children.empty()) {
      return conflict("Branch " + c->name + " has branches of its own (" + children.front() +
                      "): drop them first");
    }
    return {};
  }
  if (const auto* c = std::get_if<BranchForked>(&change)) {
    if (auto ok = needBranch(c->branch); !ok) return ok;
    if (!tableOf(c->table))
      return missing(kMissingTable, "Table " + c->table.text() + " is not in the lake");
    if (forks.count({c->branch, c->table.text()})) {
      return conflict("Table " + c->table.text() + " has a log on branch " + c->branch);
    }
    if (forkLogsEver_.count(c->log.text()) || tableLogsEver_.count(c->log.text())) {
      return conflict("The log " + c->log.text() + " is taken");
    }
    // The provenance is the state the branch showed: its parent's, recursively.
    const StateLog from = stateOf(branches.at(c->branch).parent, c->table);
    if (from.log != c->fromLog || from.branch != c->fromBranch) {
      return err(Errc::usage, "the fork of " + c->table.text() + " on " + c->branch +
                                  " names log " + c->fromLog.text() +
                                  " as its provenance; the branch showed log " + from.log.text());
    }
    if (forks.size() >= kMaxForks) {
      return Failure<Error>{Error{Errc::conflict,
                                  "the lake holds " + std::to_string(kMaxForks) +
                                      " tables forked on branches already: drop branches first",
                                  std::string(kLakeBound)}};
    }
    return {};
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
    tableLogsEver_.insert(c->uuid.text());
  } else if (const auto* c = std::get_if<TableDropped>(&change)) {
    tables.erase(c->table);
    if (c->purgeLocation) purged[c->uuid.text()] = *c->purgeLocation;
    dropForks([&](const auto& f) { return f.first.second == c->uuid.text(); });
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
  } else if (const auto* c = std::get_if<BranchCreated>(&change)) {
    const std::size_t depth = c->parent ? branches.at(*c->parent).depth + 1 : 1;
    branches.emplace(c->name, Branch{c->id, c->parent, depth, record.timeMs, c->expiresMs,
                                     c->maxSnapshotAgeMs, c->minSnapshotsToKeep});
  } else if (const auto* c = std::get_if<BranchDropped>(&change)) {
    branches.erase(c->name);
    dropForks([&](const auto& f) { return f.first.first == c->name; });
  } else if (const auto* c = std::get_if<BranchForked>(&change)) {
    forks.emplace(std::pair{c->branch, c->table.text()},
                  Fork{c->log, c->fromBranch, c->fromLog, c->fromRevision, c->fromMetadataLocation,
                       record.timeMs});
    forkLogsEver_.insert(c->log.text());
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

const Fork* LakeDirectory::forkOf(const std::string& branch, const Uuid& table) const {
  auto it = forks.find({branch, table.text()});
  return it == forks.end() ? nullptr : &it->second;
}

StateLog LakeDirectory::stateOf(const std::optional<std::string>& branch, const Uuid& table) const {
  std::optional<std::string> b = branch;
  for (std::size_t depth = 0; b && depth <= kMaxBranchDepth; ++depth) {
    if (const Fork* f = forkOf(*b, table)) return StateLog{f->log, b, f->fromMetadataLocation};
    auto it = branches.find(*b);
    if (it == branches.end()) break;
    b = it->second.parent;
  }
  return StateLog{table, std::nullopt, std::nullopt};
}

std::vector<std::string> LakeDirectory::childrenOf(const std::string& branch) const {
  std::vector<std::string> out;
  for (const auto& [name, b] : branches) {
    if (b.parent == branch) out.push_back(name);
  }
  return out;
}

Res<void> expectBase(const TableHistory& h, const std::optional<std::string>& base,
                     std::string_view log) {
  if (h.base == base) return {};
  return Failure<Error>{Error{Errc::corrupt,
                              std::string(log) + " starts from " + (h.base ? *h.base : "nothing") +
                                  "; the lake log says " + (base ? *base : "nothing"),
                              std::string(kOtherBase)}};
}

Res<void> TableHistory::apply(const TableCommit& commit) {
  if (commits == 0) base = commit.previousLocation;
  const std::optional<std::string> replaces =
      current ? std::optional<std::string>(current->metadataLocation) : base;
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
