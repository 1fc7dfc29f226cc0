// Commit requirements and updates (catalog/iceberg/table_update.hpp) against the reference
// implementation's TableMetadataV2Valid.json: each requirement passes and fails with the
// conflict kind, each update has the effect Java's TableMetadata.Builder gives it, and every
// result writes and re-reads as the same metadata.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include <boost/json.hpp>

#include "catalog/iceberg/table_update.hpp"

using namespace cairn;
using namespace cairn::catalog;

namespace {

constexpr std::int64_t kNow = 1'700'000'000'000;
constexpr std::int64_t kFirst = 3051729675574597004;
constexpr std::int64_t kCurrent = 3055729675574597004;
const char* const kBaseFile = "s3://bucket/test/location/metadata/00001-a.metadata.json";

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

std::vector<TableRequirement> requirements(std::string_view json) {
  auto r = parseTableRequirements(boost::json::parse(json));
  if (!r) FAIL(r.error().message);
  return *r;
}

std::vector<TableUpdate> updates(std::string_view json) {
  auto u = parseTableUpdates(boost::json::parse(json));
  if (!u) FAIL(u.error().message);
  return *u;
}

// Applies, checks that the result writes and re-reads as itself, returns it.
AppliedUpdates applyChecked(const TableMetadata& m, std::string_view json,
                            std::optional<std::string> location = kBaseFile) {
  auto applied = applyUpdates(m, updates(json), kNow, location);
  if (!applied) FAIL(applied.error().message);
  auto again = parseTableMetadata(serializeTableMetadata(applied->metadata));
  if (!again) FAIL(again.error().message);
  CHECK(*again == applied->metadata);
  return *applied;
}

Error refusal(const TableMetadata& m, std::string_view json) {
  auto applied = applyUpdates(m, updates(json), kNow, kBaseFile);
  REQUIRE_FALSE(applied.ok());
  return applied.error();
}

Error malformed(std::string_view json, bool isRequirement) {
  boost::json::value v = boost::json::parse(json);
  Error e = isRequirement ? parseTableRequirements(v).error() : parseTableUpdates(v).error();
  CHECK(e.code == Errc::format);
  return e;
}

Error conflict(const std::optional<TableMetadata>& m, std::string_view json) {
  auto checked = checkRequirements(m, requirements(json));
  REQUIRE_FALSE(checked.ok());
  CHECK(checked.error().code == Errc::conflict);
  return checked.error();
}

const char* const kNewSnapshot = R"({"action": "add-snapshot", "snapshot": {
  "snapshot-id": 42, "parent-snapshot-id": 3055729675574597004, "sequence-number": 35,
  "timestamp-ms": 1600000000000, "summary": {"operation": "append"},
  "manifest-list": "s3://a/b/3.avro", "schema-id": 1}})";

std::string commitOf(std::initializer_list<std::string_view> parts) {
  std::string out = "[";
  for (std::string_view p : parts) out += std::string(out.size() > 1 ? "," : "") + std::string(p);
  return out + "]";
}

}  // namespace

TEST_CASE("table update: every requirement passes on the state it names",
          "[catalog][table-update]") {
  TableMetadata m = base();
  auto r = requirements(R"([
    {"type": "assert-table-uuid", "uuid": "9C12D441-03FE-4693-9A96-A0705DDF69C1"},
    {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 3055729675574597004},
    {"type": "assert-ref-snapshot-id", "ref": "feature", "snapshot-id": null},
    {"type": "assert-last-assigned-field-id", "last-assigned-field-id": 3},
    {"type": "assert-current-schema-id", "current-schema-id": 1},
    {"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 1000},
    {"type": "assert-default-spec-id", "default-spec-id": 0},
    {"type": "assert-default-sort-order-id", "default-sort-order-id": 3}])");
  REQUIRE(r.size() == 8);
  CHECK(r[2].id == std::nullopt);
  CHECK(checkRequirements(m, r).ok());
  CHECK(checkRequirements(std::nullopt, requirements(R"([{"type": "assert-create"}])")).ok());
}

