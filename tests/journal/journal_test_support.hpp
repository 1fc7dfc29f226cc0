// Helpers shared by the journal's torn-tail and room tests.
#pragma once

#include <algorithm>
#include <filesystem>
#include <vector>

#include "base/bytes.hpp"
#include "engine/journal/journal.hpp"

namespace cairn::test {

// The files in `dir` that hold bytes cut from its journal (kTornTailFilePrefix).
inline std::vector<std::filesystem::path> tornFilesIn(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().rfind(kTornTailFilePrefix, 0) == 0) out.push_back(e.path());
  }
  return out;
}

// The written part of a tail that starts at file offset `boundary` (docs/journal.md, "Room"):
// to the end of the 512-byte block that holds its last byte that is not zero, or to its end if
// sooner; empty when it is zeros only. What a cut keeps.
inline Bytes writtenPart(ByteView tail, std::uint64_t boundary) {
  auto last = std::find_if(tail.rbegin(), tail.rend(), [](std::uint8_t b) { return b != 0; });
  const std::uint64_t nonZero = static_cast<std::uint64_t>(tail.rend() - last);
  if (nonZero == 0) return {};
  const std::uint64_t blockEnd =
      (boundary + nonZero + kCrashBlockBytes - 1) / kCrashBlockBytes * kCrashBlockBytes;
  const std::uint64_t n = std::min<std::uint64_t>(blockEnd - boundary, tail.size());
  return Bytes(tail.begin(), tail.begin() + static_cast<std::ptrdiff_t>(n));
}

}  // namespace cairn::test
