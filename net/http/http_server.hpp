// HttpServer: HTTP/1.1 over TCP or TLS (Boost.Beast, OpenSSL), for C++20 coroutines; the
// front of `cairn serve`. docs/http-server.md is the reference.
//
// Shape (Beast's advanced server): an acceptor coroutine, and one coroutine per connection
// that reads a request, hands it to the handler, writes the response, and loops while the
// connection is kept alive. Pipelined requests are therefore answered in order, one at a time.
//
// Framing (RFC 9112): a request is framed by its Content-Length or by a Transfer-Encoding of
// `chunked` alone in HTTP/1.1; any other Transfer-Encoding, or one beside a Content-Length, is
// refused 400 and the connection closed, never read as body-less (what follows would be read as
// a request a proxy in front never saw: request smuggling). An HTTP/1.1 request needs one valid
// Host; the target is origin-form ("/path?query") or absolute-form ("http://host/path?query",
// served by its path and query). Every refusal of the server's own closes the connection.
//
// Header phase: once a request's header is parsed and checked, and before `100 Continue` is
// sent or a byte of its body read, ServerOptions::headerCheck (the application's: e.g. a token)
// may answer it. Then the body is never read: the connection closes unless there was none.
//
// Bounds, each in ServerOptions. A request header over maxHeaderBytes gets 431, a body over
// maxBodyBytes 413 (refused from its Content-Length before a byte of it is read, or as soon as
// a chunked body passes the bound); both close the connection. Connections: at most
// maxConnections served, at most maxConnectionsPerAddress of them from one peer address. A new
// connection beyond either takes the place of the oldest idle one (no request in progress) of
// the same address, or, beyond maxConnections only, of any address; with none idle it is
// refused: one request is read, a probe target (ServerOptions::probeTargets, e.g. /healthz) is
// answered by the handler, anything else 503 with `Retry-After: 1`, and the connection closes.
// A request beyond maxInFlight (requests inside the handler at once) gets 503 with
// `Retry-After: 1`, a probe target excepted. A request must arrive whole within readTimeout of
// its first byte (else 408 and close); a kept-alive connection with no next request within
// idleTimeout is closed silently; a response must be written within writeTimeout. Every error
// the server writes itself is the Iceberg REST envelope {"error":{"message","type","code",
// "reason"}} with Content-Type application/json; a handler that throws gives 500 with that
// envelope and a message free of internals.
//
// Stop (graceful): stop accepting (new connections are refused by the kernel), close idle
// connections, answer requests that arrive on kept-alive connections with 503 and
// `Connection: close`, let requests inside the handler finish and send their responses with
// `Connection: close`; after stopGrace, cancel what is left (handlers get a terminal
// cancellation) and close every connection. stopOnSignals() does this on SIGTERM or SIGINT
// (a second signal cuts the grace short), so that `io.run()` returns and the process exits 0.
//
// Log: one RequestRecord per answered request (also the server's own refusals). It holds the
// method, the route template the handler named (or "unmatched"), the status, the duration
// and the lake the handler named -- never a header value or the query string, which may carry
// credentials. requestLogLine() renders it as one line of JSON.
//
// Threading. Not thread-safe: the server, its connections and the handler run on the executor
// given at construction (a strand makes a multi-threaded io_context safe). start() and
// stopOnSignals() are called before that executor runs, or on it; stop() may be called from
// any thread. The server may be destroyed only on that executor or once it no longer runs;
// destroying it closes everything at once.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "net/http/http_client.hpp"  // HttpHeader

namespace cairn::net {

struct ServerRequest {
  std::string method;  // "GET", "HEAD", "POST", ...
  std::string target;  // the path as received (still percent-encoded), without the query
  std::string query;   // what followed '?', raw; never logged
  std::vector<HttpHeader> headers;
  std::string body;
  std::string remote;  // "address:port" of the peer

