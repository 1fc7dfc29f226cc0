#include "engine/ops/vacuum.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "engine/format/checks.hpp"
#include "engine/format/keys.hpp"
#include "engine/graph/checkpoint.hpp"
#include "engine/graph/heads.hpp"
#include "engine/graph/verifier.hpp"
#include "engine/ops/vacuum_lease.hpp"
#include "engine/store/object_store.hpp"
#include "engine/store/store_errors.hpp"

namespace cairn {

namespace asio = boost::asio;

std::string_view vacuumVerdictName(VacuumVerdict v) {
  switch (v) {
    case VacuumVerdict::reclaim:
      return "reclaim";
    case VacuumVerdict::young:
      return "young";
    case VacuumVerdict::candidate:
      return "candidate";
    case VacuumVerdict::unknownAge:
      return "unknown-age";
    case VacuumVerdict::foreign:
      return "foreign";
  }
  return "foreign";
}

namespace {

constexpr std::uint64_t kMaxRestarts = 5;

// A batch's objects that may be deleted, each with the modification time its HEAD saw.
using Eligible = std::map<VacuumObject*, std::int64_t>;
constexpr std::size_t kDeleteBatch = 32;

// Stores keep whole seconds (S3 truncates): the object may be up to a second younger than its
// timestamp says, so its age is counted from the next second.
std::int64_t ageOf(std::int64_t now, std::int64_t modified) { return now - modified - 1; }

// What the unreachable head copies say: those newer than the current head are candidates (a
// pending or uncertain intent, or a publication in flight) whose whole graph is kept, whatever
// its age; for the others, the manifest each one names (kept as long as that head copy is).
struct HeadCopies {
  std::set<std::string> candidateGraphs;
  std::map<std::string, std::string> manifestOf;  // head copy key -> manifest key
  // Unreachable chained manifests (docs/formats.md §3.1): manifest key -> its base's key, and
  // every unreachable manifest's generation (a base's is lower): a kept manifest keeps its
  // bases, and a manifest is judged (and deleted) before the bases it names.
  std::map<std::string, std::string> baseOf;
  std::map<std::string, std::uint64_t> generationOf;
};

// A candidate's graph: its manifest, the bases it chains to (up to what the retained graph
// already reaches) and every segment they name.
asio::awaitable<Res<void>> addCandidateGraph(ObjectStore& store, const Uuid& ns, const Head& head,
                                             const RetainedGraph& graph, HeadCopies& out,
                                             OperationBudget& budget) {
  auto manifest = co_await fetchManifest(store, head, budget);
  if (!manifest) co_return failureOf(manifest);
  const std::function<bool(const Digest&)> known = [&](const Digest& d) {
    const std::string key = keys::manifest(ns, d);
    return graph.reachable.count(key) > 0 || out.candidateGraphs.count(key) > 0;
  };
  const HeadFields& f = head.fields();
  ManifestLink top{f.manifestSha256, f.manifestLength, std::move(*manifest)};
  auto chain = co_await fetchManifestChain(store, ns, std::move(top), budget, known);
  if (!chain) co_return failureOf(chain);
  chain->addKeys(ns, out.candidateGraphs);
  co_return Res<void>{};
}

asio::awaitable<Res<HeadCopies>> readHeadCopies(ObjectStore& store, const Uuid& ns,
                                                const std::vector<ObjectInfo>& listing,
                                                const RetainedGraph& graph,
                                                OperationBudget& budget) {
  HeadCopies out;
  const std::string prefix = keys::namespacePrefix(ns);
  const std::uint64_t currentRevision = graph.current ? graph.current->fields().revision : 0;
  for (const auto& o : listing) {
    if (graph.reachable.count(o.key) || keys::classify(o.key, prefix) != ObjectClass::headCopy) {
      continue;
    }
    auto id = keys::digestOf(o.key, prefix);
    if (!id) continue;  // not a name cairn writes: never a candidate
    auto copy = co_await readHeadCopy(store, ns, HeadReference{*id, limits::kHeadBytes}, budget);
    if (!copy) {
      // Damaged or foreign: judged by its age. A store failure stops vacuum.
      const Errc c = copy.error().code;
      if (c == Errc::format || c == Errc::reference || c == Errc::binding) continue;
      if (c == Errc::store && o.size != limits::kHeadBytes) continue;  // over the bound
      co_return failureOf(copy);
    }
    if (!*copy) continue;  // gone meanwhile
    const Head& head = **copy;
    std::string manifestKey = keys::manifest(ns, head.fields().manifestSha256);
    if (head.fields().revision <= currentRevision) {
      out.manifestOf[o.key] = manifestKey;
      continue;
    }
    out.candidateGraphs.insert(o.key);
    out.candidateGraphs.insert(manifestKey);
    auto added = co_await addCandidateGraph(store, ns, head, graph, out, budget);
    if (!added) {
      // A candidate whose manifest (or a base) never arrived keeps what it has; any doubt
      // keeps more. A damaged one binds nothing; a failure of the store stops vacuum.
      const Errc c = added.error().code;
      if (c == Errc::store || c == Errc::uncertain || c == Errc::budget) co_return failureOf(added);
      continue;
    }
  }
  co_return out;
}

// Every unreachable manifest, read: the base a chained one names and its generation. One GET
// each (bounded by the 1 MiB cap, reserved first). An object that is gone meanwhile, or whose
// bytes are not a manifest of that name, names no base.
asio::awaitable<Res<void>> readUnreachableManifests(ObjectStore& store, const Uuid& ns,
                                                    const std::vector<ObjectInfo>& listing,
                                                    const RetainedGraph& graph, HeadCopies& out,
                                                    OperationBudget& budget) {
  const std::string prefix = keys::namespacePrefix(ns);
  for (const auto& o : listing) {
    if (graph.reachable.count(o.key) || keys::classify(o.key, prefix) != ObjectClass::manifest) {
      continue;
    }
    auto name = keys::digestOf(o.key, prefix);
    if (!name || o.size > limits::kMaxManifestBytes) continue;
    CAIRN_CO_TRY(budget.reserve(o.size, 0, 1, o.key));
    auto got = co_await store.get(o.key, limits::kMaxManifestBytes);
    if (!got) {
      if (got.error().status == StoreStatus::missing) continue;
      co_return storeError(got.error(), o.key);
    }
    if (sha256(got->bytes) != *name) continue;
    auto m = decodeManifest(got->bytes);
    if (!m) continue;
    out.generationOf[o.key] = m->generation;
    if (m->base) out.baseOf[o.key] = keys::manifest(ns, m->base->sha256);
  }
  co_return Res<void>{};
}

void add(std::array<UsageCount, kObjectClasses>& counts, ObjectClass c, std::uint64_t bytes) {
  auto& u = counts[static_cast<std::size_t>(c)];
  ++u.objects;
  u.bytes += bytes;
}

// A manifest goes only with every unreachable head copy that names it: a kept head copy keeps
// its manifest, so a later walk of every revision finds no head without its manifest.
void keepManifestsOfKeptHeadCopies(std::vector<VacuumObject>& objects, const HeadCopies& copies) {
  std::set<std::string> keptManifests;
  for (const auto& v : objects) {
    auto named = copies.manifestOf.find(v.key);
    if (named != copies.manifestOf.end() && v.verdict != VacuumVerdict::reclaim) {
      keptManifests.insert(named->second);
    }
  }
  for (auto& v : objects) {
    if (v.verdict == VacuumVerdict::reclaim && keptManifests.count(v.key)) {
      v.verdict = VacuumVerdict::young;
    }
  }
  // A kept chained manifest keeps its bases, and theirs: its graph stays whole.
  std::map<std::string, VacuumObject*> byKey;
  for (auto& v : objects) byKey[v.key] = &v;
  std::vector<const VacuumObject*> kept;
  for (const auto& v : objects) {
    if (v.cls == ObjectClass::manifest && v.verdict != VacuumVerdict::reclaim) kept.push_back(&v);
  }
  while (!kept.empty()) {
    const VacuumObject* v = kept.back();
    kept.pop_back();
    auto base = copies.baseOf.find(v->key);
    if (base == copies.baseOf.end()) continue;
    auto it = byKey.find(base->second);
    if (it == byKey.end() || it->second->verdict != VacuumVerdict::reclaim) continue;
    it->second->verdict = VacuumVerdict::young;
    kept.push_back(it->second);
  }
}

// An object kept after all keeps the manifest it names (a head copy) or its base (a chained
// manifest): judged later, in a lower rank of deletionOrder or a lower generation.
void keepWhatItNames(const VacuumObject& v, const HeadCopies& copies,
                     std::set<std::string>& keptManifests) {
  auto named = copies.manifestOf.find(v.key);
  if (named != copies.manifestOf.end()) keptManifests.insert(named->second);
  auto base = copies.baseOf.find(v.key);
  if (base != copies.baseOf.end()) keptManifests.insert(base->second);
}

int deletionOrder(ObjectClass c) {
  switch (c) {
    case ObjectClass::headCopy:
      return 0;  // first: a head copy found young keeps its manifest, judged after it
    case ObjectClass::manifest:
      return 1;
    default:
      return 2;
  }
}

}  // namespace

namespace {

// The store's leftovers (temporary files of writers that died), deleted with apply.
asio::awaitable<Res<VacuumReport>> withLeftovers(ObjectStore& store, const VacuumOptions& options,
                                                 VacuumReport report) {
  auto leftovers = co_await store.leftovers(options.apply);
  if (!leftovers) co_return storeError(leftovers.error(), store.describe());
  report.leftovers = *leftovers;
  co_return report;
}

Res<void> checkVacuumOptions(const VacuumOptions& options, const Uuid& ns) {
  if (options.graceSeconds < 0) return err(Errc::usage, "the grace period must be >= 0");
  if (options.publisherReuseMaxAge.count() < 0 ||
      options.graceSeconds < 2 * options.publisherReuseMaxAge.count()) {
    return err(Errc::usage,
               "a grace period of " + std::to_string(options.graceSeconds) +
                   " s could delete what a concurrent publisher relies on: it must be at least "
                   "twice the longest reuse age of any publisher (" +
                   std::to_string(options.publisherReuseMaxAge.count()) + " s), so at least " +
                   std::to_string(2 * options.publisherReuseMaxAge.count()) + " s");
  }
  if (ns.isNil()) return err(Errc::usage, "the namespace must not be the nil UUID");
  return {};
}

// One vacuum: the options, what it found, and the steps it takes (vacuumNamespace).
class VacuumRun {
 public:
  VacuumRun(ObjectStore& store, const Uuid& ns, const VacuumOptions& options,
            OperationBudget& budget)
      : store_(store),
        ns_(ns),
        options_(options),
        budget_(budget),
        prefix_(keys::namespacePrefix(ns)),
        leaseKey_(keys::vacuumLease(ns)),
        now_(options.now ? options.now : std::function<std::int64_t()>(unixSecondsNow)) {}

