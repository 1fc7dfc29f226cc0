#include "engine/ops/usage.hpp"

#include <set>
#include <string>

#include "engine/format/checks.hpp"
#include "engine/format/head.hpp"
#include "engine/format/keys.hpp"
#include "engine/graph/heads.hpp"
#include "engine/store/object_store.hpp"
#include "engine/store/store_errors.hpp"

namespace cairn {

namespace asio = boost::asio;

asio::awaitable<Res<RetainedGraph>> retainedGraph(ObjectStore& store, const Uuid& ns,
                                                  std::uint64_t keepRevisions,
                                                  OperationBudget& budget) {
  RetainedGraph graph;
  const std::string key = keys::currentHead(ns);
  auto seen = co_await observeHead(store, ns, budget);
  if (!seen) co_return failureOf(seen);
  if (seen->missing()) co_return graph;  // no head yet: nothing is reachable
  if (seen->malformed()) co_return Failure<Error>{Error{Errc::format, seen->damage, key}};
  if (seen->head->fields().ns != ns) {
    co_return Failure<Error>{Error{Errc::binding, key + " belongs to another namespace", key}};
  }
  graph.current = *seen->head;
  graph.currentEtag = seen->etag;
  graph.reachable.insert(key);
  // The chain, newest first: each head's copy, manifest (with the bases a chained one names,
  // each walked once) and segments.
  // Named, not temporaries of the co_await (GCC 12 destroys those twice:
  // docs/decisions/0041-catalog-logs-chained-manifests-one.md).
  const std::function<bool(const Digest&)> known = [&](const Digest& manifest) {
    return graph.reachable.count(keys::manifest(ns, manifest)) > 0;
  };
  const std::function<asio::awaitable<Res<bool>>(const Head&)> visit =
      [&](const Head& head) -> asio::awaitable<Res<bool>> {
    graph.reachable.insert(keys::headCopy(ns, head.id()));
    graph.heads.push_back(head);
    const HeadFields& f = head.fields();
    if (known(f.manifestSha256)) co_return true;
    auto manifest = co_await fetchManifest(store, head, budget);
    if (!manifest) co_return failureOf(manifest);
    ManifestLink top{f.manifestSha256, f.manifestLength, std::move(*manifest)};
    auto chain = co_await fetchManifestChain(store, ns, std::move(top), budget, known);
    if (!chain) co_return failureOf(chain);
    chain->addKeys(ns, graph.reachable);
    co_return true;
  };
  auto walked = co_await walkChain(store, *graph.current, keepRevisions, budget, visit);
  if (!walked) co_return failureOf(walked);
  graph.historyEnds = walked->historyEnds;
  co_return graph;
}

asio::awaitable<Res<NamespaceUsage>> namespaceUsage(ObjectStore& store, const Uuid& ns,
                                                    std::uint64_t keepRevisions,
                                                    OperationBudget& budget) {
  NamespaceUsage usage;
  auto graph = co_await retainedGraph(store, ns, keepRevisions, budget);
  if (!graph) co_return failureOf(graph);
  usage.revisions = graph->heads.size();
  usage.historyEnds = graph->historyEnds;
  const std::set<std::string>& reachable = graph->reachable;
  const std::string prefix = keys::namespacePrefix(ns);
  auto listed = co_await forEachObject(store, prefix, budget, [&](const ObjectInfo& o) {
    auto c = static_cast<std::size_t>(keys::classify(o.key, prefix));
    UsageCount& u = reachable.count(o.key) ? usage.reachable[c] : usage.unreachable[c];
    ++u.objects;
    u.bytes += o.size;
    return Res<void>{};
  });
  if (!listed) co_return failureOf(listed);
  auto leftovers = co_await store.leftovers(/*reclaim=*/false);
  if (!leftovers) co_return storeError(leftovers.error(), store.describe());
  usage.leftovers = *leftovers;
  co_return usage;
}

}  // namespace cairn
