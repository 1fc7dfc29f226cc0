// Creating a table (table_create.hpp): the request read strictly, and the first metadata made as
// Java's TableMetadata.newTableMetadata (fresh ids, rebound spec and sort order, persisted
// properties) and CatalogHandlers.create (buildFromEmpty, then every update) make it.
#include "catalog/iceberg/table_create.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include <boost/json.hpp>

#include "base/assert.hpp"

namespace cairn::catalog {

namespace json = boost::json;

namespace {

// Evaluates `expr` (a Res<T>) into a new variable `var`, or returns its failure.
#define CAIRN_TC_LET(var, expr)                             \
  auto var##Tried_ = (expr);                                \
  if (!var##Tried_) return ::cairn::failureOf(var##Tried_); \
  auto var = std::move(*var##Tried_)

// A request that does not read as one: 400 before anything is made.
Failure<Error> malformed(std::string_view path, std::string_view what) {
  return err(Errc::format, "create table request: " + std::string(path) + ": " + std::string(what));
}

// A request that reads but does not make a table (Java's IllegalArgumentException or
// ValidationException): also 400.
Failure<Error> invalid(std::string_view path, std::string_view what) {
  return err(Errc::usage, "create table: " + std::string(path) + ": " + std::string(what));
}

std::string at(std::string_view path, std::string_view key) {
  return std::string(path) + "." + std::string(key);
}

std::string at(std::string_view path, std::size_t index) {
  return std::string(path) + "[" + std::to_string(index) + "]";
}

// Absent and null are the same for an optional field, as in Java's JsonUtil.
const json::value* present(const json::object& o, std::string_view key) {
  auto it = o.find(json::string_view(key.data(), key.size()));
  return it == o.end() || it->value().is_null() ? nullptr : &it->value();
}

std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Java's Integer.parseInt: an optional sign, then decimal digits, within 32 bits.
std::optional<std::int32_t> parseJavaInt(std::string_view s) {
  if (s.starts_with('+')) {
    s.remove_prefix(1);
    if (s.starts_with('-')) return std::nullopt;
  }
  std::int32_t n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return n;
}

// ---- the request (the REST spec's CreateTableRequest).

constexpr std::string_view kRequestFields[] = {
    "name", "location", "schema", "partition-spec", "write-order", "stage-create", "properties"};

Res<void> requireKnownFields(const json::object& o) {
  for (const auto& kv : o) {
    std::string_view key(kv.key().data(), kv.key().size());
    if (std::find(std::begin(kRequestFields), std::end(kRequestFields), key) ==
        std::end(kRequestFields)) {
      return malformed(key, "unknown field");
    }
  }
  return {};
}

Res<std::string> readName(const json::object& o) {
  const json::value* v = present(o, "name");
  if (v == nullptr) return malformed("name", "missing");
  if (!v->is_string()) return malformed("name", "must be a string");
  if (v->get_string().size() > kMaxTableNameBytes) {
    return malformed("name", "longer than " + std::to_string(kMaxTableNameBytes) + " bytes");
  }
  return std::string(v->get_string());
}

Res<std::optional<std::string>> readLocation(const json::object& o) {
  const json::value* v = present(o, "location");
  if (v == nullptr) return std::optional<std::string>();
  if (!v->is_string()) return malformed("location", "must be a string");
  return std::optional<std::string>(std::string(v->get_string()));
}

// Absent is false; null is refused, as Java's CreateTableRequest.validate does.
Res<bool> readStageCreate(const json::object& o) {
  auto it = o.find("stage-create");
  if (it == o.end()) return false;
  if (!it->value().is_bool()) return malformed("stage-create", "must be a boolean");
  return it->value().get_bool();
}

Res<std::map<std::string, std::string>> readProperties(const json::object& o) {
  std::map<std::string, std::string> properties;
  const json::value* v = present(o, "properties");
  if (v == nullptr) return properties;
  if (!v->is_object()) return malformed("properties", "must be an object");
  for (const auto& kv : v->get_object()) {
    std::string key(kv.key());
    if (!kv.value().is_string()) return malformed(at("properties", key), "must be a string");
    properties[key] = std::string(kv.value().get_string());
  }
  return properties;
}

// The element readers are table_update's; their messages name a commit request.
Failure<Error> asCreateRequest(Error e) {
  constexpr std::string_view kCommit = "commit request: ";
  if (e.message.starts_with(kCommit))
    e.message.replace(0, kCommit.size(), "create table request: ");
  return Failure<Error>{std::move(e)};
}

// Java's spec and sort order parsers take one `source-id` per field (no multi-argument
// transform yet).
Res<void> requireSingleSources(const json::value& element, std::string_view path) {
  const json::array& fields = element.at("fields").get_array();
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (present(fields[i].get_object(), "source-id") == nullptr) {
      return malformed(at(at(at(path, "fields"), i), "source-id"),
                       "missing (multi-argument transforms are not supported)");
    }
  }
  return {};
}

Res<std::optional<PartitionSpec>> readPartitionSpec(const json::object& o) {
  const json::value* v = present(o, "partition-spec");
  if (v == nullptr) return std::optional<PartitionSpec>();
  if (!v->is_object()) return malformed("partition-spec", "must be an object");
  auto spec = readSpecElement(*v, "partition-spec");
  if (!spec) return asCreateRequest(spec.error());
  CAIRN_TRY(requireSingleSources(*v, "partition-spec"));
  // Java's PartitionSpecParser: field ids are sent for every field or for none.
  const json::array& fields = v->at("fields").get_array();
  std::size_t withIds = std::size_t(std::count_if(fields.begin(), fields.end(), [](auto& f) {
    return present(f.get_object(), "field-id") != nullptr;
  }));
  if (withIds != 0 && withIds != fields.size()) {
    return malformed("partition-spec.fields", "field-id is sent for some fields but not all");
  }
  return std::optional<PartitionSpec>(std::move(*spec));
}

Res<std::optional<SortOrder>> readWriteOrder(const json::object& o) {
  const json::value* v = present(o, "write-order");
  if (v == nullptr) return std::optional<SortOrder>();
  if (!v->is_object()) return malformed("write-order", "must be an object");
  auto order = readSortOrderElement(*v, "write-order");
  if (!order) return asCreateRequest(order.error());
  CAIRN_TRY(requireSingleSources(*v, "write-order"));
  // Java's UnboundSortOrder.bind: id 0 is the unsorted order's, and only its.
  if (present(v->get_object(), "order-id") != nullptr) {
    bool unsorted = v->at("fields").get_array().empty();
    if (unsorted && order->orderId != 0) {
      return malformed("write-order.order-id", "Unsorted order ID must be 0");
    }
    if (!unsorted && order->orderId == 0) {
      return malformed("write-order.order-id", "Sort order ID 0 is reserved for unsorted order");
    }
  }
  return std::optional<SortOrder>(std::move(*order));
}

// ---- types, as Java's Type.TypeID tells them apart.

enum class TypeId {
  boolean,
  int32,
  int64,
  float32,
  float64,
  decimal,
  date,
  time,
  timestamp,    // with or without zone
  timestampNs,  // with or without zone (v3)
  string,
  uuid,
  fixed,
  binary,
  unknown,  // v3
  variant,  // v3; not a primitive type
  geometry,
  geography,
  structType,
  listType,
  mapType,
};

// `type` as the metadata reader accepted it: a primitive name or a struct, list or map object.
TypeId typeIdOf(const json::value& type) {
  if (type.is_object()) {
    const json::value& kind = type.at("type");
    if (kind == "struct") return TypeId::structType;
    return kind == "list" ? TypeId::listType : TypeId::mapType;
  }
  static constexpr std::pair<std::string_view, TypeId> kNamed[] = {
      {"boolean", TypeId::boolean},
      {"int", TypeId::int32},
      {"long", TypeId::int64},
      {"float", TypeId::float32},
      {"double", TypeId::float64},
      {"date", TypeId::date},
      {"time", TypeId::time},
      {"timestamp", TypeId::timestamp},
      {"timestamptz", TypeId::timestamp},
      {"timestamp_ns", TypeId::timestampNs},
      {"timestamptz_ns", TypeId::timestampNs},
      {"string", TypeId::string},
      {"uuid", TypeId::uuid},
      {"binary", TypeId::binary},
      {"unknown", TypeId::unknown},
      {"variant", TypeId::variant}};
  std::string t = lowered(type.get_string());
  for (const auto& [name, id] : kNamed) {
    if (t == name) return id;
  }
  if (t.starts_with("fixed[")) return TypeId::fixed;
  if (t.starts_with("decimal(")) return TypeId::decimal;
  if (t.starts_with("geometry")) return TypeId::geometry;
  CAIRN_ASSERT(t.starts_with("geography"));  // the metadata reader accepts no other name
  return TypeId::geography;
}

bool isPrimitive(TypeId t) {
  return t != TypeId::structType && t != TypeId::listType && t != TypeId::mapType &&
         t != TypeId::variant;
}

// A primitive type as Java writes it (its toString): lower case, `fixed[N]`, `decimal(P, S)`.
// Geometry and geography keep the parameters as sent.
std::string canonicalType(std::string_view sent) {
  std::string t = lowered(sent);
  if (t.starts_with("geometry") || t.starts_with("geography")) return std::string(sent);
  if (!t.starts_with("fixed[") && !t.starts_with("decimal(")) return t;
  std::vector<std::uint64_t> numbers;  // the reader allows at most 10 digits each
  for (std::size_t i = 0; i < t.size();) {
    if (!std::isdigit(static_cast<unsigned char>(t[i]))) {
      ++i;
      continue;
    }
    std::uint64_t n = 0;
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) {
      n = n * 10 + std::uint64_t(t[i++] - '0');
    }
    numbers.push_back(n);
  }
  if (t.starts_with("fixed[")) return "fixed[" + std::to_string(numbers.at(0)) + "]";
  return "decimal(" + std::to_string(numbers.at(0)) + ", " + std::to_string(numbers.at(1)) + ")";
}

// ---- a schema's columns, with the ids AssignFreshIds gives them.

// A field of the type tree: a struct field, a list element, a map key or value.
struct Column {
  std::int32_t id = 0;       // as in the schema read
  std::int32_t freshId = 0;  // as TypeUtil.assignFreshIds numbers it, from 1
  std::string name;          // Java's canonical name: "a.b", "l.element", "m.value.x"
  std::string shortName;     // and its short one: "l.x" for "l.element.x"
  std::string type;          // the primitive type's name, or "struct", "list", "map"
  TypeId typeId = TypeId::unknown;
  bool required = false;
  bool initialDefault = false;
  std::optional<std::size_t> parent;  // the column whose type holds this one
};

std::string joined(const std::string& prefix, std::string_view name) {
  return prefix.empty() ? std::string(name) : prefix + "." + std::string(name);
}

// Walks a type tree in AssignFreshIds' order and rebuilds it with fresh ids: a struct numbers
// its own fields first and then descends into each in turn; a list numbers its element, a map
// its key and then its value, before descending (key first). Every column is recorded. Names
// are passed by value: `columns` grows, and moves, while a type below them is walked.
class FreshIds {
 public:
  std::vector<Column> columns;
  std::int32_t last = 0;  // the last id given

