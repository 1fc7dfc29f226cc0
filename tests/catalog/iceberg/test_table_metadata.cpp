// The Iceberg table metadata codec against the reference implementation's files
// (../shared/testdata/iceberg/table-metadata/, from apache/iceberg's core tests): the valid
// ones load and round-trip, the invalid ones are refused with a reason naming the field.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "catalog/iceberg/table_metadata.hpp"

using namespace cairn;
using namespace cairn::catalog;

namespace {

std::string referenceFile(const std::string& name) {
  std::string path =
      std::string(CAIRN_SOURCE_DIR) + "/../shared/testdata/iceberg/table-metadata/" + name;
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Loads a file, checks the round trip (and that writing is a fixed point), returns it.
TableMetadata loadAndRoundTrip(const std::string& name) {
  INFO(name);
  auto m = parseTableMetadata(referenceFile(name));
  if (!m) FAIL(m.error().message);
  std::string written = serializeTableMetadata(*m);
  auto again = parseTableMetadata(written);
  if (!again) FAIL(again.error().message);
  CHECK(*again == *m);
  CHECK(serializeTableMetadata(*again) == written);
  return *m;
}

std::string refusal(std::string_view json) {
  auto m = parseTableMetadata(json);
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().code == Errc::format);
  return m.error().message;
}

const char* const kMinimalV2 = R"({
  "format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
  "location": "s3://b/t", "last-sequence-number": 0, "last-updated-ms": 1,
  "last-column-id": 1, "current-schema-id": 0,
  "schemas": [{"type": "struct", "schema-id": 0,
               "fields": [{"id": 1, "name": "x", "required": true, "type": "long"}]}],
  "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}],
  "last-partition-id": 999, "default-sort-order-id": 0,
  "sort-orders": [{"order-id": 0, "fields": []}]})";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("table metadata: the v1 reference file loads from its legacy fields",
          "[catalog][table-metadata]") {
  TableMetadata m = loadAndRoundTrip("TableMetadataV1Valid.json");
  CHECK(m.formatVersion == 1);
  CHECK(m.tableUuid == "d20125c8-7284-442c-9aea-15fee620737c");
  CHECK(m.location == "s3://bucket/test/location");
  CHECK(m.lastSequenceNumber == 0);
  REQUIRE(m.schemas.size() == 1);
  CHECK(m.currentSchemaId == 0);
  CHECK(m.schemas[0].highestFieldId == 3);
  REQUIRE(m.specs.size() == 1);
  CHECK(m.defaultSpecId == 0);
  CHECK(m.lastPartitionId == 1000);
  REQUIRE(m.sortOrders.size() == 1);
  CHECK(m.defaultSortOrderId == 0);
  CHECK_FALSE(m.currentSnapshotId.has_value());
  CHECK(m.snapshots.empty());
  CHECK(m.refs.empty());
  // v1 is written with the legacy fields beside the lists, as Java writes it.
  std::string written = serializeTableMetadata(m);
  CHECK(written.find("\"schema\":") != std::string::npos);
  CHECK(written.find("\"partition-spec\":") != std::string::npos);
}

TEST_CASE("table metadata: the v2 reference file loads with its snapshots and refs",
          "[catalog][table-metadata]") {
  TableMetadata m = loadAndRoundTrip("TableMetadataV2Valid.json");
  CHECK(m.formatVersion == 2);
  CHECK(m.tableUuid == "9c12d441-03fe-4693-9a96-a0705ddf69c1");
  CHECK(m.lastSequenceNumber == 34);
  CHECK(m.lastUpdatedMs == 1602638573590);
  CHECK(m.lastColumnId == 3);
  CHECK(m.currentSchemaId == 1);
  CHECK(m.schemas.size() == 2);
  REQUIRE(m.currentSchema() != nullptr);
  CHECK(m.currentSchema()->json.at("identifier-field-ids").as_array().size() == 2);
  CHECK(m.lastPartitionId == 1000);
  CHECK(m.defaultSortOrderId == 3);
  CHECK(m.currentSnapshotId == 3055729675574597004);
  REQUIRE(m.snapshots.size() == 2);
  CHECK(m.snapshots[1].parentSnapshotId == 3051729675574597004);
  CHECK(m.snapshots[1].schemaId == 1);
  CHECK(m.snapshots[1].json.at("summary").at("operation") == "append");
  // No refs in the file: main is the current snapshot, as Java initialises it.
  REQUIRE(m.refs.size() == 1);
  CHECK(m.refs.at("main").snapshotId == 3055729675574597004);
  CHECK(m.refs.at("main").type == "branch");
  CHECK(m.snapshotLog.size() == 2);
  CHECK(m.metadataLog.empty());
}

