// S3Client: the S3 operations cairn needs, with typed outcomes (never exceptions for what a
// store can answer): GET, HEAD, PUT (plain, If-None-Match: *, If-Match), DELETE and
// ListObjectsV2, signed with SigV4, over HttpClient's keep-alive pool.
//
// Outcomes (docs/design.md §1.4, §3.2, §6.3):
// - ok
// - missing: only a 404 whose S3 code is NoSuchKey (a HEAD 404 has no body; the bucket is
//   then checked with HEAD bucket, so a missing bucket is never taken for a missing key);
// - preconditionFailed: 412 to a conditional PUT;
// - conflict: 409, or the dialect's lost-race answer to a conditional PUT (RGW: 500
//   UnknownError) -- re-read required;
// - uncertain: a PUT or DELETE that may have been applied but whose response was not read
//   completely (timeout, reset, truncation), or a 5xx other than a known lost race to a
//   conditional PUT. Conditional PUTs are never retried automatically;
// - failure: everything else -- 403, a missing bucket, malformed XML or headers, an oversized
//   body, 5xx after retries, no connection, an invalid key or ETag.
// Each outcome carries the HTTP status, the S3 error code and a message; neither the secret
// key nor the session token ever appears in a message.
//
// ETags are strong only: exactly one quoted tag of at most kMaxEtagBytes bytes (quotes
// included). Weak (W/"..."), unquoted, multiple or over-long tags are refused as failure.
// They are returned as received (quoted); the dialect decides how If-Match sends them.
//
// Keys are relative to the configured root prefix; the full key is URI-encoded exactly once.
// Read-only requests and plain PUT/DELETE are retried (idempotent); conditional PUTs are not.
//
// Threading: as HttpClient -- await it only from coroutines on its executor. The client may be
// destroyed while operations run; they keep what they need alive.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.hpp"
#include "base/result.hpp"
#include "base/sha256.hpp"
#include "net/http/http_client.hpp"
#include "net/s3/s3_dialect.hpp"
#include "net/s3/sigv4.hpp"

namespace cairn::net {

enum class S3Status { ok, missing, preconditionFailed, conflict, uncertain, failure };

std::string_view statusName(S3Status status);

// A region as it goes into the signature's scope: 1..64 letters, digits, '-' or '_'.
bool isValidRegion(std::string_view region);

struct S3Outcome {
  S3Status status = S3Status::failure;
  int http = 0;         // 0 when no response was read
  std::string code;     // S3 error code, e.g. "NoSuchKey"; empty when none
  std::string message;  // for people; bounded, free of secrets

  bool ok() const { return status == S3Status::ok; }
};

struct S3Object {
  S3Outcome outcome;
  Bytes body;                            // GET only
  std::string etag;                      // strong, quoted, from the same response
  std::uint64_t size = 0;                // GET: body size; HEAD: Content-Length; PUT: bytes written
  std::int64_t modifiedUnixSeconds = 0;  // HEAD: Last-Modified; 0 when absent
};

enum class PutCondition { none, ifNoneMatch, ifMatch };

struct PutOptions {
  PutCondition condition = PutCondition::none;
  std::string etag;              // ifMatch: the strong ETag exactly as observed (quoted)
  std::optional<Digest> sha256;  // the body's SHA-256 when already known: saves a pass
};

struct S3ListEntry {
  std::string key;  // relative to the root prefix
  std::uint64_t size = 0;
  std::string etag;  // as listed (not validated; listing never selects anything)
  std::int64_t modifiedUnixSeconds = 0;  // LastModified (required in every entry)
};

struct S3List {
  S3Outcome outcome;
  std::vector<S3ListEntry> entries;
  std::string continuation;  // pass to the next list(); empty when the listing is complete
};

enum class S3Addressing { path, virtualHost };

// How a PUT's payload is signed: its SHA-256 (always possible), or UNSIGNED-PAYLOAD, which
// saves a pass over the body and is allowed only over https (TLS protects the bytes).
enum class PayloadSigning { sha256, unsignedOverTls };

// Where an S3 client's keys come from when they are not fixed in S3Config: an embedder's own
// source (an STS session it refreshes, a secrets manager). credentials() is called for every
// request, on the client's executor, just before signing; it must be cheap (return what it
// holds; refresh elsewhere) and safe to call while another thread replaces what it holds. A
// failure fails that request before anything is sent (S3Status::failure, the message quoted).
class S3CredentialsProvider {
 public:
  virtual ~S3CredentialsProvider() = default;
  virtual Result<SigV4Credentials, std::string> credentials() = 0;
};

// Credentials that can be replaced while clients use them: set() from any thread; every
// request signed after it returns uses the new ones.
class RefreshableCredentials final : public S3CredentialsProvider {
 public:
  explicit RefreshableCredentials(SigV4Credentials initial = {}) : current_(std::move(initial)) {}
  void set(SigV4Credentials next) {
    std::lock_guard lock(mutex_);
    current_ = std::move(next);
  }
  Result<SigV4Credentials, std::string> credentials() override {
    std::lock_guard lock(mutex_);
    if (current_.accessKey.empty() || current_.secretKey.empty()) {
      return Failure<std::string>{"no S3 credentials set yet"};
    }
    return current_;
  }

