// What a namespace holds in the store (docs/operations.md, "Disk usage"): every object under
// its key prefix, split by class and by whether a retained head still reaches it.
#pragma once

#include <array>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <string_view>

#include "engine/budget.hpp"
#include "engine/format/uuid.hpp"

namespace cairn {

class ObjectStore;

enum class ObjectClass : std::uint8_t { head, headCopy, manifest, segment, other };
inline constexpr std::size_t kObjectClasses = 5;
std::string_view objectClassName(ObjectClass c);

struct UsageCount {
  std::uint64_t objects = 0;
  std::uint64_t bytes = 0;
};

struct NamespaceUsage {
  std::uint64_t revisions = 0;  // heads walked from the current one (the retained heads)
  std::array<UsageCount, kObjectClasses> reachable{};
  std::array<UsageCount, kObjectClasses> unreachable{};
};

// Reachable: the current head object, and from the current head and its predecessors (at most
// keepRevisions heads; 0 keeps all) each head copy, its manifest and the manifest's segments.
// Every head copy is checked against the exact reference its successor names and every
// manifest against its head; a broken chain is an error, never "all reclaimable".
boost::asio::awaitable<Res<NamespaceUsage>> namespaceUsage(ObjectStore& store, const Uuid& ns,
                                                           std::uint64_t keepRevisions,
                                                           OperationBudget& budget);

}  // namespace cairn
