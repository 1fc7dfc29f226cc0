// Creating a table (catalog/iceberg/table_create.hpp): a create request read strictly, the metadata
// made from it compared with what apache/iceberg's TableMetadata.newTableMetadata writes for the
// same request (the expected documents below are written by hand from a reading of the Java
// code: TableMetadata.newTableMetadata, TypeUtil.assignFreshIds and AssignFreshIds,
// PartitionSpec.Builder, freshSortOrder, TableMetadataParser.toJson), and a create transaction
// as Java's RESTSessionCatalog sends it giving the same table. Every result writes and re-reads
// as itself.
#include <catch2/catch.hpp>

#include <string>

#include <boost/json.hpp>

#include "catalog/iceberg/table_create.hpp"

using namespace cairn;
using namespace cairn::catalog;

namespace {

constexpr std::int64_t kNow = 1'700'000'000'000;
const char* const kUuid = "11111111-2222-3333-4444-555555555555";
const char* const kLocation = "s3://bucket/warehouse/db/events";

CreateTableRequest request(std::string_view json) {
  auto r = parseCreateTableRequest(boost::json::parse(json));
  if (!r) FAIL(r.error().message);
  return *r;
}

// Makes the table, checks that it writes and re-reads as itself, returns it.
TableMetadata created(std::string_view json, const std::string& location = kLocation) {
  auto m = newTableMetadata(request(json), location, kUuid, kNow);
  if (!m) FAIL(m.error().message);
  auto again = parseTableMetadata(serializeTableMetadata(*m));
  if (!again) FAIL(again.error().message);
  CHECK(*again == *m);
  return *m;
}

TableMetadata expected(std::string_view json) {
  auto m = parseTableMetadata(json);
  if (!m) FAIL(m.error().message);
  return *m;
}

Error malformed(std::string_view json) {
  auto r = parseCreateTableRequest(boost::json::parse(json));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::format);
  return r.error();
}

Error refused(std::string_view json) {
  auto m = newTableMetadata(request(json), kLocation, kUuid, kNow);
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().code == Errc::usage);
  return m.error();
}

// A request with one schema of the given fields, and `more` members after it.
std::string withFields(std::string_view fields, std::string_view more = "") {
  return R"({"name": "t", "schema": {"type": "struct", "fields": [)" + std::string(fields) + "]}" +
         (more.empty() ? "" : ", " + std::string(more)) + "}";
}

// Ids scrambled on purpose: the result numbers them afresh.
const char* const kEvents = R"json({
  "name": "events",
  "location": "ignored: the caller passes the location",
  "schema": {"type": "struct", "schema-id": 7, "identifier-field-ids": [10],
    "fields": [
      {"id": 10, "name": "id", "required": true, "type": "long"},
      {"id": 11, "name": "point", "required": false, "type": {"type": "struct", "fields": [
        {"id": 20, "name": "x", "required": true, "type": "double"},
        {"id": 21, "name": "y", "required": true, "type": "double", "doc": "north"}]}},
      {"id": 12, "name": "tags", "required": false, "type": {"type": "list",
        "element-id": 30, "element": "string", "element-required": true}},
      {"id": 13, "name": "attrs", "required": false, "type": {"type": "map",
        "key-id": 40, "key": "string", "value-id": 41, "value-required": false,
        "value": {"type": "struct", "fields": [
          {"id": 50, "name": "v", "required": false, "type": "DECIMAL(9,2)"}]}}},
      {"id": 14, "name": "ts", "required": true, "type": "timestamptz"},
      {"id": 15, "name": "category", "required": false, "type": "string"}]},
  "partition-spec": {"spec-id": 3, "fields": [
    {"name": "category", "transform": "identity", "source-id": 15, "field-id": 2000},
    {"name": "id_bucket", "transform": "bucket[16]", "source-id": 10, "field-id": 2001},
    {"name": "ts_day", "transform": "Day", "source-id": 14, "field-id": 2002}]},
  "write-order": {"order-id": 3, "fields": [
    {"transform": "identity", "source-id": 14, "direction": "desc", "null-order": "nulls-last"},
    {"transform": "bucket[4]", "source-id": 10, "direction": "asc", "null-order": "nulls-first"}]},
  "properties": {"owner": "ana", "format-version": "2", "uuid": "not persisted"},
  "stage-create": false})json";

