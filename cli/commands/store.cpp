// cairn store put|get|ls|rm|probe: object-store operations for operators.
#include <unistd.h>

#include <boost/asio/this_coro.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "cli/json.hpp"
#include "cli/options.hpp"
#include "cli/progress.hpp"
#include "cli/run.hpp"
#include "engine/ops/usage.hpp"
#include "engine/store/directory_store.hpp"
#include "engine/store/open_store.hpp"
#include "engine/store/s3_store.hpp"
#include "engine/store/store_errors.hpp"
#include "io/uring.hpp"

namespace cairn::cli {
namespace {

namespace asio = boost::asio;

// The largest object `store put` reads from stdin and `store get` accepts by default.
constexpr std::uint64_t kMaxCliObjectBytes = std::uint64_t{1} << 30;

struct StoreOptions {
  std::string url;
  std::string key;
  std::string prefix;
  std::string ifMatch;
  std::uint64_t maxBytes = kMaxCliObjectBytes;
  bool json = false;
};

// "OP KEY: status: message", with the key as the error's key.
int storeFailure(const std::string& op, const std::string& key, const StoreOutcome& o) {
  Error e = storeError(o, key).error;
  e.message = op + " " + e.message;
  return report(e);
}

asio::awaitable<Res<std::unique_ptr<ObjectStore>>> open(
    io::Uring& uring, const std::string& url, StoreCreation creation = StoreCreation::existing) {
  auto store = openStore(uring, co_await asio::this_coro::executor, url, creation);
  if (!store) co_return err(Errc::usage, store.error());
  co_return watchStore(std::move(*store));
}

asio::awaitable<int> runPut(io::Uring& uring, const StoreOptions& opt) {
  auto store = co_await open(uring, opt.url, StoreCreation::createIfMissing);
  if (!store) co_return report(store.error());
  Bytes body;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0) {
      co_return report(
          Error{Errc::io, std::string("cannot read standard input: ") + std::strerror(errno)});
    }
    if (n == 0) break;
    if (body.size() + static_cast<std::size_t>(n) > kMaxCliObjectBytes) {
      co_return report(Error{Errc::usage, "object on standard input exceeds 1 GiB"});
    }
    body.insert(body.end(), buf, buf + n);
  }
  // Two statements, not `?:` around co_await: GCC 12 destroys the wrong temporary there
  // (a double free, found by the publication CLI test).
  StoreResult<std::string> put = storeFail(StoreStatus::failure, "not sent");
  if (opt.ifMatch.empty()) {
    put = co_await (*store)->putIfAbsent(opt.key, body);
  } else {
    put = co_await (*store)->putIfMatch(opt.key, body, opt.ifMatch);
  }
  if (!put) co_return storeFailure("put", opt.key, put.error());
  if (opt.json) {
    printJson(JsonObject{}
                  .add("ok", true)
                  .add("key", opt.key)
                  .add("etag", *put)
                  .add("bytes", std::uint64_t{body.size()}));
  } else {
    std::cout << escapeForDisplay(*put) << "\n";
  }
  co_return 0;
}

asio::awaitable<int> runGet(io::Uring& uring, const StoreOptions& opt) {
  auto store = co_await open(uring, opt.url);
  if (!store) co_return report(store.error());
  auto got = co_await (*store)->get(opt.key, opt.maxBytes);
  if (!got) co_return storeFailure("get", opt.key, got.error());
  if (opt.json) {
    // The one object carries the bytes (base64): stdout holds nothing else.
    printJson(JsonObject{}
                  .add("ok", true)
                  .add("key", opt.key)
                  .add("etag", got->etag)
                  .add("bytes", std::uint64_t{got->bytes.size()})
                  .add("content_base64", toBase64(got->bytes)));
    co_return 0;
  }
  std::cout.write(reinterpret_cast<const char*>(got->bytes.data()),
                  static_cast<std::streamsize>(got->bytes.size()));
  std::cout.flush();
  std::cerr << "etag " << escapeForDisplay(got->etag) << "\n";
  co_return std::cout ? 0 : kExitFailed;
}

asio::awaitable<int> runList(io::Uring& uring, const StoreOptions& opt) {
  auto store = co_await open(uring, opt.url);
  if (!store) co_return report(store.error());
  JsonArray jsonItems;
  std::uint64_t count = 0;
  // Text lines stream as the pages come; the one JSON object holds at most kMaxListedObjects.
  OperationBudget budget;
  auto listed = co_await forEachObject(**store, opt.prefix, budget, [&](const ObjectInfo& o) {
    if (++count > kMaxListedObjects && opt.json) {
      return Res<void>{err(Errc::budget, "more than " + std::to_string(kMaxListedObjects) +
                                             " keys: too many for one JSON object (list a "
                                             "narrower prefix, or without --json)")};
    }
    if (opt.json) {
      jsonItems.add(JsonObject{}.add("key", o.key).add("size", o.size).add("etag", o.etag));
    } else {
      std::cout << o.size << "\t" << o.key << "\n";
    }
    return Res<void>{};
  });
  if (!listed) co_return report(listed.error());
  if (opt.json) {
    printJson(
        JsonObject{}.add("ok", true).add("count", count).add("objects", std::move(jsonItems)));
  }
  co_return 0;
}