  VacuumReport report;

  // What the run deleted, every attempt's: a restart judges the listing again (report's
  // unreachable objects are the last attempt's), a failure reports all it deleted.
  VacuumReport soFar() const {
    VacuumReport out = report;
    out.unreachable.insert(out.unreachable.begin(), deletedBefore_.begin(), deletedBefore_.end());
    return out;
  }

  std::int64_t now() const { return now_(); }
  // A DELETE went unanswered: it may still land (the lease must not be released).
  bool deleteInDoubt() const { return deleteInDoubt_; }
  // The lease an applying vacuum holds while it deletes (engine/ops/vacuum_lease.hpp).
  void holding(HeldLease& lease) { lease_ = &lease; }

  // Step 1: every object under the namespace's prefix (at most kMaxListedObjects), and the
  // clock reading that judges their ages, taken before the first LIST request: whatever
  // relies on an object younger than the grace period is recorded within that period of the
  // object's write, so an object that is old by the listing's start has its reliance listed
  // (docs/model/reclamation.pml, defect D1: read after the walk, it was not).
  asio::awaitable<Res<std::vector<ObjectInfo>>> list() {
    listedAt_ = now_();
    std::vector<ObjectInfo> listing;
    auto listed =
        co_await forEachObject(store_, prefix_, budget_, [&](const ObjectInfo& o) -> Res<void> {
          if (listing.size() >= kMaxListedObjects) {
            return err(Errc::budget, "more than " + std::to_string(kMaxListedObjects) +
                                         " objects under " + prefix_ +
                                         ": vacuum holds at most that many; nothing was deleted");
          }
          listing.push_back(o);
          return {};
        });
    if (!listed) co_return failureOf(listed);
    co_return listing;
  }

