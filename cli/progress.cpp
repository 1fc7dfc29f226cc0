#include "cli/progress.hpp"

#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <utility>
#include <vector>

#include "cli/json.hpp"
#include "engine/database.hpp"
#include "engine/metrics_text.hpp"
#include "net/http/http_client.hpp"

namespace cairn::cli {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

// How often a status line is shown: on a terminal it is rewritten in place; elsewhere (a log,
// a pipe, --json) each update is a line of its own, so less often.
constexpr auto kTerminalInterval = std::chrono::milliseconds(250);
constexpr auto kLineInterval = std::chrono::seconds(2);
// How often --metrics-file is replaced while the command runs.
constexpr double kMetricsFileSeconds = 5;

struct Registered {
  CLI::App* cmd;
  const bool* json;
};

struct Process {
  std::vector<Registered> commands;  // those with --progress, -q
  std::vector<std::pair<CLI::App*, const std::string*>> metricsFiles;
  std::string mode = "auto";
  bool quiet = false;
  std::shared_ptr<StoreCounters> counters = std::make_shared<StoreCounters>();
  std::string phase;
  std::string unit;
  std::uint64_t done = 0, total = 0, bytesDone = 0, bytesTotal = 0;
  std::function<void()> stopAction;
  int signal = 0;         // the first signal received
  int signals = 0;        // how many were received
  bool refusing = false;  // store requests are refused
};

Process& process() {
  static Process p;
  return p;
}

// The command that runs, when it registered progress options.
const Registered* running() {
  for (const Registered& r : process().commands) {
    if (r.cmd->parsed()) return &r;
  }
  return nullptr;
}

std::string commandName(const CLI::App* cmd) {
  std::string name = cmd->get_name();
  for (const CLI::App* up = cmd->get_parent(); up != nullptr && up->get_parent() != nullptr;
       up = up->get_parent()) {
    name = up->get_name() + " " + name;
  }
  return name;
}

bool jsonLines() {
  const Registered* r = running();
  return r != nullptr && r->json != nullptr && *r->json;
}

std::string signalName(int sig) {
  return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "signal " + std::to_string(sig);
}

double mib(std::uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

struct Totals {
  std::uint64_t requests = 0, failed = 0, written = 0, read = 0, deleted = 0;
};

Totals totalsOf(const StoreCounters& c) {
  Totals t;
  for (std::size_t op = 0; op < kStoreOps; ++op) {
    for (std::size_t status = 0; status < kStoreStatuses; ++status) {
      const std::uint64_t n = c.operations[op][status];
      t.requests += n;
      if (status == static_cast<std::size_t>(StoreStatus::failure) ||
          status == static_cast<std::size_t>(StoreStatus::uncertain)) {
        t.failed += n;
      }
    }
    const std::uint64_t ok = c.operations[op][static_cast<std::size_t>(StoreStatus::ok)];
    switch (static_cast<StoreOp>(op)) {
      case StoreOp::putIfAbsent:
      case StoreOp::putIfMatch:
      case StoreOp::rewrite:
        t.written += ok;
        break;
      case StoreOp::get:
        t.read += ok;
        break;
      case StoreOp::remove:
        t.deleted += ok;
        break;
      default:
        break;
    }
  }
  return t;
}

// The store part of a line: what was written, read and deleted.
std::string storeText(const StoreCounters& c) {
  const Totals t = totalsOf(c);
  char buf[160];
  std::snprintf(buf, sizeof buf, "wrote %llu (%.1f MiB)  read %llu (%.1f MiB)  deleted %llu",
                static_cast<unsigned long long>(t.written), mib(c.bytesWritten),
                static_cast<unsigned long long>(t.read), mib(c.bytesRead),
                static_cast<unsigned long long>(t.deleted));
  std::string out = buf;
  if (t.failed != 0) out += "  failed " + std::to_string(t.failed);
  return out;
}

JsonObject storeJson(const StoreCounters& c) {
  const Totals t = totalsOf(c);
  return JsonObject{}
      .add("requests", t.requests)
      .add("failed", t.failed)
      .add("objects_written", t.written)
      .add("bytes_written", c.bytesWritten)
      .add("objects_read", t.read)
      .add("bytes_read", c.bytesRead)
      .add("objects_deleted", t.deleted);
}

}  // namespace

void addProgressOptions(CLI::App* cmd, const bool* json) {
  process().commands.push_back(Registered{cmd, json});
  cmd->add_option("--progress", process().mode,
                  "status while it runs: auto (on a terminal), always, never (default auto)")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  cmd->add_flag("-q,--quiet", process().quiet,
                "no status lines and no signal notices (warnings, errors and the summary still)");
}

void addCommandMetricsFile(CLI::App* cmd, std::string& path) {
  process().metricsFiles.emplace_back(cmd, &path);
  cmd->add_option("--metrics-file", path,
                  "write the store statistics and the command's state in the Prometheus text "
                  "format to this file (atomically replaced; e.g. for node_exporter's textfile "
                  "collector)");
}

bool progressShown() {
  const Process& p = process();
  if (running() == nullptr || p.quiet || p.mode == "never") return false;
  return p.mode == "always" || ::isatty(STDERR_FILENO) != 0;
}

std::shared_ptr<StoreCounters> commandCounters() { return process().counters; }

StoreAdmission commandAdmission() {
  return [](StoreOp) -> std::optional<StoreOutcome> {
    const Process& p = process();
    if (!p.refusing) return std::nullopt;
    return StoreOutcome{StoreStatus::failure,
                        "not sent: the command is stopping (" + signalName(p.signal) + ")"};
  };
}

std::unique_ptr<ObjectStore> watchStore(std::unique_ptr<ObjectStore> store) {
  return std::make_unique<CountingStore>(std::move(store), commandCounters(), commandAdmission());
}

void watchDatabase(DatabaseOptions& options) {
  options.storeCounters = commandCounters();
  options.storeAdmission = commandAdmission();
}

void setPhase(std::string phase) { process().phase = std::move(phase); }

void setItems(std::string unit, std::uint64_t done, std::uint64_t total, std::uint64_t bytesDone,
              std::uint64_t bytesTotal) {
  Process& p = process();
  p.unit = std::move(unit);
  p.done = done;
  p.total = total;
  p.bytesDone = bytesDone;
  p.bytesTotal = bytesTotal;
}

void setStopAction(std::function<void()> action) { process().stopAction = std::move(action); }

int interruptedBy() { return process().signal; }

std::string interruptedName() {
  return process().signal == 0 ? std::string() : signalName(process().signal);
}

struct CommandRun::State {
  explicit State(const asio::any_io_executor& executor) : timer(executor) {}
  asio::steady_timer timer;
  std::optional<asio::signal_set> signals;
  Clock::time_point start = Clock::now();
  bool shown = false;
  bool terminal = false;  // rewritten in place
  bool json = false;
  bool finished = false;
  std::string name;
  std::string metricsFile;
  double metricsWrittenAt = 0;

