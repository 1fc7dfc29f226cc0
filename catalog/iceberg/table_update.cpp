// Commit requirements and updates (table_update.hpp): read strictly, checked as Java's
// UpdateRequirement does, applied as TableMetadata.Builder does.
#include "catalog/iceberg/table_update.hpp"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <charconv>
#include <initializer_list>
#include <limits>
#include <set>
#include <utility>

#include <boost/json.hpp>

#include "catalog/iceberg/table_create.hpp"

namespace cairn::catalog {

namespace json = boost::json;

namespace {

// Evaluates `expr` (a Res<T>) into a new variable `var`, or returns its failure.
#define CAIRN_TU_LET(var, expr)                             \
  auto var##Tried_ = (expr);                                \
  if (!var##Tried_) return ::cairn::failureOf(var##Tried_); \
  auto var = std::move(*var##Tried_)

using Kind = TableRequirement::Kind;
using Action = TableUpdate::Action;

Failure<Error> malformed(std::string_view path, std::string_view what) {
  return err(Errc::format, "commit request: " + std::string(path) + ": " + std::string(what));
}

Failure<Error> refused(std::string_view path, std::string_view what) {
  return err(Errc::usage, "commit refused: " + std::string(path) + ": " + std::string(what));
}

Failure<Error> requirementFailed(std::string_view type, std::string_view what) {
  return err(Errc::conflict, "Requirement failed: " + std::string(type) + ": " + std::string(what));
}

std::string at(std::string_view path, std::string_view key) {
  return std::string(path) + "." + std::string(key);
}

std::string at(std::string_view path, std::size_t index) {
  return std::string(path) + "[" + std::to_string(index) + "]";
}

// ---- typed access to the fields of a requirement or an update.

const json::value* member(const json::object& o, std::string_view key) {
  auto it = o.find(json::string_view(key.data(), key.size()));
  return it == o.end() ? nullptr : &it->value();
}

Res<void> requireKnownKeys(const json::object& o, std::initializer_list<std::string_view> known,
                           std::string_view path) {
  for (const auto& kv : o) {
    std::string_view key(kv.key().data(), kv.key().size());
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return malformed(at(path, key), "unknown field");
    }
  }
  return {};
}

Res<std::int64_t> toInt64(const json::value& v, std::string_view path) {
  if (v.is_int64()) return v.get_int64();
  if (v.is_uint64() && v.get_uint64() <= std::uint64_t(std::numeric_limits<std::int64_t>::max())) {
    return std::int64_t(v.get_uint64());
  }
  return malformed(path, "must be a 64-bit integer");
}

Res<std::int64_t> getInt(const json::object& o, std::string_view key, std::string_view path,
                         std::int64_t lo = std::numeric_limits<std::int32_t>::min(),
                         std::int64_t hi = std::numeric_limits<std::int32_t>::max()) {
  const json::value* v = member(o, key);
  if (v == nullptr || v->is_null()) return malformed(at(path, key), "missing");
  CAIRN_TU_LET(n, toInt64(*v, at(path, key)));
  if (n < lo || n > hi) return malformed(at(path, key), "out of range");
  return n;
}

Res<std::int64_t> getInt64(const json::object& o, std::string_view key, std::string_view path) {
  return getInt(o, key, path, std::numeric_limits<std::int64_t>::min(),
                std::numeric_limits<std::int64_t>::max());
}

Res<std::string> getString(const json::object& o, std::string_view key, std::string_view path) {
  const json::value* v = member(o, key);
  if (v == nullptr || v->is_null()) return malformed(at(path, key), "missing");
  if (!v->is_string()) return malformed(at(path, key), "must be a string");
  return std::string(v->get_string());
}

Res<json::value> getObject(const json::object& o, std::string_view key, std::string_view path) {
  const json::value* v = member(o, key);
  if (v == nullptr || v->is_null()) return malformed(at(path, key), "missing");
  if (!v->is_object()) return malformed(at(path, key), "must be an object");
  return *v;
}

Res<const json::array*> getArray(const json::object& o, std::string_view key,
                                 std::string_view path) {
  const json::value* v = member(o, key);
  if (v == nullptr || v->is_null()) return malformed(at(path, key), "missing");
  if (!v->is_array()) return malformed(at(path, key), "must be an array");
  return &v->get_array();
}

// ---- elements: read by the table metadata reader, inside a minimal document, so that a
// commit adds exactly what a load accepts. Its messages are re-rooted at the request's path.

json::object probeDocument() {
  json::object doc;
  doc["format-version"] = 2;
  doc["table-uuid"] = "00000000-0000-0000-0000-000000000000";
  doc["location"] = "probe";
  doc["last-sequence-number"] = std::numeric_limits<std::int64_t>::max();
  doc["last-updated-ms"] = 0;
  doc["last-column-id"] = 0;
  doc["current-schema-id"] = 0;
  doc["schemas"] = json::array{json::object{{"type", "struct"}, {"fields", json::array()}}};
  doc["default-spec-id"] = 0;
  doc["partition-specs"] = json::array{json::object{{"spec-id", 0}, {"fields", json::array()}}};
  doc["last-partition-id"] = kPartitionFieldIdStart - 1;
  doc["default-sort-order-id"] = 0;
  doc["sort-orders"] = json::array{json::object{{"order-id", 0}, {"fields", json::array()}}};
  return doc;
}

// The integer at `key` of an element, or 0 when it has none (the reader refuses a bad one).
std::int64_t idOr0(const json::value& element, std::string_view key) {
  const json::value* v = member(element.get_object(), key);
  return v != nullptr && v->is_int64() ? v->get_int64() : 0;
}

Res<TableMetadata> probe(const json::object& doc, std::string_view inner, std::string_view path) {
  auto read = parseTableMetadata(json::serialize(doc));
  if (read) return read;
  std::string message = read.error().message;
  constexpr std::string_view kPrefix = "table metadata: ";
  if (message.starts_with(kPrefix)) message.erase(0, kPrefix.size());
  if (!message.starts_with(inner)) return malformed(path, message);
  // "schemas[0].fields[0].id: missing" → "<path>.fields[0].id: missing"
  return err(Errc::format, "commit request: " + std::string(path) + message.substr(inner.size()));
}

}  // namespace

// The readers of add-schema, add-spec and add-sort-order elements, also used by other requests
// that carry elements (table_update.hpp).
Res<Schema> readSchemaElement(const json::value& element, std::string_view path) {
  json::object doc = probeDocument();
  doc["current-schema-id"] = idOr0(element, "schema-id");
  doc["schemas"] = json::array{element};
  CAIRN_TU_LET(m, probe(doc, "schemas[0]", path));
  return std::move(m.schemas[0]);
}

Res<PartitionSpec> readSpecElement(const json::value& element, std::string_view path) {
  json::object doc = probeDocument();
  json::object spec = element.get_object();
  if (member(spec, "spec-id") == nullptr) spec["spec-id"] = 0;
  doc["default-spec-id"] = idOr0(spec, "spec-id");
  doc["partition-specs"] = json::array{spec};
  CAIRN_TU_LET(m, probe(doc, "partition-specs[0]", path));
  return std::move(m.specs[0]);
}

Res<SortOrder> readSortOrderElement(const json::value& element, std::string_view path) {
  json::object doc = probeDocument();
  json::object order = element.get_object();
  if (member(order, "order-id") == nullptr) order["order-id"] = 0;
  doc["default-sort-order-id"] = idOr0(order, "order-id");
  doc["sort-orders"] = json::array{order};
  CAIRN_TU_LET(m, probe(doc, "sort-orders[0]", path));
  return std::move(m.sortOrders[0]);
}

namespace {

Res<Snapshot> readSnapshotElement(const json::value& element, std::string_view path) {
  json::object doc = probeDocument();
  doc["snapshots"] = json::array{element};
  CAIRN_TU_LET(m, probe(doc, "snapshots[0]", path));
  return std::move(m.snapshots[0]);
}

Res<SnapshotRef> readRefElement(const json::value& element, std::string_view path) {
  json::object doc = probeDocument();
  json::object target{{"snapshot-id", idOr0(element, "snapshot-id")},
                      {"timestamp-ms", 0},
                      {"manifest-list", "probe"}};
  doc["snapshots"] = json::array{std::move(target)};
  doc["refs"] = json::object{{"probe", element}};
  CAIRN_TU_LET(m, probe(doc, "refs.probe", path));
  return std::move(m.refs.at("probe"));
}

Res<StatisticsFile> readStatisticsElement(const json::value& element, bool partition,
                                          std::string_view path) {
  json::object doc = probeDocument();
  std::string_view list = partition ? "partition-statistics" : "statistics";
  doc[list] = json::array{element};
  CAIRN_TU_LET(m, probe(doc, partition ? "partition-statistics[0]" : "statistics[0]", path));
  return partition ? m.partitionStatistics[0] : m.statistics[0];
}

// ---- requirements.

struct RequirementShape {
  std::string_view type;
  Kind kind;
  std::string_view field;  // the one field beside `type`, if any
};

constexpr RequirementShape kRequirements[] = {
    {"assert-create", Kind::assertCreate, ""},
    {"assert-table-uuid", Kind::assertTableUuid, "uuid"},
    {"assert-ref-snapshot-id", Kind::assertRefSnapshotId, "snapshot-id"},
    {"assert-last-assigned-field-id", Kind::assertLastAssignedFieldId, "last-assigned-field-id"},
    {"assert-current-schema-id", Kind::assertCurrentSchemaId, "current-schema-id"},
    {"assert-last-assigned-partition-id", Kind::assertLastAssignedPartitionId,
     "last-assigned-partition-id"},
    {"assert-default-spec-id", Kind::assertDefaultSpecId, "default-spec-id"},
    {"assert-default-sort-order-id", Kind::assertDefaultSortOrderId, "default-sort-order-id"},
};

std::string_view requirementType(Kind kind) {
  for (const RequirementShape& shape : kRequirements) {
    if (shape.kind == kind) return shape.type;
  }
  return "unknown";
}

Res<TableRequirement> readRequirement(const json::value& v, const std::string& path) {
  if (!v.is_object()) return malformed(path, "must be an object");
  const json::object& o = v.get_object();
  CAIRN_TU_LET(type, getString(o, "type", path));
  const RequirementShape* shape = nullptr;
  for (const RequirementShape& s : kRequirements) {
    if (s.type == type) shape = &s;
  }
  if (shape == nullptr) return malformed(at(path, "type"), "unknown requirement \"" + type + "\"");
  TableRequirement r{shape->kind, {}, {}};
  if (shape->kind == Kind::assertCreate) {
    CAIRN_TRY(requireKnownKeys(o, {"type"}, path));
  } else if (shape->kind == Kind::assertTableUuid) {
    CAIRN_TRY(requireKnownKeys(o, {"type", "uuid"}, path));
    CAIRN_TU_LET(uuid, getString(o, "uuid", path));
    r.name = uuid;
  } else if (shape->kind == Kind::assertRefSnapshotId) {
    CAIRN_TRY(requireKnownKeys(o, {"type", "ref", "snapshot-id"}, path));
    CAIRN_TU_LET(ref, getString(o, "ref", path));
    r.name = ref;
    // Required, but null means "the ref must not exist".
    const json::value* id = member(o, "snapshot-id");
    if (id == nullptr) return malformed(at(path, "snapshot-id"), "missing (null if none)");
    if (!id->is_null()) {
      CAIRN_TU_LET(n, toInt64(*id, at(path, "snapshot-id")));
      r.id = n;
    }
  } else {
    CAIRN_TRY(requireKnownKeys(o, {"type", shape->field}, path));
    CAIRN_TU_LET(n, getInt(o, shape->field, path));
    r.id = n;
  }
  return r;
}

char lowerChar(char c) { return char(std::tolower(static_cast<unsigned char>(c))); }

std::string expected(std::int64_t want, std::int64_t have) {
  return "expected id " + std::to_string(want) + " != " + std::to_string(have);
}

Res<void> checkRef(const TableMetadata& m, const TableRequirement& r) {
  constexpr std::string_view kType = "assert-ref-snapshot-id";
  auto ref = m.refs.find(r.name);
  if (ref == m.refs.end()) {
    if (!r.id) return {};
    return requirementFailed(
        kType, "branch or tag " + r.name + " is missing, expected " + std::to_string(*r.id));
  }
  std::string what = ref->second.type + " " + r.name;
  if (!r.id) return requirementFailed(kType, what + " was created concurrently");
  if (*r.id != ref->second.snapshotId) {
    return requirementFailed(kType,
                             what + " has changed: " + expected(*r.id, ref->second.snapshotId));
  }
  return {};
}

Res<void> checkIdRequirement(const TableMetadata& m, const TableRequirement& r) {
  std::string_view type = requirementType(r.kind);
  auto check = [&](std::string_view what, std::int64_t have) -> Res<void> {
    if (*r.id == have) return {};
    return requirementFailed(type, std::string(what) + " changed: " + expected(*r.id, have));
  };
  switch (r.kind) {
    case Kind::assertLastAssignedFieldId:
      return check("last assigned field id", m.lastColumnId);
    case Kind::assertCurrentSchemaId:
      return check("current schema", m.currentSchemaId);
    case Kind::assertLastAssignedPartitionId:
      return check("last assigned partition id", m.lastPartitionId);
    case Kind::assertDefaultSpecId:
      return check("default partition spec", m.defaultSpecId);
    case Kind::assertDefaultSortOrderId:
      return check("default sort order id", m.defaultSortOrderId);
    default:
      return {};
  }
}

Res<void> checkRequirement(const std::optional<TableMetadata>& current, const TableRequirement& r) {
  std::string_view type = requirementType(r.kind);
  if (r.kind == Kind::assertCreate) {
    if (current) return requirementFailed(type, "table already exists");
    return {};
  }
  if (!current) {
    // Java lets these two pass on a table that does not exist yet (a create transaction).
    if (r.kind == Kind::assertLastAssignedFieldId ||
        r.kind == Kind::assertLastAssignedPartitionId) {
      return {};
    }
    return requirementFailed(type, "table does not exist");
  }
  if (r.kind == Kind::assertTableUuid) {
    std::string have = current->tableUuid.value_or("");
    bool same = std::equal(r.name.begin(), r.name.end(), have.begin(), have.end(),
                           [](char a, char b) { return lowerChar(a) == lowerChar(b); });
    if (!same)
      return requirementFailed(type, "UUID does not match: expected " + r.name + " != " + have);
    return {};
  }
  if (r.kind == Kind::assertRefSnapshotId) return checkRef(*current, r);
  return checkIdRequirement(*current, r);
}

// ---- updates: the shape of each action.

struct ActionShape {
  std::string_view name;
  Action action;
};

constexpr ActionShape kActions[] = {
    {"assign-uuid", Action::assignUuid},
    {"upgrade-format-version", Action::upgradeFormatVersion},
    {"add-schema", Action::addSchema},
    {"set-current-schema", Action::setCurrentSchema},
    {"add-spec", Action::addSpec},
    {"set-default-spec", Action::setDefaultSpec},
    {"add-sort-order", Action::addSortOrder},
    {"set-default-sort-order", Action::setDefaultSortOrder},
    {"add-snapshot", Action::addSnapshot},
    {"set-snapshot-ref", Action::setSnapshotRef},
    {"remove-snapshot-ref", Action::removeSnapshotRef},
    {"remove-snapshots", Action::removeSnapshots},
    {"set-location", Action::setLocation},
    {"set-properties", Action::setProperties},
    {"remove-properties", Action::removeProperties},
    {"set-statistics", Action::setStatistics},
    {"remove-statistics", Action::removeStatistics},
    {"set-partition-statistics", Action::setPartitionStatistics},
    {"remove-partition-statistics", Action::removePartitionStatistics},
    {"remove-schemas", Action::removeSchemas},
    {"remove-partition-specs", Action::removePartitionSpecs},
};

// An update with one string field.
Res<void> readNamed(const json::object& o, std::string_view key, TableUpdate& u,
                    const std::string& path) {
  CAIRN_TRY(requireKnownKeys(o, {"action", key}, path));
  CAIRN_TU_LET(s, getString(o, key, path));
  u.name = s;
  return {};
}

// An update with one integer field.
Res<void> readNumbered(const json::object& o, std::string_view key, bool wide, TableUpdate& u,
                       const std::string& path) {
  CAIRN_TRY(requireKnownKeys(o, {"action", key}, path));
  CAIRN_TU_LET(n, wide ? getInt64(o, key, path) : getInt(o, key, path));
  u.id = n;
  return {};
}

// An update that carries an element object, checked by the reader of its kind.
Res<void> readCarried(const json::object& o, std::string_view key, TableUpdate& u,
                      const std::string& path) {
  CAIRN_TU_LET(element, getObject(o, key, path));
  std::string where = at(path, key);
  switch (u.action) {
    case Action::addSchema:
      CAIRN_TRY(readSchemaElement(element, where));
      break;
    case Action::addSpec:
      CAIRN_TRY(readSpecElement(element, where));
      break;
    case Action::addSortOrder:
      CAIRN_TRY(readSortOrderElement(element, where));
      break;
    case Action::addSnapshot:
      CAIRN_TRY(readSnapshotElement(element, where));
      break;
    default:
      CAIRN_TRY(readStatisticsElement(element, u.action == Action::setPartitionStatistics, where));
  }
  u.element = std::move(element);
  return {};
}

Res<void> readAddSchema(const json::object& o, TableUpdate& u, const std::string& path) {
  CAIRN_TRY(requireKnownKeys(o, {"action", "schema", "last-column-id"}, path));
  // Deprecated: Java ignores it and computes the last column id, so does this.
  if (member(o, "last-column-id") != nullptr && !member(o, "last-column-id")->is_null()) {
    CAIRN_TRY(getInt(o, "last-column-id", path));
  }
  return readCarried(o, "schema", u, path);
}

Res<void> readSetStatistics(const json::object& o, TableUpdate& u, const std::string& path) {
  CAIRN_TRY(requireKnownKeys(o, {"action", "statistics", "snapshot-id"}, path));
  CAIRN_TRY(readCarried(o, "statistics", u, path));
  if (member(o, "snapshot-id") == nullptr || member(o, "snapshot-id")->is_null()) return {};
  CAIRN_TU_LET(id, getInt64(o, "snapshot-id", path));  // deprecated; must agree if sent
  if (id != idOr0(u.element, "snapshot-id")) {
    return malformed(at(path, "snapshot-id"), "differs from statistics.snapshot-id");
  }
  return {};
}

Res<void> readSetRef(const json::object& o, TableUpdate& u, const std::string& path) {
  CAIRN_TRY(requireKnownKeys(o,
                             {"action", "ref-name", "snapshot-id", "type", "min-snapshots-to-keep",
                              "max-snapshot-age-ms", "max-ref-age-ms"},
                             path));
  CAIRN_TU_LET(name, getString(o, "ref-name", path));
  u.name = name;
  json::object ref;
  for (const auto& kv : o) {
    if (kv.key() != "action" && kv.key() != "ref-name" && !kv.value().is_null()) {
      ref[kv.key()] = kv.value();
    }
  }
  CAIRN_TU_LET(typed, readRefElement(ref, path));
  ref["type"] = typed.type;  // lower case, as Java writes it
  u.element = std::move(ref);
  return {};
}

// remove-snapshots (`snapshot-ids`), remove-schemas (`schema-ids`), remove-partition-specs
// (`spec-ids`): a list of ids.
Res<void> readIdList(const json::object& o, std::string_view key, TableUpdate& u,
                     const std::string& path) {
  CAIRN_TRY(requireKnownKeys(o, {"action", key}, path));
  CAIRN_TU_LET(ids, getArray(o, key, path));
  for (std::size_t i = 0; i < ids->size(); ++i) {
    CAIRN_TU_LET(id, toInt64((*ids)[i], at(at(path, key), i)));
    u.snapshotIds.push_back(id);
  }
  return {};
}

Res<void> readSetProperties(const json::object& o, TableUpdate& u, const std::string& path) {
  CAIRN_TRY(requireKnownKeys(o, {"action", "updates"}, path));
  CAIRN_TU_LET(updates, getObject(o, "updates", path));
  for (const auto& kv : updates.get_object()) {
    if (!kv.value().is_string())
      return malformed(at(at(path, "updates"), kv.key()), "must be a string");
    u.propertyUpdates[std::string(kv.key())] = std::string(kv.value().get_string());
  }
  return {};
}

Res<void> readRemoveProperties(const json::object& o, TableUpdate& u, const std::string& path) {
  CAIRN_TRY(requireKnownKeys(o, {"action", "removals"}, path));
  CAIRN_TU_LET(removals, getArray(o, "removals", path));
  for (std::size_t i = 0; i < removals->size(); ++i) {
    const json::value& key = (*removals)[i];
    if (!key.is_string()) return malformed(at(at(path, "removals"), i), "must be a string");
    u.propertyRemovals.emplace_back(key.get_string());
  }
  return {};
}

Res<void> readActionFields(const json::object& o, TableUpdate& u, const std::string& path) {
  switch (u.action) {
    case Action::assignUuid:
      return readNamed(o, "uuid", u, path);
    case Action::setLocation:
      return readNamed(o, "location", u, path);
    case Action::removeSnapshotRef:
      return readNamed(o, "ref-name", u, path);
    case Action::upgradeFormatVersion:
      return readNumbered(o, "format-version", false, u, path);
    case Action::setCurrentSchema:
      return readNumbered(o, "schema-id", false, u, path);
    case Action::setDefaultSpec:
      return readNumbered(o, "spec-id", false, u, path);
    case Action::setDefaultSortOrder:
      return readNumbered(o, "sort-order-id", false, u, path);
    case Action::removeStatistics:
    case Action::removePartitionStatistics:
      return readNumbered(o, "snapshot-id", true, u, path);
    case Action::addSchema:
      return readAddSchema(o, u, path);
    case Action::setStatistics:
      return readSetStatistics(o, u, path);
    case Action::setSnapshotRef:
      return readSetRef(o, u, path);
    case Action::removeSnapshots:
      return readIdList(o, "snapshot-ids", u, path);
    case Action::removeSchemas:
      return readIdList(o, "schema-ids", u, path);
    case Action::removePartitionSpecs:
      return readIdList(o, "spec-ids", u, path);
    case Action::setProperties:
      return readSetProperties(o, u, path);
    case Action::removeProperties:
      return readRemoveProperties(o, u, path);
    case Action::addSpec:
    case Action::addSortOrder:
    case Action::addSnapshot:
    case Action::setPartitionStatistics:
      break;
  }
  std::string_view key = u.action == Action::addSpec        ? "spec"
                         : u.action == Action::addSortOrder ? "sort-order"
                         : u.action == Action::addSnapshot  ? "snapshot"
                                                            : "partition-statistics";
  CAIRN_TRY(requireKnownKeys(o, {"action", key}, path));
  return readCarried(o, key, u, path);
}

Res<TableUpdate> readUpdate(const json::value& v, const std::string& path) {
  if (!v.is_object()) return malformed(path, "must be an object");
  const json::object& o = v.get_object();
  CAIRN_TU_LET(name, getString(o, "action", path));
  const ActionShape* shape = nullptr;
  for (const ActionShape& s : kActions) {
    if (s.name == name) shape = &s;
  }
  if (shape == nullptr) return malformed(at(path, "action"), "unknown action \"" + name + "\"");
  TableUpdate u;
  u.action = shape->action;
  CAIRN_TRY(readActionFields(o, u, path));
  return u;
}

template <class T, class Read>
Res<std::vector<T>> readList(const json::value& list, std::string_view path, std::size_t bound,
                             Read read) {
  if (!list.is_array()) return malformed(path, "must be an array");
  const json::array& items = list.get_array();
  if (items.size() > bound) {
    return malformed(path, "more than " + std::to_string(bound) + " entries");
  }
  std::vector<T> out;
  out.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    CAIRN_TU_LET(item, read(items[i], at(path, i)));
    out.push_back(std::move(item));
  }
  return out;
}

// ---- applying updates: the builder's state beside the metadata it builds.

struct Builder {
  TableMetadata m;
  std::int64_t nowMs = 0;
  bool changed = false;
  std::optional<std::int32_t> lastAddedSchemaId;
  std::optional<std::int32_t> lastAddedSpecId;
  std::optional<std::int32_t> lastAddedOrderId;
  std::set<std::int32_t> addedSchemaIds;
  std::set<std::int32_t> addedSpecIds;
  std::set<std::int32_t> addedOrderIds;
  std::set<std::int64_t> addedSnapshotIds;
  std::vector<std::int64_t> mainSetToAdded;  // snapshots added here that main was set to
  bool removedSnapshots = false;
};

// An id chosen as Java does: an existing element that `same` matches keeps its id; otherwise
// one more than the highest id (and at least `floor`).
template <class T, class Id, class Same>
std::pair<std::int32_t, bool> reuseOrNextId(const std::vector<T>& items, std::int32_t floor, Id id,
                                            Same same) {
  std::int32_t next = floor;
  for (const T& item : items) {
    if (same(item)) return {id(item), true};
    if (id(item) >= next) next = id(item) + 1;
  }
  return {next, false};
}

// After a reuse, "the last added" names the element only if this commit added it.
std::optional<std::int32_t> lastAddedAfterReuse(const std::set<std::int32_t>& added,
                                                std::int32_t id) {
  return added.count(id) != 0 ? std::optional<std::int32_t>(id) : std::nullopt;
}

json::value idsOf(const json::value& schema) {
  const json::value* ids = member(schema.get_object(), "identifier-field-ids");
  return ids == nullptr || ids->is_null() ? json::value(json::array()) : *ids;
}

// Java's Schema.sameSchema: the same fields and the same identifier fields.
bool sameSchema(const json::value& a, const json::value& b) {
  return a.at("fields") == b.at("fields") && idsOf(a) == idsOf(b);
}

Res<void> addSchema(Builder& b, const TableUpdate& u, const std::string& path) {
  CAIRN_TU_LET(schema, readSchemaElement(u.element, path));
  std::int32_t lastColumnId = std::max(b.m.lastColumnId, schema.highestFieldId);
  auto [id, found] = reuseOrNextId(
      b.m.schemas, b.m.currentSchemaId, [](const Schema& s) { return s.schemaId; },
      [&](const Schema& s) { return sameSchema(s.json, schema.json); });
  if (found && lastColumnId == b.m.lastColumnId) {
    b.lastAddedSchemaId = lastAddedAfterReuse(b.addedSchemaIds, id);
    return {};
  }
  b.m.lastColumnId = lastColumnId;
  if (!found) {
    schema.schemaId = id;
    schema.json.get_object()["schema-id"] = id;
    b.m.schemas.push_back(std::move(schema));
  }
  b.addedSchemaIds.insert(id);
  b.lastAddedSchemaId = id;
  b.changed = true;
  return {};
}

// Every field id of a type tree: struct fields, list elements, map keys and values.
void collectFieldIds(const json::value& type, std::set<std::int64_t>& ids) {
  if (!type.is_object()) return;
  const json::object& o = type.get_object();
  for (std::string_view key : {"id", "element-id", "key-id", "value-id"}) {
    const json::value* id = member(o, key);
    if (id != nullptr && id->is_int64()) ids.insert(id->get_int64());
  }
  for (std::string_view key : {"type", "element", "key", "value"}) {
    if (const json::value* inner = member(o, key)) collectFieldIds(*inner, ids);
  }
  if (const json::value* fields = member(o, "fields"); fields != nullptr && fields->is_array()) {
    for (const json::value& f : fields->get_array()) collectFieldIds(f, ids);
  }
}

// Java's PartitionSpec/SortOrder.checkCompatibility: every source is a field of the current
// schema (a v1 spec's void transform may name a dropped column).
Res<void> requireSourcesInSchema(const TableMetadata& m, const json::value& element,
                                 std::string_view path) {
  // A table read always has a current schema; a create transaction's empty base has none
  // until its add-schema, so a field added before that names a missing source.
  const Schema* schema = m.currentSchema();
  std::set<std::int64_t> ids;
  if (schema != nullptr) collectFieldIds(schema->json, ids);
  std::string current = schema != nullptr ? std::to_string(schema->schemaId) : "(none yet)";
  for (const json::value& f : element.at("fields").get_array()) {
    const json::object& field = f.get_object();
    const json::value* transform = member(field, "transform");
    if (transform != nullptr && *transform == "void") continue;
    std::vector<json::value> sources;
    if (const json::value* one = member(field, "source-id")) sources.push_back(*one);
    if (const json::value* many = member(field, "source-ids");
        many != nullptr && many->is_array()) {
      for (const json::value& id : many->get_array()) sources.push_back(id);
    }
    for (const json::value& id : sources) {
      if (!id.is_int64() || ids.count(id.get_int64()) == 0) {
        return refused(path, "source column " + json::serialize(id) + " of field " +
                                 json::serialize(f) + " is not in the current schema " + current);
      }
    }
  }
  return {};
}

// Java's PartitionSpec.hasSequentialIds, required in v1: field ids 1000, 1001, ...
Res<void> requireSequentialIdsInV1(const TableMetadata& m, const json::object& spec,
                                   std::string_view path) {
  if (m.formatVersion != 1) return {};
  std::int64_t expect = kPartitionFieldIdStart;
  for (const json::value& f : spec.at("fields").get_array()) {
    if (f.at("field-id") != expect++) {
      return refused(path, "a v1 spec must use sequential field ids from 1000");
    }
  }
  return {};
}

// Java's PartitionSpec.compatibleWith: the same fields by source, transform and name.
bool compatibleSpec(const json::value& a, const json::value& b) {
  const json::array& x = a.at("fields").get_array();
  const json::array& y = b.at("fields").get_array();
  if (x.size() != y.size()) return false;
  for (std::size_t i = 0; i < x.size(); ++i) {
    for (std::string_view key : {"source-id", "source-ids", "transform", "name"}) {
      const json::value* p = member(x[i].get_object(), key);
      const json::value* q = member(y[i].get_object(), key);
      if ((p == nullptr) != (q == nullptr) || (p != nullptr && *p != *q)) return false;
    }
  }
  return true;
}

// Fields sent without a `field-id` get fresh ones after the table's last partition id.
json::object withFieldIds(const json::value& element, std::int32_t lastPartitionId) {
  json::object spec = element.get_object();
  json::array fields = spec.at("fields").get_array();
  std::int32_t next = lastPartitionId;
  for (json::value& f : fields) {
    json::object& field = f.get_object();
    const json::value* id = member(field, "field-id");
    if (id == nullptr || id->is_null()) field["field-id"] = ++next;
  }
  spec["fields"] = std::move(fields);
  return spec;
}

Res<void> addSpec(Builder& b, const TableUpdate& u, const std::string& path) {
  json::object spec = withFieldIds(u.element, b.m.lastPartitionId);
  auto [id, found] = reuseOrNextId(
      b.m.specs, 0, [](const PartitionSpec& s) { return s.specId; },
      [&](const PartitionSpec& s) { return compatibleSpec(s.json, spec); });
  if (found) {
    b.lastAddedSpecId = lastAddedAfterReuse(b.addedSpecIds, id);
    return {};
  }
  spec["spec-id"] = id;
  CAIRN_TRY(requireSourcesInSchema(b.m, spec, path));
  CAIRN_TRY(requireSequentialIdsInV1(b.m, spec, path));
  CAIRN_TU_LET(typed, readSpecElement(spec, path));
  b.m.lastPartitionId = std::max(b.m.lastPartitionId, typed.lastAssignedFieldId);
  b.m.specs.push_back(std::move(typed));
  b.addedSpecIds.insert(id);
  b.lastAddedSpecId = id;
  b.changed = true;
  return {};
}

Res<void> addSortOrder(Builder& b, const TableUpdate& u, const std::string& path) {
  json::object order = u.element.get_object();
  bool unsorted = order.at("fields").get_array().empty();
  auto [id, found] = reuseOrNextId(
      b.m.sortOrders, 1, [](const SortOrder& s) { return s.orderId; },
      [&](const SortOrder& s) { return s.json.at("fields") == order.at("fields"); });
  if (unsorted) {  // the unsorted order is always id 0
    id = 0;
    found = std::any_of(b.m.sortOrders.begin(), b.m.sortOrders.end(),
                        [](const SortOrder& s) { return s.orderId == 0; });
  }
  if (found) {
    b.lastAddedOrderId = lastAddedAfterReuse(b.addedOrderIds, id);
    return {};
  }
  order["order-id"] = id;
  CAIRN_TRY(requireSourcesInSchema(b.m, order, path));
  CAIRN_TU_LET(typed, readSortOrderElement(order, path));
  b.m.sortOrders.push_back(std::move(typed));
  b.addedOrderIds.insert(id);
  b.lastAddedOrderId = id;
  b.changed = true;
  return {};
}

// set-current-schema, set-default-spec, set-default-sort-order: makes `requested` (or, for
// -1, the one this commit added last) the current one of `items`.
template <class T, class Id>
Res<void> setDefaultId(Builder& b, std::int64_t requested,
                       const std::optional<std::int32_t>& lastAdded, std::int32_t& current,
                       const std::vector<T>& items, Id idOf, std::string_view what,
                       const std::string& path) {
  std::int64_t id = requested;
  if (id == kLastAdded) {
    if (!lastAdded) {
      return refused(path, "cannot set the last added " + std::string(what) + ": none was added");
    }
    id = *lastAdded;
  }
  if (current == id) return {};
  bool known = std::any_of(items.begin(), items.end(), [&](const T& t) { return idOf(t) == id; });
  if (!known) return refused(path, "unknown " + std::string(what) + " id " + std::to_string(id));
  current = std::int32_t(id);
  b.changed = true;
  return {};
}

Res<std::optional<std::int64_t>> optionalInt(const json::value& element, std::string_view key) {
  const json::value* v = member(element.get_object(), key);
  if (v == nullptr || v->is_null()) return std::optional<std::int64_t>();
  CAIRN_TU_LET(n, toInt64(*v, key));
  return std::optional<std::int64_t>(n);
}

// v3 row lineage: a snapshot's first row id is at or past the table's next row id.
Res<void> assignRowIds(Builder& b, const Snapshot& snapshot, const std::string& path) {
  CAIRN_TU_LET(firstRowId, optionalInt(snapshot.json, "first-row-id"));
  CAIRN_TU_LET(addedRows, optionalInt(snapshot.json, "added-rows"));
  if (!firstRowId || !addedRows) {
    return refused(path, "a v3 snapshot needs first-row-id and added-rows");
  }
  if (*firstRowId < b.m.nextRowId) {
    return err(Errc::conflict, "commit refused: " + path + ": first-row-id " +
                                   std::to_string(*firstRowId) + " is behind next-row-id " +
                                   std::to_string(b.m.nextRowId));
  }
  b.m.nextRowId += *addedRows;
  return {};
}

Res<void> addSnapshot(Builder& b, const TableUpdate& u, const std::string& path) {
  CAIRN_TU_LET(snapshot, readSnapshotElement(u.element, path));
  if (b.m.snapshot(snapshot.snapshotId) != nullptr) {
    return refused(path, "snapshot " + std::to_string(snapshot.snapshotId) + " already exists");
  }
  if (b.m.formatVersion > 1 && snapshot.sequenceNumber <= b.m.lastSequenceNumber &&
      snapshot.parentSnapshotId) {
    return err(Errc::conflict, "commit refused: " + path + ": sequence number " +
                                   std::to_string(snapshot.sequenceNumber) +
                                   " is not past the last sequence number " +
                                   std::to_string(b.m.lastSequenceNumber));
  }
  if (b.m.formatVersion >= 3) CAIRN_TRY(assignRowIds(b, snapshot, path));
  b.m.lastSequenceNumber = snapshot.sequenceNumber;
  b.addedSnapshotIds.insert(snapshot.snapshotId);
  b.m.snapshots.push_back(std::move(snapshot));
  b.changed = true;
  return {};
}

std::optional<json::value> field(const json::value& o, std::string_view key) {
  const json::value* v = member(o.get_object(), key);
  return v == nullptr || v->is_null() ? std::nullopt : std::optional<json::value>(*v);
}

// Java's SnapshotRef.equals: the same snapshot, type and retention.
bool sameRef(const SnapshotRef& a, const SnapshotRef& b) {
  if (a.snapshotId != b.snapshotId || a.type != b.type) return false;
  for (std::string_view key : {"min-snapshots-to-keep", "max-snapshot-age-ms", "max-ref-age-ms"}) {
    if (field(a.json, key) != field(b.json, key)) return false;
  }
  return true;
}

Res<void> setRef(Builder& b, const TableUpdate& u, const std::string& path) {
  CAIRN_TU_LET(ref, readRefElement(u.element, path));
  ref.json = u.element;
  auto existing = b.m.refs.find(u.name);
  if (existing != b.m.refs.end() && sameRef(existing->second, ref)) return {};
  const Snapshot* snapshot = b.m.snapshot(ref.snapshotId);
  if (snapshot == nullptr) {
    return refused(
        path, "cannot set " + u.name + " to unknown snapshot " + std::to_string(ref.snapshotId));
  }
  if (u.name == "main") {
    if (ref.type != "branch") return refused(path, "cannot set main to a tag, it must be a branch");
    bool added = b.addedSnapshotIds.count(ref.snapshotId) != 0;
    // A rollback to an older snapshot is logged at the time of the commit.
    b.m.snapshotLog.push_back({added ? snapshot->timestampMs : b.nowMs, ref.snapshotId});
    b.m.currentSnapshotId = ref.snapshotId;
    if (added) b.mainSetToAdded.push_back(ref.snapshotId);
  }
  b.m.refs[u.name] = std::move(ref);
  b.changed = true;
  return {};
}

void removeRef(Builder& b, const std::string& name) {
  if (name == "main") b.m.currentSnapshotId.reset();
  if (b.m.refs.erase(name) != 0) b.changed = true;
}

bool eraseStatistics(std::vector<StatisticsFile>& list, std::int64_t snapshotId) {
  auto end = std::remove_if(list.begin(), list.end(),
                            [&](const StatisticsFile& f) { return f.snapshotId == snapshotId; });
  bool any = end != list.end();
  list.erase(end, list.end());
  return any;
}

void removeSnapshots(Builder& b, const TableUpdate& u) {
  std::set<std::int64_t> ids(u.snapshotIds.begin(), u.snapshotIds.end());
  std::vector<Snapshot> kept;
  for (Snapshot& s : b.m.snapshots) {
    if (ids.count(s.snapshotId) == 0) {
      kept.push_back(std::move(s));
      continue;
    }
    b.changed = b.removedSnapshots = true;
    eraseStatistics(b.m.statistics, s.snapshotId);
    eraseStatistics(b.m.partitionStatistics, s.snapshotId);
  }
  b.m.snapshots = std::move(kept);
  std::vector<std::string> dangling;
  for (const auto& [name, ref] : b.m.refs) {
    if (b.m.snapshot(ref.snapshotId) == nullptr) dangling.push_back(name);
  }
  for (const std::string& name : dangling) removeRef(b, name);
}

// Java's Builder.removeSchemas and removeSpecs: the current schema and the default spec stay;
// an id the table does not have is ignored.
template <class T, class Id>
Res<void> removeById(Builder& b, const TableUpdate& u, std::vector<T>& items, std::int32_t kept,
                     Id id, std::string_view what, const std::string& path) {
  std::set<std::int64_t> ids(u.snapshotIds.begin(), u.snapshotIds.end());
  if (ids.count(kept) != 0) {
    return refused(path, "Cannot remove the " + std::string(what) + " " + std::to_string(kept));
  }
  const std::size_t before = items.size();
  std::erase_if(items, [&](const T& item) { return ids.count(id(item)) != 0; });
  if (items.size() != before) b.changed = true;
  return {};
}

Res<void> setStatistics(Builder& b, const TableUpdate& u, const std::string& path) {
  bool partition = u.action == Action::setPartitionStatistics;
  CAIRN_TU_LET(file, readStatisticsElement(u.element, partition, path));
  std::vector<StatisticsFile>& list = partition ? b.m.partitionStatistics : b.m.statistics;
  auto same = std::find_if(list.begin(), list.end(), [&](const StatisticsFile& f) {
    return f.snapshotId == file.snapshotId;
  });
  if (same != list.end() && *same == file) return {};
  if (same != list.end()) {
    *same = std::move(file);
  } else {
    list.push_back(std::move(file));
  }
  b.changed = true;
  return {};
}

void setProperties(Builder& b, const TableUpdate& u) {
  for (const auto& [key, value] : u.propertyUpdates) {
    auto [it, fresh] = b.m.properties.try_emplace(key, value);
    if (!fresh && it->second == value) continue;
    it->second = value;
    b.changed = true;
  }
}

void removeProperties(Builder& b, const TableUpdate& u) {
  for (const std::string& key : u.propertyRemovals) {
    if (b.m.properties.erase(key) != 0) b.changed = true;
  }
}

Res<void> assignUuid(Builder& b, const TableUpdate& u, const std::string& path) {
  if (b.m.tableUuid == u.name) return {};
  if (b.m.tableUuid) return refused(path, "cannot change the table-uuid " + *b.m.tableUuid);
  b.m.tableUuid = u.name;
  b.changed = true;
  return {};
}

Res<void> upgradeFormatVersion(Builder& b, const TableUpdate& u, const std::string& path) {
  std::int64_t version = *u.id;
  if (version > kMaxTableFormatVersion) {
    return refused(path, "cannot upgrade to unsupported format version v" +
                             std::to_string(version) + " (supported: v" +
                             std::to_string(kMaxTableFormatVersion) + ")");
  }
  if (version < b.m.formatVersion) {
    return refused(path, "cannot downgrade v" + std::to_string(b.m.formatVersion) + " table to v" +
                             std::to_string(version));
  }
  if (version == b.m.formatVersion) return {};
  b.m.formatVersion = int(version);
  b.changed = true;
  return {};
}

Res<void> applyOne(Builder& b, const TableUpdate& u, const std::string& path) {
  switch (u.action) {
    case Action::assignUuid:
      return assignUuid(b, u, path);
    case Action::upgradeFormatVersion:
      return upgradeFormatVersion(b, u, path);
    case Action::addSchema:
      return addSchema(b, u, path);
    case Action::addSpec:
      return addSpec(b, u, path);
    case Action::addSortOrder:
      return addSortOrder(b, u, path);
    case Action::setCurrentSchema:
      return setDefaultId(
          b, *u.id, b.lastAddedSchemaId, b.m.currentSchemaId, b.m.schemas,
          [](const Schema& s) { return s.schemaId; }, "schema", path);
    case Action::setDefaultSpec:
      return setDefaultId(
          b, *u.id, b.lastAddedSpecId, b.m.defaultSpecId, b.m.specs,
          [](const PartitionSpec& s) { return s.specId; }, "spec", path);
    case Action::setDefaultSortOrder:
      return setDefaultId(
          b, *u.id, b.lastAddedOrderId, b.m.defaultSortOrderId, b.m.sortOrders,
          [](const SortOrder& s) { return s.orderId; }, "sort order", path);
    case Action::addSnapshot:
      return addSnapshot(b, u, path);
    case Action::setSnapshotRef:
      return setRef(b, u, path);
    case Action::removeSnapshotRef:
      removeRef(b, u.name);
      return {};
    case Action::removeSnapshots:
      removeSnapshots(b, u);
      return {};
    case Action::setLocation:
      if (b.m.location != u.name) b.changed = true;
      b.m.location = u.name;
      return {};
    case Action::setProperties:
      setProperties(b, u);
      return {};
    case Action::removeProperties:
      removeProperties(b, u);
      return {};
    case Action::setStatistics:
    case Action::setPartitionStatistics:
      return setStatistics(b, u, path);
    case Action::removeStatistics:
      if (eraseStatistics(b.m.statistics, *u.id)) b.changed = true;
      return {};
    case Action::removePartitionStatistics:
      if (eraseStatistics(b.m.partitionStatistics, *u.id)) b.changed = true;
      return {};
    case Action::removeSchemas:
      return removeById(
          b, u, b.m.schemas, b.m.currentSchemaId, [](const Schema& s) { return s.schemaId; },
          "current schema", path);
    case Action::removePartitionSpecs:
      return removeById(
          b, u, b.m.specs, b.m.defaultSpecId, [](const PartitionSpec& s) { return s.specId; },
          "default partition spec", path);
  }
  return {};
}

// ---- finishing: the logs, as Java's build() writes them.

Res<std::int64_t> previousVersionsMax(const TableMetadata& m) {
  auto it = m.properties.find(std::string(kPreviousVersionsMaxProperty));
  if (it == m.properties.end()) return kPreviousVersionsMaxDefault;
  std::int32_t n = 0;
  const std::string& s = it->second;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || end != s.data() + s.size()) {
    return refused(std::string("properties.") + std::string(kPreviousVersionsMaxProperty),
                   "not an integer: \"" + s + "\"");
  }
  return std::max<std::int64_t>(1, n);
}

Res<void> appendMetadataLog(TableMetadata& m, std::int64_t baseUpdatedMs,
                            const std::string& baseLocation) {
  CAIRN_TU_LET(bound, previousVersionsMax(m));
  std::size_t keep = std::size_t(bound - 1);
  if (m.metadataLog.size() > keep) {
    m.metadataLog.erase(m.metadataLog.begin(),
                        m.metadataLog.end() - static_cast<std::ptrdiff_t>(keep));
  }
  m.metadataLog.push_back({baseUpdatedMs, baseLocation});
  return {};
}

// Entries of snapshots that were added and made current but replaced within this commit
// go; a removed snapshot's entry cuts the history before it (no gaps for time travel).
Res<void> rewriteSnapshotLog(Builder& b) {
  std::set<std::int64_t> intermediate;
  for (std::int64_t id : b.mainSetToAdded) {
    if (id != b.m.currentSnapshotId.value_or(kNoSnapshotId)) intermediate.insert(id);
  }
  if (intermediate.empty() && !b.removedSnapshots) return {};
  std::vector<SnapshotLogEntry> log;
  for (const SnapshotLogEntry& e : b.m.snapshotLog) {
    if (b.m.snapshot(e.snapshotId) != nullptr) {
      if (intermediate.count(e.snapshotId) == 0) log.push_back(e);
    } else if (b.removedSnapshots) {
      log.clear();
    }
  }
  if (b.m.currentSnapshotId && b.m.snapshot(*b.m.currentSnapshotId) != nullptr &&
      (log.empty() || log.back().snapshotId != *b.m.currentSnapshotId)) {
    return refused("snapshot-log", "the latest entry is not the current snapshot");
  }
  b.m.snapshotLog = std::move(log);
  return {};
}

// A table read has its current schema, default spec and default sort order; a create
// transaction's empty base gets them from its updates, or the create is refused.
Res<void> requireCurrentElements(const TableMetadata& m) {
  bool hasOrder = std::any_of(m.sortOrders.begin(), m.sortOrders.end(), [&](const SortOrder& s) {
    return s.orderId == m.defaultSortOrderId;
  });
  if (m.currentSchema() == nullptr) return refused("result", "no current schema");
  if (m.defaultSpec() == nullptr) return refused("result", "no default partition spec");
  if (!hasOrder) return refused("result", "no default sort order");
  return {};
}

const SortOrder& defaultSortOrder(const TableMetadata& m) {
  auto it = std::find_if(m.sortOrders.begin(), m.sortOrders.end(),
                         [&](const SortOrder& s) { return s.orderId == m.defaultSortOrderId; });
  assert(it != m.sortOrders.end());  // the reader and setDefault keep the id valid
  return *it;
}

}  // namespace

