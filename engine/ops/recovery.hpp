// Recovery (docs/design.md §7.1, docs/operations.md): rebuild a journal directory from a verified
// checkpoint in the store. Pinned read recovery takes the current head or an exact head id
// (never an older head by itself); writable recovery also installs the publisher state so
// this directory continues the namespace.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "engine/format/head.hpp"
#include "engine/runtime/budget.hpp"

namespace cairn {

namespace io {
class Uring;
}
class ObjectStore;

struct RecoverRequest {
  std::string storeUrl;  // recorded in the publisher state when writable
  Uuid ns;
  std::optional<Digest> headId;  // an exact head (current or an immutable copy)
  bool writable = false;         // only for the current head
  // Tests only: called at the steps' ends ("claimed": DIR locked and found fresh; "written":
  // the rebuilt journal durable beside its place; "marked": the marker or state durable, the
  // journal not yet in place), to kill the process there or race it.
  std::function<void(std::string_view point)> fault;
};

struct Recovered {
  Head head;
  std::uint64_t objects = 0;  // manifest + segments fetched (twice: verified, then written)
  std::uint64_t bytes = 0;    // journal bytes written
};

// DIR must not exist, or hold nothing but its lock file, or what an interrupted recovery left
// (its journal.recovering without a journal; removed). Verifies the head's whole graph (every
// segment byte and the rebuilt prefix hash); then takes DIR's lock (Errc::busy if another
// process owns it) and keeps it to the end, checks DIR again under it, writes the journal
// (header from the manifest, then every segment body) beside its place and fsyncs it, checks
// its length, SHA-256 and frames against the head, writes the marker or the publisher state,
// and last puts the journal in place (never over an existing one). On failure exactly the
// files this run created are removed (by identity); DIR and its lock file stay.
boost::asio::awaitable<Res<Recovered>> recoverDatabase(io::Uring& uring, ObjectStore& store,
                                                       const std::filesystem::path& dir,
                                                       const RecoverRequest& request,
                                                       EngineLimits& limits,
                                                       OperationBudget& budget);

}  // namespace cairn
