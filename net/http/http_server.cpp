// The server's Beast code; the header stays light (like http_client.cpp).
#include "net/http/http_server.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value.hpp>
#include <cassert>
#include <cctype>
#include <csignal>
#include <ctime>
#include <limits>
#include <list>
#include <map>
#include <set>
#include <utility>

namespace cairn::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;

constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);
// Bytes asked of the socket per read (Beast's own cap for a parser's read).
constexpr std::size_t kReadChunkBytes = 64 * 1024;
// Bytes read and dropped while lingering before a close (closeLinger bounds the time).
constexpr std::size_t kMaxLingerBytes = 1024 * 1024;
// A failed accept (e.g. out of descriptors) is retried after this pause, not in a spin.
constexpr std::chrono::milliseconds kAcceptRetryPause{100};

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string quoted(std::string_view s) { return json::serialize(json::string(s)); }

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool isHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

// RFC 3986 reg-name: unreserved, sub-delims and pct-encoded.
bool validRegName(std::string_view name) {
  constexpr std::string_view kAllowed = "-._~!$&'()*+,;=";
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (std::isalnum(static_cast<unsigned char>(c)) || kAllowed.find(c) != std::string_view::npos) {
      continue;
    }
    if (c != '%' || i + 2 >= name.size() || !isHex(name[i + 1]) || !isHex(name[i + 2])) {
      return false;
    }
    i += 2;
  }
  return true;
}

// RFC 3986 uri-host [":" port]: a reg-name (or IPv4 address), or an IPv6 literal in brackets.
bool validAuthority(std::string_view authority) {
  std::string_view host = authority;
  std::string_view port;
  if (authority.starts_with('[')) {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return false;
    host = authority.substr(1, close - 1);
    const std::string_view rest = authority.substr(close + 1);
    if (!rest.empty() && !rest.starts_with(':')) return false;
    port = rest.empty() ? rest : rest.substr(1);
    if (host.empty() || host.find_first_not_of("0123456789abcdefABCDEF:.") != host.npos) {
      return false;
    }
  } else {
    const auto colon = authority.find(':');
    host = authority.substr(0, colon);
    port = colon == std::string_view::npos ? std::string_view() : authority.substr(colon + 1);
    if (!validRegName(host)) return false;
  }
  return port.find_first_not_of("0123456789") == std::string_view::npos;
}

std::string describe(const tcp::endpoint& e) {
  const auto address = e.address();
  const std::string text = address.to_string();
  return (address.is_v6() ? "[" + text + "]" : text) + ":" + std::to_string(e.port());
}

std::string isoTime(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::time_point_cast<std::chrono::milliseconds>(t);
  const std::time_t seconds = std::chrono::system_clock::to_time_t(ms);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[40];
  const auto n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  const auto millis = ms.time_since_epoch().count() % 1000;
  std::snprintf(text + n, sizeof text - n, ".%03dZ", static_cast<int>(millis));
  return text;
}

ServerResponse unavailable(std::string_view reason, std::string_view message) {
  ServerResponse r = jsonError(503, "ServiceUnavailableException", reason, message);
  r.headers.push_back({"Retry-After", "1"});
  return r;
}

ServerResponse internalError() {
  return jsonError(500, "InternalServerError", "internal-error",
                   "the server failed to handle the request");
}

// What the server answers when reading a request failed; nullopt: close without a word (the
// client went away, or the bytes were not HTTP enough to deserve an answer).
std::optional<ServerResponse> refusalFor(const error_code& ec, bool timedOut,
                                         const ServerOptions& options) {
  if (timedOut) {
    return jsonError(
        408, "BadRequestException", "read-timeout",
        "the request did not arrive within " + std::to_string(options.readTimeout.count()) + " ms");
  }
  if (ec == http::error::header_limit) {
    return jsonError(
        431, "BadRequestException", "header-too-large",
        "the request header is over " + std::to_string(options.maxHeaderBytes) + " bytes");
  }
  if (ec == http::error::body_limit) {
    return jsonError(413, "BadRequestException", "body-too-large",
                     "the request body is over " + std::to_string(options.maxBodyBytes) + " bytes");
  }
  if (ec == http::error::end_of_stream || ec == http::error::partial_message) return std::nullopt;
  if (ec.category() == http::make_error_code(http::error::bad_method).category()) {
    return jsonError(400, "BadRequestException", "malformed-request", "malformed HTTP request");
  }
  return std::nullopt;
}

