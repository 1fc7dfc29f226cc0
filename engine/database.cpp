#include "engine/database.hpp"

#include <algorithm>
#include <chrono>

#include <boost/asio/this_coro.hpp>

#include "engine/store/object_store.hpp"
#include "engine/store/open_store.hpp"
#include "io/file.hpp"
#include "io/uring.hpp"

namespace cairn {

namespace asio = boost::asio;

Database::~Database() = default;

asio::awaitable<Res<std::unique_ptr<Database>>> Database::create(
    io::Uring& uring, const std::filesystem::path& dir, std::u16string_view databaseId,
    const std::optional<PublishTarget>& given, DatabaseOptions options) {
  std::optional<PublishTarget> target = given;
  if (target) {
    // Refuse a bad target before anything is created; record its absolute form.
    auto url = recordedStoreUrl(target->storeUrl, dir);
    if (!url) co_return err(Errc::usage, url.error());
    target->storeUrl = std::move(*url);
    // The state file keeps the URL as printable ASCII (docs/formats.md §5).
    bool printable = !target->storeUrl.empty() && target->storeUrl.size() <= kMaxStoreUrlBytes;
    for (char c : target->storeUrl) printable = printable && c > 0x20 && c < 0x7f;
    if (!printable) {
      co_return err(Errc::usage,
                    "the store URL must be 1..4096 bytes of printable ASCII without spaces");
    }
    if (target->ns.isNil() || target->publisher.isNil()) {
      co_return err(Errc::usage, "the namespace and publisher must not be the nil UUID");
    }
  }
  std::unique_ptr<Database> db(new Database());
  if (target) {
    // Open the store before the journal is created: a store that cannot be opened (no
    // credentials, a directory that cannot be made) leaves nothing behind to trip a retry.
    auto executor = co_await asio::this_coro::executor;
    auto store = openStore(uring, executor, target->storeUrl, StoreCreation::createIfMissing,
                           options.storeCredentials);
    if (!store) co_return err(Errc::usage, "store " + target->storeUrl + ": " + store.error());
    db->store_ = std::make_unique<CountingStore>(std::move(*store), options.storeCounters,
                                                 options.storeAdmission);
  }
  auto journal = co_await Journal::create(uring, dir, databaseId, options.journal);
  if (!journal) co_return failureOf(journal);
  db->journal_ = std::move(*journal);
  if (!target) {
    const std::string note = "this database publishes nowhere (created without a store)\n";
    auto marked = co_await io::durableReplace(uring, dir / kJournalOnlyFile, asBytes(note));
    if (!marked) {
      co_return err(Errc::io, "cannot write " + (dir / kJournalOnlyFile).string() + ": " +
                                  marked.error().message());
    }
  } else {
    PublisherState state;
    state.storeUrl = target->storeUrl;
    state.ns = target->ns;
    state.publisher = target->publisher;
    state.lineage = db->journal_->lineage();
    auto init = co_await initializePublisher(uring, dir, state);
    if (!init) co_return failureOf(init);
  }
  auto attached = co_await attach(uring, *db, dir, std::move(options));
  if (!attached) co_return failureOf(attached);
  co_return db;
}

asio::awaitable<Res<std::unique_ptr<Database>>> Database::open(io::Uring& uring,
                                                               const std::filesystem::path& dir,
                                                               DatabaseOptions options) {
  std::unique_ptr<Database> db(new Database());
  auto journal = co_await Journal::open(uring, dir, options.journal);
  if (!journal) co_return failureOf(journal);
  db->journal_ = std::move(*journal);
  auto attached = co_await attach(uring, *db, dir, std::move(options));
  if (!attached) co_return failureOf(attached);
  co_return db;
}

// Loads the publisher state (under the lock the journal holds) and opens its store.
asio::awaitable<Res<void>> Database::attach(io::Uring& uring, Database& db,
                                            const std::filesystem::path& dir,
                                            DatabaseOptions options) {
  // At least one byte and one request: a limit of 0 would admit everything.
  db.limits_.bytes = InFlightLimit(std::max<std::uint64_t>(options.inflightBytes, 1));
  db.limits_.requests = InFlightLimit(std::max<std::uint64_t>(options.inflightRequests, 1));
  auto state = co_await loadPublisherState(uring, dir);
  if (!state) co_return failureOf(state);
  if (!*state) {
    std::error_code ec;
    if (std::filesystem::exists(dir / kJournalOnlyFile, ec)) co_return Res<void>{};
    co_return err(Errc::missing,
                  dir.string() + " has no " + kPublisherStateFile + " and no " + kJournalOnlyFile +
                      " marker: if it publishes to a store, its publisher state was lost "
                      "(restore the file, or rebuild the directory with cairn recover "
                      "--writable); if it never published, create " +
                      (dir / kJournalOnlyFile).string());
  }
  if ((*state)->lineage != db.journal_->lineage()) {
    co_return err(Errc::binding, "the publisher state belongs to another journal (lineage " +
                                     toHex((*state)->lineage) + ")");
  }
  if (!options.openStore) {
    db.unopenedState_ = std::move(**state);
    co_return Res<void>{};
  }
  if (!db.store_) {  // create() opened it already
    auto executor = co_await asio::this_coro::executor;
    auto store = openStore(uring, executor, (*state)->storeUrl, StoreCreation::existing,
                           options.storeCredentials);
    if (!store) co_return err(Errc::usage, "store " + (*state)->storeUrl + ": " + store.error());
    db.store_ = std::make_unique<CountingStore>(std::move(*store), options.storeCounters,
                                                options.storeAdmission);
  }
  db.publisher_ =
      std::make_unique<Publisher>(uring, *db.journal_, *db.store_, dir, std::move(**state),
                                  db.limits_, std::move(options.publish));
  co_return Res<void>{};
}

namespace {

void note(PublicationStats& stats, const Res<PublishResult>& result,
          std::chrono::steady_clock::time_point started) {
  stats.lastSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  stats.seconds += stats.lastSeconds;
  if (result) {
    ++stats.published;
  } else if (result.error().code == Errc::uncertain) {
    ++stats.uncertain;
  } else if (result.error().code == Errc::conflict) {
    ++stats.conflict;
  } else {
    ++stats.failed;
  }
}

}  // namespace

asio::awaitable<Res<PublishResult>> Database::checkpoint() {
  if (!publisher_) {
    co_return err(Errc::usage,
                  "this database has no store to publish to (create it with a store URL)");
  }
  const auto started = std::chrono::steady_clock::now();
  auto result = co_await publisher_->checkpoint();
  note(checkpoints_, result, started);
  co_return result;
}

asio::awaitable<Res<PublishResult>> Database::compact() {
  if (!publisher_) {
    co_return err(Errc::usage,
                  "this database has no store to publish to (create it with a store URL)");
  }
  const auto started = std::chrono::steady_clock::now();
  auto result = co_await publisher_->compact();
  note(compactions_, result, started);
  co_return result;
}

DatabaseStats Database::stats() const {
  DatabaseStats s;
  s.journal = journal_->stats();
  s.checkpoints = checkpoints_;
  s.compactions = compactions_;
  if (store_) s.store = store_->stats();
  return s;
}

}  // namespace cairn
