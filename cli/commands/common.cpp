#include "cli/commands/common.hpp"

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "base/bytes.hpp"
#include "cli/progress.hpp"
#include "engine/format/head.hpp"
#include "engine/metrics_text.hpp"

namespace cairn::cli {

// Test-only fault points (docs/protocol.md): CAIRN_TEST_FAULT=POINT[:N] kills this process
// with SIGKILL the N-th time (default 1) the publisher passes POINT.
FaultHook faultHookFromEnvironment() {
  const char* spec = std::getenv("CAIRN_TEST_FAULT");
  if (spec == nullptr || *spec == '\0') return {};
  // POINT[:N[:SIGNAL]]: SIGNAL is KILL (the default), TERM, INT or STOP. A TERM or INT is
  // handled as one sent from outside (cli/progress.hpp), and the publisher goes on; a
  // STOP holds the process there until a test sends SIGCONT (to race it deterministically).
  std::string text(spec);
  std::string point = text;
  long target = 1;
  int sig = SIGKILL;
  if (auto colon = text.find(':'); colon != std::string::npos) {
    point = text.substr(0, colon);
    target = std::strtol(text.c_str() + colon + 1, nullptr, 10);
    if (auto second = text.find(':', colon + 1); second != std::string::npos) {
      const std::string name = text.substr(second + 1);
      sig = name == "TERM" ? SIGTERM : name == "INT" ? SIGINT : name == "STOP" ? SIGSTOP : SIGKILL;
    }
  }
  auto passes = std::make_shared<long>(0);
  return [point, target, sig, passes](std::string_view at) {
    if (at == point && ++*passes == target) ::raise(sig);
  };
}

// --metrics-file PATH: the database's statistics in the Prometheus text format, written
// atomically (node_exporter's textfile collector reads such files; docs/operations.md).
void addMetricsFileOption(CLI::App* cmd, std::string& path) {
  cmd->add_option("--metrics-file", path,
                  "write the statistics in the Prometheus text format to this file (atomically "
                  "replaced; e.g. for node_exporter's textfile collector)");
}

// A metrics file that cannot be written is said, and does not change the command's outcome.
void writeMetrics(const Database& db, const std::string& path) {
  if (path.empty()) return;
  auto written = writeMetricsFile(path, prometheusText(db.stats()));
  if (!written)
    std::fprintf(stderr, "cairn: warning: --metrics-file: %s\n", written.error().c_str());
}

DatabaseOptions databaseOptions(std::uint64_t segmentMib, std::int64_t reuseMaxAge,
                                const LimitOptions& limits) {
  DatabaseOptions o;
  watchDatabase(o);
  o.publish.checkpoint.segmentTargetBytes = segmentMib << 20;
  o.publish.checkpoint.reuseMaxAge = std::chrono::seconds(reuseMaxAge);
  o.publish.fault = faultHookFromEnvironment();
  o.publish.budget = limits.budget();
  o.inflightBytes = limits.inflightMib << 20;
  o.inflightRequests = limits.inflightRequests;
  return o;
}

JsonObject headSummaryJson(const Head& h) {
  const HeadFields& f = h.fields();
  JsonObject o;
  o.add("revision", f.revision)
      .add("id", toHex(h.id()))
      .add("prefix_sequence", f.prefixSequence)
      .add("prefix_length", f.prefixLength)
      .add("manifest_sha256", toHex(f.manifestSha256))
      .add("publication", f.publication.text())
      .add("publisher", f.publisher.text());
  return o;
}

}  // namespace cairn::cli