// What TableMetadataParser.toJson writes for newTableMetadata(kEvents): AssignFreshIds numbers
// the top-level fields 1-6, then descends: point's x, y = 7, 8; tags' element = 9; attrs' key,
// value = 10, 11, then the value struct's v = 12. The identifier field follows its column (10 ->
// 1); the spec is rebound by column with field ids from 1000 (the request's ids and spec id are
// dropped), the sort order gets id 1; "Day" and "DECIMAL(9,2)" are written as Java's toString
// writes them; the reserved properties go and the zstd default comes.
const char* const kEventsMetadata = R"json({
  "format-version": 2,
  "table-uuid": "11111111-2222-3333-4444-555555555555",
  "location": "s3://bucket/warehouse/db/events",
  "last-sequence-number": 0,
  "last-updated-ms": 1700000000000,
  "last-column-id": 12,
  "current-schema-id": 0,
  "schemas": [{"type": "struct", "schema-id": 0, "identifier-field-ids": [1], "fields": [
    {"id": 1, "name": "id", "required": true, "type": "long"},
    {"id": 2, "name": "point", "required": false, "type": {"type": "struct", "fields": [
      {"id": 7, "name": "x", "required": true, "type": "double"},
      {"id": 8, "name": "y", "required": true, "type": "double", "doc": "north"}]}},
    {"id": 3, "name": "tags", "required": false, "type": {"type": "list",
      "element-id": 9, "element": "string", "element-required": true}},
    {"id": 4, "name": "attrs", "required": false, "type": {"type": "map",
      "key-id": 10, "key": "string", "value-id": 11,
      "value": {"type": "struct", "fields": [
        {"id": 12, "name": "v", "required": false, "type": "decimal(9, 2)"}]},
      "value-required": false}},
    {"id": 5, "name": "ts", "required": true, "type": "timestamptz"},
    {"id": 6, "name": "category", "required": false, "type": "string"}]}],
  "default-spec-id": 0,
  "partition-specs": [{"spec-id": 0, "fields": [
    {"name": "category", "transform": "identity", "source-id": 6, "field-id": 1000},
    {"name": "id_bucket", "transform": "bucket[16]", "source-id": 1, "field-id": 1001},
    {"name": "ts_day", "transform": "day", "source-id": 5, "field-id": 1002}]}],
  "last-partition-id": 1002,
  "default-sort-order-id": 1,
  "sort-orders": [{"order-id": 1, "fields": [
    {"transform": "identity", "source-id": 5, "direction": "desc", "null-order": "nulls-last"},
    {"transform": "bucket[4]", "source-id": 1, "direction": "asc", "null-order": "nulls-first"}]}],
  "properties": {"owner": "ana", "write.parquet.compression-codec": "zstd"},
  "current-snapshot-id": -1,
  "refs": {},
  "snapshots": [],
  "statistics": [],
  "partition-statistics": [],
  "snapshot-log": [],
  "metadata-log": []})json";

// A request with only a schema of one column, and these properties.
std::string oneColumn(std::string_view properties) {
  return withFields(R"({"id": 5, "name": "a", "required": true, "type": "int"})",
                    R"("properties": )" + std::string(properties));
}

std::vector<TableUpdate> updates(std::string_view json) {
  auto u = parseTableUpdates(boost::json::parse(json));
  if (!u) FAIL(u.error().message);
  return *u;
}

// The updates Java's RESTSessionCatalog.createChanges sends to commit a staged table `m`.
std::string createChanges(const TableMetadata& m) {
  namespace json = boost::json;
  json::object properties;
  for (const auto& [key, value] : m.properties) properties[key] = value;
  json::array changes{
      json::object{{"action", "assign-uuid"}, {"uuid", *m.tableUuid}},
      json::object{{"action", "upgrade-format-version"}, {"format-version", m.formatVersion}},
      json::object{{"action", "add-schema"},
                   {"schema", m.currentSchema()->json},
                   {"last-column-id", m.lastColumnId}},
      json::object{{"action", "set-current-schema"}, {"schema-id", -1}},
      json::object{{"action", "add-spec"}, {"spec", m.defaultSpec()->json}},
      json::object{{"action", "set-default-spec"}, {"spec-id", -1}},
      json::object{{"action", "add-sort-order"}, {"sort-order", m.sortOrders.at(0).json}},
      json::object{{"action", "set-default-sort-order"}, {"sort-order-id", -1}},
      json::object{{"action", "set-location"}, {"location", m.location}},
      json::object{{"action", "set-properties"}, {"updates", std::move(properties)}}};
  return json::serialize(changes);
}

Error createRefused(std::string_view json) {
  auto m = createFromUpdates(updates(json), kNow);
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().code == Errc::usage);
  return m.error();
}

const char* const kSchemaUpdate = R"({"action": "add-schema", "schema": {"type": "struct",
    "schema-id": 0, "fields": [{"id": 1, "name": "a", "required": true, "type": "string"}]}})";
