// A small HTTP/1.1 proxy for tests, between cairn's S3 client and a real S3 server (RGW), that
// misbehaves on purpose: per request, a rule decides to forward it, forward it and drop the
// response (the server applied it; the client never hears), reset the connection before
// forwarding, forward it and answer something else in the server's place, forward it and
// withhold the response (applied; the connection stays open and
// silent, as when an answer is lost on the way: the client hears nothing until its own timeout),
// delay before forwarding (past the client's timeout: the request lands late), answer in the
// server's place (500, 503, 409, 412, ...), or forward and truncate the body.
// Requests pass byte-identical (headers included), so SigV4 signatures stay valid.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace cairn::test {

namespace proxy_detail {
namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
}  // namespace proxy_detail

struct ProxyAction {
  enum class Kind {
    forward,             // pass it on and pass the answer back
    dropResponse,        // pass it on, then close the client's connection without an answer
    withholdResponse,    // pass it on, then keep the client's connection open and silent until
                         // the client closes it (the answer lost: only a timeout tells)
    resetBeforeForward,  // close the client's connection; the server never sees the request
    answer,              // write `reply` (raw bytes) instead of forwarding
    replaceResponse,     // pass it on (the server applies it), then write `reply` instead of
                         // its answer (e.g. a lost race, or 412, for a write that was applied)
    truncateBody,        // pass it on, send the answer's head and half its body, then close
  };
  Kind kind = Kind::forward;
  std::chrono::milliseconds delay{0};  // before forwarding (or answering)
  std::string reply;
};

using ProxyRequest = boost::beast::http::request<boost::beast::http::string_body>;
using ProxyRule = std::function<ProxyAction(const ProxyRequest&)>;

class FaultProxy {
 public:
  // upstreamHost:upstreamPort is the real server; the proxy listens on 127.0.0.1 (ephemeral).
  FaultProxy(boost::asio::any_io_executor executor, std::string upstreamHost,
             std::uint16_t upstreamPort, ProxyRule rule)
      : state_(std::make_shared<State>(executor, std::move(upstreamHost), upstreamPort,
                                       std::move(rule))) {
    using namespace proxy_detail;
    tcp::endpoint where(asio::ip::make_address("127.0.0.1"), 0);
    state_->acceptor.open(where.protocol());
    state_->acceptor.set_option(tcp::acceptor::reuse_address(true));
    state_->acceptor.bind(where);
    state_->acceptor.listen();
    port_ = state_->acceptor.local_endpoint().port();
    asio::co_spawn(executor, acceptLoop(state_), asio::detached);
  }
  ~FaultProxy() {
    boost::system::error_code ignored;
    state_->acceptor.close(ignored);
  }
  std::uint16_t port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // Requests the server received through the proxy, and requests the proxy saw.
  int forwarded() const { return state_->forwarded; }
  int seen() const { return state_->seen; }

 private:
  struct State {
    State(boost::asio::any_io_executor e, std::string h, std::uint16_t p, ProxyRule r)
        : executor(e), acceptor(e), host(std::move(h)), port(p), rule(std::move(r)) {}
    boost::asio::any_io_executor executor;
    proxy_detail::tcp::acceptor acceptor;
    std::string host;
    std::uint16_t port;
    ProxyRule rule;
    int forwarded = 0;
    int seen = 0;
  };

  static boost::asio::awaitable<void> acceptLoop(std::shared_ptr<State> s) {
    using namespace proxy_detail;
    for (;;) {
      auto [ec, socket] = co_await s->acceptor.async_accept(asio::as_tuple(asio::use_awaitable));
      if (ec) co_return;
      asio::co_spawn(s->executor, session(s, std::move(socket)), asio::detached);
    }
  }

  static boost::asio::awaitable<void> session(std::shared_ptr<State> s,
                                              proxy_detail::tcp::socket client) {
    using namespace proxy_detail;
    constexpr auto tuple = asio::as_tuple(asio::use_awaitable);
    boost::beast::flat_buffer fromClient, fromServer;
    tcp::socket server(s->executor);
    for (;;) {
      ProxyRequest request;
      auto [rec, rn] = co_await http::async_read(client, fromClient, request, tuple);
      if (rec) break;
      ++s->seen;
      ProxyAction action = s->rule(request);
      if (action.delay.count() > 0) {
        asio::steady_timer pause(s->executor, action.delay);
        co_await pause.async_wait(tuple);
      }
      if (action.kind == ProxyAction::Kind::resetBeforeForward) break;
      if (action.kind == ProxyAction::Kind::answer) {
        auto [wec, wn] = co_await asio::async_write(client, asio::buffer(action.reply), tuple);
        if (wec) break;
        continue;
      }
      if (!server.is_open()) {
        tcp::endpoint upstream(asio::ip::make_address(s->host), s->port);
        auto [cec] = co_await server.async_connect(upstream, tuple);
        if (cec) break;
      }
      auto [fec, fn] = co_await http::async_write(server, request, tuple);
      if (fec) break;
      ++s->forwarded;
      http::response_parser<http::string_body> parser;
      parser.body_limit(std::uint64_t{1} << 30);
      if (request.method() == http::verb::head) parser.skip(true);
      auto [sec, sn] = co_await http::async_read(server, fromServer, parser, tuple);
      if (sec) break;
      if (action.kind == ProxyAction::Kind::dropResponse) break;
      if (action.kind == ProxyAction::Kind::replaceResponse) {
        co_await asio::async_write(client, asio::buffer(action.reply), tuple);
        break;
      }
      if (action.kind == ProxyAction::Kind::withholdResponse) {
        co_await silentUntilClosed(client, fromClient);
        break;
      }
      auto response = parser.release();
      if (action.kind == ProxyAction::Kind::truncateBody) {
        std::string body = response.body();
        response.prepare_payload();  // the full length is declared...
        http::response_serializer<http::string_body> head(response);
        auto [hec, hn] = co_await http::async_write_header(client, head, tuple);
        if (hec) break;
        std::string half = body.substr(0, body.size() / 2);  // ...half of it is sent
        co_await asio::async_write(client, asio::buffer(half), tuple);
        break;
      }
      auto [wec, wn] = co_await http::async_write(client, response, tuple);
      if (wec) break;
      if (!response.keep_alive()) break;
    }
    boost::system::error_code ignored;
    client.shutdown(tcp::socket::shutdown_both, ignored);
    client.close(ignored);
    server.close(ignored);
  }

  // Reads (and ignores) what the client sends until it closes the connection: an open,
  // silent connection, bounded by the client's own timeout.
  static boost::asio::awaitable<void> silentUntilClosed(proxy_detail::tcp::socket& client,
                                                        boost::beast::flat_buffer& buffer) {
    using namespace proxy_detail;
    for (;;) {
      buffer.consume(buffer.size());
      auto [ec, n] = co_await client.async_read_some(buffer.prepare(kSilentReadBytes),
                                                     asio::as_tuple(asio::use_awaitable));
      if (ec) co_return;
      buffer.commit(n);
    }
  }
  static constexpr std::size_t kSilentReadBytes = 4096;

  std::shared_ptr<State> state_;
  std::uint16_t port_ = 0;
};

}  // namespace cairn::test