TEST_CASE("table update: a failed requirement is a conflict naming expected and actual",
          "[catalog][table-update]") {
  TableMetadata m = base();
  CHECK(conflict(m, R"([{"type": "assert-create"}])").message.find("already exists") !=
        std::string::npos);
  CHECK(conflict(m, R"([{"type": "assert-table-uuid", "uuid": "x"}])").message.find("expected x") !=
        std::string::npos);
  std::string moved =
      conflict(m, R"([{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 1}])")
          .message;
  CHECK(moved.find("assert-ref-snapshot-id") != std::string::npos);
  CHECK(moved.find("expected id 1 != 3055729675574597004") != std::string::npos);
  CHECK(conflict(m, R"([{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": null}])")
            .message.find("created concurrently") != std::string::npos);
  CHECK(conflict(m, R"([{"type": "assert-ref-snapshot-id", "ref": "b", "snapshot-id": 7}])")
            .message.find("missing") != std::string::npos);
  CHECK(conflict(m, R"([{"type": "assert-last-assigned-field-id", "last-assigned-field-id": 4}])")
            .message.find("expected id 4 != 3") != std::string::npos);
  CHECK(conflict(m, R"([{"type": "assert-current-schema-id", "current-schema-id": 0}])")
            .message.find("expected id 0 != 1") != std::string::npos);
  CHECK(conflict(m, R"([{"type": "assert-last-assigned-partition-id",
                         "last-assigned-partition-id": 999}])")
            .message.find("expected id 999 != 1000") != std::string::npos);
  CHECK(conflict(m, R"([{"type": "assert-default-spec-id", "default-spec-id": 1}])")
            .message.find("expected id 1 != 0") != std::string::npos);
  CHECK(conflict(m, R"([{"type": "assert-default-sort-order-id", "default-sort-order-id": 0}])")
            .message.find("expected id 0 != 3") != std::string::npos);
  // A table that does not exist fails every requirement that names its state.
  CHECK(conflict(std::nullopt, R"([{"type": "assert-current-schema-id", "current-schema-id": 0}])")
            .message.find("does not exist") != std::string::npos);
}

TEST_CASE("table update: malformed requirements and updates are refused, not conflicts",
          "[catalog][table-update]") {
  CHECK(malformed(R"([{"type": "assert-nothing"}])", true).message.find("unknown requirement") !=
        std::string::npos);
  CHECK(malformed(R"([{"type": "assert-current-schema-id", "current-schema-id": "1"}])", true)
            .message.find("requirements[0].current-schema-id") != std::string::npos);
  malformed(R"([{"type": "assert-ref-snapshot-id", "ref": "main"}])", true);
  malformed(R"([{"type": "assert-create", "extra": 1}])", true);
  malformed(R"({"type": "assert-create"})", true);
  CHECK(malformed(R"([{"action": "drop-table"}])", false).message.find("unknown action") !=
        std::string::npos);
  malformed(R"([{"action": "set-properties", "updates": {"a": 1}}])", false);
  malformed(R"([{"action": "remove-properties", "removals": "a"}])", false);
  malformed(R"([{"action": "set-current-schema", "schema-id": 1.5}])", false);
  malformed(R"([{"action": "remove-snapshots", "snapshot-ids": ["1"]}])", false);
  malformed(R"([{"action": "set-snapshot-ref", "ref-name": "x", "snapshot-id": 1,
                 "type": "leaf"}])",
            false);
  std::string schema = malformed(R"([{"action": "add-schema", "schema": {"type": "struct",
      "fields": [{"id": 1, "name": "x", "required": true, "type": "longer"}]}}])",
                                 false)
                           .message;
  CHECK(schema.find("updates[0].schema.fields[0].type") != std::string::npos);
  auto request = parseCommitTableRequest(boost::json::parse(R"({"requirements": [],
      "updates": [], "identifier": {"namespace": ["a"], "name": "t"}, "more": 1})"));
  REQUIRE_FALSE(request.ok());
  CHECK(request.error().code == Errc::format);
  CHECK(parseCommitTableRequest(boost::json::parse(R"({"requirements": [], "updates": []})")).ok());
}

