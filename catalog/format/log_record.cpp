#include "catalog/format/log_record.hpp"

#include <algorithm>
#include <set>

#include <boost/json.hpp>

#include "catalog/iceberg/table_metadata.hpp"

namespace cairn::catalog {

namespace json = boost::json;

namespace {

Failure<Error> bad(std::string_view what) {
  return err(Errc::format, "log record: " + std::string(what));
}

// ---- encoding: objects built with their keys in byte order, serialized by Boost.JSON ----

json::array arrayOf(const std::vector<std::string>& items) {
  json::array a;
  for (const auto& s : items) a.emplace_back(json::string(s));
  return a;
}

json::object propertiesOf(const Properties& p) {
  json::object o;
  for (const auto& [k, v] : p) o.emplace(k, json::string(v));  // std::map: byte order
  return o;
}

json::object tableOf(const TableIdent& t) {
  json::object o;
  o.emplace("name", json::string(t.name));
  o.emplace("namespace", arrayOf(t.ns));
  return o;
}

// The record's own members plus the common ones, in byte order of their keys.
Bytes serializeSorted(std::map<std::string, json::value> members) {
  json::object o;
  for (auto& [k, v] : members) o.emplace(k, std::move(v));
  std::string text = json::serialize(o);
  ByteView b = asBytes(text);
  return Bytes(b.begin(), b.end());
}

void addCommon(std::map<std::string, json::value>& m, std::int64_t timeMs,
               const std::optional<std::string>& key, const std::optional<Digest>& request) {
  m.emplace("time-ms", timeMs);
  if (key) m.emplace("idempotency-key", json::string(*key));
  if (request) m.emplace("request-sha256", json::string(toHex(*request)));
}

// ---- decoding: typed reads with the path of the field -----------------------------------

class Fields {
 public:
  Fields(const json::value& v, std::string path) : path_(std::move(path)) {
    if (v.is_object()) obj_ = &v.get_object();
  }
  bool isObject() const { return obj_ != nullptr; }

