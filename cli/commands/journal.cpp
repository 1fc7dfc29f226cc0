// cairn init DIR --db-id ID | cairn append DIR [--json] | cairn journal DIR [--at SEQ] [--json]
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <tuple>

#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "cli/json.hpp"
#include "cli/progress.hpp"
#include "cli/run.hpp"
#include "engine/database.hpp"
#include "engine/journal/journal.hpp"
#include "engine/runtime/async.hpp"
#include "engine/runtime/task_group.hpp"

namespace cairn::cli {
namespace {

namespace asio = boost::asio;

// Appenders `cairn append` keeps in flight: enough to fill group-commit batches.
constexpr std::size_t kAppendConcurrency = 4096;

struct InitOptions {
  std::string dir;
  std::string dbId;
  std::string store;
  std::string ns;
  std::string publisher;
  bool json = false;
};

asio::awaitable<int> runInit(io::Uring& uring, const InitOptions& opt) {
  auto units = utf8ToUtf16(opt.dbId);
  if (!units) co_return report(Error{Errc::usage, "--db-id is not valid UTF-8"});
  std::optional<PublishTarget> target;
  if (!opt.store.empty()) {
    target = PublishTarget{opt.store, Uuid::random(), Uuid::random()};
    for (auto [text, slot, name] :
         {std::tuple{&opt.ns, &target->ns, "--namespace"},
          std::tuple{&opt.publisher, &target->publisher, "--publisher"}}) {
      if (text->empty()) continue;
      auto id = Uuid::parse(*text);
      if (!id || id->isNil()) {
        co_return report(
            Error{Errc::usage, std::string(name) + " is not a canonical, non-nil UUID"});
      }
      *slot = *id;
    }
  } else if (!opt.ns.empty() || !opt.publisher.empty()) {
    co_return report(Error{Errc::usage, "--namespace and --publisher need --store"});
  }
  auto db = co_await Database::create(uring, opt.dir, *units, target);
  if (!db) co_return report(db.error());
  // What the database recorded: a directory store's absolute path.
  if (const PublisherState* state = (*db)->publisherState(); state && target) {
    target->storeUrl = state->storeUrl;
  }
  const Journal& j = (*db)->journal();
  if (opt.json) {
    JsonObject out;
    out.add("ok", true)
        .add("directory", opt.dir)
        .add("lineage", toHex(j.lineage()))
        .add("header_length", j.offsetAfter(0));
    if (target) {
      out.add("store", target->storeUrl)
          .add("namespace", target->ns.text())
          .add("publisher", target->publisher.text());
    }
    printJson(out);
  } else {
    std::cout << "created journal in " << opt.dir << "\nlineage " << toHex(j.lineage()) << "\n";
    if (target) {
      std::cout << "store " << target->storeUrl << "\nnamespace " << target->ns.text()
                << "\npublisher " << target->publisher.text() << "\n";
    }
  }
  co_return 0;
}

struct AppendOptions {
  std::string dir;
  bool json = false;
};

// What stopped `append`: a failed durable write whose records may be durable (unknown) comes
// first, then what stopped the input, then the journal's own failure (its failed batch's error,
// not a later append's refusal).
std::optional<Error> appendFailure(const Res<void>& input, const Res<void>& appended,
                                   const Journal& journal) {
  const auto& failed = journal.failure();
  if (failed && failed->unknown) return failed->error;
  if (!input) return input.error();
  if (failed) return failed->error;
  if (!appended) return appended.error();
  return std::nullopt;
}

asio::awaitable<int> runAppend(io::Uring& uring, const AppendOptions& opt) {
  auto opened = co_await Journal::open(uring, opt.dir);
  if (!opened) co_return report(opened.error());
  Journal& journal = **opened;
  noteTornTail(journal);

  // One record per line. Appends run concurrently (the journal sequences them in arrival
  // order, and group commit shares each fdatasync); at most kAppendConcurrency at once.
  std::uint64_t last = journal.endSequence();
  auto executor = co_await asio::this_coro::executor;
  TaskGroup appends(executor, kAppendConcurrency);
  StdinRecords records(executor, /*lengthPrefixed=*/false);
  // The first SIGINT/SIGTERM ends the input at the last whole record: those are made durable
  // and acknowledged (cli/progress.hpp).
  setStopAction([&records] { records.stop(); });
  Res<void> input;
  for (;;) {
    auto record = co_await records.next();
    if (!record) {
      input = failureOf(record);
      break;
    }
    if (!*record || !co_await appends.room()) break;
    appends.start([&, payload = std::move(**record)]() -> asio::awaitable<Res<void>> {
      auto r = co_await journal.append(payload);
      if (!r) co_return failureOf(r);
      last = std::max(last, *r);
      co_return Res<void>{};
    });
  }
  Res<void> appended = co_await appends.wait();
  setStopAction({});
  if (auto failure = appendFailure(input, appended, journal)) {
    const auto& unknown = journal.failure() ? journal.failure()->unknown : std::nullopt;
    co_return reportUnacknowledged(opt.json, *failure, last, unknown ? &*unknown : nullptr);
  }
  JsonObject out;
  out.add("ok", true).add("sequence", last);
  co_return acknowledge(last, std::to_string(last) + "\n", opt.json ? &out : nullptr);
}

struct JournalOptions_ {
  std::string dir;
  std::optional<std::uint64_t> at;
  bool cutDamagedTail = false;
  bool json = false;
};

JsonObject tornTailJson(const TornTail& t) {
  JsonObject o;
  o.add("offset", t.offset)
      .add("bytes", t.bytes)
      .add("sequence", t.sequence)
      .add("reason", t.reason)
      .add("cut", t.cut)
      .add("crash_shaped", t.crashShaped);
  if (t.cut) {
    o.add("evidence", t.evidence.string());
  } else {
    o.addNull("evidence");
  }
  return o;
}

asio::awaitable<int> runJournal(io::Uring& uring, const JournalOptions_& opt) {
  JournalOptions options;
  // Looking at a journal writes nothing; cutting its damaged tail is the one thing it writes.
  options.readOnly = !opt.cutDamagedTail;
  options.cutDamagedTail = opt.cutDamagedTail;
  auto opened = co_await Journal::open(uring, opt.dir, options);
  if (!opened) co_return report(opened.error());
  Journal& journal = **opened;
  noteTornTail(journal);
  std::uint64_t sequence = opt.at.value_or(journal.endSequence());
  auto prefix = co_await journal.prefix(sequence, limits::kMaxPrefixBytes);
  if (!prefix) co_return report(prefix.error());
  std::string dbId = utf16ToUtf8Lossy(journal.header().databaseId);
  const auto& torn = journal.tornTail();
  if (opt.json) {
    JsonObject out;
    out.add("ok", true)
        .add("database_id", dbId)
        .add("lineage", toHex(journal.lineage()))
        .add("end_sequence", journal.endSequence())
        .add("end_length", journal.endOffset())
        .add("prefix_sequence", prefix->sequence)
        .add("prefix_length", prefix->length)
        .add("prefix_sha256", toHex(prefix->sha256))
        .add("torn_bytes_cut", journal.tornBytesCut());
    if (torn) {
      out.add("torn_tail", tornTailJson(*torn));
    } else {
      out.addNull("torn_tail");
    }
    printJson(out);
  } else {
    std::cout << "database id     " << escapeForDisplay(dbId) << "\n"
              << "lineage         " << toHex(journal.lineage()) << "\n"
              << "end sequence    " << journal.endSequence() << " (" << journal.endOffset()
              << " bytes)\n"
              << "prefix          sequence " << prefix->sequence << ", " << prefix->length
              << " bytes, sha256 " << toHex(prefix->sha256) << "\n";
    if (torn && !torn->cut) {
      std::cout << "torn tail       " << torn->bytes << " bytes at offset " << torn->offset << " ("
                << torn->reason << "), cut by the next writer\n";
    }
  }
  co_return 0;
}

}  // namespace

int acknowledge(std::uint64_t last, const std::string& text, const JsonObject* json) {
  if (json) {
    printJson(*json);
  } else {
    std::cout << text;
  }
  std::cout.flush();
  if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    return report(Error{Errc::io,
                        "cannot write the acknowledgement to standard output; records "
                        "up to sequence " +
                            std::to_string(last) + " are durable in the journal"});
  }
  return 0;
}

