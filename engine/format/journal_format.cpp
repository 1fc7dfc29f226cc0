#include "engine/format/journal_format.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace cairn {
namespace {

std::string at(std::uint64_t offset) { return " at journal offset " + std::to_string(offset); }

}  // namespace

Res<Bytes> encodeJournalHeader(std::u16string_view databaseId) {
  if (databaseId.empty() || databaseId.size() > limits::kMaxDatabaseIdUnits) {
    return err(Errc::usage, "database id must have 1.." +
                                std::to_string(limits::kMaxDatabaseIdUnits) +
                                " UTF-16 code units, got " + std::to_string(databaseId.size()));
  }
  Bytes out(16 + 2 * databaseId.size() + 4);
  std::memcpy(out.data(), kJournalMagic, 8);
  storeBe32(out.data() + 8, kJournalVersion);
  storeBe32(out.data() + 12, static_cast<std::uint32_t>(databaseId.size()));
  for (std::size_t i = 0; i < databaseId.size(); ++i) {
    storeBe16(out.data() + 16 + 2 * i, databaseId[i]);
  }
  std::size_t crcAt = out.size() - 4;
  storeBe32(out.data() + crcAt, crc32c(ByteView(out.data(), crcAt)));
  return out;
}

Res<std::uint64_t> journalHeaderLength(ByteView first16) {
  if (first16.size() < 16) return err(Errc::format, "journal header shorter than 16 bytes");
  if (std::memcmp(first16.data(), kJournalMagic, 8) != 0) {
    return err(Errc::format, "journal magic is not CAIRNJNL");
  }
  std::uint32_t version = loadBe32(first16.data() + 8);
  if (version != kJournalVersion) {
    return err(Errc::format, "journal version " + std::to_string(version) + " is not 1");
  }
  std::uint32_t n = loadBe32(first16.data() + 12);
  if (n == 0 || n > limits::kMaxDatabaseIdUnits) {
    return err(Errc::format, "journal database id length " + std::to_string(n) +
                                 " is outside 1..32768 code units");
  }
  return std::uint64_t{16} + 2ull * n + 4;
}

Res<JournalHeader> decodeJournalHeader(ByteView bytes) {
  auto length = journalHeaderLength(bytes);
  if (!length) return failureOf(length);
  if (bytes.size() < *length) {
    return err(Errc::format, "journal header needs " + std::to_string(*length) + " bytes, have " +
                                 std::to_string(bytes.size()));
  }
  std::size_t crcAt = static_cast<std::size_t>(*length) - 4;
  if (loadBe32(bytes.data() + crcAt) != crc32c(bytes.first(crcAt))) {
    return err(Errc::format, "journal header CRC32C mismatch");
  }
  JournalHeader h;
  std::size_t n = (crcAt - 16) / 2;
  h.databaseId.resize(n);
  for (std::size_t i = 0; i < n; ++i) h.databaseId[i] = loadBe16(bytes.data() + 16 + 2 * i);
  h.bytes.assign(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(*length));
  return h;
}

void appendFrame(Bytes& out, std::uint64_t sequence, ByteView payload) {
  std::size_t start = out.size();
  out.resize(start + frameLength(payload.size()));
  std::uint8_t* p = out.data() + start;
  storeBe32(p, static_cast<std::uint32_t>(payload.size()));
  storeBe64(p + 4, sequence);
  if (!payload.empty()) std::memcpy(p + 12, payload.data(), payload.size());
  std::size_t crcAt = 12 + payload.size();
  storeBe32(p + crcAt, crc32c(ByteView(p, crcAt)));
}

FrameScanner::FrameScanner(std::uint64_t offset, std::uint64_t nextSequence)
    : position_(offset), boundary_(offset), nextSequence_(nextSequence) {}

