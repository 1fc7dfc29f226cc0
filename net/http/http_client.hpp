// HttpClient: HTTP/1.1 over TCP or TLS (Boost.Beast, OpenSSL), for C++20 coroutines.
//
// One request, top to bottom: take a connection from the endpoint's pool (an idle keep-alive
// one, or a new one if fewer than maxConnectionsPerEndpoint are open, or wait for one up to
// poolWaitTimeout), write the request, read the response header, check the declared body
// size against the caller's maximum, read the body, hand the connection back.
//
// Outcomes. A response with any status is a success of this layer. Errors say how far the
// request got:
// - notSent: nothing reached the server (resolve, connect, TLS handshake, pool wait);
// - uncertain: the request was, or may have been, sent, but no complete final response was
//   read (timeout, reset, EOF, truncated or unparsable response, a header over
//   kMaxResponseHeaderBytes, 101 or too many interim responses) -- the server may have acted
//   on it. Interim 1xx responses are skipped; a connection is reused only after a complete
//   final response;
// - bodyTooLarge: the response declared, or grew, a body larger than the caller allows; it
//   was refused before being buffered (the status of that response is kept).
//
// Retries. Bounded attempts with jittered exponential backoff ("full jitter"). A notSent
// failure (except a TLS handshake failure, which will not heal) is retried for every request:
// nothing was sent. Uncertain failures and responses 429/500/502/503/504 are retried only for
// requests marked idempotent by the caller. The last outcome is returned.
//
// Deadlines. Each attempt's exchange (write the request, read the response) ends by its
// timeout: the request's, else requestTimeout. A small exchange (a request body and a response
// body limit both within 64 KiB: a head, a manifest, a catalog record) ends sooner: by 8 times
// the 99th percentile of the last 128 small exchanges of its kind (reads, writes) with its
// endpoint that were answered, within 1..5 s (5 s until 16 were seen), doubled for each retry,
// and never after the configured timeout (the constants in http_client.cpp; docs/decisions/
// docs/decisions/0059-small-store-request-bounded-latency.md). An attempt that times out doubles
// its kind's deadline for the next request too, until one is answered
// (docs/decisions/0062-timed-out-small-write-doubles.md): a caller's own resend is heard from a
// slower store. A lost answer then costs what the store's observed latency justifies, not
// requestTimeout: a read is sent again, and a write comes back uncertain, for its caller to settle
// by reading.
//
// Threading. Not thread-safe: call it only from coroutines running on the executor given at
// construction (a strand makes a multi-threaded io_context safe). The client may be destroyed
// while requests are in flight; its state lives until the last of them finishes. Request
// bodies are not copied: the caller keeps them alive until the awaitable completes.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.hpp"
#include "base/result.hpp"

namespace cairn::net {

// An error response (S3's XML) is small; a bigger one is refused.
inline constexpr std::size_t kMaxErrorResponseBody = 64 * 1024;

// scheme://host[:port] with an optional trailing '/'. IPv6 literals in brackets.
struct Endpoint {
  bool tls = false;
  std::string host;  // without brackets
  std::uint16_t port = 0;

  // The Host header: host, plus ":port" unless it is the scheme's default.
  std::string hostHeader() const;
  // "http://host:port" (for messages).
  std::string url() const;
};

// Parses "http://127.0.0.1:7480" or "https://s3.eu-west-1.amazonaws.com". No user info, path,
// query or fragment. The error is a message (the URL holds no secrets).
Result<Endpoint, std::string> parseEndpoint(std::string_view url);

struct HttpHeader {
  std::string name;
  std::string value;
};

struct HttpRequest {
  std::string method;               // "GET", "HEAD", "PUT", "DELETE", "POST"
  std::string target;               // origin form, already encoded: "/bucket/key?list-type=2"
  std::vector<HttpHeader> headers;  // Host and Content-Length are set by the client
  ByteView body;                    // not copied; must outlive the request
  std::size_t maxResponseBody = 0;  // bytes of response body accepted with a 2xx status
  std::size_t maxErrorBody = kMaxErrorResponseBody;  // ... with any other status
  bool idempotent = false;  // safe to send again after an uncertain failure
  // Memory for the response body (optional): cleared, and its capacity used, so a caller that
  // reads many large bodies can hand back an earlier one instead of touching fresh pages.
  Bytes responseStorage;
  // Overrides for this request (0: the client's options): attempts in all, and the deadline
  // of each attempt's exchange.
  unsigned maxAttempts = 0;
  std::chrono::milliseconds timeout{0};
  // When the whole request, every attempt and backoff included, must be over: no attempt
  // starts after it, and each attempt's pool wait, connect and exchange end by it. (The
  // process's deadline, setProcessDeadline, applies too.)
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

// A bound on every request of this process: the command line's --timeout, so a command ends
// by a time it documents, whatever the server does (accepts and never answers, trickles).
// Unset by default: an embedder's requests are bounded by their per-attempt timeouts.
void setProcessDeadline(std::optional<std::chrono::steady_clock::time_point> deadline);

struct HttpResponse {
  int status = 0;
  std::vector<HttpHeader> headers;
  Bytes body;

