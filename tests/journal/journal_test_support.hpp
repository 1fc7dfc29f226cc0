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

// `bytes` up to its last byte that is not zero: what a cut keeps (the zeros after it read as
// the writer's room, docs/journal.md).
inline Bytes writtenPart(ByteView bytes) {
  auto last = std::find_if(bytes.rbegin(), bytes.rend(), [](std::uint8_t b) { return b != 0; });
  return Bytes(bytes.begin(), bytes.begin() + (bytes.rend() - last));
}

}  // namespace cairn::test
