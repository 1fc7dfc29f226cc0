// The journal's bytes (docs/formats.md §1): header, frames, and an incremental frame scanner.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "base/bytes.hpp"
#include "base/crc32c.hpp"
#include "base/sha256.hpp"
#include "engine/error.hpp"
#include "engine/format/limits.hpp"

namespace cairn {

inline constexpr char kJournalMagic[8] = {'C', 'A', 'I', 'R', 'N', 'J', 'N', 'L'};
inline constexpr std::uint32_t kJournalVersion = 1;

struct JournalHeader {
  std::u16string databaseId;  // exact UTF-16 code units
  Bytes bytes;                // the complete canonical header image

  Digest lineageId() const { return sha256(bytes); }
};

// Fresh canonical header bytes; `usage` error for an empty or over-long id.
Res<Bytes> encodeJournalHeader(std::u16string_view databaseId);
// Decodes the header at the start of `bytes` (which may continue with frames).
Res<JournalHeader> decodeJournalHeader(ByteView bytes);
// Bytes needed to know the full header length: 16. Given those, the total length or an error.
Res<std::uint64_t> journalHeaderLength(ByteView first16);

// Appends one canonical frame to `out`.
void appendFrame(Bytes& out, std::uint64_t sequence, ByteView payload);
inline std::uint64_t frameLength(std::uint64_t payloadLength) {
  return limits::kFrameOverheadBytes + payloadLength;
}

// The largest group-commit batch (one O_DSYNC write): JournalOptions::maxBatchBytes is
// at most this. A batch is larger only when it is one frame alone.
inline constexpr std::uint64_t kMaxBatchBytes = std::uint64_t{4} << 20;
// The granularity of what a crash can lose inside a written range: a sector (and a page is a
// whole number of them). Unwritten blocks of a file read back as zeros.
inline constexpr std::uint64_t kCrashBlockBytes = 512;
// The most bytes after the last valid frame a crash can leave: one batch, or one largest frame.
inline constexpr std::uint64_t kMaxTornTailBytes =
    std::max<std::uint64_t>(kMaxBatchBytes, limits::kFrameOverheadBytes + limits::kMaxPayloadBytes);

// The writer keeps zeros, written and durable, ahead of its frames: the file's length is the
// next multiple of this past the last batch (docs/journal.md, "Room"). A crash can leave up
// to one room of zeros beyond the bytes of the last batch.
inline constexpr std::uint64_t kJournalRoomBytes = std::uint64_t{16} << 20;
// The most bytes after the last valid frame the writer can leave: a torn batch and its room.
inline constexpr std::uint64_t kMaxTailBytes = kMaxTornTailBytes + kJournalRoomBytes;

// What the bytes after the last valid frame are (docs/journal.md, "Torn tails"). A crash can
// leave only the last batch incomplete: its bytes end early (the file ends inside a frame),
// or whole blocks of it were never written and read back as zeros. Anything else there (a
// flipped byte in a complete frame, a wrong sequence, a length that the bytes contradict) is
// damage that no crash explains.
// Zeros after the last batch's bytes are the writer's room (kJournalRoomBytes), or blocks of
// that batch never written: the bytes to the end of the kCrashBlockBytes block that holds the
// last one not zero (or to the file's end, if sooner) are judged, and a tail of zeros only is
// the room, with nothing to cut.
struct TailJudgement {
  bool torn = false;  // a crash explains it: the bytes may be cut (and kept as evidence)
  // When torn: the tail's written bytes, as above (what a cut keeps as evidence); 0 when the
  // tail is zeros only (the room: nothing to cut).
  std::size_t writtenBytes = 0;
  std::string reason;  // what was found, for messages
};
// `tail`: the file's bytes from `boundary` (the end of the last valid frame) to its end;
// `nextSequence`: the sequence the frame at `boundary` must carry.
TailJudgement judgeTail(ByteView tail, std::uint64_t boundary, std::uint64_t nextSequence);

// Checks frames fed in any chunking without buffering payloads. Each fault is reported once
// with the absolute byte offset of the frame that holds it; after a fault, feed() keeps
// returning it.
class FrameScanner {
 public:
  // `offset`: the absolute position of the first byte fed; `nextSequence`: the expected first.
  FrameScanner(std::uint64_t offset, std::uint64_t nextSequence);

  Res<void> feed(ByteView bytes);

  // Called after each valid frame with its sequence and the absolute offset where it ends.
  void onFrame(std::function<void(std::uint64_t sequence, std::uint64_t end)> f) {
    onFrame_ = std::move(f);
  }

  // True when the bytes fed so far end exactly at a frame boundary.
  bool atBoundary() const { return state_ == State::header && have_ == 0; }
  std::uint64_t framesDone() const { return frames_; }
  std::uint64_t nextSequence() const { return nextSequence_; }
  // Absolute offset just after the last complete, valid frame.
  std::uint64_t boundaryOffset() const { return boundary_; }
  // Absolute offset just after the last byte fed.
  std::uint64_t position() const { return position_; }

 private:
  enum class State : std::uint8_t { header, payload, crc };
  std::uint64_t position_;
  std::uint64_t boundary_;
  std::uint64_t nextSequence_;
  std::uint64_t frames_ = 0;
  State state_ = State::header;
  std::uint8_t buf_[12] = {};
  std::uint32_t have_ = 0;  // bytes of header/crc gathered in buf_
  std::uint32_t payloadLeft_ = 0;
  std::uint32_t crc_ = 0;
  std::optional<Error> fault_;
  std::function<void(std::uint64_t, std::uint64_t)> onFrame_;
};

}  // namespace cairn