using Parser = http::request_parser<http::string_body>;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

using Head = Parser::value_type;

// RFC 9112 §6.1, §6.3: a request's body is framed by its Content-Length, or by a
// Transfer-Encoding of `chunked` alone in HTTP/1.1. Beast reads any other Transfer-Encoding
// (gzip; chunked, identity) as no framing at all, so that the body would be read as the next
// request; a proxy in front may frame it otherwise (request smuggling). Refused, and closed.
std::optional<std::string> framingProblem(const Head& head) {
  const auto encodings = head.count(http::field::transfer_encoding);
  if (encodings == 0) return std::nullopt;
  if (head.version() < 11) return "Transfer-Encoding in an HTTP/1.0 request";
  if (encodings > 1) return "more than one Transfer-Encoding";
  if (!equalsIgnoreCase(trimmed(head[http::field::transfer_encoding]), "chunked")) {
    return "a Transfer-Encoding other than chunked";
  }
  if (head.count(http::field::content_length) != 0) {
    return "both Transfer-Encoding and Content-Length";
  }
  return std::nullopt;
}

// RFC 9112 §3.2: an HTTP/1.1 request has exactly one Host; a Host is valid (RFC 3986 uri-host
// and an optional port).
std::optional<std::string> hostProblem(const Head& head) {
  const auto hosts = head.count(http::field::host);
  if (hosts > 1) return "more than one Host";
  if (hosts == 0) {
    return head.version() >= 11 ? std::optional<std::string>("no Host") : std::nullopt;
  }
  if (!validAuthority(head[http::field::host])) return "an invalid Host";
  return std::nullopt;
}

// RFC 9112 §3.2: origin-form "/path?query", absolute-form "http://authority/path?query" (the
// form sent to a proxy: served by its path and query), or "*" for OPTIONS. Path and query.
std::optional<std::pair<std::string_view, std::string_view>> splitTarget(std::string_view target,
                                                                         http::verb method) {
  if (target == "*" && method == http::verb::options) return std::pair{target, std::string_view()};
  if (!target.starts_with('/')) {
    const auto scheme = target.find("://");
    if (scheme == std::string_view::npos) return std::nullopt;
    const std::string_view name = target.substr(0, scheme);
    if (!equalsIgnoreCase(name, "http") && !equalsIgnoreCase(name, "https")) return std::nullopt;
    target.remove_prefix(scheme + 3);
    const auto pathAt = std::min(target.find('/'), target.find('?'));
    const std::string_view authority = target.substr(0, pathAt);
    if (authority.empty() || !validAuthority(authority)) return std::nullopt;
    target = pathAt == std::string_view::npos ? std::string_view() : target.substr(pathAt);
  }
  const auto question = target.find('?');
  std::string_view path = target.substr(0, question);
  if (path.empty()) path = "/";
  if (question == std::string_view::npos) return std::pair{path, std::string_view()};
  return std::pair{path, target.substr(question + 1)};
}

// The request as the handler sees it, without its body; or why it is malformed.
Result<ServerRequest, std::string> headOf(const Head& head, const std::string& remote) {
  if (auto problem = framingProblem(head)) return fail(std::move(*problem));
  if (auto problem = hostProblem(head)) return fail(std::move(*problem));
  const auto target = splitTarget(head.target(), head.method());
  if (!target) return fail(std::string("a request target that is neither a path nor a URL"));
  ServerRequest r;
  r.method = std::string(head.method_string());
  r.target = std::string(target->first);
  r.query = std::string(target->second);
  for (const auto& field : head) {
    r.headers.push_back({std::string(field.name_string()), std::string(field.value())});
  }
  r.remote = remote;
  return r;
}

ServerResponse malformed(std::string_view why) {
  return jsonError(400, "BadRequestException", "malformed-request",
                   "malformed HTTP request: " + std::string(why));
}

bool managedHeader(std::string_view name) {
  return equalsIgnoreCase(name, "Content-Length") || equalsIgnoreCase(name, "Connection") ||
         equalsIgnoreCase(name, "Transfer-Encoding");
}

