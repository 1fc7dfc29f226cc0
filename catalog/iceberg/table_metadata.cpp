// The Iceberg table metadata reader and writer (table_metadata.hpp). The reader's checks and
// defaults follow apache/iceberg's TableMetadataParser.fromJson and the TableMetadata
// constructor; the writer emits the fields in the order of TableMetadataParser.toJson.
#include "catalog/iceberg/table_metadata.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <unordered_set>
#include <utility>

#include <boost/json.hpp>
#include <boost/json/basic_parser_impl.hpp>

namespace cairn::catalog {

namespace json = boost::json;

namespace {

// Evaluates `expr` (a Res<T>) into a new variable `var`, or returns its failure.
#define CAIRN_TM_LET(var, expr)                             \
  auto var##Tried_ = (expr);                                \
  if (!var##Tried_) return ::cairn::failureOf(var##Tried_); \
  auto var = std::move(*var##Tried_)

Failure<Error> bad(std::string_view path, std::string_view what) {
  return err(Errc::format, "table metadata: " + std::string(path) + ": " + std::string(what));
}

std::string at(std::string_view path, std::string_view key) {
  if (path.empty()) return std::string(key);
  return std::string(path) + "." + std::string(key);
}

std::string at(std::string_view path, std::size_t index) {
  return std::string(path) + "[" + std::to_string(index) + "]";
}

// ---- strict JSON: the first pass refuses duplicate keys, depth and sizes; Boost's parser
// enforces the bounds declared here, the handler the uniqueness of keys.

bool survivesRoundTrip(double d) {
  json::error_code ec;
  json::value again = json::parse(json::serialize(json::value(d)), ec);
  return !ec && again.is_double() && again.get_double() == d;
}

class StrictJsonHandler {
 public:
  static constexpr std::size_t max_object_size = kMaxTableMetadataElements;
  static constexpr std::size_t max_array_size = kMaxTableMetadataElements;
  static constexpr std::size_t max_key_size = kMaxTableMetadataBytes;
  static constexpr std::size_t max_string_size = kMaxTableMetadataBytes;

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }
  bool on_array_begin(json::error_code&) { return true; }
  bool on_array_end(std::size_t, json::error_code&) { return true; }
  bool on_object_begin(json::error_code&) {
    keys_.emplace_back();
    return true;
  }
  bool on_object_end(std::size_t, json::error_code&) {
    keys_.pop_back();
    return true;
  }
  bool on_string_part(json::string_view, std::size_t, json::error_code&) { return true; }
  bool on_string(json::string_view, std::size_t, json::error_code&) { return true; }
  bool on_key_part(json::string_view s, std::size_t, json::error_code&) {
    key_.append(s.data(), s.size());
    return true;
  }
  bool on_key(json::string_view s, std::size_t, json::error_code& ec) {
    key_.append(s.data(), s.size());
    bool fresh = keys_.back().insert(key_).second;
    if (!fresh) {
      duplicate_ = key_;
      ec = json::error::syntax;
      return false;
    }
    key_.clear();
    return true;
  }
  bool on_number_part(json::string_view, json::error_code&) { return true; }
  bool on_int64(std::int64_t, json::string_view, json::error_code&) { return true; }
  bool on_uint64(std::uint64_t, json::string_view, json::error_code&) { return true; }
  // A number is kept only if what the writer makes of it reads back as the same number:
  // Boost reads an out-of-range number as an infinity (which JSON cannot write) and may
  // round a long mantissa differently on a second reading.
  bool on_double(double d, json::string_view, json::error_code& ec) {
    if (std::isfinite(d) && survivesRoundTrip(d)) return true;
    outOfRange_ = true;
    ec = json::error::exponent_overflow;
    return false;
  }
  bool on_bool(bool, json::error_code&) { return true; }
  bool on_null(json::error_code&) { return true; }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }

  const std::optional<std::string>& duplicate() const { return duplicate_; }
  bool outOfRange() const { return outOfRange_; }

 private:
  std::vector<std::unordered_set<std::string>> keys_;  // one set per open object
  std::string key_;
  std::optional<std::string> duplicate_;
  bool outOfRange_ = false;
};

json::parse_options strictOptions() {
  json::parse_options opts;
  opts.max_depth = kMaxTableMetadataDepth;
  return opts;
}

Res<json::value> parseStrict(std::string_view text) {
  if (text.size() > kMaxTableMetadataBytes) {
    return bad("document", "larger than " + std::to_string(kMaxTableMetadataBytes) + " bytes");
  }
  json::basic_parser<StrictJsonHandler> checker(strictOptions());
  json::error_code ec;
  std::size_t used = checker.write_some(false, text.data(), text.size(), ec);
  if (checker.handler().duplicate()) {
    return bad("document", "duplicate key \"" + *checker.handler().duplicate() + "\"");
  }
  if (checker.handler().outOfRange())
    return bad("document", "a number is out of range or not exactly representable");
  if (ec) return bad("document", "invalid JSON: " + ec.message());
  if (used != text.size()) return bad("document", "invalid JSON: data after the value");
  json::value v = json::parse(json::string_view(text.data(), text.size()), ec, json::storage_ptr(),
                              strictOptions());
  if (ec) return bad("document", "invalid JSON: " + ec.message());
  return v;
}

// ---- typed access to fields, each failure naming the field's path.

const json::value* member(const json::object& o, std::string_view key) {
  auto it = o.find(json::string_view(key.data(), key.size()));
  return it == o.end() ? nullptr : &it->value();
}

// Absent and null are the same for optional fields, as in Java's JsonUtil.
const json::value* present(const json::object& o, std::string_view key) {
  const json::value* v = member(o, key);
  return v == nullptr || v->is_null() ? nullptr : v;
}

Res<std::int64_t> toInt64(const json::value& v, std::string_view path) {
  if (v.is_int64()) return v.get_int64();
  if (v.is_uint64() && v.get_uint64() <= std::uint64_t(std::numeric_limits<std::int64_t>::max())) {
    return std::int64_t(v.get_uint64());
  }
  return bad(path, "must be a 64-bit integer");
}

Res<std::int32_t> toInt32(const json::value& v, std::string_view path) {
  CAIRN_TM_LET(n, toInt64(v, path));
  if (n < std::numeric_limits<std::int32_t>::min() ||
      n > std::numeric_limits<std::int32_t>::max()) {
    return bad(path, "must be a 32-bit integer");
  }
  return std::int32_t(n);
}

Res<std::int64_t> getInt64(const json::object& o, std::string_view key, std::string_view path) {
  const json::value* v = present(o, key);
  if (v == nullptr) return bad(at(path, key), "missing");
  return toInt64(*v, at(path, key));
}

Res<std::int32_t> getInt32(const json::object& o, std::string_view key, std::string_view path) {
  const json::value* v = present(o, key);
  if (v == nullptr) return bad(at(path, key), "missing");
  return toInt32(*v, at(path, key));
}

Res<std::optional<std::int64_t>> optInt64(const json::object& o, std::string_view key,
                                          std::string_view path) {
  const json::value* v = present(o, key);
  if (v == nullptr) return std::optional<std::int64_t>();
  CAIRN_TM_LET(n, toInt64(*v, at(path, key)));
  return std::optional<std::int64_t>(n);
}

Res<std::optional<std::int32_t>> optInt32(const json::object& o, std::string_view key,
                                          std::string_view path) {
  const json::value* v = present(o, key);
  if (v == nullptr) return std::optional<std::int32_t>();
  CAIRN_TM_LET(n, toInt32(*v, at(path, key)));
  return std::optional<std::int32_t>(n);
}

Res<std::string> getString(const json::object& o, std::string_view key, std::string_view path) {
  const json::value* v = present(o, key);
  if (v == nullptr) return bad(at(path, key), "missing");
  if (!v->is_string()) return bad(at(path, key), "must be a string");
  return std::string(v->get_string());
}

Res<void> requireBool(const json::object& o, std::string_view key, std::string_view path) {
  const json::value* v = present(o, key);
  if (v == nullptr) return bad(at(path, key), "missing");
  if (!v->is_bool()) return bad(at(path, key), "must be a boolean");
  return {};
}

Res<const json::object*> asObject(const json::value& v, std::string_view path) {
  if (!v.is_object()) return bad(path, "must be an object");
  return &v.get_object();
}

Res<const json::object*> getObject(const json::object& o, std::string_view key,
                                   std::string_view path) {
  const json::value* v = present(o, key);
  if (v == nullptr) return bad(at(path, key), "missing");
  return asObject(*v, at(path, key));
}

Res<const json::array*> getArray(const json::object& o, std::string_view key,
                                 std::string_view path) {
  const json::value* v = present(o, key);
  if (v == nullptr) return bad(at(path, key), "missing");
  if (!v->is_array()) return bad(at(path, key), "must be an array");
  return &v->get_array();
}

// An optional array: absent (or null) reads as empty.
Res<const json::array*> optArray(const json::object& o, std::string_view key,
                                 std::string_view path) {
  static const json::array kEmpty;
  if (present(o, key) == nullptr) return &kEmpty;
  return getArray(o, key, path);
}

Res<void> requireIntArray(const json::object& o, std::string_view key, std::string_view path) {
  const json::value* v = present(o, key);
  if (v == nullptr) return {};
  if (!v->is_array()) return bad(at(path, key), "must be an array");
  std::size_t i = 0;
  for (const json::value& e : v->get_array()) {
    CAIRN_TRY(toInt64(e, at(at(path, key), i++)));
  }
  return {};
}

// ---- schemas: the type tree is checked (Java's SchemaParser), its ids collected.

std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Reads the digits at `s[i]`, skipping spaces around them; false if there are none.
bool scanNumber(std::string_view s, std::size_t& i, std::uint64_t& n) {
  while (i < s.size() && s[i] == ' ') ++i;
  std::size_t start = i;
  n = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && i - start < 10) {
    n = n * 10 + std::uint64_t(s[i++] - '0');
  }
  bool any = i > start && (i == s.size() || !std::isdigit(static_cast<unsigned char>(s[i])));
  while (i < s.size() && s[i] == ' ') ++i;
  return any;
}

bool isParameterised(std::string_view t) {
  std::uint64_t a = 0;
  std::uint64_t b = 0;
  if (t.starts_with("fixed[")) {
    std::size_t i = 6;
    return scanNumber(t, i, a) && a <= 0x7fffffff && i + 1 == t.size() && t[i] == ']';
  }
  if (t.starts_with("decimal(")) {
    std::size_t i = 8;
    if (!scanNumber(t, i, a) || i >= t.size() || t[i++] != ',') return false;
    return scanNumber(t, i, b) && a <= 38 && i + 1 == t.size() && t[i] == ')';
  }
  // v3 geospatial types carry a CRS (and for geography an algorithm).
  return (t.starts_with("geometry(") || t.starts_with("geography(")) && t.ends_with(")");
}

bool isPrimitiveType(std::string_view name) {
  static constexpr std::string_view kPrimitives[] = {
      "boolean", "int",          "long",           "float",   "double",   "date",
      "time",    "timestamp",    "timestamptz",    "string",  "uuid",     "binary",
      "unknown", "timestamp_ns", "timestamptz_ns", "variant", "geometry", "geography"};
  std::string t = lowered(name);
  if (std::find(std::begin(kPrimitives), std::end(kPrimitives), t) != std::end(kPrimitives)) {
    return true;
  }
  return isParameterised(t);
}

struct TypeWalk {
  std::int32_t highestId = 0;
  void see(std::int32_t id) { highestId = std::max(highestId, id); }
};

Res<void> checkType(const json::value& type, const std::string& path, TypeWalk& walk);

Res<void> checkStruct(const json::object& o, const std::string& path, TypeWalk& walk) {
  CAIRN_TM_LET(fields, getArray(o, "fields", path));
  std::size_t i = 0;
  for (const json::value& f : *fields) {
    std::string fieldPath = at(at(path, "fields"), i++);
    CAIRN_TM_LET(field, asObject(f, fieldPath));
    CAIRN_TM_LET(id, getInt32(*field, "id", fieldPath));
    walk.see(id);
    CAIRN_TRY(getString(*field, "name", fieldPath));
    CAIRN_TRY(requireBool(*field, "required", fieldPath));
    const json::value* t = present(*field, "type");
    if (t == nullptr) return bad(at(fieldPath, "type"), "missing");
    CAIRN_TRY(checkType(*t, at(fieldPath, "type"), walk));
  }
  return {};
}

Res<void> checkList(const json::object& o, const std::string& path, TypeWalk& walk) {
  CAIRN_TM_LET(id, getInt32(o, "element-id", path));
  walk.see(id);
  CAIRN_TRY(requireBool(o, "element-required", path));
  const json::value* e = present(o, "element");
  if (e == nullptr) return bad(at(path, "element"), "missing");
  return checkType(*e, at(path, "element"), walk);
}

Res<void> checkMap(const json::object& o, const std::string& path, TypeWalk& walk) {
  CAIRN_TM_LET(keyId, getInt32(o, "key-id", path));
  CAIRN_TM_LET(valueId, getInt32(o, "value-id", path));
  walk.see(keyId);
  walk.see(valueId);
  CAIRN_TRY(requireBool(o, "value-required", path));
  for (std::string_view part : {std::string_view("key"), std::string_view("value")}) {
    const json::value* t = present(o, part);
    if (t == nullptr) return bad(at(path, part), "missing");
    CAIRN_TRY(checkType(*t, at(path, part), walk));
  }
  return {};
}

Res<void> checkType(const json::value& type, const std::string& path, TypeWalk& walk) {
  if (type.is_string()) {
    std::string_view name = type.get_string();
    if (!isPrimitiveType(name)) return bad(path, "unknown type \"" + std::string(name) + "\"");
    return {};
  }
  CAIRN_TM_LET(o, asObject(type, path));
  const json::value* kind = present(*o, "type");
  if (kind == nullptr) return bad(at(path, "type"), "missing");
  if (kind->is_string() && kind->get_string() == "struct") return checkStruct(*o, path, walk);
  if (kind->is_string() && kind->get_string() == "list") return checkList(*o, path, walk);
  if (kind->is_string() && kind->get_string() == "map") return checkMap(*o, path, walk);
  return bad(at(path, "type"), "must be \"struct\", \"list\", \"map\" or a primitive type");
}

// A schema is a struct type with an optional id (default 0) and identifier field ids.
Res<Schema> readSchema(const json::value& v, const std::string& path) {
  CAIRN_TM_LET(o, asObject(v, path));
  const json::value* kind = present(*o, "type");
  if (kind == nullptr) return bad(at(path, "type"), "missing");
  if (!kind->is_string() || kind->get_string() != "struct") {
    return bad(at(path, "type"), "a schema must be a \"struct\"");
  }
  TypeWalk walk;
  CAIRN_TRY(checkStruct(*o, path, walk));
  CAIRN_TRY(requireIntArray(*o, "identifier-field-ids", path));
  CAIRN_TM_LET(id, optInt32(*o, "schema-id", path));
  Schema s{id.value_or(0), walk.highestId, v};
  s.json.get_object()["schema-id"] = s.schemaId;  // canonical: the id is always written
  return s;
}

// ---- partition specs and sort orders.

// A transform's source: `source-id`, or (v3, multi-argument transforms) `source-ids`.
Res<void> checkSource(const json::object& o, const std::string& path) {
  if (present(o, "source-ids") != nullptr && present(o, "source-id") == nullptr) {
    return requireIntArray(o, "source-ids", path);
  }
  CAIRN_TRY(getInt32(o, "source-id", path));
  return {};
}

// Reads the fields of a spec, assigning the legacy ids (1000, 1001, ...) when they are
// absent, as Java's PartitionSpec builder does for v1 files.
Res<PartitionSpec> readSpecFields(const json::array& fields, std::int32_t specId,
                                  const std::string& path) {
  PartitionSpec spec{specId, kPartitionFieldIdStart - 1, json::object()};
  json::array canonical;
  std::size_t i = 0;
  for (const json::value& f : fields) {
    std::string fieldPath = at(path, i++);
    CAIRN_TM_LET(field, asObject(f, fieldPath));
    CAIRN_TRY(getString(*field, "name", fieldPath));
    CAIRN_TRY(getString(*field, "transform", fieldPath));
    CAIRN_TRY(checkSource(*field, fieldPath));
    CAIRN_TM_LET(fieldId, optInt32(*field, "field-id", fieldPath));
    if (!fieldId && spec.lastAssignedFieldId == std::numeric_limits<std::int32_t>::max()) {
      return bad(at(fieldPath, "field-id"), "cannot be assigned");
    }
    std::int32_t id = fieldId.value_or(spec.lastAssignedFieldId + 1);
    spec.lastAssignedFieldId = std::max(spec.lastAssignedFieldId, id);
    json::object copy = *field;
    copy["field-id"] = id;
    canonical.push_back(std::move(copy));
  }
  json::object out;
  out["spec-id"] = specId;
  out["fields"] = std::move(canonical);
  spec.json = std::move(out);
  return spec;
}

Res<PartitionSpec> readSpec(const json::value& v, const std::string& path) {
  CAIRN_TM_LET(o, asObject(v, path));
  CAIRN_TM_LET(specId, getInt32(*o, "spec-id", path));
  CAIRN_TM_LET(fields, getArray(*o, "fields", path));
  CAIRN_TM_LET(spec, readSpecFields(*fields, specId, at(path, "fields")));
  // Keep any other member of the spec object, after the two canonical ones.
  json::object& out = spec.json.get_object();
  for (const auto& kv : *o) {
    if (kv.key() != "spec-id" && kv.key() != "fields") out[kv.key()] = kv.value();
  }
  return spec;
}

Res<SortOrder> readSortOrder(const json::value& v, const std::string& path) {
  CAIRN_TM_LET(o, asObject(v, path));
  CAIRN_TM_LET(orderId, getInt32(*o, "order-id", path));
  CAIRN_TM_LET(fields, getArray(*o, "fields", path));
  std::size_t i = 0;
  for (const json::value& f : *fields) {
    std::string fieldPath = at(at(path, "fields"), i++);
    CAIRN_TM_LET(field, asObject(f, fieldPath));
    CAIRN_TRY(getString(*field, "transform", fieldPath));
    CAIRN_TRY(checkSource(*field, fieldPath));
    CAIRN_TM_LET(direction, getString(*field, "direction", fieldPath));
    if (direction != "asc" && direction != "desc") {
      return bad(at(fieldPath, "direction"), "must be \"asc\" or \"desc\"");
    }
    CAIRN_TM_LET(nulls, getString(*field, "null-order", fieldPath));
    if (nulls != "nulls-first" && nulls != "nulls-last") {
      return bad(at(fieldPath, "null-order"), "must be \"nulls-first\" or \"nulls-last\"");
    }
  }
  return SortOrder{orderId, v};
}

// ---- snapshots, refs, statistics.

Res<void> checkStringMap(const json::object& o, std::string_view path) {
  for (const auto& kv : o) {
    if (!kv.value().is_string()) return bad(at(path, kv.key()), "must be a string");
  }
  return {};
}

Res<Snapshot> readSnapshot(const json::value& v, const std::string& path) {
  CAIRN_TM_LET(o, asObject(v, path));
  CAIRN_TM_LET(id, getInt64(*o, "snapshot-id", path));
  CAIRN_TM_LET(parent, optInt64(*o, "parent-snapshot-id", path));
  CAIRN_TM_LET(sequence, optInt64(*o, "sequence-number", path));
  CAIRN_TM_LET(timestamp, getInt64(*o, "timestamp-ms", path));
  CAIRN_TM_LET(schemaId, optInt32(*o, "schema-id", path));
  if (present(*o, "summary") != nullptr) {
    CAIRN_TM_LET(summary, getObject(*o, "summary", path));
    CAIRN_TRY(checkStringMap(*summary, at(path, "summary")));
    CAIRN_TRY(getString(*summary, "operation", at(path, "summary")));
  }
  if (present(*o, "manifest-list") != nullptr) {
    CAIRN_TRY(getString(*o, "manifest-list", path));
  } else {
    CAIRN_TM_LET(manifests, getArray(*o, "manifests", path));  // v1 files only
    for (const json::value& m : *manifests) {
      if (!m.is_string()) return bad(at(path, "manifests"), "must hold strings");
    }
  }
  CAIRN_TRY(optInt64(*o, "first-row-id", path));
  CAIRN_TRY(optInt64(*o, "added-rows", path));
  return Snapshot{id, parent, sequence.value_or(0), timestamp, schemaId, v};
}

Res<SnapshotRef> readRef(const json::value& v, const std::string& path) {
  CAIRN_TM_LET(o, asObject(v, path));
  CAIRN_TM_LET(id, getInt64(*o, "snapshot-id", path));
  CAIRN_TM_LET(type, getString(*o, "type", path));
  std::string kind = lowered(type);
  if (kind != "branch" && kind != "tag") return bad(at(path, "type"), "must be branch or tag");
  CAIRN_TRY(optInt32(*o, "min-snapshots-to-keep", path));
  CAIRN_TRY(optInt64(*o, "max-snapshot-age-ms", path));
  CAIRN_TRY(optInt64(*o, "max-ref-age-ms", path));
  return SnapshotRef{id, kind, v};
}

Res<StatisticsFile> readStatistics(const json::value& v, const std::string& path) {
  CAIRN_TM_LET(o, asObject(v, path));
  CAIRN_TM_LET(id, getInt64(*o, "snapshot-id", path));
  CAIRN_TM_LET(file, getString(*o, "statistics-path", path));
  CAIRN_TRY(getInt64(*o, "file-size-in-bytes", path));
  CAIRN_TRY(optInt64(*o, "file-footer-size-in-bytes", path));
  CAIRN_TRY(optArray(*o, "blob-metadata", path));
  return StatisticsFile{id, file, v};
}

template <class T, class Read>
Res<std::vector<T>> readList(const json::array& items, const std::string& path, Read read) {
  std::vector<T> out;
  out.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    CAIRN_TM_LET(item, read(items[i], at(path, i)));
    out.push_back(std::move(item));
  }
  return out;
}