  const json::value* find(std::string_view key) const {
    auto it = obj_->find(json::string_view(key.data(), key.size()));
    return it == obj_->end() ? nullptr : &it->value();
  }
  Res<const json::value*> need(std::string_view key) const {
    const json::value* v = find(key);
    if (!v) return bad(path_ + ": missing \"" + std::string(key) + "\"");
    seen_.insert(std::string(key));
    return v;
  }
  Res<std::string> string(std::string_view key) const {
    auto v = need(key);
    if (!v) return failureOf(v);
    if (!(*v)->is_string()) return bad(path_ + "." + std::string(key) + " is not a string");
    return std::string((*v)->get_string());
  }
  Res<std::optional<std::string>> optString(std::string_view key) const {
    if (!find(key)) return std::optional<std::string>{};
    auto s = string(key);
    if (!s) return failureOf(s);
    return std::optional<std::string>{std::move(*s)};
  }
  Res<std::optional<std::int64_t>> optInt64(std::string_view key) const {
    if (!find(key)) return std::optional<std::int64_t>{};
    auto v = int64(key);
    if (!v) return failureOf(v);
    return std::optional<std::int64_t>(*v);
  }
  // Any 64-bit integer (a snapshot id may be negative; times are checked apart).
  Res<std::int64_t> int64(std::string_view key) const {
    auto v = need(key);
    if (!v) return failureOf(v);
    if ((*v)->is_int64()) return (*v)->get_int64();
    if ((*v)->is_uint64() && (*v)->get_uint64() <= std::uint64_t(INT64_MAX)) {
      return std::int64_t((*v)->get_uint64());
    }
    return bad(path_ + "." + std::string(key) + " is not an integer");
  }
  Res<std::vector<std::string>> strings(std::string_view key) const {
    auto v = need(key);
    if (!v) return failureOf(v);
    if (!(*v)->is_array()) return bad(path_ + "." + std::string(key) + " is not an array");
    std::vector<std::string> out;
    for (const auto& e : (*v)->get_array()) {
      if (!e.is_string()) return bad(path_ + "." + std::string(key) + " holds a non-string");
      out.emplace_back(e.get_string());
    }
    return out;
  }
  Res<Properties> properties(std::string_view key) const {
    auto v = need(key);
    if (!v) return failureOf(v);
    if (!(*v)->is_object()) return bad(path_ + "." + std::string(key) + " is not an object");
    Properties out;
    for (const auto& kv : (*v)->get_object()) {
      if (!kv.value().is_string()) {
        return bad(path_ + "." + std::string(key) + " holds a non-string value");
      }
      out.emplace(std::string(kv.key()), std::string(kv.value().get_string()));
    }
    return out;
  }
  Res<Uuid> uuid(std::string_view key) const {
    auto s = string(key);
    if (!s) return failureOf(s);
    auto u = Uuid::parse(*s);
    if (!u || u->isNil()) return bad(path_ + "." + std::string(key) + " is not a UUID");
    return *u;
  }
  Res<TableIdent> table(std::string_view key) const {
    auto v = need(key);
    if (!v) return failureOf(v);
    Fields t(**v, path_ + "." + std::string(key));
    if (!t.isObject()) return bad(path_ + "." + std::string(key) + " is not an object");
    TableIdent out;
    auto name = t.string("name");
    if (!name) return failureOf(name);
    auto ns = t.strings("namespace");
    if (!ns) return failureOf(ns);
    out.name = std::move(*name);
    out.ns = std::move(*ns);
    if (auto end = t.end(); !end) return failureOf(end);
    return out;
  }
  // Every member was read.
  Res<void> end() const {
    for (const auto& kv : *obj_) {
      if (!seen_.count(std::string(kv.key()))) {
        return bad(path_ + ": unknown member \"" + std::string(kv.key()) + "\"");
      }
    }
    return {};
  }

