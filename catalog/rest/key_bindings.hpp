// What `cairn serve` keeps, in its process, of the requests that came with an Idempotency-Key
// (docs/catalog.md, "Idempotency-Key"): each key bound to the request it was first used for (the
// request's digest: method, path and body), with the refusal it got when it was
// refused (a deterministic 4xx: given again to the same request, as the spec's finalized
// answers are). A success is replayed from the log's record instead, by any process; a 5xx is
// never kept. Entries live kIdempotencyLifetimeMs and are bounded in number and in bytes (each
// counted with its key, its answer's body and headers): the oldest go first.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <string>

#include "base/sha256.hpp"
#include "net/http/http_server.hpp"

namespace cairn::catalog {

class KeyBindings {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::size_t kMaxEntries = 10'000;
  static constexpr std::size_t kMaxBytes = std::size_t{16} << 20;
  // What an entry costs beyond its key and answer (the maps' nodes, the digest, the time).
  static constexpr std::size_t kEntryOverheadBytes = 256;

  explicit KeyBindings(std::size_t maxBytes = kMaxBytes, std::size_t maxEntries = kMaxEntries)
      : maxBytes_(maxBytes), maxEntries_(maxEntries) {}

  struct Found {
    enum class Kind { unbound, same, other };
    Kind kind = Kind::unbound;
    const net::ServerResponse* refusal = nullptr;  // with `same`: the refusal it got, if any
  };
  // `key` (the lake's id and the Idempotency-Key) for the request of digest `request`.
  Found find(const std::string& key, const Digest& request, Clock::time_point now);
  // Binds `key` to `request` (a key bound already keeps its first binding); `refusal`, when
  // the request was refused, is kept unless it alone exceeds the byte bound.
  void bind(const std::string& key, const Digest& request,
            std::optional<net::ServerResponse> refusal, Clock::time_point now);

  std::size_t bytes() const { return bytes_; }  // counted as above; at most maxBytes
  std::size_t size() const { return byKey_.size(); }

 private:
  struct Entry {
    Clock::time_point at;
    Digest request{};
    std::optional<net::ServerResponse> refusal;
    std::size_t bytes = 0;
  };
  void expire(Clock::time_point now);
  void dropOldest();

  std::size_t maxBytes_;
  std::size_t maxEntries_;
  std::size_t bytes_ = 0;
  std::map<std::string, Entry> byKey_;
  std::deque<std::string> order_;  // keys, oldest first
};

}  // namespace cairn::catalog
