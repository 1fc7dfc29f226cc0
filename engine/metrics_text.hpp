// A database's statistics in the Prometheus text exposition format (version 0.0.4), and the
// file node_exporter's textfile collector reads (docs/operations.md, "Metrics file").
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.hpp"
#include "engine/database.hpp"

namespace cairn {

// Every metric with its HELP and TYPE lines; the names start with "cairn_".
std::string prometheusText(const DatabaseStats& stats);

// A command's store statistics (those of prometheusText) and its state, for the commands that
// open no database (backup, vacuum, lake gc, ...): cairn_command_running, _seconds and, once it
// ended, _exit_code, labelled with the command's name.
std::string prometheusCommandText(std::string_view command, const StoreStats& store, double seconds,
                                  std::optional<int> exitCode);

// Writes `text` to `path` atomically: into a temporary file beside it, then renamed over it,
// so a reader sees the previous file or this one, never a part.
Result<void, std::string> writeMetricsFile(const std::filesystem::path& path,
                                           std::string_view text);

}  // namespace cairn
