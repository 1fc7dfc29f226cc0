#include "catalog/rest/metrics.hpp"

#include <algorithm>

#include "catalog/lake/lake.hpp"
#include "engine/metrics_text.hpp"
#include "engine/store/counting_store.hpp"

namespace cairn::catalog {

namespace {

constexpr std::array<std::string_view, 6> kOutcomeNames = {"success", "rebased", "conflict",
                                                           "unknown", "refused", "failed"};

std::string_view knownMethod(std::string_view method) {
  for (std::string_view m : {"GET", "HEAD", "POST", "PUT", "DELETE"}) {
    if (method == m) return m;
  }
  return "other";
}

std::string bound(double b) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", b);
  return text;
}

}  // namespace

void CatalogMetrics::ended(std::string_view method, std::string_view route, int status,
                           double seconds) {
  if (inFlight_ > 0) --inFlight_;
  const std::string r = route.empty() ? "unmatched" : std::string(route);
  ++requests_[{std::string(knownMethod(method)), r, status}];
  Latency& l = latency_[r];
  const auto at = std::lower_bound(kBuckets.begin(), kBuckets.end(), seconds);
  ++l.counts[static_cast<std::size_t>(at - kBuckets.begin())];
  l.sum += seconds;
  ++l.count;
}

CommitOutcome CatalogMetrics::outcomeOf(int status, std::uint64_t rebases) {
  if (status >= 200 && status < 300) {
    return rebases > 0 ? CommitOutcome::rebased : CommitOutcome::success;
  }
  if (status == 409) return CommitOutcome::conflict;
  if (status == 504) return CommitOutcome::unknown;
  return status >= 500 ? CommitOutcome::failed : CommitOutcome::refused;
}

std::string CatalogMetrics::text(const std::vector<Lake*>& lakes) const {
  PrometheusWriter w;
  w.family("cairn_catalog_requests_total", "counter",
           "requests answered, by method, route template and status");
  for (const auto& [key, n] : requests_) {
    const auto& [method, route, status] = key;
    w.sample("cairn_catalog_requests_total",
             prometheusLabel("method", method) + "," + prometheusLabel("route", route) + "," +
                 prometheusLabel("status", std::to_string(status)),
             static_cast<double>(n));
  }
  w.family("cairn_catalog_request_seconds", "histogram",
           "time from a request's arrival at the handler to its answer, by route template");
  for (const auto& [route, l] : latency_) {
    const std::string label = prometheusLabel("route", route);
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < kBuckets.size(); ++i) {
      cumulative += l.counts[i];
      w.sample("cairn_catalog_request_seconds_bucket",
               label + "," + prometheusLabel("le", bound(kBuckets[i])),
               static_cast<double>(cumulative));
    }
    cumulative += l.counts.back();
    w.sample("cairn_catalog_request_seconds_bucket", label + ",le=\"+Inf\"",
             static_cast<double>(cumulative));
    w.sample("cairn_catalog_request_seconds_sum", label, l.sum);
    w.sample("cairn_catalog_request_seconds_count", label, static_cast<double>(l.count));
  }
  w.gauge("cairn_catalog_idempotency_bytes",
          "bytes of the Idempotency-Keys and refusals kept in this process (bounded)",
          static_cast<double>(keyBindingBytes_));
  w.gauge("cairn_catalog_idempotency_keys", "Idempotency-Keys kept in this process",
          static_cast<double>(keyBindingEntries_));
  w.gauge("cairn_catalog_requests_in_flight",
          "requests being handled now (a scrape of /metrics is not counted)",
          static_cast<double>(inFlight_));
  w.family("cairn_catalog_commits_total", "counter",
           "table commits by outcome: success, rebased (after lost races), conflict (409), "
           "unknown (504), refused (other 4xx), failed (other 5xx)");
  for (std::size_t i = 0; i < commits_.size(); ++i) {
    w.sample("cairn_catalog_commits_total", prometheusLabel("outcome", kOutcomeNames[i]),
             static_cast<double>(commits_[i]));
  }
  // One sample per lake of each gauge or counter below.
  auto perLake = [&](std::string_view name, std::string_view type, std::string_view help,
                     auto valueOf) {
    w.family(name, type, help);
    for (Lake* lake : lakes) {
      w.sample(name, prometheusLabel("lake", lake->id()), static_cast<double>(valueOf(*lake)));
    }
  };
  perLake("cairn_catalog_lake_ready", "gauge", "1 when the lake is ready, else 0",
          [](Lake& l) { return l.readiness().ready ? 1 : 0; });
  perLake("cairn_catalog_cache_bytes", "gauge", "bytes the lake's table cache holds (estimated)",
          [](Lake& l) { return l.cachedBytes(); });
  perLake("cairn_catalog_cache_capacity_bytes", "gauge", "the bound of the lake's table cache",
          [](Lake& l) { return l.cacheCapacity(); });
  perLake("cairn_catalog_cache_tables", "gauge", "table views the lake's cache holds",
          [](Lake& l) { return l.cachedTables(); });
  w.family("cairn_catalog_cache_lookups_total", "counter",
           "table views looked up in the cache: hit (extended from it) or miss (read whole)");
  for (Lake* lake : lakes) {
    const std::string label = prometheusLabel("lake", lake->id());
    w.sample("cairn_catalog_cache_lookups_total", label + ",result=\"hit\"",
             static_cast<double>(lake->cacheHits()));
    w.sample("cairn_catalog_cache_lookups_total", label + ",result=\"miss\"",
             static_cast<double>(lake->cacheMisses()));
  }
  // The stores: each lake's is a CountingStore when the server opened it (cairn serve); their
  // statistics are taken once per scrape.
  std::vector<std::pair<std::string, StoreStats>> stores;
  for (Lake* lake : lakes) {
    if (const auto* counting = dynamic_cast<const CountingStore*>(&lake->store())) {
      stores.emplace_back(prometheusLabel("lake", lake->id()), counting->stats());
    }
  }
  w.family("cairn_store_operations_total", "counter",
           "object store operations by lake, kind and the outcome they ended in");
  for (const auto& [label, stats] : stores) {
    for (std::size_t op = 0; op < kStoreOps; ++op) {
      for (std::size_t status = 0; status < kStoreStatuses; ++status) {
        w.sample("cairn_store_operations_total",
                 label + "," + prometheusLabel("op", storeOpName(static_cast<StoreOp>(op))) + "," +
                     prometheusLabel("outcome", storeStatusName(static_cast<StoreStatus>(status))),
                 static_cast<double>(stats.operations[op][status]));
      }
    }
  }
  w.family("cairn_store_attempts_total", "counter", "HTTP attempts sent to the lake's store");
  for (const auto& [label, stats] : stores) {
    if (stats.transport) {
      w.sample("cairn_store_attempts_total", label, static_cast<double>(stats.transport->attempts));
    }
  }
  w.family("cairn_store_retries_total", "counter", "HTTP attempts that were retries");
  for (const auto& [label, stats] : stores) {
    if (stats.transport) {
      w.sample("cairn_store_retries_total", label, static_cast<double>(stats.transport->retries));
    }
  }
  return w.take();
}

}  // namespace cairn::catalog