TEST_CASE("table metadata: the minimal v2 and v3 reference files load",
          "[catalog][table-metadata]") {
  TableMetadata v2 = loadAndRoundTrip("TableMetadataV2ValidMinimal.json");
  CHECK(v2.formatVersion == 2);
  CHECK(v2.currentSchemaId == 0);
  CHECK(v2.snapshots.empty());
  CHECK(v2.refs.empty());
  CHECK(v2.properties.empty());
  TableMetadata v3 = loadAndRoundTrip("TableMetadataV3ValidMinimal.json");
  CHECK(v3.formatVersion == 3);
  CHECK(v3.nextRowId == 0);
  // Field defaults, unknown to the typed view, survive in the schema's JSON.
  const auto& x = v3.schemas.at(0).json.at("fields").at(0);
  CHECK(x.at("initial-default") == 1);
  CHECK(x.at("write-default") == 1);
  CHECK(serializeTableMetadata(v3).find("\"current-snapshot-id\":null") != std::string::npos);
}

TEST_CASE("table metadata: statistics files load and round-trip", "[catalog][table-metadata]") {
  TableMetadata stats = loadAndRoundTrip("TableMetadataStatisticsFiles.json");
  REQUIRE(stats.statistics.size() == 1);
  CHECK(stats.statistics[0].snapshotId == 3055729675574597004);
  CHECK(stats.statistics[0].path == "s3://a/b/stats.puffin");
  CHECK(stats.statistics[0].json.at("blob-metadata").as_array().size() == 1);
  CHECK(stats.snapshots.size() == 1);
  TableMetadata partition = loadAndRoundTrip("TableMetadataPartitionStatisticsFiles.json");
  REQUIRE(partition.partitionStatistics.size() == 1);
  CHECK(partition.partitionStatistics[0].path == "s3://a/b/partition-stats.parquet");
}

TEST_CASE("table metadata: the invalid reference files are refused with the field named",
          "[catalog][table-metadata]") {
  struct Case {
    const char* file;
    const char* field;
  };
  const Case cases[] = {
      {"TableMetadataUnsupportedVersion.json", "format-version"},
      {"TableMetadataV1MissingSchemaType.json", "type"},
      {"TableMetadataV2CurrentSchemaNotFound.json", "current-schema-id"},
      {"TableMetadataV2MissingLastPartitionId.json", "last-partition-id"},
      {"TableMetadataV2MissingPartitionSpecs.json", "partition-specs"},
      {"TableMetadataV2MissingSchemas.json", "schemas"},
      {"TableMetadataV2MissingSortOrder.json", "sort-orders"},
  };
  for (const Case& c : cases) {
    INFO(c.file);
    std::string reason = refusal(referenceFile(c.file));
    INFO(reason);
    CHECK(reason.find(c.field) != std::string::npos);
  }
}