 private:
  std::string path_;
  const json::object* obj_ = nullptr;
  mutable std::set<std::string> seen_;
};

#define CAIRN_LR_LET(var, expr)                             \
  auto var##Tried_ = (expr);                                \
  if (!var##Tried_) return ::cairn::failureOf(var##Tried_); \
  auto var = std::move(*var##Tried_)

// ---- the rules, checked on typed values by both the encoder and the decoder ----------------

Res<void> checkTable(const TableIdent& t, std::string_view what) {
  if (auto ok = checkNamespace(t.ns); !ok) {
    return err(Errc::usage, std::string(what) + ": " + ok.error().message);
  }
  return checkName(t.name, std::string(what) + " name");
}

// Property keys: at most kMaxProperties, each 1..kMaxPropertyKeyBytes, sorted and unique.
Res<void> checkKeyList(const std::vector<std::string>& keys, std::string_view what) {
  if (keys.size() > kMaxProperties) return err(Errc::usage, "too many " + std::string(what));
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].empty() || keys[i].size() > kMaxPropertyKeyBytes) {
      return err(Errc::usage, std::string(what) + ": a key is 1.." +
                                  std::to_string(kMaxPropertyKeyBytes) + " bytes");
    }
    if (i > 0 && keys[i - 1] >= keys[i]) {
      return err(Errc::usage, std::string(what) + " are sorted and unique");
    }
  }
  return {};
}

struct RuleCheck {
  Res<void> operator()(const LakeCreated& c) const { return checkLakeId(c.lake); }
  Res<void> operator()(const NamespaceCreated& c) const {
    if (auto ok = checkNamespace(c.ns); !ok) return ok;
    return checkProperties(c.properties, "properties");
  }
  Res<void> operator()(const NamespaceUpdated& c) const {
    if (auto ok = checkNamespace(c.ns); !ok) return ok;
    if (auto ok = checkProperties(c.updates, "updates"); !ok) return ok;
    if (auto ok = checkKeyList(c.removals, "removals"); !ok) return ok;
    for (const auto& k : c.removals) {
      if (c.updates.count(k)) return err(Errc::usage, "\"" + k + "\" is both updated and removed");
    }
    if (auto ok = checkKeyList(c.missing, "missing"); !ok) return ok;
    for (const auto& k : c.missing) {
      if (c.updates.count(k) || std::binary_search(c.removals.begin(), c.removals.end(), k)) {
        return err(Errc::usage, "\"" + k + "\" is missing and also updated or removed");
      }
    }
    if (c.updates.empty() && c.removals.empty()) {
      return err(Errc::usage, "an update that changes nothing");
    }
    return {};
  }
  Res<void> operator()(const NamespaceDropped& c) const { return checkNamespace(c.ns); }
  Res<void> operator()(const TableRegistered& c) const {
    if (auto ok = checkTable(c.table, "table"); !ok) return ok;
    if (c.uuid.isNil()) return err(Errc::usage, "a table UUID is not nil");
    return checkLocation(c.location, "location");
  }
  Res<void> operator()(const TableDropped& c) const {
    if (auto ok = checkTable(c.table, "table"); !ok) return ok;
    if (c.uuid.isNil()) return err(Errc::usage, "a table UUID is not nil");
    if (c.purgeLocation) return checkLocation(*c.purgeLocation, "purge-location");
    return {};
  }
  Res<void> operator()(const LeaseTaken& c) const {
    if (c.lease.isNil() || c.table.isNil()) return err(Errc::usage, "a lease's UUIDs are not nil");
    if (c.expiresMs <= 0) return err(Errc::usage, "a lease expires after the epoch");
    if (!c.snapshotId && !c.prefix) {
      return err(Errc::usage, "a lease protects a snapshot, a prefix, or both");
    }
    if (c.prefix) return checkLocation(*c.prefix, "the lease's prefix");
    return {};
  }
  Res<void> operator()(const LeaseReleased& c) const {
    if (c.lease.isNil()) return err(Errc::usage, "a lease's UUID is not nil");
    return {};
  }
  Res<void> operator()(const SnapshotProtected& c) const {
    if (c.table.isNil()) return err(Errc::usage, "a table UUID is not nil");
    return {};
  }
  Res<void> operator()(const SnapshotUnprotected& c) const {
    if (c.table.isNil()) return err(Errc::usage, "a table UUID is not nil");
    return {};
  }
  Res<void> operator()(const BranchCreated& c) const {
    if (auto ok = checkBranchName(c.name); !ok) return ok;
    if (c.id.isNil()) return err(Errc::usage, "a branch id is not nil");
    if (c.parent) {
      if (auto ok = checkBranchName(*c.parent); !ok) return ok;
      if (*c.parent == c.name) return err(Errc::usage, "a branch is not its own parent");
    }
    if (c.expiresMs && *c.expiresMs <= 0) {
      return err(Errc::usage, "a branch expires after the epoch");
    }
    if (c.maxSnapshotAgeMs && *c.maxSnapshotAgeMs <= 0) {
      return err(Errc::usage, "max-snapshot-age-ms is positive");
    }
    if (c.minSnapshotsToKeep && *c.minSnapshotsToKeep <= 0) {
      return err(Errc::usage, "min-snapshots-to-keep is positive");
    }
    return {};
  }
  Res<void> operator()(const BranchDropped& c) const {
    if (auto ok = checkBranchName(c.name); !ok) return ok;
    if (c.id.isNil()) return err(Errc::usage, "a branch id is not nil");
    return {};
  }
  Res<void> operator()(const BranchForked& c) const {
    if (auto ok = checkBranchName(c.branch); !ok) return ok;
    if (c.fromBranch) {
      if (auto ok = checkBranchName(*c.fromBranch); !ok) return ok;
    }
    if (c.table.isNil() || c.log.isNil() || c.fromLog.isNil()) {
      return err(Errc::usage, "a fork's UUIDs are not nil");
    }
    if (c.log == c.table || c.log == c.fromLog) {
      return err(Errc::usage, "a fork's log is a new one");
    }
    if (c.fromRevision == 0 || c.fromRevision > std::uint64_t(INT64_MAX)) {
      return err(Errc::usage, "a fork's from-revision is 1..2^63-1");
    }
    return checkLocation(c.fromMetadataLocation, "from-metadata-location");
  }
  Res<void> operator()(const TableRenamed& c) const {
    if (auto ok = checkTable(c.from, "source"); !ok) return ok;
    if (auto ok = checkTable(c.to, "destination"); !ok) return ok;
    if (c.from == c.to) return err(Errc::usage, "a rename to the same name");
    if (c.uuid.isNil()) return err(Errc::usage, "a table UUID is not nil");
    return {};
  }
};

Res<void> checkCommon(std::int64_t timeMs, const std::optional<std::string>& key,
                      const std::optional<Digest>& request) {
  if (timeMs < 0) return err(Errc::usage, "a record's time is not negative");
  if (request && !key) return err(Errc::usage, "a request digest without an Idempotency-Key");
  if (key) return checkIdempotencyKey(*key);
  return {};
}

// `request-sha256`, when present: 64 lowercase hex digits (the canonical check refuses others).
Res<std::optional<Digest>> requestDigestOf(const std::optional<std::string>& hex) {
  if (!hex) return std::optional<Digest>{};
  auto raw = fromHex(*hex);
  if (!raw || raw->size() != Digest{}.size()) return bad("request-sha256 is not 64 hex digits");
  Digest d{};
  std::copy(raw->begin(), raw->end(), d.begin());
  return std::optional<Digest>(d);
}

// ---- lake records: members by type -----------------------------------------------------------

struct LakeMembers {
  std::map<std::string, json::value>& m;
  void operator()(const LakeCreated& c) const {
    m.emplace("type", "lake-created");
    m.emplace("lake", json::string(c.lake));
  }
  void operator()(const NamespaceCreated& c) const {
    m.emplace("type", "namespace-created");
    m.emplace("namespace", arrayOf(c.ns));
    m.emplace("properties", propertiesOf(c.properties));
  }
  void operator()(const NamespaceUpdated& c) const {
    m.emplace("type", "namespace-updated");
    m.emplace("namespace", arrayOf(c.ns));
    m.emplace("updates", propertiesOf(c.updates));
    m.emplace("removals", arrayOf(c.removals));
    m.emplace("missing", arrayOf(c.missing));
  }
  void operator()(const NamespaceDropped& c) const {
    m.emplace("type", "namespace-dropped");
    m.emplace("namespace", arrayOf(c.ns));
  }
  void operator()(const TableRegistered& c) const {
    m.emplace("type", "table-registered");
    m.emplace("table", tableOf(c.table));
    m.emplace("table-uuid", json::string(c.uuid.text()));
    m.emplace("location", json::string(c.location));
  }
  void operator()(const TableDropped& c) const {
    m.emplace("type", "table-dropped");
    m.emplace("table", tableOf(c.table));
    m.emplace("table-uuid", json::string(c.uuid.text()));
    if (c.purgeLocation) m.emplace("purge-location", json::string(*c.purgeLocation));
  }
  void operator()(const LeaseTaken& c) const {
    m.emplace("type", "lease-taken");
    m.emplace("lease-id", json::string(c.lease.text()));
    m.emplace("table-uuid", json::string(c.table.text()));
    m.emplace("expires-ms", c.expiresMs);
    if (c.snapshotId) m.emplace("snapshot-id", *c.snapshotId);
    if (c.prefix) m.emplace("prefix", json::string(*c.prefix));
  }
  void operator()(const LeaseReleased& c) const {
    m.emplace("type", "lease-released");
    m.emplace("lease-id", json::string(c.lease.text()));
  }
  void operator()(const SnapshotProtected& c) const {
    m.emplace("type", "snapshot-protected");
    m.emplace("table-uuid", json::string(c.table.text()));
    m.emplace("snapshot-id", c.snapshotId);
  }
  void operator()(const SnapshotUnprotected& c) const {
    m.emplace("type", "snapshot-unprotected");
    m.emplace("table-uuid", json::string(c.table.text()));
    m.emplace("snapshot-id", c.snapshotId);
  }
  void operator()(const BranchCreated& c) const {
    m.emplace("type", "branch-created");
    m.emplace("branch", json::string(c.name));
    m.emplace("branch-id", json::string(c.id.text()));
    if (c.parent) m.emplace("parent", json::string(*c.parent));
    if (c.expiresMs) m.emplace("expires-ms", *c.expiresMs);
    if (c.maxSnapshotAgeMs) m.emplace("max-snapshot-age-ms", *c.maxSnapshotAgeMs);
    if (c.minSnapshotsToKeep) m.emplace("min-snapshots-to-keep", *c.minSnapshotsToKeep);
  }
  void operator()(const BranchDropped& c) const {
    m.emplace("type", "branch-dropped");
    m.emplace("branch", json::string(c.name));
    m.emplace("branch-id", json::string(c.id.text()));
  }
  void operator()(const BranchForked& c) const {
    m.emplace("type", "branch-forked");
    m.emplace("branch", json::string(c.branch));
    m.emplace("table-uuid", json::string(c.table.text()));
    m.emplace("log-uuid", json::string(c.log.text()));
    if (c.fromBranch) m.emplace("from-branch", json::string(*c.fromBranch));
    m.emplace("from-log-uuid", json::string(c.fromLog.text()));
    m.emplace("from-revision", std::int64_t(c.fromRevision));
    m.emplace("from-metadata-location", json::string(c.fromMetadataLocation));
  }
  void operator()(const TableRenamed& c) const {
    m.emplace("type", "table-renamed");
    m.emplace("from", tableOf(c.from));
    m.emplace("to", tableOf(c.to));
    m.emplace("table-uuid", json::string(c.uuid.text()));
  }
};

Res<LakeChange> readLakeChange(const Fields& f, const std::string& type) {
  if (type == "lake-created") {
    CAIRN_LR_LET(lake, f.string("lake"));
    return LakeChange{LakeCreated{std::move(lake)}};
  }
  if (type == "namespace-created") {
    CAIRN_LR_LET(ns, f.strings("namespace"));
    CAIRN_LR_LET(props, f.properties("properties"));
    return LakeChange{NamespaceCreated{std::move(ns), std::move(props)}};
  }
  if (type == "namespace-updated") {
    CAIRN_LR_LET(ns, f.strings("namespace"));
    CAIRN_LR_LET(updates, f.properties("updates"));
    CAIRN_LR_LET(removals, f.strings("removals"));
    CAIRN_LR_LET(missing, f.strings("missing"));
    return LakeChange{NamespaceUpdated{std::move(ns), std::move(updates), std::move(removals),
                                       std::move(missing)}};
  }
  if (type == "namespace-dropped") {
    CAIRN_LR_LET(ns, f.strings("namespace"));
    return LakeChange{NamespaceDropped{std::move(ns)}};
  }
  if (type == "table-registered") {
    CAIRN_LR_LET(table, f.table("table"));
    CAIRN_LR_LET(uuid, f.uuid("table-uuid"));
    CAIRN_LR_LET(location, f.string("location"));
    return LakeChange{TableRegistered{std::move(table), uuid, std::move(location)}};
  }
  if (type == "table-dropped") {
    CAIRN_LR_LET(table, f.table("table"));
    CAIRN_LR_LET(uuid, f.uuid("table-uuid"));
    CAIRN_LR_LET(purge, f.optString("purge-location"));
    return LakeChange{TableDropped{std::move(table), uuid, std::move(purge)}};
  }
  if (type == "table-renamed") {
    CAIRN_LR_LET(from, f.table("from"));
    CAIRN_LR_LET(to, f.table("to"));
    CAIRN_LR_LET(uuid, f.uuid("table-uuid"));
    return LakeChange{TableRenamed{std::move(from), std::move(to), uuid}};
  }
  if (type == "lease-taken") {
    CAIRN_LR_LET(lease, f.uuid("lease-id"));
    CAIRN_LR_LET(table, f.uuid("table-uuid"));
    CAIRN_LR_LET(expires, f.int64("expires-ms"));
    LeaseTaken c{lease, table, expires, std::nullopt, std::nullopt};
    if (f.find("snapshot-id")) {
      CAIRN_LR_LET(sid, f.int64("snapshot-id"));
      c.snapshotId = sid;
    }
    CAIRN_LR_LET(prefix, f.optString("prefix"));
    c.prefix = std::move(prefix);
    return LakeChange{std::move(c)};
  }
  if (type == "lease-released") {
    CAIRN_LR_LET(lease, f.uuid("lease-id"));
    return LakeChange{LeaseReleased{lease}};
  }
  if (type == "snapshot-protected" || type == "snapshot-unprotected") {
    CAIRN_LR_LET(table, f.uuid("table-uuid"));
    CAIRN_LR_LET(sid, f.int64("snapshot-id"));
    if (type == "snapshot-protected") return LakeChange{SnapshotProtected{table, sid}};
    return LakeChange{SnapshotUnprotected{table, sid}};
  }
  if (type == "branch-created") {
    CAIRN_LR_LET(name, f.string("branch"));
    CAIRN_LR_LET(id, f.uuid("branch-id"));
    CAIRN_LR_LET(parent, f.optString("parent"));
    BranchCreated c{std::move(name), id, std::move(parent), {}, {}, {}};
    CAIRN_LR_LET(expires, f.optInt64("expires-ms"));
    CAIRN_LR_LET(age, f.optInt64("max-snapshot-age-ms"));
    CAIRN_LR_LET(keep, f.optInt64("min-snapshots-to-keep"));
    c.expiresMs = expires;
    c.maxSnapshotAgeMs = age;
    c.minSnapshotsToKeep = keep;
    return LakeChange{std::move(c)};
  }
  if (type == "branch-dropped") {
    CAIRN_LR_LET(name, f.string("branch"));
    CAIRN_LR_LET(id, f.uuid("branch-id"));
    return LakeChange{BranchDropped{std::move(name), id}};
  }
  if (type == "branch-forked") {
    CAIRN_LR_LET(branch, f.string("branch"));
    CAIRN_LR_LET(table, f.uuid("table-uuid"));
    CAIRN_LR_LET(log, f.uuid("log-uuid"));
    CAIRN_LR_LET(fromBranch, f.optString("from-branch"));
    CAIRN_LR_LET(fromLog, f.uuid("from-log-uuid"));
    CAIRN_LR_LET(revision, f.int64("from-revision"));
    CAIRN_LR_LET(location, f.string("from-metadata-location"));
    if (revision < 1) return bad("from-revision is 1..2^63-1");
    return LakeChange{BranchForked{std::move(branch), table, log, std::move(fromBranch), fromLog,
                                   std::uint64_t(revision), std::move(location)}};
  }
  return bad("unknown type \"" + type + "\"");
}

// Parses `bytes` as one JSON object (bounded like every document the catalog reads).
Res<json::value> parseRecord(ByteView bytes) {
  if (bytes.size() > kMaxRecordBytes) {
    return bad(std::to_string(bytes.size()) + " bytes is over the " +
               std::to_string(kMaxRecordBytes) + "-byte bound");
  }
  auto v = parseStrictJson(asChars(bytes));
  if (!v) return bad(v.error().message);
  if (!v->is_object()) return bad("not a JSON object");
  return std::move(*v);
}

// The decoded value must encode to exactly the input.
template <class T, class Encode>
Res<T> canonical(ByteView bytes, T value, Encode encode) {
  auto again = encode(value);
  if (!again) return bad(again.error().message);
  if (*again != Bytes(bytes.begin(), bytes.end())) return bad("not in canonical form");
  return value;
}

}  // namespace