const char* const kRestOfCreate = R"({"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
    {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
    {"action": "set-location", "location": "s3://b/t/"})";

}  // namespace

TEST_CASE("table create: a request's table is the one Java's newTableMetadata makes",
          "[catalog][table-create]") {
  TableMetadata m = created(kEvents);
  CHECK(m == expected(kEventsMetadata));
  CHECK(m.schemas[0].highestFieldId == 12);
  CHECK(m.specs[0].lastAssignedFieldId == 1002);
  // The location's trailing slashes go, as Java's TableMetadata constructor drops them; a bare
  // scheme keeps its own.
  CHECK(created(kEvents, std::string(kLocation) + "//") == m);
  CHECK(created(kEvents, "s3://").location == "s3://");
}

TEST_CASE("table create: fresh ids go level by level, each struct's fields before their types",
          "[catalog][table-create]") {
  // AssignFreshIds: a, f = 1, 2; a's b, e = 3, 4; b's element = 5, its c, d = 6, 7; d's key,
  // value = 8, 9; the value list's element = 10. The identifier a.e (in a required struct)
  // follows its column: 4.
  TableMetadata m = created(R"({"name": "t", "schema": {"type": "struct",
    "identifier-field-ids": [101], "fields": [
    {"id": 100, "name": "a", "required": true, "type": {"type": "struct", "fields": [
      {"id": 102, "name": "b", "required": false, "type": {"type": "list", "element-id": 103,
        "element-required": false, "element": {"type": "struct", "fields": [
          {"id": 104, "name": "c", "required": false, "type": "int"},
          {"id": 105, "name": "d", "required": false, "type": {"type": "map",
            "key-id": 106, "key": "string", "value-id": 107, "value-required": true,
            "value": {"type": "list", "element-id": 108, "element": "long",
                      "element-required": true}}}]}}},
      {"id": 101, "name": "e", "required": true, "type": "int"}]}},
    {"id": 109, "name": "f", "required": false, "type": "long"}]}})");
  CHECK(m == expected(R"({"format-version": 2, "table-uuid": "11111111-2222-3333-4444-555555555555",
    "location": "s3://bucket/warehouse/db/events", "last-sequence-number": 0,
    "last-updated-ms": 1700000000000, "last-column-id": 10, "current-schema-id": 0,
    "schemas": [{"type": "struct", "schema-id": 0, "identifier-field-ids": [4], "fields": [
      {"id": 1, "name": "a", "required": true, "type": {"type": "struct", "fields": [
        {"id": 3, "name": "b", "required": false, "type": {"type": "list", "element-id": 5,
          "element": {"type": "struct", "fields": [
            {"id": 6, "name": "c", "required": false, "type": "int"},
            {"id": 7, "name": "d", "required": false, "type": {"type": "map",
              "key-id": 8, "key": "string", "value-id": 9,
              "value": {"type": "list", "element-id": 10, "element": "long",
                        "element-required": true},
              "value-required": true}}]},
          "element-required": false}},
        {"id": 4, "name": "e", "required": true, "type": "int"}]}},
      {"id": 2, "name": "f", "required": false, "type": "long"}]}],
    "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}],
    "last-partition-id": 999, "default-sort-order-id": 0,
    "sort-orders": [{"order-id": 0, "fields": []}],
    "properties": {"write.parquet.compression-codec": "zstd"}, "current-snapshot-id": -1,
    "refs": {}, "snapshots": [], "statistics": [], "partition-statistics": [],
    "snapshot-log": [], "metadata-log": []})"));
}