TEST_CASE("table metadata: hand-written refusals", "[catalog][table-metadata]") {
  REQUIRE(parseTableMetadata(kMinimalV2).ok());
  SECTION("a duplicate key") {
    std::string dup = replaced(kMinimalV2, "\"location\": \"s3://b/t\",",
                               "\"location\": \"s3://b/t\", \"location\": \"s3://b/u\",");
    CHECK(refusal(dup).find("duplicate key \"location\"") != std::string::npos);
  }
  SECTION("a depth bomb") {
    CHECK(refusal(std::string(100'000, '[')).find("invalid JSON") != std::string::npos);
    std::string nested = replaced(kMinimalV2, "\"type\": \"long\"",
                                  "\"type\": " + std::string(70, '[') + std::string(70, ']'));
    CHECK_FALSE(parseTableMetadata(nested).ok());
  }
  SECTION("a non-integer id") {
    std::string text =
        replaced(kMinimalV2, "\"current-schema-id\": 0", "\"current-schema-id\": 0.5");
    CHECK(refusal(text).find("current-schema-id") != std::string::npos);
    text = replaced(kMinimalV2, "\"last-column-id\": 1", "\"last-column-id\": \"1\"");
    CHECK(refusal(text).find("last-column-id") != std::string::npos);
    text = replaced(kMinimalV2, "\"last-column-id\": 1", "\"last-column-id\": 4294967296");
    CHECK(refusal(text).find("32-bit") != std::string::npos);
  }
  SECTION("an unknown format version") {
    for (const char* v : {"0", "4", "-1"}) {
      std::string text =
          replaced(kMinimalV2, "\"format-version\": 2", std::string("\"format-version\": ") + v);
      CHECK(refusal(text).find("format-version") != std::string::npos);
    }
  }
  SECTION("bad types in a schema") {
    std::string text = replaced(kMinimalV2, "\"type\": \"long\"", "\"type\": \"decimal(39, 2)\"");
    CHECK(refusal(text).find("schemas[0].fields[0].type") != std::string::npos);
    text = replaced(kMinimalV2, "\"required\": true,", "");
    CHECK(refusal(text).find("required") != std::string::npos);
  }
  SECTION("not an object, trailing data, a missing snapshot") {
    CHECK_FALSE(parseTableMetadata("[]").ok());
    CHECK_FALSE(parseTableMetadata(std::string(kMinimalV2) + " {}").ok());
    std::string huge = replaced(kMinimalV2, "\"last-column-id\": 1,",
                                "\"last-column-id\": 1, \"x-unknown\": 1e400,");
    CHECK(refusal(huge).find("out of range") != std::string::npos);
    std::string text = replaced(kMinimalV2, "\"last-column-id\": 1,",
                                "\"last-column-id\": 1, \"current-snapshot-id\": 7,");
    CHECK(refusal(text).find("current-snapshot-id") != std::string::npos);
  }
}

TEST_CASE("table metadata: nested types and unknown fields survive a round trip",
          "[catalog][table-metadata]") {
  std::string text = replaced(kMinimalV2, "\"type\": \"long\"", R"j("type": {
    "type": "map", "key-id": 2, "key": "string", "value-id": 3, "value-required": false,
    "value": {"type": "list", "element-id": 4, "element-required": true,
      "element": {"type": "struct", "fields": [
        {"id": 5, "name": "d", "required": false, "type": "decimal(9,2)"},
        {"id": 6, "name": "f", "required": false, "type": "fixed[16]"}]}}})j");
  text = replaced(text, "\"last-updated-ms\": 1,", R"j("last-updated-ms": 1,
    "encryption-keys": [{"key-id": "k"}], "properties": {"owner": "me", "a": "b"},)j");
  auto m = parseTableMetadata(text);
  if (!m) FAIL(m.error().message);
  CHECK(m->schemas[0].highestFieldId == 6);
  CHECK(m->properties.at("owner") == "me");
  std::string written = serializeTableMetadata(*m);
  CHECK(written.find("\"encryption-keys\":[{\"key-id\":\"k\"}]") != std::string::npos);
  CHECK(written.find("fixed[16]") != std::string::npos);
  auto again = parseTableMetadata(written);
  REQUIRE(again.ok());
  CHECK(*again == *m);
}
