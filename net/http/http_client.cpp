// The only translation unit that includes Beast (slow to compile); the header stays light.
#include "net/http/http_client.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>

#include <algorithm>
#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cassert>
#include <cctype>
#include <charconv>
#include <deque>
#include <map>
#include <random>
#include <stdexcept>
#include <utility>

namespace cairn::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;

// A response body read into a std::vector<std::uint8_t> without zero-filling it first. Beast's
// vector_body resizes before each copy, which writes every byte twice (measured: memset was
// 40 % of a download's samples). Room for a declared Content-Length is reserved once (the
// parser has already checked it against the body limit); each piece is appended.
struct AppendBody {
  using value_type = std::vector<std::uint8_t>;
  static std::uint64_t size(const value_type& body) { return body.size(); }

  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(http::header<isRequest, Fields>&, value_type& body) : body_(body) {}
    void init(const boost::optional<std::uint64_t>& length, beast::error_code& ec) {
      if (length) {
        if (*length > body_.max_size()) {
          ec = http::error::buffer_overflow;
          return;
        }
        body_.reserve(static_cast<std::size_t>(*length));
      }
      ec = {};
    }
    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, beast::error_code& ec) {
      std::size_t n = 0;
      for (auto b : beast::buffers_range_ref(buffers)) {
        const auto* p = static_cast<const std::uint8_t*>(b.data());
        body_.insert(body_.end(), p, p + b.size());
        n += b.size();
      }
      ec = {};
      return n;
    }
    void finish(beast::error_code& ec) { ec = {}; }

   private:
    value_type& body_;
  };
};

constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);
// Beast reads at most max(512, free capacity) bytes per call, and at most 64 KiB: without
// this reserve a 16 MiB body took 32,768 reads (measured: 16.7 s of CPU per GiB, 30x more).
constexpr std::size_t kReadBufferBytes = 64 * 1024;

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool isIpLiteral(const std::string& host) {
  error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

// The path of a target, without the query (a presigned query is a bearer credential).
std::string_view targetPath(std::string_view target) { return target.substr(0, target.find('?')); }

std::string describe(const error_code& ec) {
  if (ec == beast::error::timeout) return "timed out";
  return ec.message();
}

HttpError makeError(HttpErrorKind kind, std::string message, int status = 0) {
  HttpError e;
  e.kind = kind;
  e.status = status;
  e.message = std::move(message);
  return e;
}

// A pooled connection: plain TCP or TLS over TCP, with its read buffer.
struct Connection {
  std::optional<beast::tcp_stream> tcp;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls;
  beast::flat_buffer buffer;
  Clock::time_point idleSince{};

  beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *tcp; }

  void close() {
    error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    lowest().socket().close(ignored);
  }

  // An idle HTTP connection has nothing to say: readable data or a hang-up means the server
  // closed it (or misbehaves), so it must not carry a request that cannot be repeated. TLS
  // may legitimately have records pending (session tickets), so only a hang-up counts there.
  bool looksAlive() {
    pollfd p{};
    p.fd = lowest().socket().native_handle();
    p.events = static_cast<short>(POLLRDHUP | (tls ? 0 : POLLIN));
    if (::poll(&p, 1, 0) < 0) return false;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL | (tls ? 0 : POLLIN))) == 0;
  }
};

// A request waiting for a connection of its endpoint: the releaser hands over either an idle
// connection or the right to open one (a slot), then cancels the timer to wake it.
struct Waiter {
  explicit Waiter(const asio::any_io_executor& executor) : timer(executor) {}
  asio::steady_timer timer;
  std::unique_ptr<Connection> connection;
  bool slot = false;
};

