// Names in a lake: namespaces (multi-level), tables and lakes, and the checks that keep them
// path-safe and bounded (docs/catalog.md, "Names"). Pure.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/error.hpp"

namespace cairn::catalog {

// A namespace is 1..kMaxNamespaceDepth levels; a level, a table name or a branch name is
// 1..kMaxNameBytes bytes of valid UTF-8 without control characters (C0, DEL, C1), '/' or '\',
// and is neither "." nor "..".
inline constexpr std::size_t kMaxNamespaceDepth = 8;
inline constexpr std::size_t kMaxNameBytes = 255;
// A lake id: 1..64 bytes of [a-z0-9-_], starting with a letter or digit (it appears in URLs,
// in `warehouse=` and in log records).
inline constexpr std::size_t kMaxLakeIdBytes = 64;

using Namespace = std::vector<std::string>;

struct TableIdent {
  Namespace ns;
  std::string name;
  friend bool operator==(const TableIdent&, const TableIdent&) = default;
  friend auto operator<=>(const TableIdent&, const TableIdent&) = default;
};

// Errc::usage naming what is wrong ("namespace level 2: ...").
Res<void> checkName(std::string_view name, std::string_view what);
Res<void> checkNamespace(const Namespace& ns);
Res<void> checkLakeId(std::string_view lake);
// A catalog branch's name: the lake id's rule (so `LAKE~BRANCH` splits at its one '~'), and
// not "main" (the lake's own state). Branches nest at most kMaxBranchDepth deep (a branch of
// main has depth 1).
inline constexpr std::size_t kMaxBranchDepth = 8;
inline constexpr std::string_view kMainBranch = "main";
Res<void> checkBranchName(std::string_view branch);

// The REST path form of a namespace: levels joined by the unit separator 0x1F (the caller
// percent-decodes the path segment first); the levels are checked.
Res<Namespace> splitNamespace(std::string_view joined);
std::string joinNamespace(const Namespace& ns, char separator = '\x1f');
// "a.b.t" style, for messages only.
std::string displayName(const Namespace& ns);
std::string displayName(const TableIdent& t);

// Whether `child` is directly below `parent` (one level more, same leading levels).
bool isChildOf(const Namespace& child, const Namespace& parent);
// Whether `inner` is `outer` or below it.
bool isWithin(const Namespace& inner, const Namespace& outer);

}  // namespace cairn::catalog