  json::value type(const json::value& t, std::string name, std::string shortName,
                   std::optional<std::size_t> column) {
    if (t.is_string()) return json::value(canonicalType(t.get_string()));
    const json::object& o = t.get_object();
    if (o.at("type") == "struct") return structType(o, name, shortName, column);
    if (o.at("type") == "list") return listType(o, name, shortName, column);
    return mapType(o, name, shortName, column);
  }

 private:
  std::size_t add(Column c, const json::value& type) {
    c.typeId = typeIdOf(type);
    c.type = type.is_string() ? canonicalType(type.get_string())
                              : std::string(type.at("type").get_string());
    columns.push_back(std::move(c));
    return columns.size() - 1;
  }

  json::value structType(const json::object& o, std::string name, std::string shortName,
                         std::optional<std::size_t> column) {
    const json::array& fields = o.at("fields").get_array();
    std::int32_t first = last + 1;
    last += std::int32_t(fields.size());  // the reader's bounds keep ids far below 2^31
    json::array out;
    for (std::size_t i = 0; i < fields.size(); ++i) {
      const json::object& f = fields[i].get_object();
      std::string_view fieldName = f.at("name").get_string();
      std::int32_t freshId = first + std::int32_t(i);
      std::size_t at =
          add({std::int32_t(f.at("id").as_int64()), freshId, joined(name, fieldName),
               joined(shortName, fieldName), "", TypeId::unknown, f.at("required").get_bool(),
               present(f, "initial-default") != nullptr, column},
              f.at("type"));
      json::value type = this->type(f.at("type"), columns[at].name, columns[at].shortName, at);
      json::object field{{"id", freshId},
                         {"name", f.at("name")},
                         {"required", f.at("required")},
                         {"type", std::move(type)}};
      for (std::string_view key : {"doc", "initial-default", "write-default"}) {
        if (const json::value* v = present(f, key)) field[key] = *v;
      }
      out.push_back(std::move(field));
    }
    return json::object{{"type", "struct"}, {"fields", std::move(out)}};
  }

