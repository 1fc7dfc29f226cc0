// A lake's creation in its store: the first record of its lake log, or the log found there and
// verified as this lake's. `cairn lake create` adds the lake to the configuration around it.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <string>

#include "engine/error.hpp"
#include "engine/format/uuid.hpp"

namespace cairn::io {
class Uring;
}

namespace cairn::catalog {

// The lake log of lake `id` in the store at `storeUrl`, created (true) or found (false): an
// existing log must be this lake's, under `publisher`. The store must enforce conditional
// writes. Errors: usage (the URL), store, uncertain (whether the creation landed is unknown:
// run it again), and what reading an existing log finds.
boost::asio::awaitable<Res<bool>> createLakeLog(io::Uring& uring, const std::string& storeUrl,
                                                const std::string& id, const Uuid& publisher);

}  // namespace cairn::catalog