// The message to write. A response to HEAD keeps the Content-Length its body would have. A
// Content-Type among the handler's headers wins over contentType.
http::response<http::string_body> toMessage(ServerResponse&& r, bool keepAlive, bool head) {
  http::response<http::string_body> m;
  m.version(11);
  m.result(static_cast<unsigned>(r.status));
  m.set(http::field::server, "cairn");
  for (const auto& h : r.headers) {
    if (!managedHeader(h.name)) m.insert(h.name, h.value);
  }
  const bool bodiless = r.status == 204 || r.status == 304;
  if (!bodiless) {
    const bool typed = m.find(http::field::content_type) != m.end();
    if (!r.body.empty() && !typed) m.set(http::field::content_type, r.contentType);
    m.body() = std::move(r.body);
    m.prepare_payload();
    if (head) m.body().clear();
  }
  m.keep_alive(keepAlive);
  return m;
}

enum class Phase { handshake, idle, reading, handling, writing, closing };

struct Server;

}  // namespace

const std::string* ServerRequest::header(std::string_view name) const {
  for (const auto& h : headers) {
    if (equalsIgnoreCase(h.name, name)) return &h.value;
  }
  return nullptr;
}

ServerResponse jsonError(int status, std::string_view type, std::string_view reason,
                         std::string_view message) {
  ServerResponse r;
  r.status = status;
  r.body = "{\"error\":{\"message\":" + quoted(message) + ",\"type\":" + quoted(type) +
           ",\"code\":" + std::to_string(status) + ",\"reason\":" + quoted(reason) + "}}";
  r.contentType = "application/json";
  return r;
}

std::string requestLogLine(const RequestRecord& record) {
  // Boost.JSON writes doubles as 1.234E0; the duration is written by hand instead.
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.3f", record.milliseconds);
  return "{\"time\":" + quoted(isoTime(record.time)) + ",\"method\":" + quoted(record.method) +
         ",\"route\":" + quoted(record.route.empty() ? "unmatched" : record.route) +
         ",\"status\":" + std::to_string(record.status) + ",\"ms\":" + ms +
         ",\"lake\":" + (record.lake.empty() ? std::string("null") : quoted(record.lake)) +
         ",\"remote\":" + quoted(record.remote) + "}";
}

RequestLogger jsonLogLines(std::FILE* out) {
  return [out](const RequestRecord& record) {
    const std::string line = requestLogLine(record) + "\n";
    std::fwrite(line.data(), 1, line.size(), out);
    std::fflush(out);
  };
}

namespace {

// One accepted connection. Owned by its coroutine (shared, so that a timer's handler can
// tell whether it still exists); registered with the server while it lives.

struct Session : std::enable_shared_from_this<Session> {
  Session(std::shared_ptr<Server> server, tcp::socket socket, std::string address, bool overflow);
  ~Session();

  // Every change of phase goes through here: the server keeps the idle ones in order.
  void enter(Phase next);

  beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *tcp; }

  // The read deadline (readTimeout, idleTimeout). Beast's own expiry closes the socket, which
  // leaves no way to answer 408; this one only cancels the pending read and says so.
  // An expiry already queued when the deadline is disarmed must not cancel a later
  // operation: each arming has a number, and only the current one acts.
  void arm(std::chrono::milliseconds timeout) {
    timedOut = false;
    const std::uint64_t generation = ++deadlineGeneration;
    watchdog.expires_after(timeout);
    watchdog.async_wait([weak = weak_from_this(), generation](error_code ec) {
      auto self = weak.lock();
      if (ec || !self || self->deadlineGeneration != generation) return;
      self->timedOut = true;
      self->lowest().socket().cancel(ec);
    });
  }
  // After a read: a timeout that fired after the read completed does not count.
  void disarm(const error_code& readError) {
    ++deadlineGeneration;
    watchdog.cancel();
    if (!readError) timedOut = false;
  }

  void closeNow() {
    handlerCancel.emit(asio::cancellation_type::terminal);
    lowest().close();
  }

  std::shared_ptr<Server> server;
  std::optional<beast::tcp_stream> tcp;
  std::optional<TlsStream> tls;
  // Bytes read and not yet parsed. Bounded without a limit of its own: the parser refuses a
  // header larger than maxHeaderBytes, and moves body bytes out as it parses them.
  beast::flat_buffer buffer;
  asio::steady_timer watchdog;
  asio::cancellation_signal handlerCancel;
  std::string remote;
  std::string address;  // the peer's IP address: the per-address bound's key
  Phase phase = Phase::handshake;
  std::uint64_t deadlineGeneration = 0;
  bool timedOut = false;
  bool overflow = false;  // accepted beyond the bounds: refused
  bool counted = false;   // in the server's counts (until it ends or is evicted)
  // Its place among the idle connections (no request in progress), oldest first.
  std::optional<std::list<Session*>::iterator> idlePlace;
};