TEST_CASE("table create: the format-version property chooses v1, v2 or v3, default v2",
          "[catalog][table-create]") {
  // Java writes v1 with the legacy schema and partition-spec, v3 with next-row-id and a null
  // current snapshot.
  const char* const schema = R"({"type": "struct", "schema-id": 0, "fields": [
      {"id": 1, "name": "a", "required": true, "type": "int"}]})";
  std::string common = R"("location": "s3://bucket/warehouse/db/events",
      "last-updated-ms": 1700000000000, "last-column-id": 1, "current-schema-id": 0,
      "schemas": [)" + std::string(schema) +
                       R"(], "default-spec-id": 0, "partition-specs": [{"spec-id": 0,
      "fields": []}], "last-partition-id": 999, "default-sort-order-id": 0,
      "sort-orders": [{"order-id": 0, "fields": []}],
      "properties": {"write.parquet.compression-codec": "zstd"}, "refs": {}, "snapshots": [],
      "statistics": [], "partition-statistics": [], "snapshot-log": [], "metadata-log": [],
      "table-uuid": "11111111-2222-3333-4444-555555555555")";
  TableMetadata v1 = created(oneColumn(R"({"format-version": "1"})"));
  CHECK(v1 == expected(R"({"format-version": 1, "schema": )" + std::string(schema) +
                       R"(, "partition-spec": [], "current-snapshot-id": -1, )" + common + "}"));
  TableMetadata v2 = created(oneColumn("{}"));
  CHECK(v2 == expected(R"({"format-version": 2, "last-sequence-number": 0,
      "current-snapshot-id": -1, )" +
                       common + "}"));
  TableMetadata v3 = created(oneColumn(R"({"format-version": "3"})"));
  CHECK(v3 == expected(R"({"format-version": 3, "last-sequence-number": 0, "next-row-id": 0,
      "current-snapshot-id": null, )" +
                       common + "}"));
  CHECK(serializeTableMetadata(v1).find(R"("partition-spec":[])") != std::string::npos);
  // Integer.parseInt reads a sign.
  CHECK(created(oneColumn(R"({"format-version": "+3"})")).formatVersion == 3);
  for (std::string_view bad : {"4", "0", "-1", "two", "", "2.0", "99999999999"}) {
    CHECK_THAT(refused(oneColumn(R"({"format-version": ")" + std::string(bad) + "\"}")).message,
               Catch::Contains("properties.format-version"));
  }
}

TEST_CASE("table create: reserved properties are not persisted, the zstd default can be set",
          "[catalog][table-create]") {
  TableMetadata m = created(oneColumn(R"({"format-version": "2", "uuid": "u",
      "snapshot-count": "1", "current-snapshot-id": "1", "current-snapshot-summary": "{}",
      "current-snapshot-timestamp-ms": "1", "current-schema": "{}",
      "default-partition-spec": "{}", "default-sort-order": "{}",
      "write.parquet.compression-codec": "snappy", "k": "v"})"));
  CHECK(m.properties == std::map<std::string, std::string>{
                            {"k", "v"}, {"write.parquet.compression-codec", "snappy"}});
  // Settings Java checks on a new table: commit retries, encryption (v3), metrics columns.
  CHECK_THAT(refused(oneColumn(R"({"commit.retry.num-retries": "-1"})")).message,
             Catch::Contains("non negative"));
  CHECK_THAT(refused(oneColumn(R"({"commit.retry.min-wait-ms": "soon"})")).message,
             Catch::Contains("integer value"));
  CHECK_THAT(refused(oneColumn(R"({"encryption.key-id": "k"})")).message,
             Catch::Contains("Invalid properties for v2"));
  CHECK(created(oneColumn(R"({"encryption.key-id": "k", "format-version": "3"})"))
            .properties.count("encryption.key-id") == 1);
  CHECK_THAT(refused(oneColumn(R"({"write.metadata.metrics.column.nope": "full"})")).message,
             Catch::Contains("could not find column nope"));
  // A metrics column by its canonical or its short name (attrs.v is attrs.value.v).
  std::string events = kEvents;
  events.replace(events.find(R"("owner": "ana")"), 14,
                 R"("write.metadata.metrics.column.point.x": "full",
                    "write.metadata.metrics.column.attrs.v": "counts")");
  CHECK(created(events).properties.count("write.metadata.metrics.column.attrs.v") == 1);
  events.replace(events.find(R"("format-version")"), 0,
                 R"("write.metadata.metrics.column.attrs.value.v": "none", )");
  CHECK_THAT(refused(events).message, Catch::Contains("Incorrect field name"));
}

