// cairn_fault_proxy: tests/net/fault_proxy.hpp as a process, for the command-line soak test
// (tests/cli/test_catalog_soak.py) that puts it between `cairn serve` and RGW. Each request is
// forwarded, or with probability --rate meets one of the faults chosen uniformly from --faults:
//   drop   forwarded, the answer dropped (the store applied it; the client never hears)
//   withhold  forwarded, the answer never comes and the connection stays open (the store
//          applied it; the client hears nothing until its own timeout)
//   reset  the connection closed before forwarding (the store never sees it)
//   delay  forwarded after --delay-ms (past the client's timeout: the request lands late)
//   500    answered 500 InternalError in the store's place
//   503    answered 503 SlowDown in the store's place
// With --target-contains TEXT, only requests whose target holds TEXT may meet a fault (e.g.
// "current.head": the heads' reads and compare-and-swaps).
// With --storm-every S, for the first --storm-seconds of every S seconds the rate is
// --storm-rate instead (a store in trouble for a while: reads back fail too, and a commit's
// outcome can stay unknown).
// It prints {"port":N} on a line when it listens, and on SIGTERM or SIGINT the count of each
// action as one JSON line, then exits 0.
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tests/net/fault_proxy.hpp"

namespace {

using cairn::test::ProxyAction;
using Kind = ProxyAction::Kind;

struct Options {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  std::uint64_t seed = 1;
  double rate = 0.05;
  int delayMs = 1500;
  double stormEvery = 0;
  double stormSeconds = 0;
  double stormRate = 0.5;
  std::vector<std::string> faults{"drop", "reset", "delay", "500", "503"};
  std::string targetContains;  // empty: every request may meet a fault
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "cairn_fault_proxy: " << why
            << "\nusage: cairn_fault_proxy --upstream HOST:PORT [--seed N] [--rate P] "
               "[--delay-ms MS] [--faults drop,withhold,reset,delay,500,503] [--storm-every S "
               "--storm-seconds S --storm-rate P] [--target-contains TEXT]\n";
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  bool upstream = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) usage("missing value for " + arg);
    const std::string value = argv[++i];
    try {
      if (arg == "--upstream") {
        const auto colon = value.rfind(':');
        if (colon == std::string::npos) usage("--upstream is HOST:PORT");
        o.host = value.substr(0, colon);
        const unsigned long port = std::stoul(value.substr(colon + 1));
        if (port == 0 || port > 65535) usage("bad port in --upstream");
        o.port = static_cast<std::uint16_t>(port);
        upstream = true;
      } else if (arg == "--seed") {
        o.seed = std::stoull(value);
      } else if (arg == "--rate") {
        o.rate = std::stod(value);
        if (!(o.rate >= 0 && o.rate <= 1)) usage("--rate is 0..1");
      } else if (arg == "--delay-ms") {
        o.delayMs = std::stoi(value);
        if (o.delayMs < 0 || o.delayMs > 600'000) usage("--delay-ms is 0..600000");
      } else if (arg == "--storm-every") {
        o.stormEvery = std::stod(value);
        if (!(o.stormEvery >= 0 && o.stormEvery <= 86'400)) usage("--storm-every is 0..86400");
      } else if (arg == "--storm-seconds") {
        o.stormSeconds = std::stod(value);
        if (!(o.stormSeconds >= 0 && o.stormSeconds <= 86'400)) {
          usage("--storm-seconds is 0..86400");
        }
      } else if (arg == "--storm-rate") {
        o.stormRate = std::stod(value);
        if (!(o.stormRate >= 0 && o.stormRate <= 1)) usage("--storm-rate is 0..1");
      } else if (arg == "--target-contains") {
        o.targetContains = value;
      } else if (arg == "--faults") {
        o.faults.clear();
        std::istringstream in(value);
        for (std::string f; std::getline(in, f, ',');) {
          if (f != "drop" && f != "withhold" && f != "reset" && f != "delay" && f != "500" &&
              f != "503") {
            usage("unknown fault " + f);
          }
          o.faults.push_back(f);
        }
        if (o.faults.empty()) usage("--faults names none");
      } else {
        usage("unknown option " + arg);
      }
    } catch (const std::logic_error&) {
      usage("bad value for " + arg);
    }
  }
  if (!upstream) usage("--upstream is required");
  return o;
}

ProxyAction answer(int status, const std::string& code) {
  ProxyAction a;
  a.kind = Kind::answer;
  const std::string body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>" + code +
                           "</Code><Message>injected by cairn_fault_proxy</Message></Error>";
  a.reply = "HTTP/1.1 " + std::to_string(status) +
            " Injected\r\nContent-Type: application/xml\r\nContent-Length: " +
            std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  return a;
}

ProxyAction action(const std::string& fault, int delayMs) {
  ProxyAction a;
  if (fault == "drop") a.kind = Kind::dropResponse;
  if (fault == "withhold") a.kind = Kind::withholdResponse;
  if (fault == "reset") a.kind = Kind::resetBeforeForward;
  if (fault == "delay") a.delay = std::chrono::milliseconds(delayMs);
  if (fault == "500") return answer(500, "InternalError");
  if (fault == "503") return answer(503, "SlowDown");
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  boost::asio::io_context io;
  std::mt19937_64 random(o.seed);
  std::map<std::string, std::uint64_t> counts;
  const auto start = std::chrono::steady_clock::now();
  const auto rateNow = [&] {
    if (o.stormEvery <= 0) return o.rate;
    const double t =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return std::fmod(t, o.stormEvery) < o.stormSeconds ? o.stormRate : o.rate;
  };
  cairn::test::FaultProxy proxy(
      io.get_executor(), o.host, o.port, [&](const cairn::test::ProxyRequest& request) {
        const bool eligible =
            o.targetContains.empty() ||
            std::string_view(request.target()).find(o.targetContains) != std::string_view::npos;
        if (!eligible || std::uniform_real_distribution<double>(0, 1)(random) >= rateNow()) {
          ++counts["forward"];
          return ProxyAction{};
        }
        const std::string& fault =
            o.faults[std::uniform_int_distribution<std::size_t>(0, o.faults.size() - 1)(random)];
        ++counts[fault];
        return action(fault, o.delayMs);
      });
  std::printf("{\"port\":%u}\n", static_cast<unsigned>(proxy.port()));
  std::fflush(stdout);
  boost::asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&](const boost::system::error_code&, int) { io.stop(); });
  io.run();
  std::string line = "{";
  for (const auto& [name, n] : counts) {
    if (line.size() > 1) line += ",";
    line += "\"" + name + "\":" + std::to_string(n);
  }
  line += ",\"seen\":" + std::to_string(proxy.seen()) +
          ",\"forwarded\":" + std::to_string(proxy.forwarded()) + "}";
  std::printf("%s\n", line.c_str());
  return 0;
}
