// A database's statistics in the Prometheus text exposition format (version 0.0.4), and the
// file node_exporter's textfile collector reads (docs/operations.md, "Metrics file").
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "base/result.hpp"
#include "engine/database.hpp"

namespace cairn {

// Every metric with its HELP and TYPE lines; the names start with "cairn_".
std::string prometheusText(const DatabaseStats& stats);

// Writes `text` to `path` atomically: into a temporary file beside it, then renamed over it,
// so a reader sees the previous file or this one, never a part.
Result<void, std::string> writeMetricsFile(const std::filesystem::path& path,
                                           std::string_view text);

}  // namespace cairn
