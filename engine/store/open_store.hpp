// Opens the ObjectStore a store URL names (engine/store/store_url.hpp).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <memory>
#include <string>

#include "engine/store/object_store.hpp"
#include "engine/store/store_url.hpp"

namespace cairn {

namespace io {
class Uring;
}

Result<std::unique_ptr<ObjectStore>, std::string> openStore(io::Uring& uring,
                                                            boost::asio::any_io_executor executor,
                                                            const StoreUrl& url);
Result<std::unique_ptr<ObjectStore>, std::string> openStore(io::Uring& uring,
                                                            boost::asio::any_io_executor executor,
                                                            std::string_view url);

}  // namespace cairn
