// The S3 backend of ObjectStore, over net::S3Client. Provider differences live in the
// client's dialect; with dialect=auto the first compare-and-swap (or probe()) runs the
// conditional-write probe once and picks the dialect the store honours.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <memory>
#include <optional>

#include "engine/store/object_store.hpp"
#include "engine/store/store_url.hpp"
#include "net/s3/s3_dialect.hpp"

namespace cairn {

namespace net {
class S3Client;
class S3CredentialsProvider;
}  // namespace net

class S3Store final : public ObjectStore {
 public:
  // What the URL leaves open, and the keys, come from the environment and the AWS shared
  // files (resolveStoreUrl, resolveAwsCredentials); with a provider, the keys come from it at
  // every request.
  static Result<std::unique_ptr<S3Store>, std::string> open(
      boost::asio::any_io_executor executor, const StoreUrl& url,
      std::shared_ptr<net::S3CredentialsProvider> credentials = nullptr);
  ~S3Store() override;

  boost::asio::awaitable<StoreResult<StoredObject>> get(std::string key,
                                                        std::uint64_t maxBytes) override;
  boost::asio::awaitable<StoreResult<StoredObject>> getInto(std::string key, std::uint64_t maxBytes,
                                                            Bytes storage) override;
  boost::asio::awaitable<StoreResult<ObjectInfo>> head(std::string key) override;
  boost::asio::awaitable<StoreResult<std::string>> putIfAbsent(std::string key,
                                                               ByteView bytes) override;
  boost::asio::awaitable<StoreResult<std::string>> putIfAbsentHashed(std::string key,
                                                                     ByteView bytes,
                                                                     Digest sha256) override;
  boost::asio::awaitable<StoreResult<std::string>> putIfMatch(std::string key, ByteView bytes,
                                                              std::string etag) override;
  boost::asio::awaitable<StoreResult<std::string>> rewrite(std::string key,
                                                           ByteView bytes) override;
  boost::asio::awaitable<StoreResult<void>> remove(std::string key) override;
  // S3 cannot delete on a condition that a rewrite (the same bytes, the same ETag) breaks, so
  // the fence's times bound the request: not sent after sendBy, and over by answerBy (pool
  // wait, connect and exchange; uncertain after), on a client whose deadline is answerBy.
  boost::asio::awaitable<StoreResult<void>> removeFenced(std::string key,
                                                         DeleteFence fence) override;
  boost::asio::awaitable<StoreResult<ListPage>> list(std::string prefix, std::string continuation,
                                                     int maxKeys) override;
  std::string describe() const override;
  std::optional<StoreTransportStats> transportStats() const override;
  boost::asio::awaitable<StoreResult<void>> requireConditionalWrites() override;

  // Runs the conditional-write probe on scratch keys (once per process; cached) and adopts
  // the dialect it found. The report says whether the store really enforces conditions.
  boost::asio::awaitable<net::ProbeReport> probe();

 private:
  // PUT with If-None-Match: *, signed with the body's SHA-256 (computed here if not given).
  boost::asio::awaitable<StoreResult<std::string>> create(std::string key, ByteView bytes,
                                                          std::optional<Digest> sha256);
  struct Impl;
  explicit S3Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cairn