  // Java's short names leave out "element" (and a map's "value") before a struct's fields.
  std::string innerShortName(std::size_t at, const std::string& outer) const {
    return columns[at].typeId == TypeId::structType ? outer : columns[at].shortName;
  }

  json::value listType(const json::object& o, std::string name, std::string shortName,
                       std::optional<std::size_t> column) {
    std::int32_t id = ++last;
    std::size_t at = add({std::int32_t(o.at("element-id").as_int64()), id, joined(name, "element"),
                          joined(shortName, "element"), "", TypeId::unknown,
                          o.at("element-required").get_bool(), false, column},
                         o.at("element"));
    json::value element =
        type(o.at("element"), columns[at].name, innerShortName(at, shortName), at);
    return json::object{{"type", "list"},
                        {"element-id", id},
                        {"element", std::move(element)},
                        {"element-required", o.at("element-required")}};
  }

  json::value mapType(const json::object& o, std::string name, std::string shortName,
                      std::optional<std::size_t> column) {
    std::int32_t keyId = ++last;
    std::int32_t valueId = ++last;
    std::size_t keyAt = add({std::int32_t(o.at("key-id").as_int64()), keyId, joined(name, "key"),
                             joined(shortName, "key"), "", TypeId::unknown, true, false, column},
                            o.at("key"));
    std::size_t valueAt = add({std::int32_t(o.at("value-id").as_int64()), valueId,
                               joined(name, "value"), joined(shortName, "value"), "",
                               TypeId::unknown, o.at("value-required").get_bool(), false, column},
                              o.at("value"));
    json::value key = type(o.at("key"), columns[keyAt].name, columns[keyAt].shortName, keyAt);
    json::value value =
        type(o.at("value"), columns[valueAt].name, innerShortName(valueAt, shortName), valueAt);
    return json::object{{"type", "map"},
                        {"key-id", keyId},
                        {"key", std::move(key)},
                        {"value-id", valueId},
                        {"value", std::move(value)},
                        {"value-required", o.at("value-required")}};
  }
};

// A schema's columns by id and by name, its type tree renumbered, checked as Java's Schema
// constructor checks it: no id and no canonical name used twice.
struct SchemaIndex {
  std::vector<Column> columns;
  json::value freshFields;  // the top-level fields, renumbered
  std::int32_t lastColumnId = 0;
  std::map<std::int32_t, std::size_t> ids;
  std::map<std::string, std::size_t, std::less<>> names;
  std::map<std::string, std::size_t, std::less<>> shortNames;  // the first column of each

  const Column* byId(std::int64_t id) const {
    auto it = id < std::numeric_limits<std::int32_t>::min() ||
                      id > std::numeric_limits<std::int32_t>::max()
                  ? ids.end()
                  : ids.find(std::int32_t(id));
    return it == ids.end() ? nullptr : &columns[it->second];
  }

