#include "engine/store/object_store.hpp"

#include <algorithm>

#include "base/sha256.hpp"

namespace cairn {

std::string_view storeStatusName(StoreStatus s) {
  switch (s) {
    case StoreStatus::ok:
      return "ok";
    case StoreStatus::missing:
      return "missing";
    case StoreStatus::preconditionFailed:
      return "precondition-failed";
    case StoreStatus::conflict:
      return "conflict";
    case StoreStatus::uncertain:
      return "uncertain";
    case StoreStatus::failure:
      return "failure";
    case StoreStatus::undetermined:
      return "undetermined";
  }
  return "unknown";
}

bool isValidObjectKey(std::string_view key) {
  if (key.empty() || key.size() > kMaxObjectKeyBytes || key.front() == '/') return false;
  std::size_t componentStart = 0;
  for (std::size_t i = 0; i <= key.size(); ++i) {
    if (i == key.size() || key[i] == '/') {
      std::string_view component = key.substr(componentStart, i - componentStart);
      // Components starting with '.' are reserved (the directory store keeps its temporary
      // files and lock there); this also refuses "." and "..".
      if (component.empty() || component.front() == '.') return false;
      if (component.size() > kMaxKeyComponentBytes) return false;
      componentStart = i + 1;
      continue;
    }
    char c = key[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

boost::asio::awaitable<StoreResult<void>> ObjectStore::removeFenced(std::string key, DeleteFence) {
  co_return storeFail(StoreStatus::failure,
                      describe() +
                          " cannot fence a DELETE against a later rewrite or bound it "
                          "in time: " +
                          key + " was not deleted (vacuum needs a directory or S3 store)");
}

boost::asio::awaitable<StoreResult<StoredObject>> ObjectStore::getInto(std::string key,
                                                                       std::uint64_t maxBytes,
                                                                       Bytes) {
  co_return co_await get(std::move(key), maxBytes);
}

boost::asio::awaitable<StoreResult<std::string>> ObjectStore::putIfAbsentHashed(std::string key,
                                                                                ByteView bytes,
                                                                                Digest) {
  co_return co_await putIfAbsent(std::move(key), bytes);
}

boost::asio::awaitable<StoreResult<LeftoverUsage>> ObjectStore::leftovers(bool) {
  co_return LeftoverUsage{};
}

boost::asio::awaitable<StoreResult<std::string>> ObjectStore::rewrite(std::string key, ByteView) {
  co_return storeFail(StoreStatus::failure, describe() + " cannot rewrite " + key);
}

boost::asio::awaitable<StoreResult<std::string>> ObjectStore::putImmutable(std::string key,
                                                                           ByteView bytes) {
  auto created = co_await putIfAbsent(key, bytes);
  if (created || created.error().status != StoreStatus::preconditionFailed) co_return created;
  // It exists: reuse it only if it is exactly these bytes.
  auto existing = co_await get(key, bytes.size());
  if (!existing) {
    StoreOutcome o = existing.error();
    if (o.status == StoreStatus::missing) {
      o.status = StoreStatus::failure;
      o.message = key + " existed, then vanished while being checked: " + o.message;
    } else if (o.status == StoreStatus::failure && o.message.find("bound") != std::string::npos) {
      o.message = key + " exists with different content (larger): " + o.message;
    }
    co_return Failure<StoreOutcome>{std::move(o)};
  }
  if (existing->bytes.size() != bytes.size() ||
      !std::equal(bytes.begin(), bytes.end(), existing->bytes.begin())) {
    co_return storeFail(StoreStatus::failure, key + " exists with different content (SHA-256 " +
                                                  toHex(sha256(existing->bytes)) + ")");
  }
  co_return existing->etag;
}

}  // namespace cairn
