// The listing primitive: every object under a prefix, page by page, with the guards a store
// that answers "truncated" forever needs. Vacuum, usage, `store ls` and the catalog's gc all
// list through it.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <functional>
#include <string>

#include "engine/error.hpp"
#include "engine/runtime/budget.hpp"
#include "engine/store/object_store.hpp"

namespace cairn {

// Calls `each` for every object under `prefix`, page by page (one request per page, reserved
// from the budget), in key order; a failure of `each` ends the walk. A listing that does not
// advance (the same continuation again, a key not after the one before, an empty page that
// is not the last) is an error: a store that answers "truncated" forever cannot turn the
// request budget into an endless walk.
boost::asio::awaitable<Res<void>> forEachObject(
    ObjectStore& store, const std::string& prefix, OperationBudget& budget,
    const std::function<Res<void>(const ObjectInfo&)>& each);

}  // namespace cairn