 private:
  std::mutex mutex_;
  SigV4Credentials current_;
};

struct S3Config {
  std::string endpoint;  // "http://127.0.0.1:7480", "https://s3.eu-west-1.amazonaws.com"
  std::string region = "us-east-1";
  std::string bucket;
  std::string rootPrefix;  // prepended to every key, e.g. "cairn/"
  S3Addressing addressing = S3Addressing::path;
  std::string accessKey;
  std::string secretKey;     // never logged
  std::string sessionToken;  // optional, never logged
  // When set, every request is signed with what it gives, and the three fields above are
  // not used (they may be empty).
  std::shared_ptr<S3CredentialsProvider> credentialsProvider;
  std::string caFile;  // https: trust only this CA file (else the system store)
  std::chrono::milliseconds connectTimeout{5000};
  std::chrono::milliseconds requestTimeout{60000};
  std::chrono::milliseconds idleTimeout{20000};
  std::size_t maxConnections = 8;
  unsigned maxAttempts = kDefaultMaxAttempts;
  S3Dialect dialect = S3Dialect::aws;
  PayloadSigning payloadSigning = PayloadSigning::sha256;
  // Every request of this client is over by then (HttpRequest::deadline): the probe bounds
  // itself this way.
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

inline constexpr std::size_t kMaxKeyBytes = 1024;   // S3's limit, root prefix included
inline constexpr std::size_t kMaxEtagBytes = 1024;  // quotes included
inline constexpr std::size_t kMaxListBodyBytes = 16 * 1024 * 1024;
inline constexpr int kMaxListKeys = 1000;
inline constexpr std::size_t kMaxOutcomeMessageBytes = 512;

// Timestamps as S3 writes them, to whole seconds since the epoch (UTC). Strict: nullopt for
// anything else. ISO 8601 of ListObjectsV2's LastModified: "2026-11-29T18:13:21.000Z"
// (fraction optional); HTTP's IMF-fixdate of Last-Modified: "Sun, 29 Nov 2026 18:13:21 GMT".
std::optional<std::int64_t> parseIsoTimestamp(std::string_view text);
std::optional<std::int64_t> parseHttpDate(std::string_view text);

// Exactly one quoted strong entity tag: '"' 1*etagc '"', at most kMaxEtagBytes bytes.
bool isStrongEtag(std::string_view value);

class S3Client {
 public:
  // Throws std::invalid_argument for an invalid configuration (see create()).
  S3Client(boost::asio::any_io_executor executor, S3Config config);
  // The error names the invalid setting (never its value if it is a secret).
  static Result<std::unique_ptr<S3Client>, std::string> create(
      boost::asio::any_io_executor executor, S3Config config);
  ~S3Client();
  S3Client(const S3Client&) = delete;
  S3Client& operator=(const S3Client&) = delete;

  // The object's bytes (at most maxBytes, else failure before they are buffered) and the
  // strong ETag of that same response. With `storage`, the body is read into its memory when
  // it has room (HttpRequest::responseStorage).
  boost::asio::awaitable<S3Object> get(std::string key, std::size_t maxBytes);
  boost::asio::awaitable<S3Object> get(std::string key, std::size_t maxBytes, Bytes storage);
  // ETag and size.
  boost::asio::awaitable<S3Object> head(std::string key);
  // The ETag of the new object on ok.
  boost::asio::awaitable<S3Object> put(std::string key, ByteView body, PutOptions options);
  boost::asio::awaitable<S3Object> put(std::string key, ByteView body,
                                       PutCondition condition = PutCondition::none,
                                       std::string etag = {});
  // ok also when the key did not exist (S3 answers 204 either way).
  boost::asio::awaitable<S3Outcome> remove(std::string key);
  // One attempt, answered within `timeout` or uncertain: a DELETE that must take effect
  // within a known time of being sent, or not be retried later (vacuum's window).
  boost::asio::awaitable<S3Outcome> removeOnce(std::string key, std::chrono::milliseconds timeout);
  // One page of ListObjectsV2 (maxKeys clamped to 1..kMaxListKeys), keys in S3's order.
  boost::asio::awaitable<S3List> list(std::string prefix, std::string continuation,
                                      int maxKeys = kMaxListKeys);

  // A presigned URL (query-string SigV4, UNSIGNED-PAYLOAD) for method on key, valid for
  // expires (clamped to 1 s .. 7 days). It is a bearer credential: treat it as a secret.
  std::string presignedUrl(std::string_view method, std::string_view key,
                           std::chrono::seconds expires) const;

  const S3Config& config() const;
  const boost::asio::any_io_executor& executor() const;
  HttpClientStats httpStats() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;  // shared with running operations
};

}  // namespace cairn::net