Res<SnapshotLogEntry> readSnapshotLogEntry(const json::value& v, const std::string& path) {
  CAIRN_TM_LET(o, asObject(v, path));
  CAIRN_TM_LET(timestamp, getInt64(*o, "timestamp-ms", path));
  CAIRN_TM_LET(id, getInt64(*o, "snapshot-id", path));
  return SnapshotLogEntry{timestamp, id};
}

Res<MetadataLogEntry> readMetadataLogEntry(const json::value& v, const std::string& path) {
  CAIRN_TM_LET(o, asObject(v, path));
  CAIRN_TM_LET(timestamp, getInt64(*o, "timestamp-ms", path));
  CAIRN_TM_LET(file, getString(*o, "metadata-file", path));
  return MetadataLogEntry{timestamp, file};
}

// Java indexes schemas, specs, sort orders and snapshots by id in maps that refuse a repeat.
template <class T, class Id>
Res<void> requireUniqueIds(const std::vector<T>& items, std::string_view list,
                           std::string_view field, Id id) {
  std::unordered_set<std::int64_t> seen;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!seen.insert(id(items[i])).second) {
      return bad(at(at(list, i), field), "duplicate id " + std::to_string(id(items[i])));
    }
  }
  return {};
}

// Log entries are in time order (a minute of clock skew allowed), and none is later than
// last-updated-ms, as the Java constructor checks.
constexpr std::int64_t kClockSkewMs = 60'000;