  // Step 3: each listed object, reachable or judged (rule 2's verdicts).
  void judge(const std::vector<ObjectInfo>& listing, const RetainedGraph& graph,
             const HeadCopies& copies) {
    report.current = graph.current;
    report.revisions = graph.heads.size();
    report.historyEnds = graph.historyEnds;
    for (auto& v : report.unreachable) {
      if (v.deleted) deletedBefore_.push_back(std::move(v));
    }
    report.unreachable.clear();
    report.reachable = {};
    const std::int64_t listedAt = listedAt_;
    for (const auto& o : listing) {
      if (o.key == leaseKey_) continue;  // a vacuum's own, never judged
      ObjectClass cls = keys::classify(o.key, prefix_);
      if (graph.reachable.count(o.key)) {
        add(report.reachable, cls, o.size);
        continue;
      }
      VacuumObject v{o.key, cls, o.size, 0, VacuumVerdict::reclaim, false};
      if (o.modifiedUnixSeconds != 0) {
        v.ageSeconds = std::max<std::int64_t>(0, ageOf(listedAt, o.modifiedUnixSeconds));
      }
      if (cls == ObjectClass::other || cls == ObjectClass::head) {
        v.verdict = VacuumVerdict::foreign;
      } else if (copies.candidateGraphs.count(o.key)) {
        v.verdict = VacuumVerdict::candidate;
      } else if (o.modifiedUnixSeconds == 0) {
        v.verdict = VacuumVerdict::unknownAge;
      } else if (ageOf(listedAt, o.modifiedUnixSeconds) < options_.graceSeconds) {
        v.verdict = VacuumVerdict::young;
      }
      report.unreachable.push_back(std::move(v));
    }
    keepManifestsOfKeptHeadCopies(report.unreachable, copies);
    tally();
  }