TEST_CASE("table create: a spec or sort order Java would not bind is refused as usage",
          "[catalog][table-create]") {
  const char* const fields = R"({"id": 1, "name": "id", "required": true, "type": "long"},
      {"id": 2, "name": "s", "required": false, "type": "string"},
      {"id": 3, "name": "d", "required": false, "type": "date"},
      {"id": 4, "name": "p", "required": false, "type": {"type": "struct", "fields": [
        {"id": 5, "name": "x", "required": false, "type": "int"}]}},
      {"id": 6, "name": "l", "required": false, "type": {"type": "list", "element-id": 7,
        "element": "int", "element-required": false}})";
  auto spec = [&](std::string_view partitionFields) {
    return withFields(fields,
                      R"("partition-spec": {"fields": [)" + std::string(partitionFields) + "]}");
  };
  auto order = [&](std::string_view sortFields) {
    return withFields(
        fields, R"("write-order": {"order-id": 1, "fields": [)" + std::string(sortFields) + "]}");
  };
  CHECK_THAT(refused(spec(R"({"name": "q", "transform": "identity", "source-id": 99})")).message,
             Catch::Contains("Cannot find source column"));
  CHECK_THAT(refused(spec(R"({"name": "b", "transform": "bucket[0]", "source-id": 1})")).message,
             Catch::Contains("Invalid number of buckets: 0"));
  CHECK_THAT(refused(spec(R"({"name": "b", "transform": "truncate[0]", "source-id": 2})")).message,
             Catch::Contains("Invalid truncate width: 0"));
  CHECK_THAT(
      refused(spec(R"({"name": "b", "transform": "bucket[99999999999]", "source-id": 1})")).message,
      Catch::Contains("out of range"));
  CHECK_THAT(refused(spec(R"({"name": "s_day", "transform": "day", "source-id": 2})")).message,
             Catch::Contains("Invalid source type string for transform: day"));
  CHECK(refused(spec(R"({"name": "d_hour", "transform": "hour", "source-id": 3})")).code ==
        Errc::usage);
  CHECK_THAT(refused(spec(R"({"name": "pp", "transform": "identity", "source-id": 4})")).message,
             Catch::Contains("non-primitive"));
  CHECK_THAT(refused(spec(R"({"name": "le", "transform": "identity", "source-id": 7})")).message,
             Catch::Contains("Invalid partition field parent"));
  CHECK_THAT(refused(spec(R"({"name": "id", "transform": "day", "source-id": 3})")).message,
             Catch::Contains("sourced from different field"));
  CHECK_THAT(refused(spec(R"({"name": "a", "transform": "identity", "source-id": 1},
                             {"name": "a", "transform": "identity", "source-id": 2})"))
                 .message,
             Catch::Contains("more than once"));
  CHECK_THAT(refused(spec(R"({"name": "", "transform": "identity", "source-id": 1})")).message,
             Catch::Contains("empty partition name"));
  // Java binds a void field of a missing column, then fails to rebind it.
  CHECK(refused(spec(R"({"name": "v", "transform": "void", "source-id": 99})")).code ==
        Errc::usage);
  // Accepted as Java accepts them: a field named after its own source, a nested struct field,
  // a void field, and a transform Java does not know (kept as sent).
  TableMetadata ok = created(spec(R"({"name": "d", "transform": "DAY", "source-id": 3},
      {"name": "px", "transform": "truncate[010]", "source-id": 5},
      {"name": "l_null", "transform": "void", "source-id": 6},
      {"name": "z", "transform": "zorder[2]", "source-id": 1})"));
  const boost::json::value& out = ok.specs[0].json.at("fields");
  CHECK(out.at(0).at("transform") == "day");
  CHECK(out.at(1).at("transform") == "truncate[10]");
  CHECK(out.at(1).at("source-id") == 6);
  CHECK(out.at(2).at("source-id") == 5);  // l: fresh 5; p.x: 6 (p's fields come after l)
  CHECK(out.at(3).at("transform") == "zorder[2]");
  CHECK(ok.lastPartitionId == 1003);
  CHECK_THAT(refused(order(R"({"transform": "identity", "source-id": 99, "direction": "asc",
                               "null-order": "nulls-first"})"))
                 .message,
             Catch::Contains("Cannot find source column for sort field"));
  CHECK_THAT(refused(order(R"({"transform": "identity", "source-id": 4, "direction": "asc",
                               "null-order": "nulls-first"})"))
                 .message,
             Catch::Contains("non-primitive"));
  CHECK(refused(order(R"({"transform": "month", "source-id": 2, "direction": "asc",
                          "null-order": "nulls-first"})"))
            .code == Errc::usage);
  // Sorting by a list's element is allowed (Java checks no parents for a sort field).
  TableMetadata sorted = created(order(R"({"transform": "identity", "source-id": 7,
      "direction": "asc", "null-order": "nulls-first"})"));
  CHECK(sorted.defaultSortOrderId == 1);
  CHECK(sorted.sortOrders[0].json.at("fields").at(0).at("source-id") == 7);
}

TEST_CASE("table create: a schema Java would not build is refused as usage",
          "[catalog][table-create]") {
  auto identifier = [](std::string_view fields, int id) {
    return R"({"name": "t", "schema": {"type": "struct", "identifier-field-ids": [)" +
           std::to_string(id) + R"(], "fields": [)" + std::string(fields) + "]}}";
  };
  const char* const fields = R"({"id": 1, "name": "a", "required": false, "type": "int"},
      {"id": 2, "name": "f", "required": true, "type": "double"},
      {"id": 3, "name": "o", "required": false, "type": {"type": "struct", "fields": [
        {"id": 4, "name": "x", "required": true, "type": "int"}]}},
      {"id": 5, "name": "l", "required": true, "type": {"type": "list", "element-id": 6,
        "element": "int", "element-required": true}},
      {"id": 7, "name": "r", "required": true, "type": {"type": "struct", "fields": [
        {"id": 8, "name": "y", "required": true, "type": "uuid"}]}})";
  CHECK_THAT(refused(identifier(fields, 99)).message, Catch::Contains("does not exist"));
  CHECK_THAT(refused(identifier(fields, 1)).message, Catch::Contains("not a required field"));
  CHECK_THAT(refused(identifier(fields, 2)).message, Catch::Contains("float or double"));
  CHECK_THAT(refused(identifier(fields, 4)).message, Catch::Contains("nested in optional"));
  CHECK_THAT(refused(identifier(fields, 6)).message, Catch::Contains("nested in list l"));
  CHECK_THAT(refused(identifier(fields, 7)).message, Catch::Contains("not a primitive"));
  CHECK(created(identifier(fields, 8)).schemas[0].json.at("identifier-field-ids") ==
        boost::json::array{8});
  CHECK_THAT(refused(withFields(R"({"id": 1, "name": "a", "required": true, "type": "int"},
                                   {"id": 1, "name": "b", "required": true, "type": "int"})"))
                 .message,
             Catch::Contains("field id 1 is used by both a and b"));
  CHECK_THAT(refused(withFields(R"({"id": 1, "name": "p.x", "required": true, "type": "int"},
      {"id": 2, "name": "p", "required": true, "type": {"type": "struct", "fields": [
        {"id": 3, "name": "x", "required": true, "type": "int"}]}})"))
                 .message,
             Catch::Contains("multiple fields for name p.x"));
  // v3 types and initial defaults need format v3.
  std::string nanos = withFields(R"({"id": 1, "name": "t", "required": true,
                                     "type": "timestamp_ns"})");
  CHECK_THAT(refused(nanos).message, Catch::Contains("not supported until v3"));
  CHECK(created(withFields(R"({"id": 1, "name": "t", "required": true, "type": "timestamp_ns"})",
                           R"("properties": {"format-version": "3"})"))
            .formatVersion == 3);
  CHECK_THAT(refused(withFields(R"({"id": 1, "name": "v", "required": false, "type": "int",
                                   "initial-default": 3})"))
                 .message,
             Catch::Contains("initial default"));
  // A table needs a location.
  auto none = newTableMetadata(request(oneColumn("{}")), "", kUuid, kNow);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().code == Errc::usage);
}

