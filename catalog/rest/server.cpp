#include "catalog/rest/server.hpp"

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <memory>
#include <vector>

#include "catalog/lake/lake.hpp"
#include "catalog/rest/service.hpp"
#include "engine/store/aws_config.hpp"
#include "engine/store/counting_store.hpp"
#include "engine/store/open_store.hpp"
#include "net/http/http_server.hpp"

namespace cairn::catalog {

namespace asio = boost::asio;

namespace {

// Each configured lake on its store, counted for GET /metrics.
asio::awaitable<Res<std::vector<std::unique_ptr<Lake>>>> openLakes(io::Uring& uring,
                                                                   const CatalogConfig& config) {
  auto executor = co_await asio::this_coro::executor;
  std::vector<std::unique_ptr<Lake>> lakes;
  for (const auto& l : config.lakes) {
    auto parsed = parseStoreUrl(l.store);
    if (!parsed) co_return err(Errc::usage, "lake " + l.id + ": " + parsed.error());
    // Resolved once here: the lake hands clients the endpoint and region the store uses.
    auto url = resolveStoreUrl(*parsed);
    if (!url) co_return err(Errc::usage, "lake " + l.id + ": " + url.error());
    // Unless the URL says otherwise, every request the server admits can have a store
    // request under way without waiting for a connection (docs/catalog.md).
    if (!url->connections) {
      url->connections = static_cast<std::size_t>(
          std::min<std::uint64_t>(config.server.maxInFlight, kMaxStoreConnections));
    }
    auto store = openStore(uring, executor, *url);
    if (!store) co_return err(Errc::usage, "lake " + l.id + ": " + store.error());
    lakes.push_back(std::make_unique<Lake>(l.id, std::make_unique<CountingStore>(std::move(*store)),
                                           *url, config.publisher, config.server.cacheBytes, &l));
  }
  co_return lakes;
}

net::ServerOptions serverOptions(const CatalogConfig& config, const ServeSettings& settings) {
  net::ServerOptions options;
  options.host = settings.host;
  options.port = settings.port;
  options.maxBodyBytes = config.server.maxBodyBytes;
  options.maxConnections = config.server.maxConnections;
  options.maxConnectionsPerAddress = config.server.maxConnectionsPerAddress;
  options.maxInFlight = config.server.maxInFlight;
  options.idleTimeout = std::chrono::seconds(config.server.idleTimeoutSeconds);
  if (config.server.tlsCertificate) {
    options.tls = net::ServerTls{*config.server.tlsCertificate, *config.server.tlsPrivateKey};
  }
  options.log = net::jsonLogLines(stderr);
  return options;
}

}  // namespace

asio::awaitable<Res<void>> serveLakes(io::Uring& uring, const CatalogConfig& config,
                                      const ServeSettings& settings) {
  auto executor = co_await asio::this_coro::executor;
  auto lakes = co_await openLakes(uring, config);
  if (!lakes) co_return failureOf(lakes);
  CatalogService service(settings.configPath, config, std::move(*lakes));
  co_await service.checkReadiness();
  net::ServerOptions options = serverOptions(config, settings);
  service.attachTo(options);
  net::HttpServer server(executor, options,
                         [&service](const net::ServerRequest& req) { return service.handle(req); });
  if (auto started = server.start(); !started) co_return err(Errc::usage, started.error());
  if (settings.onListening) settings.onListening(server.port());
  asio::steady_timer stopped(executor, asio::steady_timer::time_point::max());
  server.stopOnSignals([&stopped] { stopped.cancel(); });
  boost::system::error_code ec;
  co_await stopped.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  co_return Res<void>{};
}

}  // namespace cairn::catalog