std::u16string lakeLogDatabaseId(std::string_view lake) {
  std::u16string out = u"cairn-lake:";
  for (char c : lake) out.push_back(static_cast<unsigned char>(c));
  return out;
}

std::u16string tableLogDatabaseId(const Uuid& table) {
  std::u16string out = u"cairn-table:";
  for (char c : table.text()) out.push_back(static_cast<unsigned char>(c));
  return out;
}

Uuid lakeLogNamespace(std::string_view lake) {
  std::string input = "cairn lake log";
  input.push_back('\0');
  input += lake;
  const Digest d = sha256(asBytes(input));
  Uuid u;
  std::copy(d.begin(), d.begin() + 16, u.bytes.begin());
  u.bytes[6] = static_cast<std::uint8_t>((u.bytes[6] & 0x0F) | 0x80);  // version 8
  u.bytes[8] = static_cast<std::uint8_t>((u.bytes[8] & 0x3F) | 0x80);  // RFC 9562 variant
  return u;
}

Res<void> checkProperties(const Properties& p, std::string_view what) {
  if (p.size() > kMaxProperties) {
    return err(Errc::usage, std::string(what) + ": more than " + std::to_string(kMaxProperties));
  }
  for (const auto& [k, v] : p) {
    if (k.empty() || k.size() > kMaxPropertyKeyBytes) {
      return err(Errc::usage, std::string(what) + ": a key is 1.." +
                                  std::to_string(kMaxPropertyKeyBytes) + " bytes");
    }
    if (v.size() > kMaxPropertyValueBytes) {
      return err(Errc::usage, std::string(what) + ": the value of \"" + k + "\" is over " +
                                  std::to_string(kMaxPropertyValueBytes) + " bytes");
    }
  }
  return {};
}

