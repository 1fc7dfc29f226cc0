// What `cairn serve` keeps, in its process, of the requests that came with an Idempotency-Key
// (docs/catalog.md, "Idempotency-Key"): each key bound to the request it was first used for (the
// request's digest: method, path and body), from its admission on, before its operation runs
// (a request in flight, at most kMaxInFlight), then with the refusal it got when it was refused
// (a deterministic 4xx: given again to the same request, as the spec's finalized answers are).
// A success is replayed from the log's record instead, by any process; a 5xx keeps only the
// digest (the same request is judged afresh: the log tells whether the first landed). Entries
// live kIdempotencyLifetimeMs and are bounded in number and in bytes (each counted with its
// key, its answer's body and headers): the oldest go first.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>

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
  // Requests with a key in flight (admitted, not answered yet), at most: beyond, 503.
  static constexpr std::size_t kMaxInFlight = 4096;

  explicit KeyBindings(std::size_t maxBytes = kMaxBytes, std::size_t maxEntries = kMaxEntries,
                       std::size_t maxInFlight = kMaxInFlight)
      : maxBytes_(maxBytes), maxEntries_(maxEntries), maxInFlight_(maxInFlight) {}

  KeyBindings(const KeyBindings&) = delete;
  KeyBindings& operator=(const KeyBindings&) = delete;

  struct Found {
    enum class Kind { unbound, same, other };
    Kind kind = Kind::unbound;
    const net::ServerResponse* refusal = nullptr;  // with `same`: the refusal it got, if any
  };
  // `key` (the lake's id and the Idempotency-Key) for the request of digest `request`.
  Found find(const std::string& key, const Digest& request, Clock::time_point now);

  // A request admitted with its key, until its operation ends: the key is bound to it all that
  // time. land() binds the key to its answer; abandon() leaves the key unbound (the answer was
  // another request's: the log's record holds the key); destroyed before either (the operation
  // cut off, its outcome unknown), the key stays bound to the request's digest.
  class Flight {
   public:
    Flight() = default;
    Flight(Flight&& other) noexcept;
    Flight& operator=(Flight&&) = delete;
    Flight(const Flight&) = delete;
    Flight& operator=(const Flight&) = delete;
    ~Flight();
    // The request's answer: `refusal` is kept for it when set (see bind()).
    void land(std::optional<net::ServerResponse> refusal);
    void abandon();

   private:
    friend class KeyBindings;
    Flight(KeyBindings* owner, std::string key, const Digest& request)
        : owner_(owner), key_(std::move(key)), request_(request) {}
    KeyBindings* owner_ = nullptr;
    std::string key_;
    Digest request_{};
  };

  struct Entered {
    enum class Kind {
      admitted,  // run it: `flight` holds the key for it until it ends
      kept,      // refused before: `refusal` is its answer again
      other,     // bound to, or in flight for, another request: 422
      flying,    // this request is in flight already: 503, retry later
      full,      // kMaxInFlight requests are in flight: 503
    };
    Kind kind = Kind::admitted;
    const net::ServerResponse* refusal = nullptr;  // with `kept`
    Flight flight;
  };
  // Admits the request of digest `request` with `key` (in flight from now on), or says why not.
  Entered enter(const std::string& key, const Digest& request, Clock::time_point now);
  std::size_t inFlight() const { return flying_.size(); }
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
  std::size_t maxInFlight_;
  std::size_t bytes_ = 0;
  std::map<std::string, Entry> byKey_;
  std::deque<std::string> order_;         // keys, oldest first
  std::map<std::string, Digest> flying_;  // keys of requests in flight, with their digests
};

}  // namespace cairn::catalog
