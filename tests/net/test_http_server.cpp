// HttpServer over real sockets: the server runs on its own thread; a raw POSIX client (bytes
// as written, with deadlines) checks keep-alive, pipelining, the size, connection, in-flight
// and time bounds, the error envelope, the graceful stop (by call and by signal), the start
// errors and the log line; cairn's own HttpClient checks a TLS round trip.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <catch2/catch.hpp>
#include <future>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "net/http/http_client.hpp"
#include "net/http/http_server.hpp"
#include "tests/net/net_test_support.hpp"
#include "tests/net/tls_test_support.hpp"

namespace {

using namespace cairn;
using namespace cairn::net;
using namespace cairn::net::test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace json = boost::json;

// Every wait in these tests ends by this, whatever the server does.
constexpr auto kPatience = 5s;

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds within = 5s) {
  const auto until = Clock::now() + within;
  while (!condition()) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

struct Reply {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string header(const std::string& name) const {
    const auto found = headers.find(lower(name));
    return found == headers.end() ? std::string() : found->second;
  }
};

// A blocking TCP client on 127.0.0.1 whose every read has a deadline.
class RawClient {
 public:
  // `from`: the local address to connect from (another loopback address is another peer).
  explicit RawClient(std::uint16_t port, const char* from = nullptr) : fd_(connectTo(port, from)) {
    REQUIRE(fd_ >= 0);
  }
  ~RawClient() { ::close(fd_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  // -1 if the connection was refused.
  static int connectTo(std::uint16_t port, const char* from = nullptr) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (from != nullptr) {
      sockaddr_in local{};
      local.sin_family = AF_INET;
      ::inet_pton(AF_INET, from, &local.sin_addr);
      if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
        ::close(fd);
        return -1;
      }
    }
    sockaddr_in where{};
    where.sin_family = AF_INET;
    where.sin_port = htons(port);
    where.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&where), sizeof where) != 0) {
      ::close(fd);
      return -1;
    }
    return fd;
  }

  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      const auto n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  // The next response (a response to HEAD has no body); nullopt if the connection ended or
  // the deadline passed first.
  std::optional<Reply> read(bool head = false) {
    const auto until = Clock::now() + kPatience;
    std::size_t end = 0;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill(until)) return std::nullopt;
    }
    Reply reply = parseHead(buffer_.substr(0, end));
    buffer_.erase(0, end + 4);
    const std::string length = reply.header("Content-Length");
    const std::size_t size = head || length.empty() ? 0 : std::stoul(length);
    while (buffer_.size() < size) {
      if (!fill(until)) return std::nullopt;
    }
    reply.body = buffer_.substr(0, size);
    buffer_.erase(0, size);
    return reply;
  }

  // Whether the server closed the connection (EOF or reset) within `within`; what it sent
  // before that stays in received().
  bool closedWithin(std::chrono::milliseconds within) {
    const auto until = Clock::now() + within;
    while (Clock::now() < until) {
      if (!fill(until)) return eof_;
    }
    return false;
  }

  const std::string& received() const { return buffer_; }

 private:
  // Reads what is there; false on EOF, reset or deadline.
  bool fill(Clock::time_point until) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char chunk[16384];
    const auto n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }

  static Reply parseHead(const std::string& head) {
    Reply r;
    r.status = std::stoi(head.substr(9, 3));
    for (auto at = head.find("\r\n"); at != std::string::npos && at + 2 < head.size();) {
      const auto next = head.find("\r\n", at + 2);
      const std::string line =
          head.substr(at + 2, next == std::string::npos ? next : next - at - 2);
      const auto colon = line.find(':');
      r.headers[lower(line.substr(0, colon))] = line.substr(line.find_first_not_of(' ', colon + 1));
      at = next;
    }
    return r;
  }

  int fd_ = -1;
  std::string buffer_;
  bool eof_ = false;
};

// Whether a connection to the port is refused (nothing listens any more).
bool refused(std::uint16_t port) {
  const int fd = RawClient::connectTo(port);
  if (fd < 0) return true;
  ::close(fd);
  return false;
}

std::string get(const std::string& target, const std::string& extra = {}) {
  return "GET " + target + " HTTP/1.1\r\nHost: test\r\n" + extra + "\r\n";
}

std::string post(const std::string& target, const std::string& body) {
  return "POST " + target +
         " HTTP/1.1\r\nHost: test\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
         body;
}

// A handler to hold requests inside it until the test releases them.
class Gate {
 public:
  explicit Gate(asio::io_context& io) : timer_(io, asio::steady_timer::time_point::max()) {}

  asio::awaitable<void> pass() {
    ++entered_;
    if (!released_) co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    ++passed_;
  }
  void release() {
    released_ = true;
    asio::post(timer_.get_executor(), [this] { timer_.cancel(); });
  }
  int entered() const { return entered_; }
  int passed() const { return passed_; }

 private:
  asio::steady_timer timer_;
  std::atomic<bool> released_{false};
  std::atomic<int> entered_{0};
  std::atomic<int> passed_{0};
};

ServerResponse text(std::string body, std::string route = "/echo") {
  ServerResponse r;
  r.body = std::move(body);
  r.contentType = "text/plain";
  r.route = std::move(route);
  return r;
}

// Echoes what it was asked: "METHOD target ?query body".
Handler echo() {
  return [](const ServerRequest& r) -> asio::awaitable<ServerResponse> {
    co_return text(r.method + " " + r.target + " ?" + r.query + " " + r.body);
  };
}

ServerOptions quick() {
  ServerOptions o;
  o.port = 0;
  o.readTimeout = 2s;
  o.idleTimeout = 2s;
  o.writeTimeout = 2s;
  o.stopGrace = 2s;
  o.closeLinger = 300ms;
  return o;
}

