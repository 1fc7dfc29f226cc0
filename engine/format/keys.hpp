// Object keys (docs/design.md §3), relative to the store's root: how cairn names its objects
// and how a listed key is read back. One file for both directions, so they cannot disagree.
//   ns-N-current.head       the namespace's head (the only mutable object)
//   ns-N-head-H.bin         the immutable copy of a head, H its id
//   ns-N-manifest-H.bin     a manifest, H the SHA-256 of its bytes
//   ns-N-segment-H.bin      a segment, H the SHA-256 of its bytes
//   ns-N-vacuum.lease       the lease of the vacuum deleting in the namespace, while one runs
// N: the namespace UUID as 32 lowercase hex digits; H: 64 lowercase hex digits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/sha256.hpp"
#include "engine/format/uuid.hpp"

namespace cairn {

// What a key under a namespace's prefix names.
enum class ObjectClass : std::uint8_t { head, headCopy, manifest, segment, other };
inline constexpr std::size_t kObjectClasses = 5;
std::string_view objectClassName(ObjectClass c);

namespace keys {

// "ns-N-": every key of the namespace starts with it.
inline std::string namespacePrefix(const Uuid& ns) { return "ns-" + ns.compactHex() + "-"; }

inline std::string currentHead(const Uuid& ns) { return namespacePrefix(ns) + "current.head"; }
inline std::string headCopy(const Uuid& ns, const Digest& h) {
  return namespacePrefix(ns) + "head-" + toHex(h) + ".bin";
}
inline std::string manifest(const Uuid& ns, const Digest& h) {
  return namespacePrefix(ns) + "manifest-" + toHex(h) + ".bin";
}
inline std::string segment(const Uuid& ns, const Digest& h) {
  return namespacePrefix(ns) + "segment-" + toHex(h) + ".bin";
}
inline std::string vacuumLease(const Uuid& ns) { return namespacePrefix(ns) + "vacuum.lease"; }

// The class of `key` under `nsPrefix` (namespacePrefix); `other` for anything cairn does not
// name so (never touched by reclamation).
ObjectClass classify(std::string_view key, std::string_view nsPrefix);
// The digest a head copy, manifest or segment key carries (64 lowercase hex digits between
// its class's name and ".bin"); nullopt for any other key.
std::optional<Digest> digestOf(std::string_view key, std::string_view nsPrefix);

}  // namespace keys
}  // namespace cairn
