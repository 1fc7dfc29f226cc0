// `cairn checkpoint` and `cairn compact`: publish the journal, or the current head again in fewer
// segments.
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

struct CheckpointCli {
  std::string dir;
  std::uint64_t segmentMib = 32;
  std::int64_t reuseMaxAge = 600;
  LimitOptions limits;
  bool compact = false;
  bool json = false;
  std::string metricsFile;
};

// The reuse age (docs/operations.md, "Vacuum and concurrent publication").
void addReuseOption(CLI::App* cmd, std::int64_t& seconds) {
  cmd->add_option("--reuse-max-age", seconds,
                  "rely on an existing object only while younger than this many seconds, "
                  "else rewrite it (default 600, 5..1800: vacuum's least grace is twice the "
                  "largest)")
      ->check(
          CLI::Range(std::int64_t{kMinReuseMaxAge.count()}, std::int64_t{kMaxReuseMaxAge.count()}));
}

void printPublished(const PublishResult& r, bool json, double seconds) {
  const HeadFields& f = r.head.fields();
  if (json) {
    printJson(JsonObject{}
                  .add("ok", true)
                  .add("outcome", publishOutcomeName(r.outcome))
                  .add("revision", f.revision)
                  .add("head_id", toHex(r.head.id()))
                  .add("prefix_sequence", f.prefixSequence)
                  .add("prefix_length", f.prefixLength)
                  .add("manifest_sha256", toHex(f.manifestSha256))
                  .add("reconciled_intent", r.reconciledIntent)
                  .add("objects_written", r.objectsWritten)
                  .add("objects_reused", r.objectsReused)
                  .add("bytes_uploaded", r.bytesUploaded)
                  .add("objects_rewritten", r.objectsRewritten)
                  .add("segments", r.segments)
                  .add("seconds", seconds));
  } else {
    std::cout << publishOutcomeName(r.outcome) << ": revision " << f.revision << ", head "
              << toHex(r.head.id()) << ", prefix sequence " << f.prefixSequence
              << (r.reconciledIntent ? " (a pending intent was reconciled first)" : "") << "\n";
  }
}

asio::awaitable<int> runCheckpoint(io::Uring& uring, const CheckpointCli& opt) {
  auto start = Clock::now();
  auto db = co_await Database::open(uring, opt.dir,
                                    databaseOptions(opt.segmentMib, opt.reuseMaxAge, opt.limits));
  if (!db) co_return reportJson(opt.json, db.error(), secondsSince(start));
  noteTornTail((*db)->journal());
  Res<PublishResult> published = err(Errc::usage, "not run");
  if (opt.compact) {
    published = co_await (*db)->compact();
  } else {
    published = co_await (*db)->checkpoint();
  }
  writeMetrics(**db, opt.metricsFile);
  if (!published) co_return reportJson(opt.json, published.error(), secondsSince(start));
  printPublished(*published, opt.json, secondsSince(start));
  co_return 0;
}

// `checkpoint` and `compact` take the same options; compact's segments default to 64 MiB.
void addCheckpointCommand(CLI::App& app, int& exitCode, bool compact) {
  auto opt = std::make_shared<CheckpointCli>();
  opt->compact = compact;
  if (compact) opt->segmentMib = 64;
  CLI::App* cmd =
      compact ? app.add_subcommand("compact",
                                   "publish the current head's cutoff again in fewer, larger "
                                   "segments (a new generation)")
              : app.add_subcommand("checkpoint",
                                   "publish a checkpoint of the journal (reconciling a pending "
                                   "intent first)");
  cmd->add_option("DIR", opt->dir, "database directory")->required();
  cmd->add_option(
         "--segment-mib", opt->segmentMib,
         compact ? "segment target size, 1..64 MiB (default 64)" : "segment target size, 1..64 MiB")
      ->check(CLI::Range(1, 64));
  addReuseOption(cmd, opt->reuseMaxAge);
  addLimitOptions(cmd, opt->limits);
  addMetricsFileOption(cmd, opt->metricsFile);
  cmd->add_flag("--json", opt->json, "print one JSON object");
  addProgressOptions(cmd, &opt->json);
  addTimeoutOption(cmd, 0);
  cmd->callback([&exitCode, opt] {
    exitCode = runAsync([opt](io::Uring& u) { return runCheckpoint(u, *opt); });
  });
}

}  // namespace

void addCheckpointCommands(CLI::App& app, int& exitCode) {
  addCheckpointCommand(app, exitCode, /*compact=*/false);
  addCheckpointCommand(app, exitCode, /*compact=*/true);
}

}  // namespace cairn::cli
