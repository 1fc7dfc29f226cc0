#include "engine/store/open_store.hpp"

#include "engine/store/directory_store.hpp"
#include "engine/store/s3_store.hpp"
#include "io/uring.hpp"

namespace cairn {

Result<std::unique_ptr<ObjectStore>, std::string> openStore(
    io::Uring& uring, boost::asio::any_io_executor executor, const StoreUrl& url,
    StoreCreation creation, std::shared_ptr<net::S3CredentialsProvider> credentials) {
  if (url.kind == StoreUrl::Kind::directory) {
    auto d = DirectoryStore::open(uring, url.directory, creation);
    if (!d) return failureOf(d);
    return std::unique_ptr<ObjectStore>(std::move(*d));
  }
  auto s = S3Store::open(executor, url, std::move(credentials));
  if (!s) return failureOf(s);
  return std::unique_ptr<ObjectStore>(std::move(*s));
}

Result<std::unique_ptr<ObjectStore>, std::string> openStore(
    io::Uring& uring, boost::asio::any_io_executor executor, std::string_view text,
    StoreCreation creation, std::shared_ptr<net::S3CredentialsProvider> credentials) {
  auto url = parseStoreUrl(text);
  if (!url) return failureOf(url);
  return openStore(uring, executor, *url, creation, std::move(credentials));
}

}  // namespace cairn