// A started server whose io_context runs on a thread of its own (declare the io_context, and
// what the handler uses, before the rig); it keeps the log lines.
class ServerRig {
 public:
  ServerRig(asio::io_context& context, ServerOptions options, Handler handler,
            const std::function<void(HttpServer&)>& beforeRun = {})
      : io(context), server_(io.get_executor(), logInto(std::move(options)), std::move(handler)) {
    const auto started = server_.start();
    REQUIRE(started.ok());
    if (beforeRun) beforeRun(server_);
    thread_ = std::thread([this] { io.run(); });
  }
  ~ServerRig() {
    if (thread_.joinable()) stop();
  }

  std::uint16_t port() const { return server_.port(); }

  // Stops the server and waits for the stop to end; how long it took (kPatience: it did
  // not end).
  std::chrono::milliseconds stop() {
    const auto begun = Clock::now();
    return waitStopped(beginStop(), begun);
  }

  // Begins the stop; the future is ready once it ended.
  std::future<void> beginStop() {
    auto done = std::make_shared<std::promise<void>>();
    server_.stop([done] { done->set_value(); });
    return done->get_future();
  }

  // Waits for the stop, and for the io_context's thread to end; how long since `begun`.
  std::chrono::milliseconds waitStopped(std::future<void> done, Clock::time_point begun) {
    const bool ended = done.wait_for(kPatience) == std::future_status::ready;
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - begun);
    if (!ended) io.stop();
    thread_.join();  // io.run() returns: the server left no work behind
    return ended ? took : std::chrono::milliseconds(kPatience);
  }

  std::vector<std::string> logLines() {
    std::lock_guard lock(mutex_);
    return lines_;
  }
  std::size_t logged() { return logLines().size(); }

  asio::io_context& io;

 private:
  ServerOptions logInto(ServerOptions options) {
    options.log = [this](const RequestRecord& record) {
      std::lock_guard lock(mutex_);
      lines_.push_back(requestLogLine(record));
    };
    return options;
  }

  std::mutex mutex_;
  std::vector<std::string> lines_;
  HttpServer server_;
  std::thread thread_;
};

json::object errorOf(const Reply& reply) {
  CHECK(reply.header("Content-Type") == "application/json");
  const json::value parsed = json::parse(reply.body);
  REQUIRE(parsed.is_object());
  REQUIRE(parsed.as_object().at("error").is_object());
  const json::object error = parsed.as_object().at("error").as_object();
  CHECK(error.at("code").as_int64() == reply.status);
  CHECK(error.at("message").is_string());
  CHECK(error.at("type").is_string());
  CHECK(error.at("reason").is_string());
  return error;
}

}  // namespace

TEST_CASE("HTTP server: keep-alive serves several requests on one connection",
          "[net][http-server]") {
  std::mutex mutex;
  std::vector<ServerRequest> seen;
  asio::io_context io;
  ServerRig rig(io, quick(), [&](const ServerRequest& r) -> asio::awaitable<ServerResponse> {
    std::lock_guard lock(mutex);
    seen.push_back(r);
    co_return text(r.method + " " + r.target);
  });
  RawClient client(rig.port());
  REQUIRE(client.send(get("/v1/config?warehouse=a%20b", "X-Mixed-Case: yes\r\n")));
  auto first = client.read();
  REQUIRE(first);
  CHECK(first->status == 200);
  CHECK(first->body == "GET /v1/config");
  CHECK(first->header("Connection") != "close");
  CHECK(first->header("Content-Type") == "text/plain");

  // HEAD: the length of the body it would have, no body (else the next read would break).
  REQUIRE(client.send("HEAD /h HTTP/1.1\r\nHost: test\r\n\r\n"));
  auto head = client.read(true);
  REQUIRE(head);
  CHECK(head->header("Content-Length") == "7");

  REQUIRE(client.send(post("/v1/tables", "{\"a\":1}")));
  auto second = client.read();
  REQUIRE(second);
  CHECK(second->body == "POST /v1/tables");

  std::lock_guard lock(mutex);
  REQUIRE(seen.size() == 3);
  CHECK(seen[0].query == "warehouse=a%20b");
  REQUIRE(seen[0].header("x-mixed-case") != nullptr);
  CHECK(*seen[0].header("X-MIXED-CASE") == "yes");
  CHECK(seen[0].header("absent") == nullptr);
  CHECK(seen[2].body == "{\"a\":1}");
  CHECK(seen[0].remote == seen[2].remote);  // one connection
  CHECK(seen[0].remote.starts_with("127.0.0.1:"));
}

TEST_CASE("HTTP server: pipelined requests are answered in order", "[net][http-server]") {
  asio::io_context io;
  ServerRig rig(io, quick(), echo());
  RawClient client(rig.port());
  // Three requests in one write; the second has a body, the third asks for 100-continue.
  REQUIRE(client.send(get("/one") + post("/two", "2222") +
                      "PUT /three HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n"
                      "Content-Length: 1\r\n\r\n3"));
  auto one = client.read();
  auto two = client.read();
  auto proceed = client.read();
  auto three = client.read();
  REQUIRE((one && two && proceed && three));
  CHECK(one->body == "GET /one ? ");
  CHECK(two->body == "POST /two ? 2222");
  CHECK(proceed->status == 100);
  CHECK(three->body == "PUT /three ? 3");
}