Res<std::vector<TableRequirement>> parseTableRequirements(const json::value& list) {
  return readList<TableRequirement>(list, "requirements", kMaxRequirements, readRequirement);
}

Res<std::vector<TableUpdate>> parseTableUpdates(const json::value& list) {
  return readList<TableUpdate>(list, "updates", kMaxUpdates, readUpdate);
}

Res<CommitTableRequest> parseCommitTableRequest(const json::value& body) {
  if (!body.is_object()) return malformed("body", "must be an object");
  const json::object& o = body.get_object();
  CAIRN_TRY(requireKnownKeys(o, {"identifier", "requirements", "updates"}, "body"));
  CommitTableRequest request;
  if (const json::value* id = member(o, "identifier")) request.identifier = *id;
  const json::value* requirements = member(o, "requirements");
  const json::value* updates = member(o, "updates");
  if (requirements == nullptr) return malformed("requirements", "missing");
  if (updates == nullptr) return malformed("updates", "missing");
  CAIRN_TU_LET(r, parseTableRequirements(*requirements));
  CAIRN_TU_LET(u, parseTableUpdates(*updates));
  request.requirements = std::move(r);
  request.updates = std::move(u);
  return request;
}

Res<void> checkRequirements(const std::optional<TableMetadata>& current,
                            const std::vector<TableRequirement>& requirements) {
  for (const TableRequirement& r : requirements) CAIRN_TRY(checkRequirement(current, r));
  return {};
}