TEST_CASE("table create: a malformed request is refused as format, naming the field",
          "[catalog][table-create]") {
  std::string ok = oneColumn("{}");
  CHECK(parseCreateTableRequest(boost::json::parse(ok)).ok());
  malformed("[]");
  CHECK_THAT(malformed(R"({"name": "t", "schema": {"type": "struct", "fields": []},
                           "extra": 1})")
                 .message,
             Catch::Contains("extra: unknown field"));
  CHECK_THAT(malformed(R"({"schema": {"type": "struct", "fields": []}})").message,
             Catch::Contains("name: missing"));
  CHECK_THAT(malformed(R"({"name": 5, "schema": {"type": "struct", "fields": []}})").message,
             Catch::Contains("name: must be a string"));
  std::string longName = R"({"name": ")" + std::string(kMaxTableNameBytes + 1, 'n') +
                         R"(", "schema": {"type": "struct", "fields": []}})";
  CHECK_THAT(malformed(longName).message, Catch::Contains("longer than 255 bytes"));
  CHECK_THAT(malformed(R"({"name": "t"})").message, Catch::Contains("schema: missing"));
  CHECK_THAT(malformed(R"({"name": "t", "schema": "x"})").message,
             Catch::Contains("schema: must be an object"));
  std::string type =
      malformed(withFields(R"({"id": 1, "name": "a", "required": true, "type": "longer"})"))
          .message;
  CHECK_THAT(type, Catch::StartsWith("create table request: schema.fields[0].type"));
  CHECK_THAT(malformed(withFields("", R"("location": 5)")).message,
             Catch::Contains("location: must be a string"));
  CHECK_THAT(malformed(withFields("", R"("properties": {"a": 1})")).message,
             Catch::Contains("properties.a: must be a string"));
  CHECK_THAT(malformed(withFields("", R"("stage-create": null)")).message,
             Catch::Contains("stage-create"));
  malformed(withFields("", R"("stage-create": "yes")"));
  CHECK_THAT(malformed(withFields(R"({"id": 1, "name": "a", "required": true, "type": "int"})",
                                  R"("partition-spec": {"fields": [{"name": "a",
                                      "source-id": 1}]})"))
                 .message,
             Catch::Contains("partition-spec.fields[0].transform"));
  CHECK_THAT(malformed(withFields(R"({"id": 1, "name": "a", "required": true, "type": "int"})",
                                  R"("partition-spec": {"fields": [{"name": "a",
                                      "transform": "identity", "source-ids": [1]}]})"))
                 .message,
             Catch::Contains("multi-argument"));
  CHECK_THAT(malformed(withFields(R"({"id": 1, "name": "a", "required": true, "type": "int"},
      {"id": 2, "name": "b", "required": true, "type": "int"})",
                                  R"("partition-spec": {"fields": [
      {"name": "a", "transform": "identity", "source-id": 1, "field-id": 1000},
      {"name": "b", "transform": "identity", "source-id": 2}]})"))
                 .message,
             Catch::Contains("some fields but not all"));
  const char* const sortField =
      R"({"transform": "identity", "source-id": 1, "direction": "asc", "null-order": "nulls-first"})";
  CHECK_THAT(malformed(withFields(R"({"id": 1, "name": "a", "required": true, "type": "int"})",
                                  R"("write-order": {"order-id": 1, "fields": [{"transform":
      "identity", "source-id": 1, "direction": "up", "null-order": "nulls-first"}]})"))
                 .message,
             Catch::Contains("write-order.fields[0].direction"));
  CHECK_THAT(malformed(withFields(R"({"id": 1, "name": "a", "required": true, "type": "int"})",
                                  R"("write-order": {"order-id": 0, "fields": [)" +
                                      std::string(sortField) + "]}"))
                 .message,
             Catch::Contains("reserved for unsorted"));
  CHECK_THAT(malformed(withFields("", R"("write-order": {"order-id": 2, "fields": []})")).message,
             Catch::Contains("Unsorted order ID must be 0"));
  // Optional members may be null; stage-create defaults to false; spec-id and order-id may be
  // left out (the REST spec makes them read-only).
  CreateTableRequest r = request(withFields(
      R"({"id": 1, "name": "a", "required": true, "type": "int"})",
      R"("location": null, "partition-spec": null, "write-order": null, "properties": null)"));
  CHECK_FALSE(r.stageCreate);
  CHECK_FALSE(r.location);
  CHECK_FALSE(r.partitionSpec);
  CHECK(request(withFields("", R"("stage-create": true, "location": "s3://x")")).stageCreate);
  CreateTableRequest noIds =
      request(withFields(R"({"id": 1, "name": "a", "required": true, "type": "int"})",
                         R"("partition-spec": {"fields": [{"name": "a", "transform": "identity",
                            "source-id": 1}]}, "write-order": {"fields": [)" +
                             std::string(sortField) + "]}"));
  CHECK(created(withFields(R"({"id": 1, "name": "a", "required": true, "type": "int"})",
                           R"("write-order": {"fields": [)" + std::string(sortField) + "]}"))
            .defaultSortOrderId == 1);
  CHECK(noIds.partitionSpec->json.at("fields").at(0).at("field-id") == 1000);
}