TEST_CASE(
    "table update: add-schema assigns the next id and last-column-id, and an identical schema is "
    "reused",
    "[catalog][table-update]") {
  TableMetadata m = base();
  AppliedUpdates a = applyChecked(m, R"([{"action": "add-schema", "schema": {"type": "struct",
      "schema-id": 7, "fields": [{"id": 1, "name": "x", "required": true, "type": "long"},
                                 {"id": 2, "name": "y", "required": true, "type": "long"},
                                 {"id": 3, "name": "z", "required": true, "type": "long"},
                                 {"id": 4, "name": "w", "required": false, "type": "string"}]}},
      {"action": "set-current-schema", "schema-id": -1}])");
  CHECK(a.changed);
  CHECK(a.metadata.schemas.size() == 3);
  CHECK(a.metadata.schemas.back().schemaId == 2);
  CHECK(a.metadata.currentSchemaId == 2);
  CHECK(a.metadata.lastColumnId == 4);
  CHECK(a.metadata.lastUpdatedMs == kNow);
  // Schema 0 again (whatever id it is sent with): the existing id, nothing changes.
  AppliedUpdates same = applyChecked(m, R"([{"action": "add-schema", "schema": {"type": "struct",
      "schema-id": 9, "fields": [{"id": 1, "name": "x", "required": true, "type": "long"}]}}])");
  CHECK_FALSE(same.changed);
  CHECK(same.metadata == m);
  // A reused schema that this commit did not add is not "the last added" (as in Java).
  Error none = refusal(m, R"([{"action": "add-schema", "schema": {"type": "struct",
      "fields": [{"id": 1, "name": "x", "required": true, "type": "long"}]}},
      {"action": "set-current-schema", "schema-id": -1}])");
  CHECK(none.code == Errc::usage);
  CHECK(refusal(m, R"([{"action": "set-current-schema", "schema-id": 5}])").code == Errc::usage);
  // Schema 0 lacks the columns of the default sort order: refused, as Java's build() does,
  // unless the commit also makes the unsorted order the default.
  CHECK(refusal(m, R"([{"action": "set-current-schema", "schema-id": 0}])")
            .message.find("default-sort-order-id") != std::string::npos);
  AppliedUpdates older = applyChecked(m, R"([{"action": "set-current-schema", "schema-id": 0},
      {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
      {"action": "set-default-sort-order", "sort-order-id": -1}])");
  CHECK(older.metadata.currentSchemaId == 0);
  // The deprecated last-column-id is read and ignored, as Java does.
  AppliedUpdates ignored = applyChecked(m, R"([{"action": "add-schema", "last-column-id": 2,
      "schema": {"type": "struct",
      "fields": [{"id": 1, "name": "q", "required": true, "type": "long"}]}}])");
  CHECK(ignored.metadata.lastColumnId == 3);
  CHECK(ignored.metadata.schemas.back().schemaId == 2);
}

