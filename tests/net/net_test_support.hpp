// Helpers shared by the net/ tests: running a coroutine to completion, a scriptable HTTP/1.1
// server on loopback (plain TCP or TLS; it can misbehave on purpose), and an in-memory S3
// that honours -- or ignores -- conditional PUTs.
#pragma once

#include <stdlib.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "base/bytes.hpp"
#include "base/sha256.hpp"
#include "net/s3/s3_client.hpp"

namespace cairn::net::test {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using tcp = asio::ip::tcp;

// Runs one coroutine on io until it finishes (other work may stay pending) and returns its
// value; rethrows its exception.
template <class T>
T runAsync(asio::io_context& io, asio::awaitable<T> task) {
  std::optional<T> value;
  std::exception_ptr error;
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { value.emplace(co_await std::move(task)); },
      [&](std::exception_ptr e) {
        error = e;
        io.stop();
      });
  io.restart();
  io.run();
  if (error) std::rethrow_exception(error);
  if (!value) throw std::runtime_error("runAsync: the coroutine did not finish");
  return std::move(*value);
}

// Runs the tasks concurrently on the current executor; all their results, in order.
template <class T>
asio::awaitable<std::vector<T>> whenAll(std::vector<asio::awaitable<T>> tasks) {
  auto executor = co_await asio::this_coro::executor;
  std::vector<std::optional<T>> results(tasks.size());
  std::size_t pending = tasks.size();
  asio::steady_timer done(executor, asio::steady_timer::time_point::max());
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    asio::co_spawn(
        executor,
        [&, i]() -> asio::awaitable<void> { results[i].emplace(co_await std::move(tasks[i])); },
        [&](std::exception_ptr) {
          if (--pending == 0) done.cancel();
        });
  }
  if (pending > 0) co_await done.async_wait(asio::as_tuple(asio::use_awaitable));
  std::vector<T> out;
  for (auto& r : results) {
    if (!r) throw std::runtime_error("a task failed with an exception");
    out.push_back(std::move(*r));
  }
  co_return out;
}

// A fresh directory under the system temp directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "cairn-net-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline Bytes bytesOf(std::string_view s) { return Bytes(s.begin(), s.end()); }
inline std::string textOf(const Bytes& b) { return std::string(b.begin(), b.end()); }

struct FakeRequest {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  const std::string* header(std::string_view name) const {
    for (const auto& [n, v] : headers) {
      if (n.size() == name.size() &&
          std::equal(n.begin(), n.end(), name.begin(),
                     [](char a, char b) { return std::tolower(a) == std::tolower(b); })) {
        return &v;
      }
    }
    return nullptr;
  }
  std::string path() const { return target.substr(0, target.find('?')); }
};

// What the server does with one request. `bytes` is written as is (it need not be valid
// HTTP). Then, optionally, it streams filler body bytes until the client goes away.
struct FakeReply {
  std::string bytes;
  std::chrono::milliseconds delay{0};  // before writing anything
  bool close = false;                  // close the connection after writing
  bool silentClose = false;            // close without writing anything
  std::uint64_t streamBytes = 0;       // filler after `bytes` (raw, or as chunks)
  bool streamChunked = false;
  std::chrono::milliseconds idleClose{0};  // close if no next request within this time
};

// A well-formed response with Content-Length.
inline std::string httpResponse(int status,
                                std::vector<std::pair<std::string, std::string>> headers,
                                std::string body = {}) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " Status\r\n";
  for (const auto& [n, v] : headers) out += n + ": " + v + "\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  return out;
}

// A 200 with an ETag (and a body), as S3 answers a GET or a PUT.
inline std::string okWithEtag(const std::string& etag, std::string body = "data") {
  return httpResponse(200, {{"ETag", etag}}, std::move(body));
}

inline std::string s3Error(int status, std::string code, std::string message = "test") {
  return httpResponse(status, {{"Content-Type", "application/xml"}},
                      "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>" + code +
                          "</Code><Message>" + message + "</Message></Error>");
}