  // Java's Schema.findField(name): a canonical name, else a short one.
  const Column* byName(std::string_view name) const {
    if (auto it = names.find(name); it != names.end()) return &columns[it->second];
    if (auto it = shortNames.find(name); it != shortNames.end()) return &columns[it->second];
    return nullptr;
  }
};

// `schema` as the metadata reader accepted it.
Res<SchemaIndex> indexSchema(const json::value& schema, std::string_view path) {
  FreshIds walk;
  json::value fresh = walk.type(json::object{{"type", "struct"}, {"fields", schema.at("fields")}},
                                "", "", std::nullopt);
  SchemaIndex index{std::move(walk.columns), fresh.at("fields"), walk.last, {}, {}, {}};
  for (std::size_t i = 0; i < index.columns.size(); ++i) {
    const Column& c = index.columns[i];
    if (auto [it, added] = index.ids.emplace(c.id, i); !added) {
      return invalid(path, "Invalid schema: field id " + std::to_string(c.id) +
                               " is used by both " + index.columns[it->second].name + " and " +
                               c.name);
    }
    if (!index.names.emplace(c.name, i).second) {
      return invalid(path, "Invalid schema: multiple fields for name " + c.name);
    }
    index.shortNames.emplace(c.shortName, i);
  }
  return index;
}

// Java's Schema.validateIdentifierField for each identifier field; returns their fresh ids in
// ascending order.
Res<json::array> freshIdentifierIds(const json::value& schema, const SchemaIndex& index,
                                    std::string_view path) {
  std::set<std::int32_t> fresh;
  const json::value* ids = present(schema.get_object(), "identifier-field-ids");
  std::string where = at(path, "identifier-field-ids");
  for (const json::value& id : ids != nullptr ? ids->get_array() : json::array()) {
    std::string prefix = "Cannot add field " + json::serialize(id) + " as an identifier field: ";
    const Column* c = id.is_int64() ? index.byId(id.get_int64()) : nullptr;
    if (c == nullptr) return invalid(where, prefix + "field does not exist");
    if (!isPrimitive(c->typeId)) return invalid(where, prefix + "not a primitive type field");
    if (!c->required) return invalid(where, prefix + "not a required field");
    if (c->typeId == TypeId::float32 || c->typeId == TypeId::float64) {
      return invalid(where, prefix + "must not be float or double field");
    }
    for (auto p = c->parent; p; p = index.columns[*p].parent) {
      const Column& parent = index.columns[*p];
      if (parent.typeId != TypeId::structType || !parent.required) {
        return invalid(where, prefix + "must not be nested in " +
                                  (parent.required ? "" : std::string("optional ")) + parent.type +
                                  " " + parent.name);
      }
    }
    fresh.insert(c->freshId);
  }
  json::array out;
  for (std::int32_t id : fresh) out.push_back(id);
  return out;
}

// Java's Schema.checkCompatibility: the v3 types and initial defaults need a v3 table.
Res<void> requireTypesOfVersion(const SchemaIndex& index, int formatVersion,
                                std::string_view path) {
  constexpr int kV3 = 3;
  if (formatVersion >= kV3) return {};
  for (const Column& c : index.columns) {
    bool v3Type = c.typeId == TypeId::timestampNs || c.typeId == TypeId::variant ||
                  c.typeId == TypeId::unknown || c.typeId == TypeId::geometry ||
                  c.typeId == TypeId::geography;
    std::string version = "v" + std::to_string(formatVersion);
    if (v3Type) {
      return invalid(path, "Invalid schema for " + version + ": Invalid type for " + c.name + ": " +
                               c.type + " is not supported until v3");
    }
    if (c.initialDefault) {
      return invalid(path, "Invalid schema for " + version + ": Invalid initial default for " +
                               c.name + ": non-null default is not supported until v3");
    }
  }
  return {};
}

// ---- transforms, as Java's Transforms.fromString reads them.

enum class TransformKind {
  identity,
  bucket,
  truncate,
  year,
  month,
  day,
  hour,
  alwaysNull,
  unknown
};

struct Transform {
  TransformKind kind = TransformKind::unknown;
  std::string text;  // as Java writes it (its toString); an unknown one as sent
};

bool isWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool isDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// `name[N]` (Java's pattern (\w+)\[(\d+)\]) for bucket and truncate.
std::optional<std::pair<std::string, std::string_view>> widthForm(std::string_view text) {
  std::size_t open = text.find('[');
  if (open == std::string_view::npos || open == 0 || text.size() < open + 3 || text.back() != ']') {
    return std::nullopt;
  }
  std::string_view name = text.substr(0, open);
  std::string_view digits = text.substr(open + 1, text.size() - open - 2);
  if (!std::all_of(name.begin(), name.end(), isWordChar) ||
      !std::all_of(digits.begin(), digits.end(), isDigit)) {
    return std::nullopt;
  }
  return std::make_pair(lowered(name), digits);
}

// Any text Java does not know is an unknown transform, kept as sent (Java's UnknownTransform):
// it applies to any primitive source.
Res<Transform> parseTransform(std::string_view text, std::string_view path) {
  if (auto width = widthForm(text);
      width && (width->first == "bucket" || width->first == "truncate")) {
    bool bucket = width->first == "bucket";
    TransformKind kind = bucket ? TransformKind::bucket : TransformKind::truncate;
    std::optional<std::int32_t> n = parseJavaInt(width->second);
    if (!n) return invalid(path, "width " + std::string(width->second) + " is out of range");
    if (*n <= 0) {
      return invalid(path, (bucket ? "Invalid number of buckets: " : "Invalid truncate width: ") +
                               std::to_string(*n) + " (must be > 0)");
    }
    return Transform{kind, width->first + "[" + std::to_string(*n) + "]"};
  }
  static constexpr std::pair<std::string_view, TransformKind> kNamed[] = {
      {"identity", TransformKind::identity}, {"year", TransformKind::year},
      {"month", TransformKind::month},       {"day", TransformKind::day},
      {"hour", TransformKind::hour},         {"void", TransformKind::alwaysNull}};
  std::string t = lowered(text);
  for (const auto& [name, kind] : kNamed) {
    if (t == name) return Transform{kind, t};
  }
  return Transform{TransformKind::unknown, std::string(text)};
}

// Each transform's canTransform.
bool canTransform(TransformKind kind, TypeId t) {
  auto oneOf = [t](std::initializer_list<TypeId> types) {
    return std::find(types.begin(), types.end(), t) != types.end();
  };
  switch (kind) {
    case TransformKind::identity:
      return isPrimitive(t) && t != TypeId::geometry && t != TypeId::geography;
    case TransformKind::bucket:
      return oneOf({TypeId::int32, TypeId::int64, TypeId::date, TypeId::time, TypeId::timestamp,
                    TypeId::timestampNs, TypeId::string, TypeId::binary, TypeId::fixed,
                    TypeId::decimal, TypeId::uuid});
    case TransformKind::truncate:
      return oneOf({TypeId::int32, TypeId::int64, TypeId::string, TypeId::binary, TypeId::decimal});
    case TransformKind::year:
    case TransformKind::month:
    case TransformKind::day:
      return oneOf({TypeId::date, TypeId::timestamp, TypeId::timestampNs});
    case TransformKind::hour:
      return oneOf({TypeId::timestamp, TypeId::timestampNs});
    case TransformKind::alwaysNull:
    case TransformKind::unknown:
      return true;
  }
  return false;
}

// ---- the partition spec and sort order, bound to the schema by column.

struct BoundField {
  const json::object* json = nullptr;  // the field as read
  const Column* source = nullptr;      // none: a void transform of a column that is not there
  Transform transform;
};

// The source and transform of one spec or sort field.
Res<BoundField> bindField(const json::value& field, const SchemaIndex& index,
                          const std::string& path) {
  const json::object& f = field.get_object();
  const json::value* sourceId = present(f, "source-id");
  if (sourceId == nullptr) {
    return invalid(at(path, "source-id"), "missing (multi-argument transforms are not supported)");
  }
  CAIRN_TC_LET(transform, parseTransform(f.at("transform").get_string(), at(path, "transform")));
  return BoundField{&f, index.byId(sourceId->as_int64()), std::move(transform)};
}

// PartitionSpec/SortOrder.checkCompatibility: the source is a primitive column the transform
// applies to; a partition source is nested in structs only (a void transform needs none).
Res<void> requireSource(const BoundField& b, const SchemaIndex& index, bool partition,
                        const std::string& path) {
  if (partition && b.transform.kind == TransformKind::alwaysNull) return {};
  std::string what = partition ? "partition" : "sort";
  if (b.source == nullptr) {
    return invalid(at(path, "source-id"), "Cannot find source column for " + what + " field: " +
                                              json::serialize(b.json->at("source-id")));
  }
  if (!isPrimitive(b.source->typeId)) {
    return invalid(at(path, "source-id"),
                   "Cannot " + what + " by non-primitive source field: " + b.source->name);
  }
  if (!canTransform(b.transform.kind, b.source->typeId)) {
    return invalid(at(path, "transform"),
                   "Invalid source type " + b.source->type + " for transform: " + b.transform.text);
  }
  for (auto p = b.source->parent; partition && p; p = index.columns[*p].parent) {
    if (index.columns[*p].typeId != TypeId::structType) {
      return invalid(at(path, "source-id"),
                     "Invalid partition field parent: " + index.columns[*p].type + " " +
                         index.columns[*p].name);
    }
  }
  return {};
}

// Java's UnboundPartitionSpec.bind: each transform reads, each name is new and names no other
// column than the field's source, then every field is compatible with the schema.
Res<std::vector<BoundField>> bindSpec(const json::value& spec, const SchemaIndex& index,
                                      std::string_view path) {
  std::vector<BoundField> bound;
  std::set<std::string, std::less<>> names;
  const json::array& fields = spec.at("fields").get_array();
  for (std::size_t i = 0; i < fields.size(); ++i) {
    std::string fieldPath = at(at(path, "fields"), i);
    CAIRN_TC_LET(b, bindField(fields[i], index, fieldPath));
    std::string name(b.json->at("name").get_string());
    const Column* same = index.byName(name);
    if (b.source != nullptr && same != nullptr && same != b.source) {
      return invalid(
          at(fieldPath, "name"),
          "Cannot create identity partition sourced from different field in schema: " + name);
    }
    if (name.empty()) return invalid(at(fieldPath, "name"), "Cannot use empty partition name");
    if (!names.insert(name).second) {
      return invalid(at(fieldPath, "name"), "Cannot use partition name more than once: " + name);
    }
    bound.push_back(std::move(b));
  }
  for (std::size_t i = 0; i < bound.size(); ++i) {
    CAIRN_TRY(requireSource(bound[i], index, true, at(at(path, "fields"), i)));
  }
  return bound;
}

// Java's UnboundSortOrder.bind: each transform reads and applies to its primitive source.
Res<std::vector<BoundField>> bindSortOrder(const json::value& order, const SchemaIndex& index,
                                           std::string_view path) {
  std::vector<BoundField> bound;
  const json::array& fields = order.at("fields").get_array();
  for (std::size_t i = 0; i < fields.size(); ++i) {
    std::string fieldPath = at(at(path, "fields"), i);
    CAIRN_TC_LET(b, bindField(fields[i], index, fieldPath));
    CAIRN_TRY(requireSource(b, index, false, fieldPath));
    bound.push_back(std::move(b));
  }
  return bound;
}

// The spec rebound to the fresh ids by column, its field ids from 1000 (spec 0).
Res<PartitionSpec> freshSpec(const std::vector<BoundField>& fields, std::string_view path) {
  PartitionSpec spec{0, kPartitionFieldIdStart - 1, json::value()};
  json::array out;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    // Java looks the void field's missing source up by name and fails (a NullPointerException).
    if (fields[i].source == nullptr) {
      return invalid(
          at(at(at(path, "fields"), i), "source-id"),
          "source column " + json::serialize(fields[i].json->at("source-id")) + " does not exist");
    }
    out.push_back(json::object{{"name", fields[i].json->at("name")},
                               {"transform", fields[i].transform.text},
                               {"source-id", fields[i].source->freshId},
                               {"field-id", ++spec.lastAssignedFieldId}});
  }
  spec.json = json::object{{"spec-id", spec.specId}, {"fields", std::move(out)}};
  return spec;
}

// The sort order rebound to the fresh ids by column: id 1, or 0 when unsorted.
SortOrder freshSortOrder(const std::vector<BoundField>& fields) {
  constexpr std::int32_t kFirstSortOrderId = 1;  // Java's INITIAL_SORT_ORDER_ID
  SortOrder order{fields.empty() ? 0 : kFirstSortOrderId, json::value()};
  json::array out;
  for (const BoundField& f : fields) {
    out.push_back(json::object{{"transform", f.transform.text},
                               {"source-id", f.source->freshId},
                               {"direction", f.json->at("direction")},
                               {"null-order", f.json->at("null-order")}});
  }
  order.json = json::object{{"order-id", order.orderId}, {"fields", std::move(out)}};
  return order;
}

// ---- properties, as newTableMetadata reads and checks them.

Res<int> formatVersionOf(const std::map<std::string, std::string>& properties) {
  std::string path = at("properties", kFormatVersionProperty);
  auto it = properties.find(std::string(kFormatVersionProperty));
  if (it == properties.end()) return kDefaultTableFormatVersion;
  std::optional<std::int32_t> version = parseJavaInt(it->second);
  if (!version) return invalid(path, "not an integer: \"" + it->second + "\"");
  if (*version < kMinTableFormatVersion || *version > kMaxTableFormatVersion) {
    return invalid(path, "unsupported format version " + std::to_string(*version) +
                             " (supported: " + std::to_string(kMinTableFormatVersion) + " to " +
                             std::to_string(kMaxTableFormatVersion) + ")");
  }
  return int(*version);
}

bool isReserved(std::string_view key) {
  return std::find(std::begin(kReservedTableProperties), std::end(kReservedTableProperties), key) !=
         std::end(kReservedTableProperties);
}

// Java's persistedProperties: the new-table defaults, then every property that is not reserved.
std::map<std::string, std::string> persistedProperties(
    const std::map<std::string, std::string>& requested) {
  std::map<std::string, std::string> out{
      {std::string(kParquetCompressionProperty), std::string(kParquetCompressionDefault)}};
  for (const auto& [key, value] : requested) {
    if (!isReserved(key)) out[key] = value;
  }
  return out;
}

// PropertyUtil.validateCommitProperties: the retry settings are non-negative integers.
Res<void> requireCommitProperties(const std::map<std::string, std::string>& properties) {
  for (std::string_view key : {"commit.retry.num-retries", "commit.retry.min-wait-ms",
                               "commit.retry.max-wait-ms", "commit.retry.total-timeout-ms"}) {
    auto it = properties.find(std::string(key));
    if (it == properties.end()) continue;
    std::optional<std::int32_t> n = parseJavaInt(it->second);
    std::string what = "Table property " + std::string(key);
    if (!n) return invalid(at("properties", key), what + " must have integer value");
    if (*n < 0)
      return invalid(at("properties", key), what + " must have non negative integer value");
  }
  return {};
}

// EncryptionUtil.checkCompatibility: encryption needs a v3 table.
Res<void> requireEncryptionVersion(const std::map<std::string, std::string>& properties,
                                   int formatVersion) {
  constexpr int kV3 = 3;
  for (std::string_view key : {"encryption.key-id", "encryption.data-key-length"}) {
    if (formatVersion < kV3 && properties.count(std::string(key)) != 0) {
      return invalid(at("properties", key), "Invalid properties for v" +
                                                std::to_string(formatVersion) + ": [" +
                                                std::string(key) + "]");
    }
  }
  return {};
}

// MetricsConfig.validate: a column's metrics mode names a column, and no column twice.
Res<void> requireMetricsColumns(const std::map<std::string, std::string>& properties,
                                const SchemaIndex& index) {
  constexpr std::string_view kPrefix = "write.metadata.metrics.column.";
  std::map<std::int32_t, std::string> named;
  for (const auto& [key, value] : properties) {
    if (!key.starts_with(kPrefix)) continue;
    std::string column = key.substr(kPrefix.size());
    const Column* c = index.byName(column);
    if (c == nullptr) {
      return invalid(at("properties", key), "Invalid metrics config, could not find column " +
                                                column + " from table prop " + key + " in schema");
    }
    if (auto [it, added] = named.emplace(c->id, column); !added) {
      return invalid(at("properties", key), "Incorrect field name for id " + std::to_string(c->id) +
                                                ": " + column + " (expected " + it->second + ")");
    }
  }
  return {};
}

// Java's LocationUtil.stripTrailingSlash, as the TableMetadata constructor applies it.
Res<std::string> tableLocation(const std::string& location, std::string_view path) {
  if (location.empty()) return invalid(path, "missing (a table needs a location)");
  std::string out = location;
  while (!out.ends_with("://") && out.ends_with('/')) out.pop_back();
  return out;
}

Res<TableMetadata> reread(const TableMetadata& m) {
  auto again = parseTableMetadata(serializeTableMetadata(m));
  if (!again) return invalid("result", again.error().message);
  return std::move(*again);
}

// ---- a create transaction, beyond what applyUpdates checks.

using Action = TableUpdate::Action;

// Java's CatalogHandlers.create: the version of the first upgrade-format-version update.
Res<int> initialFormatVersion(const std::vector<TableUpdate>& updates) {
  for (std::size_t i = 0; i < updates.size(); ++i) {
    if (updates[i].action != Action::upgradeFormatVersion) continue;
    std::int64_t version = *updates[i].id;
    if (version < kMinTableFormatVersion || version > kMaxTableFormatVersion) {
      return invalid(at(at("updates", i), "format-version"),
                     "unsupported format version " + std::to_string(version) +
                         " (supported: " + std::to_string(kMinTableFormatVersion) + " to " +
                         std::to_string(kMaxTableFormatVersion) + ")");
    }
    return int(version);
  }
  return kDefaultTableFormatVersion;
}

bool assignsUuid(const std::vector<TableUpdate>& updates) {
  return std::any_of(updates.begin(), updates.end(),
                     [](const TableUpdate& u) { return u.action == Action::assignUuid; });
}

// Each added schema as Java's Schema constructor and addSchemaInternal check it, at the format
// version the table has when it is added.
Res<void> requireAddedSchemas(const std::vector<TableUpdate>& updates, int formatVersion) {
  for (std::size_t i = 0; i < updates.size(); ++i) {
    const TableUpdate& u = updates[i];
    if (u.action == Action::upgradeFormatVersion) formatVersion = int(*u.id);
    if (u.action != Action::addSchema) continue;
    std::string path = at(at("updates", i), "schema");
    CAIRN_TC_LET(index, indexSchema(u.element, path));
    CAIRN_TRY(freshIdentifierIds(u.element, index, path));
    CAIRN_TRY(requireTypesOfVersion(index, formatVersion, path));
  }
  return {};
}

// ---- what enters a table by any route (checkAdmitted).

template <class T, class Id>
bool holds(const TableMetadata* before, std::vector<T> TableMetadata::*items, Id id,
           std::int32_t wanted) {
  if (before == nullptr) return false;
  const auto& list = before->*items;
  return std::any_of(list.begin(), list.end(), [&](const T& e) { return id(e) == wanted; });
}

bool singleSources(const json::value& element) {
  const json::array& fields = element.at("fields").get_array();
  return std::all_of(fields.begin(), fields.end(), [](const json::value& f) {
    return present(f.get_object(), "source-id") != nullptr;
  });
}

// Each field's transform reads as Java reads it (a width above 0), and a spec's names are
// non-empty and unique.
Res<void> requireTransforms(const json::value& element, bool partition, std::string_view path) {
  std::set<std::string, std::less<>> names;
  const json::array& fields = element.at("fields").get_array();
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const json::object& f = fields[i].get_object();
    std::string fieldPath = at(at(path, "fields"), i);
    CAIRN_TRY(parseTransform(f.at("transform").get_string(), at(fieldPath, "transform")));
    if (!partition) continue;
    std::string name(f.at("name").get_string());
    if (name.empty()) return invalid(at(fieldPath, "name"), "Cannot use empty partition name");
    if (!names.insert(name).second) {
      return invalid(at(fieldPath, "name"), "Cannot use partition name more than once: " + name);
    }
  }
  return {};
}

