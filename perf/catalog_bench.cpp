// cairn_catalog_bench: the catalog's request rate beside the store's own limit for the same
// request pattern, at the same concurrency; one JSON object on stdout. perf/run_catalog.py
// drives it (docs/performance.md, "The catalog").
//
//   raw-commit  what a commit needs of the store, done directly with cairn's S3 client: per
//               operation a GET of a shared 256-byte "lake head", a GET of the worker's own
//               "table head" (its ETag kept), four PUTs at once (a metadata file of
//               --metadata-bytes, a segment of --segment-bytes, a manifest of --manifest-bytes,
//               a 256-byte head copy; new keys each time), then the conditional PUT (If-Match)
//               of the table head. Workers have a table head each (independent tables).
//   raw-load    what a load needs: the two head GETs, one after the other (--one-table: all
//               workers read the same table head, as loads of one table do).
//   commit      table commits through `cairn serve` (--endpoints: worker w always uses the
//               (w mod count)th, as a client with its own connection does): a
//               set-properties of the worker's own key, no requirement, on table
//               --tables[worker % count] (one table for all: a shared table, whose commits race
//               and rebase; one per worker: independent tables).
//   load        table loads through `cairn serve`: GET of --tables[random].
//
// Each worker is a coroutine on one io_context with its own keep-alive connection (catalog)
// or the S3 client's pool (raw); it runs for --seconds. Reported: operations per second
// (counting only those answered 200 or, raw, whose every request succeeded), p50/p99 latency
// of those in milliseconds, and the count of each HTTP status or failure.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "base/bytes.hpp"
#include "net/s3/s3_client.hpp"
#include "perf/s3_env.hpp"

