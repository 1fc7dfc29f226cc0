// The `cairn` command's subcommands. Each register function adds its subcommands to the app;
// a subcommand's callback sets the process exit code through `exitCode`.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/json.hpp"
#include "engine/error.hpp"
#include "engine/format/uuid.hpp"
#include "engine/runtime/budget.hpp"

namespace cairn {
class Journal;
class ObjectStore;
struct SequenceRange;
namespace io {
class Uring;
}
}  // namespace cairn

namespace cairn::cli {

// Exit codes: 0 success, 1 the operation failed (bad data, refused), 2 usage, 3 busy (another
// process owns the directory), 4 uncertain (the outcome is unknown; a pending intent records
// it and the next run reconciles it), 5 undetermined (whether the store enforces conditional
// writes could not be found out: its requests failed).
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitBusy = 3;
inline constexpr int kExitUncertain = 4;
inline constexpr int kExitUndetermined = 5;

// Prints "cairn: CODE: message" to stderr and returns the exit code for the error. A --json
// command that prints no object of its own gets this error as its failure object (main).
int report(const Error& e);
// The same, and with `json` also one object on stdout: `fields` (what the command knows
// despite the failure), then ok=false, error, key, reason, seconds.
int reportJson(bool json, const Error& e, double seconds, JsonObject fields = {});
// An exception that escaped a command: Asio's std::system_error when descriptors run out, a
// std::bad_alloc (io), or anything else (internal). Said once on stderr and in the --json
// object; the command failed (exit 1).
int reportEscaped(const std::exception_ptr& escaped);

// Prints the acknowledgement of `append` or `ingest` (`json` when given, else `text`). When it
// cannot be written, the command fails (exit 1) and says on stderr how far the records are
// durable: they are, whatever standard output did.
int acknowledge(std::uint64_t last, const std::string& text, const JsonObject* json);
// The failure `e` of `append` or `ingest` (report()), then on stderr how far the records are
// durable and which may be durable or not (`unknown`, when the journal's failed durable write
// could not be cut back: e is then Errc::uncertain, exit 4). With `json` also one object on
// stdout: ok=false, error, key, reason, durable_sequence, unknown ({first, last} or null),
// `records` (how many this run made durable, for ingest) and `seconds` when given, exit.
int reportUnacknowledged(bool json, const Error& e, std::uint64_t durable,
                         const SequenceRange* unknown, std::optional<double> seconds = {},
                         std::optional<std::uint64_t> records = {});

// Tells the user on stderr what the open of `journal` cut (never silently): the bytes, where,
// and the file that keeps them.
void noteTornTail(const Journal& journal);

inline double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// --namespace: a canonical, non-nil UUID (else a usage error).
Res<Uuid> parseNamespaceOption(const std::string& text);

// --store URL and --namespace N of the commands that work on a namespace in a store; a bad
// option of either is a usage error.
struct NamespaceInStore {
  Uuid ns;
  std::unique_ptr<ObjectStore> store;
};
Res<NamespaceInStore> openNamespace(io::Uring& uring, const boost::asio::any_io_executor& executor,
                                    const std::string& storeUrl, const std::string& ns);

// --budget-bytes, --budget-requests, --inflight-mib, --inflight-requests: one operation's
// budget and the engine's in-flight limits (engine/runtime/budget.hpp).
struct LimitOptions {
  std::uint64_t budgetBytes = kDefaultOperationBudget.bytes;
  std::uint64_t budgetRequests = kDefaultOperationBudget.requests;
  std::uint64_t inflightMib = kDefaultInFlightBytes >> 20;
  std::uint64_t inflightRequests = kDefaultInFlightRequests;

  BudgetTotals budget() const {
    return BudgetTotals{budgetBytes, kDefaultOperationBudget.records, budgetRequests};
  }
};
void addLimitOptions(CLI::App* cmd, LimitOptions& o);

// The bound of a count or a sequence that any unsigned 64-bit value may take: declared like
// every numeric option's range (cli/options.hpp reads the text strictly first).
inline CLI::Range anyUnsigned() {
  return CLI::Range(std::uint64_t{0}, std::numeric_limits<std::uint64_t>::max());
}

// --timeout SECONDS: the bound on everything the command asks of the store, every request,
// attempt and backoff inside it (net::setProcessDeadline; docs/stores.md, "Time bounds").
// Commands of a bounded size (status, log, store, du, repair-head) default to
// kDefaultCommandTimeout; those whose work grows with the data (checkpoint, verify, backup,
// ...) to none (0), their every request still bounded by timeout_ms.
inline constexpr double kDefaultCommandTimeout = 60;
void addTimeoutOption(CLI::App* cmd, double defaultSeconds);

void addHeadCommands(CLI::App& app, int& exitCode);
void addJournalCommands(CLI::App& app, int& exitCode);
void addStoreCommands(CLI::App& app, int& exitCode);
void addVerifyCommands(CLI::App& app, int& exitCode);      // verify, checkpoint-objects
void addCheckpointCommands(CLI::App& app, int& exitCode);  // checkpoint, compact
void addStatusCommands(CLI::App& app, int& exitCode);      // status, log
void addRecoverCommand(CLI::App& app, int& exitCode);
void addIngestCommand(CLI::App& app, int& exitCode);
void addOpsCommands(CLI::App& app, int& exitCode);
void addLakeCommands(CLI::App& app, int& exitCode);  // lake create, set, status, expire, gc, policy
void addTokenCommands(CLI::App& app, int& exitCode);  // token create
void addServeCommand(CLI::App& app, int& exitCode);
// `completion bash` and the hidden `manpage`, from the commands registered before it.
void addCompletionCommands(CLI::App& app, int& exitCode, const std::string& version);

}  // namespace cairn::cli
