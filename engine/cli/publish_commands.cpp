// cairn checkpoint DIR | cairn status DIR | cairn log --store URL --namespace N |
// cairn recover DIR --store URL --namespace N [--head ID] [--writable] |
// cairn ingest DIR [--store URL]
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

#include "engine/cli/commands.hpp"
#include "engine/cli/input.hpp"
#include "engine/cli/json.hpp"
#include "engine/cli/progress.hpp"
#include "engine/cli/run.hpp"
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

// Test-only fault points (docs/protocol.md): CAIRN_TEST_FAULT=POINT[:N] kills this process
// with SIGKILL the N-th time (default 1) the publisher passes POINT.
FaultHook faultHookFromEnvironment() {
  const char* spec = std::getenv("CAIRN_TEST_FAULT");
  if (spec == nullptr || *spec == '\0') return {};
  // POINT[:N[:SIGNAL]]: SIGNAL is KILL (the default), TERM, INT or STOP. A TERM or INT is
  // handled as one sent from outside (engine/cli/progress.hpp), and the publisher goes on; a
  // STOP holds the process there until a test sends SIGCONT (to race it deterministically).
  std::string text(spec);
  std::string point = text;
  long target = 1;
  int sig = SIGKILL;
  if (auto colon = text.find(':'); colon != std::string::npos) {
    point = text.substr(0, colon);
    target = std::strtol(text.c_str() + colon + 1, nullptr, 10);
    if (auto second = text.find(':', colon + 1); second != std::string::npos) {
      const std::string name = text.substr(second + 1);
      sig = name == "TERM" ? SIGTERM : name == "INT" ? SIGINT : name == "STOP" ? SIGSTOP : SIGKILL;
    }
  }
  auto passes = std::make_shared<long>(0);
  return [point, target, sig, passes](std::string_view at) {
    if (at == point && ++*passes == target) ::raise(sig);
  };
}

struct CheckpointCli {
  std::string dir;
  std::uint64_t segmentMib = 32;
  std::int64_t reuseMaxAge = 600;
  LimitOptions limits;
  bool compact = false;
  bool json = false;
  std::string metricsFile;
};

// --metrics-file PATH: the database's statistics in the Prometheus text format, written
// atomically (node_exporter's textfile collector reads such files; docs/operations.md).
void addMetricsFileOption(CLI::App* cmd, std::string& path) {
  cmd->add_option("--metrics-file", path,
                  "write the statistics in the Prometheus text format to this file (atomically "
                  "replaced; e.g. for node_exporter's textfile collector)");
}

// A metrics file that cannot be written is said, and does not change the command's outcome.
void writeMetrics(const Database& db, const std::string& path) {
  if (path.empty()) return;
  auto written = writeMetricsFile(path, prometheusText(db.stats()));
  if (!written)
    std::fprintf(stderr, "cairn: warning: --metrics-file: %s\n", written.error().c_str());
}

DatabaseOptions databaseOptions(std::uint64_t segmentMib, std::int64_t reuseMaxAge = 600,
                                const LimitOptions& limits = {}) {
  DatabaseOptions o;
  watchDatabase(o);
  o.publish.checkpoint.segmentTargetBytes = segmentMib << 20;
  o.publish.checkpoint.reuseMaxAge = std::chrono::seconds(reuseMaxAge);
  o.publish.fault = faultHookFromEnvironment();
  o.publish.budget = limits.budget();
  o.inflightBytes = limits.inflightMib << 20;
  o.inflightRequests = limits.inflightRequests;
  return o;
}

// The reuse age (docs/operations.md, "Vacuum and concurrent publication").
void addReuseOption(CLI::App* cmd, std::int64_t& seconds) {
  cmd->add_option("--reuse-max-age", seconds,
                  "rely on an existing object only while younger than this many seconds, "
                  "else rewrite it (default 600, 5..1800: vacuum's least grace is twice the "
                  "largest)")
      ->check(
          CLI::Range(std::int64_t{kMinReuseMaxAge.count()}, std::int64_t{kMaxReuseMaxAge.count()}));
}

