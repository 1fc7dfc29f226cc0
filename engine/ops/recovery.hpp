// Recovery (docs/design.md §7.1, docs/operations.md): rebuild a journal directory from a verified
// checkpoint in the store. Pinned read recovery takes the current head or an exact head id
// (never an older head by itself); writable recovery also installs the publisher state so
// this directory continues the namespace.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <filesystem>
#include <optional>
#include <string>

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
};

struct Recovered {
  Head head;
  std::uint64_t objects = 0;  // manifest + segments fetched (twice: verified, then written)
  std::uint64_t bytes = 0;    // journal bytes written
};

// DIR must not exist or be empty. Verifies the head's whole graph (every segment byte and the
// rebuilt prefix hash), writes the journal (header from the manifest, then every segment
// body), fsyncs it, and checks the written file's length and SHA-256 against the head before
// it is put in place; then opens it as a journal. Nothing is left in DIR on failure.
boost::asio::awaitable<Res<Recovered>> recoverDatabase(io::Uring& uring, ObjectStore& store,
                                                       const std::filesystem::path& dir,
                                                       const RecoverRequest& request,
                                                       EngineLimits& limits,
                                                       OperationBudget& budget);

}  // namespace cairn
