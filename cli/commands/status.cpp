// `cairn status` (a database's publisher state, journal and what the store selects) and
// `cairn log` (a namespace's head history).
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

// The unknown range a failed write could not cut back
// (docs/decisions/0060-unknown-range-marked-beside-journal.md): a read-only open presents the
// journal through its durable end; the next writer cuts the range off.
void describeUnknown(const Journal& journal, JsonObject& out, std::string& text) {
  const auto& u = journal.unknownRange();
  if (!u) {
    out.addNull("unknown_range");
    return;
  }
  out.add("unknown_range", JsonObject{}
                               .add("first", u->records.first)
                               .add("last", u->records.last)
                               .add("durable_sequence", u->durableSequence)
                               .add("durable_length", u->durableLength)
                               .add("marker", u->marker.filename().string()));
  text += "unknown range   records " + std::to_string(u->records.first) + ".." +
          std::to_string(u->records.last) + " (marked in " + u->marker.filename().string() +
          "): not presented; the next writer cuts them off, so none of them persists\n";
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
  describeUnknown(journal, out, text);
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

}  // namespace

void addStatusCommands(CLI::App& app, int& exitCode) {
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
}

}  // namespace cairn::cli