JsonObject headSummaryJson(const Head& h) {
  const HeadFields& f = h.fields();
  JsonObject o;
  o.add("revision", f.revision)
      .add("id", toHex(h.id()))
      .add("prefix_sequence", f.prefixSequence)
      .add("prefix_length", f.prefixLength)
      .add("manifest_sha256", toHex(f.manifestSha256))
      .add("publication", f.publication.text())
      .add("publisher", f.publisher.text());
  return o;
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

// ---- status ----------------------------------------------------------------------------------

struct StatusCli {
  std::string dir;
  bool offline = false;
  bool json = false;
};

// The torn tail a read-only open found (the next writer cuts it), and the files that keep
// the bytes of earlier cuts (evidence, never deleted by cairn).
void describeTails(const std::string& dir, const Journal& journal, JsonObject& out,
                   std::string& text) {
  if (const auto& t = journal.tornTail()) {
    out.add("torn_tail", JsonObject{}
                             .add("offset", t->offset)
                             .add("bytes", t->bytes)
                             .add("sequence", t->sequence)
                             .add("reason", t->reason));
    text += "torn tail       " + std::to_string(t->bytes) + " bytes at offset " +
            std::to_string(t->offset) + " (" + t->reason + "): the next writer cuts them\n";
  } else {
    out.addNull("torn_tail");
  }
  std::vector<std::pair<std::string, std::uint64_t>> kept;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(kTornTailFilePrefix, 0) != 0) continue;
    std::error_code sizeError;
    const auto size = std::filesystem::file_size(it->path(), sizeError);
    kept.emplace_back(name, sizeError ? 0 : size);
  }
  std::sort(kept.begin(), kept.end());
  JsonArray list;
  for (const auto& [name, size] : kept) {
    list.add(JsonObject{}.add("file", name).add("bytes", std::uint64_t{size}));
    text += "cut bytes kept  " + name + " (" + std::to_string(size) + " bytes)\n";
  }
  out.add("torn_tail_files", std::move(list));
}

// The publisher state's part of `status`: the store, the bindings, the expected head and
// any pending intent.
void describeState(const PublisherState& s, JsonObject& out, std::string& text) {
  out.add("store", s.storeUrl).add("namespace", s.ns.text()).add("publisher", s.publisher.text());
  text += "store           " + s.storeUrl + "\nnamespace       " + s.ns.text() +
          "\npublisher       " + s.publisher.text() + "\n";
  if (s.expected) {
    out.add("expected", headSummaryJson(s.expected->head).add("etag", s.expected->etag));
    text += "expected head   revision " + std::to_string(s.expected->head.fields().revision) +
            ", id " + toHex(s.expected->head.id()) + ", prefix sequence " +
            std::to_string(s.expected->head.fields().prefixSequence) + "\n";
  } else {
    out.addNull("expected");
    text += "expected head   none (the namespace is uninitialized)\n";
  }
  if (s.pending) {
    out.add("pending", headSummaryJson(s.pending->candidate)
                           .add("precondition", s.pending->precondition == Precondition::ifMatch
                                                    ? "if-match"
                                                    : "if-none-match")
                           .add("etag", s.pending->etag));
    text += "pending intent  candidate revision " +
            std::to_string(s.pending->candidate.fields().revision) + ", id " +
            toHex(s.pending->candidate.id()) + " (run cairn checkpoint to reconcile)\n";
  } else {
    out.addNull("pending");
    text += "pending intent  none\n";
  }
}

// What the store selects now, judged against the local state; reading only.
asio::awaitable<Res<void>> describeSelection(io::Uring& uring, const PublisherState& s,
                                             JsonObject& out, std::string& text) {
  auto opened = openStore(uring, co_await asio::this_coro::executor, s.storeUrl);
  if (!opened) co_return err(Errc::usage, "store " + s.storeUrl + ": " + opened.error());
  auto store = watchStore(std::move(*opened));
  OperationBudget budget;
  auto seen = co_await observeHead(*store, s.ns, budget);
  std::string selected;
  if (!seen) {
    selected = "unknown";
    out.add("store_error", seen.error().message);
  } else if (seen->missing()) {
    selected = "missing";
  } else if (seen->malformed()) {
    selected = "malformed";
  } else {
    const Head& h = *seen->head;
    if (s.pending && h.image() == s.pending->candidate.image()) {
      selected = "candidate";
    } else if (s.expected && h.image() == s.expected->head.image()) {
      selected = "expected";
    } else {
      selected = "other";
    }
    out.add("store_head", headSummaryJson(h));
  }
  out.add("selected", selected);
  text += "store selects   " + selected + "\n";
  co_return Res<void>{};
}