// A schema as Java's Schema constructor and Builder.addSchema check it.
Res<void> requireSchema(const Schema& schema, int formatVersion) {
  std::string path = "schemas[" + std::to_string(schema.schemaId) + "]";
  CAIRN_TC_LET(index, indexSchema(schema.json, path));
  CAIRN_TRY(freshIdentifierIds(schema.json, index, path));
  return requireTypesOfVersion(index, formatVersion, path);
}

// A spec: its transforms and names; bound to the current schema when new in a commit.
Res<void> requireSpec(const PartitionSpec& spec, const SchemaIndex& current, bool bind) {
  std::string path = "partition-specs[" + std::to_string(spec.specId) + "]";
  CAIRN_TRY(requireTransforms(spec.json, true, path));
  if (bind && singleSources(spec.json)) CAIRN_TRY(bindSpec(spec.json, current, path));
  return {};
}

Res<void> requireSortOrder(const SortOrder& order, const SchemaIndex& current, bool bind) {
  std::string path = "sort-orders[" + std::to_string(order.orderId) + "]";
  CAIRN_TRY(requireTransforms(order.json, false, path));
  if (bind && singleSources(order.json)) CAIRN_TRY(bindSortOrder(order.json, current, path));
  return {};
}

// Java's build(): the default spec and sort order are compatible with the current schema.
Res<void> requireDefaultsFit(const TableMetadata& m, const SchemaIndex& current) {
  const PartitionSpec* spec = m.defaultSpec();
  if (spec != nullptr && singleSources(spec->json)) {
    const json::array& fields = spec->json.at("fields").get_array();
    for (std::size_t i = 0; i < fields.size(); ++i) {
      std::string path = at(at("default partition spec", "fields"), i);
      CAIRN_TC_LET(b, bindField(fields[i], current, path));
      CAIRN_TRY(requireSource(b, current, true, path));
    }
  }
  for (const SortOrder& order : m.sortOrders) {
    if (order.orderId != m.defaultSortOrderId || !singleSources(order.json)) continue;
    CAIRN_TRY(bindSortOrder(order.json, current, "default sort order"));
  }
  return {};
}

}  // namespace

