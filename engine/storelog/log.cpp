#include "engine/storelog/log.hpp"

#include <algorithm>
#include <boost/asio/this_coro.hpp>
#include <vector>

#include "base/assert.hpp"

#include "engine/format/checks.hpp"
#include "engine/format/journal_format.hpp"
#include "engine/format/keys.hpp"
#include "engine/format/limits.hpp"
#include "engine/format/segment.hpp"
#include "engine/runtime/task_group.hpp"
#include "engine/store/object_store.hpp"
#include "engine/store/store_errors.hpp"

namespace cairn::catalog {

namespace asio = boost::asio;

namespace {

// Segments a read fetches at once.
constexpr std::size_t kSegmentWindow = 16;

Failure<Error> corrupt(const std::string& key, const std::string& why) {
  return Failure<Error>{Error{Errc::corrupt, key + ": " + why, key}};
}

std::uint32_t readU32(ByteView b, std::size_t at) {
  return (std::uint32_t(b[at]) << 24) | (std::uint32_t(b[at + 1]) << 16) |
         (std::uint32_t(b[at + 2]) << 8) | std::uint32_t(b[at + 3]);
}

std::uint64_t readU64(ByteView b, std::size_t at) {
  return (std::uint64_t(readU32(b, at)) << 32) | readU32(b, at + 4);
}

// One segment the manifest names: fetched bounded by its declared length, the exact object
// (SHA-256), a valid segment (header and every frame) whose header says what the manifest says.
asio::awaitable<Res<Bytes>> fetchSegment(ObjectStore& store, const Uuid& ns, const Digest& lineage,
                                         const ManifestSegment& s, OperationBudget& budget) {
  const std::string key = keys::segment(ns, s.objectSha256);
  CAIRN_CO_TRY(budget.reserve(s.objectLength, s.count, 1, key));
  auto got = co_await store.get(key, s.objectLength);
  if (!got) co_return storeError(got.error(), key);
  if (got->bytes.size() != s.objectLength || sha256(got->bytes) != s.objectSha256) {
    co_return corrupt(key, "not the segment its manifest names (SHA-256 or length differs)");
  }
  auto h = decodeSegment(got->bytes);
  if (!h) co_return corrupt(key, h.error().message);
  if (h->lineage != lineage || h->firstSequence != s.firstSequence || h->count != s.count ||
      h->journalStart != s.journalStart || h->journalEnd != s.journalEnd) {
    co_return corrupt(key, "its header does not say what its manifest says");
  }
  co_return std::move(got->bytes);
}

// The frames of a checked segment's body, to the sink in order.
Res<void> feedFrames(ByteView body, std::uint64_t firstSequence, const RecordSink& sink) {
  std::size_t at = 0;
  std::uint64_t expected = firstSequence;
  while (at < body.size()) {
    const std::uint32_t length = readU32(body, at);
    const std::uint64_t sequence = readU64(body, at + 4);
    CAIRN_ASSERT(sequence == expected);  // decodeSegment checked every frame
    if (sink) {
      if (auto ok = sink(sequence, body.subspan(at + 12, length)); !ok) return ok;
    }
    at += limits::kFrameOverheadBytes + length;
    ++expected;
  }
  return {};
}

// What readLog found, before the records are read.
struct Plan {
  std::vector<ManifestSegment> segments;  // to read, in order
  Sha256Lane prefix;                      // the state they are hashed on from
  std::uint64_t length = 0;               // the prefix length before them
  LogRead::State state = LogRead::State::rebuilt;
};

// A walk from a later head that stopped at a base `from` knows: its own manifest, or its run's
// base (buildCandidate: a run's manifests name one base and list every segment since). Checks
// that base as fetchManifestChain checks one it fetches, as far as `from` verified it (the same
// object, the journal header, the prefix, an earlier generation), and answers the segments after
// `from`'s prefix, or nothing when the history may have forked after the run's base: the
// manifest reached must be later than `from`'s and list `from`'s segments first, exactly.
Res<std::optional<std::vector<ManifestSegment>>> afterKnown(const LogIdentity& id,
                                                            const LogCursor& from,
                                                            const ManifestChain& chain) {
  const Manifest& mine = from.manifest.manifest;
  const ManifestLink& last = chain.links.back();
  const ManifestBase& base = *last.manifest.base;
  const std::string key = keys::manifest(id.ns, last.sha256);
  const bool exact = base.sha256 == from.manifest.sha256;
  if (base.length != (exact ? from.manifest.length : mine.base->length)) {
    return corrupt(key, "names a base of another length than that manifest has");
  }
  if (last.manifest.journalHeader != id.journalHeader) {
    return corrupt(key, "a manifest of another journal header");
  }
  if (base.prefix != (exact ? mine.prefix : mine.base->prefix)) {
    return corrupt(key, "names a base with another prefix than that manifest declares");
  }
  std::vector<ManifestSegment> segments = chain.segments();
  if (exact) {
    if (last.manifest.generation <= mine.generation) {
      return corrupt(key, "names a base of a generation not earlier than its own");
    }
    return std::optional{std::move(segments)};
  }
  if (last.manifest.generation <= mine.generation || segments.size() <= mine.segments.size() ||
      !std::equal(mine.segments.begin(), mine.segments.end(), segments.begin())) {
    return std::optional<std::vector<ManifestSegment>>{};
  }
  segments.erase(segments.begin(),
                 segments.begin() + static_cast<std::ptrdiff_t>(mine.segments.size()));
  return std::optional{std::move(segments)};
}

// The manifest chain of `head` down to what `from` already verified (extended, afterKnown) or
// to its root (rebuilt).
asio::awaitable<Res<Plan>> planRead(ObjectStore& store, const LogIdentity& id, const Head& head,
                                    const std::optional<LogCursor>& from, ManifestLink top,
                                    OperationBudget& budget, std::uint64_t& requests) {
  Plan plan;
  std::function<bool(const Digest&)> known;
  if (from && head.fields().revision > from->revision()) {
    known = [&](const Digest& d) {
      const auto& base = from->manifest.manifest.base;
      return d == from->manifest.sha256 || (base && d == base->sha256);
    };
  }
  auto chain = co_await fetchManifestChain(store, id.ns, std::move(top), budget, known);
  if (!chain) co_return failureOf(chain);
  requests += chain->links.size() - 1;
  if (chain->stoppedAtKnown) {
    auto after = afterKnown(id, *from, *chain);
    if (!after) co_return failureOf(after);
    if (*after) {
      plan.segments = std::move(**after);
      plan.prefix = from->prefix;
      plan.length = from->head.fields().prefixLength;
      plan.state = LogRead::State::extended;
      co_return plan;
    }
    // Forked after the run's base (or not provably not): on to the root.
    ManifestLink restart = chain->links.back();  // named: not a temporary of the co_await
    auto rest = co_await fetchManifestChain(store, id.ns, std::move(restart), budget);
    if (!rest) co_return failureOf(rest);
    requests += rest->links.size() - 1;
    chain->links.insert(chain->links.end(), std::make_move_iterator(rest->links.begin() + 1),
                        std::make_move_iterator(rest->links.end()));
    chain->stoppedAtKnown = false;
  }
  const Manifest& root = chain->links.back().manifest;
  if (root.journalHeader != id.journalHeader) {
    const std::string key = keys::manifest(id.ns, chain->links.back().sha256);
    co_return corrupt(key, "the log's first manifest holds another journal header");
  }
  plan.segments = chain->segments();
  plan.prefix.update(id.journalHeader);
  plan.length = id.journalHeader.size();
  co_return plan;
}

// The candidate that follows `at` with `records`: its segment, manifest and head.
struct Candidate {
  Bytes segment;
  ManifestLink manifest;
  Bytes manifestBytes;
  Head head;
  Sha256Lane prefix;
};

// Its manifest continues `at`'s run: it names the run's base and lists the run's segments and
// the new one, until the run holds `runSegments`; then it starts a new run on `at`'s manifest.
// So a cold reader walks one manifest per run, not one per append, and each manifest stays
// under runSegments entries (docs/decisions/0048-catalog-log-manifests-come-runs.md).
Res<Candidate> buildCandidate(const LogIdentity& id, const std::optional<LogCursor>& at,
                              const std::vector<Bytes>& records, std::size_t runSegments) {
  if (records.empty()) return err(Errc::usage, "an append holds at least one record");
  const std::uint64_t first = at ? at->sequence() + 1 : 1;
  const std::uint64_t start = at ? at->head.fields().prefixLength : id.journalHeader.size();
  Bytes body;
  for (std::size_t i = 0; i < records.size(); ++i) appendFrame(body, first + i, records[i]);
  SegmentHeader sh{id.lineage, first, static_cast<std::uint32_t>(records.size()), start,
                   start + body.size()};
  Candidate c;
  CAIRN_ASSIGN(c.segment, encodeSegment(sh, body));
  c.prefix = at ? at->prefix : Sha256Lane{};
  if (!at) c.prefix.update(id.journalHeader);
  c.prefix.update(body);

  Manifest m;
  m.generation = at ? at->manifest.manifest.generation + 1 : 1;
  m.journalHeader = id.journalHeader;
  m.lineage = id.lineage;
  m.prefix = Prefix{first + records.size() - 1, sh.journalEnd, c.prefix.finish()};
  if (at) {
    const Manifest& previous = at->manifest.manifest;
    if (previous.base && previous.segments.size() < runSegments) {
      m.base = previous.base;
      m.segments = previous.segments;
    } else {
      m.base = ManifestBase{at->manifest.sha256, at->manifest.length, previous.prefix};
    }
  }
  m.segments.push_back(ManifestSegment{first, sh.count, sh.journalStart, sh.journalEnd,
                                       c.segment.size(), sha256(c.segment)});
  CAIRN_ASSIGN(c.manifestBytes, encodeManifest(m));
  c.manifest = ManifestLink{sha256(c.manifestBytes), c.manifestBytes.size(), std::move(m)};

  HeadFields f;
  f.ns = id.ns;
  f.publisher = id.publisher;
  f.publication = Uuid::random();
  f.lineage = id.lineage;
  f.revision = at ? at->revision() + 1 : 1;
  f.manifestSha256 = c.manifest.sha256;
  f.manifestLength = static_cast<std::uint32_t>(c.manifest.length);
  f.prefixSequence = c.manifest.manifest.prefix.sequence;
  f.prefixLength = c.manifest.manifest.prefix.length;
  f.prefixSha256 = c.manifest.manifest.prefix.sha256;
  if (at) f.predecessor = at->head.reference();
  CAIRN_ASSIGN(c.head, makeHead(f));
  return c;
}

// Every immutable object of an append, written concurrently (create-if-absent; an existing one
// must be byte-identical).
asio::awaitable<Res<void>> writeImmutables(ObjectStore& store,
                                           const std::vector<std::pair<std::string, ByteView>>& all,
                                           OperationBudget& budget) {
  for (const auto& [key, bytes] : all) CAIRN_CO_TRY(budget.reserve(bytes.size(), 0, 1, key));
  TaskGroup tasks(co_await asio::this_coro::executor);
  for (const auto& object : all) {
    tasks.start([&store, &object]() -> asio::awaitable<Res<void>> {
      auto put = co_await store.putImmutable(object.first, object.second);
      if (!put) co_return storeError(put.error(), object.first);
      co_return Res<void>{};
    });
  }
  co_return co_await tasks.wait();
}

// Whether `candidate` is in the chain of `current` (a later revision): walks back through the
// head copies to the candidate's revision. std::nullopt when that cannot be told (the history
// is gone, or further back than `maxDistance`).
asio::awaitable<Res<std::optional<bool>>> inChain(ObjectStore& store, const Head& current,
                                                  const Head& candidate, std::uint64_t maxDistance,
                                                  OperationBudget& budget) {
  const std::uint64_t want = candidate.fields().revision;
  const std::uint64_t distance = current.fields().revision - want;
  if (distance > maxDistance) co_return std::optional<bool>{};
  std::optional<bool> found;
  const std::function<asio::awaitable<Res<bool>>(const Head&)> visit =
      [&](const Head& h) -> asio::awaitable<Res<bool>> {
    if (h.fields().revision != want) co_return true;
    found = h.id() == candidate.id();
    co_return false;
  };
  auto walked = co_await walkChain(store, current, distance + 1, budget, visit);
  if (!walked) co_return failureOf(walked);
  co_return found;
}

}  // namespace

Res<LogIdentity> LogIdentity::make(const Uuid& ns, const Uuid& publisher,
                                   std::u16string_view databaseId) {
  if (ns.isNil() || publisher.isNil()) return err(Errc::usage, "a log's UUIDs are not nil");
  LogIdentity id;
  id.ns = ns;
  id.publisher = publisher;
  CAIRN_ASSIGN(id.journalHeader, encodeJournalHeader(databaseId));
  id.lineage = sha256(id.journalHeader);
  return id;
}

asio::awaitable<Res<LogRead>> readLog(ObjectStore& store, const LogIdentity& id,
                                      const std::optional<LogCursor>& from, const RecordSink& sink,
                                      const std::function<void()>& reset, OperationBudget& budget) {
  LogRead out;
  const std::string headKey = keys::currentHead(id.ns);
  auto seen = co_await observeHead(store, id.ns, budget);
  out.requests = 1;
  if (!seen) co_return failureOf(seen);
  if (seen->missing()) co_return out;
  if (seen->malformed()) co_return Failure<Error>{Error{Errc::format, seen->damage, headKey}};
  const Head& head = *seen->head;
  if (auto bound = requireBinding(head, id.ns, id.publisher, id.lineage); !bound) {
    co_return Failure<Error>{
        Error{bound.error().code, headKey + ": " + bound.error().message, headKey}};
  }
  if (from && from->head.id() == head.id()) {
    out.state = LogRead::State::unchanged;
    out.cursor = *from;
    out.cursor->etag = seen->etag;
    co_return out;
  }
  auto top = co_await fetchManifest(store, head, budget);
  ++out.requests;
  if (!top) co_return failureOf(top);
  const HeadFields& f = head.fields();
  ManifestLink link{f.manifestSha256, f.manifestLength, std::move(*top)};
  ManifestLink kept = link;
  auto plan = co_await planRead(store, id, head, from, std::move(link), budget, out.requests);
  if (!plan) co_return failureOf(plan);
  if (plan->state == LogRead::State::rebuilt && reset) reset();
  // The segments, kSegmentWindow at a time (a log's segments are small: one append each), fed
  // to the sink in order; a read of a long log is then bounded by its chain of manifests.
  std::uint64_t length = plan->length;
  const std::vector<ManifestSegment>& segments = plan->segments;
  for (std::size_t begin = 0; begin < segments.size(); begin += kSegmentWindow) {
    const std::size_t end = std::min(segments.size(), begin + kSegmentWindow);
    std::vector<Bytes> fetched(end - begin);
    {
      TaskGroup tasks(co_await asio::this_coro::executor);
      for (std::size_t i = begin; i < end; ++i) {
        tasks.start([&, i]() -> asio::awaitable<Res<void>> {
          auto bytes = co_await fetchSegment(store, id.ns, id.lineage, segments[i], budget);
          if (!bytes) co_return failureOf(bytes);
          fetched[i - begin] = std::move(*bytes);
          co_return Res<void>{};
        });
      }
      auto all = co_await tasks.wait();
      out.requests += end - begin;
      if (!all) co_return failureOf(all);
    }
    for (std::size_t i = begin; i < end; ++i) {
      ByteView body = ByteView(fetched[i - begin]).subspan(limits::kSegmentHeaderBytes);
      CAIRN_CO_TRY(feedFrames(body, segments[i].firstSequence, sink));
      plan->prefix.update(body);
      length += body.size();
    }
  }
  if (length != f.prefixLength || plan->prefix.finish() != f.prefixSha256) {
    co_return corrupt(keys::manifest(id.ns, f.manifestSha256),
                      "the segments do not rebuild the prefix its head declares");
  }
  out.state = plan->state;
  out.cursor = LogCursor{head, seen->etag, std::move(kept), plan->prefix};
  co_return out;
}

asio::awaitable<Res<Appended>> appendLog(ObjectStore& store, const LogIdentity& id,
                                         const std::optional<LogCursor>& at, const LogAppend& what,
                                         OperationBudget& budget, const AppendOptions& options) {
  if (at && at->etag.empty()) {
    co_return err(Errc::usage, "an append needs the ETag its predecessor was read with");
  }
  auto built = buildCandidate(id, at, what.records, std::max<std::size_t>(1, options.runSegments));
  if (!built) co_return failureOf(built);
  Candidate& c = *built;
  std::vector<std::pair<std::string, ByteView>> immutables;
  for (const auto& [key, bytes] : what.objects) immutables.emplace_back(key, bytes);
  immutables.emplace_back(keys::segment(id.ns, sha256(c.segment)), c.segment);
  immutables.emplace_back(keys::manifest(id.ns, c.manifest.sha256), c.manifestBytes);
  immutables.emplace_back(keys::headCopy(id.ns, c.head.id()),
                          ByteView(c.head.image().data(), c.head.image().size()));
  CAIRN_CO_TRY(co_await writeImmutables(store, immutables, budget));

  Appended out;
  out.candidate = c.head;
  auto committed = [&](std::string etag) {
    out.outcome = Appended::Outcome::committed;
    out.cursor = LogCursor{c.head, std::move(etag), c.manifest, c.prefix};
    return out;
  };
  const std::optional<std::string> precondition =
      at ? std::optional<std::string>(at->etag) : std::nullopt;
  bool everUnanswered = false;
  auto unknown = [&](std::string why) {
    out.outcome = Appended::Outcome::unknown;
    out.detail = std::move(why);
    return out;
  };
  auto lost = [&](std::string why) {
    out.outcome = Appended::Outcome::lost;
    out.detail = std::move(why);
    return out;
  };
  for (int resends = 0;; ++resends) {
    auto put = co_await putHead(store, c.head, precondition, budget);
    if (!put) {
      // The budget refused this send: nothing went out now, but an earlier one may still land.
      if (everUnanswered)
        co_return unknown("an earlier PUT went unanswered: " + put.error().message);
      co_return failureOf(put);
    }
    if (put->outcome == SelectOutcome::selected) co_return committed(put->etag);
    if (put->outcome == SelectOutcome::refused && !everUnanswered) {
      // 412 to the only send: its precondition did not hold, so nothing of this append was
      // applied. The caller re-reads the head to rebase.
      co_return lost("the store refused the head: " +
                     std::string(storeStatusName(put->answer.status)));
    }
    const bool unanswered = put->outcome == SelectOutcome::uncertain;
    const bool raced = put->outcome == SelectOutcome::lostRace;
    everUnanswered = everUnanswered || unanswered;
    // Every other answer is settled by reading the head back, and "lost" is said only of what
    // the head shows: an unanswered send (applied or not, or still on its way), a lost race
    // (409, RGW's 500: an answer, but no proof that nothing was written), a failure (a 2xx
    // without a usable ETag was applied), a refusal after an earlier unanswered send.
    auto seen = co_await observeHead(store, id.ns, budget);
    if (!seen || seen->malformed()) {
      co_return unknown("the head could not be read back: " +
                        (!seen ? seen.error().message : seen->damage));
    }
    const bool predecessorShown = seen->missing() ? !at : (at && seen->head->id() == at->head.id());
    if (seen->present() && seen->head->id() == c.head.id()) co_return committed(seen->etag);
    if (predecessorShown) {
      if (unanswered && resends < options.maxResends) continue;  // the same bytes, once more
      if (unanswered) {
        co_return unknown("the head PUT went unanswered " + std::to_string(resends + 1) +
                          " times and the head still shows its predecessor");
      }
      if (everUnanswered) {
        co_return unknown(
            "the store refused the head while an earlier, unanswered PUT of it "
            "may still land");
      }
      // Answered, and the head unchanged: nothing was selected.
      if (raced) co_return lost("the store answered a lost race; the head is unchanged");
      co_return storeError(put->answer, keys::currentHead(id.ns));
    }
    if (seen->missing()) co_return unknown("the head is gone");
    const Head& current = *seen->head;
    if (current.fields().revision <= c.head.fields().revision) {
      // Another head holds this revision: the candidate's precondition can never hold again.
      co_return lost("another head was selected (revision " +
                     std::to_string(current.fields().revision) + ")");
    }
    auto found = co_await inChain(store, current, c.head, options.maxChainCheck, budget);
    if (!found) co_return unknown("the head's history could not be read: " + found.error().message);
    if (!*found) co_return unknown("the head's history does not reach this revision");
    if (**found) co_return committed(std::string());  // an ancestor: no ETag of its own now
    co_return lost("another head was selected at revision " +
                   std::to_string(c.head.fields().revision));
  }
}

}  // namespace cairn::catalog
