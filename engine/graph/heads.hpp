// Heads (docs/design.md §5): reading and selecting a namespace's checkpoint heads, with one
// behaviour for every caller (the publisher, backup, repair, recovery, usage, vacuum, and the
// status, log and verify commands; the catalog's table logs). Nothing here knows a journal.
//
// Every operation reserves what it sends from the operation's budget *before* the request
// (one request and 256 bytes for a head, the declared length for a manifest), and keeps
// failure, absence and "unknown" apart:
//   - only 404 NoSuchKey is absence (missing); a 403, a missing bucket or an unanswered
//     request is an error (the store's);
//   - an object at a head's key that is not a valid 256-byte head (over or under 256 bytes,
//     or a damaged image) is malformed: an observation, with the ETag to replace it, never
//     taken for a missing head;
//   - a head copy is always checked against the exact reference (id and length) its
//     successor, or the caller, names.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/format/head.hpp"
#include "engine/format/manifest.hpp"
#include "engine/runtime/budget.hpp"
#include "engine/store/object_store.hpp"

namespace cairn {

// The current head object as one GET showed it: the bytes and the strong ETag of that one
// response.
struct HeadObservation {
  enum class State : std::uint8_t { missing, malformed, present };
  State state = State::missing;
  std::optional<Head> head;  // present
  std::string etag;          // present, or malformed (the ETag to replace the damaged object)
  std::string damage;        // malformed: why (its size, or why it does not decode)

  bool missing() const { return state == State::missing; }
  bool present() const { return state == State::present; }
  bool malformed() const { return state == State::malformed; }
};

// GETs ns-N-current.head once. An object over 256 bytes is malformed (its size and ETag from
// a HEAD, one more request, reserved too); so is a 256-byte object that does not decode. (The
// head's bindings, its namespace among them, are the caller's to check: requireBinding.)
boost::asio::awaitable<Res<HeadObservation>> observeHead(ObjectStore& store, const Uuid& ns,
                                                         OperationBudget& budget);

// The immutable copy ns-N-head-ID.bin that `ref` names, checked against it (and the
// namespace); std::nullopt when it is gone (reclaimed, or never written).
boost::asio::awaitable<Res<std::optional<Head>>> readHeadCopy(ObjectStore& store, const Uuid& ns,
                                                              const HeadReference& ref,
                                                              OperationBudget& budget);

// Installs `head`'s immutable copy: create-if-absent; an existing copy must be identical.
boost::asio::awaitable<Res<void>> installHeadCopy(ObjectStore& store, const Head& head,
                                                  OperationBudget& budget);

// Walks from `from` (visited first) through its predecessors' copies, newest first, each
// checked against the reference its successor names: at most `limit` heads (0: all), or until
// `visit` says false. Where a predecessor's copy is gone the history ends (historyEnds); a
// damaged copy is an error.
struct ChainWalk {
  std::uint64_t visited = 0;
  bool historyEnds = false;
};
boost::asio::awaitable<Res<ChainWalk>> walkChain(
    ObjectStore& store, const Head& from, std::uint64_t limit, OperationBudget& budget,
    const std::function<boost::asio::awaitable<Res<bool>>(const Head&)>& visit);

// One conditional PUT of `candidate` on its namespace's current head: If-Match with `etag`
// exactly as it was observed, or If-None-Match: * when `etag` is std::nullopt (no head yet).
// Never unconditional, never a token rebuilt from content. The store's answer, typed:
enum class SelectOutcome : std::uint8_t {
  selected,   // the store holds the candidate now (etag: its ETag)
  refused,    // 412: the condition did not hold; nothing was written
  lostRace,   // 409, or the dialect's answer to a lost race (RGW's 500): nothing was written
  uncertain,  // no complete answer: it may or may not have been applied
  failed,     // anything else (denied, malformed answer)
};
struct Selection {
  SelectOutcome outcome = SelectOutcome::failed;
  std::string etag;     // selected
  StoreOutcome answer;  // otherwise: what the store said
};
// The error is the budget's only: every answer of the store is a Selection.
boost::asio::awaitable<Res<Selection>> putHead(ObjectStore& store, const Head& candidate,
                                               const std::optional<std::string>& etag,
                                               OperationBudget& budget);

// putHead, then, for any answer but success, one re-read that settles it: the candidate is
// the current head after all (selected: the answer was lost after the store applied it), or
// it is not, and the answer stands (refused, lost race, uncertain, failed). For callers that
// put a head once (backup, repair, the catalog); the publisher's table (docs/protocol.md) does
// more with an uncertain answer: it re-sends.
boost::asio::awaitable<Res<Selection>> putHeadAndSettle(ObjectStore& store, const Head& candidate,
                                                        const std::optional<std::string>& etag,
                                                        OperationBudget& budget);

// The manifest `head` names: fetched (bounded by the length the head declares), and bound to
// it (SHA-256, length, lineage, prefix). A missing manifest is Errc::missing. A chained one
// (format 2) is returned as it is: its bases are fetchManifestChain's.
boost::asio::awaitable<Res<Manifest>> fetchManifest(ObjectStore& store, const Head& head,
                                                    OperationBudget& budget);

// A manifest and the object it was read from.
struct ManifestLink {
  Digest sha256{};
  std::uint64_t length = 0;
  Manifest manifest;
};

// A manifest and the bases it chains to (docs/formats.md §3.1), newest first: links[0] is the
// manifest the walk started from, and each next one is the base its predecessor names.
struct ManifestChain {
  std::vector<ManifestLink> links;
  // The walk stopped before a base the caller already knows (`known` said so): links end with
  // a chained manifest, and segments()/flattened() are not the whole prefix.
  bool stoppedAtKnown = false;

