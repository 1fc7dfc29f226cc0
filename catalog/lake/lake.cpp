#include "catalog/lake/lake.hpp"

#include <boost/asio/this_coro.hpp>
#include <chrono>
#include <filesystem>

#include "catalog/access/sts.hpp"
#include "engine/store/aws_config.hpp"
#include "engine/store/store_errors.hpp"

namespace cairn::catalog {

namespace asio = boost::asio;

namespace {

Failure<Error> damaged(const std::string& what) { return err(Errc::corrupt, what); }

std::int64_t wallClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Credentials kept for reuse, at most (each a few KiB).
constexpr std::size_t kMaxIssuedCredentials = 10'000;

std::string rootOf(const StoreUrl& url) {
  if (url.kind == StoreUrl::Kind::directory) {
    std::error_code ec;
    auto absolute = std::filesystem::absolute(url.directory, ec).lexically_normal().string();
    while (absolute.size() > 1 && absolute.back() == '/') absolute.pop_back();
    return "file://" + absolute;
  }
  return "s3://" + url.bucket + (url.root.empty() ? "" : "/" + url.root);
}

// A rough size of a cached table view: its metadata (the text and the parsed tree) and the
// records of its history it keeps.
std::uint64_t footprint(const TableView& v) {
  std::uint64_t bytes = 4096;
  if (v.metadata) bytes += 4 * v.metadata->json.size();
  bytes += v.history.keysKept() * 512;
  for (const auto& version : v.history.versions) bytes += 64 + version.metadataLocation.size();
  return bytes;
}

}  // namespace

// Vending's state: the STS client (made at the first request, on its executor) and the
// credentials handed out, by class and location, reused while more than half their life is left.
struct Lake::Vending {
  std::unique_ptr<StsClient> sts;
  struct Issued {
    SessionCredentials credentials;
    std::int64_t issuedAtMs = 0;
  };
  std::map<std::pair<CredentialClass, std::string>, Issued> issued;
};

Lake::Lake(std::string id, std::unique_ptr<ObjectStore> store, const StoreUrl& url, Uuid publisher,
           std::uint64_t cacheBytes, const LakeEntry* access)
    : id_(std::move(id)),
      store_(std::move(store)),
      root_(rootOf(url)),
      publisher_(publisher),
      lakeLog_(*LogIdentity::make(lakeLogNamespace(id_), publisher, lakeLogDatabaseId(id_))),
      url_(url),
      vending_(std::make_unique<Vending>()),
      cacheBytes_(cacheBytes) {
  if (url.kind == StoreUrl::Kind::s3) {
    const std::string rest = root_.substr(std::string("s3://").size());
    rootAliases_ = {"s3a://" + rest, "s3n://" + rest};
  }
  if (access) access_ = *access;
}

Lake::~Lake() = default;

bool Lake::tableLocationAllowed(std::string_view location) const {
  std::string_view l = location;
  while (l.size() > 1 && l.back() == '/') l.remove_suffix(1);
  if (l == root_) return false;
  for (const auto& alias : rootAliases_) {
    if (l == alias) return false;
  }
  auto key = keyOf(std::string(l) + "/metadata/x.metadata.json");
  // Not beside the catalog's own objects: a first component `ns-…` could take a log's key.
  return key.has_value() && !key->starts_with("ns-");
}

Res<PolicyScope> Lake::scopeOf(const std::string& tableLocation) const {
  auto key = keyOf(tableLocation);
  if (!key) return err(Errc::usage, tableLocation + " is not under the lake's root");
  PolicyScope scope;
  scope.bucket = url_.bucket;
  scope.lakeRoot = url_.root;
  scope.tableLocation = (url_.root.empty() ? "" : url_.root + "/") + *key;
  while (!scope.tableLocation.empty() && scope.tableLocation.back() == '/') {
    scope.tableLocation.pop_back();
  }
  if (access_) {
    scope.resultsPrefix = access_->resultsPrefix;
    scope.archivePrefix = access_->archivePrefix;
  }
  return scope;
}

Res<std::string> Lake::policy(CredentialClass c, const std::string& tableLocation) const {
  if (url_.kind != StoreUrl::Kind::s3) {
    return err(Errc::usage, "lake " + id_ + " is on a directory store: no policy applies");
  }
  auto scope = scopeOf(tableLocation);
  if (!scope) return failureOf(scope);
  return sessionPolicy(c, *scope);
}

asio::awaitable<Result<std::vector<StorageCredential>, VendRefusal>> Lake::vend(
    CredentialClass c, std::string tableLocation, std::string refreshPath) {
  using Kind = VendRefusal::Kind;
  auto refusal = [](Kind k, std::string why) {
    return Failure<VendRefusal>{VendRefusal{k, std::move(why)}};
  };
  if (url_.kind != StoreUrl::Kind::s3) {
    co_return refusal(Kind::unavailable,
                      "lake " + id_ +
                          " is on a directory store: there are no storage credentials to vend; "
                          "engines read its files directly");
  }
  if (!access_ || !access_->sts) {
    co_return refusal(Kind::unavailable,
                      "lake " + id_ +
                          " has no STS role configured (cairn lake set --sts-role): no "
                          "credentials are vended, and static keys never are");
  }
  auto policyText = policy(c, tableLocation);
  if (!policyText) co_return refusal(Kind::refused, policyText.error().message);
  const std::int64_t nowMs = wallClockMs();
  const auto cacheKey = std::pair{c, tableLocation};
  SessionCredentials creds;
  auto known = vending_->issued.find(cacheKey);
  if (known != vending_->issued.end() &&
      nowMs < known->second.credentials.expiresAtMs -
                  (known->second.credentials.expiresAtMs - known->second.issuedAtMs) / 2) {
    creds = known->second.credentials;
  } else {
    if (!vending_->sts) {
      StsConfig config;
      config.region = access_->sts->region.empty() ? url_.region : access_->sts->region;
      // STS where the lake names it; else beside the store (RGW serves both), or AWS's regional
      // STS when the store is AWS's regional S3.
      config.endpoint = !access_->sts->endpoint.empty() ? access_->sts->endpoint
                        : url_.endpointSource == kAwsRegionalEndpoint
                            ? awsRegionalEndpoint("sts", config.region)
                            : url_.endpoint;
      config.roleArn = access_->sts->roleArn;
      config.caFile = url_.caFile;
      auto made = StsClient::create(co_await asio::this_coro::executor, config);
      if (!made) co_return refusal(Kind::sts, made.error());
      vending_->sts = std::move(*made);
    }
    std::string session = "cairn-" + id_ + "-" + std::string(credentialClassName(c));
    if (session.size() > 64) session.resize(64);
    const std::uint32_t seconds = access_->durations.of(c);
    auto got = co_await vending_->sts->assumeRole(*policyText, seconds, session);
    if (!got) co_return refusal(Kind::sts, got.error());
    creds = *got;
    // What expired goes: the map holds only what is still worth handing out.
    std::erase_if(vending_->issued,
                  [&](const auto& e) { return e.second.credentials.expiresAtMs <= nowMs; });
    if (vending_->issued.size() < kMaxIssuedCredentials) {
      vending_->issued[cacheKey] = Vending::Issued{creds, nowMs};
    }
  }
  const std::vector<std::pair<std::string, std::string>> config = {
      {"s3.access-key-id", creds.accessKeyId},
      {"s3.secret-access-key", creds.secretAccessKey},
      {"s3.session-token", creds.sessionToken},
      {"s3.session-token-expires-at-ms", std::to_string(creds.expiresAtMs)},
      {"client.region", url_.region},
      {"s3.endpoint", url_.endpoint},
      {"s3.path-style-access", url_.virtualHost ? "false" : "true"},
      {"client.refresh-credentials-endpoint", refreshPath},
      {"client.refresh-credentials-enabled", "true"},
  };
  std::vector<StorageCredential> out;
  if (c == CredentialClass::resultRead) {
    out.push_back({root_ + "/" + access_->resultsPrefix, config});
  } else {
    out.push_back({tableLocation, config});
    if (c == CredentialClass::archive) {
      out.push_back({root_ + "/" + access_->archivePrefix, config});
    }
  }
  co_return out;
}

Res<LogIdentity> Lake::tableLogIdentity(const Uuid& table) const {
  return LogIdentity::make(table, publisher_, tableLogDatabaseId(table));
}

std::string Lake::defaultTableLocation(const Uuid& table) const {
  return root_ + "/tables/" + table.text();
}

std::optional<std::string> Lake::keyOf(std::string_view location) const {
  auto under = [&](const std::string& root) -> std::optional<std::string> {
    if (location.size() <= root.size() + 1 || !location.starts_with(root) ||
        location[root.size()] != '/') {
      return std::nullopt;
    }
    std::string key(location.substr(root.size() + 1));
    if (!isValidObjectKey(key)) return std::nullopt;
    return key;
  };
  if (auto k = under(root_)) return k;
  for (const auto& alias : rootAliases_) {
    if (auto k = under(alias)) return k;
  }
  return std::nullopt;
}

asio::awaitable<Res<void>> Lake::checkReady(OperationBudget& budget) {
  if (!probed_) {
    auto probe = co_await store_->requireConditionalWrites();
    if (!probe) {
      readiness_ = {false, "the store's conditional writes could not be confirmed (" +
                               std::string(storeStatusName(probe.error().status)) +
                               "): " + probe.error().message};
      co_return storeError(probe.error(), store_->describe());
    }
    probed_ = true;
  }
  auto view = co_await directory(budget);
  if (!view) {
    readiness_ = {false, view.error().message};
    co_return failureOf(view);
  }
  readiness_ = {true, {}};
  co_return Res<void>{};
}

asio::awaitable<Res<std::shared_ptr<const LakeView>>> Lake::directory(OperationBudget& budget) {
  const std::shared_ptr<const LakeView> base = lake_;
  std::optional<LogCursor> from;
  if (base) from = base->cursor;
  std::optional<LakeDirectory> next;
  const RecordSink sink = [&](std::uint64_t sequence, ByteView payload) -> Res<void> {
    if (!next) {
      next = base ? base->dir : LakeDirectory{};
      next->readerClockMs = wallClockMs();
    }
    auto record = decodeLakeRecord(payload);
    if (!record) {
      return damaged("the lake log's record " + std::to_string(sequence) +
                     " does not decode: " + record.error().message);
    }
    if (auto ok = next->apply(*record); !ok) {
      return damaged("the lake log's record " + std::to_string(sequence) +
                     " contradicts the records before it: " + ok.error().message);
    }
    return {};
  };
  const std::function<void()> reset = [&] {
    next = LakeDirectory{};
    next->readerClockMs = wallClockMs();
  };
  auto read = co_await readLog(*store_, lakeLog_, from, sink, reset, budget);
  if (!read) co_return failureOf(read);
  if (read->state == LogRead::State::absent) {
    co_return err(Errc::missing, "the lake log of " + id_ + " does not exist in " +
                                     store_->describe() + " (cairn lake create makes it)");
  }
  if (read->state == LogRead::State::unchanged) {
    if (base->cursor.etag == read->cursor->etag) co_return base;
    auto same = std::make_shared<const LakeView>(LakeView{base->dir, *read->cursor});
    if (lake_ == base) lake_ = same;
    co_return same;
  }
  if (!next) next = LakeDirectory{};
  if (next->lake != id_) {
    co_return damaged("the lake log in " + store_->describe() + " is lake \"" + next->lake +
                      "\"'s, not " + id_ + "'s");
  }
  auto view = std::make_shared<const LakeView>(LakeView{std::move(*next), *read->cursor});
  if (!lake_ || view->cursor.revision() >= lake_->cursor.revision()) lake_ = view;
  co_return view;
}

asio::awaitable<Res<Appended>> Lake::appendLake(const LakeView& view, const LakeRecord& record,
                                                OperationBudget& budget) {
  auto bytes = encodeLakeRecord(record);
  if (!bytes) co_return failureOf(bytes);
  LogAppend what;
  what.records.push_back(std::move(*bytes));
  const std::optional<LogCursor> at = view.cursor;  // named: not a temporary of the co_await
  auto appended = co_await appendLog(*store_, lakeLog_, at, what, budget);
  if (!appended) co_return failureOf(appended);
  if (appended->outcome == Appended::Outcome::committed && !appended->cursor->etag.empty()) {
    LakeDirectory dir = view.dir;
    dir.readerClockMs = wallClockMs();
    if (auto ok = dir.apply(record); ok) {
      auto next = std::make_shared<const LakeView>(LakeView{std::move(dir), *appended->cursor});
      if (!lake_ || next->cursor.revision() >= lake_->cursor.revision()) lake_ = next;
    }
  }
  co_return appended;
}

asio::awaitable<Res<std::shared_ptr<const LoadedMetadata>>> Lake::metadata(
    const TableCommit& commit, OperationBudget& budget) {
  auto key = keyOf(commit.metadataLocation);
  if (!key) {
    co_return damaged("the metadata location " + commit.metadataLocation +
                      " is not under the lake's root " + root_);
  }
  CAIRN_CO_TRY(budget.reserve(commit.metadataLength, 0, 1, *key));
  auto got = co_await store_->get(*key, commit.metadataLength);
  if (!got) co_return storeError(got.error(), *key);
  if (got->bytes.size() != commit.metadataLength || sha256(got->bytes) != commit.metadataSha256) {
    co_return Failure<Error>{
        Error{Errc::corrupt, *key + ": not the metadata file its commit names (SHA-256 or length)",
              *key}};
  }
  auto parsed = parseTableMetadata(asChars(got->bytes));
  if (!parsed) {
    co_return Failure<Error>{
        Error{Errc::corrupt, *key + ": the metadata file does not read: " + parsed.error().message,
              *key}};
  }
  auto loaded = std::make_shared<LoadedMetadata>();
  loaded->location = commit.metadataLocation;
  loaded->sha256 = commit.metadataSha256;
  loaded->json = serializeTableMetadata(*parsed);
  loaded->metadata = std::move(*parsed);
  co_return std::shared_ptr<const LoadedMetadata>(std::move(loaded));
}

asio::awaitable<Res<std::shared_ptr<const TableView>>> Lake::table(const Uuid& uuid,
                                                                   OperationBudget& budget,
                                                                   const std::string* base) {
  auto view = co_await readTable(uuid, budget);
  if (!view) co_return failureOf(view);
  std::optional<std::string> expected;
  if (base) expected = *base;
  CAIRN_CO_TRY(expectBase((*view)->history, expected, "table log " + uuid.text()));
  co_return std::move(*view);
}

asio::awaitable<Res<std::shared_ptr<const TableView>>> Lake::readTable(const Uuid& uuid,
                                                                       OperationBudget& budget) {
  const std::shared_ptr<const TableView> base = cached(uuid);
  auto id = tableLogIdentity(uuid);
  if (!id) co_return failureOf(id);
  std::optional<LogCursor> from;
  if (base) from = base->cursor;
  std::optional<TableHistory> next;
  const RecordSink sink = [&](std::uint64_t sequence, ByteView payload) -> Res<void> {
    if (!next) {
      next = base ? base->history : TableHistory{};
      next->readerClockMs = wallClockMs();
    }
    auto commit = decodeTableCommit(payload);
    if (!commit) {
      return damaged("table " + uuid.text() + ": record " + std::to_string(sequence) +
                     " does not decode: " + commit.error().message);
    }
    if (auto ok = next->apply(*commit); !ok) {
      return damaged("table " + uuid.text() + ": " + ok.error().message);
    }
    return {};
  };
  const std::function<void()> reset = [&] {
    next = TableHistory{};
    next->readerClockMs = wallClockMs();
  };
  auto read = co_await readLog(*store_, *id, from, sink, reset, budget);
  if (!read) co_return failureOf(read);
  if (read->state == LogRead::State::absent) {
    co_return Failure<Error>{
        Error{Errc::missing, "table " + uuid.text() + " has no log", std::string(kMissingTable)}};
  }
  if (read->state == LogRead::State::unchanged) {
    if (base->cursor.etag == read->cursor->etag) co_return base;
    auto same = std::make_shared<const TableView>(
        TableView{uuid, *read->cursor, base->history, base->metadata});
    remember(uuid, same);
    co_return same;
  }
  if (!next || !next->current)
    co_return damaged("table " + uuid.text() + ": a log without commits");
  std::shared_ptr<const LoadedMetadata> loaded;
  if (base && base->metadata && base->metadata->location == next->current->metadataLocation &&
      base->metadata->sha256 == next->current->metadataSha256) {
    loaded = base->metadata;
  } else {
    auto read2 = co_await metadata(*next->current, budget);
    if (!read2) co_return failureOf(read2);
    loaded = std::move(*read2);
  }
  auto view = std::make_shared<const TableView>(
      TableView{uuid, *read->cursor, std::move(*next), std::move(loaded)});
  remember(uuid, view);
  co_return view;
}

asio::awaitable<Res<Appended>> Lake::appendTable(const Uuid& uuid, const TableView* at,
                                                 const TableCommit& commit,
                                                 std::string metadataBytes,
                                                 std::shared_ptr<const LoadedMetadata> loaded,
                                                 OperationBudget& budget) {
  auto id = tableLogIdentity(uuid);
  if (!id) co_return failureOf(id);
  auto key = keyOf(commit.metadataLocation);
  if (!key) {
    co_return err(Errc::usage, "the metadata location " + commit.metadataLocation +
                                   " is not under the lake's root " + root_);
  }
  auto record = encodeTableCommit(commit);
  if (!record) co_return failureOf(record);
  LogAppend what;
  what.records.push_back(std::move(*record));
  ByteView metadataView = asBytes(metadataBytes);
  what.objects.emplace_back(*key, Bytes(metadataView.begin(), metadataView.end()));
  std::optional<LogCursor> cursor;
  if (at) cursor = at->cursor;
  auto appended = co_await appendLog(*store_, *id, cursor, what, budget);
  if (!appended) co_return failureOf(appended);
  if (appended->outcome == Appended::Outcome::committed && !appended->cursor->etag.empty()) {
    TableHistory history = at ? at->history : TableHistory{};
    history.readerClockMs = wallClockMs();
    if (auto ok = history.apply(commit); ok) {
      remember(uuid, std::make_shared<const TableView>(TableView{
                         uuid, *appended->cursor, std::move(history), std::move(loaded)}));
    }
  }
  co_return appended;
}

namespace {
constexpr std::size_t kIdleTurns = 1024;
struct HeldTurn {
  std::shared_ptr<InFlightLimit> limit;
  InFlightLimit::Permit permit;  // released before `limit` goes
};
}  // namespace

asio::awaitable<std::shared_ptr<void>> Lake::turn(const std::string& log) {
  if (turns_.size() > kIdleTurns) {
    std::erase_if(turns_, [](const auto& entry) { return entry.second.use_count() == 1; });
  }
  std::shared_ptr<InFlightLimit>& slot = turns_[log];
  if (!slot) slot = std::make_shared<InFlightLimit>(1);
  const std::shared_ptr<InFlightLimit> limit = slot;  // the map may change while we wait
  InFlightLimit::Permit permit = co_await limit->acquire(1);
  co_return std::make_shared<HeldTurn>(HeldTurn{limit, std::move(permit)});
}

asio::awaitable<StoreResult<StoredObject>> Lake::readObject(const std::string& key,
                                                            std::uint64_t maxBytes) {
  co_return co_await store_->get(key, maxBytes);
}

std::shared_ptr<const TableView> Lake::cached(const Uuid& uuid) {
  auto it = tables_.find(uuid.text());
  if (it == tables_.end()) {
    ++cacheMisses_;
    return nullptr;
  }
  ++cacheHits_;
  lru_.splice(lru_.end(), lru_, it->second.position);  // now the most recently used
  return it->second.view;
}

void Lake::remember(const Uuid& uuid, std::shared_ptr<const TableView> view) {
  const std::string key = uuid.text();
  auto it = tables_.find(key);
  if (it != tables_.end()) {
    if (it->second.view->cursor.revision() > view->cursor.revision()) return;  // keep the newer
    cacheUsed_ -= it->second.bytes;
    lru_.erase(it->second.position);
    tables_.erase(it);
  }
  const std::uint64_t bytes = footprint(*view);
  if (bytes > cacheBytes_) return;  // larger than the whole cache: read again each time
  while (cacheUsed_ + bytes > cacheBytes_ && !lru_.empty()) {
    auto oldest = tables_.find(lru_.front());
    cacheUsed_ -= oldest->second.bytes;
    tables_.erase(oldest);
    lru_.pop_front();
  }
  lru_.push_back(key);
  tables_.emplace(key, Entry{std::move(view), bytes, std::prev(lru_.end())});
  cacheUsed_ += bytes;
}

}  // namespace cairn::catalog
