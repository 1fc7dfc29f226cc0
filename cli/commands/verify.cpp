// cairn checkpoint-objects DIR --store URL --namespace N   (a step, for testing)
// cairn verify DIR --store URL --namespace N [--manifest SHA --manifest-length L] [--deep]
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <chrono>
#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "cli/commands.hpp"
#include "cli/json.hpp"
#include "cli/progress.hpp"
#include "cli/run.hpp"
#include "engine/format/keys.hpp"
#include "engine/format/limits.hpp"
#include "engine/graph/checkpoint.hpp"
#include "engine/graph/heads.hpp"
#include "engine/graph/verifier.hpp"
#include "engine/journal/journal.hpp"
#include "engine/publish/publisher.hpp"
#include "engine/runtime/async.hpp"
#include "engine/store/open_store.hpp"
#include "io/uring.hpp"

namespace cairn::cli {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

struct GraphOptions {
  std::string dir;
  std::string store;
  std::string ns;
  std::string manifest;
  std::uint64_t manifestLength = 0;
  std::uint64_t segmentMib = 32;
  std::string metricsFile;
  LimitOptions limits;
  bool deep = false;
  bool json = false;
};

// The engine's in-flight limits and this operation's budget, from the command line.
OperationBudget limitsFrom(const GraphOptions& opt, EngineLimits& limits) {
  limits.bytes = InFlightLimit(opt.limits.inflightMib << 20);
  limits.requests = InFlightLimit(opt.limits.inflightRequests);
  return OperationBudget(opt.limits.budget());
}

struct StoreOf {
  std::unique_ptr<ObjectStore> store;
  Uuid ns;
};

// The store and namespace: from the options, or else from the database's publisher state.
asio::awaitable<Res<StoreOf>> openStoreOf(io::Uring& uring, const GraphOptions& opt) {
  StoreOf o;
  std::string storeUrl = opt.store;
  std::string nsText = opt.ns;
  if (storeUrl.empty() || nsText.empty()) {
    auto state = co_await loadPublisherState(uring, opt.dir);
    if (!state) co_return failureOf(state);
    if (!*state) {
      co_return err(Errc::usage, opt.dir + " has no publisher state: give --store and --namespace");
    }
    if (storeUrl.empty()) storeUrl = (*state)->storeUrl;
    if (nsText.empty()) nsText = (*state)->ns.text();
  }
  auto ns = Uuid::parse(nsText);
  if (!ns || ns->isNil()) co_return err(Errc::usage, "--namespace is not a canonical UUID");
  o.ns = *ns;
  auto store = openStore(uring, co_await asio::this_coro::executor, storeUrl);
  if (!store) co_return err(Errc::usage, store.error());
  o.store = watchStore(std::move(*store));
  co_return o;
}

struct Opened {
  std::unique_ptr<Journal> journal;
  std::unique_ptr<ObjectStore> store;
  Uuid ns;
};

// The journal (taking the lock), then the store and namespace.
asio::awaitable<Res<Opened>> openAll(io::Uring& uring, const GraphOptions& opt) {
  Opened o;
  auto journal = co_await Journal::open(uring, opt.dir);
  if (!journal) co_return failureOf(journal);
  o.journal = std::move(*journal);
  noteTornTail(*o.journal);
  auto s = co_await openStoreOf(uring, opt);
  if (!s) co_return failureOf(s);
  o.store = std::move(s->store);
  o.ns = s->ns;
  co_return o;
}

asio::awaitable<int> runCheckpointObjects(io::Uring& uring, const GraphOptions& opt) {
  auto start = Clock::now();
  auto o = co_await openAll(uring, opt);
  if (!o) co_return report(o.error());
  EngineLimits limits;
  OperationBudget budget = limitsFrom(opt, limits);
  CheckpointOptions copt;
  copt.segmentTargetBytes = opt.segmentMib << 20;
  auto c = co_await installCheckpoint(*o->journal, *o->store, o->ns, std::nullopt,
                                      o->journal->endSequence(), limits, budget, copt);
  if (!c) co_return report(c.error());
  double s = secondsSince(start);
  if (opt.json) {
    printJson(JsonObject{}
                  .add("ok", true)
                  .add("manifest_sha256", toHex(c->manifestSha256))
                  .add("manifest_length", std::uint64_t{c->manifestBytes.size()})
                  .add("manifest_key", keys::manifest(o->ns, c->manifestSha256))
                  .add("prefix_sequence", c->manifest.prefix.sequence)
                  .add("prefix_length", c->manifest.prefix.length)
                  .add("segments", std::uint64_t{c->manifest.segments.size()})
                  .add("segments_written", c->segmentsWritten)
                  .add("segments_reused", c->segmentsReused)
                  .add("bytes_uploaded", c->bytesUploaded)
                  .add("seconds", s));
  } else {
    std::cout << "manifest " << toHex(c->manifestSha256) << " (" << c->manifestBytes.size()
              << " bytes), " << c->manifest.segments.size() << " segments (" << c->segmentsWritten
              << " written, " << c->segmentsReused << " reused), prefix "
              << c->manifest.prefix.sequence << " in " << s << " s\n";
  }
  co_return 0;
}

// The head names this journal's lineage (its namespace was checked when it was read).
Res<void> headBinds(const std::optional<Head>& head, const Journal& journal, const Uuid& ns) {
  if (head && head->fields().lineage != journal.lineage()) {
    std::string key = keys::currentHead(ns);
    return Failure<Error>{
        Error{Errc::binding, "the head's namespace or lineage is not this journal's", key}};
  }
  return {};
}

// `head`'s immutable copy: present, and the very image the head is (readHeadCopy checks its
// id, length and namespace).
asio::awaitable<Res<void>> requireHeadCopy(ObjectStore& store, const Head& head,
                                           OperationBudget& budget) {
  auto copy = co_await readHeadCopy(store, head.fields().ns, head.reference(), budget);
  if (!copy) co_return failureOf(copy);
  if (!*copy) {
    const std::string key = keys::headCopy(head.fields().ns, head.id());
    co_return Failure<Error>{
        Error{Errc::missing, key + ": the current head's immutable copy is missing", key}};
  }
  co_return Res<void>{};
}

// The graph the options name (the current head's, or --manifest's), verified against the
// journal, if one is given. `head` receives the head image it started from, if any.
asio::awaitable<Res<VerifiedGraph>> verifyNamed(const GraphOptions& opt, const StoreOf& o,
                                                Journal* journal, std::optional<Head>& head,
                                                const ProgressFn& progress) {
  EngineLimits limits;
  OperationBudget budget = limitsFrom(opt, limits);
  VerifyOptions vopt;
  vopt.deep = opt.deep;
  if (!opt.manifest.empty()) {
    auto sha = fromHex(opt.manifest);
    if (!sha || sha->size() != 32) co_return err(Errc::usage, "--manifest is not a SHA-256");
    Digest d{};
    std::copy(sha->begin(), sha->end(), d.begin());
    co_return co_await verifyManifestGraph(*o.store, o.ns, d, opt.manifestLength, journal, limits,
                                           budget, vopt, progress);
  }
  std::string key = keys::currentHead(o.ns);
  auto seen = co_await observeHead(*o.store, o.ns, budget);
  if (!seen) co_return failureOf(seen);
  if (seen->missing()) {
    co_return Failure<Error>{Error{Errc::missing, key + ": the namespace has no head", key}};
  }
  if (seen->malformed()) co_return Failure<Error>{Error{Errc::format, seen->damage, key}};
  head = seen->head;
  if (head->fields().ns != o.ns) {
    co_return Failure<Error>{
        Error{Errc::binding, "the head's namespace or lineage is not this journal's", key}};
  }
  if (journal) {  // (its lineage is known from its header)
    CAIRN_CO_TRY(headBinds(head, *journal, o.ns));
  }
  auto graph = co_await verifyHeadGraph(*o.store, *head, journal, limits, budget, vopt, progress);
  if (!graph || !vopt.deep) co_return graph;
  // A deep verification reads the current head's immutable copy too: log, du and vacuum walk
  // the history through it once a successor names it.
  CAIRN_CO_TRY(co_await requireHeadCopy(*o.store, *head, budget));
  co_return graph;
}

asio::awaitable<int> runVerify(io::Uring& uring, const GraphOptions& opt) {
  auto start = Clock::now();
  auto fail = [&](const Error& e) { return reportJson(opt.json, e, secondsSince(start)); };
  // The journal's lock and header only: a verification does not scan its frames (about
  // 0.3 s per GiB). A deep one compares every byte of its prefix with checked segments,
  // which proves that prefix; what follows the cutoff is the next open's to check, and
  // verify never writes the journal (no torn tail is cut).
  JournalOptions readOnly;
  readOnly.readOnly = true;
  auto opened = co_await Journal::openUnscanned(uring, opt.dir, readOnly);
  if (!opened) co_return fail(opened.error());
  std::unique_ptr<Journal> journal = std::move(*opened);
  std::optional<Head> head;
  Res<VerifiedGraph> graph = err(Errc::usage, "nothing verified");
  auto o = co_await openStoreOf(uring, opt);
  if (!o) {
    graph = failureOf(o);
  } else {
    auto progress = [](const VerifyProgress& p) {
      setItems("objects", p.objectsDone, p.objectsTotal, p.bytesDone, p.bytesTotal);
    };
    // (verifyNamed checks the head's lineage against the journal's once it has the head.)
    graph = co_await verifyNamed(opt, *o, journal.get(), head, progress);
  }
  if (!graph) co_return fail(graph.error());
  double s = secondsSince(start);
  if (opt.json) {
    printJson(JsonObject{}
                  .add("ok", true)
                  .add("deep", opt.deep)
                  .add("objects", graph->objects)
                  .add("bytes", graph->bytes)
                  .add("prefix_sequence", graph->manifest.prefix.sequence)
                  .add("seconds", s));
  } else {
    std::cout << "ok: " << graph->objects << " objects, " << graph->bytes << " bytes"
              << (opt.deep ? ", every byte checked and equal to the journal" : "") << " in " << s
              << " s\n";
  }
  co_return 0;
}

void addCommon(CLI::App* cmd, GraphOptions& o) {
  cmd->add_option("DIR", o.dir, "database directory")->required();
  cmd->add_option("--store", o.store, "store URL (default: the one DIR publishes to)");
  cmd->add_option("--namespace", o.ns, "namespace UUID (default: DIR's)");
  addLimitOptions(cmd, o.limits);
  cmd->add_flag("--json", o.json, "print one JSON object");
}

}  // namespace