bool evictable(Phase phase) { return phase == Phase::handshake || phase == Phase::idle; }

std::string addressOf(const tcp::socket& socket) {
  error_code ec;
  const auto peer = socket.remote_endpoint(ec);
  return ec ? std::string("unknown") : peer.address().to_string();
}

// The server's state and its coroutines (HttpServer::Impl is this).
struct Server : std::enable_shared_from_this<Server> {
  Server(asio::any_io_executor e, ServerOptions o, Handler h)
      : executor(std::move(e)),
        options(std::move(o)),
        handler(std::move(h)),
        acceptor(executor),
        graceTimer(executor) {}

  asio::any_io_executor executor;
  ServerOptions options;
  Handler handler;
  tcp::acceptor acceptor;
  std::optional<asio::ssl::context> ssl;
  std::optional<asio::signal_set> signals;
  asio::steady_timer graceTimer;
  std::set<Session*> sessions;
  std::size_t served = 0;                         // counted sessions not in overflow
  std::size_t refusing = 0;                       // counted sessions in overflow
  std::map<std::string, std::size_t> servedFrom;  // served sessions by peer address
  std::list<Session*> idle;  // served sessions with no request in progress, oldest first
  std::size_t inFlight = 0;  // requests inside the handler
  std::uint16_t port = 0;
  bool started = false;
  bool stopping = false;
  bool finished = false;
  bool abandoned = false;
  std::vector<std::function<void()>> whenStopped;

  // ---- starting -----------------------------------------------------------------------

  std::optional<std::string> checkOptions() const {
    const auto& o = options;
    if (o.maxConnections == 0 || o.maxConnectionsPerAddress == 0 || o.maxInFlight == 0 ||
        o.maxRequestsPerConnection == 0) {
      return "maxConnections, maxConnectionsPerAddress, maxInFlight and "
             "maxRequestsPerConnection must be at least 1";
    }
    if (o.maxHeaderBytes == 0 || o.maxHeaderBytes > std::numeric_limits<std::uint32_t>::max()) {
      return "maxHeaderBytes must be between 1 and 4 GiB";
    }
    for (auto t : {o.readTimeout, o.idleTimeout, o.writeTimeout, o.stopGrace, o.closeLinger}) {
      if (t.count() <= 0) return "every timeout must be positive";
    }
    return std::nullopt;
  }