  void tally() {
    report.reclaimable = {};
    report.kept = {};
    for (const auto& v : report.unreachable) {
      add(v.verdict == VacuumVerdict::reclaim ? report.reclaimable : report.kept, v.cls, v.size);
    }
  }

  // Step 4: delete the `reclaim` ones in batches: HEAD each (its age again), re-read the head
  // (unchanged, or start over: true), then DELETE within the window of those HEADs. Head
  // copies go before the manifests they name, so a head copy found young keeps its manifest.
  asio::awaitable<Res<bool>> deleteDue(const Head& current, const HeadCopies& copies) {
    std::vector<VacuumObject*> due;
    for (auto& v : report.unreachable) {
      if (v.verdict == VacuumVerdict::reclaim) due.push_back(&v);
    }
    // Head copies, then manifests (newest generation first, so a chained manifest is judged
    // before the bases it names), then segments.
    auto generation = [&](const VacuumObject* v) -> std::uint64_t {
      auto g = copies.generationOf.find(v->key);
      return g == copies.generationOf.end() ? 0 : g->second;
    };
    std::stable_sort(due.begin(), due.end(), [&](const VacuumObject* a, const VacuumObject* b) {
      if (deletionOrder(a->cls) != deletionOrder(b->cls)) {
        return deletionOrder(a->cls) < deletionOrder(b->cls);
      }
      return generation(a) > generation(b);
    });
    std::set<std::string> keptManifests;
    std::size_t next = 0;
    std::size_t batch = kDeleteBatch;
    while (next < due.size()) {
      // Still this vacuum's lease, for another term, before this batch's HEADs.
      if (lease_) CAIRN_CO_TRY(co_await renewLease());
      const auto batchStart = std::chrono::steady_clock::now();
      const std::size_t end = std::min(due.size(), next + batch);
      auto eligible = co_await headBatch(due, next, end, copies, keptManifests);
      if (!eligible) co_return failureOf(eligible);
      auto again = co_await observeHead(store_, ns_, budget_);
      if (!again) co_return failureOf(again);
      if (!again->present() || again->head->image() != current.image()) co_return true;
      auto done =
          co_await deleteBatch(due, next, end, *eligible, batchStart, copies, keptManifests);
      if (!done) co_return failureOf(done);
      if (*done == next) {
        // Not even one DELETE fit in the window after its HEAD: smaller batches, and a store
        // too slow for one object at a time is an error, not a risk.
        if (batch == 1) {
          co_return err(Errc::store, store_.describe() + " answers too slowly for vacuum's " +
                                         std::to_string(kVacuumIssueWindow.count()) +
                                         " ms window between a HEAD and its DELETE");
        }
        batch = std::max<std::size_t>(1, batch / 2);
      }
      next = *done;  // the window closed: the rest are HEADed again in the next batch
    }
    co_return false;
  }

