#include "catalog/ops/operations.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <functional>

#include "base/assert.hpp"
#include "engine/store/directory_store.hpp"

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
constexpr std::string_view kNotFound = "NotFoundException";

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

Failure<CatalogError> keyReused() {
  return refuse(422, "UnprocessableEntityException", "idempotency-key-reused",
                "this Idempotency-Key was used by another request (another route, target or "
                "body); a key binds the request it was first used for");
}

// The record a recent request with this request's Idempotency-Key made (`found`, looked up by
// the key alone): none; this request's own (its result is replayed); or 422 when another
// request made it (another digest). A record written before digests were counts as its own.
template <class Record>
Outcome<const Record*> sameRequest(const Request& r, const Record* found) {
  if (found && found->requestSha256 && r.requestDigest &&
      *found->requestSha256 != *r.requestDigest) {
    return keyReused();
  }
  return found;
}

// The lake log's and a table log's record of this request's key, as sameRequest judges it.
Outcome<const LakeRecord*> priorRecord(const Request& r, const LakeDirectory& dir) {
  if (!r.idempotencyKey) return static_cast<const LakeRecord*>(nullptr);
  return sameRequest(r, dir.recordFor(*r.idempotencyKey));
}
Outcome<const TableCommit*> priorCommit(const Request& r, const TableHistory& h) {
  if (!r.idempotencyKey) return static_cast<const TableCommit*>(nullptr);
  return sameRequest(r, h.commitFor(*r.idempotencyKey));
}

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
    if (e.key == kMissingLease)
      return refuse(404, "NoSuchLeaseException", "no-such-lease", e.message);
    if (e.key == kMissingSnapshot) {
      return refuse(404, "NoSuchSnapshotException", "no-such-snapshot", e.message);
    }
    if (e.key == kMissingNamespace) {
      return refuse(404, std::string(kNoSuchNamespace), "no-such-namespace", e.message);
    }
    if (e.key == kMissingBranch) {
      return refuse(404, std::string(kNotFound), "no-such-branch", e.message);
    }
    return refuse(404, std::string(kNoSuchTable), "no-such-table", e.message);
  }
  if (e.code == Errc::conflict) {
    if (e.key == kLakeBound) return refuse(409, "ConflictException", "lake-bound", e.message);
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
  const std::string log = "lake";
  const std::shared_ptr<void> turn = co_await r.lake.turn(log);
  for (std::uint64_t attempt = 0;; ++attempt) {
    auto view = co_await r.lake.directory(r.budget);
    if (!view) co_return rereadFailed(what, attempt, view.error());
    auto prior = priorRecord(r, (*view)->dir);
    if (!prior) co_return failureOf(prior);
    if (*prior) co_return **prior;
    auto change = build((*view)->dir);
    if (!change) co_return failureOf(change);
    const LakeRecord record{std::move(*change), r.nowMs, r.idempotencyKey, r.requestDigest};
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
  return keyReused();
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
  if (!reg) co_return keyReused();
  auto view = co_await r.lake.table(reg->uuid, r.budget);
  if (!view) co_return trouble(view.error());
  // The version this request made: the table log's commit with its key (a register onto an
  // existing log), else the table's first.
  const TableHistory& h = (*view)->history;
  const TableCommit* made = record.idempotencyKey ? h.commitFor(*record.idempotencyKey) : nullptr;
  if (!made) made = &*h.first;
  auto first = co_await r.lake.metadata(*made, r.budget);
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
  const TableCommit commit{file,    meta->sha256,     json.size(),    std::nullopt,
                           r.nowMs, r.idempotencyKey, r.requestDigest};
  auto appended =
      co_await r.lake.appendTable(uuid, nullptr, commit, std::move(json), meta, r.budget);
  if (!appended) co_return trouble(appended.error());
  if (appended->outcome == Appended::Outcome::unknown) {
    co_return unknownOutcome(what, appended->detail);
  }
  if (appended->outcome == Appended::Outcome::lost) {
    // A log of this UUID exists. It is this request's own when its first record carries this
    // request's Idempotency-Key (an earlier attempt, or a replay served meanwhile, made it and
    // did not register it yet): it is registered now. Otherwise another table has the UUID.
    auto existing = co_await r.lake.table(uuid, r.budget);
    if (!existing && existing.error().key == kOtherBase) {  // a branch-local log's UUID
      co_return refuse(409, std::string(kAlreadyExists), "table-log-exists",
                       what + ": a log with UUID " + uuid.text() + " exists already");
    }
    if (!existing) co_return rereadFailed(what, 1, existing.error());
    const auto& first = (*existing)->history.first;
    if (!r.idempotencyKey || !first || first->idempotencyKey != r.idempotencyKey ||
        !sameRequest(r, &*first)) {
      co_return refuse(409, std::string(kAlreadyExists), "table-log-exists",
                       what + ": a table log with UUID " + uuid.text() + " exists already");
    }
    auto own = co_await r.lake.metadata(*first, r.budget);
    if (!own) co_return trouble(own.error());
    meta = std::move(*own);
  }
  const std::string location = meta->metadata.location;
  const Build build = [&](const LakeDirectory& dir) -> Outcome<LakeChange> {
    if (auto ok = needNamespace(dir, t.ns); !ok) return failureOf(ok);
    const LakeChange change = TableRegistered{t, uuid, location};
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
  auto prior = priorRecord(r, dir);
  if (!prior) co_return failureOf(prior);
  if (*prior) {
    auto replay = co_await replayCreate(r, **prior);
    if (!replay) co_return failureOf(replay);
    co_return std::optional<LoadedTable>(std::move(*replay));
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

namespace {

struct FoundTable {
  Uuid uuid;
  StateLog state;
  std::shared_ptr<const TableView> view;
};

// The state of table `uuid` on the request's branch, its log read and its start checked
// against the lake log.
asio::awaitable<Res<FoundTable>> readState(Request& r, const LakeDirectory& dir, const Uuid& uuid) {
  StateLog state = dir.stateOf(r.branch, uuid);
  const std::string* base = state.base ? &*state.base : nullptr;
  auto table = co_await r.lake.table(state.log, r.budget, base);
  if (!table) co_return failureOf(table);
  co_return FoundTable{uuid, std::move(state), std::move(*table)};
}

// The table `t` names now: its uuid in the lake directory and its folded log on the request's
// branch (404 when the directory has no such table or branch).
asio::awaitable<Outcome<FoundTable>> findTable(Request& r, const TableIdent& t) {
  auto view = co_await r.lake.directory(r.budget);
  if (!view) co_return trouble(view.error());
  if (auto ok = needBranch(r, (*view)->dir); !ok) co_return failureOf(ok);
  auto entry = (*view)->dir.tables.find(t);
  if (entry == (*view)->dir.tables.end()) {
    co_return refuse(404, std::string(kNoSuchTable), "no-such-table",
                     "Table does not exist: " + displayName(t));
  }
  auto found = co_await readState(r, (*view)->dir, entry->second.uuid);
  if (!found) co_return trouble(found.error());
  co_return std::move(*found);
}

}  // namespace

Outcome<void> needBranch(const Request& r, const LakeDirectory& dir) {
  if (r.branch && !dir.branches.count(*r.branch)) {
    return refuse(404, std::string(kNotFound), "no-such-branch",
                  "Branch does not exist: " + *r.branch);
  }
  return {};
}

asio::awaitable<Outcome<LoadedTable>> loadTable(Request& r, const TableIdent& t) {
  auto found = co_await findTable(r, t);
  if (!found) co_return failureOf(found);
  co_return LoadedTable{t, found->uuid, found->view->metadata, false};
}

Outcome<AsOf> parseAsOf(std::string_view text) {
  auto bad = [&] {
    return refuse(400, std::string(kBadRequest), "invalid-as-of",
                  "as-of is version:N, time:MILLISECONDS or snapshot:ID");
  };
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) return bad();
  const std::string_view kind = text.substr(0, colon);
  const std::string_view number = text.substr(colon + 1);
  AsOf at;
  if (kind == "version") {
    at.kind = AsOf::Kind::version;
  } else if (kind == "time") {
    at.kind = AsOf::Kind::time;
  } else if (kind == "snapshot") {
    at.kind = AsOf::Kind::snapshot;
  } else {
    return bad();
  }
  // Decimal digits only (a '-' only for a snapshot id, which Iceberg allows to be negative),
  // within int64: from_chars refuses what does not fit.
  if (number.empty() || (number[0] == '-' && at.kind != AsOf::Kind::snapshot)) return bad();
  if (number[0] == '+') return bad();
  const char* end = number.data() + number.size();
  auto [stop, ec] = std::from_chars(number.data(), end, at.value);
  if (ec != std::errc{} || stop != end) return bad();
  return at;
}

asio::awaitable<Outcome<LoadedTable>> loadTableAsOf(Request& r, const TableIdent& t,
                                                    const AsOf& at) {
  auto table = co_await findTable(r, t);
  if (!table) co_return failureOf(table);
  const Uuid uuid = table->uuid;
  const TableHistory& h = table->view->history;
  auto noVersion = [&](const std::string& why) {
    return refuse(404, std::string(kNoSuchTable), "no-such-version",
                  displayName(t) + " has no version " + why);
  };
  auto read = [&](std::uint64_t version) -> asio::awaitable<Outcome<LoadedTable>> {
    auto commit = h.version(version);
    auto m = co_await r.lake.metadata(*commit, r.budget);
    if (!m) co_return trouble(m.error());
    co_return LoadedTable{t, uuid, std::move(*m), false};
  };
  switch (at.kind) {
    case AsOf::Kind::version:
      if (at.value < 1 || std::uint64_t(at.value) > h.versions.size()) {
        co_return noVersion(std::to_string(at.value) + " (it has " +
                            std::to_string(h.versions.size()) + ")");
      }
      co_return co_await read(std::uint64_t(at.value));
    case AsOf::Kind::time: {
      std::uint64_t found = 0;
      for (std::uint64_t i = 0; i < h.versions.size(); ++i) {
        if (h.versions[i].timeMs <= at.value) found = i + 1;
      }
      if (found == 0)
        co_return noVersion("at " + std::to_string(at.value) + " ms: it was created later");
      co_return co_await read(found);
    }
    case AsOf::Kind::snapshot:
      break;
  }
  // snapshot:ID: a snapshot the current metadata's snapshot log names; then back from the
  // newest version until one whose current snapshot is ID. The log's times are the snapshots'
  // (the writers' clocks), not the versions' (the catalog's): they cannot narrow the walk.
  const TableMetadata& now = table->view->metadata->metadata;
  if (now.currentSnapshotId == at.value) {
    co_return LoadedTable{t, uuid, table->view->metadata, false};
  }
  const bool logged =
      std::any_of(now.snapshotLog.begin(), now.snapshotLog.end(),
                  [&](const SnapshotLogEntry& e) { return e.snapshotId == at.value; });
  if (!logged) {
    co_return refuse(404, std::string(kNoSuchTable), "no-such-snapshot",
                     displayName(t) + ": snapshot " + std::to_string(at.value) +
                         " was never current (not in the snapshot log)");
  }
  const std::uint64_t start = h.versions.size();
  for (std::uint64_t v = start, reads = 0; v >= 1 && reads < kMaxTimeTravelReads; --v, ++reads) {
    auto loaded = co_await read(v);
    if (!loaded) co_return failureOf(loaded);
    if (loaded->metadata->metadata.currentSnapshotId == at.value) co_return std::move(*loaded);
  }
  co_return refuse(404, std::string(kNoSuchTable), "no-such-snapshot",
                   displayName(t) + ": no version within " + std::to_string(kMaxTimeTravelReads) +
                       " reads has snapshot " + std::to_string(at.value) +
                       " current; use version: or time:");
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
  // A retry of this request (its key) after the name was taken: the log's commit may still be
  // missing, so the work goes on below instead of a replay.
  bool resuming = false;
  if (r.idempotencyKey) {
    auto dir = co_await r.lake.directory(r.budget);
    if (!dir) co_return trouble(dir.error());
    auto prior = priorRecord(r, (*dir)->dir);
    if (!prior) co_return failureOf(prior);
    if (*prior) {
      const auto* reg = std::get_if<TableRegistered>(&(*prior)->change);
      resuming = reg && reg->table == t;
    }
  }
  if (!resuming) {
    auto before = co_await beforeCreate(r, t, false);
    if (!before) co_return failureOf(before);
    if (*before) co_return std::move(**before);
  }
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
    // Nothing there, or something no retry makes a file (a directory, a symbolic link): 400.
    if (got.error().status == StoreStatus::missing) {
      co_return refuse(400, std::string(kBadRequest), "no-such-metadata-file",
                       "no metadata file at " + metadataLocation);
    }
    if (got.error().code == kNotAnObject) {
      co_return refuse(400, std::string(kBadRequest), "no-such-metadata-file",
                       "no metadata file at " + metadataLocation + ": " + got.error().message);
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
  // What enters the lake passes the check every route's input does (table_create.hpp).
  if (auto ok = checkAdmitted(nullptr, *parsed); !ok) {
    co_return refuse(400, std::string(kBadRequest), "invalid-metadata",
                     metadataLocation + ": " + ok.error().message);
  }
  if (auto ok = needLocationInLake(r.lake, parsed->location); !ok) co_return failureOf(ok);
  const std::string what = "register table " + displayName(t);
  const Digest sha = sha256(got->bytes);
  auto meta = std::make_shared<LoadedMetadata>();
  meta->location = metadataLocation;
  meta->sha256 = sha;
  meta->json = serializeTableMetadata(*parsed);
  meta->metadata = std::move(*parsed);
  auto lakeNow = co_await r.lake.directory(r.budget);
  if (!lakeNow) co_return trouble(lakeNow.error());
  if (auto other = (*lakeNow)->dir.tableOf(*uuid); other && !(resuming && *other == t)) {
    co_return refuse(409, std::string(kAlreadyExists), "already-exists",
                     what + ": table " + uuid->text() + " is registered as " + displayName(*other));
  }
  const Build build = [&](const LakeDirectory& dir) -> Outcome<LakeChange> {
    if (auto ok = needNamespace(dir, t.ns); !ok) return failureOf(ok);
    const LakeChange change = TableRegistered{t, *uuid, meta->metadata.location};
    if (auto ok = dir.check(change); !ok) return answerFor(ok.error());
    return change;
  };
  auto existing = co_await r.lake.table(*uuid, r.budget);
  if (!existing && existing.error().key == kOtherBase) {  // a branch-local log's UUID
    co_return refuse(409, std::string(kAlreadyExists), "table-log-exists",
                     what + ": a log with UUID " + uuid->text() + " exists already");
  }
  if (!existing &&
      (existing.error().code != Errc::missing || existing.error().key != kMissingTable)) {
    co_return trouble(existing.error());
  }
  if (!existing && resuming) co_return trouble(existing.error());
  if (!existing) {
    // A new table log: its first record names the file, then the name goes into the lake log
    // (as a create does; a log made meanwhile by another request is refused).
    const TableCommit commit{metadataLocation, sha,     got->bytes.size(),
                             std::nullopt,     r.nowMs, r.idempotencyKey,
                             r.requestDigest};
    std::string bytes(asChars(got->bytes));
    auto appended =
        co_await r.lake.appendTable(*uuid, nullptr, commit, std::move(bytes), meta, r.budget);
    if (!appended) co_return trouble(appended.error());
    if (appended->outcome == Appended::Outcome::unknown) {
      co_return unknownOutcome(what, appended->detail);
    }
    if (appended->outcome == Appended::Outcome::lost) {
      co_return refuse(409, std::string(kAlreadyExists), "table-log-exists",
                       what + ": a log of table " + uuid->text() + " was made meanwhile");
    }
    auto record = co_await changeLake(r, what, build);
    if (!record) co_return failureOf(record);
    co_return LoadedTable{t, *uuid, std::move(meta), false};
  }
  // The log exists (a table dropped from the lake keeps its log): the name and the UUID are
  // taken in the lake log first, so two registrations of it cannot both change its log; then
  // the log's next commit names this file (none when it is the current one already).
  if (!resuming) {
    auto record = co_await changeLake(r, what, build);
    if (!record) co_return failureOf(record);
    const auto* reg = std::get_if<TableRegistered>(&record->change);
    if (!reg || reg->uuid != *uuid || reg->table != t) co_return co_await replayCreate(r, *record);
  }
  for (std::uint64_t attempt = 0;; ++attempt) {
    auto now = co_await r.lake.table(*uuid, r.budget);
    if (!now) co_return rereadFailed(what, attempt, now.error());
    const TableView* at = now->get();
    auto prior = priorCommit(r, at->history);
    if (!prior) co_return failureOf(prior);
    if (*prior) break;  // landed already
    if (at->history.current->metadataLocation == metadataLocation) break;
    const TableCommit commit{metadataLocation,  sha,
                             got->bytes.size(), at->history.current->metadataLocation,
                             r.nowMs,           r.idempotencyKey,
                             r.requestDigest};
    std::string bytes(asChars(got->bytes));
    auto appended =
        co_await r.lake.appendTable(*uuid, at, commit, std::move(bytes), meta, r.budget);
    if (!appended) co_return rereadFailed(what, attempt + 1, appended.error());
    if (appended->outcome == Appended::Outcome::committed) break;
    if (appended->outcome == Appended::Outcome::unknown) {
      co_return unknownOutcome(what, appended->detail);
    }
    if (attempt >= r.maxRebases) co_return contention(what, attempt);
  }
  co_return LoadedTable{t, *uuid, std::move(meta), false};
}

namespace {

// A table's first write on the request's branch: a new branch-local log whose first commit is
// `record` (it replaces the metadata the branch followed), then that log registered in the
// lake log with its provenance (on `lakeView`, read before `found`). True when both landed;
// false when this attempt is proven not to be part of the history (the new log was not
// registered: it stays unreachable) and the commit is to be rebased; 504 when the
// registration's outcome is unknown.
asio::awaitable<Outcome<bool>> fork(Request& r, const LakeView& lakeView, const FoundTable& found,
                                    const TableCommit& record, std::string json,
                                    std::shared_ptr<const LoadedMetadata> meta,
                                    const std::string& what) {
  const Uuid log = Uuid::random();
  const TableView& tv = *found.view;
  const LakeChange change = BranchForked{*r.branch,
                                         found.uuid,
                                         log,
                                         found.state.branch,
                                         found.state.log,
                                         tv.cursor.revision(),
                                         tv.metadata->location};
  if (auto ok = lakeView.dir.check(change); !ok) co_return answerFor(ok.error());
  auto appended =
      co_await r.lake.appendTable(log, nullptr, record, std::move(json), std::move(meta), r.budget);
  if (!appended) co_return trouble(appended.error());
  // A log nobody registered is no part of any history, whatever became of its head.
  if (appended->outcome != Appended::Outcome::committed) co_return false;
  const LakeRecord registration{change, r.nowMs, std::nullopt};
  auto registered = co_await r.lake.appendLake(lakeView, registration, r.budget);
  if (!registered) co_return trouble(registered.error());
  switch (registered->outcome) {
    case Appended::Outcome::committed:
      co_return true;
    case Appended::Outcome::unknown:
      co_return unknownOutcome(what, registered->detail);
    case Appended::Outcome::lost:
      break;
  }
  co_return false;
}

// This request's candidates whose appends were judged lost, oldest first, and how many commits
// the table had when it began. A candidate's metadata file is its own (a fresh name each time):
// one in the history after all (a lost answer misjudged) is the request's commit, which must
// not be applied a second time by a rebase.
struct EarlierCandidates {
  // A candidate of this request's that lost (as judged): its metadata file, by name and digest
  // (the file itself is read again only if it is found landed, so a request that rebases many
  // times holds no metadata beyond its current attempt's).
  struct Candidate {
    std::string location;
    Digest sha256{};
  };
  std::uint64_t since = 0;
  std::vector<Candidate> lost;

  // The version (1-based) among the commits after `since` that is one of the candidates, if one
  // is there.
  std::optional<std::uint64_t> landed(const TableHistory& h) const {
    for (std::size_t v = std::min<std::size_t>(since, h.versions.size()); v < h.versions.size();
         ++v) {
      for (const auto& candidate : lost) {
        if (h.versions[v].metadataLocation == candidate.location &&
            h.versions[v].metadataSha256 == candidate.sha256) {
          return v + 1;
        }
      }
    }
    return std::nullopt;
  }
};

}  // namespace

asio::awaitable<Outcome<LoadedTable>> commitTable(Request& r, const TableIdent& t,
                                                  const CommitTableRequest& commit) {
  auto create = isCreateTransaction(commit.requirements);
  if (!create)
    co_return refuse(400, std::string(kBadRequest), "invalid-request", create.error().message);
  if (*create && r.branch) {
    co_return refuse(406, "UnsupportedOperationException", "not-on-branch",
                     "a table is created through the lake's own prefix, not on a branch");
  }
  if (*create) co_return co_await createByCommit(r, t, commit);
  const std::string what = "commit to " + displayName(t) + (r.branch ? " on " + *r.branch : "");
  // One commit to a table at a time in this process (a fork's lake change takes the lake's turn
  // after this one; nothing takes them the other way round).
  const std::string log = "table " + displayName(t) + (r.branch ? "~" + *r.branch : "");
  const std::shared_ptr<void> turn = co_await r.lake.turn(log);
  EarlierCandidates earlier;
  for (std::uint64_t attempt = 0;; ++attempt) {
    auto view = co_await r.lake.directory(r.budget);
    if (!view) co_return rereadFailed(what, attempt, view.error());
    const LakeDirectory& dir = (*view)->dir;
    if (auto ok = needBranch(r, dir); !ok) co_return failureOf(ok);
    if (r.branch) {
      const Branch& b = dir.branches.at(*r.branch);
      if (b.expiresMs && *b.expiresMs <= r.nowMs) {
        co_return refuse(403, "ForbiddenException", "branch-expired",
                         "Branch " + *r.branch + " expired at " + std::to_string(*b.expiresMs) +
                             " ms (Unix): it is read-only until dropped");
      }
    }
    auto entry = dir.tables.find(t);
    if (entry == dir.tables.end()) {
      co_return refuse(404, std::string(kNoSuchTable), "no-such-table",
                       "Table does not exist: " + displayName(t));
    }
    const Uuid uuid = entry->second.uuid;
    auto found = co_await readState(r, dir, uuid);
    if (!found) co_return rereadFailed(what, attempt, found.error());
    const TableView& tv = *found->view;
    // The branch's own log, or main's on main; else the table still follows a parent and this
    // commit forks it.
    const bool own = found->state.branch == r.branch;
    if (attempt == 0) earlier.since = tv.history.commits;
    if (auto landed = own ? earlier.landed(tv.history) : std::nullopt) {
      auto commitOf = tv.history.version(*landed);
      CAIRN_ASSERT(commitOf.has_value());
      auto m = co_await r.lake.metadata(*commitOf, r.budget);
      if (!m) co_return trouble(m.error());
      co_return LoadedTable{t, uuid, std::move(*m), false};
    }
    // The key's record in the lake log is never a commit's: only another request's fails it.
    if (auto prior = priorRecord(r, dir); !prior) co_return failureOf(prior);
    if (own) {
      auto prior = priorCommit(r, tv.history);
      if (!prior) co_return failureOf(prior);
      if (*prior) {
        auto m = co_await r.lake.metadata(**prior, r.budget);
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
    const TableCommit record{file,    meta->sha256,     json.size(),    tv.metadata->location,
                             r.nowMs, r.idempotencyKey, r.requestDigest};
    if (!own) {
      auto forked = co_await fork(r, **view, *found, record, std::move(json), meta, what);
      if (!forked) co_return failureOf(forked);
      if (*forked) co_return LoadedTable{t, uuid, std::move(meta), false};
    } else {
      auto appended = co_await r.lake.appendTable(found->state.log, &tv, record, std::move(json),
                                                  meta, r.budget);
      if (!appended) co_return trouble(appended.error());
      switch (appended->outcome) {
        case Appended::Outcome::committed:
          co_return LoadedTable{t, uuid, std::move(meta), false};
        case Appended::Outcome::unknown:
          co_return unknownOutcome(what, appended->detail);
        case Appended::Outcome::lost:
          earlier.lost.push_back({meta->location, meta->sha256});
          break;
      }
    }
    ++r.rebases;
    if (attempt >= r.maxRebases) co_return contention(what, attempt);
  }
}

asio::awaitable<Outcome<void>> dropTable(Request& r, const TableIdent& t, bool purge) {
  const std::string what = "drop table " + displayName(t);
  const Build build = [&](const LakeDirectory& dir) -> Outcome<LakeChange> {
    auto it = dir.tables.find(t);
    if (it == dir.tables.end()) {
      return refuse(404, std::string(kNoSuchTable), "no-such-table",
                    "Table does not exist: " + displayName(t));
    }
    std::optional<std::string> purgeLocation;
    if (purge) purgeLocation = it->second.location;
    return LakeChange{TableDropped{t, it->second.uuid, std::move(purgeLocation)}};
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

namespace {

// The table's UUID and location, or 404.
asio::awaitable<Outcome<std::pair<Uuid, std::string>>> tableIdentity(Request& r,
                                                                     const TableIdent& t) {
  auto loaded = co_await loadTable(r, t);
  if (!loaded) co_return failureOf(loaded);
  co_return std::pair{loaded->uuid, loaded->metadata->metadata.location};
}

}  // namespace

asio::awaitable<Outcome<TakenLease>> takeLease(Request& r, const TableIdent& t,
                                               const LeaseRequest& what) {
  if (what.ttlSeconds < 1 || what.ttlSeconds > kMaxLeaseSeconds) {
    co_return refuse(400, std::string(kBadRequest), "invalid-request",
                     "ttl-seconds is 1.." + std::to_string(kMaxLeaseSeconds));
  }
  if (!what.snapshotId && !what.prefix) {
    co_return refuse(400, std::string(kBadRequest), "invalid-request",
                     "a lease protects a snapshot-id, a prefix, or both");
  }
  auto table = co_await tableIdentity(r, t);
  if (!table) co_return failureOf(table);
  const auto& [uuid, location] = *table;
  if (what.prefix) {
    if (auto ok = checkLocation(*what.prefix, "prefix"); !ok) {
      co_return refuse(400, std::string(kBadRequest), "invalid-request", ok.error().message);
    }
    if (!locationsOverlap(*what.prefix, location) || what.prefix->size() < location.size()) {
      co_return refuse(400, std::string(kBadRequest), "prefix-outside-table",
                       "a lease's prefix lies under the table's location " + location);
    }
  }
  const Uuid lease = Uuid::random();
  const std::int64_t expires = r.nowMs + what.ttlSeconds * 1000;
  const std::string what_ = "take a lease on " + displayName(t);
  const Build build = [&](const LakeDirectory& dir) -> Outcome<LakeChange> {
    const LakeChange change = LeaseTaken{lease, uuid, expires, what.snapshotId, what.prefix};
    if (auto ok = dir.check(change); !ok) return answerFor(ok.error());
    return change;
  };
  auto record = co_await changeLake(r, what_, build);
  if (!record) co_return failureOf(record);
  auto taken = replayed<LeaseTaken>(*record);
  if (!taken) co_return failureOf(taken);
  co_return TakenLease{taken->lease, Lease{taken->table, record->timeMs, taken->expiresMs,
                                           taken->snapshotId, taken->prefix}};
}

asio::awaitable<Outcome<void>> releaseLease(Request& r, const TableIdent& t, const Uuid& lease) {
  auto table = co_await tableIdentity(r, t);
  if (!table) co_return failureOf(table);
  const Uuid uuid = table->first;
  const std::string what = "release a lease on " + displayName(t);
  const Build build = [&](const LakeDirectory& dir) -> Outcome<LakeChange> {
    auto held = dir.leases.find(lease.text());
    if (held == dir.leases.end() || held->second.table != uuid ||
        held->second.expiresMs <= r.nowMs) {
      return refuse(404, "NoSuchLeaseException", "no-such-lease",
                    "Lease " + lease.text() + " is not held on " + displayName(t));
    }
    return LakeChange{LeaseReleased{lease}};
  };
  auto record = co_await changeLake(r, what, build);
  if (!record) co_return failureOf(record);
  if (auto ok = replayed<LeaseReleased>(*record); !ok) co_return failureOf(ok);
  co_return Outcome<void>{};
}

asio::awaitable<Outcome<void>> protectSnapshot(Request& r, const TableIdent& t,
                                               std::int64_t snapshotId, bool protect) {
  auto loaded = co_await loadTable(r, t);
  if (!loaded) co_return failureOf(loaded);
  if (protect && !loaded->metadata->metadata.snapshot(snapshotId)) {
    co_return refuse(404, "NoSuchSnapshotException", "no-such-snapshot",
                     displayName(t) + " has no snapshot " + std::to_string(snapshotId));
  }
  const Uuid uuid = loaded->uuid;
  const std::string what =
      std::string(protect ? "protect" : "unprotect") + " a snapshot of " + displayName(t);
  const Build build = [&](const LakeDirectory& dir) -> Outcome<LakeChange> {
    const LakeChange change = protect ? LakeChange{SnapshotProtected{uuid, snapshotId}}
                                      : LakeChange{SnapshotUnprotected{uuid, snapshotId}};
    if (auto ok = dir.check(change); !ok) return answerFor(ok.error());
    return change;
  };
  auto record = co_await changeLake(r, what, build);
  if (!record) co_return failureOf(record);
  const bool same = protect ? std::holds_alternative<SnapshotProtected>(record->change)
                            : std::holds_alternative<SnapshotUnprotected>(record->change);
  if (!same) co_return keyReused();
  co_return Outcome<void>{};
}

asio::awaitable<Outcome<BranchCreated>> createBranch(Request& r, const BranchRequest& what) {
  auto invalid = [](const std::string& message) {
    return refuse(400, std::string(kBadRequest), "invalid-branch", message);
  };
  if (auto ok = checkBranchName(what.name); !ok) co_return invalid(ok.error().message);
  if (what.parent) {
    if (auto ok = checkBranchName(*what.parent); !ok) co_return invalid(ok.error().message);
  }
  if (what.ttlSeconds && (*what.ttlSeconds < 1 || *what.ttlSeconds > kMaxBranchTtlSeconds)) {
    co_return invalid("ttl-seconds is 1.." + std::to_string(kMaxBranchTtlSeconds));
  }
  if ((what.maxSnapshotAgeMs && *what.maxSnapshotAgeMs < 1) ||
      (what.minSnapshotsToKeep && *what.minSnapshotsToKeep < 1)) {
    co_return invalid("max-snapshot-age-ms and min-snapshots-to-keep are positive");
  }
  std::optional<std::int64_t> expires;
  if (what.ttlSeconds) expires = r.nowMs + *what.ttlSeconds * 1000;
  const BranchCreated created{what.name, Uuid::random(),        what.parent,
                              expires,   what.maxSnapshotAgeMs, what.minSnapshotsToKeep};
  const Build build = [&](const LakeDirectory& dir) -> Outcome<LakeChange> {
    const LakeChange change = created;
    if (auto ok = dir.check(change); !ok) {
      if (ok.error().code == Errc::usage) {
        return refuse(400, std::string(kBadRequest), "branch-too-deep", ok.error().message);
      }
      return answerFor(ok.error());
    }
    return change;
  };
  const std::string label = "create branch " + what.name;
  auto record = co_await changeLake(r, label, build);
  if (!record) co_return failureOf(record);
  co_return replayed<BranchCreated>(*record);
}

asio::awaitable<Outcome<void>> dropBranch(Request& r, const std::string& name) {
  if (auto ok = checkBranchName(name); !ok) {
    co_return refuse(400, std::string(kBadRequest), "invalid-branch", ok.error().message);
  }
  const Build build = [&](const LakeDirectory& dir) -> Outcome<LakeChange> {
    auto it = dir.branches.find(name);
    if (it == dir.branches.end()) {
      return refuse(404, std::string(kNotFound), "no-such-branch",
                    "Branch does not exist: " + name);
    }
    const LakeChange change = BranchDropped{name, it->second.id};
    if (auto ok = dir.check(change); !ok) {
      if (ok.error().code == Errc::conflict) {
        return refuse(409, "ConflictException", "branch-has-branches", ok.error().message);
      }
      return answerFor(ok.error());
    }
    return change;
  };
  const std::string label = "drop branch " + name;
  auto record = co_await changeLake(r, label, build);
  if (!record) co_return failureOf(record);
  if (auto ok = replayed<BranchDropped>(*record); !ok) co_return failureOf(ok);
  co_return Outcome<void>{};
}

}  // namespace cairn::catalog