int reportUnacknowledged(bool json, const Error& e, std::uint64_t durable,
                         const SequenceRange* unknown, std::optional<double> seconds,
                         std::optional<std::uint64_t> records) {
  const int code = report(e);
  std::cerr << "cairn: records up to sequence " << durable << " are durable";
  if (unknown) {
    std::cerr << "; records " << unknown->first << " to " << unknown->last
              << " may be durable or not (docs/journal.md, \"When a durable write fails\": the "
                 "next writable open cuts a marked range off)";
  }
  std::cerr << "\n";
  if (json) {
    JsonObject out;
    out.add("ok", false)
        .add("error", errcName(e.code))
        .add("key", e.key)
        .add("reason", e.message)
        .add("durable_sequence", durable);
    if (unknown) {
      out.add("unknown", JsonObject{}.add("first", unknown->first).add("last", unknown->last));
    } else {
      out.addNull("unknown");
    }
    if (records) out.add("records", *records);
    if (seconds) out.add("seconds", *seconds);
    printJson(out.add("exit", code));
  }
  return code;
}

void noteTornTail(const Journal& journal) {
  if (const auto& u = journal.unknownRange(); u && u->cut) {
    std::fprintf(stderr,
                 "cairn: records %llu to %llu, reported unknown when their write failed, were "
                 "cut off the journal (%s): none of them persists; records up to sequence %llu "
                 "are durable\n",
                 static_cast<unsigned long long>(u->records.first),
                 static_cast<unsigned long long>(u->records.last), u->marker.c_str(),
                 static_cast<unsigned long long>(u->durableSequence));
  }
  const auto& t = journal.tornTail();
  if (!t || !t->cut) return;
  std::fprintf(
      stderr,
      "cairn: the journal's tail was cut: %llu bytes at offset %llu (from the frame of "
      "sequence %llu: %s); they are kept in %s, and none of them lay in the prefix the "
      "publisher state proves acknowledged\n",
      static_cast<unsigned long long>(t->bytes), static_cast<unsigned long long>(t->offset),
      static_cast<unsigned long long>(t->sequence), t->reason.c_str(), t->evidence.c_str());
}

