// `cairn serve` in the test process: a lake over a store (a directory, or RGW through a fault
// proxy), the catalog service behind an HttpServer on an ephemeral port, run on its own thread,
// and a blocking HTTP client for the test's thread.
#pragma once

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "catalog/access/config.hpp"
#include "catalog/lake/lake.hpp"
#include "catalog/rest/service.hpp"
#include "engine/store/intercept_store.hpp"
#include "engine/store/open_store.hpp"
#include "io/file.hpp"
#include "io/uring.hpp"
#include "net/http/http_server.hpp"
#include "tests/io/io_test_support.hpp"

namespace cairn::test {

struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
  boost::json::value json() const { return boost::json::parse(body); }
  // The error envelope's members (empty when the body is not one).
  std::string errorField(const char* field) const {
    boost::system::error_code ec;
    auto v = boost::json::parse(body, ec);
    if (ec || !v.is_object() || !v.as_object().contains("error")) return {};
    const auto& e = v.at("error").as_object();
    if (!e.contains(field)) return {};
    const auto& f = e.at(field);
    return f.is_string() ? std::string(f.as_string()) : boost::json::serialize(f);
  }
};

// Sends one request on a connection of its own; its reply is read by receiveReply.
inline int sendRequest(std::uint16_t port, const std::string& method, const std::string& target,
                       const std::string& body = {},
                       const std::vector<std::pair<std::string, std::string>>& headers = {}) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in where{};
  where.sin_family = AF_INET;
  where.sin_port = htons(port);
  where.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&where), sizeof where) == 0);
  std::string request = method + " " + target + " HTTP/1.1\r\nHost: test\r\nConnection: close\r\n";
  for (const auto& [k, v] : headers) request += k + ": " + v + "\r\n";
  if (!body.empty() || method == "POST") {
    request +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  request += "\r\n" + body;
  for (std::string_view rest = request; !rest.empty();) {
    const auto n = ::send(fd, rest.data(), rest.size(), MSG_NOSIGNAL);
    REQUIRE(n > 0);
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  return fd;
}

// The reply to what sendRequest sent on `fd` (which it closes), every wait bounded (`patience`).
inline HttpReply receiveReply(int fd, const std::string& method,
                              std::chrono::milliseconds patience = std::chrono::seconds(60)) {
  std::string received;
  const auto until = std::chrono::steady_clock::now() + patience;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    REQUIRE(left.count() > 0);
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char chunk[65536];
    const auto n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) break;
    received.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(fd);
  HttpReply reply;
  const auto end = received.find("\r\n\r\n");
  REQUIRE(end != std::string::npos);
  const std::string head = received.substr(0, end);
  reply.status = std::stoi(head.substr(9, 3));
  for (auto at = head.find("\r\n"); at != std::string::npos;) {
    const auto next = head.find("\r\n", at + 2);
    const std::string line = head.substr(at + 2, next == std::string::npos ? next : next - at - 2);
    const auto colon = line.find(':');
    std::string name = line.substr(0, colon);
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    reply.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
    at = next;
  }
  reply.body = method == "HEAD" ? std::string() : received.substr(end + 4);
  return reply;
}

// One request per connection, blocking, every wait bounded (`patience`).
inline HttpReply httpRequest(std::uint16_t port, const std::string& method,
                             const std::string& target, const std::string& body = {},
                             const std::vector<std::pair<std::string, std::string>>& headers = {},
                             std::chrono::milliseconds patience = std::chrono::seconds(60)) {
  return receiveReply(sendRequest(port, method, target, body, headers), method, patience);
}

