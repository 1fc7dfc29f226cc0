#include "catalog/access/config.hpp"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

#include <boost/json.hpp>

#include "catalog/format/names.hpp"
#include "catalog/iceberg/table_metadata.hpp"
#include "engine/store/store_url.hpp"
#include "io/file.hpp"

namespace cairn::catalog {

namespace json = boost::json;

namespace {

constexpr std::uint64_t kConfigFormat = 1;

Failure<Error> bad(const std::string& what) { return err(Errc::usage, "configuration: " + what); }

class Obj {
 public:
  Obj(const json::value& v, std::string path) : path_(std::move(path)) {
    if (v.is_object()) o_ = &v.get_object();
  }
  bool ok() const { return o_ != nullptr; }
  const std::string& path() const { return path_; }
  Res<void> only(std::initializer_list<std::string_view> keys) const {
    std::set<std::string_view> known(keys);
    for (const auto& kv : *o_) {
      if (!known.count(std::string_view(kv.key().data(), kv.key().size()))) {
        return bad(path_ + ": unknown key \"" + std::string(kv.key()) + "\"");
      }
    }
    return {};
  }
  const json::value* find(std::string_view k) const {
    auto it = o_->find(json::string_view(k.data(), k.size()));
    return it == o_->end() ? nullptr : &it->value();
  }
  Res<std::string> string(std::string_view k) const {
    const json::value* v = find(k);
    if (!v || !v->is_string()) return bad(path_ + "." + std::string(k) + ": a string is needed");
    return std::string(v->get_string());
  }
  Res<std::optional<std::int64_t>> optInt(std::string_view k) const {
    const json::value* v = find(k);
    if (!v || v->is_null()) return std::optional<std::int64_t>{};
    if (v->is_int64()) return std::optional<std::int64_t>{v->get_int64()};
    if (v->is_uint64() && v->get_uint64() <= std::uint64_t(INT64_MAX)) {
      return std::optional<std::int64_t>{std::int64_t(v->get_uint64())};
    }
    return bad(path_ + "." + std::string(k) + ": an integer is needed");
  }
  Res<void> unsignedInto(std::string_view k, std::uint64_t& out, std::uint64_t lo,
                         std::uint64_t hi) const {
    auto v = optInt(k);
    if (!v) return failureOf(v);
    if (!*v) return {};
    if (**v < 0 || std::uint64_t(**v) < lo || std::uint64_t(**v) > hi) {
      return bad(path_ + "." + std::string(k) + ": outside " + std::to_string(lo) + ".." +
                 std::to_string(hi));
    }
    out = std::uint64_t(**v);
    return {};
  }