  double seconds() const { return std::chrono::duration<double>(Clock::now() - start).count(); }

  // A metrics file that cannot be written is said, and does not change the command's outcome.
  void writeMetrics(std::optional<int> exitCode) {
    if (metricsFile.empty()) return;
    metricsWrittenAt = seconds();
    const StoreStats stats{{*process().counters}, std::nullopt};
    auto written = writeMetricsFile(metricsFile,
                                    prometheusCommandText(name, stats, metricsWrittenAt, exitCode));
    if (!written) {
      std::fprintf(stderr, "%scairn: warning: --metrics-file: %s\n", terminal ? "\n" : "",
                   written.error().c_str());
    }
  }

  void show(bool last) {
    const Process& p = process();
    const double s = seconds();
    if (json) {
      JsonObject o;
      o.add("message_type", "status").add("command", name).add("seconds", s);
      if (!p.phase.empty()) o.add("phase", p.phase);
      if (!p.unit.empty()) {
        o.add("unit", p.unit).add("done", p.done);
        if (p.total != 0) o.add("total", p.total);
        if (p.bytesTotal != 0 || p.bytesDone != 0) o.add("bytes_done", p.bytesDone);
        if (p.bytesTotal != 0) o.add("bytes_total", p.bytesTotal);
      }
      o.add("store", storeJson(*p.counters)).add("final", last);
      std::fprintf(stderr, "%s\n", o.str().c_str());
      return;
    }
    std::string line = name;
    if (!p.phase.empty()) line += ": " + p.phase;
    char buf[192];
    if (!p.unit.empty()) {
      if (p.total != 0) {
        std::snprintf(buf, sizeof buf, "  %llu/%llu %s", static_cast<unsigned long long>(p.done),
                      static_cast<unsigned long long>(p.total), p.unit.c_str());
      } else {
        std::snprintf(buf, sizeof buf, "  %llu %s", static_cast<unsigned long long>(p.done),
                      p.unit.c_str());
      }
      line += buf;
      if (p.bytesTotal != 0) {
        const double rate = mib(p.bytesDone) / std::max(s, 1e-3);
        const double left =
            rate > 0 && p.bytesTotal > p.bytesDone ? mib(p.bytesTotal - p.bytesDone) / rate : 0;
        std::snprintf(buf, sizeof buf, "  %.1f/%.1f MiB  ETA %.0f s", mib(p.bytesDone),
                      mib(p.bytesTotal), left);
        line += buf;
      } else if (p.bytesDone != 0) {
        std::snprintf(buf, sizeof buf, "  %.1f MiB", mib(p.bytesDone));
        line += buf;
      }
    }
    const std::uint64_t moved = p.counters->bytesWritten + p.counters->bytesRead;
    std::snprintf(buf, sizeof buf, "  %.1f MiB/s  %.0f s", mib(moved) / std::max(s, 1e-3), s);
    line += "  " + storeText(*p.counters) + buf;
    if (terminal) {
      // Rewritten in place: carriage return, the line, erase to its end.
      std::fprintf(stderr, "\r%s\x1b[K%s", line.c_str(), last ? "\n" : "");
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  }

  void notice(const std::string& text) {
    if (process().quiet) return;
    if (json) {
      std::fprintf(stderr, "%s\n",
                   JsonObject{}
                       .add("message_type", "interrupt")
                       .add("signal", signalName(process().signal))
                       .add("count", process().signals)
                       .add("action", text)
                       .str()
                       .c_str());
    } else {
      std::fprintf(stderr, "%scairn: %s: %s\n", terminal && shown ? "\n" : "",
                   signalName(process().signal).c_str(), text.c_str());
    }
  }

  void onSignal(int sig) {
    Process& p = process();
    ++p.signals;
    if (p.signal == 0) p.signal = sig;
    if (p.signals == 1 && p.stopAction) {
      p.stopAction();
      notice(
          "the input ends at the last whole record, and what was read is made durable (and "
          "published) as at its end (again: stop the store requests)");
    } else if (p.signals == 1) {
      p.refusing = true;
      notice(
          "stopping at the next store request: none is sent now (again: no retry or backoff "
          "either)");
    } else if (p.signals == 2) {
      p.refusing = true;
      net::setProcessDeadline(Clock::now());
      notice("no store request, retry or backoff now (again: exit at once)");
    } else {
      // What was acknowledged is durable and a publication in flight has its intent: the
      // same state as a kill, which the engine is built to survive.
      std::fflush(stdout);
      std::fflush(stderr);
      ::_exit(128 + p.signal);
    }
  }
};

CommandRun::CommandRun(const asio::any_io_executor& executor, bool handleSignals)
    : state_(std::make_shared<State>(executor)) {
  State& s = *state_;
  if (const Registered* r = running()) s.name = commandName(r->cmd);
  for (const auto& [cmd, path] : process().metricsFiles) {
    if (cmd->parsed()) {
      s.metricsFile = *path;
      if (s.name.empty()) s.name = commandName(cmd);
    }
  }
  s.json = jsonLines();
  s.shown = progressShown();
  s.terminal = s.shown && !s.json && ::isatty(STDERR_FILENO) != 0;
  if (handleSignals) {
    s.signals.emplace(executor, SIGINT, SIGTERM);
    asio::co_spawn(
        executor,
        [self = state_]() -> asio::awaitable<void> {
          for (;;) {
            boost::system::error_code ec;
            const int sig =
                co_await self->signals->async_wait(asio::redirect_error(asio::use_awaitable, ec));
            if (ec || self->finished) co_return;
            self->onSignal(sig);
          }
        },
        asio::detached);
  }
  if (s.shown || !s.metricsFile.empty()) {
    s.writeMetrics(std::nullopt);
    asio::co_spawn(
        executor,
        [self = state_]() -> asio::awaitable<void> {
          const auto interval = !self->shown     ? std::chrono::milliseconds(1000)
                                : self->terminal ? std::chrono::milliseconds(kTerminalInterval)
                                                 : std::chrono::milliseconds(kLineInterval);
          for (;;) {
            self->timer.expires_after(interval);
            boost::system::error_code ec;
            co_await self->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            if (ec || self->finished) co_return;
            if (self->shown) self->show(false);
            if (self->seconds() - self->metricsWrittenAt >= kMetricsFileSeconds) {
              self->writeMetrics(std::nullopt);
            }
          }
        },
        asio::detached);
  }
}

CommandRun::~CommandRun() {
  state_->finished = true;
  state_->timer.cancel();
  if (state_->signals) state_->signals->cancel();
}

int CommandRun::finish(int exitCode) {
  State& s = *state_;
  if (s.finished) return exitCode;
  s.finished = true;
  s.timer.cancel();
  if (s.signals) s.signals->cancel();
  if (s.shown) s.show(true);
  const Process& p = process();
  const int code = p.signal == 0 ? exitCode : 128 + p.signal;
  s.writeMetrics(code);
  if (p.signal == 0) return exitCode;
  const double seconds = std::chrono::duration<double>(Clock::now() - s.start).count();
  if (s.json) {
    std::fprintf(stderr, "%s\n",
                 JsonObject{}
                     .add("message_type", "summary")
                     .add("command", s.name)
                     .add("interrupted", signalName(p.signal))
                     .add("seconds", seconds)
                     .add("command_exit", exitCode)
                     .add("store", storeJson(*p.counters))
                     .str()
                     .c_str());
  } else {
    std::fprintf(stderr, "cairn: interrupted by %s after %.1f s (the command's own exit: %d): %s\n",
                 signalName(p.signal).c_str(), seconds, exitCode, storeText(*p.counters).c_str());
  }
  return 128 + p.signal;
}

}  // namespace cairn::cli