TEST_CASE("HTTP server: a body over the bound gets 413 and the connection closes",
          "[net][http-server]") {
  asio::io_context io;
  ServerOptions options = quick();
  options.maxBodyBytes = 1024;
  std::atomic<int> calls{0};
  ServerRig rig(io, options, [&](const ServerRequest&) -> asio::awaitable<ServerResponse> {
    ++calls;
    co_return text("ok");
  });
  RawClient client(rig.port());
  SECTION("declared by Content-Length: refused before the body is sent") {
    REQUIRE(client.send("PUT /big HTTP/1.1\r\nHost: t\r\nContent-Length: 1025\r\n\r\n"));
  }
  SECTION("chunked, refused when it passes the bound") {
    REQUIRE(client.send("PUT /big HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"));
    const std::string chunk = "200\r\n" + std::string(512, 'x') + "\r\n";
    client.send(chunk + chunk + chunk);
  }
  auto reply = client.read();
  REQUIRE(reply);
  CHECK(reply->status == 413);
  CHECK(reply->header("Connection") == "close");
  CHECK(std::string(errorOf(*reply).at("reason").as_string()) == "body-too-large");
  CHECK(client.closedWithin(2s));
  CHECK(calls == 0);

  RawClient next(rig.port());  // the server keeps serving
  REQUIRE(next.send(post("/small", std::string(1024, 'y'))));
  auto fits = next.read();
  REQUIRE(fits);
  CHECK(fits->status == 200);
}

TEST_CASE("HTTP server: a header over the bound gets 431 and the connection closes",
          "[net][http-server]") {
  asio::io_context io;
  ServerOptions options = quick();
  options.maxHeaderBytes = 2048;
  ServerRig rig(io, options, echo());
  RawClient client(rig.port());
  REQUIRE(client.send(get("/x", "X-Big: " + std::string(4096, 'h') + "\r\n")));
  auto reply = client.read();
  REQUIRE(reply);
  CHECK(reply->status == 431);
  CHECK(std::string(errorOf(*reply).at("reason").as_string()) == "header-too-large");
  CHECK(client.closedWithin(2s));

  RawClient fits(rig.port());
  REQUIRE(fits.send(get("/x", "X-Big: " + std::string(1024, 'h') + "\r\n")));
  auto ok = fits.read();
  REQUIRE(ok);
  CHECK(ok->status == 200);
}

TEST_CASE("HTTP server: beyond maxInFlight a request gets 503 with Retry-After",
          "[net][http-server]") {
  asio::io_context io;
  Gate gate(io);
  ServerOptions options = quick();
  options.maxInFlight = 2;
  ServerRig rig(io, options, [&](const ServerRequest& r) -> asio::awaitable<ServerResponse> {
    co_await gate.pass();
    co_return text("released " + r.target);
  });
  RawClient a(rig.port());
  RawClient b(rig.port());
  RawClient c(rig.port());
  REQUIRE(a.send(get("/a")));
  REQUIRE(b.send(get("/b")));
  REQUIRE(eventually([&] { return gate.entered() == 2; }));
  REQUIRE(c.send(get("/c")));
  auto busy = c.read();
  REQUIRE(busy);
  CHECK(busy->status == 503);
  CHECK(busy->header("Retry-After") == "1");
  CHECK(std::string(errorOf(*busy).at("reason").as_string()) == "too-many-requests");
  CHECK(gate.entered() == 2);  // it never reached the handler

  gate.release();
  auto ra = a.read();
  auto rb = b.read();
  REQUIRE((ra && rb));
  CHECK(ra->body == "released /a");
  CHECK(rb->body == "released /b");
  REQUIRE(c.send(get("/c")));  // the connection stayed open; there is room now
  auto again = c.read();
  REQUIRE(again);
  CHECK(again->status == 200);
}

TEST_CASE("HTTP server: beyond maxConnections a connection gets 503 with Retry-After and closes",
          "[net][http-server]") {
  asio::io_context io;
  Gate gate(io);
  ServerOptions options = quick();
  options.maxConnections = 2;
  ServerRig rig(io, options, [&](const ServerRequest& r) -> asio::awaitable<ServerResponse> {
    if (r.target == "/slow") co_await gate.pass();
    co_return text("done " + r.target);
  });
  auto a = std::make_unique<RawClient>(rig.port());
  RawClient b(rig.port());
  for (RawClient* client : {a.get(), &b}) {  // both busy: neither is idle, neither gives way
    REQUIRE(client->send(get("/slow")));
  }
  REQUIRE(eventually([&] { return gate.entered() == 2; }));
  RawClient c(rig.port());
  REQUIRE(c.send(get("/c")));
  auto refusal = c.read();
  REQUIRE(refusal);
  CHECK(refusal->status == 503);
  CHECK(refusal->header("Retry-After") == "1");
  CHECK(refusal->header("Connection") == "close");
  CHECK(std::string(errorOf(*refusal).at("reason").as_string()) == "too-many-connections");
  CHECK(c.closedWithin(2s));

  gate.release();
  a.reset();  // a slot frees: a new connection is served again
  CHECK(eventually([&] {
    RawClient d(rig.port());
    auto r = d.send(get("/d")) ? d.read() : std::nullopt;
    return r && r->status == 200;
  }));
}

TEST_CASE("HTTP server: a client stalled mid-request gets 408 after readTimeout",
          "[net][http-server]") {
  asio::io_context io;
  ServerOptions options = quick();
  options.readTimeout = 300ms;
  options.idleTimeout = 5s;
  ServerRig rig(io, options, echo());
  RawClient client(rig.port());
  const auto begun = Clock::now();
  SECTION("in the header") { REQUIRE(client.send("GET /slow HTTP/1.1\r\nHost: t\r\n")); }
  SECTION("in the body") {
    REQUIRE(client.send("PUT /slow HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n0123456789"));
  }
  auto reply = client.read();
  const auto took = Clock::now() - begun;
  REQUIRE(reply);
  CHECK(reply->status == 408);
  CHECK(std::string(errorOf(*reply).at("reason").as_string()) == "read-timeout");
  CHECK(took >= 250ms);
  CHECK(took < 2s);
  CHECK(client.closedWithin(2s));
}