asio::awaitable<int> runStatus(io::Uring& uring, const StatusCli& opt) {
  auto start = Clock::now();
  // 1. The local files, under the directory's lock.
  DatabaseOptions options;
  options.openStore = false;        // opened below, once the lock is released
  options.journal.readOnly = true;  // status writes nothing (a torn tail is only reported)
  auto db = co_await Database::open(uring, opt.dir, options);
  if (!db) co_return reportJson(opt.json, db.error(), secondsSince(start));
  Journal& journal = (*db)->journal();
  std::optional<PublisherState> state;
  if ((*db)->publisherState()) state = *(*db)->publisherState();
  JsonObject out;
  out.add("ok", true)
      .add("lineage", toHex(journal.lineage()))
      .add("journal_end_sequence", journal.endSequence())
      .add("journal_end_length", journal.endOffset());
  std::string text = "journal         end sequence " + std::to_string(journal.endSequence()) +
                     " (" + std::to_string(journal.endOffset()) + " bytes)\n";
  describeTails(opt.dir, journal, out, text);
  if (state) {
    describeState(*state, out, text);
  } else {
    out.addNull("store");
    text += "store           none (journal only)\n";
  }
  // 2. The lock goes before the store is asked anything: a store that never answers holds
  // no database hostage.
  db->reset();
  if (state && !opt.offline) {
    auto described = co_await describeSelection(uring, *state, out, text);
    if (!described) co_return reportJson(opt.json, described.error(), secondsSince(start));
  }
  if (opt.json) {
    printJson(out);
  } else {
    std::cout << text;
  }
  co_return 0;
}

// ---- log -------------------------------------------------------------------------------------

struct LogCli {
  std::string store;
  std::string ns;
  std::uint64_t limit = 0;
  bool json = false;
};

asio::awaitable<int> runLog(io::Uring& uring, const LogCli& opt) {
  auto start = Clock::now();
  auto opened = openNamespace(uring, co_await asio::this_coro::executor, opt.store, opt.ns);
  if (!opened) co_return reportJson(opt.json, opened.error(), secondsSince(start));
  ObjectStore& store = *opened->store;
  const Uuid* ns = &opened->ns;
  // Newest first: the current head, then each predecessor's immutable copy, each checked
  // against the exact reference its successor names.
  const std::string key = keys::currentHead(*ns);
  JsonArray entries;
  std::uint64_t count = 0;
  std::optional<Error> broken;
  bool historyEnds = false;
  OperationBudget budget;
  auto seen = co_await observeHead(store, *ns, budget);
  if (!seen) {
    broken = seen.error();
  } else if (seen->missing()) {
    broken = Error{Errc::missing, key + ": the namespace has no head", key};
  } else if (seen->malformed()) {
    broken = Error{Errc::format, seen->damage, key};
  } else if (seen->head->fields().ns != *ns) {
    broken = Error{Errc::binding, key + ": the head belongs to another namespace", key};
  } else {
    auto walked = co_await walkChain(
        store, *seen->head, opt.limit, budget, [&](const Head& head) -> asio::awaitable<Res<bool>> {
          const HeadFields& f = head.fields();
          if (opt.json) {
            entries.add(headSummaryJson(head));
          } else {
            std::cout << "revision " << f.revision << "  id " << toHex(head.id()) << "  prefix "
                      << f.prefixSequence << "  manifest " << toHex(f.manifestSha256) << "\n";
          }
          ++count;
          co_return true;
        });
    if (!walked) {
      broken = walked.error();
    } else if (walked->historyEnds) {
      // A predecessor's head copy that is gone ends the history (a vacuum kept fewer
      // revisions, or it was lost).
      historyEnds = true;
      if (!opt.json) {
        std::cout << "(history ends: the head copy of revision " << count
                  << "'s predecessor is gone, reclaimed or lost)\n";
      }
    }
  }
  if (opt.json) {
    JsonObject out;
    out.add("ok", !broken).add("entries", std::move(entries)).add("history_ends", historyEnds);
    if (broken) out.add("error", errcName(broken->code)).add("key", broken->key);
    printJson(out.add("seconds", secondsSince(start)));
  }
  if (broken) {
    if (count > 0 && !opt.json)
      std::cerr << "cairn: the chain breaks after " << count << " heads\n";
    co_return report(*broken);
  }
  co_return 0;
}

// ---- recover ---------------------------------------------------------------------------------

struct RecoverCli {
  std::string dir;
  std::string store;
  std::string ns;
  std::string head;
  std::string metricsFile;
  bool writable = false;
  bool json = false;
};

