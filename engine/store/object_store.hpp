// ObjectStore (docs/design.md §3.2): the one interface the engine uses for object storage, with two
// backends of identical semantics: S3 (net/) and a directory (io/), the embedded default.
//
// Every operation returns a typed outcome. `missing`, `preconditionFailed`, `conflict` and
// `uncertain` are expected observations, not exceptions; a caller can always tell failure
// from absence from "unknown":
//   ok                  the operation happened (a write is durable in the store)
//   missing             the key does not exist (S3: only 404 NoSuchKey)
//   preconditionFailed  a condition did not hold (412): the object exists (if-absent) or its
//                       ETag differs / it is absent (if-match); nothing was written
//   conflict            a concurrent conditional write won the race (409, or a provider's
//                       equivalent); nothing was written by this request; re-read to judge
//   uncertain           the request may or may not have taken effect (no complete response,
//                       or a local write whose final sync failed); reconcile by reading
//   failure             anything else: denied, no bucket, malformed answer, over the bound
//   undetermined        (requireConditionalWrites only) whether the store enforces conditions
//                       could not be found out: its probe requests failed or went unanswered
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/bytes.hpp"
#include "base/result.hpp"
#include "base/sha256.hpp"

namespace cairn {

enum class StoreStatus : std::uint8_t {
  ok,
  missing,
  preconditionFailed,
  conflict,
  uncertain,
  failure,
  undetermined,
};

std::string_view storeStatusName(StoreStatus s);

// The kinds of operation (InterceptStore's hooks see them; CountingStore counts by them).
enum class StoreOp : std::uint8_t {
  get,
  head,
  putIfAbsent,
  putIfMatch,
  rewrite,
  remove,
  list,
  leftovers,
  probe,  // requireConditionalWrites
};
std::string_view storeOpName(StoreOp op);

// Why an operation did not give `ok`. Never holds secrets.
struct StoreOutcome {
  StoreStatus status = StoreStatus::failure;
  std::string message;
  int http = 0;      // S3: the HTTP status, when a response was read
  std::string code;  // S3: the error code (NoSuchKey, PreconditionFailed, ...)
};

template <class T>
using StoreResult = Result<T, StoreOutcome>;

inline Failure<StoreOutcome> storeFail(StoreStatus status, std::string message) {
  return {StoreOutcome{status, std::move(message)}};
}

struct StoredObject {
  Bytes bytes;
  std::string etag;  // strong ETag from the same response as the bytes, quoted: "\"...\""
};

struct ObjectInfo {
  std::string key;
  std::uint64_t size = 0;
  std::string etag;
  std::int64_t modifiedUnixSeconds = 0;
};

// This machine's clock in the unit of ObjectInfo::modifiedUnixSeconds.
inline std::int64_t unixSecondsNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Files a store keeps beside its objects (the directory store's temporary files) that writers
// which died left behind: not objects, never listed, but they take room.
struct LeftoverUsage {
  std::uint64_t files = 0;      // left by writers that are gone (reclaimable)
  std::uint64_t bytes = 0;      // their size
  std::uint64_t reclaimed = 0;  // of them, deleted by this call
  std::uint64_t inUse = 0;      // held by a live writer, or too young to judge
};

struct ListPage {
  std::vector<ObjectInfo> objects;  // in key order
  std::string continuation;         // empty when this is the last page
};

// Keys: 1..1024 bytes of [A-Za-z0-9._-/], no empty path component and none starting with
// '.' (so no "." or ".."), none longer than 255 bytes (a file name's limit), not starting
// with '/'. Both backends refuse anything else (a failure before any I/O).
bool isValidObjectKey(std::string_view key);
inline constexpr std::size_t kMaxObjectKeyBytes = 1024;
inline constexpr std::size_t kMaxKeyComponentBytes = 255;
inline constexpr int kMaxListPage = 1000;

// What a DELETE of vacuum is conditional on (ObjectStore::removeFenced). A DELETE may be
// delayed anywhere between vacuum's decision and the store (a stopped process, a descheduled
// machine): it must then do nothing, not delete an object a publisher has rewritten and
// selected meanwhile (docs/operations.md, "Vacuum and concurrent publication", rule 2).
struct DeleteFence {
  // The modification time the HEAD that judged the object old saw. A store that can check
  // it atomically with the delete (the directory store, under its write lock, which a rewrite
  // takes too) deletes only that version: a rewrite gives the object a later time.
  std::int64_t modifiedUnixSeconds = 0;
  // Not sent after sendBy; answered by answerBy or uncertain. A store that cannot check the
  // version (S3) bounds the whole request by these, and a publisher's settle wait outlasts
  // answerBy (kRewriteSettle, engine/graph/checkpoint.hpp).
  std::chrono::steady_clock::time_point sendBy;
  std::chrono::steady_clock::time_point answerBy;
};

// What a store's transport did (S3: HTTP attempts sent, retried, and those that timed out).
struct StoreTransportStats {
  std::uint64_t attempts = 0;
  std::uint64_t retries = 0;
  std::uint64_t timeouts = 0;
};

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  // The whole object, if it has at most maxBytes bytes (more is a failure, detected before
  // the body is buffered).
  virtual boost::asio::awaitable<StoreResult<StoredObject>> get(std::string key,
                                                                std::uint64_t maxBytes) = 0;
  // get() into `storage`'s memory: a caller that reads many large objects hands back an
  // earlier buffer (base/buffer_pool.hpp) instead of touching fresh pages. Its bytes are
  // overwritten in place (a buffer already as long as the object is not zero-filled again).
  // The default ignores it.
  virtual boost::asio::awaitable<StoreResult<StoredObject>> getInto(std::string key,
                                                                    std::uint64_t maxBytes,
                                                                    Bytes storage);
  virtual boost::asio::awaitable<StoreResult<ObjectInfo>> head(std::string key) = 0;
  // Create-if-absent: preconditionFailed when the key exists. Returns the new ETag.
  virtual boost::asio::awaitable<StoreResult<std::string>> putIfAbsent(std::string key,
                                                                       ByteView bytes) = 0;
  // putIfAbsent() of bytes whose SHA-256 the caller has computed (a content-addressed key
  // names it): S3 signs the payload with it instead of hashing the bytes again, and the server
  // refuses the PUT if the bytes do not match it. The default ignores it.
  virtual boost::asio::awaitable<StoreResult<std::string>> putIfAbsentHashed(std::string key,
                                                                             ByteView bytes,
                                                                             Digest sha256);
  // Compare-and-swap: replaces the object only if its current ETag is `etag` (as returned by
  // get/head, quoted). preconditionFailed when it differs or the key is absent.
  virtual boost::asio::awaitable<StoreResult<std::string>> putIfMatch(std::string key,
                                                                      ByteView bytes,
                                                                      std::string etag) = 0;
  // Unconditional replace, only ever with the bytes a content-addressed key already names:
  // it refreshes the object's modification time, so a concurrent vacuum's grace period
  // covers it again (docs/operations.md, "Vacuum and concurrent publication"). Returns the
  // ETag. Stores that cannot do it refuse (failure).
  virtual boost::asio::awaitable<StoreResult<std::string>> rewrite(std::string key, ByteView bytes);
  // Deletes; deleting a missing key is ok.
  virtual boost::asio::awaitable<StoreResult<void>> remove(std::string key) = 0;
  // Vacuum's DELETE (engine/ops/vacuum.hpp, rule 3), which must be harmless however late it
  // arrives: see DeleteFence. ok: deleted, or already gone. preconditionFailed: not deleted
  // (the object changed since the HEAD, or sendBy passed first). uncertain: no answer by
  // answerBy (it may still land). The default refuses (failure): a store that cannot bound
  // or fence a delete is never vacuumed.
  virtual boost::asio::awaitable<StoreResult<void>> removeFenced(std::string key,
                                                                 DeleteFence fence);
  // Keys starting with prefix, in key order, after `continuation` (from a previous page).
  virtual boost::asio::awaitable<StoreResult<ListPage>> list(std::string prefix,
                                                             std::string continuation,
                                                             int maxKeys) = 0;
  // What writers that died left beside the objects (LeftoverUsage); with `reclaim`, it is
  // deleted. Stores that keep nothing of the kind report none.
  virtual boost::asio::awaitable<StoreResult<LeftoverUsage>> leftovers(bool reclaim);
  // Where the store is, for messages (no secrets).
  virtual std::string describe() const = 0;
  // Counters of the transport under the operations; nullopt for a store without one.
  virtual std::optional<StoreTransportStats> transportStats() const { return std::nullopt; }
  // ok only if conditional writes are known to be enforced (publishing refuses otherwise):
  // failure when the store was seen accepting a write it had to refuse, undetermined when
  // that could not be found out. The directory store enforces them itself; S3 with
  // dialect=auto runs the probe (until it once finds them enforced).
  virtual boost::asio::awaitable<StoreResult<void>> requireConditionalWrites() = 0;

  // Put-immutable: create-if-absent; when the key exists, read it back (bounded by the size
  // of `bytes`) and accept it only if it is byte-identical. Returns the ETag.
  boost::asio::awaitable<StoreResult<std::string>> putImmutable(std::string key, ByteView bytes);
};

}  // namespace cairn