Res<void> checkIdempotencyKey(std::string_view key) {
  if (key.empty() || key.size() > kMaxIdempotencyKeyBytes) {
    return err(Errc::usage, "an Idempotency-Key is 1.." + std::to_string(kMaxIdempotencyKeyBytes) +
                                " characters");
  }
  for (char c : key) {
    if (c < 0x21 || c > 0x7E) {
      return err(Errc::usage, "an Idempotency-Key holds only printable ASCII without spaces");
    }
  }
  return {};
}

Res<void> checkLocation(std::string_view location, std::string_view what) {
  if (location.empty() || location.size() > kMaxLocationBytes) {
    return err(Errc::usage,
               std::string(what) + " is 1.." + std::to_string(kMaxLocationBytes) + " bytes");
  }
  for (char c : location) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x21 || u == 0x7F) {
      return err(Errc::usage, std::string(what) + " holds a space or a control character");
    }
  }
  return {};
}

Res<Bytes> encodeLakeRecord(const LakeRecord& r) {
  if (auto ok = std::visit(RuleCheck{}, r.change); !ok) return failureOf(ok);
  if (auto ok = checkCommon(r.timeMs, r.idempotencyKey, r.requestSha256); !ok) {
    return failureOf(ok);
  }
  std::map<std::string, json::value> m;
  std::visit(LakeMembers{m}, r.change);
  addCommon(m, r.timeMs, r.idempotencyKey, r.requestSha256);
  Bytes out = serializeSorted(std::move(m));
  if (out.size() > kMaxRecordBytes) return err(Errc::usage, "a record over 1 MiB");
  return out;
}

