#include "catalog/rest/key_bindings.hpp"

#include "catalog/lake/directory.hpp"

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