// The adaptive deadline of small exchanges (net/http/http_client.hpp, "Deadlines";
// docs/decisions/0059-small-store-request-bounded-latency.md). Loopback RGW answers a 256-byte GET
// in 3 ms at the median and 8-9 ms at p99, a conditional PUT in 4.5 and 17 ms (docs/stores.md,
// "Store URLs"): the floor is 50 times that.
constexpr std::size_t kSmallExchangeBytes = 64 * 1024;
constexpr std::size_t kLatencyWindow = 128;     // the last answered exchanges kept
constexpr std::size_t kLatencyMinSamples = 16;  // before them, the ceiling
constexpr unsigned kLatencyTimeoutFactor = 8;   // times the window's 99th percentile
constexpr std::chrono::milliseconds kLatencyTimeoutFloor{1000};
constexpr std::chrono::milliseconds kLatencyTimeoutCeiling{5000};
// The most a window's deadline grows by doubling after timed-out attempts
// (docs/decisions/0062-timed-out-small-write-doubles.md): the justified deadline's own ceiling.
// Higher, a loaded store's withheld answers compounded (5 s, then 10 s per attempt) and a
// catalog commit under lost answers took more than 10 s.
constexpr std::chrono::milliseconds kLatencyBackoffCeiling{kLatencyTimeoutCeiling};

// The durations of the last kLatencyWindow small exchanges with one endpoint that got a
// complete response, and the per-attempt timeout they justify: kLatencyTimeoutFactor times
// their 99th percentile, within kLatencyTimeoutFloor..kLatencyTimeoutCeiling (the ceiling
// until kLatencyMinSamples were seen). An attempt that timed out is not a sample: what it
// would have taken is unknown. But it is a bound: until the window hears an answer again, its
// deadline is at least twice the one that ran out (up to kLatencyBackoffCeiling), so the next
// send -- a retry, or a caller's own resend -- waits longer
// (docs/decisions/0062-timed-out-small-write-doubles.md; Karn's rule for TCP's RTO).
class LatencyWindow {
 public:
  void add(Clock::duration took) {
    samples_[seen_ % kLatencyWindow] = took;
    ++seen_;
    timeout_ = justified();
    backedOff_ = std::chrono::milliseconds{0};
  }
  void timedOut(std::chrono::milliseconds after) {
    backedOff_ = std::max(backedOff_, std::min(after * 2, kLatencyBackoffCeiling));
  }
  // What the answers justify, and the deadline now (raised by timed-out attempts).
  std::chrono::milliseconds justifiedTimeout() const { return timeout_; }
  std::chrono::milliseconds timeout() const { return std::max(timeout_, backedOff_); }

 private:
  std::chrono::milliseconds justified() const {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(seen_, kLatencyWindow));
    if (n < kLatencyMinSamples) return kLatencyTimeoutCeiling;
    std::array<Clock::duration, kLatencyWindow> sorted = samples_;
    const std::size_t rank = (99 * n + 99) / 100 - 1;  // the 99th percentile's index
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(rank),
                     sorted.begin() + static_cast<std::ptrdiff_t>(n));
    const auto high = std::chrono::ceil<std::chrono::milliseconds>(sorted[rank]);
    return std::clamp(high * kLatencyTimeoutFactor, kLatencyTimeoutFloor, kLatencyTimeoutCeiling);
  }

  std::array<Clock::duration, kLatencyWindow> samples_{};
  std::uint64_t seen_ = 0;
  std::chrono::milliseconds timeout_ = kLatencyTimeoutCeiling;
  std::chrono::milliseconds backedOff_{0};
};

// Whether an exchange is small enough for the adaptive deadline: its time is the store's
// latency, not a transfer's.
bool isSmallExchange(const HttpRequest& request) {
  return request.body.size() <= kSmallExchangeBytes &&
         request.maxResponseBody <= kSmallExchangeBytes;
}

// Whether a request only reads: reads and writes are timed in windows of their own
// (docs/decisions/0062-timed-out-small-write-doubles.md), so a store's write latency is learned
// from writes, however many reads there are.
bool isRead(const HttpRequest& request) {
  return request.method == "GET" || request.method == "HEAD";
}

struct Pool {
  LatencyWindow reads;   // small reads with this endpoint
  LatencyWindow writes;  // every other small exchange
  LatencyWindow& window(const HttpRequest& request) { return isRead(request) ? reads : writes; }
  std::vector<std::unique_ptr<Connection>> idle;  // most recently used last
  std::size_t open = 0;                           // idle + in use + connecting
  std::deque<Waiter*> waiters;                    // FIFO, at most kMaxWaitersPerEndpoint
};

// What one attempt produced, and whether a failure is worth another attempt.
struct Attempt {
  HttpResult result;
  bool transient = false;  // for errors: the cause may go away (not a certificate problem)
};