// A catalog serving one lake ("prod") over the store at `storeUrl`, on its own thread.
class CatalogRig {
 public:
  // `createLog`: make the lake log (or find it there already) before serving.
  explicit CatalogRig(const std::string& storeUrl, bool createLog = true)
      : CatalogRig([storeUrl](boost::asio::io_context&) { return storeUrl; }, createLog) {}
  // `store` runs first, on the rig's io_context (e.g. to start a proxy), and names the store.
  // `before`, when set, sees every request of the lake's store first (an InterceptStore, set
  // before the rig's thread starts).
  explicit CatalogRig(const std::function<std::string(boost::asio::io_context&)>& storeFor,
                      bool createLog = true, InterceptStore::Before before = {}) {
    const std::string storeUrl = storeFor(io);
    auto url = parseStoreUrl(storeUrl);
    REQUIRE(url.ok());
    config.publisher = *Uuid::parse("5e1f0000-0000-4000-8000-0000000000aa");
    config.lakes.push_back(catalog::LakeEntry{"prod", storeUrl});
    writeToken = addToken(catalog::Role::readWrite);
    readToken = addToken(catalog::Role::read);
    configFile = dir.path() / "catalog.json";
    {
      auto text = catalog::serializeConfig(config);
      REQUIRE(io::durableReplaceSync(configFile, asBytes(text)).ok());
    }
    auto store = openStore(uring, io.get_executor(), *url, StoreCreation::createIfMissing);
    REQUIRE(store.ok());
    if (before) {
      inner = std::move(*store);
      *store = std::make_unique<InterceptStore>(*inner, std::move(before));
    }
    auto lake = std::make_unique<catalog::Lake>("prod", std::move(*store), *url, config.publisher,
                                                std::uint64_t{64} << 20);
    if (createLog) createLakeLog(*lake);
    std::vector<std::unique_ptr<catalog::Lake>> lakes;
    lakes.push_back(std::move(lake));
    service = std::make_unique<catalog::CatalogService>(configFile, config, std::move(lakes));
    net::ServerOptions options;
    options.port = 0;
    options.maxBodyBytes = 1 << 20;
    service->attachTo(options);
    server = std::make_unique<net::HttpServer>(
        io.get_executor(), options,
        [this](const net::ServerRequest& r) { return service->handle(r); });
    REQUIRE(server->start().ok());
    port = server->port();
    thread = std::thread([this] { io.run(); });
  }
  ~CatalogRig() { stop(); }

  // Stops the server and the context's thread (once); the context stays, so what else lives
  // on it (a proxy) can go before the rig does.
  void stop() {
    if (!thread.joinable()) return;
    auto done = std::make_shared<std::promise<void>>();
    server->stop([done] { done->set_value(); });
    const bool stopped =
        done->get_future().wait_for(std::chrono::seconds(30)) == std::future_status::ready;
    // Other work may go on on the context (the store's kept-alive connections, a proxy): the
    // server has stopped (or never will), so the context stops here.
    io.stop();
    thread.join();
    CHECK(stopped);
  }

  HttpReply call(const std::string& method, const std::string& target, const std::string& body = {},
                 std::vector<std::pair<std::string, std::string>> headers = {}) {
    headers.emplace_back("Authorization", "Bearer " + writeToken);
    return httpRequest(port, method, target, body, headers);
  }

  io::test::TempDir dir;
  boost::asio::io_context io{1};
  io::Uring uring{io, 64};
  catalog::CatalogConfig config;
  std::filesystem::path configFile;
  std::string writeToken;
  std::string readToken;
  std::unique_ptr<ObjectStore> inner;  // the store behind the intercept, when there is one
  std::unique_ptr<catalog::CatalogService> service;
  std::unique_ptr<net::HttpServer> server;
  std::uint16_t port = 0;
  std::thread thread;

 private:
  std::string addToken(catalog::Role role) {
    const std::string token = catalog::newToken();
    catalog::TokenEntry t;
    t.sha256 = catalog::tokenHash(token);
    t.lake = "prod";
    t.role = role;
    config.tokens.push_back(t);
    return token;
  }

  void createLakeLog(catalog::Lake& lake) {
    auto bytes = catalog::encodeLakeRecord(
        catalog::LakeRecord{catalog::LakeCreated{"prod"}, unixSecondsNow() * 1000, {}});
    REQUIRE(bytes.ok());
    catalog::LogAppend what;
    what.records.push_back(*bytes);
    OperationBudget budget;
    const std::optional<catalog::LogCursor> none;
    // Until this task ends (other work on the context, a proxy's accept loop, goes on).
    std::optional<Res<catalog::Appended>> appended;
    boost::asio::co_spawn(
        io,
        [&]() -> boost::asio::awaitable<void> {
          appended.emplace(
              co_await catalog::appendLog(lake.store(), lake.logIdentity(), none, what, budget));
        },
        [this](std::exception_ptr) { io.stop(); });
    io.restart();
    io.run();
    io.restart();
    REQUIRE(appended.has_value());
    REQUIRE(appended->ok());
    // Lost: the log was there already (a rig on a store another rig used).
    REQUIRE((*appended)->outcome != catalog::Appended::Outcome::unknown);
  }
};

}  // namespace cairn::test
