#include "catalog/maintenance/gc.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <optional>
#include <set>

#include "catalog/format/names.hpp"
#include "catalog/iceberg/iceberg_files.hpp"
#include "engine/store/listing.hpp"
#include "engine/store/store_errors.hpp"

namespace cairn::catalog {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool isMetadataFile(std::string_view key) {
  return endsWith(key, ".metadata.json") || endsWith(key, ".metadata.json.gz");
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Where a path a graph names lies: a key of the lake's store, or outside it (std::nullopt:
// another bucket or another file system, never ours to check or delete), or a failure: a
// spelling that points into the lake's store but is no key of it (a schemeless path, another
// spelling of the root, a character keys cannot hold). Such a path fails the walk, so a file
// it means is never taken for unreachable.
Res<std::optional<std::string>> placeOf(const Lake& lake, std::string_view path) {
  if (auto key = lake.keyOf(path)) return std::optional<std::string>(*key);
  auto mismatch = [&] {
    return err(Errc::usage, "the path " + std::string(path) +
                                " points into the lake's store but names no key under its root " +
                                lake.rootLocation() +
                                ": garbage collection cannot tell what it "
                                "keeps, so nothing is deleted");
  };
  const auto sep = path.find("://");
  if (sep == std::string_view::npos) return mismatch();
  const std::string scheme = lower(path.substr(0, sep));
  std::string_view rest = path.substr(sep + 3);
  const StoreUrl& url = lake.storeUrl();
  if (url.kind == StoreUrl::Kind::s3) {
    if (scheme != "s3" && scheme != "s3a" && scheme != "s3n") return std::optional<std::string>{};
    const std::string_view bucket = rest.substr(0, rest.find('/'));
    if (lower(bucket) != lower(url.bucket)) return std::optional<std::string>{};
    if (url.root.empty()) return mismatch();
    std::string_view after = rest.substr(bucket.size());
    while (after.starts_with('/')) after.remove_prefix(1);
    if (after.starts_with(url.root)) return mismatch();
    return std::optional<std::string>{};
  }
  if (scheme != "file") return std::optional<std::string>{};
  std::string dir = url.directory.lexically_normal().string();
  std::string_view d = dir;
  while (d.starts_with('/')) d.remove_prefix(1);
  while (rest.starts_with('/')) rest.remove_prefix(1);
  if (rest.starts_with(d)) return mismatch();
  return std::optional<std::string>{};
}

struct Reached {
  std::int64_t size = -1;  // as its parent records it; -1: not recorded
  bool required = true;    // a live entry (must exist); false: a deleted entry, only kept
  std::string what;        // the file that named it, for messages
};

// One walk of the retained graphs: what it reached, and the report's reachable counts.
class Walk {
 public:
  Walk(Lake& lake, OperationBudget& budget, GcReport& report)
      : lake_(lake), budget_(budget), report_(report) {}

  std::map<std::string, Reached> files;  // by key

  asio::awaitable<Res<void>> metadata(const TableMetadata& m, const std::string& what) {
    for (const Snapshot& s : m.snapshots) {
      const json::object* o = s.json.if_object();
      const json::value* list = o ? o->if_contains("manifest-list") : nullptr;
      const json::value* manifests = o ? o->if_contains("manifests") : nullptr;
      const std::string label = what + ", snapshot " + std::to_string(s.snapshotId);
      if (list && list->is_string()) {
        const std::string path(list->as_string());
        CAIRN_CO_TRY(co_await manifestList(path, label));
      } else if (manifests && manifests->is_array()) {  // format v1 without a manifest list
        for (const auto& p : manifests->as_array()) {
          if (!p.is_string()) co_return err(Errc::format, label + ": a manifest is not a path");
          const ManifestFileEntry entry{std::string(p.as_string()), 0, 0};
          CAIRN_CO_TRY(co_await manifest(entry, label));
        }
      } else {
        co_return err(Errc::format, label + " names neither a manifest list nor manifests");
      }
    }
    for (const auto* stats : {&m.statistics, &m.partitionStatistics}) {
      for (const StatisticsFile& f : *stats) {
        std::int64_t size = -1;
        if (const json::object* o = f.json.if_object()) {
          if (const json::value* v = o->if_contains("file-size-in-bytes"); v && v->is_int64()) {
            size = v->as_int64();
          }
        }
        CAIRN_CO_TRY(reach(f.path, size, "statistics", true, what));
      }
    }
    co_return Res<void>{};
  }

