#include "engine/format/keys.hpp"

#include <algorithm>

namespace cairn {

std::string_view objectClassName(ObjectClass c) {
  switch (c) {
    case ObjectClass::head:
      return "head";
    case ObjectClass::headCopy:
      return "head_copy";
    case ObjectClass::manifest:
      return "manifest";
    case ObjectClass::segment:
      return "segment";
    case ObjectClass::other:
      return "other";
  }
  return "other";
}

namespace keys {

namespace {

constexpr std::string_view kHeadName = "current.head";
constexpr std::string_view kSuffix = ".bin";
constexpr std::size_t kDigestHexDigits = 64;

// The class names of the content-addressed kinds, as in "head-H.bin".
constexpr std::string_view kHeadCopy = "head-";
constexpr std::string_view kManifest = "manifest-";
constexpr std::string_view kSegment = "segment-";

}  // namespace

ObjectClass classify(std::string_view key, std::string_view prefix) {
  if (!key.starts_with(prefix)) return ObjectClass::other;
  std::string_view rest = key.substr(prefix.size());
  if (rest == kHeadName) return ObjectClass::head;
  if (!rest.ends_with(kSuffix)) return ObjectClass::other;
  if (rest.starts_with(kHeadCopy)) return ObjectClass::headCopy;
  if (rest.starts_with(kManifest)) return ObjectClass::manifest;
  if (rest.starts_with(kSegment)) return ObjectClass::segment;
  return ObjectClass::other;
}

std::optional<Digest> digestOf(std::string_view key, std::string_view prefix) {
  std::string_view name;
  switch (classify(key, prefix)) {
    case ObjectClass::headCopy:
      name = kHeadCopy;
      break;
    case ObjectClass::manifest:
      name = kManifest;
      break;
    case ObjectClass::segment:
      name = kSegment;
      break;
    default:
      return std::nullopt;
  }
  std::string_view hex = key.substr(prefix.size() + name.size());
  hex.remove_suffix(kSuffix.size());
  if (hex.size() != kDigestHexDigits || !std::all_of(hex.begin(), hex.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
      })) {
    return std::nullopt;
  }
  auto bytes = fromHex(hex);
  if (!bytes || bytes->size() != 32) return std::nullopt;
  Digest d{};
  std::copy(bytes->begin(), bytes->end(), d.begin());
  return d;
}

}  // namespace keys
}  // namespace cairn