TEST_CASE("HTTP server: an idle kept-alive connection is closed silently after idleTimeout",
          "[net][http-server]") {
  asio::io_context io;
  ServerOptions options = quick();
  options.idleTimeout = 300ms;
  options.readTimeout = 5s;
  ServerRig rig(io, options, echo());
  RawClient client(rig.port());
  REQUIRE(client.send(get("/once")));
  REQUIRE(client.read());
  const auto begun = Clock::now();
  CHECK(client.closedWithin(3s));
  const auto took = Clock::now() - begun;
  CHECK(took >= 250ms);
  CHECK(took < 2s);
  CHECK(client.received().empty());  // not a byte: no 408 for a connection between requests
}

TEST_CASE("HTTP server: a handler that throws gives 500 with the Iceberg error envelope",
          "[net][http-server]") {
  asio::io_context io;
  ServerRig rig(io, quick(), [](const ServerRequest& r) -> asio::awaitable<ServerResponse> {
    if (r.target == "/boom") throw std::runtime_error("secret internal detail /etc/cairn/key");
    co_return text("fine");
  });
  RawClient client(rig.port());
  REQUIRE(client.send(get("/boom")));
  auto reply = client.read();
  REQUIRE(reply);
  CHECK(reply->status == 500);
  const json::object error = errorOf(*reply);
  CHECK(std::string(error.at("type").as_string()) == "InternalServerError");
  CHECK(reply->body.find("secret") == std::string::npos);
  CHECK(reply->body.find("/etc") == std::string::npos);
  REQUIRE(client.send(get("/fine")));  // the connection goes on
  auto next = client.read();
  REQUIRE(next);
  CHECK(next->body == "fine");
}

TEST_CASE("HTTP server: a graceful stop lets in-flight requests finish and refuses new ones",
          "[net][http-server]") {
  asio::io_context io;
  Gate gate(io);
  ServerOptions options = quick();
  options.stopGrace = 3s;
  ServerRig rig(io, options, [&](const ServerRequest& r) -> asio::awaitable<ServerResponse> {
    if (r.target == "/slow") co_await gate.pass();
    co_return text("done " + r.target);
  });
  RawClient idle(rig.port());
  REQUIRE(idle.send(get("/fast")));
  REQUIRE(idle.read());
  RawClient partial(rig.port());
  REQUIRE(partial.send("GET /late HTTP/1.1\r\nHost: t\r\n"));  // mid-request when the stop comes
  RawClient busy(rig.port());
  REQUIRE(busy.send(get("/slow")));
  REQUIRE(eventually([&] { return gate.entered() == 1; }));
  std::this_thread::sleep_for(100ms);  // (the server has read the partial request's bytes)

  const auto begun = Clock::now();
  auto stopped = rig.beginStop();
  CHECK(eventually([&] { return refused(rig.port()); }, 2s));
  CHECK(idle.closedWithin(2s));
  CHECK(idle.received().empty());
  REQUIRE(partial.send("\r\n"));
  auto late = partial.read();
  REQUIRE(late);
  CHECK(late->status == 503);
  CHECK(late->header("Connection") == "close");
  CHECK(std::string(errorOf(*late).at("reason").as_string()) == "stopping");
  CHECK(partial.closedWithin(2s));

  gate.release();
  auto finished = busy.read();
  REQUIRE(finished);
  CHECK(finished->status == 200);
  CHECK(finished->body == "done /slow");
  CHECK(finished->header("Connection") == "close");
  CHECK(busy.closedWithin(2s));
  CHECK(rig.waitStopped(std::move(stopped), begun) < 3s);
}

TEST_CASE("HTTP server: after stopGrace the stop cancels the handler and closes the connection",
          "[net][http-server]") {
  asio::io_context io;
  Gate gate(io);  // never released
  ServerOptions options = quick();
  options.stopGrace = 300ms;
  ServerRig rig(io, options, [&](const ServerRequest&) -> asio::awaitable<ServerResponse> {
    co_await gate.pass();
    co_return text("too late");
  });
  RawClient busy(rig.port());
  REQUIRE(busy.send(get("/forever")));
  REQUIRE(eventually([&] { return gate.entered() == 1; }));
  const auto took = rig.stop();
  CHECK(took >= 250ms);
  CHECK(took < 2s);
  CHECK(gate.passed() == 1);  // the handler saw the cancellation and ended
  CHECK(busy.closedWithin(1s));
  CHECK(busy.received().empty());
}

TEST_CASE("HTTP server: SIGTERM stops it gracefully, and a second signal ends the grace",
          "[net][http-server]") {
  // Catch2 has handlers for these signals; the server's replace them while it lives.
  struct sigaction savedTerm {};
  struct sigaction savedInt {};
  ::sigaction(SIGTERM, nullptr, &savedTerm);
  ::sigaction(SIGINT, nullptr, &savedInt);
  {
    asio::io_context io;
    Gate gate(io);
    ServerOptions options = quick();
    options.stopGrace = 10s;
    auto done = std::make_shared<std::promise<void>>();
    ServerRig rig(
        io, options,
        [&](const ServerRequest&) -> asio::awaitable<ServerResponse> {
          co_await gate.pass();
          co_return text("finished");
        },
        [&](HttpServer& server) { server.stopOnSignals([done] { done->set_value(); }); });
    RawClient busy(rig.port());
    REQUIRE(busy.send(get("/slow")));
    REQUIRE(eventually([&] { return gate.entered() == 1; }));
    const auto begun = Clock::now();
    REQUIRE(::kill(::getpid(), SIGTERM) == 0);
    CHECK(eventually([&] { return refused(rig.port()); }, 2s));
    SECTION("one signal: the request in flight finishes") {
      gate.release();
      auto reply = busy.read();
      REQUIRE(reply);
      CHECK(reply->status == 200);
      CHECK(reply->header("Connection") == "close");
    }
    SECTION("a second signal: no more grace") {
      REQUIRE(::kill(::getpid(), SIGINT) == 0);
      CHECK(busy.closedWithin(3s));
      CHECK(busy.received().empty());
    }
    // io.run() returned: a process whose main returns after it exits 0.
    CHECK(rig.waitStopped(done->get_future(), begun) < 3s);
  }
  ::sigaction(SIGTERM, &savedTerm, nullptr);
  ::sigaction(SIGINT, &savedInt, nullptr);
}