asio::awaitable<int> runRecover(io::Uring& uring, const RecoverCli& opt) {
  auto start = Clock::now();
  RecoverRequest request;
  request.storeUrl = opt.store;
  request.writable = opt.writable;
  request.fault = faultHookFromEnvironment();
  auto ns = parseNamespaceOption(opt.ns);
  if (!ns) co_return reportJson(opt.json, ns.error(), secondsSince(start));
  request.ns = *ns;
  if (!opt.head.empty()) {
    auto id = fromHex(opt.head);
    if (!id || id->size() != 32) {
      co_return reportJson(opt.json, Error{Errc::usage, "--head is not a SHA-256 head id"},
                           secondsSince(start));
    }
    Digest d{};
    std::copy(id->begin(), id->end(), d.begin());
    request.headId = d;
  }
  auto opened = openStore(uring, co_await asio::this_coro::executor, opt.store);
  if (!opened)
    co_return reportJson(opt.json, Error{Errc::usage, opened.error()}, secondsSince(start));
  auto store = watchStore(std::move(*opened));
  EngineLimits limits;
  OperationBudget budget;
  auto r = co_await recoverDatabase(uring, *store, opt.dir, request, limits, budget);
  if (!r) co_return reportJson(opt.json, r.error(), secondsSince(start));
  const HeadFields& f = r->head.fields();
  if (opt.json) {
    printJson(JsonObject{}
                  .add("ok", true)
                  .add("revision", f.revision)
                  .add("head_id", toHex(r->head.id()))
                  .add("prefix_sequence", f.prefixSequence)
                  .add("prefix_length", f.prefixLength)
                  .add("writable", opt.writable)
                  .add("objects", r->objects)
                  .add("bytes", r->bytes)
                  .add("seconds", secondsSince(start)));
  } else {
    std::cout << "recovered revision " << f.revision << " (head " << toHex(r->head.id())
              << "): " << f.prefixSequence << " records, " << r->bytes << " journal bytes"
              << (opt.writable ? "; this directory now publishes the namespace" : "") << "\n";
  }
  co_return 0;
}

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

void addPublishCommands(CLI::App& app, int& exitCode) {
  {
    auto opt = std::make_shared<CheckpointCli>();
    CLI::App* cmd = app.add_subcommand(
        "checkpoint", "publish a checkpoint of the journal (reconciling a pending intent first)");
    cmd->add_option("DIR", opt->dir, "database directory")->required();
    cmd->add_option("--segment-mib", opt->segmentMib, "segment target size, 1..64 MiB")
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
  {
    auto opt = std::make_shared<CheckpointCli>();
    opt->compact = true;
    opt->segmentMib = 64;
    CLI::App* cmd = app.add_subcommand(
        "compact",
        "publish the current head's cutoff again in fewer, larger segments (a new generation)");
    cmd->add_option("DIR", opt->dir, "database directory")->required();
    cmd->add_option("--segment-mib", opt->segmentMib, "segment target size, 1..64 MiB (default 64)")
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
  {
    auto opt = std::make_shared<StatusCli>();
    CLI::App* cmd = app.add_subcommand(
        "status",
        "the expected head, any pending intent, the journal's end, and what the store "
        "selects");
    cmd->add_option("DIR", opt->dir, "database directory")->required();
    cmd->add_flag("--offline", opt->offline, "local files only: no store, no credentials");
    cmd->add_flag("--json", opt->json, "print one JSON object");
    addTimeoutOption(cmd, kDefaultCommandTimeout);
    cmd->callback([&exitCode, opt] {
      exitCode = runAsync([opt](io::Uring& u) { return runStatus(u, *opt); });
    });
  }
  {
    auto opt = std::make_shared<LogCli>();
    CLI::App* cmd = app.add_subcommand("log", "the head history of a namespace, newest first");
    cmd->add_option("--store", opt->store, "store URL")->required();
    cmd->add_option("--namespace", opt->ns, "namespace UUID")->required();
    cmd->add_option("--limit", opt->limit, "at most this many heads (0: all)")
        ->check(anyUnsigned());
    cmd->add_flag("--json", opt->json, "print one JSON object with an \"entries\" array");
    addTimeoutOption(cmd, kDefaultCommandTimeout);
    cmd->callback(
        [&exitCode, opt] { exitCode = runAsync([opt](io::Uring& u) { return runLog(u, *opt); }); });
  }
  {
    auto opt = std::make_shared<RecoverCli>();
    CLI::App* cmd = app.add_subcommand(
        "recover", "rebuild a database directory from a verified checkpoint in the store");
    cmd->add_option("DIR", opt->dir, "a new (absent or empty) database directory")->required();
    cmd->add_option("--store", opt->store, "store URL")->required();
    cmd->add_option("--namespace", opt->ns, "namespace UUID")->required();
    cmd->add_option("--head", opt->head,
                    "recover exactly this head id (default: the current head, never an older "
                    "one by itself)");
    cmd->add_flag("--writable", opt->writable,
                  "also install the publisher state: this directory continues the namespace");
    cmd->add_flag("--json", opt->json, "print one JSON object");
    addProgressOptions(cmd, &opt->json);
    addCommandMetricsFile(cmd, opt->metricsFile);
    addTimeoutOption(cmd, 0);
    cmd->callback([&exitCode, opt] {
      exitCode = runAsync([opt](io::Uring& u) { return runRecover(u, *opt); });
    });
  }
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
