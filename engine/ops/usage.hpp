// What a namespace holds in the store (docs/operations.md, "Disk usage"): every object under
// its key prefix, split by class and by whether a retained head still reaches it.
#pragma once

#include <array>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/format/head.hpp"
#include "engine/format/keys.hpp"
#include "engine/format/uuid.hpp"
#include "engine/runtime/budget.hpp"
#include "engine/store/listing.hpp"
#include "engine/store/object_store.hpp"

namespace cairn {

// The retained heads of a namespace and every key they reach.
struct RetainedGraph {
  std::optional<Head> current;
  std::string currentEtag;
  std::vector<Head> heads;  // newest first: the current head and its retained predecessors
  // The walk stopped at a predecessor whose immutable head copy is gone (reclaimed by a
  // vacuum that kept fewer revisions, or lost): older history cannot be walked by anyone.
  bool historyEnds = false;
  std::set<std::string> reachable;  // current.head, and each retained head's copy, manifest
                                    // and segments
};

// Walks the current head and its predecessors (at most keepRevisions heads; 0 walks all),
// checking every head copy against the exact reference its successor names and every
// manifest against its head. A damaged or missing manifest, or a damaged head copy, is an
// error (never "all reclaimable"); only a missing predecessor head copy ends the walk.
boost::asio::awaitable<Res<RetainedGraph>> retainedGraph(ObjectStore& store, const Uuid& ns,
                                                         std::uint64_t keepRevisions,
                                                         OperationBudget& budget);

struct UsageCount {
  std::uint64_t objects = 0;
  std::uint64_t bytes = 0;
};

struct NamespaceUsage {
  std::uint64_t revisions = 0;  // heads walked from the current one (the retained heads)
  bool historyEnds = false;     // see RetainedGraph
  std::array<UsageCount, kObjectClasses> reachable{};
  std::array<UsageCount, kObjectClasses> unreachable{};
  // The store's leftovers (all namespaces'): temporary files of writers that died.
  LeftoverUsage leftovers;
};

// The most objects an operation holds in memory from one listing (vacuum's listing, `store
// ls --json`): about 200 MB at that count. A namespace with more is refused, not half done.
inline constexpr std::uint64_t kMaxListedObjects = 1'000'000;

// Every object under the namespace's prefix, as reachable (retainedGraph) or not.
boost::asio::awaitable<Res<NamespaceUsage>> namespaceUsage(ObjectStore& store, const Uuid& ns,
                                                           std::uint64_t keepRevisions,
                                                           OperationBudget& budget);

}  // namespace cairn
