// The `cairn` command's subcommands. Each register function adds its subcommands to the app;
// a subcommand's callback sets the process exit code through `exitCode`.
#pragma once

#include <chrono>

#include <CLI/CLI.hpp>

#include "engine/format/error.hpp"

namespace cairn::cli {

// Exit codes: 0 success, 1 the operation failed (bad data, refused), 2 usage, 3 busy (another
// process owns the directory), 4 uncertain (the outcome is unknown; a pending intent records
// it and the next run reconciles it).
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitBusy = 3;
inline constexpr int kExitUncertain = 4;

// Prints "cairn: CODE: message" to stderr and returns the exit code for the error.
int report(const Error& e);
// The same, and with `json` also one object on stdout: ok=false, error, key, reason, seconds.
int reportJson(bool json, const Error& e, double seconds);

inline double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

void addHeadCommands(CLI::App& app, int& exitCode);
void addJournalCommands(CLI::App& app, int& exitCode);
void addStoreCommands(CLI::App& app, int& exitCode);
void addCheckpointCommands(CLI::App& app, int& exitCode);
void addPublishCommands(CLI::App& app, int& exitCode);

}  // namespace cairn::cli