// Steps: 1. apply each update in order to a builder over a copy of base; 2. nothing changed →
// base, unchanged; 3. stamp last-updated-ms, append the base file to the metadata log,
// correct the snapshot log, check the defaults against the current schema; 4. re-read the result,
// so what is returned is what loads.
Res<AppliedUpdates> applyUpdates(const TableMetadata& base, const std::vector<TableUpdate>& updates,
                                 std::int64_t nowMs,
                                 const std::optional<std::string>& baseMetadataLocation) {
  Builder b;
  b.m = base;
  b.nowMs = nowMs;
  for (std::size_t i = 0; i < updates.size(); ++i) {
    CAIRN_TRY(applyOne(b, updates[i], at("updates", i)));
  }
  if (!b.changed) return AppliedUpdates{base, false};
  b.m.lastUpdatedMs = nowMs;
  if (baseMetadataLocation) {
    CAIRN_TRY(appendMetadataLog(b.m, base.lastUpdatedMs, *baseMetadataLocation));
  }
  CAIRN_TRY(rewriteSnapshotLog(b));
  CAIRN_TRY(requireCurrentElements(b.m));
  // As Java's build(): the default spec and sort order fit the current schema.
  CAIRN_TRY(requireSourcesInSchema(b.m, b.m.defaultSpec()->json, "default-spec-id"));
  CAIRN_TRY(requireSourcesInSchema(b.m, defaultSortOrder(b.m).json, "default-sort-order-id"));
  CAIRN_TRY(checkAdmitted(&base, b.m));
  auto reread = parseTableMetadata(serializeTableMetadata(b.m));
  if (!reread) return refused("result", reread.error().message);
  return AppliedUpdates{std::move(*reread), true};
}

#undef CAIRN_TU_LET

}  // namespace cairn::catalog