// The process's deadline (setProcessDeadline); set once, before any request, by the command
// line's main thread.
std::optional<Clock::time_point> processDeadline;

}  // namespace

void setProcessDeadline(std::optional<std::chrono::steady_clock::time_point> deadline) {
  processDeadline = deadline;
}

std::string Endpoint::hostHeader() const {
  const bool v6 = host.find(':') != std::string::npos;
  std::string out = v6 ? "[" + host + "]" : host;
  if (port != (tls ? 443 : 80)) out += ":" + std::to_string(port);
  return out;
}

std::string Endpoint::url() const {
  const bool v6 = host.find(':') != std::string::npos;
  return std::string(tls ? "https://" : "http://") + (v6 ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

Result<Endpoint, std::string> parseEndpoint(std::string_view url) {
  Endpoint e;
  if (url.starts_with("http://")) {
    url.remove_prefix(7);
    e.port = 80;
  } else if (url.starts_with("https://")) {
    url.remove_prefix(8);
    e.tls = true;
    e.port = 443;
  } else {
    return fail(std::string("endpoint must start with http:// or https://"));
  }
  if (url.ends_with('/')) url.remove_suffix(1);
  if (url.empty()) return fail(std::string("endpoint has no host"));
  if (url.find_first_of("/?#@ \t") != std::string_view::npos) {
    return fail(std::string("endpoint must be scheme://host[:port] without path or user info"));
  }
  std::string_view portText;
  if (url.front() == '[') {
    const auto close = url.find(']');
    if (close == std::string_view::npos) return fail(std::string("endpoint: unclosed '['"));
    e.host = std::string(url.substr(1, close - 1));
    const auto rest = url.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return fail(std::string("endpoint: junk after ']'"));
      portText = rest.substr(1);
    }
  } else {
    const auto colon = url.find(':');
    e.host = std::string(url.substr(0, colon));
    if (colon != std::string_view::npos) portText = url.substr(colon + 1);
  }
  if (e.host.empty()) return fail(std::string("endpoint has no host"));
  // The host goes into the Host header and the TLS name: letters, digits, '.', '-' and '_'
  // (a name or an IPv4 address), or hex digits, ':' and '.' inside brackets (IPv6).
  const bool bracketed = url.front() == '[';
  for (char c : e.host) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    const bool ok =
        bracketed ? (alnum && std::isxdigit(static_cast<unsigned char>(c))) || c == ':' || c == '.'
                  : alnum || c == '.' || c == '-' || c == '_';
    if (!ok) return fail(std::string("endpoint: the host holds a character a host cannot"));
  }
  if (!portText.empty() || url.back() == ':') {
    unsigned value = 0;
    const auto [end, ec] =
        std::from_chars(portText.data(), portText.data() + portText.size(), value);
    if (ec != std::errc{} || end != portText.data() + portText.size() || value == 0 ||
        value > 65535) {
      return fail(std::string("endpoint: invalid port"));
    }
    e.port = static_cast<std::uint16_t>(value);
  }
  return e;
}

const std::string* HttpResponse::header(std::string_view name) const {
  for (const auto& h : headers) {
    if (equalsIgnoreCase(h.name, name)) return &h.value;
  }
  return nullptr;
}

std::size_t HttpResponse::headerCount(std::string_view name) const {
  return static_cast<std::size_t>(
      std::count_if(headers.begin(), headers.end(),
                    [&](const HttpHeader& h) { return equalsIgnoreCase(h.name, name); }));
}

struct HttpClient::Impl : std::enable_shared_from_this<Impl> {
  Impl(asio::any_io_executor e, HttpClientOptions o)
      : executor(std::move(e)), options(std::move(o)), random(std::random_device{}()) {
    options.maxConnectionsPerEndpoint = std::clamp<std::size_t>(options.maxConnectionsPerEndpoint,
                                                                1, kMaxConnectionsPerEndpointLimit);
    options.maxAttempts = std::clamp(options.maxAttempts, 1u, kMaxAttemptsLimit);
    SSL_CTX_set_min_proto_version(ssl.native_handle(), TLS1_2_VERSION);
    ssl.set_verify_mode(asio::ssl::verify_peer);
    if (options.tlsExpected) {
      if (auto problem = loadTrustStore()) throw std::runtime_error(*problem);
    }
  }

