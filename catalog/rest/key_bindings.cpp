#include "catalog/rest/key_bindings.hpp"

#include "catalog/lake/directory.hpp"

#include <utility>

namespace cairn::catalog {

namespace {

std::size_t costOf(const std::string& key, const std::optional<net::ServerResponse>& refusal) {
  std::size_t bytes = KeyBindings::kEntryOverheadBytes + 2 * key.size();  // the map's and order's
  if (!refusal) return bytes;
  bytes += refusal->body.size() + refusal->contentType.size() + refusal->route.size() +
           refusal->lake.size();
  for (const auto& h : refusal->headers) bytes += h.name.size() + h.value.size();
  return bytes;
}

}  // namespace

KeyBindings::Found KeyBindings::find(const std::string& key, const Digest& request,
                                     Clock::time_point now) {
  expire(now);
  auto it = byKey_.find(key);
  if (it == byKey_.end()) return {};
  if (it->second.request != request) return {Found::Kind::other, nullptr};
  return {Found::Kind::same, it->second.refusal ? &*it->second.refusal : nullptr};
}

KeyBindings::Entered KeyBindings::enter(const std::string& key, const Digest& request,
                                        Clock::time_point now) {
  using Kind = Entered::Kind;
  if (auto it = flying_.find(key); it != flying_.end()) {
    return Entered{it->second == request ? Kind::flying : Kind::other};
  }
  const Found found = find(key, request, now);
  if (found.kind == Found::Kind::other) return Entered{Kind::other};
  if (found.refusal) return Entered{Kind::kept, found.refusal};
  if (flying_.size() >= maxInFlight_) return Entered{Kind::full};
  flying_.emplace(key, request);
  return Entered{Kind::admitted, nullptr, Flight(this, key, request)};
}

KeyBindings::Flight::Flight(Flight&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)),
      key_(std::move(other.key_)),
      request_(other.request_) {}

KeyBindings::Flight::~Flight() {
  if (owner_) land(std::nullopt);  // cut off: what the log holds of it is unknown
}

void KeyBindings::Flight::land(std::optional<net::ServerResponse> refusal) {
  if (!owner_) return;
  owner_->bind(key_, request_, std::move(refusal), Clock::now());
  abandon();
}

void KeyBindings::Flight::abandon() {
  if (!owner_) return;
  owner_->flying_.erase(key_);
  owner_ = nullptr;
}

void KeyBindings::bind(const std::string& key, const Digest& request,
                       std::optional<net::ServerResponse> refusal, Clock::time_point now) {
  expire(now);
  if (byKey_.count(key)) return;
  std::size_t bytes = costOf(key, refusal);
  if (bytes > maxBytes_) {
    refusal.reset();  // the binding is kept; the request is judged afresh when repeated
    bytes = costOf(key, refusal);
    if (bytes > maxBytes_) return;
  }
  while (!order_.empty() && (order_.size() >= maxEntries_ || bytes_ + bytes > maxBytes_)) {
    dropOldest();
  }
  byKey_.emplace(key, Entry{now, request, std::move(refusal), bytes});
  order_.push_back(key);
  bytes_ += bytes;
}

void KeyBindings::expire(Clock::time_point now) {
  const auto cutoff = now - std::chrono::milliseconds(kIdempotencyLifetimeMs);
  while (!order_.empty() && byKey_.at(order_.front()).at < cutoff) dropOldest();
}

void KeyBindings::dropOldest() {
  auto it = byKey_.find(order_.front());
  bytes_ -= it->second.bytes;
  byKey_.erase(it);
  order_.pop_front();
}

}  // namespace cairn::catalog