template <class Entry>
Res<void> checkLogOrder(const std::vector<Entry>& log, std::string_view list,
                        std::int64_t lastUpdatedMs) {
  for (std::size_t i = 1; i < log.size(); ++i) {
    if (log[i].timestampMs < log[i - 1].timestampMs - kClockSkewMs) {
      return bad(at(at(list, i), "timestamp-ms"), "entries are not in time order");
    }
  }
  if (!log.empty() && log.back().timestampMs - kClockSkewMs > lastUpdatedMs) {
    return bad("last-updated-ms", "before the last entry of " + std::string(list));
  }
  return {};
}

// ---- the document, section by section, in the order of TableMetadataParser.fromJson.

Res<void> readHeader(const json::object& o, TableMetadata& m) {
  CAIRN_TM_LET(version, getInt32(o, "format-version", ""));
  if (version < kMinTableFormatVersion || version > kMaxTableFormatVersion) {
    return bad("format-version", "unsupported version " + std::to_string(version) +
                                     " (supported: 1 to " + std::to_string(kMaxTableFormatVersion) +
                                     ")");
  }
  m.formatVersion = version;
  if (present(o, "table-uuid") != nullptr) {
    CAIRN_TM_LET(uuid, getString(o, "table-uuid", ""));
    m.tableUuid = uuid;
  } else if (version > 1) {
    return bad("table-uuid", "missing (required in format v" + std::to_string(version) + ")");
  }
  CAIRN_TM_LET(location, getString(o, "location", ""));
  m.location = location;
  if (version > 1) {
    CAIRN_TM_LET(sequence, getInt64(o, "last-sequence-number", ""));
    m.lastSequenceNumber = sequence;
  }
  CAIRN_TM_LET(lastColumnId, getInt32(o, "last-column-id", ""));
  m.lastColumnId = lastColumnId;
  CAIRN_TM_LET(updated, getInt64(o, "last-updated-ms", ""));
  m.lastUpdatedMs = updated;
  if (version >= 3) {
    CAIRN_TM_LET(nextRowId, getInt64(o, "next-row-id", ""));
    m.nextRowId = nextRowId;
  }
  return {};
}

