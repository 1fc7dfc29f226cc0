// What `cairn serve` exposes at GET /metrics (docs/catalog.md, "Metrics"): requests by route
// template, method and status, their latency by route, requests in flight, commits by
// outcome, and per lake the store's operations, the metadata cache and readiness. Touched on
// the server's executor only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace cairn::catalog {

class Lake;

// A commit's outcome as a client sees it: applied at once, applied after rebasing on lost
// races, refused as a proven conflict (409), unknown (504), refused otherwise (4xx), failed
// (5xx but 504).
enum class CommitOutcome { success, rebased, conflict, unknown, refused, failed };

class CatalogMetrics {
 public:
  // Latency buckets, in seconds (upper bounds; +Inf after them).
  static constexpr std::array<double, 12> kBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                      0.1,   0.25,   0.5,   1,    2.5,   10};

  void started() { ++inFlight_; }
  // `method` is kept only when it is one the catalog serves ("other" otherwise), and `route`
  // is a template the service named: the label sets are bounded whatever clients send.
  void ended(std::string_view method, std::string_view route, int status, double seconds);
  void commit(CommitOutcome outcome) { ++commits_[static_cast<std::size_t>(outcome)]; }
  static CommitOutcome outcomeOf(int status, std::uint64_t rebases);
  // What the service keeps of Idempotency-Keys (key_bindings.hpp): its bytes and entries.
  void keyBindings(std::size_t bytes, std::size_t entries) {
    keyBindingBytes_ = bytes;
    keyBindingEntries_ = entries;
  }

  // The text format; `lakes` for the per-lake figures.
  std::string text(const std::vector<Lake*>& lakes) const;

 private:
  struct Latency {
    std::array<std::uint64_t, kBuckets.size() + 1> counts{};
    double sum = 0;
    std::uint64_t count = 0;
  };
  std::uint64_t inFlight_ = 0;
  std::map<std::tuple<std::string, std::string, int>, std::uint64_t> requests_;
  std::map<std::string, Latency> latency_;
  std::array<std::uint64_t, 6> commits_{};
  std::size_t keyBindingBytes_ = 0;
  std::size_t keyBindingEntries_ = 0;
};

}  // namespace cairn::catalog
