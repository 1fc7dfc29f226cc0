// `cairn ingest`: records from standard input appended durably, checkpoints published as it goes.
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cli/commands.hpp"
#include "cli/commands/common.hpp"
#include "cli/input.hpp"
#include "cli/json.hpp"
#include "cli/progress.hpp"
#include "cli/run.hpp"
#include "engine/database.hpp"
#include "engine/format/keys.hpp"
#include "engine/graph/heads.hpp"
#include "engine/metrics_text.hpp"
#include "engine/ops/ingest.hpp"
#include "engine/ops/recovery.hpp"
#include "engine/runtime/async.hpp"
#include "engine/runtime/task_group.hpp"
#include "engine/store/open_store.hpp"
#include "engine/store/store_errors.hpp"
#include "io/uring.hpp"

namespace cairn::cli {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

// ---- ingest ----------------------------------------------------------------------------------

// The bounds of ingest's checkpoint triggers (its options are refused outside them before
// anything is created): a millisecond to a week, a MiB to a TiB of records.
constexpr double kMinCheckpointSeconds = 0.001;
constexpr double kMaxCheckpointSeconds = 7.0 * 86400;
constexpr std::uint64_t kMaxCheckpointMib = std::uint64_t{1} << 20;

struct IngestCli {
  std::string dir;
  std::string store;
  std::string dbId;
  std::string ns;
  std::string publisher;
  std::uint64_t checkpointMib = 64;
  double checkpointSeconds = 30;
  std::uint64_t segmentMib = 32;
  bool lengthPrefixed = false;
  bool json = false;
  std::string metricsFile;
};

asio::awaitable<Res<std::unique_ptr<Database>>> openOrCreate(io::Uring& uring,
                                                             const IngestCli& opt) {
  DatabaseOptions options = databaseOptions(opt.segmentMib);
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::path(opt.dir) / Journal::kFileName, ec)) {
    auto db = co_await Database::open(uring, opt.dir, std::move(options));
    if (!db) co_return db;
    Publisher* p = (*db)->publisher();
    if (!opt.store.empty() && (!p || p->state().storeUrl != opt.store)) {
      co_return err(Errc::usage, "--store differs from the store " + opt.dir + " publishes to (" +
                                     (p ? p->state().storeUrl : std::string("none")) + ")");
    }
    co_return db;
  }
  std::string id = opt.dbId.empty() ? std::filesystem::path(opt.dir).filename().string() : opt.dbId;
  auto units = utf8ToUtf16(id);
  if (!units || units->empty()) co_return err(Errc::usage, "--db-id is not valid UTF-8");
  std::optional<PublishTarget> target;
  if (!opt.store.empty()) {
    target = PublishTarget{opt.store, Uuid::random(), Uuid::random()};
    if (!opt.ns.empty()) {
      auto ns = Uuid::parse(opt.ns);
      if (!ns) co_return err(Errc::usage, "--namespace is not a canonical UUID");
      target->ns = *ns;
    }
    if (!opt.publisher.empty()) {
      auto p = Uuid::parse(opt.publisher);
      if (!p) co_return err(Errc::usage, "--publisher is not a canonical UUID");
      target->publisher = *p;
    }
  }
  co_return co_await Database::create(uring, opt.dir, *units, target, std::move(options));
}

// What `cairn ingest` prints when it is done.
void printIngested(const IngestCli& opt, const IngestReport& report, const Database& db,
                   double seconds, std::optional<JsonObject>& json, std::string& text) {
  const auto& last = report.lastPublished;
  if (opt.json) {
    JsonObject out;
    out.add("ok", true)
        .add("records", report.records)
        .add("bytes", report.bytes)
        .add("last_sequence", report.lastSequence)
        .add("checkpoints", report.checkpoints)
        .add("seconds", seconds);
    if (last) {
      out.add("revision", last->head.fields().revision)
          .add("head_id", toHex(last->head.id()))
          .add("prefix_sequence", last->head.fields().prefixSequence);
    }
    if (const PublisherState* state = db.publisherState()) out.add("namespace", state->ns.text());
    json = std::move(out);
    return;
  }
  text = std::to_string(report.records) + " records (" + std::to_string(report.bytes) +
         " bytes) durable through sequence " + std::to_string(report.lastSequence) + " in " +
         std::to_string(seconds) + " s; " + std::to_string(report.checkpoints) + " checkpoints";
  if (last) {
    text += ", current revision " + std::to_string(last->head.fields().revision) + " (head " +
            toHex(last->head.id()) + ")";
  }
  text += "\n";
}