std::string requiredIn(std::string_view field, int version) {
  return "missing (" + std::string(field) + " must exist in format v" + std::to_string(version) +
         ")";
}

Res<void> readSchemas(const json::object& o, TableMetadata& m) {
  if (member(o, "schemas") != nullptr) {
    CAIRN_TM_LET(list, getArray(o, "schemas", ""));
    CAIRN_TM_LET(current, getInt32(o, "current-schema-id", ""));
    CAIRN_TM_LET(schemas, readList<Schema>(*list, "schemas", readSchema));
    m.schemas = std::move(schemas);
    m.currentSchemaId = current;
    CAIRN_TRY(requireUniqueIds(m.schemas, "schemas", "schema-id",
                               [](const Schema& s) { return s.schemaId; }));
    if (m.currentSchema() == nullptr) {
      return bad("current-schema-id",
                 "no schema with current-schema-id=" + std::to_string(current) + " in schemas");
    }
    return {};
  }
  if (m.formatVersion != 1) return bad("schemas", requiredIn("schemas", m.formatVersion));
  const json::value* legacy = present(o, "schema");
  if (legacy == nullptr) return bad("schema", "missing (neither schemas nor schema)");
  CAIRN_TM_LET(schema, readSchema(*legacy, "schema"));
  m.currentSchemaId = schema.schemaId;
  m.schemas = {std::move(schema)};
  return {};
}

