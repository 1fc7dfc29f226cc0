// The catalog server's composition root: the configured lakes' stores opened and counted, the
// REST service built on them and served on net/'s HTTP server until a signal stops it. The
// command line (`cairn serve`) parses its options and calls this; an embedding program can too.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <string>

#include "catalog/access/config.hpp"
#include "engine/error.hpp"

namespace cairn::io {
class Uring;
}

namespace cairn::catalog {

struct ServeSettings {
  std::string configPath;  // the configuration file, read again for its tokens
  std::string host = "127.0.0.1";
  std::uint16_t port = 8181;  // 0: any free port
  // Called once the server listens, with the port it listens on.
  std::function<void(std::uint16_t)> onListening;
};

// Serves `config`'s lakes until SIGINT or SIGTERM (the server drains its requests first).
// Errors: usage (a lake's store URL, or the address cannot be listened on).
boost::asio::awaitable<Res<void>> serveLakes(io::Uring& uring, const CatalogConfig& config,
                                             const ServeSettings& settings);

}  // namespace cairn::catalog