Res<LakeRecord> decodeLakeRecord(ByteView bytes) {
  CAIRN_LR_LET(v, parseRecord(bytes));
  Fields f(v, "lake record");
  CAIRN_LR_LET(type, f.string("type"));
  CAIRN_LR_LET(change, readLakeChange(f, type));
  LakeRecord r{std::move(change)};
  CAIRN_LR_LET(time, f.int64("time-ms"));
  CAIRN_LR_LET(key, f.optString("idempotency-key"));
  CAIRN_LR_LET(requestHex, f.optString("request-sha256"));
  CAIRN_LR_LET(request, requestDigestOf(requestHex));
  r.timeMs = time;
  r.idempotencyKey = std::move(key);
  r.requestSha256 = request;
  if (auto end = f.end(); !end) return failureOf(end);
  return canonical(bytes, std::move(r), encodeLakeRecord);
}

Res<Bytes> encodeTableCommit(const TableCommit& r) {
  if (auto ok = checkLocation(r.metadataLocation, "metadata-location"); !ok) return failureOf(ok);
  if (r.previousLocation) {
    if (auto ok = checkLocation(*r.previousLocation, "previous-location"); !ok)
      return failureOf(ok);
  }
  if (r.metadataLength < 1 || r.metadataLength > kMaxTableMetadataBytes) {
    return err(Errc::usage, "metadata length " + std::to_string(r.metadataLength) +
                                " is outside 1.." + std::to_string(kMaxTableMetadataBytes));
  }
  if (auto ok = checkCommon(r.timeMs, r.idempotencyKey, r.requestSha256); !ok) {
    return failureOf(ok);
  }
  std::map<std::string, json::value> m;
  m.emplace("type", "commit");
  m.emplace("metadata-location", json::string(r.metadataLocation));
  m.emplace("metadata-sha256", json::string(toHex(r.metadataSha256)));
  m.emplace("metadata-length", r.metadataLength);
  if (r.previousLocation) m.emplace("previous-location", json::string(*r.previousLocation));
  addCommon(m, r.timeMs, r.idempotencyKey, r.requestSha256);
  return serializeSorted(std::move(m));
}