using FakeHandler = std::function<FakeReply(const FakeRequest&)>;

// HTTP/1.1 on 127.0.0.1 (ephemeral port), keep-alive, one coroutine per connection. All its
// work runs on one strand, so the handler needs no locking.
class FakeServer {
 public:
  struct Stats {
    int accepted = 0;
    int requests = 0;
    int open = 0;
    int peakOpen = 0;
    std::uint64_t streamed = 0;  // filler bytes written
  };

  FakeServer(asio::any_io_executor executor, FakeHandler handler,
             std::shared_ptr<asio::ssl::context> tls = nullptr)
      : state_(std::make_shared<State>(asio::make_strand(executor), std::move(handler),
                                       std::move(tls))) {
    tcp::endpoint where(asio::ip::make_address("127.0.0.1"), 0);
    state_->acceptor.open(where.protocol());
    state_->acceptor.set_option(tcp::acceptor::reuse_address(true));
    state_->acceptor.bind(where);
    state_->acceptor.listen();
    port_ = state_->acceptor.local_endpoint().port();
    asio::co_spawn(state_->strand, acceptLoop(state_), asio::detached);
  }
  ~FakeServer() {
    boost::system::error_code ignored;
    state_->acceptor.close(ignored);
  }

  std::uint16_t port() const { return port_; }
  std::string endpoint() const {
    return std::string(state_->tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
  }
  const Stats& stats() const { return state_->stats; }
  const std::vector<FakeRequest>& requests() const { return state_->log; }

 private:
  struct State {
    State(asio::strand<asio::any_io_executor> s, FakeHandler h,
          std::shared_ptr<asio::ssl::context> t)
        : strand(std::move(s)), handler(std::move(h)), tls(std::move(t)), acceptor(strand) {}
    asio::strand<asio::any_io_executor> strand;
    FakeHandler handler;
    std::shared_ptr<asio::ssl::context> tls;
    tcp::acceptor acceptor;
    Stats stats;
    std::vector<FakeRequest> log;
  };

  static asio::awaitable<void> acceptLoop(std::shared_ptr<State> s) {
    for (;;) {
      auto [ec, socket] = co_await s->acceptor.async_accept(asio::as_tuple(asio::use_awaitable));
      if (ec) co_return;
      ++s->stats.accepted;
      if (s->tls) {
        asio::co_spawn(s->strand, tlsSession(s, std::move(socket)), asio::detached);
      } else {
        asio::co_spawn(s->strand, plainSession(s, std::move(socket)), asio::detached);
      }
    }
  }

  static asio::awaitable<void> tlsSession(std::shared_ptr<State> s, tcp::socket socket) {
    asio::ssl::stream<tcp::socket> stream(std::move(socket), *s->tls);
    auto [ec] = co_await stream.async_handshake(asio::ssl::stream_base::server,
                                                asio::as_tuple(asio::use_awaitable));
    if (ec) co_return;
    co_await serve(s, stream);
  }

  static asio::awaitable<void> plainSession(std::shared_ptr<State> s, tcp::socket socket) {
    co_await serve(s, socket);
  }

  template <class Stream>
  static asio::awaitable<void> serve(std::shared_ptr<State> s, Stream& stream) {
    constexpr auto tuple = asio::as_tuple(asio::use_awaitable);
    ++s->stats.open;
    s->stats.peakOpen = std::max(s->stats.peakOpen, s->stats.open);
    std::string buffer;
    std::chrono::milliseconds idleClose{0};
    for (;;) {
      if (idleClose.count() > 0) {
        // Like a server's keep-alive timeout: no new request in time, the connection goes.
        asio::steady_timer idle(s->strand, idleClose);
        co_await idle.async_wait(tuple);
        boost::system::error_code ec;
        if (buffer.empty() && lowest(stream).available(ec) == 0) break;
      }
      auto [ec, n] =
          co_await asio::async_read_until(stream, asio::dynamic_buffer(buffer), "\r\n\r\n", tuple);
      if (ec) break;
      FakeRequest request = parseHead(buffer.substr(0, n));
      buffer.erase(0, n);
      std::size_t length = 0;
      if (const auto* cl = request.header("Content-Length")) length = std::stoul(*cl);
      if (buffer.size() < length) {
        const std::size_t have = buffer.size();
        buffer.resize(length);
        auto [rec, rn] = co_await asio::async_read(
            stream, asio::buffer(buffer.data() + have, length - have), tuple);
        if (rec) break;
      }
      request.body = buffer.substr(0, length);
      buffer.erase(0, length);
      ++s->stats.requests;
      s->log.push_back(request);

      FakeReply reply = s->handler(request);
      if (reply.delay.count() > 0) {
        asio::steady_timer timer(s->strand, reply.delay);
        co_await timer.async_wait(tuple);
      }
      if (reply.silentClose) break;
      auto [wec, wn] = co_await asio::async_write(stream, asio::buffer(reply.bytes), tuple);
      if (wec) break;
      if (reply.streamBytes > 0) {
        co_await stream_filler(s, stream, reply);
        break;
      }
      if (reply.close) break;
      idleClose = reply.idleClose;
    }
    boost::system::error_code ignored;
    lowest(stream).shutdown(tcp::socket::shutdown_both, ignored);
    lowest(stream).close(ignored);
    --s->stats.open;
  }

  template <class Stream>
  static asio::awaitable<void> stream_filler(std::shared_ptr<State> s, Stream& stream,
                                             const FakeReply& reply) {
    constexpr std::size_t kPiece = 16 * 1024;
    const std::string piece(kPiece, 'x');
    char header[32];
    const int headerLength = std::snprintf(header, sizeof header, "%zx\r\n", kPiece);
    for (std::uint64_t sent = 0; sent < reply.streamBytes; sent += kPiece) {
      std::string chunk;
      if (reply.streamChunked) chunk.append(header, static_cast<std::size_t>(headerLength));
      chunk += piece;
      if (reply.streamChunked) chunk += "\r\n";
      auto [ec, n] = co_await asio::async_write(stream, asio::buffer(chunk),
                                                asio::as_tuple(asio::use_awaitable));
      if (ec) co_return;
      s->stats.streamed += kPiece;
    }
  }

  static tcp::socket& lowest(tcp::socket& s) { return s; }
  static tcp::socket& lowest(asio::ssl::stream<tcp::socket>& s) { return s.next_layer(); }

  static FakeRequest parseHead(const std::string& head) {
    FakeRequest r;
    const auto lineEnd = head.find("\r\n");
    const std::string line = head.substr(0, lineEnd);
    const auto sp1 = line.find(' ');
    const auto sp2 = line.find(' ', sp1 + 1);
    r.method = line.substr(0, sp1);
    r.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    for (auto at = lineEnd + 2; at < head.size();) {
      const auto end = head.find("\r\n", at);
      if (end == at || end == std::string::npos) break;
      const std::string field = head.substr(at, end - at);
      const auto colon = field.find(':');
      std::string value = field.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      r.headers.emplace_back(field.substr(0, colon), value);
      at = end + 2;
    }
    return r;
  }

  std::shared_ptr<State> state_;
  std::uint16_t port_ = 0;
};

// An in-memory single bucket with S3's conditional PUT semantics. ETag: quoted hex of the
// first 16 bytes of the body's SHA-256. quotedIfMatch: If-Match compares the quoted form (as
// AWS) or the bare one (as RGW). honourConditions=false ignores If-None-Match and If-Match.
class FakeS3 {
 public:
  std::string bucket = "bkt";
  bool quotedIfMatch = true;
  bool honourConditions = true;
  std::map<std::string, std::string> objects;  // path "/bkt/key" (encoded) -> body

