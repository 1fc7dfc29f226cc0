// The embedded API (docs/embedding.md): one database directory, its durable journal, and the
// publisher that checkpoints it to the store its state names.
//
//   auto db = co_await cairn::Database::open(uring, "/var/lib/app/db");
//   std::uint64_t seq = *co_await (*db)->append(payload);   // durable when it returns
//   auto published = co_await (*db)->checkpoint();          // selected, or a typed error
#pragma once

#include <boost/asio/awaitable.hpp>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "engine/journal/journal.hpp"
#include "engine/publish/publisher.hpp"
#include "engine/runtime/budget.hpp"
#include "engine/store/counting_store.hpp"

namespace cairn {

class ObjectStore;
namespace net {
class S3CredentialsProvider;
}

// Where a new database publishes: the store URL (docs/stores.md) and its bindings.
struct PublishTarget {
  std::string storeUrl;
  Uuid ns;         // the namespace; Uuid::random() for a new one
  Uuid publisher;  // this publisher's binding; Uuid::random() for a new one
};

struct DatabaseOptions {
  JournalOptions journal;
  PublishOptions publish;
  // The engine's in-flight limits (EngineLimits).
  std::uint64_t inflightBytes = kDefaultInFlightBytes;
  std::uint64_t inflightRequests = kDefaultInFlightRequests;
  // False: the publisher state is read but its store is not opened (no credentials needed),
  // and publisher() is nullptr; publisherState() still answers (`cairn status --offline`).
  bool openStore = true;
  // An S3 store's keys from the embedder (asked at every request; net::RefreshableCredentials
  // can be replaced while the database runs) instead of the environment and the AWS files.
  std::shared_ptr<net::S3CredentialsProvider> storeCredentials;
  // Counters the store's operations are also counted into (shared with the embedder's other
  // stores; stats() reports them), and a check that may refuse an operation before it is sent
  // (e.g. once the embedder begins to shut down: a publication then ends at its next request,
  // its pending intent kept when it had one). Both optional.
  std::shared_ptr<StoreCounters> storeCounters;
  StoreAdmission storeAdmission;
};

// What checkpoint() (or compact()) calls ended in, and how long they took.
struct PublicationStats {
  std::uint64_t published = 0;  // ok: the store's head selects it
  std::uint64_t failed = 0;     // refused or failed: nothing selected
  std::uint64_t uncertain = 0;  // unknown outcome; a pending intent records it
  std::uint64_t conflict = 0;   // the store's head is not the one this database expects
  double seconds = 0;           // summed over the calls
  double lastSeconds = 0;       // the latest call's
};

// What the database did since it was opened (docs/embedding.md, "Statistics").
struct DatabaseStats {
  JournalStats journal;
  PublicationStats checkpoints;
  PublicationStats compactions;
  std::optional<StoreStats> store;  // absent when no store is open
};

class Database {
 public:
  // Creates DIR with a new journal and, with a target, the publisher state (the namespace
  // starts uninitialized); without one, the journal-only marker. Takes the directory lock. A
  // target's store is opened first (whatever options.openStore says): one that cannot be opened is
  // a usage error, and no journal is created. (A directory store's directory is made then, and
  // stays if the journal cannot be created.)
  static boost::asio::awaitable<Res<std::unique_ptr<Database>>> create(
      io::Uring& uring, const std::filesystem::path& dir, std::u16string_view databaseId,
      const std::optional<PublishTarget>& target, DatabaseOptions options = {});
  // Opens DIR: the journal (taking the lock, cutting a torn tail unless options.journal says
  // read-only), the publisher state and the store it names. A directory with neither a
  // publisher state nor the journal-only marker is refused (its state was lost).
  static boost::asio::awaitable<Res<std::unique_ptr<Database>>> open(
      io::Uring& uring, const std::filesystem::path& dir, DatabaseOptions options = {});
  ~Database();

  // Appends one record; returns its sequence once it is durable (group commit). When the
  // journal's durable write fails (docs/embedding.md): Errc::io, the record is not in the
  // journal and cannot come back; Errc::uncertain, it may be durable or not (appendFailure()
  // gives the range; reopening the database tells). No append succeeds after either until the
  // database is reopened.
  boost::asio::awaitable<Res<std::uint64_t>> append(ByteView payload) {
    return journal_->append(payload);
  }
  // Why appends stopped: the failed durable write, the records durable before it and those
  // unknown (Journal::failure()); nullopt while appends work.
  const std::optional<JournalFailure>& appendFailure() const { return journal_->failure(); }
  // Publishes a checkpoint of everything acknowledged so far (docs/design.md §6.2).
  boost::asio::awaitable<Res<PublishResult>> checkpoint();
  // Compaction (Publisher::compact): the same cutoff in fewer, larger segments.
  boost::asio::awaitable<Res<PublishResult>> compact();

  Journal& journal() { return *journal_; }
  // nullptr for a journal-only database (created without a target), or one opened without
  // its store.
  Publisher* publisher() { return publisher_.get(); }
  // The publisher state; nullptr for a journal-only database.
  const PublisherState* publisherState() const {
    if (publisher_) return &publisher_->state();
    return unopenedState_ ? &*unopenedState_ : nullptr;
  }
  ObjectStore* store() { return store_.get(); }
  // A snapshot of the counters; call it where the database runs (its io_context's thread).
  DatabaseStats stats() const;
  EngineLimits& limits() { return limits_; }

 private:
  Database() = default;
  static boost::asio::awaitable<Res<void>> attach(io::Uring& uring, Database& db,
                                                  const std::filesystem::path& dir,
                                                  DatabaseOptions options);

  EngineLimits limits_;
  std::unique_ptr<Journal> journal_;
  std::unique_ptr<CountingStore> store_;  // every operation counted (stats())
  std::unique_ptr<Publisher> publisher_;
  std::optional<PublisherState> unopenedState_;  // DatabaseOptions::openStore false
  PublicationStats checkpoints_;
  PublicationStats compactions_;
};

}  // namespace cairn