Res<void> checkAdmitted(const TableMetadata* before, const TableMetadata& after) {
  for (const Schema& schema : after.schemas) {
    if (holds(
            before, &TableMetadata::schemas, [](const Schema& s) { return s.schemaId; },
            schema.schemaId)) {
      continue;
    }
    CAIRN_TRY(requireSchema(schema, after.formatVersion));
  }
  const Schema* schema = after.currentSchema();
  if (schema == nullptr) return invalid("current-schema-id", "no current schema");
  CAIRN_TC_LET(current, indexSchema(schema->json, "schemas"));
  const bool commit = before != nullptr;
  for (const PartitionSpec& spec : after.specs) {
    if (holds(
            before, &TableMetadata::specs, [](const PartitionSpec& s) { return s.specId; },
            spec.specId)) {
      continue;
    }
    CAIRN_TRY(requireSpec(spec, current, commit));
  }
  for (const SortOrder& order : after.sortOrders) {
    if (holds(
            before, &TableMetadata::sortOrders, [](const SortOrder& s) { return s.orderId; },
            order.orderId)) {
      continue;
    }
    CAIRN_TRY(requireSortOrder(order, current, commit));
  }
  return requireDefaultsFit(after, current);
}

Res<CreateTableRequest> parseCreateTableRequest(const json::value& body) {
  if (!body.is_object()) return malformed("body", "must be an object");
  const json::object& o = body.get_object();
  CAIRN_TRY(requireKnownFields(o));
  CreateTableRequest request;
  CAIRN_TC_LET(name, readName(o));
  request.name = std::move(name);
  CAIRN_TC_LET(location, readLocation(o));
  request.location = std::move(location);
  const json::value* schema = present(o, "schema");
  if (schema == nullptr) return malformed("schema", "missing");
  if (!schema->is_object()) return malformed("schema", "must be an object");
  auto typed = readSchemaElement(*schema, "schema");
  if (!typed) return asCreateRequest(typed.error());
  request.schema = std::move(*typed);
  CAIRN_TC_LET(spec, readPartitionSpec(o));
  request.partitionSpec = std::move(spec);
  CAIRN_TC_LET(order, readWriteOrder(o));
  request.writeOrder = std::move(order);
  CAIRN_TC_LET(stage, readStageCreate(o));
  request.stageCreate = stage;
  CAIRN_TC_LET(properties, readProperties(o));
  request.properties = std::move(properties);
  return request;
}