TEST_CASE("table create: a create transaction as Java's client sends it gives the staged table",
          "[catalog][table-create]") {
  TableMetadata staged = created(kEvents);
  auto committed = createFromUpdates(updates(createChanges(staged)), kNow);
  if (!committed) FAIL(committed.error().message);
  CHECK(*committed == staged);
  // The same for a v1 and a v3 table, unpartitioned and unsorted.
  for (std::string_view version : {"1", "3"}) {
    TableMetadata plain =
        created(oneColumn(R"({"format-version": ")" + std::string(version) + R"(", "k": "v"})"));
    auto again = createFromUpdates(updates(createChanges(plain)), kNow);
    if (!again) FAIL(again.error().message);
    CHECK(*again == plain);
  }
  // With a first snapshot in the same transaction (a create-table-as-select).
  std::string changes = createChanges(staged);
  changes.pop_back();
  changes += R"(, {"action": "add-snapshot", "snapshot": {"snapshot-id": 1,
      "sequence-number": 1, "timestamp-ms": 1699999999000, "summary": {"operation": "append"},
      "manifest-list": "s3://bucket/warehouse/db/events/metadata/snap-1.avro", "schema-id": 0}},
      {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 1}])";
  auto withData = createFromUpdates(updates(changes), kNow);
  if (!withData) FAIL(withData.error().message);
  CHECK(withData->currentSnapshotId == 1);
  CHECK(withData->lastSequenceNumber == 1);
  CHECK(withData->snapshotLog == std::vector<SnapshotLogEntry>{{1699999999000, 1}});
  CHECK(withData->metadataLog.empty());
  auto again = parseTableMetadata(serializeTableMetadata(*withData));
  REQUIRE(again.ok());
  CHECK(*again == *withData);
}

