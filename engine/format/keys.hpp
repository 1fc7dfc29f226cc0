// Object keys (DESIGN.md §3), relative to the store's root.
#pragma once

#include <string>

#include "base/sha256.hpp"
#include "engine/format/uuid.hpp"

namespace cairn::keys {

inline std::string currentHead(const Uuid& ns) { return "ns-" + ns.compactHex() + "-current.head"; }
inline std::string headCopy(const Uuid& ns, const Digest& h) {
  return "ns-" + ns.compactHex() + "-head-" + toHex(h) + ".bin";
}
inline std::string manifest(const Uuid& ns, const Digest& h) {
  return "ns-" + ns.compactHex() + "-manifest-" + toHex(h) + ".bin";
}
inline std::string segment(const Uuid& ns, const Digest& h) {
  return "ns-" + ns.compactHex() + "-segment-" + toHex(h) + ".bin";
}

}  // namespace cairn::keys