namespace {

using namespace cairn;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using namespace asio::experimental::awaitable_operators;
using Clock = std::chrono::steady_clock;
using tcp = asio::ip::tcp;

constexpr unsigned kMaxConcurrency = 1024;
constexpr std::size_t kMaxBodyBytes = std::size_t{64} << 20;

struct Options {
  std::string mode;
  unsigned concurrency = 1;
  double seconds = 10;
  std::string prefix = "cairn-catalog-bench";
  std::uint64_t metadataBytes = 2048;
  std::uint64_t segmentBytes = 400;
  std::uint64_t manifestBytes = 700;
  std::vector<std::string> endpoints;  // host:port
  std::string token;
  std::vector<std::string> tables;  // request paths: /v1/LAKE/namespaces/NS/tables/T
  bool oneTable = false;            // raw: every worker uses worker 0's table head
};

struct Results {
  std::vector<double> latenciesMs;  // of the operations that succeeded
  std::map<std::string, std::uint64_t> outcomes;
  std::string firstError;
  void failed(const std::string& what, const std::string& detail) {
    ++outcomes[what];
    if (firstError.empty()) firstError = what + ": " + detail;
  }
};

std::string fmt(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

double sinceMs(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

Bytes randomBytes(std::size_t n, std::mt19937_64& random) {
  Bytes b(n);
  for (auto& x : b) x = static_cast<std::uint8_t>(random());
  return b;
}

// ---- the raw store pattern

struct Raw {
  const Options* opt = nullptr;
  net::S3Client* client = nullptr;
  Clock::time_point deadline;
  Results results;
  Bytes head, metadata, segment, manifest;
};

// (Keys and options by reference to the caller's named objects: GCC 12 destroys a temporary
// made in a co_await operand twice, docs/decisions/0037-fan-out-through-taskgroup.md.)
asio::awaitable<bool> put(Raw& raw, const std::string& key, const Bytes& body,
                          const net::PutOptions& options) {
  std::string k = key;
  net::PutOptions o = options;
  const ByteView view(body);
  net::S3Object r = co_await raw.client->put(std::move(k), view, std::move(o));
  if (!r.outcome.ok()) raw.results.failed("put", r.outcome.message);
  co_return r.outcome.ok();
}

asio::awaitable<void> rawWorker(Raw& raw, unsigned w) {
  const std::string base = raw.opt->prefix + "/w" + std::to_string(w) + "/";
  const std::string lakeHead = raw.opt->prefix + "/lake.head";
  const std::string tableHead =
      (raw.opt->oneTable ? raw.opt->prefix + "/w0/" : base) + "table.head";
  const net::PutOptions plain;
  if (!co_await put(raw, tableHead, raw.head, plain)) co_return;
  const bool commit = raw.opt->mode == "raw-commit";
  for (std::uint64_t n = 0; Clock::now() < raw.deadline; ++n) {
    const auto start = Clock::now();
    std::string lakeKey = lakeHead, tableKey = tableHead;
    net::S3Object lake = co_await raw.client->get(std::move(lakeKey), 4096);
    net::S3Object table = co_await raw.client->get(std::move(tableKey), 4096);
    if (!lake.outcome.ok() || !table.outcome.ok()) {
      raw.results.failed("get", lake.outcome.ok() ? table.outcome.message : lake.outcome.message);
      continue;
    }
    if (commit) {
      const std::string n_ = std::to_string(n);
      const std::string m = base + "m-" + n_, s = base + "s-" + n_, f = base + "f-" + n_,
                        h = base + "h-" + n_;
      auto [a, b, c, d] =
          co_await (put(raw, m, raw.metadata, plain) && put(raw, s, raw.segment, plain) &&
                    put(raw, f, raw.manifest, plain) && put(raw, h, raw.head, plain));
      if (!(a && b && c && d)) continue;
      net::PutOptions cas;
      cas.condition = net::PutCondition::ifMatch;
      cas.etag = table.etag;
      if (!co_await put(raw, tableHead, raw.head, cas)) continue;
    }
    raw.results.latenciesMs.push_back(sinceMs(start));
    ++raw.results.outcomes["ok"];
  }
}

// ---- the catalog over HTTP

struct Catalog {
  const Options* opt = nullptr;
  Clock::time_point deadline;
  Results results;
};

struct Connection {
  beast::tcp_stream stream;
  std::string endpoint;
  explicit Connection(asio::any_io_executor e) : stream(std::move(e)) {}
};

// One request on `c` (connected again when needed): the status, or 0 when the exchange failed.
asio::awaitable<unsigned> exchange(Connection& c, const std::string& endpoint,
                                   http::request<http::string_body>& req, std::string& body) {
  constexpr auto tuple = asio::as_tuple(asio::use_awaitable);
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (c.endpoint != endpoint || !c.stream.socket().is_open()) {
      c.stream.close();
      const auto colon = endpoint.rfind(':');
      tcp::endpoint where(asio::ip::make_address(endpoint.substr(0, colon)),
                          static_cast<std::uint16_t>(std::stoul(endpoint.substr(colon + 1))));
      c.stream.expires_after(std::chrono::seconds(60));
      auto [ec] = co_await c.stream.async_connect(where, tuple);
      if (ec) co_return 0;
      c.endpoint = endpoint;
    }
    c.stream.expires_after(std::chrono::seconds(60));
    auto [wec, wn] = co_await http::async_write(c.stream, req, tuple);
    if (wec) {
      c.stream.close();
      continue;  // a keep-alive connection the server closed: once more on a new one
    }
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxBodyBytes);
    auto [rec, rn] = co_await http::async_read(c.stream, buffer, parser, tuple);
    if (rec) {
      c.stream.close();
      co_return 0;
    }
    auto res = parser.release();
    if (!res.keep_alive()) c.stream.close();
    body = std::move(res.body());
    co_return res.result_int();
  }
  co_return 0;
}

asio::awaitable<void> catalogWorker(Catalog& cat, unsigned w, std::uint64_t seed) {
  Connection c(co_await asio::this_coro::executor);
  std::mt19937_64 random(seed);
  const Options& o = *cat.opt;
  const bool commit = o.mode == "commit";
  std::string body;
  for (std::uint64_t n = 0; Clock::now() < cat.deadline; ++n) {
    const std::string& endpoint = o.endpoints[w % o.endpoints.size()];
    const std::string& table =
        commit ? o.tables[w % o.tables.size()] : o.tables[random() % o.tables.size()];
    http::request<http::string_body> req{commit ? http::verb::post : http::verb::get, table, 11};
    req.set(http::field::host, endpoint);
    req.set(http::field::authorization, "Bearer " + o.token);
    if (commit) {
      req.set(http::field::content_type, "application/json");
      req.body() = R"({"requirements":[],"updates":[{"action":"set-properties","updates":{"w)" +
                   std::to_string(w) + R"(":")" + std::to_string(n) + R"("}}]})";
    }
    req.prepare_payload();
    const auto start = Clock::now();
    const unsigned status = co_await exchange(c, endpoint, req, body);
    if (status == 200) {
      cat.results.latenciesMs.push_back(sinceMs(start));
      ++cat.results.outcomes["200"];
    } else {
      cat.results.failed(status == 0 ? "no-answer" : std::to_string(status), body.substr(0, 300));
    }
  }
}