 private:
  // The lease written again, answered soon enough that its term (counted from before the
  // request) still covers the batch: a renewal answered late stops vacuum.
  asio::awaitable<Res<void>> renewLease() {
    const auto sent = std::chrono::steady_clock::now();
    CAIRN_CO_TRY(co_await renewVacuumLease(store_, *lease_, now_(), budget_));
    if (std::chrono::steady_clock::now() - sent > kVacuumLeaseRenewWithin) {
      co_return Failure<Error>{
          Error{Errc::store,
                lease_->key + " was renewed only after " +
                    std::to_string(kVacuumLeaseRenewWithin.count()) +
                    " s: too late to rely on its term; vacuum stopped before its next DELETE",
                lease_->key}};
    }
    co_return Res<void>{};
  }

  // The HEADs of due[next, end): which of them may still be deleted (rule 2), each with the
  // modification time its HEAD saw (its DELETE's fence).
  asio::awaitable<Res<Eligible>> headBatch(const std::vector<VacuumObject*>& due, std::size_t next,
                                           std::size_t end, const HeadCopies& copies,
                                           std::set<std::string>& keptManifests) {
    Eligible eligible;
    for (std::size_t i = next; i < end; ++i) {
      VacuumObject& v = *due[i];
      v.verdict = VacuumVerdict::reclaim;  // judged again by this HEAD
      CAIRN_CO_TRY(budget_.reserve(0, 0, 1, v.key));
      auto info = co_await store_.head(v.key);
      if (!info) {
        if (info.error().status == StoreStatus::missing) continue;  // already gone
        co_return storeError(info.error(), v.key);
      }
      if (info->modifiedUnixSeconds == 0) {
        v.verdict = VacuumVerdict::unknownAge;
      } else if (ageOf(now_(), info->modifiedUnixSeconds) < options_.graceSeconds) {
        v.verdict = VacuumVerdict::young;  // rewritten meanwhile: a publisher relies on it
      } else if (v.cls == ObjectClass::manifest && keptManifests.count(v.key)) {
        v.verdict = VacuumVerdict::young;  // its head copy turned out young
      } else {
        eligible[&v] = info->modifiedUnixSeconds;
      }
      if (v.verdict != VacuumVerdict::reclaim) keepWhatItNames(v, copies, keptManifests);
    }
    co_return eligible;
  }

