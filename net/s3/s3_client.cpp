#include "net/s3/s3_client.hpp"

#include <algorithm>
#include <boost/asio/use_awaitable.hpp>
#include <charconv>
#include <deque>
#include <functional>
#include <mutex>
#include <pugixml.hpp>
#include <stdexcept>
#include <utility>

#include "net/s3/sigv4.hpp"

namespace cairn::net {
namespace {

// SHA-256 of the empty payload (GET, HEAD, DELETE, list).
constexpr std::string_view kEmptyPayloadSha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr std::string_view kService = "s3";
constexpr std::size_t kMaxCodeBytes = 128;

enum class Op { get, head, put, putConditional, remove, list, headBucket };

bool mutates(Op op) { return op == Op::put || op == Op::putConditional || op == Op::remove; }

bool parseUnsigned(std::string_view text, std::uint64_t& out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && end == text.data() + text.size();
}

bool isEtagChar(unsigned char c) { return c == 0x21 || (c >= 0x23 && c <= 0x7E) || c >= 0x80; }

// A secret's fragment this long (or longer) is redacted wherever it appears: a server that
// echoes part of a token (cut to fit its own message) must not print that part.
constexpr std::size_t kSecretFragmentBytes = 8;

// Replaces every run of `text` that holds a kSecretFragmentBytes-long piece of `secret` (or
// all of a shorter secret) with "[redacted]".
void redactFragments(std::string& text, std::string_view secret) {
  if (secret.empty()) return;
  const std::size_t k = std::min(kSecretFragmentBytes, secret.size());
  std::vector<bool> covered(text.size(), false);
  bool any = false;
  for (std::size_t at = 0; at + k <= text.size(); ++at) {
    // Only where a piece of the secret starts: the secret is short, the text bounded.
    if (secret.find(std::string_view(text).substr(at, k)) == std::string_view::npos) continue;
    std::fill(covered.begin() + static_cast<std::ptrdiff_t>(at),
              covered.begin() + static_cast<std::ptrdiff_t>(at + k), true);
    any = true;
  }
  if (!any) return;
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    if (!covered[i]) {
      out += text[i++];
      continue;
    }
    out += "[redacted]";
    while (i < text.size() && covered[i]) ++i;
  }
  text = std::move(out);
}

}  // namespace

bool isValidRegion(std::string_view region) {
  if (region.empty() || region.size() > 64) return false;
  return std::all_of(region.begin(), region.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
  });
}