asio::awaitable<int> runRemove(io::Uring& uring, const StoreOptions& opt) {
  auto store = co_await open(uring, opt.url);
  if (!store) co_return report(store.error());
  auto removed = co_await (*store)->remove(opt.key);
  if (!removed) co_return storeFailure("delete", opt.key, removed.error());
  // What every store answers is that the key is absent now; not whether it was there (S3's
  // DELETE answers 204 either way), so the object claims no deletion.
  if (opt.json) printJson(JsonObject{}.add("ok", true).add("key", opt.key).add("absent", true));
  co_return 0;
}

asio::awaitable<int> runProbe(io::Uring& uring, const StoreOptions& opt) {
  auto store = co_await open(uring, opt.url);
  if (!store) co_return report(store.error());
  auto* s3 = dynamic_cast<S3Store*>(&static_cast<CountingStore&>(**store).inner());
  if (s3 == nullptr) {
    // The directory store enforces conditions by construction (link(2) and a locked
    // compare-and-swap); there is no dialect to pick.
    if (opt.json) {
      printJson(JsonObject{}
                    .add("ok", true)
                    .add("verdict", "enforced")
                    .add("enforced", true)
                    .add("dialect", "directory"));
    } else {
      std::cout << "directory store: create-if-absent and compare-and-swap are enforced\n";
    }
    co_return 0;
  }
  net::ProbeReport report = co_await s3->probe();
  // Only a store seen accepting a write it had to refuse is "not enforced" (exit 1); one whose
  // requests failed or went unanswered is undetermined (exit 5), never a "no".
  const int code = report.verdict == net::ProbeVerdict::enforced      ? 0
                   : report.verdict == net::ProbeVerdict::notEnforced ? kExitFailed
                                                                      : kExitUndetermined;
  if (opt.json) {
    JsonArray checks;
    for (const auto& c : report.checks) {
      checks.add(JsonObject{}
                     .add("name", c.name)
                     .add("passed", c.passed)
                     .add("violation", c.violation)
                     .add("detail", c.detail));
    }
    JsonObject out;
    out.add("ok", code == 0)
        .add("verdict", net::probeVerdictName(report.verdict))
        .add("enforced", report.enforced);
    if (report.dialect) {
      out.add("dialect", net::dialectName(*report.dialect));
    } else {
      out.addNull("dialect");
    }
    out.add("cleaned_up", report.cleanedUp).add("checks", std::move(checks));
    printJson(out);
  } else {
    std::cout << report.summary();
  }
  if (code != 0) {
    std::fprintf(stderr, "cairn: %s: %s\n", code == kExitFailed ? "store" : "undetermined",
                 report.verdictLine().c_str());
  }
  co_return code;
}

}  // namespace

void addStoreCommands(CLI::App& app, int& exitCode) {
  CLI::App* store = app.add_subcommand("store", "object-store operations for operators");
  store->require_subcommand(1);
  auto add = [&](const char* name, const char* help, bool key,
                 asio::awaitable<int> (*fn)(io::Uring&, const StoreOptions&)) {
    auto opt = std::make_shared<StoreOptions>();
    CLI::App* cmd = store->add_subcommand(name, help);
    cmd->add_option("URL", opt->url,
                    "store URL: a directory, file:///dir, or s3://bucket[/root]?endpoint=...")
        ->required();
    if (key) cmd->add_option("KEY", opt->key, "object key")->required();
    cmd->add_flag("--json", opt->json, "print JSON");
    addTimeoutOption(cmd, kDefaultCommandTimeout);
    cmd->callback([&exitCode, opt, fn] {
      exitCode = runAsync([opt, fn](io::Uring& u) { return fn(u, *opt); });
    });
    return std::make_pair(cmd, opt);
  };
  auto [put, putOpt] =
      add("put", "store standard input as KEY (create-if-absent, or --if-match)", true, runPut);
  put->add_option("--if-match", putOpt->ifMatch, "replace only if the current ETag is this one");
  auto [get, getOpt] = add("get", "write the object KEY to standard output", true, runGet);
  get->add_option("--max-bytes", getOpt->maxBytes, "refuse larger objects (default 1 GiB)")
      ->check(CLI::Range(std::uint64_t{0}, kMaxCliObjectBytes));
  auto [ls, lsOpt] = add("ls", "list keys (optionally below a prefix)", false, runList);
  allowEmpty(ls->add_option("PREFIX", lsOpt->prefix, "key prefix (\"\": every key)"));
  add("rm", "make KEY absent (a key already absent succeeds: whether it existed is not known)",
      true, runRemove);
  add("probe", "check that the store enforces conditional writes; pick the S3 dialect", false,
      runProbe);
}

}  // namespace cairn::cli
