// The vacuum lease held by an applying vacuum (docs/operations.md, "One vacuum at a time";
// the object: engine/format/vacuum_lease.hpp). Two vacuums deleting at once can delete an
// object a publisher has just written again, on the strength of a HEAD taken before another
// vacuum's DELETE (docs/model/reclamation.pml found it): so one vacuum deletes at a time.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <string>

#include "base/bytes.hpp"
#include "engine/error.hpp"
#include "engine/format/uuid.hpp"
#include "engine/format/vacuum_lease.hpp"
#include "engine/runtime/budget.hpp"
#include "engine/store/object_store.hpp"

namespace cairn {

// Each write of the lease holds it this long; it is written again before every delete batch.
inline constexpr std::int64_t kVacuumLeaseTermSeconds = 120;
// A renewal answered later than this (counted from before it was sent) stops vacuum: its
// term, counted from the clock read before the request, may no longer cover the next batch.
inline constexpr std::chrono::seconds kVacuumLeaseRenewWithin{30};
// A lease is taken over only this long after it expired: the bound on the difference between
// two vacuums' clocks.
inline constexpr std::int64_t kVacuumLeaseSkewSeconds = 30;

struct HeldLease {
  std::string key;
  VacuumLease lease;
  Bytes image;
  std::string etag;  // of this vacuum's latest write: every later write is conditional on it
};

// Creates the lease (If-None-Match: *), or takes over one that expired more than the skew ago
// (If-Match on the ETag it was read with). A live lease: Errc::busy, naming its holder and
// expiry; an object there that is not a lease: Errc::format. Nothing is deleted either way.
boost::asio::awaitable<Res<HeldLease>> acquireVacuumLease(ObjectStore& store, const Uuid& ns,
                                                          std::int64_t now,
                                                          OperationBudget& budget);

// Writes the lease again with a fresh term, conditionally on this vacuum's latest write: a
// lease taken over or removed meanwhile is Errc::conflict, and the vacuum must stop.
boost::asio::awaitable<Res<void>> renewVacuumLease(ObjectStore& store, HeldLease& held,
                                                   std::int64_t now, OperationBudget& budget);

// Renews it (proving it is still this vacuum's) and then deletes it; a lease that is no
// longer this vacuum's is left alone. False when it was not removed (it then expires).
boost::asio::awaitable<bool> releaseVacuumLease(ObjectStore& store, HeldLease& held,
                                                std::int64_t now, OperationBudget& budget);

}  // namespace cairn