// Steps, in the order of Java's createTable: 1. bind the spec and sort order to the request's
// schema (request.spec(), writeOrder()); 2. read the format version and persist the properties,
// checked as newTableMetadata checks them; 3. assign fresh ids and rebind the spec and sort order
// to them by column; 4. re-read the result, so what is returned is what loads.
Res<TableMetadata> newTableMetadata(const CreateTableRequest& request, const std::string& location,
                                    const std::string& tableUuid, std::int64_t nowMs) {
  static const json::value kNoFields = json::object{{"fields", json::array()}};
  CAIRN_TC_LET(index, indexSchema(request.schema.json, "schema"));
  CAIRN_TC_LET(identifiers, freshIdentifierIds(request.schema.json, index, "schema"));
  CAIRN_TC_LET(spec, bindSpec(request.partitionSpec ? request.partitionSpec->json : kNoFields,
                              index, "partition-spec"));
  CAIRN_TC_LET(order, bindSortOrder(request.writeOrder ? request.writeOrder->json : kNoFields,
                                    index, "write-order"));

  CAIRN_TC_LET(version, formatVersionOf(request.properties));
  std::map<std::string, std::string> properties = persistedProperties(request.properties);
  CAIRN_TRY(requireMetricsColumns(properties, index));
  CAIRN_TRY(requireCommitProperties(properties));
  CAIRN_TRY(requireEncryptionVersion(properties, version));
  CAIRN_TRY(requireTypesOfVersion(index, version, "schema"));
  CAIRN_TC_LET(stripped, tableLocation(location, "location"));

  json::object schema{{"type", "struct"}, {"schema-id", 0}};
  if (!identifiers.empty()) schema["identifier-field-ids"] = std::move(identifiers);
  schema["fields"] = index.freshFields;
  CAIRN_TC_LET(freshPartitionSpec, freshSpec(spec, "partition-spec"));
  TableMetadata m;
  m.formatVersion = version;
  m.tableUuid = tableUuid;
  m.location = std::move(stripped);
  m.lastUpdatedMs = nowMs;
  m.lastColumnId = index.lastColumnId;
  m.schemas = {Schema{0, index.lastColumnId, std::move(schema)}};
  m.lastPartitionId = freshPartitionSpec.lastAssignedFieldId;
  m.specs = {std::move(freshPartitionSpec)};
  m.sortOrders = {freshSortOrder(order)};
  m.defaultSortOrderId = m.sortOrders[0].orderId;
  m.properties = std::move(properties);
  CAIRN_TRY(checkAdmitted(nullptr, m));
  return reread(m);
}