 private:
  std::string path_;
  const json::object* o_ = nullptr;
};

Res<void> readServer(const json::value& v, ServerSettings& s) {
  Obj o(v, "server");
  if (!o.ok()) return bad("server: an object is needed");
  CAIRN_TRY(o.only({"max-body-bytes", "max-connections", "max-connections-per-address",
                    "idle-timeout-seconds", "max-in-flight", "cache-bytes", "commit-rebases",
                    "tls-certificate", "tls-private-key"}));
  CAIRN_TRY(o.unsignedInto("max-body-bytes", s.maxBodyBytes, 1024, kMaxTableMetadataBytes));
  CAIRN_TRY(o.unsignedInto("max-connections", s.maxConnections, 1, 100'000));
  CAIRN_TRY(o.unsignedInto("max-connections-per-address", s.maxConnectionsPerAddress, 1, 100'000));
  CAIRN_TRY(o.unsignedInto("idle-timeout-seconds", s.idleTimeoutSeconds, 1, 3600));
  CAIRN_TRY(o.unsignedInto("max-in-flight", s.maxInFlight, 1, 100'000));
  CAIRN_TRY(o.unsignedInto("cache-bytes", s.cacheBytes, 0, std::uint64_t{1} << 40));
  CAIRN_TRY(o.unsignedInto("commit-rebases", s.commitRebases, 0, 100));
  for (auto [key, field] : {std::pair{"tls-certificate", &s.tlsCertificate},
                            std::pair{"tls-private-key", &s.tlsPrivateKey}}) {
    if (o.find(key)) {
      auto text = o.string(key);
      if (!text) return failureOf(text);
      *field = *text;
    }
  }
  if (s.tlsCertificate.has_value() != s.tlsPrivateKey.has_value()) {
    return bad("server: tls-certificate and tls-private-key go together");
  }
  return {};
}

Res<void> readDurations(const json::value& v, const std::string& path, CredentialDurations& d) {
  Obj o(v, path);
  if (!o.ok()) return bad(path + ": an object of class -> seconds is needed");
  CAIRN_TRY(o.only({"table-read", "table-write", "result-read", "archive"}));
  for (auto c : kCredentialClasses) {
    std::uint64_t seconds = d.of(c);
    CAIRN_TRY(o.unsignedInto(credentialClassName(c), seconds, kMinCredentialSeconds,
                             kMaxCredentialSeconds));
    d.set(c, static_cast<std::uint32_t>(seconds));
  }
  return {};
}

Res<std::string> readPrefix(const Obj& o, std::string_view key, std::string fallback) {
  if (!o.find(key)) return fallback;
  auto text = o.string(key);
  if (!text) return failureOf(text);
  if (auto ok = checkLakePrefix(*text); !ok) {
    return bad(o.path() + "." + std::string(key) + ": " + ok.error().message);
  }
  return *text;
}

Res<LakeEntry> readLake(const std::string& id, const json::value& v) {
  Obj l(v, "lakes." + id);
  if (!l.ok()) return bad(l.path() + ": an object is needed");
  CAIRN_TRY(l.only({"store", "sts", "credential-seconds", "results-prefix", "archive-prefix"}));
  LakeEntry lake;
  lake.id = id;
  CAIRN_ASSIGN(lake.store, l.string("store"));
  auto url = parseStoreUrl(lake.store);
  if (!url) return bad(l.path() + ".store: " + url.error());
  if (const json::value* sts = l.find("sts")) {
    Obj s(*sts, l.path() + ".sts");
    if (!s.ok()) return bad(s.path() + ": an object is needed");
    CAIRN_TRY(s.only({"role-arn", "endpoint", "region"}));
    StsSettings settings;
    CAIRN_ASSIGN(settings.roleArn, s.string("role-arn"));
    if (settings.roleArn.empty()) return bad(s.path() + ".role-arn: empty");
    if (s.find("endpoint")) CAIRN_ASSIGN(settings.endpoint, s.string("endpoint"));
    if (s.find("region")) CAIRN_ASSIGN(settings.region, s.string("region"));
    if (url->kind != StoreUrl::Kind::s3) {
      return bad(s.path() + ": a directory store vends no credentials");
    }
    lake.sts = std::move(settings);
  }
  if (const json::value* d = l.find("credential-seconds")) {
    CAIRN_TRY(readDurations(*d, l.path() + ".credential-seconds", lake.durations));
  }
  CAIRN_ASSIGN(lake.resultsPrefix, readPrefix(l, "results-prefix", lake.resultsPrefix));
  CAIRN_ASSIGN(lake.archivePrefix, readPrefix(l, "archive-prefix", lake.archivePrefix));
  return lake;
}

Res<TokenEntry> readToken(const json::value& v, std::size_t i) {
  Obj o(v, "tokens[" + std::to_string(i) + "]");
  if (!o.ok()) return bad(o.path() + ": an object is needed");
  CAIRN_TRY(o.only({"sha256", "lake", "role", "created", "expires"}));
  TokenEntry t;
  auto hex = o.string("sha256");
  if (!hex) return failureOf(hex);
  auto raw = fromHex(*hex);
  if (!raw || raw->size() != 32 || toHex(*raw) != *hex) {
    return bad(o.path() + ".sha256: 64 lowercase hex digits are needed");
  }
  std::copy(raw->begin(), raw->end(), t.sha256.begin());
  CAIRN_ASSIGN(t.lake, o.string("lake"));
  auto role = o.string("role");
  if (!role) return failureOf(role);
  auto parsed = parseRole(*role);
  if (!parsed) return bad(o.path() + ".role: \"read\" or \"read-write\"");
  t.role = *parsed;
  auto created = o.optInt("created");
  if (!created) return failureOf(created);
  t.createdUnixSeconds = created->value_or(0);
  CAIRN_ASSIGN(t.expiresUnixSeconds, o.optInt("expires"));
  return t;
}

// Whether one path is the other or inside it, by components.
bool nested(std::string a, std::string b) {
  while (a.size() > 1 && a.back() == '/') a.pop_back();
  while (b.size() > 1 && b.back() == '/') b.pop_back();
  if (a == b) return true;
  if (a.size() > b.size()) std::swap(a, b);
  return a.empty() || (b.starts_with(a) && b[a.size()] == '/');
}

}  // namespace

bool rootsOverlap(std::string_view storeA, std::string_view storeB) {
  auto a = parseStoreUrl(storeA);
  auto b = parseStoreUrl(storeB);
  if (!a || !b || a->kind != b->kind) return false;
  if (a->kind == StoreUrl::Kind::directory) {
    std::error_code ec;
    return nested(std::filesystem::absolute(a->directory, ec).lexically_normal().string(),
                  std::filesystem::absolute(b->directory, ec).lexically_normal().string());
  }
  // One bucket (named alike at one endpoint) with nested roots.
  // An endpoint the URL leaves open comes from the environment of whoever runs the command:
  // then the same bucket with nested roots is taken to overlap (the cautious answer).
  const bool sameEndpoint =
      a->endpoint.empty() || b->endpoint.empty() || a->endpoint == b->endpoint;
  return sameEndpoint && a->bucket == b->bucket && nested(a->root, b->root);
}

std::string_view roleName(Role r) { return r == Role::read ? "read" : "read-write"; }

std::optional<Role> parseRole(std::string_view text) {
  if (text == "read") return Role::read;
  if (text == "read-write") return Role::readWrite;
  return std::nullopt;
}

const LakeEntry* CatalogConfig::lake(std::string_view id) const {
  for (const auto& l : lakes) {
    if (l.id == id) return &l;
  }
  return nullptr;
}

CatalogConfig newConfig() {
  CatalogConfig c;
  c.publisher = Uuid::random();
  return c;
}

Res<CatalogConfig> parseConfig(std::string_view text) {
  auto doc = parseStrictJson(text);
  if (!doc) return bad(doc.error().message);
  Obj root(*doc, "configuration");
  if (!root.ok()) return bad("the document is not an object");
  CAIRN_TRY(root.only({"format", "publisher", "lakes", "tokens", "server"}));
  auto format = root.optInt("format");
  if (!format) return failureOf(format);
  if (*format != std::optional<std::int64_t>(kConfigFormat)) return bad("format 1 is needed");
  CatalogConfig c;
  auto publisher = root.string("publisher");
  if (!publisher) return failureOf(publisher);
  auto uuid = Uuid::parse(*publisher);
  if (!uuid || uuid->isNil()) return bad("publisher: a non-nil canonical UUID is needed");
  c.publisher = *uuid;
  if (const json::value* lakes = root.find("lakes")) {
    if (!lakes->is_object()) return bad("lakes: an object of lake id -> {store} is needed");
    for (const auto& kv : lakes->get_object()) {
      const std::string id(kv.key());
      if (auto ok = checkLakeId(id); !ok) return bad("lakes." + id + ": " + ok.error().message);
      auto lake = readLake(id, kv.value());
      if (!lake) return failureOf(lake);
      c.lakes.push_back(std::move(*lake));
    }
  }
  // Lakes never share or nest roots: a lake's tables, its credentials' policies and its logs
  // must not reach into another lake's objects.
  for (std::size_t i = 0; i < c.lakes.size(); ++i) {
    for (std::size_t j = i + 1; j < c.lakes.size(); ++j) {
      if (rootsOverlap(c.lakes[i].store, c.lakes[j].store)) {
        return bad("lakes " + c.lakes[i].id + " and " + c.lakes[j].id +
                   " share or nest their roots: a lake's root holds no other lake");
      }
    }
  }
  if (const json::value* tokens = root.find("tokens")) {
    if (!tokens->is_array()) return bad("tokens: an array is needed");
    for (std::size_t i = 0; i < tokens->get_array().size(); ++i) {
      auto t = readToken(tokens->get_array()[i], i);
      if (!t) return failureOf(t);
      if (!c.lake(t->lake)) return bad("tokens[" + std::to_string(i) + "]: no lake " + t->lake);
      c.tokens.push_back(std::move(*t));
    }
  }
  if (const json::value* server = root.find("server")) CAIRN_TRY(readServer(*server, c.server));
  return c;
}

std::string serializeConfig(const CatalogConfig& c) {
  json::object root;
  root["format"] = kConfigFormat;
  root["publisher"] = c.publisher.text();
  json::object lakes;
  const CredentialDurations defaultDurations;
  for (const auto& l : c.lakes) {
    json::object o{{"store", l.store}};
    if (l.sts) {
      json::object sts{{"role-arn", l.sts->roleArn}};
      if (!l.sts->endpoint.empty()) sts["endpoint"] = l.sts->endpoint;
      if (!l.sts->region.empty()) sts["region"] = l.sts->region;
      o["sts"] = std::move(sts);
    }
    json::object seconds;
    for (auto cls : kCredentialClasses) {
      if (l.durations.of(cls) != defaultDurations.of(cls)) {
        seconds[credentialClassName(cls)] = l.durations.of(cls);
      }
    }
    if (!seconds.empty()) o["credential-seconds"] = std::move(seconds);
    if (l.resultsPrefix != LakeEntry{}.resultsPrefix) o["results-prefix"] = l.resultsPrefix;
    if (l.archivePrefix != LakeEntry{}.archivePrefix) o["archive-prefix"] = l.archivePrefix;
    lakes[l.id] = std::move(o);
  }
  root["lakes"] = std::move(lakes);
  json::array tokens;
  for (const auto& t : c.tokens) {
    json::object o;
    o["sha256"] = toHex(t.sha256);
    o["lake"] = t.lake;
    o["role"] = std::string(roleName(t.role));
    o["created"] = t.createdUnixSeconds;
    if (t.expiresUnixSeconds) o["expires"] = *t.expiresUnixSeconds;
    tokens.push_back(std::move(o));
  }
  root["tokens"] = std::move(tokens);
  const ServerSettings defaults;
  const ServerSettings& s = c.server;
  json::object server;
  auto put = [&](const char* key, std::uint64_t value, std::uint64_t fallback) {
    if (value != fallback) server[key] = value;
  };
  put("max-body-bytes", s.maxBodyBytes, defaults.maxBodyBytes);
  put("max-connections", s.maxConnections, defaults.maxConnections);
  put("max-connections-per-address", s.maxConnectionsPerAddress, defaults.maxConnectionsPerAddress);
  put("idle-timeout-seconds", s.idleTimeoutSeconds, defaults.idleTimeoutSeconds);
  put("max-in-flight", s.maxInFlight, defaults.maxInFlight);
  put("cache-bytes", s.cacheBytes, defaults.cacheBytes);
  put("commit-rebases", s.commitRebases, defaults.commitRebases);
  if (s.tlsCertificate) server["tls-certificate"] = *s.tlsCertificate;
  if (s.tlsPrivateKey) server["tls-private-key"] = *s.tlsPrivateKey;
  if (!server.empty()) root["server"] = std::move(server);
  // Pretty enough for a person to read and edit: one member per line at the top level.
  std::string out = "{\n";
  bool first = true;
  for (const auto& kv : root) {
    if (!first) out += ",\n";
    first = false;
    out += "  " + json::serialize(json::value(kv.key())) + ": " + json::serialize(kv.value());
  }
  out += "\n}\n";
  return out;
}

Res<CatalogConfig> loadConfig(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    return Failure<Error>{Error{Errc::missing, file.string() + ": no such file", file.string()}};
  }
  // The bound before the read: a huge file is refused without being read into memory.
  const auto size = std::filesystem::file_size(file, ec);
  if (ec) return err(Errc::io, file.string() + ": " + ec.message());
  if (size > kMaxConfigBytes) return bad(file.string() + " is over 16 MiB");
  std::ifstream in(file, std::ios::binary);
  if (!in) return err(Errc::io, file.string() + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  if (!in.good() && !in.eof()) return err(Errc::io, file.string() + ": read failed");
  if (text.str().size() > kMaxConfigBytes) return bad(file.string() + " is over 16 MiB");
  auto c = parseConfig(text.str());
  if (!c) return err(Errc::usage, file.string() + ": " + c.error().message);
  return c;
}

Res<CatalogConfig> updateConfig(const std::filesystem::path& file,
                                const std::function<Res<void>(CatalogConfig&)>& change,
                                const std::function<CatalogConfig()>& fresh) {
  const std::string lockPath = file.string() + ".lock";
  const int lock = ::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (lock < 0) return err(Errc::io, lockPath + ": cannot be opened");
  struct Unlock {
    int fd;
    ~Unlock() { ::close(fd); }
  } unlock{lock};
  if (::flock(lock, LOCK_EX) != 0) return err(Errc::io, lockPath + ": cannot be locked");
  CatalogConfig config;
  auto loaded = loadConfig(file);
  if (loaded) {
    config = std::move(*loaded);
  } else if (loaded.error().code == Errc::missing) {
    config = fresh();
  } else {
    return failureOf(loaded);
  }
  CAIRN_TRY(change(config));
  const std::string text = serializeConfig(config);
  if (auto again = parseConfig(text); !again) {
    return err(Errc::usage,
               "the changed configuration would not read back: " + again.error().message);
  }
  // 0600 from its creation: the file names the lakes, their stores and token hashes.
  auto written = io::durableReplaceSync(file, asBytes(text), 0600);
  if (!written) return err(Errc::io, file.string() + ": " + written.error().message());
  return config;
}

std::string newToken() {
  std::uint8_t raw[32];
  if (RAND_bytes(raw, sizeof raw) != 1) std::abort();  // no randomness: nothing safe to do
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out = "cairn_";
  std::uint32_t acc = 0;
  int bits = 0;
  for (std::uint8_t b : raw) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kAlphabet[(acc >> bits) & 63];
    }
  }
  if (bits > 0) out += kAlphabet[(acc << (6 - bits)) & 63];
  return out;
}

Digest tokenHash(std::string_view token) { return sha256(asBytes(token)); }

TokenCheck checkToken(const CatalogConfig& config, std::string_view token,
                      std::int64_t nowSeconds) {
  const Digest presented = tokenHash(token);
  TokenCheck out;
  // Every entry is compared, each in constant time, so the time taken says nothing about
  // which entry (if any) matched or how much of it did.
  for (const auto& t : config.tokens) {
    if (CRYPTO_memcmp(presented.data(), t.sha256.data(), presented.size()) == 0 && !out.entry) {
      out.entry = &t;
    }
  }
  if (!out.entry) return out;
  if (out.entry->expiresUnixSeconds && nowSeconds >= *out.entry->expiresUnixSeconds) {
    out.outcome = TokenCheck::Outcome::expired;
    out.entry = nullptr;
    return out;
  }
  out.outcome = TokenCheck::Outcome::accepted;
  return out;
}

}  // namespace cairn::catalog
