#include "engine/ops/vacuum_lease.hpp"

#include "engine/format/keys.hpp"
#include "engine/store/store_errors.hpp"

namespace cairn {
namespace asio = boost::asio;

namespace {

// Looking again after a lease vanished or changed under this vacuum: a few times, then busy.
constexpr int kAcquireAttempts = 3;

// A conditional write that did not happen because the object is not what the condition says
// (it exists, or it is another write's): someone else's, not an error of the store.
bool refusedByCondition(StoreStatus s) {
  return s == StoreStatus::preconditionFailed || s == StoreStatus::conflict ||
         s == StoreStatus::missing;
}

Res<Bytes> leaseImage(const Uuid& ns, const Uuid& holder, std::int64_t now) {
  if (now < 0) return err(Errc::usage, "the clock reads before 1970");
  VacuumLease lease{ns, holder, static_cast<std::uint64_t>(now),
                    static_cast<std::uint64_t>(now + kVacuumLeaseTermSeconds)};
  return encodeVacuumLease(lease);
}

// What stands in the way of this vacuum: a live lease (busy) or an object that is not one.
Failure<Error> heldByAnother(const std::string& key, const VacuumLease& theirs) {
  return Failure<Error>{
      Error{Errc::busy,
            key + " is held by another vacuum (run " + theirs.holder.text() + ") until " +
                std::to_string(theirs.expiresUnixSeconds) +
                " (Unix seconds): one vacuum deletes at a time; nothing was deleted",
            key}};
}

}  // namespace

asio::awaitable<Res<HeldLease>> acquireVacuumLease(ObjectStore& store, const Uuid& ns,
                                                   std::int64_t now, OperationBudget& budget) {
  HeldLease held;
  held.key = keys::vacuumLease(ns);
  const Uuid holder = Uuid::random();
  auto image = leaseImage(ns, holder, now);
  if (!image) co_return failureOf(image);
  held.image = std::move(*image);
  held.lease = *decodeVacuumLease(held.image);
  for (int attempt = 0; attempt < kAcquireAttempts; ++attempt) {
    CAIRN_CO_TRY(budget.reserve(0, 0, 1, held.key));
    auto created = co_await store.putIfAbsent(held.key, held.image);
    if (created) {
      held.etag = std::move(*created);
      co_return held;
    }
    if (!refusedByCondition(created.error().status)) {
      co_return storeError(created.error(), held.key);
    }
    CAIRN_CO_TRY(budget.reserve(kVacuumLeaseBytes, 0, 1, held.key));
    auto found = co_await store.get(held.key, kVacuumLeaseBytes + 1);
    if (!found) {
      if (found.error().status == StoreStatus::missing) continue;  // released meanwhile
      co_return storeError(found.error(), held.key);
    }
    auto theirs = decodeVacuumLease(found->bytes);
    if (!theirs || theirs->ns != ns) {
      co_return Failure<Error>{
          Error{Errc::format,
                held.key + " is not this namespace's vacuum lease (" +
                    (theirs ? std::string("another namespace's") : theirs.error().message) +
                    "); remove it once no vacuum runs on the namespace",
                held.key}};
    }
    if (static_cast<std::uint64_t>(now) <=
        theirs->expiresUnixSeconds + static_cast<std::uint64_t>(kVacuumLeaseSkewSeconds)) {
      co_return heldByAnother(held.key, *theirs);
    }
    // Expired: taken over, on condition that it is still the lease that was read.
    CAIRN_CO_TRY(budget.reserve(0, 0, 1, held.key));
    auto taken = co_await store.putIfMatch(held.key, held.image, found->etag);
    if (taken) {
      held.etag = std::move(*taken);
      co_return held;
    }
    if (!refusedByCondition(taken.error().status)) co_return storeError(taken.error(), held.key);
  }
  co_return err(Errc::busy, held.key + " changed under this vacuum " +
                                std::to_string(kAcquireAttempts) +
                                " times: another vacuum is starting; nothing was deleted");
}

asio::awaitable<Res<void>> renewVacuumLease(ObjectStore& store, HeldLease& held, std::int64_t now,
                                            OperationBudget& budget) {
  auto image = leaseImage(held.lease.ns, held.lease.holder, now);
  if (!image) co_return failureOf(image);
  CAIRN_CO_TRY(budget.reserve(0, 0, 1, held.key));
  auto written = co_await store.putIfMatch(held.key, *image, held.etag);
  if (!written) {
    if (refusedByCondition(written.error().status)) {
      co_return Failure<Error>{
          Error{Errc::conflict,
                held.key + " is no longer this vacuum's lease (taken over or removed): vacuum "
                           "stopped before its next DELETE",
                held.key}};
    }
    co_return storeError(written.error(), held.key);
  }
  held.image = std::move(*image);
  held.lease = *decodeVacuumLease(held.image);
  held.etag = std::move(*written);
  co_return Res<void>{};
}

asio::awaitable<bool> releaseVacuumLease(ObjectStore& store, HeldLease& held, std::int64_t now,
                                         OperationBudget& budget) {
  auto renewed = co_await renewVacuumLease(store, held, now, budget);
  if (!renewed) co_return false;
  if (!budget.reserve(0, 0, 1, held.key)) co_return false;
  auto removed = co_await store.remove(held.key);
  co_return removed.ok();
}

}  // namespace cairn