TEST_CASE("table create: a create transaction without assign-uuid leaves the uuid to the caller",
          "[catalog][table-create]") {
  auto m = createFromUpdates(
      updates(R"([)" + std::string(kSchemaUpdate) + ", " + std::string(kRestOfCreate) + "]"), kNow);
  if (!m) FAIL(m.error().message);
  CHECK(m->formatVersion == kDefaultTableFormatVersion);
  CHECK_FALSE(m->tableUuid);
  CHECK(m->lastUpdatedMs == kNow);
  CHECK(m->location == "s3://b/t");  // without its trailing slash, as Java's constructor
  CHECK_FALSE(parseTableMetadata(serializeTableMetadata(*m)).ok());  // v2 needs one
  TableMetadata withUuid = *m;
  withUuid.tableUuid = kUuid;
  auto again = parseTableMetadata(serializeTableMetadata(withUuid));
  REQUIRE(again.ok());
  CHECK(*again == withUuid);
}

TEST_CASE("table create: a create transaction that makes no valid table is refused as usage",
          "[catalog][table-create]") {
  CHECK(createRefused("[]").message.find("nothing to create") != std::string::npos);
  CHECK(createRefused(R"([{"action": "set-properties", "updates": {"a": "b"}}])").code ==
        Errc::usage);
  CHECK(createRefused("[" + std::string(kRestOfCreate) + "]").code == Errc::usage);
  CHECK_THAT(createRefused(R"([)" + std::string(kSchemaUpdate) +
                           R"(, {"action": "add-spec", "spec": {"fields": []}},
      {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}}])")
                 .message,
             Catch::Contains("location"));
  for (std::string_view version : {"0", "4"}) {
    CHECK_THAT(
        createRefused(R"([{"action": "upgrade-format-version", "format-version": )" +
                      std::string(version) + "}, " + kSchemaUpdate + ", " + kRestOfCreate + "]")
            .message,
        Catch::Contains("unsupported format version"));
  }
  // A spec before any schema: refused, as Java fails too.
  CHECK(createRefused(R"([{"action": "add-spec", "spec": {"fields": [{"name": "a",
      "transform": "identity", "source-id": 1}]}}, )" +
                      std::string(kSchemaUpdate) + "]")
            .code == Errc::usage);
  // The default spec must bind to the schema: a day of a string does not.
  CHECK_THAT(createRefused(R"([)" + std::string(kSchemaUpdate) + R"(,
      {"action": "add-spec", "spec": {"fields": [{"name": "a_day", "transform": "day",
                                                  "source-id": 1}]}},
      {"action": "set-default-spec", "spec-id": -1},
      {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
      {"action": "set-location", "location": "s3://b/t"}])")
                 .message,
             Catch::Contains("Invalid source type"));
  // A v3 type needs the table at v3 when the schema is added.
  std::string v3Schema = R"({"action": "add-schema", "schema": {"type": "struct", "fields": [
      {"id": 1, "name": "v", "required": false, "type": "variant"}]}})";
  CHECK_THAT(createRefused("[" + v3Schema + ", " + kRestOfCreate + "]").message,
             Catch::Contains("not supported until v3"));
  auto v3 = createFromUpdates(updates(R"([{"action": "upgrade-format-version",
      "format-version": 3}, )" + v3Schema +
                                      ", " + kRestOfCreate + "]"),
                              kNow);
  if (!v3) FAIL(v3.error().message);
  CHECK(v3->formatVersion == 3);
}

TEST_CASE("table create: a create transaction's requirements are assert-create only",
          "[catalog][table-create]") {
  auto requirements = [](std::string_view json) {
    auto r = parseTableRequirements(boost::json::parse(json));
    if (!r) FAIL(r.error().message);
    return isCreateTransaction(*r);
  };
  CHECK(*requirements("[]") == false);
  CHECK(*requirements(R"([{"type": "assert-current-schema-id", "current-schema-id": 0}])") ==
        false);
  CHECK(*requirements(R"([{"type": "assert-create"}])") == true);
  auto mixed = requirements(R"([{"type": "assert-create"},
      {"type": "assert-current-schema-id", "current-schema-id": 0}])");
  REQUIRE_FALSE(mixed.ok());
  CHECK(mixed.error().code == Errc::usage);
}
