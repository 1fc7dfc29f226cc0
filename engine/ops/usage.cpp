#include "engine/ops/usage.hpp"

#include <set>
#include <string>

#include "engine/format/checks.hpp"
#include "engine/format/head.hpp"
#include "engine/format/keys.hpp"
#include "engine/store/object_store.hpp"
#include "engine/store/store_errors.hpp"

namespace cairn {

namespace asio = boost::asio;

std::string_view objectClassName(ObjectClass c) {
  switch (c) {
    case ObjectClass::head:
      return "head";
    case ObjectClass::headCopy:
      return "head_copy";
    case ObjectClass::manifest:
      return "manifest";
    case ObjectClass::segment:
      return "segment";
    case ObjectClass::other:
      return "other";
  }
  return "other";
}

ObjectClass classifyKey(std::string_view key, std::string_view prefix) {
  if (!key.starts_with(prefix)) return ObjectClass::other;
  std::string_view rest = key.substr(prefix.size());
  if (rest == "current.head") return ObjectClass::head;
  if (rest.starts_with("head-") && rest.ends_with(".bin")) return ObjectClass::headCopy;
  if (rest.starts_with("manifest-") && rest.ends_with(".bin")) return ObjectClass::manifest;
  if (rest.starts_with("segment-") && rest.ends_with(".bin")) return ObjectClass::segment;
  return ObjectClass::other;
}

std::string namespacePrefix(const Uuid& ns) { return "ns-" + ns.compactHex() + "-"; }

asio::awaitable<Res<RetainedGraph>> retainedGraph(ObjectStore& store, const Uuid& ns,
                                                  std::uint64_t keepRevisions,
                                                  OperationBudget& budget) {
  RetainedGraph graph;
  // The chain, newest first.
  std::string key = keys::currentHead(ns);
  std::optional<HeadReference> expected;
  for (;;) {
    if (auto r = budget.reserve(limits::kHeadBytes, 0, 1, key); !r) {
      co_return Failure<Error>{r.error()};
    }
    auto got = co_await store.get(key, limits::kHeadBytes);
    if (!got) {
      if (got.error().status == StoreStatus::missing) {
        if (expected) graph.historyEnds = true;
        break;  // no head yet, or the history ends here
      }
      co_return storeError(got.error(), key);
    }
    auto head = decodeHead(got->bytes, expected);
    if (!head)
      co_return Failure<Error>{Error{head.error().code, key + ": " + head.error().message, key}};
    if (head->fields().ns != ns) {
      co_return Failure<Error>{Error{Errc::binding, key + " belongs to another namespace", key}};
    }
    if (!expected) graph.currentEtag = got->etag;
    graph.reachable.insert(key);
    graph.reachable.insert(keys::headCopy(ns, head->id()));
    std::string manifestKey = keys::manifest(ns, head->fields().manifestSha256);
    if (auto r = budget.reserve(head->fields().manifestLength, 0, 1, manifestKey); !r) {
      co_return Failure<Error>{r.error()};
    }
    auto manifestBytes = co_await store.get(manifestKey, head->fields().manifestLength);
    if (!manifestBytes) co_return storeError(manifestBytes.error(), manifestKey);
    auto manifest = bindManifest(*head, manifestBytes->bytes);
    if (!manifest) {
      co_return Failure<Error>{
          Error{manifest.error().code, manifestKey + ": " + manifest.error().message, manifestKey}};
    }
    graph.reachable.insert(manifestKey);
    for (const auto& s : manifest->segments) {
      graph.reachable.insert(keys::segment(ns, s.objectSha256));
    }
    if (!graph.current) graph.current = *head;
    graph.heads.push_back(*head);
    if (!head->fields().predecessor ||
        (keepRevisions != 0 && graph.heads.size() >= keepRevisions)) {
      break;
    }
    expected = *head->fields().predecessor;
    key = keys::headCopy(ns, expected->id);
  }
  co_return graph;
}

asio::awaitable<Res<void>> forEachObject(ObjectStore& store, const std::string& prefix,
                                         OperationBudget& budget,
                                         const std::function<Res<void>(const ObjectInfo&)>& each) {
  std::string continuation;
  std::string lastKey;  // keys come in order: every page starts after the one before
  auto stuck = [&](const std::string& why) {
    return err(Errc::store, "list " + prefix + ": the listing does not advance (" + why +
                                "); refused after " + std::to_string(lastKey.size()) +
                                "-byte key " + escapeForDisplay(lastKey));
  };
  for (;;) {
    if (auto r = budget.reserve(0, 0, 1, "list " + prefix); !r) co_return Failure<Error>{r.error()};
    auto page = co_await store.list(prefix, continuation, kMaxListPage);
    if (!page) co_return storeError(page.error(), prefix);
    for (const auto& o : page->objects) {
      if (!lastKey.empty() && o.key <= lastKey) co_return stuck("a key again, or out of order");
      lastKey = o.key;
      if (auto ok = each(o); !ok) co_return ok;
    }
    if (page->continuation.empty()) co_return Res<void>{};
    if (page->continuation == continuation) co_return stuck("the same continuation again");
    if (page->objects.empty()) co_return stuck("a page without keys that is not the last");
    continuation = page->continuation;
  }
}

asio::awaitable<Res<NamespaceUsage>> namespaceUsage(ObjectStore& store, const Uuid& ns,
                                                    std::uint64_t keepRevisions,
                                                    OperationBudget& budget) {
  NamespaceUsage usage;
  auto graph = co_await retainedGraph(store, ns, keepRevisions, budget);
  if (!graph) co_return Failure<Error>{graph.error()};
  usage.revisions = graph->heads.size();
  usage.historyEnds = graph->historyEnds;
  const std::set<std::string>& reachable = graph->reachable;
  const std::string prefix = namespacePrefix(ns);
  auto listed = co_await forEachObject(store, prefix, budget, [&](const ObjectInfo& o) {
    auto c = static_cast<std::size_t>(classifyKey(o.key, prefix));
    UsageCount& u = reachable.count(o.key) ? usage.reachable[c] : usage.unreachable[c];
    ++u.objects;
    u.bytes += o.size;
    return Res<void>{};
  });
  if (!listed) co_return Failure<Error>{listed.error()};
  auto leftovers = co_await store.leftovers(/*reclaim=*/false);
  if (!leftovers) co_return storeError(leftovers.error(), store.describe());
  usage.leftovers = *leftovers;
  co_return usage;
}

}  // namespace cairn
