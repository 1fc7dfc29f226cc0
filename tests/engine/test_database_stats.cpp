// Database::stats() and its Prometheus text (engine/metrics_text.hpp): the counters follow what
// the database did, and the text says the same.
#include <catch2/catch.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/this_coro.hpp>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>

#include "engine/database.hpp"
#include "engine/metrics_text.hpp"
#include "engine/runtime/async.hpp"
#include "io/uring.hpp"
#include "tests/io/io_test_support.hpp"

using namespace cairn;
namespace asio = boost::asio;

namespace {

constexpr int kAppenders = 200;

// kAppenders concurrent appends (group commit shares the syncs), then one checkpoint.
asio::awaitable<Res<PublishResult>> appendThenCheckpoint(Database& db, int& failures) {
  int pending = kAppenders;
  Signal allDone;
  auto executor = co_await asio::this_coro::executor;
  for (int i = 0; i < kAppenders; ++i) {
    asio::co_spawn(
        executor,
        [&, record = "record " + std::to_string(i)]() -> asio::awaitable<void> {
          auto sequence = co_await db.append(asBytes(record));
          if (!sequence) ++failures;
          if (--pending == 0) allDone.notify();
        },
        asio::detached);
  }
  co_await allDone.wait();
  co_return co_await db.checkpoint();
}

// The value of the one line of `text` that starts with `series` and a space.
std::optional<double> sampleOf(const std::string& text, const std::string& series) {
  std::istringstream lines(text);
  std::optional<double> found;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(series + " ", 0) == 0) {
      if (found) return std::nullopt;  // twice: not one series
      found = std::stod(line.substr(series.size() + 1));
    }
  }
  return found;
}

}  // namespace

TEST_CASE("database statistics: appends, batches, checkpoints and store operations",
          "[engine][stats]") {
  io::test::TempDir dir;
  asio::io_context context(1);
  auto uring = io::Uring::create(context);
  REQUIRE(uring.ok());
  PublishTarget target{(dir.path() / "store").string(), Uuid::random(), Uuid::random()};
  auto created = io::test::runToCompletion(
      context, Database::create(**uring, dir.path() / "db", u"s", target));
  REQUIRE(created.ok());
  Database& db = **created;

  const DatabaseStats before = db.stats();
  CHECK(before.journal.appends == 0);
  CHECK(before.journal.syncs == 0);
  REQUIRE(before.store.has_value());
  CHECK(before.store->total() == 0);
  CHECK_FALSE(before.store->transport.has_value());  // a directory store has no transport

  int failures = 0;
  auto published = io::test::runToCompletion(context, appendThenCheckpoint(db, failures));
  REQUIRE(failures == 0);
  REQUIRE(published.ok());

  const DatabaseStats s = db.stats();
  const JournalStats& j = s.journal;
  CHECK(j.appends == kAppenders);
  CHECK(j.syncs >= 1);
  CHECK(j.syncs <= kAppenders);
  CHECK(std::accumulate(j.batches.begin(), j.batches.end(), std::uint64_t{0}) == j.syncs);
  CHECK(j.largestBatch >= (kAppenders + j.syncs - 1) / j.syncs);  // some batch is that big
  CHECK(j.largestBatch <= kAppenders);
  // Each frame holds its payload and more (length, CRC): more bytes than the payloads.
  CHECK(j.bytes > kAppenders * std::string("record 0").size());
  CHECK(j.bytes == db.journal().endOffset() - db.journal().offsetAfter(0));
  CHECK(j.syncSeconds > 0);
  // The first batch made the journal's room: zeros to the first 16 MiB (docs/journal.md).
  CHECK(j.roomBytes == kJournalRoomBytes - db.journal().offsetAfter(0));
  CHECK(j.roomSeconds > 0);
  CHECK(j.roomSeconds <= j.syncSeconds);

  CHECK(s.checkpoints.published == 1);
  CHECK(s.checkpoints.failed + s.checkpoints.uncertain + s.checkpoints.conflict == 0);
  CHECK(s.checkpoints.lastSeconds > 0);
  CHECK(s.checkpoints.seconds == s.checkpoints.lastSeconds);
  CHECK(s.compactions.published == 0);

  // The store saw the segment and the manifest created, and the head selected; every
  // operation counted ended somewhere.
  REQUIRE(s.store.has_value());
  const auto& ops = s.store->operations;
  const auto ok = static_cast<std::size_t>(StoreStatus::ok);
  CHECK(ops[static_cast<std::size_t>(StoreOp::putIfAbsent)][ok] >= 2);
  CHECK(ops[static_cast<std::size_t>(StoreOp::putIfAbsent)][ok] +
            ops[static_cast<std::size_t>(StoreOp::putIfMatch)][ok] >=
        3);
  CHECK(s.store->total() >= 3);

  // The text says the same, and the histogram adds up.
  const std::string text = prometheusText(s);
  CHECK(sampleOf(text, "cairn_journal_appends_total") == double(kAppenders));
  CHECK(sampleOf(text, "cairn_journal_syncs_total") == double(j.syncs));
  CHECK(sampleOf(text, "cairn_journal_room_bytes_total") == double(j.roomBytes));
  CHECK(sampleOf(text, "cairn_journal_batch_records_bucket{le=\"+Inf\"}") == double(j.syncs));
  CHECK(sampleOf(text, "cairn_journal_batch_records_count") == double(j.syncs));
  CHECK(sampleOf(text, "cairn_journal_batch_records_sum") == double(kAppenders));
  CHECK(sampleOf(text, "cairn_checkpoints_total{outcome=\"published\"}") == 1.0);
  CHECK(sampleOf(text, "cairn_store_operations_total{op=\"put_if_absent\",outcome=\"ok\"}") ==
        double(ops[static_cast<std::size_t>(StoreOp::putIfAbsent)][ok]));
  CHECK(text.find("cairn_store_attempts_total") == std::string::npos);
  CHECK(text.find("# TYPE cairn_journal_batch_records histogram\n") != std::string::npos);

  // The file is replaced whole, and nothing is left beside it.
  const auto file = dir.path() / "cairn.prom";
  REQUIRE(writeMetricsFile(file, "old\n").ok());
  REQUIRE(writeMetricsFile(file, text).ok());
  std::ifstream in(file);
  std::stringstream back;
  back << in.rdbuf();
  CHECK(back.str() == text);
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  CHECK(entries == 3);  // db, store, cairn.prom
  CHECK_FALSE(writeMetricsFile(dir.path() / "no" / "such" / "dir.prom", text).ok());

  // A checkpoint that does not publish is counted by the outcome it returned.
  std::filesystem::remove_all(dir.path() / "store");
  failures = 0;
  auto refused = io::test::runToCompletion(context, appendThenCheckpoint(db, failures));
  REQUIRE(failures == 0);
  REQUIRE_FALSE(refused.ok());
  const PublicationStats after = db.stats().checkpoints;
  CHECK(after.published == 1);
  CHECK(after.uncertain == (refused.error().code == Errc::uncertain ? 1u : 0u));
  CHECK(after.conflict == (refused.error().code == Errc::conflict ? 1u : 0u));
  CHECK(after.failed ==
        (refused.error().code != Errc::uncertain && refused.error().code != Errc::conflict ? 1u
                                                                                           : 0u));
  CHECK(after.seconds > s.checkpoints.seconds);
  CHECK(db.stats().journal.appends == 2 * kAppenders);
}