  // Reads the CA file or the system's store into the TLS context, once (about 30 ms for the
  // system's store here, so a client of plain-HTTP endpoints does not). A problem is named.
  std::optional<std::string> loadTrustStore() {
    if (trustStoreLoaded) return std::nullopt;
    error_code ec;
    if (options.caFile.empty()) {
      ssl.set_default_verify_paths(ec);
    } else {
      ssl.load_verify_file(options.caFile, ec);
    }
    if (ec) return "TLS trust store: " + ec.message();
    trustStoreLoaded = true;
    return std::nullopt;
  }

  asio::any_io_executor executor;
  HttpClientOptions options;
  asio::ssl::context ssl{asio::ssl::context::tls_client};
  bool trustStoreLoaded = false;
  std::map<std::string, Pool> pools;  // by "scheme://host:port"; references stay valid
  HttpClientStats stats;
  std::minstd_rand random;

  static std::string poolKey(const Endpoint& e) { return e.url(); }

  // describe(), counting the attempts that ran out of time (HttpClientStats::timeouts).
  std::string describeCounted(const error_code& ec) {
    if (ec == beast::error::timeout) ++stats.timeouts;
    return describe(ec);
  }

  // ---- retries ----------------------------------------------------------------------------

  asio::awaitable<HttpResult> run(Endpoint endpoint, HttpRequest request) {
    // The first attempt that reads a body takes the storage; a retry allocates anew.
    Bytes storage = std::move(request.responseStorage);
    const Clock::time_point deadline = deadlineOf(request);
    for (unsigned attempt = 1;; ++attempt) {
      if (Clock::now() >= deadline) {
        co_return fail(makeError(HttpErrorKind::notSent,
                                 request.method + " " + std::string(targetPath(request.target)) +
                                     ": the time bound passed before it "
                                     "was sent"));
      }
      Attempt a = co_await once(endpoint, request, storage, deadline, attempt);
      const unsigned attempts = request.maxAttempts != 0
                                    ? std::min(request.maxAttempts, options.maxAttempts)
                                    : options.maxAttempts;
      const auto pause = backoff(attempt);
      if (attempt >= attempts || !worthRetrying(a, request.idempotent) ||
          Clock::now() + pause >= deadline) {
        if (a.result.ok()) co_return std::move(a.result);
        HttpError error = std::move(a.result).error();
        error.attempts = attempt;
        co_return fail(std::move(error));
      }
      ++stats.retries;
      asio::steady_timer timer(executor, pause);
      co_await timer.async_wait(kNoThrow);
    }
  }

  // The earliest of the request's deadline and the process's; far away without either.
  static Clock::time_point deadlineOf(const HttpRequest& request) {
    Clock::time_point out = Clock::time_point::max();
    if (request.deadline) out = std::min(out, *request.deadline);
    if (processDeadline) out = std::min(out, *processDeadline);
    return out;
  }

  // A timeout that ends by `deadline` at the latest.
  static std::chrono::milliseconds within(std::chrono::milliseconds timeout,
                                          Clock::time_point deadline) {
    if (deadline == Clock::time_point::max()) return timeout;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return std::clamp(left, std::chrono::milliseconds(1), timeout);
  }

  static bool worthRetrying(const Attempt& a, bool idempotent) {
    if (a.result.ok()) {
      const int s = a.result.value().status;
      return idempotent && (s == 429 || s == 500 || s == 502 || s == 503 || s == 504);
    }
    switch (a.result.error().kind) {
      case HttpErrorKind::notSent:
        return a.transient;
      case HttpErrorKind::uncertain:
        return idempotent;
      case HttpErrorKind::bodyTooLarge:
        return false;
    }
    return false;
  }

  // "Equal jitter": half the exponential step fixed, half random, capped.
  std::chrono::milliseconds backoff(unsigned attempt) {
    const auto shift = std::min(attempt - 1, 20u);
    const auto step =
        std::min<std::int64_t>(options.backoffCap.count(), options.backoffBase.count() << shift);
    const std::int64_t half = std::max<std::int64_t>(step / 2, 1);
    std::uniform_int_distribution<std::int64_t> jitter(0, half);
    return std::chrono::milliseconds(half + jitter(random));
  }