Res<void> FrameScanner::feed(ByteView bytes) {
  if (fault_) return Failure<Error>{*fault_};
  auto fault = [&](std::string what) -> Res<void> {
    fault_ = Error{Errc::format, std::move(what) + " in frame" + at(boundary_)};
    return Failure<Error>{*fault_};
  };
  while (!bytes.empty()) {
    switch (state_) {
      case State::header: {
        std::size_t take = std::min<std::size_t>(12 - have_, bytes.size());
        std::memcpy(buf_ + have_, bytes.data(), take);
        have_ += static_cast<std::uint32_t>(take);
        bytes = bytes.subspan(take);
        position_ += take;
        if (have_ < 12) break;
        std::uint32_t length = loadBe32(buf_);
        std::uint64_t sequence = loadBe64(buf_ + 4);
        if (length > limits::kMaxPayloadBytes) {
          return fault("payload length " + std::to_string(length) + " exceeds the cap");
        }
        if (sequence > limits::kMaxPrefixFrames) {
          return fault("sequence " + std::to_string(sequence) + " exceeds the frame limit");
        }
        if (sequence != nextSequence_) {
          return fault("sequence " + std::to_string(sequence) + " where " +
                       std::to_string(nextSequence_) + " was expected");
        }
        crc_ = crc32cExtend(0, ByteView(buf_, 12));
        payloadLeft_ = length;
        have_ = 0;
        state_ = length == 0 ? State::crc : State::payload;
        break;
      }
      case State::payload: {
        std::size_t take = std::min<std::size_t>(payloadLeft_, bytes.size());
        crc_ = crc32cExtend(crc_, bytes.first(take));
        payloadLeft_ -= static_cast<std::uint32_t>(take);
        bytes = bytes.subspan(take);
        position_ += take;
        if (payloadLeft_ == 0) state_ = State::crc;
        break;
      }
      case State::crc: {
        std::size_t take = std::min<std::size_t>(4 - have_, bytes.size());
        std::memcpy(buf_ + have_, bytes.data(), take);
        have_ += static_cast<std::uint32_t>(take);
        bytes = bytes.subspan(take);
        position_ += take;
        if (have_ < 4) break;
        if (loadBe32(buf_) != crc_) return fault("CRC32C mismatch");
        have_ = 0;
        state_ = State::header;
        ++frames_;
        ++nextSequence_;
        boundary_ = position_;
        if (onFrame_) onFrame_(nextSequence_ - 1, boundary_);
        break;
      }
    }
  }
  return {};
}

namespace {

// A frame's header at p (12 bytes): plausible when its length is within the cap and its
// sequence is the expected one.
bool plausibleHeader(const std::uint8_t* p, std::uint64_t sequence) {
  return loadBe32(p) <= limits::kMaxPayloadBytes && loadBe64(p + 4) == sequence;
}

// Whether the bytes of an incomplete header (fewer than 12) can begin the header of a frame
// of `sequence`: a length within the cap, then the sequence's bytes.
bool couldBeginHeader(ByteView part, std::uint64_t sequence) {
  std::uint8_t expected[limits::kFrameHeaderBytes] = {};
  storeBe32(expected, limits::kMaxPayloadBytes);
  storeBe64(expected + 4, sequence);
  std::uint32_t length = 0;
  for (std::size_t i = 0; i < part.size(); ++i) {
    if (i < 4) {
      length = (length << 8) | part[i];
      // The length so far, padded with the largest (then smallest) bytes, must be in range.
      if ((std::uint64_t{length} << (8 * (3 - i))) > limits::kMaxPayloadBytes) return false;
    } else if (part[i] != expected[i]) {
      return false;
    }
  }
  return true;
}

// Whether a complete, valid frame with a sequence in (after, after + 2^20] starts anywhere in
// tail[from, end): evidence that what precedes it was not the end of what was written.
bool laterFrameIn(ByteView tail, std::size_t from, std::uint64_t after) {
  for (std::size_t at = from; at + limits::kFrameOverheadBytes <= tail.size(); ++at) {
    const std::uint8_t* p = tail.data() + at;
    const std::uint64_t sequence = loadBe64(p + 4);
    if (sequence <= after || sequence > after + (1u << 20)) continue;
    const std::uint64_t length = loadBe32(p);
    if (length > limits::kMaxPayloadBytes || at + frameLength(length) > tail.size()) continue;
    const std::size_t crcAt = at + limits::kFrameHeaderBytes + length;
    if (loadBe32(tail.data() + crcAt) == crc32c(tail.subspan(at, crcAt - at))) return true;
  }
  return false;
}

// Whether a block of the file that overlaps tail[0, end) was never written: the part of some
// kCrashBlockBytes-aligned block that lies in the tail (and in the file) is all zeros.
bool unwrittenBlockIn(ByteView tail, std::uint64_t boundary, std::size_t end) {
  end = std::min(end, tail.size());
  std::uint64_t block = boundary - boundary % kCrashBlockBytes;
  for (; block < boundary + end; block += kCrashBlockBytes) {
    const std::size_t lo = static_cast<std::size_t>(std::max(block, boundary) - boundary);
    const std::size_t hi = static_cast<std::size_t>(
        std::min<std::uint64_t>(block + kCrashBlockBytes - boundary, tail.size()));
    if (lo >= hi) continue;
    if (std::all_of(tail.begin() + lo, tail.begin() + hi, [](std::uint8_t b) { return b == 0; })) {
      return true;
    }
  }
  return false;
}

}  // namespace