TEST_CASE(
    "table update: add-spec and add-sort-order assign ids, reuse equal ones, keep "
    "last-partition-id",
    "[catalog][table-update]") {
  TableMetadata m = base();
  AppliedUpdates a = applyChecked(m, R"([{"action": "add-spec", "spec": {"fields": [
      {"name": "x", "transform": "identity", "source-id": 1, "field-id": 1000},
      {"name": "y_bucket", "transform": "bucket[8]", "source-id": 2}]}},
      {"action": "set-default-spec", "spec-id": -1},
      {"action": "add-sort-order", "sort-order": {"order-id": 1, "fields": [
      {"transform": "identity", "source-id": 1, "direction": "desc", "null-order": "nulls-last"}]}},
      {"action": "set-default-sort-order", "sort-order-id": -1}])");
  REQUIRE(a.metadata.specs.size() == 2);
  CHECK(a.metadata.specs[1].specId == 1);
  CHECK(a.metadata.defaultSpecId == 1);
  CHECK(a.metadata.lastPartitionId == 1001);
  CHECK(a.metadata.specs[1].json.at("fields").at(1).at("field-id") == 1001);
  CHECK(a.metadata.sortOrders.back().orderId == 4);
  CHECK(a.metadata.defaultSortOrderId == 4);
  // The same spec (names, sources, transforms) and the same order: existing ids, no change.
  AppliedUpdates same =
      applyChecked(m, R"([{"action": "add-spec", "spec": {"spec-id": 5, "fields": [
      {"name": "x", "transform": "identity", "source-id": 1}]}},
      {"action": "add-sort-order", "sort-order": {"order-id": 9, "fields": [
      {"transform": "identity", "source-id": 2, "direction": "asc", "null-order": "nulls-first"},
      {"transform": "bucket[4]", "source-id": 3, "direction": "desc", "null-order": "nulls-last"}]}}])");
  CHECK_FALSE(same.changed);
  // Sources must be columns of the current schema.
  CHECK(refusal(m, R"([{"action": "add-spec", "spec": {"fields": [
      {"name": "q", "transform": "identity", "source-id": 99}]}}])")
            .message.find("not in the current schema") != std::string::npos);
  CHECK(refusal(m, R"([{"action": "add-sort-order", "sort-order": {"order-id": 1, "fields": [
      {"transform": "identity", "source-id": 99, "direction": "asc",
       "null-order": "nulls-first"}]}}])")
            .code == Errc::usage);
  // The unsorted order is always id 0.
  AppliedUpdates unsorted = applyChecked(m, R"([{"action": "add-sort-order", "sort-order":
      {"order-id": 5, "fields": []}}, {"action": "set-default-sort-order", "sort-order-id": -1}])");
  CHECK(unsorted.metadata.defaultSortOrderId == 0);
  CHECK(unsorted.metadata.sortOrders.size() == 2);
}

TEST_CASE(
    "table update: add-snapshot and set-snapshot-ref move main, the sequence and the snapshot log",
    "[catalog][table-update]") {
  TableMetadata m = base();
  AppliedUpdates a = applyChecked(m, commitOf({kNewSnapshot, R"({"action": "set-snapshot-ref",
      "ref-name": "main", "type": "branch", "snapshot-id": 42})"}));
  CHECK(a.metadata.snapshots.size() == 3);
  CHECK(a.metadata.currentSnapshotId == 42);
  CHECK(a.metadata.refs.at("main").snapshotId == 42);
  CHECK(a.metadata.lastSequenceNumber == 35);
  REQUIRE(a.metadata.snapshotLog.size() == 3);
  CHECK(a.metadata.snapshotLog.back() == SnapshotLogEntry{1600000000000, 42});
  REQUIRE(a.metadata.metadataLog.size() == 1);
  CHECK(a.metadata.metadataLog[0] == MetadataLogEntry{m.lastUpdatedMs, kBaseFile});
  // A snapshot whose sequence number is not past the table's: a conflict (retryable).
  std::string stale = kNewSnapshot;
  stale.replace(stale.find("35"), 2, "34");
  CHECK(refusal(m, commitOf({stale})).code == Errc::conflict);
  CHECK(refusal(m, commitOf({R"({"action": "set-snapshot-ref", "ref-name": "main",
      "type": "branch", "snapshot-id": 7})"}))
            .code == Errc::usage);
  CHECK(refusal(m, commitOf({R"({"action": "set-snapshot-ref", "ref-name": "main",
      "type": "tag", "snapshot-id": 3051729675574597004})"}))
            .code == Errc::usage);
  // Setting main where it is: nothing changes.
  CHECK_FALSE(
      applyChecked(m, R"([{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
      "snapshot-id": 3055729675574597004}])")
          .changed);
}

TEST_CASE(
    "table update: a rollback is logged at commit time, and an intermediate snapshot leaves no "
    "entry",
    "[catalog][table-update]") {
  TableMetadata m = base();
  AppliedUpdates rollback = applyChecked(m, R"([{"action": "set-snapshot-ref", "ref-name": "main",
      "type": "branch", "snapshot-id": 3051729675574597004}])");
  CHECK(rollback.metadata.currentSnapshotId == kFirst);
  CHECK(rollback.metadata.snapshotLog.back() == SnapshotLogEntry{kNow, kFirst});
  const char* const second = R"({"action": "add-snapshot", "snapshot": {
    "snapshot-id": 43, "parent-snapshot-id": 42, "sequence-number": 36,
    "timestamp-ms": 1600000000001, "summary": {"operation": "append"},
    "manifest-list": "s3://a/b/4.avro", "schema-id": 1}})";
  AppliedUpdates both = applyChecked(
      m, commitOf({kNewSnapshot,
                   R"({"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                       "snapshot-id": 42})",
                   second,
                   R"({"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                       "snapshot-id": 43})"}));
  CHECK(both.metadata.currentSnapshotId == 43);
  CHECK(both.metadata.lastSequenceNumber == 36);
  REQUIRE(both.metadata.snapshotLog.size() == 3);
  CHECK(both.metadata.snapshotLog[1].snapshotId == kCurrent);
  CHECK(both.metadata.snapshotLog[2].snapshotId == 43);
}