Res<bool> isCreateTransaction(const std::vector<TableRequirement>& requirements) {
  auto isAssertCreate = [](const TableRequirement& r) {
    return r.kind == TableRequirement::Kind::assertCreate;
  };
  if (std::none_of(requirements.begin(), requirements.end(), isAssertCreate)) return false;
  if (!std::all_of(requirements.begin(), requirements.end(), isAssertCreate)) {
    return invalid("requirements",
                   "Invalid create requirements: a create transaction requires assert-create only");
  }
  return true;
}

// Steps, as Java's CatalogHandlers.create: 1. the empty table of buildFromEmpty, at the first
// upgrade's format version; 2. every update, as applyUpdates applies it to any table (which
// refuses a result without a current schema, default spec or sort order); 3. what Java's builder
// and constructor check beyond that: the added schemas, the defaults bound to the schema, the
// location.
Res<TableMetadata> createFromUpdates(const std::vector<TableUpdate>& updates, std::int64_t nowMs) {
  // A placeholder while no update assigns one: a v2 table without a uuid does not re-read.
  constexpr std::string_view kNoUuidYet = "00000000-0000-0000-0000-000000000000";
  CAIRN_TC_LET(version, initialFormatVersion(updates));
  TableMetadata empty;  // schema 0, spec 0 and partition field 1000 come next, as in Java
  empty.formatVersion = version;
  bool uuidAssigned = assignsUuid(updates);
  if (!uuidAssigned) empty.tableUuid = std::string(kNoUuidYet);

  CAIRN_TC_LET(applied, applyUpdates(empty, updates, nowMs, std::nullopt));
  if (!applied.changed) return invalid("updates", "nothing to create (no schema was added)");

  CAIRN_TRY(requireAddedSchemas(updates, version));  // at the version each is added at
  TableMetadata m = std::move(applied.metadata);
  CAIRN_TC_LET(location, tableLocation(m.location, "location"));
  m.location = std::move(location);
  if (!uuidAssigned) m.tableUuid.reset();
  return m;
}

#undef CAIRN_TC_LET

}  // namespace cairn::catalog
