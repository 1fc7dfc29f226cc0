// One lake as `cairn serve` holds it: its store (whose root is the lake's root), its lake log
// and its tables' logs, and what this process verified of them, cached by head. Every answer
// is read from the store first: a cached state is only ever extended from the head a request
// read (docs/design.md §9: a load costs the lake's and the table's head GETs in steady state).
//
// Not thread-safe: a Lake lives on the executor that serves its requests. Concurrent requests
// interleave at their awaits; each works on immutable snapshots (shared_ptr<const ...>), and a
// newer snapshot replaces an older one in the caches.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "catalog/access/config.hpp"
#include "catalog/access/credentials.hpp"
#include "catalog/iceberg/table_metadata.hpp"
#include "catalog/lake/directory.hpp"
#include "engine/runtime/budget.hpp"
#include "engine/store/object_store.hpp"
#include "engine/store/store_url.hpp"
#include "engine/storelog/log.hpp"

namespace cairn::catalog {

struct LakeView {
  LakeDirectory dir;
  LogCursor cursor;
};

struct LoadedMetadata {
  std::string location;  // where it was read from
  Digest sha256{};
  TableMetadata metadata;
  std::string json;  // serializeTableMetadata(metadata): what a load returns
};

struct TableView {
  Uuid uuid;
  LogCursor cursor;
  TableHistory history;
  std::shared_ptr<const LoadedMetadata> metadata;  // the current commit's file
};

// Credentials for one storage prefix, as a LoadTableResult's `storage-credentials` holds them.
struct StorageCredential {
  std::string prefix;
  std::vector<std::pair<std::string, std::string>> config;
};

// Why no credentials were vended.
struct VendRefusal {
  enum class Kind : std::uint8_t {
    unavailable,  // the lake vends none (no STS configured, or a directory store)
    refused,      // this request's policy cannot be made (a location a policy cannot hold)
    sts,          // STS did not give them (it refused, or did not answer)
  };
  Kind kind = Kind::unavailable;
  std::string reason;
};

// Why a lake cannot serve (readiness), or nothing.
struct Readiness {
  bool ready = false;
  std::string reason;  // when not ready
};

class Lake {
 public:
  // `store` is the lake's root; `url` is what it was opened from (for locations).
  // `access`: the lake's STS settings, credential durations and prefixes (none: no vending).
  Lake(std::string id, std::unique_ptr<ObjectStore> store, const StoreUrl& url, Uuid publisher,
       std::uint64_t cacheBytes, const LakeEntry* access = nullptr);
  ~Lake();

  const std::string& id() const { return id_; }
  ObjectStore& store() { return *store_; }
  const LogIdentity& logIdentity() const { return lakeLog_; }
  Res<LogIdentity> tableLogIdentity(const Uuid& table) const;

  // The lake's root as Iceberg locations spell it: "s3://BUCKET/ROOT" or "file:///DIR".
  const std::string& rootLocation() const { return root_; }
  const StoreUrl& storeUrl() const { return url_; }
  // The default location of a new table: ROOT/tables/UUID.
  std::string defaultTableLocation(const Uuid& table) const;
  // The object key of a location under the root (s3a:// and s3n:// read as s3://), or
  // std::nullopt when it is outside the root or not a key the stores accept.
  std::optional<std::string> keyOf(std::string_view location) const;

  // The store's conditional writes probed (once it succeeds), then the lake log read.
  boost::asio::awaitable<Res<void>> checkReady(OperationBudget& budget);
  const Readiness& readiness() const { return readiness_; }

  // The lake's directory as its log says now (one head GET when nothing changed).
  boost::asio::awaitable<Res<std::shared_ptr<const LakeView>>> directory(OperationBudget& budget);
  // Appends `record` on `view` (one attempt); a committed append becomes the cached view.
  boost::asio::awaitable<Res<Appended>> appendLake(const LakeView& view, const LakeRecord& record,
                                                   OperationBudget& budget);