namespace {

bool validBucket(std::string_view bucket, S3Addressing addressing) {
  if (bucket.empty() || bucket.size() > 255) return false;
  for (char c : bucket) {
    const bool dnsChar = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
    const bool pathChar = dnsChar || (c >= 'A' && c <= 'Z') || c == '_';
    if (!(addressing == S3Addressing::virtualHost ? dnsChar : pathChar)) return false;
  }
  return addressing == S3Addressing::path || (bucket.size() >= 3 && bucket.size() <= 63);
}

// Text that goes into a header or a signature's scope: printable ASCII without spaces, so no
// value can end a header line or add one.
bool headerSafe(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

// The error, if any, that makes this configuration unusable; never quotes a secret.
std::optional<std::string> invalidConfig(const S3Config& c) {
  auto endpoint = parseEndpoint(c.endpoint);
  if (!endpoint) return "S3 endpoint: " + endpoint.error();
  if (!validBucket(c.bucket, c.addressing)) return std::string("S3 bucket name is invalid");
  if (!isValidRegion(c.region)) {
    return std::string("S3 region must be 1..64 letters, digits, '-' or '_'");
  }
  if (!c.credentialsProvider && (c.accessKey.empty() || c.secretKey.empty())) {
    return std::string("S3 access key and secret key are required");
  }
  if (!headerSafe(c.accessKey) || !headerSafe(c.secretKey) || !headerSafe(c.sessionToken)) {
    return std::string(
        "S3 credentials must be printable ASCII without spaces (AWS_ACCESS_KEY_ID, "
        "AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN)");
  }
  if (c.rootPrefix.size() >= kMaxKeyBytes) return std::string("S3 root prefix is too long");
  if (c.payloadSigning == PayloadSigning::unsignedOverTls && !endpoint->tls) {
    return std::string("UNSIGNED-PAYLOAD needs an https endpoint");
  }
  if (c.connectTimeout.count() <= 0 || c.requestTimeout.count() <= 0 ||
      c.idleTimeout.count() <= 0) {
    return std::string("S3 timeouts must be positive");
  }
  if (c.maxConnections == 0 || c.maxConnections > kMaxConnectionsPerEndpointLimit) {
    return std::string("S3 max connections out of range");
  }
  return std::nullopt;
}

HttpClientOptions httpOptions(const S3Config& c, bool tls) {
  HttpClientOptions o;
  o.connectTimeout = c.connectTimeout;
  o.requestTimeout = c.requestTimeout;
  o.idleTimeout = c.idleTimeout;
  o.maxConnectionsPerEndpoint = c.maxConnections;
  o.maxAttempts = c.maxAttempts;
  o.caFile = c.caFile;
  o.tlsExpected = tls;  // a plain-HTTP endpoint does not read the trust store
  return o;
}

// S3's <Error><Code>..</Code><Message>..</Message></Error>, if the body is that.
void parseErrorBody(const Bytes& body, std::string& code, std::string& message) {
  if (body.empty()) return;
  pugi::xml_document doc;
  if (!doc.load_buffer(body.data(), body.size(), pugi::parse_default, pugi::encoding_utf8)) {
    return;
  }
  const auto error = doc.child("Error");
  // Whole, as the server sent them: redaction comes before any cut (S3Client::Impl::outcome).
  code = error.child_value("Code");
  message = error.child_value("Message");
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
std::int64_t daysFromCivil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

// Exactly `width` decimal digits at text[at].
std::optional<unsigned> digits(std::string_view text, std::size_t at, std::size_t width) {
  if (at + width > text.size()) return std::nullopt;
  unsigned v = 0;
  for (std::size_t i = at; i < at + width; ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    v = v * 10 + static_cast<unsigned>(text[i] - '0');
  }
  return v;
}

std::optional<std::int64_t> civilSeconds(unsigned y, unsigned mo, unsigned d, unsigned h,
                                         unsigned mi, unsigned s) {
  static constexpr unsigned kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > kDays[mo - 1] || h > 23 || mi > 59 || s > 60) {
    return std::nullopt;
  }
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (mo == 2 && d == 29 && !leap) return std::nullopt;
  return daysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + std::min(s, 59u);
}

}  // namespace

std::optional<std::int64_t> parseIsoTimestamp(std::string_view t) {
  // YYYY-MM-DDTHH:MM:SS[.fraction]Z
  if (t.size() < 20 || t.size() > 40 || t[4] != '-' || t[7] != '-' || t[10] != 'T' ||
      t[13] != ':' || t[16] != ':' || t.back() != 'Z') {
    return std::nullopt;
  }
  if (t.size() > 20) {
    if (t[19] != '.' || t.size() == 21) return std::nullopt;
    for (std::size_t i = 20; i + 1 < t.size(); ++i) {
      if (t[i] < '0' || t[i] > '9') return std::nullopt;
    }
  }
  auto y = digits(t, 0, 4), mo = digits(t, 5, 2), d = digits(t, 8, 2), h = digits(t, 11, 2),
       mi = digits(t, 14, 2), s = digits(t, 17, 2);
  if (!y || !mo || !d || !h || !mi || !s) return std::nullopt;
  return civilSeconds(*y, *mo, *d, *h, *mi, *s);
}

std::optional<std::int64_t> parseHttpDate(std::string_view t) {
  // Www, DD Mon YYYY HH:MM:SS GMT (29 characters)
  static constexpr std::string_view kWeekdays[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
  static constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  if (t.size() != 29 || t.substr(3, 2) != ", " || t[7] != ' ' || t[11] != ' ' || t[16] != ' ' ||
      t[19] != ':' || t[22] != ':' || t.substr(25) != " GMT") {
    return std::nullopt;
  }
  if (std::find(std::begin(kWeekdays), std::end(kWeekdays), t.substr(0, 3)) ==
      std::end(kWeekdays)) {
    return std::nullopt;
  }
  auto month = std::find(std::begin(kMonths), std::end(kMonths), t.substr(8, 3));
  if (month == std::end(kMonths)) return std::nullopt;
  auto d = digits(t, 5, 2), y = digits(t, 12, 4), h = digits(t, 17, 2), mi = digits(t, 20, 2),
       s = digits(t, 23, 2);
  if (!d || !y || !h || !mi || !s) return std::nullopt;
  return civilSeconds(*y, static_cast<unsigned>(month - std::begin(kMonths)) + 1, *d, *h, *mi, *s);
}

std::string_view statusName(S3Status status) {
  switch (status) {
    case S3Status::ok:
      return "ok";
    case S3Status::missing:
      return "missing";
    case S3Status::preconditionFailed:
      return "preconditionFailed";
    case S3Status::conflict:
      return "conflict";
    case S3Status::uncertain:
      return "uncertain";
    case S3Status::failure:
      return "failure";
  }
  return "unknown";
}

bool isStrongEtag(std::string_view value) {
  if (value.size() < 3 || value.size() > kMaxEtagBytes) return false;
  if (value.front() != '"' || value.back() != '"') return false;
  for (char c : value.substr(1, value.size() - 2)) {
    if (!isEtagChar(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

struct S3Client::Impl {
  Impl(boost::asio::any_io_executor executor, S3Config c, Endpoint e)
      : config(std::move(c)),
        endpoint(std::move(e)),
        http(std::move(executor), httpOptions(config, endpoint.tls)),
        credentials{config.accessKey, config.secretKey, config.sessionToken},
        scope{config.region, std::string(kService)} {
    if (config.addressing == S3Addressing::virtualHost) {
      endpoint.host = config.bucket + "." + endpoint.host;
    }
  }

  S3Config config;
  Endpoint endpoint;  // where every request goes (virtual-host style: bucket.host)
  HttpClient http;
  SigV4Credentials credentials;
  SigV4Scope scope;

  bool pathStyle() const { return config.addressing == S3Addressing::path; }

  // A provider's secret keys and tokens recently signed with: an answer to a request signed
  // before the keys were replaced is redacted against the keys that signed it.
  static constexpr std::size_t kRememberedSecrets = 8;
  mutable std::mutex signedMutex;
  mutable std::deque<std::string> signedSecrets;

  void rememberSecrets(const SigV4Credentials& keys) const {
    std::lock_guard lock(signedMutex);
    for (const std::string* secret : {&keys.secretKey, &keys.sessionToken}) {
      if (secret->empty()) continue;
      if (std::find(signedSecrets.begin(), signedSecrets.end(), *secret) != signedSecrets.end()) {
        continue;
      }
      signedSecrets.push_back(*secret);
      if (signedSecrets.size() > kRememberedSecrets) signedSecrets.pop_front();
    }
  }

  // The provider's keys for the next request, checked (only with a provider). A copy per
  // request, as the client may serve requests from several threads at once; without a
  // provider the fixed keys are used in place.
  Result<SigV4Credentials, std::string> providedCredentials() const {
    auto provided = config.credentialsProvider->credentials();
    if (!provided) return Failure<std::string>{"credentials: " + provided.error()};
    rememberSecrets(*provided);
    if (provided->accessKey.empty() || provided->secretKey.empty() ||
        !headerSafe(provided->accessKey) || !headerSafe(provided->secretKey) ||
        !headerSafe(provided->sessionToken)) {
      return Failure<std::string>{
          "credentials: the provider gave an empty key or one that is not printable ASCII"};
    }
    return provided;
  }

  std::string objectPath(std::string_view fullKey) const {
    std::string out = pathStyle() ? "/" + config.bucket + "/" : "/";
    out += fullKey;
    return out;
  }

  std::string bucketPath() const { return pathStyle() ? "/" + config.bucket : "/"; }

  // Signs and sends one request. rawPath is not encoded; it is encoded once, for both.
  boost::asio::awaitable<HttpResult> send(std::string method, std::string rawPath,
                                          std::vector<std::pair<std::string, std::string>> query,
                                          std::vector<HttpHeader> headers, ByteView body,
                                          std::string payloadHash, std::size_t maxBody,
                                          bool idempotent, unsigned maxAttempts = 0,
                                          std::chrono::milliseconds timeout = {},
                                          Bytes* responseStorage = nullptr) {
    SigV4Request toSign;
    toSign.method = method;
    toSign.path = rawPath;
    toSign.query = query;
    toSign.headers = headers;
    toSign.headers.push_back({"Host", endpoint.hostHeader()});
    SigV4Options options;
    options.payloadHash = std::move(payloadHash);
    SigV4Credentials provided;
    const SigV4Credentials* signing = &credentials;
    if (config.credentialsProvider) {
      auto got = providedCredentials();
      if (!got) co_return Failure<HttpError>{HttpError{HttpErrorKind::notSent, 0, 0, got.error()}};
      provided = std::move(*got);
      signing = &provided;
    }
    const auto signature =
        signHeaders(toSign, *signing, scope, std::chrono::system_clock::now(), options);

    HttpRequest request;
    request.method = std::move(method);
    request.target = uriEncodePath(rawPath);
    if (!query.empty()) request.target += "?" + canonicalQueryString(query);
    request.headers = std::move(headers);
    request.headers.insert(request.headers.end(), signature.addedHeaders.begin(),
                           signature.addedHeaders.end());
    request.body = body;
    request.maxResponseBody = maxBody;
    request.idempotent = idempotent;
    request.maxAttempts = maxAttempts;
    request.timeout = timeout;
    request.deadline = config.deadline;
    if (responseStorage != nullptr) request.responseStorage = std::move(*responseStorage);
    co_return co_await http.request(endpoint, std::move(request));
  }

  // Text that may hold what a server sent, made safe to print: every fragment of the secret
  // key and the session token redacted first, then control characters and invalid UTF-8
  // escaped, then cut between characters at `limit`.
  std::string untrusted(std::string text, std::size_t limit) const {
    if (!text.empty()) {
      redactFragments(text, config.secretKey);
      redactFragments(text, config.sessionToken);
      if (config.credentialsProvider) {
        std::lock_guard lock(signedMutex);
        for (const std::string& secret : signedSecrets) redactFragments(text, secret);
      }
    }
    return boundedDisplay(text, limit);
  }

  S3Outcome outcome(S3Status status, int httpStatus, std::string code, std::string message) const {
    S3Outcome o;
    o.status = status;
    o.http = httpStatus;
    o.code = untrusted(std::move(code), kMaxCodeBytes);
    o.message = untrusted(std::move(message), kMaxOutcomeMessageBytes);
    return o;
  }

  // The outcome of a request at the HTTP level; a 2xx is ok here, and the operation then
  // checks what it needs from the response (ETag, size, XML).
  S3Outcome classify(const HttpResult& result, Op op, const std::string& what) const {
    if (!result.ok()) {
      const HttpError& e = result.error();
      const std::string message = what + ": " + e.message + " (" + std::to_string(e.attempts) +
                                  (e.attempts == 1 ? " attempt)" : " attempts)");
      switch (e.kind) {
        case HttpErrorKind::notSent:
          return outcome(S3Status::failure, e.status, {}, message);
        case HttpErrorKind::bodyTooLarge:
          // A write whose answer cannot be read whole may have been applied: unknown. (The
          // body was not buffered past the bound either way.)
          return outcome(mutates(op) ? S3Status::uncertain : S3Status::failure, e.status, {},
                         message);
        case HttpErrorKind::uncertain:
          // A read that got no answer changed nothing: it simply failed.
          return outcome(mutates(op) ? S3Status::uncertain : S3Status::failure, 0, {}, message);
      }
    }
    const HttpResponse& response = result.value();
    const int status = response.status;
    if (status / 100 == 2) return outcome(S3Status::ok, status, {}, {});

    std::string code;
    std::string serverMessage;
    parseErrorBody(response.body, code, serverMessage);
    std::string message = what + ": HTTP " + std::to_string(status);
    if (!code.empty()) message += " " + code;
    if (!serverMessage.empty()) message += ": " + serverMessage;

    S3Status s = S3Status::failure;
    const bool conditional = op == Op::putConditional;
    if (status == 404 && code == "NoSuchKey" && op != Op::list && op != Op::put) {
      s = S3Status::missing;
    } else if (status == 412 && conditional) {
      s = S3Status::preconditionFailed;
    } else if ((status == 409 && op == Op::put) ||
               (conditional && isLostConditionalRace(config.dialect, status, code))) {
      s = S3Status::conflict;
    } else if (conditional && status / 100 == 5) {
      s = S3Status::uncertain;  // not retried; the server may or may not have applied it
    }
    return outcome(s, status, std::move(code), std::move(message));
  }

  // The strong ETag of exactly one ETag header, or nullopt.
  std::optional<std::string> etagOf(const HttpResponse& response) const {
    if (response.headerCount("ETag") != 1) return std::nullopt;
    const std::string* value = response.header("ETag");
    if (!isStrongEtag(*value)) return std::nullopt;
    return *value;
  }

  S3Outcome malformed(int http, const std::string& what, std::string_view problem) const {
    return outcome(S3Status::failure, http, {}, what + ": " + std::string(problem));
  }

  // A key, with the root prefix, that S3 accepts; or nullopt.
  std::optional<std::string> fullKey(std::string_view key) const {
    if (key.empty()) return std::nullopt;
    std::string full = config.rootPrefix + std::string(key);
    if (full.size() > kMaxKeyBytes) return std::nullopt;
    return full;
  }

  // A HEAD response has no body, so a 404 has no S3 code: it means NoSuchKey only if the
  // bucket exists.
  boost::asio::awaitable<S3Outcome> headMissing(const std::string& what) {
    auto bucket =
        co_await send("HEAD", bucketPath(), {}, {}, {}, std::string(kEmptyPayloadSha256), 0, true);
    S3Outcome b = classify(bucket, Op::headBucket, "HEAD bucket");
    if (b.ok()) {
      co_return outcome(S3Status::missing, 404, "NoSuchKey", what + ": HTTP 404 (bucket exists)");
    }
    if (b.http == 404) {
      co_return outcome(S3Status::failure, 404, "NoSuchBucket",
                        what + ": HTTP 404 (the bucket does not exist)");
    }
    co_return b;
  }

  S3Outcome invalidKey(std::string_view what) const {
    return outcome(S3Status::failure, 0, "InvalidKey",
                   std::string(what) + ": key is empty or longer than " +
                       std::to_string(kMaxKeyBytes) + " bytes with the root prefix");
  }

  std::string payloadHash(ByteView body, const std::optional<Digest>& known) const {
    if (config.payloadSigning == PayloadSigning::unsignedOverTls) {
      return std::string(kUnsignedPayload);
    }
    return toHex(known ? *known : sha256(body));
  }
};

S3Client::S3Client(boost::asio::any_io_executor executor, S3Config config) {
  if (auto problem = invalidConfig(config)) throw std::invalid_argument(*problem);
  auto endpoint = parseEndpoint(config.endpoint);
  impl_ = std::make_shared<Impl>(std::move(executor), std::move(config), std::move(*endpoint));
}

Result<std::unique_ptr<S3Client>, std::string> S3Client::create(
    boost::asio::any_io_executor executor, S3Config config) {
  if (auto problem = invalidConfig(config)) return fail(std::move(*problem));
  try {
    return std::make_unique<S3Client>(std::move(executor), std::move(config));
  } catch (const std::exception& e) {
    return fail(std::string(e.what()));  // e.g. an unreadable CA file
  }
}

S3Client::~S3Client() = default;

boost::asio::awaitable<S3Object> S3Client::get(std::string key, std::size_t maxBytes) {
  Bytes fresh;  // a named local: GCC 12 mishandles non-trivial temporaries in co_await
  co_return co_await get(std::move(key), maxBytes, std::move(fresh));
}

boost::asio::awaitable<S3Object> S3Client::get(std::string key, std::size_t maxBytes,
                                               Bytes storage) {
  auto impl = impl_;
  const std::string what = "GET " + key;
  S3Object object;
  const auto full = impl->fullKey(key);
  if (!full) {
    object.outcome = impl->invalidKey(what);
    co_return object;
  }
  auto result =
      co_await impl->send("GET", impl->objectPath(*full), {}, {}, {},
                          std::string(kEmptyPayloadSha256), maxBytes, true, 0, {}, &storage);
  object.outcome = impl->classify(result, Op::get, what);
  if (!object.outcome.ok()) co_return object;
  HttpResponse& response = result.value();
  if (response.status != 200) {
    object.outcome = impl->malformed(response.status, what, "unexpected status");
    co_return object;
  }
  auto etag = impl->etagOf(response);
  if (!etag) {
    object.outcome = impl->malformed(response.status, what, "missing or malformed ETag");
    co_return object;
  }
  object.etag = std::move(*etag);
  object.size = response.body.size();
  object.body = std::move(response.body);
  co_return object;
}

boost::asio::awaitable<S3Object> S3Client::head(std::string key) {
  auto impl = impl_;
  const std::string what = "HEAD " + key;
  S3Object object;
  const auto full = impl->fullKey(key);
  if (!full) {
    object.outcome = impl->invalidKey(what);
    co_return object;
  }
  auto result = co_await impl->send("HEAD", impl->objectPath(*full), {}, {}, {},
                                    std::string(kEmptyPayloadSha256), 0, true);
  object.outcome = impl->classify(result, Op::head, what);
  if (result.ok() && result.value().status == 404 && object.outcome.code.empty()) {
    object.outcome = co_await impl->headMissing(what);
    co_return object;
  }
  if (!object.outcome.ok()) co_return object;
  const HttpResponse& response = result.value();
  auto etag = impl->etagOf(response);
  const std::string* length = response.header("Content-Length");
  if (response.status != 200 || !etag || response.headerCount("Content-Length") != 1 ||
      !parseUnsigned(*length, object.size)) {
    object.outcome = impl->malformed(response.status, what,
                                     "unexpected status, or missing or malformed ETag or size");
    co_return object;
  }
  object.etag = std::move(*etag);
  // Last-Modified is optional here: 0 means "unknown", which nothing treats as old.
  if (const std::string* modified = response.header("Last-Modified");
      modified != nullptr && response.headerCount("Last-Modified") == 1) {
    if (auto t = parseHttpDate(*modified)) object.modifiedUnixSeconds = *t;
  }
  co_return object;
}

boost::asio::awaitable<S3Object> S3Client::put(std::string key, ByteView body,
                                               PutCondition condition, std::string etag) {
  PutOptions options;
  options.condition = condition;
  options.etag = std::move(etag);
  co_return co_await put(std::move(key), body, std::move(options));
}

boost::asio::awaitable<S3Object> S3Client::put(std::string key, ByteView body, PutOptions options) {
  auto impl = impl_;
  const std::string what = "PUT " + key;
  S3Object object;
  const auto full = impl->fullKey(key);
  if (!full) {
    object.outcome = impl->invalidKey(what);
    co_return object;
  }
  std::vector<HttpHeader> headers{{"Content-Type", "application/octet-stream"}};
  switch (options.condition) {
    case PutCondition::none:
      break;
    case PutCondition::ifNoneMatch:
      headers.push_back({"If-None-Match", "*"});
      break;
    case PutCondition::ifMatch:
      if (!isStrongEtag(options.etag)) {
        object.outcome = impl->outcome(S3Status::failure, 0, "InvalidETag",
                                       what + ": If-Match needs one strong quoted ETag");
        co_return object;
      }
      headers.push_back({"If-Match", ifMatchValue(impl->config.dialect, options.etag)});
      break;
  }
  // A conditional PUT repeated after an uncertain attempt could report 412 for its own
  // success: it is never retried. A plain PUT of the same bytes is safe to repeat.
  const bool conditional = options.condition != PutCondition::none;
  auto result = co_await impl->send("PUT", impl->objectPath(*full), {}, std::move(headers), body,
                                    impl->payloadHash(body, options.sha256), kMaxErrorResponseBody,
                                    !conditional);
  object.outcome = impl->classify(result, conditional ? Op::putConditional : Op::put, what);
  if (!object.outcome.ok()) co_return object;
  auto etag = impl->etagOf(result.value());
  if (!etag) {
    // Applied, but without a usable ETag: the caller must re-read (its intent is recorded).
    object.outcome = impl->malformed(result.value().status, what,
                                     "written, but the response ETag is missing or malformed");
    co_return object;
  }
  object.etag = std::move(*etag);
  object.size = body.size();
  co_return object;
}

boost::asio::awaitable<S3Outcome> S3Client::remove(std::string key) {
  auto impl = impl_;
  const std::string what = "DELETE " + key;
  const auto full = impl->fullKey(key);
  if (!full) co_return impl->invalidKey(what);
  // Some stores answer 200 with a small body rather than 204: accept what an error may carry.
  auto result = co_await impl->send("DELETE", impl->objectPath(*full), {}, {}, {},
                                    std::string(kEmptyPayloadSha256), kMaxErrorResponseBody, true);
  co_return impl->classify(result, Op::remove, what);
}

boost::asio::awaitable<S3Outcome> S3Client::removeOnce(std::string key,
                                                       std::chrono::milliseconds timeout) {
  auto impl = impl_;
  const std::string what = "DELETE " + key;
  const auto full = impl->fullKey(key);
  if (!full) co_return impl->invalidKey(what);
  auto result = co_await impl->send("DELETE", impl->objectPath(*full), {}, {}, {},
                                    std::string(kEmptyPayloadSha256), kMaxErrorResponseBody, false,
                                    1, timeout);
  co_return impl->classify(result, Op::remove, what);
}

namespace {

// Parses one ListObjectsV2 page; keys must carry the root prefix, which is removed.
std::optional<std::string> parseListPage(const Bytes& body, const std::string& rootPrefix,
                                         int maxKeys, S3List& list,
                                         const std::function<std::string(std::string)>& untrusted) {
  pugi::xml_document doc;
  if (!doc.load_buffer(body.data(), body.size(), pugi::parse_default, pugi::encoding_utf8)) {
    return "malformed XML";
  }
  const auto root = doc.child("ListBucketResult");
  if (!root) return "not a ListBucketResult";
  const bool urlEncoded = std::string_view(root.child_value("EncodingType")) == "url";
  for (const auto& contents : root.children("Contents")) {
    if (list.entries.size() >= static_cast<std::size_t>(maxKeys)) return "more keys than asked";
    S3ListEntry entry;
    std::string key = contents.child_value("Key");
    if (urlEncoded && !uriDecode(contents.child_value("Key"), key)) return "bad key encoding";
    if (!key.starts_with(rootPrefix)) return "a key outside the root prefix";
    if (key.size() == rootPrefix.size()) continue;  // a "directory" marker: not addressable
    entry.key = key.substr(rootPrefix.size());
    if (!parseUnsigned(contents.child_value("Size"), entry.size)) return "bad Size";
    // Only informational here (nothing is decided on a listing's ETag): kept if strong, and
    // like every server string made safe to print.
    const std::string etag = contents.child_value("ETag");
    entry.etag = isStrongEtag(etag) ? untrusted(etag) : std::string();
    auto modified = parseIsoTimestamp(contents.child_value("LastModified"));
    if (!modified) return "bad LastModified";
    entry.modifiedUnixSeconds = *modified;
    list.entries.push_back(std::move(entry));
  }
  const std::string_view truncated = root.child_value("IsTruncated");
  if (truncated != "true" && truncated != "false") return "bad IsTruncated";
  if (truncated == "true") {
    list.continuation = root.child_value("NextContinuationToken");
    if (list.continuation.empty() || list.continuation.size() > kMaxKeyBytes * 4) {
      return "truncated without a usable NextContinuationToken";
    }
  }
  return std::nullopt;
}

}  // namespace

boost::asio::awaitable<S3List> S3Client::list(std::string prefix, std::string continuation,
                                              int maxKeys) {
  auto impl = impl_;
  maxKeys = std::clamp(maxKeys, 1, kMaxListKeys);
  const std::string what = "LIST " + prefix;
  S3List list;
  std::vector<std::pair<std::string, std::string>> query{
      {"list-type", "2"},
      {"prefix", impl->config.rootPrefix + prefix},
      {"max-keys", std::to_string(maxKeys)},
      {"encoding-type", "url"}};
  if (!continuation.empty()) query.emplace_back("continuation-token", std::move(continuation));
  auto result = co_await impl->send("GET", impl->bucketPath(), std::move(query), {}, {},
                                    std::string(kEmptyPayloadSha256), kMaxListBodyBytes, true);
  list.outcome = impl->classify(result, Op::list, what);
  if (!list.outcome.ok()) co_return list;
  auto untrusted = [&](std::string text) {
    return impl->untrusted(std::move(text), kMaxEtagBytes);
  };
  if (auto problem =
          parseListPage(result.value().body, impl->config.rootPrefix, maxKeys, list, untrusted)) {
    list.entries.clear();
    list.continuation.clear();
    list.outcome = impl->malformed(result.value().status, what, *problem);
  }
  co_return list;
}

std::string S3Client::presignedUrl(std::string_view method, std::string_view key,
                                   std::chrono::seconds expires) const {
  expires = std::clamp(expires, std::chrono::seconds(1), kMaxPresignExpiry);
  SigV4Request request;
  request.method = std::string(method);
  request.path = impl_->objectPath(impl_->config.rootPrefix + std::string(key));
  request.headers.push_back({"Host", impl_->endpoint.hostHeader()});
  SigV4Options options;
  options.payloadHash = std::string(kUnsignedPayload);
  options.addContentSha256Header = false;
  // A provider that fails gives a URL signed with the fixed keys (empty: the store refuses it).
  SigV4Credentials keys = impl_->credentials;
  if (impl_->config.credentialsProvider) {
    if (auto got = impl_->providedCredentials()) keys = std::move(*got);
  }
  const auto signature =
      presign(request, keys, impl_->scope, std::chrono::system_clock::now(), expires, options);
  return std::string(impl_->endpoint.tls ? "https://" : "http://") + impl_->endpoint.hostHeader() +
         uriEncodePath(request.path) + "?" + signature.query;
}

const S3Config& S3Client::config() const { return impl_->config; }

const boost::asio::any_io_executor& S3Client::executor() const { return impl_->http.executor(); }

HttpClientStats S3Client::httpStats() const { return impl_->http.stats(); }

}  // namespace cairn::net