Res<void> readSpecs(const json::object& o, TableMetadata& m) {
  if (member(o, "partition-specs") != nullptr) {
    CAIRN_TM_LET(list, getArray(o, "partition-specs", ""));
    CAIRN_TM_LET(defaultId, getInt32(o, "default-spec-id", ""));
    CAIRN_TM_LET(specs, readList<PartitionSpec>(*list, "partition-specs", readSpec));
    m.specs = std::move(specs);
    m.defaultSpecId = defaultId;
    CAIRN_TRY(requireUniqueIds(m.specs, "partition-specs", "spec-id",
                               [](const PartitionSpec& s) { return s.specId; }));
    if (m.defaultSpec() == nullptr) {
      return bad("default-spec-id", "no spec with default-spec-id=" + std::to_string(defaultId) +
                                        " in partition-specs");
    }
  } else {
    if (m.formatVersion != 1) {
      return bad("partition-specs", requiredIn("partition-specs", m.formatVersion));
    }
    CAIRN_TM_LET(fields, getArray(o, "partition-spec", ""));
    CAIRN_TM_LET(spec, readSpecFields(*fields, 0, "partition-spec"));
    m.defaultSpecId = 0;
    m.specs = {std::move(spec)};
  }
  CAIRN_TM_LET(lastPartitionId, optInt32(o, "last-partition-id", ""));
  if (!lastPartitionId && m.formatVersion != 1) {
    return bad("last-partition-id", requiredIn("last-partition-id", m.formatVersion));
  }
  m.lastPartitionId = kPartitionFieldIdStart - 1;
  for (const PartitionSpec& s : m.specs) {
    m.lastPartitionId = std::max(m.lastPartitionId, s.lastAssignedFieldId);
  }
  if (lastPartitionId) m.lastPartitionId = *lastPartitionId;
  return {};
}

