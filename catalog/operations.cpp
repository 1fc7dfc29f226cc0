#include "catalog/operations.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>

namespace cairn::catalog {

namespace asio = boost::asio;

namespace {

constexpr std::string_view kBadRequest = "BadRequestException";
constexpr std::string_view kNoSuchNamespace = "NoSuchNamespaceException";
constexpr std::string_view kNoSuchTable = "NoSuchTableException";
constexpr std::string_view kAlreadyExists = "AlreadyExistsException";
constexpr std::string_view kNotEmpty = "NamespaceNotEmptyException";
constexpr std::string_view kCommitFailed = "CommitFailedException";
constexpr std::string_view kCommitUnknown = "CommitStateUnknownException";
constexpr std::string_view kUnavailable = "ServiceUnavailableException";

Failure<CatalogError> unknownOutcome(const std::string& what, const std::string& detail) {
  return refuse(504, std::string(kCommitUnknown), "commit-state-unknown",
                what + ": the outcome is unknown (" + detail +
                    "); keep what you prepared and retry with the same Idempotency-Key, or "
                    "load the table to see whether it landed");
}

Failure<CatalogError> contention(const std::string& what, std::uint64_t rebases) {
  return refuse(503, std::string(kUnavailable), "too-much-contention",
                what + ": the head moved on " + std::to_string(rebases + 1) +
                    " times while this request was applied; nothing of it was published, "
                    "retry later");
}

Failure<CatalogError> trouble(const Error& e) { return Failure<CatalogError>{storeTrouble(e)}; }

// A read that failed in a rebase loop: before anything was sent, the store's trouble (503);
// after a lost race, unknown (504): the request may have landed through a replay of it that
// another handler served (docs/model/catalog.pml, `reread`).
Failure<CatalogError> rereadFailed(const std::string& what, std::uint64_t attempt, const Error& e) {
  if (attempt == 0) return trouble(e);
  return unknownOutcome(what, "the head could not be read again after a lost race: " + e.message);
}

// A directory check's failure as Iceberg's answer.
Failure<CatalogError> answerFor(const Error& e) {
  if (e.code == Errc::missing) {
    if (e.key == kMissingNamespace) {
      return refuse(404, std::string(kNoSuchNamespace), "no-such-namespace", e.message);
    }
    return refuse(404, std::string(kNoSuchTable), "no-such-table", e.message);
  }
  if (e.code == Errc::conflict) {
    if (e.key == kOverlappingLocation) {
      return refuse(409, std::string(kAlreadyExists), "location-overlaps", e.message);
    }
    if (e.message.starts_with("Namespace is not empty")) {
      return refuse(409, std::string(kNotEmpty), "namespace-not-empty", e.message);
    }
    return refuse(409, std::string(kAlreadyExists), "already-exists", e.message);
  }
  return refuse(400, std::string(kBadRequest), "invalid-request", e.message);
}

using Build = std::function<Outcome<LakeChange>(const LakeDirectory&)>;

// A change of the lake log, rebased on each lost race (the change built again on the state
// read). Returns the record that holds it: the new one, or the first one a repeated
// Idempotency-Key made.
asio::awaitable<Outcome<LakeRecord>> changeLake(Request& r, const std::string& what,
                                                const Build& build) {
  for (std::uint64_t attempt = 0;; ++attempt) {
    auto view = co_await r.lake.directory(r.budget);
    if (!view) co_return rereadFailed(what, attempt, view.error());
    if (r.idempotencyKey) {
      if (const LakeRecord* first = (*view)->dir.recordFor(*r.idempotencyKey)) co_return *first;
    }
    auto change = build((*view)->dir);
    if (!change) co_return failureOf(change);
    const LakeRecord record{std::move(*change), r.nowMs, r.idempotencyKey};
    auto appended = co_await r.lake.appendLake(**view, record, r.budget);
    if (!appended) co_return trouble(appended.error());
    switch (appended->outcome) {
      case Appended::Outcome::committed:
        co_return record;
      case Appended::Outcome::unknown:
        co_return unknownOutcome(what, appended->detail);
      case Appended::Outcome::lost:
        break;
    }
    if (attempt >= r.maxRebases) co_return contention(what, attempt);
  }
}

template <class Change>
Outcome<Change> replayed(const LakeRecord& record) {
  if (const auto* c = std::get_if<Change>(&record.change)) return *c;
  return refuse(422, "UnprocessableEntityException", "idempotency-key-reused",
                "this Idempotency-Key was used by another kind of request");
}

Outcome<void> needNamespace(const LakeDirectory& dir, const Namespace& ns) {
  if (!dir.namespaces.count(ns)) {
    return refuse(404, std::string(kNoSuchNamespace), "no-such-namespace",
                  "Namespace does not exist: " + displayName(ns));
  }
  return {};
}

// Where a table's metadata files go, under the lake's root (else 400).
Outcome<void> needLocationInLake(const Lake& lake, const std::string& location) {
  if (!lake.tableLocationAllowed(location)) {
    return refuse(400, std::string(kBadRequest), "location-outside-lake",
                  "the table location " + location + " is not below the lake's root " +
                      lake.rootLocation() +
                      " (the root itself is the catalog's, and a location holds only the "
                      "characters an object key can)");
  }
  return {};
}

std::shared_ptr<const LoadedMetadata> loaded(std::string location, const TableMetadata& m,
                                             std::string json) {
  auto out = std::make_shared<LoadedMetadata>();
  out->location = std::move(location);
  out->sha256 = sha256(asBytes(json));
  out->metadata = m;
  out->json = std::move(json);
  return out;
}

// The table named by a record a repeated Idempotency-Key found: its first version.
asio::awaitable<Outcome<LoadedTable>> replayCreate(Request& r, const LakeRecord& record) {
  const auto* reg = std::get_if<TableRegistered>(&record.change);
  if (!reg) {
    co_return refuse(422, "UnprocessableEntityException", "idempotency-key-reused",
                     "this Idempotency-Key was used by another kind of request");
  }
  auto view = co_await r.lake.table(reg->uuid, r.budget);
  if (!view) co_return trouble(view.error());
  auto first = co_await r.lake.metadata(*(*view)->history.first, r.budget);
  if (!first) co_return trouble(first.error());
  co_return LoadedTable{reg->table, reg->uuid, std::move(*first), false};
}

// A new table: its log's first record (its metadata file written first), then its name in the
// lake log. A name taken meanwhile leaves the new log unregistered (and unreachable).
asio::awaitable<Outcome<LoadedTable>> publishNewTable(Request& r, const TableIdent& t,
                                                      const Uuid& uuid, const TableMetadata& m) {
  const std::string what = "create table " + displayName(t);
  const std::string file = m.location + "/metadata/" + metadataFileName(1, Uuid::random());
  std::string json = serializeTableMetadata(m);
  auto meta = loaded(file, m, json);
  const TableCommit commit{file,         meta->sha256, json.size(),
                           std::nullopt, r.nowMs,      r.idempotencyKey};
  auto appended =
      co_await r.lake.appendTable(uuid, nullptr, commit, std::move(json), meta, r.budget);
  if (!appended) co_return trouble(appended.error());
  if (appended->outcome == Appended::Outcome::unknown) {
    co_return unknownOutcome(what, appended->detail);
  }
  if (appended->outcome == Appended::Outcome::lost) {
    co_return refuse(409, std::string(kAlreadyExists), "table-log-exists",
                     what + ": a table log with UUID " + uuid.text() + " exists already");
  }
  const Build build = [&](const LakeDirectory& dir) -> Outcome<LakeChange> {
    if (auto ok = needNamespace(dir, t.ns); !ok) return failureOf(ok);
    const LakeChange change = TableRegistered{t, uuid, m.location};
    if (auto ok = dir.check(change); !ok) return answerFor(ok.error());
    return change;
  };
  auto record = co_await changeLake(r, what, build);
  if (!record) co_return failureOf(record);
  const auto* reg = std::get_if<TableRegistered>(&record->change);
  if (!reg || reg->uuid != uuid) co_return co_await replayCreate(r, *record);
  co_return LoadedTable{t, uuid, std::move(meta), false};
}

// The name, namespace and a repeated key of a request that creates a table.
asio::awaitable<Outcome<std::optional<LoadedTable>>> beforeCreate(Request& r, const TableIdent& t,
                                                                  bool assertCreate) {
  auto view = co_await r.lake.directory(r.budget);
  if (!view) co_return trouble(view.error());
  const LakeDirectory& dir = (*view)->dir;
  if (r.idempotencyKey) {
    if (const LakeRecord* first = dir.recordFor(*r.idempotencyKey)) {
      auto replay = co_await replayCreate(r, *first);
      if (!replay) co_return failureOf(replay);
      co_return std::optional<LoadedTable>(std::move(*replay));
    }
  }
  if (auto ok = needNamespace(dir, t.ns); !ok) co_return failureOf(ok);
  if (dir.tables.count(t)) {
    if (assertCreate) {
      co_return refuse(409, std::string(kCommitFailed), "requirement-failed",
                       "Requirement failed: table already exists: " + displayName(t));
    }
    co_return refuse(409, std::string(kAlreadyExists), "already-exists",
                     "Table already exists: " + displayName(t));
  }
  co_return std::optional<LoadedTable>{};
}

// A commit whose requirements are only assert-create: the table built from empty by the updates.
asio::awaitable<Outcome<LoadedTable>> createByCommit(Request& r, const TableIdent& t,
                                                     const CommitTableRequest& commit) {
  auto before = co_await beforeCreate(r, t, true);
  if (!before) co_return failureOf(before);
  if (*before) co_return std::move(**before);
  auto built = createFromUpdates(commit.updates, r.nowMs);
  if (!built)
    co_return refuse(400, std::string(kBadRequest), "invalid-update", built.error().message);
  TableMetadata m = std::move(*built);
  Uuid uuid = Uuid::random();
  if (m.tableUuid) {
    auto given = Uuid::parse(*m.tableUuid);
    if (!given || given->isNil()) {
      co_return refuse(400, std::string(kBadRequest), "invalid-update",
                       "assign-uuid: " + *m.tableUuid + " is not a canonical UUID");
    }
    uuid = *given;
  }
  m.tableUuid = uuid.text();
  if (m.location.empty()) m.location = r.lake.defaultTableLocation(uuid);
  if (auto ok = needLocationInLake(r.lake, m.location); !ok) co_return failureOf(ok);
  if (auto again = parseTableMetadata(serializeTableMetadata(m)); !again) {
    co_return refuse(400, std::string(kBadRequest), "invalid-update",
                     "the table the updates build is not valid: " + again.error().message);
  }
  co_return co_await publishNewTable(r, t, uuid, m);
}

}  // namespace

CatalogError storeTrouble(const Error& e) {
  switch (e.code) {
    case Errc::store:
    case Errc::uncertain:
    case Errc::undetermined:
    case Errc::io:
      return {503, std::string(kUnavailable), "store-unavailable",
              "the lake's store could not be read or written: " + e.message};
    case Errc::budget:
      return {503, std::string(kUnavailable), "request-budget",
              "the request's work exceeds its budget: " + e.message};
    case Errc::missing:
      if (e.key == kMissingTable) {
        return {503, std::string(kUnavailable), "log-unverifiable",
                "a registered table's log is missing: " + e.message};
      }
      [[fallthrough]];
    default:
      return {503, std::string(kUnavailable), "log-unverifiable",
              "the lake's logs do not verify, so nothing is served from them: " + e.message};
  }
}

std::string metadataFileName(std::uint64_t version, const Uuid& unique) {
  char number[24];
  std::snprintf(number, sizeof number, "%05llu", static_cast<unsigned long long>(version));
  return std::string(number) + "-" + unique.text() + ".metadata.json";
}

asio::awaitable<Outcome<std::shared_ptr<const LakeView>>> readLake(Request& r) {
  auto view = co_await r.lake.directory(r.budget);
  if (!view) co_return trouble(view.error());
  co_return std::move(*view);
}

asio::awaitable<Outcome<NamespaceCreated>> createNamespace(Request& r, Namespace ns,
                                                           Properties properties) {
  const std::string what = "create namespace " + displayName(ns);
  const Build build = [&](const LakeDirectory& dir) -> Outcome<LakeChange> {
    const LakeChange change = NamespaceCreated{ns, properties};
    if (auto ok = dir.check(change); !ok) return answerFor(ok.error());
    return change;
  };
  auto record = co_await changeLake(r, what, build);
  if (!record) co_return failureOf(record);
  co_return replayed<NamespaceCreated>(*record);
}

asio::awaitable<Outcome<NamespaceUpdated>> updateNamespace(Request& r, Namespace ns,
                                                           std::vector<std::string> removals,
                                                           Properties updates) {
  std::sort(removals.begin(), removals.end());
  removals.erase(std::unique(removals.begin(), removals.end()), removals.end());
  const std::string what = "update namespace " + displayName(ns);
  const Build build = [&](const LakeDirectory& dir) -> Outcome<LakeChange> {
    if (auto ok = needNamespace(dir, ns); !ok) return failureOf(ok);
    const Properties& now = dir.namespaces.at(ns);
    NamespaceUpdated change{ns, updates, {}, {}};
    for (const auto& k : removals) (now.count(k) ? change.removals : change.missing).push_back(k);
    if (change.updates.empty() && change.removals.empty()) {
      // Nothing to change: answered without a record (only keys that are missing).
      return refuse(200, "", "unchanged", "");
    }
    if (auto ok = dir.check(change); !ok) return answerFor(ok.error());
    return LakeChange{std::move(change)};
  };
  auto record = co_await changeLake(r, what, build);
  if (!record) {
    if (record.error().status == 200) {
      co_return NamespaceUpdated{ns, {}, {}, removals};
    }
    co_return failureOf(record);
  }
  co_return replayed<NamespaceUpdated>(*record);
}

asio::awaitable<Outcome<void>> dropNamespace(Request& r, Namespace ns) {
  const std::string what = "drop namespace " + displayName(ns);
  const Build build = [&](const LakeDirectory& dir) -> Outcome<LakeChange> {
    if (auto ok = needNamespace(dir, ns); !ok) return failureOf(ok);
    const LakeChange change = NamespaceDropped{ns};
    if (auto ok = dir.check(change); !ok) return answerFor(ok.error());
    return change;
  };
  auto record = co_await changeLake(r, what, build);
  if (!record) co_return failureOf(record);
  if (auto ok = replayed<NamespaceDropped>(*record); !ok) co_return failureOf(ok);
  co_return Outcome<void>{};
}

asio::awaitable<Outcome<LoadedTable>> loadTable(Request& r, const TableIdent& t) {
  auto view = co_await r.lake.directory(r.budget);
  if (!view) co_return trouble(view.error());
  auto entry = (*view)->dir.tables.find(t);
  if (entry == (*view)->dir.tables.end()) {
    co_return refuse(404, std::string(kNoSuchTable), "no-such-table",
                     "Table does not exist: " + displayName(t));
  }
  auto table = co_await r.lake.table(entry->second.uuid, r.budget);
  if (!table) co_return trouble(table.error());
  co_return LoadedTable{t, entry->second.uuid, (*table)->metadata, false};
}

asio::awaitable<Outcome<LoadedTable>> createTable(Request& r, const Namespace& ns,
                                                  const CreateTableRequest& create) {
  const TableIdent t{ns, create.name};
  if (auto ok = checkName(create.name, "table name"); !ok) {
    co_return refuse(400, std::string(kBadRequest), "invalid-name", ok.error().message);
  }
  auto before = co_await beforeCreate(r, t, false);
  if (!before) co_return failureOf(before);
  if (*before) co_return std::move(**before);
  const Uuid uuid = Uuid::random();
  std::string location = create.location.value_or(r.lake.defaultTableLocation(uuid));
  while (location.size() > 1 && location.back() == '/') location.pop_back();
  if (auto ok = needLocationInLake(r.lake, location); !ok) co_return failureOf(ok);
  auto m = newTableMetadata(create, location, uuid.text(), r.nowMs);
  if (!m) co_return refuse(400, std::string(kBadRequest), "invalid-request", m.error().message);
  if (create.stageCreate) {
    co_return LoadedTable{t, uuid, loaded("", *m, serializeTableMetadata(*m)), true};
  }
  co_return co_await publishNewTable(r, t, uuid, *m);
}

asio::awaitable<Outcome<LoadedTable>> registerTable(Request& r, const TableIdent& t,
                                                    const std::string& metadataLocation) {
  if (auto ok = checkName(t.name, "table name"); !ok) {
    co_return refuse(400, std::string(kBadRequest), "invalid-name", ok.error().message);
  }
  auto before = co_await beforeCreate(r, t, false);
  if (!before) co_return failureOf(before);
  if (*before) co_return std::move(**before);
  auto key = r.lake.keyOf(metadataLocation);
  if (!key) {
    co_return refuse(400, std::string(kBadRequest), "location-outside-lake",
                     "the metadata location " + metadataLocation +
                         " is not under the lake's root " + r.lake.rootLocation());
  }
  if (auto ok = r.budget.reserve(kMaxTableMetadataBytes, 0, 1, *key); !ok) {
    co_return trouble(ok.error());
  }
  auto got = co_await r.lake.readObject(*key, kMaxTableMetadataBytes);
  if (!got) {
    if (got.error().status == StoreStatus::missing) {
      co_return refuse(400, std::string(kBadRequest), "no-such-metadata-file",
                       "no metadata file at " + metadataLocation);
    }
    co_return trouble(Error{Errc::store, *key + ": " + got.error().message, *key});
  }
  auto parsed = parseTableMetadata(asChars(got->bytes));
  if (!parsed) {
    co_return refuse(400, std::string(kBadRequest), "invalid-metadata",
                     metadataLocation + ": " + parsed.error().message);
  }
  std::optional<Uuid> uuid = parsed->tableUuid ? Uuid::parse(*parsed->tableUuid) : std::nullopt;
  if (!uuid || uuid->isNil()) {
    co_return refuse(400, std::string(kBadRequest), "invalid-metadata",
                     metadataLocation + ": a canonical table-uuid is needed to register it");
  }
  if (auto ok = needLocationInLake(r.lake, parsed->location); !ok) co_return failureOf(ok);
  const std::string what = "register table " + displayName(t);
  const Digest sha = sha256(got->bytes);
  auto meta = std::make_shared<LoadedMetadata>();
  meta->location = metadataLocation;
  meta->sha256 = sha;
  meta->json = serializeTableMetadata(*parsed);
  meta->metadata = std::move(*parsed);
  // The table's log: its first record; or, when a log of this UUID exists (a table dropped from
  // the lake keeps its log), one more commit naming this file (none when it is the current one).
  auto lakeNow = co_await r.lake.directory(r.budget);
  if (!lakeNow) co_return trouble(lakeNow.error());
  if (auto other = (*lakeNow)->dir.tableOf(*uuid)) {
    co_return refuse(409, std::string(kAlreadyExists), "already-exists",
                     what + ": table " + uuid->text() + " is registered as " + displayName(*other));
  }
  for (std::uint64_t attempt = 0;; ++attempt) {
    auto existing = co_await r.lake.table(*uuid, r.budget);
    const TableView* at = nullptr;
    if (existing) {
      at = existing->get();
      if (at->history.current->metadataLocation == metadataLocation) break;
    } else if (existing.error().code != Errc::missing || existing.error().key != kMissingTable) {
      co_return rereadFailed(what, attempt, existing.error());
    }
    const TableCommit commit{
        metadataLocation,
        sha,
        got->bytes.size(),
        at ? std::optional<std::string>(at->history.current->metadataLocation) : std::nullopt,
        r.nowMs,
        r.idempotencyKey};
    std::string bytes(asChars(got->bytes));
    auto appended =
        co_await r.lake.appendTable(*uuid, at, commit, std::move(bytes), meta, r.budget);
    if (!appended) co_return trouble(appended.error());
    if (appended->outcome == Appended::Outcome::committed) break;
    if (appended->outcome == Appended::Outcome::unknown) {
      co_return unknownOutcome(what, appended->detail);
    }
    if (attempt >= r.maxRebases) co_return contention(what, attempt);
  }
  const Build build = [&](const LakeDirectory& dir) -> Outcome<LakeChange> {
    if (auto ok = needNamespace(dir, t.ns); !ok) return failureOf(ok);
    const LakeChange change = TableRegistered{t, *uuid, meta->metadata.location};
    if (auto ok = dir.check(change); !ok) return answerFor(ok.error());
    return change;
  };
  auto record = co_await changeLake(r, what, build);
  if (!record) co_return failureOf(record);
  co_return LoadedTable{t, *uuid, std::move(meta), false};
}

asio::awaitable<Outcome<LoadedTable>> commitTable(Request& r, const TableIdent& t,
                                                  const CommitTableRequest& commit) {
  auto create = isCreateTransaction(commit.requirements);
  if (!create)
    co_return refuse(400, std::string(kBadRequest), "invalid-request", create.error().message);
  if (*create) co_return co_await createByCommit(r, t, commit);
  const std::string what = "commit to " + displayName(t);
  for (std::uint64_t attempt = 0;; ++attempt) {
    auto view = co_await r.lake.directory(r.budget);
    if (!view) co_return rereadFailed(what, attempt, view.error());
    auto entry = (*view)->dir.tables.find(t);
    if (entry == (*view)->dir.tables.end()) {
      co_return refuse(404, std::string(kNoSuchTable), "no-such-table",
                       "Table does not exist: " + displayName(t));
    }
    const Uuid uuid = entry->second.uuid;
    auto table = co_await r.lake.table(uuid, r.budget);
    if (!table) co_return rereadFailed(what, attempt, table.error());
    const TableView& tv = **table;
    if (r.idempotencyKey) {
      if (const TableCommit* first = tv.history.commitFor(*r.idempotencyKey)) {
        auto m = co_await r.lake.metadata(*first, r.budget);
        if (!m) co_return trouble(m.error());
        co_return LoadedTable{t, uuid, std::move(*m), false};
      }
    }
    const TableMetadata& base = tv.metadata->metadata;
    if (auto ok = checkRequirements(base, commit.requirements); !ok) {
      co_return refuse(409, std::string(kCommitFailed), "requirement-failed", ok.error().message);
    }
    const std::int64_t now = std::max(r.nowMs, base.lastUpdatedMs);
    auto applied = applyUpdates(base, commit.updates, now, tv.metadata->location);
    if (!applied) {
      if (applied.error().code == Errc::conflict) {
        co_return refuse(409, std::string(kCommitFailed), "stale-update", applied.error().message);
      }
      co_return refuse(400, std::string(kBadRequest), "invalid-update", applied.error().message);
    }
    if (!applied->changed) co_return LoadedTable{t, uuid, tv.metadata, false};
    const TableMetadata& next = applied->metadata;
    if (auto ok = needLocationInLake(r.lake, next.location); !ok) co_return failureOf(ok);
    if (next.location != base.location) {
      co_return refuse(400, std::string(kBadRequest), "location-fixed",
                       "set-location: a table's location is fixed when it is created (it bounds "
                       "the credentials vended for it and keeps tables apart)");
    }
    const std::string file =
        next.location + "/metadata/" + metadataFileName(tv.history.commits + 1, Uuid::random());
    std::string json = serializeTableMetadata(next);
    auto meta = loaded(file, next, json);
    const TableCommit record{file,    meta->sha256,    json.size(), tv.metadata->location,
                             r.nowMs, r.idempotencyKey};
    auto appended = co_await r.lake.appendTable(uuid, &tv, record, std::move(json), meta, r.budget);
    if (!appended) co_return trouble(appended.error());
    switch (appended->outcome) {
      case Appended::Outcome::committed:
        co_return LoadedTable{t, uuid, std::move(meta), false};
      case Appended::Outcome::unknown:
        co_return unknownOutcome(what, appended->detail);
      case Appended::Outcome::lost:
        break;
    }
    if (attempt >= r.maxRebases) co_return contention(what, attempt);
  }
}

asio::awaitable<Outcome<void>> dropTable(Request& r, const TableIdent& t) {
  const std::string what = "drop table " + displayName(t);
  const Build build = [&](const LakeDirectory& dir) -> Outcome<LakeChange> {
    auto it = dir.tables.find(t);
    if (it == dir.tables.end()) {
      return refuse(404, std::string(kNoSuchTable), "no-such-table",
                    "Table does not exist: " + displayName(t));
    }
    return LakeChange{TableDropped{t, it->second.uuid}};
  };
  auto record = co_await changeLake(r, what, build);
  if (!record) co_return failureOf(record);
  if (auto ok = replayed<TableDropped>(*record); !ok) co_return failureOf(ok);
  co_return Outcome<void>{};
}

asio::awaitable<Outcome<void>> renameTable(Request& r, const TableIdent& from,
                                           const TableIdent& to) {
  if (auto ok = checkName(to.name, "table name"); !ok) {
    co_return refuse(400, std::string(kBadRequest), "invalid-name", ok.error().message);
  }
  const std::string what = "rename table " + displayName(from);
  const Build build = [&](const LakeDirectory& dir) -> Outcome<LakeChange> {
    auto it = dir.tables.find(from);
    if (it == dir.tables.end()) {
      return refuse(404, std::string(kNoSuchTable), "no-such-table",
                    "Table does not exist: " + displayName(from));
    }
    if (auto ok = needNamespace(dir, to.ns); !ok) return failureOf(ok);
    const LakeChange change = TableRenamed{from, to, it->second.uuid};
    if (auto ok = dir.check(change); !ok) return answerFor(ok.error());
    return change;
  };
  auto record = co_await changeLake(r, what, build);
  if (!record) co_return failureOf(record);
  if (auto ok = replayed<TableRenamed>(*record); !ok) co_return failureOf(ok);
  co_return Outcome<void>{};
}

}  // namespace cairn::catalog
