// The catalog's commands (docs/catalog.md): `lake create`, `token create` and `serve`.
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "catalog/config.hpp"
#include "catalog/lake.hpp"
#include "catalog/log.hpp"
#include "catalog/names.hpp"
#include "catalog/service.hpp"
#include "engine/cli/commands.hpp"
#include "engine/cli/run.hpp"
#include "engine/store/open_store.hpp"
#include "engine/store/store_errors.hpp"
#include "io/uring.hpp"
#include "net/http_server.hpp"

namespace cairn::cli {

namespace asio = boost::asio;
using namespace cairn::catalog;

namespace {

// Words the routes use after /v1/: a lake may not be called so (its path would be ambiguous).
bool reservedLakeId(std::string_view id) {
  return id == "namespaces" || id == "tables" || id == "transactions" || id == "views" ||
         id == "config" || id == "oauth";
}

struct LakeCreateOptions {
  std::string config;
  std::string store;
  std::string lake;
  bool json = false;
};

// The lake's log, created (its first record) or found: an existing log must be this lake's,
// under this configuration's publisher.
asio::awaitable<Res<bool>> ensureLakeLog(io::Uring& uring, const std::string& url,
                                         const std::string& id, const Uuid& publisher) {
  auto parsed = parseStoreUrl(url);
  if (!parsed) co_return err(Errc::usage, "--store: " + parsed.error());
  auto store =
      openStore(uring, co_await asio::this_coro::executor, *parsed, StoreCreation::createIfMissing);
  if (!store) co_return err(Errc::usage, "--store: " + store.error());
  auto probe = co_await (*store)->requireConditionalWrites();
  if (!probe) {
    Error e = storeError(probe.error(), (*store)->describe()).error;
    e.message =
        "the store must enforce conditional writes before a lake is created in it: " + e.message;
    co_return Failure<Error>{std::move(e)};
  }
  Lake lake(id, std::move(*store), *parsed, publisher, 0);
  OperationBudget budget;
  auto existing = co_await lake.directory(budget);
  if (existing) co_return false;  // already there, and verified as this lake's
  if (existing.error().code != Errc::missing || !existing.error().key.empty()) {
    co_return failureOf(existing);
  }
  auto record = encodeLakeRecord(LakeRecord{LakeCreated{id}, unixSecondsNow() * 1000, {}});
  if (!record) co_return failureOf(record);
  LogAppend what;
  what.records.push_back(std::move(*record));
  const std::optional<LogCursor> none;
  auto appended = co_await appendLog(lake.store(), lake.logIdentity(), none, what, budget);
  if (!appended) co_return failureOf(appended);
  switch (appended->outcome) {
    case Appended::Outcome::committed:
      co_return true;
    case Appended::Outcome::lost: {
      // Another process created it meanwhile: it must be this lake's.
      auto again = co_await lake.directory(budget);
      if (!again) co_return failureOf(again);
      co_return false;
    }
    case Appended::Outcome::unknown:
      break;
  }
  co_return err(Errc::uncertain, "whether the lake log was created is unknown (" +
                                     appended->detail + "); run the command again");
}

int runLakeCreate(const LakeCreateOptions& o) {
  const auto started = std::chrono::steady_clock::now();
  if (auto ok = checkLakeId(o.lake); !ok) return reportJson(o.json, ok.error(), 0);
  if (reservedLakeId(o.lake)) {
    return reportJson(o.json, Error{Errc::usage, "\"" + o.lake + "\" is a word of the routes"}, 0);
  }
  // The publisher UUID: the file's, or a new one for a new file (kept only if all goes well).
  Uuid publisher = Uuid::random();
  if (auto existing = loadConfig(o.config)) {
    publisher = existing->publisher;
    if (const LakeEntry* l = existing->lake(o.lake); l && l->store != o.store) {
      return reportJson(
          o.json,
          Error{Errc::usage, "lake " + o.lake + " is configured with another store: " + l->store},
          secondsSince(started));
    }
  } else if (existing.error().code != Errc::missing) {
    return reportJson(o.json, existing.error(), secondsSince(started));
  }
  bool created = false;
  const int code = runAsync([&](io::Uring& uring) -> asio::awaitable<int> {
    auto made = co_await ensureLakeLog(uring, o.store, o.lake, publisher);
    if (!made) co_return reportJson(o.json, made.error(), secondsSince(started));
    created = *made;
    co_return 0;
  });
  if (code != 0) return code;
  auto updated = updateConfig(
      o.config,
      [&](CatalogConfig& c) -> Res<void> {
        if (c.publisher != publisher) {
          return err(Errc::conflict, o.config + " changed its publisher meanwhile; run it again");
        }
        if (!c.lake(o.lake)) c.lakes.push_back(LakeEntry{o.lake, o.store});
        return {};
      },
      [&] {
        CatalogConfig c;
        c.publisher = publisher;
        return c;
      });
  if (!updated) return reportJson(o.json, updated.error(), secondsSince(started));
  if (o.json) {
    printJson(JsonObject{}
                  .add("ok", true)
                  .add("lake", o.lake)
                  .add("store", o.store)
                  .add("lake_log_namespace", lakeLogNamespace(o.lake).text())
                  .add("publisher", publisher.text())
                  .add("created", created)
                  .add("seconds", secondsSince(started)));
  } else {
    std::printf("lake %s %s in %s (lake log %s)\n", o.lake.c_str(), created ? "created" : "found",
                o.store.c_str(), lakeLogNamespace(o.lake).text().c_str());
  }
  return 0;
}

struct TokenCreateOptions {
  std::string config;
  std::string lake;
  std::string role;
  std::int64_t expiresIn = 0;
  bool json = false;
};

int runTokenCreate(const TokenCreateOptions& o) {
  auto role = parseRole(o.role);
  if (!role) return reportJson(o.json, Error{Errc::usage, "--role is read or read-write"}, 0);
  const std::string token = newToken();
  const std::int64_t now = unixSecondsNow();
  auto updated = updateConfig(o.config, [&](CatalogConfig& c) -> Res<void> {
    if (!c.lake(o.lake)) {
      return err(Errc::usage, "no lake " + o.lake + " in " + o.config + " (cairn lake create)");
    }
    TokenEntry t;
    t.sha256 = tokenHash(token);
    t.lake = o.lake;
    t.role = *role;
    t.createdUnixSeconds = now;
    if (o.expiresIn > 0) t.expiresUnixSeconds = now + o.expiresIn;
    c.tokens.push_back(t);
    return {};
  });
  if (!updated) return reportJson(o.json, updated.error(), 0);
  if (o.json) {
    printJson(JsonObject{}.add("token", token));
  } else {
    std::printf("%s\n", token.c_str());
    std::fprintf(stderr, "cairn: the token is shown once; %s keeps only its SHA-256\n",
                 o.config.c_str());
  }
  return 0;
}

struct ServeOptions {
  std::string config;
  std::string listen = "127.0.0.1:8181";
};

Res<std::pair<std::string, std::uint16_t>> parseListen(const std::string& text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return err(Errc::usage, "--listen is HOST:PORT");
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  unsigned long port = 0;
  try {
    std::size_t used = 0;
    port = std::stoul(text.substr(colon + 1), &used);
    if (used != text.size() - colon - 1 || port > 65535) throw std::out_of_range("port");
  } catch (const std::exception&) {
    return err(Errc::usage, "--listen: the port is 0..65535");
  }
  return std::pair{host, static_cast<std::uint16_t>(port)};
}

int runServe(const ServeOptions& o) {
  auto config = loadConfig(o.config);
  if (!config) return report(config.error());
  if (config->lakes.empty()) {
    return report(Error{Errc::usage, o.config + " names no lake (cairn lake create)"});
  }
  auto listen = parseListen(o.listen);
  if (!listen) return report(listen.error());
  return runAsync([&](io::Uring& uring) -> asio::awaitable<int> {
    auto executor = co_await asio::this_coro::executor;
    std::vector<std::unique_ptr<Lake>> lakes;
    for (const auto& l : config->lakes) {
      auto url = parseStoreUrl(l.store);
      if (!url) co_return report(Error{Errc::usage, "lake " + l.id + ": " + url.error()});
      auto store = openStore(uring, executor, *url);
      if (!store) co_return report(Error{Errc::usage, "lake " + l.id + ": " + store.error()});
      lakes.push_back(std::make_unique<Lake>(l.id, std::move(*store), *url, config->publisher,
                                             config->server.cacheBytes));
    }
    CatalogService service(o.config, *config, std::move(lakes));
    co_await service.checkReadiness();
    net::ServerOptions options;
    options.host = listen->first;
    options.port = listen->second;
    options.maxBodyBytes = config->server.maxBodyBytes;
    options.maxConnections = config->server.maxConnections;
    options.maxInFlight = config->server.maxInFlight;
    if (config->server.tlsCertificate) {
      options.tls = net::ServerTls{*config->server.tlsCertificate, *config->server.tlsPrivateKey};
    }
    options.log = net::jsonLogLines(stderr);
    net::HttpServer server(executor, options, [&service](const net::ServerRequest& req) {
      return service.handle(req);
    });
    if (auto started = server.start(); !started) {
      co_return report(Error{Errc::usage, started.error()});
    }
    std::fprintf(stderr, "cairn: serving %zu lake(s) on %s:%u\n", config->lakes.size(),
                 listen->first.c_str(), unsigned(server.port()));
    asio::steady_timer stopped(executor, asio::steady_timer::time_point::max());
    server.stopOnSignals([&stopped] { stopped.cancel(); });
    boost::system::error_code ec;
    co_await stopped.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    co_return 0;
  });
}

}  // namespace

void addCatalogCommands(CLI::App& app, int& exitCode) {
  auto* lake = app.add_subcommand("lake", "the catalog's lakes");
  lake->require_subcommand(1);
  auto lakeCreate = std::make_shared<LakeCreateOptions>();
  auto* create = lake->add_subcommand(
      "create", "add a lake to the configuration file and create its log in the store");
  create->add_option("--config", lakeCreate->config, "the configuration file (made if absent)")
      ->required();
  create->add_option("--store", lakeCreate->store, "the store URL: its root is the lake's root")
      ->required();
  create->add_option("--lake", lakeCreate->lake, "the lake id (a-z, 0-9, '-', '_')")->required();
  create->add_flag("--json", lakeCreate->json, "one JSON object on standard output");
  addTimeoutOption(create, kDefaultCommandTimeout);
  create->callback([lakeCreate, &exitCode] { exitCode = runLakeCreate(*lakeCreate); });

  auto* token = app.add_subcommand("token", "the catalog's bearer tokens");
  token->require_subcommand(1);
  auto tokenCreate = std::make_shared<TokenCreateOptions>();
  auto* tcreate = token->add_subcommand(
      "create", "make a bearer token for a lake; it is printed once, the file keeps its SHA-256");
  tcreate->add_option("--config", tokenCreate->config, "the configuration file")->required();
  tcreate->add_option("--lake", tokenCreate->lake, "the lake the token is for")->required();
  tcreate->add_option("--role", tokenCreate->role, "read or read-write")->required();
  tcreate->add_option("--expires-in", tokenCreate->expiresIn, "seconds until it expires (none)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{100} * 365 * 86400));
  tcreate->add_flag("--json", tokenCreate->json, "print {\"token\": \"...\"}");
  tcreate->callback([tokenCreate, &exitCode] { exitCode = runTokenCreate(*tokenCreate); });

  auto serveOptions = std::make_shared<ServeOptions>();
  auto* serve =
      app.add_subcommand("serve", "serve the configured lakes as an Iceberg REST catalog");
  serve->add_option("--config", serveOptions->config, "the configuration file")->required();
  serve->add_option("--listen", serveOptions->listen, "HOST:PORT (default 127.0.0.1:8181)");
  serve->callback([serveOptions, &exitCode] { exitCode = runServe(*serveOptions); });
}

}  // namespace cairn::cli