Res<TableCommit> decodeTableCommit(ByteView bytes) {
  CAIRN_LR_LET(v, parseRecord(bytes));
  Fields f(v, "table record");
  CAIRN_LR_LET(type, f.string("type"));
  if (type != "commit") return bad("unknown type \"" + type + "\"");
  TableCommit r;
  CAIRN_LR_LET(location, f.string("metadata-location"));
  CAIRN_LR_LET(hex, f.string("metadata-sha256"));
  CAIRN_LR_LET(length, f.int64("metadata-length"));
  CAIRN_LR_LET(previous, f.optString("previous-location"));
  CAIRN_LR_LET(time, f.int64("time-ms"));
  CAIRN_LR_LET(key, f.optString("idempotency-key"));
  CAIRN_LR_LET(requestHex, f.optString("request-sha256"));
  CAIRN_LR_LET(request, requestDigestOf(requestHex));
  auto raw = fromHex(hex);
  if (!raw || raw->size() != 32) return bad("metadata-sha256 is not 64 lowercase hex digits");
  std::copy(raw->begin(), raw->end(), r.metadataSha256.begin());
  if (length < 0) return bad("metadata-length is negative");
  r.metadataLocation = std::move(location);
  r.metadataLength = static_cast<std::uint64_t>(length);
  r.previousLocation = std::move(previous);
  r.timeMs = time;
  r.idempotencyKey = std::move(key);
  r.requestSha256 = request;
  if (auto end = f.end(); !end) return failureOf(end);
  return canonical(bytes, std::move(r), encodeTableCommit);
}

#undef CAIRN_LR_LET

}  // namespace cairn::catalog
