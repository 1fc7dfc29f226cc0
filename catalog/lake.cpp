#include "catalog/lake.hpp"

#include <filesystem>

#include "engine/store/store_errors.hpp"

namespace cairn::catalog {

namespace asio = boost::asio;

namespace {

Failure<Error> damaged(const std::string& what) { return err(Errc::corrupt, what); }

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
  return bytes;
}

}  // namespace

Lake::Lake(std::string id, std::unique_ptr<ObjectStore> store, const StoreUrl& url, Uuid publisher,
           std::uint64_t cacheBytes)
    : id_(std::move(id)),
      store_(std::move(store)),
      root_(rootOf(url)),
      publisher_(publisher),
      lakeLog_(*LogIdentity::make(lakeLogNamespace(id_), publisher, lakeLogDatabaseId(id_))),
      cacheBytes_(cacheBytes) {
  if (url.kind == StoreUrl::Kind::s3) {
    const std::string rest = root_.substr(std::string("s3://").size());
    rootAliases_ = {"s3a://" + rest, "s3n://" + rest};
  }
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
    if (!next) next = base ? base->dir : LakeDirectory{};
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
  const std::function<void()> reset = [&] { next = LakeDirectory{}; };
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
  auto appended = co_await appendLog(*store_, lakeLog_, view.cursor, what, budget);
  if (!appended) co_return failureOf(appended);
  if (appended->outcome == Appended::Outcome::committed && !appended->cursor->etag.empty()) {
    LakeDirectory dir = view.dir;
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
                                                                   OperationBudget& budget) {
  const std::shared_ptr<const TableView> base = cached(uuid);
  auto id = tableLogIdentity(uuid);
  if (!id) co_return failureOf(id);
  std::optional<LogCursor> from;
  if (base) from = base->cursor;
  std::optional<TableHistory> next;
  const RecordSink sink = [&](std::uint64_t sequence, ByteView payload) -> Res<void> {
    if (!next) next = base ? base->history : TableHistory{};
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
  const std::function<void()> reset = [&] { next = TableHistory{}; };
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
    if (auto ok = history.apply(commit); ok) {
      remember(uuid, std::make_shared<const TableView>(TableView{
                         uuid, *appended->cursor, std::move(history), std::move(loaded)}));
    }
  }
  co_return appended;
}

asio::awaitable<StoreResult<StoredObject>> Lake::readObject(const std::string& key,
                                                            std::uint64_t maxBytes) {
  co_return co_await store_->get(key, maxBytes);
}

std::shared_ptr<const TableView> Lake::cached(const Uuid& uuid) {
  auto it = tables_.find(uuid.text());
  if (it == tables_.end()) return nullptr;
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