TailJudgement judgeTail(ByteView whole, std::uint64_t boundary, std::uint64_t nextSequence) {
  const auto judged = [](bool torn, std::string why, std::size_t written = 0) {
    return TailJudgement{torn, written, std::move(why)};
  };
  if (whole.empty()) return judged(false, "no tail");
  // 0. The writer's room: at most one torn batch, then zeros to the end of its room.
  if (whole.size() > kMaxTailBytes) {
    return judged(false, std::to_string(whole.size()) +
                             " bytes follow the last valid frame, more than a torn batch and "
                             "the writer's room (" +
                             std::to_string(kMaxTailBytes) + ") can hold");
  }
  const auto lastWritten =
      std::find_if(whole.rbegin(), whole.rend(), [](std::uint8_t b) { return b != 0; });
  const std::size_t nonZero = static_cast<std::size_t>(whole.rend() - lastWritten);
  if (nonZero == 0) {
    return judged(true, "zeros only after the last frame (the writer's room)");
  }
  // What follows is judged on the bytes that were written: to the end of the block that holds
  // the last byte that is not zero (a crash leaves a block written whole or not at all, and a
  // write cut short ends at a page), or to the file's end. The zeros after them are the room,
  // or blocks of the batch never written; zeros inside that block were written as they are.
  const std::uint64_t blockEnd =
      (boundary + nonZero + kCrashBlockBytes - 1) / kCrashBlockBytes * kCrashBlockBytes;
  const std::size_t written =
      static_cast<std::size_t>(std::min<std::uint64_t>(blockEnd - boundary, whole.size()));
  const ByteView tail = whole.first(written);
  const auto torn = [&](std::string why) { return judged(true, std::move(why), written); };
  const bool headerWhole = tail.size() >= limits::kFrameHeaderBytes;
  const bool plausible = headerWhole && plausibleHeader(tail.data(), nextSequence);
  const std::uint64_t declared = plausible ? frameLength(loadBe32(tail.data())) : 0;
  // 1. At most one batch can be unsynced: one of kMaxBatchBytes, or one frame alone.
  const std::uint64_t bound = std::max(kMaxBatchBytes, declared);
  if (tail.size() > bound) {
    return judged(false, std::to_string(tail.size()) +
                             " bytes follow the last valid frame, "
                             "more than one unsynced batch (" +
                             std::to_string(bound) + ") can hold");
  }
  // 2. The file ends inside the frame: a write cut short, unless the bytes say otherwise.
  if (!headerWhole && !couldBeginHeader(tail, nextSequence)) {
    return judged(
        false, "the last bytes cannot begin a frame of sequence " + std::to_string(nextSequence));
  }
  if (!headerWhole || (plausible && declared > tail.size())) {
    if (laterFrameIn(tail, 1, nextSequence)) {
      return judged(false, "a valid later frame follows an incomplete one (a damaged length)");
    }
    if (plausible) {
      // A complete last frame whose length field alone is wrong: its CRC holds for a length
      // that ends where the written bytes end (its CRC may end in up to four zero bytes).
      Bytes fixed(tail.begin(), tail.end());
      for (std::size_t end = nonZero; end <= std::min(nonZero + 4, tail.size()); ++end) {
        if (end < limits::kFrameOverheadBytes) continue;
        storeBe32(fixed.data(), static_cast<std::uint32_t>(end - limits::kFrameOverheadBytes));
        const std::size_t crcAt = end - 4;
        if (loadBe32(fixed.data() + crcAt) == crc32c(ByteView(fixed).first(crcAt))) {
          return judged(false, "a complete last frame whose length field is damaged");
        }
      }
    }
    return torn("the written bytes end inside the frame of sequence " +
                std::to_string(nextSequence) + " (a write cut short)");
  }
  // 3. A whole frame (or a header) that is wrong: only blocks never written explain it.
  const std::size_t extent = plausible ? static_cast<std::size_t>(declared)
                                       : static_cast<std::size_t>(limits::kFrameHeaderBytes);
  if (unwrittenBlockIn(tail, boundary, extent)) {
    return torn("the frame of sequence " + std::to_string(nextSequence) +
                " holds a block that was never written (zeros)");
  }
  return judged(false, plausible ? "a complete frame with a wrong CRC32C and no unwritten block"
                                 : "a frame header that is neither valid nor unwritten");
}

}  // namespace cairn
