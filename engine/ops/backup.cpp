#include "engine/ops/backup.hpp"

#include <algorithm>
#include <vector>

#include "engine/format/keys.hpp"
#include "engine/graph/heads.hpp"
#include "engine/graph/verifier.hpp"
#include "engine/store/object_store.hpp"
#include "engine/store/store_errors.hpp"

namespace cairn {

namespace asio = boost::asio;

namespace {

std::string describe(const Head& h) {
  return "revision " + std::to_string(h.fields().revision) + ", id " + toHex(h.id());
}

// Step 1: the source's current head, pinned: everything after follows from this one image.
asio::awaitable<Res<Head>> pinSource(ObjectStore& source, const Uuid& ns, OperationBudget& budget) {
  const std::string key = keys::currentHead(ns);
  auto seen = co_await observeHead(source, ns, budget);
  if (!seen) co_return failureOf(seen);
  if (seen->missing()) {
    co_return Failure<Error>{Error{Errc::missing, key + ": the source has no head", key}};
  }
  if (seen->malformed()) co_return Failure<Error>{Error{Errc::format, seen->damage, key}};
  if (seen->head->fields().ns != ns) {
    co_return Failure<Error>{Error{Errc::binding, key + " belongs to another namespace", key}};
  }
  co_return *seen->head;
}

// Step 2: the target's head: absent, or an older (or the same) head of this lineage.
asio::awaitable<Res<HeadObservation>> judgeTarget(ObjectStore& target, const Head& head,
                                                  OperationBudget& budget) {
  const Uuid& ns = head.fields().ns;
  const std::string key = keys::currentHead(ns);
  auto before = co_await observeHead(target, ns, budget);
  if (!before) co_return before;
  if (before->malformed()) {
    co_return Failure<Error>{Error{Errc::format,
                                   "the target's " + before->damage +
                                       "; repair it (cairn repair-head) before backing up into it",
                                   key}};
  }
  if (!before->head) co_return before;
  const Head& old = *before->head;
  if (old.fields().ns != ns || old.fields().lineage != head.fields().lineage) {
    co_return Failure<Error>{
        Error{Errc::binding, "the target's head belongs to another namespace or lineage", key}};
  }
  if (old.fields().revision > head.fields().revision ||
      (old.fields().revision == head.fields().revision && old.image() != head.image())) {
    co_return Failure<Error>{Error{Errc::conflict,
                                   "the target holds " + describe(old) +
                                       ", not older than the source's " + describe(head) +
                                       "; refused (a backup never rolls back or forks)",
                                   key}};
  }
  co_return before;
}

// One object of the graph, copied only if the target lacks it: the head copy (whose bytes
// are the pinned image, compared when present: the graph verification does not read it) or a
// manifest or segment (checked by the verification that follows).
struct Item {
  std::string key;
  std::uint64_t length;
  bool headCopy = false;
};

asio::awaitable<Res<bool>> copyItem(ObjectStore& source, ObjectStore& target, const Head& head,
                                    const Item& item, EngineLimits& limits, OperationBudget& budget,
                                    BackupReport& report) {
  CAIRN_CO_TRY(budget.reserve(item.length, 0, 1, item.key));
  auto there = co_await target.head(item.key);
  if (there && there->size == item.length) {
    if (item.headCopy) {
      auto copy = co_await readHeadCopy(target, head.fields().ns, head.reference(), budget);
      if (!copy) {
        const Errc c = copy.error().code;
        if (c != Errc::format && c != Errc::reference && c != Errc::binding) {
          co_return failureOf(copy);
        }
        co_return err(Errc::corrupt, "the target's " + item.key + " is not the head it names");
      }
    }
    ++report.objectsPresent;
    co_return false;
  }
  if (!there && there.error().status != StoreStatus::missing) {
    co_return storeError(there.error(), item.key);
  }
  if (there) {
    co_return err(Errc::corrupt, "the target's " + item.key + " has " +
                                     std::to_string(there->size) + " bytes, not " +
                                     std::to_string(item.length));
  }
  CAIRN_CO_TRY(budget.reserve(2 * item.length, 0, 2, item.key));
  auto permit = co_await limits.bytes.acquire(item.length);
  Bytes bytes;
  if (item.headCopy) {
    bytes.assign(head.image().begin(), head.image().end());  // the pinned image itself
  } else {
    auto got = co_await source.get(item.key, item.length);
    if (!got) co_return storeError(got.error(), item.key);
    bytes = std::move(got->bytes);
  }
  auto put = co_await target.putImmutable(item.key, bytes);
  if (!put) co_return storeError(put.error(), item.key);
  ++report.objectsCopied;
  report.bytesCopied += bytes.size();
  co_return true;
}

// Step 3: the graph's objects, manifests first (they name the segments).
asio::awaitable<Res<void>> copyGraph(ObjectStore& source, ObjectStore& target, const Head& head,
                                     EngineLimits& limits, OperationBudget& budget,
                                     BackupReport& report) {
  const Uuid& ns = head.fields().ns;
  ManifestChain chain;  // the manifest, and the bases a chained one names
  auto manifest = co_await fetchWholeManifest(source, head, budget, &chain);
  if (!manifest) co_return failureOf(manifest);
  std::vector<Item> items;
  items.push_back({keys::headCopy(ns, head.id()), limits::kHeadBytes, true});
  for (const auto& link : chain.links) {
    items.push_back({keys::manifest(ns, link.sha256), link.length});
  }
  for (const auto& s : manifest->segments) {
    items.push_back({keys::segment(ns, s.objectSha256), s.objectLength});
  }
  for (const Item& item : items) {
    CAIRN_CO_TRY(co_await copyItem(source, target, head, item, limits, budget, report));
  }
  co_return Res<void>{};
}

// Step 4: the copy, verified as a whole in the target before it is selected there. A target
// head of an earlier revision must be a prefix of this one's journal: the copy extends it,
// never forks from it.
asio::awaitable<Res<void>> verifyCopy(ObjectStore& target, const Head& head,
                                      const HeadObservation& before, EngineLimits& limits,
                                      OperationBudget& budget, BackupReport& report) {
  VerifyOptions deep;
  deep.deep = true;
  if (before.head && before.head->image() != head.image()) {
    deep.extends = VerifyOptions::Prefix{before.head->fields().prefixLength,
                                         before.head->fields().prefixSha256};
  }
  auto verified = co_await verifyHeadGraph(target, head, nullptr, limits, budget, deep);
  if (!verified) {
    Error e = verified.error();
    if (e.code == Errc::diverged) {
      e.code = Errc::conflict;
      e.message = "the target's head (" + describe(*before.head) +
                  ") is not an earlier state of the source's journal; refused (a backup never "
                  "forks): " +
                  e.message;
    } else {
      e.message = "the copy in the target does not verify: " + e.message;
    }
    co_return Failure<Error>{std::move(e)};
  }
  report.objectsVerified = verified->objects;
  report.bytesVerified = verified->bytes;
  co_return Res<void>{};
}

// Step 5: select it in the target: create-if-absent, or compare-and-swap on the observed ETag.
asio::awaitable<Res<void>> selectInTarget(ObjectStore& target, const Head& head,
                                          const HeadObservation& before, OperationBudget& budget) {
  const std::string key = keys::currentHead(head.fields().ns);
  std::optional<std::string> etag;
  if (before.present()) etag = before.etag;
  auto selected = co_await putHeadAndSettle(target, head, etag, budget);
  if (!selected) co_return failureOf(selected);
  if (selected->outcome == SelectOutcome::selected) co_return Res<void>{};
  Error e = storeError(selected->answer, key).error;
  if (selected->outcome == SelectOutcome::refused || selected->outcome == SelectOutcome::lostRace) {
    e.code = Errc::conflict;
    e.message += "; the target's head changed during the backup, run it again";
  }
  co_return Failure<Error>{std::move(e)};
}

}  // namespace

asio::awaitable<Res<BackupReport>> backupNamespace(ObjectStore& source, ObjectStore& target,
                                                   const Uuid& ns, EngineLimits& limits,
                                                   OperationBudget& budget) {
  if (ns.isNil()) co_return err(Errc::usage, "the namespace must not be the nil UUID");
  BackupReport report;
  // 1. Pin the source's head.
  auto pinned = co_await pinSource(source, ns, budget);
  if (!pinned) co_return failureOf(pinned);
  report.head = *pinned;
  // 2. Judge the target's head.
  auto before = co_await judgeTarget(target, report.head, budget);
  if (!before) co_return failureOf(before);
  if (before->head) report.targetBefore = *before->head;
  // 3. Copy what the target lacks; 4. verify the target's copy.
  CAIRN_CO_TRY(co_await copyGraph(source, target, report.head, limits, budget, report));
  CAIRN_CO_TRY(co_await verifyCopy(target, report.head, *before, limits, budget, report));
  // 5. Select it there (unless it already is).
  if (before->head && before->head->image() == report.head.image()) co_return report;
  CAIRN_CO_TRY(co_await selectInTarget(target, report.head, *before, budget));
  report.headUpdated = true;
  co_return report;
}

}  // namespace cairn