  // ---- one attempt ------------------------------------------------------------------------

  asio::awaitable<Attempt> once(const Endpoint& endpoint, const HttpRequest& request,
                                Bytes& storage, Clock::time_point deadline, unsigned attempt) {
    const std::string key = poolKey(endpoint);
    Attempt acquired{fail(HttpError{}), false};
    std::unique_ptr<Connection> connection = co_await acquire(endpoint, key, acquired, deadline);
    if (!connection) co_return acquired;
    Lease lease{shared_from_this(), key, std::move(connection)};
    Pool& pool = pools[key];  // a std::map: the reference stays valid across suspensions
    const bool small = isSmallExchange(request);
    LatencyWindow& latency = pool.window(request);
    const auto allowed = attemptTimeout(request, small, latency, attempt);
    const auto timeout = within(allowed, deadline);
    const Clock::time_point sent = Clock::now();
    Attempt a{fail(HttpError{}), false};
    // (No co_await inside ?: -- GCC 12 destroys such temporaries twice.)
    Connection& c = *lease.connection;
    if (c.tls) {
      a = co_await exchange(*c.tls, c, endpoint, request, storage, lease.reusable, timeout);
    } else {
      a = co_await exchange(*c.tcp, c, endpoint, request, storage, lease.reusable, timeout);
    }
    if (small) learn(latency, a, Clock::now() - sent, timeout, allowed);
    co_return a;
  }

  // A small exchange's answer is a sample of its window. A send that ran out its window's own
  // deadline (not one cut short by the request's deadline) raises the window's deadline.
  static void learn(LatencyWindow& latency, const Attempt& a, Clock::duration took,
                    std::chrono::milliseconds timeout, std::chrono::milliseconds allowed) {
    if (a.result.ok()) {
      latency.add(took);
    } else if (a.result.error().kind == HttpErrorKind::uncertain && timeout == allowed &&
               took >= timeout) {
      latency.timedOut(timeout);
    }
  }

  // The request's own timeout, else the client's.
  std::chrono::milliseconds configuredTimeout(const HttpRequest& request) const {
    return request.timeout.count() > 0 ? std::min(request.timeout, options.requestTimeout)
                                       : options.requestTimeout;
  }

  // An attempt's exchange timeout: the configured one; for a small exchange the window's
  // adaptive deadline within it, doubled for each attempt after the first (a store slower than
  // the window said is still heard from, within the configured timeout), and at least what
  // earlier timed-out attempts raised the window to.
  std::chrono::milliseconds attemptTimeout(const HttpRequest& request, bool small,
                                           const LatencyWindow& latency, unsigned attempt) const {
    const std::chrono::milliseconds configured = configuredTimeout(request);
    if (!small) return configured;
    const unsigned doublings = std::min(attempt - 1, kMaxAttemptsLimit);
    const auto doubled = latency.justifiedTimeout() * (std::int64_t{1} << doublings);
    return std::min(configured, std::max(latency.timeout(), doubled));
  }

  // Hands the connection back when the attempt ends, however it ends.
  struct Lease {
    std::shared_ptr<Impl> impl;
    std::string key;
    std::unique_ptr<Connection> connection;
    bool reusable = false;
    ~Lease() {
      if (connection) impl->release(key, std::move(connection), reusable);
    }
  };

  using Parser = http::response_parser<AppendBody>;

  static http::request<http::span_body<const std::uint8_t>> message(const Endpoint& endpoint,
                                                                    const HttpRequest& request) {
    http::request<http::span_body<const std::uint8_t>> m;
    m.method_string(request.method);
    m.target(request.target);
    m.version(11);
    m.set(http::field::host, endpoint.hostHeader());
    for (const auto& h : request.headers) m.insert(h.name, h.value);
    m.body() = {request.body.data(), request.body.size()};
    m.keep_alive(true);
    m.prepare_payload();
    return m;
  }