TEST_CASE("table update: remove-snapshots drops their refs, statistics and the history before them",
          "[catalog][table-update]") {
  TableMetadata m = base();
  AppliedUpdates tagged = applyChecked(m, R"([{"action": "set-snapshot-ref", "ref-name": "old",
      "type": "tag", "snapshot-id": 3051729675574597004, "max-ref-age-ms": 1000},
      {"action": "set-statistics", "statistics": {"snapshot-id": 3051729675574597004,
       "statistics-path": "s3://a/s.puffin", "file-size-in-bytes": 10,
       "file-footer-size-in-bytes": 2, "blob-metadata": []}}])");
  CHECK(tagged.metadata.refs.at("old").type == "tag");
  CHECK(tagged.metadata.statistics.size() == 1);
  AppliedUpdates removed = applyChecked(tagged.metadata, R"([{"action": "remove-snapshots",
                                  "snapshot-ids": [3051729675574597004, 99]}])");
  CHECK(removed.metadata.snapshots.size() == 1);
  CHECK(removed.metadata.refs.count("old") == 0);
  CHECK(removed.metadata.statistics.empty());
  REQUIRE(removed.metadata.snapshotLog.size() == 1);
  CHECK(removed.metadata.snapshotLog[0].snapshotId == kCurrent);
  // Removing the current snapshot removes main.
  AppliedUpdates gone = applyChecked(m, R"([{"action": "remove-snapshots",
      "snapshot-ids": [3055729675574597004]}])");
  CHECK(gone.metadata.currentSnapshotId == std::nullopt);
  CHECK(gone.metadata.refs.empty());
  AppliedUpdates unref = applyChecked(tagged.metadata, R"([{"action": "remove-snapshot-ref",
      "ref-name": "old"}, {"action": "remove-statistics", "snapshot-id": 3051729675574597004}])");
  CHECK(unref.metadata.refs.size() == 1);
  CHECK(unref.metadata.statistics.empty());
  CHECK_FALSE(applyChecked(m, R"([{"action": "remove-snapshot-ref", "ref-name": "nope"},
      {"action": "remove-statistics", "snapshot-id": 1},
      {"action": "remove-partition-statistics", "snapshot-id": 1},
      {"action": "remove-snapshots", "snapshot-ids": [5]}])")
                  .changed);
  AppliedUpdates partition = applyChecked(m, R"([{"action": "set-partition-statistics",
      "partition-statistics": {"snapshot-id": 3055729675574597004,
       "statistics-path": "s3://a/p.parquet", "file-size-in-bytes": 10}}])");
  CHECK(partition.metadata.partitionStatistics.size() == 1);
}

