// `cairn lake ...`: a lake added to the configuration and created in its store, changed, its
// status, retention (expire), garbage collection and credential policies (docs/catalog.md).
#include <unistd.h>
#include <algorithm>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <set>

#include "catalog/access/config.hpp"
#include "catalog/format/names.hpp"
#include "catalog/lake/create.hpp"
#include "catalog/lake/lake.hpp"
#include "catalog/maintenance/expire.hpp"
#include "catalog/maintenance/gc.hpp"
#include "catalog/maintenance/retention.hpp"
#include "catalog/ops/operations.hpp"
#include "catalog/rest/server.hpp"
#include "catalog/rest/service.hpp"
#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "cli/run.hpp"
#include "engine/store/aws_config.hpp"
#include "engine/store/open_store.hpp"
#include "io/uring.hpp"

namespace cairn::cli {

namespace asio = boost::asio;
using namespace cairn::catalog;

namespace {

// Words the routes use after /v1/: a lake may not be called so (its path would be ambiguous).
bool reservedLakeId(std::string_view id) {
  return id == "namespaces" || id == "tables" || id == "transactions" || id == "views" ||
         id == "config" || id == "oauth";
}

struct LakeCreateOptions {
  std::string config;
  std::string store;
  std::string lake;
  std::string stsRole;
  std::string stsEndpoint;
  std::string stsRegion;
  bool json = false;
};

// --sts-role ARN [--sts-endpoint URL] [--sts-region R]: STS settings for an S3 lake.
Res<std::optional<StsSettings>> stsOf(const std::string& storeUrl, const std::string& role,
                                      const std::string& endpoint, const std::string& region) {
  if (role.empty()) {
    if (!endpoint.empty() || !region.empty()) {
      return err(Errc::usage, "--sts-endpoint and --sts-region go with --sts-role");
    }
    return std::optional<StsSettings>{};
  }
  auto url = parseStoreUrl(storeUrl);
  if (!url) return err(Errc::usage, "--store: " + url.error());
  if (url->kind != StoreUrl::Kind::s3) {
    return err(Errc::usage,
               "--sts-role: the lake is on a directory store, which vends no "
               "credentials (engines read its files directly)");
  }
  return std::optional<StsSettings>{StsSettings{role, endpoint, region}};
}

int runLakeCreate(const LakeCreateOptions& o) {
  const auto started = std::chrono::steady_clock::now();
  // A directory store is recorded absolute, so `cairn serve` finds it from any directory.
  auto parsedStore = parseStoreUrl(o.store);
  if (!parsedStore) {
    return reportJson(o.json, Error{Errc::usage, "--store: " + parsedStore.error()}, 0);
  }
  const std::string store =
      parsedStore->kind == StoreUrl::Kind::directory ? parsedStore->directory.string() : o.store;
  if (auto ok = checkLakeId(o.lake); !ok) return reportJson(o.json, ok.error(), 0);
  if (reservedLakeId(o.lake)) {
    return reportJson(o.json, Error{Errc::usage, "\"" + o.lake + "\" is a word of the routes"}, 0);
  }
  auto sts = stsOf(store, o.stsRole, o.stsEndpoint, o.stsRegion);
  if (!sts) return reportJson(o.json, sts.error(), 0);
  // The publisher UUID: the file's, or a new one for a new file (kept only if all goes well).
  Uuid publisher = Uuid::random();
  if (auto existing = loadConfig(o.config)) {
    publisher = existing->publisher;
    if (const LakeEntry* l = existing->lake(o.lake);
        l && l->store != store && l->store != o.store) {
      return reportJson(
          o.json,
          Error{Errc::usage, "lake " + o.lake + " is configured with another store: " + l->store},
          secondsSince(started));
    }
    for (const auto& other : existing->lakes) {
      if (other.id != o.lake && rootsOverlap(other.store, store)) {
        return reportJson(o.json,
                          Error{Errc::usage, "lake " + other.id + "'s root (" + other.store +
                                                 ") and this one share or nest: a lake's root "
                                                 "holds no other lake"},
                          secondsSince(started));
      }
    }
  } else if (existing.error().code != Errc::missing) {
    return reportJson(o.json, existing.error(), secondsSince(started));
  }
  bool created = false;
  const int code = runAsync([&](io::Uring& uring) -> asio::awaitable<int> {
    auto made = co_await createLakeLog(uring, store, o.lake, publisher);
    if (!made) co_return reportJson(o.json, made.error(), secondsSince(started));
    created = *made;
    co_return 0;
  });
  if (code != 0) return code;
  auto updated = updateConfig(
      o.config,
      [&](CatalogConfig& c) -> Res<void> {
        if (c.publisher != publisher) {
          return err(Errc::conflict, o.config + " changed its publisher meanwhile; run it again");
        }
        if (!c.lake(o.lake)) {
          LakeEntry entry{o.lake, store};
          entry.sts = *sts;
          c.lakes.push_back(std::move(entry));
        } else if (*sts) {
          for (auto& l : c.lakes) {
            if (l.id == o.lake) l.sts = *sts;
          }
        }
        return {};
      },
      [&] {
        CatalogConfig c;
        c.publisher = publisher;
        return c;
      });
  if (!updated) return reportJson(o.json, updated.error(), secondsSince(started));
  if (o.json) {
    printJson(JsonObject{}
                  .add("ok", true)
                  .add("lake", o.lake)
                  .add("store", store)
                  .add("lake_log_namespace", lakeLogNamespace(o.lake).text())
                  .add("publisher", publisher.text())
                  .add("sts", static_cast<bool>(*sts))
                  .add("created", created)
                  .add("seconds", secondsSince(started)));
  } else {
    std::printf("lake %s %s in %s (lake log %s)\n", o.lake.c_str(), created ? "created" : "found",
                store.c_str(), lakeLogNamespace(o.lake).text().c_str());
  }
  return 0;
}

struct LakeSetOptions {
  std::string config;
  std::string lake;
  std::string stsRole;
  std::string stsEndpoint;
  std::string stsRegion;
  bool noSts = false;
  std::vector<std::string> seconds;  // CLASS=SECONDS
  std::string resultsPrefix;
  std::string archivePrefix;
  bool json = false;
};

int runLakeSet(const LakeSetOptions& o) {
  if (o.noSts && !o.stsRole.empty()) {
    return reportJson(o.json, Error{Errc::usage, "--no-sts and --sts-role exclude each other"}, 0);
  }
  auto updated = updateConfig(o.config, [&](CatalogConfig& c) -> Res<void> {
    LakeEntry* lake = nullptr;
    for (auto& l : c.lakes) {
      if (l.id == o.lake) lake = &l;
    }
    if (!lake) return err(Errc::usage, "no lake " + o.lake + " in " + o.config);
    if (o.noSts) lake->sts.reset();
    if (!o.stsRole.empty()) {
      auto sts = stsOf(lake->store, o.stsRole, o.stsEndpoint, o.stsRegion);
      if (!sts) return failureOf(sts);
      lake->sts = *sts;
    } else if (!o.stsEndpoint.empty() || !o.stsRegion.empty()) {
      if (!lake->sts) return err(Errc::usage, "the lake has no STS role: give --sts-role");
      if (!o.stsEndpoint.empty()) lake->sts->endpoint = o.stsEndpoint;
      if (!o.stsRegion.empty()) lake->sts->region = o.stsRegion;
    }
    for (const auto& setting : o.seconds) {
      const auto eq = setting.find('=');
      auto cls = parseCredentialClass(setting.substr(0, eq));
      if (eq == std::string::npos || !cls) {
        return err(Errc::usage,
                   "--credential-seconds is CLASS=SECONDS, CLASS one of table-read, "
                   "table-write, result-read, archive");
      }
      std::uint64_t seconds = 0;
      try {
        std::size_t used = 0;
        seconds = std::stoull(setting.substr(eq + 1), &used);
        if (used != setting.size() - eq - 1) throw std::invalid_argument("trailing");
      } catch (const std::exception&) {
        return err(Errc::usage, "--credential-seconds " + setting + ": not a number");
      }
      if (seconds < kMinCredentialSeconds || seconds > kMaxCredentialSeconds) {
        return err(Errc::usage, "--credential-seconds: " + std::to_string(kMinCredentialSeconds) +
                                    ".." + std::to_string(kMaxCredentialSeconds));
      }
      lake->durations.set(*cls, static_cast<std::uint32_t>(seconds));
    }
    for (auto [value, field] : {std::pair{&o.resultsPrefix, &lake->resultsPrefix},
                                std::pair{&o.archivePrefix, &lake->archivePrefix}}) {
      if (value->empty()) continue;
      if (auto ok = checkLakePrefix(*value); !ok) return ok;
      *field = *value;
    }
    return {};
  });
  if (!updated) return reportJson(o.json, updated.error(), 0);
  const LakeEntry* lake = updated->lake(o.lake);
  if (o.json) {
    JsonObject seconds;
    for (auto c : kCredentialClasses) {
      seconds.add(credentialClassName(c), std::uint64_t{lake->durations.of(c)});
    }
    printJson(JsonObject{}
                  .add("ok", true)
                  .add("lake", o.lake)
                  .add("sts", static_cast<bool>(lake->sts))
                  .add("credential_seconds", std::move(seconds))
                  .add("results_prefix", lake->resultsPrefix)
                  .add("archive_prefix", lake->archivePrefix));
  } else {
    std::printf("lake %s: %s\n", o.lake.c_str(),
                lake->sts ? ("STS role " + lake->sts->roleArn).c_str() : "no STS (no credentials)");
  }
  return 0;
}

struct LakePolicyOptions {
  std::string config;
  std::string lake;
  std::string location;
  std::string cls = "table-read";
};

// The session policy a class gets for a table location, as the server would ask STS for it.
int runLakePolicy(const LakePolicyOptions& o) {
  auto config = loadConfig(o.config);
  if (!config) return report(config.error());
  const LakeEntry* entry = config->lake(o.lake);
  if (!entry) return report(Error{Errc::usage, "no lake " + o.lake + " in " + o.config});
  auto cls = parseCredentialClass(o.cls);
  if (!cls)
    return report(Error{Errc::usage, "--class: table-read, table-write, result-read or archive"});
  auto url = parseStoreUrl(entry->store);
  if (!url) return report(Error{Errc::usage, url.error()});
  // The policy needs only the lake's names, not its store: nothing is opened.
  Lake lake(o.lake, nullptr, *url, config->publisher, 0, entry);
  auto policy = lake.policy(*cls, o.location);
  if (!policy) return report(policy.error());
  std::printf("%s\n", policy->c_str());
  return 0;
}

// Opens lake `id` of the configuration file and runs `body(lake, config)` in the command's
// event loop; a configuration, lake or store that cannot be opened is reported (as JSON with
// --json). `cacheBytes` bounds the lake's metadata cache.
template <class Body>
int runOnLake(const std::string& configPath, const std::string& id, bool json,
              std::size_t cacheBytes, Body body) {
  auto config = loadConfig(configPath);
  if (!config) return reportJson(json, config.error(), 0);
  const LakeEntry* entry = config->lake(id);
  if (!entry) return reportJson(json, Error{Errc::usage, "no lake " + id + " in " + configPath}, 0);
  return runAsync([&](io::Uring& uring) -> asio::awaitable<int> {
    auto url = parseStoreUrl(entry->store);
    if (!url) co_return reportJson(json, Error{Errc::usage, url.error()}, 0);
    auto store = openStore(uring, co_await asio::this_coro::executor, *url);
    if (!store) co_return reportJson(json, Error{Errc::usage, store.error()}, 0);
    // Counted for the status lines and --metrics-file, and stopped by a signal.
    Lake lake(id, watchStore(std::move(*store)), *url, config->publisher, cacheBytes, entry);
    const CatalogConfig& c = *config;
    co_return co_await body(lake, c);
  });
}

struct LakeStatusOptions {
  std::string config;
  std::string lake;
  bool json = false;
};

// What the lake log says now: its size, the live leases, the protected snapshots and the
// catalog branches.
int runLakeStatus(const LakeStatusOptions& o) {
  return runOnLake(
      o.config, o.lake, o.json, 0, [&](Lake& lake, const CatalogConfig&) -> asio::awaitable<int> {
        OperationBudget budget;
        auto view = co_await lake.directory(budget);
        if (!view) co_return reportJson(o.json, view.error(), 0);
        const LakeDirectory& dir = (*view)->dir;
        const std::int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count();
        auto nameOf = [&](const Uuid& table) {
          auto t = dir.tableOf(table);
          return t ? displayName(*t) : table.text() + " (dropped)";
        };
        JsonArray leases;
        std::size_t live = 0;
        for (const auto& [id, lease] : dir.leases) {
          if (lease.expiresMs <= now) continue;
          ++live;
          JsonObject l;
          l.add("lease_id", id)
              .add("table", nameOf(lease.table))
              .add("table_uuid", lease.table.text());
          l.add("expires_at_ms", lease.expiresMs);
          if (lease.snapshotId) l.add("snapshot_id", *lease.snapshotId);
          if (lease.prefix) l.add("prefix", *lease.prefix);
          leases.add(std::move(l));
          if (!o.json) {
            std::printf(
                "lease %s on %s until %lld ms%s%s\n", id.c_str(), nameOf(lease.table).c_str(),
                static_cast<long long>(lease.expiresMs),
                lease.snapshotId ? (", snapshot " + std::to_string(*lease.snapshotId)).c_str() : "",
                lease.prefix ? (", prefix " + *lease.prefix).c_str() : "");
          }
        }
        JsonArray protections;
        for (const auto& [table, snapshot] : dir.protectedSnapshots) {
          const Uuid uuid = *Uuid::parse(table);
          protections.add(JsonObject{}
                              .add("table", nameOf(uuid))
                              .add("table_uuid", table)
                              .add("snapshot_id", snapshot));
          if (!o.json) {
            std::printf("protected snapshot %lld of %s\n", static_cast<long long>(snapshot),
                        nameOf(uuid).c_str());
          }
        }
        JsonArray branches;
        for (const auto& [name, b] : dir.branches) {
          const bool expired = b.expiresMs && *b.expiresMs <= now;
          std::size_t forked = 0;
          for (auto it = dir.forks.lower_bound({name, ""});
               it != dir.forks.end() && it->first.first == name; ++it) {
            ++forked;
          }
          JsonObject j;
          j.add("branch", name).add("branch_id", b.id.text());
          j.add("parent", b.parent ? *b.parent : std::string(kMainBranch));
          j.add("depth", std::uint64_t{b.depth}).add("forked_tables", std::uint64_t{forked});
          if (b.expiresMs) j.add("expires_at_ms", *b.expiresMs);
          j.add("expired", expired);
          branches.add(std::move(j));
          if (!o.json) {
            std::printf("branch %s of %s: %zu tables written on it%s\n", name.c_str(),
                        b.parent ? b.parent->c_str() : "main", forked,
                        expired ? ", expired (read-only until dropped)" : "");
          }
        }
        if (o.json) {
          printJson(JsonObject{}
                        .add("ok", true)
                        .add("lake", o.lake)
                        .add("revision", (*view)->cursor.revision())
                        .add("namespaces", std::uint64_t{dir.namespaces.size()})
                        .add("tables", std::uint64_t{dir.tables.size()})
                        .add("leases", std::move(leases))
                        .add("protected_snapshots", std::move(protections))
                        .add("branches", std::move(branches)));
        } else {
          std::printf(
              "lake %s: lake log revision %llu, %zu namespaces, %zu tables, %zu leases, %zu "
              "protected snapshots\n",
              o.lake.c_str(), static_cast<unsigned long long>((*view)->cursor.revision()),
              dir.namespaces.size(), dir.tables.size(), live, dir.protectedSnapshots.size());
        }
        co_return 0;
      });
}

struct LakeExpireOptions {
  std::string config;
  std::string lake;
  std::string table;  // NS.NAME (levels joined by '.'), or every table
  std::string metricsFile;
  bool apply = false;
  bool json = false;
};

// What `lake expire` prints of one table (text), as it goes.
void printTableExpiry(const TableExpiry& t) {
  const std::string name = t.table + (t.branch ? " on " + *t.branch : "");
  if (t.skipped) std::printf("%s: skipped: %s\n", name.c_str(), t.skipped->c_str());
  if (t.planned) {
    std::printf(
        "%s: %zu snapshots, %zu expire, %zu refs removed, %zu kept by leases or protection\n",
        name.c_str(), t.snapshots, t.expire.size(), t.removeRefs.size(), t.keptForCatalog.size());
  }
  if (t.errorCode) {
    std::fprintf(stderr, "%s: %s: %s\n", name.c_str(), t.errorCode->c_str(), t.errorReason.c_str());
  }
}

JsonObject tableExpiryJson(const TableExpiry& t) {
  JsonObject out;
  out.add("table", t.table);
  if (t.branch) out.add("branch", *t.branch);
  if (t.planned) {
    JsonArray ids, refs, kept;
    for (auto id : t.expire) ids.add(JsonObject{}.add("snapshot_id", id));
    for (const auto& name : t.removeRefs) refs.add(JsonObject{}.add("ref", name));
    for (auto id : t.keptForCatalog) kept.add(JsonObject{}.add("snapshot_id", id));
    out.add("snapshots", std::uint64_t{t.snapshots})
        .add("expire", std::move(ids))
        .add("remove_refs", std::move(refs))
        .add("kept_for_catalog", std::move(kept));
  }
  if (t.metadataLocation) out.add("metadata_location", *t.metadataLocation);
  if (t.skipped) out.add("skipped", *t.skipped);
  if (t.errorCode) out.add("error", *t.errorCode).add("reason", t.errorReason);
  return out;
}

// Retention over a lake's tables (dry-run unless --apply): catalog/maintenance/expire.hpp.
int runLakeExpire(const LakeExpireOptions& o) {
  const auto started = std::chrono::steady_clock::now();
  return runOnLake(
      o.config, o.lake, o.json, 64u << 20,
      [&](Lake& lake, const CatalogConfig& config) -> asio::awaitable<int> {
        ExpireSettings settings;
        settings.table = o.table;
        settings.apply = o.apply;
        settings.beforeTable = [](const std::string& name, std::size_t done, std::size_t total) {
          if (interruptedBy() != 0) return true;  // stops between tables
          setItems("tables", done, total);
          setPhase(name);
          return false;
        };
        if (!o.json) settings.afterTable = printTableExpiry;
        auto report = co_await expireLake(lake, config, settings);
        if (!report) co_return reportJson(o.json, report.error(), secondsSince(started));
        if (o.json) {
          JsonArray tables;
          for (const auto& t : report->tables) tables.add(tableExpiryJson(t));
          printJson(JsonObject{}
                        .add("ok", report->failed == 0)
                        .add("lake", o.lake)
                        .add("apply", o.apply)
                        .add("tables", std::move(tables))
                        .add("snapshots_expired", report->expired)
                        .add("seconds", secondsSince(started)));
        } else if (o.apply) {
          std::printf("%llu snapshots expired\n", static_cast<unsigned long long>(report->expired));
        } else {
          std::printf("dry run: nothing was changed (--apply commits the plans)\n");
        }
        co_return report->failed == 0 ? 0 : kExitFailed;
      });
}

// The longest --grace-seconds of lake gc (ten years, as vacuum's).
constexpr std::int64_t kMaxGcGraceSeconds = std::int64_t{3650} * 86400;

struct LakeGcOptions {
  std::string config;
  std::string lake;
  std::string metricsFile;
  std::int64_t graceSeconds = kGcDefaultGraceSeconds;
  bool apply = false;
  bool json = false;
};

constexpr std::size_t kGcKeysPrinted = 1000;  // candidate keys in --json and on the terminal

JsonObject gcCounts(const std::map<std::string, GcCount>& counts) {
  JsonObject o;
  for (const auto& [cls, c] : counts) {
    o.add(cls, JsonObject{}.add("files", c.files).add("bytes", c.bytes));
  }
  return o;
}

// Garbage collection over the verified reachability graph (catalog/maintenance/gc.hpp), a dry run
// unless
// --apply.
int runLakeGc(const LakeGcOptions& o) {
  const auto started = std::chrono::steady_clock::now();
  if (o.graceSeconds < 0) {
    return reportJson(o.json, Error{Errc::usage, "--grace-seconds is 0 or more"}, 0);
  }
  return runOnLake(
      o.config, o.lake, o.json, 64u << 20,
      [&](Lake& lake, const CatalogConfig&) -> asio::awaitable<int> {
        GcOptions options;
        options.graceSeconds = o.graceSeconds;
        options.apply = o.apply;
        options.nowUnixSeconds = unixSecondsNow();
        options.progress = [](const std::string& text) { setPhase(text); };
        OperationBudget budget;
        auto result = co_await collectGarbage(lake, options, budget);
        const GcReport& r = result ? *result : result.error().second;
        auto body = [&](JsonObject j) {
          JsonArray keys;
          for (std::size_t i = 0; i < r.candidateKeys.size() && i < kGcKeysPrinted; ++i) {
            keys.add(JsonObject{}.add("key", r.candidateKeys[i]));
          }
          return j.add("lake", o.lake)
              .add("apply", o.apply)
              .add("grace_seconds", o.graceSeconds)
              .add("tables", r.tables)
              .add("branch_logs", r.branchLogs)
              .add("purged_tables", r.purgedTables)
              .add("versions", r.versions)
              .add("reachable", gcCounts(r.reachable))
              .add("listed", JsonObject{}.add("files", r.listed.files).add("bytes", r.listed.bytes))
              .add("kept", gcCounts(r.kept))
              .add("candidates", gcCounts(r.candidates))
              .add("candidate_keys", std::move(keys))
              .add("candidate_keys_truncated", r.candidateKeys.size() > kGcKeysPrinted)
              .add("deleted",
                   JsonObject{}.add("files", r.deleted.files).add("bytes", r.deleted.bytes))
              .add("rewalked", r.rewalked)
              .add("seconds", secondsSince(started));
        };
        if (!result) {
          const Error& e = result.error().first;
          if (o.json) {
            printJson(body(JsonObject{}
                               .add("ok", false)
                               .add("error", errcName(e.code))
                               .add("key", e.key)
                               .add("reason", e.message)));
          }
          if (r.deleted.files > 0) {
            std::fprintf(stderr, "cairn: %llu files were deleted before the failure\n",
                         static_cast<unsigned long long>(r.deleted.files));
          }
          co_return report(e);
        }
        if (o.json) {
          printJson(body(JsonObject{}.add("ok", true)));
          co_return 0;
        }
        std::uint64_t files = 0, bytes = 0;
        for (const auto& [_, c] : r.candidates) {
          files += c.files;
          bytes += c.bytes;
        }
        std::printf("%llu tables, %llu retained versions walked, %llu files reachable\n",
                    static_cast<unsigned long long>(r.tables),
                    static_cast<unsigned long long>(r.versions), [&] {
                      unsigned long long n = 0;
                      for (const auto& [_, c] : r.reachable) n += c.files;
                      return n;
                    }());
        for (const auto& [cls, c] : r.kept) {
          std::printf("kept %s: %llu files, %llu bytes\n", cls.c_str(),
                      static_cast<unsigned long long>(c.files),
                      static_cast<unsigned long long>(c.bytes));
        }
        for (std::size_t i = 0; i < r.candidateKeys.size() && i < kGcKeysPrinted; ++i) {
          std::printf("%s %s\n", o.apply ? "deleted" : "unreachable", r.candidateKeys[i].c_str());
        }
        if (o.apply) {
          std::printf("%llu files deleted (%llu bytes); the walk after the deletes holds\n",
                      static_cast<unsigned long long>(r.deleted.files),
                      static_cast<unsigned long long>(r.deleted.bytes));
        } else {
          std::printf("dry run: %llu files (%llu bytes) unreachable; --apply deletes them\n",
                      static_cast<unsigned long long>(files),
                      static_cast<unsigned long long>(bytes));
        }
        co_return 0;
      });
}

}  // namespace

void addLakeCommands(CLI::App& app, int& exitCode) {
  auto* lake = app.add_subcommand("lake", "the catalog's lakes");
  lake->require_subcommand(1);
  auto lakeCreate = std::make_shared<LakeCreateOptions>();
  auto* create = lake->add_subcommand(
      "create", "add a lake to the configuration file and create its log in the store");
  create->add_option("--config", lakeCreate->config, "the configuration file (made if absent)")
      ->required();
  create->add_option("--store", lakeCreate->store, "the store URL: its root is the lake's root")
      ->required();
  create->add_option("--lake", lakeCreate->lake, "the lake id (a-z, 0-9, '-', '_')")->required();
  create->add_option("--sts-role", lakeCreate->stsRole,
                     "vend credentials: the role ARN STS AssumeRole takes (S3 stores)");
  create->add_option("--sts-endpoint", lakeCreate->stsEndpoint,
                     "the STS endpoint (default: the store's endpoint, as RGW serves it)");
  create->add_option("--sts-region", lakeCreate->stsRegion, "STS's region (default: the store's)");
  create->add_flag("--json", lakeCreate->json, "one JSON object on standard output");
  addTimeoutOption(create, kDefaultCommandTimeout);
  create->callback([lakeCreate, &exitCode] { exitCode = runLakeCreate(*lakeCreate); });

  auto lakeSet = std::make_shared<LakeSetOptions>();
  auto* set = lake->add_subcommand("set", "change a lake's credential settings");
  set->add_option("--config", lakeSet->config, "the configuration file")->required();
  set->add_option("--lake", lakeSet->lake, "the lake")->required();
  set->add_option("--sts-role", lakeSet->stsRole, "vend credentials with this role ARN");
  set->add_option("--sts-endpoint", lakeSet->stsEndpoint, "the STS endpoint");
  set->add_option("--sts-region", lakeSet->stsRegion, "STS's region");
  set->add_flag("--no-sts", lakeSet->noSts, "vend no credentials");
  set->add_option("--credential-seconds", lakeSet->seconds,
                  "CLASS=SECONDS: how long a class's credentials last (repeatable)");
  set->add_option("--results-prefix", lakeSet->resultsPrefix,
                  "the results prefix result-read reaches (default results)");
  set->add_option("--archive-prefix", lakeSet->archivePrefix,
                  "the archive prefix archive writes (default archive)");
  set->add_flag("--json", lakeSet->json, "one JSON object on standard output");
  set->callback([lakeSet, &exitCode] { exitCode = runLakeSet(*lakeSet); });

  auto lakeStatus = std::make_shared<LakeStatusOptions>();
  auto* status = lake->add_subcommand(
      "status", "what the lake log says now: its size, live leases, protected snapshots");
  status->add_option("--config", lakeStatus->config, "the configuration file")->required();
  status->add_option("--lake", lakeStatus->lake, "the lake")->required();
  status->add_flag("--json", lakeStatus->json, "one JSON object on standard output");
  addTimeoutOption(status, kDefaultCommandTimeout);
  status->callback([lakeStatus, &exitCode] { exitCode = runLakeStatus(*lakeStatus); });

  auto lakeExpire = std::make_shared<LakeExpireOptions>();
  auto* expire = lake->add_subcommand(
      "expire", "expire snapshots by each table's retention (a dry run unless --apply)");
  expire->add_option("--config", lakeExpire->config, "the configuration file")->required();
  expire->add_option("--lake", lakeExpire->lake, "the lake")->required();
  expire->add_option("--table", lakeExpire->table, "one table, NS.NAME (default: every table)");
  expire->add_flag("--apply", lakeExpire->apply, "commit the removals");
  expire->add_flag("--json", lakeExpire->json, "one JSON object on standard output");
  addProgressOptions(expire, &lakeExpire->json);
  addCommandMetricsFile(expire, lakeExpire->metricsFile);
  expire->callback([lakeExpire, &exitCode] { exitCode = runLakeExpire(*lakeExpire); });

  auto lakeGc = std::make_shared<LakeGcOptions>();
  auto* gc = lake->add_subcommand(
      "gc", "delete the table files no retained graph reaches (a dry run unless --apply)");
  gc->add_option("--config", lakeGc->config, "the configuration file")->required();
  gc->add_option("--lake", lakeGc->lake, "the lake")->required();
  gc->add_option("--grace-seconds", lakeGc->graceSeconds,
                 "keep files younger than this (default 259200, 3 days)")
      ->check(CLI::Range(std::int64_t{0}, kMaxGcGraceSeconds));
  gc->add_flag("--apply", lakeGc->apply, "delete them, then walk again");
  gc->add_flag("--json", lakeGc->json, "one JSON object on standard output");
  addProgressOptions(gc, &lakeGc->json);
  addCommandMetricsFile(gc, lakeGc->metricsFile);
  gc->callback([lakeGc, &exitCode] { exitCode = runLakeGc(*lakeGc); });

  auto lakePolicy = std::make_shared<LakePolicyOptions>();
  auto* policy = lake->add_subcommand(
      "policy", "print the session policy a credential class gets for a table location");
  policy->add_option("--config", lakePolicy->config, "the configuration file")->required();
  policy->add_option("--lake", lakePolicy->lake, "the lake")->required();
  policy->add_option("--table-location", lakePolicy->location, "the table's location")->required();
  policy->add_option("--class", lakePolicy->cls,
                     "table-read (default), table-write, result-read or archive");
  policy->callback([lakePolicy, &exitCode] { exitCode = runLakePolicy(*lakePolicy); });
}

}  // namespace cairn::cli
