// Reclamation (docs/design.md §7.3, docs/operations.md "Vacuum"): delete the objects of a namespace
// that no retained head reaches, never one that a head, a pending candidate or a publication
// in progress may still need.
//
// Safety rests on three rules, shared with the publisher (docs/operations.md, "Vacuum and
// concurrent publication"):
//  1. Retained: the current head and its predecessors up to keepRevisions reach their head
//     copies, manifests and segments. A head copy newer than the current head is a candidate
//     (a pending or uncertain intent, or one in flight): it and its whole graph are kept.
//  2. Grace: an unreachable object is deleted only when it is at least graceSeconds old, both
//     in the listing and in a HEAD issued just before its DELETE; unknown age keeps it. A
//     publisher relies on an existing object only while it is younger than its reuse age
//     (CheckpointOptions::reuseMaxAge, grace / 2 at most) and otherwise rewrites it.
//  3. Window and fence: every DELETE is sent within kVacuumIssueWindow of that HEAD, only
//     after the current head was re-read unchanged, with one attempt answered within
//     kVacuumDeleteDeadline of the HEAD (else vacuum stops: uncertain); a publisher that
//     rewrote an object waits kRewriteSettle, longer than that, before it confirms the object
//     is still there. Each DELETE is a DeleteFence: however late it arrives, the directory
//     store deletes only the version the HEAD saw (a rewrite takes the same lock and gives a
//     later time), and S3 refuses to send it after its window.
#pragma once

#include <array>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/format/head.hpp"
#include "engine/graph/checkpoint.hpp"
#include "engine/ops/usage.hpp"
#include "engine/runtime/budget.hpp"

namespace cairn {

class ObjectStore;

inline constexpr std::chrono::milliseconds kVacuumIssueWindow{500};
inline constexpr std::chrono::milliseconds kVacuumDeleteTimeout{1000};
// From a batch's HEADs to the answer of its last DELETE (DeleteFence::answerBy): a store that
// cannot fence a DELETE against a rewrite (S3) bounds it by this, and a publisher that rewrote
// an object waits longer before it confirms the object (kRewriteSettle), which its reuse age
// in turn outlasts twice (kMinReuseMaxAge).
inline constexpr std::chrono::milliseconds kVacuumDeleteDeadline =
    kVacuumIssueWindow + kVacuumDeleteTimeout;
static_assert(kVacuumDeleteDeadline < kRewriteSettle,
              "a publisher's settle wait must outlast vacuum's DELETE deadline");
static_assert(2 * kRewriteSettle <= kMinReuseMaxAge,
              "a publisher's reuse age must outlast two settle waits");
inline constexpr std::int64_t kDefaultGraceSeconds = 2 * kMaxReuseMaxAge.count();
inline constexpr std::uint64_t kDefaultKeepRevisions = 10;

struct VacuumOptions {
  std::uint64_t keepRevisions = kDefaultKeepRevisions;  // 0 keeps every revision
  // At least twice publisherReuseMaxAge (rule 2): vacuumNamespace refuses a shorter one.
  std::int64_t graceSeconds = kDefaultGraceSeconds;
  // The longest reuse age of any publisher that may run beside this vacuum: by default the
  // longest one a publisher accepts (kMaxReuseMaxAge), so no accepted pair of options can
  // delete what a publisher relies on. An embedder that controls every publisher may lower
  // it; 0 says that none runs (tests: CAIRN_TEST_UNSAFE_GRACE, docs/operations.md).
  std::chrono::seconds publisherReuseMaxAge = kMaxReuseMaxAge;
  bool apply = false;  // false: a dry run, nothing is deleted
  // Seconds since the epoch; the system clock unless a test sets it.
  std::function<std::int64_t()> now;
};

enum class VacuumVerdict : std::uint8_t {
  reclaim,     // unreachable and older than the grace period
  young,       // unreachable, but younger than the grace period
  candidate,   // part of a head copy newer than the current head (a pending intent)
  unknownAge,  // the store gave no modification time
  foreign,     // not an object cairn names (class other): never touched
};
std::string_view vacuumVerdictName(VacuumVerdict v);

struct VacuumObject {
  std::string key;
  ObjectClass cls = ObjectClass::other;
  std::uint64_t size = 0;
  std::int64_t ageSeconds = 0;
  VacuumVerdict verdict = VacuumVerdict::reclaim;
  bool deleted = false;
};

struct VacuumReport {
  std::optional<Head> current;
  std::uint64_t revisions = 0;  // retained heads walked
  bool historyEnds = false;
  std::vector<VacuumObject> unreachable;  // every unreachable object, in key order
  std::array<UsageCount, kObjectClasses> reachable{};
  std::array<UsageCount, kObjectClasses> reclaimable{};  // verdict reclaim
  std::array<UsageCount, kObjectClasses> kept{};         // unreachable, any other verdict
  std::array<UsageCount, kObjectClasses> deleted{};
  std::uint64_t restarts = 0;  // the head moved while deleting: reachability recomputed
  std::uint64_t vanished = 0;  // gone before vacuum deleted them (another vacuum)
  bool verified = false;       // with apply: the current head's graph verified before and after
  bool leaseReleased = false;  // with apply: the vacuum lease removed at the end (else it expires)
  // The store's leftovers (all namespaces'): temporary files of writers that died; with
  // apply, deleted.
  LeftoverUsage leftovers;
};

// On failure, `sofar` (when given) receives what vacuum had found and done when it stopped:
// the objects it deleted are marked `deleted` and counted in `deleted`.
boost::asio::awaitable<Res<VacuumReport>> vacuumNamespace(ObjectStore& store, const Uuid& ns,
                                                          const VacuumOptions& options,
                                                          EngineLimits& limits,
                                                          OperationBudget& budget,
                                                          VacuumReport* sofar = nullptr);

}  // namespace cairn
