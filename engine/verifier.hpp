// Graph verification (DESIGN.md §2.2-§2.4, §5): fetch a checkpoint's manifest and segments,
// check every object against what names it, rebuild the prefix hash, and compare it with the
// actual owned journal. Fails closed with a typed error naming the object and the reason.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <optional>

#include "engine/budget.hpp"
#include "engine/format/head.hpp"
#include "engine/format/manifest.hpp"

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

// The journal a deep verification compares the graph with: none, one open, or one whose
// frames are still being scanned (Journal::openUnscanned, then Journal::scan). Scanning every
// frame takes about 0.3 s per GiB here, so the command line scans while the graph downloads
// and is compared: the comparisons read the journal's bytes meanwhile (equal to a checked
// segment's, they are checked), and the scan's verdict, then the journal's prefix at the
// checkpoint's cutoff, are checked once the segments are done, before anything the segments
// found (its lineage and header before the first request). `scanned` is called at most once.
// A journal passed as open must have been scanned (Journal::open, or Journal::scan done).
class JournalSource {
 public:
  using ScanFn = std::function<boost::asio::awaitable<Res<void>>()>;
  JournalSource(Journal* journal = nullptr) : journal_(journal) {}  // NOLINT: implicit
  static JournalSource scanning(Journal* journal, ScanFn scanned) {
    JournalSource s(journal);
    s.scanned_ = std::move(scanned);
    return s;
  }
  bool present() const { return journal_ != nullptr; }
  // Open, its frames scanned: its records are known.
  bool isOpen() const { return journal_ != nullptr && !scanned_; }
  Journal* journal() const { return journal_; }
  const ScanFn& scanned() const { return scanned_; }

 private:
  Journal* journal_ = nullptr;
  ScanFn scanned_;
};

// Verifies the graph of `head`: the manifest it names (bound by bindManifest) and below.
// With a journal and deep verification, the journal's prefix at the head's cutoff must equal
// the checkpoint's (an open journal is checked before the first segment request; one still
// scanning, its lineage and header then, its prefix once the segments are done).
boost::asio::awaitable<Res<VerifiedGraph>> verifyHeadGraph(
    ObjectStore& store, const Head& head, JournalSource journal, EngineLimits& limits,
    OperationBudget& budget, const VerifyOptions& options, const ProgressFn& progress = {});

// The same from a manifest named by its SHA-256 and length.
boost::asio::awaitable<Res<VerifiedGraph>> verifyManifestGraph(
    ObjectStore& store, const Uuid& ns, const Digest& manifestSha256, std::uint64_t manifestLength,
    JournalSource journal, EngineLimits& limits, OperationBudget& budget,
    const VerifyOptions& options, const ProgressFn& progress = {});

}  // namespace cairn
