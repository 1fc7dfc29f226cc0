// What the commands that open a database share: its options from the command's, the test-only
// fault hook, the metrics file, a head as JSON.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "cli/json.hpp"
#include "engine/database.hpp"
#include "engine/publish/publisher.hpp"

namespace cairn {
class Head;
}

namespace cairn::cli {

// Test-only fault points (docs/protocol.md): CAIRN_TEST_FAULT=POINT[:N[:SIGNAL]].
FaultHook faultHookFromEnvironment();

// --metrics-file PATH, and writing it (a file that cannot be written is said on stderr and
// does not change the command's outcome).
void addMetricsFileOption(CLI::App* cmd, std::string& path);
void writeMetrics(const Database& db, const std::string& path);

DatabaseOptions databaseOptions(std::uint64_t segmentMib, std::int64_t reuseMaxAge = 600,
                                const LimitOptions& limits = {});

JsonObject headSummaryJson(const Head& h);

}  // namespace cairn::cli