  // Every segment of links[0]'s prefix in journal order (the root's first); with
  // stoppedAtKnown, only those after the known base's prefix.
  std::vector<ManifestSegment> segments() const;
  // links[0] as one format-1 manifest listing every segment of its prefix (the chain must
  // reach its root: not stoppedAtKnown).
  Manifest flattened() const;
  // Adds to `out` the store keys of namespace `ns` that the links name: each link's manifest
  // and every segment it lists.
  void addKeys(const Uuid& ns, std::set<std::string>& out) const;
};

// Walks from `top` (the manifest at sha256/length, already fetched and checked by the caller)
// through its bases. Each base is fetched bounded by the length its successor declares
// (reserved from `budget` first) and must be exactly that object (SHA-256 and length), decode,
// carry the same journal header, declare exactly the prefix its successor names, and be of an
// earlier generation (so the walk ends: every step lowers the generation and the prefix).
// A missing base is Errc::missing; any other mismatch Errc::corrupt, naming its key. With
// `known`, the walk stops before fetching a base for which it returns true.
// (Pass `top` as a named object moved in: GCC 12 destroys a braced temporary argument of a
// coroutine twice.)
boost::asio::awaitable<Res<ManifestChain>> fetchManifestChain(
    ObjectStore& store, const Uuid& ns, ManifestLink top, OperationBudget& budget,
    const std::function<bool(const Digest&)>& known);
// The whole chain (no base is known). Not a coroutine: `known` is a static, never a temporary.
inline boost::asio::awaitable<Res<ManifestChain>> fetchManifestChain(ObjectStore& store,
                                                                     const Uuid& ns,
                                                                     ManifestLink top,
                                                                     OperationBudget& budget) {
  static const std::function<bool(const Digest&)> none;
  return fetchManifestChain(store, ns, std::move(top), budget, none);
}

// fetchManifest and fetchManifestChain together: the head's manifest with every segment of its
// prefix (a chained one flattened), for callers that need the whole graph (verification,
// recovery). `chain`, when given, receives the links (backup and vacuum need their keys).
boost::asio::awaitable<Res<Manifest>> fetchWholeManifest(ObjectStore& store, const Head& head,
                                                         OperationBudget& budget,
                                                         ManifestChain* chain = nullptr);

}  // namespace cairn