TEST_CASE(
    "table update: properties, location, uuid and format version, and a no-op publishes nothing",
    "[catalog][table-update]") {
  TableMetadata m = base();
  AppliedUpdates a =
      applyChecked(m, R"([{"action": "set-properties", "updates": {"a": "1", "b": "2"}},
      {"action": "remove-properties", "removals": ["b", "never"]},
      {"action": "set-location", "location": "s3://elsewhere"}])");
  CHECK(a.metadata.properties == std::map<std::string, std::string>{{"a", "1"}});
  CHECK(a.metadata.location == "s3://elsewhere");
  AppliedUpdates again = applyChecked(a.metadata, R"([{"action": "set-properties",
      "updates": {"a": "1"}}, {"action": "remove-properties", "removals": ["b"]},
      {"action": "set-location", "location": "s3://elsewhere"},
      {"action": "assign-uuid", "uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1"},
      {"action": "upgrade-format-version", "format-version": 2}])");
  CHECK_FALSE(again.changed);
  CHECK(again.metadata == a.metadata);
  CHECK(again.metadata.metadataLog.size() == 1);  // nothing appended
  CHECK(refusal(m, R"([{"action": "assign-uuid", "uuid": "other"}])").code == Errc::usage);
  CHECK(refusal(m, R"([{"action": "upgrade-format-version", "format-version": 1}])")
            .message.find("cannot downgrade") != std::string::npos);
  CHECK(refusal(m, R"([{"action": "upgrade-format-version", "format-version": 4}])").code ==
        Errc::usage);
  AppliedUpdates v3 =
      applyChecked(m, R"([{"action": "upgrade-format-version", "format-version": 3}])");
  CHECK(v3.metadata.formatVersion == 3);
  CHECK(v3.metadata.nextRowId == 0);
}

TEST_CASE("table update: the metadata log is bounded by write.metadata.previous-versions-max",
          "[catalog][table-update]") {
  TableMetadata m = base();
  m = applyChecked(m, R"([{"action": "set-properties",
      "updates": {"write.metadata.previous-versions-max": "2"}}])",
                   "f1")
          .metadata;
  m = applyChecked(m, R"([{"action": "set-properties", "updates": {"k": "1"}}])", "f2").metadata;
  m = applyChecked(m, R"([{"action": "set-properties", "updates": {"k": "2"}}])", "f3").metadata;
  REQUIRE(m.metadataLog.size() == 2);
  CHECK(m.metadataLog[0].metadataFile == "f2");
  CHECK(m.metadataLog[1].metadataFile == "f3");
  // Without a base location the log is left as it is.
  CHECK(applyChecked(m, R"([{"action": "set-properties", "updates": {"k": "3"}}])", std::nullopt)
            .metadata.metadataLog.size() == 2);
  CHECK(refusal(m, R"([{"action": "set-properties",
      "updates": {"write.metadata.previous-versions-max": "many"}}])")
            .code == Errc::usage);
}

TEST_CASE("table update: v3 snapshots carry row lineage past next-row-id",
          "[catalog][table-update]") {
  TableMetadata v3 =
      applyChecked(base(), R"([{"action": "upgrade-format-version", "format-version": 3}])")
          .metadata;
  std::string lineage = kNewSnapshot;
  lineage.replace(lineage.find("\"schema-id\": 1"), 14,
                  "\"schema-id\": 1, \"first-row-id\": 0, \"added-rows\": 10");
  AppliedUpdates a = applyChecked(v3, commitOf({lineage}));
  CHECK(a.metadata.nextRowId == 10);
  CHECK(refusal(v3, commitOf({kNewSnapshot})).code == Errc::usage);  // no first-row-id
  std::string behind = lineage;
  behind.replace(behind.find("\"snapshot-id\": 42"), 17, "\"snapshot-id\": 44");
  behind.replace(behind.find("35"), 2, "36");
  CHECK(refusal(a.metadata, commitOf({behind})).code == Errc::conflict);
}

