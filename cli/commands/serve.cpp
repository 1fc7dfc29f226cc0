// `cairn serve`: the configured lakes served as an Iceberg REST catalog (catalog/rest/server.hpp).
#include <cstdio>
#include <string>

#include "catalog/access/config.hpp"
#include "catalog/rest/server.hpp"
#include "cli/commands.hpp"
#include "cli/run.hpp"
#include "io/uring.hpp"

namespace cairn::cli {

namespace asio = boost::asio;
using namespace cairn::catalog;

namespace {

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
  ServeSettings settings;
  settings.configPath = o.config;
  settings.host = listen->first;
  settings.port = listen->second;
  settings.onListening = [&](std::uint16_t port) {
    std::fprintf(stderr, "cairn: serving %zu lake(s) on %s:%u\n", config->lakes.size(),
                 listen->first.c_str(), unsigned(port));
  };
  // The server drains its requests on SIGTERM itself (catalog/rest/server.hpp).
  return runAsync(
      [&](io::Uring& uring) -> asio::awaitable<int> {
        auto served = co_await serveLakes(uring, *config, settings);
        co_return served ? 0 : report(served.error());
      },
      /*handleSignals=*/false);
}

}  // namespace

void addServeCommand(CLI::App& app, int& exitCode) {
  auto serveOptions = std::make_shared<ServeOptions>();
  auto* serve =
      app.add_subcommand("serve", "serve the configured lakes as an Iceberg REST catalog");
  serve->add_option("--config", serveOptions->config, "the configuration file")->required();
  serve->add_option("--listen", serveOptions->listen, "HOST:PORT (default 127.0.0.1:8181)");
  serve->callback([serveOptions, &exitCode] { exitCode = runServe(*serveOptions); });
}

}  // namespace cairn::cli