Res<void> readSortOrders(const json::object& o, TableMetadata& m) {
  if (member(o, "sort-orders") == nullptr) {
    if (m.formatVersion != 1) return bad("sort-orders", requiredIn("sort-orders", m.formatVersion));
    m.defaultSortOrderId = 0;  // the unsorted order
    json::object unsorted;
    unsorted["order-id"] = 0;
    unsorted["fields"] = json::array();
    m.sortOrders = {SortOrder{0, std::move(unsorted)}};
    return {};
  }
  CAIRN_TM_LET(list, getArray(o, "sort-orders", ""));
  CAIRN_TM_LET(defaultId, getInt32(o, "default-sort-order-id", ""));
  CAIRN_TM_LET(orders, readList<SortOrder>(*list, "sort-orders", readSortOrder));
  m.sortOrders = std::move(orders);
  m.defaultSortOrderId = defaultId;
  CAIRN_TRY(requireUniqueIds(m.sortOrders, "sort-orders", "order-id",
                             [](const SortOrder& s) { return s.orderId; }));
  bool found = std::any_of(m.sortOrders.begin(), m.sortOrders.end(),
                           [&](const SortOrder& s) { return s.orderId == defaultId; });
  if (!found) {
    return bad("default-sort-order-id", "no sort order with default-sort-order-id=" +
                                            std::to_string(defaultId) + " in sort-orders");
  }
  return {};
}