  // Write the request, read the response; all under one timeout (attemptTimeout's, within the
  // request's deadline).
  template <class Stream>
  asio::awaitable<Attempt> exchange(Stream& stream, Connection& c, const Endpoint& endpoint,
                                    const HttpRequest& request, Bytes& storage, bool& reusable,
                                    std::chrono::milliseconds timeout) {
    const std::string what = request.method + " " + std::string(targetPath(request.target));
    auto outgoing = message(endpoint, request);
    c.lowest().expires_after(timeout);
    ++stats.requestsSent;
    auto [writeError, written] = co_await http::async_write(stream, outgoing, kNoThrow);
    (void)written;

    // Even when the write failed the server may have answered early (e.g. refused the
    // request before reading its body): a complete response still counts. Interim (1xx)
    // responses come before the final one and are skipped (RFC 9110 §15.2); 101 would switch
    // protocols, which no S3 request asks for: no answer.
    std::optional<Parser> reading;
    for (unsigned interim = 0;; ++interim) {
      reading.emplace();
      Parser& parser = *reading;
      storage.clear();
      parser.get().body() = std::exchange(storage, Bytes{});
      parser.header_limit(static_cast<std::uint32_t>(kMaxResponseHeaderBytes));
      // The status decides the body limit but is known only after the header: accept the
      // larger limit while parsing it, then check the declared length against the right one
      // before any body byte is parsed (the body is allocated only then).
      parser.body_limit(std::max(request.maxResponseBody, request.maxErrorBody));
      if (request.method == "HEAD") parser.skip(true);
      auto [headerError, headerBytes] =
          co_await http::async_read_header(stream, c.buffer, parser, kNoThrow);
      if (headerError == http::error::body_limit) co_return tooLarge(parser, what);
      if (headerError) {
        const auto& cause = writeError ? writeError : headerError;
        co_return uncertain(what + ": no complete response (" +
                            (writeError ? "sending: " : "reading: ") + describeCounted(cause) +
                            ")");
      }
      // Beast bounds the bytes it holds unparsed, not the header's total: bound that here.
      if (headerBytes > kMaxResponseHeaderBytes) {
        co_return uncertain(what + ": the response header is over " +
                            std::to_string(kMaxResponseHeaderBytes) + " bytes");
      }
      const unsigned status = parser.get().result_int();
      if (status / 100 != 1) break;
      if (status == 101) co_return uncertain(what + ": HTTP 101, a switch of protocols");
      if (interim + 1 >= kMaxInterimResponses) {
        co_return uncertain(what + ": more than " + std::to_string(kMaxInterimResponses) +
                            " interim responses");
      }
      storage = std::move(parser.get().body());
    }
    Parser& parser = *reading;
    const bool success = parser.get().result_int() / 100 == 2;
    const std::size_t limit = success ? request.maxResponseBody : request.maxErrorBody;
    if (!parser.is_done() && parser.content_length().value_or(0) > limit) {
      co_return tooLarge(parser, what);
    }
    parser.body_limit(limit);
    if (!parser.is_done()) {
      auto [bodyError, bodyBytes] = co_await http::async_read(stream, c.buffer, parser, kNoThrow);
      (void)bodyBytes;
      if (bodyError == http::error::body_limit) co_return tooLarge(parser, what);
      if (bodyError) {
        co_return uncertain(what + ": response body incomplete (" + describeCounted(bodyError) +
                            ")");
      }
    }
    c.lowest().expires_never();

    auto incoming = parser.release();
    reusable = !writeError && incoming.keep_alive() && !incoming.need_eof() && c.buffer.size() == 0;
    HttpResponse response;
    response.status = static_cast<int>(incoming.result_int());
    for (const auto& field : incoming) {
      response.headers.push_back({std::string(field.name_string()), std::string(field.value())});
    }
    response.body = std::move(incoming.body());
    co_return Attempt{std::move(response), false};
  }

  static Attempt uncertain(std::string message) {
    return Attempt{fail(makeError(HttpErrorKind::uncertain, std::move(message))), true};
  }

  static Attempt tooLarge(const Parser& parser, const std::string& what) {
    const int status = static_cast<int>(parser.get().result_int());
    return Attempt{fail(makeError(HttpErrorKind::bodyTooLarge,
                                  what + ": HTTP " + std::to_string(status) +
                                      " response body larger than allowed; refused",
                                  status)),
                   false};
  }

