// Head repair (docs/operations.md): re-point a missing or damaged head at a verified one,
// explicitly.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/format/head.hpp"
#include "engine/runtime/budget.hpp"

namespace cairn {

class ObjectStore;

enum class HeadCondition : std::uint8_t { missing, damaged, unverifiable, healthy, same };
std::string_view headConditionName(HeadCondition c);

struct RepairReport {
  Head target;
  HeadCondition before = HeadCondition::missing;
  std::string reason;  // why the current head was judged damaged or unverifiable
  bool replaced = false;
};

// The repair runbook's last step: verifies head `id`'s graph deeply (its immutable copy, the
// manifest, every segment byte); judges the current head (missing, damaged bytes, a graph
// that does not verify, healthy); refuses a healthy one unless `force`; then re-points the
// current head at `id` with a compare-and-swap on the ETag it read.
boost::asio::awaitable<Res<RepairReport>> repairHead(ObjectStore& store, const Uuid& ns,
                                                     const Digest& id, bool force,
                                                     EngineLimits& limits, OperationBudget& budget);

}  // namespace cairn