  // The DELETEs of the eligible in due[next, end), each fenced (DeleteFence): not sent later
  // than kVacuumIssueWindow after the batch's HEADs, answered within kVacuumDeleteDeadline of
  // them, and (where the store can check it) only of the version its HEAD saw. Returns how far
  // it got: a DELETE refused after its deadline closes the window (HEADed again next batch).
  asio::awaitable<Res<std::size_t>> deleteBatch(const std::vector<VacuumObject*>& due,
                                                std::size_t next, std::size_t end,
                                                const Eligible& eligible,
                                                std::chrono::steady_clock::time_point batchStart,
                                                const HeadCopies& copies,
                                                std::set<std::string>& keptManifests) {
    std::size_t done = next;
    for (std::size_t i = next; i < end; ++i) {
      if (std::chrono::steady_clock::now() - batchStart > kVacuumIssueWindow) break;
      VacuumObject& v = *due[i];
      auto judged = eligible.find(&v);
      if (judged == eligible.end()) {
        done = i + 1;
        continue;
      }
      CAIRN_CO_TRY(budget_.reserve(0, 0, 1, v.key));
      const DeleteFence fence{judged->second, batchStart + kVacuumIssueWindow,
                              batchStart + kVacuumDeleteDeadline};
      auto removed = co_await store_.removeFenced(v.key, fence);
      if (!removed && removed.error().status == StoreStatus::preconditionFailed) {
        if (std::chrono::steady_clock::now() > fence.sendBy) break;  // too late: HEAD it again
        v.verdict = VacuumVerdict::young;  // written again since its HEAD: a publisher's
        keepWhatItNames(v, copies, keptManifests);
        done = i + 1;
        continue;
      }
      done = i + 1;
      if (!removed) {
        // A DELETE with no answer may still land: the lease is then left to expire, so that
        // no other vacuum starts while it could.
        if (removed.error().status == StoreStatus::uncertain) deleteInDoubt_ = true;
        Error e = storeError(removed.error(), v.key).error;
        e.message += "; vacuum stopped (a DELETE must be answered within " +
                     std::to_string(kVacuumDeleteDeadline.count()) + " ms of its HEAD)";
        co_return Failure<Error>{std::move(e)};
      }
      v.deleted = true;
      add(report.deleted, v.cls, v.size);
    }
    co_return done;
  }

