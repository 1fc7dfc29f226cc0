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

// Writes the Prometheus text format: each family's HELP and TYPE lines, then its samples.
class PrometheusWriter {
 public:
  void family(std::string_view name, std::string_view type, std::string_view help);
  // `labels`: name="value" pairs joined by commas (prometheusLabel), or empty.
  void sample(std::string_view name, std::string_view labels, double value);
  void counter(std::string_view name, std::string_view help, double value);
  void gauge(std::string_view name, std::string_view help, double value);
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// name="value", the value escaped as the format requires (backslash, double quote, newline).
std::string prometheusLabel(std::string_view name, std::string_view value);

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