  std::uint64_t fetched() const { return fetched_; }

 private:
  // Records a file a graph reaches; the same key twice must agree on its size.
  Res<void> reach(const std::string& path, std::int64_t size, const char* cls, bool required,
                  const std::string& what) {
    auto key = placeOf(lake_, path);
    if (!key) return failureOf(key);
    if (!*key) {
      report_.reachable["outside"].add(size > 0 ? std::uint64_t(size) : 0);
      return {};
    }
    auto [it, added] = files.try_emplace(**key, Reached{size, required, what});
    if (!added) {
      if (size >= 0 && it->second.size >= 0 && it->second.size != size) {
        return err(Errc::corrupt, path + " is " + std::to_string(size) + " bytes in " + what +
                                      " and " + std::to_string(it->second.size) + " in " +
                                      it->second.what);
      }
      if (it->second.size < 0) it->second.size = size;
      it->second.required = it->second.required || required;
      return {};
    }
    if (files.size() > kGcMaxReachableFiles) {
      return err(Errc::budget, "more than 10,000,000 reachable files in the lake");
    }
    report_.reachable[required ? cls : "deleted-entry"].add(size > 0 ? std::uint64_t(size) : 0);
    return {};
  }

  // The bytes of a file the walk must read (a manifest list or manifest), in the lake's store.
  asio::awaitable<Res<Bytes>> read(const std::string& path, std::uint64_t maxBytes,
                                   const std::string& what) {
    auto key = placeOf(lake_, path);
    if (!key) co_return failureOf(key);
    if (!*key) {
      co_return err(Errc::usage, path + " (named by " + what +
                                     ") is outside the lake's store: its contents cannot be "
                                     "walked, so nothing is deleted");
    }
    CAIRN_CO_TRY(budget_.reserve(maxBytes, 0, 1, **key));
    auto got = co_await lake_.store().get(**key, maxBytes);
    if (!got) {
      Error e = storeError(got.error(), **key).error;
      e.message += " (named by " + what + ")";
      co_return Failure<Error>{std::move(e)};
    }
    ++fetched_;
    co_return std::move(got->bytes);
  }

  asio::awaitable<Res<void>> manifestList(const std::string& path, const std::string& what) {
    if (!visited_.insert(path).second) co_return Res<void>{};
    auto bytes = co_await read(path, kMaxAvroFileBytes, what);
    if (!bytes) co_return failureOf(bytes);
    CAIRN_CO_TRY(reach(path, std::int64_t(bytes->size()), "manifest-list", true, what));
    auto entries = readManifestList(*bytes);
    if (!entries) co_return err(Errc::corrupt, path + ": " + entries.error().message);
    const std::string label = "manifest list " + path;
    for (const ManifestFileEntry& e : *entries) CAIRN_CO_TRY(co_await manifest(e, label));
    co_return Res<void>{};
  }

  asio::awaitable<Res<void>> manifest(const ManifestFileEntry& m, const std::string& what) {
    if (!visited_.insert(m.path).second) co_return Res<void>{};
    const std::uint64_t bound = m.length > 0 ? std::uint64_t(m.length) : kMaxAvroFileBytes;
    auto bytes = co_await read(m.path, bound, what);
    if (!bytes) co_return failureOf(bytes);
    if (m.length > 0 && bytes->size() != std::uint64_t(m.length)) {
      co_return err(Errc::corrupt, m.path + " is " + std::to_string(bytes->size()) + " bytes; " +
                                       what + " says " + std::to_string(m.length));
    }
    CAIRN_CO_TRY(reach(m.path, std::int64_t(bytes->size()), "manifest", true, what));
    auto entries = readManifest(*bytes);
    if (!entries) co_return err(Errc::corrupt, m.path + ": " + entries.error().message);
    const std::string label = "manifest " + m.path;
    for (const ManifestEntry& e : *entries) {
      // A deleted entry's file is kept (an older snapshot may still name it) but need not
      // exist: whoever deleted it from the table may have removed it.
      CAIRN_CO_TRY(
          reach(e.path, e.sizeBytes, e.content == 0 ? "data" : "delete", e.status != 2, label));
    }
    co_return Res<void>{};
  }