void addLimitOptions(CLI::App* cmd, LimitOptions& o) {
  const auto positive = CLI::Range(std::uint64_t{1}, std::numeric_limits<std::uint64_t>::max());
  cmd->add_option("--budget-bytes", o.budgetBytes, "operation byte budget")->check(positive);
  cmd->add_option("--budget-requests", o.budgetRequests, "operation request budget")
      ->check(positive);
  cmd->add_option("--inflight-mib", o.inflightMib,
                  "MiB held by reads and requests in flight (default 256)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 20));
  cmd->add_option("--inflight-requests", o.inflightRequests,
                  "store requests in flight (default 16)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{4096}));
}

void addVerifyCommands(CLI::App& app, int& exitCode) {
  {
    auto opt = std::make_shared<GraphOptions>();
    CLI::App* cmd =
        app.add_subcommand("checkpoint-objects",
                           "install the journal's segments and manifest (a testing step; "
                           "publishes no head)");
    addCommon(cmd, *opt);
    cmd->add_option("--segment-mib", opt->segmentMib, "segment target size, 1..64 MiB")
        ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{64}));
    addTimeoutOption(cmd, 0);
    cmd->callback([&exitCode, opt] {
      exitCode = runAsync([opt](io::Uring& u) { return runCheckpointObjects(u, *opt); });
    });
  }
  {
    auto opt = std::make_shared<GraphOptions>();
    CLI::App* cmd = app.add_subcommand(
        "verify", "verify the current head's graph (or --manifest) against the journal");
    addCommon(cmd, *opt);
    // A manifest is named by its hash and its length together (either alone: a usage error).
    CLI::Option* manifest = cmd->add_option(
        "--manifest", opt->manifest, "verify this manifest (SHA-256 hex) instead of the head");
    CLI::Option* length =
        cmd->add_option("--manifest-length", opt->manifestLength, "its length in bytes")
            ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{limits::kMaxManifestBytes}));
    manifest->needs(length);
    length->needs(manifest);
    cmd->add_flag("--deep", opt->deep,
                  "check every segment byte and compare the prefix with the journal");
    addProgressOptions(cmd, &opt->json);
    addCommandMetricsFile(cmd, opt->metricsFile);
    addTimeoutOption(cmd, 0);
    cmd->callback([&exitCode, opt] {
      exitCode = runAsync([opt](io::Uring& u) { return runVerify(u, *opt); });
    });
  }
}

}  // namespace cairn::cli