Res<void> readProperties(const json::object& o, TableMetadata& m) {
  if (present(o, "properties") == nullptr) return {};
  CAIRN_TM_LET(props, getObject(o, "properties", ""));
  CAIRN_TRY(checkStringMap(*props, "properties"));
  for (const auto& kv : *props) m.properties[std::string(kv.key())] = kv.value().get_string();
  return {};
}

Res<void> readSnapshots(const json::object& o, TableMetadata& m) {
  CAIRN_TM_LET(current, optInt64(o, "current-snapshot-id", ""));
  if (current && *current != kNoSnapshotId) m.currentSnapshotId = current;
  CAIRN_TM_LET(list, optArray(o, "snapshots", ""));
  CAIRN_TM_LET(snapshots, readList<Snapshot>(*list, "snapshots", readSnapshot));
  m.snapshots = std::move(snapshots);
  CAIRN_TRY(requireUniqueIds(m.snapshots, "snapshots", "snapshot-id",
                             [](const Snapshot& s) { return s.snapshotId; }));
  for (std::size_t i = 0; i < m.snapshots.size(); ++i) {
    const Snapshot& s = m.snapshots[i];
    if (s.sequenceNumber > m.lastSequenceNumber && m.formatVersion > 1) {
      return bad(at(at("snapshots", i), "sequence-number"),
                 "greater than last-sequence-number " + std::to_string(m.lastSequenceNumber));
    }
  }
  if (m.currentSnapshotId && m.snapshot(*m.currentSnapshotId) == nullptr) {
    return bad("current-snapshot-id", "no snapshot " + std::to_string(*m.currentSnapshotId));
  }
  return {};
}

// Refs, after the snapshots they name; `main` follows current-snapshot-id (Java's
// validateRefs) and is created from it when the file has no refs.
Res<void> readRefs(const json::object& o, TableMetadata& m) {
  if (present(o, "refs") != nullptr) {
    CAIRN_TM_LET(refs, getObject(o, "refs", ""));
    for (const auto& kv : *refs) {
      std::string name(kv.key());
      CAIRN_TM_LET(ref, readRef(kv.value(), at("refs", name)));
      if (m.snapshot(ref.snapshotId) == nullptr) {
        return bad(at(at("refs", name), "snapshot-id"), "no such snapshot");
      }
      m.refs.emplace(name, std::move(ref));
    }
  } else if (m.currentSnapshotId) {
    json::object mainRef;
    mainRef["snapshot-id"] = *m.currentSnapshotId;
    mainRef["type"] = "branch";
    m.refs.emplace("main", SnapshotRef{*m.currentSnapshotId, "branch", std::move(mainRef)});
  }
  auto main = m.refs.find("main");
  if (main != m.refs.end() && main->second.snapshotId != m.currentSnapshotId.value_or(-1)) {
    return bad("refs.main", "does not match current-snapshot-id");
  }
  return {};
}

Res<void> readStatisticsAndLogs(const json::object& o, TableMetadata& m) {
  CAIRN_TM_LET(stats, optArray(o, "statistics", ""));
  CAIRN_TM_LET(statistics, readList<StatisticsFile>(*stats, "statistics", readStatistics));
  m.statistics = std::move(statistics);
  CAIRN_TM_LET(pstats, optArray(o, "partition-statistics", ""));
  CAIRN_TM_LET(partition,
               readList<StatisticsFile>(*pstats, "partition-statistics", readStatistics));
  m.partitionStatistics = std::move(partition);
  CAIRN_TM_LET(slog, optArray(o, "snapshot-log", ""));
  CAIRN_TM_LET(snapshotLog,
               readList<SnapshotLogEntry>(*slog, "snapshot-log", readSnapshotLogEntry));
  m.snapshotLog = std::move(snapshotLog);
  CAIRN_TM_LET(mlog, optArray(o, "metadata-log", ""));
  CAIRN_TM_LET(metadataLog,
               readList<MetadataLogEntry>(*mlog, "metadata-log", readMetadataLogEntry));
  m.metadataLog = std::move(metadataLog);
  CAIRN_TRY(checkLogOrder(m.snapshotLog, "snapshot-log", m.lastUpdatedMs));
  return checkLogOrder(m.metadataLog, "metadata-log", m.lastUpdatedMs);
}

constexpr std::string_view kKnownFields[] = {"format-version",
                                             "table-uuid",
                                             "location",
                                             "last-sequence-number",
                                             "last-updated-ms",
                                             "last-column-id",
                                             "schema",
                                             "schemas",
                                             "current-schema-id",
                                             "partition-spec",
                                             "partition-specs",
                                             "default-spec-id",
                                             "last-partition-id",
                                             "default-sort-order-id",
                                             "sort-orders",
                                             "properties",
                                             "current-snapshot-id",
                                             "snapshots",
                                             "snapshot-log",
                                             "metadata-log",
                                             "refs",
                                             "statistics",
                                             "partition-statistics",
                                             "next-row-id"};