  // First header with this name (case-insensitive), or nullptr.
  const std::string* header(std::string_view name) const;
};

struct ServerResponse {
  int status = 200;                 // 200..599; anything else is answered 500
  std::vector<HttpHeader> headers;  // Content-Length and Connection are the server's
  std::string body;
  std::string contentType = "application/json";  // sent when the body is not empty
  // For the log line: the route template that matched (e.g. "/v1/{prefix}/namespaces"; empty:
  // "unmatched") and the lake the request was for (empty: none).
  std::string route;
  std::string lake;
};

using Handler = std::function<boost::asio::awaitable<ServerResponse>(const ServerRequest&)>;

// Called with a request's header (its body still unread and empty) before `100 Continue` or
// the body; an answer is the request's response (the handler is not called). Runs on the
// server's executor and must not block; one that throws answers 500.
using HeaderCheck = std::function<std::optional<ServerResponse>(const ServerRequest&)>;

// The Iceberg REST error envelope:
// {"error":{"message":message,"type":type,"code":status,"reason":reason}}.
ServerResponse jsonError(int status, std::string_view type, std::string_view reason,
                         std::string_view message);

// One answered request, as the log sees it.
struct RequestRecord {
  std::chrono::system_clock::time_point time;  // when its first byte was read
  std::string method;                          // "-" when the server answered before reading
  std::string route;                           // the handler's route template, or "unmatched"
  int status = 0;
  double milliseconds = 0;  // first byte read to response written
  std::string lake;         // empty: none
  std::string remote;
};

using RequestLogger = std::function<void(const RequestRecord&)>;

// {"time":"2024-05-01T12:00:00.123Z","method":"GET","route":"/v1/config","status":200,
//  "ms":1.234,"lake":"prod","remote":"127.0.0.1:50522"} (lake: null when none), no newline.
std::string requestLogLine(const RequestRecord& record);

// A logger writing requestLogLine() and a newline to `out` (one fwrite per line, flushed).
RequestLogger jsonLogLines(std::FILE* out);

struct ServerTls {
  std::string certificateFile;  // PEM; the server's certificate, then any intermediates
  std::string privateKeyFile;   // PEM
};

struct ServerOptions {
  std::string host = "127.0.0.1";          // an address, or a name resolved once at start()
  std::uint16_t port = 8181;               // 0: an ephemeral port (HttpServer::port() after start)
  std::size_t maxHeaderBytes = 64 * 1024;  // request line and fields; beyond: 431
  std::size_t maxBodyBytes = 16 * 1024 * 1024;    // large table metadata fits; beyond: 413
  std::size_t maxConnections = 256;               // served at once; beyond: evict idle, or 503
  std::size_t maxConnectionsPerAddress = 64;      // of them from one peer address; likewise
  std::size_t maxInFlight = 64;                   // requests inside the handler; beyond: 503
  std::size_t maxRequestsPerConnection = 10000;   // then `Connection: close`
  std::chrono::milliseconds readTimeout{30000};   // a request's first byte to its last
  std::chrono::milliseconds idleTimeout{60000};   // a kept-alive connection awaiting a request
  std::chrono::milliseconds writeTimeout{30000};  // writing one response
  std::chrono::milliseconds stopGrace{10000};     // stop(): in-flight requests finish within it
  // Closing after a refusal: the rest of what the client sent is read and dropped for at
  // most this long (closing with unread data would reset the connection and could destroy
  // the response before the client read it).
  std::chrono::milliseconds closeLinger{1000};
  std::optional<ServerTls> tls;
  RequestLogger log;        // optional
  HeaderCheck headerCheck;  // optional: the header phase's answer
  // Targets (paths) answered even beyond maxConnections and maxInFlight, so that liveness and
  // readiness are seen when the server is full (on a refused connection: a request without a
  // body). The handler answers them as any other.
  std::vector<std::string> probeTargets;
};

class HttpServer {
 public:
  HttpServer(boost::asio::any_io_executor executor, ServerOptions options, Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Checks the options, reads the TLS certificate and key, binds and listens, and starts
  // accepting on the executor. The error is a message for a person: "cannot listen on
  // 127.0.0.1:8181: Address already in use", "TLS certificate file ...: ...".
  Result<void, std::string> start();

  // The bound port (after a successful start).
  std::uint16_t port() const;

  // Begins the graceful stop (idempotent; any thread). `done`, if given, runs on the
  // executor once every connection is closed.
  void stop(std::function<void()> done = {});

  // On the first SIGTERM or SIGINT, stop(done); on a second, the grace ends at once.
  void stopOnSignals(std::function<void()> done = {});

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace cairn::net
