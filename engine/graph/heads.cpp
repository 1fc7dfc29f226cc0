#include "engine/graph/heads.hpp"

#include "base/assert.hpp"
#include "engine/format/checks.hpp"
#include "engine/format/keys.hpp"
#include "engine/store/store_errors.hpp"

namespace cairn {

namespace asio = boost::asio;

namespace {

// An error about `key`, its message led by the key.
Failure<Error> about(const std::string& key, const Error& e) {
  return Failure<Error>{Error{e.code, key + ": " + e.message, key}};
}

}  // namespace

asio::awaitable<Res<HeadObservation>> observeHead(ObjectStore& store, const Uuid& ns,
                                                  OperationBudget& budget) {
  const std::string key = keys::currentHead(ns);
  HeadObservation seen;
  CAIRN_CO_TRY(budget.reserve(limits::kHeadBytes, 0, 1, key));
  auto got = co_await store.get(key, limits::kHeadBytes);
  if (!got) {
    // Only a real "no such key" is absence; every other failure stays a failure.
    if (got.error().status == StoreStatus::missing) co_return seen;
    if (got.error().status != StoreStatus::failure) co_return storeError(got.error(), key);
    // Over the 256-byte bound? Then the head is malformed, not the store broken.
    CAIRN_CO_TRY(budget.reserve(0, 0, 1, key));
    auto info = co_await store.head(key);
    if (!info || info->size == limits::kHeadBytes) co_return storeError(got.error(), key);
    seen.state = HeadObservation::State::malformed;
    seen.etag = info->etag;
    seen.damage = key + " is " + std::to_string(info->size) + " bytes, not a 256-byte head";
    co_return seen;
  }
  seen.etag = std::move(got->etag);
  auto head = decodeHead(got->bytes);
  if (!head) {
    seen.state = HeadObservation::State::malformed;
    seen.damage = key + " is not a valid head: " + head.error().message;
    co_return seen;
  }
  seen.state = HeadObservation::State::present;
  seen.head = std::move(*head);
  co_return seen;
}

asio::awaitable<Res<std::optional<Head>>> readHeadCopy(ObjectStore& store, const Uuid& ns,
                                                       const HeadReference& ref,
                                                       OperationBudget& budget) {
  const std::string key = keys::headCopy(ns, ref.id);
  CAIRN_CO_TRY(budget.reserve(limits::kHeadBytes, 0, 1, key));
  auto got = co_await store.get(key, limits::kHeadBytes);
  if (!got) {
    if (got.error().status == StoreStatus::missing) co_return std::optional<Head>{};
    co_return storeError(got.error(), key);
  }
  auto head = decodeHead(got->bytes, ref);
  if (!head) co_return about(key, head.error());
  if (head->fields().ns != ns) {
    co_return Failure<Error>{Error{Errc::binding, key + " belongs to another namespace", key}};
  }
  co_return std::optional<Head>{std::move(*head)};
}

asio::awaitable<Res<void>> installHeadCopy(ObjectStore& store, const Head& head,
                                           OperationBudget& budget) {
  const std::string key = keys::headCopy(head.fields().ns, head.id());
  CAIRN_CO_TRY(budget.reserve(limits::kHeadBytes, 0, 1, key));
  auto copied = co_await store.putImmutable(key, head.image());
  if (!copied) co_return storeError(copied.error(), key);
  co_return Res<void>{};
}

asio::awaitable<Res<ChainWalk>> walkChain(
    ObjectStore& store, const Head& from, std::uint64_t limit, OperationBudget& budget,
    const std::function<asio::awaitable<Res<bool>>(const Head&)>& visit) {
  ChainWalk walk;
  Head at = from;
  // Bounded: each step visits a head of a smaller revision, or stops.
  for (;;) {
    ++walk.visited;
    auto more = co_await visit(at);
    if (!more) co_return failureOf(more);
    const auto& predecessor = at.fields().predecessor;
    if (!*more || !predecessor || (limit != 0 && walk.visited >= limit)) co_return walk;
    auto copy = co_await readHeadCopy(store, at.fields().ns, *predecessor, budget);
    if (!copy) co_return failureOf(copy);
    if (!*copy) {
      walk.historyEnds = true;  // reclaimed by a vacuum that kept fewer revisions, or lost
      co_return walk;
    }
    at = std::move(**copy);
  }
}

asio::awaitable<Res<Selection>> putHead(ObjectStore& store, const Head& candidate,
                                        const std::optional<std::string>& etag,
                                        OperationBudget& budget) {
  const std::string key = keys::currentHead(candidate.fields().ns);
  CAIRN_CO_TRY(budget.reserve(limits::kHeadBytes, 0, 1, key));
  StoreResult<std::string> put = storeFail(StoreStatus::failure, "not sent");
  if (etag) {
    put = co_await store.putIfMatch(key, candidate.image(), *etag);
  } else {
    put = co_await store.putIfAbsent(key, candidate.image());
  }
  Selection out;
  if (put) {
    out.outcome = SelectOutcome::selected;
    out.etag = std::move(*put);
    co_return out;
  }
  out.answer = put.error();
  switch (out.answer.status) {
    case StoreStatus::preconditionFailed:
      out.outcome = SelectOutcome::refused;
      break;
    case StoreStatus::conflict:
      out.outcome = SelectOutcome::lostRace;
      break;
    case StoreStatus::uncertain:
      out.outcome = SelectOutcome::uncertain;
      break;
    default:
      out.outcome = SelectOutcome::failed;
      break;
  }
  co_return out;
}

asio::awaitable<Res<Selection>> putHeadAndSettle(ObjectStore& store, const Head& candidate,
                                                 const std::optional<std::string>& etag,
                                                 OperationBudget& budget) {
  auto put = co_await putHead(store, candidate, etag, budget);
  if (!put || put->outcome == SelectOutcome::selected) co_return put;
  auto again = co_await observeHead(store, candidate.fields().ns, budget);
  if (again && again->present() && again->head->image() == candidate.image()) {
    Selection applied;
    applied.outcome = SelectOutcome::selected;
    applied.etag = again->etag;
    co_return applied;
  }
  co_return put;
}

asio::awaitable<Res<Manifest>> fetchManifest(ObjectStore& store, const Head& head,
                                             OperationBudget& budget) {
  const HeadFields& f = head.fields();
  const std::string key = keys::manifest(f.ns, f.manifestSha256);
  CAIRN_CO_TRY(budget.reserve(f.manifestLength, 0, 1, key));
  auto bytes = co_await store.get(key, f.manifestLength);
  if (!bytes) co_return storeError(bytes.error(), key);
  auto manifest = bindManifest(head, bytes->bytes);
  if (!manifest) co_return about(key, manifest.error());
  co_return std::move(*manifest);
}

std::vector<ManifestSegment> ManifestChain::segments() const {
  std::vector<ManifestSegment> out;
  std::size_t total = 0;
  for (const auto& link : links) total += link.manifest.segments.size();
  out.reserve(total);
  for (auto it = links.rbegin(); it != links.rend(); ++it) {
    out.insert(out.end(), it->manifest.segments.begin(), it->manifest.segments.end());
  }
  return out;
}

void ManifestChain::addKeys(const Uuid& ns, std::set<std::string>& out) const {
  for (const auto& link : links) {
    out.insert(keys::manifest(ns, link.sha256));
    for (const auto& s : link.manifest.segments) out.insert(keys::segment(ns, s.objectSha256));
  }
}

Manifest ManifestChain::flattened() const {
  CAIRN_ASSERT(!links.empty() && !stoppedAtKnown && !links.back().manifest.base);
  Manifest out = links.front().manifest;
  out.base.reset();
  out.segments = segments();
  return out;
}

asio::awaitable<Res<ManifestChain>> fetchManifestChain(
    ObjectStore& store, const Uuid& ns, ManifestLink top, OperationBudget& budget,
    const std::function<bool(const Digest&)>& known) {
  ManifestChain chain;
  chain.links.push_back(std::move(top));
  while (chain.links.back().manifest.base) {
    const Manifest& successor = chain.links.back().manifest;
    const ManifestBase named = *successor.base;
    if (known && known(named.sha256)) {
      chain.stoppedAtKnown = true;
      break;
    }
    const std::string key = keys::manifest(ns, named.sha256);
    CAIRN_CO_TRY(budget.reserve(named.length, 0, 1, key));
    auto got = co_await store.get(key, named.length);
    if (!got) co_return storeError(got.error(), key);
    auto corrupt = [&](const std::string& why) -> Failure<Error> {
      return Failure<Error>{Error{Errc::corrupt, key + ": " + why, key}};
    };
    if (got->bytes.size() != named.length || sha256(got->bytes) != named.sha256) {
      co_return corrupt("not the base manifest its successor names (SHA-256 or length differs)");
    }
    auto decoded = decodeManifest(got->bytes);
    if (!decoded) co_return corrupt(decoded.error().message);
    if (decoded->journalHeader != successor.journalHeader) {
      co_return corrupt("a base manifest of another journal header");
    }
    if (decoded->prefix != named.prefix) {
      co_return corrupt("declares another prefix than its successor names for it");
    }
    if (decoded->generation >= successor.generation) {
      co_return corrupt("a base manifest of generation " + std::to_string(decoded->generation) +
                        ", not earlier than its successor's " +
                        std::to_string(successor.generation));
    }
    chain.links.push_back(ManifestLink{named.sha256, named.length, std::move(*decoded)});
  }
  co_return chain;
}

asio::awaitable<Res<Manifest>> fetchWholeManifest(ObjectStore& store, const Head& head,
                                                  OperationBudget& budget, ManifestChain* chain) {
  const HeadFields& f = head.fields();
  auto top = co_await fetchManifest(store, head, budget);
  if (!top) co_return failureOf(top);
  ManifestLink link{f.manifestSha256, f.manifestLength, std::move(*top)};
  auto walked = co_await fetchManifestChain(store, f.ns, std::move(link), budget);
  if (!walked) co_return failureOf(walked);
  Manifest whole = walked->flattened();
  if (chain) *chain = std::move(*walked);
  co_return whole;
}

}  // namespace cairn