  std::optional<std::string> loadTls() {
    if (!options.tls) return std::nullopt;
    ssl.emplace(asio::ssl::context::tls_server);
    ssl->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                     asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                     asio::ssl::context::no_tlsv1_1);
    error_code ec;
    ssl->use_certificate_chain_file(options.tls->certificateFile, ec);
    if (ec) return "TLS certificate file " + options.tls->certificateFile + ": " + ec.message();
    ssl->use_private_key_file(options.tls->privateKeyFile, asio::ssl::context::pem, ec);
    if (ec) return "TLS private key file " + options.tls->privateKeyFile + ": " + ec.message();
    return std::nullopt;
  }

  std::optional<std::string> listen() {
    const bool v6 = options.host.find(':') != std::string::npos;
    const std::string where =
        (v6 ? "[" + options.host + "]" : options.host) + ":" + std::to_string(options.port);
    error_code ec;
    tcp::resolver resolver(executor);
    const auto found =
        resolver.resolve(options.host, std::to_string(options.port), tcp::resolver::passive, ec);
    if (ec || found.empty()) return "cannot resolve " + options.host + ": " + ec.message();
    const tcp::endpoint endpoint = found.begin()->endpoint();
    acceptor.open(endpoint.protocol(), ec);
    if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor.bind(endpoint, ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      error_code ignored;
      acceptor.close(ignored);
      return "cannot listen on " + where + ": " + ec.message();
    }
    port = acceptor.local_endpoint(ec).port();
    return std::nullopt;
  }

  Result<void, std::string> start() {
    if (started || stopping) return fail(std::string("the server was already started"));
    if (auto problem = checkOptions()) return fail(*problem);
    if (auto problem = loadTls()) return fail(*problem);
    if (auto problem = listen()) return fail(*problem);
    started = true;
    asio::co_spawn(executor, acceptLoop(shared_from_this()), asio::detached);
    return {};
  }

  // ---- accepting ----------------------------------------------------------------------

  static asio::awaitable<void> acceptLoop(std::shared_ptr<Server> self) {
    while (!self->stopping) {
      auto [ec, socket] = co_await self->acceptor.async_accept(kNoThrow);
      if (self->stopping || ec == asio::error::operation_aborted) break;
      if (ec) {
        asio::steady_timer pause(self->executor, kAcceptRetryPause);
        co_await pause.async_wait(kNoThrow);
        continue;
      }
      std::string address = addressOf(socket);
      const bool served = self->admit(address);
      // Refusals are bounded too: beyond maxConnections of them, a connection is closed
      // unanswered.
      if (!served && self->refusing >= self->options.maxConnections) continue;
      // Counted here, before the next accept.
      auto session =
          std::make_shared<Session>(self, std::move(socket), std::move(address), !served);
      asio::co_spawn(self->executor, runConnection(self, std::move(session)), asio::detached);
    }
  }

  // Whether a new connection from `address` is served: within the bounds, or in the place of
  // the oldest idle connection of that address (at maxConnectionsPerAddress) or of any
  // (at maxConnections).
  bool admit(const std::string& address) {
    const auto from = servedFrom.find(address);
    if (from != servedFrom.end() && from->second >= options.maxConnectionsPerAddress) {
      return evictOldestIdle(&address);
    }
    return served < options.maxConnections || evictOldestIdle(nullptr);
  }

  // Closes the oldest idle served connection (of `address`, if given); false if none is.
  bool evictOldestIdle(const std::string* address) {
    const auto oldest = std::find_if(idle.begin(), idle.end(), [address](const Session* s) {
      return address == nullptr || s->address == *address;
    });
    if (oldest == idle.end()) return false;
    Session& evicted = **oldest;
    uncount(evicted);
    evicted.closeNow();  // its coroutine ends as on an idle timeout
    return true;
  }

  void count(Session& s) {
    assert(!s.counted);
    s.counted = true;
    if (s.overflow) {
      ++refusing;
    } else {
      ++served;
      ++servedFrom[s.address];
    }
    phaseChanged(s);
  }

  void uncount(Session& s) {
    if (!s.counted) return;
    s.counted = false;
    phaseChanged(s);
    if (s.overflow) {
      --refusing;
      return;
    }
    --served;
    const auto from = servedFrom.find(s.address);
    assert(from != servedFrom.end() && from->second > 0);
    if (--from->second == 0) servedFrom.erase(from);
  }

  // Keeps `idle` in step with a served session's phase.
  void phaseChanged(Session& s) {
    const bool isIdle = s.counted && !s.overflow && evictable(s.phase);
    if (isIdle && !s.idlePlace) s.idlePlace = idle.insert(idle.end(), &s);
    if (!isIdle && s.idlePlace) {
      idle.erase(*s.idlePlace);
      s.idlePlace.reset();
    }
  }

  static asio::awaitable<void> runConnection(std::shared_ptr<Server> self,
                                             std::shared_ptr<Session> s) {
    if (!self->ssl) {
      co_await self->converse(*s, *s->tcp);
      co_return;
    }
    s->tls.emplace(std::move(*s->tcp), *self->ssl);
    s->tcp.reset();
    s->lowest().expires_after(self->options.readTimeout);
    auto [ec] = co_await s->tls->async_handshake(asio::ssl::stream_base::server, kNoThrow);
    if (ec) co_return;  // Beast's expiry closed it, or the client is not speaking TLS
    s->lowest().expires_never();
    co_await self->converse(*s, *s->tls);
  }

  template <class Stream>
  asio::awaitable<void> converse(Session& s, Stream& stream) {
    // (No co_await inside ?: -- GCC 12 destroys such temporaries twice.)
    if (s.overflow) {
      co_await refuseConnection(s, stream);
    } else {
      co_await serve(s, stream);
    }
    co_await closeGracefully(s, stream);
  }

  // ---- one connection: read, handle, write, while kept alive ---------------------------

  // How reading a request went: it arrived (whole, or far enough to deserve an answer) or not
  // (close silently).
  struct Incoming {
    bool arrived = false;
    std::optional<ServerRequest> request;  // its header, and its body once read
    std::optional<ServerResponse> answer;  // given before the body: a refusal or headerCheck's
    bool bodyUnread = true;                // with `answer`: the connection must close
    std::chrono::system_clock::time_point time = std::chrono::system_clock::now();
    Clock::time_point started = Clock::now();
  };

  // Beyond the connection bounds: one request is read; a probe target without a body is
  // answered, anything else refused 503. The connection closes after.
  template <class Stream>
  asio::awaitable<void> refuseConnection(Session& s, Stream& stream) {
    Parser parser;
    Incoming in = co_await readHead(s, stream, parser, options.readTimeout);
    s.disarm({});
    const std::string method = in.request ? in.request->method : std::string("-");
    const bool probe = in.request && parser.is_done() && isProbe(in.request->target);
    ServerResponse r = probe ? ServerResponse{} : full();
    if (probe) r = co_await dispatch(s, *in.request);
    co_await respond(s, stream, std::move(r), in, method, false);
  }

  ServerResponse full() const {
    return unavailable(
        "too-many-connections",
        "the server has " + std::to_string(options.maxConnections) + " connections open");
  }

  bool isProbe(std::string_view target) const {
    const auto& probes = options.probeTargets;
    return std::find(probes.begin(), probes.end(), target) != probes.end();
  }

  template <class Stream>
  asio::awaitable<void> serve(Session& s, Stream& stream) {
    std::optional<Parser> parser;  // a fresh one per request (a parser is not reusable)
    for (std::size_t n = 1;; ++n) {
      Incoming in = co_await readRequest(s, stream, parser.emplace());
      if (!in.arrived) co_return;
      // (The request line is parsed first: known even when a later field was refused.)
      std::string method(parser->get().method_string());
      if (method.empty()) method = "-";
      const bool wantsKeepAlive = !in.bodyUnread && parser->get().keep_alive();
      // (No co_await inside ?: -- GCC 12 destroys such temporaries twice.)
      ServerResponse response;
      if (in.answer) {
        response = std::move(*in.answer);
      } else {
        response = co_await dispatch(s, *in.request);
      }
      const bool keepAlive = wantsKeepAlive && !stopping && n < options.maxRequestsPerConnection;
      if (!co_await respond(s, stream, std::move(response), in, method, keepAlive)) co_return;
      if (!keepAlive) co_return;
    }
  }

  // A request: its header (readHead), the header phase's check, then its body; the read
  // deadline covers all of it.
  template <class Stream>
  asio::awaitable<Incoming> readRequest(Session& s, Stream& stream, Parser& parser) {
    Incoming in = co_await readHead(s, stream, parser, options.idleTimeout);
    if (!in.request) {
      s.disarm({});
      co_return in;
    }
    if (auto early = checkHeader(*in.request)) {
      s.disarm({});
      in.answer = std::move(*early);
      in.bodyUnread = !parser.is_done();
      co_return in;
    }
    error_code ec;
    if (!parser.is_done()) ec = co_await readBody(s, stream, parser);
    s.disarm(ec);
    if (ec) {
      in.request.reset();
      in.answer = refusalFor(ec, s.timedOut, options);
      in.arrived = in.answer.has_value();
      co_return in;
    }
    in.request->body = std::move(parser.get().body());
    in.bodyUnread = false;
    co_return in;
  }

  // Waits for a request's first byte (at most `wait`, unless it is buffered already), reads
  // its header within readTimeout of it and checks it. With a request, the read deadline is
  // still armed (for the body); without, `answer` says why (none: close silently).
  template <class Stream>
  asio::awaitable<Incoming> readHead(Session& s, Stream& stream, Parser& parser,
                                     std::chrono::milliseconds wait) {
    Incoming in;
    if (s.buffer.size() == 0) {
      s.enter(Phase::idle);
      if (stopping) co_return in;
      s.arm(wait);
      auto [ec, n] = co_await stream.async_read_some(s.buffer.prepare(kReadChunkBytes), kNoThrow);
      s.disarm(ec);
      if (ec) co_return in;  // idle timeout, eviction, stop, or the client closed: silently
      // Evicted after its bytes arrived but before this resumed: its socket is closed, so no
      // answer could reach the client; nothing of the request is run (it never happened).
      if (!s.counted && !s.overflow) co_return in;
      s.buffer.commit(n);
    }
    s.enter(Phase::reading);
    in.time = std::chrono::system_clock::now();
    in.started = Clock::now();
    parser.header_limit(static_cast<std::uint32_t>(options.maxHeaderBytes));
    parser.body_limit(options.maxBodyBytes);
    s.arm(options.readTimeout);
    auto [ec, headerBytes] = co_await http::async_read_header(stream, s.buffer, parser, kNoThrow);
    if (!ec && headerBytes > options.maxHeaderBytes) ec = http::error::header_limit;
    if (ec) {
      s.disarm(ec);
      in.answer = refusalFor(ec, s.timedOut, options);
      in.arrived = in.answer.has_value();
      co_return in;
    }
    in.arrived = true;
    auto head = headOf(parser.get(), s.remote);
    if (!head) {
      in.answer = malformed(head.error());
      co_return in;
    }
    in.request = std::move(head).value();
    co_return in;
  }

  // The application's header phase; a throw is a 500, an answer out of range too.
  std::optional<ServerResponse> checkHeader(const ServerRequest& head) {
    if (!options.headerCheck) return std::nullopt;
    std::optional<ServerResponse> answer;
    try {
      answer = options.headerCheck(head);
    } catch (...) {
      return internalError();
    }
    if (answer && (answer->status < 200 || answer->status > 599)) return internalError();
    return answer;
  }

  // After the header: `Expect: 100-continue` is answered (clients then send the body), and
  // the body read (its size bounded by the parser's body limit).
  template <class Stream>
  asio::awaitable<error_code> readBody(Session& s, Stream& stream, Parser& parser) {
    const auto expect = parser.get()[http::field::expect];
    if (equalsIgnoreCase(expect, "100-continue")) {
      http::response<http::empty_body> proceed{http::status::continue_, 11};
      auto [ec, n] = co_await http::async_write(stream, proceed, kNoThrow);
      if (ec) co_return ec;
    }
    auto [ec, n] = co_await http::async_read(stream, s.buffer, parser, kNoThrow);
    co_return ec;
  }

  asio::awaitable<ServerResponse> dispatch(Session& s, const ServerRequest& request) {
    if (stopping) co_return unavailable("stopping", "the server is stopping");
    if (inFlight >= options.maxInFlight && !isProbe(request.target)) {
      co_return unavailable(
          "too-many-requests",
          "the server is handling " + std::to_string(options.maxInFlight) + " requests");
    }
    s.enter(Phase::handling);
    ++inFlight;
    struct Leave {
      std::size_t& inFlight;
      ~Leave() { --inFlight; }
    } leave{inFlight};
    co_return co_await invoke(s, request);
  }

  // The handler, in a coroutine of its own that the stop can cancel. An exception becomes a
  // 500 whose message says nothing of it (it may hold paths, keys, or worse).
  asio::awaitable<ServerResponse> invoke(Session& s, const ServerRequest& request) {
    bool failed = false;
    ServerResponse response;
    try {
      auto task = handler(request);
      auto token = asio::bind_cancellation_slot(s.handlerCancel.slot(), asio::use_awaitable);
      response = co_await asio::co_spawn(executor, std::move(task), std::move(token));
    } catch (...) {
      failed = true;
    }
    if (failed || response.status < 200 || response.status > 599) co_return internalError();
    co_return response;
  }

  // Writes the response and logs it; false if the write failed.
  template <class Stream>
  asio::awaitable<bool> respond(Session& s, Stream& stream, ServerResponse&& response,
                                const Incoming& in, const std::string& method, bool keepAlive) {
    const std::string route = response.route.empty() ? "unmatched" : response.route;
    RequestRecord record{in.time, method, route, response.status, {}, response.lake, s.remote};
    const bool ok = co_await write(s, stream, std::move(response), keepAlive, method == "HEAD");
    log(std::move(record), in.started);
    co_return ok;
  }

  template <class Stream>
  asio::awaitable<bool> write(Session& s, Stream& stream, ServerResponse&& response, bool keepAlive,
                              bool head) {
    s.enter(Phase::writing);
    auto message = toMessage(std::move(response), keepAlive, head);
    s.lowest().expires_after(options.writeTimeout);
    auto [ec, n] = co_await http::async_write(stream, message, kNoThrow);
    s.lowest().expires_never();
    co_return !ec;
  }

  void log(RequestRecord record, Clock::time_point started) {
    if (!options.log) return;
    record.milliseconds = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
    try {
      options.log(record);
    } catch (...) {
      // A log sink that fails must not take the connection with it.
    }
  }

  // ---- closing --------------------------------------------------------------------------

  // TCP: send FIN, then read and drop what the client still sends (bounded in time and
  // bytes) so that the close does not reset the connection under an unread response.
  asio::awaitable<void> closeGracefully(Session& s, beast::tcp_stream& stream) {
    s.enter(Phase::closing);
    error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream.expires_after(options.closeLinger);
    std::size_t dropped = 0;
    while (!ec && dropped < kMaxLingerBytes) {
      std::size_t n = 0;
      std::tie(ec, n) =
          co_await stream.async_read_some(s.buffer.prepare(kReadChunkBytes), kNoThrow);
      dropped += n;
      s.buffer.clear();
    }
    stream.close();
  }

  // TLS: close_notify, and the peer's in return (bounded in time).
  asio::awaitable<void> closeGracefully(Session& s, TlsStream& stream) {
    s.enter(Phase::closing);
    s.lowest().expires_after(options.closeLinger);
    auto [ignored] = co_await stream.async_shutdown(kNoThrow);
    (void)ignored;
    s.lowest().close();
  }

  // ---- stopping -------------------------------------------------------------------------

  void beginStop(std::function<void()> done) {
    if (done) whenStopped.push_back(std::move(done));
    if (stopping) {
      if (finished) finish();
      return;
    }
    stopping = true;
    error_code ignored;
    acceptor.close(ignored);
    for (Session* s : sessions) {
      if (s->phase == Phase::idle || s->phase == Phase::handshake) s->closeNow();
    }
    graceTimer.expires_after(options.stopGrace);
    graceTimer.async_wait([weak = weak_from_this()](error_code ec) {
      if (auto self = weak.lock(); self && !ec) self->forceClose();
    });
    if (sessions.empty()) finish();
  }

  void forceClose() {
    // closeNow() may end a session at once (its destructor leaves the set): copy first.
    const std::vector<Session*> open(sessions.begin(), sessions.end());
    for (Session* s : open) s->closeNow();
  }

  void finish() {
    finished = true;
    graceTimer.cancel();
    error_code ignored;
    if (signals) {
      signals->cancel(ignored);
      signals->clear(ignored);  // the default dispositions again
    }
    for (auto& done : std::exchange(whenStopped, {})) asio::post(executor, std::move(done));
  }

  void sessionEnded(Session* s) {
    sessions.erase(s);
    uncount(*s);
    if (stopping && !finished && !abandoned && sessions.empty()) finish();
  }

  void watchSignals(std::function<void()> done) {
    if (!signals) signals.emplace(executor, SIGINT, SIGTERM);
    signals->async_wait([weak = weak_from_this(), done = std::move(done)](error_code ec, int) {
      auto self = weak.lock();
      if (ec || !self) return;
      if (self->stopping) {
        self->forceClose();  // a second signal: no more grace
        return;
      }
      self->beginStop(done);
      if (!self->finished) self->watchSignals({});
    });
  }

  void abandon() {
    abandoned = true;
    stopping = true;
    error_code ignored;
    acceptor.close(ignored);
    graceTimer.cancel();
    if (signals) signals->cancel();
    forceClose();
  }
};

