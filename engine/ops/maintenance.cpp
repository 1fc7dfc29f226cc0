#include "engine/ops/maintenance.hpp"

#include <algorithm>
#include <vector>

#include "engine/format/checks.hpp"
#include "engine/format/keys.hpp"
#include "engine/graph/verifier.hpp"
#include "engine/store/object_store.hpp"
#include "engine/store/store_errors.hpp"

namespace cairn {

namespace asio = boost::asio;

std::string_view headConditionName(HeadCondition c) {
  switch (c) {
    case HeadCondition::missing:
      return "missing";
    case HeadCondition::damaged:
      return "damaged";
    case HeadCondition::unverifiable:
      return "unverifiable";
    case HeadCondition::healthy:
      return "healthy";
    case HeadCondition::same:
      return "same";
  }
  return "damaged";
}

namespace {

std::string describe(const Head& h) {
  return "revision " + std::to_string(h.fields().revision) + ", id " + toHex(h.id());
}

// Errors that mean the graph itself is damaged (not the store failing or a budget running out).
bool isDamage(Errc c) {
  return c == Errc::missing || c == Errc::corrupt || c == Errc::format || c == Errc::manifest ||
         c == Errc::binding || c == Errc::reference;
}

struct ObservedHead {
  std::optional<Head> head;  // decoded
  bool present = false;      // the object exists (decoded or not)
  std::string etag;
  std::string damage;  // why it does not decode
};

// The current head object as it is: absent, damaged (with the ETag to replace it), or a head.
asio::awaitable<Res<ObservedHead>> observe(ObjectStore& store, const std::string& key,
                                           OperationBudget& budget) {
  ObservedHead seen;
  if (auto r = budget.reserve(limits::kHeadBytes, 0, 1, key); !r) {
    co_return Failure<Error>{r.error()};
  }
  auto got = co_await store.get(key, limits::kHeadBytes);
  if (!got) {
    if (got.error().status == StoreStatus::missing) co_return seen;
    if (got.error().status != StoreStatus::failure) co_return storeError(got.error(), key);
    // Over the 256-byte bound: damaged, if HEAD says it is there with another size.
    auto info = co_await store.head(key);
    if (!info || info->size == limits::kHeadBytes) co_return storeError(got.error(), key);
    seen.present = true;
    seen.etag = info->etag;
    seen.damage = key + " is " + std::to_string(info->size) + " bytes, not a 256-byte head";
    co_return seen;
  }
  seen.present = true;
  seen.etag = got->etag;
  auto head = decodeHead(got->bytes);
  if (!head) {
    seen.damage = key + " is not a valid head: " + head.error().message;
  } else {
    seen.head = std::move(*head);
  }
  co_return seen;
}

// Replaces the head `seen` (or creates it when absent) with `next`, conditionally on what was
// read. A lost answer is settled by reading the head again; a lost race is a conflict.
asio::awaitable<Res<void>> selectHead(ObjectStore& store, const std::string& key,
                                      const ObservedHead& seen, const Head& next,
                                      OperationBudget& budget, const std::string& onRace) {
  if (auto r = budget.reserve(limits::kHeadBytes, 0, 1, key); !r) {
    co_return Failure<Error>{r.error()};
  }
  StoreResult<std::string> put = storeFail(StoreStatus::failure, "not sent");
  if (seen.present) {
    put = co_await store.putIfMatch(key, next.image(), seen.etag);
  } else {
    put = co_await store.putIfAbsent(key, next.image());
  }
  if (put) co_return Res<void>{};
  auto again = co_await observe(store, key, budget);
  if (again && again->head && again->head->image() == next.image()) {
    co_return Res<void>{};  // applied after all (the answer was lost)
  }
  Error e = storeError(put.error(), key).error;
  if (put.error().status == StoreStatus::preconditionFailed ||
      put.error().status == StoreStatus::conflict) {
    e.code = Errc::conflict;
    e.message += "; " + onRace;
  }
  co_return Failure<Error>{std::move(e)};
}

}  // namespace

asio::awaitable<Res<BackupReport>> backupNamespace(ObjectStore& source, ObjectStore& target,
                                                   const Uuid& ns, EngineLimits& limits,
                                                   OperationBudget& budget) {
  if (ns.isNil()) co_return err(Errc::usage, "the namespace must not be the nil UUID");
  const std::string headKey = keys::currentHead(ns);
  // 1. Pin the source's head: everything below follows from this one image.
  auto pinned = co_await observe(source, headKey, budget);
  if (!pinned) co_return Failure<Error>{pinned.error()};
  if (!pinned->present) {
    co_return Failure<Error>{Error{Errc::missing, headKey + ": the source has no head", headKey}};
  }
  if (!pinned->head) co_return Failure<Error>{Error{Errc::format, pinned->damage, headKey}};
  BackupReport report;
  report.head = *pinned->head;
  const Head& head = report.head;
  if (head.fields().ns != ns) {
    co_return Failure<Error>{
        Error{Errc::binding, headKey + " belongs to another namespace", headKey}};
  }
  // 2. The target's head: absent, or an older (or the same) head of this lineage.
  auto before = co_await observe(target, headKey, budget);
  if (!before) co_return Failure<Error>{before.error()};
  if (before->present && !before->head) {
    co_return Failure<Error>{Error{Errc::format,
                                   "the target's " + before->damage +
                                       "; repair it (cairn repair-head) before backing up into it",
                                   headKey}};
  }
  if (before->head) {
    const Head& old = *before->head;
    report.targetBefore = old;
    if (old.fields().ns != ns || old.fields().lineage != head.fields().lineage) {
      co_return Failure<Error>{Error{
          Errc::binding, "the target's head belongs to another namespace or lineage", headKey}};
    }
    if (old.fields().revision > head.fields().revision ||
        (old.fields().revision == head.fields().revision && old.image() != head.image())) {
      co_return Failure<Error>{Error{Errc::conflict,
                                     "the target holds " + describe(old) +
                                         ", not older than the source's " + describe(head) +
                                         "; refused (a backup never rolls back or forks)",
                                     headKey}};
    }
  }
  // 3. The graph's objects, each copied only if the target lacks it. The manifest comes first
  // (it names the segments); the verification below checks every byte that was already there.
  std::string manifestKey = keys::manifest(ns, head.fields().manifestSha256);
  if (auto r = budget.reserve(head.fields().manifestLength, 0, 1, manifestKey); !r) {
    co_return Failure<Error>{r.error()};
  }
  auto manifestBytes = co_await source.get(manifestKey, head.fields().manifestLength);
  if (!manifestBytes) co_return storeError(manifestBytes.error(), manifestKey);
  auto manifest = bindManifest(head, manifestBytes->bytes);
  if (!manifest) {
    co_return Failure<Error>{
        Error{manifest.error().code, manifestKey + ": " + manifest.error().message, manifestKey}};
  }
  struct Item {
    std::string key;
    std::uint64_t length;
  };
  std::vector<Item> items;
  items.push_back({keys::headCopy(ns, head.id()), limits::kHeadBytes});
  items.push_back({manifestKey, head.fields().manifestLength});
  for (const auto& s : manifest->segments) {
    items.push_back({keys::segment(ns, s.objectSha256), s.objectLength});
  }
  for (const Item& item : items) {
    if (auto r = budget.reserve(item.length, 0, 1, item.key); !r) {
      co_return Failure<Error>{r.error()};
    }
    auto there = co_await target.head(item.key);
    if (there && there->size == item.length) {
      if (item.key == items.front().key) {
        // The head copy is not part of the graph verification below: compare its bytes.
        auto copy = co_await target.get(item.key, limits::kHeadBytes);
        if (!copy) co_return storeError(copy.error(), item.key);
        if (!std::equal(copy->bytes.begin(), copy->bytes.end(), head.image().begin(),
                        head.image().end())) {
          co_return err(Errc::corrupt, "the target's " + item.key + " is not the head it names");
        }
      }
      ++report.objectsPresent;
      continue;
    }
    if (!there && there.error().status != StoreStatus::missing) {
      co_return storeError(there.error(), item.key);
    }
    if (there) {
      co_return err(Errc::corrupt, "the target's " + item.key + " has " +
                                       std::to_string(there->size) + " bytes, not " +
                                       std::to_string(item.length));
    }
    if (auto r = budget.reserve(2 * item.length, 0, 2, item.key); !r) {
      co_return Failure<Error>{r.error()};
    }
    auto permit = co_await limits.bytes.acquire(item.length);
    Bytes bytes;
    if (item.key == items.front().key) {
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
  }
  // 4. The copy, verified as a whole in the target before it is selected there.
  // A target head of an earlier revision must be a prefix of this one's journal: the copy
  // extends it, never forks from it.
  VerifyOptions deep;
  deep.deep = true;
  if (before->head && before->head->image() != head.image()) {
    deep.extends = VerifyOptions::Prefix{before->head->fields().prefixLength,
                                         before->head->fields().prefixSha256};
  }
  auto verified = co_await verifyHeadGraph(target, head, nullptr, limits, budget, deep);
  if (!verified) {
    Error e = verified.error();
    if (e.code == Errc::diverged) {
      e.code = Errc::conflict;
      e.message = "the target's head (" + describe(*before->head) +
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
  // 5. Select it in the target: create-if-absent, or compare-and-swap on the observed ETag.
  if (before->head && before->head->image() == head.image()) co_return report;
  auto selected = co_await selectHead(target, headKey, *before, head, budget,
                                      "the target's head changed during the backup, run it again");
  if (!selected) co_return Failure<Error>{selected.error()};
  report.headUpdated = true;
  co_return report;
}

asio::awaitable<Res<RepairReport>> repairHead(ObjectStore& store, const Uuid& ns, const Digest& id,
                                              bool force, EngineLimits& limits,
                                              OperationBudget& budget) {
  if (ns.isNil()) co_return err(Errc::usage, "the namespace must not be the nil UUID");
  const std::string headKey = keys::currentHead(ns);
  RepairReport report;
  // 1. The target: its immutable copy, checked against its id, and its whole graph.
  std::string copyKey = keys::headCopy(ns, id);
  if (auto r = budget.reserve(limits::kHeadBytes, 0, 1, copyKey); !r) {
    co_return Failure<Error>{r.error()};
  }
  auto copy = co_await store.get(copyKey, limits::kHeadBytes);
  if (!copy) co_return storeError(copy.error(), copyKey);
  auto decoded = decodeHead(copy->bytes, HeadReference{id, limits::kHeadBytes});
  if (!decoded) {
    co_return Failure<Error>{
        Error{decoded.error().code, copyKey + ": " + decoded.error().message, copyKey}};
  }
  report.target = *decoded;
  if (report.target.fields().ns != ns) {
    co_return Failure<Error>{
        Error{Errc::binding, copyKey + " belongs to another namespace", copyKey}};
  }
  VerifyOptions deep;
  deep.deep = true;
  auto verified = co_await verifyHeadGraph(store, report.target, nullptr, limits, budget, deep);
  if (!verified) {
    Error e = verified.error();
    e.message =
        "the repair target " + toHex(id) + " does not verify, nothing changed: " + e.message;
    co_return Failure<Error>{std::move(e)};
  }
  // 2. The current head as it is.
  auto seen = co_await observe(store, headKey, budget);
  if (!seen) co_return Failure<Error>{seen.error()};
  if (!seen->present) {
    report.before = HeadCondition::missing;
  } else if (!seen->head) {
    report.before = HeadCondition::damaged;
    report.reason = seen->damage;
  } else if (seen->head->image() == report.target.image()) {
    report.before = HeadCondition::same;
    co_return report;  // already selected: nothing to do
  } else if (seen->head->fields().ns != ns) {
    report.before = HeadCondition::damaged;
    report.reason = headKey + " names another namespace";
  } else {
    // Its own budget: the target's verification must not make this one run out.
    OperationBudget currentBudget(budget.limits());
    auto graph = co_await verifyHeadGraph(store, *seen->head, nullptr, limits, currentBudget, deep);
    if (graph) {
      report.before = HeadCondition::healthy;
    } else if (isDamage(graph.error().code)) {
      report.before = HeadCondition::unverifiable;
      report.reason = graph.error().message;
    } else {
      // A failing store, a timeout or a budget says nothing about the head: no repair.
      Error e = graph.error();
      e.message = "cannot judge the current head (" + e.message + "); nothing changed";
      co_return Failure<Error>{std::move(e)};
    }
  }
  if (report.before == HeadCondition::healthy && !force) {
    co_return Failure<Error>{Error{Errc::conflict,
                                   headKey + " is healthy (" + describe(*seen->head) +
                                       ", its graph verifies); refused without --force",
                                   headKey}};
  }
  // 3. Re-point it, conditionally on what was read.
  auto selected =
      co_await selectHead(store, headKey, *seen, report.target, budget,
                          "the head changed while it was being repaired, nothing replaced");
  if (!selected) co_return Failure<Error>{selected.error()};
  report.replaced = true;
  co_return report;
}

}  // namespace cairn