TEST_CASE("table update: a whole commit request: parse, check, apply", "[catalog][table-update]") {
  TableMetadata m = base();
  auto request = parseCommitTableRequest(boost::json::parse(
      R"({"identifier": {"namespace": ["db"], "name": "t"},
          "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main",
                            "snapshot-id": 3055729675574597004}],
          "updates": [)" +
      std::string(kNewSnapshot) +
      R"(, {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
            "snapshot-id": 42}]})"));
  if (!request) FAIL(request.error().message);
  REQUIRE(checkRequirements(m, request->requirements).ok());
  auto applied = applyUpdates(m, request->updates, kNow, std::string(kBaseFile));
  REQUIRE(applied.ok());
  CHECK(applied->metadata.currentSnapshotId == 42);
  // The same request against the result: main has moved, so the requirement fails.
  CHECK(checkRequirements(applied->metadata, request->requirements).error().code == Errc::conflict);
  // Replaying the updates on the result is refused: the snapshot exists.
  CHECK(applyUpdates(applied->metadata, request->updates, kNow, std::nullopt).error().code ==
        Errc::usage);
}

TEST_CASE("table update: a request body is read strictly before it is a request",
          "[catalog][table-update]") {
  auto request = [](std::string_view text) -> Res<CommitTableRequest> {
    auto body = parseStrictJson(text);
    if (!body) return failureOf(body);
    return parseCommitTableRequest(*body);
  };
  auto ok = request(R"({"requirements":[],"updates":[{"action":"set-properties",
                        "updates":{"k":"v"}}]})");
  REQUIRE(ok.ok());
  CHECK(ok->updates.size() == 1);
  auto refusedWith = [&](std::string_view text, std::string_view why) {
    auto r = request(text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::format);
    CHECK_THAT(r.error().message, Catch::Contains(std::string(why)));
  };
  refusedWith(R"({"requirements":[],"requirements":[],"updates":[]})", "duplicate key");
  refusedWith(R"({"requirements":[],"updates":[]} {})", "invalid JSON");
  refusedWith(R"({"requirements":[],"updates":[]})" + std::string(1, '\x00'), "invalid JSON");
  refusedWith(std::string(100'000, '[') + std::string(100'000, ']'), "invalid JSON");
  refusedWith(R"({"requirements":[],"updates":[],"x":1e400})", "out of range");
}

TEST_CASE("table update: an empty base (a create transaction) must gain a schema, spec and order",
          "[catalog][table-update]") {
  TableMetadata empty;
  empty.tableUuid = "9c12d441-03fe-4693-9a96-a0705ddf69c1";
  CHECK_THAT(refusal(empty, R"([{"action": "set-properties", "updates": {"a": "b"}}])").message,
             Catch::Contains("no current schema"));
  // A source named before any schema exists is not in it (Java fails there too).
  CHECK_THAT(refusal(empty, R"([{"action": "add-spec", "spec": {"fields": [
      {"name": "a", "transform": "identity", "source-id": 1}]}}])")
                 .message,
             Catch::Contains("(none yet)"));
  const char* const schema = R"({"action": "add-schema", "schema": {"type": "struct",
      "fields": [{"id": 1, "name": "a", "required": true, "type": "long"}]}})";
  CHECK_THAT(refusal(empty, commitOf({schema})).message,
             Catch::Contains("no default partition spec"));
  CHECK_THAT(refusal(empty, commitOf({schema, R"({"action": "add-spec", "spec": {"fields": []}})"}))
                 .message,
             Catch::Contains("no default sort order"));
  AppliedUpdates a =
      applyChecked(empty,
                   commitOf({schema, R"({"action": "add-spec", "spec": {"fields": [
          {"name": "a", "transform": "identity", "source-id": 1}]}})",
                             R"({"action": "add-sort-order", "sort-order": {"fields": []}})"}),
                   std::nullopt);
  CHECK(a.metadata.currentSchemaId == 0);
  CHECK(a.metadata.lastColumnId == 1);
  CHECK(a.metadata.lastPartitionId == 1000);
  CHECK(a.metadata.defaultSortOrderId == 0);
  CHECK(a.metadata.metadataLog.empty());
}
