// The directory backend (DESIGN.md §4): objects are files under a root directory.
//   create-if-absent   write a temp file, fsync, link(2) it to the key (EEXIST: precondition
//                      failed), fsync the key's directory
//   compare-and-swap   under an in-process mutex and an flock on ROOT/.lock: read, compare
//                      the ETag, write temp, fsync, rename over the key, fsync the directory
//   ETag               "\"<SHA-256 of the content, hex>\"": strong, derived from the content
// A failure after the link or rename (the directory fsync) is `uncertain`: the object is
// visible but may not survive a crash.
#pragma once

#include <filesystem>
#include <memory>

#include "engine/store/object_store.hpp"

namespace cairn {

namespace io {
class Uring;
}

class DirectoryStore final : public ObjectStore {
 public:
  // Creates the root (and ROOT/.tmp) if needed.
  static Result<std::unique_ptr<DirectoryStore>, std::string> open(io::Uring& uring,
                                                                   std::filesystem::path root);
  ~DirectoryStore() override;

  boost::asio::awaitable<StoreResult<StoredObject>> get(std::string key,
                                                        std::uint64_t maxBytes) override;
  boost::asio::awaitable<StoreResult<StoredObject>> getInto(std::string key, std::uint64_t maxBytes,
                                                            Bytes storage) override;
  boost::asio::awaitable<StoreResult<ObjectInfo>> head(std::string key) override;
  boost::asio::awaitable<StoreResult<std::string>> putIfAbsent(std::string key,
                                                               ByteView bytes) override;
  boost::asio::awaitable<StoreResult<std::string>> putIfAbsentHashed(std::string key,
                                                                     ByteView bytes,
                                                                     Digest digest) override;
  boost::asio::awaitable<StoreResult<std::string>> putIfMatch(std::string key, ByteView bytes,
                                                              std::string etag) override;
  boost::asio::awaitable<StoreResult<std::string>> rewrite(std::string key,
                                                           ByteView bytes) override;
  boost::asio::awaitable<StoreResult<void>> remove(std::string key) override;
  boost::asio::awaitable<StoreResult<ListPage>> list(std::string prefix, std::string continuation,
                                                     int maxKeys) override;
  std::string describe() const override;
  // Conditions are enforced here, under the store's own lock: always ok.
  boost::asio::awaitable<StoreResult<void>> requireConditionalWrites() override {
    co_return StoreResult<void>{};
  }

  const std::filesystem::path& root() const { return root_; }

 private:
  struct Impl;
  DirectoryStore(io::Uring& uring, std::filesystem::path root);
  boost::asio::awaitable<StoreResult<std::filesystem::path>> writeTemp(ByteView bytes);
  // Create-if-absent by link(2) of a synced temporary file; the ETag is the digest's.
  boost::asio::awaitable<StoreResult<std::string>> create(std::string key, ByteView bytes,
                                                          Digest digest);
  // Write temp, fsync, rename over the key, fsync its directory.
  boost::asio::awaitable<StoreResult<std::string>> replace(const std::string& key, ByteView bytes);

  io::Uring& uring_;
  std::filesystem::path root_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cairn
