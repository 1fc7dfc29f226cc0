// Graph verification (docs/design.md §5.5): fetch a checkpoint's manifest and segments,
// check every object against what names it, rebuild the prefix hash, and compare it with the
// actual owned journal. Fails closed with a typed error naming the object and the reason.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <optional>

#include "engine/format/head.hpp"
#include "engine/format/manifest.hpp"
#include "engine/runtime/budget.hpp"

namespace cairn {

class Journal;
class ObjectStore;

struct VerifyOptions {
  // false: the manifest (bytes, hash, structure) and every segment's existence and size.
  // true: also every segment byte (hash, header, frames), the rebuilt prefix hash, and the
  // comparison with the journal.
  bool deep = false;
  // Deep only: the rebuilt journal bytes [0, length) must hash to sha256 (an earlier
  // checkpoint of the same journal: the graph extends it, it does not fork from it).
  struct Prefix {
    std::uint64_t length = 0;
    Digest sha256{};
  };
  std::optional<Prefix> extends;
};

struct VerifyProgress {
  std::uint64_t objectsDone = 0;
  std::uint64_t objectsTotal = 0;
  std::uint64_t bytesDone = 0;
  std::uint64_t bytesTotal = 0;
};

struct VerifiedGraph {
  Manifest manifest;
  std::uint64_t objects = 0;  // manifest + segments checked
  std::uint64_t bytes = 0;    // object bytes fetched
};

using ProgressFn = std::function<void(const VerifyProgress&)>;

// Verifies the graph of `head`: the manifest it names (bound by bindManifest) and below.
// `journal` (optional) is the one a deep verification compares the graph with; its lineage
// and header must be the manifest's. An open journal (its frames scanned, Journal::open) has
// its prefix at the cutoff checked against the manifest's before the first request. An
// unscanned one (Journal::openUnscanned) needs no scan: its length is checked to reach the
// cutoff, and the comparison then finds every byte of its prefix equal to a segment whose
// frames (CRC, sequence, length) and hash were checked, so the prefix is the graph's. Its
// frames after the cutoff are not the verification's to check (the next open checks them).
boost::asio::awaitable<Res<VerifiedGraph>> verifyHeadGraph(ObjectStore& store, const Head& head,
                                                           Journal* journal, EngineLimits& limits,
                                                           OperationBudget& budget,
                                                           const VerifyOptions& options,
                                                           const ProgressFn& progress = {});

// The same from a manifest named by its SHA-256 and length.
boost::asio::awaitable<Res<VerifiedGraph>> verifyManifestGraph(
    ObjectStore& store, const Uuid& ns, const Digest& manifestSha256, std::uint64_t manifestLength,
    Journal* journal, EngineLimits& limits, OperationBudget& budget, const VerifyOptions& options,
    const ProgressFn& progress = {});

}  // namespace cairn
