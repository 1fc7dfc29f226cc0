#include "engine/ops/repair.hpp"

#include "engine/format/keys.hpp"
#include "engine/graph/heads.hpp"
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

std::string revisionAndId(const Head& h) {
  return "revision " + std::to_string(h.fields().revision) + ", id " + toHex(h.id());
}

// Errors that mean the graph itself is damaged (not the store failing or a budget running out).
bool isDamage(Errc c) {
  return c == Errc::missing || c == Errc::corrupt || c == Errc::format || c == Errc::manifest ||
         c == Errc::binding || c == Errc::reference;
}

VerifyOptions deepVerification() {
  VerifyOptions deep;
  deep.deep = true;
  return deep;
}

// Step 1: the repair target, its immutable copy checked against its id, its whole graph
// verified deeply.
asio::awaitable<Res<Head>> verifiedTarget(ObjectStore& store, const Uuid& ns, const Digest& id,
                                          EngineLimits& limits, OperationBudget& budget) {
  const std::string copyKey = keys::headCopy(ns, id);
  auto copy = co_await readHeadCopy(store, ns, HeadReference{id, limits::kHeadBytes}, budget);
  if (!copy) co_return failureOf(copy);
  if (!*copy) {
    co_return Failure<Error>{Error{Errc::missing, copyKey + " does not exist", copyKey}};
  }
  auto verified =
      co_await verifyHeadGraph(store, **copy, nullptr, limits, budget, deepVerification());
  if (!verified) {
    Error e = verified.error();
    e.message =
        "the repair target " + toHex(id) + " does not verify, nothing changed: " + e.message;
    co_return Failure<Error>{std::move(e)};
  }
  co_return **copy;
}

// Step 2: what the current head is: missing, damaged bytes, a graph that does not verify,
// healthy, or already the target. A store that fails says nothing about the head: an error.
asio::awaitable<Res<void>> judgeCurrent(ObjectStore& store, const HeadObservation& seen,
                                        const Uuid& ns, EngineLimits& limits,
                                        const OperationBudget& budget, RepairReport& report) {
  const std::string headKey = keys::currentHead(ns);
  if (seen.missing()) {
    report.before = HeadCondition::missing;
  } else if (seen.malformed()) {
    report.before = HeadCondition::damaged;
    report.reason = seen.damage;
  } else if (seen.head->image() == report.target.image()) {
    report.before = HeadCondition::same;
  } else if (seen.head->fields().ns != ns) {
    report.before = HeadCondition::damaged;
    report.reason = headKey + " names another namespace";
  } else {
    // Its own budget: the target's verification must not make this one run out.
    OperationBudget currentBudget(budget.limits());
    auto graph = co_await verifyHeadGraph(store, *seen.head, nullptr, limits, currentBudget,
                                          deepVerification());
    if (graph) {
      report.before = HeadCondition::healthy;
    } else if (isDamage(graph.error().code)) {
      report.before = HeadCondition::unverifiable;
      report.reason = graph.error().message;
    } else {
      Error e = graph.error();
      e.message = "cannot judge the current head (" + e.message + "); nothing changed";
      co_return Failure<Error>{std::move(e)};
    }
  }
  co_return Res<void>{};
}

}  // namespace

asio::awaitable<Res<RepairReport>> repairHead(ObjectStore& store, const Uuid& ns, const Digest& id,
                                              bool force, EngineLimits& limits,
                                              OperationBudget& budget) {
  if (ns.isNil()) co_return err(Errc::usage, "the namespace must not be the nil UUID");
  const std::string headKey = keys::currentHead(ns);
  RepairReport report;
  // 1. The target, verified.
  auto target = co_await verifiedTarget(store, ns, id, limits, budget);
  if (!target) co_return failureOf(target);
  report.target = *target;
  // 2. The current head as it is, judged.
  auto seen = co_await observeHead(store, ns, budget);
  if (!seen) co_return failureOf(seen);
  CAIRN_CO_TRY(co_await judgeCurrent(store, *seen, ns, limits, budget, report));
  if (report.before == HeadCondition::same) co_return report;  // already selected
  // 3. A healthy head is replaced only when the operator insists.
  if (report.before == HeadCondition::healthy && !force) {
    co_return Failure<Error>{Error{Errc::conflict,
                                   headKey + " is healthy (" + revisionAndId(*seen->head) +
                                       ", its graph verifies); refused without --force",
                                   headKey}};
  }
  // 4. Re-point it, conditionally on what was read.
  std::optional<std::string> etag;
  if (!seen->missing()) etag = seen->etag;
  auto selected = co_await putHeadAndSettle(store, report.target, etag, budget);
  if (!selected) co_return failureOf(selected);
  if (selected->outcome != SelectOutcome::selected) {
    Error e = storeError(selected->answer, headKey).error;
    if (selected->outcome == SelectOutcome::refused ||
        selected->outcome == SelectOutcome::lostRace) {
      e.code = Errc::conflict;
      e.message += "; the head changed while it was being repaired, nothing replaced";
    }
    co_return Failure<Error>{std::move(e)};
  }
  report.replaced = true;
  co_return report;
}

}  // namespace cairn