  // First header with this name (case-insensitive), or nullptr.
  const std::string* header(std::string_view name) const;
  std::size_t headerCount(std::string_view name) const;
};

enum class HttpErrorKind { notSent, uncertain, bodyTooLarge };

struct HttpError {
  HttpErrorKind kind = HttpErrorKind::notSent;
  int status = 0;  // bodyTooLarge: the status of the refused response
  unsigned attempts = 0;
  std::string message;  // never holds request headers (they may carry credentials)
};

using HttpResult = Result<HttpResponse, HttpError>;

// Named limits and defaults.
inline constexpr unsigned kDefaultMaxAttempts = 4;
inline constexpr unsigned kMaxAttemptsLimit = 10;
inline constexpr std::chrono::milliseconds kDefaultBackoffBase{50};
inline constexpr std::chrono::milliseconds kDefaultBackoffCap{2000};
inline constexpr std::size_t kMaxResponseHeaderBytes = 64 * 1024;
// Interim (1xx) responses skipped before the final one of a request.
inline constexpr unsigned kMaxInterimResponses = 8;
inline constexpr std::size_t kMaxWaitersPerEndpoint = 4096;
inline constexpr std::size_t kMaxConnectionsPerEndpointLimit = 1024;

struct HttpClientOptions {
  std::chrono::milliseconds connectTimeout{5000};    // resolve + connect + TLS handshake
  std::chrono::milliseconds requestTimeout{60000};   // write request + read response, per attempt
  std::chrono::milliseconds idleTimeout{20000};      // an idle pooled connection older is closed
  std::chrono::milliseconds poolWaitTimeout{60000};  // waiting for a free connection
  std::size_t maxConnectionsPerEndpoint = 8;
  unsigned maxAttempts = kDefaultMaxAttempts;  // 1 = no retry
  std::chrono::milliseconds backoffBase = kDefaultBackoffBase;
  std::chrono::milliseconds backoffCap = kDefaultBackoffCap;
  // TLS: certificates and the host name are always verified. With a CA file, only its
  // certificates are trusted; without one, the system's default store is used.
  std::string caFile;
  // Whether the client will open TLS connections: if so, the trust store is read when the
  // client is made (an unreadable CA file throws there); if not, when a first TLS connection
  // opens (a problem then fails that request, not sent).
  bool tlsExpected = true;
};

// Counters for tests and metrics.
struct HttpClientStats {
  std::uint64_t connectionsOpened = 0;
  std::uint64_t requestsSent = 0;  // attempts that started writing
  std::uint64_t retries = 0;
  std::uint64_t timeouts = 0;       // attempts that ran out of time (connect, handshake, exchange)
  std::size_t openConnections = 0;  // all endpoints, now
  std::size_t peakOpenConnections = 0;
};

class HttpClient {
 public:
  // Throws std::runtime_error if the TLS context cannot be set up (e.g. unreadable CA file;
  // with options.tlsExpected).
  HttpClient(boost::asio::any_io_executor executor, HttpClientOptions options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  boost::asio::awaitable<HttpResult> request(Endpoint endpoint, HttpRequest request);

  HttpClientStats stats() const;
  const boost::asio::any_io_executor& executor() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace cairn::net
