// Iceberg table metadata (the `*.metadata.json` files), format versions 1 to 3: a strict
// reader and a canonical writer.
//
// The top level is typed; every element of a list (a schema, a partition spec, a sort order, a
// snapshot, a ref, a statistics file) keeps its whole JSON object as read (key order kept), so
// fields this code does not interpret — snapshot summaries, field defaults, v3 additions —
// survive a round trip. The typed members beside each `json` are read from it and are what
// the catalog needs to check the metadata; the `json` is what is written. Unknown top-level
// fields (e.g. `encryption-keys`) are kept in `extra` and written after the known ones.
//
// The reader applies the checks of Java's TableMetadataParser and TableMetadata constructor
// (apache/iceberg core) and refuses with Errc::format and a message naming the field. It also
// bounds the input: its size, nesting depth and element counts; duplicate keys and
// non-integer ids are refused. Legacy v1 fields (`schema`, `partition-spec`) are read when
// the lists are absent and always written for v1, as Java does.
//
// Invariant (the fuzz target checks it): for every accepted input x,
//   parse(serialize(parse(x))) == parse(x) and serialize is a fixed point after one pass.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "engine/error.hpp"

namespace cairn::catalog {

inline constexpr int kMinTableFormatVersion = 1;
inline constexpr int kMaxTableFormatVersion = 3;
// Bounds on what the reader accepts. The size matches a catalog body cap with room to spare;
// 64 levels hold any real schema (each nested type costs two levels).
inline constexpr std::size_t kMaxTableMetadataBytes = std::size_t{64} << 20;
inline constexpr std::size_t kMaxTableMetadataDepth = 64;
inline constexpr std::size_t kMaxTableMetadataElements = 1'000'000;  // per array or object
// Iceberg's conventions: partition field ids start at 1000, and a v1 table with no spec
// has last-partition-id 999; -1 on the wire is "no current snapshot".
inline constexpr std::int32_t kPartitionFieldIdStart = 1000;
inline constexpr std::int64_t kNoSnapshotId = -1;

struct Schema {
  std::int32_t schemaId = 0;
  std::int32_t highestFieldId = 0;  // the largest field id in the type tree (0 if none)
  boost::json::value json;          // the schema object; `schema-id` always present
  bool operator==(const Schema&) const = default;
};

struct PartitionSpec {
  std::int32_t specId = 0;
  std::int32_t lastAssignedFieldId = kPartitionFieldIdStart - 1;
  boost::json::value json;  // {"spec-id", "fields"}; every field has its `field-id`
  bool operator==(const PartitionSpec&) const = default;
};

struct SortOrder {
  std::int32_t orderId = 0;
  boost::json::value json;
  bool operator==(const SortOrder&) const = default;
};

struct Snapshot {
  std::int64_t snapshotId = 0;
  std::optional<std::int64_t> parentSnapshotId;
  std::int64_t sequenceNumber = 0;
  std::int64_t timestampMs = 0;
  std::optional<std::int32_t> schemaId;
  boost::json::value json;
  bool operator==(const Snapshot&) const = default;
};

struct SnapshotRef {
  std::int64_t snapshotId = 0;
  std::string type;  // "branch" or "tag"
  boost::json::value json;
  bool operator==(const SnapshotRef&) const = default;
};

// Both `statistics` and `partition-statistics` entries.
struct StatisticsFile {
  std::int64_t snapshotId = 0;
  std::string path;
  boost::json::value json;
  bool operator==(const StatisticsFile&) const = default;
};

struct SnapshotLogEntry {
  std::int64_t timestampMs = 0;
  std::int64_t snapshotId = 0;
  bool operator==(const SnapshotLogEntry&) const = default;
};

struct MetadataLogEntry {
  std::int64_t timestampMs = 0;
  std::string metadataFile;
  bool operator==(const MetadataLogEntry&) const = default;
};

struct TableMetadata {
  int formatVersion = 2;
  std::optional<std::string> tableUuid;  // required from v2 on
  std::string location;
  std::int64_t lastSequenceNumber = 0;  // always 0 in v1
  std::int64_t lastUpdatedMs = 0;
  std::int32_t lastColumnId = 0;
  std::int32_t currentSchemaId = 0;
  std::vector<Schema> schemas;
  std::int32_t defaultSpecId = 0;
  std::vector<PartitionSpec> specs;
  std::int32_t lastPartitionId = kPartitionFieldIdStart - 1;
  std::int32_t defaultSortOrderId = 0;
  std::vector<SortOrder> sortOrders;
  std::map<std::string, std::string> properties;
  std::optional<std::int64_t> currentSnapshotId;  // absent, null and -1 all read as none
  std::vector<Snapshot> snapshots;
  std::map<std::string, SnapshotRef> refs;  // `main` is added when absent, as Java does
  std::vector<StatisticsFile> statistics;
  std::vector<StatisticsFile> partitionStatistics;
  std::vector<SnapshotLogEntry> snapshotLog;
  std::vector<MetadataLogEntry> metadataLog;
  std::int64_t nextRowId = 0;                        // v3
  boost::json::value extra = boost::json::object();  // unknown top-level fields, in order

  const Schema* currentSchema() const;
  const PartitionSpec* defaultSpec() const;
  const Snapshot* snapshot(std::int64_t id) const;

  bool operator==(const TableMetadata&) const = default;
};

Res<TableMetadata> parseTableMetadata(std::string_view json);
// The JSON reader under parseTableMetadata, for any document the catalog reads (a request
// body too): at most kMaxTableMetadataBytes, kMaxTableMetadataDepth levels and
// kMaxTableMetadataElements per array or object; duplicate keys, trailing data and numbers
// that do not read back exactly are refused (Errc::format).
Res<boost::json::value> parseStrictJson(std::string_view text);
std::string serializeTableMetadata(const TableMetadata& metadata);

}  // namespace cairn::catalog
