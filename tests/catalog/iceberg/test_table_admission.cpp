// What enters a table by any route passes one check (checkAdmitted,
// catalog/iceberg/table_create.hpp): a commit's add-schema, add-spec and add-sort-order are refused
// where the reference implementation's Schema, PartitionSpec, SortOrder and TableMetadata.Builder
// refuse them, as the create path refuses them; remove-schemas and remove-partition-specs mend a
// table.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include <boost/json.hpp>

#include "catalog/iceberg/table_create.hpp"
#include "catalog/iceberg/table_update.hpp"

using namespace cairn;
using namespace cairn::catalog;

namespace {

constexpr std::int64_t kNow = 1'700'000'000'000;
const char* const kBaseFile = "s3://bucket/test/location/metadata/00001-a.metadata.json";

// TableMetadataV2Valid.json: schemas 0 (x) and 1 (x, y, z; identifier 1, 2; current), spec 0
// (identity x), sort order 3.
TableMetadata base() {
  std::string path = std::string(CAIRN_SOURCE_DIR) +
                     "/../shared/testdata/iceberg/table-metadata/TableMetadataV2Valid.json";
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  auto m = parseTableMetadata(text.str());
  REQUIRE(m.ok());
  return *m;
}

Res<AppliedUpdates> tryUpdates(const TableMetadata& m, std::string_view json) {
  auto u = parseTableUpdates(boost::json::parse(json));
  if (!u) FAIL(u.error().message);
  return applyUpdates(m, *u, kNow, kBaseFile);
}

void refused(const TableMetadata& m, std::string_view json, std::string_view why) {
  auto applied = tryUpdates(m, json);
  INFO(json);
  REQUIRE_FALSE(applied.ok());
  CHECK(applied.error().code == Errc::usage);
  CHECK_THAT(applied.error().message, Catch::Contains(std::string(why)));
}

std::string addSchema(std::string_view fields, std::string_view extra = "") {
  return R"([{"action":"add-schema","schema":{"type":"struct","schema-id":7,)" +
         std::string(extra) + R"("fields":)" + std::string(fields) + "}}]";
}

}  // namespace

TEST_CASE("table admission: add-schema is checked as Java's Schema and Builder check it",
          "[catalog]") {
  const TableMetadata m = base();
  refused(m, addSchema(R"([{"id":1,"name":"a","required":true,"type":"long"},
                        {"id":1,"name":"b","required":true,"type":"long"}])"),
          "field id 1");
  refused(m, addSchema(R"([{"id":1,"name":"a","required":true,"type":"long"},
                        {"id":2,"name":"s","required":false,"type":{"type":"struct","fields":[
                          {"id":1,"name":"c","required":false,"type":"int"}]}}])"),
          "field id 1");
  refused(m, addSchema(R"([{"id":1,"name":"a","required":true,"type":"long"},
                        {"id":2,"name":"a","required":true,"type":"long"}])"),
          "multiple fields for name a");
  refused(m,
          addSchema(R"([{"id":1,"name":"a","required":true,"type":"long"}])",
                    R"("identifier-field-ids":[9],)"),
          "field does not exist");
  refused(m,
          addSchema(R"([{"id":1,"name":"a","required":false,"type":"double"}])",
                    R"("identifier-field-ids":[1],)"),
          "as an identifier field");
  refused(m, addSchema(R"([{"id":1,"name":"v","required":false,"type":"variant"}])"),
          "not supported until v3");
  // The same schema in a v3 table, and a valid one here, are accepted.
  auto v3 = tryUpdates(
      m, R"([{"action":"upgrade-format-version","format-version":3},)" +
             addSchema(R"([{"id":1,"name":"v","required":false,"type":"variant"}])").substr(1));
  INFO((v3 ? "" : v3.error().message));
  CHECK(v3.ok());
  CHECK(tryUpdates(m, addSchema(R"([{"id":1,"name":"a","required":true,"type":"long"}])")).ok());
}

TEST_CASE("table admission: add-spec and add-sort-order transforms are checked", "[catalog]") {
  const TableMetadata m = base();
  refused(m,
          R"([{"action":"add-spec","spec":{"fields":[
               {"name":"b","transform":"bucket[0]","source-id":2,"field-id":1001}]}}])",
          "Invalid number of buckets");
  refused(m,
          R"([{"action":"add-spec","spec":{"fields":[
               {"name":"t","transform":"truncate[0]","source-id":2,"field-id":1001}]}}])",
          "Invalid truncate width");
  refused(m,
          R"([{"action":"add-sort-order","sort-order":{"fields":[
               {"transform":"bucket[0]","source-id":2,"direction":"asc",
                "null-order":"nulls-first"}]}}])",
          "Invalid number of buckets");
  CHECK(tryUpdates(m, R"([{"action":"add-spec","spec":{"fields":[
               {"name":"b","transform":"bucket[8]","source-id":2,"field-id":1001}]}}])")
            .ok());
}

TEST_CASE("table admission: remove-schemas and remove-partition-specs mend a table", "[catalog]") {
  const TableMetadata m = base();
  auto removed = tryUpdates(m, R"([{"action":"remove-schemas","schema-ids":[0,42]}])");
  REQUIRE(removed.ok());
  CHECK(removed->changed);
  REQUIRE(removed->metadata.schemas.size() == 1);
  CHECK(removed->metadata.schemas[0].schemaId == 1);
  refused(m, R"([{"action":"remove-schemas","schema-ids":[1]}])", "Cannot remove the current");
  auto nothing = tryUpdates(m, R"([{"action":"remove-schemas","schema-ids":[42]}])");
  REQUIRE(nothing.ok());
  CHECK(!nothing->changed);
  refused(m, R"([{"action":"remove-partition-specs","spec-ids":[0]}])",
          "Cannot remove the default partition spec");
  auto respec = tryUpdates(m, R"([{"action":"add-spec","spec":{"fields":[
      {"name":"y_bucket","transform":"bucket[8]","source-id":2,"field-id":1001}]}},
      {"action":"set-default-spec","spec-id":-1},
      {"action":"remove-partition-specs","spec-ids":[0]}])");
  INFO((respec ? "" : respec.error().message));
  REQUIRE(respec.ok());
  REQUIRE(respec->metadata.specs.size() == 1);
  CHECK(respec->metadata.specs[0].specId == 1);
}

TEST_CASE("table admission: a registered file's elements are checked as a commit's", "[catalog]") {
  TableMetadata m = base();
  CHECK(checkAdmitted(nullptr, m).ok());
  auto dup = parseTableMetadata(
      R"({"format-version":2,"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1",
          "location":"s3://bucket/t","last-sequence-number":0,"last-updated-ms":1,
          "last-column-id":1,"current-schema-id":0,"schemas":[{"type":"struct","schema-id":0,
          "fields":[{"id":1,"name":"a","required":true,"type":"long"},
                    {"id":1,"name":"b","required":true,"type":"long"}]}],
          "default-spec-id":0,"partition-specs":[{"spec-id":0,"fields":[]}],
          "last-partition-id":999,"default-sort-order-id":0,
          "sort-orders":[{"order-id":0,"fields":[]}]})");
  REQUIRE(dup.ok());  // the reader takes it; Java's Schema does not
  auto checked = checkAdmitted(nullptr, *dup);
  REQUIRE_FALSE(checked.ok());
  CHECK_THAT(checked.error().message, Catch::Contains("field id 1"));
}