  ObjectStore& store_;
  const Uuid& ns_;
  const VacuumOptions& options_;
  OperationBudget& budget_;
  const std::string prefix_;
  const std::string leaseKey_;
  const std::function<std::int64_t()> now_;
  std::int64_t listedAt_ = 0;
  HeldLease* lease_ = nullptr;
  bool deleteInDoubt_ = false;
  std::vector<VacuumObject> deletedBefore_;  // deleted by attempts before a restart
};

}  // namespace

namespace {

asio::awaitable<Res<void>> verifyBeforeDeleting(ObjectStore& store, const Head& walked,
                                                EngineLimits& limits, OperationBudget& budget) {
  auto verified = co_await verifyHeadGraph(store, walked, nullptr, limits, budget, VerifyOptions{});
  if (verified) co_return Res<void>{};
  Error e = verified.error();
  e.message = "the current head's graph does not verify (" + e.message +
              "); vacuum deleted nothing: the older revisions are the way back (cairn "
              "repair-head --to)";
  co_return Failure<Error>{std::move(e)};
}

// The head current now, which is not the one walked when vacuum was paused for longer than
// its lease and another vacuum has since reclaimed that one (rightly: a newer head replaced
// it). Its graph is what must be whole.
asio::awaitable<Res<void>> verifyAfterDeleting(ObjectStore& store, const Uuid& ns,
                                               EngineLimits& limits, OperationBudget& budget) {
  auto now = co_await observeHead(store, ns, budget);
  if (!now) co_return failureOf(now);
  if (!now->present()) {
    const std::string headKey = keys::currentHead(ns);
    co_return Failure<Error>{Error{
        Errc::missing, headKey + ": after vacuum, the namespace has no current head", headKey}};
  }
  auto verified =
      co_await verifyHeadGraph(store, *now->head, nullptr, limits, budget, VerifyOptions{});
  if (verified) co_return Res<void>{};
  Error e = verified.error();
  e.message = "after vacuum, the current head's graph does not verify: " + e.message;
  co_return Failure<Error>{std::move(e)};
}

// Steps 1-6, with the lease already held when deleting (run.holding).
asio::awaitable<Res<VacuumReport>> vacuumSteps(ObjectStore& store, const Uuid& ns,
                                               const VacuumOptions& options, EngineLimits& limits,
                                               OperationBudget& budget, VacuumRun& run) {
  const std::string headKey = keys::currentHead(ns);
  for (std::uint64_t attempt = 0;; ++attempt) {
    // 1. List; 2. walk the retained heads and read the unreachable head copies (the listing
    // comes first: whatever a head selected before the walk is reachable, and whatever was
    // written after the listing is not in it); 3. judge every object.
    auto listing = co_await run.list();
    if (!listing) co_return failureOf(listing);
    auto graph = co_await retainedGraph(store, ns, options.keepRevisions, budget);
    if (!graph) co_return failureOf(graph);
    auto copies = co_await readHeadCopies(store, ns, *listing, *graph, budget);
    if (!copies) co_return failureOf(copies);
    CAIRN_CO_TRY(co_await readUnreachableManifests(store, ns, *listing, *graph, *copies, budget));
    run.judge(*listing, *graph, *copies);
    if (!options.apply) co_return co_await withLeftovers(store, options, std::move(run.report));
    if (!graph->current) {
      co_return Failure<Error>{
          Error{Errc::missing,
                headKey + ": the namespace has no current head; vacuum deletes nothing without one "
                          "(repair it first: cairn repair-head)",
                headKey}};
    }
    // 4. The walked head's graph, whole before anything is deleted: with a broken one the
    // older revisions are the repair point (repair-head --to), and nothing goes.
    CAIRN_CO_TRY(co_await verifyBeforeDeleting(store, *graph->current, limits, budget));
    // 5. Delete what is due, while the head stays the one walked.
    auto moved = co_await run.deleteDue(*graph->current, *copies);
    if (!moved) co_return failureOf(moved);
    for (const auto& v : run.report.unreachable) {
      if (v.verdict == VacuumVerdict::reclaim && !v.deleted) ++run.report.vanished;
    }
    run.tally();
    if (*moved) {
      if (attempt >= kMaxRestarts) {
        co_return err(Errc::conflict, headKey + " kept moving while vacuum ran (" +
                                          std::to_string(kMaxRestarts) +
                                          " restarts); nothing unsafe was deleted, run it again");
      }
      ++run.report.restarts;
      run.report.vanished = 0;
      continue;
    }
    // 6. The current head's graph, verified again after the deletes.
    CAIRN_CO_TRY(co_await verifyAfterDeleting(store, ns, limits, budget));
    run.report.verified = true;
    co_return co_await withLeftovers(store, options, std::move(run.report));
  }
}

}  // namespace

asio::awaitable<Res<VacuumReport>> vacuumNamespace(ObjectStore& store, const Uuid& ns,
                                                   const VacuumOptions& options,
                                                   EngineLimits& limits, OperationBudget& budget,
                                                   VacuumReport* sofar) {
  static_assert(kVacuumDeleteDeadline < std::chrono::seconds(kVacuumLeaseTermSeconds),
                "a delete batch must end well within the lease term it was started in");
  static_assert(kVacuumLeaseRenewWithin + kVacuumDeleteDeadline <
                    std::chrono::seconds(kVacuumLeaseTermSeconds),
                "a batch after the slowest accepted renewal must end within the renewed term");
  CAIRN_CO_TRY(checkVacuumOptions(options, ns));
  VacuumRun run(store, ns, options, budget);
  if (!options.apply) co_return co_await vacuumSteps(store, ns, options, limits, budget, run);
  // 0. The lease, before the listing: one vacuum deletes at a time.
  auto lease = co_await acquireVacuumLease(store, ns, run.now(), budget);
  if (!lease) co_return failureOf(lease);
  run.holding(*lease);
  auto report = co_await vacuumSteps(store, ns, options, limits, budget, run);
  if (!report && sofar) *sofar = run.soFar();  // what it deleted before it stopped
  if (run.deleteInDoubt()) co_return report;   // the lease expires; nothing else may start
  const bool released = co_await releaseVacuumLease(store, *lease, run.now(), budget);
  if (report) report->leaseReleased = released;
  co_return report;
}

}  // namespace cairn
