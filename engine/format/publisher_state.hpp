// The publisher's durable state (docs/design.md §2.7, docs/formats.md §5): one small file in the
// database directory, written only by durable replace under the directory lock.
//
// v1 layout, all integers big-endian:
//   0    8  magic "CAIRNPST"
//   8    4  version = 1
//   12   4  flags: bit 0 = an expected head is recorded, bit 1 = an intent is pending;
//           all other bits 0
//   16  16  namespace UUID (not nil)
//   32  16  publisher-binding UUID (not nil)
//   48  32  lineage id
//   80   2  u = store URL length, 1..4096
//   82   u  store URL (printable ASCII 0x21..0x7E)
//   then, with flag bit 0 (the expected head):
//        256  its image (a valid v1 head)
//          2  e = ETag length, 1..1024
//          e  ETag observed for that image
//   then, with flag bit 1 (the pending intent):
//        256  candidate image (a valid v1 head; its publication id is the intent's)
//          1  precondition: 1 = If-None-Match: *, 2 = If-Match
//          2  p = ETag length (0 for If-None-Match, 1..1024 for If-Match)
//          p  the precondition's ETag (the predecessor's ETag as originally observed)
//   then 4  CRC32C of every preceding byte
//
// ETags are stored exactly as observed: one strong entity tag, a double quote, 0..1022 bytes of
// 0x21, 0x23..0x7E or 0x80..0xFF, a double quote.
//
// Decoding is exact (the length must be what the flags and lengths imply) and checks, besides
// the CRC: every head decodes; every head carries the state's namespace, publisher and
// lineage; without an expected head a pending candidate has revision 1 and If-None-Match;
// with one, the candidate is its valid successor (requireSuccessor) under If-Match.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/bytes.hpp"
#include "engine/error.hpp"
#include "engine/format/head.hpp"
#include "engine/format/uuid.hpp"

namespace cairn {

// The state file's name in the database directory.
inline constexpr const char* kPublisherStateFile = "publisher.state";
// The marker of a database that publishes nowhere (created without a store, or a read copy):
// without it, a directory without a publisher state is refused, so a lost publisher.state
// never turns a publishing database into a journal-only one without a word.
inline constexpr const char* kJournalOnlyFile = "journal-only";

inline constexpr std::uint8_t kPublisherStateMagic[8] = {'C', 'A', 'I', 'R', 'N', 'P', 'S', 'T'};
inline constexpr std::uint32_t kPublisherStateVersion = 1;
inline constexpr std::size_t kMaxStoreUrlBytes = 4096;
inline constexpr std::size_t kMaxEtagBytes = 1024;

// The head the publisher last saw selected, with the ETag observed for it.
struct ExpectedHead {
  Head head;
  std::string etag;
};

enum class Precondition : std::uint8_t { ifNoneMatch = 1, ifMatch = 2 };

// A candidate that may have been sent: until reconciled, it blocks every new candidate.
struct PendingIntent {
  Head candidate;
  Precondition precondition = Precondition::ifNoneMatch;
  std::string etag;  // If-Match only: the predecessor's ETag as originally observed
};

struct PublisherState {
  std::string storeUrl;
  Uuid ns;
  Uuid publisher;
  Digest lineage{};
  std::optional<ExpectedHead> expected;  // absent: the namespace is uninitialized
  std::optional<PendingIntent> pending;
};

// Whether `etag` is one strong entity tag as described above.
bool isStrongEtag(std::string_view etag);

// Code `format` for anything the layout or the cross-checks above refuse (binding and
// transition faults of the heads keep their own codes).
Res<Bytes> encodePublisherState(const PublisherState& state);
Res<PublisherState> decodePublisherState(ByteView bytes);

// The largest valid state file (all three variable parts at their limits).
inline constexpr std::size_t kMaxPublisherStateBytes =
    82 + kMaxStoreUrlBytes + 256 + 2 + kMaxEtagBytes + 256 + 1 + 2 + kMaxEtagBytes + 4;

}  // namespace cairn