  Lake& lake_;
  OperationBudget& budget_;
  GcReport& report_;
  std::set<std::string> visited_;  // manifest lists and manifests read (immutable: once)
  std::uint64_t fetched_ = 0;
};

struct TableState {
  Uuid uuid;  // the log's: the table's, or a branch-local log's (a fork)
  Uuid table;
  std::optional<std::string> base;  // a fork's provenance (where its log starts)
  std::string name;
  std::string prefix;  // the key prefix of its location, with '/'
  std::uint64_t revision = 0;
  std::set<std::string> walked;  // metadata locations walked
};

// The metadata files table `t` retains now: its current one and those its metadata-log names
// (the table log's versions); walks the ones not in `t.walked` yet. A metadata-log entry the
// table log does not hold (history from before the table was registered) is walked if it
// exists and skipped if it does not (then no one can load it either).
asio::awaitable<Res<void>> walkTable(Lake& lake, Walk& walk, TableState& t,
                                     const std::set<std::int64_t>& held, OperationBudget& budget,
                                     GcReport& report) {
  const std::string* base = t.base ? &*t.base : nullptr;
  auto view = co_await lake.table(t.uuid, budget, base);
  if (!view) co_return failureOf(view);
  const TableView& v = **view;
  t.revision = v.cursor.revision();
  const TableMetadata& now = v.metadata->metadata;
  std::set<std::string> retained{v.metadata->location};
  for (const MetadataLogEntry& e : now.metadataLog) retained.insert(e.metadataFile);
  std::set<std::int64_t> snapshots;
  for (const auto& version : v.history.versions) {
    if (!retained.count(version.metadataLocation)) continue;
    retained.erase(version.metadataLocation);
    if (!t.walked.insert(version.metadataLocation).second) continue;
    TableCommit commit;
    commit.metadataLocation = version.metadataLocation;
    commit.metadataSha256 = version.metadataSha256;
    commit.metadataLength = version.metadataLength;
    auto loaded = co_await lake.metadata(commit, budget);
    if (!loaded) co_return failureOf(loaded);
    ++report.versions;
    for (const Snapshot& s : (*loaded)->metadata.snapshots) snapshots.insert(s.snapshotId);
    const std::string what = t.name + " " + commit.metadataLocation;
    CAIRN_CO_TRY(co_await walk.metadata((*loaded)->metadata, what));
  }
  for (const std::string& location : retained) {  // named by the metadata-log only
    if (!t.walked.insert(location).second) continue;
    auto key = placeOf(lake, location);
    if (!key) co_return failureOf(key);
    if (!*key) continue;  // outside the store: not ours
    CAIRN_CO_TRY(budget.reserve(kMaxTableMetadataBytes, 0, 1, **key));
    auto got = co_await lake.readObject(**key, kMaxTableMetadataBytes);
    if (!got && got.error().status == StoreStatus::missing) continue;
    if (!got) co_return storeError(got.error(), **key);
    auto parsed = parseTableMetadata(asChars(got->bytes));
    if (!parsed) co_return err(Errc::corrupt, location + ": " + parsed.error().message);
    ++report.versions;
    for (const Snapshot& s : parsed->snapshots) snapshots.insert(s.snapshotId);
    const std::string what = t.name + " " + location;
    CAIRN_CO_TRY(co_await walk.metadata(*parsed, what));
  }
  if (t.walked.empty()) co_return err(Errc::corrupt, t.name + " has no metadata to walk");
  for (std::int64_t id : held) {
    if (!snapshots.count(id)) {
      co_return err(Errc::missing,
                    t.name + ": snapshot " + std::to_string(id) +
                        " is held (a lease or a protection) but no retained version has it: its "
                        "files cannot be found, so nothing is deleted");
    }
  }
  co_return Res<void>{};
}

// A reachable file not seen in a listing: it must exist, with the size its parent records.
asio::awaitable<Res<void>> checkExists(Lake& lake, OperationBudget& budget, const std::string& key,
                                       const Reached& r, const std::string& when) {
  CAIRN_CO_TRY(budget.reserve(0, 0, 1, key));
  auto info = co_await lake.store().head(key);
  if (!info) {
    Error e = storeError(info.error(), key).error;
    e.message = when + key + " (named by " + r.what + "): " + e.message;
    co_return Failure<Error>{std::move(e)};
  }
  if (r.size >= 0 && std::uint64_t(r.size) != info->size) {
    co_return err(Errc::corrupt, when + key + " is " + std::to_string(info->size) + " bytes; " +
                                     r.what + " says " + std::to_string(r.size));
  }
  co_return Res<void>{};
}

// The logs whose graphs are walked: each live table's, and each branch-local log of it (a
// fork: a branch's own history of the table, under the same location).
Res<std::vector<TableState>> logsOf(const Lake& lake, const LakeDirectory& d) {
  std::vector<TableState> out;
  for (const auto& [ident, entry] : d.tables) {
    TableState t;
    t.uuid = entry.uuid;
    t.table = entry.uuid;
    t.name = displayName(ident);
    auto key = lake.keyOf(entry.location);
    if (!key) {
      return err(Errc::usage,
                 t.name + "'s location " + entry.location + " is not under the lake's root");
    }
    t.prefix = *key + "/";
    out.push_back(std::move(t));
  }
  const std::size_t tables = out.size();
  for (std::size_t i = 0; i < tables; ++i) {
    const TableState main = out[i];  // a copy: out grows below
    for (const auto& [at, fork] : d.forks) {
      if (at.second != main.uuid.text()) continue;
      TableState t;
      t.uuid = fork.log;
      t.table = main.uuid;
      t.base = fork.fromMetadataLocation;
      t.name = main.name + " on " + at.first;
      t.prefix = main.prefix;
      out.push_back(std::move(t));
    }
  }
  return out;
}

// The walk after the deletes: every live file a retained graph reaches must still be there.
asio::awaitable<Res<void>> walkAgain(Lake& lake, OperationBudget& budget) {
  GcReport second;
  Walk rewalk(lake, budget, second);
  const std::set<std::int64_t> noneHeld;
  auto dir = co_await lake.directory(budget);
  if (!dir) co_return failureOf(dir);
  auto logs = logsOf(lake, (*dir)->dir);
  if (!logs) co_return failureOf(logs);
  for (TableState& t : *logs) {
    CAIRN_CO_TRY(co_await walkTable(lake, rewalk, t, noneHeld, budget, second));
  }
  const std::string when = "after the deletes, ";
  for (const auto& [key, r] : rewalk.files) {
    if (r.required) CAIRN_CO_TRY(co_await checkExists(lake, budget, key, r, when));
  }
  co_return Res<void>{};
}

}  // namespace

asio::awaitable<Result<GcReport, std::pair<Error, GcReport>>> collectGarbage(
    Lake& lake, const GcOptions& options, OperationBudget& budget) {
  using Out = Result<GcReport, std::pair<Error, GcReport>>;
  GcReport report;
  auto fail = [&](Error e) -> Out {
    return Failure<std::pair<Error, GcReport>>{{std::move(e), report}};
  };
  auto say = [&](const std::string& text) {
    if (options.progress) options.progress(text);
  };
  const std::int64_t nowMs = options.nowUnixSeconds * 1000;

  auto dir = co_await lake.directory(budget);
  if (!dir) co_return fail(dir.error());
  const LakeDirectory& d = (*dir)->dir;

  // Held snapshots per table, and the leases' prefixes (as keys).
  std::map<std::string, std::set<std::int64_t>> held;
  std::vector<std::string> leasePrefixes;
  for (const auto& [id, lease] : d.leases) {
    if (lease.expiresMs <= nowMs) continue;
    if (lease.snapshotId) held[lease.table.text()].insert(*lease.snapshotId);
    if (lease.prefix) {
      auto key = lake.keyOf(*lease.prefix);
      if (!key) {
        co_return fail(Error{Errc::usage, "lease " + id + "'s prefix " + *lease.prefix +
                                              " names no key under the lake's root"});
      }
      leasePrefixes.push_back(*key);
    }
  }
  for (const auto& [table, snapshot] : d.protectedSnapshots) held[table].insert(snapshot);

  // 1. The walk.
  Walk walk(lake, budget, report);
  auto logs = logsOf(lake, d);
  if (!logs) co_return fail(logs.error());
  std::vector<TableState> tables = std::move(*logs);
  const std::set<std::int64_t> noneHeld;
  for (TableState& t : tables) {
    // A held snapshot must be in the table's own retained versions (a lease or a protection is
    // taken on main); a branch-local log need not have it.
    const std::set<std::int64_t>& tableHeld = t.base ? noneHeld : held[t.table.text()];
    auto walked = co_await walkTable(lake, walk, t, tableHeld, budget, report);
    if (!walked) co_return fail(walked.error());
    if (t.base) {
      ++report.branchLogs;
    } else {
      ++report.tables;
    }
    say("walked " + t.name + ": " + std::to_string(t.walked.size()) + " versions, " +
        std::to_string(walk.files.size()) + " files reached in the lake so far");
  }

  // The locations listed: the live tables', and those of tables dropped with purge (no graph of
  // their own: only what a live table's graph reaches is kept there). A purged location a
  // live table took again is listed once.
  std::vector<std::string> prefixes;
  for (const TableState& t : tables) prefixes.push_back(t.prefix);
  for (const auto& [uuid, location] : d.purged) {
    auto key = lake.keyOf(location);
    if (!key) {
      co_return fail(Error{Errc::usage, "the purged table " + uuid + "'s location " + location +
                                            " is not under the lake's root"});
    }
    prefixes.push_back(*key + "/");
    ++report.purgedTables;
  }
  std::sort(prefixes.begin(), prefixes.end());
  std::vector<std::string> distinct;
  for (auto& p : prefixes) {
    if (distinct.empty() || !p.starts_with(distinct.back())) distinct.push_back(std::move(p));
  }
  prefixes = std::move(distinct);
  auto listedUnder = [&](const std::string& key) -> const std::string* {
    for (const auto& p : prefixes) {
      if (key.starts_with(p)) return &p;
    }
    return nullptr;
  };

  // 2. The listing: every reachable file under a listed location must be there with its
  // size; the rest are candidates unless young, leased or a metadata file.
  std::set<std::string> seen;
  struct Candidate {
    std::string key;
    std::uint64_t size;
  };
  std::vector<Candidate> candidates;
  const std::int64_t cutoff = options.nowUnixSeconds - options.graceSeconds;
  auto leased = [&](const std::string& key) {
    for (const auto& p : leasePrefixes) {
      if (key.starts_with(p)) return true;
    }
    return false;
  };
  for (const std::string& prefix : prefixes) {
    auto listed =
        co_await forEachObject(lake.store(), prefix, budget, [&](const ObjectInfo& o) -> Res<void> {
          report.listed.add(o.size);
          if (report.listed.files > kGcMaxListedObjects) {
            return err(Errc::budget, "more than 10,000,000 objects under the tables");
          }
          if (auto r = walk.files.find(o.key); r != walk.files.end()) {
            seen.insert(o.key);
            if (r->second.size >= 0 && std::uint64_t(r->second.size) != o.size) {
              return err(Errc::corrupt, o.key + " is " + std::to_string(o.size) + " bytes; " +
                                            r->second.what + " says " +
                                            std::to_string(r->second.size));
            }
            return {};
          }
          if (isMetadataFile(o.key) || o.key.starts_with("ns-")) {
            report.kept["metadata"].add(o.size);
          } else if (o.modifiedUnixSeconds > cutoff) {
            report.kept["young"].add(o.size);
          } else if (leased(o.key)) {
            report.kept["leased"].add(o.size);
          } else {
            candidates.push_back({o.key, o.size});
          }
          return {};
        });
    if (!listed) co_return fail(listed.error());
  }
  // Reachable files outside every listed location (another table's files that a graph
  // names, or files elsewhere under the root): each must exist too.
  for (const auto& [key, r] : walk.files) {
    if (!r.required || seen.count(key)) continue;
    if (listedUnder(key)) {
      co_return fail(Error{Errc::missing, key + " is missing (named by " + r.what +
                                              "): the graph does not verify, nothing is deleted"});
    }
    const std::string when = "the graph does not verify, nothing is deleted: ";
    auto exists = co_await checkExists(lake, budget, key, r, when);
    if (!exists) co_return fail(exists.error());
  }

  // 3. With --apply: each table again (a commit since the walk keeps what it reaches; a lease
  // taken since then keeps its prefix), then the deletes, then the walk once more.
  if (options.apply && !candidates.empty()) {
    auto again = co_await lake.directory(budget);
    if (!again) co_return fail(again.error());
    for (const auto& [id, lease] : (*again)->dir.leases) {
      if (lease.expiresMs <= nowMs || !lease.prefix) continue;
      if (auto key = lake.keyOf(*lease.prefix)) leasePrefixes.push_back(*key);
    }
    const std::set<std::int64_t> none;  // held snapshots were checked by the first walk
    // A table forked on a branch since the first walk has a log of its own now: walked too.
    auto now = logsOf(lake, (*again)->dir);
    if (!now) co_return fail(now.error());
    std::set<std::string> known;
    for (const TableState& t : tables) known.insert(t.uuid.text());
    for (TableState& t : *now) {
      if (!known.count(t.uuid.text())) tables.push_back(std::move(t));
    }
    for (TableState& t : tables) {
      auto moved = co_await walkTable(lake, walk, t, none, budget, report);
      if (!moved) co_return fail(moved.error());
    }
    std::vector<Candidate> still;
    for (auto& c : candidates) {
      if (walk.files.count(c.key)) {
        report.kept["moved"].add(c.size);
      } else if (leased(c.key)) {
        report.kept["leased"].add(c.size);
      } else {
        still.push_back(std::move(c));
      }
    }
    candidates = std::move(still);
  }
  for (const auto& c : candidates) {
    const std::string* under = listedUnder(c.key);
    const std::string_view rest = std::string_view(c.key).substr(under ? under->size() : 0);
    const char* cls = "data";
    if (rest.starts_with("metadata/"))
      cls = endsWith(rest, ".avro") ? "metadata-avro" : "metadata-other";
    report.candidates[cls].add(c.size);
    report.candidateKeys.push_back(c.key);
  }
  if (!options.apply) co_return report;

  std::uint64_t done = 0;
  for (const auto& c : candidates) {
    auto reserved = budget.reserve(0, 0, 1, c.key);
    if (!reserved) co_return fail(reserved.error());
    auto removed = co_await lake.store().remove(c.key);
    if (!removed) co_return fail(storeError(removed.error(), c.key).error);
    report.deleted.add(c.size);
    if (++done % 1000 == 0) say("deleted " + std::to_string(done) + " files");
  }

  // 4. The walk again: every live file a retained graph reaches must still be there.
  auto again = co_await walkAgain(lake, budget);
  if (!again) co_return fail(again.error());
  report.rewalked = true;
  co_return report;
}

}  // namespace cairn::catalog
