// Opens the ObjectStore a store URL names (engine/store/store_url.hpp).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <memory>
#include <string>

#include "engine/store/directory_store.hpp"
#include "engine/store/object_store.hpp"
#include "engine/store/store_url.hpp"
#include "net/s3/s3_client.hpp"

namespace cairn {

namespace io {
class Uring;
}

// `creation`: whether a directory store's root may be made (StoreCreation); an S3 bucket is
// never created. An S3 store's open settings and keys come from the AWS conventions
// (aws_config.hpp), or its keys from `credentials` when an embedder gives a provider.
Result<std::unique_ptr<ObjectStore>, std::string> openStore(
    io::Uring& uring, boost::asio::any_io_executor executor, const StoreUrl& url,
    StoreCreation creation = StoreCreation::existing,
    std::shared_ptr<net::S3CredentialsProvider> credentials = nullptr);
Result<std::unique_ptr<ObjectStore>, std::string> openStore(
    io::Uring& uring, boost::asio::any_io_executor executor, std::string_view url,
    StoreCreation creation = StoreCreation::existing,
    std::shared_ptr<net::S3CredentialsProvider> credentials = nullptr);

}  // namespace cairn
