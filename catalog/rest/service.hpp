// `cairn serve`'s request handler: the Iceberg REST catalog routes (docs/catalog.md, "Routes")
// over the configured lakes, with bearer-token identity, the Iceberg error envelope and the
// liveness and readiness routes. Runs on the HTTP server's executor (net/http/http_server.hpp).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "catalog/access/config.hpp"
#include "catalog/lake/lake.hpp"
#include "net/http/http_server.hpp"

namespace cairn::catalog {

class CatalogService {
 public:
  // `configFile` is read again (its tokens) when it changes, so tokens made while the server
  // runs are accepted; lakes are the ones given here.
  CatalogService(std::filesystem::path configFile, CatalogConfig config,
                 std::vector<std::unique_ptr<Lake>> lakes);

  boost::asio::awaitable<net::ServerResponse> handle(const net::ServerRequest& request);

  // Sets what the server asks of the catalog besides handle(): the header phase (a request
  // without a valid token is answered 401 before its body is read or `100 Continue` sent; an
  // unknown route 404) and the probe targets answered when the server is full (/healthz,
  // /readyz).
  void attachTo(net::ServerOptions& options) const;

  // Every lake's readiness checked now (the probe, once; the lake log read and verified).
  boost::asio::awaitable<void> checkReadiness();

  // The routes served, as GET /v1/config lists them ("METHOD /v1/{prefix}/...").
  static const std::vector<std::string>& endpoints();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace cairn::catalog
