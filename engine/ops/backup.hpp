// Backup (docs/operations.md): copy a namespace's current graph into another store, verify
// it there, and select it there.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "engine/format/head.hpp"
#include "engine/runtime/budget.hpp"

namespace cairn {

class ObjectStore;

struct BackupReport {
  Head head;                         // the source's current head, pinned when the backup began
  std::optional<Head> targetBefore;  // the target's head before (absent for a first backup)
  std::uint64_t objectsCopied = 0;
  std::uint64_t objectsPresent = 0;  // already in the target (checked by the verification)
  std::uint64_t bytesCopied = 0;
  std::uint64_t objectsVerified = 0;
  std::uint64_t bytesVerified = 0;
  bool headUpdated = false;
};

// Pins the source's current head (one read), copies its head copy, manifest and segments into
// the target (only those missing there), verifies the target's copy of the whole graph deeply
// (every byte, the rebuilt prefix hash), and only then selects it in the target with a
// conditional PUT on the target's head. The target's head must be absent or an older head of
// the same lineage (never a rollback, never another history). Run again, it copies only what
// is new.
boost::asio::awaitable<Res<BackupReport>> backupNamespace(ObjectStore& source, ObjectStore& target,
                                                          const Uuid& ns, EngineLimits& limits,
                                                          OperationBudget& budget);

}  // namespace cairn