json::object unknownFields(const json::object& o) {
  json::object extra;
  for (const auto& kv : o) {
    std::string_view key(kv.key().data(), kv.key().size());
    if (std::find(std::begin(kKnownFields), std::end(kKnownFields), key) ==
        std::end(kKnownFields)) {
      extra[kv.key()] = kv.value();
    }
  }
  return extra;
}

// ---- the writer.

json::array arrayOf(const auto& items) {
  json::array out;
  out.reserve(items.size());
  for (const auto& item : items) out.push_back(item.json);
  return out;
}

void writeSchemasAndSpecs(const TableMetadata& m, json::object& out) {
  if (m.formatVersion == 1 && m.currentSchema() != nullptr) {
    out["schema"] = m.currentSchema()->json;  // for older readers, as Java writes it
  }
  out["current-schema-id"] = m.currentSchemaId;
  out["schemas"] = arrayOf(m.schemas);
  if (m.formatVersion == 1 && m.defaultSpec() != nullptr) {
    out["partition-spec"] = m.defaultSpec()->json.at("fields");
  }
  out["default-spec-id"] = m.defaultSpecId;
  out["partition-specs"] = arrayOf(m.specs);
  out["last-partition-id"] = m.lastPartitionId;
  out["default-sort-order-id"] = m.defaultSortOrderId;
  out["sort-orders"] = arrayOf(m.sortOrders);
}

void writeSnapshotsAndLogs(const TableMetadata& m, json::object& out) {
  json::object refs;
  for (const auto& [name, ref] : m.refs) refs[name] = ref.json;
  out["refs"] = std::move(refs);
  out["snapshots"] = arrayOf(m.snapshots);
  out["statistics"] = arrayOf(m.statistics);
  out["partition-statistics"] = arrayOf(m.partitionStatistics);
  json::array snapshotLog;
  for (const SnapshotLogEntry& e : m.snapshotLog) {
    snapshotLog.push_back(
        json::object{{"timestamp-ms", e.timestampMs}, {"snapshot-id", e.snapshotId}});
  }
  out["snapshot-log"] = std::move(snapshotLog);
  json::array metadataLog;
  for (const MetadataLogEntry& e : m.metadataLog) {
    metadataLog.push_back(
        json::object{{"timestamp-ms", e.timestampMs}, {"metadata-file", e.metadataFile}});
  }
  out["metadata-log"] = std::move(metadataLog);
}

}  // namespace

const Schema* TableMetadata::currentSchema() const {
  for (const Schema& s : schemas) {
    if (s.schemaId == currentSchemaId) return &s;
  }
  return nullptr;
}

const PartitionSpec* TableMetadata::defaultSpec() const {
  for (const PartitionSpec& s : specs) {
    if (s.specId == defaultSpecId) return &s;
  }
  return nullptr;
}

const Snapshot* TableMetadata::snapshot(std::int64_t id) const {
  for (const Snapshot& s : snapshots) {
    if (s.snapshotId == id) return &s;
  }
  return nullptr;
}

Res<TableMetadata> parseTableMetadata(std::string_view text) {
  CAIRN_TM_LET(doc, parseStrict(text));
  CAIRN_TM_LET(o, asObject(doc, "document"));
  TableMetadata m;
  CAIRN_TRY(readHeader(*o, m));
  CAIRN_TRY(readSchemas(*o, m));
  CAIRN_TRY(readSpecs(*o, m));
  CAIRN_TRY(readSortOrders(*o, m));
  CAIRN_TRY(readProperties(*o, m));
  CAIRN_TRY(readSnapshots(*o, m));
  CAIRN_TRY(readRefs(*o, m));
  CAIRN_TRY(readStatisticsAndLogs(*o, m));
  m.extra = unknownFields(*o);
  return m;
}

std::string serializeTableMetadata(const TableMetadata& m) {
  json::object out;
  out["format-version"] = m.formatVersion;
  if (m.tableUuid) out["table-uuid"] = *m.tableUuid;
  out["location"] = m.location;
  if (m.formatVersion > 1) out["last-sequence-number"] = m.lastSequenceNumber;
  out["last-updated-ms"] = m.lastUpdatedMs;
  out["last-column-id"] = m.lastColumnId;
  writeSchemasAndSpecs(m, out);
  json::object properties;
  for (const auto& [key, value] : m.properties) properties[key] = value;
  out["properties"] = std::move(properties);
  // v3 writes null for "no current snapshot"; older readers expect -1.
  if (m.currentSnapshotId) {
    out["current-snapshot-id"] = *m.currentSnapshotId;
  } else if (m.formatVersion >= 3) {
    out["current-snapshot-id"] = nullptr;
  } else {
    out["current-snapshot-id"] = kNoSnapshotId;
  }
  if (m.formatVersion >= 3) out["next-row-id"] = m.nextRowId;
  writeSnapshotsAndLogs(m, out);
  if (m.extra.is_object()) {
    for (const auto& kv : m.extra.get_object()) out[kv.key()] = kv.value();
  }
  return json::serialize(out);
}

#undef CAIRN_TM_LET

Res<json::value> parseStrictJson(std::string_view text) { return parseStrict(text); }

}  // namespace cairn::catalog