// The ingest job (engine/ops/ingest.hpp) on standard input, with a progress line on a terminal.
asio::awaitable<int> runIngest(io::Uring& uring, const IngestCli& opt) {
  auto start = Clock::now();
  auto opened = co_await openOrCreate(uring, opt);
  if (!opened) co_return reportJson(opt.json, opened.error(), secondsSince(start));
  Database& db = **opened;
  noteTornTail(db.journal());
  IngestOptions options;
  options.checkpointBytes = opt.checkpointMib << 20;
  options.checkpointInterval =
      std::chrono::milliseconds(static_cast<std::int64_t>(opt.checkpointSeconds * 1000));
  IngestHooks hooks;
  // The metrics file is replaced at most every kMetricsFileSeconds while the job runs, and
  // once more at the end.
  constexpr double kMetricsFileSeconds = 5;
  double metricsWrittenAt = -kMetricsFileSeconds;
  hooks.progress = [&](const IngestReport& r) {
    setItems("records", r.records, 0, r.bytes);
    setPhase(std::to_string(r.checkpoints) + " checkpoints");
    const double s = secondsSince(start);
    if (!opt.metricsFile.empty() && s - metricsWrittenAt >= kMetricsFileSeconds) {
      writeMetrics(db, opt.metricsFile);
      metricsWrittenAt = s;
    }
  };
  hooks.retrying = [](const Error& e) {
    std::fprintf(stderr, "\ncairn: checkpoint will be retried: %s\n", e.message.c_str());
  };
  StdinRecords records(co_await asio::this_coro::executor, opt.lengthPrefixed);
  // The first SIGINT/SIGTERM ends the input at the last whole record: the job then finishes
  // as at the input's end (durable, a last checkpoint, the acknowledgement).
  setStopAction([&records] { records.stop(); });
  auto outcome = co_await ingest(
      db, [&]() { return records.next(); }, options, hooks);
  setStopAction({});
  setItems("records", outcome.report.records, 0, outcome.report.bytes);
  setPhase(std::to_string(outcome.report.checkpoints) + " checkpoints");
  writeMetrics(db, opt.metricsFile);
  if (outcome.failure) {
    const auto& unknown = outcome.report.unknown;
    co_return reportUnacknowledged(opt.json, *outcome.failure, outcome.report.lastSequence,
                                   unknown ? &*unknown : nullptr, secondsSince(start),
                                   outcome.report.records);
  }
  std::optional<JsonObject> json;
  std::string text;
  printIngested(opt, outcome.report, db, secondsSince(start), json, text);
  co_return acknowledge(outcome.report.lastSequence, text, json ? &*json : nullptr);
}

}  // namespace

void addIngestCommand(CLI::App& app, int& exitCode) {
  {
    auto opt = std::make_shared<IngestCli>();
    CLI::App* cmd = app.add_subcommand(
        "ingest", "append records from standard input durably and publish checkpoints as it goes");
    cmd->add_option("DIR", opt->dir, "database directory (created if it holds no journal)")
        ->required();
    cmd->add_option("--store", opt->store, "store URL to publish to (for a new database)");
    cmd->add_option("--db-id", opt->dbId, "database id of a new database (default: DIR's name)");
    cmd->add_option("--namespace", opt->ns, "namespace UUID of a new database (default: random)");
    cmd->add_option("--publisher", opt->publisher,
                    "publisher UUID of a new database (default: random)");
    cmd->add_option("--checkpoint-mib", opt->checkpointMib,
                    "publish after this many MiB of records (default 64)")
        ->check(CLI::Range(std::uint64_t{1}, kMaxCheckpointMib));
    cmd->add_option("--checkpoint-seconds", opt->checkpointSeconds,
                    "publish after this many seconds (default 30)")
        ->check(CLI::Range(kMinCheckpointSeconds, kMaxCheckpointSeconds));
    cmd->add_option("--segment-mib", opt->segmentMib, "segment target size, 1..64 MiB")
        ->check(CLI::Range(1, 64));
    cmd->add_flag("--length-prefixed", opt->lengthPrefixed,
                  "records are a u32 big-endian length and the bytes (default: one per line)");
    addMetricsFileOption(cmd, opt->metricsFile);
    cmd->add_flag("--json", opt->json, "print one JSON object at the end");
    addProgressOptions(cmd, &opt->json);
    addTimeoutOption(cmd, 0);
    cmd->callback([&exitCode, opt] {
      exitCode = runAsync([opt](io::Uring& u) { return runIngest(u, *opt); });
    });
  }
}

}  // namespace cairn::cli