std::vector<std::string> splitCommas(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  std::string endpoints, tables;
  CLI::App app{"cairn_catalog_bench: catalog requests beside the raw store pattern (JSON)"};
  app.add_option("mode", opt.mode, "raw-commit, raw-load, commit or load")
      ->required()
      ->check(CLI::IsMember({"raw-commit", "raw-load", "commit", "load"}));
  app.add_option("--concurrency", opt.concurrency, "workers")
      ->check(CLI::Range(1u, kMaxConcurrency));
  app.add_option("--seconds", opt.seconds, "how long to run")->check(CLI::Range(0.1, 86400.0));
  app.add_option("--prefix", opt.prefix, "raw: key prefix in the bucket");
  app.add_option("--metadata-bytes", opt.metadataBytes, "raw-commit: the metadata file's size")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{64} << 20));
  app.add_option("--segment-bytes", opt.segmentBytes, "raw-commit: the segment's size")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{64} << 20));
  app.add_option("--manifest-bytes", opt.manifestBytes, "raw-commit: the manifest's size")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{64} << 20));
  app.add_option("--endpoints", endpoints, "catalog: HOST:PORT[,HOST:PORT...]");
  app.add_option("--token", opt.token, "catalog: bearer token");
  app.add_option("--tables", tables, "catalog: table paths, comma-separated");
  app.add_flag("--one-table", opt.oneTable,
               "raw-load: every worker reads the same table head (as loads of one table do)");
  CLI11_PARSE(app, argc, argv);
  opt.endpoints = splitCommas(endpoints);
  opt.tables = splitCommas(tables);
  const bool raw = opt.mode.rfind("raw-", 0) == 0;
  if (!raw && (opt.endpoints.empty() || opt.tables.empty() || opt.token.empty())) {
    std::fprintf(stderr, "catalog_bench: %s needs --endpoints, --tables and --token\n",
                 opt.mode.c_str());
    return 2;
  }

  asio::io_context context(1);
  const auto duration =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt.seconds));
  Results* results = nullptr;
  Raw rawRun;
  Catalog catRun;
  std::unique_ptr<net::S3Client> client;
  unsigned crashed = 0;
  const auto onExit = [&](std::exception_ptr e) {
    if (e) ++crashed;
  };
  Clock::time_point start;
  if (raw) {
    net::S3Config config = perf::s3ConfigFromEnv("rgw");
    config.maxConnections = 4 * opt.concurrency;
    auto made = net::S3Client::create(context.get_executor(), config);
    if (!made) {
      std::fprintf(stderr, "catalog_bench: S3 config: %s\n", made.error().c_str());
      return 2;
    }
    client = std::move(*made);
    std::mt19937_64 random(1);
    rawRun.opt = &opt;
    rawRun.client = client.get();
    rawRun.head = randomBytes(256, random);
    rawRun.metadata = randomBytes(opt.metadataBytes, random);
    rawRun.segment = randomBytes(opt.segmentBytes, random);
    rawRun.manifest = randomBytes(opt.manifestBytes, random);
    results = &rawRun.results;
    // The shared lake head, before the clock starts.
    bool made_ = false;
    asio::co_spawn(
        context,
        [&]() -> asio::awaitable<void> {
          const std::string key = opt.prefix + "/lake.head";
          const net::PutOptions plain;
          made_ = co_await put(rawRun, key, rawRun.head, plain);
        },
        onExit);
    context.run();
    context.restart();
    if (!made_) {
      std::fprintf(stderr, "catalog_bench: %s\n", rawRun.results.firstError.c_str());
      return 1;
    }
    start = Clock::now();
    rawRun.deadline = start + duration;
    for (unsigned w = 0; w < opt.concurrency; ++w) {
      asio::co_spawn(context, rawWorker(rawRun, w), onExit);
    }
  } else {
    catRun.opt = &opt;
    results = &catRun.results;
    start = Clock::now();
    catRun.deadline = start + duration;
    for (unsigned w = 0; w < opt.concurrency; ++w) {
      asio::co_spawn(context, catalogWorker(catRun, w, 1000 + w), onExit);
    }
  }
  context.run();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const auto ok = static_cast<double>(results->latenciesMs.size());
  std::string json =
      "{\"mode\": \"" + opt.mode + "\", \"concurrency\": " + std::to_string(opt.concurrency) +
      ", \"seconds\": " + fmt(seconds) + ", \"ops\": " + fmt(ok) +
      ", \"per_second\": " + fmt(ok / seconds) +
      ", \"p50_ms\": " + fmt(percentile(results->latenciesMs, 0.50)) +
      ", \"p99_ms\": " + fmt(percentile(results->latenciesMs, 0.99)) + ", \"outcomes\": {";
  bool first = true;
  for (const auto& [name, n] : results->outcomes) {
    json += (first ? "\"" : ", \"") + name + "\": " + std::to_string(n);
    first = false;
  }
  json += "}, \"crashed\": " + std::to_string(crashed) + "}";
  std::printf("%s\n", json.c_str());
  if (!results->firstError.empty()) {
    std::fprintf(stderr, "catalog_bench: first failure: %s\n", results->firstError.c_str());
  }
  return crashed == 0 ? 0 : 1;
}
