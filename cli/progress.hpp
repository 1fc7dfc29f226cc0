// What a long command shows while it runs, and how it stops on SIGINT/SIGTERM
// (docs/operations.md, "Progress and signals"). One command runs per process, so this state
// is the process's.
//
// Progress: every store the command opens counts its operations and bytes into one set of
// counters (watchStore, watchDatabase); the command may add a phase and a done/total of its
// own (setPhase, setItems). With --progress=auto (the default) a status line is shown on a
// terminal only; --progress=always shows it anywhere, one line per update; --progress=never
// and -q show none. With --json the status lines are JSON objects on stderr
// ({"message_type":"status",...}); the command's result stays the one object on stdout.
//
// Signals (runAsync installs the handlers; `serve` has its own): the first SIGINT or SIGTERM
// stops the command at its next store request (the request is refused before it is sent: a
// plain failure, never an unknown outcome; a publication that recorded its intent keeps it for
// the next run), or runs the command's own stop action instead (ingest: the input ends at
// the last whole record and the job finishes). The second refuses every new request and ends
// every retry and backoff at once; the third exits at once (a request in flight is not waited
// for: the state a kill leaves, which the engine survives by design). The exit code is then 128 +
// the signal (130, 143), after the command's own summary; its JSON object says "interrupted".
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "engine/store/counting_store.hpp"

namespace cairn {
struct DatabaseOptions;
}

namespace cairn::cli {

// --progress's values, as its completion offers them.
inline constexpr const char* kProgressModes = "auto always never";

// --progress=auto|always|never and -q/--quiet; `json` is the command's --json flag (read when
// the command runs).
void addProgressOptions(CLI::App* cmd, const bool* json);

// --metrics-file PATH for a command that opens no database: its store statistics and state
// (prometheusCommandText), replaced every 5 s while it runs and once at its end.
void addCommandMetricsFile(CLI::App* cmd, std::string& path);

// Whether status lines are shown (decided once the options are parsed).
bool progressShown();

// The command's counters, shared by every store it opens.
std::shared_ptr<StoreCounters> commandCounters();
// The admission every store of the command asks: refuses once a signal asked the command to
// stop.
StoreAdmission commandAdmission();
// `store` counted into the command's counters and stopped by its signals.
std::unique_ptr<ObjectStore> watchStore(std::unique_ptr<ObjectStore> store);
// The same for a database's store.
void watchDatabase(DatabaseOptions& options);

// What the command is doing now (shown with the counters). setItems: `done` of `total` (0: not
// known) in `unit`s, and optionally bytes.
void setPhase(std::string phase);
void setItems(std::string unit, std::uint64_t done, std::uint64_t total,
              std::uint64_t bytesDone = 0, std::uint64_t bytesTotal = 0);

// Run by the first signal instead of refusing store requests (ingest ends its input).
void setStopAction(std::function<void()> action);

// The signal that interrupted the command, or 0.
int interruptedBy();
// "SIGINT", "SIGTERM", or "" when none.
std::string interruptedName();

// Called by runAsync: starts the status lines and the signal handlers on `executor` (signals
// only when `handleSignals`), and ends them (a last status line, a summary when interrupted)
// when the command's body has returned `exitCode`; returns the exit code to use.
class CommandRun {
 public:
  CommandRun(const boost::asio::any_io_executor& executor, bool handleSignals);
  ~CommandRun();
  CommandRun(const CommandRun&) = delete;
  CommandRun& operator=(const CommandRun&) = delete;
  int finish(int exitCode);

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace cairn::cli
