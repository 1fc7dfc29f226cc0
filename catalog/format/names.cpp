#include "catalog/format/names.hpp"

#include <algorithm>

namespace cairn::catalog {

namespace {

// The length of the UTF-8 sequence at s[i], or 0 when it is not valid (overlong forms,
// surrogates and code points above U+10FFFF are invalid).
std::size_t utf8Sequence(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  std::uint32_t cp = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
  if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
  if (cp >= 0x80 && cp <= 0x9F) return 0;  // C1 controls
  return n;
}

Failure<Error> refused(std::string_view what, std::string_view why) {
  return err(Errc::usage, std::string(what) + ": " + std::string(why));
}

}  // namespace

Res<void> checkName(std::string_view name, std::string_view what) {
  if (name.empty()) return refused(what, "is empty");
  if (name.size() > kMaxNameBytes) {
    return refused(what, "is longer than " + std::to_string(kMaxNameBytes) + " bytes");
  }
  if (name == "." || name == "..") return refused(what, "may not be \".\" or \"..\"");
  for (std::size_t i = 0; i < name.size();) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (c < 0x20 || c == 0x7F) return refused(what, "holds a control character");
    if (c == '/' || c == '\\') return refused(what, "holds '/' or '\\'");
    const std::size_t n = utf8Sequence(name, i);
    if (n == 0) return refused(what, "is not valid UTF-8 (or holds a C1 control character)");
    i += n;
  }
  return {};
}

Res<void> checkNamespace(const Namespace& ns) {
  if (ns.empty()) return err(Errc::usage, "a namespace has at least one level");
  if (ns.size() > kMaxNamespaceDepth) {
    return err(Errc::usage, "a namespace has at most " + std::to_string(kMaxNamespaceDepth) +
                                " levels, not " + std::to_string(ns.size()));
  }
  for (std::size_t i = 0; i < ns.size(); ++i) {
    if (auto ok = checkName(ns[i], "namespace level " + std::to_string(i + 1)); !ok) return ok;
  }
  return {};
}

Res<void> checkLakeId(std::string_view lake) {
  if (lake.empty() || lake.size() > kMaxLakeIdBytes) {
    return err(Errc::usage, "a lake id is 1.." + std::to_string(kMaxLakeIdBytes) + " bytes");
  }
  for (char c : lake) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    if (!ok) return err(Errc::usage, "a lake id holds only a-z, 0-9, '-' and '_'");
  }
  if (lake.front() == '-' || lake.front() == '_') {
    return err(Errc::usage, "a lake id starts with a letter or a digit");
  }
  return {};
}

Res<void> checkBranchName(std::string_view branch) {
  if (auto ok = checkLakeId(branch); !ok) {
    std::string message = ok.error().message;
    message.replace(0, std::string_view("a lake id").size(), "a branch name");
    return err(Errc::usage, message);
  }
  if (branch == kMainBranch) return err(Errc::usage, "\"main\" is the lake itself, not a branch");
  return {};
}

Res<Namespace> splitNamespace(std::string_view joined) {
  Namespace ns;
  std::size_t start = 0;
  for (;;) {
    const std::size_t sep = joined.find('\x1f', start);
    ns.emplace_back(joined.substr(start, sep == std::string_view::npos ? sep : sep - start));
    if (ns.size() > kMaxNamespaceDepth) break;  // checkNamespace says so
    if (sep == std::string_view::npos) break;
    start = sep + 1;
  }
  if (auto ok = checkNamespace(ns); !ok) return failureOf(ok);
  return ns;
}

std::string joinNamespace(const Namespace& ns, char separator) {
  std::string out;
  for (std::size_t i = 0; i < ns.size(); ++i) {
    if (i > 0) out += separator;
    out += ns[i];
  }
  return out;
}

std::string displayName(const Namespace& ns) { return joinNamespace(ns, '.'); }

std::string displayName(const TableIdent& t) { return displayName(t.ns) + "." + t.name; }

bool isChildOf(const Namespace& child, const Namespace& parent) {
  return child.size() == parent.size() + 1 &&
         std::equal(parent.begin(), parent.end(), child.begin());
}

bool isWithin(const Namespace& inner, const Namespace& outer) {
  return inner.size() >= outer.size() && std::equal(outer.begin(), outer.end(), inner.begin());
}

}  // namespace cairn::catalog