Session::Session(std::shared_ptr<Server> owner, tcp::socket socket, std::string peerAddress,
                 bool overflowed)
    : server(std::move(owner)),
      watchdog(server->executor),
      address(std::move(peerAddress)),
      overflow(overflowed) {
  error_code ec;
  socket.set_option(tcp::no_delay(true), ec);
  const auto peer = socket.remote_endpoint(ec);
  remote = ec ? std::string("unknown") : describe(peer);
  tcp.emplace(std::move(socket));
  buffer.reserve(kReadChunkBytes);
  server->sessions.insert(this);
  server->count(*this);
}

void Session::enter(Phase next) {
  phase = next;
  server->phaseChanged(*this);
}

Session::~Session() { server->sessionEnded(this); }

}  // namespace

struct HttpServer::Impl : Server {
  using Server::Server;
};

HttpServer::HttpServer(boost::asio::any_io_executor executor, ServerOptions options,
                       Handler handler)
    : impl_(std::make_shared<Impl>(std::move(executor), std::move(options), std::move(handler))) {}

HttpServer::~HttpServer() { impl_->abandon(); }

Result<void, std::string> HttpServer::start() { return impl_->start(); }

std::uint16_t HttpServer::port() const { return impl_->port; }

void HttpServer::stop(std::function<void()> done) {
  asio::post(impl_->executor, [impl = impl_, done = std::move(done)]() mutable {
    impl->beginStop(std::move(done));
  });
}

void HttpServer::stopOnSignals(std::function<void()> done) { impl_->watchSignals(std::move(done)); }

}  // namespace cairn::net
