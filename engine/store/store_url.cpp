#include "engine/store/store_url.hpp"

#include <algorithm>
#include <optional>
#include <set>

#include "base/bytes.hpp"
#include "engine/store/object_store.hpp"
#include "net/http/http_client.hpp"
#include "net/s3/s3_client.hpp"

namespace cairn {
namespace {

constexpr std::string_view kFileScheme = "file:";
constexpr std::string_view kFileAuthority = "//";
constexpr std::string_view kS3Scheme = "s3://";
constexpr std::uint64_t kMinTimeoutMs = 100;
constexpr std::uint64_t kMaxTimeoutMs = 3'600'000;

Failure<std::string> bad(std::string why) { return {std::move(why)}; }

std::optional<std::string> percentDecode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    auto hex = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    int hi = hex(s[i + 1]), lo = hex(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

bool validBucket(std::string_view b) {
  if (b.size() < 3 || b.size() > 63) return false;
  for (char c : b) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  }
  return true;
}

// `value` as a whole number of decimal digits within [low, high] (leading zeros allowed, at most
// 9 digits), else nullopt.
std::optional<std::uint64_t> decimalWithin(const std::string& value, std::uint64_t low,
                                           std::uint64_t high) {
  if (value.empty() || value.size() > 9) return std::nullopt;
  std::uint64_t n = 0;
  for (char c : value) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (n < low || n > high) return std::nullopt;
  return n;
}

// One parameter of an s3:// URL, its value decoded and free of control characters: checked
// against its allowed forms and set in `out`.
Result<void, std::string> setParameter(const std::string& name, const std::string& value,
                                       StoreUrl& out) {
  if (name == "endpoint") {
    if (auto endpoint = net::parseEndpoint(value); !endpoint) {
      return bad("endpoint " + escapeForDisplay(value) + ": " + endpoint.error());
    }
    out.endpoint = value;
    out.endpointSource = "url";
  } else if (name == "region") {
    if (!net::isValidRegion(value)) return bad("region must be 1..64 letters, digits, '-' or '_'");
    out.region = value;
    out.regionSource = "url";
  } else if (name == "dialect") {
    if (value != "auto" && value != "rgw" && value != "aws") {
      return bad("dialect must be auto, rgw or aws");
    }
    out.dialect = value;
  } else if (name == "addressing") {
    if (value != "auto" && value != "path" && value != "virtual") {
      return bad("addressing must be auto, path or virtual");
    }
    out.addressing = value;
    out.virtualHost = value == "virtual";
    if (value != "auto") out.addressingSource = "url";
  } else if (name == "ca") {
    out.caFile = value;
    out.caSource = "url";
  } else if (name == "timeout_ms") {
    // Per attempt: write the request and read the whole response. 100 ms .. 1 hour.
    const auto ms = decimalWithin(value, kMinTimeoutMs, kMaxTimeoutMs);
    if (!ms) return bad("timeout_ms must be a whole number of milliseconds, 100..3600000");
    out.requestTimeoutMs = *ms;
  } else if (name == "connections") {
    const auto n = decimalWithin(value, 1, kMaxStoreConnections);
    if (!n) {
      return bad("connections must be a whole number, 1.." + std::to_string(kMaxStoreConnections));
    }
    out.connections = static_cast<std::size_t>(*n);
  } else {
    return bad("unknown store URL parameter \"" + escapeForDisplay(name) + "\"");
  }
  return {};
}

// The query of an s3:// URL: name=value pairs, each name at most once.
Result<void, std::string> parseQuery(std::string_view query, StoreUrl& out) {
  std::set<std::string> seen;
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    auto eq = pair.find('=');
    if (eq == std::string_view::npos) {
      return bad("query parameter without a value: " + escapeForDisplay(pair));
    }
    std::string name(pair.substr(0, eq));
    if (!seen.insert(name).second) {
      return bad("store URL parameter \"" + escapeForDisplay(name) + "\" is given twice");
    }
    auto value = percentDecode(pair.substr(eq + 1));
    if (!value) return bad("bad percent-encoding in " + escapeForDisplay(name));
    // Every value ends up in a header, a path or a message: no control character in any.
    if (std::any_of(value->begin(), value->end(),
                    [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
      return bad("store URL parameter " + escapeForDisplay(name) + " holds a control character");
    }
    if (auto set = setParameter(name, *value, out); !set) return set;
  }
  return {};
}

// s3://BUCKET[/ROOT]?QUERY
Result<void, std::string> parseS3(std::string_view rest, StoreUrl& out) {
  out.kind = StoreUrl::Kind::s3;
  std::string_view query;
  if (auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  auto slash = rest.find('/');
  out.bucket = std::string(rest.substr(0, slash));
  if (!validBucket(out.bucket)) {
    return bad("invalid bucket name \"" + escapeForDisplay(out.bucket) + "\"");
  }
  if (slash != std::string_view::npos) {
    std::string root(rest.substr(slash + 1));
    while (!root.empty() && root.back() == '/') root.pop_back();
    if (!root.empty() && !isValidObjectKey(root)) {
      return bad("invalid root prefix \"" + escapeForDisplay(root) + "\"");
    }
    out.root = root;
  }
  return parseQuery(query, out);
}

// The length of the scheme `text` starts with ("s3" in "s3://b"), or 0: RFC 3986's
// ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) before a ':'.
std::size_t schemeLength(std::string_view text) {
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  if (text.empty() || !alpha(text[0])) return 0;
  for (std::size_t i = 1; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ':') return i;
    if (!alpha(c) && !(c >= '0' && c <= '9') && c != '+' && c != '-' && c != '.') return 0;
  }
  return 0;
}

// A directory store's path, absolute (against the working directory) and lexically normal,
// without a trailing '/'.
Result<void, std::string> setDirectory(std::filesystem::path path, StoreUrl& out) {
  std::error_code ec;
  path = std::filesystem::absolute(path, ec);
  if (ec)
    return bad("cannot make " + escapeForDisplay(path.string()) + " absolute: " + ec.message());
  path = path.lexically_normal();
  if (path.has_relative_path() && !path.has_filename()) path = path.parent_path();
  out.directory = std::move(path);
  return {};
}

// file:///PATH or file:/PATH (RFC 8089, no host); the path is taken as written.
Result<void, std::string> parseFile(std::string_view rest, StoreUrl& out) {
  if (rest.starts_with(kFileAuthority)) {
    rest.remove_prefix(kFileAuthority.size());
    if (rest.empty() || rest.front() != '/') {
      return bad("file URLs name no host: file:///path or file:/path");
    }
  }
  if (rest.empty() || rest.front() != '/') {
    return bad("file URLs need an absolute path: file:///path or file:/path");
  }
  return setDirectory(std::filesystem::path(rest), out);
}

// Whether `inner` is `outer` or lies below it (both absolute and normal).
bool within(const std::filesystem::path& inner, const std::filesystem::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;  // the empty last element of a path ending in '/'
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

}  // namespace

Result<StoreUrl, std::string> parseStoreUrl(std::string_view url) {
  StoreUrl out;
  out.text = std::string(url);
  if (url.empty()) return bad("empty store URL");
  if (url.starts_with(kS3Scheme)) {
    if (auto parsed = parseS3(url.substr(kS3Scheme.size()), out); !parsed) {
      return failureOf(parsed);
    }
    return out;
  }
  if (url.starts_with(kFileScheme)) {
    if (auto parsed = parseFile(url.substr(kFileScheme.size()), out); !parsed) {
      return failureOf(parsed);
    }
    return out;
  }
  if (const std::size_t scheme = schemeLength(url); scheme != 0) {
    return bad("unknown store URL scheme \"" + escapeForDisplay(url.substr(0, scheme)) +
               "\" (file: or s3://; a directory whose name has a ':' is given as ./" +
               escapeForDisplay(url) + ")");
  }
  if (auto set = setDirectory(std::filesystem::path(url), out); !set) return failureOf(set);
  return out;
}

Result<std::string, std::string> recordedStoreUrl(std::string_view url,
                                                  const std::filesystem::path& databaseDir) {
  auto parsed = parseStoreUrl(url);
  if (!parsed) return failureOf(parsed);
  if (parsed->kind == StoreUrl::Kind::s3) return parsed->text;
  // Symbolic links resolved where the paths exist, so that no alias hides an overlap.
  std::error_code ec;
  const auto store = std::filesystem::weakly_canonical(parsed->directory, ec);
  const auto database =
      ec ? std::filesystem::path{}
         : std::filesystem::weakly_canonical(std::filesystem::absolute(databaseDir, ec), ec);
  if (ec) return bad("cannot resolve " + escapeForDisplay(url) + ": " + ec.message());
  if (within(store, database) || within(database, store)) {
    return bad("the directory store " + escapeForDisplay(store.string()) + " and the database " +
               escapeForDisplay(database.string()) +
               " overlap: neither may be, or lie inside, the other");
  }
  return parsed->directory.string();
}

}  // namespace cairn
