// `cairn recover`: a database directory rebuilt from a verified checkpoint in the store.
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

}  // namespace

void addRecoverCommand(CLI::App& app, int& exitCode) {
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
}

}  // namespace cairn::cli
