// Creating a table: the REST spec's CreateTableRequest read strictly, and a new table's first
// metadata made as apache/iceberg makes it
// (core/src/main/java/org/apache/iceberg/{TableMetadata,rest/CatalogHandlers}.java,
// api/src/main/java/org/apache/iceberg/types/{AssignFreshIds,TypeUtil}.java).
//
// Two ways to create, each a function, and the caller maps each failure to an answer:
//   1. parseCreateTableRequest(body): an unknown key, a missing `name` or `schema`, a mistyped
//      field, an element the table metadata reader refuses → Errc::format (HTTP 400).
//   2a. newTableMetadata(request, location, uuid, nowMs): Java's TableMetadata.newTableMetadata
//      as the reference server's createTable (and stageTableCreate) calls it: fresh column ids,
//      the spec and sort order rebound to them by column, the persisted properties. A request
//      Java refuses (a partition source that is not a column, a transform that does not apply
//      to its source, an unsupported format version, a bad identifier field) → Errc::usage (400).
//   2b. createFromUpdates(updates, nowMs): a create transaction's commit (a CommitTableRequest
//      whose requirements are all assert-create, see isCreateTransaction), as CatalogHandlers
//      .create does: TableMetadata.buildFromEmpty, every update applied (applyUpdates on an
//      empty base), and the result must be a table → otherwise Errc::usage (400).
// Both results are re-read, so what they return is what a load accepts.
//
// Deliberate differences from Java, each documented in docs/catalog.md ("Creating a table"):
//   - the request is strict (Java ignores unknown keys and coerces non-string property values);
//     `spec-id` and `order-id` may be absent, as the REST spec marks them read-only;
//   - format versions 1 to 3 only (Java also writes v4, and takes 0 or less without a word);
//   - the table uuid is the caller's (Java draws a random one); createFromUpdates assigns none;
//   - metrics-config checks cover names, not the inferred-defaults limit of wide schemas;
//   - geometry and geography type strings are kept as sent (Java rewrites their parameters).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "catalog/iceberg/table_metadata.hpp"
#include "catalog/iceberg/table_update.hpp"
#include "engine/error.hpp"

namespace cairn::catalog {

// Java's DEFAULT_TABLE_FORMAT_VERSION (TableMetadata.java): a table created without the
// `format-version` property, or a create transaction without upgrade-format-version.
inline constexpr int kDefaultTableFormatVersion = 2;
// A table name longer than this is refused when read; what a valid name is, is the caller's.
inline constexpr std::size_t kMaxTableNameBytes = 255;
// The property that chooses a new table's format version. It is reserved: never persisted.
inline constexpr std::string_view kFormatVersionProperty = "format-version";
// Properties that describe the metadata rather than configure the table, never persisted
// (Java's TableProperties.RESERVED_PROPERTIES).
inline constexpr std::string_view kReservedTableProperties[] = {
    "format-version",           "uuid",
    "snapshot-count",           "current-snapshot-id",
    "current-snapshot-summary", "current-snapshot-timestamp-ms",
    "current-schema",           "default-partition-spec",
    "default-sort-order"};
// The default Java persists in every new table's properties unless the request sets it
// (TableProperties.PARQUET_COMPRESSION_DEFAULT_SINCE_1_4_0).
inline constexpr std::string_view kParquetCompressionProperty = "write.parquet.compression-codec";
inline constexpr std::string_view kParquetCompressionDefault = "zstd";

struct CreateTableRequest {
  std::string name;                            // at most kMaxTableNameBytes, otherwise unchecked
  std::optional<std::string> location;         // none: the catalog chooses
  Schema schema;                               // ids as sent; newTableMetadata assigns fresh ones
  std::optional<PartitionSpec> partitionSpec;  // none: unpartitioned
  std::optional<SortOrder> writeOrder;         // none: unsorted
  std::map<std::string, std::string> properties;
  bool stageCreate = false;
};

Res<CreateTableRequest> parseCreateTableRequest(const boost::json::value& body);

// `request` as parseCreateTableRequest returns it. `location` is the table's (the request's, or
// the catalog's default for it); trailing slashes are dropped, as Java does. `tableUuid` is
// written as given. The result: format version from the `format-version` property (default
// kDefaultTableFormatVersion), schema 0 with ids from 1, spec 0 with field ids from 1000, sort
// order 1 (0 if unsorted), last-updated-ms = nowMs, no snapshots, refs or logs.
Res<TableMetadata> newTableMetadata(const CreateTableRequest& request, const std::string& location,
                                    const std::string& tableUuid, std::int64_t nowMs);

// Java's CatalogHandlers.isCreate: true when some requirement is assert-create, and then every
// one must be (else Errc::usage, "Invalid create requirements").
Res<bool> isCreateTransaction(const std::vector<TableRequirement>& requirements);

// `updates` as parseTableUpdates returns them. The format version is that of the first
// upgrade-format-version update (default kDefaultTableFormatVersion). The result has
// last-updated-ms = nowMs and no metadata log. Its `tableUuid` is none unless an assign-uuid
// update set it: the caller then assigns a fresh random (version 4) UUID before writing it, as
// Java's buildFromEmpty does (a v2 or v3 table without one does not load).
Res<TableMetadata> createFromUpdates(const std::vector<TableUpdate>& updates, std::int64_t nowMs);

// The one check of what enters a table, by any route (a create, a commit's updates, a
// registered file): every schema, partition spec and sort order of `after` that `before` does
// not hold (by id; all of them without `before`) as Java's Schema, PartitionSpec, SortOrder
// and TableMetadata.Builder check them. A schema: no field id or canonical name used twice (at
// any depth), valid identifier fields, no v3 type or initial default below v3. A spec or sort
// order: transforms Java reads (`bucket[0]` is refused), unique non-empty partition names; a
// new one of a commit (`before` given) binds to the current schema as when it is added. The
// default spec and sort order fit the current schema (Java's build()). Errc::usage, with the
// element's path.
Res<void> checkAdmitted(const TableMetadata* before, const TableMetadata& after);

}  // namespace cairn::catalog