  // ---- the pool ---------------------------------------------------------------------------

  // An idle connection, a new one, or one handed over by a releaser. On failure returns null
  // and fills `failed`.
  asio::awaitable<std::unique_ptr<Connection>> acquire(const Endpoint& endpoint,
                                                       const std::string& key, Attempt& failed,
                                                       Clock::time_point deadline) {
    Pool& pool = pools[key];
    if (auto idle = takeIdle(pool)) co_return idle;
    if (pool.open < options.maxConnectionsPerEndpoint) {
      openSlot(pool);
      co_return co_await connect(endpoint, key, failed, deadline);
    }
    if (pool.waiters.size() >= kMaxWaitersPerEndpoint) {
      failed = Attempt{fail(makeError(HttpErrorKind::notSent,
                                      "too many requests waiting for " + endpoint.url())),
                       true};
      co_return nullptr;
    }
    Waiter waiter(executor);
    waiter.timer.expires_after(within(options.poolWaitTimeout, deadline));
    pool.waiters.push_back(&waiter);
    WaiterGuard guard{this, key, &waiter};
    co_await waiter.timer.async_wait(kNoThrow);
    guard.settle();
    if (waiter.connection) co_return std::move(waiter.connection);
    if (waiter.slot) {
      waiter.slot = false;
      co_return co_await connect(endpoint, key, failed, deadline);
    }
    failed = Attempt{fail(makeError(HttpErrorKind::notSent,
                                    "no free connection to " + endpoint.url() + " within " +
                                        std::to_string(options.poolWaitTimeout.count()) + " ms")),
                     true};
    co_return nullptr;
  }

  // Leaves the queue if still in it; if the coroutine dies holding a grant, returns it.
  struct WaiterGuard {
    Impl* impl;
    std::string key;
    Waiter* waiter;
    bool settled = false;
    void settle() {
      auto& q = impl->pools[key].waiters;
      q.erase(std::remove(q.begin(), q.end(), waiter), q.end());
      settled = true;
    }
    ~WaiterGuard() {
      if (!settled) settle();
      if (waiter->connection) impl->release(key, std::move(waiter->connection), true);
      if (waiter->slot) impl->releaseSlot(impl->pools[key]);
    }
  };

  std::unique_ptr<Connection> takeIdle(Pool& pool) {
    const auto now = Clock::now();
    while (!pool.idle.empty()) {
      auto c = std::move(pool.idle.back());
      pool.idle.pop_back();
      if (now - c->idleSince < options.idleTimeout && c->looksAlive()) return c;
      c->close();
      closeSlot(pool);
    }
    return nullptr;
  }

  void openSlot(Pool& pool) {
    ++pool.open;
    ++stats.openConnections;
    stats.peakOpenConnections = std::max(stats.peakOpenConnections, stats.openConnections);
  }

  void closeSlot(Pool& pool) {
    assert(pool.open > 0 && stats.openConnections > 0);
    --pool.open;
    --stats.openConnections;
  }

  // A slot freed: the first waiter may open a connection in it.
  void releaseSlot(Pool& pool) {
    if (!pool.waiters.empty()) {
      Waiter* w = pool.waiters.front();
      pool.waiters.pop_front();
      w->slot = true;
      w->timer.cancel();
      return;
    }
    closeSlot(pool);
  }

  void release(const std::string& key, std::unique_ptr<Connection> c, bool reusable) {
    Pool& pool = pools[key];
    if (!reusable) {
      c->close();
      releaseSlot(pool);
      return;
    }
    c->idleSince = Clock::now();
    if (!pool.waiters.empty()) {
      Waiter* w = pool.waiters.front();
      pool.waiters.pop_front();
      w->connection = std::move(c);
      w->timer.cancel();
      return;
    }
    pool.idle.push_back(std::move(c));
  }

  // ---- connecting -------------------------------------------------------------------------