  // A table's state as its log says now, with its current metadata read and verified.
  // Errc::missing when the table log does not exist. `base`: where the lake log says the log
  // starts (a branch-local log: its fork's from-metadata-location; a table's own log: none,
  // nullptr); a log that starts elsewhere is Errc::corrupt. (A pointer, so that no caller makes
  // a temporary std::optional in a co_await operand:
  // docs/decisions/0041-catalog-logs-chained-manifests-one.md.)
  boost::asio::awaitable<Res<std::shared_ptr<const TableView>>> table(
      const Uuid& uuid, OperationBudget& budget, const std::string* base = nullptr);
  // The metadata file a commit names: read bounded by its length, its SHA-256 checked, parsed
  // (cached by SHA-256).
  boost::asio::awaitable<Res<std::shared_ptr<const LoadedMetadata>>> metadata(
      const TableCommit& commit, OperationBudget& budget);
  // Appends `commit` to the table log after `at` (none: the log's first record), writing
  // `metadataBytes` at the key of commit.metadataLocation first; a committed append becomes
  // the cached view.
  // (`at` is a pointer, never a temporary: GCC 12 destroys a temporary made in a co_await
  // operand twice, docs/decisions/0037-fan-out-through-taskgroup.md.)
  boost::asio::awaitable<Res<Appended>> appendTable(const Uuid& uuid, const TableView* at,
                                                    const TableCommit& commit,
                                                    std::string metadataBytes,
                                                    std::shared_ptr<const LoadedMetadata> loaded,
                                                    OperationBudget& budget);

  // Waits for this process's turn to change the log named `log` (first come, first served) and
  // holds it until the returned object is gone. Changes of one log racing each other at the
  // store would all but one lose, read the head again and write again: under contention the
  // store's work per accepted change grew with the number of racers (docs/catalog.md,
  // "Commits"). Other processes still race, and the conditional PUT still decides.
  boost::asio::awaitable<std::shared_ptr<void>> turn(const std::string& log);

  // Reads an object under the root, bounded (for register: a metadata file written by others).
  boost::asio::awaitable<StoreResult<StoredObject>> readObject(const std::string& key,
                                                               std::uint64_t maxBytes);

  std::uint64_t cachedBytes() const { return cacheUsed_; }
  std::uint64_t cacheCapacity() const { return cacheBytes_; }
  // Table views looked up in the cache: found (extended from there) or not (read whole).
  std::uint64_t cacheHits() const { return cacheHits_; }
  std::uint64_t cacheMisses() const { return cacheMisses_; }
  std::uint64_t cachedTables() const { return tables_.size(); }

  // Credentials of class `c` for the table at `tableLocation` (its location as Iceberg spells
  // it), from STS with the class's session policy (catalog/access/credentials.hpp); a set still
  // valid for more than half its life is handed out again. `refreshPath` is the credentials route
  // of the table, relative to the catalog's URI.
  boost::asio::awaitable<Result<std::vector<StorageCredential>, VendRefusal>> vend(
      CredentialClass c, std::string tableLocation, std::string refreshPath);
  // The session policy vend() would ask for (for `cairn lake policy` and the docs).
  Res<std::string> policy(CredentialClass c, const std::string& tableLocation) const;
  // Whether a location may be a table's: under the root, not the root itself.
  bool tableLocationAllowed(std::string_view location) const;

 private:
  boost::asio::awaitable<Res<std::shared_ptr<const TableView>>> readTable(const Uuid& uuid,
                                                                          OperationBudget& budget);
  Res<PolicyScope> scopeOf(const std::string& tableLocation) const;
  void remember(const Uuid& uuid, std::shared_ptr<const TableView> view);
  std::shared_ptr<const TableView> cached(const Uuid& uuid);

  std::string id_;
  std::unique_ptr<ObjectStore> store_;
  std::string root_;
  std::vector<std::string> rootAliases_;  // s3a://, s3n:// spellings of root_
  Uuid publisher_;
  LogIdentity lakeLog_;
  bool probed_ = false;
  Readiness readiness_{false, "not checked yet"};
  std::shared_ptr<const LakeView> lake_;

  // Table views, least recently used first, bounded by cacheBytes_ (estimated sizes).
  struct Entry {
    std::shared_ptr<const TableView> view;
    std::uint64_t bytes = 0;
    std::list<std::string>::iterator position;
  };
  // Vending.
  StoreUrl url_;
  std::optional<LakeEntry> access_;
  struct Vending;
  std::unique_ptr<Vending> vending_;

  std::uint64_t cacheBytes_;
  std::uint64_t cacheUsed_ = 0;
  std::uint64_t cacheHits_ = 0;
  std::uint64_t cacheMisses_ = 0;
  std::list<std::string> lru_;           // table UUIDs (text), least recently used first
  std::map<std::string, Entry> tables_;  // by table UUID (text)
  // Turns (turn()), by log; idle ones are dropped once there are more than kIdleTurns.
  std::map<std::string, std::shared_ptr<InFlightLimit>> turns_;
};

}  // namespace cairn::catalog
