// cairn init DIR --db-id ID | cairn append DIR [--json] | cairn journal DIR [--at SEQ] [--json]
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <iostream>
#include <memory>
#include <string>
#include <tuple>

#include "engine/async.hpp"
#include "engine/cli/commands.hpp"
#include "engine/cli/json.hpp"
#include "engine/cli/run.hpp"
#include "engine/database.hpp"
#include "engine/journal.hpp"

namespace cairn::cli {
namespace {

namespace asio = boost::asio;

// Appenders `cairn append` keeps in flight: enough to fill group-commit batches.
constexpr std::size_t kAppendConcurrency = 4096;
// The longest stdin line accepted as one record (the payload cap).
constexpr std::size_t kMaxLineBytes = limits::kMaxPayloadBytes;

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
  const Journal& j = (*db)->journal();
  if (opt.json) {
    JsonObject out;
    out.add("directory", opt.dir)
        .add("lineage", toHex(j.lineage()))
        .add("header_length", j.offsetAfter(0));
    if (target) {
      out.add("store", target->storeUrl)
          .add("namespace", target->ns.text())
          .add("publisher", target->publisher.text());
    }
    std::cout << out.str() << "\n";
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

asio::awaitable<int> runAppend(io::Uring& uring, const AppendOptions& opt) {
  auto opened = co_await Journal::open(uring, opt.dir);
  if (!opened) co_return report(opened.error());
  Journal& journal = **opened;

  // One record per line. Appends run concurrently (the journal sequences them in arrival
  // order, and group commit shares each fdatasync); at most kAppendConcurrency in flight.
  std::size_t inFlight = 0;
  std::uint64_t last = journal.endSequence();
  std::optional<Error> failure;
  Signal slotFree;
  auto executor = co_await asio::this_coro::executor;
  std::string line;
  while (!failure) {
    if (!std::getline(std::cin, line)) break;
    if (line.size() > kMaxLineBytes) {
      failure = Error{Errc::usage, "a line of " + std::to_string(line.size()) +
                                       " bytes exceeds the 16 MiB record cap"};
      break;
    }
    while (inFlight >= kAppendConcurrency) {
      slotFree.reset();
      co_await slotFree.wait();
    }
    ++inFlight;
    asio::co_spawn(
        executor,
        [&, payload = std::move(line)]() -> asio::awaitable<void> {
          auto r = co_await journal.append(asBytes(payload));
          if (r) {
            last = std::max(last, *r);
          } else if (!failure) {
            failure = r.error();
          }
          --inFlight;
          slotFree.notify();
        },
        asio::detached);
    line.clear();
  }
  while (inFlight > 0) {
    slotFree.reset();
    co_await slotFree.wait();
  }
  if (failure) {
    report(*failure);
    std::cerr << "cairn: records up to sequence " << last << " are durable\n";
    co_return failure->code == Errc::usage ? kExitUsage : kExitFailed;
  }
  if (std::cin.bad()) co_return report(Error{Errc::io, "cannot read standard input"});
  if (opt.json) {
    std::cout << JsonObject{}.add("sequence", last).str() << "\n";
  } else {
    std::cout << last << "\n";
  }
  co_return 0;
}

struct JournalOptions_ {
  std::string dir;
  std::optional<std::uint64_t> at;
  bool json = false;
};

asio::awaitable<int> runJournal(io::Uring& uring, const JournalOptions_& opt) {
  auto opened = co_await Journal::open(uring, opt.dir);
  if (!opened) co_return report(opened.error());
  Journal& journal = **opened;
  std::uint64_t sequence = opt.at.value_or(journal.endSequence());
  auto prefix = co_await journal.prefix(sequence, limits::kMaxPrefixBytes);
  if (!prefix) co_return report(prefix.error());
  std::string dbId = utf16ToUtf8Lossy(journal.header().databaseId);
  if (opt.json) {
    std::cout << JsonObject{}
                     .add("database_id", dbId)
                     .add("lineage", toHex(journal.lineage()))
                     .add("end_sequence", journal.endSequence())
                     .add("end_length", journal.endOffset())
                     .add("prefix_sequence", prefix->sequence)
                     .add("prefix_length", prefix->length)
                     .add("prefix_sha256", toHex(prefix->sha256))
                     .add("torn_bytes_cut", journal.tornBytesCut())
                     .str()
              << "\n";
  } else {
    std::cout << "database id     " << dbId << "\n"
              << "lineage         " << toHex(journal.lineage()) << "\n"
              << "end sequence    " << journal.endSequence() << " (" << journal.endOffset()
              << " bytes)\n"
              << "prefix          sequence " << prefix->sequence << ", " << prefix->length
              << " bytes, sha256 " << toHex(prefix->sha256) << "\n";
    if (journal.tornBytesCut() > 0) {
      std::cout << "torn tail cut   " << journal.tornBytesCut() << " bytes (never acknowledged)\n";
    }
  }
  co_return 0;
}

}  // namespace

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
    cmd->add_option("--at", opt->at, "prefix at this sequence (default: the end)");
    cmd->add_flag("--json", opt->json, "print one JSON object");
    cmd->callback([&exitCode, opt] {
      exitCode = runAsync([opt](io::Uring& u) { return runJournal(u, *opt); });
    });
  }
}

}  // namespace cairn::cli