TEST_CASE("HTTP server: a process that serves until SIGTERM exits 0", "[net][http-server]") {
  int pipeFds[2];
  REQUIRE(::pipe(pipeFds) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {  // what `cairn serve` does; no Catch2 in here
    ::close(pipeFds[0]);
    asio::io_context io;
    HttpServer server(io.get_executor(), quick(), echo());
    if (!server.start().ok()) ::_exit(2);
    server.stopOnSignals();
    const std::uint16_t port = server.port();
    if (::write(pipeFds[1], &port, sizeof port) != sizeof port) ::_exit(3);
    io.run();
    ::_exit(0);
  }
  ::close(pipeFds[1]);
  std::uint16_t port = 0;
  const auto got = ::read(pipeFds[0], &port, sizeof port);
  ::close(pipeFds[0]);
  int status = -1;
  if (got == sizeof port) {
    RawClient client(port);
    REQUIRE(client.send(get("/alive")));
    auto reply = client.read();
    CHECK((reply && reply->status == 200));
    CHECK(::kill(child, SIGTERM) == 0);
    CHECK(eventually([&] { return ::waitpid(child, &status, WNOHANG) == child; }));
  }
  if (status == -1) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
  }
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("HTTP server: TLS round trip with a generated certificate", "[net][http-server]") {
  Pki pki;
  const auto files = pki.writeServerFiles("IP:127.0.0.1,DNS:localhost", 2);
  asio::io_context io;
  ServerOptions options = quick();
  options.tls = ServerTls{files.certificate, files.key};
  ServerRig rig(io, options, echo());

  asio::io_context clientIo;
  HttpClientOptions clientOptions;
  clientOptions.caFile = pki.caFile;  // verified: the client trusts only this CA
  clientOptions.maxAttempts = 1;
  HttpClient client(clientIo.get_executor(), clientOptions);
  const Endpoint endpoint =
      parseEndpoint("https://127.0.0.1:" + std::to_string(rig.port())).value();
  const std::string body = "over tls";
  for (const std::string target : {"/secure?x=1", "/again"}) {
    HttpRequest request;
    request.method = "POST";
    request.target = target;
    request.body = asBytes(body);
    request.maxResponseBody = 1024;
    auto got = runAsync(clientIo, client.request(endpoint, request));
    REQUIRE(got.ok());
    CHECK(got.value().status == 200);
    CHECK(textOf(got.value().body) == "POST " + target.substr(0, target.find('?')) + " ?" +
                                          (target == "/again" ? "" : "x=1") + " over tls");
  }
  CHECK(client.stats().connectionsOpened == 1);  // kept alive over TLS

  RawClient plain(rig.port());  // plain HTTP on the TLS port gets no HTTP answer
  plain.send(get("/"));
  CHECK(plain.closedWithin(3s));
  CHECK_FALSE(plain.received().starts_with("HTTP/"));
}

TEST_CASE("HTTP server: start reports a port in use, a bad certificate and bad options",
          "[net][http-server]") {
  asio::io_context io;
  HttpServer first(io.get_executor(), quick(), echo());
  REQUIRE(first.start().ok());
  CHECK(first.port() != 0);
  CHECK_FALSE(first.start().ok());  // once

  ServerOptions same = quick();
  same.port = first.port();
  HttpServer second(io.get_executor(), same, echo());
  auto inUse = second.start();
  REQUIRE_FALSE(inUse.ok());
  CHECK_THAT(inUse.error(),
             Catch::Contains("cannot listen on 127.0.0.1:" + std::to_string(first.port())) &&
                 Catch::Contains("in use"));

  Pki pki;
  const auto files = pki.writeServerFiles("IP:127.0.0.1", 2);
  const auto& dir = pki.dir;
  ServerOptions noCert = quick();
  noCert.tls = ServerTls{(dir / "absent.pem").string(), files.key};
  auto certError = HttpServer(io.get_executor(), noCert, echo()).start();
  REQUIRE_FALSE(certError.ok());
  CHECK_THAT(certError.error(),
             Catch::StartsWith("TLS certificate file " + noCert.tls->certificateFile));
  ServerOptions noKey = quick();
  noKey.tls = ServerTls{files.certificate, (dir / "absent.key").string()};
  auto keyError = HttpServer(io.get_executor(), noKey, echo()).start();
  REQUIRE_FALSE(keyError.ok());
  CHECK_THAT(keyError.error(), Catch::StartsWith("TLS private key file"));

  ServerOptions zero = quick();
  zero.maxInFlight = 0;
  CHECK_FALSE(HttpServer(io.get_executor(), zero, echo()).start().ok());
}

TEST_CASE("HTTP server: one JSON log line per request, without credentials or the query",
          "[net][http-server]") {
  asio::io_context io;
  ServerOptions options = quick();
  options.maxBodyBytes = 16;
  ServerRig rig(io, options, [](const ServerRequest& r) -> asio::awaitable<ServerResponse> {
    if (!r.target.starts_with("/v1/")) co_return text("unrouted", "");
    ServerResponse response = text("routed", "/v1/{prefix}/namespaces");
    response.lake = "lake-a";
    co_return response;
  });
  RawClient client(rig.port());
  REQUIRE(client.send(get("/v1/p/namespaces?token=QUERY-SECRET&x=1",
                          "Authorization: Bearer TOKEN-SECRET\r\nCookie: c=COOKIE-SECRET\r\n")));
  REQUIRE(client.read());
  REQUIRE(client.send(get("/other")));
  REQUIRE(client.read());
  RawClient big(rig.port());
  REQUIRE(big.send(post("/big", std::string(32, 'b'))));
  REQUIRE(big.read());
  REQUIRE(eventually([&] { return rig.logged() == 3; }));

  std::map<std::string, json::object> byRoute;  // route + status -> record
  for (const std::string& line : rig.logLines()) {
    INFO(line);
    CHECK(line.find("SECRET") == std::string::npos);
    CHECK(line.find("Bearer") == std::string::npos);
    CHECK(line.find("x=1") == std::string::npos);
    CHECK(line.find('\n') == std::string::npos);
    const json::object record = json::parse(line).as_object();
    for (const char* field : {"time", "method", "route", "status", "ms", "lake", "remote"}) {
      CHECK(record.contains(field));
    }
    CHECK(record.at("ms").as_double() >= 0);
    byRoute[std::string(record.at("route").as_string()) + " " +
            std::to_string(record.at("status").as_int64())] = record;
  }
  REQUIRE(byRoute.size() == 3);
  const json::object& routed = byRoute.at("/v1/{prefix}/namespaces 200");
  CHECK(routed.at("method") == "GET");
  CHECK(routed.at("lake") == "lake-a");
  CHECK(byRoute.at("unmatched 200").at("lake").is_null());
  CHECK(byRoute.at("unmatched 413").at("method") == "POST");

  // The line writer: one line each, newline-terminated.
  std::unique_ptr<std::FILE, decltype(&std::fclose)> file(std::tmpfile(), &std::fclose);
  REQUIRE(file);
  RequestRecord record{std::chrono::system_clock::now(), "GET", "", 204, 1.5, "", "peer"};
  jsonLogLines(file.get())(record);
  std::rewind(file.get());
  char line[512] = {};
  REQUIRE(std::fgets(line, sizeof line, file.get()) != nullptr);
  CHECK(std::string(line) == requestLogLine(record) + "\n");
  CHECK(json::parse(requestLogLine(record)).at("ms").as_double() == 1.5);
}

namespace {

// A handler that echoes, and keeps the targets it was given.
struct Recorder {
  std::mutex mutex;
  std::vector<std::string> targets;
  Handler handler() {
    return [this](const ServerRequest& r) -> asio::awaitable<ServerResponse> {
      {
        std::lock_guard lock(mutex);
        targets.push_back(r.target);
      }
      co_return text(r.method + " " + r.target + " ?" + r.query + " " + r.body);
    };
  }
  std::vector<std::string> seen() {
    std::lock_guard lock(mutex);
    return targets;
  }
};

// The server's own 400: the envelope, `Connection: close`, and the connection closed after.
void checkMalformedAndClosed(RawClient& client) {
  auto reply = client.read();
  REQUIRE(reply);
  CHECK(reply->status == 400);
  CHECK(reply->header("Connection") == "close");
  CHECK(std::string(errorOf(*reply).at("reason").as_string()) == "malformed-request");
  CHECK(client.closedWithin(2s));
}

}  // namespace

TEST_CASE("HTTP server: a Transfer-Encoding other than chunked alone gets 400 and a close",
          "[net][http-server]") {
  // RFC 9112 §6.1, §6.3: a proxy in front may frame such a request differently; what follows
  // the header must never be read as a request of its own.
  asio::io_context io;
  Recorder recorder;
  ServerRig rig(io, quick(), recorder.handler());
  const std::string smuggled = get("/smuggled");
  const std::string length = "Content-Length: " + std::to_string(smuggled.size()) + "\r\n";
  const std::string fields = GENERATE_COPY(
      std::string("Transfer-Encoding: gzip\r\n"), std::string("Transfer-Encoding: identity\r\n"),
      std::string("Transfer-Encoding: chunked, identity\r\n"),
      std::string("Transfer-Encoding: gzip, chunked\r\n"),
      std::string("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n"),
      "Transfer-Encoding: gzip\r\n" + length, length + "Transfer-Encoding: gzip\r\n",
      "Transfer-Encoding: chunked, identity\r\n" + length,
      "Transfer-Encoding: chunked\r\n" + length, length + "Transfer-Encoding: chunked\r\n");
  INFO(fields);
  RawClient client(rig.port());
  REQUIRE(client.send("POST /first HTTP/1.1\r\nHost: test\r\n" + fields + "\r\n" + smuggled));
  checkMalformedAndClosed(client);
  CHECK(recorder.seen().empty());  // neither the request nor its "body"
}

TEST_CASE("HTTP server: Transfer-Encoding in an HTTP/1.0 request gets 400 and a close",
          "[net][http-server]") {
  asio::io_context io;
  Recorder recorder;
  ServerRig rig(io, quick(), recorder.handler());
  RawClient client(rig.port());
  REQUIRE(
      client.send("POST /first HTTP/1.0\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "0\r\n\r\n" +
                  get("/smuggled")));
  checkMalformedAndClosed(client);
  CHECK(recorder.seen().empty());
}

TEST_CASE("HTTP server: Host is required once and valid (RFC 9112 §3.2)", "[net][http-server]") {
  asio::io_context io;
  Recorder recorder;
  ServerRig rig(io, quick(), recorder.handler());
  SECTION("refused") {
    const std::string head = GENERATE(std::string("GET /x HTTP/1.1\r\n"),
                                      std::string("GET /x HTTP/1.1\r\nHost: a\r\nHost: a\r\n"),
                                      std::string("GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n"),
                                      std::string("GET /x HTTP/1.1\r\nHost: a b\r\n"),
                                      std::string("GET /x HTTP/1.1\r\nHost: exa/mple\r\n"),
                                      std::string("GET /x HTTP/1.1\r\nHost: [::1\r\n"),
                                      std::string("GET /x HTTP/1.1\r\nHost: host:80x\r\n"),
                                      std::string("GET /x HTTP/1.1\r\nHost: user@host\r\n"),
                                      std::string("GET /x HTTP/1.0\r\nHost: a\r\nHost: b\r\n"));
    INFO(head);
    RawClient client(rig.port());
    REQUIRE(client.send(head + "\r\n"));
    checkMalformedAndClosed(client);
    CHECK(recorder.seen().empty());
  }
  SECTION("served") {
    const std::string head = GENERATE(
        std::string("GET /x HTTP/1.0\r\n"), std::string("GET /x HTTP/1.1\r\nHost: [::1]:8181\r\n"),
        std::string("GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\n"),
        std::string("GET /x HTTP/1.1\r\nHost: ca-irn_1.example:80\r\n"));
    INFO(head);
    RawClient client(rig.port());
    REQUIRE(client.send(head + "\r\n"));
    auto reply = client.read();
    REQUIRE(reply);
    CHECK(reply->status == 200);
    CHECK(reply->body == "GET /x ? ");
  }
}

TEST_CASE("HTTP server: an absolute-form target is served by its path and query",
          "[net][http-server]") {
  asio::io_context io;
  Recorder recorder;
  ServerRig rig(io, quick(), recorder.handler());
  RawClient client(rig.port());
  REQUIRE(client.send(get("http://test:8181/v1/config?warehouse=a%20b")));
  auto full = client.read();
  REQUIRE(full);
  CHECK(full->status == 200);
  CHECK(full->body == "GET /v1/config ?warehouse=a%20b ");
  REQUIRE(client.send(get("HTTPS://test")));
  auto root = client.read();
  REQUIRE(root);
  CHECK(root->body == "GET / ? ");

  RawClient relative(rig.port());  // neither origin-form nor absolute-form
  REQUIRE(relative.send(get("v1/config")));
  checkMalformedAndClosed(relative);
  CHECK(recorder.seen() == std::vector<std::string>{"/v1/config", "/"});
}

TEST_CASE("HTTP server: when every connection is taken, the oldest idle one gives its place",
          "[net][http-server]") {
  asio::io_context io;
  ServerOptions options = quick();
  options.maxConnections = 3;
  options.idleTimeout = 10s;  // far beyond the waits below: no connection leaves by itself
  ServerRig rig(io, options, echo());
  RawClient silent(rig.port());  // accepted, never a byte
  std::this_thread::sleep_for(100ms);
  RawClient a(rig.port());
  RawClient b(rig.port());
  for (RawClient* client : {&a, &b}) {  // served, then idle between requests
    REQUIRE(client->send(get("/x")));
    REQUIRE(client->read());
  }
  auto answeredWithin = [&](RawClient& client, const std::string& target) {
    const auto begun = Clock::now();
    auto reply = client.send(get(target)) ? client.read() : std::nullopt;
    CHECK(Clock::now() - begun < 3s);  // far from idleTimeout
    return reply && reply->status == 200;
  };
  RawClient health(rig.port());
  CHECK(answeredWithin(health, "/healthz"));
  CHECK(silent.closedWithin(1s));  // the oldest
  CHECK(silent.received().empty());
  RawClient next(rig.port());
  CHECK(answeredWithin(next, "/healthz"));
  CHECK(a.closedWithin(1s));  // then the next oldest
  CHECK(a.received().empty());
  CHECK(answeredWithin(b, "/still-here"));
}

TEST_CASE("HTTP server: one address holds at most maxConnectionsPerAddress connections",
          "[net][http-server]") {
  asio::io_context io;
  Gate gate(io);
  ServerOptions options = quick();
  options.maxConnections = 8;
  options.maxConnectionsPerAddress = 2;
  options.idleTimeout = 10s;
  ServerRig rig(io, options, [&](const ServerRequest& r) -> asio::awaitable<ServerResponse> {
    if (r.target == "/slow") co_await gate.pass();
    co_return text("done " + r.target);
  });
  RawClient a(rig.port());
  RawClient b(rig.port());
  for (RawClient* client : {&a, &b}) {
    REQUIRE(client->send(get("/x")));
    REQUIRE(client->read());
  }
  // A third from the same address takes the place of its own oldest idle connection.
  RawClient c(rig.port());
  REQUIRE(c.send(get("/x")));
  auto served = c.read();
  REQUIRE(served);
  CHECK(served->status == 200);
  CHECK(a.closedWithin(1s));
  CHECK(a.received().empty());

  // With both of its connections busy, the address is refused; another address is not.
  REQUIRE(b.send(get("/slow")));
  REQUIRE(c.send(get("/slow")));
  REQUIRE(eventually([&] { return gate.entered() == 2; }));
  RawClient d(rig.port());
  REQUIRE(d.send(get("/x")));
  auto refusal = d.read();
  REQUIRE(refusal);
  CHECK(refusal->status == 503);
  CHECK(refusal->header("Connection") == "close");
  CHECK(std::string(errorOf(*refusal).at("reason").as_string()) == "too-many-connections");
  RawClient other(rig.port(), "127.0.0.2");
  REQUIRE(other.send(get("/x")));
  auto elsewhere = other.read();
  REQUIRE(elsewhere);
  CHECK(elsewhere->status == 200);
  gate.release();
  CHECK(b.read());
  CHECK(c.read());
}

TEST_CASE("HTTP server: a probe target is answered when every connection is busy",
          "[net][http-server]") {
  asio::io_context io;
  Gate gate(io);
  ServerOptions options = quick();
  options.maxConnections = 2;
  options.probeTargets = {"/healthz"};
  std::atomic<int> probes{0};
  ServerRig rig(io, options, [&](const ServerRequest& r) -> asio::awaitable<ServerResponse> {
    if (r.target == "/slow") co_await gate.pass();
    if (r.target == "/healthz") ++probes;
    co_return text("done " + r.target);
  });
  RawClient a(rig.port());
  RawClient b(rig.port());
  REQUIRE(a.send(get("/slow")));
  REQUIRE(b.send(get("/slow")));
  REQUIRE(eventually([&] { return gate.entered() == 2; }));
  RawClient probe(rig.port());
  REQUIRE(probe.send(get("/healthz")));
  auto live = probe.read();
  REQUIRE(live);
  CHECK(live->status == 200);
  CHECK(live->body == "done /healthz");
  CHECK(live->header("Connection") == "close");
  CHECK(probe.closedWithin(2s));
  RawClient other(rig.port());
  REQUIRE(other.send(get("/other")));
  auto refusal = other.read();
  REQUIRE(refusal);
  CHECK(refusal->status == 503);
  CHECK(std::string(errorOf(*refusal).at("reason").as_string()) == "too-many-connections");
  CHECK(probes == 1);
  gate.release();
  CHECK(a.read());
  CHECK(b.read());
}

TEST_CASE("HTTP server: a probe target is answered beyond maxInFlight", "[net][http-server]") {
  asio::io_context io;
  Gate gate(io);
  ServerOptions options = quick();
  options.maxInFlight = 1;
  options.probeTargets = {"/healthz"};
  ServerRig rig(io, options, [&](const ServerRequest& r) -> asio::awaitable<ServerResponse> {
    if (r.target == "/slow") co_await gate.pass();
    co_return text("done " + r.target);
  });
  RawClient busy(rig.port());
  REQUIRE(busy.send(get("/slow")));
  REQUIRE(eventually([&] { return gate.entered() == 1; }));
  RawClient client(rig.port());
  REQUIRE(client.send(get("/healthz")));
  auto live = client.read();
  REQUIRE(live);
  CHECK(live->status == 200);
  REQUIRE(client.send(get("/other")));
  auto refusal = client.read();
  REQUIRE(refusal);
  CHECK(refusal->status == 503);
  CHECK(std::string(errorOf(*refusal).at("reason").as_string()) == "too-many-requests");
  gate.release();
  CHECK(busy.read());
}

TEST_CASE("HTTP server: the header check answers before 100 Continue and before the body",
          "[net][http-server]") {
  asio::io_context io;
  ServerOptions options = quick();
  // The check runs on the server's thread: it counts what it saw, the test thread asserts
  // (Catch's assertions are not thread-safe).
  std::atomic<int> headsWithBody{0};
  options.headerCheck = [&headsWithBody](const ServerRequest& r) -> std::optional<ServerResponse> {
    if (!r.body.empty()) ++headsWithBody;
    const std::string* auth = r.header("Authorization");
    if (auth != nullptr && *auth == "Bearer good") return std::nullopt;
    return jsonError(401, "NotAuthorizedException", "missing-token", "no");
  };
  options.readTimeout = 10s;
  std::atomic<int> calls{0};
  ServerRig rig(io, options, [&](const ServerRequest& r) -> asio::awaitable<ServerResponse> {
    ++calls;
    co_return text("handled " + r.body);
  });
  const std::string head = "PUT /x HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n";
  SECTION("Expect: 100-continue: no 100, the answer, and a close") {
    RawClient client(rig.port());
    REQUIRE(client.send(head + "Expect: 100-continue\r\n\r\n"));
    auto reply = client.read();
    REQUIRE(reply);
    CHECK(reply->status == 401);
    CHECK(reply->header("Connection") == "close");
    CHECK(client.closedWithin(2s));
    CHECK(calls == 0);
  }
  SECTION("a body announced and not sent: the answer comes without it") {
    RawClient client(rig.port());
    REQUIRE(client.send(head + "\r\n"));
    const auto begun = Clock::now();
    auto reply = client.read();
    REQUIRE(reply);
    CHECK(reply->status == 401);
    CHECK(Clock::now() - begun < 3s);  // not readTimeout's 408
    CHECK(client.closedWithin(2s));
    CHECK(calls == 0);
  }
  SECTION("no body: the connection stays open") {
    RawClient client(rig.port());
    REQUIRE(client.send(get("/x")));
    auto refusal = client.read();
    REQUIRE(refusal);
    CHECK(refusal->status == 401);
    CHECK(refusal->header("Connection") != "close");
    CHECK(calls == 0);
    REQUIRE(client.send(get("/x", "Authorization: Bearer good\r\n")));
    auto served = client.read();
    REQUIRE(served);
    CHECK(served->status == 200);
  }
  SECTION("admitted: 100 Continue, then the body, then the handler") {
    RawClient client(rig.port());
    REQUIRE(client.send(
        "PUT /x HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer good\r\nContent-Length: 4\r\n"
        "Expect: 100-continue\r\n\r\n"));
    auto proceed = client.read();
    REQUIRE(proceed);
    CHECK(proceed->status == 100);
    REQUIRE(client.send("body"));
    auto served = client.read();
    REQUIRE(served);
    CHECK(served->body == "handled body");
    CHECK(calls == 1);
  }
  CHECK(headsWithBody == 0);
}