  // Runs in a slot already counted as open; gives the slot back on failure.
  asio::awaitable<std::unique_ptr<Connection>> connect(const Endpoint& endpoint,
                                                       const std::string& key, Attempt& failed,
                                                       Clock::time_point until) {
    struct SlotGuard {
      Impl* impl;
      const std::string& key;
      bool armed = true;
      ~SlotGuard() {
        if (armed) impl->releaseSlot(impl->pools[key]);
      }
    } guard{this, key};

    auto notSent = [&](std::string message, bool transient) {
      failed = Attempt{fail(makeError(HttpErrorKind::notSent, std::move(message))), transient};
      return std::unique_ptr<Connection>();
    };
    const auto deadline = Clock::now() + within(options.connectTimeout, until);
    auto resolver = std::make_shared<tcp::resolver>(executor);
    asio::steady_timer resolveTimer(executor, deadline);
    resolveTimer.async_wait([resolver](error_code ec) {
      if (!ec) resolver->cancel();
    });
    const auto flags =
        isIpLiteral(endpoint.host) ? tcp::resolver::numeric_host : tcp::resolver::flags{};
    auto [resolveError, addresses] = co_await resolver->async_resolve(
        endpoint.host, std::to_string(endpoint.port), flags, kNoThrow);
    resolveTimer.cancel();
    if (resolveError) {
      co_return notSent("resolving " + endpoint.host + ": " + describe(resolveError), true);
    }

    auto c = std::make_unique<Connection>();
    c->buffer.reserve(kReadBufferBytes);
    if (endpoint.tls) {
      if (auto problem = loadTrustStore()) co_return notSent(*problem, false);
      c->tls.emplace(executor, ssl);
    } else {
      c->tcp.emplace(executor);
    }
    beast::tcp_stream& stream = c->lowest();
    stream.expires_at(deadline);
    auto [connectError, connected] = co_await stream.async_connect(addresses, kNoThrow);
    (void)connected;
    if (connectError) {
      co_return notSent("connecting to " + endpoint.url() + ": " + describeCounted(connectError),
                        true);
    }
    error_code ignored;
    stream.socket().set_option(tcp::no_delay(true), ignored);

    if (endpoint.tls) {
      if (auto message = prepareTls(*c->tls, endpoint.host)) co_return notSent(*message, false);
      auto [handshakeError] =
          co_await c->tls->async_handshake(asio::ssl::stream_base::client, kNoThrow);
      if (handshakeError) {
        const bool timedOut = handshakeError == beast::error::timeout;
        if (timedOut) ++stats.timeouts;
        co_return notSent("TLS handshake with " + endpoint.url() +
                              " failed: " + tlsFailure(*c->tls, handshakeError),
                          timedOut);
      }
    }
    stream.expires_never();
    ++stats.connectionsOpened;
    guard.armed = false;
    co_return c;
  }

  // SNI (DNS names only, as RFC 6066 says) and the name the certificate must carry.
  static std::optional<std::string> prepareTls(beast::ssl_stream<beast::tcp_stream>& tls,
                                               const std::string& host) {
    SSL* ssl = tls.native_handle();
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    int ok = 0;
    if (isIpLiteral(host)) {
      ok = X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
    } else {
      ok = SSL_set_tlsext_host_name(ssl, host.c_str()) == 1 &&
           X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size()) == 1;
    }
    if (ok != 1) return "TLS: cannot set the expected host name " + host;
    tls.set_verify_mode(asio::ssl::verify_peer);
    return std::nullopt;
  }

  static std::string tlsFailure(beast::ssl_stream<beast::tcp_stream>& tls, const error_code& ec) {
    const long verify = SSL_get_verify_result(tls.native_handle());
    std::string out = describe(ec);
    if (verify != X509_V_OK) out += " (" + std::string(X509_verify_cert_error_string(verify)) + ")";
    ERR_clear_error();
    return out;
  }
};

HttpClient::HttpClient(boost::asio::any_io_executor executor, HttpClientOptions options)
    : impl_(std::make_shared<Impl>(std::move(executor), std::move(options))) {}

HttpClient::~HttpClient() = default;

boost::asio::awaitable<HttpResult> HttpClient::request(Endpoint endpoint, HttpRequest request) {
  auto impl = impl_;
  co_return co_await impl->run(std::move(endpoint), std::move(request));
}

HttpClientStats HttpClient::stats() const { return impl_->stats; }

const boost::asio::any_io_executor& HttpClient::executor() const { return impl_->executor; }

}  // namespace cairn::net