void addJournalCommands(CLI::App& app, int& exitCode) {
  {
    auto opt = std::make_shared<InitOptions>();
    CLI::App* cmd = app.add_subcommand("init", "create a database directory and its journal");
    cmd->add_option("DIR", opt->dir, "database directory (created if absent)")->required();
    cmd->add_option("--db-id", opt->dbId, "database id (UTF-8; stored as UTF-16 code units)")
        ->required();
    cmd->add_option("--store", opt->store, "store URL to publish checkpoints to");
    cmd->add_option("--namespace", opt->ns, "namespace UUID (default: a new random one)");
    cmd->add_option("--publisher", opt->publisher, "publisher UUID (default: a new random one)");
    cmd->add_flag("--json", opt->json, "print one JSON object");
    cmd->callback([&exitCode, opt] {
      exitCode = runAsync([opt](io::Uring& u) { return runInit(u, *opt); });
    });
  }
  {
    auto opt = std::make_shared<AppendOptions>();
    CLI::App* cmd = app.add_subcommand(
        "append", "append one record per line of standard input; print the last durable sequence");
    cmd->add_option("DIR", opt->dir, "database directory")->required();
    cmd->add_flag("--json", opt->json, "print {\"sequence\":N}");
    cmd->callback([&exitCode, opt] {
      exitCode = runAsync([opt](io::Uring& u) { return runAppend(u, *opt); });
    });
  }
  {
    auto opt = std::make_shared<JournalOptions_>();
    CLI::App* cmd =
        app.add_subcommand("journal", "print the journal's lineage, end and prefix hash");
    cmd->add_option("DIR", opt->dir, "database directory")->required();
    cmd->add_option("--at", opt->at, "prefix at this sequence (default: the end)")
        ->check(anyUnsigned());
    cmd->add_flag("--cut-damaged-tail", opt->cutDamagedTail,
                  "cut the first damaged frame and all after it, even where no crash explains "
                  "the damage (the bytes are kept beside the journal; never inside the prefix "
                  "the publisher state proves acknowledged)");
    cmd->add_flag("--json", opt->json, "print one JSON object");
    cmd->callback([&exitCode, opt] {
      exitCode = runAsync([opt](io::Uring& u) { return runJournal(u, *opt); });
    });
  }
}

}  // namespace cairn::cli