  static std::string etagOf(const std::string& body) {
    return "\"" + toHex(sha256(asBytes(body))).substr(0, 32) + "\"";
  }

  FakeReply operator()(const FakeRequest& r) {
    const std::string path = r.path();
    if (path == "/" + bucket && r.method == "HEAD") return {httpResponse(200, {})};
    if (!path.starts_with("/" + bucket + "/")) return {s3Error(404, "NoSuchBucket")};
    const auto found = objects.find(path);
    if (r.method == "GET" || r.method == "HEAD") {
      if (found == objects.end()) {
        return {r.method == "HEAD" ? httpResponse(404, {}) : s3Error(404, "NoSuchKey")};
      }
      if (r.method == "HEAD") {
        return {"HTTP/1.1 200 OK\r\nETag: " + etagOf(found->second) +
                "\r\nContent-Length: " + std::to_string(found->second.size()) + "\r\n\r\n"};
      }
      return {httpResponse(200, {{"ETag", etagOf(found->second)}}, found->second)};
    }
    if (r.method == "DELETE") {
      objects.erase(path);
      return {httpResponse(204, {})};
    }
    if (r.method == "PUT") {
      if (honourConditions) {
        if (r.header("If-None-Match") && found != objects.end()) {
          return {s3Error(412, "PreconditionFailed")};
        }
        if (const auto* ifMatch = r.header("If-Match")) {
          if (found == objects.end()) return {s3Error(412, "PreconditionFailed")};
          const std::string current = etagOf(found->second);
          const std::string want = quotedIfMatch ? current : current.substr(1, current.size() - 2);
          if (*ifMatch != want) return {s3Error(412, "PreconditionFailed")};
        }
      }
      objects[path] = r.body;
      return {httpResponse(200, {{"ETag", etagOf(r.body)}})};
    }
    return {s3Error(405, "MethodNotAllowed")};
  }
};

// The S3 tests' credentials: no message may ever contain the secret or the token.
inline constexpr std::string_view kSecret = "fake-secret-THAT-MUST-NEVER-LEAK-0123";
inline constexpr std::string_view kToken = "fake-session-token-THAT-MUST-NEVER-LEAK";

inline S3Config fakeConfig(const FakeServer& server) {
  S3Config c;
  c.endpoint = server.endpoint();
  c.bucket = "bkt";
  c.accessKey = "AKIDFAKE";
  c.secretKey = std::string(kSecret);
  c.connectTimeout = 2000ms;
  c.requestTimeout = 2000ms;
  return c;
}

inline void checkNoSecrets(const S3Outcome& o) {
  for (const auto& text : {o.message, o.code}) {
    CHECK(text.find(kSecret) == std::string::npos);
    CHECK(text.find(kToken) == std::string::npos);
  }
}

// A server and a client on one io_context (destroyed in reverse order).
struct Rig {
  explicit Rig(FakeHandler handler, const std::function<void(S3Config&)>& tweak = {})
      : server(io.get_executor(), std::move(handler)),
        client(io.get_executor(), configure(tweak)) {}

  S3Config configure(const std::function<void(S3Config&)>& tweak) {
    S3Config c = fakeConfig(server);
    if (tweak) tweak(c);
    return c;
  }
  template <class T>
  T run(asio::awaitable<T> task) {
    return runAsync(io, std::move(task));
  }
  S3Object get(std::string key, std::size_t max = 1 << 20) { return run(client.get(key, max)); }
  S3Object head(std::string key) { return run(client.head(key)); }
  S3Object put(std::string key, std::string_view body, PutCondition c = PutCondition::none,
               std::string etag = {}) {
    return run(client.put(key, asBytes(body), c, etag));
  }
  int requests() const { return server.stats().requests; }

  asio::io_context io;
  FakeServer server;
  S3Client client;
};

}  // namespace cairn::net::test
